"""Regular NWC ``predict`` on the ECG shapes: compiled vs numpy reduction vs the bare GEMM.

Times, interleaved in one process so machine load hits all alike — the
queries are cut into chunks of ``--chunk`` and every chunk is timed with each
method back to back (rotating which goes first), so even load that changes
within seconds hits all methods alike; each method's time is its sum over the
chunks, and the median over ``--repeats`` is reported:

* the bare float32 GEMM ``Q @ Xᵀ`` of the same shapes (:func:`run.bare_gemm`:
  fastest of BLAS-threaded row blocks and 2 threads × 1 BLAS thread on tiles),
* ``predict`` with the compiled one-pass tile reduction (numba, ``_fused.py``),
* ``predict`` with the numpy reduction (``_sums.USE_NUMBA = False``),

on the synthetic ECG stand-in of ``run.py`` (87 554 × 100 training points,
21 892 queries, 5 classes, Epanechnikov λ = 0.75, float32, ``n_jobs=-1``),
and prints the ratios. ``--compile`` also reports the JIT cost of the first
call: in fresh interpreters, once with an empty numba cache (compile) and once
with the cache that run filled (load).

Usage::

    PYTHONPATH=src python benchmarks/bench_regular.py [--quick] [--repeats 5] [--compile]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import ECG_BANDWIDTH, ECG_FULL, ECG_QUICK, bare_gemm, ecg_like, reductions, timed, with_reduction  # noqa: E402

from nwbound import NadarayaWatsonClassifier  # noqa: E402

# Timed in a fresh interpreter: numba import, then compile (or cache load) and
# run of the first predict on a small problem.
_FIRST_CALL = """
import time
t0 = time.perf_counter()
import numpy as np
from nwbound import NadarayaWatsonClassifier
rng = np.random.default_rng(0)
X = rng.random((2000, 100), dtype=np.float32); y = rng.integers(0, 5, 2000)
m = NadarayaWatsonClassifier(bandwidth=0.75, dtype="float32").fit(X, y)
t1 = time.perf_counter()
m.predict(X[:256])
t2 = time.perf_counter()
m.predict(X[:256])
t3 = time.perf_counter()
from nwbound.estimators import _sums
assert _sums._FUSED_MODULE, "numba route not taken"
print(f"{t2 - t1:.3f} {t3 - t2:.3f}")
"""


def first_call_seconds(cache_dir: str) -> tuple[float, float]:
    """(first predict incl. numba import + JIT or cache load, second predict) in a fresh interpreter."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    env.pop("NWBOUND_DISABLE_NUMBA", None)
    done = subprocess.run([sys.executable, "-c", _FIRST_CALL], env=env, capture_output=True, text=True, check=True)
    first, second = (float(v) for v in done.stdout.split())
    return first, second


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{ECG_QUICK[0]} × {ECG_QUICK[1]} instead of the full shapes")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats per timing (median; default 5)")
    parser.add_argument("--chunk", type=int, default=2048, help="queries per interleaved chunk (default 2048)")
    parser.add_argument("--compile", action="store_true", help="also time the first call with a cold and a warm numba cache")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.chunk < 1:
        parser.error("--repeats and --chunk must be at least 1")

    routes = [("fused" if name == "numba" else name, flag) for name, flag in reductions()]
    have_numba = len(routes) > 1
    if not have_numba:
        print("numba is not installed: only the numpy route can be timed (pip install 'nwbound[fast]').")

    n_train, n_query = ECG_QUICK if args.quick else ECG_FULL
    X, y, Q = ecg_like(n_train, n_query)
    print(f"ECG shapes: {n_train} × {X.shape[1]} train, {n_query} queries, float32, λ = {ECG_BANDWIDTH}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    model = NadarayaWatsonClassifier(bandwidth=ECG_BANDWIDTH, lipschitz=0.05, dtype="float32", n_jobs=-1).fit(X, y)

    # Warm-up: layout cache, JIT (or cache load), and the two routes agree.
    first = {name: timed(with_reduction(flag, lambda: model.predict(Q[:256]))) for name, flag in routes}
    print("warm-up (first 256 queries; the first also builds the layout): "
          + ", ".join(f"{k} {v:.2f} s" for k, v in first.items()))
    if have_numba:
        labels = {name: with_reduction(flag, lambda: model.predict(Q[:2000]))() for name, flag in routes}
        print(f"labels of the two routes agree on {np.mean(labels['fused'] == labels['numpy']):.2%} of 2000 queries")

    methods = {"gemm": lambda q: bare_gemm(X, q)} | {
        name: (lambda q, flag=flag: timed(with_reduction(flag, lambda: model.predict(q)))) for name, flag in routes
    }
    names = list(methods)
    times: dict[str, list[float]] = {name: [] for name in names}
    chunk_ratios: dict[str, list[float]] = {name: [] for name, _ in routes}
    for r in range(args.repeats):
        total = dict.fromkeys(names, 0.0)
        for c, s in enumerate(range(0, n_query, args.chunk)):
            q = Q[s : s + args.chunk]
            order = names[c % len(names):] + names[: c % len(names)]  # rotate who goes first
            got = {name: methods[name](q) for name in order}
            for name in names:
                total[name] += got[name]
            for name, _ in routes:
                chunk_ratios[name].append(got[name] / got["gemm"])
        for name in names:
            times[name].append(total[name])
        print(f"  repeat {r + 1}: " + ", ".join(f"{k} {v[-1]:.3f} s" for k, v in times.items())
              + f"  (load average {os.getloadavg()[0]:.1f})", flush=True)

    med = {k: statistics.median(v) for k, v in times.items()}
    print("\nmedian seconds: " + ", ".join(f"{k} {v:.3f}" for k, v in med.items()))
    for name, _ in routes:
        ratios = [p / g for p, g in zip(times[name], times["gemm"])]
        print(f"{name:>5} predict / GEMM: {med[name] / med['gemm']:.3f} (per repeat: "
              + ", ".join(f"{v:.3f}" for v in ratios)
              + f"; median of per-chunk ratios {statistics.median(chunk_ratios[name]):.3f})")
    if have_numba:
        print(f"numpy / fused: {med['numpy'] / med['fused']:.2f}×")

    if args.compile and have_numba:
        with tempfile.TemporaryDirectory() as cache:
            cold = first_call_seconds(cache)
            warm = first_call_seconds(cache)
        print(f"first predict (256 queries) in a fresh interpreter: empty numba cache {cold[0]:.2f} s "
              f"(then {cold[1]:.3f} s), filled cache {warm[0]:.2f} s (then {warm[1]:.3f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
