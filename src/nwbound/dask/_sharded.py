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

* The default model (``metric="auto"``, ``lipschitz="auto"``, cross-fitting): the rows are
  split at the client as in memory (by the labels alone), the map and the pilot L fitted there
  on the metric share (:mod:`._space`), the NW share mapped on the workers into the shards; the
  held-out check of L (:func:`~nwbound.spaces.choose_lipschitz`) reads its intervals from the
  shards; a cross-fitted estimator's models (each at δ/K) are intersected per query block
  (:func:`~nwbound.spaces.intersect_intervals`).

No bound code is repeated here and no private member of the estimator is
touched.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Mapping
from numbers import Integral
from typing import Any

import dask
import dask.array as da
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import accuracy_score
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets

from .._numerics import euclidean_norm, feature_unit
from .._result import PredictionInterval
from .._validation import check_dtype, check_int_range, check_params_as_fitted
from ..estimators import (
    NadarayaWatsonClassifier,
    bandwidth_grid_from_nearest,
    bandwidth_grid_pilot,
    pilot_nearest_distances,
    resolve_ranking_fraction,
    scale_bandwidth_from_nearest,
    scale_neighbor_rank,
)
from ..spaces import (
    residual_rows,
    GroupsError,
    LearnedSpace,
    LipschitzAutoReport,
    check_groups,
    check_map_classes,
    check_rows_split,
    choose_lipschitz,
    chooses_lipschitz,
    cross_fit_attributes,
    shared_residual_raise,
    divided_bounds,
    lipschitz_units,
    metric_kind,
    nw_share_weights,
    pilot_lipschitz,
    split_seed,
    two_constant_pilot,
)
from ._common import check_query_array, compute, current_client, rows_from_blocks, share
from ._predict import lazy_interval, lazy_intervals
from ._parts import _HeldOutCheck, _Part, _head_params, _part_outputs, _part_params
from ._space import row_layouts
from ._tasks import _cross_finish, _now, _nw_block, _shard

__all__ = ["ShardedNadarayaWatson", "sharded_predict_interval"]

# The NadarayaWatsonClassifier parameters a cluster cannot honour at other values than these,
# and the fix the error names.
_ONLY = {
    "n_jobs": (None, "the Dask tasks are the parallelism: leave n_jobs=None and set threads_per_task (BLAS "
                     "threads inside each task) or the number of workers"),
    "device": (None, "the shards compute on the workers' CPUs: leave device=None (for a GPU, fit "
                     "NadarayaWatsonClassifier(device=...) in memory)"),
    "verbose": (0, "the in-memory fit's progress lines; the shards' fits are Dask tasks: leave verbose=0 "
                   "and follow them on the Dask dashboard"),
}


def check_sharded_params(params: Mapping[str, Any]) -> None:
    """Refuse the NadarayaWatsonClassifier parameter values a sharded fit cannot honour.

    Every other value is checked by the estimator's own rules (its ``_parameter_constraints`` and
    its fit), which the sharded estimator shares.

    Parameters
    ----------
    params : mapping
        NadarayaWatsonClassifier parameters (``get_params(deep=False)``).

    Raises
    ------
    ValueError
        Naming the parameter, its value and the fix.

    Examples
    --------
    >>> from nwbound.dask._sharded import check_sharded_params
    >>> check_sharded_params({"n_jobs": None, "device": None, "metric": None, "lipschitz": 1.0})
    >>> check_sharded_params({"n_jobs": 4})
    Traceback (most recent call last):
    ...
    ValueError: ShardedNadarayaWatson cannot honour n_jobs=4: the Dask tasks are the parallelism: leave n_jobs=None and set threads_per_task (BLAS threads inside each task) or the number of workers.
    """
    for name, (allowed, fix) in _ONLY.items():
        if params.get(name, allowed) is not allowed:
            raise ValueError(f"ShardedNadarayaWatson cannot honour {name}={params[name]!r}: {fix}.")
    metric = params.get("metric")
    kind = metric_kind(metric)
    if kind == "standard":
        raise ValueError(
            "ShardedNadarayaWatson cannot honour metric='standard': it standardises on every training row at the "
            "client. Standardise the features on the cluster first and pass metric=None, or use metric='auto' "
            "(the default)."
        )
    if kind not in (None, "auto"):
        raise ValueError(
            f"ShardedNadarayaWatson cannot honour metric={metric!r}: a map given as an estimator is an arbitrary "
            "object that the shards' fitted state cannot hold. Map the features first (X.map_blocks(map.transform)) "
            "and pass metric=None, or use metric='auto' (the default)."
        )


def _signature() -> inspect.Signature:
    """NadarayaWatsonClassifier's ``__init__`` signature with ``threads_per_task`` added."""
    base = inspect.signature(NadarayaWatsonClassifier.__init__)
    own = inspect.Parameter("threads_per_task", inspect.Parameter.KEYWORD_ONLY, default=1)
    return base.replace(parameters=[*base.parameters.values(), own])


_SIGNATURE = _signature()


# -- the estimator -------------------------------------------------------------------------------
class ShardedNadarayaWatson(ClassifierMixin, BaseEstimator):
    """:class:`~nwbound.NadarayaWatsonClassifier` over a row-sharded Dask training set.

    A thin wrapper: its parameters are those of :class:`~nwbound.NadarayaWatsonClassifier` (the
    same names, defaults and checks, read from the estimator's signature and
    ``_parameter_constraints``) plus ``threads_per_task``. The defaults are the library's
    default model (``metric="auto"``, ``lipschitz="auto"``, ``bandwidth="auto"``, cross-fitted
    below the row cap): the rows are split at the client as the estimator splits them (by the
    labels alone), the map and L are fitted at the client on the metric share (gathered there:
    ``metric_fraction`` of the rows), the kernel sums' rows are mapped and summed on the workers,
    and the bound is computed at the client. Results equal those of the in-memory estimator with
    the same parameters fitted on the whole training set, up to floating-point summation order
    (user guide, "Dask"). A value a cluster cannot honour (``n_jobs``, ``device``,
    ``metric="standard"`` or a map given as an estimator) raises a ValueError that names it and
    the fix.

    Parameters
    ----------
    kernel, bandwidth, n_neighbors, lipschitz, margin, delta, bound, coverage, sigma, ck, \
empty_neighborhood, bandwidth_grid, ranking_fraction, histogram_bins, dtype, working_memory, \
metric, metric_fraction, cross_fit
        As for :class:`~nwbound.NadarayaWatsonClassifier`. With
        ``bandwidth="auto"`` and no ``bandwidth_grid`` the grid of
        :func:`~nwbound.estimators.default_bandwidth_grid` is computed over all
        shards; with ``bandwidth="scale"`` the λ of
        :func:`~nwbound.estimators.scale_bandwidth` too, so both equal the
        in-memory estimator's. ``metric`` is None or ``"auto"``.
    algorithm, index_params, random_state
        The neighbour index built on each shard for the localized classifier
        (``n_neighbors`` set), e.g. ``algorithm="hnsw"`` with
        ``index_params={"M": 16}``; the shards' lists are merged exactly. Not
        used by the regular classifier, as for the in-memory estimator.
        ``random_state`` also seeds the split, ``metric="auto"`` and the check of L, drawn as in
        memory (a ``RandomState`` gives the in-memory fit's seeds).
    n_jobs, device
        Must stay None: Dask tasks are the parallelism, on the workers' CPUs.
    point_estimate : {"auto", "nw"}, default="auto"
        Accepted, but the sharded fit always reports the kernel estimate, as
        ``point_estimate="nw"`` in memory: ``"auto"``'s point model is fitted on every training
        row, which would gather the whole training set at the client (``point_model_`` is None).
        Its intervals, certified rows and certified classes are those of the in-memory default;
        only ``proba`` (and the predicted class of uncertified rows) differ.
    threads_per_task : int, default=1
        BLAS/OpenMP threads inside each task (threadpoolctl), so concurrent
        tasks do not oversubscribe a worker's cores.

    Attributes
    ----------
    estimator_ : NadarayaWatsonClassifier
        The client's model (the first of ``cross_fit_models_`` when cross-fitted): fitted
        with the global ``classes_``, ``class_prior_``, bounding box and ``bandwidths_``, the
        learned space and the chosen L (and a stand-in training set); it turns merged
        statistics into intervals.
    cross_fit_models_ : list of NadarayaWatsonClassifier or None
        When cross-fitted, one client's model per layout, each at level δ/K, as in memory;
        their intervals are intersected (:func:`~nwbound.spaces.intersect_intervals`).
    template_ : dict
        ``estimator_``'s fitted state (``get_fitted_state``).
    shards_ : list of dask.delayed.Delayed
        One persisted shard per non-empty row chunk of each model's kernel-sum rows; ``.model``
        is its fitted :class:`~nwbound.NadarayaWatsonClassifier` (its rows, mapped, with the
        global statistics).
    metric_, metric_report_, lipschitz_, lipschitz_report_, metric_rows_, check_rows_, nw_rows_
        As for the single-machine estimator (cross-fitted: :func:`~nwbound.spaces.cross_fit_attributes`).
    classes_, class_prior_, n_features_in_, n_samples_fit_, bandwidths_, ranking_fraction_
        As for the single-machine estimator.
    point_model_ : None
        Always None: the sharded fit keeps the kernel estimate (see ``point_estimate``).

    Notes
    -----
    As for the in-memory estimator, ``set_params`` of a bound parameter
    (``lipschitz``, ``margin``, ``delta``, ``bound``, ``coverage``, ``sigma``,
    ``ck``) or of ``empty_neighborhood``, ``histogram_bins``, ``working_memory``
    or ``threads_per_task`` after ``fit`` takes effect at the next prediction;
    predicting after any other parameter changed raises (call ``fit`` again).
    The in-memory warning that cross-fitted models contradict each other on more than δ of the
    queries is not raised here (the intervals are the same: the hull on those rows).

    Examples
    --------
    The library's default model on a (here local, in-process) Dask cluster, equal to the in-memory one:

    >>> import numpy as np
    >>> import dask.array as da
    >>> from distributed import Client, LocalCluster
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.dask import ShardedNadarayaWatson
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (800, 2)); y = (rng.random(800) < 1 / (1 + np.exp(-6 * X[:, 0]))).astype(int)
    >>> Q = np.array([[-0.8, 0.0], [0.0, 0.0], [0.8, 0.0]])
    >>> with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
    ...     with Client(cluster) as client:
    ...         model = ShardedNadarayaWatson().fit(da.from_array(X, chunks=(200, -1)), y, client=client)
    ...         iv = model.predict_interval(da.from_array(Q, chunks=(3, -1)), client=client).compute()
    >>> in_memory = NadarayaWatsonClassifier().fit(X, y)
    >>> reference = in_memory.predict_interval(Q)
    >>> bool(np.allclose(iv.lower, reference.lower, rtol=1e-10, atol=1e-12) and np.allclose(iv.upper, reference.upper, rtol=1e-10, atol=1e-12))
    True
    >>> bool((iv.certified == reference.certified).all())
    True
    >>> model.lipschitz_ == in_memory.lipschitz_, len(model.cross_fit_models_)
    (True, 2)

    The paper's classifier on the features as given, without a cluster (Dask's local scheduler):

    >>> model = ShardedNadarayaWatson(metric=None, bandwidth=0.2, lipschitz=1.0).fit(da.from_array(X, chunks=(200, -1)), y)
    >>> model.predict_interval(da.from_array(Q, chunks=(3, -1))).compute().proba.shape
    (3, 2)
    """

    # One copy of every rule: the estimator's own constraints, with this class's one parameter.
    _parameter_constraints: dict = {
        **NadarayaWatsonClassifier._parameter_constraints,
        "threads_per_task": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, **params: Any) -> None:
        # The signature (set below) is NadarayaWatsonClassifier's plus threads_per_task: defaults
        # are read from it, never restated here.
        names = _SIGNATURE.parameters
        unknown = sorted(set(params) - set(names))
        if unknown:
            raise TypeError(f"ShardedNadarayaWatson got unexpected keyword argument(s) {unknown}; its parameters "
                            f"are NadarayaWatsonClassifier's and threads_per_task.")
        for name, parameter in names.items():
            if name != "self":
                setattr(self, name, params.get(name, parameter.default))

    def _estimator_params(self) -> dict[str, Any]:
        """This estimator's parameters as NadarayaWatsonClassifier parameters, after the checks of
        :func:`check_sharded_params` (``threads_per_task`` dropped)."""
        self._validate_params()  # scikit-learn's check of the estimator's own constraints
        params = self.get_params(deep=False)
        params.pop("threads_per_task")
        check_sharded_params(params)
        # The point model would be fitted on every training row, gathered at the client: the shards'
        # models keep the kernel estimate (point_estimate="nw"), whatever this estimator's value.
        params["point_estimate"] = "nw"
        return params

    # ------------------------------------------------------------------------------------------
    def fit(self, X: Any, y: Any, sample_weight: Any = None, groups: Any = None, *,
            client: Any = None) -> "ShardedNadarayaWatson":
        """Fit the estimator's model on a row-sharded training set, as the in-memory ``fit`` does.

        The labels (and weights, groups) are held at the client: n values, not n × d. Where the
        in-memory fit splits the rows (``metric="auto"``, ``lipschitz="auto"``, cross-fitting), the
        client splits them the same way; the metric share's rows are gathered at the client, which
        fits the map and the pilot L there; the NW share is mapped on the workers and becomes the
        shards; the held-out check of L runs its kernel statistics on the shards.

        Parameters
        ----------
        X : dask.array.Array of shape (n_samples, n_features)
            Training inputs; each row chunk is a shard (of its rows in the kernel sums).
            Chunked along rows only, dtype equal to the ``dtype`` parameter (default float64).
        y : array-like of shape (n_samples,)
            Labels (held in memory: n values, not n × d).
        sample_weight : array-like of shape (n_samples,), default=None
        groups : array-like of shape (n_samples,), default=None
            As for :meth:`~nwbound.NadarayaWatsonClassifier.fit`: each group on one side of every split.
        client : distributed.Client or None
            None: the active default client if any, else the local scheduler.

        Returns
        -------
        self

        Raises
        ------
        TypeError, ValueError
            Bad inputs or parameters, with the estimator's own messages; a value this
            estimator cannot honour (:func:`check_sharded_params`).

        Examples
        --------
        >>> import numpy as np, dask.array as da
        >>> from nwbound.dask import ShardedNadarayaWatson
        >>> X = np.linspace(0, 1, 60)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> m = ShardedNadarayaWatson(metric=None, bandwidth=0.2, lipschitz=1.0).fit(da.from_array(X, chunks=(20, -1)), y)
        >>> m.classes_.tolist(), m.n_features_in_
        ([0, 1], 1)
        >>> ShardedNadarayaWatson(metric=None, lipschitz=1.0).fit(X, y)
        Traceback (most recent call last):
        ...
        TypeError: X must be a dask.array.Array, got ndarray; wrap a NumPy array with dask.array.from_array(X, chunks=(rows_per_block, -1)) or call the estimator directly.
        """
        params = self._estimator_params()
        dtype = check_dtype(self.dtype)
        X = check_query_array(X, "X", None, dtype)
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
        if isinstance(groups, da.Array):
            (groups,) = compute(client, groups)
        groups = check_groups(groups, n)
        low, high = (np.asarray(v, np.float64) for v in compute(client, X.min(axis=0), X.max(axis=0)))
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            raise ValueError("X contains NaN or infinity; the training inputs must be finite.")

        # The labels, prior and weights as the estimator checks and keeps them: its own fit on the
        # labels alone (zero-width inputs) checks y and the weights and gives the prior.
        full = NadarayaWatsonClassifier(**_head_params(params)).fit(
            np.zeros((n, 1), X.dtype), y, sample_weight=sample_weight).get_fitted_state()
        labels, weights = np.asarray(full["labels"]), full.get("weights")
        layouts, seed = row_layouts(params, labels, groups, self.random_state)
        needed = np.zeros(0, np.intp)
        if layouts[0] is not None:
            if feature_unit(np.stack([low, high]), dtype) != 1.0:
                raise ValueError(
                    "dtype='float32' features beyond 2^±100 are stored in a power-of-two unit, which a split "
                    "of the rows (metric='auto' or lipschitz='auto') does not follow on a cluster: pass "
                    "dtype='float64', or metric=None with a numeric lipschitz."
                )
            # The metric shares (their map and check rows) come to the client, in row order.
            needed = np.unique(np.concatenate([metric_rows for metric_rows, _ in layouts]))
        gathered = np.asarray(compute(client, X[needed])[0]) if needed.size else None

        def rows(r: np.ndarray) -> np.ndarray:  # training rows r (of the metric shares), in r's order
            return gathered[np.searchsorted(needed, r)]

        def fit_part(layout: Any, floor: float | None = None) -> tuple[_Part, dict]:
            # Each model draws its seeds as the in-memory fit's: one model on from random_state itself
            # (after the split's draw), cross-fitted ones each from a copy of it (clone copies it).
            draws = self.random_state if len(layouts) == 1 else clone(self.random_state, safe=False)
            model_seed = seed if len(layouts) == 1 else split_seed(draws)
            return self._fit_part(X, params, full, groups, layout, rows, model_seed, draws, len(layouts), client, floor)

        fits = [fit_part(layout) for layout in layouts]
        shared = shared_residual_raise([part.estimator.metric_ for part, _ in fits])
        if shared is not None:  # the in-memory rule: one model's raise of L_r is every model's
            fits = [fit if fit[0].estimator.metric_.residual_lipschitz_ >= shared else fit_part(layout, shared)
                    for fit, layout in zip(fits, layouts)]
        parts = [part for part, _ in fits]
        first = fits[0][1]
        self.parts_ = parts
        self.estimator_ = parts[0].estimator
        self.template_ = parts[0].template
        self.shards_ = [shard for part in parts for shard in part.shards]
        self.classes_ = self.estimator_.classes_
        self.class_prior_ = self.estimator_.class_prior_
        self.n_features_in_ = d
        self.point_model_ = None  # the kernel estimate (point_estimate): no point model on a cluster
        self.n_samples_fit_ = sum(record["n_samples"] for _, record in fits)  # a row counts once per model
        self.bandwidths_ = first["bandwidths"]
        self.ranking_fraction_ = parts[0].ranking_fraction
        self.metric_rows_, self.check_rows_, self.nw_rows_ = first["metric_rows"], first["check_rows"], first["nw_rows"]
        if len(parts) > 1:  # the in-memory estimator's rule (n_samples_fit_ above counts the shards' rows)
            self.cross_fit_models_ = [part.estimator for part in parts]
            adopted = cross_fit_attributes(self.cross_fit_models_,
                                           chooses_lipschitz=chooses_lipschitz(params["lipschitz"], params["margin"]))
            for name in ("metric_", "metric_report_", "check_rows_", "lipschitz_", "lipschitz_report_"):
                setattr(self, name, adopted[name])
        else:
            self.cross_fit_models_ = None
            self.metric_, self.metric_report_ = self.estimator_.metric_, self.estimator_.metric_report_
            self.lipschitz_, self.lipschitz_report_ = self.estimator_.lipschitz_, self.estimator_.lipschitz_report_
        self._probe = np.asarray(compute(client, X[:1])[0])  # a query row the settings are checked on
        # What the client's models cannot check: the layout, and random_state (see _tasks._now).
        self._fit_layout = {"n_neighbors": self.n_neighbors, "cross_fit": self.cross_fit,
                            "random_state": self.random_state}
        return self

    def _fit_part(self, X: "da.Array", params: dict, full: dict, groups: np.ndarray | None, layout: Any,
                  rows: Any, seed: int | None, draws: Any, n_parts: int, client: Any,
                  floor: float | None = None) -> tuple[_Part, dict]:
        """One model: its split, map and L at the client, its NW share mapped into shards.

        ``seed`` seeds the model's split and map; the pilot L and the check of L draw theirs from
        ``draws`` (:func:`~nwbound.spaces.split_seed`), in the in-memory fit's order. ``floor``: the
        space's ``residual_lipschitz_floor`` (:func:`~nwbound.spaces.shared_residual_raise`)."""
        dtype = check_dtype(params["dtype"])
        labels, weights, classes = np.asarray(full["labels"]), full.get("weights"), full["classes_"]
        model_params, shard_params = _part_params(params, n_parts)
        auto_l = chooses_lipschitz(params["lipschitz"], params["margin"])
        space, map_rows, check_rows, nw_rows = None, np.zeros(0, np.intp), np.zeros(0, np.intp), None
        if layout is None:  # nothing split: the features as given, every row in the kernel sums
            Z, nw_labels, nw_w = X, labels, weights
        else:
            metric_rows, nw_rows = layout
            map_rows = metric_rows
            if auto_l:
                try:
                    map_rows, check_rows = check_rows_split(labels, metric_rows, groups=groups, random_state=seed)
                except GroupsError as exc:
                    raise GroupsError(f"{exc} Give more groups, or a numeric lipschitz (no check split).") from None
                except ValueError as exc:  # the in-memory fit names its settings' fixes around it
                    raise ValueError(f"{exc} Give more rows, or metric=None with a numeric lipschitz.") from None
            if metric_kind(params["metric"]) == "auto":
                check_map_classes(labels[map_rows], params["metric"])
                held = (rows(check_rows), labels[check_rows]) if auto_l else None
                unseen = None
                if auto_l:  # the in-memory fit's rows for the raise-only L_r (at most 8 000), gathered
                    unseen = residual_rows(check_rows, nw_rows, seed)
                    unseen = (np.asarray(compute(client, X[unseen])[0]), labels[unseen])
                space = LearnedSpace("auto", random_state=seed, residual_lipschitz_floor=floor).fit(
                    rows(map_rows), labels[map_rows], None if weights is None else weights[map_rows].astype(np.float64),
                    groups=None if groups is None else groups[map_rows], held_out=held, unseen=unseen)
            Z = self._nw_share(X, nw_rows, space, dtype, client)
            nw_labels, nw_w = labels[nw_rows], nw_share_weights(weights, nw_rows, dtype)
        n_nw = Z.shape[0]
        if self.n_neighbors is not None:
            kept = "" if layout is None else f" (the split kept {X.shape[0] - n_nw} of {X.shape[0]} rows out of them)"
            check_int_range(self.n_neighbors, "n_neighbors", 1, n_nw,
                            hint=f"It counts neighbours among the {n_nw} rows in the kernel sums{kept} (None: use all).")
        low, high = (np.asarray(v, np.float64) for v in compute(client, Z.min(axis=0), Z.max(axis=0)))

        # The client's model: the estimator's own fit on a stand-in training set (one row per class,
        # twice) runs every parameter check; the box and grid of all shards replace its own.
        head = _head_params(params)
        first_row = np.asarray(compute(client, Z[:1])[0])
        template = NadarayaWatsonClassifier(**head).fit(
            np.repeat(first_row, 2 * classes.shape[0], axis=0), np.repeat(classes, 2)).get_fitted_state()
        if self.n_neighbors is not None:  # the index options are checked here, not in a task on a worker
            NadarayaWatsonClassifier(**{**head, "n_neighbors": 1}).fit(template["X"], classes[template["labels"]])
        template.update(class_prior_=full["class_prior_"], box_low=low, box_high=high)
        if isinstance(self.bandwidth, str) and self.bandwidth == "auto" and self.bandwidth_grid is None:
            template["bandwidths_"] = self._default_grid(Z, low, high, client)
        elif isinstance(self.bandwidth, str) and self.bandwidth == "scale":
            template["bandwidths_"] = np.array([self._scale_bandwidth(Z, low, high, client)])

        offsets = np.concatenate([[0], np.cumsum(Z.chunks[0])]).astype(int)
        shards = []
        for j, blk in enumerate(Z.to_delayed().ravel()):
            lo, hi = int(offsets[j]), int(offsets[j + 1])
            if hi > lo:  # an empty chunk adds nothing (and an index cannot be built on it)
                w_j = None if nw_w is None else nw_w[lo:hi]
                shards.append(dask.delayed(_shard, pure=True)(shard_params, template, blk, lo, nw_labels[lo:hi], w_j))
        # Built once, kept on the workers (or in memory with the local scheduler).
        shards = list(client.persist(shards) if client is not None else dask.persist(*shards))
        fraction = resolve_ranking_fraction(self.ranking_fraction, n_nw)

        model_template = dict(template)
        if space is not None:  # the client's model takes queries in the features as given, and maps them
            model_template.update(metric_=space, n_features_in_=X.shape[1])
        if auto_l:  # the held-out check of L, its kernel statistics on the shards
            if space is not None:  # metric="auto": the two-constant space states its pilot L
                pilot_rows, (pilot, source) = None, two_constant_pilot(space)
            else:
                pilot_rows = rows(map_rows)
                pilot, source = pilot_lipschitz(pilot_rows, labels[map_rows], random_state=split_seed(draws)), ""
            stand_in = LipschitzAutoReport(value=pilot, pilot=pilot, n_pilot=0, n_check=0, selection=None,
                                           all_rejected=False, units="")
            trial = {**model_template, "lipschitz_": pilot, "lipschitz_report_": stand_in, "pilot_lipschitz": pilot}
            trial_part = _Part(NadarayaWatsonClassifier(**model_params).set_fitted_state(trial), trial, shards, fraction)
            report = choose_lipschitz(
                _HeldOutCheck(trial_part, params, n_parts, client, self.threads_per_task), pilot_rows,
                labels[map_rows], rows(check_rows), classes[labels[check_rows]], units=lipschitz_units(space),
                random_state=split_seed(draws), pilot=pilot, pilot_source=source)
            model_template.update(lipschitz_=report.value, lipschitz_report_=report, pilot_lipschitz=pilot)
        estimator = NadarayaWatsonClassifier(**model_params).set_fitted_state(model_template)
        record = {"n_samples": n_nw, "bandwidths": np.asarray(template["bandwidths_"]),
                  "metric_rows": np.zeros(0, np.intp) if layout is None else layout[0], "check_rows": check_rows,
                  "nw_rows": np.arange(n_nw) if layout is None else nw_rows}
        return _Part(estimator, model_template, shards, fraction), record

    @staticmethod
    def _nw_share(X: "da.Array", nw_rows: np.ndarray, space: Any, dtype: Any, client: Any) -> "da.Array":
        """The rows in the kernel sums (``nw_rows``, sorted), mapped chunk by chunk on the workers
        and kept there: a Dask array with one chunk per training chunk."""
        shared = None if space is None else share(space, client)
        width = X.shape[1] if space is None else int(space.n_components_)
        offsets = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(int)
        blocks, sizes = [], []
        for j, blk in enumerate(X.to_delayed().ravel()):
            lo, hi = np.searchsorted(nw_rows, offsets[j : j + 2])
            if hi > lo:
                blocks.append(dask.delayed(_nw_block, pure=True)(blk, nw_rows[lo:hi] - offsets[j], shared, dtype))
                sizes.append(int(hi - lo))
        blocks = list(client.persist(blocks) if client is not None else dask.persist(*blocks))
        return da.concatenate([da.from_delayed(b, shape=(s, width), dtype=dtype) for b, s in zip(blocks, sizes)])

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
        k = scale_neighbor_rank(n, self.n_neighbors)
        if k < 1 or not diagonal > 0.0:
            return scale_bandwidth_from_nearest(np.zeros(0), diagonal)
        pilot = np.asarray(compute(client, X[bandwidth_grid_pilot(n)])[0], dtype=np.float64)
        parts = [dask.delayed(pilot_nearest_distances, pure=True)(blk, pilot, k + 1) for blk in X.to_delayed().ravel()]
        nearest = np.sort(np.concatenate(compute(client, *parts), axis=1), axis=1)[:, k]
        return scale_bandwidth_from_nearest(nearest, diagonal)

    # ------------------------------------------------------------------------------------------
    def _outputs(self, X: Any, method: str, bounds: Any, client: Any) -> tuple["da.Array", list[Any]]:
        """One delayed output per query block: each model's shard statistics merged and finished
        at the client's model; a cross-fitted estimator's models combined as in memory."""
        if not hasattr(self, "parts_"):
            raise NotFittedError("This ShardedNadarayaWatson is not fitted yet; call fit(X_train, y) first.")
        X = check_query_array(X, "X", self.n_features_in_, check_dtype(self.dtype))
        params = self._estimator_params()
        # What shapes the shards and the number of models, which the client's models do not see
        # (they are regular and one model each); they check every other parameter themselves.
        check_params_as_fitted(self, self._fit_layout)
        n_parts = len(self.parts_)
        bounded = method == "predict_interval" or bounds is not None or not (self.lipschitz is None
                                                                            and self.margin is None)
        # p̂ needs no assumption; with one bandwidth it does not depend on the bound setting.
        asked = bounds if bounded else {"p": {"lipschitz": 1.0, "bound": "hoeffding"}}
        if n_parts > 1:  # each model's intervals at δ/K, intersected below
            asked, part_method = divided_bounds(asked, n_parts), "predict_interval"
        else:
            part_method = method
        # The client's model with the current parameters: the bound settings (set_params after fit)
        # take effect; a changed parameter the fitted state depends on is refused by its own check.
        model_params, _ = _part_params(params, n_parts)
        with warnings.catch_warnings():  # the settings are checked now, not in a task at compute time
            warnings.simplefilter("ignore")
            _now(self.parts_[0].estimator, model_params).predict_interval(self._probe, bounds=asked)
        client = current_client(client)
        blocks = list(X.to_delayed().ravel())
        outs = [_part_outputs(part, blocks, part_method, asked, params, n_parts, client, self.threads_per_task)
                for part in self.parts_]
        if n_parts == 1:
            return X, outs[0]
        names = None if asked is None else list(asked)
        return X, [dask.delayed(_cross_finish, pure=True)(method, names, self.classes_, bounded, *per_block)
                   for per_block in zip(*outs)]

    def predict_interval(
        self, X: Any, bounds: Any = None, *, client: Any = None
    ) -> PredictionInterval | dict[Any, PredictionInterval]:
        """Per-query intervals, the in-memory estimator's type with lazy Dask arrays for fields.

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
        PredictionInterval or dict
            A :class:`~nwbound.PredictionInterval` whose fields are lazy Dask arrays (its
            properties, ``certified`` and the rest, are lazy too); with ``bounds``, setting name →
            such an interval, as :meth:`NadarayaWatsonClassifier.predict_interval
            <nwbound.NadarayaWatsonClassifier.predict_interval>` returns. Each query block is
            computed once for every field and setting when they are computed together:
            :meth:`~nwbound.PredictionInterval.compute`, or ``dask.compute(result)``.

        Examples
        --------
        >>> import numpy as np, dask.array as da
        >>> from nwbound.dask import ShardedNadarayaWatson
        >>> X = np.linspace(0, 1, 60)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> m = ShardedNadarayaWatson(metric=None, bandwidth=0.2, lipschitz=1.0).fit(da.from_array(X, chunks=(20, -1)), y)
        >>> Q = da.from_array(X[[0, 1, 59]], chunks=(3, -1))
        >>> m.predict_interval(Q).compute().certified.tolist()
        [True, True, True]
        >>> out = m.predict_interval(Q, bounds=["hoeffding", "chernoff"])
        >>> sorted(out), out["chernoff"].epsilon.shape
        (['chernoff', 'hoeffding'], (3, 2))
        """
        X, parts = self._outputs(X, "predict_interval", bounds, client)
        n_classes = len(self.classes_)
        if bounds is None:
            return lazy_interval(parts, X.chunks[0], n_classes)
        return lazy_intervals(parts, X.chunks[0], n_classes, list(bounds))

    def predict_proba(self, X: Any, *, client: Any = None) -> "da.Array":
        """Class probabilities, shape (n_queries, n_classes) (lazy).

        Examples
        --------
        >>> import numpy as np, dask.array as da
        >>> from nwbound.dask import ShardedNadarayaWatson
        >>> X = np.linspace(0, 1, 60)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> m = ShardedNadarayaWatson(metric=None, lipschitz=None, bandwidth=0.2).fit(da.from_array(X, chunks=(20, -1)), y)
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
        >>> m = ShardedNadarayaWatson(metric=None, lipschitz=None, bandwidth=0.2).fit(da.from_array(X, chunks=(20, -1)), y)
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
        >>> m = ShardedNadarayaWatson(metric=None, lipschitz=None, bandwidth=0.1).fit(da.from_array(X, chunks=(20, -1)), y)
        >>> m.score(da.from_array(X[[5, 55]], chunks=(2, -1)), [0, 1])
        1.0
        """
        client = current_client(client)
        pred, *rest = compute(client, self.predict(X, client=client), *(v for v in (y, sample_weight)
                                                                        if isinstance(v, da.Array)))
        y = rest.pop(0) if isinstance(y, da.Array) else y
        sample_weight = rest.pop(0) if isinstance(sample_weight, da.Array) else sample_weight
        return float(accuracy_score(np.asarray(y), np.asarray(pred), sample_weight=sample_weight))



ShardedNadarayaWatson.__init__.__signature__ = _SIGNATURE  # what get_params, clone and help() read


def sharded_predict_interval(
    X_query: Any,
    X_train: Any,
    y_train: Any,
    *,
    sample_weight: Any = None,
    client: Any = None,
    bounds: Any = None,
    **params: Any,
) -> PredictionInterval | dict[Any, PredictionInterval]:
    """``ShardedNadarayaWatson(**params).fit(X_train, y_train).predict_interval(X_query, bounds)``.

    Returns a :class:`~nwbound.PredictionInterval` of lazy Dask arrays (a dict of them with
    ``bounds``); :meth:`~nwbound.PredictionInterval.compute` computes it.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> from nwbound.dask import sharded_predict_interval
    >>> X = np.linspace(0, 1, 60)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> out = sharded_predict_interval(da.from_array(X[:4], chunks=(2, -1)), da.from_array(X, chunks=(30, -1)), y,
    ...                                metric=None, bandwidth=0.2, lipschitz=1.0)
    >>> out.compute().kappa.shape
    (4,)
    """
    model = ShardedNadarayaWatson(**params).fit(X_train, y_train, sample_weight, client=client)
    return model.predict_interval(X_query, bounds, client=client)
