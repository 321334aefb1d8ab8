"""A small pluggable interface for k-nearest-neighbour search.

The localized classifier only needs ``fit(X)`` and ``kneighbors(X, k)``
returning Euclidean distances sorted in increasing order. Exact indexes wrap
scikit-learn's :class:`~sklearn.neighbors.NearestNeighbors`; other backends
(e.g. an approximate HNSW index) register themselves with
:func:`~nwbound.neighbors.register_index` (in ``_index``, which imports this module
and ``_hnsw``; neither of them imports it back).

The tie rule (:data:`TIE_RULE`): the k neighbours of a query are the k training
rows with the smallest distance computed directly in float64
(:func:`nwbound._numerics.direct_distances`), and among rows at equal distance
the lower training-row number wins; they are returned in that order (distance,
then row). So every exact index (brute force, kd-tree, ball tree) and the
sharded Dask classifier (whose merges use the same order) pick the same rows
and sum them in the same order, whatever their search does with ties. The
rule depends on the inputs only (never on the labels), so the bounds stay valid.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from sklearn.neighbors import NearestNeighbors

from .._memory import block_rows
from .._numerics import direct_distance_error, direct_distances

__all__ = ["NeighborIndex", "ExactIndex", "TIE_RULE", "tie_ordered"]

TIE_RULE = "lower training row first among equal directly computed distances"
"""The one tie rule of every index: the k nearest by direct float64 distance, ties to the lower row.

Why this one: it needs no extra search (including every row tied with the k-th
instead would make the number of neighbours depend on the data and break the
fixed-k statistics), it is a total order, so any exact search and any split of
the training set into shards agree, and it looks at the inputs only.
"""


def tie_ordered(dist: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort each row's neighbours by distance, then by training row (:data:`TIE_RULE`).

    Parameters
    ----------
    dist : ndarray of shape (n_queries, m)
        Distances.
    idx : int ndarray of shape (n_queries, m)
        Training rows.

    Returns
    -------
    dist, idx : ndarrays of shape (n_queries, m)
        Both reordered.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.neighbors import tie_ordered
    >>> d, i = tie_ordered(np.array([[1.0, 0.5, 1.0]]), np.array([[7, 9, 3]]))
    >>> d.tolist(), i.tolist()
    ([[0.5, 1.0, 1.0]], [[9, 3, 7]])
    """
    order = np.lexsort((idx, dist), axis=-1)
    return np.take_along_axis(dist, order, axis=-1), np.take_along_axis(idx, order, axis=-1)


class NeighborIndex(ABC):
    """k-nearest-neighbour search over a fixed training set (Euclidean metric).

    Subclasses implement :meth:`fit` and :meth:`kneighbors`; register them by
    name with :func:`~nwbound.neighbors.register_index` to use them as a classifier's ``algorithm``.
    An exact index should follow :data:`TIE_RULE` (e.g. with :func:`tie_ordered`
    on enough candidates), so that its results equal the built-in indexes'.

    Examples
    --------
    A brute-force index on NumPy alone:

    >>> import numpy as np
    >>> from nwbound.neighbors import NeighborIndex
    >>> class BruteIndex(NeighborIndex):
    ...     def fit(self, X):
    ...         self.X_ = np.asarray(X, dtype=float)
    ...         return self
    ...     def kneighbors(self, X, n_neighbors):
    ...         d = np.linalg.norm(np.asarray(X)[:, None, :] - self.X_[None, :, :], axis=2)
    ...         idx = np.argsort(d, axis=1, kind="stable")[:, :n_neighbors]
    ...         return np.take_along_axis(d, idx, axis=1), idx
    >>> dist, idx = BruteIndex().fit([[0.0], [1.0], [3.0]]).kneighbors(np.array([[2.8]]), 2)
    >>> idx.tolist(), np.round(dist, 3).tolist()
    ([[2, 1]], [[0.2, 1.8]])
    """

    @abstractmethod
    def fit(self, X: np.ndarray) -> "NeighborIndex":
        """Index the rows of ``X``.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)

        Returns
        -------
        self

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.neighbors import ExactIndex
        >>> index = ExactIndex().fit(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]]))
        >>> dist, idx = index.kneighbors(np.array([[0.9, 0.1]]), 2)
        >>> idx.tolist(), np.round(dist, 3).tolist()
        ([[1, 0]], [[0.141, 0.906]])
        """

    @abstractmethod
    def kneighbors(self, X: np.ndarray, n_neighbors: int) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(distances, indices)``, each of shape ``(len(X), n_neighbors)``,
        distances Euclidean and non-decreasing along each row.

        Parameters
        ----------
        X : ndarray of shape (n_queries, n_features)
        n_neighbors : int
            At most the number of indexed rows.

        Returns
        -------
        distances : ndarray of shape (n_queries, n_neighbors), float64
        indices : ndarray of shape (n_queries, n_neighbors)
            Rows of the indexed ``X``.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.neighbors import ExactIndex
        >>> index = ExactIndex().fit(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]]))
        >>> dist, idx = index.kneighbors(np.array([[0.9, 0.1]]), 2)
        >>> idx.tolist(), np.round(dist, 3).tolist()
        ([[1, 0]], [[0.141, 0.906]])
        """


class ExactIndex(NeighborIndex):
    """Exact search through scikit-learn (``brute``, ``kd_tree``, ``ball_tree`` or ``auto``).

    Whatever the algorithm, the neighbours follow :data:`TIE_RULE`: the search
    asks for k + 1 rows; where the (k + 1)-th could tie with (or, through the
    search's rounding, beat) the k-th, every row within the k-th distance plus
    a rounding margin is fetched with a radius search, and the k smallest by
    (direct distance, row) are kept. Distances are recomputed directly in
    float64 (:func:`nwbound._numerics.direct_distances`). Without ties this
    costs one extra neighbour; a query tied with many duplicated rows fetches
    all of them (at worst a brute-force pass for that query).

    Parameters
    ----------
    algorithm : {"auto", "brute", "kd_tree", "ball_tree"}, default="auto"
        scikit-learn's :class:`~sklearn.neighbors.NearestNeighbors` algorithm.
    n_jobs : int or None, default=None
        Threads for the search (scikit-learn's convention).
    leaf_size : int, default=30
        Leaf size of the trees.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.neighbors import ExactIndex
    >>> dist, idx = ExactIndex("kd_tree").fit(np.array([[0.0], [1.0], [3.0]])).kneighbors(np.array([[0.9]]), 2)
    >>> idx.tolist(), np.round(dist, 3).tolist()
    ([[1, 0]], [[0.1, 0.9]])
    """

    def __init__(self, algorithm: str = "auto", n_jobs: int | None = None, leaf_size: int = 30):
        self.algorithm = algorithm
        self.n_jobs = n_jobs
        self.leaf_size = leaf_size

    def fit(self, X: np.ndarray) -> "ExactIndex":
        """Index the rows of ``X`` (shape ``(n_samples, n_features)``).

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)

        Returns
        -------
        self

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.neighbors import ExactIndex
        >>> index = ExactIndex().fit(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]]))
        >>> dist, idx = index.kneighbors(np.array([[0.9, 0.1]]), 2)
        >>> idx.tolist(), np.round(dist, 3).tolist()
        ([[1, 0]], [[0.141, 0.906]])
        """
        self.nn_ = NearestNeighbors(algorithm=self.algorithm, leaf_size=self.leaf_size, n_jobs=self.n_jobs)
        self.nn_.fit(X)
        self.X_ = np.asarray(X)
        # Largest squared row norm: sizes the search's rounding error (expanded formula).
        self.max_sq_norm_ = float(np.max(np.einsum("ij,ij->i", self.X_, self.X_, dtype=np.float64), initial=0.0))
        return self

    def kneighbors(self, X: np.ndarray, n_neighbors: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact ``(distances, indices)`` of the ``n_neighbors`` nearest rows, distances ascending.

        Parameters
        ----------
        X : ndarray of shape (n_queries, n_features)
        n_neighbors : int

        Returns
        -------
        distances : ndarray of shape (n_queries, n_neighbors), float64
        indices : ndarray of shape (n_queries, n_neighbors)

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.neighbors import ExactIndex
        >>> index = ExactIndex().fit(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]]))
        >>> dist, idx = index.kneighbors(np.array([[0.9, 0.1]]), 2)
        >>> idx.tolist(), np.round(dist, 3).tolist()
        ([[1, 0]], [[0.141, 0.906]])
        """
        X = np.asarray(X)
        k = int(n_neighbors)
        m = min(k + 1, self.X_.shape[0])
        found, idx = self.nn_.kneighbors(X, n_neighbors=m, return_distance=True)
        dist, idx = tie_ordered(direct_distances(X, self.X_, idx), idx)
        if m > k and X.shape[0]:
            # Rows the search did not return lie at search distance ≥ its last one;
            # their direct distance is at least that minus the rounding of both.
            beyond = np.sqrt(np.maximum(found[:, -1] ** 2 - self._search_error(X), 0.0))
            beyond *= 1.0 - direct_distance_error(X.shape[1])
            unsure = np.flatnonzero(beyond <= dist[:, k - 1])
            if unsure.size:
                dist, idx = dist[:, :k].copy(), idx[:, :k].copy()
                dist[unsure], idx[unsure] = self._within(X[unsure], dist[unsure, k - 1], idx[unsure, :k], k)
        return dist[:, :k], idx[:, :k]

    def _search_error(self, X: np.ndarray) -> np.ndarray:
        """Bound on the error of scikit-learn's squared distances for each query (the expanded
        formula ``‖q‖² − 2 q·x + ‖x‖²`` of brute force is the worst; the trees' direct sums are within it)."""
        sq = np.einsum("ij,ij->i", X, X, dtype=np.float64)
        # The unit roundoff of the coarser input: float32 data may be searched in float32.
        eps = np.finfo(np.result_type(self.X_.dtype, X.dtype, np.float32)).eps
        return 8.0 * (X.shape[1] + 4) * eps * (sq + self.max_sq_norm_)

    def _within(self, X: np.ndarray, kth: np.ndarray, known: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k rows of :data:`TIE_RULE` for queries whose k-th neighbour may be tied: every row whose
        direct distance can be ≤ ``kth`` (a radius search with the rounding margin), then the k smallest
        by (distance, row). Queries go in blocks of similar radius, sized by ``working_memory``."""
        rel = direct_distance_error(X.shape[1])
        radius = np.sqrt((kth / (1.0 - rel)) ** 2 + self._search_error(X)) * (1.0 + 1e-12)
        out_d, out_i = np.empty((X.shape[0], k)), np.empty((X.shape[0], k), dtype=known.dtype)
        by_radius = np.argsort(radius, kind="stable")
        # A block holds at most every training row once per query (its coordinates, distance and ids).
        step = block_rows(8 * (self.X_.shape[1] + 6) * self.X_.shape[0], X.shape[0])
        for start in range(0, by_radius.size, step):
            rows = by_radius[start:start + step]
            found = self.nn_.radius_neighbors(X[rows], radius=float(radius[rows].max()), return_distance=False)
            counts = np.array([f.size for f in found]) + k
            cand = np.concatenate([*found, known[rows].ravel()]).astype(known.dtype, copy=False)
            query = np.concatenate([np.repeat(np.arange(rows.size), counts - k), np.repeat(np.arange(rows.size), k)])
            d = direct_distances(X[rows][query], self.X_, cand[:, None])[:, 0]
            order = np.lexsort((cand, d, query))
            query, cand, d = query[order], cand[order], d[order]
            keep = np.ones(query.size, dtype=bool)  # the known rows come twice: keep one copy
            keep[1:] = (query[1:] != query[:-1]) | (cand[1:] != cand[:-1])
            query, cand, d = query[keep], cand[keep], d[keep]
            first = np.searchsorted(query, np.arange(rows.size))[:, None] + np.arange(k)
            out_d[rows], out_i[rows] = d[first], cand[first]
        return out_d, out_i
