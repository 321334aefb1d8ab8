"""The held-out check's cheap route: the model's own setting gives only ``proba`` and ``certified``
(``_interval_settings``, ``BoundSpec.certified``), with the same results as the full intervals."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification

import nwbound.bounds._chernoff_binned as binned
import nwbound.lipschitz_check._run as run
from nwbound import DyadicClassifier, NadarayaWatsonClassifier
from nwbound.assumptions import select_lipschitz
from nwbound.datasets import make_lipschitz_logistic, make_margin_clusters


def _per_setting_intervals(model, X, bounds, bandwidth_at, mapped=None):
    """The check's intervals as they were computed before the cheap route: full intervals of every
    setting from ``predict_interval`` (the rows' coordinates in the space, ``mapped``, unused)."""
    return model.predict_interval(X, bounds=bounds)


def _logistic(seed=0, n=1500):
    data = make_lipschitz_logistic(n, lipschitz=0.5, n_features=1, scale="box", random_state=seed)
    cut = 2 * n // 3
    return data.X[:cut], data.y[:cut], data.X[cut:], data.y[cut:], data.lipschitz


def _configurations():
    """(name, fitted model, held-out X, y, grid): the default model (one model, as each cross-fit
    fold fits it, and cross-fitted), metric=None regular and localized, dyadic, three classes, margin.

    The default models report the kernel estimate (``point_estimate="nw"``): the check groups rows
    by it (it runs inside ``fit``, before any point model), and the full route here reads ``proba``."""
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X, y = make_classification(1500, n_features=6, n_informative=4, n_classes=2, random_state=0)
        one = NadarayaWatsonClassifier(cross_fit=False, random_state=0, point_estimate="nw").fit(X[:1000], y[:1000])
        out.append(("default, one model", one, X[1000:], y[1000:], [one.lipschitz_ * 2.0**k for k in (-1, 0, 1, 2)]))
        X3, y3 = make_classification(1500, n_features=6, n_informative=4, n_classes=3, random_state=1)
        three = NadarayaWatsonClassifier(cross_fit=False, random_state=0, point_estimate="nw").fit(X3[:1000], y3[:1000])
        out.append(("default, three classes", three, X3[1000:], y3[1000:], [three.lipschitz_ * 2.0**k for k in (0, 1)]))
        cross = NadarayaWatsonClassifier(cross_fit=True, random_state=0, point_estimate="nw").fit(X[:600], y[:600])
        out.append(("default, cross-fitted", cross, X[600:900], y[600:900], [cross.lipschitz_, 2 * cross.lipschitz_]))
        Xf, yf, Xh, yh, lip = _logistic()
        out.append(("metric=None", NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=lip).fit(Xf, yf),
                    Xh, yh, [lip / 20, lip / 2, lip, 2 * lip]))
        out.append(("metric=None, bandwidth='auto'",
                    NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=lip).fit(Xf, yf),
                    Xh, yh, [lip / 4, lip]))
        out.append(("localized", NadarayaWatsonClassifier(metric=None, bandwidth="scale", n_neighbors=50,
                                                          lipschitz=lip).fit(Xf, yf), Xh, yh, [lip / 4, lip]))
        out.append(("dyadic", DyadicClassifier(metric=None, resolution=4, lipschitz=lip, bound="chernoff").fit(Xf, yf),
                    Xh, yh, [lip / 4, lip]))
        clusters = make_margin_clusters(900, n_classes=3, random_state=0)
        margin = NadarayaWatsonClassifier(metric=None, bandwidth=0.1, margin=clusters.margin)
        out.append(("margin", margin.fit(clusters.X[:600], clusters.y[:600]), clusters.X[600:], clusters.y[600:],
                    [1.0, 10.0]))
    return out


CONFIGURATIONS = _configurations()


@pytest.mark.parametrize("name, model, X, y, grid", CONFIGURATIONS, ids=[c[0] for c in CONFIGURATIONS])
def test_selection_is_the_one_of_the_full_intervals(name, model, X, y, grid, monkeypatch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cheap = select_lipschitz(model, X, y, grid)
        monkeypatch.setattr(run, "_intervals", _per_setting_intervals)
        full = select_lipschitz(model, X, y, grid)
    assert cheap == full  # every check: chosen L, counts, ceilings, p-values, thresholds, each test
    assert cheap.checks[0].tests and all(c.tests == f.tests for c, f in zip(cheap.checks, full.checks))


@pytest.mark.parametrize("name, model, X, y, grid", CONFIGURATIONS, ids=[c[0] for c in CONFIGURATIONS])
def test_certified_rows_are_those_of_the_full_intervals(name, model, X, y, grid):
    from nwbound.estimators._certified import CertifiedRows

    bounds = {("model", i): {"lipschitz": v} for i, v in enumerate(grid)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cheap = model._interval_settings(X, bounds, certified_only=frozenset(bounds))
        full = model.predict_interval(X, bounds=bounds)
    for key in bounds:
        assert isinstance(cheap[key], CertifiedRows) and len(cheap[key]) == X.shape[0]
        np.testing.assert_array_equal(cheap[key].proba, np.asarray(full[key].proba))
        np.testing.assert_array_equal(cheap[key].certified, np.asarray(full[key].certified))


def test_the_configurations_have_rows_of_both_kinds():
    """The comparisons above compare something: most configurations certify some rows and not others."""
    mixed = 0
    for _, model, X, _, grid in CONFIGURATIONS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            certified = np.concatenate([np.asarray(model.predict_interval(X, bounds={"m": {"lipschitz": v}})["m"].certified)
                                        for v in grid])
        mixed += bool(certified.any() and not certified.all())
    assert mixed >= len(CONFIGURATIONS) // 2


def test_the_check_searches_fewer_chernoff_ends(monkeypatch):
    """The model's own setting used to cost a full band-Chernoff search of both ends of every class of
    every row at each L; it now searches only the ends the certified mask needs, and those only until
    they decide it: fewer searched pairs, and fewer steps, for the same selection."""
    _, model, X, y, grid = CONFIGURATIONS[0]
    searched = []
    original = binned._left_ends

    def counting(S, *args, **kwargs):
        searched.append(S.shape[0])
        return original(S, *args, **kwargs)

    monkeypatch.setattr(binned, "_left_ends", counting)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        select_lipschitz(model, X, y, grid)
        cheap = sum(searched)
        searched.clear()
        monkeypatch.setattr(run, "_intervals", _per_setting_intervals)
        select_lipschitz(model, X, y, grid)
        full = sum(searched)
    # rows × classes × L, for each of the two settings: with two classes one search per (row, class)
    # gives its lower end and the other class's upper end (both ends of a row from two searches)
    n_pairs = X.shape[0] * 2 * len(grid)
    assert full == 2 * n_pairs
    # the test's intervals in full; the model's certified mask from one search per row at most
    assert cheap <= n_pairs + n_pairs // 2


# ---------------------------------------------------------------- the certified mask of the split form
def _random_binned(rng, n, n_classes, n_bins):
    """Valid per-bin inputs of chernoff_interval_binned with ties, empty rows and near-certain rows."""
    count = rng.integers(0, 6, size=(n, n_bins)).astype(float)
    count[rng.random(n) < 0.1] = 0.0  # κ = 0
    a_hi = np.sort(rng.uniform(0.2, 1.0, n_bins))[::-1]
    a_lo = np.concatenate([a_hi[1:], [0.1]])
    mass = count * (a_lo + rng.random((n, n_bins)) * (a_hi - a_lo))
    share = rng.dirichlet(np.full(n_classes, 0.3), size=n)
    share[rng.random(n) < 0.1] = 1.0 / n_classes  # ties
    S = mass.sum(axis=1)[:, None] * share
    radius = np.linspace(0.1, 1.0, n_bins)
    return S, count, mass, mass * radius, a_lo, a_hi, radius


@pytest.mark.parametrize("engine", ["numba", "numpy"])
@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_certified_mask_is_the_one_of_the_interval(engine, n_classes):
    from test_engine_paths import numba_unavailable_reason

    from nwbound.bounds._chernoff_binned import _prepared

    if engine == "numba" and (reason := numba_unavailable_reason()):
        pytest.skip(reason)
    rng = np.random.default_rng(n_classes)
    for beta, delta in ((0.0, 0.05), (0.3, 0.05), (2.0, 0.001)):
        S, count, mass, dist, a_lo, a_hi, radius = _random_binned(rng, 300, n_classes, 6)
        pairs = _prepared(S, count, mass, dist, a_lo, a_hi, beta * radius, beta, delta,
                          sq_sum=(count * a_hi**2).sum(axis=1), engine=engine, sum_error=1e-12)
        lower, upper = pairs.interval()
        top = np.argmax(S / np.maximum(S.sum(axis=1, keepdims=True), 1e-300), axis=1)
        mask = np.arange(n_classes)[None, :] == top[:, None]
        expected = (lower[mask] > np.where(mask, -np.inf, upper).max(axis=1)) & (S.sum(axis=1) > 0)
        np.testing.assert_array_equal(pairs.certified(top), expected)
        if beta == 0.3:  # both outcomes at the middle setting
            assert 0 < expected.sum() < expected.size


def test_early_stop_keeps_the_full_search_where_it_does_not_stop():
    from nwbound.bounds._chernoff_binned import _prepared

    rng = np.random.default_rng(3)
    S, count, mass, dist, a_lo, a_hi, radius = _random_binned(rng, 200, 2, 8)
    pairs = _prepared(S, count, mass, dist, a_lo, a_hi, 0.5 * radius, 0.5, 0.05, sq_sum=(count * a_hi**2).sum(axis=1))
    full = pairs.lower_ends()
    threshold = rng.uniform(0.0, 1.0, full.size)
    stopped = pairs.lower_ends(above=threshold, below=threshold)
    # the same side of the threshold as the full search's end, and the full end where it ran to the end
    np.testing.assert_array_equal(stopped > threshold, full > threshold)
    never = pairs.lower_ends(above=np.full(full.size, np.inf), below=np.full(full.size, -np.inf))
    np.testing.assert_array_equal(never, full)


def test_the_fit_maps_its_check_rows_once(monkeypatch):
    """The default fit's check takes its rows' coordinates from the space's validation of them
    (``LearnedSpace.fit_transform_held_out``) instead of mapping them again (issue 30): the score
    model predicts every check row once less, and L, the check's p-values, the intervals and the
    certified rows are those of mapping them afresh, bit for bit."""
    import nwbound.estimators._base as base
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import Pipeline

    from nwbound.spaces import _trees

    X, y = make_classification(3000, n_features=6, n_informative=4, n_classes=2, random_state=0)
    rows_read = []
    # every prediction through predict_proba, where it is counted (the trees' walk is its bits, uncounted)
    monkeypatch.setattr(_trees, "_compiled_walk", lambda: None)
    for cls in (HistGradientBoostingClassifier, Pipeline):
        def counted(self, Z, _predict=cls.predict_proba):
            rows_read.append((self, Z.shape[0]))
            return _predict(self, Z)
        monkeypatch.setattr(cls, "predict_proba", counted)

    def fitted():
        rows_read.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = NadarayaWatsonClassifier(cross_fit=False, random_state=0, point_estimate="nw").fit(X[:2000], y[:2000])
        return model, sum(n for m, n in rows_read if m is model.metric_.map_)

    kept, n_kept = fitted()
    choose = base.choose_lipschitz
    monkeypatch.setattr(base, "choose_lipschitz", lambda *a, mapped=None, **k: choose(*a, **k))  # maps them again
    fresh, n_fresh = fitted()
    assert n_fresh - n_kept == kept.lipschitz_report_.n_check > 0
    assert kept.lipschitz_ == fresh.lipschitz_
    assert [c.p_value for c in kept.lipschitz_report_.selection.checks] == \
        [c.p_value for c in fresh.lipschitz_report_.selection.checks]
    a, b = kept.predict_interval(X[2000:]), fresh.predict_interval(X[2000:])
    for name in ("lower", "upper", "proba", "certified"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def test_select_lipschitz_reads_the_rows_coordinates_it_is_given():
    """``mapped`` (the rows in the model's space) gives the selection of mapping them in the check;
    coordinates of another length are refused, naming the fix."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        name, model, X, y, grid = CONFIGURATIONS[0]
        mapped = model.metric_.transform(X)
        given = select_lipschitz(model, X, y, grid, mapped=mapped)
        own = select_lipschitz(model, X, y, grid)
    assert given.chosen == own.chosen and [c.p_value for c in given.checks] == [c.p_value for c in own.checks]
    with pytest.raises(ValueError, match="mapped must hold one row of coordinates per row of X"):
        select_lipschitz(model, X, y, grid, mapped=mapped[:-1])
