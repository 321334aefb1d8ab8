"""The README's headline table: the default model on real and known-p data, over several splits.

For each data set and each seed, one stratified split (a quarter of the rows held out, the
split's ``random_state`` is the seed) and, on it:

* ``NadarayaWatsonClassifier()`` (the library's defaults) on the raw features: accuracy, the
  share of test rows it certifies, the error rate among them, and its fit + ``predict_interval``
  + ``predict`` time;
* the plain models it is compared with: ``HistGradientBoostingClassifier()`` and 15 nearest
  neighbours on standardized features (the better of the two by mean accuracy is shown);
* on the known-p synthetic fields (:mod:`nwbound.datasets`, a fresh draw per seed), the share of
  test rows where some class's true probability lies outside its interval (at most δ = 5 %
  expected: the bound's promise, under its assumption).

Each cell is the mean over the seeds and, in brackets, the smallest and largest value. Run it
with one thread per process on a shared machine (user guide, "Threads")::

    OMP_NUM_THREADS=1 python benchmarks/headline.py > benchmarks/headline.md
    OMP_NUM_THREADS=1 python benchmarks/headline.py --readme README.md > benchmarks/headline.md

``--readme`` also replaces the table between the ``headline`` markers of that file.
``--seeds`` and ``--datasets`` make a quicker run (e.g. ``--seeds 2 --datasets iris wine``).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import sklearn
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import nwbound
from nwbound import NadarayaWatsonClassifier
from nwbound.datasets import make_lipschitz_logistic, make_softmax_field

TEST_SIZE = 0.25
MARKERS = ("<!-- headline:start -->", "<!-- headline:end -->")
"""The README lines between which ``--readme`` writes the table."""


@dataclass(frozen=True)
class Data:
    """One data set's draw: features, labels, and the true class probabilities where known."""

    X: np.ndarray
    y: np.ndarray
    proba_true: np.ndarray | None = None


def _bundled(load: Callable) -> Callable[[int], Data]:
    def draw(seed: int) -> Data:  # the same rows every seed; only the split moves
        X, y = load(return_X_y=True)
        return Data(X, y)
    return draw


def _synthetic(make: Callable) -> Callable[[int], Data]:
    def draw(seed: int) -> Data:  # a fresh draw of the field per seed
        data = make(seed)
        return Data(data.X, data.y, data.proba_true)
    return draw


DATASETS: dict[str, Callable[[int], Data]] = {
    "breast-cancer": _bundled(load_breast_cancer),
    "wine": _bundled(load_wine),
    "iris": _bundled(load_iris),
    "digits": _bundled(load_digits),
    # p(1 | x) a logistic ramp along one direction of 2 of the 6 features (L = 0.5 on [-10, 10]^6).
    "known p: logistic, 6-D": _synthetic(lambda seed: make_lipschitz_logistic(
        2_000, lipschitz=0.5, n_features=6, direction=[1, 1, 0, 0, 0, 0], scale=None, random_state=seed)),
    # Three classes, a soft nearest-prototype field on the plane.
    "known p: softmax, 3 classes, 2-D": _synthetic(lambda seed: make_softmax_field(
        2_000, n_classes=3, lipschitz=0.15, scale=None, random_state=seed)),
}

PLAIN_MODELS: dict[str, Callable[[], object]] = {
    "HGB": HistGradientBoostingClassifier,
    "15-NN": lambda: make_pipeline(StandardScaler(), KNeighborsClassifier(15)),
}


def _one_split(data: Data, seed: int) -> dict[str, float]:
    """Every figure of one data set on one split."""
    idx = np.arange(len(data.y))
    train, test = train_test_split(idx, test_size=TEST_SIZE, stratify=data.y, random_state=seed)
    X_train, y_train, X_test, y_test = data.X[train], data.y[train], data.X[test], data.y[test]
    row: dict[str, float] = {}
    start = time.perf_counter()
    clf = NadarayaWatsonClassifier().fit(X_train, y_train)
    iv = clf.predict_interval(X_test)
    wrong = clf.predict(X_test) != y_test
    row["seconds"] = time.perf_counter() - start
    row["accuracy"] = 1.0 - wrong.mean()
    row["certified"] = iv.certified.mean()
    row["error among certified"] = wrong[iv.certified].mean() if iv.certified.any() else np.nan
    if data.proba_true is not None:
        p = data.proba_true[test]  # columns in classes_ order: the fields' labels are 0, …, C-1
        row["p outside"] = np.mean(np.any((p < iv.lower) | (p > iv.upper), axis=1))
    for name, make in PLAIN_MODELS.items():
        start = time.perf_counter()
        model = make().fit(X_train, y_train)
        row[f"{name} accuracy"] = np.mean(model.predict(X_test) == y_test)
        row[f"{name} seconds"] = time.perf_counter() - start
    return row


def _warm_up() -> None:
    """One small fit first, so that no data set's time includes the one-off compilation (numba)."""
    data = make_lipschitz_logistic(300, random_state=0)
    NadarayaWatsonClassifier().fit(data.X, data.y).predict_interval(data.X[:10])


def _spread(values: list[float], percent: bool = False, digits: int = 3) -> str:
    """``mean (min–max)`` of the finite values, as percentages when asked."""
    finite = np.asarray([v for v in values if np.isfinite(v)], dtype=float)
    if finite.size == 0:
        return "–"
    scale, fmt = (100.0, "{:.1f}") if percent else (1.0, f"{{:.{digits}f}}")
    mean, low, high = (fmt.format(scale * v) for v in (finite.mean(), finite.min(), finite.max()))
    unit = " %" if percent else ""
    missing = "" if finite.size == len(values) else f"; {len(values) - finite.size} split(s) certify nothing"
    return f"{mean}{unit} ({low}–{high}{missing})"


def _seconds(values: list[float]) -> str:
    mean = float(np.mean(values))
    return f"{mean:.1f} s" if mean >= 1 else f"{mean:.2f} s"


def _headline_table(names: list[str], seeds: int, log=sys.stderr) -> str:
    """The markdown table of ``names`` over ``seeds`` splits (progress lines go to ``log``)."""
    header = ("| data set | rows × features × classes | default model: accuracy | best plain model: accuracy "
              "| certified | error among certified | true p outside its interval | fit + predict (default / plain) |")
    lines = [header, "|" + "---|" * header.count(" | ") + "---|"]
    for name in names:
        rows = []
        for seed in range(seeds):
            data = DATASETS[name](seed)
            rows.append(_one_split(data, seed))
            print(f"{name}, seed {seed}: {rows[-1]['seconds']:.1f} s", file=log, flush=True)
        column = {key: [r[key] for r in rows] for key in rows[0]}
        best = max(PLAIN_MODELS, key=lambda m: np.mean(column[f"{m} accuracy"]))
        shape = f"{len(data.y)} × {data.X.shape[1]} × {len(np.unique(data.y))}"
        outside = _spread(column["p outside"], percent=True) if "p outside" in column else "not known"
        lines.append(
            f"| {name} | {shape} | {_spread(column['accuracy'])} | {best}: {_spread(column[f'{best} accuracy'])} "
            f"| {_spread(column['certified'], percent=True)} | {_spread(column['error among certified'], percent=True)} "
            f"| {outside} | {_seconds(column['seconds'])} / {_seconds(column[f'{best} seconds'])} |")
    return "\n".join(lines)


def _provenance(seeds: int) -> str:
    threads = ", ".join(f"{v}={os.environ.get(v, 'unset')}" for v in
                        ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"
    return (f"nwbound {nwbound.__version__}, scikit-learn {sklearn.__version__}, Python {platform.python_version()}; "
            f"{os.cpu_count()} cores, load average {load}; {threads}; {time.strftime('%Y-%m-%d', time.gmtime())}. "
            f"{seeds} stratified split(s) (test share {TEST_SIZE:g}, random_state 0–{seeds - 1}); "
            "mean (min–max) over them; δ = 0.05.")


def replace_between_markers(text: str, table: str) -> str:
    """``text`` with the lines between the two :data:`MARKERS` replaced by ``table``.

    Examples
    --------
    >>> replace_between_markers("a\\n<!-- headline:start -->\\nold\\n<!-- headline:end -->\\nb", "new")
    'a\\n<!-- headline:start -->\\nnew\\n<!-- headline:end -->\\nb'
    """
    start, end = (re.escape(m) for m in MARKERS)
    pattern = re.compile(f"({start}\n).*?({end})", flags=re.S)
    if not pattern.search(text):
        raise ValueError(f"no {MARKERS[0]} ... {MARKERS[1]} block to replace: add the two markers first.")
    return pattern.sub(lambda m: m.group(1) + table.rstrip("\n") + "\n" + m.group(2), text, count=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="splits per data set (default 5)")
    parser.add_argument("--datasets", nargs="+", choices=list(DATASETS), default=list(DATASETS),
                        metavar="NAME", help=f"data sets (default: all of {', '.join(DATASETS)})")
    parser.add_argument("--readme", type=Path, help="also write the table between the headline markers of this file")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1.")
    warnings.simplefilter("ignore")  # the bounds' advice is for users; the table reports the figures
    _warm_up()
    start = time.perf_counter()
    table = _headline_table(args.datasets, args.seeds)
    print(f"<!-- {shlex.join(['python', 'benchmarks/headline.py', *(sys.argv[1:] if argv is None else argv)])} -->")
    print(f"{_provenance(args.seeds)} Run time {time.perf_counter() - start:.0f} s.\n")
    print(table)
    if args.readme is not None:
        args.readme.write_text(replace_between_markers(args.readme.read_text(encoding="utf-8"), table), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
