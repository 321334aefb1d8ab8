"""Where the default's accuracy gap to gradient boosting comes from (issue 30), and what levers cost.

For each data set and fold (stratified, seed 0, features standardised on the training fold, the
fold's fits seeded as in ``nwbound experiment tabular``) it fits the default
``NadarayaWatsonClassifier()`` under one or more *settings* and prints, per set and setting,
pooled over the folds:

* ``hgb``: ``HistGradientBoostingClassifier()`` on the whole training fold (the issue's "best
  plain model" on these sets); ``hgb50``: the same at ``max_iter=50`` (the score model's capacity
  on every row);
* ``acc``: the default's accuracy (``predict``);
* ``s``: the score model's accuracy: argmax of each cross-fitted model's ``metric_.map_`` on the
  test fold (in the map rows' power-of-two column units, :func:`nwbound.spaces.column_units`, as
  the map was fitted), averaged over the models;
* ``p̂``: each model's own ``predict`` (its NW estimate alone), averaged over the models;
* ``s mean``: argmax of the mean of the models' score models' probabilities;
* ``15-NN in z``: a 15-nearest-neighbour vote among each model's kernel rows in its learned space
  (``metric_.transform``), averaged over the models: p̂ with less smoothing than the chosen λ;
* ``mean``: argmax of the plain mean of the models' ``predict_proba`` (the combination without
  κ-weights or the projection into the intersected box);
* ``cert``: the certified share; ``rows``: the map rows of the first model; ``chosen``: the score
  models chosen; ``s``: fit + predict seconds (CPU).

Settings (each measured by patching the library in this process only; nothing is changed on disk;
a number after the name is the value, e.g. ``iter150``, ``frac50``, ``map60``):

* ``base``: the library as it is (since round 15, ``map60``);
* ``iter100``, ``iter200``: ``AUTO_MAX_ITER`` 100 / 200;
* ``es``: gradient boosting with ``max_iter=200`` and early stopping on a tenth of the map rows;
* ``frac60``: ``metric_fraction=0.6``;
* ``map50``, ``map70``: the metric share split 50 / 50 (round 14) or 70 / 30 between map rows and
  check rows (``nwbound.spaces._split.MAP_SHARE``, 0.6 since round 15);
* ``nw``: ``point_estimate="nw"``, the kernel estimate (``base`` is ``point_estimate="auto"`` since
  round 16: the chosen score model fitted on every training row, moved into the box).

Parts join with ``+``: ``frac50+map60`` is both.

``--cost`` times the settings instead, on the rows of ``benchmarks/bench_defaults.py``: per size
and class count, the default's fit + ``predict_interval`` CPU seconds under each setting, in one
process with the settings interleaved, as a multiple of a single-thread gradient boosting's fit +
``predict_proba``; then the least of 3 fits on 1 000 rows under each setting.

Usage::

    PYTHONPATH=src python benchmarks/accuracy_gap.py                    # every unseen set, base
    PYTHONPATH=src python benchmarks/accuracy_gap.py --settings base,iter100,map70 --sets wide,const_dup
    PYTHONPATH=src python benchmarks/accuracy_gap.py --settings nw,base     # round 16: the point estimate
    PYTHONPATH=src python benchmarks/accuracy_gap.py --cost --settings map50,map60 --sizes 2000 10000
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import contextlib  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from typing import Any, Iterator  # noqa: E402

import numpy as np  # noqa: E402

UNSEEN = ("rare_class", "const_dup", "wide", "heavy_tail", "irrelevant", "many_classes", "gtsrb")
SETTINGS = ("base", "iter100", "iter200", "es", "frac60", "map50", "map70", "nw")


@contextlib.contextmanager
def setting(name: str) -> Iterator[dict[str, Any]]:
    """Patch the library for one setting (parts joined by ``+``); yield the estimator's extra parameters."""
    import nwbound.spaces._auto as auto
    import nwbound.spaces._split as split

    saved = (auto.AUTO_MAX_ITER, auto.auto_candidates, split.MAP_SHARE)
    params: dict[str, Any] = {}
    try:
        for part in name.split("+"):
            if part.startswith("iter"):
                auto.AUTO_MAX_ITER = int(part[4:])
            elif part == "es":
                original = saved[1]

                def candidates(random_state: int) -> dict[str, Any]:
                    out = original(random_state)
                    out["gradient boosting"].set_params(max_iter=200, early_stopping=True)
                    return out

                auto.auto_candidates = candidates
            elif part.startswith("frac"):
                params["metric_fraction"] = int(part[4:]) / 100
            elif part.startswith("map"):
                split.MAP_SHARE = int(part[3:]) / 100
            elif part == "nw":
                params["point_estimate"] = "nw"
            elif part != "base":
                raise ValueError(f"unknown setting {part!r}; choose from {', '.join(SETTINGS)}")
        yield params
    finally:
        auto.AUTO_MAX_ITER, auto.auto_candidates, split.MAP_SHARE = saved


def fold_row(X_tr: np.ndarray, y_tr: np.ndarray, X_te: np.ndarray, y_te: np.ndarray, seed: int,
             params: dict[str, Any]) -> dict[str, Any]:
    """One fit of the default model under the patched setting, and its parts' accuracies."""
    from sklearn.neighbors import KNeighborsClassifier

    from nwbound import NadarayaWatsonClassifier
    from nwbound.spaces import column_units, in_column_units

    clf = NadarayaWatsonClassifier(random_state=seed, **params)
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X_tr, y_tr)
        iv = clf.predict_interval(X_te)
        cpu = time.process_time() - t0
        pred = clf.classes_[np.argmax(iv.proba, axis=1)]
        models = getattr(clf, "cross_fit_models_", None) or [clf]
        s_acc, p_acc, probas, chosen, scores, knn_acc = [], [], [], [], [], []
        for m in models:
            space = m.metric_
            # the map was fitted on its rows in their columns' power-of-two units (column_units)
            units = column_units(X_tr[np.setdiff1d(m.metric_rows_, m.check_rows_)])
            s = (np.asarray(space.map_.predict_proba(in_column_units(X_te, units)))
                 if space.map_ is not None else None)
            # the map was fitted on the estimator's class indices
            s_acc.append(np.nan if s is None else
                         float(np.mean(clf.classes_[space.map_.classes_[np.argmax(s, 1)]] == y_te)))
            if s is not None:
                scores.append(s)
            # less smoothing than the chosen λ: 15 nearest kernel rows in the model's own space
            knn = KNeighborsClassifier(15).fit(space.transform(X_tr[m.nw_rows_]), y_tr[m.nw_rows_])
            knn_acc.append(float(np.mean(knn.predict(space.transform(X_te)) == y_te)))
            proba = m.predict_proba(X_te)
            probas.append(proba)
            p_acc.append(float(np.mean(clf.classes_[np.argmax(proba, 1)] == y_te)))
            chosen.append({"gradient boosting": "HGB", "logistic regression": "LR"}.get(space.report_.chosen, "-"))
    mean = clf.classes_[np.argmax(np.mean(probas, axis=0), axis=1)]
    s_mean = (float(np.mean(clf.classes_[np.argmax(np.mean(scores, axis=0), axis=1)] == y_te))
              if len(scores) == len(models) else np.nan)
    first = models[0]
    return {"acc": float(np.mean(pred == y_te)), "s": float(np.nanmean(s_acc)), "p": float(np.mean(p_acc)),
            "s_mean": s_mean, "knn": float(np.mean(knn_acc)),
            "mean": float(np.mean(mean == y_te)), "cert": float(np.mean(iv.certified)),
            "rows": int(np.setdiff1d(first.metric_rows_, first.check_rows_).shape[0]), "chosen": "/".join(chosen),
            "cpu": cpu, "n": int(y_te.shape[0])}


@contextlib.contextmanager
def _default_params(bench: Any, params: dict[str, Any]) -> Iterator[None]:
    """``bench_defaults``' default model with a setting's estimator parameters (``frac60``, ``nw``)."""
    import functools

    saved = bench.NadarayaWatsonClassifier
    bench.NadarayaWatsonClassifier = functools.partial(saved, **params)
    try:
        yield
    finally:
        bench.NadarayaWatsonClassifier = saved


def cost(names: list[str], sizes: list[int]) -> None:
    """CPU seconds of the default's fit + predict under each setting, interleaved, against HGB's."""
    import sys

    from threadpoolctl import threadpool_limits

    from nwbound import NadarayaWatsonClassifier

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_defaults as bench

    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bench.warm_up((2, 10))
        print(f"| rows | classes | HGB CPU s | {' | '.join(names)} |")
        print("|---|---|---|" + "---|" * len(names))
        for n in sizes:
            for k in (2, 10):
                X, y, Q, y_q = bench.dataset(n, k)
                hgb_cpu = bench.run_hgb(X, y, Q, y_q)[1]
                cells = []
                for name in names:
                    with setting(name) as params, _default_params(bench, params):
                        cpu = bench.run_default(X, y, Q, y_q)[1]
                    cells.append(f"{cpu:.1f} s ({cpu / hgb_cpu:.1f}×)")
                print(f"| {n} | {k} | {hgb_cpu:.1f} | {' | '.join(cells)} |", flush=True)
        for k in (2, 10):
            X, y, _, _ = bench.dataset(int(bench.SMALL_FIT_ROWS / 0.7) + 1, k)
            X, y = X[:bench.SMALL_FIT_ROWS], y[:bench.SMALL_FIT_ROWS]
            best = {name: np.inf for name in names}
            for _ in range(3):
                for name in names:
                    with setting(name) as params:
                        start = time.process_time()
                        NadarayaWatsonClassifier(random_state=0, **params).fit(X, y)
                        best[name] = min(best[name], time.process_time() - start)
            print(f"fit on {X.shape[0]} rows, {k} classes: "
                  + ", ".join(f"{name} {t:.2f} s" for name, t in best.items()), flush=True)


def main(argv: list[str] | None = None) -> None:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler

    from nwbound.experiments.tabular import TabularConfig, load_any

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(UNSEEN))
    parser.add_argument("--settings", default="base")
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default="../shared/data", help="the folder holding gtsrb/")
    parser.add_argument("--cost", action="store_true", help="time the settings (bench_defaults.py's rows)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000, 10_000, 30_000, 100_000])
    args = parser.parse_args(argv)
    config = TabularConfig(data_dir=args.data_dir, seed=args.seed)
    names = [s for s in args.settings.split(",") if s]
    if args.cost:
        cost(names, args.sizes)
        return
    print("| set | hgb | hgb50 | setting | acc (gap) | s | s mean | p̂ | 15-NN in z | mean | cert | map rows | chosen | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for dataset in args.sets.split(","):
        X, y, _ = load_any(dataset, config)
        folds = list(StratifiedKFold(args.folds, shuffle=True, random_state=args.seed).split(X, y))
        prepared, hgb, hgb50 = [], [], []
        for fold, (train, test) in enumerate(folds):
            scaler = StandardScaler().fit(X[train])
            X_tr, X_te = scaler.transform(X[train]), scaler.transform(X[test])
            for store, it in ((hgb, 100), (hgb50, 50)):
                model = HistGradientBoostingClassifier(max_iter=it, random_state=args.seed).fit(X_tr, y[train])
                store.append(float(np.mean(model.predict(X_te) == y[test])) * test.shape[0])
            prepared.append((X_tr, y[train], X_te, y[test], args.seed * 1000 + fold))
        n = sum(p[3].shape[0] for p in prepared)
        h, h50 = sum(hgb) / n, sum(hgb50) / n
        for name in names:
            with setting(name) as params:
                rows = [fold_row(*p, params) for p in prepared]
            w = np.array([r["n"] for r in rows], dtype=float) / n

            def pooled(key: str, rows: list = rows, w: np.ndarray = w) -> float:
                return float(np.sum([r[key] for r in rows] * w))

            acc = pooled("acc")
            print(f"| {dataset} | {h:.3f} | {h50:.3f} | {name} | {acc:.3f} ({100 * (acc - h):+.1f}) | "
                  f"{pooled('s'):.3f} | {pooled('s_mean'):.3f} | {pooled('p'):.3f} | {pooled('knn'):.3f} | {pooled('mean'):.3f} | {100 * pooled('cert'):.1f}% | "
                  f"{rows[0]['rows']} | {' '.join(r['chosen'] for r in rows)} | "
                  f"{sum(r['cpu'] for r in rows):.1f} |", flush=True)


if __name__ == "__main__":
    main()
