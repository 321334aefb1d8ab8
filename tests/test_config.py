"""nwbound's switches (:func:`nwbound.set_config`, :func:`nwbound.config_context`): each key changes what
it says, a bad key or value raises naming it, and a context restores what was set before."""

from __future__ import annotations

import importlib.util
import threading

import numpy as np
import pytest

import nwbound
from nwbound import config_context, get_config, set_config
from nwbound.bounds import BoundSpec
from nwbound.kernels import get_kernel

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
CHERNOFF = {None: BoundSpec(form="chernoff", beta=1.0, delta_prime=0.05)}


def test_defaults_and_exports():
    assert nwbound.config_context is config_context and "set_config" in nwbound.__all__
    cfg = get_config()
    assert cfg["device_bounds_on_cpu"] is False and cfg["knn_topk"] == "" and cfg["hist_epilogue"] == "atomic_count"
    cfg["knn_topk"] = "full"  # a copy
    assert get_config()["knn_topk"] == ""


@pytest.mark.parametrize("changes, match", [
    ({"no_such_key": 1}, "'no_such_key'"),
    ({"device_bounds_on_cpu": 1}, "'device_bounds_on_cpu' must be True or False"),
    ({"regular_chernoff_on_device": "yes"}, "'regular_chernoff_on_device' must be True or False"),
    ({"triton_search": None}, "'triton_search' must be True or False"),
    ({"knn_topk": "fast"}, "'knn_topk': knn_topk: unknown part 'fast'"),
    ({"knn_topk": 3}, "'knn_topk' must be a string"),
    ({"hist_epilogue": "atomics"}, "'hist_epilogue' must be one of"),
])
def test_bad_key_or_value_names_it_and_sets_nothing(changes, match):
    before = get_config()
    with pytest.raises(ValueError, match=match):
        set_config(**{"hist_epilogue": "loop", **changes})  # a valid change beside it is not applied either
    with pytest.raises(ValueError, match=match):
        with config_context(**changes):
            pass
    assert get_config() == before


def test_context_restores_and_threads_start_from_the_defaults():
    seen = {}
    with config_context(hist_epilogue="loop"):
        assert get_config()["hist_epilogue"] == "loop"
        worker = threading.Thread(target=lambda: seen.update(get_config()))
        worker.start()
        worker.join()
    assert seen["hist_epilogue"] == "atomic_count"  # thread-local, as scikit-learn's
    assert get_config()["hist_epilogue"] == "atomic_count"


def test_triton_search_and_regular_chernoff_on_device_choose_the_route(monkeypatch):
    from nwbound.engine.device._backend import bounds_on_device
    from nwbound.engine.device import _triton

    kernel = get_kernel("epanechnikov")
    have = {"torch": True, "triton": True}
    monkeypatch.setattr(_triton, "installed", lambda name: have[name])

    def route():
        return bounds_on_device(CHERNOFF, localized=False, bandwidths=np.ones(1), kernel=kernel)

    assert route()  # the fused search is there: the regular Chernoff bounds run on the device
    with config_context(triton_search=False):
        assert not route()
        with config_context(regular_chernoff_on_device=True):
            assert route()
    have["triton"] = False
    assert not route()
    with config_context(regular_chernoff_on_device=True):
        assert route()


def test_hist_epilogue_is_read_at_each_call():
    from nwbound.engine.device._triton import _epilogue

    assert _epilogue(None) == _epilogue("atomic_count")
    with config_context(hist_epilogue="loop"):
        assert _epilogue(None) == _epilogue("loop") != _epilogue("atomic_count")


@needs_torch
def test_knn_topk_chooses_the_search_form(monkeypatch):
    import torch

    from nwbound.engine.device import _neighbors
    from nwbound.gpu import DeviceTrainingSet

    seen = []
    real = _neighbors.parse_knn_topk
    monkeypatch.setattr(_neighbors, "parse_knn_topk", lambda text: seen.append(text) or real(text))
    X = torch.tensor([[0.0], [1.0], [3.0], [1.5]], dtype=torch.float64)
    train = DeviceTrainingSet.build(X, torch.ones(4, 1, dtype=torch.float64))
    with config_context(knn_topk="full"):
        full = _neighbors.exact_kneighbors(torch.tensor([[0.9]]), train, X, 2)[1]
    assert seen == ["full"]
    default = _neighbors.exact_kneighbors(torch.tensor([[0.9]]), train, X, 2)[1]
    assert seen == ["full", ""] and full.tolist() == default.tolist() == [[1, 3]]


@needs_torch
def test_device_bounds_on_cpu_runs_the_device_bounds_on_pytorchs_cpu(monkeypatch):
    from nwbound.engine.device import _backend as _device
    from nwbound.engine.host._sums import TrainingSet

    X = np.linspace(0.0, 1.0, 21)[:, None]
    train = TrainingSet.build(X, (X[:, 0] > 0.5).astype(int), 2, None)
    hoeffding = {None: BoundSpec(form="hoeffding", beta=1.0, delta_prime=0.05)}

    def run():
        return _device.intervals_on_device(np.array([[0.1]]), train, get_kernel("epanechnikov"), 0.3, hoeffding,
                                           device="cpu", fallback=lambda v: np.full((int(v.sum()), 2), 0.5),
                                           box=(X.min(0), X.max(0)))

    assert run() is None  # the host's solver: the caller computes the bounds there
    with config_context(device_bounds_on_cpu=True):
        out = run()
    assert out is not None and out[None].lower[0, 0] <= out[None].proba[0, 0] <= out[None].upper[0, 0]
