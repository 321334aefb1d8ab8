"""The paper's naive regular NWC, one query at a time (benchmark baseline only).

A faithful re-statement of the per-query loop the paper times ("naive
implementation", O(n) per query): for each query, the distances to all
training points, the Epanechnikov weights, κ, the per-class sums and the
paper-form bound. Vectorised over the training points (as numpy code of the
paper's kind is), looped over queries and classes. Not used by the library.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["paper_predict"]


def paper_predict(
    X_train: np.ndarray,
    y_train: np.ndarray,
    X_query: np.ndarray,
    *,
    bandwidth: float,
    lipschitz: float,
    delta: float = 0.05,
    sigma: float = 0.25,
    n_classes: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Class probabilities and the paper's ε for each query, by the per-query loop.

    Parameters
    ----------
    X_train : ndarray of shape (n, d)
    y_train : ndarray of shape (n,)
        Integer labels 0..C-1.
    X_query : ndarray of shape (m, d)
    bandwidth, lipschitz, delta, sigma : float
        λ, L, δ and the paper's σ (c_k = 1 for the Epanechnikov kernel).
    n_classes : int or None
        C (None: ``y_train.max() + 1``).

    Returns
    -------
    proba : ndarray of shape (m, C)
        NaN rows where κ = 0 (the paper has no rule for them).
    epsilon : ndarray of shape (m,)
    """
    C = int(y_train.max()) + 1 if n_classes is None else n_classes
    proba = np.full((X_query.shape[0], C), np.nan)
    epsilon = np.full(X_query.shape[0], np.inf)
    for j, y in enumerate(X_query):
        dist = np.linalg.norm(X_train - y, axis=1)
        u = dist / bandwidth
        k = np.where(u <= 1.0, 1.0 - u * u, 0.0)  # Epanechnikov, sup K = 1
        kappa = k.sum()
        if kappa <= 0:
            continue
        for c in range(C):
            proba[j, c] = k[y_train == c].sum() / kappa
        alpha = math.sqrt(kappa * math.log(math.sqrt(1 + kappa) / delta)) if kappa > 1 else math.sqrt(
            math.log(math.sqrt(2) / delta)
        )
        epsilon[j] = lipschitz * bandwidth + 2 * sigma * alpha / kappa
    return proba, epsilon
