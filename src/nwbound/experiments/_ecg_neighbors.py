"""One exact neighbour search shared by the adaptive split's models of one record.

Each DS2 record (and each DS1 record of the simulation) has two localized models on the
same training rows (the decision model, ``k`` = 12, and the certificate model, ``k`` = 18),
and the per-record check queries the certificate model again on the same beats. Without
sharing, each of those asks scikit-learn for the same exact search over ~59 000 rows: the
search was more than half of the split's run time.

:class:`SharedSearch` is handed to every model of one record through ``index_params``; the
index it builds (:class:`SharedIndex`, registered as ``algorithm=``:data:`SHARED_ALGORITHM`,
the public :func:`nwbound.neighbors.register_index` extension point) answers a search from
the last one when the training rows and the queries are equal (checked, not assumed) and
the last one found at least as many neighbours. The exact indexes follow
:data:`nwbound.neighbors.TIE_RULE`, a total order (distance, then row), so the ``k``
nearest are the first ``k`` of the ``m ≥ k`` nearest: the answer is the one a search with
``k`` gives, bit for bit. Where ``algorithm="auto"`` would build an approximate index
(HNSW, above :data:`nwbound.neighbors.AUTO_HNSW_RULE`) nothing is shared.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ..neighbors import AutoIndex, NeighborIndex, register_index

__all__ = ["SHARED_ALGORITHM", "SharedIndex", "SharedSearch"]

#: The ``algorithm`` name of :class:`SharedIndex` (pass ``index_params={"shared": SharedSearch(k)}``).
SHARED_ALGORITHM = "adaptive-shared"


class SharedSearch:
    """What the models of one record share: the fitted exact index and its last searches.

    Parameters
    ----------
    n_neighbors : int
        The largest ``k`` any of the models asks for: every search finds that many, so that a
        model with a smaller ``k`` is answered from it.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> rng = np.random.default_rng(0); X = rng.random((300, 3)); y = (X[:, 0] > 0.5).astype(int)
    >>> shared = SharedSearch(8)
    >>> models = [NadarayaWatsonClassifier(metric=None, bandwidth=0.5, lipschitz=1.0, n_neighbors=k, algorithm=SHARED_ALGORITHM,
    ...                                    index_params={"shared": shared}).fit(X, y) for k in (5, 8)]
    >>> Q = rng.random((20, 3))
    >>> p = [m.predict_proba(Q) for m in models]
    >>> shared.searches, shared.reused  # one search for both models
    (1, 1)
    >>> plain = NadarayaWatsonClassifier(metric=None, bandwidth=0.5, lipschitz=1.0, n_neighbors=5).fit(X, y)
    >>> bool(np.array_equal(p[0], plain.predict_proba(Q)))
    True
    """

    def __init__(self, n_neighbors: int):
        if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, (int, np.integer)) or n_neighbors < 1:
            raise ValueError(f"n_neighbors must be a positive integer, got {n_neighbors!r}")
        self.n_neighbors = int(n_neighbors)
        self.index: AutoIndex | None = None
        self.results: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.searches = 0
        self.reused = 0

    def __deepcopy__(self, memo: dict[int, Any]) -> "SharedSearch":
        # Shared, never copied: a model's parameter snapshot (and a clone) keeps the same object.
        # Sharing is safe whatever holds it: an answer is reused only for equal rows and queries.
        return self

    def fit(self, X: np.ndarray, *, n_jobs: int | None, random_state: Any) -> AutoIndex:
        """The index over ``X``: the one already built where its rows equal ``X``, else a new one."""
        index = self.index
        if index is not None and getattr(index, "algorithm_", None) == "exact":
            train = index.index_.X_
            if train.shape == X.shape and train.dtype == X.dtype and np.array_equal(train, X):
                return index
        self.index = AutoIndex(n_jobs=n_jobs, random_state=random_state).fit(X)
        self.results = {}
        return self.index

    def kneighbors(self, index: AutoIndex, X: np.ndarray, n_neighbors: int) -> tuple[np.ndarray, np.ndarray]:
        """``index.kneighbors(X, n_neighbors)``, answered from an earlier search of the same queries if any."""
        X = np.ascontiguousarray(X)
        k = int(n_neighbors)
        if index is not self.index or getattr(index, "algorithm_", None) != "exact":
            return index.kneighbors(X, k)  # approximate search: its answer depends on k, nothing shared
        key = (X.shape, X.dtype.str, hashlib.blake2b(X.view(np.uint8).ravel(), digest_size=16).digest())
        hit = self.results.get(key)
        if hit is None or hit[1].shape[1] < k or not np.array_equal(hit[0], X):
            hit = self._from_blocks(X, k)
            if hit is not None:  # the queries are earlier searches' queries, one after the other
                self.reused += 1
                return hit[1][:, :k].copy(), hit[2][:, :k].copy()
            m = max(k, min(self.n_neighbors, index.index_.X_.shape[0]))
            dist, idx = index.kneighbors(X, m)
            hit = self.results[key] = (X.copy(), dist, idx)
            self.searches += 1
        else:
            self.reused += 1
        return hit[1][:, :k].copy(), hit[2][:, :k].copy()

    def _from_blocks(self, X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The answer for ``X`` where its rows are the queries of earlier searches (each with at least
        ``k`` neighbours) in the order they were made, consecutive: their answers, stacked. A
        model that queries in blocks (the Chernoff intervals) and one that queries all rows at once
        (``predict_proba``) then share the blocks' searches: the second gets exactly the neighbours
        the first got (an exact search answers each query by itself). None where they do not tile
        ``X``."""

        def follows(queries: np.ndarray, dist: np.ndarray, at: int) -> bool:
            stop = at + queries.shape[0]
            return (dist.shape[1] >= k and queries.dtype == X.dtype and queries.shape[1:] == X.shape[1:]
                    and stop <= X.shape[0] and np.array_equal(queries, X[at:stop]))

        parts: list[tuple[np.ndarray, np.ndarray]] = []
        start = 0
        for queries, dist, idx in self.results.values():  # in the order they were searched
            if start == X.shape[0]:
                break
            if not follows(queries, dist, start):
                parts, start = [], 0  # not the next block: start over, from this one if it is the first
                if not follows(queries, dist, 0):
                    continue
            parts.append((dist[:, :k], idx[:, :k]))
            start += queries.shape[0]
        if len(parts) < 2 or start != X.shape[0]:
            return None
        return X, np.vstack([d for d, _ in parts]), np.vstack([i for _, i in parts])


class SharedIndex(NeighborIndex):
    """The index of ``algorithm=``:data:`SHARED_ALGORITHM`: exact search through a :class:`SharedSearch`.

    Parameters
    ----------
    shared : SharedSearch
        Shared by the models of one record.
    n_jobs : int or None, default=None
    random_state : default=None
        As for ``algorithm="auto"``.

    Examples
    --------
    >>> import numpy as np
    >>> index = SharedIndex(SharedSearch(3)).fit(np.array([[0.0], [1.0], [3.0], [4.0]]))
    >>> index.kneighbors(np.array([[0.9]]), 2)[1].tolist(), index.kneighbors(np.array([[0.9]]), 3)[1].tolist()
    ([[1, 0]], [[1, 0, 2]])
    """

    def __init__(self, shared: SharedSearch, n_jobs: int | None = None, random_state: Any = None):
        if not isinstance(shared, SharedSearch):
            raise TypeError(f"shared must be a SharedSearch, got {type(shared).__name__}")
        self.shared = shared
        self.n_jobs = n_jobs
        self.random_state = random_state

    def fit(self, X: np.ndarray) -> "SharedIndex":
        """Index the rows of ``X`` (or reuse the shared index over equal rows).

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)

        Returns
        -------
        self

        Examples
        --------
        >>> import numpy as np
        >>> shared = SharedSearch(2)
        >>> a = SharedIndex(shared).fit(np.zeros((4, 1))); b = SharedIndex(shared).fit(np.zeros((4, 1)))
        >>> a.index_ is b.index_
        True
        """
        self.index_ = self.shared.fit(np.asarray(X), n_jobs=self.n_jobs, random_state=self.random_state)
        return self

    def kneighbors(self, X: np.ndarray, n_neighbors: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact ``(distances, indices)`` of the ``n_neighbors`` nearest rows (:data:`nwbound.neighbors.TIE_RULE`).

        Parameters
        ----------
        X : ndarray of shape (n_queries, n_features)
        n_neighbors : int

        Returns
        -------
        distances, indices : ndarrays of shape (n_queries, n_neighbors)

        Examples
        --------
        >>> import numpy as np
        >>> index = SharedIndex(SharedSearch(2)).fit(np.array([[0.0], [1.0], [3.0]]))
        >>> d, i = index.kneighbors(np.array([[2.9]]), 1)
        >>> i.tolist(), np.round(d, 3).tolist()
        ([[2]], [[0.1]])
        """
        if not hasattr(self, "index_"):
            raise ValueError("This SharedIndex is not fitted yet; call fit(X) first.")
        return self.shared.kneighbors(self.index_, X, n_neighbors)


def _factory(*, shared: SharedSearch | None = None, n_jobs: int | None = None, random_state: Any = None,
             n_neighbors: int | None = None) -> SharedIndex:
    if shared is None:
        raise ValueError(f"algorithm={SHARED_ALGORITHM!r} needs index_params={{'shared': SharedSearch(k)}}")
    return SharedIndex(shared, n_jobs=n_jobs, random_state=random_state)


register_index(SHARED_ALGORITHM, _factory)
