"""A small pluggable interface for k-nearest-neighbour search.

The localized classifier only needs ``fit(X)`` and ``kneighbors(X, k)``
returning Euclidean distances sorted in increasing order. Exact indexes wrap
scikit-learn's :class:`~sklearn.neighbors.NearestNeighbors`; other backends
(e.g. an approximate HNSW index) register themselves with :func:`register_index`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable

import numpy as np
from sklearn.neighbors import NearestNeighbors

__all__ = ["NeighborIndex", "ExactIndex", "make_index", "register_index", "available_indexes"]


class NeighborIndex(ABC):
    """k-nearest-neighbour search over a fixed training set (Euclidean metric)."""

    @abstractmethod
    def fit(self, X: np.ndarray) -> "NeighborIndex":
        """Index the rows of ``X``."""

    @abstractmethod
    def kneighbors(self, X: np.ndarray, n_neighbors: int) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(distances, indices)``, each of shape ``(len(X), n_neighbors)``,
        distances Euclidean and non-decreasing along each row."""


class ExactIndex(NeighborIndex):
    """Exact search through scikit-learn (``brute``, ``kd_tree``, ``ball_tree`` or ``auto``)."""

    def __init__(self, algorithm: str = "auto", n_jobs: int | None = None, leaf_size: int = 30):
        self.algorithm = algorithm
        self.n_jobs = n_jobs
        self.leaf_size = leaf_size

    def fit(self, X: np.ndarray) -> "ExactIndex":
        self.nn_ = NearestNeighbors(algorithm=self.algorithm, leaf_size=self.leaf_size, n_jobs=self.n_jobs)
        self.nn_.fit(X)
        return self

    def kneighbors(self, X: np.ndarray, n_neighbors: int) -> tuple[np.ndarray, np.ndarray]:
        dist, idx = self.nn_.kneighbors(X, n_neighbors=n_neighbors, return_distance=True)
        return np.asarray(dist, dtype=np.float64), idx


IndexFactory = Callable[..., NeighborIndex]


def _exact_factory(algorithm: str) -> IndexFactory:
    def factory(*, n_jobs: int | None = None, random_state: Any = None, leaf_size: int = 30) -> ExactIndex:
        # Exact search is deterministic: random_state is accepted and unused.
        return ExactIndex(algorithm=algorithm, n_jobs=n_jobs, leaf_size=leaf_size)

    return factory


_FACTORIES: dict[str, IndexFactory] = {
    name: _exact_factory(name) for name in ("auto", "brute", "kd_tree", "ball_tree")
}


def register_index(name: str, factory: IndexFactory) -> None:
    """Make ``algorithm=name`` build ``factory(n_jobs=..., random_state=..., **index_params)``."""
    _FACTORIES[name] = factory


def available_indexes() -> tuple[str, ...]:
    """Names accepted as ``algorithm``."""
    return tuple(_FACTORIES)


def make_index(algorithm: str, **options: Any) -> NeighborIndex:
    """Build an unfitted index for ``algorithm`` (see :func:`available_indexes`)."""
    if not isinstance(algorithm, str) or algorithm not in _FACTORIES:
        raise ValueError(
            f"algorithm must be one of {', '.join(repr(a) for a in _FACTORIES)}, got {algorithm!r}."
        )
    try:
        return _FACTORIES[algorithm](**options)
    except TypeError as exc:
        raise ValueError(f"Invalid index_params for algorithm={algorithm!r}: {exc}") from exc
