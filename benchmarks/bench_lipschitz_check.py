"""Level and power of :func:`nwbound.assumptions.check_lipschitz` on known-p fields.

For each field and each ``L = f · L*`` (``L*`` the true constant) this prints,
over ``--seeds`` draws: the share of draws in which the held-out check rejects
``L``, the share of held-out queries whose interval at ``L`` misses the true
``p`` (what the check is trying to see), and the share certified. The model
is fitted on 2/3 of each draw, the check runs on the other 1/3.

    PYTHONPATH=src python benchmarks/bench_lipschitz_check.py --seeds 5
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from nwbound import NadarayaWatsonClassifier
from nwbound.assumptions import check_lipschitz
from nwbound.datasets import make_lipschitz_logistic, make_softmax_field

FRACTIONS = (1 / 20, 1 / 10, 1 / 5, 1 / 2, 1.0)

FIELDS = {
    "logistic 1-D, λ = 0.3": (
        lambda n, s: make_lipschitz_logistic(n, lipschitz=0.5, n_features=1, scale="box", random_state=s),
        {"bandwidth": 0.3},
    ),
    "logistic 2-D, λ = 0.15": (
        lambda n, s: make_lipschitz_logistic(n, lipschitz=0.5, n_features=2, scale="box", random_state=s),
        {"bandwidth": 0.15},
    ),
    "logistic 2-D, k = 50": (
        lambda n, s: make_lipschitz_logistic(n, lipschitz=0.5, n_features=2, scale="box", random_state=s),
        {"n_neighbors": 50},
    ),
    "softmax, 3 classes, λ = 0.15": (
        lambda n, s: make_softmax_field(n, n_classes=3, random_state=s),
        {"bandwidth": 0.15},
    ),
}


def run(n_samples: int, seeds: int) -> None:
    print(f"n = {n_samples} per draw (2/3 fit, 1/3 held out), {seeds} draws; L = f · L*")
    print(f"{'field':<30} {'f':>6} {'rejected':>8} {'violated':>8} {'certified':>9}")
    for name, (make, params) in FIELDS.items():
        rejected, violated, certified = [], [], []
        for seed in range(seeds):
            data = make(n_samples, seed)
            cut = 2 * n_samples // 3
            clf = NadarayaWatsonClassifier(metric=None, lipschitz=data.lipschitz, **params).fit(data.X[:cut], data.y[:cut])
            grid = [data.lipschitz * f for f in FRACTIONS]
            checks = check_lipschitz(clf, data.X[cut:], data.y[cut:], lipschitz=grid)
            settings = {f: {"lipschitz": L} for f, L in zip(FRACTIONS, grid)}
            intervals = clf.predict_interval(data.X[cut:], bounds=settings)
            p = data.proba_true[cut:]
            rejected.append([c.rejected for c in checks])
            certified.append([c.n_certified / c.n_rows for c in checks])
            violated.append([
                float(np.mean(np.any((p < iv.lower - 1e-12) | (p > iv.upper + 1e-12), axis=1)))
                for iv in intervals.values()
            ])
        for i, f in enumerate(FRACTIONS):
            print(
                f"{name:<30} {f:>6.3g} {np.mean(rejected, 0)[i]:>8.2f} {np.mean(violated, 0)[i]:>8.3f} "
                f"{np.mean(certified, 0)[i]:>9.3f}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=3000)
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    start = time.perf_counter()
    run(args.n_samples, args.seeds)
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
