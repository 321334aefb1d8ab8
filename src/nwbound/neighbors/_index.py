"""Choosing an index: ``algorithm="auto"`` and the registry of ``algorithm`` names.

The indexes themselves live in ``_base`` (the interface, the tie rule and exact
search) and ``_hnsw`` (approximate search); this module imports both and neither
imports it, so the import graph of the package has no circle.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Callable, NamedTuple

import numpy as np

from ._base import TIE_RULE, ExactIndex, NeighborIndex, tie_ordered
from ._hnsw import HNSW_OPTIONS, HNSWIndex

__all__ = ["AUTO_HNSW_RULE", "AutoIndex", "AutoRule", "NeighborIndex", "ExactIndex", "TIE_RULE", "make_index",
           "register_index", "available_indexes", "tie_ordered"]


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
