"""The device k-NN's candidate-search variants (``NWBOUND_KNN_TOPK``, issue 19) against a brute-force
float64 NumPy k-NN written here: the exact ``k`` nearest by (float64 distance, row index), on random
data with planted duplicates and ties, in float32 and float64, on PyTorch's CPU backend."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None
pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed (pip install torch)")
# PyTorch's CPU backend everywhere; CUDA too where there is one (the device check).
DEVICES = ["cpu"] + (["cuda"] if HAS_TORCH and __import__("torch").cuda.is_available() else [])

VARIANTS = ["", "noclamp", "chunks=3", "chunks=8", "bf16", "bf16+chunks=3", "bf16+chunks=8", "noclamp+bf16+chunks=5",
            "onesync", "bf16+onesync", "bf16+chunks=4+onesync"]


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
    from nwbound.gpu._neighbors import exact_kneighbors

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

    from nwbound.gpu._neighbors import _bf16_floor

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.random(2000) * 10.0 ** rng.integers(-45, 39, 2000), [0.0, 3.3e38, 3.4e38, 1e-40]])
    for src in (torch.float32, torch.float64):
        t = torch.as_tensor(x).to(src)
        key = t.to(torch.bfloat16)
        floor = _bf16_floor(torch, key)
        assert bool((floor <= t.to(torch.float64)).all())
        assert bool((floor[key.to(torch.float64) >= 1e-37] > 0).all())  # not 0 where it need not be


def test_variant_switch_messages(monkeypatch):
    from nwbound.gpu._neighbors import _parse_variant

    assert _parse_variant("") is None and _parse_variant("full") is None
    assert _parse_variant("bf16+chunks=8") == {"bf16": True, "chunks": 8, "onesync": False}
    with pytest.raises(ValueError, match="NWBOUND_KNN_TOPK"):
        _parse_variant("chunks=0")
    monkeypatch.setenv("NWBOUND_KNN_TOPK", "fast")
    Q, X = _data(0, np.float64)
    with pytest.raises(ValueError, match="NWBOUND_KNN_TOPK: unknown part 'fast'"):
        _search(Q, X, 3, None)
    monkeypatch.setenv("NWBOUND_KNN_TOPK", "bf16+chunks=4")  # read at each call
    want_d, want_i = _brute(Q, X, 5)
    assert np.array_equal(_search(Q, X, 5, None)[1], want_i)


def test_lean_search_reads_give_the_same_ends(monkeypatch):
    # NWBOUND_SEARCH_READS=lean (the per-point search's constants filled on the device, its first round
    # unread): the same interval ends bit for bit as the default eager search, on random per-point inputs
    # (some rows without mass, some pairs closed from the start).
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
    for mode in ("", "lean"):
        monkeypatch.setenv("NWBOUND_SEARCH_READS", mode)
        out[mode] = cdev.chernoff_interval_device(S, count, mass, radius, 0.05, sum_error=1e-12)
    for a, b in zip(out[""], out["lean"]):
        assert torch.equal(a, b)
    lo, up = out[""]
    assert bool((lo[:5] == 0).all() and (up[:5] == 1).all()) and bool((up[5:] - lo[5:] < 1).any())
