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
    assert (cfg["compile_bounds"], cfg["fused_grouped"], cfg["fused_verify"], cfg["search_variant"],
            cfg["search_reads"]) == (False, False, True, "", "lean")
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
    ({"compile_bounds": "1"}, "'compile_bounds' must be True, False or one of 'auto'"),
    ({"fused_grouped": "1"}, "'fused_grouped' must be True, False or one of 'bp1'"),
    ({"fused_verify": "all"}, "'fused_verify' must be True, False or one of 'grouped'"),
    ({"search_variant": "bp=3"}, "'search_variant': search_variant: bp must be a power of two"),
    ({"search_variant": "warps=two"}, "'search_variant': search_variant: warps must be an integer"),
    ({"search_variant": "nope=1"}, "'search_variant': search_variant: unknown or empty item 'nope=1'"),
    ({"search_variant": None}, "'search_variant' must be a string"),
    ({"search_reads": "none"}, "'search_reads' must be one of 'lean', 'full'"),
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
    from nwbound.engine.device import _backend
    from nwbound.engine.device._backend import bounds_on_device

    kernel = get_kernel("epanechnikov")
    have = {"torch": True, "triton": True}
    monkeypatch.setattr(_backend, "installed", lambda name: have[name])

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


def test_no_key_reads_the_environment(monkeypatch):
    """The variables that once set these switches are not read any more: a process sets them with
    set_config (a fresh import of the config, as a subprocess would, starts from the documented defaults)."""
    import importlib

    import nwbound._config as config

    for name, value in (("NWBOUND_COMPILE_BOUNDS", "1"), ("NWBOUND_TRITON_SEARCH", "0"),
                        ("NWBOUND_FUSED_GROUPED", "1"), ("NWBOUND_FUSED_VERIFY", "0"),
                        ("NWBOUND_SEARCH_VARIANT", "bp=2"), ("NWBOUND_SEARCH_READS", "full")):
        monkeypatch.setenv(name, value)
    fresh = importlib.util.module_from_spec(importlib.util.find_spec("nwbound._config"))
    fresh.__spec__.loader.exec_module(fresh)
    assert fresh.get_config() == {key: default for key, (default, _) in config._KEYS.items()}


def test_fused_grouped_and_fused_verify_are_read_at_each_call():
    import nwbound.bounds._chernoff_device as cdev

    assert not cdev._grouped_launch(False) and cdev._verify_fused(False) and cdev._verify_fused(True)
    with config_context(fused_grouped="bp1", fused_verify="grouped"):
        assert cdev._grouped_launch(False) == {"bp": 1, "warps": 1} and cdev._grouped_launch(True) is None
        assert cdev._verify_fused(False) and not cdev._verify_fused(True)  # the per-point form only
    with config_context(fused_grouped=True, fused_verify=False):
        assert cdev._grouped_launch(False) is None  # the kernel's own launch
        assert not cdev._verify_fused(False) and not cdev._verify_fused(True)


@needs_torch
def test_fused_grouped_routes_the_per_point_form_on_cuda(monkeypatch):
    import nwbound.bounds._chernoff_device as cdev
    import nwbound.bounds._chernoff_triton as ctri

    class _Cuda:  # stands in for a CUDA tensor: only its device type is read
        device = type("dev", (), {"type": "cuda"})()

    monkeypatch.setattr(ctri, "triton_search_applies", lambda s: True)
    assert not cdev._fused_for(False, _Cuda()) and cdev._fused_for(True, _Cuda())
    for value in (True, "bp1"):
        with config_context(fused_grouped=value):
            assert cdev._fused_for(False, _Cuda())


@needs_torch
def test_triton_search_turns_the_fused_search_off(monkeypatch):
    import torch

    import nwbound.bounds._chernoff_triton as ctri

    monkeypatch.setattr(ctri, "_triton_installed", lambda: True)
    monkeypatch.setattr(ctri, "_interpreting", lambda: True)
    assert ctri.triton_search_applies(torch.zeros(1))
    with config_context(triton_search=False):
        assert not ctri.triton_search_applies(torch.zeros(1))


@needs_torch
def test_compile_bounds_chooses_the_compiled_probe(monkeypatch):
    import torch

    import nwbound.bounds._chernoff_device as cdev

    monkeypatch.setattr(cdev, "_COMPILED", {})  # torch.compile wraps lazily: nothing compiles here
    cpu, cuda = torch.device("cpu"), type("dev", (), {"type": "cuda"})()
    assert cdev._probe_for(torch, cpu) is cdev._probe and cdev._probe_for(torch, cuda) is cdev._probe
    with config_context(compile_bounds="auto"):  # on CUDA only
        assert cdev._probe_for(torch, cpu) is cdev._probe and cdev._probe_for(torch, cuda) is not cdev._probe
    with config_context(compile_bounds=True):
        assert cdev._probe_for(torch, cpu) is not cdev._probe


@needs_torch
def test_search_reads_full_reads_the_first_round(monkeypatch):
    import torch

    import nwbound.bounds._chernoff_device as cdev

    monkeypatch.setattr(cdev, "_fused_for", lambda split, s: False)  # the eager search
    rng = np.random.default_rng(3)
    mass = torch.as_tensor(rng.random((40, 6)))
    S = torch.stack([mass[:, :3].sum(1), mass[:, 3:].sum(1)], 1)
    args = (S, torch.ones_like(mass), mass, torch.as_tensor(rng.random((40, 6)) * 0.1), 0.05)
    reads = []
    real = torch.nonzero
    monkeypatch.setattr(torch, "nonzero", lambda *a, **k: reads.append(1) or real(*a, **k))
    ends = {}
    for mode in ("lean", "full"):
        reads.clear()
        with config_context(search_reads=mode):
            ends[mode] = cdev.chernoff_interval_device(*args, sum_error=1e-12)
        ends[mode + "/reads"] = len(reads)
    assert ends["full/reads"] > ends["lean/reads"]  # the first round's open pairs read
    assert all(torch.equal(a, b) for a, b in zip(ends["lean"], ends["full"]))  # the same ends


@needs_torch
def test_search_variant_is_the_kernels_launch_unless_the_caller_gives_one(monkeypatch):
    import torch

    import nwbound.bounds._chernoff_triton as ctri

    seen = []
    real = ctri.parse_search_variant
    monkeypatch.setattr(ctri, "parse_search_variant", lambda text: seen.append(text) or real(text))
    z = torch.zeros(0, 1, dtype=torch.float64)  # no pair: the launch is parsed, no kernel runs
    fields = tuple(torch.zeros(0, 4, dtype=torch.float64) for _ in range(3))
    opts = dict(theta_steps=1, max_probes=1, newton_m_steps=1, decrement=0.5, margin=0.0, series_x=1e-3)

    def search(**kw):
        return ctri.triton_search(False, fields, z, z, z, z, z, z, -3.0, 1e-7, z.bool(), **opts, **kw)

    search()
    with config_context(search_variant="bp=2,warps=1"):
        search()
        search(_variant={"bp": 1})  # the caller's launch wins
    assert seen == ["", "bp=2,warps=1"]
