"""``bandwidth="auto"`` vs a fixed bandwidth: ``predict_interval`` on the ECG shapes.

Times, interleaved chunk by chunk (rotating which method goes first, so that load that changes
within seconds hits all alike; each method's time is its sum over the chunks, median over
``--repeats``), on the synthetic ECG stand-in of ``run.py`` (87 554 × 100 training points,
21 892 queries, 5 classes, Epanechnikov, float32, ``L = 0.05``, Chernoff bound, ``n_jobs=-1``):

* ``fixed``: a fixed λ = 0.75 (the ECG benchmark's bandwidth),
* ``fixed@typical``: a fixed λ equal to the grid bandwidth ``auto`` picks most often,
* ``auto``: ``bandwidth="auto"`` (16-bandwidth grid): one ranking pass of distance moments
  (:func:`nwbound.engine.host._sums.dense_moment_sums`) over the default ranking sample of the
  training rows (``ranking_fraction="auto"``), then exact statistics at each query's chosen λ,
* ``auto@all-rows``: the same ranking over every training row (``ranking_fraction=1``),
* ``exhaustive`` (with ``--exhaustive``): the way ``auto`` worked before, every statistic of every
  grid bandwidth in one pass (``kernel_statistics`` + ``interval_from_statistics``),
* the bare float32 GEMM of the same shapes,

and prints the ratios, how often each λ is chosen, and the certified share of each.

Usage::

    PYTHONPATH=src python benchmarks/bench_auto.py [--quick] [--repeats 3] [--chunk 4096] [--exhaustive]
        [--kernel tricube] [--n-queries 4096]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import ECG_BANDWIDTH, ECG_FULL, ECG_QUICK, bare_gemm, ecg_like, timed  # noqa: E402

from nwbound import NadarayaWatsonClassifier  # noqa: E402

LIPSCHITZ = 0.05


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"{ECG_QUICK[0]} × {ECG_QUICK[1]} instead of the full shapes")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats (median; default 3)")
    parser.add_argument("--chunk", type=int, default=4096, help="queries per interleaved chunk (default 4096)")
    parser.add_argument("--exhaustive", action="store_true", help="also time the exhaustive all-bandwidth pass")
    parser.add_argument("--kernel", default="epanechnikov",
                        help="kernel (default epanechnikov; a kernel without the moments form, e.g. tricube, "
                             "ranks on the sample from every bandwidth's statistics, and over every row exhaustively)")
    parser.add_argument("--n-queries", type=int, default=None, help="only the first N queries")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.chunk < 1:
        parser.error("--repeats and --chunk must be at least 1")

    n_train, n_query = ECG_QUICK if args.quick else ECG_FULL
    X, y, Q = ecg_like(n_train, n_query)
    if args.n_queries is not None:
        Q = Q[: args.n_queries]
        n_query = Q.shape[0]
    print(f"ECG shapes: {n_train} × {X.shape[1]} train, {n_query} queries, {args.kernel}, float32, L = {LIPSCHITZ}, "
          f"Chernoff; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    def model(bandwidth, **extra):
        return NadarayaWatsonClassifier(metric=None, bandwidth=bandwidth, lipschitz=LIPSCHITZ, dtype="float32", n_jobs=-1,
                                        kernel=args.kernel, **extra).fit(X, y)

    auto, auto_all = model("auto"), model("auto", ranking_fraction=1.0)
    print("grid: " + " ".join(f"{v:.3g}" for v in auto.bandwidths_)
          + f"; ranking on {auto.ranking_fraction_:.3f} of the rows")
    sample = auto.predict_interval(Q[: min(4096, n_query)])  # warm-up (JIT, layouts) and the typical λ
    values, counts = np.unique(sample.bandwidth, return_counts=True)
    typical = float(values[np.argmax(counts)])
    fixed, fixed_typical = model(ECG_BANDWIDTH), model(typical)
    for m in (fixed, fixed_typical, auto_all):
        m.predict_interval(Q[:256])

    def exhaustive(q):
        return auto.interval_from_statistics(auto.kernel_statistics(q))

    methods = {
        "gemm": lambda q: bare_gemm(X, q),
        "fixed": lambda q: timed(lambda: fixed.predict_interval(q)),
        "fixed@typical": lambda q: timed(lambda: fixed_typical.predict_interval(q)),
        "auto": lambda q: timed(lambda: auto.predict_interval(q)),
        "auto@all-rows": lambda q: timed(lambda: auto_all.predict_interval(q)),
    }
    if args.exhaustive:
        methods["exhaustive"] = lambda q: timed(lambda: exhaustive(q))
    names = list(methods)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(args.repeats):
        total = dict.fromkeys(names, 0.0)
        for c, s in enumerate(range(0, n_query, args.chunk)):
            q = Q[s : s + args.chunk]
            order = names[c % len(names):] + names[: c % len(names)]
            for name in order:
                total[name] += methods[name](q)
        for name in names:
            times[name].append(total[name])
        print(f"  repeat {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items())
              + f"  (load average {os.getloadavg()[0]:.1f})", flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    print("\nmedian seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in med.items()))
    print(f"auto / fixed (λ = {ECG_BANDWIDTH}): {med['auto'] / med['fixed']:.2f}×; "
          f"auto / fixed at the typical λ = {typical:.3g}: {med['auto'] / med['fixed@typical']:.2f}×")
    if "exhaustive" in med:
        print(f"exhaustive / fixed (λ = {ECG_BANDWIDTH}): {med['exhaustive'] / med['fixed']:.2f}×; "
              f"exhaustive / auto: {med['exhaustive'] / med['auto']:.2f}×")
    print(f"fixed / GEMM {med['fixed'] / med['gemm']:.2f}, auto / GEMM {med['auto'] / med['gemm']:.2f}")

    print(f"auto@all-rows / fixed: {med['auto@all-rows'] / med['fixed']:.2f}×")
    out = {"fixed": fixed.predict_interval(Q), "fixed@typical": fixed_typical.predict_interval(Q),
           "auto": auto.predict_interval(Q), "auto@all-rows": auto_all.predict_interval(Q)}
    values, counts = np.unique(out["auto"].bandwidth, return_counts=True)
    print("auto's choices: " + ", ".join(f"λ {v:.3g}: {c / n_query:.1%}" for v, c in zip(values, counts)))
    same = out["auto"].bandwidth == out["auto@all-rows"].bandwidth
    ratio = out["auto"].epsilon.max(axis=1) / out["auto@all-rows"].epsilon.max(axis=1)
    print(f"auto vs auto@all-rows: same λ for {same.mean():.1%} of the queries; largest class ε "
          f"{np.mean(ratio):.4f}× on average (worst {np.max(ratio):.3f}×)")
    print("certified share: " + ", ".join(f"{k} {iv.certified.mean():.1%}" for k, iv in out.items())
          + "; median ε of the predicted class: "
          + ", ".join(f"{k} {np.median(iv.epsilon[np.arange(n_query), iv.predicted_index]):.3f}"
                      for k, iv in out.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
