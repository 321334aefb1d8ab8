"""Review queues side by side: the certificate against ranking scores, conformal sets and
calibrated thresholds.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ._classification import _check_label_pair
from ._intervals import _not_certified, _predicted_index
from ._ranking import _n_flagged
from .._validation import as_1d, check_classes, check_interval, check_same_length, encode_labels
from ._validation import _as_float_1d, _check_fraction


# --------------------------------------------------------------------------
# Review queues side by side
# --------------------------------------------------------------------------
GUARANTEES: dict[str, str] = {
    "certificate": "per query: the accepted label is the most probable class w.p. >= 1 - delta "
    "(1 - C*delta/2 with coverage='per_class' and C >= 3 classes; conditional on the query; needs the L / margin "
    "assumption)",
    "none": "none (a ranking only)",
    "error_upper": "none for the queue (each error_upper is a per-query ceiling at level 1 - delta; "
    "1 - C*delta/2 with coverage='per_class' and C >= 3 classes)",
    "conformal": "marginal: the true label is in the set w.p. >= 1 - alpha (queries exchangeable with calibration)",
}


def review_summary(
    name: str,
    y_true: ArrayLike,
    y_pred: ArrayLike,
    review: ArrayLike,
    guarantee: str = GUARANTEES["none"],
) -> dict[str, Any]:
    """Summarise one review queue: who is sent to review and what is left.

    Parameters
    ----------
    name : str
        Label of the queue (first column of the table).
    y_true, y_pred : array-like of shape (n,)
        True and predicted labels.
    review : array-like of bool, shape (n,)
        True where the prediction goes to a human.
    guarantee : str
        What the accepted predictions are guaranteed (a sentence).

    Returns
    -------
    dict
        ``queue``, ``review_share``, ``errors_caught`` (share of all errors in
        the queue; NaN without errors), ``accepted_share``, ``error_among_accepted``
        (NaN if nothing accepted), ``n_accepted``, ``n_errors``, ``guarantee``.

    Raises
    ------
    TypeError
        If ``review`` is not a boolean mask.
    ValueError
        If the inputs have different lengths.

    Examples
    --------
    >>> row = review_summary("demo", [0, 1, 1, 0], [0, 0, 1, 0], [False, True, False, False])
    >>> row["errors_caught"], row["error_among_accepted"]
    (1.0, 0.0)
    """
    t, p = _check_label_pair(y_true, y_pred)
    r = as_1d(review, "review")
    if r.dtype != bool:
        raise TypeError(f"`review` must be a boolean mask (True = send to review), got dtype {r.dtype}.")
    check_same_length(("y_true", t), ("review", r))
    wrong = t != p
    n = t.shape[0]
    n_err = int(wrong.sum())
    acc = ~r
    n_acc = int(acc.sum())
    return {
        "queue": str(name),
        "review_share": float(r.mean()) if n else math.nan,
        "errors_caught": float(wrong[r].sum() / n_err) if n_err else math.nan,
        "accepted_share": n_acc / n if n else math.nan,
        "error_among_accepted": float(wrong[acc].mean()) if n_acc else math.nan,
        "n_accepted": n_acc,
        "n_errors": n_err,
        "guarantee": guarantee,
    }


def _top_share(score: np.ndarray, share: float) -> np.ndarray:
    """Mask of the ``ceil(share · n)`` largest scores (ties keep input order)."""
    n = score.shape[0]
    k = int(_n_flagged(np.asarray(share), n))
    mask = np.zeros(n, dtype=bool)
    mask[np.argsort(-score, kind="stable")[:k]] = True
    return mask


def review_comparison(
    y_true: ArrayLike,
    interval: Any,
    classes: ArrayLike | None = None,
    *,
    review_share: float = 0.1,
    conformal_sets: ArrayLike | None = None,
    calibrated: Any = None,
    calibrated_scores: ArrayLike | None = None,
    y_pred: ArrayLike | None = None,
) -> list[dict[str, Any]]:
    """Review queues side by side: the certificate vs ranking scores vs calibrated rules.

    One row (see :func:`review_summary`) per queue:

    * ``certificate`` — review what the bound does not certify (the predicted
      class's lower bound is not above every other upper bound, or κ = 0);
      its accepted share is the *certified share* and its error the *error
      among certified*;
    * ``1 - max p @ s``, ``error_upper @ s``, ``epsilon @ s`` — review the
      share ``s`` with the largest score;
    * ``conformal set size != 1`` (with ``conformal_sets``) — review where the
      split-conformal set is not a single label;
    * ``calibrated threshold`` (with ``calibrated``) — review what a fitted
      :class:`nwbound.baselines.CalibratedAcceptance` rejects.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        True labels (entries of ``classes``, or column indices).
    interval : PredictionInterval
    classes : array-like of shape (n_classes,), optional
        Label of each column.
    review_share : float in (0, 1), default=0.1
        Share sent to review by the ranking queues.
    conformal_sets : array-like of bool, shape (n, n_classes), optional
        Split-conformal sets (e.g. ``SplitConformalSets.predict_sets``).
    calibrated : fitted CalibratedAcceptance, optional
        Any object with ``review(scores)`` and ``guarantee``.
    calibrated_scores : array-like of shape (n,), optional
        The score ``calibrated`` was fitted on, for these queries; default
        ``error_upper`` of the interval.
    y_pred : array-like of shape (n,), optional
        Predicted labels if not argmax ``p̂``: the accepted labels that every queue scores
        (errors caught, error among accepted). The ``1 - max p`` queue still ranks by the
        model's ``1 − max_c p̂_c``, and the certificate, ``error_upper`` and ``epsilon`` are
        those of the given label.

    Returns
    -------
    list of dict

    Raises
    ------
    ValueError
        If ``review_share`` is not in (0, 1) or ``conformal_sets`` is not a
        boolean array of the interval's shape.
    TypeError
        If ``calibrated`` is not a fitted ``CalibratedAcceptance``.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> proba = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])
    >>> bias = np.repeat([[0.3], [0.05], [0.1]], 2, axis=1)   # ε = 0.4, 0.15, 0.2
    >>> iv = PredictionInterval.from_parts(proba, bias, np.full((3, 2), 0.1),
    ...     np.ones(3), np.ones(3), np.zeros(3, bool), np.ones(3))
    >>> rows = review_comparison([0, 1, 1], iv, review_share=0.3)  # only row 1 is wrong
    >>> [(r["queue"], r["errors_caught"]) for r in rows]
    [('certificate', 1.0), ('1 - max p @ 30%', 1.0), ('error_upper @ 30%', 1.0), ('epsilon @ 30%', 0.0)]
    >>> rows[0]["accepted_share"], rows[0]["error_among_accepted"]  # certified share, error among certified
    (0.3333333333333333, 0.0)
    """
    iv = check_interval(interval)
    share = float(_check_fraction(review_share, "review_share"))
    if not 0.0 < share < 1.0:
        raise ValueError(f"`review_share` must lie strictly between 0 and 1, got {review_share!r}.")
    t = as_1d(y_true, "y_true")
    check_same_length(("y_true", t), ("interval", iv.proba))
    cls = None if classes is None else check_classes(classes)
    ti = encode_labels(t, cls, "y_true", n_classes=iv.n_classes)
    pi = _predicted_index(iv, y_pred, cls)
    n = ti.shape[0]
    rows_ix = np.arange(n)
    # The certificate of the label that is accepted: with ``y_pred`` other than argmax p̂, a row
    # whose bound singles out another class is no certificate for it.
    certified = ~_not_certified(iv, pi)
    error_upper = np.where(iv.vacuous, 1.0, 1.0 - iv.lower[rows_ix, pi])
    eps = np.where(iv.vacuous, 1.0, iv.epsilon[rows_ix, pi])
    pct = f"{100 * share:.0f}%"
    out = [
        review_summary("certificate", ti, pi, ~certified, GUARANTEES["certificate"]),
        # The model's own doubt, 1 − max_c p̂_c, whichever label y_pred accepts (the queue's name).
        review_summary(f"1 - max p @ {pct}", ti, pi, _top_share(1.0 - iv.proba.max(axis=1), share)),
        review_summary(f"error_upper @ {pct}", ti, pi, _top_share(error_upper, share), GUARANTEES["error_upper"]),
        review_summary(f"epsilon @ {pct}", ti, pi, _top_share(eps, share)),
    ]
    if conformal_sets is not None:
        sets = np.asarray(conformal_sets)
        if sets.shape != iv.proba.shape or sets.dtype != bool:
            raise ValueError(
                f"`conformal_sets` must be a boolean array of shape {iv.proba.shape} (queries × classes), "
                f"got {sets.dtype} {sets.shape}."
            )
        out.append(
            review_summary("conformal set size != 1", ti, pi, sets.sum(axis=1) != 1, GUARANTEES["conformal"])
        )
    if calibrated is not None:
        if not (hasattr(calibrated, "review") and hasattr(calibrated, "guarantee")):
            raise TypeError(
                "`calibrated` must be a fitted nwbound.baselines.CalibratedAcceptance "
                f"(methods review() and guarantee), got {type(calibrated).__name__}."
            )
        scores = error_upper if calibrated_scores is None else _as_float_1d(calibrated_scores, "calibrated_scores")
        check_same_length(("y_true", ti), ("calibrated_scores", scores))
        out.append(review_summary("calibrated threshold", ti, pi, calibrated.review(scores), calibrated.guarantee))
    return out
