"""The inter-patient split's learned-space rows (``--inter-learned``): one pre-registered attempt.

Private to :mod:`nwbound.experiments`; :func:`nwbound.experiments._ecg_inter._run_inter` calls
:func:`run_learned` when ``--inter-learned`` is given (off by default: minutes, not seconds).

The model is :class:`nwbound.NadarayaWatsonClassifier` with its defaults (``metric="auto"``,
``lipschitz="auto"``, ``bandwidth="auto"``, ``cross_fit="auto"``) on the rhythm + morphology
features of a stratified DS1 subsample, fitted with ``groups=`` the records: every split inside
the fit (the map's share against the kernel sums' share, the map rows against the held-out L
check's rows, the cross-fitting folds, the score model's own comparison folds) keeps a record on
one side. The decision rule is the class-weighted one of the adaptive split
(:func:`nwbound.experiments.ecg_adaptive.weighted_decision`), its S and V weights chosen on DS1
alone (:func:`nwbound.experiments.ecg_adaptive.choose_class_weights` on out-of-fold beats of
:data:`LEARNED_FOLDS` record-grouped folds of the subsample) for de Chazal's +P.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._ecg_common import CLASS_NAMES, DELTA, _quiet_bounds, expand_interval, is_symmetric_form

#: DS1 beats (stratified subsample, seeded) the learned space is fitted on (``--learned-train``).
LEARNED_TRAIN = 12_000
#: Record-grouped folds of that subsample whose out-of-fold beats choose the class weights.
LEARNED_FOLDS = 3
#: The rule family: ``argmax_c w_c p̂_c`` on uncertified beats, w = (1, w_S, w_V, 1, 1).
LEARNED_GRID_S = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
LEARNED_GRID_V = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 16.0)
LEARNED_FEATURES = "both"


@dataclass
class LearnedRun:
    """What the learned-space attempt produced: the DS2 decisions and the DS1 choice behind them."""

    weights: tuple[float, float]
    selection: list[dict[str, Any]]
    fits: list[Any]
    n_train: int
    select_s: float
    map_report: str
    text: list[str] = field(default_factory=list)


def learned_model(bound: str, seed: int) -> Any:
    """The learned-space classifier of the attempt: the package's defaults, δ = 0.05, ``bound``.

    Examples
    --------
    >>> m = learned_model("chernoff", 0)
    >>> m.metric, m.lipschitz, m.bandwidth, m.cross_fit
    ('auto', 'auto', 'auto', 'auto')
    """
    from .. import NadarayaWatsonClassifier

    return NadarayaWatsonClassifier(delta=DELTA, bound=bound, random_state=seed)


def _interval(model: Any, X: np.ndarray, bound: str) -> Any:
    with _quiet_bounds():
        iv = model.predict_interval(X)
    return expand_interval(iv, model.classes_.astype(np.intp), symmetric=is_symmetric_form(bound))


def record_folds(y: Any, records: Any, n_folds: int = LEARNED_FOLDS, *, seed: int = 0) -> list[np.ndarray]:
    """``n_folds`` folds of the rows, each record whole in one fold (stratified by class where it can).

    Parameters
    ----------
    y : array-like of shape (n,)
    records : array-like of shape (n,)
        The record (patient) of each row.
    n_folds : int, default=3
    seed : int, default=0

    Returns
    -------
    list of ndarray of int

    Raises
    ------
    ValueError
        Fewer records than folds (from :func:`nwbound.spaces.fold_rows`), or a record found in two
        folds.

    Examples
    --------
    >>> import numpy as np
    >>> rec = np.repeat(["a", "b", "c", "d"], 3); y = np.tile([0, 0, 1], 4)
    >>> [sorted(set(rec[f].tolist())) for f in record_folds(y, rec, 2)]  # doctest: +SKIP
    [['a', 'd'], ['b', 'c']]
    >>> sum(len(f) for f in record_folds(y, rec, 2))
    12
    """
    from ..spaces import fold_rows

    records = np.asarray(records)
    folds = fold_rows(np.asarray(y), n_folds, groups=records, random_state=seed)
    seen = [set(records[f].tolist()) for f in folds]
    for i in range(len(seen)):
        for j in range(i + 1, len(seen)):
            if seen[i] & seen[j]:
                raise ValueError(f"records {sorted(seen[i] & seen[j])} are in two folds")
    return folds


def out_of_fold(X: np.ndarray, y: np.ndarray, records: np.ndarray, *, bound: str, seed: int,
                n_folds: int = LEARNED_FOLDS) -> dict[str, np.ndarray]:
    """p̂ and bounds of every row from a learned-space model fitted on the other records' folds (the
    cross-fitted p̂ lies in its box: :func:`nwbound.spaces.intersect_intervals`).

    Each fold's model is :func:`learned_model` fitted on the rows of the other folds with
    ``groups=`` their records; it never sees a row of the records it is queried on.

    Returns
    -------
    dict
        ``y``, ``proba``, ``lower``, ``upper`` (5 columns) and ``record``, in the rows' order.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> rec = np.repeat(np.arange(12), 40); X = rng.normal(size=(480, 2)); y = (X[:, 0] > 0).astype(int)
    >>> out = out_of_fold(X, y, rec, bound="hoeffding", seed=0)  # doctest: +SKIP
    >>> out["proba"].shape  # doctest: +SKIP
    (480, 5)
    """
    proba = np.zeros((X.shape[0], len(CLASS_NAMES)))
    lower, upper = np.zeros_like(proba), np.ones_like(proba)
    for held in record_folds(y, records, n_folds, seed=seed):
        fit_rows = np.setdiff1d(np.arange(X.shape[0]), held, assume_unique=True)
        if np.intersect1d(records[fit_rows], records[held]).size:  # cannot happen: record_folds checks
            raise RuntimeError("a record is on both sides of a DS1 fold")
        model = learned_model(bound, seed).fit(X[fit_rows], y[fit_rows], groups=records[fit_rows])
        iv = _interval(model, X[held], bound)
        proba[held], lower[held], upper[held] = iv.proba, iv.lower, iv.upper
    return {"y": y, "proba": proba, "lower": lower, "upper": upper, "record": records}


def run_learned(train: Any, test: Any, args: argparse.Namespace, rhythm_weight: float) -> LearnedRun:
    """The attempt: weights chosen on DS1 (out-of-fold), then one fit on DS1 and one pass over DS2.

    Returns a :class:`LearnedRun` whose ``fits`` are :class:`~nwbound.experiments._ecg_inter.InterFit`
    rows (rules ``weighted``, the pre-registered one, and ``argmax`` and ``balanced`` from the same fit).
    """
    from ..datasets import stratified_subsample
    from ..datasets.mitbih import ecg_features
    from ..metrics import ec57_report
    from ._ecg_inter import InterFit, _decide
    from .ecg_adaptive import choose_class_weights, weighted_decision
    from ._ecg_inter import ANCHORS

    seed = int(args.seed)
    cap = int(getattr(args, "learned_train", None) or LEARNED_TRAIN)
    sub = train.subset(stratified_subsample(train.y, cap, seed)) if cap < len(train) else train
    X, X_test, _ = ecg_features(sub, test, LEARNED_FEATURES, rhythm_weight=rhythm_weight)
    records = np.asarray(sub.record)
    train_prior = np.bincount(sub.y, minlength=len(CLASS_NAMES)) / len(sub)
    start = time.perf_counter()
    oof = out_of_fold(X, sub.y, records, bound=args.bound, seed=seed)
    dc = ANCHORS[0]
    weights, selection = choose_class_weights(
        oof["y"], oof["proba"], oof["lower"], oof["upper"], grid_s=LEARNED_GRID_S, grid_v=LEARNED_GRID_V,
        criterion="se_at_ppv_lcb", target_ppv=(dc["S +P %"], dc["V +P %"]), records=oof["record"])
    select_s = time.perf_counter() - start
    start = time.perf_counter()
    model = learned_model(args.bound, seed).fit(X, sub.y, groups=records)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    iv = _interval(model, X_test, args.bound)
    query_s = time.perf_counter() - start
    L = float(model.lipschitz_)
    vac = float(iv.vacuous.mean())
    fits = []
    p = iv.proba  # in its box (the library projects the cross-fitted mean there), as the rules need
    w = weighted_decision(p, iv.lower, iv.upper, [1.0, weights[0], weights[1], 1.0, 1.0])
    arg = weighted_decision(p, iv.lower, iv.upper, np.ones(len(CLASS_NAMES)))
    bal = _decide(p, iv.lower, iv.upper, train_prior, "balanced")
    for rule, y_pred, cert, err in (
            (f"weighted (w_S {weights[0]:g}, w_V {weights[1]:g}; DS1)", w.y_pred, w.certified, w.error_upper),
            ("argmax", arg.y_pred, arg.certified, arg.error_upper),
            ("balanced", bal.y_pred, bal.certified, bal.error_upper)):
        fits.append(InterFit(LEARNED_FEATURES, "learned space", rule, len(sub), fit_s, query_s, y_pred, cert, err,
                             ec57_report(test.y, y_pred, records=test.record), L, vac))
    reports = model.metric_report_ if isinstance(model.metric_report_, tuple) else (model.metric_report_,)
    chosen = sorted({str(getattr(r, "chosen", None)) for r in reports})
    grouped = sorted({bool(getattr(r, "grouped", False)) for r in reports})
    map_report = (f"{len(reports)} model(s); score model(s) {', '.join(chosen)}; "
                  f"comparison folds by record: {'/'.join(map(str, grouped))}")
    run = LearnedRun(weights, selection, fits, len(sub), select_s, map_report)
    run.text = learned_text(run)
    return run


def add_learned(res: Any, beats: Any, args: argparse.Namespace) -> Any:
    """Append the attempt's rows to an inter-patient result (``--inter-learned``); returns ``res``.

    The learned space draws its own stratified subsample of all of DS1 (``--learned-train``),
    whatever ``--inter-train`` gave the other rows.
    """
    from ..datasets.mitbih import split_beats

    train, test = split_beats(beats, split="inter")
    if not np.array_equal(test.y, res.y_test) or not np.array_equal(test.record, res.records):
        raise RuntimeError("the learned-space rows must score the DS2 beats of the result they join")
    run = run_learned(train, test, args, rhythm_weight=float(res.params["both"]["rhythm_weight"]))
    res.fits += run.fits
    res.learned = run
    return res


def learned_text(run: LearnedRun) -> list[str]:
    """The summary lines of the attempt: what was fitted, the DS1 choice, the times."""
    ws, wv = run.weights
    chosen = next((r for r in run.selection if (r["w_S"], r["w_V"]) == (ws, 1.0)), None)
    chosen_v = next((r for r in run.selection if (r["w_S"], r["w_V"]) == (1.0, wv)), None)
    fit = run.fits[0]

    def fmt(r: dict[str, Any] | None, name: str) -> str:
        if r is None:
            return "–"
        return (f"Se {r[f'{name}_Se_%']:.1f} %, +P {r[f'{name}_+P_%']:.1f} % (lower end "
                f"{r.get(f'{name}_+P_lcb_%', float('nan')):.1f} %), chosen by {r.get(f'{name}_chosen_by', '?')}")

    return [
        "### Learned space (`--inter-learned`, one pre-registered attempt)\n",
        f"NadarayaWatsonClassifier with its defaults (metric, L, bandwidth and cross-fitting 'auto') on the "
        f"{LEARNED_FEATURES} features of {run.n_train} DS1 beats (stratified subsample), groups = records. "
        f"Rule `weighted`: certified argmax labels kept, argmax_c w_c p̂_c elsewhere; w_S in "
        f"{'/'.join(f'{v:g}' for v in LEARNED_GRID_S)}, w_V in {'/'.join(f'{v:g}' for v in LEARNED_GRID_V)}, "
        f"each the largest DS1 Se whose +P lower 95 % end reaches de Chazal's +P, on the out-of-fold beats of "
        f"{LEARNED_FOLDS} record-grouped folds. Chosen: w_S = {ws:g} (DS1: {fmt(chosen, 'S')}), w_V = {wv:g} "
        f"(DS1: {fmt(chosen_v, 'V')}). Map: {run.map_report}. L chosen: {fit.lipschitz:.4g}. "
        f"Times: DS1 choice {run.select_s:.0f} s, fit {fit.fit_s:.0f} s, DS2 intervals {fit.query_s:.0f} s.\n",
    ]
