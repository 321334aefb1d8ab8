"""Cross-fitting: two splits whose roles swap, their intervals intersected."""

from __future__ import annotations

import numpy as np

from .._result import PredictionInterval

__all__ = ["intersect_intervals", "kappa_weighted_proba"]


def kappa_weighted_proba(proba: tuple[np.ndarray, np.ndarray], kappa: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``(κ₁ p̂₁ + κ₂ p̂₂)/(κ₁ + κ₂)``; the plain mean where both κ are 0.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import kappa_weighted_proba
    >>> kappa_weighted_proba((np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])), (np.array([3.0]), np.array([1.0])))
    array([[0.75, 0.25]])
    """
    k1, k2 = (np.asarray(k, dtype=np.float64)[:, None] for k in kappa)
    total = k1 + k2
    w1 = np.divide(k1, total, out=np.full_like(total, 0.5), where=total > 0)
    return w1 * proba[0] + (1.0 - w1) * proba[1]


def intersect_intervals(first: PredictionInterval, second: PredictionInterval) -> PredictionInterval:
    """The cross-fitted interval: two intervals, each at level ``δ/2``, intersected.

    ``lower = max(lower₁, lower₂)``, ``upper = min(upper₁, upper₂)``: if each half's interval
    misses ``p`` with probability at most ``δ/2``, the intersection misses it with probability
    at most ``δ`` (union bound). ``proba`` is the κ-weighted mean of the two ``p̂``;
    ``epsilon = max(upper − p̂, p̂ − lower, 0)`` so that ``|p − p̂| ≤ ε`` on the same event;
    ``bias``/``sampling``/``bandwidth`` are those of the half with the smaller ``ε`` (an
    account, per entry); ``kappa`` and ``n_eff`` add up; ``vacuous`` where both halves are
    vacuous; ``outside_box`` where the query lies outside both. When the two intervals do not
    meet (only possible on the δ-event), the class's interval is ``[lower, lower]``.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> from nwbound.spaces import intersect_intervals
    >>> def iv(p, e, k):
    ...     return PredictionInterval.from_parts(proba=np.array([[p, 1 - p]]), bias=np.zeros((1, 2)),
    ...         sampling=np.full((1, 2), e), kappa=np.array([k]), n_eff=np.array([k]),
    ...         vacuous=np.array([False]), bandwidth=np.array([1.0]))
    >>> both = intersect_intervals(iv(0.8, 0.3, 1.0), iv(0.6, 0.1, 1.0))
    >>> both.lower.round(2).tolist(), both.upper.round(2).tolist(), both.proba.round(2).tolist()
    ([[0.5, 0.3]], [[0.7, 0.5]], [[0.7, 0.3]])
    """
    proba = kappa_weighted_proba((first.proba, second.proba), (first.kappa, second.kappa))
    lower = np.maximum(first.lower, second.lower)
    upper = np.maximum(np.minimum(first.upper, second.upper), lower)
    epsilon = np.clip(np.maximum(upper - proba, proba - lower), 0.0, 1.0)
    take_first = first.epsilon <= second.epsilon
    outside = None
    if first.outside_box is not None and second.outside_box is not None:
        outside = first.outside_box & second.outside_box
    return PredictionInterval(
        proba=proba,
        lower=lower,
        upper=upper,
        epsilon=epsilon,
        bias=np.where(take_first, first.bias, second.bias),
        sampling=np.where(take_first, first.sampling, second.sampling),
        kappa=first.kappa + second.kappa,
        n_eff=first.n_eff + second.n_eff,
        vacuous=first.vacuous & second.vacuous,
        bandwidth=np.where(first.kappa >= second.kappa, first.bandwidth, second.bandwidth),
        outside_box=outside,
    )
