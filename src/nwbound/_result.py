"""The result type shared by every classifier that reports bounds."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

__all__ = ["PredictionInterval"]


@dataclass(frozen=True)
class PredictionInterval:
    """Per-query class probabilities with frequentist error bounds.

    All ``(n, C)`` arrays have their columns in ``classes_`` order.

    Attributes
    ----------
    proba : ndarray of shape (n_queries, n_classes)
        Estimated class probabilities ``p̂_c(y)``.
    lower, upper : ndarray of shape (n_queries, n_classes)
        ``clip(p̂ ∓ ε, 0, 1)``.
    epsilon : ndarray of shape (n_queries, n_classes)
        Half-width ``ε = bias + sampling``, capped at 1.
    bias, sampling : ndarray of shape (n_queries, n_classes)
        The two parts of ``ε`` before the cap.
    kappa : ndarray of shape (n_queries,)
        Kernel mass ``κ_n(y) = Σ w_i K((‖y − y_i‖)/λ)``.
    n_eff : ndarray of shape (n_queries,)
        Effective number of samples ``κ² / Σ (w_i K_i)²`` (0 where κ = 0).
    vacuous : ndarray of bool, shape (n_queries,)
        True where no training mass reached the query (κ = 0): ``ε = 1``.
    bandwidth : ndarray of shape (n_queries,)
        Bandwidth used for each query (constant unless ``bandwidth="auto"``;
        the cell reach for the dyadic classifier).
    outside_box : ndarray of bool, shape (n_queries,), or None
        True where the query lies outside the bounding box of the training
        inputs (extrapolation; the bound still holds but is usually wide).
    """

    proba: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    epsilon: np.ndarray
    bias: np.ndarray
    sampling: np.ndarray
    kappa: np.ndarray
    n_eff: np.ndarray
    vacuous: np.ndarray
    bandwidth: np.ndarray
    outside_box: np.ndarray | None = None

    def __len__(self) -> int:
        return self.proba.shape[0]

    def as_dict(self) -> dict[str, np.ndarray]:
        """Return the arrays as a plain ``dict`` (e.g. for ``np.savez``)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_parts(
        cls,
        proba: np.ndarray,
        bias: np.ndarray,
        sampling: np.ndarray,
        kappa: np.ndarray,
        n_eff: np.ndarray,
        vacuous: np.ndarray,
        bandwidth: np.ndarray,
        outside_box: np.ndarray | None = None,
    ) -> "PredictionInterval":
        """Assemble an interval from ``p̂`` and the two parts of ``ε``.

        ``ε = min(1, bias + sampling)`` and is set to 1 where ``vacuous``.
        """
        epsilon = np.minimum(1.0, bias + sampling)
        epsilon[vacuous] = 1.0
        lower = np.clip(proba - epsilon, 0.0, 1.0)
        upper = np.clip(proba + epsilon, 0.0, 1.0)
        return cls(
            proba=proba,
            lower=lower,
            upper=upper,
            epsilon=epsilon,
            bias=bias,
            sampling=sampling,
            kappa=kappa,
            n_eff=n_eff,
            vacuous=vacuous,
            bandwidth=bandwidth,
            outside_box=outside_box,
        )
