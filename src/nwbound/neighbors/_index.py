"""A small pluggable interface for k-nearest-neighbour search.

The localized classifier only needs ``fit(X)`` and ``kneighbors(X, k)``
returning Euclidean distances sorted in increasing order. Exact indexes wrap
scikit-learn's :class:`~sklearn.neighbors.NearestNeighbors`; other backends
(e.g. an approximate HNSW index) register themselves with :func:`register_index`.

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

import importlib.util
from abc import ABC, abstractmethod
from typing import Any, Callable, NamedTuple

import numpy as np
from sklearn.neighbors import NearestNeighbors

from .._memory import block_rows
from .._numerics import direct_distance_error, direct_distances

__all__ = ["AUTO_HNSW_RULE", "AutoIndex", "AutoRule", "NeighborIndex", "ExactIndex", "TIE_RULE", "make_index",
           "register_index", "available_indexes", "tie_ordered"]

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


class AutoRule(NamedTuple):
    """When ``algorithm="auto"`` uses the approximate HNSW index instead of exact search.

    Parameters
    ----------
    min_samples : int
        Smallest training-set size for which HNSW is chosen.
    min_features : int
        Smallest number of features for which HNSW is chosen.

    Examples
    --------
    >>> from nwbound.neighbors import AUTO_HNSW_RULE, AutoRule
    >>> AUTO_HNSW_RULE
    AutoRule(min_samples=100000, min_features=16)
    >>> AutoRule(min_samples=1000, min_features=8).min_features
    8
    """

    min_samples: int
    """Training rows from which the HNSW build (included) is repaid by faster queries."""
    min_features: int
    """Below this, scikit-learn's trees answer exactly and faster than HNSW at any size."""


#: ``algorithm="auto"`` builds an :class:`~nwbound.neighbors.HNSWIndex` when hnswlib is
#: installed, the training set has at least ``min_samples`` rows and at least
#: ``min_features`` features; otherwise it searches exactly (scikit-learn's "auto":
#: kd-tree / ball-tree in low dimension, brute force above 15 features).
#:
#: Measured with ``benchmarks/bench_ann.py --crossover --threads 1`` (exact fit + queries
#: against HNSW build, ef choice for recall 0.99 and queries; k = 10; ECG-like data; CPU
#: seconds of one thread on a 2-core AMD EPYC): with queries = n/4 HNSW wins from
#: n ≈ 86 000–99 000 at 100 features (74 000–82 000 with 2 threads) and n ≈ 81 000 at 20
#: (the crossover hardly moves with the dimension: both costs grow with it); with
#: queries = n from n ≈ 15 000. At 4 features the kd-tree stays 6–20× faster up to
#: n = 80 000 with no trend towards HNSW. The rule takes the queries = n/4 case, rounded
#: up, so that one fit plus one predict of n/4 queries does not get slower than exact search.
AUTO_HNSW_RULE = AutoRule(min_samples=100_000, min_features=16)


class AutoIndex(NeighborIndex):
    """``algorithm="auto"``: exact search, or HNSW for large high-dimensional data.

    The choice follows :data:`AUTO_HNSW_RULE` and is made in :meth:`fit` from the
    shape of the training set; ``algorithm_`` records it. Above the rule the
    neighbours are approximate (recall@k ≈ ``recall``, default 0.99): the bound
    stays valid, since the neighbours are chosen from the inputs alone, but a few
    predictions can differ from exact search; ``algorithm="brute"`` (or
    ``"kd_tree"``) is exact at any size. With ``random_state=None`` the graph is
    built with ``n_jobs`` threads and is not reproducible (a model rebuilt from a
    file may then differ on those few queries); set ``random_state`` for a
    reproducible, single-threaded build.

    Parameters
    ----------
    n_jobs : int or None, default=None
        Threads for building and searching.
    random_state : int, numpy generator or None, default=None
        Passed to :class:`~nwbound.neighbors.HNSWIndex` when it is chosen.
    leaf_size : int, default=30
        Leaf size of scikit-learn's trees when exact search is chosen.
    **hnsw_params
        Options of :class:`~nwbound.neighbors.HNSWIndex` (``recall``, ``M``,
        …), used when it is chosen.

    Attributes
    ----------
    algorithm_ : {"exact", "hnsw"}
    index_ : NeighborIndex
        The index searches go to.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.neighbors import make_index
    >>> index = make_index("auto").fit(np.random.default_rng(0).random((500, 3)))
    >>> index.algorithm_
    'exact'
    """

    def __init__(self, n_jobs: int | None = None, random_state: Any = None, leaf_size: int = 30, **hnsw_params: Any):
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.leaf_size = leaf_size
        self.hnsw_params = hnsw_params

    @staticmethod
    def uses_hnsw(n_samples: int, n_features: int) -> bool:
        """Whether ``fit`` on an ``(n_samples, n_features)`` array builds HNSW (:data:`AUTO_HNSW_RULE`).

        Parameters
        ----------
        n_samples, n_features : int
            The shape of the training set.

        Returns
        -------
        bool
            False below the rule, or when hnswlib is not installed.

        Examples
        --------
        >>> from nwbound.neighbors import AutoIndex
        >>> AutoIndex.uses_hnsw(5_000, 100), AutoIndex.uses_hnsw(10**6, 4)
        (False, False)
        """
        if n_samples < AUTO_HNSW_RULE.min_samples or n_features < AUTO_HNSW_RULE.min_features:
            return False
        return importlib.util.find_spec("hnswlib") is not None

    def fit(self, X: np.ndarray) -> "AutoIndex":
        """Choose the index from ``X.shape`` and build it.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)

        Returns
        -------
        self

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.neighbors import AutoIndex
        >>> AutoIndex().fit(np.zeros((10, 2))).algorithm_
        'exact'
        """
        shape = np.shape(X)
        if len(shape) == 2 and self.uses_hnsw(*shape):
            from ._hnsw import HNSWIndex

            self.algorithm_ = "hnsw"
            self.index_ = HNSWIndex(n_jobs=self.n_jobs, random_state=self.random_state, **self.hnsw_params)
        else:
            self.algorithm_ = "exact"
            self.index_ = ExactIndex("auto", n_jobs=self.n_jobs, leaf_size=self.leaf_size)
        self.index_.fit(X)
        return self

    def kneighbors(self, X: np.ndarray, n_neighbors: int) -> tuple[np.ndarray, np.ndarray]:
        """``(distances, indices)`` from the chosen index.

        Parameters
        ----------
        X : ndarray of shape (n_queries, n_features)
        n_neighbors : int

        Returns
        -------
        distances : ndarray of shape (n_queries, n_neighbors), float64
        indices : ndarray of shape (n_queries, n_neighbors)

        Raises
        ------
        ValueError
            Before :meth:`fit`.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.neighbors import AutoIndex
        >>> index = AutoIndex().fit(np.array([[0.0], [1.0], [3.0]]))
        >>> index.kneighbors(np.array([[2.9]]), 1)[1].tolist()
        [[2]]
        >>> AutoIndex().kneighbors(np.zeros((1, 1)), 1)
        Traceback (most recent call last):
        ...
        ValueError: This AutoIndex is not fitted yet; call fit(X) first.
        """
        if not hasattr(self, "index_"):
            raise ValueError("This AutoIndex is not fitted yet; call fit(X) first.")
        return self.index_.kneighbors(X, n_neighbors)


IndexFactory = Callable[..., NeighborIndex]


def _exact_factory(algorithm: str) -> IndexFactory:
    def factory(
        *, n_jobs: int | None = None, random_state: Any = None, leaf_size: int = 30, n_neighbors: int | None = None
    ) -> ExactIndex:
        # Exact search is deterministic and serves any k: random_state and n_neighbors are unused.
        return ExactIndex(algorithm=algorithm, n_jobs=n_jobs, leaf_size=leaf_size)

    return factory


def _auto_factory(*, n_jobs: int | None = None, random_state: Any = None, leaf_size: int = 30,
                  **hnsw_params: Any) -> AutoIndex:
    from ._hnsw import HNSW_OPTIONS

    unknown = sorted(set(hnsw_params) - set(HNSW_OPTIONS))
    if unknown:
        raise ValueError(
            f"Unknown option(s) {', '.join(map(repr, unknown))} for algorithm='auto'; "
            f"it accepts leaf_size, {', '.join(HNSW_OPTIONS)}."
        )
    return AutoIndex(n_jobs=n_jobs, random_state=random_state, leaf_size=leaf_size, **hnsw_params)


_FACTORIES: dict[str, IndexFactory] = {name: _exact_factory(name) for name in ("brute", "kd_tree", "ball_tree")}
_FACTORIES = {"auto": _auto_factory, **_FACTORIES}


def register_index(name: str, factory: IndexFactory) -> None:
    """Make ``algorithm=name`` build ``factory(n_jobs=..., random_state=..., **index_params)``.

    Examples
    --------
    >>> from nwbound.neighbors import available_indexes, hnsw_factory, register_index
    >>> register_index("hnsw", hnsw_factory)  # what importing nwbound.neighbors does
    >>> "hnsw" in available_indexes()
    True
    """
    _FACTORIES[name] = factory


def available_indexes() -> tuple[str, ...]:
    """Names accepted as ``algorithm``.

    Examples
    --------
    >>> from nwbound.neighbors import available_indexes
    >>> available_indexes()[:4]
    ('auto', 'brute', 'kd_tree', 'ball_tree')
    """
    return tuple(_FACTORIES)


def make_index(algorithm: str, **options: Any) -> NeighborIndex:
    """Build an unfitted index for ``algorithm`` (see :func:`~nwbound.neighbors.available_indexes`).

    Examples
    --------
    >>> from nwbound.neighbors import make_index
    >>> make_index("kd_tree", leaf_size=40).leaf_size
    40
    """
    if not isinstance(algorithm, str) or algorithm not in _FACTORIES:
        raise ValueError(
            f"algorithm must be one of {', '.join(repr(a) for a in _FACTORIES)}, got {algorithm!r}."
        )
    try:
        return _FACTORIES[algorithm](**options)
    except TypeError as exc:
        raise ValueError(f"Invalid index_params for algorithm={algorithm!r}: {exc}") from exc
