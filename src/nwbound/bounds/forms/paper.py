"""The paper's form ``"paper"``: its corollary ``βλ + 2σ·α_n/κ`` with its ``κ ≤ 1`` branch.

On the ``1/c_k``-scaled kernel. Valid only with ``σ ≥ 1/2`` and ``c_k ≥ sup K``; ``σ = 1/4`` (the
paper's value) reproduces its numbers but is not valid (user guide, "Bounds"; checked in
``shared/notes/bounds.md``). The bias is the paper's ``β·λ`` (``β·r*·λ`` for a kernel truncated at
``r*``), or for an infinite-support kernel its lemma 3, ``β·λ* + β·Φ·ε_t`` with ``λ* = TAIL_RADIUS·λ``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._common import _safe_ratio
from ._registry import BoundForm, _register_built_in

__all__ = ["TAIL_RADIUS", "PaperForm", "paper_sampling", "radius_bias", "tail_bias"]

# λ* = TAIL_RADIUS·λ for the paper's infinite-support lemma (3 standard
# deviations hold 99.7 % of a Gaussian's mass, as the paper suggests).
TAIL_RADIUS = 3.0


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


class PaperForm(BoundForm):
    """``"paper"``: the paper's corollary (module docstring); no distance sum, the kernel mass beyond
    ``λ*`` where the kernel's support is infinite.

    Examples
    --------
    >>> import math
    >>> from nwbound.bounds import BoundSpec
    >>> BoundSpec(form="paper", beta=1.0, delta_prime=0.05, kernel_radius=math.inf).needs_tail_mass
    True
    """

    name = "paper"
    needs_distance_sum = False

    def needs_tail_mass(self, spec: Any) -> bool:
        return not math.isfinite(spec.kernel_radius)

    def check(self, kernel: Any, *, ck: float, localized: bool) -> tuple[str, str] | None:
        if ck < kernel.sup:
            raise ValueError(
                f"ck={ck:g} is below sup K = {kernel.sup:g}, so K/ck > 1 and the paper's bound does not "
                f"hold; use ck >= {kernel.sup:g} (the default ck=None uses sup K)."
            )
        return None

    def parts(self, spec: Any, kappa: np.ndarray, sq_sum: np.ndarray, dist_sum: np.ndarray | None,
              bandwidth: np.ndarray | float, tail_mass: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        if math.isfinite(spec.kernel_radius):
            bias = radius_bias(spec.beta, spec.kernel_radius * np.asarray(bandwidth, np.float64), kappa)
        else:
            if spec.diameter is None:
                raise ValueError("The paper's infinite-support bias needs the input diameter Φ.")
            bias = tail_bias(spec.beta, spec.tail_radius(bandwidth), spec.diameter, tail_mass, kappa)
        return bias, paper_sampling(np.asarray(kappa, np.float64) / spec.ck, spec.delta_prime, spec.sigma)


_register_built_in(PaperForm())
