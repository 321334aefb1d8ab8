"""The localized classifier's neighbour sums on a device (nwbound.gpu.neighbor_kernel_statistics).

Against the CPU engine's ``neighbor_kernel_sums`` (direct float64 distances to the same
neighbours) and an independent float64 formula written here; through the estimator with
``n_neighbors`` and ``device=`` (PyTorch's CPU backend here, CUDA on the device check).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier
from nwbound.engine.device._sums import neighbor_kernel_sums_array_api
from nwbound.engine.host._sums import TrainingSet, neighbor_kernel_sums
from nwbound.gpu import SUPPORTED_KERNELS, neighbor_kernel_statistics
from nwbound.engine.device._array_api import direct_distance_error
from nwbound.kernels import get_kernel
from test_gpu import one_bandwidth

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_STRICT = importlib.util.find_spec("array_api_strict") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed (pip install torch)")


def _problem(seed: int, n: int = 200, nq: int = 15, m: int = 6, k: int = 12, scale: float = 1.0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, m))
    Q = rng.random((nq, m))
    labels = rng.integers(0, 3, n)
    weights = rng.uniform(0.5, 2.0, n)
    onehot = np.zeros((n, 3))
    onehot[np.arange(n), labels] = weights
    idx = np.argsort(((Q[:, None] - X[None]) ** 2).sum(axis=2), axis=1)[:, :k]
    return Q * scale, X * scale, labels, weights, onehot, idx


def _reference(Q, X, onehot, idx, name, lam):
    """Textbook float64 sums over the given neighbours (math.hypot-free: the data is tame)."""
    d = np.sqrt(((Q[:, None, :] - X[idx]) ** 2).sum(axis=2))
    u2 = (d / lam) ** 2
    if name == "gaussian":
        k = np.where(u2 <= 9.0, np.exp(-u2 / 2), 0.0)
    elif name == "gaussian_untruncated":
        k = np.exp(-u2 / 2)
    elif name == "boxcar":
        k = (u2 <= 1.0).astype(float)
    else:
        k = np.clip(1.0 - u2, 0.0, None) ** {"epanechnikov": 1, "quartic": 2, "triweight": 3}[name]
    w = onehot.sum(axis=1)[idx]
    cs = np.einsum("qk,qkc->qc", k, onehot[idx])
    return {"class_sums": cs, "sq_sum": ((k * w) ** 2).sum(axis=1), "dist_sum": (k * w * d).sum(axis=1),
            "point_mass": k * w, "point_dist": d}


@pytest.mark.parametrize("name", sorted(SUPPORTED_KERNELS))
def test_numpy_matches_reference(name):
    Q, X, _, _, onehot, idx = _problem(1)
    st = one_bandwidth(neighbor_kernel_statistics(Q, X, onehot, idx, kernel=name, bandwidth=0.5, keep_points=True))
    ref = _reference(Q, X, onehot, idx, name, 0.5)
    for field in ("class_sums", "sq_sum", "point_mass", "point_dist"):
        np.testing.assert_allclose(getattr(st, field), ref[field], rtol=1e-12, atol=1e-14, err_msg=field)
    # dist_sum: an upper bound, above the exact sum by at most the documented relative error.
    rel = direct_distance_error(X.shape[1])
    assert np.all(st.dist_sum >= ref["dist_sum"])
    np.testing.assert_array_less(st.dist_sum, ref["dist_sum"] * (1 + 3 * rel) + 1e-300)


@pytest.mark.parametrize("scale", [1e-170, 1.0, 1e160])
@pytest.mark.parametrize("weighted", [False, True])
def test_adapter_matches_cpu_engine(scale, weighted):
    # Coordinates near the float64 range's ends: the per-pair power-of-two scaling keeps the
    # squares finite and normal (no underflow to a zero distance, no overflow).
    Q, X, labels, weights, _, idx = _problem(2, scale=scale)
    train = TrainingSet.build(X, labels, 3, weights if weighted else None)
    kern, lams = get_kernel("quartic"), np.array([0.3, 0.6]) * scale
    cpu = neighbor_kernel_sums(None, idx, train, kern, lams, need_dist=True, queries=Q, keep_points=True)
    dev = neighbor_kernel_sums_array_api(idx, train, kern, lams, queries=Q, need_dist=True, keep_points=True)
    assert float(cpu.class_sums.sum()) > 0  # the bandwidths reach some neighbours
    for field in ("class_sums", "sq_sum", "dist_sum", "point_mass", "point_dist", "u2_error"):
        # K from u² here, from u there: near the support's edge K's own cancellation shows (absolute 1e-19).
        want = getattr(cpu, field)
        np.testing.assert_allclose(getattr(dev, field), want, rtol=1e-10, atol=1e-13 * np.max(np.abs(want)),
                                   err_msg=field)
    np.testing.assert_array_equal(dev.bandwidth, cpu.bandwidth)
    assert dev.weight_max == cpu.weight_max
    with pytest.raises(ValueError, match="tail_radius"):
        neighbor_kernel_sums_array_api(idx, train, kern, lams, queries=Q, need_dist=True, tail_radius=3.0)


@pytest.mark.skipif(not HAS_STRICT, reason="array_api_strict is not installed (pip install array-api-strict)")
def test_array_api_strict_namespace():
    import array_api_strict as xps

    Q, X, _, _, onehot, idx = _problem(3)
    st = neighbor_kernel_statistics(xps.asarray(Q), xps.asarray(X), xps.asarray(onehot), xps.asarray(idx),
                                    bandwidth=0.5, keep_points=True)
    assert type(st.class_sums).__module__.startswith("array_api_strict")
    ref = _reference(Q, X, onehot, idx, "epanechnikov", 0.5)
    np.testing.assert_allclose(st.to_numpy().class_sums[:, 0], ref["class_sums"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(st.to_numpy().point_dist, ref["point_dist"], rtol=1e-12)


def test_bad_input_messages():
    Q, X, _, _, onehot, idx = _problem(4)
    with pytest.raises(ValueError, match="neighbors must index rows of X_train"):
        neighbor_kernel_statistics(Q, X, onehot, idx + X.shape[0], bandwidth=1.0)
    with pytest.raises(TypeError, match="neighbors must be a 2-D integer array"):
        neighbor_kernel_statistics(Q, X, onehot, idx.astype(float), bandwidth=1.0)
    with pytest.raises(ValueError, match="Shapes do not match"):
        neighbor_kernel_statistics(Q[:-1], X, onehot, idx, bandwidth=1.0)
    with pytest.raises(ValueError, match="bandwidth"):
        neighbor_kernel_statistics(Q, X, onehot, idx, bandwidth=-1.0)
    with pytest.raises(ValueError, match="no array-API implementation"):
        neighbor_kernel_statistics(Q, X, onehot, idx, kernel="tricube", bandwidth=1.0)
    with pytest.raises(TypeError, match="keep_points must be True or False"):
        neighbor_kernel_statistics(Q, X, onehot, idx, bandwidth=1.0, keep_points="yes")


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("bound", ["hoeffding", "chernoff"])
@pytest.mark.parametrize("weighted", [False, True])
def test_localized_estimator_on_a_device_matches_the_cpu(bound, weighted):
    import torch

    rng = np.random.default_rng(5)
    X = rng.random((800, 4))
    y = (rng.random(800) < X[:, 0]).astype(int) + (X[:, 1] > 0.6)
    Q = rng.random((40, 4))
    w = rng.uniform(0.3, 3.0, 800) if weighted else None
    device = "cuda" if torch.cuda.is_available() else "cpu"
    params = dict(bandwidth=0.3, n_neighbors=60, algorithm="brute", lipschitz=1.0, bound=bound)
    cpu = NadarayaWatsonClassifier(metric=None, **params).fit(X, y, sample_weight=w)
    dev = NadarayaWatsonClassifier(metric=None, device=device, **params).fit(X, y, sample_weight=w)
    a, b = cpu.predict_interval(Q), dev.predict_interval(Q)
    for field in ("proba", "kappa"):  # float64 on both sides: equal to rounding
        np.testing.assert_allclose(getattr(b, field), getattr(a, field), rtol=1e-9, atol=1e-12, err_msg=field)
    for field in ("lower", "upper"):  # the per-point Chernoff bound's root search: to its tolerance
        np.testing.assert_allclose(getattr(b, field), getattr(a, field), rtol=0, atol=1e-6, err_msg=field)
    st = dev.kernel_statistics(Q)
    assert (st.point_mass is not None) == (bound == "chernoff")  # the per-point Chernoff form's inputs


@needs_torch
def test_kneighbors_with_device_search_there_exactly_with_ties_to_the_lower_row(monkeypatch):
    # 64 distinct points, each many times: every distance is tied. Half the queries sit on the grid,
    # half between its points. The device search must give the exact k nearest by (float64 distance,
    # row), as the reference written here; the host index the same distances (its tie order may differ).
    rng = np.random.default_rng(8)
    X = rng.integers(0, 4, (500, 3)).astype(float)
    y = rng.integers(0, 2, 500)
    Q = rng.integers(0, 4, (40, 3)) + np.where(rng.random((40, 3)) < 0.3, 0.5, 0.0)
    kw = dict(metric=None, n_neighbors=25, bandwidth=3.0, lipschitz=0.1)
    host_d, _ = NadarayaWatsonClassifier(**kw).fit(X, y).kneighbors(Q)
    est = NadarayaWatsonClassifier(device="cpu", **kw).fit(X, y)
    monkeypatch.setattr(type(est.index_), "kneighbors", lambda *a, **k: pytest.fail("host search"))
    d, idx = est.kneighbors(Q)
    assert isinstance(idx, np.ndarray) and isinstance(d, np.ndarray)
    full = np.sqrt(((Q[:, None, :] - X[None]) ** 2).sum(axis=2))
    want = np.lexsort((np.broadcast_to(np.arange(X.shape[0]), full.shape), full), axis=1)[:, :25]
    assert np.array_equal(idx, want)
    np.testing.assert_allclose(d, np.take_along_axis(full, want, 1), rtol=1e-14)
    np.testing.assert_allclose(d, host_d, rtol=1e-14)
    assert (np.diff(np.take_along_axis(full, want, 1), axis=1) == 0).any()  # ties are really there
    _, idx3 = est.kneighbors(Q, n_neighbors=3)
    assert np.array_equal(idx3, want[:, :3])


def test_adapter_carries_the_summation_error():
    # Its sums of k neighbours' a_i (the device's, then float64 on the host) are within 1 ± γ_k: the
    # host bounds widen by sum_error, so it must not be 0 (the CPU engine's localized sums carry γ_k too).
    from nwbound._numerics import summation_error

    Q, X, labels, _, _, idx = _problem(3)
    train = TrainingSet.build(X, labels, 3, None)
    lams = np.array([0.4, 0.8])
    dev = neighbor_kernel_sums_array_api(idx, train, get_kernel("epanechnikov"), lams, queries=Q, need_dist=True)
    cpu = neighbor_kernel_sums(None, idx, train, get_kernel("epanechnikov"), lams, need_dist=True, queries=Q)
    assert cpu.sum_error == summation_error(idx.shape[1]) > 0
    assert dev.sum_error >= cpu.sum_error
