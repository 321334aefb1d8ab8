"""One model of the sharded estimator on the cluster (a cross-fitted estimator has several): its
parameters, the graph of its outputs per query block, and its view for the held-out check of L."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import dask
import dask.array as da
import numpy as np
from sklearn.base import BaseEstimator

from ..spaces import chooses_lipschitz, divided_delta
from ._common import check_query_array, compute, limited, share
from ._tasks import (
    _choose,
    _finish,
    _intervals_of,
    _joined,
    _mapped,
    _merge_rankings,
    _merge_topk,
    _merge_two,
    _neighbor_finish,
    _now,
    _one_setting,
    _shard_ranking,
    _shard_statistics,
    _shard_statistics_at,
    _shard_topk,
    _tree,
)


def _head_params(params: Mapping[str, Any]) -> dict:
    """Parameters of the estimator's fits at the client that check the labels and the settings:
    on the features as given, one model, the regular classifier, placeholders for what the
    shards compute (a default grid, the λ of "scale") and for L that fit chooses later."""
    head = {**params, "metric": None, "cross_fit": False, "n_neighbors": None}
    if chooses_lipschitz(params["lipschitz"], params["margin"]):
        head["lipschitz"] = 1.0
    if isinstance(params["bandwidth"], str) and params["bandwidth"] == "auto" and params["bandwidth_grid"] is None:
        head["bandwidth_grid"] = [1.0]
    if isinstance(params["bandwidth"], str) and params["bandwidth"] == "scale":
        head["bandwidth"] = 1.0
    return head


class _Part(NamedTuple):
    """One model on the cluster (a cross-fitted estimator has several): the client's model, which
    turns merged statistics into intervals, its fitted state, and the shards of its kernel sums."""

    estimator: Any
    template: dict
    shards: list
    ranking_fraction: float


def _part_params(params: Mapping[str, Any], n_parts: int) -> tuple[dict, dict]:
    """``(model, shard)`` NadarayaWatsonClassifier parameters of one part, from the wrapper's.

    The client's model is regular (the localized lists are merged first) and, cross-fitted, at
    δ/K as each in-memory model. The shards take rows and queries already mapped (``metric=None``),
    and their statistics do not depend on L (only the client's model bounds): a chosen L stays
    with the client's model, the shards hold a stand-in.
    """
    model = {**params, "n_neighbors": None, "cross_fit": False}
    if n_parts > 1:
        model["delta"] = divided_delta(params["delta"], n_parts)
    shard = {**params, "cross_fit": False, "metric": None}
    if chooses_lipschitz(params["lipschitz"], params["margin"]):
        shard["lipschitz"] = 1.0
    if params["n_neighbors"] is not None:  # a shard only needs its index (any k: it is asked for min(k, rows))
        shard["n_neighbors"] = 1
    return model, shard


def _part_outputs(part: _Part, blocks: list, method: str, bounds: Any, params: Mapping[str, Any], n_parts: int,
                  client: Any, threads: int) -> list:
    """One delayed output of ``part`` per query block (original features): its shards' statistics
    merged, then finished by the client's model (current parameters: set_params after fit holds)."""
    model_params, shard_params = _part_params(params, n_parts)
    estimator = _now(part.estimator, model_params)
    space = getattr(estimator, "metric_", None)
    if space is not None:  # each query block mapped once, for all the shards
        shared_space = share(space, client)
        dtype = estimator.get_params()["dtype"]
        mapped = [dask.delayed(limited(_mapped, threads), pure=True)(shared_space, blk, dtype) for blk in blocks]
    else:
        mapped = blocks
    shards = part.shards
    out = []
    k = params["n_neighbors"]
    # Two rounds where the in-memory estimator ranks first (a polynomial kernel or a ranking sample);
    # otherwise its exhaustive pass, whose statistics then give the intervals, as in memory.
    if k is None and estimator.ranks_first(bounds, fraction=part.ranking_fraction):
        # bandwidth="auto": the shards' rankings add up, each query's bandwidth is chosen from
        # the sum, then the shards' exact statistics at that bandwidth add up.
        model = share(estimator, client)
        names = [None] if bounds is None else list(bounds)
        if method != "predict_interval":
            names = names[:1]  # p̂ comes from the first setting
        for blk in mapped:
            rankings = [dask.delayed(limited(_shard_ranking, threads), pure=True)(
                s, blk, part.ranking_fraction, shard_params) for s in shards]
            choice = dask.delayed(_choose, pure=True)(model, _tree(rankings, _merge_rankings), bounds)
            outs = []
            for name in names:
                stats = [dask.delayed(limited(_shard_statistics_at, threads), pure=True)(
                    s, blk, bounds, choice, name, shard_params) for s in shards]
                outs.append(dask.delayed(limited(_finish, threads), pure=True)(
                    model, _tree(stats, _merge_two), method, _one_setting(bounds, name)))
            out.append(outs[0] if bounds is None or method != "predict_interval"
                       else dask.delayed(_joined, pure=True)(outs))
    elif k is None:
        model = share(estimator, client)
        for blk in mapped:
            stats = [dask.delayed(limited(_shard_statistics, threads), pure=True)(s, blk, bounds, shard_params)
                     for s in shards]
            out.append(dask.delayed(limited(_finish, threads), pure=True)(model, _tree(stats, _merge_two), method,
                                                                         bounds))
    else:
        template = share(part.template, client)
        neighbor_params = {**model_params, "n_neighbors": int(k)}
        for blk, mapped_blk in zip(blocks, mapped):
            lists = [dask.delayed(limited(_shard_topk, threads), pure=True)(s, mapped_blk, int(k)) for s in shards]
            out.append(dask.delayed(limited(_neighbor_finish, threads), pure=True)(
                neighbor_params, template, blk, _tree(lists, _merge_topk, int(k)), method, bounds))
    return out


class _HeldOutCheck(BaseEstimator):
    """One part being fitted, as :func:`~nwbound.spaces.choose_lipschitz` reads a model: its
    ``predict_interval`` of the (in-memory) check rows runs on the shards; ``get_params``,
    ``classes_`` and ``metric_`` are the client's model's (a BaseEstimator for scikit-learn's
    ``check_is_fitted``)."""

    def __init__(self, part: _Part, params: Mapping[str, Any], n_parts: int, client: Any, threads: int):
        self._part, self._params, self._n_parts = part, dict(params), n_parts
        self._client, self._threads = client, threads
        self.classes_ = part.estimator.classes_
        self.metric_ = getattr(part.estimator, "metric_", None)

    def fit(self, *args: Any, **kwargs: Any) -> None:  # scikit-learn's check_is_fitted asks for one
        raise TypeError("A held-out check's view of a sharded model is fitted by ShardedNadarayaWatson.fit.")

    def __sklearn_is_fitted__(self) -> bool:
        return True

    def get_params(self, deep: bool = True) -> dict:
        return self._part.estimator.get_params(deep=deep)

    def predict_interval(self, X: Any, bounds: Any = None) -> Any:
        dtype = self._part.estimator.get_params()["dtype"]
        Xd = check_query_array(da.from_array(np.asarray(X, dtype=dtype), chunks=(_CHECK_BLOCK, -1)), "X", None, None)
        parts = _part_outputs(self._part, list(Xd.to_delayed().ravel()), "predict_interval", bounds, self._params,
                              self._n_parts, self._client, self._threads)
        blocks = compute(self._client, *parts)
        if bounds is None:
            return _intervals_of({f: np.concatenate([b[f] for b in blocks]) for f in blocks[0]})
        return {name: _intervals_of({f: np.concatenate([b[name][f] for b in blocks]) for f in blocks[0][name]})
                for name in blocks[0]}


# Check rows per task of the held-out check (at most AUTO_CHECK_ROWS rows in all).
_CHECK_BLOCK = 2048
