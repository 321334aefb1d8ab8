"""How much ε the ranking sample of ``bandwidth="auto"`` costs (``ranking_fraction``).

For each data set and fraction: the grid bandwidth each query gets when the ranking reads that share
of the training rows, against the one of least label-free ε over every row
(``ranking_fraction=1``), both ranked by the estimator's own rule
(:meth:`~nwbound.NadarayaWatsonClassifier.bandwidth_ranking`,
:meth:`~nwbound.NadarayaWatsonClassifier.choose_bandwidths`); printed: the ratio of the two
label-free ε (over queries where the least one is below 1), mean, 99th percentile and worst, the share
of queries with the same choice, and the ranking pass's time.

Data: the synthetic ECG stand-in of ``run.py`` (always), MIT-BIH beats (``--mitbih DIR``, the WFDB
records; 4 000 beats as queries, the rest as training rows) and MNIST (``--mnist DIR``; 28 000 digits
as training rows, 2 000 as queries). Epanechnikov, float32, Hoeffding's label-free ε, L = 0.05.

Usage::

    PYTHONPATH=src python benchmarks/bench_ranking_sample.py [--mitbih ../shared/data/mitdb] [--mnist ../shared/data/mnist]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import ECG_FULL, ecg_like  # noqa: E402

from nwbound import NadarayaWatsonClassifier  # noqa: E402

FRACTIONS = (1 / 4, 1 / 8, 1 / 16, "auto")
LIPSCHITZ = 0.05


def compare(name: str, X: np.ndarray, y: np.ndarray, Q: np.ndarray) -> None:
    def model(fraction):
        return NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=LIPSCHITZ, dtype="float32", n_jobs=-1,
                                        bound="hoeffding", ranking_fraction=fraction).fit(X, y)

    full = model(1.0)
    spec = full.bound_spec_
    ranking = full.bandwidth_ranking(Q)
    bias, sampling = spec.parts(ranking.kappa, ranking.sq_sum, ranking.dist_sum, ranking.bandwidth)
    eps = bias + sampling
    best_col = full.choose_bandwidths(ranking)
    best = eps[np.arange(len(Q)), best_col]
    useful = best < 1.0
    print(f"{name}: {X.shape[0]} × {X.shape[1]} training rows, {len(Q)} queries; "
          f"least ε < 1 for {useful.mean():.1%} of them")
    for fraction in FRACTIONS:
        m = model(fraction)
        t = time.perf_counter()
        choice = m.choose_bandwidths(m.bandwidth_ranking(Q))
        seconds = time.perf_counter() - t
        ratio = eps[np.arange(len(Q)), choice][useful] / best[useful]
        label = f"{fraction}" if isinstance(fraction, str) else f"1/{round(1 / fraction)}"
        print(f"  fraction {label:>5} ({m.ranking_fraction_:.4f}): ε ratio mean {ratio.mean():.5f}, "
              f"p99 {np.quantile(ratio, 0.99):.4f}, worst {ratio.max():.4f}; same λ {np.mean(choice == best_col):.1%}; "
              f"ranking {seconds:.2f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mitbih", metavar="DIR", help="MIT-BIH WFDB records (e.g. ../shared/data/mitdb)")
    parser.add_argument("--mnist", metavar="DIR", help="MNIST files (e.g. ../shared/data/mnist)")
    parser.add_argument("--cache-dir", default=None, help="cache of the MIT-BIH beats (default: none)")
    args = parser.parse_args(argv)

    X, y, Q = ecg_like(*ECG_FULL)
    compare("ECG stand-in", X, y, Q[:4096])
    if args.mitbih:
        from nwbound.datasets.mitbih import load_mitbih_beats

        beats = load_mitbih_beats(args.mitbih, progress=False, cache_dir=args.cache_dir)
        Xb = np.asarray(beats.X, np.float32)
        order = np.random.default_rng(1).permutation(len(Xb))
        compare("MIT-BIH beats", Xb[order[4000:]], np.asarray(beats.y)[order[4000:]], Xb[order[:4000]])
    if args.mnist:
        from nwbound.datasets.mnist import load_mnist

        images, labels = load_mnist(args.mnist)[:2]
        Xm = np.asarray(images, np.float32).reshape(len(images), -1)
        compare("MNIST", Xm[2000:30000], np.asarray(labels)[2000:30000], Xm[:2000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
