"""Approximate (HNSW) against exact neighbour search for the localized classifier.

On ECG-shaped data (default: 87 554 training rows × 100 features, 21 892
queries, k = 10, 5 imbalanced classes) this prints, for each index, the build
time, the time to search all queries, recall@k against the exact neighbours
and the share of queries whose localized-NWC predicted class equals the one
the exact index gives. The data are a synthetic stand-in with a low intrinsic
dimension (beats vary along a few latent directions): a smooth random map of
a ``--latent``-dimensional mixture into ``[0, 1]^d`` plus small noise.

Usage::

    PYTHONPATH=src python benchmarks/bench_ann.py [--n 87554] [--queries 21892]
        [--M 32] [--ef 32 64 128 256] [--threads 1] [--knn-algorithm auto] [--skip-exact-trees]
        [--parallel-build] [--noise 0.01] [--ecg ../shared/data/mitdb]

Targets: all queries in <= 0.6 s at recall@k >= 0.999 and >= 99.5 % agreement.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from sklearn.neighbors import KNeighborsClassifier, NearestNeighbors
from threadpoolctl import threadpool_limits

from nwbound import NadarayaWatsonClassifier
from nwbound.neighbors import HNSWIndex


def ecg_like(n: int, n_features: int, latent: int, seed: int, noise: float = 0.01) -> tuple[np.ndarray, np.ndarray]:
    """Rows in [0, 1]^d on a smooth ``latent``-dim manifold, labels with ECG class shares."""
    rng = np.random.default_rng(seed)
    shares = np.array([0.828, 0.025, 0.066, 0.007, 0.074])  # N, S, V, F, Q
    y = rng.choice(shares.size, size=n, p=shares)
    centres = rng.normal(scale=1.5, size=(shares.size, latent))
    z = centres[y] + rng.normal(size=(n, latent))
    # A smooth nonlinear map to d features (random Fourier features), then [0, 1].
    W = rng.normal(scale=0.5, size=(latent, n_features))
    b = rng.uniform(0, 2 * np.pi, size=n_features)
    X = 0.5 + 0.5 * np.sin(z @ W + b) + rng.normal(scale=noise, size=(n, n_features))
    return np.clip(X, 0.0, 1.0), y


def recall_at_k(found: np.ndarray, exact: np.ndarray) -> float:
    """Share of the exact k neighbours (per query) that were found."""
    k = exact.shape[1]
    hits = (found[:, :, None] == exact[:, None, :]).any(axis=1).sum()
    return float(hits) / (exact.shape[0] * k)


def timed(fn, *args, repeat: int = 1):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=87_554, help="training rows")
    parser.add_argument("--queries", type=int, default=21_892)
    parser.add_argument("--d", type=int, default=100, help="features")
    parser.add_argument("--latent", type=int, default=6, help="intrinsic dimension")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--M", type=int, default=32)
    parser.add_argument("--ef-construction", type=int, default=200)
    parser.add_argument("--ef", type=int, nargs="+", default=[32, 64, 128, 256])
    parser.add_argument("--threads", type=int, default=1, help="search threads (and BLAS threads)")
    parser.add_argument("--bandwidth", type=float, default=0.75)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--noise", type=float, default=0.01, help="feature noise of the synthetic stand-in")
    parser.add_argument("--ecg", metavar="MITDB_DIR", default=None,
                        help="use real MIT-BIH beats (paper features, intra-patient 80/20 split) instead")
    parser.add_argument("--parallel-build", action="store_true",
                        help="build the graph with --threads threads (not reproducible; default: seeded, 1 thread)")
    parser.add_argument("--knn-algorithm", default="auto", help="algorithm of the KNeighborsClassifier baseline")
    parser.add_argument("--skip-exact-trees", action="store_true", help="time only brute force as the exact index")
    args = parser.parse_args()

    if args.ecg:
        from nwbound.datasets import load_mitbih_beats, paper_features, split_beats

        train, test = split_beats(load_mitbih_beats(args.ecg, progress=False), split="intra")
        Xtr, Xq, _ = paper_features(train, test, n_features=args.d)
        ytr = train.y
        source = f"MIT-BIH beats from {args.ecg}"
    else:
        X, y = ecg_like(args.n + args.queries, args.d, args.latent, args.seed, args.noise)
        Xtr, ytr, Xq = X[: args.n], y[: args.n], X[args.n :]
        source = f"synthetic, latent dim {args.latent}, noise {args.noise}"
    Xtr, Xq = np.ascontiguousarray(Xtr, dtype=np.float64), np.ascontiguousarray(Xq, dtype=np.float64)
    print(f"data: {Xtr.shape[0]} x {Xtr.shape[1]} train, {Xq.shape[0]} queries, k={args.k}, {source}, "
          f"threads={args.threads}, cpus={os.cpu_count()}")

    def nwc(algorithm, **kw):
        return NadarayaWatsonClassifier(
            n_neighbors=args.k, algorithm=algorithm, bandwidth=args.bandwidth, lipschitz=0.05,
            n_jobs=args.threads, **kw,
        )

    rows = []
    with threadpool_limits(limits=args.threads):
        exact_algos = ["brute"] if args.skip_exact_trees else ["brute", "kd_tree", "ball_tree"]
        exact_idx = None
        for algo in exact_algos:
            nn = NearestNeighbors(algorithm=algo, n_jobs=args.threads)
            t_build, _ = timed(nn.fit, Xtr)
            t_query, (_, idx) = timed(nn.kneighbors, Xq, args.k)
            if exact_idx is None:
                exact_idx = idx
            rows.append((f"exact {algo}", t_build, t_query, recall_at_k(idx, exact_idx)))

        exact_model = nwc("brute").fit(Xtr, ytr)
        t_nwc_exact, exact_pred = timed(exact_model.predict, Xq)
        knn = KNeighborsClassifier(n_neighbors=args.k, algorithm=args.knn_algorithm, n_jobs=args.threads).fit(Xtr, ytr)
        t_knn, _ = timed(knn.predict, Xq)

        t0 = time.perf_counter()
        seed = None if args.parallel_build else args.seed
        index = HNSWIndex(M=args.M, ef_construction=args.ef_construction, random_state=seed,
                          n_jobs=args.threads).fit(Xtr)
        t_build = time.perf_counter() - t0
        agreements = []
        for ef in args.ef:
            index.ef = ef
            t_query, (_, idx) = timed(index.kneighbors, Xq, args.k, repeat=2)
            rows.append((f"hnsw ef={ef}", t_build, t_query, recall_at_k(idx, exact_idx)))
            # The localized NWC on these neighbours, through the estimator's own
            # sums: swap the HNSW index into the fitted model, then restore it.
            exact_model.index_, saved = index, exact_model.index_
            pred = exact_model.predict(Xq)
            exact_model.index_ = saved
            agreements.append((ef, float(np.mean(pred == exact_pred))))

    print(f"\n{'index':<18}{'build s':>10}{'query s':>10}{'recall@k':>11}")
    for name, tb, tq, rec in rows:
        print(f"{name:<18}{tb:>10.3f}{tq:>10.3f}{rec:>11.5f}")
    print(f"\nlocalized NWC predict, exact brute index: {t_nwc_exact:.3f} s; "
          f"sklearn KNeighborsClassifier({args.knn_algorithm}).predict: {t_knn:.3f} s")
    for ef, agree in agreements:
        print(f"hnsw ef={ef}: predicted class identical to the exact index on {100 * agree:.3f} % of queries")


if __name__ == "__main__":
    main()
