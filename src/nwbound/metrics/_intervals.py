"""Scores of the bound intervals: uncertainty, Type I/II errors (appendix E, after Nnyaba et al.,
2024), conservative accuracy, review flags and bound widths.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from ._calibration import confidence_bins
from .._validation import as_1d, check_classes, check_interval, check_same_length, encode_labels, IntervalArrays
from ._validation import _check_positive_int


# --------------------------------------------------------------------------
# Interval-based scores
# --------------------------------------------------------------------------
def _predicted_index(
    iv: IntervalArrays, y_pred: ArrayLike | None, classes: np.ndarray | None
) -> np.ndarray:
    if y_pred is None:
        return np.argmax(iv.proba, axis=1)
    p = as_1d(y_pred, "y_pred")
    check_same_length(("interval", iv.proba), ("y_pred", p))
    return encode_labels(p, classes, "y_pred", n_classes=iv.n_classes)


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
    iv = check_interval(interval)
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


def _true_columns(y_true: ArrayLike, interval: Any,
                  classes: ArrayLike | None) -> tuple[IntervalArrays, np.ndarray, np.ndarray | None]:
    """The checked interval, the column of each true label and the checked ``classes`` (or None)."""
    iv = check_interval(interval)
    t = as_1d(y_true, "y_true")
    check_same_length(("y_true", t), ("interval", iv.proba))
    cls = None if classes is None else check_classes(classes)
    return iv, encode_labels(t, cls, "y_true", n_classes=iv.n_classes), cls


def _type_masks(
    y_true: ArrayLike,
    interval: Any,
    classes: ArrayLike | None,
    threshold: float,
    y_pred: ArrayLike | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if not (isinstance(threshold, (int, float, np.floating)) and 0.0 <= threshold <= 1.0):
        raise ValueError(f"`threshold` must be a number in [0, 1], got {threshold!r}.")
    iv, ti, cls = _true_columns(y_true, interval, classes)
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
    iv = check_interval(interval)
    return _not_certified(iv, np.argmax(iv.proba, axis=1))


def _not_certified(iv: IntervalArrays, column: np.ndarray) -> np.ndarray:
    """True where the bound does not single out ``column`` of each row as its most probable class.

    ``column``'s lower bound is not above every other class's upper bound, or the row is vacuous.
    """
    n, c = iv.proba.shape
    rows = np.arange(n)
    if c == 1:
        return iv.vacuous.copy()
    others = iv.upper.copy()
    others[rows, column] = -np.inf
    return (iv.lower[rows, column] <= others.max(axis=1)) | iv.vacuous


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
