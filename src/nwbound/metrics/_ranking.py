"""Ranking predictions by uncertainty: cumulative recall (the paper's figure 3e), risk-coverage."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._classification import _check_label_pair
from .._validation import check_same_length
from ._validation import _as_float_1d, _check_fraction


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
    check_same_length(("y_true", t), ("uncertainty", u))
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
