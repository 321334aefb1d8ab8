"""Approximate k-nearest-neighbour search with HNSW graphs (hnswlib).

``NadarayaWatsonClassifier(n_neighbors=k, algorithm="hnsw")`` uses
:class:`HNSWIndex` (``algorithm="auto"`` does too on large, high-dimensional
training sets; see :data:`nwbound.neighbors.AUTO_HNSW_RULE`). HNSW answers a
query in roughly logarithmic time instead of the linear scan of an exact
index; the price is that an occasional true neighbour is missed (recall below
1). The bound stays valid either way: the neighbours are chosen from the
inputs alone, never from the labels, and the classifier recomputes their
distances directly.

``ef`` (the search's candidate list) trades speed for recall. By default it is
**chosen from a recall target** at fit time: ``_RECALL_SAMPLE`` = 500
training rows (at most a quarter of them), drawn with ``random_state``, are
held out of the graph while it is built; their exact ``n_neighbors`` nearest
neighbours among the other rows are found by brute force; ``ef`` starts at
``max(n_neighbors, 16)`` and grows by √2 (16, 23, 33, 47, 67, 95, 135, …)
until a one-sided 95 % lower confidence bound of the held-out rows' recall@k
(``recall_lower_``: mean − 1.645 · standard error over the rows) reaches
``recall`` (or ``_EF_MAX`` = 1024); then the held-out rows are inserted too.
The margin matters: on the MIT-BIH beats the plain held-out mean met 0.99 at
ef = 23 while the test beats reached 0.987. The
cost is one exact search of 500 rows (500 · n · d multiply-adds) and at most 13
graph searches of 500 rows: a few per cent of the build time on ECG-shaped
data. The chosen ``ef_`` and the measured ``recall_`` are attributes; an
explicit ``ef`` is used as given (``recall_`` is still measured).

Two details keep the localized classifier's numbers close to the exact ones:

* hnswlib stores float32 vectors and its ``"l2"`` space returns *squared*
  float32 distances. With ``exact_distances=True`` (default) the distances of
  the returned neighbours are recomputed in float64 from the training rows, so
  wherever the neighbour set is right the kernel weights equal the exact
  index's, not a float32 approximation of them.
* Results are re-sorted (stable) by the returned distance, as the
  :class:`~nwbound.neighbors.NeighborIndex` contract requires.

Threads and determinism: the graph is built with ``n_jobs`` threads
(``add_items(..., num_threads=n)``). hnswlib draws each point's level from a
generator seeded with ``random_seed``; a single-threaded build inserts points
in a fixed order and gives the same graph every time, while a multi-threaded
build inserts them in an order set by thread timing (same quality, not the
same graph). Hence, when ``random_state`` is set the graph is built with one
thread and ``ef_`` is reproducible. Queries are independent of one another,
so multi-threaded search is always reproducible.
"""

from __future__ import annotations

import math
import numbers
import os
import warnings
from typing import Any

import numpy as np

from .._validation import check_n_jobs
from .._numerics import direct_distances
from ._base import NeighborIndex, tie_ordered

__all__ = ["HNSWIndex", "hnsw_factory"]

# Training rows held out of the graph to measure recall at fit time (at most a quarter of them).
_RECALL_SAMPLE = 500
# First and largest ef tried by the recall search, and its growth factor: √2 steps
# (16, 23, 33, 47, 67, 95, 135, …) overshoot the needed ef by at most 41 %, not 100 %.
_EF_START = 16
_EF_MAX = 1024
_EF_STEP = math.sqrt(2.0)
# Extra exact candidates per held-out row when finding its true k-th distance, and the
# training rows per block of that brute-force search (500 × 16 384 float64: 64 MiB).
_RANK_SLACK = 8
# One-sided 95 % normal quantile: ef must reach the target with this confidence.
_Z95 = 1.6448536269514722
_EXACT_BLOCK = 16_384
# hnswlib's own default seed, used when the caller gives none.
_DEFAULT_SEED = 100


def _import_hnswlib():
    try:
        import hnswlib
    except ImportError as exc:  # pragma: no cover - depends on the environment
        from ..utils import install_hint

        raise ImportError(
            f"algorithm='hnsw' needs the hnswlib package: {install_hint('ann')} "
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


def _machine_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on every platform
        return os.cpu_count() or 1


def _num_threads(n_jobs: int | None) -> int:
    """scikit-learn's convention (None → 1, -1 → all cores, -2 → all but one), capped at the cores."""
    n_jobs = check_n_jobs(n_jobs)
    cores = _machine_cores()
    if n_jobs is None:
        return 1
    if n_jobs < 0:
        return max(1, cores + 1 + n_jobs)
    # More threads than cores only adds contention (and a model file could ask for 10**6).
    return min(n_jobs, cores)


def _check_recall(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (0.0 < float(value) <= 1.0):
        raise ValueError(f"recall must be a number with 0 < recall <= 1 (the recall@k target), got {value!r}.")
    return float(value)


def _recall(found_dist: np.ndarray, kth_true: np.ndarray) -> tuple[float, float]:
    """Mean recall@k over the held-out rows and its one-sided 95 % lower confidence bound.

    A returned row counts when its distance is within the true k-th distance, so
    duplicated training rows (equal distances, other ids) are not counted as misses.
    The bound uses the spread of the per-row recalls (the k slots of one row are
    not independent): mean − 1.645 · std / √rows.
    """
    tol = 1e-9 * np.maximum(kth_true, 1.0)
    per_row = np.mean(found_dist <= (kth_true + tol)[:, None], axis=1)
    mean = float(per_row.mean())
    return mean, mean - _Z95 * float(per_row.std(ddof=1) if per_row.size > 1 else 0.0) / math.sqrt(per_row.size)


class HNSWIndex(NeighborIndex):
    """Approximate Euclidean k-NN search on an HNSW graph (hnswlib).

    Parameters
    ----------
    M : int, default=16
        Graph degree (links per node and layer). Larger: higher recall at a
        given ``ef``, more memory and a slower build.
    ef_construction : int, default=100
        Candidate-list size while building. Larger: better graph, slower build.
        ``M=16, ef_construction=100`` builds about 3× faster than ``32, 200``
        on ECG-shaped data (100 features) and, with ``ef`` chosen for the
        recall target, searches about as fast; the build is what decides when
        the index pays off (see :data:`nwbound.neighbors.AUTO_HNSW_RULE`).
    ef : int or None, default=None
        Candidate-list size while searching. None: the smallest of 16, 23,
        33, 47, …, 1024 (steps of √2, rounded up; at least ``n_neighbors``)
        whose recall@k, measured at fit time on 500 held-out training rows,
        reaches ``recall`` with 95 % confidence. An int is used
        as given (raised to k when smaller: hnswlib needs ``ef >= k``).
        An ``ef`` set after ``fit`` is used by later searches.
    recall : float, default=0.99
        Target recall@k (share of the true k nearest neighbours found) when
        ``ef`` is None. If even ``ef = 1024`` misses it, a ``UserWarning``
        says so and 1024 is used.
    n_neighbors : int, default=10
        The k the recall is measured for. A query for a larger k uses ``ef_``
        scaled by ``k / n_neighbors``.
    random_state : int, numpy generator or None, default=None
        Seed of hnswlib's level generator (``random_seed``) and of the
        held-out sample. When set, the graph is built with one thread so that
        it (and ``ef_``) is reproducible.
    n_jobs : int or None, default=None
        Threads for building (when ``random_state`` is None) and searching.
        None: 1, -1: all cores, -2: all but one; capped at the cores.
    exact_distances : bool, default=True
        Recompute the returned neighbours' distances in float64 from the
        training rows (hnswlib computes them in float32). Keeps a reference to
        the training array.

    Attributes
    ----------
    index_ : hnswlib.Index
    ef_ : int
        The ``ef`` searches use for ``n_neighbors`` neighbours.
    recall_ : float or None
        recall@``n_neighbors`` of the held-out rows at ``ef_`` (None when the
        training set is too small to hold rows out).
    recall_lower_ : float or None
        Its one-sided 95 % lower confidence bound; ``>= recall`` unless the
        search hit ``ef = 1024`` (then a warning says so).
    n_samples_fit_ : int
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.neighbors import HNSWIndex
    >>> X = np.random.default_rng(0).random((2000, 8))
    >>> index = HNSWIndex(recall=0.99, n_neighbors=5, random_state=0).fit(X)
    >>> index.recall_ >= 0.99, index.ef_ >= 5
    (True, True)
    >>> dist, idx = index.kneighbors(X[:3], 5)
    >>> dist.shape, idx[:, 0].tolist()
    ((3, 5), [0, 1, 2])
    """

    def __init__(
        self,
        M: int = 16,
        ef_construction: int = 100,
        ef: int | None = None,
        recall: float = 0.99,
        n_neighbors: int = 10,
        random_state: Any = None,
        n_jobs: int | None = None,
        exact_distances: bool = True,
    ):
        self.M = M
        self.ef_construction = ef_construction
        self.ef = ef
        self.recall = recall
        self.n_neighbors = n_neighbors
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.exact_distances = exact_distances

    def fit(self, X: np.ndarray) -> "HNSWIndex":
        """Build the graph over the rows of ``X`` (shape ``(n_samples, n_features)``) and choose ``ef_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite training rows.

        Returns
        -------
        self : HNSWIndex

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.neighbors import HNSWIndex
        >>> index = HNSWIndex(n_neighbors=3, random_state=0).fit(np.random.default_rng(1).random((300, 4)))
        >>> index.n_samples_fit_, index.n_features_in_, index.ef_ >= 3
        (300, 4, True)
        """
        hnswlib = _import_hnswlib()
        M = _check_int(self.M, "M", 2)
        ef_construction = _check_int(self.ef_construction, "ef_construction", 1)
        ef = None if self.ef is None else _check_int(self.ef, "ef", 1)
        target = _check_recall(self.recall)
        k = _check_int(self.n_neighbors, "n_neighbors", 1)
        threads = _num_threads(self.n_jobs)
        seed = _seed_from(self.random_state)
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"X must be a non-empty 2-D array (n_samples, n_features), got shape {X.shape}.")
        if not np.issubdtype(X.dtype, np.number) or np.iscomplexobj(X):
            raise TypeError(f"X must hold real numbers, got dtype {X.dtype}.")
        if not np.all(np.isfinite(X)):
            raise ValueError("X contains NaN or infinity; HNSW needs finite coordinates.")
        n, d = X.shape
        seed = _DEFAULT_SEED if seed is None else seed
        X32 = np.ascontiguousarray(X, dtype=np.float32)
        if not np.all(np.isfinite(X32)):
            raise ValueError("X has values beyond float32's range (|x| > 3.4e38); hnswlib stores float32. Rescale X.")
        index = hnswlib.Index(space="l2", dim=d)
        index.init_index(max_elements=n, M=M, ef_construction=ef_construction, random_seed=seed)
        build_threads = 1 if self.random_state is not None else threads
        # Hold a sample out of the graph so that its recall is that of unseen queries
        # (an indexed row finds itself and its own links: an optimistic estimate).
        n_held = min(_RECALL_SAMPLE, n // 4)
        k_tune = min(k, n - n_held)
        held = np.sort(np.random.default_rng(seed).choice(n, size=n_held, replace=False))
        rest = np.setdiff1d(np.arange(n), held, assume_unique=True)
        index.add_items(X32[rest], rest, num_threads=build_threads)
        self.index_ = index
        self._X = X if self.exact_distances else None
        self.n_samples_fit_ = n
        self.n_features_in_ = d
        self.ef_, self.recall_, self.recall_lower_ = self._choose_ef(X, X32, rest, held, k_tune, ef, target, threads)
        if n_held:
            index.add_items(X32[held], held, num_threads=build_threads)
        self._k_tuned = k_tune
        index.set_ef(self.ef_)
        return self

    def _choose_ef(self, X, X32, rest, held, k, ef, target, threads) -> tuple[int, float | None, float | None]:
        """The ef to search with, the held-out recall@k it reached and that recall's lower bound."""
        if held.size == 0:
            # Too few rows to hold any out: search the whole graph.
            return (max(ef, k) if ef is not None else max(k, min(_EF_MAX, X.shape[0]))), None, None
        # The true k-th distance, recomputed like the found ones (the expanded formula of a brute-force
        # search is off by ~1e-3 in float32, enough to call true neighbours misses); a few extra
        # candidates cover rank swaps among near-ties.
        cand = _exact_candidates(X, held, rest, min(k + _RANK_SLACK, rest.size))
        kth = np.sort(direct_distances(X[held], X, cand), axis=1)[:, k - 1]
        ef_cap = max(k, _EF_MAX)
        value = max(k, ef if ef is not None else _EF_START)
        while True:
            labels, _, value = self._knn(X32[held], k, value, threads)
            measured, lower = _recall(direct_distances(X[held], X, labels.astype(np.intp)), kth)
            if ef is not None or lower >= target:
                return value, measured, lower
            if value >= ef_cap:
                warnings.warn(
                    f"HNSW reached recall@{k} = {measured:.4f} (95 % lower bound {lower:.4f}) < recall={target} "
                    f"even at ef={value}; using it. Raise M or ef_construction, or use an exact algorithm.",
                    UserWarning, stacklevel=3,
                )
                return value, measured, lower
            value = min(math.ceil(value * _EF_STEP), ef_cap)

    def kneighbors(self, X: np.ndarray, n_neighbors: int) -> tuple[np.ndarray, np.ndarray]:
        """Approximate ``n_neighbors`` nearest training rows of each row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Query rows.
        n_neighbors : int
            k, at most the number of indexed rows.

        Returns
        -------
        distances : ndarray of shape (n_queries, n_neighbors), float64
            Euclidean distances, non-decreasing along each row.
        indices : ndarray of shape (n_queries, n_neighbors), intp
            Row numbers in the training array.

        Raises
        ------
        ValueError
            Before :meth:`fit`, for ``n_neighbors`` above the number of indexed
            rows, or for queries of the wrong width.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.neighbors import HNSWIndex
        >>> X = np.random.default_rng(1).random((300, 4))
        >>> index = HNSWIndex(n_neighbors=3, random_state=0).fit(X)
        >>> dist, idx = index.kneighbors(X[:2], 3)
        >>> idx[:, 0].tolist(), bool(np.all(np.diff(dist, axis=1) >= 0))
        ([0, 1], True)
        >>> index.kneighbors(X[:2, :3], 3)
        Traceback (most recent call last):
        ...
        ValueError: X must have shape (n_queries, 4), got (2, 3).
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
        # One candidate more than k, so that a row tied with the k-th is seen and the tie rule
        # (distance, then the lower row: TIE_RULE) decides among the candidates found.
        m = min(k + 1, self.n_samples_fit_)
        labels, sq, _ = self._knn(
            np.ascontiguousarray(Xq, dtype=np.float32), m, max(self._search_ef(k), m), _num_threads(self.n_jobs)
        )
        idx = labels.astype(np.intp)
        if self._X is not None:
            dist = direct_distances(Xq, self._X, idx)
        else:
            dist = np.sqrt(np.maximum(sq.astype(np.float64), 0.0))
        dist, idx = tie_ordered(dist, idx)
        return dist[:, :k], idx[:, :k]

    def _knn(self, Q32: np.ndarray, k: int, ef: int, threads: int) -> tuple[np.ndarray, np.ndarray, int]:
        """hnswlib's search at ``ef``, doubled while a sparse graph leaves some query short of k results."""
        count = self.index_.get_current_count()
        while True:
            self.index_.set_ef(ef)
            try:
                labels, sq = self.index_.knn_query(Q32, k=k, num_threads=threads)
                return labels, sq, ef
            except RuntimeError as exc:  # "Cannot return the results in a contiguous 2D array"
                if ef >= count:
                    raise RuntimeError(
                        f"The HNSW graph gave fewer than {k} neighbours for some queries even at ef={ef}; "
                        f"rebuild it with a larger M (now {self.M}) or ef_construction, or use an exact algorithm."
                    ) from exc
                ef = min(2 * ef, count)

    def _search_ef(self, k: int) -> int:
        """ef for k neighbours: an explicit ``ef`` as given, else ``ef_`` (chosen for
        ``n_neighbors``) scaled up for a larger k; never below k (hnswlib needs ``ef >= k``)."""
        if self.ef is not None:
            return max(int(self.ef), k)
        tuned = self._k_tuned
        return max(math.ceil(self.ef_ * max(k, tuned) / tuned), k)

    # hnswlib indexes pickle natively (since 0.5); the explicit state keeps the
    # pickle format ours and restores the search ef.
    def __getstate__(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "index_" in state:
            self.index_.set_ef(self._search_ef(getattr(self, "_k_tuned", 1)))

    def __repr__(self) -> str:
        return (
            f"HNSWIndex(M={self.M!r}, ef_construction={self.ef_construction!r}, ef={self.ef!r}, "
            f"recall={self.recall!r}, n_neighbors={self.n_neighbors!r}, "
            f"random_state={self.random_state!r}, n_jobs={self.n_jobs!r})"
        )


def _exact_candidates(X: np.ndarray, held: np.ndarray, rest: np.ndarray, m: int) -> np.ndarray:
    """Row numbers (among ``rest``) of the ``m`` nearest rows to each row ``X[held]``.

    Brute force over blocks of ``rest``, so that no copy of the training rows is made.
    """
    from sklearn.metrics.pairwise import euclidean_distances

    Q = X[held]
    best_d = np.empty((held.size, 0))
    best_i = np.empty((held.size, 0), dtype=np.intp)
    for start in range(0, rest.size, _EXACT_BLOCK):
        ids = rest[start:start + _EXACT_BLOCK]
        cand_d = np.hstack([best_d, euclidean_distances(Q, X[ids], squared=True)])
        cand_i = np.hstack([best_i, np.broadcast_to(ids, (held.size, ids.size))])
        if cand_d.shape[1] > m:
            keep = np.argpartition(cand_d, m - 1, axis=1)[:, :m]
            cand_d, cand_i = np.take_along_axis(cand_d, keep, axis=1), np.take_along_axis(cand_i, keep, axis=1)
        best_d, best_i = cand_d, cand_i
    return best_i


HNSW_OPTIONS = ("M", "ef_construction", "ef", "recall", "n_neighbors", "exact_distances")


def hnsw_factory(*, n_jobs: int | None = None, random_state: Any = None, **params: Any) -> HNSWIndex:
    """Factory registered as ``algorithm="hnsw"``: extra ``params`` go to :class:`HNSWIndex`.

    Examples
    --------
    >>> from nwbound.neighbors import hnsw_factory
    >>> hnsw_factory(n_jobs=2, random_state=0, recall=0.95).recall
    0.95
    """
    allowed = set(HNSW_OPTIONS)
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ValueError(
            f"Unknown option(s) {', '.join(map(repr, unknown))} for algorithm='hnsw'; "
            f"it accepts {', '.join(sorted(allowed))}."
        )
    return HNSWIndex(n_jobs=n_jobs, random_state=random_state, **params)
