"""Hoeffding versus band-Chernoff bounds on MIT-BIH beats (issue "Useful bounds").

The setting of the shared notes' prototype: rebuilt beats, first 100 samples
min-max scaled on the training side, a stratified draw of 10 000 training and
4 000 test beats, Epanechnikov λ = 0.75, L = 0.05, δ = 0.05 simultaneous over the
5 AAMI classes; localized (k = 10) and regular classifiers. Prints, per classifier
and bound form: mean interval width (predicted class), certified share, error
among certified beats, and the share of all errors caught when 10 % of beats are
reviewed by each score; and the time of each prediction.

Run: ``python benchmarks/bench_bounds_ecg.py --data-dir ../shared/data/mitdb``
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from nwbound import NadarayaWatsonClassifier, UselessBoundWarning
from nwbound.datasets import load_mitbih_beats, paper_features, stratified_subsample
from nwbound.metrics import review_comparison


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="../shared/data/mitdb")
    parser.add_argument("--cache-dir", default=".cache/mitbih")
    parser.add_argument("--n-train", type=int, default=10_000)
    parser.add_argument("--n-test", type=int, default=4_000)
    args = parser.parse_args()
    warnings.simplefilter("ignore", UselessBoundWarning)

    beats = load_mitbih_beats(args.data_dir, cache_dir=args.cache_dir, progress=False)
    y_all = np.asarray(beats.y)
    pick = stratified_subsample(y_all, args.n_train + args.n_test, random_state=0)
    rng = np.random.default_rng(1)
    rng.shuffle(pick)
    # a stratified split of the draw into training and test beats
    test_pos = stratified_subsample(y_all[pick], args.n_test, random_state=2)
    is_test = np.zeros(pick.shape[0], dtype=bool)
    is_test[test_pos] = True
    X_train, X_test, _ = paper_features(beats.X[pick[~is_test]], beats.X[pick[is_test]])
    y_train, y_test = y_all[pick[~is_test]], y_all[pick[is_test]]
    print(f"{X_train.shape[0]} training / {X_test.shape[0]} test beats, {X_train.shape[1]} features")

    for name, k in (("localized k=10", 10), ("regular", None)):
        model = NadarayaWatsonClassifier(metric=None, bandwidth=0.75, n_neighbors=k, lipschitz=0.05, delta=0.05)
        model.fit(X_train, y_train)
        for form in ("hoeffding", "chernoff"):
            start = time.perf_counter()
            iv = model.predict_interval(X_test, bounds={form: {"bound": form}})[form]
            elapsed = time.perf_counter() - start
            rows = np.arange(len(iv))
            top = iv.predicted_index
            width = float(np.mean(iv.upper[rows, top] - iv.lower[rows, top]))
            table = {r["queue"]: r for r in review_comparison(y_test, iv, model.classes_, review_share=0.1)}
            cert = table["certificate"]
            caught = ", ".join(
                f"{q.split(' @')[0]} {table[q]['errors_caught']:.1%}" for q in table if q != "certificate"
            )
            print(
                f"{name:15s} {form:9s} {elapsed:6.2f} s  width {width:.3f}  certified {cert['accepted_share']:.1%}"
                f"  error among certified {cert['error_among_accepted']:.2%}  errors caught at 10 %: {caught}"
            )


if __name__ == "__main__":
    main()
