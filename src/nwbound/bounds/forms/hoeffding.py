"""The ``"hoeffding"`` form (the default ``p̂ ± ε`` form).

``ε = β·D/κ + √(ln(2/δ′)·S2/2)/κ``. The sampling term is Hoeffding's inequality conditional on
the inputs (labels are independent given the inputs and bounded in [0, 1], so
``Σ θ_i (1{c_i = c} − p_c(y_i))`` with ``θ_i = w_i K_i/κ`` has range terms ``θ_i``); the bias term
is the data-dependent form of the paper's Lipschitz lemma, ``|Σ θ_i (p_c(y_i) − p_c(y))| ≤
β·Σ θ_i ‖y − y_i‖ = β·D/κ``. Valid for any non-negative kernel, needs no ``c_k``; checked in
``shared/notes/bounds.md``. :func:`hoeffding_limits` is the whole rule in the arrays' namespace:
the host and the device (PyTorch) limits are this one function.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._common import device_namespace, lipschitz_bias, plus_minus_limits, _safe_ratio, sum_error_margin
from ._registry import BoundForm, _register_built_in

__all__ = ["HoeffdingForm", "hoeffding_limits", "hoeffding_sampling"]


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


def hoeffding_limits(class_sums: Any, sq_sum: Any, dist_sum: Any, beta: float, delta_prime: float,
                     *, sum_error: float = 0.0) -> dict:
    """The ``"hoeffding"`` limits from one bandwidth's sums, where they live (NumPy, PyTorch on any device).

    The interval ``[p̂ − w, p̂ + w] ∩ [0, 1]`` with ``w = min(1, β·D/κ′ + √(ln(2/δ′)·S2/2)/κ′ +
    ρ/(2(1 − ρ)))``, ``κ′ = κ/(1 + ρ)`` (sums with a summation error ``ρ``) and ``p̂ = S/κ``; ε is its
    half-width (:func:`~nwbound.bounds.plus_minus_limits`); rows with κ = 0 get ``[0, 1]`` and
    ``ε = bias = sampling = 1``.

    Parameters
    ----------
    class_sums : array of shape (n, C)
        ``S_c = Σ w_i K_i 1{c_i = c}``.
    sq_sum, dist_sum : array of shape (n,)
        ``S2`` and ``D``.
    beta : float
        ``L`` or ``1/γ``.
    delta_prime : float
        Per-class failure probability ``δ′``.
    sum_error : float, default=0
        ``ρ`` in [0, 1/2): the sums are within ``1 ± ρ`` of the exact ones.

    Returns
    -------
    dict
        ``proba``, ``lower``, ``upper``, ``epsilon``, ``bias``, ``sampling`` (n, C), ``kappa``
        (n,) and ``vacuous`` (n,) bool, in the inputs' namespace and on their device.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.bounds import hoeffding_limits
    >>> out = hoeffding_limits(np.array([[3.0, 1.0]]), np.array([4.0]), np.array([0.4]), 1.0, 0.05)
    >>> out["bias"].round(3).tolist(), out["sampling"].round(3).tolist()
    ([[0.1, 0.1]], [[0.679, 0.679]])
    """
    rho = float(sum_error)
    if not 0.0 <= rho < 0.5:
        raise ValueError(f"sum_error must be in [0, 0.5) (a relative error bound of the sums), got {sum_error!r}.")
    xp = device_namespace(class_sums) or np
    kappa = xp.sum(class_sums, axis=1)
    vacuous = ~(kappa > 0)
    k_low = kappa / (1.0 + rho) if rho > 0 else kappa
    bias = lipschitz_bias(beta, dist_sum, k_low)
    sampling = hoeffding_sampling(k_low, sq_sum, delta_prime)
    if rho > 0:
        sampling = sampling + sum_error_margin(rho)
    proba = xp.clip(class_sums / xp.where(vacuous, 1.0, kappa)[:, None], 0.0, 1.0)
    lower, upper, epsilon, bias, sampling = plus_minus_limits(proba, bias, sampling, vacuous)
    shape = proba.shape
    return {"proba": proba, "lower": lower, "upper": upper, "epsilon": epsilon,
            "bias": xp.broadcast_to(bias[:, None], shape), "sampling": xp.broadcast_to(sampling[:, None], shape),
            "kappa": kappa, "vacuous": vacuous}


class HoeffdingForm(BoundForm):
    """``"hoeffding"``: ``p̂ ± (β·D/κ + √(ln(2/δ′)·S2/2)/κ)`` (module docstring).

    Examples
    --------
    >>> from nwbound.bounds import get_bound_form
    >>> get_bound_form("hoeffding")
    HoeffdingForm(name='hoeffding')
    """

    name = "hoeffding"

    def parts(self, spec: Any, kappa: np.ndarray, sq_sum: np.ndarray, dist_sum: np.ndarray | None,
              bandwidth: np.ndarray | float, tail_mass: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        return lipschitz_bias(spec.beta, dist_sum, kappa), hoeffding_sampling(kappa, sq_sum, spec.delta_prime)


_register_built_in(HoeffdingForm())
