"""Error bounds ``|p_c(y) − p̂_c(y)| ≤ ε(y)`` from the kernel sums of one query.

All functions are vectorised over queries and take the per-query sums

* ``kappa = Σ w_i K_i`` (the kernel mass κ),
* ``sq_sum = Σ (w_i K_i)²`` (S2),
* ``dist_sum = Σ w_i K_i ‖y − y_i‖`` (D),

with ``K_i = K(‖y − y_i‖/λ)``. Where ``kappa == 0`` they return ``inf``; the
estimators turn that into a vacuous bound (ε = 1, flagged).

The forms, as checked in ``shared/notes/bounds.md``:

``"hoeffding"`` (default)
    ``ε = β·D/κ + √(ln(2/δ′)·S2/2)/κ``. The sampling term is Hoeffding's
    inequality conditional on the inputs (labels are independent given the
    inputs and bounded in [0, 1]); the bias term is the data-dependent form of
    the paper's Lipschitz lemma, ``Σ θ_i β‖y − y_i‖ ≤ βλ``. Valid for any
    non-negative kernel, needs no ``c_k``.
``"paper"``
    The paper's corollary ``βλ + 2σ·α_n/κ`` with its ``κ ≤ 1`` branch, on the
    ``1/c_k``-scaled kernel. Valid only with ``σ ≥ 1/2`` and ``c_k ≥ sup K``;
    ``σ = 1/4`` (the paper's value) reproduces its numbers but is not valid.
``"selfnormalized"``
    The anytime self-normalised (Abbasi-Yadkori) form
    ``β·D/κ + σ·sup K·√(2(1+V)·ln(√(1+V)/δ′))/κ`` with ``V = S2/sup K²``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = [
    "BOUND_NAMES",
    "COVERAGE_NAMES",
    "effective_delta",
    "lipschitz_bias",
    "radius_bias",
    "tail_bias",
    "hoeffding_sampling",
    "paper_sampling",
    "selfnormalized_sampling",
    "effective_sample_size",
]

BOUND_NAMES = ("chernoff", "hoeffding", "paper", "selfnormalized")
COVERAGE_NAMES = ("simultaneous", "per_class")


def effective_delta(delta: float, n_classes: int, coverage: str = "simultaneous") -> float:
    """Per-class failure probability ``δ′``.

    For two classes ``|p_0 − p̂_0| = |p_1 − p̂_1|``, so one event covers both and
    ``δ′ = δ``. For ``C ≥ 3`` classes a union bound over the classes gives
    ``δ′ = δ/C`` for simultaneous coverage; ``"per_class"`` keeps ``δ′ = δ``
    (each class separately, as in the paper).

    Parameters
    ----------
    delta : float
        Overall failure probability ``δ``.
    n_classes : int
        Number of classes ``C``.
    coverage : {"simultaneous", "per_class"}, default="simultaneous"
        Whether the bounds must hold for all classes at once.

    Returns
    -------
    float
        ``δ′``.

    Raises
    ------
    ValueError
        ``coverage`` is not one of the two names.

    Examples
    --------
    >>> round(effective_delta(0.05, 3), 6)
    0.016667
    >>> effective_delta(0.05, 2), effective_delta(0.05, 3, "per_class")
    (0.05, 0.05)
    """
    if coverage not in COVERAGE_NAMES:
        raise ValueError(f"coverage must be one of {COVERAGE_NAMES}, got {coverage!r}.")
    if coverage == "per_class" or n_classes <= 2:
        return float(delta)
    return float(delta) / n_classes


def device_namespace(*arrays: Any) -> Any:
    """The array namespace of ``arrays`` when one of them is a non-NumPy array (a PyTorch tensor, a
    CuPy or ``array_api_strict`` array), else None: the rules below then compute where the arrays
    live, with the same operations in the same order as on NumPy (the same float64 results up to
    a library's square root, which may differ in the last bit: PyTorch's CPU ``sqrt``).

    Examples
    --------
    >>> import numpy as np
    >>> device_namespace(np.zeros(2), 1.0) is None
    True
    """
    if all(a is None or isinstance(a, (np.ndarray, np.generic, float, int)) for a in arrays):
        return None
    from ..engine import array_namespace_of

    return array_namespace_of(*[a for a in arrays if a is not None and not isinstance(a, (float, int))])


def _safe_ratio(num: np.ndarray, kappa: np.ndarray) -> np.ndarray:
    xp = device_namespace(num, kappa)
    if xp is not None:  # num/κ where κ > 0, inf elsewhere (the NumPy branch's IEEE division)
        live = kappa > 0
        return xp.where(live, num / xp.where(live, kappa, xp.ones_like(kappa)), xp.full_like(kappa, math.inf))
    num = np.asarray(num, dtype=np.float64)
    kappa = np.asarray(kappa, dtype=np.float64)
    out = np.full(np.broadcast(num, kappa).shape, np.inf)
    np.divide(num, kappa, out=out, where=kappa > 0)
    return out


def lipschitz_bias(beta: float, dist_sum: np.ndarray, kappa: np.ndarray) -> np.ndarray:
    """Data-dependent bias ``β·Σ θ_i ‖y − y_i‖ = β·D/κ`` (θ_i = w_i K_i/κ).

    Parameters
    ----------
    beta : float
        ``β = L`` (Lipschitz) or ``1/γ`` (margin).
    dist_sum : ndarray of shape (m,)
        ``D`` per query.
    kappa : ndarray of shape (m,)
        ``κ`` per query.

    Returns
    -------
    ndarray of shape (m,)
        The bias term; ``inf`` where ``κ = 0``.

    Examples
    --------
    >>> import numpy as np
    >>> lipschitz_bias(3.0, np.array([0.5, 0.0]), np.array([2.0, 0.0])).tolist()
    [0.75, inf]
    """
    return beta * _safe_ratio(dist_sum, kappa)


def radius_bias(beta: float, support_radius: np.ndarray | float, kappa: np.ndarray) -> np.ndarray:
    """The paper's bias ``β·λ`` (``β·r*·λ`` for a kernel truncated at ``r*``).

    Parameters
    ----------
    beta : float
        ``β = L`` or ``1/γ``.
    support_radius : float or ndarray of shape (m,)
        Radius of the kernel's support in input units (``λ`` or ``r*·λ``).
    kappa : ndarray of shape (m,)
        ``κ`` per query (only its sign is used).

    Returns
    -------
    ndarray of shape (m,)
        ``β·support_radius``; ``inf`` where ``κ = 0``.

    Examples
    --------
    >>> import numpy as np
    >>> radius_bias(3.0, 0.1, np.array([2.0, 0.0])).round(6).tolist()
    [0.3, inf]
    """
    kappa = np.asarray(kappa, dtype=np.float64)
    return np.where(kappa > 0, beta * np.asarray(support_radius, dtype=np.float64), np.inf)


def tail_bias(
    beta: float,
    near_radius: np.ndarray | float,
    diameter: float | np.ndarray,
    tail_mass: np.ndarray,
    kappa: np.ndarray,
) -> np.ndarray:
    """Infinite-support bias ``β·λ* + β·Φ·ε_t`` (the paper's lemma 3).

    ``ε_t = Σ_{‖y − y_i‖ > λ*} θ_i`` is the kernel weight share beyond ``λ*``
    and ``Φ`` the diameter of the input space.

    Parameters
    ----------
    beta : float
        ``β = L`` or ``1/γ``.
    near_radius : float or ndarray of shape (m,)
        ``λ*``.
    diameter : float or ndarray of shape (m,)
        ``Φ``.
    tail_mass : ndarray of shape (m,)
        ``Σ_{‖y − y_i‖ > λ*} w_i K_i`` per query.
    kappa : ndarray of shape (m,)
        ``κ`` per query.

    Returns
    -------
    ndarray of shape (m,)
        The bias term; ``inf`` where ``κ = 0``.

    Examples
    --------
    >>> import numpy as np
    >>> tail_bias(3.0, 0.1, 2.0, np.array([0.2, 0.0]), np.array([2.0, 0.0])).round(6).tolist()
    [0.9, inf]
    """
    return beta * (np.asarray(near_radius, dtype=np.float64) + np.asarray(diameter, np.float64) * _safe_ratio(tail_mass, kappa))


def hoeffding_sampling(kappa: np.ndarray, sq_sum: np.ndarray, delta_prime: float) -> np.ndarray:
    """``√(ln(2/δ′)·S2/2)/κ`` — Hoeffding for ``Σ θ_i (1{c_i = c} − p_c(y_i))``.

    Parameters
    ----------
    kappa : ndarray of shape (m,)
        ``κ`` per query.
    sq_sum : ndarray of shape (m,)
        ``S2`` per query.
    delta_prime : float
        Per-class failure probability ``δ′`` (see :func:`effective_delta`).

    Returns
    -------
    ndarray of shape (m,)
        The sampling term; ``inf`` where ``κ = 0``.

    Examples
    --------
    >>> import numpy as np
    >>> hoeffding_sampling(np.array([4.0, 0.0]), np.array([2.0, 0.0]), 0.05).round(4).tolist()
    [0.4802, inf]
    """
    xp = device_namespace(sq_sum, kappa)
    if xp is not None:
        return _safe_ratio(xp.sqrt(math.log(2.0 / delta_prime) * sq_sum / 2.0), kappa)
    return _safe_ratio(np.sqrt(math.log(2.0 / delta_prime) * np.asarray(sq_sum, np.float64) / 2.0), kappa)


def paper_sampling(kappa_scaled: np.ndarray, delta_prime: float, sigma: float) -> np.ndarray:
    """The paper's ``2σ·α_n(y, δ)/κ`` on the ``1/c_k``-scaled kernel mass.

    ``α_n = √(κ ln(√(1+κ)/δ))`` for ``κ > 1`` and ``√(ln(√2/δ))`` for ``0 < κ ≤ 1``.

    Parameters
    ----------
    kappa_scaled : ndarray of shape (m,)
        ``κ`` of the ``1/c_k``-scaled kernel per query.
    delta_prime : float
        Per-class failure probability ``δ′``.
    sigma : float
        Sub-Gaussian parameter ``σ`` of the label noise (``≥ 1/2`` for a valid bound).

    Returns
    -------
    ndarray of shape (m,)
        The sampling term; ``inf`` where ``κ = 0``.

    Examples
    --------
    >>> import numpy as np
    >>> paper_sampling(np.array([0.5, 4.0, 0.0]), 0.05, 0.5).round(4).tolist()
    [3.6564, 0.9747, inf]
    """
    k = np.asarray(kappa_scaled, dtype=np.float64)
    big = k > 1.0
    alpha = np.full(k.shape, math.sqrt(math.log(math.sqrt(2.0) / delta_prime)))
    kb = k[big]
    alpha[big] = np.sqrt(kb * np.log(np.sqrt(1.0 + kb) / delta_prime))
    return _safe_ratio(2.0 * sigma * alpha, k)


def selfnormalized_sampling(
    kappa: np.ndarray, sq_sum: np.ndarray, delta_prime: float, sigma: float, sup_kernel: float = 1.0
) -> np.ndarray:
    """Anytime self-normalised bound ``σ·sup K·√(2(1+V) ln(√(1+V)/δ′))/κ``, ``V = S2/sup K²``.

    Parameters
    ----------
    kappa : ndarray of shape (m,)
        ``κ`` per query.
    sq_sum : ndarray of shape (m,)
        ``S2`` per query.
    delta_prime : float
        Per-class failure probability ``δ′``.
    sigma : float
        Sub-Gaussian parameter ``σ`` of the label noise.
    sup_kernel : float, default=1.0
        ``sup K`` of the kernel.

    Returns
    -------
    ndarray of shape (m,)
        The sampling term; ``inf`` where ``κ = 0``.

    Examples
    --------
    >>> import numpy as np
    >>> selfnormalized_sampling(np.array([4.0, 0.0]), np.array([2.0, 0.0]), 0.05, 0.5).round(4).tolist()
    [0.5765, inf]
    """
    v = np.asarray(sq_sum, dtype=np.float64) / sup_kernel**2
    half = np.sqrt(2.0 * (1.0 + v) * np.log(np.sqrt(1.0 + v) / delta_prime))
    return _safe_ratio(sigma * sup_kernel * half, kappa)


def effective_sample_size(kappa: np.ndarray, sq_sum: np.ndarray) -> np.ndarray:
    """Kish's effective sample size ``κ²/S2`` (0 where κ = 0).

    Parameters
    ----------
    kappa : ndarray of shape (m,)
        ``κ`` per query.
    sq_sum : ndarray of shape (m,)
        ``S2`` per query.

    Returns
    -------
    ndarray of shape (m,)
        ``κ²/S2``; 0 where ``S2 = 0``.

    Examples
    --------
    >>> import numpy as np
    >>> effective_sample_size(np.array([4.0, 0.0]), np.array([2.0, 0.0])).tolist()
    [8.0, 0.0]
    """
    kappa = np.asarray(kappa, dtype=np.float64)
    sq = np.asarray(sq_sum, dtype=np.float64)
    out = np.zeros(np.broadcast(kappa, sq).shape)
    np.divide(kappa * kappa, sq, out=out, where=sq > 0)
    return out
