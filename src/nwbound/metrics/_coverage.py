"""Coverage of the bounds where the true probabilities are known."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from .._validation import check_interval, check_proba
from ._validation import _check_positive_int


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
        If ``confidence`` is not in (0, 1), ``n < 1`` or some ``k`` is not a
        whole number in ``[0, n]``.

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
    # NaN passes both comparisons below and a fractional count has no binomial interval:
    # both gave NaN or a made-up interval, without a word.
    if not np.all(np.isfinite(k)) or np.any(k != np.round(k)):
        raise ValueError(f"`k` must hold whole numbers of successes, got {np.asarray(k).tolist()!r}.")
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
    iv = check_interval(interval)
    p = check_proba(proba_true, "proba_true")
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
