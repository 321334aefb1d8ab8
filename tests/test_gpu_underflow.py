"""Σ(wK)² on the device paths stays an upper bound when squares underflow (issue 13).

With one weight far below the largest (1e-30 in float32, 1e-310 in float64) the squares ``(wK)²``
flush to 0, and a query that only that point reaches had ``Σ (wK)² = 0`` with ``κ > 0``: a
sampling term of 0, ε of the bias alone — a silent wrong answer (the CPU engine adds
``n·2⁻¹⁰⁷⁴`` since round 3). Every path is checked against an exact reference written here with
:mod:`fractions`: the boxcar kernel makes every ``K`` exactly 0 or 1, so the exact
``Σ (w_i K_i)²`` and ``κ`` follow from the float weights alone.
"""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier
from nwbound.gpu import kernel_statistics, neighbor_kernel_statistics

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_TRITON = importlib.util.find_spec("triton") is not None
HAS_STRICT = importlib.util.find_spec("array_api_strict") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed (pip install torch)")
needs_cuda = pytest.mark.skipif(not (HAS_TORCH and __import__("torch").cuda.is_available()),
                                reason="no CUDA GPU visible to PyTorch")

TINY = {"float32": 1e-30, "float64": 1e-310}
# The query sits at 0; rows within 1 (the bandwidth) count with K = 1, the others with K = 0.
_X = np.array([[0.0], [0.25], [-0.5], [3.0], [4.0], [-5.0]])
_LABELS = np.array([0, 1, 0, 1, 0, 1])


def _weights(dtype: str, mixed: bool) -> np.ndarray:
    """``mixed``: the tiny weight among weight-1 neighbours; else the tiny point is alone inside."""
    tiny = TINY[dtype]
    w = [tiny, 1.0, 0.5, 1.0, 1.0, 1.0] if mixed else [tiny, tiny * 3.0, tiny, 1.0, 1.0, 1.0]
    return np.asarray(w, dtype=dtype)


def _exact(weights: np.ndarray) -> tuple[Fraction, Fraction]:
    """Exact ``(κ, Σ (w K)²)`` of the boxcar at query 0, bandwidth 1, from the stored weights."""
    inside = np.abs(_X[:, 0]) <= 1.0
    w = [Fraction(float(v)) for v, keep in zip(weights, inside) if keep]
    return sum(w, Fraction(0)), sum((v * v for v in w), Fraction(0))


def _sampling_reference(kappa: Fraction, sq: Fraction, delta_prime: float) -> float:
    """Hoeffding's term ``sqrt(log(2/δ')·Σ(wK)²/2)/κ`` from the exact sums, rounded down a little."""
    # The ratio first (exact), then one float: √(S2)/κ of tiny numbers never underflows this way.
    ratio = float(sq / (kappa * kappa))
    return math.sqrt(math.log(2.0 / delta_prime) * ratio / 2.0) * (1.0 - 1e-12)


def _onehot(weights: np.ndarray) -> np.ndarray:
    onehot = np.zeros((len(weights), 2), dtype=weights.dtype)
    onehot[np.arange(len(weights)), _LABELS] = weights
    return onehot


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mixed", [False, True], ids=["alone", "mixed"])
@pytest.mark.parametrize("namespace", ["numpy", "torch", "array_api_strict"])
def test_array_api_sq_sum_is_an_upper_bound(dtype, mixed, namespace):
    if namespace == "torch" and not HAS_TORCH:
        pytest.skip("PyTorch is not installed (pip install torch)")
    if namespace == "array_api_strict" and not HAS_STRICT:
        pytest.skip("array_api_strict is not installed (pip install array-api-strict)")
    w = _weights(dtype, mixed)
    args = [np.zeros((1, 1), dtype=dtype), _X.astype(dtype), _onehot(w)]
    if namespace == "torch":
        import torch

        args = [torch.from_numpy(a) for a in args]
    elif namespace == "array_api_strict":
        import array_api_strict as xps

        args = [xps.asarray(a) for a in args]
    st = kernel_statistics(*args, kernel="boxcar", bandwidth=1.0, dtype=dtype, engine="array_api").to_numpy()
    kappa, sq = _exact(w)
    assert abs(Fraction(float(st.kappa[0, 0])) - kappa) <= kappa / 2**20  # K ∈ {0, 1}: κ to rounding
    got = Fraction(float(st.sq_sum[0, 0]))
    assert got >= sq > 0  # never below the exact value, never 0
    tiny = np.finfo(dtype).smallest_subnormal
    assert got <= sq * (1 + Fraction(1, 2**20)) + 7 * Fraction(float(tiny))  # and only by the documented slack


@pytest.mark.parametrize("mixed", [False, True], ids=["alone", "mixed"])
def test_neighbor_sq_sum_is_an_upper_bound(mixed):
    w = _weights("float64", mixed)
    idx = np.arange(len(w))[None, :]
    st = neighbor_kernel_statistics(np.zeros((1, 1)), _X, _onehot(w), idx, kernel="boxcar", bandwidth=1.0)
    kappa, sq = _exact(w)
    assert abs(Fraction(float(st.kappa[0, 0])) - kappa) <= kappa / 2**50
    # float64 squares, as the CPU engine: underflow and the float64 sum's rounding covered.
    assert Fraction(float(st.sq_sum[0, 0])) >= sq > 0
    assert st.sq_sum[0, 0] > 0


def _estimator_sampling(device, dtype: str, mixed: bool, **params) -> tuple[np.ndarray, float]:
    clf = NadarayaWatsonClassifier(metric=None, kernel="boxcar", bandwidth=1.0, lipschitz=1e-3, bound="hoeffding",
                                   dtype=dtype, device=device, **params)
    clf.fit(_X.astype(dtype), _LABELS, sample_weight=_weights(dtype, mixed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # UselessBoundWarning where only the tiny points count
        iv = clf.predict_interval(np.zeros((1, 1), dtype=dtype))
    return iv.sampling[0], clf.delta_prime_


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mixed", [False, True], ids=["alone", "mixed"])
@pytest.mark.parametrize("localized", [False, True], ids=["regular", "localized"])
def test_estimator_device_sampling_term_is_never_too_small(dtype, mixed, localized):
    extra = dict(n_neighbors=len(_X)) if localized else {}
    got, delta_prime = _estimator_sampling("cpu", dtype, mixed, **extra)
    cpu, _ = _estimator_sampling(None, dtype, mixed, **extra)
    # fit divides the weights by the largest (1 here): the exact sums of the stored weights.
    ref = _sampling_reference(*_exact(_weights(dtype, mixed)), delta_prime)
    # Alone, the device's term was 0 (ε the bias alone); now at least the exact one — far above it
    # in float32, whose squares of 1e-30 do not exist (the query is reached by nothing but weights
    # 1e-30 times the largest: vacuous, where the float64 CPU engine says 0.9).
    assert np.all(got >= ref), (got, ref)
    assert np.all(cpu >= ref), (cpu, ref)  # the CPU engine, as a control
    if mixed:  # a normal neighbourhood: the slack is invisible
        np.testing.assert_allclose(got, ref, rtol=1e-6)
        np.testing.assert_allclose(cpu, ref, rtol=1e-6)


_INTERPRETED = r"""
import json, sys, numpy as np, torch
from nwbound.gpu import kernel_statistics
w, X, labels = (np.array(v) for v in json.loads(sys.argv[1]))
onehot = np.zeros((len(w), 2), dtype=np.float32)
onehot[np.arange(len(w)), labels] = w
st = kernel_statistics(torch.zeros((1, 1)), torch.from_numpy(X.astype(np.float32)), torch.from_numpy(onehot),
                       kernel="boxcar", bandwidth=1.0, engine="triton")
print(json.dumps([float(st.kappa[0, 0]), float(st.sq_sum[0, 0])]))
"""


@pytest.mark.skipif(not (HAS_TORCH and HAS_TRITON), reason="triton and torch are not both installed (pip install torch triton)")
@pytest.mark.parametrize("mixed", [False, True], ids=["alone", "mixed"])
def test_triton_sq_sum_is_an_upper_bound(mixed):
    # Triton's interpreter on the CPU (its own process: TRITON_INTERPRET must precede triton's import).
    import json

    w = _weights("float32", mixed)
    env = dict(os.environ, TRITON_INTERPRET="1", TRITON_DEFAULT_FP_FUSION="1")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src") + os.pathsep + env.get("PYTHONPATH", "")
    payload = json.dumps([w.astype(np.float64).tolist(), _X.tolist(), _LABELS.tolist()])
    run = subprocess.run([sys.executable, "-c", _INTERPRETED, payload], env=env, capture_output=True, text=True,
                         timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    kappa_got, sq_got = json.loads(run.stdout.strip().splitlines()[-1])
    kappa, sq = _exact(w)
    assert abs(Fraction(kappa_got) - kappa) <= kappa / 2**20
    assert Fraction(sq_got) >= sq > 0
    # The slack: n·2⁻¹⁴⁹ for underflow and (BN + 2)·u for the tile's float32 roundings.
    assert Fraction(sq_got) <= sq * (1 + Fraction(1, 2**16)) + 8 * Fraction(2.0**-149)


@needs_torch
@pytest.mark.parametrize("bound", ["hoeffding", "chernoff"])
def test_estimator_device_weights_far_above_one(bound):
    # A fitted state may carry weights in any units (fit scales them to a largest of 1): the
    # device path works in units of the power of two above the largest, as the CPU engine, so
    # (wK)² of a weight 3e30 no longer overflows float32 (Σ(wK)² = inf was refused by the bound).
    X = np.array([[0.0], [0.3], [0.45], [6.0], [7.0]])
    y = np.array([0, 1, 0, 1, 0])
    out = {}
    for device in (None, "cpu"):
        clf = NadarayaWatsonClassifier(metric=None, bandwidth=1.0, lipschitz=0.1, bound=bound, dtype="float32", device=device)
        state = clf.fit(X, y).get_fitted_state()
        state["weights"] = np.array([3e30, 1e30, 2e30, 1.0, 1.0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[device] = clf.set_fitted_state(state).predict_interval(np.array([[0.0], [0.2]]))
    # Chernoff (the same per-bin counts and weight_min): its solver moves float32 roundings of the
    # per-bin sums to ~1e-5 of the bounds.
    atol = 1e-6 if bound == "hoeffding" else 2e-5
    for field in ("proba", "lower", "upper", "sampling"):
        np.testing.assert_allclose(getattr(out["cpu"], field), getattr(out[None], field), rtol=1e-5, atol=atol)
    assert np.all(np.isfinite(out["cpu"].epsilon)) and np.all(out["cpu"].epsilon < 1.0)


@needs_cuda
@pytest.mark.parametrize("engine", ["array_api", "triton"])
@pytest.mark.parametrize("mixed", [False, True], ids=["alone", "mixed"])
def test_cuda_sq_sum_is_an_upper_bound(engine, mixed):
    # The device check (benchmarks/gpu_check.sh): the compiled kernel and cuBLAS/PyTorch on CUDA.
    import torch

    if engine == "triton" and not HAS_TRITON:
        pytest.skip("triton is not installed")
    w = _weights("float32", mixed)
    args = [torch.from_numpy(a).to("cuda") for a in (np.zeros((1, 1), np.float32), _X.astype(np.float32), _onehot(w))]
    st = kernel_statistics(*args, kernel="boxcar", bandwidth=1.0, engine=engine).to_numpy()
    kappa, sq = _exact(w)
    assert abs(Fraction(float(st.kappa[0, 0])) - kappa) <= kappa / 2**20
    assert Fraction(float(st.sq_sum[0, 0])) >= sq > 0
