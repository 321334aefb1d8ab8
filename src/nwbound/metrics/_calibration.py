"""Expected calibration error and the reliability table (Guo et al., 2017)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._validation import as_1d, check_classes, check_proba, check_same_length, encode_labels
from ._validation import _check_positive_int

__all__ = ["ReliabilityTable", "expected_calibration_error", "confidence_bins"]


@dataclass(frozen=True)
class ReliabilityTable:
    """Per-bin calibration summary.

    Bins are equal-width and right-closed, ``(bin_lower, bin_upper]``; the
    first bin also holds confidence 0.

    Attributes
    ----------
    bin_lower, bin_upper : ndarray of shape (n_bins,)
        Bin edges.
    count : ndarray of int, shape (n_bins,)
        Number of samples whose confidence falls in the bin.
    mean_confidence : ndarray of shape (n_bins,)
        Mean ``max_c p̂_c`` in the bin (NaN for an empty bin).
    accuracy : ndarray of shape (n_bins,)
        Share of correct predictions in the bin (NaN for an empty bin).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.metrics import expected_calibration_error
    >>> proba = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])
    >>> ece, table = expected_calibration_error([0, 1, 1], proba, n_bins=2)
    >>> table.edges.tolist(), table.count.tolist()
    ([0.0, 0.5, 1.0], [0, 3])
    >>> table.gap.round(2).tolist()  # accuracy 2/3 against mean confidence 0.77
    [nan, -0.1]
    """

    bin_lower: np.ndarray
    bin_upper: np.ndarray
    count: np.ndarray
    mean_confidence: np.ndarray
    accuracy: np.ndarray

    @property
    def edges(self) -> np.ndarray:
        """The ``n_bins + 1`` bin edges.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.metrics import expected_calibration_error
        >>> proba = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])
        >>> _, table = expected_calibration_error([0, 1, 1], proba, n_bins=2)
        >>> table.edges.tolist()
        [0.0, 0.5, 1.0]
        """
        return np.append(self.bin_lower, self.bin_upper[-1])

    @property
    def gap(self) -> np.ndarray:
        """``accuracy − mean_confidence`` per bin (NaN for empty bins).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.metrics import expected_calibration_error
        >>> proba = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])
        >>> _, table = expected_calibration_error([0, 1, 1], proba, n_bins=2)
        >>> table.gap.round(2).tolist()  # the first bin is empty
        [nan, -0.1]
        """
        return self.accuracy - self.mean_confidence

    def as_dict(self) -> dict[str, np.ndarray]:
        """Return the columns as a ``dict`` (``pandas.DataFrame(table.as_dict())``).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.metrics import expected_calibration_error
        >>> proba = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])
        >>> _, table = expected_calibration_error([0, 1, 1], proba, n_bins=2)
        >>> {k: v.tolist() for k, v in table.as_dict().items()}["count"]
        [0, 3]
        """
        return {f.name: getattr(self, f.name) for f in fields(self)}


def confidence_bins(confidence: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Assign confidences in [0, 1] to equal-width, right-closed bins.

    Returns the ``n_bins + 1`` edges and the bin index of every sample.
    ``searchsorted`` on the same edges that are reported avoids the float
    round-off of ``ceil(conf * n_bins)`` (e.g. 0.3 · 10 = 3.0000000000000004).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.metrics._calibration import confidence_bins
    >>> edges, idx = confidence_bins(np.array([0.0, 0.3, 0.5, 0.51, 1.0]), n_bins=2)
    >>> edges.tolist(), idx.tolist()  # right-closed: 0.5 is in the first bin
    ([0.0, 0.5, 1.0], [0, 0, 0, 1, 1])
    """
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    idx = np.searchsorted(edges, confidence, side="left") - 1
    return edges, np.clip(idx, 0, n_bins - 1)


def _binned_means(values: np.ndarray, idx: np.ndarray, count: np.ndarray) -> np.ndarray:
    sums = np.bincount(idx, weights=values, minlength=count.shape[0])
    return np.divide(sums, count, out=np.full(count.shape, np.nan), where=count > 0)


def expected_calibration_error(
    y_true: ArrayLike,
    proba: Any,
    classes: ArrayLike | None = None,
    n_bins: int = 10,
) -> tuple[float, ReliabilityTable]:
    """Top-label expected calibration error with equal-width bins.

    ``ECE = Σ_b (n_b / n) · |acc_b − conf_b|`` where ``conf = max_c p̂_c`` and
    a prediction is correct when ``argmax_c p̂_c`` is the true class
    (Guo et al., 2017). Ties in ``p̂`` go to the first column.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels: entries of ``classes``, or column indices when
        ``classes`` is None.
    proba : array-like of shape (n_samples, n_classes) or PredictionInterval
        Predicted probabilities, columns in ``classes`` order.
    classes : array-like of shape (n_classes,), optional
        The label of each column (e.g. ``estimator.classes_``).
    n_bins : int, default=10
        Number of equal-width confidence bins on [0, 1].

    Returns
    -------
    ece : float
        Expected calibration error in [0, 1].
    table : ReliabilityTable
        Bin edges, counts, mean confidence and accuracy per bin.

    Raises
    ------
    ValueError
        If ``proba`` is not an (n, C) array of probabilities, ``y_true`` has
        another length or holds unknown labels, ``classes`` does not match the
        columns, or ``n_bins < 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.metrics import expected_calibration_error
    >>> proba = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])
    >>> ece, table = expected_calibration_error([0, 1, 1], proba, n_bins=2)
    >>> round(ece, 3)  # |2/3 − (0.9 + 0.6 + 0.8)/3|
    0.1
    >>> table.accuracy.round(3).tolist()
    [nan, 0.667]
    >>> expected_calibration_error(["a", "b", "b"], proba, classes=["a", "b"], n_bins=2)[0] == ece
    True
    """
    p = check_proba(proba, "proba")
    t = as_1d(y_true, "y_true")
    check_same_length(("y_true", t), ("proba", p))
    n_bins = _check_positive_int(n_bins, "n_bins")
    cls = None if classes is None else check_classes(classes)
    ti = encode_labels(t, cls, "y_true", n_classes=p.shape[1])

    pred = np.argmax(p, axis=1)
    conf = np.clip(p[np.arange(p.shape[0]), pred], 0.0, 1.0)
    correct = (pred == ti).astype(np.float64)

    edges, idx = confidence_bins(conf, n_bins)
    count = np.bincount(idx, minlength=n_bins)
    mean_conf = _binned_means(conf, idx, count)
    acc = _binned_means(correct, idx, count)
    nonempty = count > 0
    ece = float(np.sum(count[nonempty] * np.abs(acc[nonempty] - mean_conf[nonempty])) / p.shape[0])
    table = ReliabilityTable(
        bin_lower=edges[:-1],
        bin_upper=edges[1:],
        count=count,
        mean_confidence=mean_conf,
        accuracy=acc,
    )
    return ece, table
