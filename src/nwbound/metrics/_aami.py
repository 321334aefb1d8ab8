"""ANSI/AAMI EC57 heartbeat-classification statistics and a Bayes decision rule with bounds.

EC57 reports, per class, sensitivity ``Se = TP/(TP+FN)``, positive predictivity
``+P = TP/(TP+FP)`` and false-positive rate ``FPR = FP/(FP+TN)``, *gross* (beats
pooled over all records) and *averaged over records*, with the confusion table in
the N, S, V, F, Q layout. Here every class is scored one-vs-rest on the same table
(the strict standard leaves Q out of some V statistics; de Chazal et al. 2004 and
most papers report the one-vs-rest figures used here).

A classifier whose ``p̂`` estimates the *training* class priors can be moved to other
target priors and class costs with Bayes' rule (:func:`bayes_decision`), without
resampling the training set (which would break the bound's independence
assumption); the rule also says where the bounds certify its decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._validation import as_1d, check_proba, check_same_length, encode_labels

__all__ = ["AAMI_CLASS_NAMES", "BayesDecision", "EC57Report", "bayes_decision", "ec57_report"]

#: AAMI EC57 heartbeat classes in the standard order.
AAMI_CLASS_NAMES: tuple[str, ...] = ("N", "S", "V", "F", "Q")


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num/den`` with NaN where ``den = 0`` (the statistic is undefined there)."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _one_vs_rest(confusion: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Se, +P and FPR of every class from a (..., C, C) table (rows reference)."""
    tp = np.diagonal(confusion, axis1=-2, axis2=-1)
    ref = confusion.sum(axis=-1)  # beats of the class
    pred = confusion.sum(axis=-2)  # beats labelled the class
    total = confusion.sum(axis=(-2, -1))[..., None]
    fp = pred - tp
    return _ratio(tp, ref), _ratio(tp, pred), _ratio(fp, total - ref)


@dataclass(frozen=True)
class EC57Report:
    """EC57 statistics of one classifier on a set of records.

    Ratios are NaN where undefined (no beat of the class, or none labelled with it);
    record averages skip those records (``records_defined`` counts the rest).

    Attributes
    ----------
    class_names : tuple of str
        Class names in column order.
    confusion : ndarray of shape (C, C), int
        Rows: reference (true) class; columns: algorithm (predicted) class.
    sensitivity, positive_predictivity, false_positive_rate : ndarray of shape (C,)
        Gross statistics (all beats pooled).
    records : ndarray of str, shape (R,)
        Record ids, sorted.
    record_confusion : ndarray of shape (R, C, C), int
        Confusion table of each record.
    record_sensitivity, record_positive_predictivity, record_false_positive_rate : ndarray (R, C)
        Per-record statistics.
    average_sensitivity, average_positive_predictivity, average_false_positive_rate : ndarray (C,)
        Mean over the records where the statistic is defined.
    records_defined : ndarray of shape (3, C), int
        How many records enter each average (rows Se, +P, FPR).

    Examples
    --------
    >>> rep = ec57_report([0, 0, 1, 1, 2], [0, 1, 1, 0, 2], records=["a", "a", "a", "b", "b"])
    >>> rep.sensitivity[:3].tolist(), rep.positive_predictivity[:3].tolist()
    ([0.5, 0.5, 1.0], [0.5, 0.5, 1.0])
    >>> float(rep.average_sensitivity[1])  # record a: 1/1, record b: 0/1
    0.5
    """

    class_names: tuple[str, ...]
    confusion: np.ndarray
    sensitivity: np.ndarray
    positive_predictivity: np.ndarray
    false_positive_rate: np.ndarray
    records: np.ndarray
    record_confusion: np.ndarray
    record_sensitivity: np.ndarray
    record_positive_predictivity: np.ndarray
    record_false_positive_rate: np.ndarray
    average_sensitivity: np.ndarray
    average_positive_predictivity: np.ndarray
    average_false_positive_rate: np.ndarray
    records_defined: np.ndarray

    @property
    def accuracy(self) -> float:
        """Share of beats labelled with their reference class.

        Examples
        --------
        >>> from nwbound.metrics import ec57_report
        >>> ec57_report([0, 0, 1, 1, 2], [0, 1, 1, 0, 2]).accuracy
        0.6
        """
        return float(np.trace(self.confusion) / max(int(self.confusion.sum()), 1))

    def confusion_table(self) -> list[dict[str, Any]]:
        """The confusion table as rows (reference class) × columns (algorithm class).

        Returns
        -------
        list of dict
            One row per reference class: ``{"reference": "N", "N": 12, …, "total": …}``
            plus a final ``"total"`` row.

        Examples
        --------
        >>> from nwbound.metrics import ec57_report
        >>> ec57_report([0, 0, 1, 1, 2], [0, 1, 1, 0, 2]).confusion_table()[1]
        {'reference': 'S', 'N': 1, 'S': 1, 'V': 0, 'F': 0, 'Q': 0, 'total': 2}
        """
        rows = []
        for i, name in enumerate(self.class_names):
            row: dict[str, Any] = {"reference": name}
            row.update({c: int(self.confusion[i, j]) for j, c in enumerate(self.class_names)})
            row["total"] = int(self.confusion[i].sum())
            rows.append(row)
        total: dict[str, Any] = {"reference": "total"}
        total.update({c: int(self.confusion[:, j].sum()) for j, c in enumerate(self.class_names)})
        total["total"] = int(self.confusion.sum())
        rows.append(total)
        return rows

    def table(self) -> list[dict[str, Any]]:
        """Per-class statistics as rows (gross and record-averaged, as fractions).

        Returns
        -------
        list of dict
            Keys ``class``, ``support``, ``Se``, ``+P``, ``FPR``, ``Se_avg``,
            ``+P_avg``, ``FPR_avg``.

        Examples
        --------
        >>> from nwbound.metrics import ec57_report
        >>> row = ec57_report([0, 0, 1, 1, 2], [0, 1, 1, 0, 2]).table()[0]
        >>> row["class"], row["support"], row["Se"], row["+P"]
        ('N', 2, 0.5, 0.5)
        """
        return [
            {
                "class": c,
                "support": int(self.confusion[j].sum()),
                "Se": float(self.sensitivity[j]),
                "+P": float(self.positive_predictivity[j]),
                "FPR": float(self.false_positive_rate[j]),
                "Se_avg": float(self.average_sensitivity[j]),
                "+P_avg": float(self.average_positive_predictivity[j]),
                "FPR_avg": float(self.average_false_positive_rate[j]),
            }
            for j, c in enumerate(self.class_names)
        ]


def ec57_report(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    records: ArrayLike | None = None,
    classes: ArrayLike | None = None,
    class_names: tuple[str, ...] | None = None,
) -> EC57Report:
    """ANSI/AAMI EC57 statistics: per-class Se, +P, FPR, gross and per-record averages.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
        Reference and algorithm labels. With ``classes=None`` they must be column
        indices ``0..C−1`` (the AAMI order N, S, V, F, Q → 0..4 gives ``C = 5``).
    records : array-like of shape (n,), optional
        Record (patient) id of each beat; ``None`` treats all beats as one record.
    classes : array-like, optional
        The labels in column order (e.g. ``["N", "S", "V", "F", "Q"]``); default
        ``0..C−1`` with ``C = max(5, largest label + 1)``.
    class_names : tuple of str, optional
        Names for the table; default ``AAMI_CLASS_NAMES`` for 5 index classes,
        else ``str`` of ``classes``.

    Returns
    -------
    EC57Report

    Raises
    ------
    ValueError
        Empty or mismatched inputs, labels outside ``classes``, names of the wrong length.

    Examples
    --------
    >>> rep = ec57_report([0, 0, 0, 1, 2], [0, 0, 1, 1, 2])
    >>> rep.confusion_table()[0]
    {'reference': 'N', 'N': 2, 'S': 1, 'V': 0, 'F': 0, 'Q': 0, 'total': 3}
    >>> float(rep.false_positive_rate[1])  # 1 of the 4 non-S beats labelled S
    0.25
    """
    yt = as_1d(y_true, "y_true")
    yp = as_1d(y_pred, "y_pred")
    n = check_same_length(("y_true", yt), ("y_pred", yp))
    if classes is None:
        ti = encode_labels(yt, None, "y_true")
        pi = encode_labels(yp, None, "y_pred")
        if min(ti.min(), pi.min()) < 0:
            raise ValueError("`y_true`/`y_pred` hold negative labels; pass `classes` to map them.")
        n_classes = max(len(AAMI_CLASS_NAMES), int(max(ti.max(), pi.max())) + 1)
        labels = np.arange(n_classes)
    else:
        labels = as_1d(classes, "classes")
        if np.unique(labels).shape[0] != labels.shape[0]:
            raise ValueError(f"`classes` must not contain duplicates, got {labels.tolist()}.")
        ti = encode_labels(yt, labels, "y_true")
        pi = encode_labels(yp, labels, "y_pred")
        n_classes = labels.shape[0]
    if class_names is None:
        class_names = (
            AAMI_CLASS_NAMES if classes is None and n_classes == 5 else tuple(str(c) for c in labels)
        )
    class_names = tuple(str(c) for c in class_names)
    if len(class_names) != n_classes:
        raise ValueError(f"`class_names` must name {n_classes} classes, got {len(class_names)}.")
    if records is None:
        rec = np.zeros(n, dtype=np.int64)
        rec_names = np.array(["all"])
    else:
        r = as_1d(records, "records")
        check_same_length(("y_true", yt), ("records", r))
        rec_names, rec = np.unique(r.astype(str), return_inverse=True)
    n_rec = rec_names.shape[0]
    # One bincount builds every record's table (no loop over beats or records).
    flat = (rec * n_classes + ti) * n_classes + pi
    per_rec = np.bincount(flat, minlength=n_rec * n_classes * n_classes).reshape(
        n_rec, n_classes, n_classes
    )
    gross = per_rec.sum(axis=0)
    se, pp, fpr = _one_vs_rest(gross)
    rse, rpp, rfpr = _one_vs_rest(per_rec)
    defined = np.stack([np.sum(~np.isnan(a), axis=0) for a in (rse, rpp, rfpr)])

    def avg(a: np.ndarray) -> np.ndarray:
        return _ratio(np.nansum(a, axis=0), np.sum(~np.isnan(a), axis=0))

    return EC57Report(
        class_names=class_names, confusion=gross, sensitivity=se, positive_predictivity=pp,
        false_positive_rate=fpr, records=rec_names, record_confusion=per_rec,
        record_sensitivity=rse, record_positive_predictivity=rpp, record_false_positive_rate=rfpr,
        average_sensitivity=avg(rse), average_positive_predictivity=avg(rpp),
        average_false_positive_rate=avg(rfpr), records_defined=defined,
    )  # fmt: skip


# --------------------------------------------------------------------------- decisions
@dataclass(frozen=True)
class BayesDecision:
    """A Bayes decision on ``p̂`` and, when bounds were given, what they certify.

    Attributes
    ----------
    y_pred : ndarray of shape (n,), int
        Column of the decided class.
    proba : ndarray of shape (n, C)
        Class probabilities under the target priors.
    lower, upper : ndarray of shape (n, C) or None
        Bounds on those probabilities (from the bounds on ``p̂``).
    certified : ndarray of bool, shape (n,), or None
        True where every probability vector inside the bounds leads to the same
        decision (the decision is then the Bayes decision under the true
        probabilities, at the bounds' level).
    error_upper : ndarray of shape (n,) or None
        ``1 − lower`` of the decided class: a ceiling on the probability, under the
        target priors, that the decision is wrong.
    weights : ndarray of shape (C,)
        ``target prior / training prior`` of each class.

    Examples
    --------
    >>> import numpy as np
    >>> d = bayes_decision(np.array([[0.6, 0.4]]), lower=[[0.5, 0.3]], upper=[[0.7, 0.5]])
    >>> d.y_pred.tolist(), d.certified.tolist(), d.error_upper.round(2).tolist()
    ([0], [False], [0.5])
    """

    y_pred: np.ndarray
    proba: np.ndarray
    lower: np.ndarray | None
    upper: np.ndarray | None
    certified: np.ndarray | None
    error_upper: np.ndarray | None
    weights: np.ndarray


def _prior(p: ArrayLike | None, n_classes: int, name: str) -> np.ndarray | None:
    if p is None:
        return None
    arr = np.asarray(p, dtype=np.float64)
    if arr.shape != (n_classes,) or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(
            f"`{name}` must hold {n_classes} positive class priors (one per column of proba), got {p!r}."
        )
    return arr / arr.sum()


_TIE = 1e-12  # a rival that ties within rounding is not ruled out


def _max_linear(a: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """``max Σ_c a_c p_c`` over ``lower ≤ p ≤ upper, Σ p = 1`` per row (greedy, exact)."""
    order = np.argsort(-a, axis=1)
    a_s = np.take_along_axis(a, order, axis=1)
    cap = np.take_along_axis(upper - lower, order, axis=1)
    budget = np.clip(1.0 - lower.sum(axis=1, keepdims=True), 0.0, None)
    before = np.cumsum(cap, axis=1) - cap
    take = np.clip(budget - before, 0.0, cap)
    return (a * lower).sum(axis=1) + (a_s * take).sum(axis=1)


def bayes_decision(
    proba: ArrayLike,
    *,
    train_prior: ArrayLike | None = None,
    target_prior: ArrayLike | None = None,
    cost: ArrayLike | None = None,
    lower: ArrayLike | None = None,
    upper: ArrayLike | None = None,
) -> BayesDecision:
    """Bayes decision rule on ``p̂`` with target class priors and class costs.

    ``p̂`` estimates ``P(class | x)`` under the training priors ``π``. Under target
    priors ``π'`` the posterior is ``q_c ∝ w_c p_c`` with ``w_c = π'_c / π_c``, and the
    decision minimising the expected cost is ``argmin_k Σ_c cost[k, c]·q_c``
    (``cost[k, c]``: cost of deciding k when the class is c; default 0-1, i.e.
    ``argmax_c q_c``). With ``lower``/``upper`` bounds on ``p`` (holding for all
    classes at once, e.g. the simultaneous ``δ/C`` coverage), the decision is
    *certified* where it is the same for every ``p`` in the box ``lower ≤ p ≤ upper,
    Σ p = 1`` (an exact linear program per competing class, solved greedily).

    Parameters
    ----------
    proba : array-like of shape (n, C)
        ``p̂`` (rows sum to 1).
    train_prior : array-like of shape (C,), optional
        Class priors of the training set ``p̂`` estimates (required with ``target_prior``).
    target_prior : array-like of shape (C,), optional
        Priors to decide under (e.g. uniform for a balanced rule); default: ``train_prior``.
    cost : array-like of shape (C, C), optional
        Non-negative decision costs; default 0-1 loss.
    lower, upper : array-like of shape (n, C), optional
        Bounds on ``p`` (give both or neither).

    Returns
    -------
    BayesDecision

    Raises
    ------
    ValueError
        Shapes that disagree, priors that are not positive, a negative cost,
        bounds that do not contain ``proba``, or bounds whose box holds no
        probability vector (``Σ lower > 1`` or ``Σ upper < 1`` on a row).

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([[0.8, 0.2], [0.95, 0.05]])
    >>> d = bayes_decision(p, train_prior=[0.9, 0.1], target_prior=[0.5, 0.5],
    ...                    lower=p - 0.06, upper=p + 0.06)
    >>> d.y_pred.tolist(), d.certified.tolist()  # 0.2·9 > 0.8·1: class 1 under equal priors
    ([1, 0], [True, False])
    >>> d.proba.round(3).tolist()[0]
    [0.308, 0.692]
    """
    p = check_proba(proba, "proba")
    n, n_classes = p.shape
    pi = _prior(train_prior, n_classes, "train_prior")
    pt = _prior(target_prior, n_classes, "target_prior")
    if pt is not None and pi is None:
        raise ValueError("`target_prior` needs `train_prior` (the priors p̂ was estimated under).")
    w = np.ones(n_classes) if pt is None else pt / pi
    if cost is None:
        c = 1.0 - np.eye(n_classes)
    else:
        c = np.asarray(cost, dtype=np.float64)
        if c.shape != (n_classes, n_classes) or not np.all(np.isfinite(c)) or np.any(c < 0):
            raise ValueError(f"`cost` must be a finite non-negative ({n_classes}, {n_classes}) matrix.")
    if (lower is None) != (upper is None):
        raise ValueError("give both `lower` and `upper`, or neither.")
    wp = p * w
    q = wp / np.maximum(wp.sum(axis=1, keepdims=True), np.finfo(float).tiny)
    risk = q @ c.T  # (n, k): expected cost of deciding k
    y_pred = np.argmin(risk, axis=1)
    if lower is None:
        return BayesDecision(y_pred, q, None, None, None, None, w)
    lo = np.clip(np.asarray(lower, dtype=np.float64), 0.0, 1.0)
    up = np.clip(np.asarray(upper, dtype=np.float64), 0.0, 1.0)
    for name, arr in (("lower", lo), ("upper", up)):
        if arr.shape != p.shape or not np.all(np.isfinite(arr)):
            raise ValueError(f"`{name}` must be a finite array of shape {p.shape}.")
    gap = np.maximum(lo - p, p - up)
    if np.any(gap > 1e-9):
        raise ValueError(
            f"`lower` ≤ `proba` ≤ `upper` must hold element-wise; {int(np.count_nonzero(gap > 1e-9))} of {gap.size} "
            f"entries lie outside their bounds (by up to {float(gap.max()):.3g}). Pass the proba, lower and upper of "
            "one PredictionInterval (iv.proba, iv.lower, iv.upper: nwbound's intervals hold their own proba, "
            "cross-fitted ones included); bounds made elsewhere must contain the proba given."
        )
    # The linear programs below range over the box ∩ simplex; a box that holds no probability
    # vector (Σ upper < 1 or Σ lower > 1: proba not normalised, or bounds that cannot hold)
    # would "certify" from the empty set.
    empty = (up.sum(axis=1) < 1.0 - 1e-6) | (lo.sum(axis=1) > 1.0 + 1e-6)  # float32 rounding passes
    if np.any(empty):
        i = int(np.flatnonzero(empty)[0])
        raise ValueError(
            f"{int(empty.sum())} row(s) of `lower`/`upper` hold no probability vector (row {i}: Σ lower = "
            f"{lo[i].sum():.4g}, Σ upper = {up[i].sum():.4g}; need Σ lower ≤ 1 ≤ Σ upper), so no decision can "
            "be certified from them. Pass `proba` with rows summing to 1 and bounds that contain it."
        )
    # Certified: for every rival k, max over the box of Σ_c (cost[k*, c] − cost[k, c]) w_c p_c < 0.
    certified = np.ones(n, dtype=bool)
    rows = np.arange(n)
    for k in range(n_classes):  # a loop over the C classes, not over queries
        a = (c[y_pred] - c[k][None, :]) * w[None, :]
        worst = _max_linear(a, lo, up)
        certified &= (y_pred == k) | (worst < -_TIE)
    # Bounds on q: smallest numerator against largest rest, and vice versa.
    wl, wu = lo * w, up * w
    tiny = np.finfo(float).tiny
    q_lo = wl / np.maximum(wl + (wu.sum(axis=1, keepdims=True) - wu), tiny)
    q_up = np.where(wu > 0, wu / np.maximum(wu + (wl.sum(axis=1, keepdims=True) - wl), tiny), 0.0)
    q_lo, q_up = np.minimum(q_lo, q), np.maximum(q_up, q)
    return BayesDecision(y_pred, q, q_lo, q_up, certified, 1.0 - q_lo[rows, y_pred], w)
