"""Time the band-Chernoff interval (numpy and numba routes) at the ECG benchmark shapes.

Shapes: n = 21 892 queries, C = 5 classes, and either B = 32 distance bins per query
(the regular classifier's histogram form) or k = 10 per-point groups (localized).
The data are synthetic but shaped like the real ones: Epanechnikov weights of points
spread over a ball, class probabilities concentrated on one class for most queries.
Prints the time of each route, their largest difference, and the mean width ratio
against the Hoeffding interval on the same groups.

Run: ``python benchmarks/bench_chernoff.py [--queries N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from nwbound.bounds._chernoff import chernoff_interval, group_hoeffding_interval


def histogram_case(rng: np.random.Generator, n: int, n_classes: int, n_bins: int, lipschitz: float,
                   bandwidth: float = 1.0, mean_points: float = 400.0):
    """Counts, kernel-value bounds and band radii per distance bin; class sums from
    multinomial labels with per-bin kernel values inside the bin's bounds."""
    edges = np.linspace(0.0, bandwidth, n_bins + 1)
    k_upper = 1.0 - (edges[:-1] / bandwidth) ** 2
    k_lower = 1.0 - (edges[1:] / bandwidth) ** 2
    shell = np.diff(edges**3)  # points per bin grow like the shell volume (3-dim)
    lam = rng.gamma(2.0, mean_points / 2.0, size=(n, 1)) * shell / shell.sum()
    count = rng.poisson(lam).astype(np.float64)
    proba = rng.dirichlet(np.full(n_classes, 0.3), size=n)
    k_mid = rng.uniform(k_lower, k_upper, size=(n, n_bins))
    sums = np.zeros((n, n_classes))
    left = count.copy()
    rest = np.ones(n)
    for c in range(n_classes - 1):  # multinomial per bin, vectorised over queries
        share = np.clip(proba[:, c] / np.maximum(rest, 1e-12), 0.0, 1.0)
        take = rng.binomial(left.astype(np.int64), share[:, None]).astype(np.float64)
        sums[:, c] = (take * k_mid).sum(axis=1)
        left -= take
        rest -= proba[:, c]
    sums[:, -1] = (left * k_mid).sum(axis=1)
    return sums, count, k_upper, k_lower, lipschitz * edges[1:]


def neighbour_case(rng: np.random.Generator, n: int, n_classes: int, k: int, lipschitz: float):
    """k per-point groups: kernel values of the k nearest neighbours, their labels."""
    r = np.sort(rng.uniform(0.2, 0.9, size=(n, k)), axis=1)
    a = 1.0 - r**2
    proba = rng.dirichlet(np.full(n_classes, 0.3), size=n)
    labels = (rng.random((n, k, 1)) > np.cumsum(proba, axis=1)[:, None, :]).sum(axis=2)
    labels = np.minimum(labels, n_classes - 1)
    sums = np.stack([(a * (labels == c)).sum(axis=1) for c in range(n_classes)], axis=1)
    return sums, np.ones((n, k)), a, a, lipschitz * r


def timed(fn, repeat: int):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=21_892)
    parser.add_argument("--classes", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--lipschitz", type=float, default=0.05)
    parser.add_argument("--delta", type=float, default=0.05)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    d_prime = args.delta / args.classes
    cases = {
        "histogram B=32": histogram_case(rng, args.queries, args.classes, 32, args.lipschitz),
        "per-point k=10": neighbour_case(rng, args.queries, args.classes, 10, args.lipschitz),
    }
    # compile once outside the timing (numba caches the machine code on disk)
    small = tuple(np.asarray(x)[:2] if np.ndim(x) == 2 else x for x in cases["per-point k=10"])
    chernoff_interval(*small, d_prime, engine="auto")
    print(f"n = {args.queries}, C = {args.classes}, δ′ = {d_prime:g}, L = {args.lipschitz}")
    for name, case in cases.items():
        t_h, (hl, hu) = timed(lambda: group_hoeffding_interval(*case, d_prime), args.repeat)
        t_np, (nl, nu) = timed(lambda: chernoff_interval(*case, d_prime, engine="numpy"), args.repeat)
        try:
            t_nb, (bl, bu) = timed(lambda: chernoff_interval(*case, d_prime, engine="numba"), args.repeat)
            diff = max(np.abs(bl - nl).max(), np.abs(bu - nu).max())
            numba_txt = f"numba {t_nb:6.2f} s   max |numba − numpy| = {diff:.1e}"
        except ValueError as exc:  # numba not installed
            numba_txt = f"numba: {exc}"
        ratio = (nu - nl).mean() / (hu - hl).mean()
        print(f"{name}: hoeffding {t_h:6.3f} s   numpy {t_np:6.2f} s   {numba_txt}   "
              f"mean width chernoff/hoeffding = {ratio:.3f}")


if __name__ == "__main__":
    main()
