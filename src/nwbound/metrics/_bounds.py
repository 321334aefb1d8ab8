"""Metrics that use the bounds: error flagging, Type I/II errors, coverage.

Ranking by uncertainty follows the paper's figure 3e (cumulative recall);
Type I/II errors follow its appendix E (after Nnyaba et al., 2024).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from ._calibration import confidence_bins
from ._classification import _check_label_pair
from ._validation import (
    _as_1d,
    _as_float_1d,
    _check_classes,
    _check_fraction,
    _check_interval,
    _check_positive_int,
    _check_proba,
    _check_same_length,
    _encode,
    _IntervalArrays,
)

__all__ = [
    "BoundWidthTable",
    "TypeErrorTable",
    "bound_width_by_confidence",
    "clopper_pearson",
    "conservative_accuracy",
    "cumulative_recall_curve",
    "errors_caught_at",
    "review_comparison",
    "review_flags",
    "review_summary",
    "risk_coverage_curve",
    "type_errors",
    "uncertainty_from_interval",
    "violation_rate",
]


# --------------------------------------------------------------------------
# Ranking by uncertainty
# --------------------------------------------------------------------------
def _ranked_errors(
    y_true: ArrayLike, y_pred: ArrayLike, uncertainty: ArrayLike
) -> tuple[np.ndarray, int]:
    """Cumulative error counts when flagging in order of descending uncertainty.

    Returns ``caught`` of shape (n + 1,) (``caught[k]`` = errors among the
    ``k`` most uncertain samples) and the total number of errors.
    """
    t, p = _check_label_pair(y_true, y_pred)
    u = _as_float_1d(uncertainty, "uncertainty")
    _check_same_length(("y_true", t), ("uncertainty", u))
    wrong = t != p
    # Stable sort of −u: equal uncertainties keep their input order, so the
    # curve is reproducible (np.argsort's default quicksort is not stable).
    order = np.argsort(-u, kind="stable")
    caught = np.concatenate([[0], np.cumsum(wrong[order])])
    return caught, int(caught[-1])


def cumulative_recall_curve(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    uncertainty: ArrayLike,
    *,
    zero_division: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Share of all errors caught when flagging the most uncertain samples.

    Samples are ranked by descending ``uncertainty`` (ties keep input order)
    and flagged one by one, as in the paper's figure 3e: flagging the 10 %
    most uncertain ECG beats catches about 40 % of the errors. For an
    uninformative ``uncertainty`` the curve is the diagonal in expectation.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)
        True and predicted labels.
    uncertainty : array-like of shape (n_samples,)
        Larger means less certain, e.g. :func:`uncertainty_from_interval`.
    zero_division : float, default=0.0
        Curve value when there are no errors at all (the ratio is 0/0).

    Returns
    -------
    fraction_flagged : ndarray of shape (n_samples + 1,)
        ``k / n`` for ``k = 0 … n``.
    fraction_of_errors_caught : ndarray of shape (n_samples + 1,)
        Errors among the ``k`` most uncertain divided by all errors; starts
        at 0 and ends at 1 (unless there are no errors).

    Examples
    --------
    Two errors among five samples; the two most uncertain samples are both errors:

    >>> from nwbound.metrics import cumulative_recall_curve
    >>> frac, caught = cumulative_recall_curve(
    ...     [0, 1, 1, 0, 1], [0, 0, 1, 1, 1], uncertainty=[0.1, 0.9, 0.2, 0.8, 0.3])
    >>> frac.round(2).tolist()
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    >>> caught.round(2).tolist()
    [0.0, 0.5, 1.0, 1.0, 1.0, 1.0]
    """
    caught, total = _ranked_errors(y_true, y_pred, uncertainty)
    n = caught.shape[0] - 1
    fraction = np.arange(n + 1, dtype=np.float64) / n
    if total == 0:
        return fraction, np.full(n + 1, float(zero_division))
    return fraction, caught / total


def _n_flagged(fraction: np.ndarray, n: int) -> np.ndarray:
    # ceil so that "flag 10 %" flags at least 10 %; the small tolerance stops
    # round-off (0.1 · 30 = 3.0000000000000004) from adding a sample.
    return np.minimum(np.ceil(fraction * n - 1e-9).astype(np.intp), n)


def errors_caught_at(
    fraction: float | ArrayLike,
    y_true: ArrayLike,
    y_pred: ArrayLike,
    uncertainty: ArrayLike,
    *,
    zero_division: float = 0.0,
) -> float | np.ndarray:
    """Share of errors caught by flagging a given share of samples.

    Parameters
    ----------
    fraction : float or array-like of floats in [0, 1]
        Share of samples to flag; ``ceil(fraction · n)`` most uncertain ones
        are flagged.
    y_true, y_pred, uncertainty : array-like of shape (n_samples,)
        As in :func:`cumulative_recall_curve`.
    zero_division : float, default=0.0
        Value returned when there are no errors.

    Returns
    -------
    float or ndarray
        Same shape as ``fraction``.

    Examples
    --------
    >>> from nwbound.metrics import errors_caught_at
    >>> y_true, y_pred = [0, 1, 1, 0, 1], [0, 0, 1, 1, 1]
    >>> u = [0.1, 0.9, 0.2, 0.8, 0.3]
    >>> errors_caught_at(0.2, y_true, y_pred, u)  # flag 1 of 5: 1 of the 2 errors
    0.5
    >>> errors_caught_at([0.2, 0.4], y_true, y_pred, u).tolist()
    [0.5, 1.0]
    """
    frac = _check_fraction(fraction, "fraction")
    caught, total = _ranked_errors(y_true, y_pred, uncertainty)
    n = caught.shape[0] - 1
    if total == 0:
        out = np.full(frac.shape, float(zero_division))
    else:
        out = caught[_n_flagged(frac, n)] / total
    return float(out) if out.ndim == 0 else out


def risk_coverage_curve(
    y_true: ArrayLike, y_pred: ArrayLike, uncertainty: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    """Error rate on the kept samples when abstaining on the most uncertain.

    The kept set at coverage ``k / n`` is the complement of the ``n − k``
    samples flagged by :func:`cumulative_recall_curve` (same ordering and
    tie-break).

    Parameters
    ----------
    y_true, y_pred, uncertainty : array-like of shape (n_samples,)
        As in :func:`cumulative_recall_curve`.

    Returns
    -------
    coverage : ndarray of shape (n_samples,)
        ``k / n`` for ``k = 1 … n`` (increasing).
    risk : ndarray of shape (n_samples,)
        Error rate among the ``k`` kept samples; ``risk[-1]`` is ``1 − accuracy``.

    Examples
    --------
    >>> from nwbound.metrics import risk_coverage_curve
    >>> coverage, risk = risk_coverage_curve(
    ...     [0, 1, 1, 0, 1], [0, 0, 1, 1, 1], [0.1, 0.9, 0.2, 0.8, 0.3])
    >>> coverage.round(2).tolist()
    [0.2, 0.4, 0.6, 0.8, 1.0]
    >>> risk.round(2).tolist()  # keeping all 5: 2 errors
    [0.0, 0.0, 0.0, 0.25, 0.4]
    """
    caught, total = _ranked_errors(y_true, y_pred, uncertainty)
    n = caught.shape[0] - 1
    k = np.arange(1, n + 1)
    kept_errors = total - caught[n - k]
    return k / n, kept_errors / k


# --------------------------------------------------------------------------
# Interval-based scores
# --------------------------------------------------------------------------
def _predicted_index(
    iv: _IntervalArrays, y_pred: ArrayLike | None, classes: np.ndarray | None
) -> np.ndarray:
    if y_pred is None:
        return np.argmax(iv.proba, axis=1)
    p = _as_1d(y_pred, "y_pred")
    _check_same_length(("interval", iv.proba), ("y_pred", p))
    return _encode(p, classes, "y_pred", n_classes=iv.n_classes)


def uncertainty_from_interval(
    interval: Any,
    kind: Literal["width", "max_proba"] = "width",
) -> np.ndarray:
    """One uncertainty score per query, larger = less certain.

    Parameters
    ----------
    interval : PredictionInterval
        Output of a bounded classifier.
    kind : {"width", "max_proba"}, default="width"
        ``"width"``: ``2 ε`` of the predicted (argmax) class; vacuous
        queries get 2. ``"max_proba"``: ``1 − max_c p̂_c`` (ignores the bounds;
        useful as a baseline and for models without bounds).

    Returns
    -------
    ndarray of shape (n_queries,)

    Raises
    ------
    ValueError
        If ``kind`` is not "width" or "max_proba", or ``interval`` is malformed.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> iv = PredictionInterval.from_parts(
    ...     proba=np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]]), bias=np.zeros((3, 2)),
    ...     sampling=np.full((3, 2), 0.2), kappa=np.ones(3), n_eff=np.ones(3),
    ...     vacuous=np.zeros(3, dtype=bool), bandwidth=np.ones(3))
    >>> from nwbound.metrics import uncertainty_from_interval
    >>> uncertainty_from_interval(iv).round(2).tolist()  # 2 ε of the predicted class
    [0.4, 0.4, 0.4]
    >>> uncertainty_from_interval(iv, kind="max_proba").round(2).tolist()
    [0.1, 0.4, 0.2]
    """
    iv = _check_interval(interval)
    rows = np.arange(iv.proba.shape[0])
    pred = np.argmax(iv.proba, axis=1)
    if kind == "width":
        # Vacuous queries know nothing: rank them first even if a look-alike
        # interval object did not set ε = 1 there.
        return np.where(iv.vacuous, 2.0, 2.0 * iv.epsilon[rows, pred])
    if kind == "max_proba":
        return 1.0 - iv.proba[rows, pred]
    raise ValueError(f"`kind` must be 'width' or 'max_proba', got {kind!r}.")


@dataclass(frozen=True)
class TypeErrorTable:
    """Type I / Type II error counts per true class.

    Attributes
    ----------
    classes : ndarray of shape (n_classes,)
        Class labels (or column indices).
    support : ndarray of int, shape (n_classes,)
        Samples per true class.
    type_i : ndarray of int, shape (n_classes,)
        Wrong predictions (argmax ``p̂`` is not the true class).
    type_ii : ndarray of int, shape (n_classes,)
        Correct predictions whose bound does not exclude ``p < threshold``
        (``lower`` of the predicted class ``< threshold``), or vacuous.
    n_samples : int
        Total number of samples.
    threshold : float
        The probability the lower bound has to reach.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> iv = PredictionInterval.from_parts(
    ...     proba=np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]]), bias=np.zeros((3, 2)),
    ...     sampling=np.full((3, 2), 0.2), kappa=np.ones(3), n_eff=np.ones(3),
    ...     vacuous=np.zeros(3, dtype=bool), bandwidth=np.ones(3))
    >>> from nwbound.metrics import type_errors
    >>> table = type_errors([0, 1, 1], iv)
    >>> table.type_i.tolist(), table.type_ii.tolist(), table.support.tolist()
    ([0, 1], [0, 0], [1, 2])
    >>> round(table.accuracy, 3), round(table.conservative_accuracy, 3)
    (0.667, 0.667)
    >>> table.type_i_share.round(3).tolist()
    [0.0, 0.333]
    >>> sorted(table.as_dict())
    ['classes', 'n_samples', 'support', 'threshold', 'type_i', 'type_ii']
    """

    classes: np.ndarray
    support: np.ndarray
    type_i: np.ndarray
    type_ii: np.ndarray
    n_samples: int
    threshold: float

    @property
    def type_i_share(self) -> np.ndarray:
        """Type I counts as a share of the whole data set (the paper's inset).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.metrics import TypeErrorTable
        >>> t = TypeErrorTable(classes=np.array([0, 1]), support=np.array([2, 2]),
        ...                    type_i=np.array([0, 1]), type_ii=np.array([1, 0]), n_samples=4, threshold=0.5)
        >>> t.type_i_share.tolist()
        [0.0, 0.25]
        """
        return self.type_i / self.n_samples

    @property
    def type_ii_share(self) -> np.ndarray:
        """Type II counts as a share of the whole data set.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.metrics import TypeErrorTable
        >>> t = TypeErrorTable(classes=np.array([0, 1]), support=np.array([2, 2]),
        ...                    type_i=np.array([0, 1]), type_ii=np.array([1, 0]), n_samples=4, threshold=0.5)
        >>> t.type_ii_share.tolist()
        [0.25, 0.0]
        """
        return self.type_ii / self.n_samples

    @property
    def accuracy(self) -> float:
        """Plain accuracy (Type I errors only).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.metrics import TypeErrorTable
        >>> t = TypeErrorTable(classes=np.array([0, 1]), support=np.array([2, 2]),
        ...                    type_i=np.array([0, 1]), type_ii=np.array([1, 0]), n_samples=4, threshold=0.5)
        >>> t.accuracy
        0.75
        """
        return float(1.0 - self.type_i.sum() / self.n_samples)

    @property
    def conservative_accuracy(self) -> float:
        """Accuracy when Type II errors also count as wrong.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.metrics import TypeErrorTable
        >>> t = TypeErrorTable(classes=np.array([0, 1]), support=np.array([2, 2]),
        ...                    type_i=np.array([0, 1]), type_ii=np.array([1, 0]), n_samples=4, threshold=0.5)
        >>> t.conservative_accuracy  # one Type I and one Type II error out of 4
        0.5
        """
        return float(1.0 - (self.type_i.sum() + self.type_ii.sum()) / self.n_samples)

    def as_dict(self) -> dict[str, Any]:
        """Return the fields as a ``dict``.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.metrics import TypeErrorTable
        >>> t = TypeErrorTable(classes=np.array([0, 1]), support=np.array([2, 2]),
        ...                    type_i=np.array([0, 1]), type_ii=np.array([1, 0]), n_samples=4, threshold=0.5)
        >>> d = t.as_dict()
        >>> d["n_samples"], d["type_i"].tolist()
        (4, [0, 1])
        """
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _type_masks(
    y_true: ArrayLike,
    interval: Any,
    classes: ArrayLike | None,
    threshold: float,
    y_pred: ArrayLike | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    iv = _check_interval(interval)
    t = _as_1d(y_true, "y_true")
    _check_same_length(("y_true", t), ("interval", iv.proba))
    if not (isinstance(threshold, (int, float, np.floating)) and 0.0 <= threshold <= 1.0):
        raise ValueError(f"`threshold` must be a number in [0, 1], got {threshold!r}.")
    cls = None if classes is None else _check_classes(classes)
    if cls is not None and cls.shape[0] != iv.n_classes:
        raise ValueError(
            f"`classes` has {cls.shape[0]} labels but the interval has {iv.n_classes} columns."
        )
    ti = _encode(t, cls, "y_true", n_classes=iv.n_classes)
    pi = _predicted_index(iv, y_pred, cls)
    correct = ti == pi
    lower_pred = iv.lower[np.arange(ti.shape[0]), pi]
    type_ii = correct & ((lower_pred < threshold) | iv.vacuous)
    labels = cls if cls is not None else np.arange(iv.n_classes)
    return ti, ~correct, type_ii, labels, iv.proba


def type_errors(
    y_true: ArrayLike,
    interval: Any,
    classes: ArrayLike | None = None,
    *,
    threshold: float = 0.5,
    y_pred: ArrayLike | None = None,
) -> TypeErrorTable:
    """Count Type I and Type II errors per true class (paper, appendix E).

    * Type I: the prediction (argmax ``p̂``) is wrong.
    * Type II: the prediction is right but the bound is too wide to exclude
      ``p_c < threshold`` for the predicted class, i.e. its lower bound is
      below ``threshold``; vacuous queries (no kernel mass) count here too.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels (entries of ``classes``, or column indices).
    interval : PredictionInterval
        Probabilities and bounds, columns in ``classes`` order.
    classes : array-like of shape (n_classes,), optional
        Label of each column.
    threshold : float, default=0.5
        Probability the lower bound of the predicted class has to reach.
    y_pred : array-like of shape (n_samples,), optional
        Predicted labels when they differ from argmax ``p̂`` (e.g. a
        classifier with a fallback for vacuous queries).

    Returns
    -------
    TypeErrorTable

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> iv = PredictionInterval.from_parts(
    ...     proba=np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]]), bias=np.zeros((3, 2)),
    ...     sampling=np.full((3, 2), 0.2), kappa=np.ones(3), n_eff=np.ones(3),
    ...     vacuous=np.zeros(3, dtype=bool), bandwidth=np.ones(3))
    >>> from nwbound.metrics import type_errors
    >>> table = type_errors([0, 1, 1], iv)  # query 1 predicts 0 but is 1
    >>> table.type_i.tolist()
    [0, 1]
    >>> type_errors([0, 0, 1], iv, threshold=0.6).type_ii.tolist()  # lower 0.4 < 0.6
    [1, 0]
    """
    ti, wrong, type_ii, labels, _ = _type_masks(y_true, interval, classes, threshold, y_pred)
    c = labels.shape[0]
    return TypeErrorTable(
        classes=labels,
        support=np.bincount(ti, minlength=c),
        type_i=np.bincount(ti, weights=wrong, minlength=c).astype(np.int64),
        type_ii=np.bincount(ti, weights=type_ii, minlength=c).astype(np.int64),
        n_samples=int(ti.shape[0]),
        threshold=float(threshold),
    )


def conservative_accuracy(
    y_true: ArrayLike,
    interval: Any,
    classes: ArrayLike | None = None,
    *,
    threshold: float = 0.5,
    y_pred: ArrayLike | None = None,
) -> float:
    """Share of predictions that are correct *and* not a Type II error.

    The paper reports 84 % on ECG for the regular NWC (96 % plain accuracy).
    Arguments as in :func:`type_errors`.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> iv = PredictionInterval.from_parts(
    ...     proba=np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]]), bias=np.zeros((3, 2)),
    ...     sampling=np.full((3, 2), 0.2), kappa=np.ones(3), n_eff=np.ones(3),
    ...     vacuous=np.zeros(3, dtype=bool), bandwidth=np.ones(3))
    >>> from nwbound.metrics import conservative_accuracy
    >>> round(conservative_accuracy([0, 0, 1], iv), 3)  # query 1: lower 0.4 < 0.5
    0.667
    >>> round(conservative_accuracy([0, 0, 1], iv, threshold=0.3), 3)
    1.0
    """
    _, wrong, type_ii, _, _ = _type_masks(y_true, interval, classes, threshold, y_pred)
    return float(np.mean(~wrong & ~type_ii))


def review_flags(interval: Any) -> np.ndarray:
    """Queries whose bounds do not single out one class: send them to review.

    A query is flagged when the lower bound of its top class is not above the
    upper bound of every other class (so another class could be the most
    probable), or when it is vacuous.

    Parameters
    ----------
    interval : PredictionInterval

    Returns
    -------
    ndarray of bool, shape (n_queries,)

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> iv = PredictionInterval.from_parts(
    ...     proba=np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]]), bias=np.zeros((3, 2)),
    ...     sampling=np.full((3, 2), 0.2), kappa=np.ones(3), n_eff=np.ones(3),
    ...     vacuous=np.zeros(3, dtype=bool), bandwidth=np.ones(3))
    >>> from nwbound.metrics import review_flags
    >>> review_flags(iv).tolist()  # query 1: [0.4, 0.8] overlaps [0.2, 0.6]
    [False, True, False]
    """
    iv = _check_interval(interval)
    n, c = iv.proba.shape
    rows = np.arange(n)
    top = np.argmax(iv.proba, axis=1)
    lower_top = iv.lower[rows, top]
    if c == 1:
        return iv.vacuous.copy()
    others = iv.upper.copy()
    others[rows, top] = -np.inf
    return (lower_top <= others.max(axis=1)) | iv.vacuous


@dataclass(frozen=True)
class BoundWidthTable:
    """Mean bound width per confidence bin, split by correct / incorrect.

    Attributes
    ----------
    bin_lower, bin_upper : ndarray of shape (n_bins,)
        Equal-width, right-closed bins of ``max_c p̂_c``.
    count_correct, count_incorrect : ndarray of int, shape (n_bins,)
    width_correct, width_incorrect : ndarray of shape (n_bins,)
        Mean ``2 ε`` of the predicted class (NaN for an empty bin).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> iv = PredictionInterval.from_parts(
    ...     proba=np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]]), bias=np.zeros((3, 2)),
    ...     sampling=np.full((3, 2), 0.2), kappa=np.ones(3), n_eff=np.ones(3),
    ...     vacuous=np.zeros(3, dtype=bool), bandwidth=np.ones(3))
    >>> from nwbound.metrics import bound_width_by_confidence
    >>> table = bound_width_by_confidence([0, 1, 1], iv, n_bins=2)
    >>> table.bin_center.tolist()
    [0.25, 0.75]
    >>> table.count_correct.tolist(), table.count_incorrect.tolist()
    ([0, 2], [0, 1])
    >>> list(table.as_dict())[:2]
    ['bin_lower', 'bin_upper']
    """

    bin_lower: np.ndarray
    bin_upper: np.ndarray
    count_correct: np.ndarray
    count_incorrect: np.ndarray
    width_correct: np.ndarray
    width_incorrect: np.ndarray

    @property
    def bin_center(self) -> np.ndarray:
        """Midpoint of every bin, shape (n_bins,).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import PredictionInterval
        >>> iv = PredictionInterval.from_parts(
        ...     proba=np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]]), bias=np.zeros((3, 2)),
        ...     sampling=np.full((3, 2), 0.2), kappa=np.ones(3), n_eff=np.ones(3),
        ...     vacuous=np.zeros(3, dtype=bool), bandwidth=np.ones(3))
        >>> from nwbound.metrics import bound_width_by_confidence
        >>> bound_width_by_confidence([0, 1, 1], iv, n_bins=4).bin_center.tolist()
        [0.125, 0.375, 0.625, 0.875]
        """
        return 0.5 * (self.bin_lower + self.bin_upper)

    def as_dict(self) -> dict[str, np.ndarray]:
        """Return the columns as a ``dict``.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.metrics import BoundWidthTable
        >>> t = BoundWidthTable(np.array([0.0, 0.5]), np.array([0.5, 1.0]), np.array([0, 2]),
        ...                     np.array([0, 1]), np.array([np.nan, 0.4]), np.array([np.nan, 0.6]))
        >>> t.as_dict()["count_correct"].tolist()
        [0, 2]
        """
        return {f.name: getattr(self, f.name) for f in fields(self)}


def bound_width_by_confidence(
    y_true: ArrayLike,
    interval: Any,
    classes: ArrayLike | None = None,
    n_bins: int = 10,
) -> BoundWidthTable:
    """Mean bound width vs. predicted probability (paper, figure 3c).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels (entries of ``classes``, or column indices).
    interval : PredictionInterval
    classes : array-like of shape (n_classes,), optional
    n_bins : int, default=10
        Equal-width bins of ``max_c p̂_c`` on [0, 1].

    Returns
    -------
    BoundWidthTable

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> iv = PredictionInterval.from_parts(
    ...     proba=np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]]), bias=np.zeros((3, 2)),
    ...     sampling=np.full((3, 2), 0.2), kappa=np.ones(3), n_eff=np.ones(3),
    ...     vacuous=np.zeros(3, dtype=bool), bandwidth=np.ones(3))
    >>> from nwbound.metrics import bound_width_by_confidence
    >>> table = bound_width_by_confidence([0, 1, 1], iv, n_bins=2)
    >>> table.width_correct.round(2).tolist()  # no sample has confidence <= 0.5
    [nan, 0.4]
    >>> table.width_incorrect.round(2).tolist()
    [nan, 0.4]
    """
    n_bins = _check_positive_int(n_bins, "n_bins")
    ti, wrong, _, _, proba = _type_masks(y_true, interval, classes, 0.5, None)
    width = uncertainty_from_interval(interval, "width")
    conf = proba.max(axis=1)
    edges, idx = confidence_bins(conf, n_bins)

    def stats_for(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cnt = np.bincount(idx[mask], minlength=n_bins)
        s = np.bincount(idx[mask], weights=width[mask], minlength=n_bins)
        return cnt, np.divide(s, cnt, out=np.full(n_bins, np.nan), where=cnt > 0)

    cc, wc = stats_for(~wrong)
    ci, wi = stats_for(wrong)
    return BoundWidthTable(edges[:-1], edges[1:], cc, ci, wc, wi)


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
    r = _as_1d(review, "review")
    if r.dtype != bool:
        raise TypeError(f"`review` must be a boolean mask (True = send to review), got dtype {r.dtype}.")
    _check_same_length(("y_true", t), ("review", r))
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

    * ``certificate`` — review what the bound does not certify (the top
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
        Predicted labels if not argmax ``p̂``.

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
    iv = _check_interval(interval)
    share = float(_check_fraction(review_share, "review_share"))
    if not 0.0 < share < 1.0:
        raise ValueError(f"`review_share` must lie strictly between 0 and 1, got {review_share!r}.")
    t = _as_1d(y_true, "y_true")
    _check_same_length(("y_true", t), ("interval", iv.proba))
    cls = None if classes is None else _check_classes(classes)
    ti = _encode(t, cls, "y_true", n_classes=iv.n_classes)
    pi = _predicted_index(iv, y_pred, cls)
    n = ti.shape[0]
    rows_ix = np.arange(n)
    certified = ~review_flags(interval)
    error_upper = np.where(iv.vacuous, 1.0, 1.0 - iv.lower[rows_ix, pi])
    eps = np.where(iv.vacuous, 1.0, iv.epsilon[rows_ix, pi])
    pct = f"{100 * share:.0f}%"
    out = [
        review_summary("certificate", ti, pi, ~certified, GUARANTEES["certificate"]),
        review_summary(f"1 - max p @ {pct}", ti, pi, _top_share(1.0 - iv.proba[rows_ix, pi], share)),
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
        _check_same_length(("y_true", ti), ("calibrated_scores", scores))
        out.append(review_summary("calibrated threshold", ti, pi, calibrated.review(scores), calibrated.guarantee))
    return out


# --------------------------------------------------------------------------
# Coverage of the bounds where the true probabilities are known
# --------------------------------------------------------------------------
def clopper_pearson(
    k: ArrayLike, n: int, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper–Pearson) two-sided binomial confidence interval.

    Parameters
    ----------
    k : int or array-like of int
        Number of successes, ``0 ≤ k ≤ n``.
    n : int
        Number of trials (≥ 1).
    confidence : float, default=0.95

    Returns
    -------
    low, high : ndarray
        Same shape as ``k``.

    Raises
    ------
    ValueError
        If ``confidence`` is not in (0, 1), ``n < 1`` or some ``k`` is outside
        ``[0, n]``.

    Examples
    --------
    >>> from nwbound.metrics import clopper_pearson
    >>> low, high = clopper_pearson([0, 5, 10], n=10)
    >>> low.round(3).tolist()
    [0.0, 0.187, 0.692]
    >>> high.round(3).tolist()
    [0.308, 0.813, 1.0]
    """
    if not (0.0 < confidence < 1.0):
        raise ValueError(f"`confidence` must be in (0, 1), got {confidence!r}.")
    n = _check_positive_int(n, "n")
    k = np.asarray(k, dtype=np.float64)
    if np.any(k < 0) or np.any(k > n):
        raise ValueError(f"`k` must lie in [0, n={n}].")
    alpha = 1.0 - confidence
    # Beta quantiles are the exact binomial tail inversions; the edge cases
    # k = 0 / k = n have closed bounds 0 / 1 (beta.ppf would get a 0 shape).
    with np.errstate(invalid="ignore", divide="ignore"):
        low = stats.beta.ppf(alpha / 2, np.maximum(k, 1e-300), n - k + 1)
        high = stats.beta.ppf(1 - alpha / 2, k + 1, np.maximum(n - k, 1e-300))
    low = np.where(k == 0, 0.0, low)
    high = np.where(k == n, 1.0, high)
    return low, high


def violation_rate(
    proba_true: ArrayLike,
    interval: Any,
    *,
    simultaneous: bool = True,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """How often ``p_c`` falls outside ``[lower_c, upper_c]`` where ``p`` is known.

    For synthetic data with known class probabilities. Compare the per-class
    rates with ``δ`` (or ``δ/C``, see the notes on the union bound) and the
    simultaneous rate with ``δ``.

    Parameters
    ----------
    proba_true : array-like of shape (n_queries, n_classes)
        True class probabilities ``p_c(y)`` at the queries, columns in the
        interval's order.
    interval : PredictionInterval
    simultaneous : bool, default=True
        Also report the share of queries where *any* class is violated.
    confidence : float, default=0.95
        Level of the Clopper–Pearson intervals on the rates.

    Returns
    -------
    dict
        ``"n"`` (queries), ``"count"``, ``"rate"``, ``"ci_low"``,
        ``"ci_high"`` (arrays of shape (n_classes,)), and with
        ``simultaneous=True`` also ``"simultaneous_count"``,
        ``"simultaneous_rate"``, ``"simultaneous_ci"`` (low, high).

    Raises
    ------
    ValueError
        If ``proba_true`` does not have the interval's shape or ``confidence``
        is not in (0, 1).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> iv = PredictionInterval.from_parts(
    ...     proba=np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]]), bias=np.zeros((3, 2)),
    ...     sampling=np.full((3, 2), 0.2), kappa=np.ones(3), n_eff=np.ones(3),
    ...     vacuous=np.zeros(3, dtype=bool), bandwidth=np.ones(3))
    >>> from nwbound.metrics import violation_rate
    >>> p_true = np.array([[0.8, 0.2], [0.3, 0.7], [0.1, 0.9]])
    >>> r = violation_rate(p_true, iv)  # query 1: 0.3 < lower 0.4 and 0.7 > upper 0.6
    >>> r["count"].tolist(), r["simultaneous_count"]
    ([1, 1], 1)
    >>> r["rate"].round(3).tolist()
    [0.333, 0.333]
    """
    iv = _check_interval(interval)
    p = _check_proba(proba_true, "proba_true")
    if p.shape != iv.proba.shape:
        raise ValueError(
            f"`proba_true` has shape {p.shape} but the interval has {iv.proba.shape}."
        )
    if not (isinstance(confidence, (int, float, np.floating)) and 0.0 < confidence < 1.0):
        raise ValueError(f"`confidence` must be in (0, 1), got {confidence!r}.")
    n = p.shape[0]
    # Outside [lower, upper]: the band-Chernoff limits are not symmetric around p̂, so
    # |p − p̂| > ε would miss violations on the shorter side.
    violated = (p < iv.lower) | (p > iv.upper)
    count = violated.sum(axis=0)
    low, high = clopper_pearson(count, n, confidence)
    out: dict[str, Any] = {
        "n": n,
        "count": count,
        "rate": count / n,
        "ci_low": low,
        "ci_high": high,
        "confidence": float(confidence),
    }
    if simultaneous:
        k = int(violated.any(axis=1).sum())
        lo, hi = clopper_pearson(k, n, confidence)
        out["simultaneous_count"] = k
        out["simultaneous_rate"] = k / n
        out["simultaneous_ci"] = (float(lo), float(hi))
    return out
