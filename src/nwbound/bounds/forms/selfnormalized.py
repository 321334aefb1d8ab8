"""The anytime self-normalised (Abbasi-Yadkori) form ``"selfnormalized"``.

``ε = β·D/κ + σ·sup K·√(2(1+V)·ln(√(1+V)/δ′))/κ`` with ``V = S2/sup K²``: the self-normalised
martingale bound for the σ-sub-Gaussian label noise, the bias as in ``"hoeffding"`` (checked in
``shared/notes/bounds.md``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._common import _safe_ratio, lipschitz_bias
from ._registry import BoundForm, _register_built_in

__all__ = ["SelfNormalizedForm", "selfnormalized_sampling"]


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


class SelfNormalizedForm(BoundForm):
    """``"selfnormalized"`` (module docstring).

    Examples
    --------
    >>> from nwbound.bounds import get_bound_form
    >>> get_bound_form("selfnormalized").needs_distance_sum
    True
    """

    name = "selfnormalized"

    def parts(self, spec: Any, kappa: np.ndarray, sq_sum: np.ndarray, dist_sum: np.ndarray | None,
              bandwidth: np.ndarray | float, tail_mass: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        return (lipschitz_bias(spec.beta, dist_sum, kappa),
                selfnormalized_sampling(kappa, sq_sum, spec.delta_prime, spec.sigma, spec.kernel_sup))


_register_built_in(SelfNormalizedForm())
