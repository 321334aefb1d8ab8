"""The adaptive split's decision rules and their choice on DS1 (:mod:`.ecg_adaptive`'s ``weighted`` rule).

The ``weighted`` rule (certified argmax labels kept, class weights elsewhere), how its class weights are
chosen on DS1 (:func:`choose_class_weights`) and how the decision model's k is
(:func:`choose_decision_neighbors`). Split from :mod:`.ecg_adaptive` (issue 19: no module over 1 000
lines); that module re-exports the public names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ._ecg_common import CLASS_NAMES

#: Grids of the class weights (S, V) of the ``weighted`` rule, searched on DS1 by the simulated
#: protocol (:func:`choose_class_weights`).
CLASS_WEIGHT_GRID_S = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0)
CLASS_WEIGHT_GRID_V = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
#: How :func:`choose_class_weights` chooses them: ``"se_at_ppv_lcb"`` (round 9, pre-registered), each
#: class's largest Se whose +P has a 95 % Clopper-Pearson lower end ≥ its target's +P on DS1, then the
#: same without DS1's most adverse record for that class, then the break-even on the lower ends;
#: ``"se_at_ppv"`` (round 8), the same on the point estimates, without the one-record step;
#: ``"mean_min"``, the mean over S and V of min(Se, +P) (round 7's criterion).
WEIGHT_CRITERION = "se_at_ppv_lcb"
#: The criteria :func:`choose_class_weights` knows (``--weight-criterion``).
WEIGHT_CRITERIA = ("se_at_ppv_lcb", "se_at_ppv", "mean_min")
#: Confidence of the two-sided Clopper-Pearson interval whose lower end judges +P (``"se_at_ppv_lcb"``).
WEIGHT_CONFIDENCE = 0.95
#: k of the decision model tried on DS1 (round 9, look 2): with ``--class-weights auto`` the DS1
#: simulation reads the decision model's p̂ at each (one neighbour search) and
#: :func:`choose_decision_neighbors` keeps the one whose chosen weights do best there.
NEIGHBORS_GRID = (8, 10, 12, 15)
#: The +P (%) of the adaptive targets, S and V: "S Se ≥ 80 % at +P ≥ 80 %", "V Se ≥ 95 % at +P ≥ 95 %".
TARGET_PPV = (80.0, 95.0)


# ---------------------------------------------------------------------------
# the weighted rule and its choice on DS1
# ---------------------------------------------------------------------------
@dataclass
class WeightedDecision:
    """Labels of the ``weighted`` rule: certified argmax labels kept, class weights elsewhere."""

    y_pred: np.ndarray
    certified: np.ndarray
    error_upper: np.ndarray


def weighted_decision(proba: Any, lower: Any, upper: Any, weights: Any, *,
                      review_proba: Any = None) -> WeightedDecision:
    """Argmax where its certificate holds; elsewhere the class-weighted Bayes rule.

    A beat whose argmax label is certified (it is the most probable class for
    every ``p`` in the box ``lower ≤ p ≤ upper``, :func:`nwbound.metrics.bayes_decision`)
    keeps that label, its certificate and its error ceiling ``1 − lower``. An
    uncertified beat (the review queue) gets ``argmax_c w_c p̂_c``: the decision
    that minimises the expected cost when missing class ``c`` costs ``w_c``. It
    is not certified and its error ceiling is ``1 − lower`` of its label.
    ``review_proba`` lets another estimate of ``p`` decide the review queue
    (the adaptive split: a classifier with fewer neighbours than the one
    whose boxes certify); the certificates use ``proba`` and the box only.

    Parameters
    ----------
    proba, lower, upper : array-like of shape (n, C)
        ``p̂`` and simultaneous bounds on ``p``.
    weights : array-like of shape (C,)
        Positive class weights (1 for every class: plain argmax).
    review_proba : array-like of shape (n, C) or None, default=None
        ``p̂`` of the uncertified beats' decision; None: ``proba``.

    Returns
    -------
    WeightedDecision
        ``y_pred``, ``certified`` and ``error_upper``, each of shape (n,).

    Raises
    ------
    ValueError
        Weights not positive or of the wrong length; shapes or bounds that
        :func:`nwbound.metrics.bayes_decision` rejects.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([[0.9, 0.1], [0.7, 0.3]])
    >>> d = weighted_decision(p, p - 0.05, p + 0.05, [1.0, 4.0])
    >>> d.y_pred.tolist(), d.certified.tolist()  # narrow bounds: both argmax labels certified
    ([0, 0], [True, True])
    >>> d = weighted_decision(p, p - 0.25, p + 0.25, [1.0, 4.0])
    >>> d.y_pred.tolist(), d.certified.tolist(), d.error_upper.round(2).tolist()
    ([0, 1], [True, False], [0.35, 0.95])
    >>> q = np.array([[0.2, 0.8], [0.2, 0.8]])  # another estimate decides the review queue only
    >>> weighted_decision(p, p - 0.25, p + 0.25, [1.0, 1.0], review_proba=q).y_pred.tolist()
    [0, 1]
    """
    return _weighted_decisions(proba, lower, upper, [weights], review_proba=review_proba)[0]


def _weighted_decisions(proba: Any, lower: Any, upper: Any, weights: Sequence[Any], *,
                        review_proba: Any = None) -> list[WeightedDecision]:
    """:func:`weighted_decision` for several weight vectors: the argmax certificates computed once."""
    from ..metrics import bayes_decision

    p = np.asarray(proba, dtype=np.float64)
    ws = [np.asarray(w, dtype=np.float64) for w in weights]
    for w, given in zip(ws, weights):
        if p.ndim != 2 or w.shape != (p.shape[1],) or not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError(f"weights must be {p.shape[1] if p.ndim == 2 else 'C'} positive numbers, got {given!r}")
    a = bayes_decision(p, lower=lower, upper=upper)
    lo = np.clip(np.asarray(lower, dtype=np.float64), 0.0, 1.0)
    q = p if review_proba is None else np.asarray(review_proba, dtype=np.float64)
    if q.shape != p.shape:
        raise ValueError(f"review_proba must have the shape of proba {p.shape}, got {q.shape}")
    out = []
    for w in ws:  # a few weight vectors (≤ 54), each vectorised over the beats
        y = np.where(a.certified, a.y_pred, np.argmax(q * w[None, :], axis=1))
        out.append(WeightedDecision(y, a.certified.copy(), 1.0 - lo[np.arange(p.shape[0]), y]))
    return out


def _objective(y_true: np.ndarray, y_pred: np.ndarray) -> tuple[float, dict[str, float]]:
    """Mean over S and V of min(Se, +P) (%): the targets' "Se ≥ x at +P ≥ x" in one number."""
    out: dict[str, float] = {}
    for name in ("S", "V"):
        c = CLASS_NAMES.index(name)
        tp = float(np.sum((y_true == c) & (y_pred == c)))
        out[f"{name}_Se_%"] = 100 * tp / max(int(np.sum(y_true == c)), 1)
        out[f"{name}_+P_%"] = 100 * tp / max(int(np.sum(y_pred == c)), 1)
    score = (min(out["S_Se_%"], out["S_+P_%"]) + min(out["V_Se_%"], out["V_+P_%"])) / 2
    return score, out


def choose_class_weights(y_true: Any, proba: Any, lower: Any, upper: Any, *, review_proba: Any = None,
                         grid_s: Sequence[float] = CLASS_WEIGHT_GRID_S,
                         grid_v: Sequence[float] = CLASS_WEIGHT_GRID_V,
                         criterion: str = WEIGHT_CRITERION,
                         target_ppv: tuple[float, float] = TARGET_PPV,
                         records: Any = None,
                         confidence: float = WEIGHT_CONFIDENCE) -> tuple[tuple[float, float], list[dict[str, Any]]]:
    """The S and V weights of :func:`weighted_decision`, chosen on tuning beats.

    Meant for held-out beats of the *tuning* records (the adaptive split passes
    DS1's, from leave-one-record-out with a simulated first-minutes adaptation),
    never the evaluation beats. Classes N, F and Q keep weight 1. Each class's
    weight is chosen on its own line of the grid (the other weight at 1) by
    ``"se_at_ppv_lcb"`` or ``"se_at_ppv"``, as its target is read: recall at a
    stated precision (``target_ppv``: S 80 %, V 95 %).

    * ``"se_at_ppv_lcb"`` (the default): **the largest sensitivity whose
      positive predictivity has a lower confidence end ≥ the target** (the
      lower end of the two-sided Clopper-Pearson interval at ``confidence``,
      :func:`nwbound.metrics.clopper_pearson`, over the beats called that
      class): a +P margin for the noise of the tuning beats. Where no weight
      reaches it and ``records`` is given, the same on the tuning beats
      without the *most adverse record* for that class: the record with the
      most false calls of that class at the grid's smallest weight (the
      first in sorted order on ties), so that one patient cannot decide that
      the target is out of reach. Where still no weight reaches it, the
      weight of the largest ``min(Se, lower end of +P)`` on all the beats
      (the break-even with the margin).
    * ``"se_at_ppv"``: the largest sensitivity at a +P (point estimate) ≥ the
      target, else the weight of the largest ``min(Se, +P)``.
    * ``"mean_min"``: the pair of the largest mean over S and V of ``min(Se, +P)``
      (ties to the smaller weights, earlier on the grids).

    Ties go to the smaller weight.

    Parameters
    ----------
    y_true : array-like of int, shape (n,)
        AAMI labels (N, S, V, F, Q = 0..4).
    proba, lower, upper : array-like of shape (n, 5)
    review_proba : array-like of shape (n, 5) or None, default=None
        As in :func:`weighted_decision`.
    grid_s, grid_v : sequence of float
        Candidate weights of S and V, smallest first.
    criterion : {"se_at_ppv_lcb", "se_at_ppv", "mean_min"}, default="se_at_ppv_lcb"
    target_ppv : (float, float), default=(80.0, 95.0)
        The +P (%) of S and V that ``"se_at_ppv_lcb"`` and ``"se_at_ppv"`` ask for.
    records : array-like of shape (n,) or None, default=None
        The record (patient) of each tuning beat, for the one-record step of
        ``"se_at_ppv_lcb"``; None skips that step.
    confidence : float, default=0.95
        Confidence of the two-sided interval whose lower end judges +P.

    Returns
    -------
    (w_s, w_v), rows
        The chosen weights and one row per pair of the grids (``w_S``, ``w_V``,
        ``objective_%``: the mean of ``min(Se, +P)``, S and V Se / +P, ``accuracy_%``),
        plus the pairs with the other weight at 1 where 1 is not on a grid.
        With ``"se_at_ppv_lcb"`` each row also holds ``S_+P_lcb_%`` and
        ``V_+P_lcb_%`` and, per class, how its weight was chosen
        (``S_chosen_by``: ``"lcb"``, ``"lcb without record R"`` or
        ``"break-even"``) and, with ``records``, the figures without its
        most adverse record (``S_left_out``, ``S_Se_without_%``,
        ``S_+P_lcb_without_%``; the same for V).

    Raises
    ------
    ValueError
        An empty grid, an unknown ``criterion``, ``target_ppv`` not two numbers
        in [0, 100], ``confidence`` not in (0, 1), or ``records`` not of the
        length of ``y_true``.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([0, 0, 1, 1]); p = np.array([[.9, .1, 0, 0, 0], [.8, .2, 0, 0, 0], [.6, .4, 0, 0, 0],
    ...                                            [.3, .7, 0, 0, 0]])
    >>> w, rows = choose_class_weights(y, p, np.zeros_like(p), np.ones_like(p), grid_s=(1, 2), grid_v=(1,),
    ...                                criterion="se_at_ppv")
    >>> w, [round(r["S_Se_%"]) for r in rows]  # weight 2 finds the S beat at p̂_S = 0.4 at +P 100 %
    ((2.0, 1.0), [50, 100])
    >>> w, rows = choose_class_weights(y, p, np.zeros_like(p), np.ones_like(p), grid_s=(1, 2), grid_v=(1,))
    >>> w, rows[1]["S_chosen_by"], round(rows[1]["S_+P_lcb_%"], 1)  # 2 of 2 right: too few for 80 %
    ((2.0, 1.0), 'break-even', 15.8)
    """
    if criterion not in WEIGHT_CRITERIA:
        raise ValueError(f"criterion must be one of {', '.join(map(repr, WEIGHT_CRITERIA))}, got {criterion!r}")
    targets = tuple(target_ppv) if isinstance(target_ppv, (tuple, list)) else ()
    if len(targets) != 2 or not all(isinstance(t, (int, float)) and 0 <= t <= 100 for t in targets):
        raise ValueError(f"target_ppv must be two numbers in [0, 100] (S, V), got {target_ppv!r}")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
    if len(grid_s) == 0 or len(grid_v) == 0:
        raise ValueError("grid_s and grid_v must not be empty")
    y = np.asarray(y_true)
    rec = None if records is None else np.asarray(records)
    if rec is not None and rec.shape != y.shape:
        raise ValueError(f"records must hold one record per tuning beat, shape {y.shape}, got {rec.shape}")
    pairs = [(float(ws), float(wv)) for ws in grid_s for wv in grid_v]
    if criterion != "mean_min":  # each class alone: the other's weight at 1
        pairs += [q for q in [(float(ws), 1.0) for ws in grid_s] + [(1.0, float(wv)) for wv in grid_v]
                  if q not in pairs]
    decisions = _weighted_decisions(proba, lower, upper, [[1.0, ws, wv, 1.0, 1.0] for ws, wv in pairs],
                                    review_proba=review_proba)
    rows: list[dict[str, Any]] = []
    for (ws, wv), d in zip(pairs, decisions):  # a small grid (≤ 54 pairs), each pair vectorised over the beats
        score, parts = _objective(y, d.y_pred)
        rows.append({"w_S": ws, "w_V": wv, "objective_%": score, **parts,
                     "accuracy_%": 100 * float(np.mean(d.y_pred == y))})
    if criterion == "mean_min":
        best = 0
        for i, r in enumerate(rows):
            if r["objective_%"] > rows[best]["objective_%"] + 1e-12:
                best = i
        return (rows[best]["w_S"], rows[best]["w_V"]), rows
    by_pair = {(r["w_S"], r["w_V"]): i for i, r in enumerate(rows)}
    chosen = []
    for c, (name, grid, target) in enumerate((("S", grid_s, targets[0]), ("V", grid_v, targets[1])), start=1):
        line = [by_pair[(float(w), 1.0) if name == "S" else (1.0, float(w))] for w in grid]
        se = np.array([rows[i][f"{name}_Se_%"] for i in line])
        ppv = np.array([rows[i][f"{name}_+P_%"] for i in line])
        if criterion == "se_at_ppv":
            ok = ppv >= target
            # argmax takes the first maximum: ties go to the smaller weight
            j = int(np.argmax(np.where(ok, se, -np.inf))) if ok.any() else int(np.argmax(np.minimum(se, ppv)))
            chosen.append(float(grid[j]))
            continue
        keep_all = np.ones(y.shape, dtype=bool)
        lcb = _ppv_lower(y, decisions, c, keep_all, confidence)
        for r, v in zip(rows, lcb):
            r[f"{name}_+P_lcb_%"] = float(v)
        how = "lcb"
        ok = lcb[line] >= target
        if ok.any():
            j = int(np.argmax(np.where(ok, se, -np.inf)))
        else:
            j = -1
            if rec is not None:
                first = decisions[line[0]].y_pred
                false = (first == c) & (y != c)
                names, counts = np.unique(rec[false], return_counts=True)
                if names.size:
                    worst = names[int(np.argmax(counts))]  # np.unique sorts: ties to the first record
                    keep = rec != worst
                    lcb_w = _ppv_lower(y, decisions, c, keep, confidence)
                    n_pos = max(int(np.sum((y == c) & keep)), 1)
                    se_w = np.array([100 * float(np.sum((d.y_pred == c) & (y == c) & keep)) / n_pos
                                     for d in decisions])
                    for i in range(len(rows)):
                        rows[i].update({f"{name}_left_out": str(worst), f"{name}_Se_without_%": float(se_w[i]),
                                        f"{name}_+P_lcb_without_%": float(lcb_w[i])})
                    ok = lcb_w[line] >= target
                    if ok.any():
                        j = int(np.argmax(np.where(ok, se_w[line], -np.inf)))
                        how = f"lcb without record {worst}"
            if j < 0:
                j = int(np.argmax(np.minimum(se, lcb[line])))
                how = "break-even"
        chosen.append(float(grid[j]))
        for r in rows:
            r[f"{name}_chosen_by"] = how
    return (chosen[0], chosen[1]), rows


def _chosen_score(row: dict[str, Any], name: str) -> float:
    """``min(Se, lower end of +P)`` (%) of one class at a chosen pair, on the beats its choice read."""
    if str(row.get(f"{name}_chosen_by", "")).startswith("lcb without"):
        return min(row[f"{name}_Se_without_%"], row[f"{name}_+P_lcb_without_%"])
    return min(row[f"{name}_Se_%"], row[f"{name}_+P_lcb_%"])


def choose_decision_neighbors(y_true: Any, proba: Any, lower: Any, upper: Any, review_by_k: dict[int, Any], *,
                              records: Any = None, confidence: float = WEIGHT_CONFIDENCE,
                              **grids: Any) -> tuple[int, tuple[float, float], list[dict[str, Any]]]:
    """The decision model's ``k`` and its class weights, chosen together on tuning beats.

    For each ``k``, :func:`choose_class_weights` (``criterion="se_at_ppv_lcb"``) chooses
    the S and V weights with that ``k``'s ``p̂`` deciding the review queue; each ``k`` is
    then scored by the mean over S and V of ``min(Se, lower end of +P)`` at its chosen
    weights, each class on the beats its choice read (without the most adverse record
    where the one-record step chose it). The ``k`` of the largest score wins (ties to the
    smaller ``k``). The certified beats (``proba``, ``lower``, ``upper``) are the same for
    every ``k``.

    Parameters
    ----------
    y_true, proba, lower, upper
        As in :func:`choose_class_weights`.
    review_by_k : dict of int to array-like of shape (n, 5)
        ``p̂`` of the decision model at each ``k``.
    records : array-like of shape (n,) or None, default=None
        As in :func:`choose_class_weights`.
    confidence : float, default=0.95
        As in :func:`choose_class_weights`.
    **grids
        ``grid_s``, ``grid_v``, ``target_ppv``: passed on to :func:`choose_class_weights`.

    Returns
    -------
    k, (w_s, w_v), rows
        The chosen ``k`` and weights; the rows of every ``k``'s weight search, each with
        ``k``, ``k_score_%`` (that ``k``'s score) and ``chosen`` (the pair and ``k`` kept).

    Raises
    ------
    ValueError
        An empty ``review_by_k`` or a ``k`` that is not a positive integer; whatever
        :func:`choose_class_weights` raises.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([0, 0, 1, 1] * 5); box = np.zeros((20, 5)), np.ones((20, 5))
    >>> weak = np.tile([[.9, .1, 0, 0, 0], [.8, .2, 0, 0, 0], [.7, .3, 0, 0, 0], [.6, .4, 0, 0, 0]], (5, 1))
    >>> sharp = np.tile([[.9, .1, 0, 0, 0], [.8, .2, 0, 0, 0], [.3, .7, 0, 0, 0], [.4, .6, 0, 0, 0]], (5, 1))
    >>> k, w, rows = choose_decision_neighbors(y, weak, *box, {8: sharp, 12: weak}, grid_s=(1,), grid_v=(1,))
    >>> k, w  # k = 8 finds the S beats at argmax
    (8, (1.0, 1.0))
    """
    if not review_by_k:
        raise ValueError("review_by_k must hold the decision model's p̂ for at least one k")
    ks = sorted(review_by_k)
    if any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in ks):
        raise ValueError(f"the keys of review_by_k must be positive integers (k), got {ks!r}")
    rows: list[dict[str, Any]] = []
    best: tuple[float, int, tuple[float, float]] | None = None
    for k in ks:  # a few k (≤ 4), each a small vectorised weight search
        w, found = choose_class_weights(y_true, proba, lower, upper, review_proba=review_by_k[k], records=records,
                                        criterion="se_at_ppv_lcb", confidence=confidence, **grids)
        pick = next(r for r in found if (r["w_S"], r["w_V"]) == w)
        score = (_chosen_score(pick, "S") + _chosen_score(pick, "V")) / 2
        for r in found:
            rows.append({"k": int(k), **r, "k_score_%": score, "chosen": False})
        if best is None or score > best[0] + 1e-12:
            best = (score, int(k), w)
    assert best is not None
    for r in rows:
        r["chosen"] = r["k"] == best[1] and (r["w_S"], r["w_V"]) == best[2]
    return best[1], best[2], rows


def _ppv_lower(y: np.ndarray, decisions: Sequence[WeightedDecision], c: int, keep: np.ndarray,
               confidence: float) -> np.ndarray:
    """Lower end (%) of the two-sided Clopper-Pearson interval of class ``c``'s +P, per decision, on ``keep``."""
    from ..metrics import clopper_pearson

    out = np.zeros(len(decisions))
    for i, d in enumerate(decisions):  # ≤ 54 decisions, each vectorised over the beats
        called = (d.y_pred == c) & keep
        n = int(called.sum())
        if n:
            out[i] = 100 * float(clopper_pearson(int(np.sum(called & (y == c))), n, confidence)[0])
    return out
