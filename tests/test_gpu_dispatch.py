"""Estimator outputs under scikit-learn's ``array_api_dispatch``: they follow the queries' namespace.

scikit-learn refuses ``array_api_dispatch=True`` unless ``SCIPY_ARRAY_API=1`` was set before SciPy
was first imported; where this process cannot turn it on, ``test_dispatch_tests_in_a_subprocess``
runs this file again in a child process that can, so the checks run in every ``make test``.
"""

from __future__ import annotations

import importlib.util
import os
import re
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
    return NadarayaWatsonClassifier(metric=None, device=device, **settings).fit(X, y), Q


def _numpy_of(a):
    from nwbound.engine.device._array_api import to_host

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
@pytest.mark.parametrize("n_neighbors", [None, 20])
def test_interval_properties_follow_array_api_strict(n_neighbors):
    """certified, error_upper, trivial and predicted_index work in the queries' namespace (issue 22 item 2)."""
    import array_api_strict as xps

    clf, Q = _fit(None, n_neighbors=n_neighbors)  # host engine: runs without PyTorch
    Q[:3] += 5.0  # far queries: vacuous and trivial rows too
    want = clf.predict_interval(Q)
    dev = xps.Device("device1")
    with sklearn.config_context(array_api_dispatch=True):
        iv = clf.predict_interval(xps.asarray(Q, device=dev))
        got = {name: getattr(iv, name) for name in ("certified", "error_upper", "trivial", "predicted_index")}
    assert want.trivial[:3].all() and want.vacuous[:3].all() and not want.trivial.all()
    # the NumPy values, from the definitions (independent of the properties' code)
    top = want.proba.argmax(axis=1)
    rows = np.arange(len(want))
    others = np.where(np.arange(want.proba.shape[1])[None, :] == top[:, None], -np.inf, want.upper).max(axis=1)
    expected = {
        "certified": (want.lower[rows, top] > others) & ~want.vacuous,
        "error_upper": 1.0 - want.lower[rows, top],
        "trivial": ((want.lower <= 0) & (want.upper >= 1)).all(axis=1),
        "predicted_index": top,
    }
    for name, value in expected.items():
        np.testing.assert_array_equal(getattr(want, name), value)
        assert type(got[name]).__module__.startswith("array_api_strict") and got[name].device == dev, name
        np.testing.assert_array_equal(_numpy_of(got[name]), value)


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


# ---------------------------------------------------------------------------------------------
# device= under dispatch: the queries are checked and used where they live (no host round trip)
# ---------------------------------------------------------------------------------------------
def _queries_in(namespace: str, Q: np.ndarray):
    if namespace == "torch":
        import torch

        return torch.from_numpy(Q)
    import array_api_strict as xps

    # "device1" is array_api_strict's non-CPU device: NumPy refuses to convert its arrays, so any
    # implicit host copy of the queries would raise, on top of the spy below.
    return xps.asarray(Q, device=xps.Device("device1"))


class _HostSpy:
    """Records every host copy: nwbound's ``to_host`` (wherever it was imported) and ``Tensor.numpy``."""

    def __init__(self, monkeypatch):
        import torch

        from nwbound.engine.device import _array_api

        self.shapes: list[tuple[int, ...]] = []
        self._inside = False
        original = _array_api.to_host

        def to_host(a):
            self.shapes.append(tuple(int(v) for v in getattr(a, "shape", ())))
            self._inside = True  # its own Tensor.numpy call is the same copy
            try:
                return original(a)
            finally:
                self._inside = False

        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("nwbound") and getattr(module, "to_host", None) is original:
                monkeypatch.setattr(module, "to_host", to_host)
        numpy_of = torch.Tensor.numpy

        def tensor_numpy(t, *args, **kwargs):
            if not self._inside:
                self.shapes.append(tuple(t.shape))
            return numpy_of(t, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, "numpy", tensor_numpy)

    def rows_of_width(self, m: int) -> int:
        """Rows of (·, m) arrays copied to the host: queries have m features, no result has m columns."""
        return sum(s[0] for s in self.shapes if len(s) == 2 and s[1] == m)


@needs_dispatch
@needs_torch
@needs_strict
@pytest.mark.parametrize("namespace", ["torch", "array_api_strict"])
@pytest.mark.parametrize("localized", [False, True], ids=["regular", "localized"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_device_queries_stay_where_they_live(monkeypatch, namespace, localized, dtype):
    # 4 features, 3 classes, 15 neighbours, 32 bins: no result or statistic has 4 columns.
    extra = dict(n_neighbors=15) if localized else {}
    clf, Q = _fit("cpu", dtype=dtype, **extra)
    Q = Q.astype(dtype)
    want_iv, want_both = clf.predict_interval(Q), clf.predict_interval(Q, bounds=["hoeffding", "chernoff"])
    want_proba, want_labels = clf.predict_proba(Q), clf.predict(Q)
    q = _queries_in(namespace, Q)
    spy = _HostSpy(monkeypatch)
    with sklearn.config_context(array_api_dispatch=True):
        iv = clf.predict_interval(q)
        both = clf.predict_interval(q, bounds=["hoeffding", "chernoff"])
        proba, labels = clf.predict_proba(q), clf.predict(q)
    # Neither classifier copies the queries: the localized one's exact search runs on the device.
    assert spy.rows_of_width(4) == 0, spy.shapes
    for name, want in _interval_fields(want_iv).items():  # the same numbers as NumPy queries
        _check_same(getattr(iv, name), want, namespace, q.device)
    for key in both:
        for name, want in _interval_fields(want_both[key]).items():
            _check_same(getattr(both[key], name), want, namespace, q.device)
    _check_same(proba, want_proba, namespace, q.device)
    _check_same(labels, want_labels, namespace, q.device)


@needs_dispatch
@needs_torch
@needs_strict
@pytest.mark.parametrize("namespace", ["torch", "array_api_strict"])
def test_device_queries_cast_in_their_namespace(monkeypatch, namespace):
    # float64 queries on a float32 fit (and float32 queries on a float64 fit): cast where they live,
    # to the same values as the NumPy route's cast.
    for fit_dtype, q_dtype in (("float32", np.float64), ("float64", np.float32)):
        clf, Q = _fit("cpu", dtype=fit_dtype)
        Q = Q.astype(q_dtype) / 3.0
        want = clf.predict_interval(Q)
        spy = _HostSpy(monkeypatch)
        with sklearn.config_context(array_api_dispatch=True):
            iv = clf.predict_interval(_queries_in(namespace, Q))
        assert spy.rows_of_width(4) == 0, spy.shapes
        for name, value in _interval_fields(want).items():
            _check_same(getattr(iv, name), value, namespace)


@needs_dispatch
@needs_torch
@needs_strict
@pytest.mark.parametrize("namespace", ["torch", "array_api_strict"])
@pytest.mark.parametrize("localized", [False, True], ids=["regular", "localized"])
def test_device_queries_bad_input_is_named(monkeypatch, namespace, localized):
    extra = dict(n_neighbors=15) if localized else {}
    clf, Q = _fit("cpu", **extra)
    bad_nan, bad_inf = Q.copy(), Q.copy()
    bad_nan[3, 1], bad_inf[0, 0] = np.nan, np.inf
    spy = _HostSpy(monkeypatch)
    cases = [(Q[:, :3], "X has 3 features, but NadarayaWatsonClassifier is expecting 4"),
             (bad_nan, "Input X contains NaN"), (bad_inf, "Input X contains infinity"),
             (Q[:, 0], "Expected 2D array")]
    with sklearn.config_context(array_api_dispatch=True):
        for bad, message in cases:
            q = _queries_in(namespace, np.ascontiguousarray(bad))
            for method in (clf.predict_interval, clf.predict_proba, clf.predict):
                with pytest.raises(ValueError, match=message):
                    method(q)
    assert spy.rows_of_width(4) == 0, spy.shapes  # refused where they live, before any search


class _ReadSpy:
    """Counts the device-to-host reads of PyTorch tensors (a synchronisation each on a GPU): scalar
    conversions, copies to NumPy or lists, ``.cpu()`` and ops whose output shape depends on values
    (``nonzero``, boolean-mask indexing). A ``TorchFunctionMode``, so reads inside scikit-learn and
    array_api_compat count too; also every ``matmul`` (the statistics pass's query blocks) and every
    tensor made from host data (``uploads``: on a GPU a copy from pageable memory waits for its queue)."""

    READS = {"__bool__", "item", "__float__", "__int__", "__index__", "tolist", "numpy", "__array__", "cpu",
             "nonzero", "masked_select", "unique", "argwhere"}

    def __init__(self):
        import torch
        from torch.overrides import TorchFunctionMode

        spy = self
        self.reads: list[str] = []
        self.uploads: list[str] = []
        self.matmuls = 0

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                name = getattr(func, "__name__", "")
                index = args[1] if name == "__getitem__" and len(args) > 1 else ()
                # A boolean mask (nonzero), or a 0-d integer tensor (ATen selects with its item).
                masks = [a for a in (index if isinstance(index, tuple) else (index,))
                         if isinstance(a, torch.Tensor) and (a.dtype == torch.bool or a.ndim == 0)]
                if name in spy.READS or masks:
                    spy.reads.append(name)
                if name in ("as_tensor", "tensor", "asarray", "from_numpy") and args and \
                        isinstance(args[0], (np.ndarray, list, tuple)):
                    spy.uploads.append(name)
                spy.matmuls += name == "matmul"
                return func(*args, **(kwargs or {}))

        self.mode = Mode()


@needs_dispatch
@needs_torch
def test_hoeffding_on_the_device_reads_twice_whatever_the_blocks():
    """One predict_interval (bound="hoeffding", torch queries, the device route as on a GPU): the
    queries' check, then one packed read (vacuous count and the usefulness report's numbers), however
    many query blocks the statistics pass takes; same intervals and same warning as the host."""
    import torch

    from nwbound import UselessBoundWarning
    from nwbound.diagnostics import AdviceContext, bound_usefulness
    from nwbound import config_context

    with config_context(device_bounds_on_cpu=True):  # PyTorch's CPU device stands in for a GPU
        clf, Q = _fit("cpu", bound="hoeffding", lipschitz=3.0, empty_neighborhood="prior")
        Q = np.vstack([Q, np.full((2, 4), 9.0, np.float32)])  # two queries without mass: the fallback rows
        q = torch.from_numpy(Q)
        with sklearn.config_context(array_api_dispatch=True), pytest.warns(UselessBoundWarning):
            clf.predict_interval(q)  # the first call copies the training set to the device (its checks read)
        counts = {}
        for memory in (None, 1e-3):  # one block; a few queries per block
            clf.set_params(working_memory=memory)
            spy = _ReadSpy()
            with sklearn.config_context(array_api_dispatch=True), pytest.warns(UselessBoundWarning) as rec, spy.mode:
                iv = clf.predict_interval(q)
            counts[memory] = (len(spy.reads), spy.matmuls)
            assert len(spy.reads) <= 2 and not spy.uploads, (spy.reads, spy.uploads)
            # The same warning (every number of its message) as the report built on the host from the intervals.
            host = PredictionInterval(**{k: _numpy_of(v) for k, v in _interval_fields(iv).items()})
            want = bound_usefulness(host, beta=clf.bound_spec_.beta, context=AdviceContext.from_estimator(clf))
            assert want.useless and str(rec[0].message) == f"The bounds cannot guide decisions here: {want}"
        assert counts[1e-3][1] > counts[None][1] + 2 and counts[1e-3][0] == counts[None][0], counts
        with sklearn.config_context(array_api_dispatch=False):
            ref = clf.predict_interval(Q)  # NumPy queries: the device route, one packed copy back
        for name, want in _interval_fields(ref).items():  # bit for bit
            _check_same(getattr(iv, name), want, "torch")
        np.testing.assert_array_equal(_numpy_of(iv.proba)[-2:], np.tile(clf.class_prior_, (2, 1)))


@needs_dispatch
@needs_torch
def test_plain_tensor_queries_skip_no_check():
    """Plain PyTorch matrices skip scikit-learn's structural checks on the device route (they would pass):
    every value check still answers with its message, on float32 and float64 fits, and a fit with feature
    names still gets scikit-learn's warning for queries without them."""
    import warnings

    import torch

    pd = pytest.importorskip("pandas")
    for dtype in ("float32", "float64"):
        clf, Q = _fit("cpu", dtype=dtype, bound="hoeffding")
        for value, message in ((np.nan, "Input X contains NaN"), (np.inf, "Input X contains infinity")):
            bad = Q.astype(dtype)
            bad[2, 1] = value
            with sklearn.config_context(array_api_dispatch=True), pytest.raises(ValueError, match=message):
                clf.predict_interval(torch.from_numpy(bad))
        if dtype == "float32":  # a float64 value beyond float32: the fit dtype's explanation
            big = Q.astype(np.float64)
            big[0, 0] = 1e300
            with sklearn.config_context(array_api_dispatch=True), pytest.raises(ValueError, match="float32"):
                clf.predict_interval(torch.from_numpy(big))
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.random((50, 4)), columns=list("abcd"))
    named = NadarayaWatsonClassifier(metric=None, bandwidth=0.5, lipschitz=1.0, bound="hoeffding", device="cpu").fit(
        frame, (frame["a"] > 0.5).astype(int))
    with sklearn.config_context(array_api_dispatch=True), warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        named.predict_interval(torch.from_numpy(rng.random((3, 4))))
    assert any("feature names" in str(w.message) for w in rec), [str(w.message) for w in rec]


@pytest.mark.parametrize("device", [None, "cpu"])
def test_parameters_are_validated_once_per_predict_interval(monkeypatch, device):
    """scikit-learn's parameter validation (about 0.3 ms of host time before the first kernel) runs once per
    ``predict_interval``, and a bad predict-time parameter set after fit is still refused by name."""
    if device is not None and not HAS_TORCH:
        pytest.skip("PyTorch is not installed")
    clf, Q = _fit(device, bound="hoeffding")
    calls = []
    validate = NadarayaWatsonClassifier._validate_params
    monkeypatch.setattr(NadarayaWatsonClassifier, "_validate_params", lambda self: calls.append(1) or validate(self))
    for bounds in (None, ["hoeffding", "chernoff"]):
        calls.clear()
        clf.predict_interval(Q, bounds=bounds)
        assert len(calls) == 1, bounds
    clf.set_params(delta=2.0)
    with pytest.raises(ValueError, match="delta"):
        clf.predict_interval(Q)
    clf.set_params(delta=0.05, working_memory=-1)
    with pytest.raises(ValueError, match="working_memory"):
        clf.predict_interval(Q)


@needs_dispatch
@needs_torch
def test_host_methods_take_dispatched_queries():
    # kernel_statistics, kneighbors and bandwidth_ranking return NumPy: they copy the queries once.
    import torch

    clf, Q = _fit("cpu")
    local, _ = _fit(None, n_neighbors=15)
    q = torch.from_numpy(Q)
    with sklearn.config_context(array_api_dispatch=True):
        stats = clf.kernel_statistics(q)
        dist, idx = local.kneighbors(q)
    np.testing.assert_array_equal(stats.class_sums, clf.kernel_statistics(Q).class_sums)
    np.testing.assert_array_equal(idx, local.kneighbors(Q)[1])
    assert isinstance(dist, np.ndarray)


# ---------------------------------------------------------------------------------------------
# The dyadic classifier follows dispatch too (its cell lookup runs on the host)
# ---------------------------------------------------------------------------------------------
def _dyadic(labels=None):
    from nwbound import DyadicClassifier

    rng = np.random.default_rng(5)
    X = rng.random((400, 3))
    y = (rng.random(400) < X[:, 0]).astype(int) + (X[:, 1] > 0.6)
    if labels is not None:
        y = np.asarray(labels)[y]
    Q = rng.uniform(-0.1, 1.1, (25, 3))  # a few outside the box: flagged, bias grows
    return DyadicClassifier(metric=None, resolution=2, lipschitz=0.5).fit(X, y), Q


@needs_dispatch
@needs_torch
@needs_strict
@pytest.mark.parametrize("namespace", ["torch", "array_api_strict"])
def test_dyadic_follows_dispatch(namespace):
    clf, Q = _dyadic()
    want_iv, want_both = clf.predict_interval(Q), clf.predict_interval(Q, bounds=["hoeffding", "chernoff"])
    q = _queries_in(namespace, Q)
    with sklearn.config_context(array_api_dispatch=True):
        iv, both = clf.predict_interval(q), clf.predict_interval(q, bounds=["hoeffding", "chernoff"])
        proba, labels = clf.predict_proba(q), clf.predict(q)
        stats = clf.kernel_statistics(q)  # statistics stay NumPy (as the regular classifier's)
    for name, want in _interval_fields(want_iv).items():
        _check_same(getattr(iv, name), want, namespace, q.device)
    assert sorted(both) == ["chernoff", "hoeffding"]
    for key in both:
        for name, want in _interval_fields(want_both[key]).items():
            _check_same(getattr(both[key], name), want, namespace, q.device)
    _check_same(proba, clf.predict_proba(Q), namespace, q.device)
    _check_same(labels, clf.predict(Q), namespace, q.device)
    assert isinstance(stats.class_sums, np.ndarray)
    np.testing.assert_array_equal(stats.class_sums, clf.kernel_statistics(Q).class_sums)


@needs_dispatch
@needs_strict
def test_dyadic_string_labels_stay_numpy_and_bad_input_is_named():
    import array_api_strict as xps

    clf, Q = _dyadic(labels=["a", "b", "c"])
    with sklearn.config_context(array_api_dispatch=True):
        labels = clf.predict(xps.asarray(Q))
        with pytest.raises(ValueError, match="X has 2 features, but DyadicClassifier is expecting 3"):
            clf.predict_proba(xps.asarray(Q[:, :2]))
        with pytest.raises(ValueError, match="has no float64"):
            clf.predict_interval(xps.asarray(Q.astype(np.float32), device=xps.Device("no_float64")))
    assert isinstance(labels, np.ndarray) and labels.tolist() == clf.predict(Q).tolist()


@needs_dispatch
@needs_torch
@needs_strict
@pytest.mark.parametrize("namespace", ["torch", "array_api_strict"])
@pytest.mark.parametrize("kind", ["regular", "localized", "dyadic"])
def test_fit_takes_dispatched_training_data(namespace, kind):
    from nwbound import DyadicClassifier

    rng = np.random.default_rng(8)
    X, w = rng.random((300, 3)), rng.uniform(0.5, 2.0, 300)
    y = (rng.random(300) < X[:, 0]).astype(np.int64)
    Q = rng.random((20, 3))

    def make():
        if kind == "dyadic":
            return DyadicClassifier(metric=None, resolution=2, lipschitz=0.5)
        return NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=1.0, n_neighbors=15 if kind == "localized" else None)

    want = make().fit(X, y, sample_weight=w).predict_interval(Q)
    with sklearn.config_context(array_api_dispatch=True):
        # One host copy of the training set (it lives on the host); the results follow the queries.
        clf = make().fit(*(_queries_in(namespace, a) for a in (X, y, w)))
        got = clf.predict_interval(_queries_in(namespace, Q))
    np.testing.assert_array_equal(clf.classes_, [0, 1])
    for name, value in _interval_fields(want).items():
        _check_same(getattr(got, name), value, namespace)


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
    summary = re.search(r"(\d+) passed(?:, (\d+) skipped)? in", run.stdout)
    assert summary and int(summary.group(2) or 0) <= 2 and "needs SCIPY_ARRAY_API" not in run.stdout, \
        run.stdout[-2000:]
