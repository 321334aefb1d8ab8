"""``bandwidth="auto"`` ranked on the device (``nwbound.engine.device._backend``: ``device_ranking``).

PyTorch's CPU device stands in for a GPU here (CUDA too where one is visible). The chosen bandwidths
must be the NumPy path's: equal, or at a near tie, where the host's own ε (from its public
``bandwidth_ranking``) of the device's column is within rounding of the host's least. Exact ties go
to the first column, queries without mass at every bandwidth to the last, as on the host. The
intervals at the chosen bandwidths contain the host's.
"""

from __future__ import annotations

import numpy as np
import pytest

import nwbound

from nwbound import NadarayaWatsonClassifier
from nwbound.bounds import BoundSpec

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch)")
from nwbound.engine.device import _backend as _device  # noqa: E402

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(autouse=True)
def _bounds_on_cpu():
    """The estimator's device bounds (and so its device ranking) run on PyTorch's CPU device too."""
    with nwbound.config_context(device_bounds_on_cpu=True, regular_chernoff_on_device=True):
        yield


def _data(seed=0, n=800, d=3, n_queries=60):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = (X[:, 0] + 0.2 * rng.standard_normal(n) > 0.5).astype(int) + (X[:, 1] > 0.8)
    Q = np.vstack([rng.random((n_queries, d)), np.full((2, d), 9.0)])  # two queries without mass at every λ
    return X, y, Q, rng.uniform(0.3, 2.0, n)


def _host_epsilon(host, Q, spec):
    """The host's label-free ε per query and grid column, from its public ranking (an independent route)."""
    r = host.bandwidth_ranking(Q)
    choice = spec.for_choice()
    kappa, sq, dist = (np.asarray(a, dtype=np.float64) for a in (r.kappa, r.sq_sum, r.dist_sum))
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = choice.beta * dist / kappa + np.sqrt(np.log(2.0 / choice.delta_prime) * sq / 2.0) / kappa
    return np.where(kappa > 0, eps, np.inf)


def _assert_same_choice(host, dev_iv, host_iv, Q):
    grid = host.bandwidths_
    got = np.searchsorted(grid, np.asarray(dev_iv.bandwidth))
    want = np.searchsorted(grid, np.asarray(host_iv.bandwidth))
    assert np.array_equal(grid[got], np.asarray(dev_iv.bandwidth))
    differ = np.flatnonzero(got != want)
    if differ.size:  # only at a near tie of the host's own ε
        eps = _host_epsilon(host, Q, host._own_spec())
        rows = np.arange(Q.shape[0])
        np.testing.assert_allclose(eps[rows, got][differ], eps[rows, want][differ], rtol=1e-9)
    assert differ.size <= 0.02 * Q.shape[0]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("case", [
    dict(),  # the default Chernoff bound (slow on PyTorch's CPU: the other cases take Hoeffding)
    dict(kernel="quartic", weighted=True, bound="hoeffding"),
    dict(ranking_fraction=0.25, bound="hoeffding"),
    dict(bound="hoeffding", kernel="gaussian"),
    dict(n_neighbors=25),
    dict(n_neighbors=25, weighted=True, bound="hoeffding"),
])
def test_device_choices_are_the_hosts_and_intervals_contain_them(dev, case):
    case = dict(case)
    weighted = case.pop("weighted", False)
    X, y, Q, w = _data(n_queries=20 if not case else 100)
    kw = dict(metric=None, bandwidth="auto", lipschitz=0.5, **case)
    host = NadarayaWatsonClassifier(**kw).fit(X, y, sample_weight=w if weighted else None)
    on_dev = NadarayaWatsonClassifier(device=dev, **kw).fit(X, y, sample_weight=w if weighted else None)
    a, b = host.predict_interval(Q), on_dev.predict_interval(Q)
    assert isinstance(b.lower, np.ndarray)  # NumPy queries: NumPy intervals
    _assert_same_choice(host, b, a, Q)
    same = a.bandwidth == b.bandwidth
    assert np.all(b.lower[same] <= a.lower[same] + 1e-9) and np.all(b.upper[same] >= a.upper[same] - 1e-9)
    np.testing.assert_allclose(b.proba[same], a.proba[same], atol=1e-6)
    assert np.array_equal(b.vacuous, a.vacuous) and bool(b.vacuous[-2:].all())
    assert np.all(b.bandwidth[-2:] == host.bandwidths_[-1])  # no mass anywhere: the widest λ, as the host


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_exact_ties_go_to_the_first_column_and_the_grid_is_ranked_on_the_device(monkeypatch):
    # Boxcar kernel: every λ that covers the same training points gives the same κ, S2 and D, so ε
    # ties exactly; both paths take the first such column.
    X = np.array([[0.0], [0.05], [0.1], [0.9], [1.0]])
    y = np.array([0, 1, 0, 1, 1])
    Q = np.array([[0.05], [0.95], [0.5]])
    kw = dict(metric=None, bandwidth="auto", bandwidth_grid=[0.2, 0.3, 0.35, 2.0], kernel="boxcar", lipschitz=5.0)
    host = NadarayaWatsonClassifier(**kw).fit(X, y)
    on_dev = NadarayaWatsonClassifier(device="cpu", **kw).fit(X, y)
    monkeypatch.setattr(on_dev, "_ranking", lambda *a, **k: pytest.fail("host ranking"))
    calls = []
    real = _device.device_ranking
    monkeypatch.setattr(_device, "device_ranking", lambda *a, **k: calls.append(1) or real(*a, **k))
    a, b = host.predict_interval(Q), on_dev.predict_interval(Q)
    assert calls == [1]
    # Written out: the first two queries see the same points at 0.2, 0.3, 0.35 (a tie: the first);
    # the middle one nothing below λ = 2 (ε infinite there), so 2.0.
    assert a.bandwidth.tolist() == [0.2, 0.2, 2.0] and b.bandwidth.tolist() == a.bandwidth.tolist()


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("n_neighbors", [None, 20])
def test_tensor_queries_keep_tensor_results_under_dispatch(n_neighbors):
    sklearn = pytest.importorskip("sklearn")
    X, y, Q, _ = _data(1)
    kw = dict(metric=None, bandwidth="auto", lipschitz=0.5, device="cpu", n_neighbors=n_neighbors, bound="hoeffding")
    est = NadarayaWatsonClassifier(**kw).fit(X, y)
    want = est.predict_interval(Q)
    try:
        with sklearn.config_context(array_api_dispatch=True):
            got = est.predict_interval(torch.as_tensor(Q))
    except RuntimeError as exc:  # scipy's array API support is off in this process
        pytest.skip(str(exc))
    assert isinstance(got.lower, torch.Tensor)
    for name in ("proba", "lower", "upper", "bandwidth", "kappa"):
        np.testing.assert_array_equal(getattr(got, name).numpy(), getattr(want, name))


def test_choice_rule_in_the_tensors_namespace_is_numpys():
    rng = np.random.default_rng(3)
    kappa = rng.random((300, 6)) * 5
    kappa[:20] = 0.0  # no mass anywhere: the last column
    kappa[20:40, :3] = 0.0
    sq, dist = kappa * rng.random((300, 6)), kappa * rng.random((300, 6))
    dist[40:60] = dist[40:60, :1]  # equal ε in every column of these rows: the first column
    sq[40:60] = sq[40:60, :1]
    kappa[40:60] = kappa[40:60, :1]
    for form in ("hoeffding", "chernoff"):
        spec = BoundSpec(form=form, beta=0.7, delta_prime=0.02)
        want = spec.least_epsilon(*spec.parts(kappa, sq, dist, 1.0))
        got = spec.least_epsilon(*spec.parts(*(torch.as_tensor(a) for a in (kappa, sq, dist)), 1.0))
        assert isinstance(got, torch.Tensor) and np.array_equal(got.numpy(), want)
        assert np.all(want[:20] == 5) and np.all(want[40:60] == 0)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("scale", [1e-35, 1e35])
@pytest.mark.parametrize("bandwidth", [0.2, "auto"])
def test_float32_fit_in_another_feature_unit_gets_the_hosts_statistics(scale, bandwidth):
    # float32 data beyond 2^±100 are stored in a feature unit ≠ 1: the device bounds' route (raw λ and
    # distance sums) would read them in the wrong units (κ = 0 at 1e-35; at 1e35 every point inside
    # and a bias in the wrong units). Such fits take the statistics route, restated in the input's units.
    rng = np.random.default_rng(6)
    X = rng.random((400, 2)) * scale
    y = (X[:, 0] > 0.5 * scale).astype(int)
    Q = rng.random((15, 2)) * scale
    kw = dict(metric=None, lipschitz=0.5 / scale, dtype="float32", bound="hoeffding",
              bandwidth=bandwidth if bandwidth == "auto" else bandwidth * scale)
    host = NadarayaWatsonClassifier(**kw).fit(X, y)
    on_dev = NadarayaWatsonClassifier(device="cpu", **kw).fit(X, y)
    assert host._unit() != 1.0
    a, b = host.predict_interval(Q), on_dev.predict_interval(Q)
    assert np.array_equal(a.bandwidth, b.bandwidth) and not b.vacuous.any()
    np.testing.assert_allclose(b.kappa, a.kappa, rtol=1e-5)
    np.testing.assert_allclose(b.lower, a.lower, atol=1e-5)
    np.testing.assert_allclose(b.upper, a.upper, atol=1e-5)
