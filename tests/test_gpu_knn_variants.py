"""The device k-NN's candidate-search forms (the config key ``knn_topk``, issue 19; the default ``""`` is
``bf16+onesync``, ``full`` the previous default) against a brute-force
float64 NumPy k-NN written here: the exact ``k`` nearest by (float64 distance, row index), on random
data with planted duplicates and ties, in float32 and float64, on PyTorch's CPU backend."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import nwbound

HAS_TORCH = importlib.util.find_spec("torch") is not None
pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed (pip install torch)")
# PyTorch's CPU backend everywhere; CUDA too where there is one (the device check).
DEVICES = ["cpu"] + (["cuda"] if HAS_TORCH and __import__("torch").cuda.is_available() else [])

VARIANTS = ["", "full", "noclamp", "chunks=3", "chunks=8", "bf16", "bf16+chunks=3", "bf16+chunks=8",
            "noclamp+bf16+chunks=5", "onesync", "bf16+onesync", "bf16+chunks=4+onesync"]


def _brute(Q: np.ndarray, X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Every distance in float64, sorted by (distance, row): the first ``k`` of each query."""
    full = np.sqrt(((Q[:, None, :].astype(np.float64) - X[None].astype(np.float64)) ** 2).sum(axis=2))
    rows = np.broadcast_to(np.arange(X.shape[0]), full.shape)
    order = np.lexsort((rows, full), axis=1)[:, :k]
    return np.take_along_axis(full, order, 1), order


def _data(seed: int, dtype):
    rng = np.random.default_rng(seed)
    grid = rng.integers(0, 3, (300, 4)).astype(float)  # duplicates: every distance tied many times
    cont = rng.normal(size=(200, 4))
    X = np.concatenate([grid, cont, cont[:50]])  # 50 exact duplicates of continuous rows
    X = X[rng.permutation(X.shape[0])]
    Q = np.concatenate([rng.integers(0, 3, (20, 4)) + np.where(rng.random((20, 4)) < 0.3, 0.5, 0.0),
                        rng.normal(size=(20, 4)), X[:10]])  # on the grid, between it, random, on training rows
    return Q.astype(dtype), X.astype(dtype)


def _search(Q, X, k, variant, working_memory=None, device="cpu"):
    import torch

    from nwbound.gpu import DeviceTrainingSet
    from nwbound.engine.device._neighbors import exact_kneighbors

    Xt = torch.from_numpy(X).to(device)
    train = DeviceTrainingSet.build(Xt, torch.ones((X.shape[0], 1), dtype=Xt.dtype, device=device))
    d, i = exact_kneighbors(torch.from_numpy(Q).to(device), train, Xt.double(), k, working_memory=working_memory,
                            _topk=variant)
    return d.cpu().numpy(), i.cpu().numpy()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 10, 40])
def test_variants_are_the_exact_knn(variant, dtype, k, device):
    Q, X = _data(k, dtype)
    want_d, want_i = _brute(Q, X, k)
    d, i = _search(Q, X, k, variant, working_memory=0.05, device=device)  # several blocks (CPU: the budget)
    assert np.array_equal(i, want_i)
    np.testing.assert_allclose(d, want_d, rtol=1e-14)
    assert (np.diff(_brute(Q, X, k + 1)[0], axis=1) == 0).any()  # ties are really there (at the k-th too)


@pytest.mark.parametrize("variant", VARIANTS)
def test_variants_growth_rounds_and_every_row(variant):
    # 400 points at nearly one distance from the origin (1 + 1e-5·u): bfloat16 (and often float32)
    # cannot separate the k-th from the k'-th, so the growth rounds decide; k = n_train takes every row.
    rng = np.random.default_rng(3)
    dirs = rng.normal(size=(400, 3))
    X = dirs / np.linalg.norm(dirs, axis=1, keepdims=True) * (1.0 + 1e-5 * rng.random((400, 1)))
    Q = np.concatenate([np.zeros((3, 3)), 1e-7 * rng.normal(size=(3, 3))])
    for k in (10, 400):
        want_d, want_i = _brute(Q, X, k)
        d, i = _search(Q, X, k, variant)
        assert np.array_equal(i, want_i), (variant, k)
        np.testing.assert_allclose(d, want_d, rtol=1e-14)


def test_bf16_floor_is_below_every_value_rounding_to_the_key():
    import torch

    from nwbound.engine.device._neighbors import _bf16_floor

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.random(2000) * 10.0 ** rng.integers(-45, 39, 2000), [0.0, 3.3e38, 3.4e38, 1e-40]])
    for src in (torch.float32, torch.float64):
        t = torch.as_tensor(x).to(src)
        key = t.to(torch.bfloat16)
        floor = _bf16_floor(torch, key)
        assert bool((floor <= t.to(torch.float64)).all())
        assert bool((floor[key.to(torch.float64) >= 1e-37] > 0).all())  # not 0 where it need not be


def test_variant_switch_messages(monkeypatch):
    from nwbound._config import parse_knn_topk as _parse_variant

    assert _parse_variant("full") is None  # the float32 search before issue 19
    assert _parse_variant("") == _parse_variant("default") == {"bf16": True, "chunks": 1, "onesync": True}
    assert _parse_variant("bf16+chunks=8") == {"bf16": True, "chunks": 8, "onesync": False}
    for bad in ("chunks=0", "full+bf16"):
        with pytest.raises(ValueError, match="knn_topk"):
            _parse_variant(bad)
    with pytest.raises(ValueError, match="'knn_topk': knn_topk: unknown part 'fast'"):
        nwbound.set_config(knn_topk="fast")  # refused when set, naming the key
    Q, X = _data(0, np.float64)
    want_d, want_i = _brute(Q, X, 5)
    with nwbound.config_context(knn_topk="bf16+chunks=4"):  # read at each call
        assert np.array_equal(_search(Q, X, 5, None)[1], want_i)


def test_lean_search_reads_give_the_same_ends(monkeypatch):
    # The per-point search's lean reads (the default: constants filled on the device, its first round
    # unread) give the same interval ends bit for bit as search_reads="full" (the form before), on
    # random per-point inputs (some rows without mass, some pairs closed from the start).
    import torch

    import nwbound.bounds._chernoff_device as cdev

    monkeypatch.setattr(cdev, "_fused_for", lambda split, s: False)  # the eager search, as on CUDA
    rng = np.random.default_rng(11)
    n, B, C = 300, 10, 4
    mass = torch.as_tensor(rng.random((n, B)) * (rng.random((n, B)) < 0.9))
    mass[:5] = 0.0  # rows without mass: [0, 1]
    labels = rng.integers(0, C, (n, B))
    S = torch.zeros((n, C), dtype=torch.float64).scatter_add_(1, torch.as_tensor(labels), mass)
    count = (mass > 0).to(torch.float64)
    radius = torch.as_tensor(rng.random((n, B)) * 0.2)
    out = {}
    for mode in ("full", "lean"):
        with nwbound.config_context(search_reads=mode):
            out[mode] = cdev.chernoff_interval_device(S, count, mass, radius, 0.05, sum_error=1e-12)
    for a, b in zip(out["full"], out["lean"]):
        assert torch.equal(a, b)
    lo, up = out["full"]
    assert bool((lo[:5] == 0).all() and (up[:5] == 1).all()) and bool((up[5:] - lo[5:] < 1).any())


def test_fused_grouped_switch_values(monkeypatch):
    # fused_grouped: False (the default) keeps the eager per-point search on CUDA; True the fused kernel's own
    # launch; "bp1" the fused kernel with one pair per program and one warp (issue 19's run 2).
    import nwbound.bounds._chernoff_device as cdev
    import nwbound.bounds._chernoff_triton as ctri

    class _Cuda:  # stands in for a CUDA tensor: only its device type is read
        device = type("dev", (), {"type": "cuda"})()

    monkeypatch.setattr(ctri, "triton_search_applies", lambda s: True)
    assert nwbound.get_config()["fused_grouped"] is False
    for value, on, launch in ((False, False, None), (True, True, None), ("bp1", True, {"bp": 1, "warps": 1})):
        with nwbound.config_context(fused_grouped=value):
            assert cdev._fused_for(False, _Cuda()) is on, value
            assert cdev._fused_for(True, _Cuda())  # the split form: always
            assert cdev._grouped_launch(False) == launch, value
            assert cdev._grouped_launch(True) is None  # the split form's launch is not this switch's


_FUSED_BP1 = r'''
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import torch
import nwbound
import nwbound.bounds._chernoff_triton as ct
import nwbound.bounds._chernoff_device as cd
from test_gpu_bounds import _per_point_batch, _t
from nwbound.bounds._chernoff import chernoff_interval

launches = []
original = ct.triton_search
def spy(*args, **kwargs):
    launches.append(kwargs.get("_variant"))
    return original(*args, **kwargs)
ct.triton_search = spy
S, count, mass, rho = _per_point_batch(3, 3, 6, 2, 0.0, concentrated=True)
S[0], count[0], mass[0] = 0.0, 0.0, 0.0  # a row without mass
args = [_t(x, "cpu") for x in (S, count, mass, rho)]
out = {"host": np.stack(chernoff_interval(S, count, mass, mass, rho, 0.02, engine="numpy"))}
for mode in ("bp1",):
    with nwbound.config_context(fused_grouped=mode):
        out[mode] = np.stack([x.numpy() for x in cd.chernoff_interval_device(*args, 0.02)])
    out[mode + "/unverified"] = np.array(int(cd._TRITON_SEARCH["unverified"]))
cd._fused_for = lambda split, s: False  # the eager search, the reference
out["eager"] = np.stack([x.numpy() for x in cd.chernoff_interval_device(*args, 0.02)])
out["launches"] = np.array([repr(v) for v in launches])
np.savez(sys.argv[2], **out)
'''


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_fused_grouped_bp1_launch_in_the_interpreter_is_certified_and_contains_the_host(tmp_path):
    # fused_grouped="bp1" (Triton's interpreter, its own process): the grouped kernel launched with one
    # pair per program and one warp; every moved end re-checked by the float64 exponent (none refused here),
    # the ends within the search's tolerance of the eager search's, outside the host solver's interval.
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ, TRITON_INTERPRET="1")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src") + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run([sys.executable, "-c", _FUSED_BP1, str(Path(__file__).resolve().parent),
                          str(tmp_path / "o.npz")], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    got = np.load(tmp_path / "o.npz")
    assert list(got["launches"]) == [repr({"bp": 1, "warps": 1})]  # the switch reached the kernel
    host, eager = got["host"], got["eager"]
    for mode in ("bp1",):
        iv = got[mode]
        assert int(got[mode + "/unverified"]) == 0, mode
        assert np.all(np.abs(iv - eager) <= 1e-7), mode  # the search's tol
        assert np.all(iv[0] <= host[0] + 1e-7) and np.all(iv[1] >= host[1] - 1e-7), mode
        assert (iv[1] - iv[0] < 1).any() and iv[0, 0].max() == 0 and iv[1, 0].min() == 1  # real ends; [0, 1]


def test_neighbor_statistics_check_input_false_skips_only_the_reads(monkeypatch):
    # check_input=False (the estimators' validated inputs): the same statistics bit for bit, none of the
    # five value checks' reads (counted on the tensor methods that read a value), the shape checks kept;
    # check_input=True still names each bad input.
    import torch

    from nwbound.gpu import neighbor_kernel_statistics

    rng = np.random.default_rng(5)
    X = torch.as_tensor(rng.normal(size=(60, 3)))
    onehot = torch.nn.functional.one_hot(torch.as_tensor(rng.integers(0, 3, 60)), 3).double()
    Q = torch.as_tensor(rng.normal(size=(7, 3)))
    nb = torch.as_tensor(rng.integers(0, 60, (7, 5)))
    kw = dict(bandwidth=1.5, keep_points=True)
    want = neighbor_kernel_statistics(Q, X, onehot, nb, **kw)
    reads = [0]
    orig = torch.Tensor.__bool__

    def counting(self):
        reads[0] += 1
        return orig(self)

    monkeypatch.setattr(torch.Tensor, "__bool__", counting)
    got = neighbor_kernel_statistics(Q, X, onehot, nb, check_input=False, **kw)
    assert reads[0] == 0
    neighbor_kernel_statistics(Q, X, onehot, nb, **kw)
    assert reads[0] == 5  # the checks the estimators skip
    monkeypatch.setattr(torch.Tensor, "__bool__", orig)
    for name in ("class_sums", "sq_sum", "dist_sum", "d2_error", "point_mass", "point_dist"):
        assert torch.equal(getattr(got, name), getattr(want, name)), name
    with pytest.raises(ValueError, match="Xq contains NaN"):
        neighbor_kernel_statistics(Q * np.nan, X, onehot, nb, **kw)
    with pytest.raises(ValueError, match="neighbors must index rows"):
        neighbor_kernel_statistics(Q, X, onehot, nb + 60, **kw)
    with pytest.raises(ValueError, match="onehot must be non-negative"):
        neighbor_kernel_statistics(Q, X, -onehot, nb, **kw)
    with pytest.raises(ValueError, match="Shapes do not match"):
        neighbor_kernel_statistics(Q[:, :2], X, onehot, nb, check_input=False, **kw)
    with pytest.raises(TypeError, match="check_input must be True or False"):
        neighbor_kernel_statistics(Q, X, onehot, nb, check_input="no", **kw)


@pytest.mark.skipif(not HAS_TORCH or not __import__("torch").cuda.is_available()
                    or importlib.util.find_spec("triton") is None, reason="needs CUDA and Triton")
def test_fused_grouped_bp1_on_cuda_contains_the_host():
    # The compiled kernel (fused_grouped="bp1"): whatever its float64 re-check refuses is searched again
    # eagerly, so the interval contains the host solver's and is as close as the eager search's (CUDA's
    # default); the refused count is printed (benchmarks/diag_knn.py measures it at the ECG shapes).
    import warnings

    import torch

    import nwbound.bounds._chernoff_device as cdev
    from nwbound.bounds._chernoff import chernoff_interval

    from test_gpu_bounds import _per_point_batch

    S, count, mass, rho = _per_point_batch(5, 100, 5, 4, 0.0, concentrated=True)
    h_lo, h_up = chernoff_interval(S, count, mass, mass, rho, 0.01, engine="numpy")
    args = [torch.as_tensor(np.asarray(x, dtype=np.float64), device="cuda") for x in (S, count, mass, rho)]
    out = {}
    for mode in (False, "bp1"):
        with warnings.catch_warnings(), nwbound.config_context(fused_grouped=mode):
            warnings.simplefilter("ignore", RuntimeWarning)  # a refused end's warning: counted below instead
            out[mode] = [x.cpu().numpy() for x in cdev.chernoff_interval_device(*args, 0.01)]
    refused = cdev._TRITON_SEARCH.get("unverified")
    print("fused grouped bp=1 w1: float64 re-check refused", None if refused is None else int(refused), "moved ends")
    lo, up = out["bp1"]
    assert np.all(lo <= h_lo + 1e-7) and np.all(up >= h_up - 1e-7)
    np.testing.assert_allclose(lo, out[False][0], atol=2e-5)
    np.testing.assert_allclose(up, out[False][1], atol=2e-5)
