"""``estimate_lipschitz_draws``: the pilot-Strongin value of many labellings of the same rows, each
bit for bit the one ``estimate_lipschitz`` gives it alone (the noise gate of ``metric="auto"``'s
raise-only ``L_r`` draws labels up to 19 times on one set of rows)."""

from __future__ import annotations

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier
from nwbound.assumptions import estimate_lipschitz, estimate_lipschitz_draws


def _alone(X, y, offset, **kwargs):
    try:
        return estimate_lipschitz(X, y, offset=offset, **kwargs).value
    except ValueError:
        return None


def _field(n, d, seed, k=2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    logits = np.stack([c * X[:, 0] + np.sin(5 * (c + 1) * X[:, -1]) for c in range(k)], axis=1)
    P = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    draws = [(rng.random((n, 1)) > np.cumsum(P, axis=1)).sum(axis=1) for _ in range(5)]
    return X, P, draws


@pytest.mark.parametrize("n, d, k", [(1500, 2, 2), (900, 5, 3), (400, 1, 2), (700, 10, 2)])  # 10: every pair
def test_each_value_is_the_one_estimate_lipschitz_gives_alone(n, d, k):
    X, P, draws = _field(n, d, n, k)
    offsets = [P[:, np.unique(y)] for y in draws]
    got = estimate_lipschitz_draws(X, draws, offsets=offsets, random_state=7)
    assert got == [_alone(X, y, o, random_state=7) for y, o in zip(draws, offsets)]
    assert all(v is not None and v > 0 for v in got)
    # without offsets too, and a subset of the rows (max_samples) drawn first
    plain = estimate_lipschitz_draws(X, draws, random_state=3, max_samples=300)
    assert plain == [_alone(X, y, None, random_state=3, max_samples=300) for y in draws]


def test_a_labelling_that_cannot_be_scored_is_none_and_the_others_stand():
    X, P, draws = _field(600, 2, 1)
    one_class = np.zeros(600, dtype=int)
    rare = np.zeros(600, dtype=int)
    rare[:3] = 1  # three rows of a class: its pilot half may hold none (then alone its rows are dealt)
    got = estimate_lipschitz_draws(X, [draws[0], one_class, rare, draws[1]], random_state=5)
    assert got[1] is None
    assert got == [_alone(X, y, None, random_state=5) for y in (draws[0], one_class, rare, draws[1])]


def test_bad_arguments_are_refused_naming_them():
    X, _, draws = _field(200, 2, 2)
    with pytest.raises(TypeError, match="random_state must be an int"):
        estimate_lipschitz_draws(X, draws, random_state=np.random.default_rng(0))
    with pytest.raises(ValueError, match="offsets must hold one entry per labelling"):
        estimate_lipschitz_draws(X, draws, offsets=[None])
    with pytest.raises(ValueError, match="safety_factor must be >= 1"):
        estimate_lipschitz_draws(X, draws, safety_factor=0.5)


@pytest.mark.parametrize("seed", [11, 12])  # the gate stops inside its third batch; it runs all 19 draws
def test_the_default_models_raise_only_estimate_is_unchanged_by_batching(seed, monkeypatch):
    """The gate's draws go in batches of 1, 2, 4, ...; the same draws one at a time (the round-16
    route) give the same L_r, bit for bit, on a low-dimensional field where the second estimate runs."""
    import nwbound.spaces._residual as residual
    import nwbound.spaces._space as space

    X, P, draws = _field(6000, 2, seed)
    y = draws[0]

    def fit():
        return NadarayaWatsonClassifier(random_state=0, point_estimate="nw").fit(X, y)

    batched = fit()

    def one_at_a_time(statistic, value, offset, classes, rs):
        P_ = np.where(offset.sum(axis=1, keepdims=True) > 0, offset, 1.0)
        cumulative = np.cumsum(P_ / P_.sum(axis=1, keepdims=True), axis=1)
        largest = -np.inf
        for _ in range(residual._NULL_DRAWS):
            drawn = classes[np.minimum((rs.random_sample(P_.shape[0])[:, None] > cumulative).sum(axis=1),
                                       classes.shape[0] - 1)]
            (null,) = statistic([drawn])
            if null is None:
                continue
            if null >= value:
                return None
            largest = max(largest, null)
        return float(largest)

    monkeypatch.setattr(space, "_null_maximum", one_at_a_time)
    single = fit()
    assert batched.metric_.residual_lipschitz_ == single.metric_.residual_lipschitz_
    Q = X[:300]
    assert np.array_equal(batched.predict_interval(Q).lower, single.predict_interval(Q).lower)


@pytest.mark.parametrize("d, kept", [(2, None), (12, None), (12, 0)])
def test_the_pilot_estimate_is_the_slow_nadaraya_watson_formula(d, kept, monkeypatch):
    """p̂ of the pilot at its evaluation rows: Σ K(‖e − x‖/λ)·(1{y = c} − offset_c) / Σ K(‖e − x‖/λ)
    over the pilot rows, written here with every pair's distance (scipy's cdist). The three routes:
    a k-d tree's pairs within reach (2 features), the pairs within reach picked from every pair's
    distance and kept (12), and every pair's distance at each estimate (12, nothing kept)."""
    from scipy.spatial.distance import cdist

    import nwbound.assumptions._lipschitz as lipschitz
    from nwbound.assumptions._lipschitz import _PilotGeometry
    from nwbound.kernels import get_kernel

    if kept is not None:
        monkeypatch.setattr(lipschitz, "_KEPT_PAIRS_MAX", kept)
    X, P, draws = _field(1200, d, 5, k=3)
    codes = draws[0]
    geometry = _PilotGeometry(X, np.random.default_rng(4), "auto", "epanechnikov", 2000, None, codes=codes)
    assert (geometry._K is None) == (kept == 0)  # the route taken
    (got,) = geometry.estimates([(codes, P)])
    pilot, rows, lam = geometry.pilot_rows, geometry.rows, geometry.bandwidth
    K = np.asarray(get_kernel("epanechnikov")(cdist(X[rows], X[pilot]) / lam), dtype=np.float64)
    targets = np.eye(3)[codes[pilot]] - P[pilot]
    np.testing.assert_allclose(got, (K @ targets) / K.sum(axis=1)[:, None], rtol=1e-12, atol=1e-13)
    assert np.all(K.sum(axis=1) > 0)  # the rows kept are those with mass in reach
    every = np.setdiff1d(np.arange(X.shape[0]), pilot)
    assert rows.shape[0] <= every.shape[0] and np.isin(rows, every).all()
