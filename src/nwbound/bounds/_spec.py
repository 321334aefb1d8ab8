"""One object that turns kernel sums into the two parts of ε for a chosen bound form."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._forms import (
    hoeffding_sampling,
    lipschitz_bias,
    paper_sampling,
    radius_bias,
    selfnormalized_sampling,
    tail_bias,
)

__all__ = ["BoundSpec", "TAIL_RADIUS"]

# λ* = TAIL_RADIUS·λ for the paper's infinite-support lemma (3 standard
# deviations hold 99.7 % of a Gaussian's mass, as the paper suggests).
TAIL_RADIUS = 3.0


@dataclass(frozen=True)
class BoundSpec:
    """Everything a bound form needs besides the per-query kernel sums.

    Parameters
    ----------
    form : {"hoeffding", "paper", "selfnormalized"}
    beta : float
        ``L`` (Lipschitz constant, in the units of the distances) or ``1/γ``.
    delta_prime : float
        Per-class failure probability (see :func:`effective_delta`).
    sigma : float
        Sub-Gaussian constant for the paper and self-normalised forms.
    ck : float
        Kernel normaliser ``c_k`` of the paper form (``K_λ = K/c_k``).
    kernel_sup : float
        ``sup K``.
    kernel_radius : float
        Support radius of the kernel in units of λ (``inf`` if unbounded).
    diameter : float, ndarray or None
        Input-space diameter Φ (paper form with an infinite-support kernel);
        may be per query, shaped to broadcast against the kernel sums.
    """

    form: str
    beta: float
    delta_prime: float
    sigma: float = 0.5
    ck: float = 1.0
    kernel_sup: float = 1.0
    kernel_radius: float = 1.0
    diameter: float | np.ndarray | None = None

    @property
    def needs_distance_sum(self) -> bool:
        """The data-dependent bias ``β·D/κ`` needs ``D = Σ w K ‖y − y_i‖``."""
        return self.form != "paper"

    @property
    def needs_tail_mass(self) -> bool:
        """The paper's infinite-support lemma needs the kernel mass beyond λ*."""
        return self.form == "paper" and not math.isfinite(self.kernel_radius)

    def tail_radius(self, bandwidth: np.ndarray | float) -> np.ndarray | float:
        """``λ*`` for the infinite-support lemma."""
        return TAIL_RADIUS * np.asarray(bandwidth, dtype=np.float64)

    def parts(
        self,
        kappa: np.ndarray,
        sq_sum: np.ndarray,
        dist_sum: np.ndarray | None,
        bandwidth: np.ndarray | float,
        tail_mass: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(bias, sampling)``, each shaped like ``kappa`` (inf where κ = 0)."""
        if self.form == "hoeffding":
            return (
                lipschitz_bias(self.beta, dist_sum, kappa),
                hoeffding_sampling(kappa, sq_sum, self.delta_prime),
            )
        if self.form == "selfnormalized":
            return (
                lipschitz_bias(self.beta, dist_sum, kappa),
                selfnormalized_sampling(kappa, sq_sum, self.delta_prime, self.sigma, self.kernel_sup),
            )
        if self.form == "paper":
            if math.isfinite(self.kernel_radius):
                bias = radius_bias(self.beta, self.kernel_radius * np.asarray(bandwidth, np.float64), kappa)
            else:
                if self.diameter is None:
                    raise ValueError("The paper's infinite-support bias needs the input diameter Φ.")
                bias = tail_bias(
                    self.beta, self.tail_radius(bandwidth), self.diameter, tail_mass, kappa
                )
            return bias, paper_sampling(np.asarray(kappa, np.float64) / self.ck, self.delta_prime, self.sigma)
        raise ValueError(f"Unknown bound form {self.form!r}.")

    def epsilon(self, *args, **kwargs) -> np.ndarray:
        """``bias + sampling`` (uncapped; inf where κ = 0)."""
        bias, sampling = self.parts(*args, **kwargs)
        return bias + sampling
