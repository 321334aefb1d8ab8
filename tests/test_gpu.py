"""nwbound.gpu: array-API kernel statistics and the fused Triton kernel, against a float64 reference.

The reference below is written independently: direct float64 differences ``q − x`` (no expanded
formula, no centring), the kernels' textbook formulas, plain sums. CUDA, CuPy and Triton tests
skip with the reason when the library or a GPU is absent; nothing here needs a GPU to pass.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier  # noqa: E402
from nwbound.engine.host._sums import TrainingSet, dense_kernel_sums  # noqa: E402
from nwbound.engine.device._sums import dense_kernel_sums_array_api  # noqa: E402
from nwbound.gpu import (  # noqa: E402
    DeviceTrainingSet,
    HISTOGRAM_KERNELS,
    SUPPORTED_KERNELS,
    kernel_statistics,
)
from nwbound.kernels import get_kernel  # noqa: E402

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_TRITON = importlib.util.find_spec("triton") is not None
HAS_CUPY = importlib.util.find_spec("cupy") is not None
HAS_STRICT = importlib.util.find_spec("array_api_strict") is not None


def _cuda() -> bool:
    if not HAS_TORCH:
        return False
    import torch

    return bool(torch.cuda.is_available())


needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed (pip install torch)")
needs_cuda = pytest.mark.skipif(not _cuda(), reason="no CUDA GPU visible to PyTorch")


# ---------------------------------------------------------------------------------------------
# Independent reference
# ---------------------------------------------------------------------------------------------
def _k_ref(u2: np.ndarray, name: str) -> np.ndarray:
    inside = u2 <= 1.0
    if name == "epanechnikov":
        return np.where(inside, 1.0 - u2, 0.0)
    if name == "quartic":
        return np.where(inside, (1.0 - u2) ** 2, 0.0)
    if name == "triweight":
        return np.where(inside, (1.0 - u2) ** 3, 0.0)
    if name == "boxcar":
        return inside.astype(float)
    if name == "gaussian":
        return np.where(u2 <= 9.0, np.exp(-u2 / 2.0), 0.0)
    return np.exp(-u2 / 2.0)


def reference(Q, X, onehot, name, lam, bins=0):
    Q, X, onehot = (np.asarray(a, dtype=np.float64) for a in (Q, X, onehot))
    d = np.concatenate([np.sqrt(((Q[s : s + 16, None, :] - X[None, :, :]) ** 2).sum(axis=2))
                        for s in range(0, Q.shape[0], 16)])  # chunks: bounded memory
    u2 = (d / lam) ** 2
    k = _k_ref(u2, name)
    w = onehot.sum(axis=1)
    out = {
        "w_max": float(w.max()),
        "class_sums": k @ onehot,
        "sq_sum": ((k * w) ** 2).sum(axis=1),
        "dist_sum": (k * w * d).sum(axis=1),
    }
    if bins:
        hist, mass, dist, count = (np.zeros((Q.shape[0], bins)) for _ in range(4))
        for b in range(bins):  # the bin of u² (u² = 1 in the last), support only
            lo, hi = b / bins, (b + 1) / bins
            inb = (u2 >= lo) & ((u2 < hi) | ((b == bins - 1) & (u2 <= 1.0)))
            hist[:, b] = (inb * w).sum(axis=1)
            mass[:, b] = (inb * w * k).sum(axis=1)
            dist[:, b] = (inb * w * k * d).sum(axis=1)
            count[:, b] = (inb & (w > 0)).sum(axis=1)
        out["histogram"], out["hist_mass"], out["hist_dist"], out["hist_count"] = hist, mass, dist, count
    return out


def _data(seed: int, n: int = 300, nq: int = 37, m: int = 7, n_classes: int = 3, offset: float = 0.0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, m)) + offset
    Q = rng.random((nq, m)) + offset
    labels = rng.integers(0, n_classes, n)
    onehot = np.zeros((n, n_classes))
    onehot[np.arange(n), labels] = rng.uniform(0.5, 2.0, n)  # sample weights
    return Q.astype(np.float32), X.astype(np.float32), onehot.astype(np.float32)


def _np(a):
    if a is None:
        return None
    if hasattr(a, "detach"):
        return a.detach().cpu().double().numpy()
    if type(a).__module__.startswith("cupy"):
        return a.get()
    if type(a).__module__.startswith("array_api_strict"):
        return np.asarray(np.from_dlpack(a), dtype=np.float64)
    return np.asarray(a, dtype=np.float64)


_BANDWIDTH_FIELDS = ("class_sums", "sq_sum", "dist_sum", "histogram", "hist_mass", "hist_dist", "hist_count",
                     "point_mass")


def one_bandwidth(st):
    """The device form of KernelStatistics (G = 1, checked) as its one bandwidth's (n, …) arrays,
    for the comparisons with the (n, …) references; other fields as they are."""
    from types import SimpleNamespace

    from nwbound.engine import KernelStatistics

    assert isinstance(st, KernelStatistics) and st.weight_max is None and st.d2_error is not None
    assert st.class_sums.ndim == 3 and st.class_sums.shape[1] == 1 and np.shape(st.bandwidth) == (1, 1)
    for name in _BANDWIDTH_FIELDS:
        a = getattr(st, name)
        assert a is None or (a.shape[:2] == st.class_sums.shape[:2]), name
    fields = {f.name: getattr(st, f.name) for f in dataclasses.fields(st)}
    fields.update({name: None if fields[name] is None else fields[name][:, 0, ...] for name in _BANDWIDTH_FIELDS})
    return SimpleNamespace(**fields)


def check_against_reference(st, ref, Q, X, lam, rtol=2e-5, atol=2e-5):
    from nwbound.engine import KernelStatistics

    if isinstance(st, KernelStatistics):  # else already one bandwidth's arrays (the interpreter's process)
        st = one_bandwidth(st)
    scale = max(1.0, float(np.abs(ref["class_sums"]).max()))
    np.testing.assert_allclose(_np(st.class_sums), ref["class_sums"], rtol=rtol, atol=atol * scale)
    np.testing.assert_allclose(_np(st.sq_sum), ref["sq_sum"], rtol=rtol, atol=atol * scale)
    if "histogram" in ref:
        # A point within rounding of a bin edge may fall on either side: compare cumulative mass.
        got = np.cumsum(_np(st.histogram), axis=1)
        np.testing.assert_allclose(got[:, -1], np.cumsum(ref["histogram"], axis=1)[:, -1], rtol=1e-5, atol=1e-4)
        # The points per bin (the split form's counts), to one point at each bin edge.
        counts = _np(st.hist_count)
        np.testing.assert_array_equal(counts, np.round(counts))
        np.testing.assert_array_equal(counts.sum(axis=1), ref["hist_count"].sum(axis=1))
        assert np.abs(np.cumsum(counts, axis=1) - np.cumsum(ref["hist_count"], axis=1)).max() <= 2
    if getattr(st, "hist_mass", None) is not None:
        # Per bin, Σ wK and Σ wK·d⁺ move between bins only with points at a bin edge (at most
        # the largest weight, K ≤ 1, d⁺ ≤ λ + slack); in total they are κ and dist_sum.
        w_max = ref["w_max"]
        for field, total in (("hist_mass", ref["class_sums"].sum(axis=1)), ("hist_dist", ref["dist_sum"])):
            got = _np(getattr(st, field))
            cum_ref = np.cumsum(ref[field], axis=1)
            assert np.abs(np.cumsum(got, axis=1) - cum_ref).max() <= 2.0 * w_max * max(lam, 1.0) * 1.01 + 1e-4
            np.testing.assert_allclose(got.sum(axis=1), total, rtol=2e-4, atol=2e-4 * max(1.0, total.max()))
        assert np.all(_np(st.hist_dist).sum(axis=1) >= ref["dist_sum"] * (1 - 1e-5) - 1e-6)
    if st.dist_sum is not None:
        ds = _np(st.dist_sum)
        # d⁺ ≥ d: never below the exact sum beyond the kernel values' float32 rounding,
        # and above it by at most the documented slack sqrt(E) per unit of weight.
        slack = np.sqrt(_np(st.d2_error)) * (ref["class_sums"].sum(axis=1) + 1e-12)
        np.testing.assert_array_less(ref["dist_sum"] * (1 - 1e-5) - 1e-6, ds)
        np.testing.assert_array_less(ds, ref["dist_sum"] * (1 + 1e-4) + 1.01 * slack + 1e-6)


# ---------------------------------------------------------------------------------------------
# NumPy and array_api_strict (always on the CPU)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SUPPORTED_KERNELS))
def test_numpy_matches_reference(name):
    Q, X, onehot = _data(1)
    lam = 0.9
    bins = 5 if name in HISTOGRAM_KERNELS else 0
    st = kernel_statistics(Q, X, onehot, kernel=name, bandwidth=lam, histogram_bins=bins)
    assert isinstance(st.class_sums, np.ndarray) and st.class_sums.shape == (Q.shape[0], 1, 3)
    assert st.bandwidth.tolist() == [[lam]] and st.kernel.name == name and st.kappa.shape == (Q.shape[0], 1)
    check_against_reference(st, reference(Q, X, onehot, name, lam, bins), Q, X, lam)


def test_tiny_bandwidth_histogram_has_no_overflow():
    # u² up to ~1e12: bins must stay exact and silent (warnings are errors in this suite).
    Q, X, onehot = _data(11)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        st = one_bandwidth(kernel_statistics(Q, X, onehot, bandwidth=1e-6, histogram_bins=3))
    ref = reference(Q, X, onehot, "epanechnikov", 1e-6, 3)
    np.testing.assert_array_equal(st.histogram, ref["histogram"])
    assert float(np.sum(st.class_sums)) == 0.0


def test_float64_and_block_rows_give_the_same_sums():
    Q, X, onehot = _data(2)
    ref = reference(Q, X, onehot, "epanechnikov", 0.8, 4)
    one = kernel_statistics(Q, X, onehot, bandwidth=0.8, histogram_bins=4, block_rows=5)
    full = kernel_statistics(Q, X, onehot, bandwidth=0.8, histogram_bins=4)
    for field in ("class_sums", "sq_sum", "dist_sum", "histogram"):
        np.testing.assert_allclose(getattr(one, field), getattr(full, field), rtol=1e-6, atol=1e-6)
    st64 = one_bandwidth(kernel_statistics(Q.astype(np.float64), X.astype(np.float64), onehot.astype(np.float64),
                                           bandwidth=0.8, dtype="float64"))
    np.testing.assert_allclose(st64.class_sums, ref["class_sums"], rtol=1e-10, atol=1e-10)
    assert float(np.max(st64.d2_error)) < 1e-12


def test_distance_bound_holds_far_from_the_origin():
    # Boxcar with no point near the support's edge: kernel values are exact, so Σ w·d⁺ ≥ Σ w·d
    # must hold strictly, even with coordinates offset by 1000 (the cancellation case).
    Q, X, onehot = _data(3, n=400, nq=50, m=12, offset=1000.0)
    d = np.sqrt(((Q[:, None, :].astype(np.float64) - X[None].astype(np.float64)) ** 2).sum(axis=2))
    # A bandwidth between two consecutive sorted distances, far from both.
    ds = np.sort(d.ravel())
    gaps = np.diff(ds[(ds > 1.0) & (ds < 1.3)])
    i = int(np.argmax(gaps))
    lam = float(ds[(ds > 1.0) & (ds < 1.3)][i] + gaps[i] / 2)
    assert np.min(np.abs((d / lam) ** 2 - 1.0)) > 1e-5
    st = one_bandwidth(kernel_statistics(Q, X, onehot, kernel="boxcar", bandwidth=lam))
    ref = reference(Q, X, onehot, "boxcar", lam)
    np.testing.assert_allclose(st.class_sums, ref["class_sums"], rtol=1e-6)  # same points inside
    assert np.all(st.dist_sum >= ref["dist_sum"])


@pytest.mark.skipif(not HAS_STRICT, reason="array_api_strict is not installed (pip install array-api-strict)")
def test_array_api_strict_namespace():
    import array_api_strict as xps

    Q, X, onehot = _data(4)
    st = kernel_statistics(xps.asarray(Q), xps.asarray(X), xps.asarray(onehot), kernel="quartic",
                           bandwidth=0.9, histogram_bins=3)
    assert type(st.class_sums).__module__.startswith("array_api_strict")
    check_against_reference(st, reference(Q, X, onehot, "quartic", 0.9, 3), Q, X, 0.9)


# ---------------------------------------------------------------------------------------------
# PyTorch on the CPU, and the estimator hook
# ---------------------------------------------------------------------------------------------
@needs_torch
def test_torch_cpu_stays_torch_and_restores_matmul_precision():
    import torch

    Q, X, onehot = _data(5)
    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        st = kernel_statistics(torch.from_numpy(Q), torch.from_numpy(X), torch.from_numpy(onehot),
                               bandwidth=0.9, histogram_bins=4, engine="array_api")
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision(previous)
    assert isinstance(st.class_sums, torch.Tensor) and st.class_sums.device.type == "cpu"
    check_against_reference(st, reference(Q, X, onehot, "epanechnikov", 0.9, 4), Q, X, 0.9)


def test_one_statistics_type_for_every_engine():
    # nwbound.gpu and nwbound.estimators name one class; the device engines fill its device form.
    from nwbound import estimators, gpu
    from nwbound.engine import KernelStatistics

    assert gpu.KernelStatistics is estimators.KernelStatistics is KernelStatistics
    Q, X, onehot = _data(12, n=60, nq=5)
    st = kernel_statistics(Q, X, onehot, bandwidth=0.9, histogram_bins=4)
    assert st.on_host and st.xp.__name__.endswith("numpy") and st.device == "cpu"
    assert st.class_sums.shape == (5, 1, 3) and st.histogram.shape == (5, 1, 4) and st.d2_error.shape == (5,)
    np.testing.assert_array_equal(st.kappa, st.class_sums.sum(axis=2))
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.9, lipschitz=1.0).fit(X, onehot.argmax(axis=1))
    # The device form's histogram is in the one-hot's units: the host bounds refuse it, naming the fix.
    with pytest.raises(ValueError, match="device form"):
        clf.interval_from_statistics(st)
    with pytest.raises(ValueError, match="device form"):
        st.merge(st)
    host = clf.kernel_statistics(Q)  # the bound form, same class
    assert isinstance(host, KernelStatistics) and host.weight_max is not None and host.d2_error is None
    host.check_bound_form()


@needs_torch
def test_statistics_type_in_torch():
    import torch

    Q, X, onehot = _data(13, n=60, nq=5)
    st = kernel_statistics(*(torch.from_numpy(a) for a in (Q, X, onehot)), bandwidth=0.9, histogram_bins=4,
                           engine="array_api")
    assert not st.on_host and "torch" in st.xp.__name__ and str(st.device) == "cpu"
    assert isinstance(st.kappa, torch.Tensor) and tuple(st.kappa.shape) == (5, 1)
    host = st.to_numpy()
    assert isinstance(host.class_sums, np.ndarray) and host.class_sums.dtype == np.float64
    np.testing.assert_array_equal(host.class_sums, st.class_sums.numpy())
    ref = kernel_statistics(Q, X, onehot, bandwidth=0.9, histogram_bins=4)
    np.testing.assert_allclose(host.class_sums, ref.class_sums, rtol=1e-6, atol=1e-6)
    with pytest.raises(TypeError, match=r"to_numpy\(\) first"):
        st.take_rows(slice(0, 2))
    assert host.take_rows(slice(0, 2)).class_sums.shape == (2, 1, 3)


def test_engine_adapter_matches_cpu_engine_and_estimator():
    rng = np.random.default_rng(6)
    X = rng.random((500, 6)).astype(np.float32)
    y = rng.integers(0, 4, 500)
    Q = rng.random((60, 6)).astype(np.float32)
    train = TrainingSet.build(X, y, 4, None)
    kern = get_kernel("epanechnikov")
    lams = np.array([0.6, 0.9])
    cpu = dense_kernel_sums(Q, train, kern, lams, need_dist=True)
    ours = dense_kernel_sums_array_api(Q, train, kern, lams, need_dist=True)
    np.testing.assert_allclose(ours.class_sums, cpu.class_sums, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ours.sq_sum, cpu.sq_sum, rtol=1e-4, atol=1e-4)
    assert np.all(ours.dist_sum >= cpu.dist_sum * (1 - 1e-5) - 1e-6)
    # predict_proba from the hook's sums equals the estimator's.
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.9, lipschitz=1.0, dtype="float32").fit(X, y)
    proba = ours.class_sums[:, 1] / ours.class_sums[:, 1].sum(axis=1, keepdims=True)
    np.testing.assert_allclose(proba, clf.predict_proba(Q), atol=1e-5)
    with pytest.raises(ValueError, match="tail_radius"):
        dense_kernel_sums_array_api(Q, train, kern, lams, need_dist=True, tail_radius=3.0)
    if HAS_TORCH:  # the estimator hook's form: NumPy queries computed on a named torch device
        on_dev = dense_kernel_sums_array_api(Q, train, kern, lams, need_dist=True, device="cpu")
        np.testing.assert_allclose(on_dev.class_sums, ours.class_sums, rtol=1e-5, atol=1e-5)
        with pytest.raises(ValueError, match="device='nowhere' is not a usable"):
            dense_kernel_sums_array_api(Q, train, kern, lams, need_dist=True, device="nowhere")


# ---------------------------------------------------------------------------------------------
# Bad input: one clear message naming the parameter
# ---------------------------------------------------------------------------------------------
def test_bad_input_messages():
    Q, X, onehot = _data(7)
    with pytest.raises(ValueError, match="features"):
        kernel_statistics(Q[:, :3], X, onehot, bandwidth=1.0)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="X_train contains NaN"):
        kernel_statistics(Q, bad, onehot, bandwidth=1.0)
    with pytest.raises(ValueError, match="bandwidth"):
        kernel_statistics(Q, X, onehot, bandwidth=0.0)
    with pytest.raises(TypeError, match="bandwidth"):
        kernel_statistics(Q, X, onehot, bandwidth="wide")
    with pytest.raises(ValueError, match="histogram_bins needs a kernel supported on the unit ball"):
        kernel_statistics(Q, X, onehot, kernel="gaussian", bandwidth=1.0, histogram_bins=4)
    with pytest.raises(ValueError, match="no array-API implementation"):
        kernel_statistics(Q, X, onehot, kernel="tricube", bandwidth=1.0)
    with pytest.raises(ValueError, match="onehot must be non-negative"):
        kernel_statistics(Q, X, -onehot, bandwidth=1.0)
    with pytest.raises(ValueError, match="one row per training point"):
        kernel_statistics(Q, X, onehot[:-1], bandwidth=1.0)
    with pytest.raises(ValueError, match="2-D"):
        kernel_statistics(Q[0], X, onehot, bandwidth=1.0)
    with pytest.raises(ValueError, match="engine='triton' cannot run here"):
        kernel_statistics(Q, X, onehot, bandwidth=1.0, engine="triton")
    with pytest.raises(ValueError, match="precision='tf32x3' needs the Triton engine"):
        kernel_statistics(Q, X, onehot, bandwidth=1.0, precision="tf32x3")
    with pytest.raises(ValueError, match="gemm='library' needs the Triton engine"):
        kernel_statistics(Q, X, onehot, bandwidth=1.0, gemm="library")
    with pytest.raises(ValueError, match="engine must be one of"):
        kernel_statistics(Q, X, onehot, bandwidth=1.0, engine="cuda")
    train = DeviceTrainingSet.build(X, onehot)
    with pytest.raises(ValueError, match="onehot=None"):
        kernel_statistics(Q, train, onehot, bandwidth=1.0)
    if HAS_TORCH:
        import torch

        with pytest.raises(TypeError, match="one library"):
            kernel_statistics(torch.from_numpy(Q), X, onehot, bandwidth=1.0)


# ---------------------------------------------------------------------------------------------
# Triton: the interpreter on the CPU, the compiled kernel on a GPU
# ---------------------------------------------------------------------------------------------
_INTERPRETED = """
import sys, numpy as np, torch
from nwbound.gpu import DeviceTrainingSet, kernel_statistics
from nwbound.engine.device._triton import triton_kernel_statistics
data = np.load(sys.argv[1])
out = {}
for case in sys.argv[3:]:
    name, bins, gemm, weights, config = case.split(":")
    Q, X, onehot = (torch.from_numpy(data[k]) for k in ("Q", "X", "onehot_" + weights))
    if config:  # a chosen tile shape (BN = 128: the packed histogram's 10-bit fields)
        st = triton_kernel_statistics(Q, DeviceTrainingSet.build(X, onehot), name, 0.85, histogram_bins=int(bins),
                                      gemm=gemm, config=tuple(int(v) for v in config.split(",")))
    else:
        st = kernel_statistics(Q, X, onehot, kernel=name, bandwidth=0.85, histogram_bins=int(bins),
                               engine="triton", gemm=gemm)
    assert st.class_sums.shape[1] == 1  # the device form: one bandwidth
    for k in ("class_sums", "sq_sum", "dist_sum", "d2_error", "histogram", "hist_mass", "hist_dist", "hist_count"):
        if getattr(st, k) is not None:
            out[case + "/" + k] = (getattr(st, k) if k == "d2_error" else getattr(st, k)[:, 0]).numpy()
np.savez(sys.argv[2], **out)
"""
# (kernel, bins, gemm, weights, config): "sample" weights take the per-bin histogram, "unit" and
# "class" (every tile's positive weights equal) the packed one, in 8-bit (BN ≤ 64) and 10-bit fields.
_INTERPRETED_CASES = [("epanechnikov", 4, "fused", "sample", ""), ("triweight", 0, "fused", "sample", ""),
                      ("gaussian_untruncated", 0, "fused", "sample", ""), ("quartic", 3, "library", "sample", ""),
                      ("epanechnikov", 16, "library", "unit", ""), ("boxcar", 5, "fused", "class", "16,128,1,1"),
                      ("epanechnikov", 7, "library", "class", "16,64,1,1")]


@pytest.mark.skipif(not (HAS_TORCH and HAS_TRITON), reason="triton and torch are not both installed (pip install torch triton)")
def test_triton_interpreter_matches_reference(tmp_path):
    # Its own interpreter process: TRITON_INTERPRET must be set before triton is first imported.
    import os
    import subprocess
    import sys
    from types import SimpleNamespace

    # Classes of very different sizes (one empty) exercise the class-sorted, padded layout.
    Q, X, onehot = _data(8, n=333, nq=21, m=19, n_classes=4)
    onehot[:, 3] = 0.0
    onehot[:300, 2] = 0.0
    onehot[np.all(onehot == 0, axis=1), 0] = 1.0
    # 140 copies of one class-1 point: rows whose whole 128-point tile falls in one bin (the
    # largest count a packed field must hold).
    X[:140] = Q[0] + 0.3 / np.sqrt(X.shape[1])
    onehot[:140] = 0.0
    onehot[:140, 1] = 1.0
    member = (onehot > 0).astype(np.float32)
    weighted = {"sample": onehot, "unit": member, "class": member * np.array([1.5, 0.25, 3.0, 1.0], np.float32)}
    np.savez(tmp_path / "in.npz", Q=Q, X=X, **{"onehot_" + k: v for k, v in weighted.items()})
    env = dict(os.environ, TRITON_INTERPRET="1", TRITON_DEFAULT_FP_FUSION="1")
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    cases = [":".join(map(str, case)) for case in _INTERPRETED_CASES]
    run = subprocess.run([sys.executable, "-c", _INTERPRETED, str(tmp_path / "in.npz"), str(tmp_path / "out.npz"),
                          *cases], env=env, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    got = np.load(tmp_path / "out.npz")
    for (name, bins, _, weights, _), case in zip(_INTERPRETED_CASES, cases):
        hist_fields = ("histogram", "hist_mass", "hist_dist", "hist_count")
        st = SimpleNamespace(**{k: got[case + "/" + k] if bins else None for k in hist_fields},
                             **{k: got[case + "/" + k] for k in ("class_sums", "sq_sum", "dist_sum", "d2_error")})
        ref = reference(Q, X, weighted[weights], name, 0.85, bins)
        check_against_reference(st, ref, Q, X, 0.85)
        if not bins:
            assert case + "/hist_mass" not in got
            continue
        # Every bin, not only the totals (no point of this data lies within rounding of an edge):
        # against the independent formula, and against the CPU engine's split-form sums.
        np.testing.assert_allclose(st.histogram, ref["histogram"], rtol=1e-6, atol=1e-5, err_msg=case)
        np.testing.assert_allclose(st.hist_mass, ref["hist_mass"], rtol=1e-5, atol=1e-5, err_msg=case)
        np.testing.assert_array_equal(st.hist_count, ref["hist_count"], err_msg=case)
        assert np.all(st.hist_dist >= ref["hist_dist"] * (1 - 1e-5) - 1e-6), case  # d⁺ ≥ d per bin
        np.testing.assert_allclose(st.hist_dist, ref["hist_dist"], rtol=1e-4, atol=1e-5, err_msg=case)
        cpu = _cpu_engine_histogram(Q, X, weighted[weights], weights, name, 0.85, bins)
        for field in hist_fields:
            np.testing.assert_allclose(getattr(st, field), cpu[field], rtol=1e-4, atol=1e-5, err_msg=f"{case} {field}")
    assert got[cases[4] + "/histogram"][0].max() >= 140  # the 140 copies share query 0's bin


def _cpu_engine_histogram(Q, X, onehot, weights: str, name: str, lam: float, bins: int) -> dict:
    """The CPU engine's (``_sums``) histogram, hist_mass and hist_dist at one bandwidth, unscaled."""
    labels = np.argmax(onehot > 0, axis=1)
    w = None if weights == "unit" else onehot[np.arange(len(labels)), labels].astype(np.float64)
    train = TrainingSet.build(X.astype(np.float64), labels, onehot.shape[1], w)
    sums = dense_kernel_sums(Q.astype(np.float64), train, get_kernel(name), np.array([lam]), need_dist=True,
                             histogram_bins=bins)
    # Unweighted, the CPU engine keeps no counts: its histogram is the count.
    count = sums.histogram[:, 0] * sums.weight_max if sums.hist_count is None else sums.hist_count[:, 0]
    return {"histogram": sums.histogram[:, 0] * sums.weight_max, "hist_mass": sums.hist_mass[:, 0],
            "hist_dist": sums.hist_dist[:, 0], "hist_count": count}


def _gpu_case(xp_name: str, engine: str, precision: str = "ieee", gemm: str | None = None, weights: str = "sample"):
    Q, X, onehot = _data(9, n=6000, nq=300, m=100, n_classes=5)
    if weights == "unit":  # every tile's weights equal: the packed histogram
        onehot = (onehot > 0).astype(np.float32)
    import torch

    dev = "cuda"
    if xp_name == "cupy":
        import cupy

        args = [cupy.asarray(a) for a in (Q, X, onehot)]
    else:
        args = [torch.from_numpy(a).to(dev) for a in (Q, X, onehot)]
    lam = float(np.median(np.sqrt(((Q[:50, None].astype(float) - X[None, :500]) ** 2).sum(axis=2))))
    st = kernel_statistics(*args, bandwidth=lam, histogram_bins=8, engine=engine, precision=precision, gemm=gemm)
    ref = reference(Q, X, onehot, "epanechnikov", lam, 8)
    check_against_reference(st, ref, Q, X, lam, rtol=1e-4, atol=1e-4)
    # Per bin: only points within float32 rounding of a bin edge may move to the next bin.
    moved = np.abs(np.cumsum(_np(one_bandwidth(st).histogram), axis=1) - np.cumsum(ref["histogram"], axis=1))
    assert moved.max() <= 2.0 * float(onehot.sum(axis=1).max()), moved.max()
    return st


@needs_cuda
def test_torch_cuda_array_api():
    st = _gpu_case("torch", "array_api")
    assert st.class_sums.device.type == "cuda"


@needs_cuda
@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
@pytest.mark.parametrize("precision,gemm,weights", [("ieee", "fused", "sample"), ("tf32x3", "fused", "sample"),
                                                    ("ieee", "library", "sample"), ("ieee", None, "unit"),
                                                    ("ieee", "fused", "unit")])
def test_triton_cuda(precision, gemm, weights):
    st = _gpu_case("torch", "triton", precision, gemm, weights)
    assert st.class_sums.device.type == "cuda"


@needs_cuda
@pytest.mark.skipif(not HAS_CUPY, reason="cupy is not installed")
@pytest.mark.parametrize("engine", ["array_api", "auto"])
def test_cupy(engine):
    st = _gpu_case("cupy", engine)
    assert type(st.class_sums).__module__.startswith("cupy")


def test_error_bound_is_documented_size():
    # E = γ_{m+3}(‖q'‖ + R)²: check the formula against a direct evaluation.
    Q, X, onehot = _data(10)
    st = kernel_statistics(Q, X, onehot, bandwidth=1.0)
    c = 0.5 * (X.astype(np.float64).min(axis=0) + X.astype(np.float64).max(axis=0))
    qn = np.linalg.norm((Q.astype(np.float64) - c).astype(np.float32).astype(np.float64), axis=1)
    R = np.linalg.norm((X.astype(np.float64) - c).astype(np.float32).astype(np.float64), axis=1).max()
    u = 2.0**-24
    k = X.shape[1] + 3
    np.testing.assert_allclose(st.d2_error, k * u / (1 - k * u) * (qn + R) ** 2, rtol=1e-9)
    assert math.isfinite(float(st.d2_error.max()))


@needs_torch
def test_error_bounds_in_a_namespace_other_than_the_training_sets():
    # The Triton path evaluates (E, η) in torch for a training set built from CuPy arrays, whose
    # dtype objects are NumPy's (run 1 on an H200: torch.finfo rejected them). Same here with NumPy.
    import torch

    from nwbound.gpu import array_namespace_of
    from nwbound.engine.device._array_api import distance_error_bounds

    Q, X, onehot = _data(12)
    train = DeviceTrainingSet.build(X, onehot)
    q_sq = torch.tensor([0.0, 4.0], dtype=torch.float64)
    E, eta = distance_error_bounds(array_namespace_of(q_sq), q_sq, train)
    assert isinstance(E, torch.Tensor)
    u, k = 2.0**-24, X.shape[1] + 3
    reach = np.array([0.0, 2.0]) + train.max_norm
    np.testing.assert_allclose(E.numpy(), k * u / (1 - k * u) * reach**2, rtol=1e-12)
    np.testing.assert_allclose(eta.numpy(), (u + 2.0**-50) * reach, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# The estimator's device= parameter (PyTorch's CPU backend here; "cuda" on the device check)
# ---------------------------------------------------------------------------------------------
def _device_fit(device, n: int = 1500, n_queries: int = 120, **params):
    rng = np.random.default_rng(20)
    X = rng.random((n, 5)).astype(np.float32)
    y = (rng.random(n) < X[:, 0]).astype(int) + (X[:, 1] > 0.5)
    Q = rng.random((n_queries, 5)).astype(np.float32)
    settings = dict(bandwidth=0.35, lipschitz=1.0, dtype="float32", **params)
    return NadarayaWatsonClassifier(metric=None, device=device, **settings).fit(X, y), Q


def _device_name() -> str:
    return "cuda" if _cuda() else "cpu"


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("bound", ["hoeffding", "chernoff"])
@pytest.mark.parametrize("weighted", [False, True])
def test_estimator_device_matches_cpu_engine(bound, weighted):
    _check_device_intervals(*_device_pair(_device_name(), bound, weighted))


def _device_pair(device: str, bound: str, weighted: bool, **sizes):
    """The CPU-engine and ``device`` estimators fitted on the same data, the queries, and ``bound``."""
    cpu, Q = _device_fit(None, bound=bound, **sizes)
    dev, _ = _device_fit(device, bound=bound, **sizes)
    if weighted:  # sample weights: the split form's a_lo = 0 path and weight normalisation
        w = np.random.default_rng(21).uniform(0.2, 3.0, cpu.n_samples_fit_)
        X, y = cpu._train.X, cpu.classes_[cpu._train.labels]
        cpu.fit(X, y, sample_weight=w)
        dev.fit(X, y, sample_weight=w)
    return cpu, dev, Q, bound


def _check_device_intervals(cpu, dev, Q, bound: str) -> None:
    """The device estimator's intervals are the CPU engine's, to float32 rounding (same bound form).

    With sample weights both count the points per histogram bin (the tighter split form: each
    point's mass at least ``weight_min·K`` at its bin's outer edge), and both are tighter than
    the count-free form.
    """
    cpu_stats = cpu.kernel_statistics(Q)
    a = cpu.interval_from_statistics(cpu_stats)
    b = dev.predict_interval(Q)
    st = dev.kernel_statistics(Q)
    if bound == "chernoff" and cpu_stats.hist_count is not None:
        assert st.hist_count is not None and st.weight_min == cpu_stats.weight_min
        loose = cpu.interval_from_statistics(dataclasses.replace(cpu_stats, hist_count=None))
        assert np.mean(b.upper - b.lower) < np.mean(loose.upper - loose.lower)
    np.testing.assert_allclose(b.proba, a.proba, atol=1e-5)
    np.testing.assert_allclose(b.lower, a.lower, atol=5e-4)
    np.testing.assert_allclose(b.upper, a.upper, atol=5e-4)
    assert np.mean(np.abs(b.upper - a.upper)) < 5e-5  # float32 rounding, not a different bound form
    if bound == "chernoff":  # the split form's per-bin statistics come back from the device
        assert st.hist_mass is not None and st.hist_dist is not None
        np.testing.assert_allclose(st.hist_mass.sum(axis=2), st.kappa, rtol=1e-5, atol=1e-5)
    assert np.all(np.asarray(st.u2_error) > 0)  # the float32 distance error reaches the bound


_INTERPRETED_ESTIMATOR = """
import sys, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, sys.argv[1])
import test_gpu
from nwbound.engine.device import _triton
for bound, weighted in (("chernoff", False), ("chernoff", True)):
    _triton._LAYOUTS.clear()
    test_gpu._check_device_intervals(*test_gpu._device_pair("cpu", bound, weighted, n=400, n_queries=24))
    assert _triton._LAYOUTS, "the Triton kernel did not run"  # its layout cache: the kernel ran
print("ok")
"""


@pytest.mark.skipif(not (HAS_TORCH and HAS_TRITON), reason="triton and torch are not both installed (pip install torch triton)")
def test_estimator_device_through_triton_interpreter():
    # device="cpu" under TRITON_INTERPRET=1 takes the Triton kernel (engine="auto"), as "cuda" does
    # on a GPU: the split Chernoff form's per-bin sums come from it, and the intervals are the CPU's.
    import os
    import subprocess
    import sys

    here = Path(__file__).resolve().parent
    env = dict(os.environ, TRITON_INTERPRET="1", TRITON_DEFAULT_FP_FUSION="1")
    env["PYTHONPATH"] = str(here.parent / "src") + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run([sys.executable, "-c", _INTERPRETED_ESTIMATOR, str(here)], env=env, capture_output=True,
                         text=True, timeout=240)
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stderr[-3000:]


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_estimator_device_auto_bandwidth_and_predict_proba():
    cpu, Q = _device_fit(None, bound="chernoff")
    dev, _ = _device_fit("cpu", bound="chernoff")
    for est in (cpu, dev):
        est.set_params(bandwidth="auto", bandwidth_grid=[0.2, 0.35, 0.6]).fit(est._train.X, est.classes_[est._train.labels])
    a, b = cpu.predict_interval(Q), dev.predict_interval(Q)
    np.testing.assert_allclose(b.upper - b.lower, a.upper - a.lower, atol=1e-3)
    np.testing.assert_allclose(dev.set_params(bandwidth=0.35).fit(cpu._train.X, cpu.classes_[cpu._train.labels])
                               .predict_proba(Q), cpu.set_params(bandwidth=0.35).fit(
                                   cpu._train.X, cpu.classes_[cpu._train.labels]).predict_proba(Q), atol=1e-5)


@needs_torch
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_estimator_device_survives_save_and_load(tmp_path):
    from nwbound.io.model_file import load_model, save_model

    dev, Q = _device_fit("cpu")
    path = save_model(dev, tmp_path / "model.nwb")
    back = load_model(path)
    assert back.get_params()["device"] == "cpu"
    np.testing.assert_array_equal(back.predict_interval(Q).upper, dev.predict_interval(Q).upper)


def test_estimator_device_errors(monkeypatch):
    import sys

    with pytest.raises(ValueError, match="no array-API implementation"):
        _device_fit("cpu", kernel="tricube")  # refused at fit
    est, Q = _device_fit(None, kernel="tricube", n_neighbors=10, algorithm="brute")
    est.set_params(device="cpu")
    with pytest.raises(ValueError, match="no array-API implementation"):
        est.predict_interval(Q)  # and at predict, after set_params
    if HAS_TORCH:
        est, Q = _device_fit("nowhere")
        with pytest.raises(ValueError, match="device='nowhere' is not a usable PyTorch device"):
            est.predict_proba(Q)
        est, Q = _device_fit("cpu", kernel="gaussian", bound="chernoff")
        with pytest.raises(ValueError, match="bound='hoeffding'"):
            est.predict_interval(Q)
    with pytest.raises(ValueError, match="device"):  # not a string: scikit-learn's parameter check
        _device_fit(3)
    monkeypatch.setitem(sys.modules, "torch", None)  # as if PyTorch were not installed
    est, Q = _device_fit("cuda")
    with pytest.raises(ImportError, match=r'pip install -e "\.\[gpu\]" in the nwbound checkout'):
        est.predict_proba(Q)
