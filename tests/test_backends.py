"""The backend seam (:class:`nwbound.engine.Backend`, ``nwbound.engine.host._backend``): the estimator
picks its backend once, at fit, keeps it across predictions, re-picks it only where its rule says
(``set_params(device=...)``, an old pickle), and a backend added to ``BACKENDS`` serves the whole
route (statistics, ranking, intervals) with the same intervals."""

from __future__ import annotations

import ast
import dataclasses
import pickle
from pathlib import Path

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier
from nwbound.engine import Backend, _registry, select_backend
from nwbound.engine.device._backend import DeviceBackend
from nwbound.engine.host._backend import HostBackend


def _data(seed=0, n=300):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 2))
    y = (X[:, 0] + 0.2 * rng.standard_normal(n) > 0.5).astype(int)
    return X, y, rng.random((40, 2))


def _same(a, b):
    for f in dataclasses.fields(a):
        u, v = getattr(a, f.name), getattr(b, f.name)
        assert (u is None) == (v is None), f.name
        if u is not None:
            assert np.array_equal(u, v), f.name


@pytest.mark.parametrize("kw", [dict(bandwidth="auto"), dict(bandwidth=0.3, n_neighbors=15), dict(bandwidth="scale")])
def test_picked_once_at_fit_and_kept(kw):
    X, y, Q = _data()
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=1.0, **kw).fit(X, y)
    backend = clf.backend_
    assert isinstance(backend, HostBackend) and isinstance(backend, Backend) and not backend.keeps_queries
    clf.predict_interval(Q)
    clf.predict_proba(Q)
    assert clf.backend_ is backend  # not re-picked per call
    clone = pickle.loads(pickle.dumps(clf))
    assert isinstance(clone.backend_, HostBackend) and clone.backend_.serves(clone)
    _same(clone.predict_interval(Q), clf.predict_interval(Q))


def test_re_picked_where_device_changes_or_a_pickle_lacks_it():
    X, y, Q = _data()
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=1.0, bandwidth=0.3).fit(X, y)
    want = clf.predict_interval(Q)
    clf.set_params(device="cpu")  # a predict-time parameter: the device backend from now on
    assert isinstance(clf._engine(), DeviceBackend) and clf.backend_.keeps_queries
    assert isinstance(clf.backend_, Backend)
    clf.set_params(device=None)
    assert isinstance(clf._engine(), HostBackend)
    del clf.backend_  # a model pickled before the attribute existed
    _same(clf.predict_interval(Q), want)
    assert isinstance(clf.backend_, HostBackend)


def test_select_backend_takes_the_first_usable(monkeypatch):
    X, y, _ = _data()
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=1.0, bandwidth=0.3, device="cpu").fit(X, y)
    assert isinstance(select_backend(clf), DeviceBackend)
    monkeypatch.setattr(_registry, "BACKENDS", (HostBackend,))
    assert isinstance(select_backend(clf), HostBackend)


@pytest.mark.parametrize("kw", [dict(bandwidth="auto"), dict(bandwidth="auto", n_neighbors=15),
                                dict(bandwidth="auto", kernel="tricube", ranking_fraction=0.5)])
def test_a_new_backend_serves_the_whole_route(monkeypatch, kw):
    """A backend is one class and one entry in BACKENDS: here a host backend that counts its calls."""
    calls = []

    class Counting(HostBackend):
        @classmethod
        def is_usable_for(cls, estimator):
            return True

        def serves(self, estimator):
            return self._est is estimator

        def statistics(self, X, bandwidths, **kw):
            calls.append("statistics")
            return super().statistics(X, bandwidths, **kw)

        def ranking(self, X, fraction, row_offset=0):
            calls.append("ranking")
            return super().ranking(X, fraction, row_offset)

    X, y, Q = _data(1)
    want = NadarayaWatsonClassifier(metric=None, lipschitz=1.0, **kw).fit(X, y).predict_interval(Q)
    monkeypatch.setattr(_registry, "BACKENDS", (Counting, HostBackend))
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=1.0, **kw).fit(X, y)
    assert type(clf.backend_) is Counting
    _same(clf.predict_interval(Q), want)
    assert "statistics" in calls and ("ranking" in calls) == clf.ranks_first()


@pytest.mark.parametrize("kw", [dict(bandwidth="auto"), dict(bandwidth=0.3), dict(bandwidth="auto", n_neighbors=15)])
def test_predict_interval_asks_the_backend_once_for_the_batch(monkeypatch, kw):
    """One call of ``backend_.intervals(X, specs, certified_only)`` per ``predict_interval``, whatever
    the grid's groups: the backend's route (the device's ranking, choice, statistics and bounds, or
    the host's route on its statistics) runs inside it."""
    X, y, Q = _data(2)
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=1.0, **kw).fit(X, y)
    want = clf.predict_interval(Q, bounds=["hoeffding", "chernoff"])
    calls = []
    real = clf.backend_.intervals

    def counted(X_, specs, certified_only=frozenset()):
        calls.append((X_.shape[0], sorted(specs)))
        return real(X_, specs, certified_only)

    monkeypatch.setattr(clf.backend_, "intervals", counted)
    got = clf.predict_interval(Q, bounds=["hoeffding", "chernoff"])
    assert calls == [(Q.shape[0], ["chernoff", "hoeffding"])]
    for name in want:
        _same(got[name], want[name])


@pytest.mark.parametrize("device", [None, "cpu"])
@pytest.mark.parametrize("kw", [dict(bandwidth="auto"), dict(bandwidth="auto", kernel="quartic", ranking_fraction=0.5),
                                dict(bandwidth=0.3, n_neighbors=15)])
def test_the_backend_answers_the_whole_route(device, kw):
    """``backend_.intervals`` never hands the route back (None) to the estimator: the host backend's
    answer, and the device backend's where its own bounds decline (NumPy queries on the CPU), is the
    host's route on the backend's statistics, the intervals ``predict_interval`` returns."""
    if device is not None:
        pytest.importorskip("torch", reason="device= needs PyTorch")
    X, y, Q = _data(3)
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=1.0, device=device, **kw).fit(X, y)
    bounds = ["hoeffding", "chernoff"]
    got = clf.backend_.intervals(Q, clf._resolve_bounds(bounds))
    assert got is not None and sorted(got) == sorted(bounds)
    want = clf.predict_interval(Q, bounds=bounds)
    for name in bounds:
        _same(got[name], want[name])


def test_only_a_backends_module_and_the_registry_name_it():
    """A new backend touches two files: its module and the BACKENDS entry of ``nwbound.engine._registry``.
    So no other module names a backend class in its code (the route asks ``backend_``, never its type)."""
    src = Path(__file__).resolve().parents[1] / "src" / "nwbound"
    homes = {"HostBackend": "engine/host/_backend.py", "DeviceBackend": "engine/device/_backend.py"}
    found = set()
    for path in src.rglob("*.py"):
        rel = path.relative_to(src).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute)
                    else node.name if isinstance(node, ast.alias) else None)
            if name in homes and rel not in (homes[name], "engine/_registry.py"):
                found.add(f"{rel}: {name}")
    assert not found, sorted(found)
    assert {b.__name__ for b in _registry.BACKENDS} == set(homes)


def test_settings_that_choose_apart_share_one_pass_per_query(monkeypatch):
    """The host's route where two settings choose different bandwidths (the held-out check's test and
    model settings: two levels δ): each query gets one pass at the bandwidths its settings chose, and
    each setting the intervals it gets alone (bandwidths and certified rows the same, ends within the
    Chernoff search's precision, 1e-7; the sums of a column within rounding of a pass at it alone)."""
    from nwbound.engine.host import _backend as host

    rng = np.random.default_rng(4)
    X = rng.normal(size=(3000, 3))
    y = (rng.random(3000) < 1.0 / (1.0 + np.exp(-3.0 * X[:, 0]))).astype(int)
    Q = rng.normal(size=(400, 3))
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=1.0).fit(X, y)
    bounds = {"model": {}, "test": {"delta": 1e-4, "coverage": "simultaneous"}}
    specs = clf._resolve_bounds(bounds)
    choices = clf.choose_bandwidths(clf.bandwidth_ranking(Q), bounds=bounds)
    apart = choices["model"] != choices["test"]
    assert 0 < apart.sum() < Q.shape[0]  # rows of both kinds
    passes = []
    real = host.query_statistics

    def counted(backend, estimator, X_, specs_, **kw):
        passes.append((X_.shape[0], kw["bandwidths"].shape[0]))
        return real(backend, estimator, X_, specs_, **kw)

    monkeypatch.setattr(host, "query_statistics", counted)
    got = clf.backend_.intervals(Q, specs, frozenset({"model"}))
    assert sum(n for n, _ in passes) == Q.shape[0]  # was one pass per setting: 2 × 400 rows
    assert sum(n for n, g in passes if g == 2) == apart.sum()
    monkeypatch.undo()
    for name in bounds:
        alone = clf.backend_.intervals(Q, {name: specs[name]}, frozenset({"model"}))[name]
        np.testing.assert_array_equal(got[name].certified, alone.certified)
        np.testing.assert_allclose(got[name].proba, alone.proba, rtol=0, atol=1e-12)
        if name == "test":
            np.testing.assert_array_equal(got[name].bandwidth, alone.bandwidth)
            np.testing.assert_allclose(got[name].lower, alone.lower, rtol=0, atol=1e-7)
            np.testing.assert_allclose(got[name].upper, alone.upper, rtol=0, atol=1e-7)


@pytest.mark.parametrize("pilot", [256, 2])
def test_the_bounded_ranking_chooses_as_the_full_one(monkeypatch, pilot):
    """The host's route ranks many queries from the pairs within the reach of the bandwidths a pilot
    chose (:func:`~nwbound.engine.host._sums.bounded_moment_sums`), the rest in full where its
    bounds do not settle the choice: every setting chooses as from the full ranking, so the
    intervals are those of the full ranking, bit for bit. The reach is the widest bandwidth the pilot
    chose where its bounds settle most of the pilot (fewer pairs read than at the next wider one, a
    few more queries ranked in full). A pilot of 2 queries sets a reach too short for many: they
    fall back to the full ranking."""
    from nwbound.engine.host import _backend as host

    rng = np.random.default_rng(6)
    X = rng.normal(size=(3000, 3))
    y = (rng.random(3000) < 1.0 / (1.0 + np.exp(-3.0 * X[:, 0]))).astype(int)
    Q = rng.normal(size=(2500, 3))
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=1.0).fit(X, y)
    bounds = {"model": {}, "test": {"delta": 1e-4, "coverage": "simultaneous"}}
    specs = clf._resolve_bounds(bounds)
    monkeypatch.setattr(host, "BOUNDED_PILOT_QUERIES", pilot)
    bounded, full, reach = [], [], []
    real_bounded, real_full = HostBackend.bounded_ranking, host.bandwidth_ranking
    monkeypatch.setattr(HostBackend, "bounded_ranking",
                        lambda self, X_, f, r: bounded.append(X_.shape[0]) or reach.append(r) or real_bounded(self, X_, f, r))
    monkeypatch.setattr(host, "bandwidth_ranking", lambda b, e, X_, *a: full.append(X_.shape[0]) or real_full(b, e, X_, *a))
    got = clf.backend_.intervals(Q, specs)
    assert bounded == [pilot, Q.shape[0] - pilot] and full[0] == pilot  # the pilot's bounds weigh the reach
    if pilot == 256:
        pilot_rows = np.linspace(0, Q.shape[0] - 1, pilot).astype(np.intp)
        widest = max(float(got[name].bandwidth.ravel()[pilot_rows].max()) for name in bounds)
        assert reach == [widest, widest]
    fallback = sum(full[1:])  # the queries the bounds did not settle, ranked in full
    assert fallback < 0.08 * Q.shape[0] if pilot == 256 else fallback > 0.2 * Q.shape[0]
    monkeypatch.setattr(host, "BOUNDED_MIN_QUERIES", 10**9)
    want = clf.backend_.intervals(Q, specs)
    for name in bounds:
        for field in ("bandwidth", "lower", "upper", "proba"):
            np.testing.assert_array_equal(getattr(got[name], field), getattr(want[name], field), err_msg=field)


def test_the_bounded_ranking_reaches_one_bandwidth_further_where_its_bounds_settle_few(monkeypatch):
    """On uniform inputs with a constant p the ε of neighbouring bandwidths differ little, and the
    bounds at the widest bandwidth the pilot chose settle few of its queries: the reach is then the
    next wider bandwidth, which settles most (a query not settled is ranked in full, at a few times
    the cost). The choices are the full ranking's either way."""
    from nwbound.engine.host import _backend as host

    rng = np.random.default_rng(1)
    X, Q = rng.random((6000, 5)), rng.random((2500, 5))
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=0.1).fit(X, (rng.random(6000) < 0.5).astype(int))
    specs = clf._resolve_bounds(None)
    reach, full = [], []
    real_bounded, real_full = HostBackend.bounded_ranking, host.bandwidth_ranking
    monkeypatch.setattr(HostBackend, "bounded_ranking",
                        lambda self, X_, f, r: reach.append((X_.shape[0], r)) or real_bounded(self, X_, f, r))
    monkeypatch.setattr(host, "bandwidth_ranking", lambda b, e, X_, *a: full.append(X_.shape[0]) or real_full(b, e, X_, *a))
    got = clf.backend_.intervals(Q, specs)[None]
    pilot_rows = np.linspace(0, Q.shape[0] - 1, host.BOUNDED_PILOT_QUERIES).astype(np.intp)
    widest = float(got.bandwidth.ravel()[pilot_rows].max())
    grid = clf.bandwidths_
    assert reach == [(host.BOUNDED_PILOT_QUERIES, widest),
                     (Q.shape[0] - host.BOUNDED_PILOT_QUERIES, float(grid[grid > widest].min()))]
    assert sum(full[1:]) < 0.2 * Q.shape[0]
    monkeypatch.setattr(host, "BOUNDED_MIN_QUERIES", 10**9)
    want = clf.backend_.intervals(Q, specs)[None]
    for field in ("bandwidth", "lower", "upper", "proba"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
