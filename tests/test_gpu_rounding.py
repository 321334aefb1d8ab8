"""The device paths' summation rounding is inside the bound (issue 13).

The float32 device paths used to hand the bound class sums and per-bin masses with rounding that
nothing covered (a float32 product over every training point in the array-API engine, float32
tile sums in the Triton kernel): the interval could fall inside the one of the exact sums. Now
the array-API engine sums exact products in float64 and every device path reports ``sum_error``,
a bound the interval carries (:func:`nwbound._numerics.summation_error`).

The reference is written here, independent of the engines: points on a grid ``k/64`` and queries
on it, bandwidth 1, weights powers of two, so every distance, kernel value ``1 − u²`` (or the
boxcar's 0/1), weight and product is an exact dyadic rational; the exact sums are Python
integers (as :class:`fractions.Fraction`). The reference interval is the bound of those exact
sums with exact distances (``u2_error = 0``), through the library's own bound arithmetic; the
device interval must contain it for every query and class.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier
from nwbound._numerics import compose_errors, summation_error
from nwbound.bounds._chernoff_binned import chernoff_interval_binned
from nwbound.estimators import KernelStatistics

from _exact_sums import exact_statistics

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_TRITON = importlib.util.find_spec("triton") is not None
HAS_STRICT = importlib.util.find_spec("array_api_strict") is not None

GRID = 64  # x = k / GRID; λ = 1, so u² = (k − j)²/GRID² exactly
BINS = 32
# The band-Chernoff search places each end within this of its exact test's end (both intervals).
CHERNOFF_TOL = 1.5e-7


def _dataset(n_light: int, n_heavy: int, weighted: bool, seed: int = 0):
    """Adversarial for float32 sums: heavy points first, then many light ones of the same class.

    Light weights 2^-e (e in [18, 40)) next to heavy ones of weight 1 are lost to a float32 partial
    sum that holds a heavy one; the unweighted form has many terms of equal magnitude instead.
    Some points sit exactly on the kernel's edge (u² = 1) and beyond it.
    """
    rng = np.random.default_rng(seed)
    k = np.concatenate([rng.integers(-GRID // 2, GRID // 2 + 1, 2 * n_heavy), rng.integers(-GRID + 1, GRID, n_light),
                        [GRID, -GRID, GRID + 32, -GRID - 32, 3 * GRID]])
    y = np.concatenate([np.repeat([0, 1], n_heavy), (rng.random(n_light) < 0.8).astype(int), [0, 1, 0, 1, 1]])
    e = np.concatenate([np.zeros(2 * n_heavy, int), rng.integers(18, 40, n_light) if weighted else
                        np.zeros(n_light, int), np.zeros(5, int)])
    return k, y, e


def _exact_statistics(k, y, e, queries, kernel: str) -> KernelStatistics:
    """Exact sums at the grid queries, each rounded down to a float (the reference never rounds a sum up)."""
    return exact_statistics(k, y, e, queries, grid=GRID, bins=BINS, kernel=kernel, round_down=True)


def _estimator(bound: str, kernel: str, lipschitz: float, device) -> NadarayaWatsonClassifier:
    return NadarayaWatsonClassifier(metric=None, bandwidth=1.0, lipschitz=lipschitz, bound=bound, kernel=kernel, dtype="float32",
                                    device=device, histogram_bins=BINS)


def _fit(clf, k, y, e):
    return clf.fit((k / GRID)[:, None].astype(np.float32), y, sample_weight=None if (e == 0).all() else 2.0**-e)


def _interval(clf, queries):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # UselessBoundWarning on a few queries
        return clf.predict_interval((np.asarray(queries) / GRID)[:, None].astype(np.float32))


def _assert_contains(got_lower, got_upper, clf, stats, bound: str) -> None:
    ref = clf.interval_from_statistics(stats)
    tol = CHERNOFF_TOL if bound == "chernoff" else 1e-14
    inward = max(float(np.max(got_lower - ref.lower)), float(np.max(ref.upper - got_upper)))
    assert inward <= tol, f"the device interval lies {inward:.3g} inside the exact one"
    assert np.all(ref.kappa > 0)  # a real neighbourhood everywhere: the check is not vacuous


QUERIES = [0, 16, -40, 63]
CASES = [  # (bound, kernel, weighted, lipschitz): β tiny, so distance slack cannot hide a sum's error
    ("hoeffding", "epanechnikov", True, 1e-9),
    ("hoeffding", "epanechnikov", False, 1e-9),
    ("hoeffding", "boxcar", True, 0.05),
    ("chernoff", "epanechnikov", True, 1e-9),
    ("chernoff", "epanechnikov", False, 1e-9),
    ("chernoff", "boxcar", True, 0.05),
]


@pytest.fixture(scope="module")
def big_data():
    return {w: _dataset(60_000, 64, w) for w in (True, False)}


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed (pip install torch)")
@pytest.mark.parametrize("bound,kernel,weighted,lipschitz", CASES)
def test_torch_interval_contains_the_exact_one(big_data, bound, kernel, weighted, lipschitz):
    _check_device("cpu", big_data[weighted], bound, kernel, lipschitz)


def _check_device(device: str, data, bound: str, kernel: str, lipschitz: float) -> None:
    k, y, e = data
    clf = _fit(_estimator(bound, kernel, lipschitz, device), k, y, e)
    iv = _interval(clf, QUERIES)
    _assert_contains(iv.lower, iv.upper, clf, _exact_statistics(k, y, e, QUERIES, kernel), bound)


@pytest.mark.skipif(not (HAS_TORCH and HAS_STRICT), reason="needs PyTorch and array_api_strict")
@pytest.mark.parametrize("bound,kernel,weighted,lipschitz", CASES[:2] + CASES[3:5])
def test_array_api_strict_interval_contains_the_exact_one(monkeypatch, bound, kernel, weighted, lipschitz):
    # The estimator's device path with the queries (and so the training set) in array_api_strict.
    import array_api_strict as xps

    from nwbound.engine.device import _backend, _sums

    for module in (_backend, _sums):  # the route's and the statistics pass's copy to the device
        monkeypatch.setattr(module, "_on_device", lambda a, device: xps.asarray(np.asarray(a)))
    _check_device("cpu", _dataset(20_000, 64, weighted, seed=1), bound, kernel, lipschitz)


@pytest.mark.skipif(not (HAS_TORCH and __import__("torch").cuda.is_available()), reason="no CUDA GPU visible to PyTorch")
@pytest.mark.parametrize("bound,kernel,weighted,lipschitz", CASES)
def test_cuda_interval_contains_the_exact_one(big_data, bound, kernel, weighted, lipschitz):
    # The device check (benchmarks/gpu_check.sh): the compiled Triton kernel (or cuBLAS without triton).
    _check_device("cuda", big_data[weighted], bound, kernel, lipschitz)


_INTERPRETED = r"""
import json, sys, warnings, numpy as np
from nwbound import NadarayaWatsonClassifier
data = np.load(sys.argv[1])
out = {}
for case in json.loads(sys.argv[2]):
    bound, kernel, weighted, lipschitz = case
    tag = "w" if weighted else "u"
    X, y, w = data["X" + tag], data["y" + tag], data["w" + tag]
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=1.0, lipschitz=lipschitz, bound=bound, kernel=kernel, dtype="float32",
                                   device="cpu", histogram_bins=32)
    clf.fit(X, y, sample_weight=w if weighted else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        iv = clf.predict_interval(data["Q"])
    out[json.dumps(case)] = [iv.lower.tolist(), iv.upper.tolist()]
print(json.dumps(out))
"""


@pytest.mark.skipif(not (HAS_TORCH and HAS_TRITON), reason="triton and torch are not both installed")
def test_triton_interpreter_interval_contains_the_exact_one(tmp_path):
    # device="cpu" under TRITON_INTERPRET=1 runs the fused kernel (its own process: the variable must
    # precede triton's import); a small case, tiles of 32 points whose float32 sums lose light weights.
    data, arrays = {}, {"Q": (np.asarray(QUERIES) / GRID)[:, None].astype(np.float32)}
    for weighted in (True, False):
        k, y, e = _dataset(1_500, 24, weighted, seed=3)
        data[weighted] = (k, y, e)
        tag = "w" if weighted else "u"
        arrays.update({"X" + tag: (k / GRID)[:, None].astype(np.float32), "y" + tag: y, "w" + tag: 2.0**-e})
    np.savez(tmp_path / "in.npz", **arrays)
    env = dict(os.environ, TRITON_INTERPRET="1", TRITON_DEFAULT_FP_FUSION="1")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src") + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run([sys.executable, "-c", _INTERPRETED, str(tmp_path / "in.npz"), json.dumps(CASES)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    for case in CASES:
        bound, kernel, weighted, lipschitz = case
        k, y, e = data[weighted]
        clf = _fit(_estimator(bound, kernel, lipschitz, None), k, y, e)  # the reference's bound setting
        lower, upper = (np.asarray(v) for v in got[json.dumps(list(case))])
        _assert_contains(lower, upper, clf, _exact_statistics(k, y, e, QUERIES, kernel), bound)


def test_summation_error_rule():
    # γ_k with u = 2⁻²⁴ / 2⁻⁵³, and stages composed multiplicatively, both rounded up.
    assert summation_error(128, "float32") >= 128 * 2.0**-24
    assert summation_error(10**6) >= 10**6 * 2.0**-53
    assert summation_error(2**23, "float32") == math.inf  # k·u ≥ 1/2: nothing can be said
    assert compose_errors(1e-3, 2e-3) >= 1e-3 + 2e-3 + 2e-6


def test_chernoff_binned_sum_error_contains_the_perturbed_sums():
    # Any sums within 1 ± ρ of the exact ones give, with sum_error=ρ, an interval containing the exact one.
    rng = np.random.default_rng(7)
    n, n_bins = 40, 8
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    k_hi, k_lo = 1.0 - edges[:-1], 1.0 - edges[1:]
    count = rng.integers(0, 30, (n, n_bins)).astype(float)
    mass = count * (k_lo + (k_hi - k_lo) * rng.random((n, n_bins)))
    frac = rng.random(n)
    kappa = mass.sum(axis=1)
    S = np.stack([frac * kappa, (1 - frac) * kappa], axis=1)
    dist = mass * np.sqrt(edges[1:])
    common = dict(mass_lower=k_lo, mass_upper=k_hi, band_radius=0.1 * np.sqrt(edges[1:]), beta=0.1,
                  delta_prime=0.05, sq_sum=(mass * k_hi).sum(axis=1), dist_sum=dist.sum(axis=1))
    lo, up = chernoff_interval_binned(S, count, mass, dist, **common)
    rho = 1e-3
    for sign in (-1.0, 1.0):  # the class sums and bin masses off by ±ρ, in opposite directions
        lo_r, up_r = chernoff_interval_binned(S * (1 + sign * rho * np.array([1.0, -1.0])), count,
                                              np.minimum(mass * (1 - sign * rho), count * k_hi), dist,
                                              sum_error=rho, **common)
        assert np.all(lo_r <= lo + CHERNOFF_TOL) and np.all(up_r >= up - CHERNOFF_TOL)
        assert np.all(up_r - lo_r < up - lo + 0.05)  # and only by about the perturbation
    with pytest.raises(ValueError, match="sum_error"):
        chernoff_interval_binned(S, count, mass, dist, sum_error=0.7, **common)


def test_sum_error_through_merge_and_concatenate():
    # Merging two parts within 1 ± ρ_a and 1 ± ρ_b and adding them once in float64: within
    # 1 ± (max ρ)(1 + u) + u (the CPU engine's own sums of 200 terms: γ_200); concatenating rows keeps the worst.
    from nwbound import NadarayaWatsonClassifier
    from nwbound.estimators import KernelStatistics, merge_statistics

    rng = np.random.default_rng(9)
    X, y = rng.random((200, 2)), rng.integers(0, 2, 200)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=1.0).fit(X, y)
    exact = clf.kernel_statistics(X[:5])
    assert exact.sum_error == summation_error(200)
    assert merge_statistics([exact, exact]).sum_error == compose_errors(summation_error(200), summation_error(1))
    a, b = (KernelStatistics(**{**exact.__dict__, "sum_error": r}) for r in (1e-6, 3e-6))
    merged = merge_statistics([a, b])
    assert merged.sum_error >= 3e-6 * (1 + 2.0**-53) + 2.0**-53
    assert merged.sum_error < 3.1e-6
    assert merge_statistics([exact, b]).sum_error >= 3e-6
    assert KernelStatistics.concatenate([a, b]).sum_error == 3e-6
    # The merged statistics' interval contains the exact one (the bound widened by ρ).
    widened = clf.interval_from_statistics(merged)
    plain = clf.interval_from_statistics(merge_statistics([exact, exact]))
    assert np.all(widened.lower <= plain.lower + 1e-12) and np.all(widened.upper >= plain.upper - 1e-12)
    assert np.any(widened.upper - widened.lower > plain.upper - plain.lower)
