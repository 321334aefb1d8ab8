"""Rules every bound form shares: the per-class δ′, the Lipschitz drift, safe ratios in any array
namespace, the ``p̂ ± ε`` limits and the summation-error margin.

The kernel sums of one query are ``kappa = Σ w_i K_i`` (κ), ``sq_sum = Σ (w_i K_i)²`` (S2) and
``dist_sum = Σ w_i K_i ‖y − y_i‖`` (D), with ``K_i = K(‖y − y_i‖/λ)``. Where ``kappa == 0`` the
rules return ``inf``; the limits turn that into a vacuous bound (``[0, 1]``, ε = 1, flagged).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = [
    "COVERAGE_NAMES",
    "device_namespace",
    "effective_delta",
    "effective_sample_size",
    "lipschitz_bias",
    "plus_minus_limits",
    "sum_error_margin",
    "sum_error_of",
]

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
    from ..._namespace import array_namespace_of

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


def sum_error_of(stats: Any) -> float:
    """``ρ`` of kernel statistics (0 for objects without it), checked: the bounds need ``0 ≤ ρ < 1/2``.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> sum_error_of(SimpleNamespace(sum_error=1e-6)), sum_error_of(object())
    (1e-06, 0.0)
    """
    rho = float(getattr(stats, "sum_error", 0.0))
    if not 0.0 <= rho < 0.5:
        raise ValueError(f"sum_error must be in [0, 0.5) (a relative error bound of the sums), got {rho!r}.")
    return rho


def sum_error_margin(rho: float) -> float:
    """The most ``p̂ = S/κ`` moves when the sums are within ``1 ± ρ`` of the exact ones:
    ``|p̂ − S/κ| ≤ 2ρ·p(1 − p)/(1 − ρ) ≤ ρ/(2(1 − ρ))``, rounded up (``1 + 2⁻⁵⁰``). Added to the
    sampling term of every ``p̂ ± ε`` form.

    Examples
    --------
    >>> sum_error_margin(0.0), round(sum_error_margin(0.1), 6)
    (0.0, 0.055556)
    """
    return rho / (2.0 * (1.0 - rho)) * (1.0 + 2.0**-50)


def plus_minus_limits(proba: Any, bias: Any, sampling: Any, vacuous: Any) -> tuple[Any, ...]:
    """The limits of a ``p̂ ± ε`` form: ``clip(p̂ ∓ min(1, bias + sampling), 0, 1)``, in the arrays' namespace.

    Rows with κ = 0 (``vacuous``) get ``[0, 1]`` with ε = bias = sampling = 1. Everywhere else ε is
    the half-width of the reported interval, ``max(p̂ − lower, upper − p̂)`` (the glossary's one
    meaning of ε for every form).

    Parameters
    ----------
    proba : array of shape (n, C)
        ``p̂``.
    bias, sampling : array of shape (n,)
        The two parts of ε per query.
    vacuous : array of bool, shape (n,)
        κ = 0.

    Returns
    -------
    lower, upper, epsilon : arrays of shape (n, C)
    bias, sampling : arrays of shape (n,)
        1 where vacuous.

    Examples
    --------
    >>> import numpy as np
    >>> lo, up, eps, b, s = plus_minus_limits(np.array([[0.9, 0.1]]), np.array([0.05]), np.array([0.1]),
    ...                                       np.array([False]))
    >>> lo.round(2).tolist(), up.round(2).tolist(), eps.round(2).tolist()
    ([[0.75, 0.0]], [[1.0, 0.25]], [[0.15, 0.15]])
    """
    xp = device_namespace(proba, bias, sampling) or np
    bias = xp.where(vacuous, 1.0, bias)
    sampling = xp.where(vacuous, 1.0, sampling)
    eps = xp.clip(bias + sampling, None, 1.0)[:, None]
    lower = xp.clip(proba - eps, 0.0, 1.0)
    upper = xp.clip(proba + eps, 0.0, 1.0)
    epsilon = xp.where(vacuous[:, None], 1.0, xp.maximum(proba - lower, upper - proba))
    return lower, upper, epsilon, bias, sampling
