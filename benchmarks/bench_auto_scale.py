"""``bandwidth="auto"`` on a large model: the issue's 1 000 000-row case.

Fits the regular classifier on ``--rows`` × ``--features`` uniform points (float32, a noisy
two-class ramp) and times ``predict_interval`` of ``--queries`` fresh points with ``bandwidth="auto"``
(default ranking sample) and with a fixed λ equal to the median bandwidth ``auto`` chose, once each.

Usage::

    PYTHONPATH=src python benchmarks/bench_auto_scale.py [--rows 1000000] [--features 16] [--queries 20000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

from nwbound import NadarayaWatsonClassifier


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--queries", type=int, default=20_000)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    X = rng.random((args.rows, args.features)).astype(np.float32)
    y = (X[:, 0] + 0.3 * rng.standard_normal(args.rows) > 0.5).astype(int)
    Q = rng.random((args.queries, args.features)).astype(np.float32)
    warnings.simplefilter("ignore")  # the bound is loose on this noisy ramp: only the time matters here
    auto = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=1.0, dtype="float32", n_jobs=-1).fit(X, y)
    auto.predict_interval(Q[:64])  # compile and build the layouts outside the timing
    t = time.perf_counter()
    iv = auto.predict_interval(Q)
    t_auto = time.perf_counter() - t
    lam = float(np.median(iv.bandwidth))
    fixed = NadarayaWatsonClassifier(metric=None, bandwidth=lam, lipschitz=1.0, dtype="float32", n_jobs=-1).fit(X, y)
    fixed.predict_interval(Q[:64])
    t = time.perf_counter()
    fixed.predict_interval(Q)
    t_fixed = time.perf_counter() - t
    print(f"{args.rows} × {args.features} training rows, {args.queries} queries, load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; ranking on {auto.ranking_fraction_:.4f} of the rows")
    print(f"auto {t_auto:.1f} s; fixed λ = {lam:.3g} (auto's median choice) {t_fixed:.1f} s; ratio {t_auto / t_fixed:.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
