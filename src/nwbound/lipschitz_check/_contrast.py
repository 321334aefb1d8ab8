"""The contrast tests of the held-out check (:mod:`nwbound.lipschitz_check`, step 4).

Strata from the inputs and ``p̂`` only (rows of highest and lowest ``p̂_c``, matched at least
total distance), and each stratum's count against what ``L`` allows across the distances.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

from ._tails import _mean_bounded_sf

CONTRAST_FRACTIONS = (0.1, 0.3)
"""Shares ``q`` of the held-out rows in each end of a contrast test (``q·n`` rows of highest and of
lowest ``p̂_c``)."""

CONTRAST_MAX_PAIRS = 400
"""Most pairs in one contrast test (the matching is ``O(k³)``); beyond it the most extreme rows are kept."""


_DISTANCE_ROUNDING = 1.0 + 1e-9
"""Relative allowance for the rounding of the matched distances (``cdist`` errs by a few ulp per
coordinate), so that ``μ₀`` is never below its exact value."""



def _space_coordinates(model: Any, X: Any, mapped: np.ndarray | None = None) -> np.ndarray | None:
    """The held-out rows in the coordinates the model computes Euclidean distances in, or None
    where there is no single such space (a cross-fitted model: two maps). ``mapped``: the space's
    ``transform(X)`` where the caller has it."""
    if getattr(model, "cross_fit_models_", None) is not None:
        return None
    space = getattr(model, "metric_", None)
    if space is None and model.get_params().get("metric") is not None:
        return None
    if space is None:
        Z = np.asarray(X, dtype=np.float64)
    else:
        Z = space.transform(X) if mapped is None else mapped
    Z = np.asarray(Z, dtype=np.float64)
    return Z.reshape(Z.shape[0], -1)


def _contrast_strata(Z: np.ndarray, proba: np.ndarray, classes_tested: Sequence[int]) -> list[dict[str, Any]]:
    """The contrast tests' strata, from the inputs and ``p̂`` (so from ``N``), never ``H``'s labels.

    For each class ``c`` and share ``q``: ``A`` the ``k`` rows of highest ``p̂_c``, ``B`` the ``k``
    of lowest (``k = min(⌊q·n⌋, CONTRAST_MAX_PAIRS)``, disjoint), matched one to one so that the sum
    of distances is least (an optimal assignment). Each stratum holds the class, the share, the rows
    of ``A`` and their partners in ``B``, and the matched distances.
    """
    n = Z.shape[0]
    strata = []
    for c in classes_tested:
        order = np.argsort(-proba[:, c], kind="stable")
        matched: dict[int, tuple] = {}  # by k: shares capped at CONTRAST_MAX_PAIRS have the same ends, one matching
        for q in CONTRAST_FRACTIONS:
            k = min(int(math.floor(q * n)), CONTRAST_MAX_PAIRS, n // 2)
            if k < 1:
                continue
            if k not in matched:
                high, low = order[:k], order[n - k:]
                dist = cdist(Z[high], Z[low])
                rows, cols = linear_sum_assignment(dist)
                matched[k] = (high[rows], low[cols], dist[rows, cols])
            high, low, distance = matched[k]
            strata.append({"class": c, "share": q, "high": high, "low": low, "distance": distance})
    return strata


def _contrast_tests(strata: list[dict[str, Any]], labels: np.ndarray, lipschitz: float) -> tuple[
        np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""``(n_terms, mean_bound, observed, smallest_p)`` of each contrast test at ``L``.

    ``S = Σ_{j∈A} 1[y_j = c] + Σ_{k∈B} 1[y_k ≠ c]`` has mean ``|A| + Σ_pairs (p_c(x_j) − p_c(x_k))``
    ``≤ |A| + Σ_pairs min(1, L·d(x_j, x_k))`` when ``p_c`` is ``L``-Lipschitz.
    """
    n_terms = np.array([2 * s["high"].size for s in strata], dtype=np.float64)
    mean_bound = np.array(
        [s["high"].size + np.minimum(1.0, lipschitz * s["distance"] * _DISTANCE_ROUNDING).sum() for s in strata],
        dtype=np.float64,
    )
    observed = np.array(
        [np.count_nonzero(labels[s["high"]] == s["class"]) + np.count_nonzero(labels[s["low"]] != s["class"])
         for s in strata], dtype=np.float64,
    )
    smallest = _mean_bounded_sf(n_terms, mean_bound, n_terms)
    return n_terms, mean_bound, observed, smallest
