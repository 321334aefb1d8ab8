"""The split histogram form of the band-Chernoff bound (``nwbound.bounds._chernoff_binned``).

The slow reference below restates the split exponent from its definition (user guide,
"Histogram form"): the remainder ``g(x, p) = log(1 + p(e^x − 1)) − p·x`` is maximised over
the band numerically (scipy, not the closed-form maximiser), θ is minimised numerically,
and each end is found by bisection from the Hoeffding end.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from test_engine_paths import route  # noqa: F401  (fixture: both engine routes)

from nwbound import NadarayaWatsonClassifier
from nwbound.bounds._chernoff import chernoff_interval
from nwbound.bounds._chernoff_binned import chernoff_interval_binned

TOL = 1e-7


# ---------------------------------------------------------------- slow reference
def _g(x, p):
    return math.log1p(p * math.expm1(x)) - p * x


def _gmax(x, lo, hi):
    if hi - lo < 1e-15:
        return _g(x, lo)
    res = minimize_scalar(lambda p: -_g(x, p), bounds=(lo, hi), method="bounded", options={"xatol": 1e-12})
    return max(-res.fun, _g(x, lo), _g(x, hi))


def _split_exponent(theta, s, m, n, A, bD, alo, ahi, rho, rho_in):
    total = -theta * s
    for b in range(len(n)):
        if A[b] <= 0:
            continue
        total += theta * min(A[b], m * A[b] + bD[b])
        lo, hi = min(1.0, m + rho_in[b]), min(1.0, m + rho[b])
        lam = n[b] if ahi[b] == alo[b] else min(max((A[b] - n[b] * alo[b]) / (ahi[b] - alo[b]), 0.0), n[b])
        total += lam * _gmax(theta * ahi[b], lo, hi) + (n[b] - lam) * _gmax(theta * alo[b], lo, hi)
    return total


def _rejects(s, m, args, level):
    t_max = 700.0 / max(args[4].max(), 1e-300)
    f = lambda z: _split_exponent(math.exp(z), s, m, *args)  # noqa: E731
    res = minimize_scalar(f, bounds=(math.log(t_max) - 30, math.log(t_max)), method="bounded",
                          options={"xatol": 1e-10})
    return min(res.fun, f(math.log(t_max))) <= level


def reference_binned(S, n, A, D, alo, ahi, rho, rho_in, beta, sq, dp):
    """(lower, upper) of every class of one query, by bisection from the Hoeffding ends."""
    level = math.log(dp / 2)
    kappa = S.sum()
    half = (beta * D.sum() + math.sqrt(sq * math.log(2 / dp) / 2)) / kappa
    args = (n, A, beta * D, alo, ahi, rho, rho_in)
    out = []
    for s in S:
        ends = []
        for stat in (s, kappa - s):  # the lower tail is the complement's upper tail
            p_hat = stat / kappa
            a, b = min(max(p_hat - half, 0.0), p_hat), p_hat
            for _ in range(28):
                mid = 0.5 * (a + b)
                a, b = (mid, b) if _rejects(stat, mid, args, level) else (a, mid)
            ends.append(a)
        out.append((ends[0], 1.0 - ends[1]))
    return np.array(out)


# ---------------------------------------------------------------- random cases
def _points(rng, n_pts, n_classes, lam=1.0, weighted=False):
    r = lam * np.sqrt(rng.random(n_pts))
    k = 1.0 - (r / lam) ** 2
    w = rng.uniform(0.2, 1.0, n_pts) if weighted else np.ones(n_pts)
    p = rng.dirichlet(np.full(n_classes, 0.5))
    lab = rng.choice(n_classes, size=n_pts, p=p)
    return r, k, w, lab


def _binned(r, k, w, lab, n_classes, n_bins, beta, lam=1.0, weighted=False):
    """Per-bin statistics of one query, binned in u² as the engine does."""
    a = w * k
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    b = np.minimum(((r / lam) ** 2 * n_bins).astype(int), n_bins - 1)
    w_max = w.max()
    n = np.bincount(b, weights=w / w_max, minlength=n_bins)
    A = np.bincount(b, weights=a, minlength=n_bins)
    D = np.bincount(b, weights=a * r, minlength=n_bins)
    ahi = w_max * (1.0 - edges[:-1])
    alo = np.zeros(n_bins) if weighted else w_max * (1.0 - edges[1:])
    rho = beta * lam * np.sqrt(edges[1:])
    rho_in = beta * lam * np.sqrt(edges[:-1])
    S = np.array([a[lab == c].sum() for c in range(n_classes)])
    return S, n, A, D, alo, ahi, rho, rho_in, float((a * a).sum())


def _call(S, n, A, D, alo, ahi, rho, rho_in, sq, beta, dp, **kw):
    return chernoff_interval_binned(S[None], n[None], A[None], D[None], alo, ahi, rho, beta, dp,
                                    sq_sum=np.array([sq]), band_radius_inner=rho_in, **kw)


@pytest.mark.parametrize("seed", [0, 4])  # cases where the split form beats Hoeffding (checked below)
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_slow_reference(seed, weighted):
    rng = np.random.default_rng(seed)
    beta, dp = 0.05, 0.05
    r, k, w, lab = _points(rng, int(rng.integers(15, 120)), 2, weighted=weighted)
    S, n, A, D, alo, ahi, rho, rho_in, sq = _binned(r, k, w, lab, 2, 4, beta, weighted=weighted)
    lo, up = _call(S, n, A, D, alo, ahi, rho, rho_in, sq, beta, dp, engine="numpy")
    ref = reference_binned(S, n, A, D, alo, ahi, rho, rho_in, beta, sq, dp)
    kappa = S.sum()
    eps = (beta * D.sum() + math.sqrt(sq * math.log(2 / dp) / 2)) / kappa
    assert (up - lo).sum() < 0.98 * (np.clip(S / kappa + eps, 0, 1) - np.clip(S / kappa - eps, 0, 1)).sum()
    np.testing.assert_allclose(lo[0], ref[:, 0], atol=1e-5)
    np.testing.assert_allclose(up[0], ref[:, 1], atol=1e-5)


def test_one_point_per_bin_is_the_exact_form():
    """a_lo = a_hi, ρ_in = ρ (one point per group): Λ = n and the split form is exact."""
    rng = np.random.default_rng(3)
    r, k, _, lab = _points(rng, 40, 2)
    beta, dp = 0.3, 0.01
    S = np.array([[k[lab == c].sum() for c in range(2)]])
    ones = np.ones((1, 40))
    lo, up = chernoff_interval_binned(S, ones, k[None], (k * r)[None], k, k, beta * r, beta, dp,
                                      sq_sum=np.array([(k * k).sum()]), band_radius_inner=beta * r)
    e_lo, e_up = chernoff_interval(S, ones, k, k, beta * r, dp)
    np.testing.assert_allclose(lo, e_lo, atol=3 * TOL)
    np.testing.assert_allclose(up, e_up, atol=3 * TOL)


@pytest.mark.parametrize("n_bins", [1, 4, 32])
@pytest.mark.parametrize("weighted", [False, True])
def test_never_narrower_than_exact_and_close_to_it(n_bins, weighted):
    rng = np.random.default_rng(n_bins)
    beta, dp = 2.0, 0.05
    ratios = []
    for _ in range(12):
        n_pts = int(rng.integers(20, 300))
        r, k, w, lab = _points(rng, n_pts, 3, lam=0.05, weighted=weighted)
        a = w * k
        S, n, A, D, alo, ahi, rho, rho_in, sq = _binned(r, k, w, lab, 3, n_bins, beta, lam=0.05,
                                                        weighted=weighted)
        lo, up = _call(S, n, A, D, alo, ahi, rho, rho_in, sq, beta, dp)
        e_lo, e_up = chernoff_interval(S[None], np.ones((1, n_pts)), a, a, beta * r, dp)
        assert np.all(lo <= e_lo + 1e-9) and np.all(up >= e_up - 1e-9)
        ratios.append((up - lo).sum() / (e_up - e_lo).sum())
    if n_bins == 32 and not weighted:  # measured: within 1 % of the exact width on average
        assert np.mean(ratios) < 1.02
    # Weighted data lose more (a_lo = 0: the chord starts at G(0) = 0; measured mean ≈ 1.12).


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n_bins=st.sampled_from([1, 3, 8, 32]),
       beta=st.floats(0.0, 50.0), dp=st.floats(1e-6, 0.5), weighted=st.booleans())
def test_never_wider_than_hoeffding_on_the_exact_sums(seed, n_bins, beta, dp, weighted):
    rng = np.random.default_rng(seed)
    r, k, w, lab = _points(rng, int(rng.integers(1, 200)), 4, lam=0.1, weighted=weighted)
    S, n, A, D, alo, ahi, rho, rho_in, sq = _binned(r, k, w, lab, 4, n_bins, beta, lam=0.1, weighted=weighted)
    lo, up = _call(S, n, A, D, alo, ahi, rho, rho_in, sq, beta, dp)
    kappa = S.sum()
    if kappa == 0:
        assert np.all(lo == 0) and np.all(up == 1)
        return
    eps = (beta * D.sum() + math.sqrt(sq * math.log(2 / dp) / 2)) / kappa
    p_hat = S / kappa
    assert np.all(lo[0] >= np.clip(p_hat - eps, 0, 1) - 1e-12)
    assert np.all(up[0] <= np.clip(p_hat + eps, 0, 1) + 1e-12)
    assert np.all(lo[0] <= p_hat + 1e-12) and np.all(up[0] >= p_hat - 1e-12)


def test_numba_and_numpy_agree():
    from test_engine_paths import numba_unavailable_reason

    if (reason := numba_unavailable_reason()):
        pytest.skip(reason)
    rng = np.random.default_rng(7)
    rows = [_binned(*_points(rng, int(rng.integers(5, 200)), 3, lam=0.2), 3, 16, 1.5, lam=0.2)
            for _ in range(40)]
    S, n, A, D, alo, ahi, rho, rho_in, sq = (np.array([row[i] for row in rows]) for i in range(9))
    args = (S, n, A, D, alo, ahi, rho, 1.5, 0.02)
    a = chernoff_interval_binned(*args, sq_sum=sq, band_radius_inner=rho_in, engine="numpy")
    b = chernoff_interval_binned(*args, sq_sum=sq, band_radius_inner=rho_in, engine="numba")
    np.testing.assert_allclose(a[0], b[0], atol=1e-9)
    np.testing.assert_allclose(a[1], b[1], atol=1e-9)


@pytest.mark.parametrize("beta", [6.0, 30.0])
def test_numba_early_exit_agrees_with_the_full_search(beta):
    # A wide band (large L): the linear part at the Hoeffding end already reaches S for many pairs,
    # so the compiled loop returns that end without searching; the numpy route searches in full.
    from test_engine_paths import numba_unavailable_reason

    if (reason := numba_unavailable_reason()):
        pytest.skip(reason)
    rng = np.random.default_rng(11)
    rows = [_binned(*_points(rng, int(rng.integers(5, 400)), 2, lam=0.2), 2, 32, beta, lam=0.2)
            for _ in range(60)]
    S, n, A, D, alo, ahi, rho, rho_in, sq = (np.array([row[i] for row in rows]) for i in range(9))
    args = (S, n, A, D, alo, ahi, rho, beta, 0.02)
    a = chernoff_interval_binned(*args, sq_sum=sq, band_radius_inner=rho_in, engine="numpy")
    b = chernoff_interval_binned(*args, sq_sum=sq, band_radius_inner=rho_in, engine="numba")
    np.testing.assert_allclose(a[0], b[0], atol=1e-9)
    np.testing.assert_allclose(a[1], b[1], atol=1e-9)


# ---------------------------------------------------------------- through the classifier
def _field(x):
    return np.clip(0.5 + 0.45 * np.sin(3.0 * x[:, 0]) * np.cos(2.0 * x[:, 1]), 0.0, 1.0)


def test_regular_classifier_uses_the_split_form_and_beats_the_counts_form():
    rng = np.random.default_rng(0)
    X = rng.random((4000, 2))
    y = (rng.random(4000) < _field(X)).astype(int)
    Q = rng.random((300, 2))
    L = 3.0 * 1.05  # |∇p| ≤ 0.45·√(3² + 2²) < 1.7 ≤ L
    h = NadarayaWatsonClassifier(metric=None, bandwidth=0.08, lipschitz=L, bound="hoeffding").fit(X, y).predict_interval(Q)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.08, lipschitz=L, bound="chernoff").fit(X, y)
    stats = clf.kernel_statistics(Q)
    assert stats.hist_mass is not None and stats.uniform_weights
    np.testing.assert_allclose(stats.hist_mass[:, 0].sum(axis=1), stats.kappa[:, 0], rtol=1e-12)
    split = clf.interval_from_statistics(stats)
    counts = clf.interval_from_statistics(dataclasses.replace(stats, hist_mass=None, hist_dist=None))
    w_h, w_s, w_c = (iv.upper - iv.lower for iv in (h, split, counts))
    assert np.all(w_s <= w_h + 1e-9)
    assert w_s.mean() < w_c.mean() < w_h.mean() * 1.05


@pytest.mark.slow
def test_empirical_coverage_regular_classifier():
    """Violations ≤ δ (+ binomial tolerance) over repeated training draws, true L, known p."""
    rng = np.random.default_rng(1)
    Q = rng.random((40, 2))
    p = _field(Q)
    delta, reps, bad = 0.2, 60, 0
    for _ in range(reps):
        X = rng.random((600, 2))
        y = (rng.random(600) < _field(X)).astype(int)
        iv = NadarayaWatsonClassifier(metric=None, bandwidth=0.15, lipschitz=1.7, bound="chernoff",
                                      delta=delta).fit(X, y).predict_interval(Q)
        bad += int((((p < iv.lower[:, 1] - 1e-12) | (p > iv.upper[:, 1] + 1e-12))).sum())
    n = reps * Q.shape[0]
    assert bad / n <= delta + 3 * math.sqrt(delta * (1 - delta) / n)


def test_weighted_data_take_the_zero_lower_mass():
    rng = np.random.default_rng(2)
    X = rng.random((1500, 2))
    y = (rng.random(1500) < _field(X)).astype(int)
    w = rng.uniform(0.1, 3.0, 1500)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.1, lipschitz=1.7, bound="chernoff").fit(X, y, sample_weight=w)
    stats = clf.kernel_statistics(rng.random((50, 2)))
    assert not stats.uniform_weights
    iv = clf.interval_from_statistics(stats)
    assert np.all((iv.lower <= iv.upper) & (iv.lower >= 0) & (iv.upper <= 1))


@pytest.mark.parametrize("low", [0.2, 0.8])
def test_weighted_split_form_counts_points_and_contains_the_exact_interval(low, route):
    # With sample weights the engine counts the points of each bin and knows the smallest weight:
    # a_i ∈ [w_min·K(e_b+1), w_max·K(e_b)] with the true count. The interval must still contain the
    # exact per-point one (restated here from the distances) and be narrower than the zero-lower-mass
    # form (no count: only Σa enters).
    rng = np.random.default_rng(5)
    X = rng.random((1200, 2))
    y = (rng.random(1200) < _field(X)).astype(int)
    w = rng.uniform(low, 1.0, 1200)
    lam, beta = 0.12, 1.7
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=lam, lipschitz=beta, bound="chernoff").fit(X, y, sample_weight=w)
    Q = rng.random((40, 2))
    stats = clf.kernel_statistics(Q)
    d = np.sqrt(((Q[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    np.testing.assert_array_equal(stats.hist_count[:, 0].sum(axis=1), (d <= lam).sum(axis=1))
    w = clf.get_fitted_state()["weights"]  # the estimator keeps relative weights (largest = 1)
    assert stats.weight_min == w.min() and not stats.uniform_weights
    iv = clf.interval_from_statistics(stats)
    zero = clf.interval_from_statistics(dataclasses.replace(stats, hist_count=None))
    a = w[None, :] * np.clip(1.0 - (d / lam) ** 2, 0.0, None)
    S = np.stack([(a * (y == c)).sum(axis=1) for c in (0, 1)], axis=1)
    e_lo, e_up = chernoff_interval(S, (a > 0).astype(float), a, a, beta * d, clf.bound_spec_.delta_prime)
    live = S.sum(axis=1) > 0
    assert np.all(iv.lower[live] <= e_lo[live] + 1e-6) and np.all(iv.upper[live] >= e_up[live] - 1e-6)
    assert np.all(iv.upper - iv.lower <= zero.upper - zero.lower + 1e-7)
    assert np.mean(iv.upper - iv.lower) < np.mean(zero.upper - zero.lower)


def test_merge_adds_the_bin_sums():
    rng = np.random.default_rng(4)
    X = rng.random((800, 2))
    y = (rng.random(800) < _field(X)).astype(int)
    Q = rng.random((20, 2))
    whole = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.7, bound="chernoff").fit(X, y)
    a = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.7, bound="chernoff").fit(X[:400], y[:400])
    b = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.7, bound="chernoff").fit(X[400:], y[400:])
    merged = a.kernel_statistics(Q).merge(b.kernel_statistics(Q))
    full = whole.kernel_statistics(Q)
    np.testing.assert_allclose(merged.hist_mass, full.hist_mass, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(merged.hist_dist, full.hist_dist, rtol=1e-6, atol=1e-12)
    assert merged.uniform_weights


def test_merge_refuses_statistics_of_another_kernel():
    rng = np.random.default_rng(5)
    X = rng.random((200, 2))
    y = (rng.random(200) < _field(X)).astype(int)
    Q = rng.random((5, 2))
    a = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.7).fit(X[:100], y[:100])
    b = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.7, kernel="quartic").fit(X[100:], y[100:])
    with pytest.raises(ValueError, match="different kernels .'epanechnikov' and 'quartic'."):
        a.kernel_statistics(Q).merge(b.kernel_statistics(Q))


@pytest.mark.parametrize(
    "change, name",
    [
        ({"mass": [[-1.0, 1.0]]}, "mass"),
        ({"dist_mass": [[np.nan, 0.0]]}, "dist_mass"),
        ({"beta": -1.0}, "beta"),
        ({"delta_prime": 1.5}, "delta_prime"),
        ({"mass": [[5.0, 0.5]]}, "mass must lie"),
        ({"sq_sum": np.array([1.0, 2.0])}, "sq_sum"),
        ({"engine": "cuda"}, "engine"),
    ],
)
def test_bad_input_names_the_parameter(change, name):
    kw = dict(class_sums=np.array([[1.0, 0.5]]), count=[[2.0, 1.0]], mass=[[1.0, 0.5]], dist_mass=[[0.1, 0.2]],
              mass_lower=[0.0, 0.0], mass_upper=[1.0, 0.5], band_radius=[0.1, 0.2], beta=1.0, delta_prime=0.05,
              sq_sum=np.array([1.0]))
    kw.update(change)
    with pytest.raises(ValueError, match=name):
        chernoff_interval_binned(**kw)


@pytest.mark.parametrize("engine", ["numba", "numpy"])
def test_two_classes_one_search_serves_a_lower_and_the_other_upper_end(engine):
    """Two classes: the lower end of a class and the upper end of the other are one test (the lower
    tail is the complement's upper tail); one search, from the smaller of the two sums (S/(1 + ρ) and
    κ − S′ less its rounding allowance) and the lower of their starts, gives both. Its ends lie
    within the search's precision (tol) of the two searches it replaces (each a level their tests
    reject: the smaller sum's test rejects less)."""
    from test_engine_paths import numba_unavailable_reason

    from nwbound.bounds._chernoff_binned import _prepared

    if engine == "numba" and (reason := numba_unavailable_reason()):
        pytest.skip(reason)
    rng = np.random.default_rng(7)
    beta, dp, tol = 0.05, 0.05, 1e-7
    cases = [_binned(*_points(rng, int(rng.integers(15, 200)), 2), 2, 6, beta) for _ in range(40)]
    S, n, A, D = (np.stack([c[i] for c in cases]) for i in range(4))
    alo, ahi, rho, rho_in = cases[0][4:8]  # the same bins for every query (edges of u²)
    sq = np.array([c[8] for c in cases])
    pairs = _prepared(S, n, A, D, alo, ahi, rho, beta, dp, sq_sum=sq, band_radius_inner=rho_in, tol=tol,
                      engine=engine, sum_error=1e-9)
    calls = []
    real = pairs._two_class_ends
    pairs._two_class_ends = lambda k, *a, **kw: calls.append(k.size) or real(k, *a, **kw)
    lower, upper = pairs.interval()
    assert calls == [2 * len(cases)]  # one search per (query, class), not two
    old_lower, old_upper = np.zeros_like(lower), np.ones_like(upper)
    old_lower[pairs.rows, pairs.cls] = pairs.lower_ends()
    old_upper[pairs.rows, pairs.cls] = pairs.upper_ends()
    np.testing.assert_allclose(lower, old_lower, rtol=0, atol=tol + 1e-12)
    np.testing.assert_allclose(upper, old_upper, rtol=0, atol=tol + 1e-12)
