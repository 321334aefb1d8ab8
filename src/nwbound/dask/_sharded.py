"""The Nadaraya-Watson classifier over a training set split into shards.

For a training set too large for one worker. Every shard becomes an ordinary
:class:`~nwbound.NadarayaWatsonClassifier` restored with
:meth:`~nwbound.NadarayaWatsonClassifier.set_fitted_state` from the shard's
rows and the *global* classes, prior, bounding box and bandwidths, so each
shard computes exactly its share of every sum.

* Regular classifier: each shard's
  :meth:`~nwbound.NadarayaWatsonClassifier.kernel_statistics` of a query block
  (class sums, ``Σ a_i²``, ``Σ a_i d_i``, tail mass, distance histogram …) are
  additive over disjoint shards; a tree of
  :meth:`~nwbound.estimators.KernelStatistics.merge` reduces them and
  :meth:`~nwbound.NadarayaWatsonClassifier.interval_from_statistics` of the
  global model makes the interval.
* Localized classifier: each shard's neighbour index returns its k nearest
  rows of every query; a tree of merges keeps the k nearest overall (ties to
  the lower global row). The k nearest of a query among the union of the
  block's merged lists are its k nearest overall, so a localized model
  restored on just those rows (exact search) gives the statistics.

No bound code is repeated here and no private member of the estimator is
touched.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping
from typing import Any, NamedTuple

import dask
import dask.array as da
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.metrics import accuracy_score
from sklearn.utils.multiclass import check_classification_targets

from .._numerics import euclidean_norm
from .._validation import check_dtype, check_int_range
from ..estimators import (
    NadarayaWatsonClassifier,
    bandwidth_grid_from_nearest,
    bandwidth_grid_pilot,
    merge_statistics,
    pilot_nearest_distances,
    resolve_ranking_fraction,
    scale_bandwidth_from_nearest,
)
from ..estimators._nadaraya_watson import SCALE_NEIGHBORS
from ._common import check_query_array, compute, current_client, limited, rows_from_blocks, share
from ._predict import interval_arrays, named_interval_arrays

__all__ = ["ShardedNadarayaWatson", "sharded_predict_interval"]

# NadarayaWatsonClassifier parameters the sharded estimator does not take: Dask
# tasks are its parallelism (``threads_per_task`` sets BLAS threads per task), on the workers' CPUs.
# metric=/cross_fit: a learned space needs the whole training set's split and map before the
# shards; the sharded estimator takes features already mapped (and metric=None: today's sums).
# verbose: the in-memory fit's progress lines; the shards' fits are Dask tasks (its dashboard).
_NOT_TAKEN = ("n_jobs", "device", "metric", "metric_fraction", "cross_fit", "verbose")


# -- tasks (module-level functions: picklable for process workers) -----------------------------
class _Shard(NamedTuple):
    """One shard on a worker: its fitted estimator and what its neighbour lists need."""

    model: Any
    offset: int
    labels: np.ndarray
    weights: np.ndarray | None
    X: np.ndarray


def _restored(params: dict, template: dict, X: np.ndarray, labels: np.ndarray, weights: np.ndarray | None) -> Any:
    """A fitted estimator holding these rows and the global model's classes, prior, box and grid."""
    state = {**template, "X": np.ascontiguousarray(X), "labels": labels}
    state.pop("feature_unit", None)  # the rows come in the input's units (the template's rows may not)
    state.pop("weights", None)
    if weights is not None:
        state["weights"] = weights
    return NadarayaWatsonClassifier(**params).set_fitted_state(state, shard=True)


def _shard(params: dict, template: dict, X: np.ndarray, offset: int, labels: np.ndarray,
           weights: np.ndarray | None) -> _Shard:
    X = np.ascontiguousarray(X)
    return _Shard(_restored(params, template, X, labels, weights), offset, labels, weights, X)


def _now(model: Any, params: dict) -> Any:
    """A fitted shard or global model with the estimator's current parameters (a shallow copy,
    arrays shared): bound settings changed by ``set_params`` after fit take effect."""
    return copy.copy(model).set_params(**params)


def _shard_statistics(shard: _Shard, block: np.ndarray, bounds: Any, params: dict) -> Any:
    return _now(shard.model, params).kernel_statistics(block, bounds=bounds)


def _merge_two(a: Any, b: Any) -> Any:
    return merge_statistics([a, b])


def _shard_topk(shard: _Shard, block: np.ndarray, k: int) -> tuple:
    """The shard's k nearest rows of each query: (distances, global rows, labels, weights, features)."""
    # The model's own search (its index works in scaled coordinates), distances recomputed directly.
    dist, idx = shard.model.kneighbors(block, min(k, shard.labels.shape[0]))
    weights = None if shard.weights is None else shard.weights[idx]
    return np.asarray(dist, dtype=np.float64), idx + shard.offset, shard.labels[idx], weights, shard.X[idx]


def _merge_topk(a: tuple, b: tuple, k: int) -> tuple:
    """The k nearest of two top-k lists; ties go to the lower global row number."""
    dist, rows = np.concatenate([a[0], b[0]], axis=1), np.concatenate([a[1], b[1]], axis=1)
    order = np.lexsort((rows, dist), axis=1)[:, :k]

    def pick(u: np.ndarray | None, v: np.ndarray | None) -> np.ndarray | None:
        if u is None:
            return None
        both = np.concatenate([u, v], axis=1)
        return np.take_along_axis(both, order if both.ndim == 2 else order[:, :, None], axis=1)

    return tuple(pick(u, v) for u, v in zip(a, b))


def _neighbor_model(params: dict, template: dict, topk: tuple) -> Any:
    """A localized model (exact search) over the union of a block's merged neighbour lists:
    each query's k nearest among them are its k nearest overall."""
    _, rows, labels, weights, feats = topk
    _, first = np.unique(rows.ravel(), return_index=True)

    def flat(v: np.ndarray) -> np.ndarray:
        return v.reshape(-1, *v.shape[2:])[first]

    exact = {**params, "algorithm": "brute", "index_params": None}
    return _restored(exact, template, flat(feats), flat(labels), None if weights is None else flat(weights))


def _finish(model: Any, stats: Any, method: str, bounds: Any) -> Any:
    """The requested output of ``model`` from merged statistics."""
    out = model.interval_from_statistics(stats, bounds=bounds)
    if method == "predict_interval":
        return out.as_dict() if bounds is None else {name: iv.as_dict() for name, iv in out.items()}
    proba = (out if bounds is None else next(iter(out.values()))).proba
    return proba if method == "predict_proba" else model.classes_[np.argmax(proba, axis=1)]


def _shard_ranking(shard: _Shard, block: np.ndarray, fraction: float, params: dict) -> Any:
    # The whole set's sample fraction and the shard's row numbers: shards sample the rows it would.
    return _now(shard.model, params).bandwidth_ranking(block, fraction=fraction, row_offset=shard.offset)


def _merge_rankings(a: Any, b: Any) -> Any:
    return a.merge(b)


def _choose(model: Any, ranking: Any, bounds: Any) -> Any:
    return model.choose_bandwidths(ranking, bounds)


def _shard_statistics_at(shard: _Shard, block: np.ndarray, bounds: Any, choice: Any, name: Any, params: dict) -> Any:
    """The shard's statistics at each query's chosen bandwidth (``choice``, or ``choice[name]``)."""
    index = choice if name is None else choice[name]
    return _now(shard.model, params).kernel_statistics(block, bounds=_one_setting(bounds, name), bandwidth_index=index)


def _one_setting(bounds: Any, name: Any) -> Any:
    """``bounds`` restricted to the setting ``name`` (None: the estimator's own)."""
    if name is None:
        return None
    return {name: bounds[name]} if isinstance(bounds, Mapping) else [name]


def _joined(parts: list) -> dict:
    return {name: value for part in parts for name, value in part.items()}


def _neighbor_finish(params: dict, template: dict, block: np.ndarray, topk: tuple, method: str, bounds: Any) -> Any:
    model = _neighbor_model(params, template, topk)
    return _finish(model, model.kernel_statistics(block, bounds=bounds), method, bounds)




def _tree(items: list[Any], combine: Any, *extra: Any) -> Any:
    """Pairwise (log-depth) reduction of delayed values."""
    while len(items) > 1:
        items = [
            dask.delayed(combine, pure=True)(items[i], items[i + 1], *extra) if i + 1 < len(items) else items[i]
            for i in range(0, len(items), 2)
        ]
    return items[0]


# -- the estimator -------------------------------------------------------------------------------
class ShardedNadarayaWatson(ClassifierMixin, BaseEstimator):
    """:class:`~nwbound.NadarayaWatsonClassifier` over a row-sharded Dask training set.

    Results equal those of the single-machine estimator on the features as given,
    ``NadarayaWatsonClassifier(metric=None, ...)`` with the same parameters, fitted on the whole
    training set (up to floating-point summation order). The parameters are
    those of :class:`~nwbound.NadarayaWatsonClassifier` (same meaning, same
    checks), except ``n_jobs`` — Dask tasks are the parallelism — which is
    replaced by ``threads_per_task``, ``device`` (shards compute on the
    workers' CPUs), and ``metric``, ``metric_fraction`` and ``cross_fit``: there is no learned
    space (map the features first), so the defaults are ``lipschitz=None`` and
    ``bandwidth="scale"``, not the in-memory estimator's ``"auto"`` ones, whose held-out rows
    need the whole training set's split before the shards (user guide, "Defaults").

    Parameters
    ----------
    kernel, bandwidth, n_neighbors, lipschitz, margin, delta, bound, coverage, sigma, ck, \
empty_neighborhood, bandwidth_grid, ranking_fraction, histogram_bins, dtype, working_memory
        As for :class:`~nwbound.NadarayaWatsonClassifier`. With
        ``bandwidth="auto"`` and no ``bandwidth_grid`` the grid of
        :func:`~nwbound.estimators.default_bandwidth_grid` is computed over all
        shards; with ``bandwidth="scale"`` (the default here) the λ of
        :func:`~nwbound.estimators.scale_bandwidth` too, so both equal the
        in-memory estimator's.
    algorithm, index_params, random_state
        The neighbour index built on each shard for the localized classifier
        (``n_neighbors`` set), e.g. ``algorithm="hnsw"`` with
        ``index_params={"M": 16}``; the shards' lists are merged exactly. Not
        used by the regular classifier, as for the in-memory estimator.
    threads_per_task : int, default=1
        BLAS/OpenMP threads inside each task (threadpoolctl), so concurrent
        tasks do not oversubscribe a worker's cores.

    Attributes
    ----------
    estimator_ : NadarayaWatsonClassifier
        Fitted with the global ``classes_``, ``class_prior_``, bounding box and
        ``bandwidths_`` (and one training row per class); it turns merged
        statistics into intervals.
    template_ : dict
        The global model's fitted state (``get_fitted_state``) every shard is
        restored from with its own rows.
    shards_ : list of dask.delayed.Delayed
        One persisted shard per non-empty row chunk; ``.model`` is its fitted
        :class:`~nwbound.NadarayaWatsonClassifier` (its rows, global statistics).
    classes_, class_prior_, n_features_in_, n_samples_fit_, bandwidths_, ranking_fraction_
        As for the single-machine estimator.

    Notes
    -----
    As for the in-memory estimator, ``set_params`` of a bound parameter
    (``lipschitz``, ``margin``, ``delta``, ``bound``, ``coverage``, ``sigma``,
    ``ck``) or of ``empty_neighborhood``, ``histogram_bins``, ``working_memory``
    or ``threads_per_task`` after ``fit`` takes effect at the next prediction;
    predicting after any other parameter changed raises (call ``fit`` again).

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> from nwbound.dask import ShardedNadarayaWatson
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((400, 2)); y = (X[:, 0] > 0.5).astype(int)
    >>> model = ShardedNadarayaWatson(bandwidth=0.2, lipschitz=1.0).fit(da.from_array(X, chunks=(100, -1)), y)
    >>> iv = model.predict_interval(da.from_array(X[:5], chunks=(5, -1)))
    >>> iv["proba"].compute().shape
    (5, 2)
    """

    def __init__(
        self,
        *,
        kernel="epanechnikov",
        bandwidth="scale",
        n_neighbors=None,
        algorithm="auto",
        index_params=None,
        lipschitz=None,
        margin=None,
        delta=0.05,
        bound="chernoff",
        coverage="simultaneous",
        sigma=0.5,
        ck=None,
        empty_neighborhood="prior",
        bandwidth_grid=None,
        ranking_fraction="auto",
        histogram_bins=32,
        dtype="float64",
        working_memory=None,
        random_state=None,
        threads_per_task=1,
    ):
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.n_neighbors = n_neighbors
        self.algorithm = algorithm
        self.index_params = index_params
        self.lipschitz = lipschitz
        self.margin = margin
        self.delta = delta
        self.bound = bound
        self.coverage = coverage
        self.sigma = sigma
        self.ck = ck
        self.empty_neighborhood = empty_neighborhood
        self.bandwidth_grid = bandwidth_grid
        self.ranking_fraction = ranking_fraction
        self.histogram_bins = histogram_bins
        self.dtype = dtype
        self.working_memory = working_memory
        self.random_state = random_state
        self.threads_per_task = threads_per_task

    def _estimator_params(self) -> dict[str, Any]:
        """This estimator's parameters as NadarayaWatsonClassifier parameters (n_jobs off)."""
        params = self.get_params(deep=False)
        params.pop("threads_per_task")
        known = set(NadarayaWatsonClassifier().get_params(deep=False))
        missing = sorted(known - set(params) - set(_NOT_TAKEN))
        if missing:  # a new estimator parameter this class does not pass on yet
            raise TypeError(f"ShardedNadarayaWatson does not support NadarayaWatsonClassifier parameter(s) {missing}.")
        # metric=None: the features as given on every shard (the learned space of the in-memory
        # estimator's default metric="auto" needs the whole training set's split; _NOT_TAKEN).
        return {**params, "n_jobs": None, "metric": None}

    # ------------------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any, sample_weight: Any = None, *, client: Any = None) -> "ShardedNadarayaWatson":
        """Compute the global statistics and build one fitted estimator per shard.

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

        Returns
        -------
        self

        Raises
        ------
        TypeError, ValueError
            Bad inputs or parameters, with the estimator's own messages.

        Examples
        --------
        >>> import numpy as np, dask.array as da
        >>> from nwbound.dask import ShardedNadarayaWatson
        >>> X = np.linspace(0, 1, 60)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> m = ShardedNadarayaWatson(bandwidth=0.2, lipschitz=1.0).fit(da.from_array(X, chunks=(20, -1)), y)
        >>> m.classes_.tolist(), m.n_features_in_
        ([0, 1], 1)
        >>> ShardedNadarayaWatson().fit(X, y)
        Traceback (most recent call last):
        ...
        TypeError: X must be a dask.array.Array, got ndarray; wrap a NumPy array with dask.array.from_array(X, chunks=(rows_per_block, -1)) or call the estimator directly.
        """
        check_int_range(self.threads_per_task, "threads_per_task", 1, hint="BLAS threads inside each Dask task.")
        params = self._estimator_params()
        X = check_query_array(X, "X", None, check_dtype(self.dtype))
        n, d = X.shape
        if n < 2:
            raise ValueError(f"X needs at least 2 training rows, got {n}.")
        client = current_client(client)
        y = np.asarray(compute(client, y)[0] if isinstance(y, da.Array) else y)
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y must be 1-D with one label per row of X ({n}), got shape {y.shape}.")
        check_classification_targets(y)
        if isinstance(sample_weight, da.Array):
            (sample_weight,) = compute(client, sample_weight)
        low, high = (np.asarray(v, np.float64) for v in compute(client, X.min(axis=0), X.max(axis=0)))
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            raise ValueError("X contains NaN or infinity; the training inputs must be finite.")
        if self.n_neighbors is not None:
            check_int_range(self.n_neighbors, "n_neighbors", 1, n,
                            hint=f"It counts neighbours among the {n} training samples (None: use all).")

        # The global model: the estimator's own fit on rows of every class runs every
        # parameter check; a fit on the labels alone (zero-width inputs) checks y and
        # the weights and gives the prior. The box and grid of all shards replace theirs.
        first = np.sort(np.unique(y, return_index=True)[1])
        default_grid = isinstance(self.bandwidth, str) and self.bandwidth == "auto" and self.bandwidth_grid is None
        head = {**params, "n_neighbors": None}
        if default_grid:  # placeholder, replaced by the grid of all shards
            head["bandwidth_grid"] = [1.0]
        scale = isinstance(self.bandwidth, str) and self.bandwidth == "scale"
        if scale:  # placeholder, replaced by the λ of all shards
            head["bandwidth"] = 1.0
        # First the labels of all rows (the estimator's checks of y, e.g. its class count).
        full = NadarayaWatsonClassifier(**head).fit(np.zeros((n, 1), X.dtype), y, sample_weight=sample_weight).get_fitted_state()
        rows = np.asarray(compute(client, X[first])[0])
        # Each class's first row twice: a valid training set of 2 rows per class.
        rows, first_labels = np.concatenate([rows, rows]), np.concatenate([y[first], y[first]])
        template = NadarayaWatsonClassifier(**head).fit(rows, first_labels).get_fitted_state()
        if self.n_neighbors is not None:  # the index options are checked here, not in a task on a worker
            NadarayaWatsonClassifier(**{**head, "n_neighbors": 1}).fit(rows, first_labels)
        weights = full.get("weights")  # as the in-memory estimator keeps them (None when all 1)
        labels = np.asarray(full["labels"])
        template.update(class_prior_=full["class_prior_"], box_low=low, box_high=high)
        if default_grid:
            template["bandwidths_"] = self._default_grid(X, low, high, client)
        if scale:
            template["bandwidths_"] = np.array([self._scale_bandwidth(X, low, high, client)])
        estimator = NadarayaWatsonClassifier(**{**params, "n_neighbors": None}).set_fitted_state(template)

        # A localized shard only needs its index (any k works for it: its lists
        # are asked for min(k, rows) neighbours).
        shard_params = params if self.n_neighbors is None else {**params, "n_neighbors": 1}
        offsets = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(int)
        shards = []
        for j, blk in enumerate(X.to_delayed().ravel()):
            lo, hi = int(offsets[j]), int(offsets[j + 1])
            if hi > lo:  # an empty chunk adds nothing (and an index cannot be built on it)
                w_j = None if weights is None else weights[lo:hi]
                shards.append(dask.delayed(_shard, pure=True)(shard_params, template, blk, lo, labels[lo:hi], w_j))
        # Built once, kept on the workers (or in memory with the local scheduler).
        self.shards_ = list(client.persist(shards) if client is not None else dask.persist(*shards))
        self.template_ = template
        self.estimator_ = estimator
        self.classes_ = estimator.classes_
        self.class_prior_ = estimator.class_prior_
        self.n_features_in_ = d
        self.n_samples_fit_ = n
        self.bandwidths_ = np.asarray(template["bandwidths_"])
        self.ranking_fraction_ = resolve_ranking_fraction(self.ranking_fraction, n)
        self._fit_n_neighbors = self.n_neighbors  # the shards' kind (the estimators keep the rest)
        return self

    @staticmethod
    def _default_grid(X: "da.Array", low: np.ndarray, high: np.ndarray, client: Any) -> np.ndarray:
        """:func:`~nwbound.estimators.default_bandwidth_grid` over all shards: its pilot
        rows' nearest other row is the nearest over the shards."""
        diagonal = float(euclidean_norm(high - low))
        if diagonal == 0.0:
            return bandwidth_grid_from_nearest(np.zeros(1), diagonal)  # raises the estimator's explanation
        pilot_rows = bandwidth_grid_pilot(X.shape[0])
        pilot = np.asarray(compute(client, X[pilot_rows])[0], dtype=np.float64)
        parts = [dask.delayed(pilot_nearest_distances, pure=True)(blk, pilot) for blk in X.to_delayed().ravel()]
        nearest = np.sort(np.concatenate(compute(client, *parts), axis=1), axis=1)[:, 1]
        return bandwidth_grid_from_nearest(nearest, diagonal)

    def _scale_bandwidth(self, X: "da.Array", low: np.ndarray, high: np.ndarray, client: Any) -> float:
        """:func:`~nwbound.estimators.scale_bandwidth` over all shards: its pilot rows' k-th
        nearest row is the k-th nearest over the shards."""
        diagonal = float(euclidean_norm(high - low))
        n = X.shape[0]
        k = min(max(SCALE_NEIGHBORS, int(self.n_neighbors or 0)), n - 1)
        if not diagonal > 0.0:
            return scale_bandwidth_from_nearest(np.zeros(0), diagonal)
        pilot = np.asarray(compute(client, X[bandwidth_grid_pilot(n)])[0], dtype=np.float64)
        parts = [dask.delayed(pilot_nearest_distances, pure=True)(blk, pilot, k + 1) for blk in X.to_delayed().ravel()]
        nearest = np.sort(np.concatenate(compute(client, *parts), axis=1), axis=1)[:, k]
        return scale_bandwidth_from_nearest(nearest, diagonal)

    # ------------------------------------------------------------------------------------------
    def _outputs(self, X: Any, method: str, bounds: Any, client: Any) -> tuple["da.Array", list[Any]]:
        """One delayed output per query block: shard statistics merged, then finished."""
        if not hasattr(self, "estimator_"):
            raise NotFittedError("This ShardedNadarayaWatson is not fitted yet; call fit(X_train, y) first.")
        X = check_query_array(X, "X", self.n_features_in_, check_dtype(self.dtype))
        if method != "predict_interval" and bounds is None and self.lipschitz is None and self.margin is None:
            # p̂ needs no assumption; with one bandwidth it does not depend on the bound setting.
            bounds = {"p": {"lipschitz": 1.0, "bound": "hoeffding"}}
        params = self._estimator_params()
        fitted_k = getattr(self, "_fit_n_neighbors", self.n_neighbors)
        if self.n_neighbors != fitted_k:
            raise ValueError(
                f"n_neighbors={self.n_neighbors!r} was set after fit (fitted with n_neighbors={fitted_k!r}); "
                "the shards depend on it: call fit again."
            )
        # The global model with the current parameters: the bound settings (set_params after fit)
        # take effect; a changed parameter the fitted state depends on is refused by its own check.
        estimator = _now(self.estimator_, {**params, "n_neighbors": None})
        with warnings.catch_warnings():  # the settings are checked now, not in a task at compute time
            warnings.simplefilter("ignore")
            estimator.predict_interval(self.template_["X"][:1], bounds=bounds)
        client = current_client(client)
        threads = self.threads_per_task
        template = share(self.template_, client)
        shard_params = params if self.n_neighbors is None else {**params, "n_neighbors": 1}
        parts = []
        # Two rounds where the in-memory estimator ranks first (a polynomial kernel or a ranking sample);
        # otherwise its exhaustive pass, whose statistics then give the intervals, as in memory.
        ranked = self.n_neighbors is None and estimator.ranks_first(bounds, fraction=self.ranking_fraction_)
        if ranked:
            # bandwidth="auto": the shards' rankings add up, each query's bandwidth is chosen from
            # the sum, then the shards' exact statistics at that bandwidth add up.
            model = share(estimator, client)
            names = [None] if bounds is None else list(bounds)
            if method != "predict_interval":
                names = names[:1]  # p̂ comes from the first setting
            for blk in X.to_delayed().ravel():
                rankings = [dask.delayed(limited(_shard_ranking, threads), pure=True)(
                    s, blk, self.ranking_fraction_, shard_params) for s in self.shards_]
                choice = dask.delayed(_choose, pure=True)(model, _tree(rankings, _merge_rankings), bounds)
                outs = []
                for name in names:
                    stats = [dask.delayed(limited(_shard_statistics_at, threads), pure=True)(
                        s, blk, bounds, choice, name, shard_params) for s in self.shards_]
                    outs.append(dask.delayed(limited(_finish, threads), pure=True)(
                        model, _tree(stats, _merge_two), method, _one_setting(bounds, name)))
                parts.append(outs[0] if bounds is None or method != "predict_interval"
                             else dask.delayed(_joined, pure=True)(outs))
        elif self.n_neighbors is None:
            model = share(estimator, client)
            for blk in X.to_delayed().ravel():
                stats = [dask.delayed(limited(_shard_statistics, threads), pure=True)(s, blk, bounds, shard_params)
                         for s in self.shards_]
                merged = _tree(stats, _merge_two)
                parts.append(dask.delayed(limited(_finish, threads), pure=True)(model, merged, method, bounds))
        else:
            k = int(self.n_neighbors)
            for blk in X.to_delayed().ravel():
                lists = [dask.delayed(limited(_shard_topk, threads), pure=True)(s, blk, k) for s in self.shards_]
                merged = _tree(lists, _merge_topk, k)
                parts.append(dask.delayed(limited(_neighbor_finish, threads), pure=True)(
                    params, template, blk, merged, method, bounds))
        return X, parts

    def predict_interval(self, X: Any, bounds: Any = None, *, client: Any = None) -> dict[str, Any]:
        """Per-query intervals as lazy Dask arrays.

        Parameters
        ----------
        X : dask.array.Array of shape (n_queries, n_features)
            Chunked along rows only, dtype ``dtype``.
        bounds : None, mapping or list, default=None
            As for :meth:`~nwbound.NadarayaWatsonClassifier.predict_interval`: None for
            this estimator's own bound, or several settings from one pass.
        client : distributed.Client or None, default=None

        Returns
        -------
        dict
            Field name (of :class:`~nwbound.PredictionInterval`) → lazy Dask
            array; with ``bounds``, setting name → such a dict.

        Examples
        --------
        >>> import numpy as np, dask.array as da
        >>> from nwbound.dask import ShardedNadarayaWatson
        >>> X = np.linspace(0, 1, 60)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> m = ShardedNadarayaWatson(bandwidth=0.2, lipschitz=1.0).fit(da.from_array(X, chunks=(20, -1)), y)
        >>> out = m.predict_interval(da.from_array(X[:3], chunks=(3, -1)), bounds=["hoeffding", "chernoff"])
        >>> sorted(out), out["chernoff"]["epsilon"].shape
        (['chernoff', 'hoeffding'], (3, 2))
        """
        X, parts = self._outputs(X, "predict_interval", bounds, client)
        n_classes = len(self.classes_)
        if bounds is None:
            return interval_arrays(parts, X.chunks[0], n_classes)
        return named_interval_arrays(parts, X.chunks[0], n_classes, list(bounds))

    def predict_proba(self, X: Any, *, client: Any = None) -> "da.Array":
        """Class probabilities, shape (n_queries, n_classes) (lazy).

        Examples
        --------
        >>> import numpy as np, dask.array as da
        >>> from nwbound.dask import ShardedNadarayaWatson
        >>> X = np.linspace(0, 1, 60)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> m = ShardedNadarayaWatson(bandwidth=0.2).fit(da.from_array(X, chunks=(20, -1)), y)
        >>> m.predict_proba(da.from_array(X[:1], chunks=(1, -1))).compute()
        array([[1., 0.]])
        """
        X, parts = self._outputs(X, "predict_proba", None, client)
        return rows_from_blocks(parts, X.chunks[0], (len(self.classes_),), np.float64)

    def predict(self, X: Any, *, client: Any = None) -> "da.Array":
        """Most probable class of each query (lazy).

        Examples
        --------
        >>> import numpy as np, dask.array as da
        >>> from nwbound.dask import ShardedNadarayaWatson
        >>> X = np.linspace(0, 1, 60)[:, None]; y = np.where(X[:, 0] > 0.5, "b", "a")
        >>> m = ShardedNadarayaWatson(bandwidth=0.2).fit(da.from_array(X, chunks=(20, -1)), y)
        >>> m.predict(da.from_array(X[-2:], chunks=(2, -1))).compute().tolist()
        ['b', 'b']
        """
        X, parts = self._outputs(X, "predict", None, client)
        return rows_from_blocks(parts, X.chunks[0], (), self.classes_.dtype)

    def score(self, X: Any, y: Any, sample_weight: Any = None, *, client: Any = None) -> float:
        """Accuracy of :meth:`predict` on ``X`` against the labels ``y`` (computed now).

        Parameters
        ----------
        X : dask.array.Array of shape (n_queries, n_features)
        y : array-like of shape (n_queries,)
            True labels (a Dask array is computed).
        sample_weight : array-like of shape (n_queries,), default=None
        client : distributed.Client or None, default=None

        Returns
        -------
        float

        Examples
        --------
        >>> import numpy as np, dask.array as da
        >>> from nwbound.dask import ShardedNadarayaWatson
        >>> X = np.linspace(0, 1, 60)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> m = ShardedNadarayaWatson(bandwidth=0.1).fit(da.from_array(X, chunks=(20, -1)), y)
        >>> m.score(da.from_array(X[[5, 55]], chunks=(2, -1)), [0, 1])
        1.0
        """
        client = current_client(client)
        pred, *rest = compute(client, self.predict(X, client=client), *(v for v in (y, sample_weight)
                                                                        if isinstance(v, da.Array)))
        y = rest.pop(0) if isinstance(y, da.Array) else y
        sample_weight = rest.pop(0) if isinstance(sample_weight, da.Array) else sample_weight
        return float(accuracy_score(np.asarray(y), np.asarray(pred), sample_weight=sample_weight))


def sharded_predict_interval(
    X_query: Any,
    X_train: Any,
    y_train: Any,
    *,
    sample_weight: Any = None,
    client: Any = None,
    bounds: Any = None,
    **params: Any,
) -> dict[str, Any]:
    """``ShardedNadarayaWatson(**params).fit(X_train, y_train).predict_interval(X_query, bounds)``.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> from nwbound.dask import sharded_predict_interval
    >>> X = np.linspace(0, 1, 60)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> out = sharded_predict_interval(da.from_array(X[:4], chunks=(2, -1)), da.from_array(X, chunks=(30, -1)), y,
    ...                                bandwidth=0.2, lipschitz=1.0)
    >>> out["kappa"].compute().shape
    (4,)
    """
    model = ShardedNadarayaWatson(**params).fit(X_train, y_train, sample_weight, client=client)
    return model.predict_interval(X_query, bounds, client=client)
