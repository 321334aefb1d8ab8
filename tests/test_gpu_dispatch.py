"""Estimator outputs under scikit-learn's ``array_api_dispatch``: they follow the queries' namespace.

scikit-learn refuses ``array_api_dispatch=True`` unless ``SCIPY_ARRAY_API=1`` was set before SciPy
was first imported; where this process cannot turn it on, ``test_dispatch_tests_in_a_subprocess``
runs this file again in a child process that can, so the checks run in every ``make test``.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sklearn

from nwbound import NadarayaWatsonClassifier, PredictionInterval

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_STRICT = importlib.util.find_spec("array_api_strict") is not None


def _dispatch_available() -> bool:
    try:
        with sklearn.config_context(array_api_dispatch=True):
            return True
    except (RuntimeError, ImportError):  # SciPy's array API flag unset, or array_api_compat missing
        return False


DISPATCH = _dispatch_available()
needs_dispatch = pytest.mark.skipif(not DISPATCH, reason="array_api_dispatch needs SCIPY_ARRAY_API=1 "
                                                         "(run in a subprocess by test_dispatch_tests_in_a_subprocess)")
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed (pip install torch)")
needs_cuda = pytest.mark.skipif(not (HAS_TORCH and __import__("torch").cuda.is_available()),
                                reason="no CUDA GPU visible to PyTorch")
needs_strict = pytest.mark.skipif(not HAS_STRICT, reason="array_api_strict is not installed (pip install array-api-strict)")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # UselessBoundWarning on a few queries


def _fit(device="cpu", labels=None, **params):
    rng = np.random.default_rng(3)
    X = rng.random((400, 4)).astype(np.float32)
    y = (rng.random(400) < X[:, 0]).astype(int) + (X[:, 1] > 0.6)
    if labels is not None:
        y = np.asarray(labels)[y]
    Q = rng.random((30, 4)).astype(np.float32)
    settings = dict(bandwidth=0.4, lipschitz=1.0, dtype="float32", bound="chernoff")
    settings.update(params)
    return NadarayaWatsonClassifier(device=device, **settings).fit(X, y), Q


def _numpy_of(a):
    from nwbound.gpu._array_api import to_host

    return to_host(a)


def _check_same(got, want: np.ndarray, module: str, device=None, atol: float = 0.0) -> None:
    """``got`` is ``want`` (NumPy) in the namespace ``module`` on ``device``, dtype kept."""
    assert type(got).__module__.startswith(module), type(got)
    if device is not None:
        assert got.device == device
    host = _numpy_of(got)
    assert host.dtype == want.dtype
    np.testing.assert_allclose(host, want, rtol=0.0, atol=atol)


def _interval_fields(iv: PredictionInterval) -> dict:
    return {k: v for k, v in iv.as_dict().items() if v is not None}


# ---------------------------------------------------------------------------------------------
# Dispatch off (the default): NumPy out, whatever comes in
# ---------------------------------------------------------------------------------------------
@needs_torch
def test_default_returns_numpy_for_tensor_queries():
    import torch

    clf, Q = _fit()
    want = clf.predict_proba(Q)
    got = clf.predict_proba(torch.from_numpy(Q))
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, want)
    assert isinstance(clf.predict_interval(torch.from_numpy(Q)).upper, np.ndarray)


# ---------------------------------------------------------------------------------------------
# Dispatch on: the queries' namespace and device
# ---------------------------------------------------------------------------------------------
@needs_dispatch
@needs_torch
@pytest.mark.parametrize("device", ["cpu", None])
def test_torch_queries_get_torch_results(device):
    import torch

    clf, Q = _fit(device)
    want_proba, want_iv = clf.predict_proba(Q), clf.predict_interval(Q)
    want_both = clf.predict_interval(Q, bounds=["hoeffding", "chernoff"])
    q = torch.from_numpy(Q)
    with sklearn.config_context(array_api_dispatch=True):
        proba = clf.predict_proba(q)
        iv = clf.predict_interval(q)
        both = clf.predict_interval(q, bounds=["hoeffding", "chernoff"])
        labels = clf.predict(q)
    _check_same(proba, want_proba, "torch", q.device)
    assert isinstance(iv, PredictionInterval)
    for name, want in _interval_fields(want_iv).items():
        _check_same(getattr(iv, name), want, "torch", q.device)
    assert sorted(both) == ["chernoff", "hoeffding"]
    for key in both:
        for name, want in _interval_fields(want_both[key]).items():
            _check_same(getattr(both[key], name), want, "torch")
    _check_same(labels, clf.predict(Q), "torch")  # integer classes: a tensor too
    assert isinstance(clf.predict_proba(q), np.ndarray)  # outside the context: NumPy again


@needs_dispatch
@needs_cuda
def test_cuda_queries_get_cuda_results():
    # The device check (benchmarks/gpu_check.sh): CUDA queries, statistics from the Triton kernel.
    import torch

    clf, Q = _fit("cuda")
    want = clf.predict_interval(Q)
    q = torch.from_numpy(Q).to("cuda")
    with sklearn.config_context(array_api_dispatch=True):
        iv = clf.predict_interval(q)
        proba = clf.predict_proba(q)
    for name, value in _interval_fields(want).items():  # same kernel, same order: equal to rounding
        _check_same(getattr(iv, name), value, "torch", q.device, atol=1e-9)
    _check_same(proba, clf.predict_proba(Q), "torch", q.device, atol=1e-9)


@needs_dispatch
@needs_strict
def test_array_api_strict_queries_keep_namespace_and_device():
    import array_api_strict as xps

    clf, Q = _fit("cpu")
    want = clf.predict_interval(Q)
    dev = xps.Device("device1")
    q = xps.asarray(Q, device=dev)
    with sklearn.config_context(array_api_dispatch=True):
        iv = clf.predict_interval(q)
        proba = clf.predict_proba(q)
    for name, value in _interval_fields(want).items():
        _check_same(getattr(iv, name), value, "array_api_strict", dev)
    _check_same(proba, clf.predict_proba(Q), "array_api_strict", dev)


@needs_dispatch
@needs_strict
def test_string_labels_stay_numpy_and_auto_bandwidth_follows():
    import array_api_strict as xps

    clf, Q = _fit("cpu", labels=["a", "b", "c"])
    auto, _ = _fit("cpu", bandwidth="auto", bandwidth_grid=[0.3, 0.5])
    q = xps.asarray(Q)
    with sklearn.config_context(array_api_dispatch=True):
        labels = clf.predict(q)
        proba = auto.predict_proba(q)  # λ from the bound: predict_proba goes through predict_interval
    assert isinstance(labels, np.ndarray) and labels.tolist() == clf.predict(Q).tolist()
    _check_same(proba, auto.predict_proba(Q), "array_api_strict")


@needs_dispatch
@needs_strict
@pytest.mark.filterwarnings("default::UserWarning")
def test_warnings_still_point_at_the_callers_line():
    import array_api_strict as xps

    from nwbound import UselessBoundWarning

    clf, Q = _fit("cpu", lipschitz=500.0)  # a bias term that swamps every interval
    with sklearn.config_context(array_api_dispatch=True), pytest.warns(UselessBoundWarning) as rec:
        clf.predict_interval(xps.asarray(Q))
    assert rec[0].filename == __file__


@needs_dispatch
@needs_strict
def test_device_without_float64_is_refused():
    import array_api_strict as xps

    clf, Q = _fit("cpu")
    q = xps.asarray(Q, device=xps.Device("no_float64"))
    with sklearn.config_context(array_api_dispatch=True), pytest.raises(ValueError, match="has no float64"):
        clf.predict_proba(q)


@pytest.mark.skipif(DISPATCH, reason="array_api_dispatch works in this process: the tests above ran here")
@pytest.mark.skipif(not (HAS_TORCH and HAS_STRICT), reason="needs torch and array_api_strict")
def test_dispatch_tests_in_a_subprocess():
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", __file__],
                         env=env, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    # Every dispatch test ran in the child (skipped there: this one, and the CUDA one without a GPU).
    assert "7 passed" in run.stdout and "needs SCIPY_ARRAY_API" not in run.stdout, run.stdout[-2000:]
