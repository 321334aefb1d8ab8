"""Bounds on real tabular data: scikit-learn's bundled sets, 5-fold stratified CV.

The data sets are breast-cancer, wine, iris and digits (``sklearn.datasets.load_*``,
bundled with scikit-learn: nothing is downloaded). ``--datasets`` also takes the sets the
defaults were not tuned to (:data:`UNSEEN_DATASETS`: MNIST, GTSRB and MIT-BIH read from
``--data-dir``, MIT-BIH's folds grouped by record, and synthetic stress sets). Each training fold is
standardized (scaler fitted on that fold) and every method below sees the same
folds:

* **today's recipe** (``nw_standard``, ``nw_standard_k25``): the NW classifier
  on the standardized features, ``L`` from
  :func:`~nwbound.assumptions.estimate_lipschitz` on the training fold,
  ``bandwidth="auto"``; regular and localized (k = 25);
* **the learned spaces**: ``nw_auto`` (the defaults ``metric="auto"``, cross-fitted:
  the class probabilities of the score model chosen on the map rows, gradient boosting or
  logistic regression, next to the standardized features scaled down), ``nw_auto_single``
  (the same with one split, ``cross_fit=False``) and ``nw_hgb_scores``
  (``metric=HistGradientBoostingClassifier()``: the model's decision scores as
  the space), all with ``bandwidth="auto"``. The classifier splits the
  training fold (stratified, ``--metric-fraction``) into a metric share M,
  which fits the map, and an NW share N, the only rows in the kernel sums, so
  that given M the labels in the bound are independent of the space (user
  guide, "Bounds on top of any model"). ``L`` is :data:`LEARNED_L`;
* **baselines** fitted on the whole training fold: HistGradientBoosting, 15-NN
  and logistic regression (accuracy only);
* **marginal peers** on the score space's split: MAPIE split-conformal sets
  (:class:`~nwbound.baselines.SplitConformalSets`, α = δ) for logistic
  regression fitted on M and for the very gradient-boosting model whose scores
  are the space (``metric_.map_``), calibrated on N, and
  :class:`~nwbound.baselines.CalibratedAcceptance` on ``1 − max p̂`` of the same
  models (error among accepted ≤ α with probability ≥ 1 − δ).

Every row counts, on the test fold: accuracy and errors; for the NW rows the
certified predictions (:attr:`~nwbound.PredictionInterval.certified`), the
errors among them, their mean error ceiling
(:attr:`~nwbound.PredictionInterval.error_upper`) and its sum; for the peers the
singleton sets or accepted predictions and the errors among them. Under the
bound's assumption the expected number of errors among the certified is at most
the sum of their ceilings (plus the δ event), which the summary compares.

Outputs: ``folds/<dataset>_fold<k>.csv`` (one per fold, with ``.md``),
``tabular_summary.csv`` (pooled over folds), the risk–coverage figure
``tabular_risk_coverage.png`` and ``summary.md`` (written last). Each fold is a
step of a :class:`~nwbound.utils.StepLog`, skipped on ``--resume``.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..utils import StepLog, add_resume_argument, format_markdown, positive_float, positive_int, progress, write_table
from ._common import load_or_command_error, new_figure, quiet_bound_warnings, save_figures
from ._tabular_unseen import REAL_UNSEEN, UNSEEN_DATASETS, load_unseen

__all__ = [
    "DATASETS",
    "UNSEEN_DATASETS",
    "DESCRIPTION",
    "COLUMNS",
    "TabularConfig",
    "add_arguments",
    "config_from_args",
    "load_any",
    "load_dataset",
    "run",
    "run_fold",
    "summary_rows",
]

DESCRIPTION = ("bundled scikit-learn tables (breast-cancer, wine, iris, digits; --datasets also takes sets the "
               "defaults were not tuned to), 5-fold CV: certified share and errors vs ceilings, next to HGB, "
               "15-NN, logistic regression and split conformal")

DATASETS: tuple[str, ...] = ("breast_cancer", "wine", "iris", "digits")
"""Names of the bundled data sets (``sklearn.datasets.load_<name>``)."""

COLUMNS: tuple[str, ...] = (
    "dataset", "fold", "method", "setting", "selection", "n_train", "n_fit", "n_test", "accuracy", "n_errors",
    "lipschitz", "lipschitz_pilot", "lipschitz_all_rejected", "n_selected", "selected_share", "selected_errors",
    "selected_error_rate", "mean_error_ceiling",
    "sum_error_ceiling", "errors_caught_10", "fit_s", "query_s", "space", "note",
)
"""Columns of the per-fold tables. ``selection`` says what ``n_selected`` counts:
``certified`` (NW rows), ``singleton`` (conformal sets), ``accepted``
(calibrated acceptance), empty for the plain baselines. ``note`` holds the
error of a method that could not be fitted on the fold (its numbers are NaN). ``space``
names the score model ``metric="auto"`` chose on the map rows (``metric_report_``; one per
model when cross-fitted, joined by ``/``)."""

NW_METHODS: dict[str, str] = {
    "nw_standard": "today: standardized, estimated L, auto λ",
    "nw_standard_k25": "today, localized k = 25",
    "nw_auto": "the defaults metric=\"auto\", lipschitz=\"auto\", auto λ (cross-fitted: cross_fit=\"auto\")",
    "nw_auto_single": "metric=\"auto\", lipschitz=\"auto\", auto λ, one split (cross_fit=False)",
    "nw_hgb_scores": "metric=HistGradientBoostingClassifier() (its scores as the space), lipschitz=\"auto\", auto λ",
}
PEER_METHODS: dict[str, str] = {
    "hgb": "HistGradientBoosting (full fold)",
    "knn15": "15-NN (full fold)",
    "logistic": "logistic regression (full fold)",
    "conformal_lr": "split conformal (α = δ), LR on the map rows, calibrated on N",
    "conformal_hgb": "split conformal (α = δ), the score space's HGB model, calibrated on N",
    "acceptance_lr": "CalibratedAcceptance (α = δ) on 1 − max p̂, LR on the map rows, calibrated on N",
    "acceptance_hgb": "CalibratedAcceptance (α = δ) on 1 − max p̂, the score space's HGB, calibrated on N",
}
BASELINES = ("hgb", "knn15", "logistic")
LEARNED_METHODS = ("nw_auto", "nw_auto_single", "nw_hgb_scores")
LEARNED_L = ("`lipschitz=\"auto\"`: the smallest L on the grid pilot × 2^k (k = −1 … 2; the pilot "
             "`estimate_lipschitz` on the map's rows, in the mapped space) that the held-out check rows of the "
             "metric share do not reject (`nwbound.assumptions.select_lipschitz`); no row in the kernel sums "
             "chooses it. `lipschitz_pilot` is the pilot, `lipschitz_all_rejected` says when the check rejected "
             "every grid value")
N_FOLDS = 5
QUICK_FOLDS = 1
QUICK_HGB_ITER = 10
LOCAL_K = 25
KNN_K = 15


@dataclass(frozen=True)
class TabularConfig:
    """Settings of one run of the tabular experiment.

    Attributes
    ----------
    datasets : tuple of str
        Names from :data:`DATASETS`.
    folds : tuple of int
        Which folds of the ``n_folds``-fold split run (all of them, or the
        first :data:`QUICK_FOLDS` with ``--quick``).
    n_folds : int
        Folds of the stratified split (shuffled with ``seed``).
    delta : float
        δ of the bounds; also α of the conformal sets and of the calibrated acceptance.
    metric_fraction : float
        Share of the training fold that fits the space (the rest enters the kernel sums).
    hgb_max_iter : int
        Boosting iterations of every HistGradientBoosting model (100; 10 with ``--quick``).
    seed : int
    quiet : bool
    nw_methods : tuple of str
        Which rows of :data:`NW_METHODS` run (all by default). The marginal peers run on the
        split of ``nw_auto_single`` or ``nw_hgb_scores``, so only when one of them does.
    data_dir, cache_dir : str or None
        For the real sets of :data:`UNSEEN_DATASETS`: the folder holding ``mnist/``,
        ``gtsrb/`` and ``mitdb/``, and where the MIT-BIH beats are cached.

    Examples
    --------
    >>> TabularConfig(datasets=("iris",), folds=(0,)).n_folds
    5
    """

    datasets: tuple[str, ...] = DATASETS
    folds: tuple[int, ...] = tuple(range(N_FOLDS))
    n_folds: int = N_FOLDS
    delta: float = 0.05
    metric_fraction: float = 0.4
    hgb_max_iter: int = 100
    seed: int = 0
    quiet: bool = False
    nw_methods: tuple[str, ...] = tuple(NW_METHODS)
    data_dir: str | None = None
    cache_dir: str | None = None


def load_dataset(name: str) -> tuple[np.ndarray, np.ndarray]:
    """One bundled scikit-learn data set as float64 features and integer labels.

    Parameters
    ----------
    name : str
        One of :data:`DATASETS`.

    Returns
    -------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)

    Raises
    ------
    ValueError
        For an unknown name.

    Examples
    --------
    >>> X, y = load_dataset("iris")
    >>> X.shape, sorted(set(y.tolist()))
    ((150, 4), [0, 1, 2])
    """
    from sklearn import datasets

    if name not in DATASETS:
        raise ValueError(f"Unknown data set {name!r}; choose from {', '.join(DATASETS)}.")
    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    return np.asarray(X, dtype=np.float64), np.asarray(y)


# ---------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------


def _dataset_list(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(p.strip().replace("-", "_") for p in str(text).split(",") if p.strip()))
    if names == ("unseen",):
        return tuple(UNSEEN_DATASETS)
    unknown = [n for n in names if n not in DATASETS and n not in UNSEEN_DATASETS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"unknown data set(s) {', '.join(unknown) or repr(text)}; choose from {', '.join(DATASETS)} (bundled), "
            f"{', '.join(UNSEEN_DATASETS)} (not tuned to), or 'unseen' for all of the latter")
    return names


def _method_list(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(p.strip() for p in str(text).split(",") if p.strip()))
    unknown = [n for n in names if n not in NW_METHODS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"unknown method(s) {', '.join(unknown) or repr(text)}; choose from {', '.join(NW_METHODS)}")
    return names


def _folds(text: str) -> int:
    value = positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"needs at least 2 folds, got {text}")
    return value


def load_any(name: str, config: TabularConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A bundled set (:func:`load_dataset`) or one the defaults were not tuned to, with its groups.

    Examples
    --------
    >>> X, y, groups = load_any("iris", TabularConfig())
    >>> X.shape, groups is None
    ((150, 4), True)
    """
    if name in DATASETS:
        return (*load_dataset(name), None)
    if name in REAL_UNSEEN:
        return load_or_command_error(
            f"{name} data", load_unseen, name, data_dir=None if config.data_dir is None else Path(config.data_dir),
            cache_dir=None if config.cache_dir is None else Path(config.cache_dir), seed=config.seed)
    return load_unseen(name, seed=config.seed)


def _fraction(text: str) -> float:
    value = positive_float(text)
    if not value < 1.0:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1), got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``nwbound experiment tabular``."""
    parser.add_argument("--datasets", type=_dataset_list, default=DATASETS,
                        help=f"comma-separated subset of the bundled {','.join(DATASETS)} (default: all four) "
                             f"and of the sets the defaults were not tuned to, {','.join(UNSEEN_DATASETS)} "
                             "('unseen': all of these; mnist, gtsrb and mitbih need --data-dir)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="folder holding mnist/, gtsrb/ and mitdb/ (for --datasets mnist, gtsrb, mitbih)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="cache the MIT-BIH beats here (an .npz keyed by settings and file hashes)")
    parser.add_argument("--folds", dest="n_folds", type=_folds, default=N_FOLDS,
                        help=f"folds of the stratified (grouped, for mitbih) cross-validation (default {N_FOLDS})")
    parser.add_argument("--nw-methods", type=_method_list, default=tuple(NW_METHODS),
                        help=f"comma-separated subset of {','.join(NW_METHODS)} (default: all; the conformal "
                             "peers run when nw_auto_single or nw_hgb_scores does)")
    parser.add_argument("--delta", type=_fraction, default=0.05,
                        help="δ of the bounds, also α of the conformal sets and the calibrated acceptance "
                             "(default 0.05)")
    parser.add_argument("--metric-fraction", type=_fraction, default=0.4,
                        help="share of each training fold that fits the space (default 0.4)")
    add_resume_argument(parser)


def config_from_args(args: argparse.Namespace) -> TabularConfig:
    """The :class:`TabularConfig` of parsed options (``--quick``: the first fold, 10 boosting iterations)."""
    quick = bool(getattr(args, "quick", False))
    n_folds = int(getattr(args, "n_folds", N_FOLDS))
    data_dir, cache_dir = getattr(args, "data_dir", None), getattr(args, "cache_dir", None)
    return TabularConfig(
        datasets=tuple(getattr(args, "datasets", DATASETS)),
        folds=tuple(range(QUICK_FOLDS if quick else n_folds)),
        n_folds=n_folds,
        nw_methods=tuple(getattr(args, "nw_methods", tuple(NW_METHODS))),
        data_dir=None if data_dir is None else str(Path(data_dir).resolve()),
        cache_dir=None if cache_dir is None else str(Path(cache_dir).resolve()),
        delta=float(getattr(args, "delta", 0.05)),
        metric_fraction=float(getattr(args, "metric_fraction", 0.4)),
        hgb_max_iter=QUICK_HGB_ITER if quick else 100,
        seed=int(getattr(args, "seed", 0)),
        quiet=bool(getattr(args, "quiet", False)),
    )


# ---------------------------------------------------------------------------
# one fold
# ---------------------------------------------------------------------------


def _empty_row(**lead: Any) -> dict[str, Any]:
    row = {c: math.nan for c in COLUMNS}
    row.update(selection="", setting="", space="", note="")
    row.update(lead)
    return row


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _nw_summary(row: dict[str, Any], iv: Any, classes: np.ndarray, y_test: np.ndarray) -> dict[str, Any]:
    """Fill the NW columns of ``row``; return the per-query arrays of the figure."""
    from ..metrics import errors_caught_at

    pred = classes[iv.predicted_index]
    wrong = pred != y_test
    cert = np.asarray(iv.certified, dtype=bool)
    ceiling = np.asarray(iv.error_upper, dtype=np.float64)
    n_cert = int(cert.sum())
    row.update(
        selection="certified",
        accuracy=float(1.0 - wrong.mean()),
        n_errors=int(wrong.sum()),
        n_selected=n_cert,
        selected_share=n_cert / y_test.shape[0],
        selected_errors=int(wrong[cert].sum()),
        selected_error_rate=float(wrong[cert].mean()) if n_cert else math.nan,
        mean_error_ceiling=float(ceiling[cert].mean()) if n_cert else math.nan,
        sum_error_ceiling=float(ceiling[cert].sum()),
        errors_caught_10=float(errors_caught_at(0.1, y_test, pred, ceiling)) if wrong.any() else math.nan,
    )
    doubt = 1.0 - iv.proba.max(axis=1)
    return {"pred": pred.tolist(), "error_upper": ceiling.tolist(), "doubt": doubt.tolist(),
            "certified": cert.tolist()}


def run_fold(name: str, X: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray, fold: int,
             config: TabularConfig, groups: np.ndarray | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every method on one fold; return the rows (:data:`COLUMNS`) and the per-query arrays of the figure.

    Parameters
    ----------
    name : str
        Data-set name (copied into the rows).
    X, y : ndarray
        The whole data set, raw features.
    train, test : ndarray of int
        Row indices of the fold.
    fold : int
    config : TabularConfig
    groups : ndarray or None, default=None
        One group (a patient) per row of ``X``: the learned spaces' own splits then keep each
        group on one side (``fit(..., groups=)``).

    Returns
    -------
    rows : list of dict
    queries : dict
        ``y_test`` and, per method, the test rows' ``pred`` (predicted labels)
        and ``doubt`` (``1 − max p̂``); ``error_upper``/``certified`` for the NW
        rows; ``singleton``/``set_wrong``/``accepted`` for the conformal peers.
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import StandardScaler

    from ..assumptions import estimate_lipschitz
    from ..baselines import CalibratedAcceptance, SplitConformalSets, make_logistic_regression
    from ..estimators import NadarayaWatsonClassifier

    seed = config.seed
    delta = config.delta
    scaler = StandardScaler().fit(X[train])
    X_tr, X_te = scaler.transform(X[train]), scaler.transform(X[test])
    y_tr, y_te = y[train], y[test]
    classes = np.unique(y_tr)
    lead = {"dataset": name, "fold": fold, "n_train": int(train.shape[0]), "n_test": int(test.shape[0])}
    rows: list[dict[str, Any]] = []
    queries: dict[str, Any] = {"y_test": y_te.tolist()}

    def hgb() -> Any:
        return HistGradientBoostingClassifier(max_iter=config.hgb_max_iter, random_state=seed)

    # --- baselines on the whole training fold -------------------------------------------------
    for method, model in (("hgb", hgb()), ("knn15", KNeighborsClassifier(n_neighbors=KNN_K)),
                          ("logistic", make_logistic_regression(random_state=seed))):
        _, fit_s = _timed(lambda: model.fit(X_tr, y_tr))
        proba, query_s = _timed(lambda: np.asarray(model.predict_proba(X_te)))
        pred = model.classes_[np.argmax(proba, axis=1)]
        wrong = pred != y_te
        rows.append(_empty_row(**lead, method=method, setting="baseline", n_fit=int(train.shape[0]),
                               accuracy=float(1.0 - wrong.mean()), n_errors=int(wrong.sum()),
                               fit_s=fit_s, query_s=query_s))
        queries[method] = {"pred": pred.tolist(), "doubt": (1.0 - proba.max(axis=1)).tolist()}

    # --- today's recipe: standardized features, estimated L -----------------------------------
    lip, lip_s = _timed(lambda: estimate_lipschitz(X_tr, y_tr, random_state=seed).value)
    for method, k in (("nw_standard", None), ("nw_standard_k25", LOCAL_K)):
        if method not in config.nw_methods:
            continue
        model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", n_neighbors=k, lipschitz=lip, delta=delta)
        _, fit_s = _timed(lambda: model.fit(X_tr, y_tr))
        with quiet_bound_warnings():
            iv, query_s = _timed(lambda: model.predict_interval(X_te))
        row = _empty_row(**lead, method=method, setting="today", n_fit=int(train.shape[0]), lipschitz=lip,
                         fit_s=fit_s + lip_s, query_s=query_s)
        queries[method] = _nw_summary(row, iv, classes, y_te)
        rows.append(row)

    # --- the learned spaces: metric="auto" and the HGB-score space ----------------------------
    # The classifier splits the fold: the metric share M (map rows + check rows) and the NW share
    # N, the only rows in the kernel sums; lipschitz="auto" takes the smallest L of a grid around
    # the pilot estimate on the map rows that the check rows do not reject.
    split_seed = seed * 1000 + fold
    fitted: dict[str, Any] = {}
    for method, metric, cross_fit in (("nw_auto", "auto", "auto"), ("nw_auto_single", "auto", False),
                                      ("nw_hgb_scores", hgb(), False)):
        if method not in config.nw_methods:
            continue
        model = NadarayaWatsonClassifier(metric=metric, lipschitz="auto", bandwidth="auto", delta=delta,
                                         metric_fraction=config.metric_fraction, random_state=split_seed,
                                         cross_fit=cross_fit)
        try:
            with warnings.catch_warnings():  # "every L rejected" is recorded in the row
                warnings.simplefilter("ignore", UserWarning)
                _, fit_s = _timed(lambda: model.fit(X_tr, y_tr, groups=None if groups is None else groups[train]))
                iv, query_s = _timed(lambda: model.predict_interval(X_te))
        except ValueError as exc:  # e.g. a map with constant output on a small metric share
            rows.append(_empty_row(**lead, method=method, setting="learned space", selection="certified",
                                   note=f"not fitted: {exc}"))
            continue
        # Cross-fitted: one report per model; L is the largest choice, with that model's pilot.
        reports = model.lipschitz_report_ if isinstance(model.lipschitz_report_, tuple) else (model.lipschitz_report_,)
        report = max(reports, key=lambda r: r.value)
        spaces = model.metric_report_ if isinstance(model.metric_report_, tuple) else (model.metric_report_,)
        row = _empty_row(**lead, method=method, setting="learned space", n_fit=int(model.n_samples_fit_),
                         lipschitz=float(model.lipschitz_), lipschitz_pilot=float(report.pilot),
                         lipschitz_all_rejected=any(r.all_rejected for r in reports), fit_s=fit_s, query_s=query_s,
                         space=" / ".join(str(r.chosen) for r in spaces if r is not None))
        queries[method] = _nw_summary(row, iv, classes, y_te)
        rows.append(row)
        fitted[method] = model

    # --- marginal peers on the learned spaces' split (the same for both: same seed and labels):
    # LR and HGB on the rows that fit the map (HGB: the score space's own model), calibrated on N.
    split = next((m for k, m in fitted.items() if k != "nw_auto"), None)  # a single split (not cross-fitted)
    order = {m: i for i, m in enumerate([*NW_METHODS, *PEER_METHODS])}
    if split is None:
        if any(m in config.nw_methods for m in ("nw_auto_single", "nw_hgb_scores")):
            raise ValueError(f"{name}, fold {fold}: neither learned space could be fitted ({rows[-1]['note']}).")
        rows.sort(key=lambda r: order.get(r["method"], len(order)))
        return rows, queries  # no single split asked for: no marginal peers
    m_idx = np.setdiff1d(split.metric_rows_, split.check_rows_)
    n_idx = split.nw_rows_
    lr_m = make_logistic_regression(random_state=seed).fit(X_tr[m_idx], y_tr[m_idx])
    score_space = fitted.get("nw_hgb_scores")  # its map: this very HGB model, fitted on m_idx
    hgb_m = score_space.metric_.map_ if score_space is not None else hgb().fit(X_tr[m_idx], y_tr[m_idx])
    models_m = {"lr": lr_m, "hgb": hgb_m}

    for tag, model in models_m.items():
        sets_model = SplitConformalSets(model, alpha=delta).fit(X_tr[n_idx], y_tr[n_idx])
        sets = sets_model.predict_set(X_te)
        proba = np.asarray(model.predict_proba(X_te))
        pred = model.classes_[np.argmax(proba, axis=1)]
        wrong = pred != y_te
        single = sets.sum(axis=1) == 1
        # A singleton set names one class: it errs when that class is not the label.
        set_wrong = ~sets[np.arange(y_te.shape[0]), np.searchsorted(sets_model.classes_, y_te)]
        n_single = int(single.sum())
        rows.append(_empty_row(
            **lead, method=f"conformal_{tag}", setting="marginal peer", selection="singleton",
            n_fit=int(m_idx.shape[0]), accuracy=float(1.0 - wrong.mean()), n_errors=int(wrong.sum()),
            n_selected=n_single, selected_share=n_single / y_te.shape[0],
            selected_errors=int((single & set_wrong).sum()),
            selected_error_rate=float(set_wrong[single].mean()) if n_single else math.nan))
        doubt_n = 1.0 - np.asarray(model.predict_proba(X_tr[n_idx])).max(axis=1)
        pred_n = model.predict(X_tr[n_idx])
        doubt = 1.0 - proba.max(axis=1)
        try:
            rule = CalibratedAcceptance(alpha=delta, delta=delta).fit(doubt_n, y_tr[n_idx], pred_n)
            accepted = rule.accept(doubt)
        except ValueError:  # too few calibration rows for the binomial test: it accepts nothing
            accepted = np.zeros(y_te.shape[0], dtype=bool)
        n_acc = int(accepted.sum())
        rows.append(_empty_row(
            **lead, method=f"acceptance_{tag}", setting="marginal peer", selection="accepted",
            n_fit=int(m_idx.shape[0]), accuracy=float(1.0 - wrong.mean()), n_errors=int(wrong.sum()),
            n_selected=n_acc, selected_share=n_acc / y_te.shape[0], selected_errors=int(wrong[accepted].sum()),
            selected_error_rate=float(wrong[accepted].mean()) if n_acc else math.nan))
        queries[f"conformal_{tag}"] = {"pred": pred.tolist(), "doubt": doubt.tolist(),
                                       "singleton": single.tolist(), "set_wrong": set_wrong.tolist(),
                                       "accepted": accepted.tolist()}
    rows.sort(key=lambda r: order.get(r["method"], len(order)))
    return rows, queries


# ---------------------------------------------------------------------------
# summary
# ---------------------------------------------------------------------------


def summary_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pool the per-fold rows per data set and method (counts summed; shares over all test rows).

    Adds ``n_folds``, ``errors_le_ceilings`` (the errors among the selected are
    at most the summed error ceilings; NW rows only) and ``accuracy_gap`` (the
    row's accuracy minus the best of HGB, 15-NN and logistic regression).

    Examples
    --------
    >>> rows = [dict(dataset="d", fold=f, method=m, setting="", selection="", n_test=10, n_fit=5,
    ...              accuracy=a, n_errors=e, lipschitz=float("nan"), n_selected=float("nan"),
    ...              selected_errors=float("nan"), sum_error_ceiling=float("nan"),
    ...              errors_caught_10=float("nan"), fit_s=0.0, query_s=0.0)
    ...         for f in (0, 1) for m, a, e in (("hgb", 0.9, 1), ("knn15", 0.8, 2))]
    >>> [(r["method"], r["accuracy"], r["accuracy_gap"]) for r in summary_rows(rows)]
    [('hgb', 0.9, 0.0), ('knn15', 0.8, -0.1)]
    """
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((str(row["dataset"]), str(row["method"])), []).append(row)
    out: list[dict[str, Any]] = []
    for (dataset, method), every in groups.items():
        sel = [r for r in every if not r.get("note")] or every
        failed = [r for r in every if r.get("note")]
        if len(failed) == len(every):
            keys = ("n_test", "accuracy", "n_errors", "lipschitz", "lipschitz_pilot", "folds_all_rejected",
                    "n_selected", "selected_share", "selected_errors", "selected_error_rate", "mean_error_ceiling",
                    "sum_error_ceiling", "errors_caught_10", "fit_s", "query_s")
            out.append({"dataset": dataset, "method": method, "setting": every[0]["setting"],
                        "selection": every[0]["selection"], "n_folds": 0, **dict.fromkeys(keys, math.nan),
                        "errors_le_ceilings": "", "n_folds_failed": len(failed), "note": str(failed[0]["note"])})
            continue
        n_test = sum(int(r["n_test"]) for r in sel)
        n_err = sum(int(r["n_errors"]) for r in sel)

        def total(key: str) -> float:
            vals = [float(r[key]) for r in sel]
            return math.nan if any(math.isnan(v) for v in vals) else float(sum(vals))

        def mean(key: str) -> float:
            vals = [float(r.get(key, math.nan)) for r in sel]
            vals = [v for v in vals if not math.isnan(v)]
            return float(np.mean(vals)) if vals else math.nan

        n_sel, sel_err, ceil = total("n_selected"), total("selected_errors"), total("sum_error_ceiling")
        out.append({
            "dataset": dataset, "method": method, "setting": sel[0]["setting"], "selection": sel[0]["selection"],
            "n_folds": len(sel), "n_test": n_test, "accuracy": round(1.0 - n_err / n_test, 6), "n_errors": n_err,
            "lipschitz": mean("lipschitz"), "lipschitz_pilot": mean("lipschitz_pilot"),
            "folds_all_rejected": sum(r.get("lipschitz_all_rejected") is True for r in sel),
            "n_selected": n_sel,
            "selected_share": n_sel / n_test if not math.isnan(n_sel) else math.nan,
            "selected_errors": sel_err,
            "selected_error_rate": sel_err / n_sel if n_sel and not math.isnan(n_sel) else math.nan,
            "mean_error_ceiling": ceil / n_sel if n_sel and not math.isnan(ceil) else math.nan,
            "sum_error_ceiling": ceil,
            "errors_le_ceilings": (bool(sel_err <= ceil) if not math.isnan(ceil) else ""),
            "errors_caught_10": mean("errors_caught_10"),
            "fit_s": total("fit_s"), "query_s": total("query_s"),
            "n_folds_failed": len(failed), "note": str(failed[0]["note"]) if failed else "",
            "space": "; ".join(f"{name} ({n} folds)" for name, n in _counts(r.get("space", "") for r in sel)),
        })
    for row in out:
        best = [r["accuracy"] for r in out if r["dataset"] == row["dataset"] and r["method"] in BASELINES]
        row["accuracy_gap"] = round(row["accuracy"] - max(best), 6) if best else math.nan
    return out


def _counts(values: Any) -> list[tuple[str, int]]:
    """Distinct non-empty strings and how often each occurs, most frequent first."""
    found: dict[str, int] = {}
    for v in values:
        if isinstance(v, str) and v:
            found[v] = found.get(v, 0) + 1
    return sorted(found.items(), key=lambda kv: -kv[1])


def _fmt(x: Any, pct: bool = False) -> str:
    if isinstance(x, str):
        return x
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{100 * x:.1f} %" if pct else (f"{x:.3f}" if isinstance(x, float) else str(x))


def _summary_text(config: TabularConfig, summary: Sequence[dict[str, Any]], figure: str | None) -> str:
    folds = f"folds {', '.join(str(f + 1) for f in config.folds)} of {config.n_folds}"
    unseen = [d for d in config.datasets if d in UNSEEN_DATASETS]
    lines = [
        "# Bounds on real tabular data" + ("" if unseen else " (scikit-learn's bundled sets)"),
        "",
        *([f"Sets the defaults were not tuned to: {', '.join(unseen)} (`UNSEEN_DATASETS`; mitbih's folds and "
           "the classifier's own splits keep each record whole).", ""] if unseen else []),
        f"Stratified {config.n_folds}-fold CV ({folds}), features standardized on each training fold, "
        f"δ = {config.delta:g} (α = {config.delta:g} for the conformal sets and the calibrated acceptance), "
        f"metric share {config.metric_fraction:g} of each training fold, "
        f"{config.hgb_max_iter} boosting iterations, seed {config.seed}.",
        "",
        "Shares and error rates are pooled over the folds' test rows. *selected* is *certified* for the NW "
        "rows, the singleton sets for split conformal, the accepted predictions for CalibratedAcceptance. "
        "`errors ≤ ceilings`: the errors among the certified are at most the sum of their error ceilings "
        "(`error_upper`), which bounds their expected number under the assumption.",
        "",
        f"**L in the learned spaces** (`nw_auto`, `nw_auto_single`, `nw_hgb_scores`): {LEARNED_L} (cross-fitted: "
        "the largest of the models' choices, each model at δ/(number of models): 5 with cross_fit='auto'). "
        "It is an assumption, "
        "not a certified fact.",
        "",
    ]
    lines += ["Methods:", ""]
    lines += [f"- `{m}`: {text}" for m, text in {**NW_METHODS, **PEER_METHODS}.items()]
    lines += [""]
    keys = ("method", "accuracy", "accuracy_gap", "lipschitz", "lipschitz_pilot", "folds_all_rejected",
            "selected_share", "selected_error_rate", "mean_error_ceiling", "selected_errors", "sum_error_ceiling",
            "errors_le_ceilings", "errors_caught_10", "fit_s", "query_s")
    for dataset in config.datasets:
        sel = [r for r in summary if r["dataset"] == dataset]
        if not sel:
            continue
        lines += [f"## {dataset}", ""]
        if dataset in UNSEEN_DATASETS:
            lines += [f"{UNSEEN_DATASETS[dataset]}.", ""]
        table = []
        for r in sel:
            t = {k: r[k] for k in keys}
            t["method"] = f"{r['method']} ({r['selection'] or 'plain'})"
            for k in ("accuracy", "accuracy_gap", "selected_share", "selected_error_rate", "mean_error_ceiling",
                      "errors_caught_10"):
                t[k] = _fmt(r[k], pct=True)
            if r["method"] not in LEARNED_METHODS or not r["n_folds"]:
                t["folds_all_rejected"] = "–"
            for k in ("lipschitz", "lipschitz_pilot", "sum_error_ceiling", "fit_s", "query_s"):
                t[k] = _fmt(r[k])
            t["selected_errors"] = _fmt(r["selected_errors"] if math.isnan(r["selected_errors"])
                                        else int(r["selected_errors"]))
            t["errors_le_ceilings"] = {True: "yes", False: "**no**"}.get(r["errors_le_ceilings"], "–")
            table.append(t)
        lines += [format_markdown(table), ""]
        for r in sel:
            if r.get("space"):
                lines += [f"- `{r['method']}`'s score model, chosen on the map rows (`metric_report_`): {r['space']}", ""]
            if r["n_folds_failed"]:
                lines += [f"- `{r['method']}` could not be fitted on {r['n_folds_failed']} fold(s): {r['note']}", ""]
    lines += ["## Issue 21's targets, as measured", ""]
    lines += _target_lines(summary)
    if figure:
        lines += ["", f"![risk–coverage]({figure})", ""]
    return "\n".join(lines) + "\n"


def _target_lines(summary: Sequence[dict[str, Any]]) -> list[str]:
    method = "nw_auto"
    out = [f"Measured for `metric=\"auto\"` (`{method}`), L as above:", ""]
    get = {(r["dataset"], r["method"]): r for r in summary}
    bc, dg = get.get(("breast_cancer", method)), get.get(("digits", method))
    if bc:
        out.append(f"- breast-cancer ≥ 85 % certified with errors ≤ summed ceilings: "
                   f"{_fmt(bc['selected_share'], True)} certified, {int(bc['selected_errors'])} errors vs "
                   f"{_fmt(bc['sum_error_ceiling'])} → "
                   f"{'met' if bc['selected_share'] >= 0.85 and bc['errors_le_ceilings'] is True else 'not met'}")
    if dg:
        out.append(f"- digits ≥ 50 % certified: {_fmt(dg['selected_share'], True)} → "
                   f"{'met' if dg['selected_share'] >= 0.5 else 'not met'}")
    for r in summary:
        if r["method"] == method:
            out.append(f"- {r['dataset']}: accuracy {_fmt(r['accuracy'], True)}, "
                       f"{_fmt(r['accuracy_gap'], True)} from the best of HGB/15-NN/LR → "
                       f"{'within 2 points' if r['accuracy_gap'] >= -0.02 else 'more than 2 points below'}")
    return out


# ---------------------------------------------------------------------------
# figure
# ---------------------------------------------------------------------------


def _pooled(queries: Sequence[dict[str, Any]], method: str, key: str) -> np.ndarray:
    return np.concatenate([np.asarray(q[method][key]) for q in queries if method in q])


_COLORS = {"nw_auto": "C0", "nw_hgb_scores": "C1", "nw_standard": "C2", "HGB (full fold)": "C4",
           "conformal LR": "C7", "conformal HGB": "C8"}


def risk_coverage_figure(per_dataset: dict[str, list[dict[str, Any]]], out: Path,
                         formats: tuple[str, ...] = ("png",)) -> list[Path]:
    """Selective risk vs coverage per data set, pooled over the folds' test rows."""
    from ..plots import RiskCoverageDisplay

    names = [d for d, qs in per_dataset.items() if qs]
    ncols = min(2, len(names))
    nrows = -(-len(names) // ncols)
    fig, axes = new_figure(nrows, ncols, figsize=(5.2 * ncols, 4.0 * nrows))
    for ax in axes.ravel()[len(names):]:
        ax.set_axis_off()
    for ax, dataset in zip(axes.ravel(), names):
        qs = per_dataset[dataset]
        y_true = np.concatenate([np.asarray(q["y_test"]) for q in qs])
        preds, doubts, labels, points = [], [], [], []
        for method in ("nw_auto", "nw_hgb_scores", "nw_standard"):
            if not all(method in q for q in qs):
                continue
            pred = _pooled(qs, method, "pred")
            preds.append(pred)
            doubts.append(_pooled(qs, method, "error_upper"))
            labels.append(f"{method}: error_upper")
            cert = _pooled(qs, method, "certified").astype(bool)
            if cert.any():
                points.append((cert.mean(), float(np.mean(pred[cert] != y_true[cert])), f"{method}: certified", "o"))
        if all("nw_hgb_scores" in q for q in qs):
            preds.append(_pooled(qs, "nw_hgb_scores", "pred"))
            doubts.append(_pooled(qs, "nw_hgb_scores", "doubt"))
            labels.append("nw_hgb_scores: 1 − max p̂")
        preds.append(_pooled(qs, "hgb", "pred"))
        doubts.append(_pooled(qs, "hgb", "doubt"))
        labels.append("HGB (full fold): 1 − max p̂")
        for tag, marker in (("lr", "s"), ("hgb", "D")):
            if not all(f"conformal_{tag}" in q for q in qs):
                continue
            single = _pooled(qs, f"conformal_{tag}", "singleton").astype(bool)
            if single.any():
                wrong = _pooled(qs, f"conformal_{tag}", "set_wrong").astype(bool)
                points.append((single.mean(), float(wrong[single].mean()), f"conformal {tag.upper()}: singletons",
                               marker))
        disp = RiskCoverageDisplay.from_arrays(y_true, preds, doubts, label=labels, ax=ax)
        for line, label in zip(disp.lines_, labels):  # one colour per method in every panel
            line.set_color(_COLORS[label.split(":")[0]])
            line.set_linestyle("--" if "max p̂" in label else "-")
        for coverage, risk, label, marker in points:
            point = disp.add_point(coverage, risk, label=label, marker=marker)
            point.set_color(_COLORS[label.split(":")[0]])
        ax.set_title(dataset, fontsize=10)
        ax.legend(fontsize=6, loc="upper left")
    return save_figures(fig, out, "tabular_risk_coverage", formats=formats)


# ---------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------


def run(args: argparse.Namespace, output: Path) -> list[Path]:
    """Entry point of ``nwbound experiment tabular``: one resumable step per fold, then tables, figure, summary."""
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

    config = config_from_args(args)
    output = Path(output)
    params = asdict(config)
    params.pop("quiet")
    params.pop("cache_dir")
    log = StepLog(output, params=params, resume=bool(getattr(args, "resume", False)), name="tabular",
                  quiet=config.quiet)
    (output / "folds").mkdir(exist_ok=True)
    rows: list[dict[str, Any]] = []
    per_dataset: dict[str, list[dict[str, Any]]] = {}
    tasks = [(d, f) for d in config.datasets for f in config.folds]
    data = {d: load_any(d, config) for d in config.datasets}
    splits = {}
    for d, (X, y, groups) in data.items():  # with groups (patients): whole groups per fold
        folds = (StratifiedKFold(config.n_folds, shuffle=True, random_state=config.seed) if groups is None else
                 StratifiedGroupKFold(config.n_folds, shuffle=True, random_state=config.seed))
        splits[d] = list(folds.split(X, y, groups))
    for dataset, fold in progress(tasks, desc="tabular folds", quiet=config.quiet):
        X, y, groups = data[dataset]
        train, test = splits[dataset][fold]

        def step(dataset: str = dataset, fold: int = fold, X: np.ndarray = X, y: np.ndarray = y,
                 train: np.ndarray = train, test: np.ndarray = test,
                 groups: np.ndarray | None = groups) -> tuple[dict[str, Any], list[Path]]:
            fold_rows, queries = run_fold(dataset, X, y, train, test, fold, config, groups=groups)
            files = write_table(fold_rows, output / "folds" / f"{dataset}_fold{fold}",
                                title=f"{dataset}, fold {fold + 1} of {config.n_folds}")
            return {"rows": fold_rows, "queries": queries}, list(files)

        result = log.run(f"{dataset} fold {fold}", step, params={"dataset": dataset, "fold": fold})
        rows += result["rows"]
        per_dataset.setdefault(dataset, []).append(result["queries"])
    summary = summary_rows(rows)
    log.files += list(write_table(summary, output / "tabular_summary",
                                  title="Tabular experiment, pooled over folds"))
    figure = risk_coverage_figure(per_dataset, output)
    log.files += figure
    log.write_summary(_summary_text(config, summary, figure[0].name if figure else None))
    return log.files
