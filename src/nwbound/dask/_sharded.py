"""The Nadaraya-Watson classifier over a training set split into shards.

For a training set too large for one worker: every Nadaraya-Watson quantity
is a sum over training points — the class sums ``Σ w_i K_i 1{c_i = c}`` (and
so ``κ``), ``Σ (w_i K_i)²``, ``Σ w_i K_i ‖y − y_i‖`` and the tail mass — hence
additive over disjoint shards. For each (query block, training shard) pair a
task computes the shard's partial :class:`~nwbound.estimators._sums.KernelSums`
with the engine's own ``dense_kernel_sums``; a tree of additions reduces them.
For the localized classifier each shard returns its own top-k list (distances,
global row numbers, labels, weights); a tree of merges keeps the k nearest
overall, and ``neighbor_kernel_sums`` turns them into sums.

The interval itself is made exactly as the single-machine estimator makes it:
a small *fitted* :class:`~nwbound.NadarayaWatsonClassifier` carries the global
classes, prior, bounding box, bandwidths and bound specification, and its own
``predict_interval`` runs on the reduced sums. No bound code is repeated here.
"""

from __future__ import annotations

import copy
from typing import Any

import dask
import dask.array as da
import numpy as np
from sklearn.exceptions import NotFittedError
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.multiclass import check_classification_targets

from .._validation import check_dtype, check_int_range
from ..bounds import TAIL_RADIUS
from ..estimators import NadarayaWatsonClassifier
from ..estimators._nadaraya_watson import _AUTO_GRID_SIZE, _AUTO_PILOT_SIZE
from ..estimators._sums import KernelSums, TrainingSet, dense_kernel_sums, neighbor_kernel_sums
from ..neighbors import make_index
from ._common import check_query_array, compute, current_client, limited, share
from ._predict import interval_arrays, rows_from_blocks

__all__ = ["ShardedNadarayaWatson", "sharded_predict_interval"]


class _ReducedSumsClassifier(NadarayaWatsonClassifier):
    """A fitted NWC whose kernel sums come from outside (reduced over shards).

    Everything after the sums — the bound parts, the choice of bandwidth, the
    empty-neighbourhood rule, the assembly — is the parent's code.
    """

    def _kernel_sums(self, X, bandwidths, need_dist, need_tail) -> KernelSums:
        return self._given_sums

    def with_sums(self, sums: KernelSums) -> "_ReducedSumsClassifier":
        # A shallow copy per block: tasks running in threads of one worker
        # share the shell and must not write into it.
        block = copy.copy(self)
        block._given_sums = sums
        return block


# -- tasks (module-level functions: picklable for process workers) -----------------------------
def _training_shard(X: np.ndarray, labels: np.ndarray, weights: np.ndarray | None, n_classes: int) -> TrainingSet:
    return TrainingSet.build(np.ascontiguousarray(X), labels, n_classes, weights)


def _index_shard(X: np.ndarray, offset: int, labels, weights, algorithm: str) -> tuple:
    index = make_index(algorithm, n_jobs=None).fit(np.ascontiguousarray(X))
    return index, offset, labels, weights, X.shape[0]


def _dense_partial(shell: _ReducedSumsClassifier, block: np.ndarray, train: TrainingSet, need: tuple) -> KernelSums:
    need_dist, need_tail = need
    return dense_kernel_sums(
        block, train, shell.kernel_, shell.bandwidths_, need_dist=need_dist,
        tail_radius=TAIL_RADIUS if need_tail else None, working_memory=shell.working_memory, n_jobs=None,
    )


def _add_sums(a: KernelSums, b: KernelSums) -> KernelSums:
    def add(x, y):
        return None if x is None else x + y

    return KernelSums(
        class_sums=a.class_sums + b.class_sums,
        sq_sum=a.sq_sum + b.sq_sum,
        dist_sum=add(a.dist_sum, b.dist_sum),
        tail_mass=add(a.tail_mass, b.tail_mass),
    )


def _shard_topk(block: np.ndarray, shard: tuple, k: int) -> tuple:
    """The shard's k nearest rows of each query: (distances, global rows, labels, weights)."""
    index, offset, labels, weights, n_rows = shard
    dist, idx = index.kneighbors(block, min(k, n_rows))
    w = None if weights is None else weights[idx]
    return np.asarray(dist, dtype=np.float64), idx + offset, labels[idx], w


def _merge_topk(a: tuple, b: tuple, k: int) -> tuple:
    """The k nearest of two top-k lists; ties go to the lower global row number."""
    dist, rows, labels = (np.concatenate([x, y], axis=1) for x, y in zip(a[:3], b[:3]))
    order = np.lexsort((rows, dist), axis=1)[:, :k]
    pick = lambda v: np.take_along_axis(v, order, axis=1)  # noqa: E731
    weights = None if a[3] is None else pick(np.concatenate([a[3], b[3]], axis=1))
    return pick(dist), pick(rows), pick(labels), weights


def _neighbor_sums(shell: _ReducedSumsClassifier, topk: tuple, need: tuple) -> KernelSums:
    dist, _, labels, weights = topk
    n_q, k = labels.shape
    # A training set of just these neighbours, in query-major order.
    train = TrainingSet.build(
        np.zeros((n_q * k, 0), dtype=shell._fit_dtype), labels.ravel(), len(shell.classes_),
        None if weights is None else weights.ravel(),
    )
    need_dist, need_tail = need
    return neighbor_kernel_sums(
        dist, np.arange(n_q * k).reshape(n_q, k), train, shell.kernel_, shell.bandwidths_,
        need_dist=need_dist, tail_radius=TAIL_RADIUS if need_tail else None,
    )


def _finish(shell: _ReducedSumsClassifier, block: np.ndarray, sums: KernelSums, method: str):
    out = getattr(shell.with_sums(sums), method)(block)
    return out.as_dict() if method == "predict_interval" else out


def _pilot_two_nearest(shard: np.ndarray, pilot: np.ndarray) -> np.ndarray:
    n_nb = min(2, shard.shape[0])
    dist, _ = NearestNeighbors(n_neighbors=n_nb, algorithm="brute").fit(np.asarray(shard, np.float64)).kneighbors(pilot)
    return dist


def _tree(items: list[Any], combine, *extra: Any) -> Any:
    """Pairwise (log-depth) reduction of delayed values."""
    while len(items) > 1:
        items = [
            dask.delayed(combine, pure=True)(items[i], items[i + 1], *extra) if i + 1 < len(items) else items[i]
            for i in range(0, len(items), 2)
        ]
    return items[0]


# -- the estimator -------------------------------------------------------------------------------
class ShardedNadarayaWatson:
    """:class:`~nwbound.NadarayaWatsonClassifier` over a row-sharded Dask training set.

    Results equal the single-machine estimator's fitted on the whole training
    set (up to floating-point summation order).

    Parameters
    ----------
    **params
        Any :class:`~nwbound.NadarayaWatsonClassifier` parameter (``kernel``,
        ``bandwidth``, ``n_neighbors``, ``algorithm``, ``lipschitz``, ``margin``,
        ``delta``, ``bound``, …). ``n_jobs`` is ignored: tasks are the parallelism.

    Attributes
    ----------
    estimator_ : NadarayaWatsonClassifier
        Fitted shell with the global ``classes_``, ``class_prior_``,
        ``bandwidths_``, ``bound_spec_``… (no training rows).
    classes_, class_prior_, n_features_in_, n_samples_fit_, bandwidths_
        As for the single-machine estimator.
    """

    def __init__(self, **params: Any):
        unknown = sorted(set(params) - set(NadarayaWatsonClassifier().get_params()))
        if unknown:
            raise TypeError(f"Unknown NadarayaWatsonClassifier parameter(s): {', '.join(unknown)}.")
        self.params = params

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"ShardedNadarayaWatson({args})"

    # ------------------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any, sample_weight: Any = None, *, client: Any = None) -> "ShardedNadarayaWatson":
        """Compute the global statistics and prepare one task input per shard.

        Parameters
        ----------
        X : dask.array.Array of shape (n_samples, n_features)
            Training inputs; each row chunk is a shard. Chunked along rows only,
            dtype equal to the ``dtype`` parameter (default float64).
        y : array-like of shape (n_samples,)
            Labels (held in memory: n values, not n × d).
        sample_weight : array-like of shape (n_samples,), default=None
        client : distributed.Client or None
            None: the active default client if any, else the local scheduler.
        """
        dtype = check_dtype(self.params.get("dtype", "float64"))
        X = check_query_array(X, "X", None, dtype)
        n, d = X.shape
        if n < 2:
            raise ValueError(f"X needs at least 2 training rows, got {n}.")
        client = current_client(client)
        y = np.asarray(compute(client, y)[0] if isinstance(y, da.Array) else y)
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y must be 1-D with one label per row of X ({n}), got shape {y.shape}.")
        check_classification_targets(y)
        classes, labels = np.unique(y, return_inverse=True)
        if classes.shape[0] < 2:
            raise ValueError(f"y has only one class ({classes[0]!r}); a classifier needs at least 2 classes.")
        labels = labels.astype(np.intp)
        if isinstance(sample_weight, da.Array):
            (sample_weight,) = compute(client, sample_weight)
        weights = self._checked_weights(sample_weight, n, X.dtype)
        w = np.ones(n) if weights is None else weights.astype(np.float64)
        prior = np.bincount(labels, weights=w, minlength=classes.shape[0])

        low, high = compute(client, X.min(axis=0), X.max(axis=0))
        low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            raise ValueError("X contains NaN or infinity; the training inputs must be finite.")

        # The shell is fitted on one row per class (so that every parameter
        # check of the estimator runs and C is right), then gets the global
        # statistics; it never sees the other rows.
        _, first = np.unique(labels, return_index=True)
        first = np.sort(first)
        default_grid = self.params.get("bandwidth") == "auto" and self.params.get("bandwidth_grid") is None
        shell_params = {**self.params, "n_neighbors": None, "algorithm": "auto", "n_jobs": None}
        if default_grid:  # placeholder: the grid of all shards replaces it below
            shell_params["bandwidth_grid"] = [1.0]
        shell = _ReducedSumsClassifier(**shell_params)
        shell.fit(np.asarray(compute(client, X[first])[0]), y[first])
        k = self.params.get("n_neighbors")
        if k is not None:
            check_int_range(k, "n_neighbors", 1, n, hint=f"It counts neighbours among the {n} training samples.")
        shell.class_prior_ = prior / prior.sum()
        shell._box = (low, high)
        shell.n_samples_fit_ = n
        shell._train = None
        if default_grid:
            shell.bandwidths_ = self._default_grid(X, low, high, client)

        offsets = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(int)
        blocks = X.to_delayed().ravel()
        shards = []
        for j, blk in enumerate(blocks):
            if offsets[j + 1] == offsets[j]:
                continue  # an empty chunk adds nothing (and an index cannot be built on it)
            rows = slice(offsets[j], offsets[j + 1])
            w_j = None if weights is None else weights[rows]
            if k is None:
                shards.append(dask.delayed(_training_shard, pure=True)(blk, labels[rows], w_j, classes.shape[0]))
            else:
                algorithm = self.params.get("algorithm", "auto")
                shards.append(dask.delayed(_index_shard, pure=True)(blk, int(offsets[j]), labels[rows], w_j, algorithm))
        # Built once, kept on the workers (or in memory with the local scheduler).
        self.shards_ = list(client.persist(shards) if client is not None else dask.persist(*shards))
        self.estimator_ = shell
        self.n_neighbors_ = k
        self.classes_ = classes
        self.class_prior_ = shell.class_prior_
        self.n_features_in_ = d
        self.n_samples_fit_ = n
        self.bandwidths_ = shell.bandwidths_
        return self

    @staticmethod
    def _checked_weights(sample_weight: Any, n: int, dtype: np.dtype) -> np.ndarray | None:
        if sample_weight is None:
            return None
        w = np.asarray(sample_weight, np.float64)
        if w.shape != (n,):
            raise ValueError(f"sample_weight must have shape ({n},), got {w.shape}.")
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("sample_weight must be finite and non-negative.")
        if w.sum() <= 0:
            raise ValueError("sample_weight sums to 0: at least one sample needs a positive weight.")
        return None if np.all(w == 1.0) else w.astype(dtype)

    @staticmethod
    def _default_grid(X: "da.Array", low: np.ndarray, high: np.ndarray, client: Any) -> np.ndarray:
        """:func:`~nwbound.estimators.default_bandwidth_grid` over all shards:
        the pilot rows' second-nearest distances are the smallest two over shards."""
        n = X.shape[0]
        diagonal = float(np.linalg.norm(high - low))
        if diagonal == 0.0:
            raise ValueError("All training points coincide: bandwidth='auto' cannot pick a scale.")
        pilot_rows = np.unique(np.linspace(0, n - 1, min(_AUTO_PILOT_SIZE, n)).astype(int))
        pilot = np.asarray(compute(client, X[pilot_rows])[0], dtype=np.float64)
        parts = [dask.delayed(_pilot_two_nearest, pure=True)(blk, pilot) for blk in X.to_delayed().ravel()]
        dist = np.sort(np.concatenate(compute(client, *parts), axis=1), axis=1)
        nearest = dist[:, 1]
        lo = float(np.median(nearest[nearest > 0])) if np.any(nearest > 0) else diagonal * 1e-3
        lo = min(lo, diagonal)
        return np.geomspace(lo, diagonal, _AUTO_GRID_SIZE) if lo < diagonal else np.array([diagonal])

    # ------------------------------------------------------------------------------------------
    def _reduced(self, X: Any, method: str, client: Any, threads: int) -> tuple["da.Array", list[Any]]:
        if not hasattr(self, "estimator_"):
            raise NotFittedError("This ShardedNadarayaWatson is not fitted yet; call fit(X_train, y) first.")
        shell = self.estimator_
        X = check_query_array(X, "X", self.n_features_in_, shell._fit_dtype)
        # The sums the shell's own method will ask for: with a fixed bandwidth
        # predict/predict_proba need only class sums; "auto" picks λ from the bound.
        if method == "predict_interval" or shell.bandwidth == "auto":
            spec = shell._require_bounds()
            need = (spec.needs_distance_sum, spec.needs_tail_mass)
        else:
            need = (False, False)
        client = current_client(client)
        shared = share(shell, client)
        k = self.n_neighbors_
        parts = []
        for blk in X.to_delayed().ravel():
            if k is None:
                partial = [dask.delayed(limited(_dense_partial, threads), pure=True)(shared, blk, s, need) for s in self.shards_]
                sums = _tree(partial, _add_sums)
            else:
                lists = [dask.delayed(limited(_shard_topk, threads), pure=True)(blk, s, k) for s in self.shards_]
                sums = dask.delayed(_neighbor_sums, pure=True)(shared, _tree(lists, _merge_topk, k), need)
            parts.append(dask.delayed(limited(_finish, threads), pure=True)(shared, blk, sums, method))
        return X, parts

    def predict_interval(self, X: Any, *, client: Any = None, threads_per_task: int = 1) -> dict[str, "da.Array"]:
        """Per-query intervals as a dict of lazy Dask arrays (fields of
        :class:`~nwbound.PredictionInterval`; see :func:`nwbound.dask.predict_interval`)."""
        X, parts = self._reduced(X, "predict_interval", client, threads_per_task)
        return interval_arrays(parts, X.chunks[0], len(self.classes_))

    def predict_proba(self, X: Any, *, client: Any = None, threads_per_task: int = 1) -> "da.Array":
        """Class probabilities, shape (n_queries, n_classes) (lazy)."""
        X, parts = self._reduced(X, "predict_proba", client, threads_per_task)
        return rows_from_blocks(parts, X.chunks[0], (len(self.classes_),), np.float64)

    def predict(self, X: Any, *, client: Any = None, threads_per_task: int = 1) -> "da.Array":
        """Most probable class of each query (lazy)."""
        X, parts = self._reduced(X, "predict", client, threads_per_task)
        return rows_from_blocks(parts, X.chunks[0], (), self.classes_.dtype)


def sharded_predict_interval(
    X_query: Any,
    X_train: Any,
    y_train: Any,
    *,
    sample_weight: Any = None,
    client: Any = None,
    threads_per_task: int = 1,
    **params: Any,
) -> dict[str, "da.Array"]:
    """``ShardedNadarayaWatson(**params).fit(X_train, y_train).predict_interval(X_query)``."""
    model = ShardedNadarayaWatson(**params).fit(X_train, y_train, sample_weight, client=client)
    return model.predict_interval(X_query, client=client, threads_per_task=threads_per_task)
