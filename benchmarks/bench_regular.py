"""Regular NWC ``predict`` on the ECG shapes: compiled vs numpy reduction vs the bare GEMM.

Times, interleaved in one process so machine load hits all alike — the
queries are cut into chunks of ``--chunk`` and every chunk is timed with each
method back to back (rotating which goes first), so even load that changes
within seconds hits all methods alike; each method's time is its sum over the
chunks, and the median over ``--repeats`` is reported:

* the bare float32 GEMM ``Q @ Xᵀ`` of the same shapes (:func:`run.bare_gemm`:
  fastest of BLAS-threaded row blocks and 2 threads × 1 BLAS thread on 128 × 4096 tiles),
  and the same product cut the way the engine cuts it (:func:`engine_blocked_gemm`: its
  query-block rows × tile columns, one thread per core): the engine's ratio to the latter
  is what its reduction and bookkeeping cost on top of the product,
* ``predict`` with the compiled one-pass tile reduction (numba, ``_fused.py``),
* ``predict`` with the numpy reduction (``_sums.USE_NUMBA = False``; ``--skip-numpy`` leaves it out),
* the engine call itself (``dense_kernel_sums``, compiled route), plain and with
  ``histogram_bins=32`` (the distance histogram of the Chernoff bound's histogram form),
* with ``--before REV``, the engine of git revision ``REV`` (its ``src/nwbound``
  extracted into a temporary package ``nwbound_before``) on the very same inputs,

on the synthetic ECG stand-in of ``run.py`` (87 554 × 100 training points,
21 892 queries, 5 classes, Epanechnikov λ = 0.75, float32, ``n_jobs=-1``),
and prints the ratios. ``--compile`` also reports the JIT cost of the first
call: in fresh interpreters, once with an empty numba cache (compile) and once
with the cache that run filled (load).

Usage::

    PYTHONPATH=src python benchmarks/bench_regular.py [--quick] [--repeats 5] [--compile] [--before REV]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import ECG_BANDWIDTH, ECG_FULL, ECG_QUICK, bare_gemm, ecg_like, reductions, timed, with_reduction  # noqa: E402

from nwbound import NadarayaWatsonClassifier  # noqa: E402
from nwbound.engine.host import _sums  # noqa: E402

# Timed in a fresh interpreter: numba import, then compile (or cache load) and
# run of the first predict on a small problem.
_FIRST_CALL = """
import time
t0 = time.perf_counter()
import numpy as np
from nwbound import NadarayaWatsonClassifier
rng = np.random.default_rng(0)
X = rng.random((2000, 100), dtype=np.float32); y = rng.integers(0, 5, 2000)
m = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.75, dtype="float32").fit(X, y)
t1 = time.perf_counter()
m.predict(X[:256])
t2 = time.perf_counter()
m.predict(X[:256])
t3 = time.perf_counter()
from nwbound.engine.host import _sums
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


def engine_blocked_gemm(X: np.ndarray, Q: np.ndarray) -> float:
    """Seconds of the bare product ``Q @ Xᵀ`` (results discarded) in the engine's blocks and tiles:
    row blocks of :func:`_sums._query_block_rows` queries against tiles of the width the engine
    uses, one thread per core with one BLAS thread each (as ``dense_kernel_sums(n_jobs=-1)``)."""
    n_threads = os.cpu_count() or 1
    elements = _sums._dense_tile_elements(X.dtype, None, n_threads)
    rows = _sums._query_block_rows(Q.shape[0], n_threads, elements, pruned=False)
    width = max(1, min(X.shape[0], elements // rows))

    def block(s: int) -> None:
        out = np.empty((rows, width), dtype=X.dtype)
        q = Q[s : s + rows]
        for j in range(0, X.shape[0], width):
            B = X[j : j + width]
            np.matmul(q, B.T, out=out[: q.shape[0], : B.shape[0]])

    def run() -> None:
        with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(n_threads) as pool:
            list(pool.map(block, range(0, Q.shape[0], rows)))

    return timed(run)


def engine_of_revision(rev: str, workdir: str):
    """The ``_sums`` and ``kernels`` modules of git revision ``rev``, imported as ``nwbound_before.…``.

    The kernel must come from the same package: the compiled route recognises its
    built-in kernels by identity (another package's kernel would take the numpy route)."""
    root = Path(__file__).resolve().parents[1]
    archive = subprocess.run(["git", "-C", str(root), "archive", rev, "src/nwbound"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", workdir], input=archive.stdout, check=True)
    Path(workdir, "src", "nwbound").rename(Path(workdir, "nwbound_before"))
    sys.path.insert(0, workdir)
    import importlib

    # The host engine moved from estimators/ to engine/host/: take whichever the revision has.
    where = "engine.host" if Path(workdir, "nwbound_before", "engine", "host", "_sums.py").exists() else "estimators"
    return importlib.import_module(f"nwbound_before.{where}._sums"), importlib.import_module("nwbound_before.kernels")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{ECG_QUICK[0]} × {ECG_QUICK[1]} instead of the full shapes")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats per timing (median; default 5)")
    parser.add_argument("--chunk", type=int, default=2048, help="queries per interleaved chunk (default 2048)")
    parser.add_argument("--compile", action="store_true", help="also time the first call with a cold and a warm numba cache")
    parser.add_argument("--before", metavar="REV", help="also time the engine of this git revision (e.g. a commit hash)")
    parser.add_argument("--skip-numpy", action="store_true", help="do not time predict with the numpy reduction")
    parser.add_argument("--bins", type=int, default=32, help="histogram bins of the engine+histogram timing (default 32)")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.chunk < 1:
        parser.error("--repeats and --chunk must be at least 1")

    routes = [("fused" if name == "numba" else name, flag) for name, flag in reductions()]
    have_numba = len(routes) > 1
    if args.skip_numpy and have_numba:
        routes = [r for r in routes if r[0] != "numpy"]
    if not have_numba:
        print("numba is not installed: only the numpy route can be timed (pip install 'nwbound[fast]').")

    n_train, n_query = ECG_QUICK if args.quick else ECG_FULL
    X, y, Q = ecg_like(n_train, n_query)
    print(f"ECG shapes: {n_train} × {X.shape[1]} train, {n_query} queries, float32, λ = {ECG_BANDWIDTH}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    model = NadarayaWatsonClassifier(metric=None, bandwidth=ECG_BANDWIDTH, lipschitz=0.05, dtype="float32", n_jobs=-1).fit(X, y)

    # Warm-up: layout cache, JIT (or cache load), and the two routes agree.
    first = {name: timed(with_reduction(flag, lambda: model.predict(Q[:256]))) for name, flag in routes}
    print("warm-up (first 256 queries; the first also builds the layout): "
          + ", ".join(f"{k} {v:.2f} s" for k, v in first.items()))
    if have_numba and len(routes) > 1:
        labels = {name: with_reduction(flag, lambda: model.predict(Q[:2000]))() for name, flag in routes}
        print(f"labels of the two routes agree on {np.mean(labels['fused'] == labels['numpy']):.2%} of 2000 queries")

    methods = {"gemm": lambda q: bare_gemm(X, q), "gemm-engine-blocks": lambda q: engine_blocked_gemm(X, q)} | {
        name: (lambda q, flag=flag: timed(with_reduction(flag, lambda: model.predict(q)))) for name, flag in routes
    }
    # The engine call itself, as predict makes it (no distance sum), plain and with the histogram.
    train, kern, lam = model._train, model.kernel_, np.array([ECG_BANDWIDTH])

    def engine(q, bins=0):
        return timed(lambda: _sums.dense_kernel_sums(q, train, kern, lam, need_dist=False, n_jobs=-1, histogram_bins=bins))

    methods["engine"] = engine
    methods[f"engine+hist{args.bins}"] = lambda q: engine(q, args.bins)
    engine(Q[:256], args.bins)  # compile the histogram variant
    before_dir = None
    if args.before:
        before_dir = tempfile.TemporaryDirectory()
        old, old_kernels = engine_of_revision(args.before, before_dir.name)
        old_kern = old_kernels.get_kernel(kern.name)
        old_train = old.TrainingSet.build(train.X, train.labels, train.n_classes, train.weights)

        def engine_before(q):
            return timed(lambda: old.dense_kernel_sums(q, old_train, old_kern, lam, need_dist=False, n_jobs=-1))

        engine_before(Q[:256])  # layout, JIT
        a = old.dense_kernel_sums(Q[:2000], old_train, old_kern, lam, need_dist=False, n_jobs=-1)
        b = _sums.dense_kernel_sums(Q[:2000], train, kern, lam, need_dist=False, n_jobs=-1)
        print(f"engine before ({args.before}) vs now on 2000 queries: max |Δκ| {np.abs(a.kappa - b.kappa).max():.2e}, "
              f"κ = 0 in {np.mean(a.kappa == 0):.2%} / {np.mean(b.kappa == 0):.2%}; "
              f"bound on |ũ² − u²| now: median {np.median(b.u2_error):.2e}, max {b.u2_error.max():.2e}")
        methods["before"] = engine_before
    names = list(methods)
    times: dict[str, list[float]] = {name: [] for name in names}
    chunk_ratios: dict[str, list[float]] = {name: [] for name in names[1:]}
    for r in range(args.repeats):
        total = dict.fromkeys(names, 0.0)
        for c, s in enumerate(range(0, n_query, args.chunk)):
            q = Q[s : s + args.chunk]
            order = names[c % len(names):] + names[: c % len(names)]  # rotate who goes first
            got = {name: methods[name](q) for name in order}
            for name in names:
                total[name] += got[name]
            for name in names[1:]:
                chunk_ratios[name].append(got[name] / got["gemm"])
        for name in names:
            times[name].append(total[name])
        print(f"  repeat {r + 1}: " + ", ".join(f"{k} {v[-1]:.3f} s" for k, v in times.items())
              + f"  (load average {os.getloadavg()[0]:.1f})", flush=True)

    med = {k: statistics.median(v) for k, v in times.items()}
    print("\nmedian seconds: " + ", ".join(f"{k} {v:.3f}" for k, v in med.items()))
    for name in names[1:]:
        ratios = [p / g for p, g in zip(times[name], times["gemm"])]
        print(f"{name:>14} / GEMM: {med[name] / med['gemm']:.3f} (per repeat: "
              + ", ".join(f"{v:.3f}" for v in ratios)
              + f"; median of per-chunk ratios {statistics.median(chunk_ratios[name]):.3f})")
    if "numpy" in med and "fused" in med:
        print(f"numpy / fused: {med['numpy'] / med['fused']:.2f}×")
    hist = f"engine+hist{args.bins}"
    print(f"{hist} / engine: {med[hist] / med['engine']:.3f}; {hist} / fused predict: "
          f"{med[hist] / med.get('fused', med['engine']):.3f}")
    blocked = "gemm-engine-blocks"
    print(f"engine / {blocked}: {med['engine'] / med[blocked]:.3f} (the reduction's own cost); "
          f"{blocked} / gemm: {med[blocked] / med['gemm']:.3f}")
    if "before" in med:
        print(f"engine now / before: {med['engine'] / med['before']:.3f}")
    if before_dir is not None:
        before_dir.cleanup()

    if args.compile and have_numba:
        with tempfile.TemporaryDirectory() as cache:
            cold = first_call_seconds(cache)
            warm = first_call_seconds(cache)
        print(f"first predict (256 queries) in a fresh interpreter: empty numba cache {cold[0]:.2f} s "
              f"(then {cold[1]:.3f} s), filled cache {warm[0]:.2f} s (then {warm[1]:.3f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
