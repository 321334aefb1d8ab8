"""Approximate k-nearest-neighbour search with HNSW graphs (hnswlib).

``NadarayaWatsonClassifier(n_neighbors=k, algorithm="hnsw")`` uses
:class:`HNSWIndex`. HNSW answers a query in roughly logarithmic time instead of
the linear scan of an exact index; the price is that an occasional true
neighbour is missed (recall below 1). ``ef`` trades speed for recall.

Two details keep the localized classifier's numbers close to the exact ones:

* hnswlib stores float32 vectors and its ``"l2"`` space returns *squared*
  float32 distances. With ``exact_distances=True`` (default) the distances of
  the returned neighbours are recomputed in float64 from the training rows, so
  wherever the neighbour set is right the kernel weights equal the exact
  index's, not a float32 approximation of them.
* Results are re-sorted (stable) by the returned distance, as the
  :class:`~nwbound.neighbors.NeighborIndex` contract requires.

Determinism: hnswlib draws each point's level from a generator seeded with
``random_seed``; a single-threaded build then inserts points in a fixed order
and gives the same graph every time. A multi-threaded build inserts points in
an order set by thread timing, so it is not reproducible. Hence, when
``random_state`` is set the graph is built with one thread. Queries are
independent of one another, so multi-threaded search is always reproducible.
"""

from __future__ import annotations

import numbers
import os
from typing import Any

import numpy as np

from ._index import NeighborIndex

__all__ = ["HNSWIndex", "hnsw_factory"]

# Queries per block when recomputing exact distances: bounds the (block, k, d)
# temporary of the gathered neighbour rows.
_DISTANCE_BLOCK = 2048


def _import_hnswlib():
    try:
        import hnswlib
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "algorithm='hnsw' needs the hnswlib package: pip install hnswlib "
            "(or use an exact algorithm such as 'kd_tree')."
        ) from exc
    return hnswlib


def _check_int(value: Any, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}.")
    return int(value)


def _seed_from(random_state: Any) -> int | None:
    """An int seed for hnswlib from None, an int, or a numpy generator."""
    if random_state is None:
        return None
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**31 - 1))
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral) or random_state < 0:
        raise ValueError(
            f"random_state must be None, a non-negative int or a numpy random generator, got {random_state!r}."
        )
    return int(random_state)


def _num_threads(n_jobs: int | None) -> int:
    """scikit-learn's convention: None → 1, -1 → all cores, -2 → all but one."""
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0:
        raise ValueError(f"n_jobs must be None, a positive int or a negative int (-1: all cores), got {n_jobs!r}.")
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + int(n_jobs))
    return int(n_jobs)


class HNSWIndex(NeighborIndex):
    """Approximate Euclidean k-NN search on an HNSW graph (hnswlib).

    Parameters
    ----------
    M : int, default=32
        Graph degree (links per node and layer). Larger: higher recall at a
        given ``ef``, more memory and a slower build.
    ef_construction : int, default=200
        Candidate-list size while building. Larger: better graph, slower build.
    ef : int, default=128
        Candidate-list size while searching; raised to ``n_neighbors`` when
        smaller (hnswlib needs ``ef >= k``). Larger: higher recall, slower
        queries. With ``M=32`` the default reaches recall@10 >= 0.999 against
        an exact index on the MIT-BIH beats (87 595 × 100, 0.9992) and on the
        synthetic stand-in of ``benchmarks/bench_ann.py``; ``M=16`` needed
        ``ef`` ≈ 192 for the same.
    random_state : int, numpy generator or None, default=None
        Seed of hnswlib's level generator (``random_seed``). When set, the
        graph is built with one thread so that it is reproducible.
    n_jobs : int or None, default=None
        Threads for searching (and for building when ``random_state`` is
        None). None: 1, -1: all cores.
    exact_distances : bool, default=True
        Recompute the returned neighbours' distances in float64 from the
        training rows (hnswlib computes them in float32). Keeps a reference to
        the training array.

    Attributes
    ----------
    index_ : hnswlib.Index
    n_samples_fit_ : int
    n_features_in_ : int
    """

    def __init__(
        self,
        M: int = 32,
        ef_construction: int = 200,
        ef: int = 128,
        random_state: Any = None,
        n_jobs: int | None = None,
        exact_distances: bool = True,
    ):
        self.M = M
        self.ef_construction = ef_construction
        self.ef = ef
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.exact_distances = exact_distances

    def fit(self, X: np.ndarray) -> "HNSWIndex":
        """Build the graph over the rows of ``X`` (shape ``(n_samples, n_features)``)."""
        hnswlib = _import_hnswlib()
        M = _check_int(self.M, "M", 2)
        ef_construction = _check_int(self.ef_construction, "ef_construction", 1)
        _check_int(self.ef, "ef", 1)
        threads = _num_threads(self.n_jobs)
        seed = _seed_from(self.random_state)
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"X must be a non-empty 2-D array (n_samples, n_features), got shape {X.shape}.")
        if not np.all(np.isfinite(X)):
            raise ValueError("X contains NaN or infinity; HNSW needs finite coordinates.")
        n, d = X.shape
        index = hnswlib.Index(space="l2", dim=d)
        # hnswlib's default seed is 100; reuse it when the caller asked for none.
        index.init_index(max_elements=n, M=M, ef_construction=ef_construction, random_seed=100 if seed is None else seed)
        build_threads = 1 if seed is not None else threads
        index.add_items(np.ascontiguousarray(X, dtype=np.float32), np.arange(n), num_threads=build_threads)
        self.index_ = index
        self._X = X if self.exact_distances else None
        self.n_samples_fit_ = n
        self.n_features_in_ = d
        return self

    def kneighbors(self, X: np.ndarray, n_neighbors: int) -> tuple[np.ndarray, np.ndarray]:
        """Approximate ``n_neighbors`` nearest training rows of each row of ``X``.

        Returns
        -------
        distances : ndarray of shape (n_queries, n_neighbors), float64
            Euclidean distances, non-decreasing along each row.
        indices : ndarray of shape (n_queries, n_neighbors), intp
            Row numbers in the training array.
        """
        if not hasattr(self, "index_"):
            raise ValueError("This HNSWIndex is not fitted yet; call fit(X) first.")
        k = _check_int(n_neighbors, "n_neighbors", 1)
        if k > self.n_samples_fit_:
            raise ValueError(f"n_neighbors={k} exceeds the {self.n_samples_fit_} indexed points.")
        Xq = np.asarray(X)
        if Xq.ndim != 2 or Xq.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X must have shape (n_queries, {self.n_features_in_}), got {Xq.shape}."
            )
        if Xq.shape[0] == 0:
            return np.empty((0, k)), np.empty((0, k), dtype=np.intp)
        # hnswlib needs ef >= k to return k results.
        self.index_.set_ef(max(int(self.ef), k))
        labels, sq = self.index_.knn_query(
            np.ascontiguousarray(Xq, dtype=np.float32), k=k, num_threads=_num_threads(self.n_jobs)
        )
        idx = labels.astype(np.intp)
        if self._X is not None:
            dist = self._exact_distances(Xq, idx)
        else:
            dist = np.sqrt(np.maximum(sq.astype(np.float64), 0.0))
        order = np.argsort(dist, axis=1, kind="stable")
        return np.take_along_axis(dist, order, axis=1), np.take_along_axis(idx, order, axis=1)

    def _exact_distances(self, Xq: np.ndarray, idx: np.ndarray) -> np.ndarray:
        out = np.empty(idx.shape, dtype=np.float64)
        for start in range(0, idx.shape[0], _DISTANCE_BLOCK):
            rows = slice(start, start + _DISTANCE_BLOCK)
            diff = self._X[idx[rows]].astype(np.float64, copy=False) - Xq[rows, None, :].astype(np.float64, copy=False)
            out[rows] = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
        return out

    # hnswlib indexes pickle natively (since 0.5); the explicit state keeps the
    # pickle format ours and restores the search threads and ef.
    def __getstate__(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "index_" in state:
            self.index_.set_ef(int(self.ef))

    def __repr__(self) -> str:
        return (
            f"HNSWIndex(M={self.M!r}, ef_construction={self.ef_construction!r}, ef={self.ef!r}, "
            f"random_state={self.random_state!r}, n_jobs={self.n_jobs!r})"
        )


def hnsw_factory(*, n_jobs: int | None = None, random_state: Any = None, **params: Any) -> HNSWIndex:
    """Factory registered as ``algorithm="hnsw"``: extra ``params`` go to :class:`HNSWIndex`."""
    allowed = {"M", "ef_construction", "ef", "exact_distances"}
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ValueError(
            f"Unknown option(s) {', '.join(map(repr, unknown))} for algorithm='hnsw'; "
            f"it accepts {', '.join(sorted(allowed))}."
        )
    return HNSWIndex(n_jobs=n_jobs, random_state=random_state, **params)
