"""Per-query time of CMEClassifier against the reference per-query formula.

The reference (Baumann & Schön's code, as the NWC paper ran it) builds
``K + nλ_r I`` and calls ``np.linalg.solve`` for every query: O(n²d + n³)
per query. ``CMEClassifier`` factorises once at ``fit`` and answers a batch
of queries with one kernel block and one triangular solve: O(nd + n²) per
query. The reference's per-query log-determinant for ``c_g`` is *not* timed
(it would only slow the reference further), so the ratio is a lower bound.

Usage::

    PYTHONPATH=src python benchmarks/bench_cme.py [--n 1000] [--threads 1]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from threadpoolctl import threadpool_limits

from nwbound.baselines import CMEClassifier


def reference_query(X, Y, x, *, amplitude, gamma, reg):
    """One query with the reference formula; returns (p̂, P²)."""
    n = X.shape[0]
    diff = X[:, None, :] - X[None, :, :]
    K_reg = amplitude**2 * np.exp(-gamma * np.einsum("ijk,ijk->ij", diff, diff))
    K_reg[np.diag_indices(n)] += n * reg
    d = X - x
    k_x = amplitude**2 * np.exp(-gamma * np.einsum("ij,ij->i", d, d))
    sol = np.linalg.solve(K_reg, k_x)
    return Y @ sol, amplitude**2 - k_x @ sol


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="training-set size")
    parser.add_argument("--d", type=int, default=10, help="number of features")
    parser.add_argument("--classes", type=int, default=5)
    parser.add_argument(
        "--ref-queries", type=int, default=10, help="queries timed for the reference"
    )
    parser.add_argument("--queries", type=int, default=5000, help="queries timed for CMEClassifier")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads for both (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    y = np.arange(args.n) % args.classes
    centres = rng.normal(scale=3.0, size=(args.classes, args.d))
    X = centres[y] + rng.normal(size=(args.n, args.d))
    query_class = rng.integers(args.classes, size=args.queries)
    X_query = centres[query_class] + rng.normal(size=(args.queries, args.d))
    Y = (y[None, :] == np.arange(args.classes)[:, None]).astype(float)

    with threadpool_limits(limits=args.threads):
        model = CMEClassifier()
        t0 = time.perf_counter()
        model.fit(X, y)
        fit_s = time.perf_counter() - t0

        model.predict_interval(X_query[:10])  # warm-up
        t0 = time.perf_counter()
        interval = model.predict_interval(X_query)
        ours_s = (time.perf_counter() - t0) / args.queries

        params = {"amplitude": model.amplitude, "gamma": model.gamma, "reg": model.regularization}
        reference_query(X, Y, X_query[0], **params)  # warm-up
        t0 = time.perf_counter()
        ref = [reference_query(X, Y, x, **params) for x in X_query[: args.ref_queries]]
        ref_s = (time.perf_counter() - t0) / args.ref_queries

    ref_raw = np.array([r[0] for r in ref])
    ref_p = np.sqrt(np.maximum([r[1] for r in ref], 0.0))
    m = args.ref_queries
    raw_err = np.max(np.abs(model.predict_raw(X_query[:m]) - ref_raw))
    bias_err = np.max(np.abs(interval.bias[:m, 0] - ref_p * math.sqrt(model.rkhs_bound)))

    print(f"n = {args.n}, d = {args.d}, C = {args.classes}, BLAS threads = {args.threads}")
    print(f"CMEClassifier fit (Gram + Cholesky):        {fit_s:.4f} s")
    print(
        f"CMEClassifier predict_interval, per query: {ours_s * 1e6:10.1f} us"
        f"  ({args.queries} queries)"
    )
    print(
        f"reference formula, per query:              {ref_s * 1e6:10.1f} us"
        f"  ({args.ref_queries} queries)"
    )
    print(f"speed-up per query:                        {ref_s / ours_s:10.0f} x")
    print(f"max |p̂ - p̂_ref| = {raw_err:.2e}, max |P - P_ref| = {bias_err:.2e}")


if __name__ == "__main__":
    main()
