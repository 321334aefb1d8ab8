"""The tasks of the sharded estimator: module-level functions (picklable for process workers)
that run on the workers (a shard's statistics, ranking or neighbour lists; merges) or finish a
query block (intervals from merged statistics; a cross-fitted model's intersection)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, NamedTuple

import dask
import numpy as np

from .._result import PredictionInterval
from ..estimators import NadarayaWatsonClassifier, merge_statistics
from ..spaces import intersect_intervals, kappa_weighted_proba


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
    arrays shared): bound settings changed by ``set_params`` after fit take effect.

    ``random_state`` stays the model's own: it shapes the fit only, and a ``RandomState`` sent
    to a worker with a task is a copy, another object than the one the model was fitted with
    (the sharded estimator refuses a changed one itself, at the client)."""
    return copy.copy(model).set_params(**{k: v for k, v in params.items() if k != "random_state"})


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


def _mapped(space: Any, block: np.ndarray, dtype: Any) -> np.ndarray:
    """Query or training rows in the space the kernel works in, as the estimator maps them."""
    return np.ascontiguousarray(space.transform(block), dtype=dtype)


def _nw_block(block: np.ndarray, rows: np.ndarray, space: Any, dtype: Any) -> np.ndarray:
    """The rows of one training chunk that go into the kernel sums, mapped."""
    block = block[rows]
    return np.ascontiguousarray(block) if space is None else _mapped(space, block, dtype)


def _intervals_of(out: dict) -> PredictionInterval:
    return PredictionInterval(**out)


def _cross_finish(method: str, names: list | None, classes: np.ndarray, with_bound: bool, *outs: dict) -> Any:
    """A cross-fitted model's output from its models' outputs of one query block, as in memory:
    the intervals (each at δ/K) intersected; p̂ is the intersection's, or without any bound the
    models' κ-weighted p̂."""
    if not with_bound:  # each model's {"p": fields}: p̂ and κ without a bound
        proba = kappa_weighted_proba([o["p"]["proba"] for o in outs], [o["p"]["kappa"] for o in outs])
    else:
        if names is None:
            joined = intersect_intervals(*[_intervals_of(o) for o in outs])
        else:
            joined = {name: intersect_intervals(*[_intervals_of(o[name]) for o in outs]) for name in names}
        if method == "predict_interval":
            return joined.as_dict() if names is None else {name: iv.as_dict() for name, iv in joined.items()}
        proba = joined.proba
    return proba if method == "predict_proba" else classes[np.argmax(proba, axis=1)]
