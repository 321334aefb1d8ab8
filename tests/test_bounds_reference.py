"""Every bound form against the slow per-query reference in tests/_reference.py."""

import math

import numpy as np
import pytest

from _reference import PROFILES, reference_epsilon, reference_query
from nwbound import DyadicClassifier, NadarayaWatsonClassifier


def _data(n=150, d=3, n_classes=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = rng.integers(0, n_classes, n)
    y[:n_classes] = np.arange(n_classes)
    Q = rng.random((25, d)) * 1.2 - 0.1  # a few queries outside the box
    return X, y, Q


def _delta_prime(delta, n_classes, coverage):
    return delta if (coverage == "per_class" or n_classes == 2) else delta / n_classes


CASES = [
    dict(kernel="epanechnikov", bound="hoeffding", coverage="simultaneous"),
    dict(kernel="epanechnikov", bound="paper", coverage="per_class", sigma=0.25, ck=1.0),
    dict(kernel="boxcar", bound="paper", coverage="simultaneous", sigma=0.5, ck=2.0),
    dict(kernel="tricube", bound="selfnormalized", coverage="simultaneous"),
    dict(kernel="gaussian", bound="hoeffding", coverage="per_class"),
    dict(kernel="gaussian", bound="paper", coverage="per_class"),
    dict(kernel="gaussian_untruncated", bound="paper", coverage="simultaneous"),
    dict(kernel="gaussian_untruncated", bound="hoeffding", coverage="simultaneous"),
]


def _assert_width(res, j, eps, rtol=1e-9):
    """The p̂ ± ε forms against the reference width ``eps``: the interval is clip(p̂ ∓ min(1, eps)),
    bias + sampling is that width, and ε is the reported interval's half-width (the glossary's ε)."""
    width = min(1.0, eps)
    np.testing.assert_allclose(np.minimum(1.0, res.bias[j] + res.sampling[j]), width, rtol=rtol)
    np.testing.assert_allclose(res.lower[j], np.clip(res.proba[j] - width, 0, 1), rtol=0, atol=rtol)
    np.testing.assert_allclose(res.upper[j], np.clip(res.proba[j] + width, 0, 1), rtol=0, atol=rtol)
    half = np.maximum(res.proba[j] - res.lower[j], res.upper[j] - res.proba[j])
    np.testing.assert_allclose(res.epsilon[j], half, rtol=0, atol=1e-15)


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(str(v) for v in c.values()))
@pytest.mark.parametrize("n_neighbors", [None, 12])
@pytest.mark.parametrize("weighted", [False, True])
def test_regular_and_localized_match_reference(case, n_neighbors, weighted):
    X, y, Q = _data()
    lam, L, delta = 0.35, 2.0, 0.1
    rng = np.random.default_rng(1)
    w = rng.uniform(0.2, 2.0, len(y)) if weighted else None
    model = NadarayaWatsonClassifier(metric=None, 
        bandwidth=lam, lipschitz=L, delta=delta, n_neighbors=n_neighbors, algorithm="brute", **case
    ).fit(X, y, sample_weight=w)
    res = model.predict_interval(Q)
    n_classes = 3
    radius = PROFILES[case["kernel"]][1]
    low, high = X.min(0), X.max(0)
    for j, q in enumerate(Q):
        nb = None
        if n_neighbors is not None:
            order = np.argsort(np.linalg.norm(X - q, axis=1), kind="stable")
            nb = order[:n_neighbors]
        # Weights are relative: the estimator reports κ in units of the largest weight.
        w_rel = None if w is None else w / w.max()
        cs, kappa, s2, d, tail = reference_query(q, X, y, n_classes, case["kernel"], lam, w_rel, nb)
        phi = float(np.linalg.norm(np.maximum(np.abs(q - low), np.abs(q - high))))
        eps = reference_epsilon(
            case["bound"], kappa, s2, d, tail, beta=L,
            delta_prime=_delta_prime(delta, n_classes, case["coverage"]),
            sigma=case.get("sigma", 0.5), ck=case.get("ck", 1.0), lam=lam, radius=radius, diameter=phi,
        )
        assert res.kappa[j] == pytest.approx(kappa, rel=1e-9, abs=1e-12)
        if kappa > 0:
            np.testing.assert_allclose(res.proba[j], cs / kappa, rtol=1e-9, atol=1e-12)
            _assert_width(res, j, eps)
            assert res.n_eff[j] == pytest.approx(kappa**2 / s2, rel=1e-9)
            assert not res.vacuous[j]
        else:
            assert res.vacuous[j] and np.all(res.epsilon[j] == 1.0)
            np.testing.assert_allclose(res.proba[j], model.class_prior_)
            assert np.all(res.lower[j] == 0.0) and np.all(res.upper[j] == 1.0)
        assert res.outside_box[j] == bool(np.any((q < low) | (q > high)))


def test_margin_gives_beta_one_over_gamma():
    X, y, Q = _data(n_classes=2)
    gamma, lam = 4.0, 0.4
    res = NadarayaWatsonClassifier(metric=None, bandwidth=lam, margin=gamma, bound="hoeffding").fit(X, y).predict_interval(Q)
    for j, q in enumerate(Q):
        _, kappa, s2, d, tail = reference_query(q, X, y, 2, "epanechnikov", lam)
        if kappa > 0:
            eps = reference_epsilon("hoeffding", kappa, s2, d, tail, beta=1 / gamma, delta_prime=0.05)
            _assert_width(res, j, eps)


def test_auto_bandwidth_minimises_epsilon_over_the_grid():
    X, y, Q = _data()
    grid = [0.1, 0.2, 0.4, 0.8, 1.6]
    model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", bandwidth_grid=grid, lipschitz=1.5, bound="hoeffding").fit(X, y)
    res = model.predict_interval(Q)
    for j, q in enumerate(Q):
        eps = []
        for lam in grid:
            _, kappa, s2, d, tail = reference_query(q, X, y, 3, "epanechnikov", lam)
            eps.append(reference_epsilon("hoeffding", kappa, s2, d, tail, beta=1.5, delta_prime=0.05 / 3))
        best = int(np.argmin(eps))
        assert res.bandwidth[j] == pytest.approx(grid[best])
        _assert_width(res, j, eps[best])
    np.testing.assert_allclose(model.predict_proba(Q), res.proba)


def test_default_auto_grid_is_label_free_and_geometric():
    X, y, _ = _data()
    a = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=1.0).fit(X, y).bandwidths_
    b = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=1.0).fit(X, np.roll(y, 7)).bandwidths_
    np.testing.assert_array_equal(a, b)
    ratios = a[1:] / a[:-1]
    np.testing.assert_allclose(ratios, ratios[0])
    assert a[-1] == pytest.approx(np.linalg.norm(X.max(0) - X.min(0)))


def test_float32_matches_float64():
    X, y, Q = _data(n=400)
    kw = dict(bandwidth=0.3, lipschitz=1.0)
    r64 = NadarayaWatsonClassifier(metric=None, **kw).fit(X, y).predict_interval(Q)
    r32 = NadarayaWatsonClassifier(metric=None, dtype="float32", **kw).fit(X, y).predict_interval(Q)
    np.testing.assert_allclose(r32.proba, r64.proba, atol=1e-4)
    np.testing.assert_allclose(r32.epsilon, r64.epsilon, atol=1e-4)


def test_small_working_memory_and_threads_give_identical_results():
    X, y, Q = _data(n=500)
    base = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=1.0).fit(X, y).predict_interval(Q)
    tiny = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=1.0, working_memory=0.01, n_jobs=2)
    res = tiny.fit(X, y).predict_interval(Q)
    np.testing.assert_allclose(res.proba, base.proba, rtol=1e-12)
    np.testing.assert_allclose(res.epsilon, base.epsilon, rtol=1e-12)


def test_dyadic_matches_reference_cells():
    rng = np.random.default_rng(3)
    X = rng.random((300, 2))
    y = (X[:, 0] + 0.2 * rng.standard_normal(300) > 0.5).astype(int)
    Q = np.vstack([rng.random((40, 2)), [[1.3, 0.5], [-0.2, -0.2]]])
    m, L = 3, 2.0
    model = DyadicClassifier(metric=None, resolution=m, lipschitz=L, bound="hoeffding").fit(X, y)
    res = model.predict_interval(Q)
    low, high = X.min(0), X.max(0)
    side = (high - low) / 2**m
    diam = float(np.linalg.norm(high - low)) / 2**m
    assert model.cell_diameter_ == pytest.approx(diam)
    for j, q in enumerate(Q):
        qc = np.clip(q, low, high)
        cell = np.minimum(((qc - low) / side).astype(int), 2**m - 1)
        members = np.all(np.minimum(((X - low) / side).astype(int), 2**m - 1) == cell, axis=1)
        kappa = members.sum()
        outside = float(np.linalg.norm(q - qc))
        assert res.outside_box[j] == (outside > 0)
        if kappa == 0:
            assert res.vacuous[j]
            continue
        p1 = y[members].mean()
        assert res.proba[j, 1] == pytest.approx(p1)
        eps = L * (diam + outside) + math.sqrt(math.log(2 / 0.05) * kappa / 2) / kappa
        _assert_width(res, j, eps, rtol=1e-6)
        # every member really is within the stated reach of the query
        assert np.all(np.linalg.norm(X[members] - q, axis=1) <= diam + outside + 1e-12)
