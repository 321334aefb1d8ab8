"""A cross-fitted model's p̂ lies in its box: the κ-weighted mean projected onto
{lower ≤ q ≤ upper, Σq = 1} (spaces.project_into_box, spaces.intersect_intervals), and
predict_proba agrees with predict_interval(X).proba."""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, TransformerMixin

from nwbound import DyadicClassifier, NadarayaWatsonClassifier, PredictionInterval, UselessBoundWarning
from nwbound.metrics import bayes_decision
from nwbound.spaces import intersect_intervals, kappa_weighted_proba, project_into_box


def _slow_projection(p, lo, up):
    """The projection of one row by its breakpoints (no bisection): g(τ) = Σ clip(p − τ, lo, up) is
    piecewise linear with kinks at p − up and p − lo; find the piece where it crosses 1 and solve
    the linear equation there. None where Σ lo > 1 or Σ up < 1 (no distribution in the box)."""
    if lo.sum() > 1 + 1e-9 or up.sum() < 1 - 1e-9:
        return None

    def g(t):
        return float(np.sum(np.minimum(np.maximum(p - t, lo), up)))

    kinks = sorted(set((p - up).tolist() + (p - lo).tolist()))
    values = [g(t) for t in kinks]  # non-increasing, from Σ up down to Σ lo
    for (t0, g0), (t1, g1) in zip(zip(kinks, values), zip(kinks[1:], values[1:])):
        if g0 >= 1 >= g1:
            t = t0 if g0 == g1 else t0 + (g0 - 1) / (g0 - g1) * (t1 - t0)
            return np.minimum(np.maximum(p - t, lo), up)
    return np.minimum(np.maximum(p - kinks[0], lo), up) if values[0] <= 1 else np.minimum(np.maximum(p - kinks[-1], lo), up)


def _random_boxes(n, C, rng):
    """Boxes around a random distribution (feasible), some loose enough to hold p̂, some not;
    a share with one class pinned (lo = up) and a share that hold no distribution at all."""
    p_true = rng.dirichlet(np.ones(C), size=n)
    p_hat = rng.dirichlet(np.ones(C) * rng.uniform(0.3, 3.0), size=n)
    lo = np.clip(p_true - rng.uniform(0, 0.3, (n, C)), 0, 1)
    up = np.clip(p_true + rng.uniform(0, 0.3, (n, C)), 0, 1)
    pinned = rng.random(n) < 0.1
    lo[pinned, 0] = up[pinned, 0] = p_true[pinned, 0]
    too_high = rng.random(n) < 0.1  # Σ lo > 1
    lo[too_high] = np.minimum(up[too_high], lo[too_high] + 0.5)
    up[too_high] = np.maximum(up[too_high], lo[too_high])
    too_low = (rng.random(n) < 0.1) & ~too_high  # Σ up < 1
    up[too_low] = lo[too_low] = lo[too_low] * 0.3
    return p_hat, lo, up


@pytest.mark.parametrize("C", [2, 3, 5, 10])
def test_projection_matches_a_slow_breakpoint_solution_and_the_kkt_conditions(C):
    rng = np.random.default_rng(C)
    p, lo, up = _random_boxes(400, C, rng)
    q, feasible = project_into_box(p, lo, up)
    assert 0 < feasible.sum() < feasible.size
    for i in range(p.shape[0]):
        want = _slow_projection(p[i], lo[i], up[i])
        assert (want is not None) == feasible[i]
        if want is None:
            np.testing.assert_array_equal(q[i], p[i])  # kept: no distribution in the box
            continue
        np.testing.assert_allclose(q[i], want, atol=1e-12)
        assert np.all(lo[i] <= q[i]) and np.all(q[i] <= up[i])
        assert abs(q[i].sum() - 1) < 1e-12
        # KKT: one τ with q = p − τ on the free classes, q = lo only where p − τ ≤ lo, q = up only where p − τ ≥ up.
        free = (q[i] > lo[i]) & (q[i] < up[i])
        if free.any():
            tau = p[i][free] - q[i][free]
            assert np.ptp(tau) < 1e-12
            t = tau.mean()
            at_lo, at_up = (q[i] == lo[i]) & (lo[i] < up[i]), (q[i] == up[i]) & (lo[i] < up[i])  # lo = up: any τ
            assert np.all(p[i][at_lo] - t <= lo[i][at_lo] + 1e-12)
            assert np.all(p[i][at_up] - t >= up[i][at_up] - 1e-12)


def test_projection_is_the_nearest_distribution_in_the_box_by_a_generic_solver():
    rng = np.random.default_rng(7)
    p, lo, up = _random_boxes(40, 4, rng)
    q, feasible = project_into_box(p, lo, up)
    for i in np.flatnonzero(feasible):
        res = minimize(lambda x: np.sum((x - p[i]) ** 2), np.clip(p[i], lo[i], up[i]), method="SLSQP",
                       bounds=list(zip(lo[i], up[i])), constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}],
                       options={"ftol": 1e-14, "maxiter": 500})
        assert np.sum((q[i] - p[i]) ** 2) <= res.fun + 1e-9
        np.testing.assert_allclose(q[i], res.x, atol=1e-5)


def test_projection_keeps_rows_already_in_their_box_bit_for_bit():
    p = np.array([[0.2, 0.3, 0.5], [0.6, 0.4, 0.0]])
    q, feasible = project_into_box(p, p - 0.1, p + 0.1)
    assert feasible.all() and np.array_equal(q, p)
    q, feasible = project_into_box(np.zeros((0, 3)), np.zeros((0, 3)), np.ones((0, 3)))
    assert q.shape == (0, 3) and feasible.shape == (0,)


@pytest.mark.parametrize("lower, upper, match", [
    (np.zeros((2, 2)), np.ones((2, 3)), r"`upper` of the shape of `proba`.*\(2, 3\)"),
    (np.zeros(2), np.ones((2, 2)), r"`lower` of the shape"),
    (np.full((2, 2), np.nan), np.ones((2, 2)), r"`lower`.*non-finite"),
    (np.full((2, 2), 0.6), np.full((2, 2), 0.5), r"lower ≤ upper; 4 entries"),
])
def test_projection_bad_input_names_the_array(lower, upper, match):
    with pytest.raises(ValueError, match=match):
        project_into_box(np.full((2, 2), 0.5), lower, upper)


def _interval(proba, lower, upper, kappa, vacuous=None, outside=None):
    n = proba.shape[0]
    eps = np.maximum(upper - proba, proba - lower)
    return PredictionInterval(proba=proba, lower=lower, upper=upper, epsilon=eps, bias=eps / 2, sampling=eps / 2,
                              kappa=kappa, n_eff=kappa / 2, vacuous=np.zeros(n, bool) if vacuous is None else vacuous,
                              bandwidth=kappa + 1.0, outside_box=outside)


def _models(n, C, K, rng):
    """K models' intervals about one p: each p̂_k a noisy p, its interval p̂_k ± a width of its own
    (clipped), some of them missing p (as on the δ-event)."""
    p = rng.dirichlet(np.ones(C), size=n)
    out = []
    for _ in range(K):
        ph = rng.gamma(1 + 30 * p)
        ph /= ph.sum(axis=1, keepdims=True)
        width = rng.uniform(0.02, 0.6, (n, 1)) * rng.uniform(0.5, 1.5, (n, C))
        lower, upper = np.clip(ph - width, 0, 1), np.clip(ph + width, 0, 1)
        kappa = rng.uniform(0, 50, n) * (rng.random(n) > 0.05)
        out.append(_interval(ph, lower, upper, kappa, vacuous=kappa == 0, outside=rng.random(n) < 0.5))
    return p, out


@pytest.mark.parametrize("C, K", [(2, 2), (3, 5), (5, 3), (10, 5)])
def test_intersection_puts_proba_in_the_box_and_never_widens_a_class_it_moved(C, K):
    rng = np.random.default_rng(10 * C + K)
    _, parts = _models(500, C, K, rng)
    iv = intersect_intervals(*parts)
    mean = kappa_weighted_proba([v.proba for v in parts], [v.kappa for v in parts])
    lower = np.max([v.lower for v in parts], axis=0)
    upper = np.maximum(np.min([v.upper for v in parts], axis=0), lower)
    feasible = (lower.sum(axis=1) <= 1 + 1e-9) & (upper.sum(axis=1) >= 1 - 1e-9)
    outside = np.any((mean < lower) | (mean > upper), axis=1)
    assert (outside & feasible).sum() >= 20 and (~feasible).sum() >= 1  # both cases occur here
    # every row: in its box, which is the intersection (feasible) or holds it (widened)
    assert np.all(iv.lower <= iv.proba) and np.all(iv.proba <= iv.upper)
    np.testing.assert_array_equal(iv.lower[feasible], lower[feasible])
    np.testing.assert_array_equal(iv.upper[feasible], upper[feasible])
    np.testing.assert_array_equal(iv.proba[~feasible], mean[~feasible])
    np.testing.assert_array_equal(iv.lower[~feasible], np.minimum(lower, mean)[~feasible])
    np.testing.assert_array_equal(iv.upper[~feasible], np.maximum(upper, mean)[~feasible])
    np.testing.assert_allclose(iv.proba.sum(axis=1), 1.0, atol=1e-12)  # both cases (mean sums to 1)
    for i in np.flatnonzero(feasible):  # the projection, by the slow formula
        np.testing.assert_allclose(iv.proba[i], _slow_projection(mean[i], lower[i], upper[i]), atol=1e-12)
    # ε: the interval's half-width about proba; at most the width; no larger than the old ε where
    # the mean lay outside that class's interval (and the same where it did not move).
    old_eps = np.clip(np.maximum(upper - mean, mean - lower), 0, 1)
    vac = np.logical_and.reduce([v.vacuous for v in parts])
    eps = iv.epsilon[~vac]
    np.testing.assert_array_equal(eps, np.maximum(iv.upper - iv.proba, iv.proba - iv.lower)[~vac])
    assert np.all(iv.epsilon[vac] == 1.0)
    assert np.all(eps <= (iv.upper - iv.lower)[~vac] + 1e-15)
    moved_class = ((mean < lower) | (mean > upper))[~vac]
    assert np.all(eps[moved_class] <= old_eps[~vac][moved_class] + 1e-15)
    kept = ~outside[~vac]
    np.testing.assert_allclose(eps[kept], old_eps[~vac][kept], atol=1e-15)
    # a class the box certifies is the argmax of proba (it need not be the argmax of the mean)
    top = np.argmax(lower, axis=1)
    others = np.where(np.eye(C, dtype=bool)[top], -np.inf, upper).max(axis=1)
    sure = feasible & (lower[np.arange(len(top)), top] > others)
    assert np.array_equal(np.argmax(iv.proba, axis=1)[sure], top[sure])
    assert np.array_equal(iv.certified, iv.certified & ~vac)
    # the account: sums, the least-ε model's parts, the largest-κ model's bandwidth
    np.testing.assert_allclose(iv.kappa, np.sum([v.kappa for v in parts], axis=0))
    least = np.argmin([v.epsilon for v in parts], axis=0)
    np.testing.assert_array_equal(iv.bias, np.stack([v.bias for v in parts])[least, np.arange(500)[:, None], np.arange(C)])
    largest = np.argmax([v.kappa for v in parts], axis=0)
    np.testing.assert_array_equal(iv.bandwidth, np.stack([v.bandwidth for v in parts])[largest, np.arange(500)])
    assert np.array_equal(iv.outside_box, np.logical_and.reduce([v.outside_box for v in parts]))


def test_intersection_of_many_models_and_bad_input():
    rng = np.random.default_rng(1)
    _, parts = _models(50, 3, 40, rng)  # more models than np.choose takes
    iv = intersect_intervals(*parts)
    assert np.all(iv.lower <= iv.proba) and np.all(iv.proba <= iv.upper)
    single = intersect_intervals(parts[0])
    np.testing.assert_array_equal(single.lower, parts[0].lower)
    with pytest.raises(TypeError, match="PredictionInterval"):
        intersect_intervals(parts[0], parts[1].proba)


def test_projected_proba_is_within_epsilon_of_the_true_p_at_the_stated_rate():
    """Known p, K = 3 models built as a cross-fitted NW model's are: model k's labels are drawn from
    r_k = (1 − t_k) p + t_k e (a bias of at most t_k per class, as L·D/κ bounds NW's), its p̂_k their
    frequencies over n_k draws (κ_k = n_k), its interval p̂_k ± (t_k + the Hoeffding term at δ/K per
    class). The heavily weighted model is the biased one, so the κ-weighted mean often lies outside
    the intersection. |p − proba| ≤ ε must hold on all but δ of the (query, class) pairs (+ binomial
    3σ), and where the box holds p, proba is no farther from p than the mean (Euclidean)."""
    rng = np.random.default_rng(11)
    n, C, delta = 3000, 3, 0.05
    p = rng.dirichlet(np.ones(C), size=n)
    parts = []
    for n_k, t_k in ((400, 0.0), (4000, 0.25), (1000, 0.1)):
        e = rng.dirichlet(np.ones(C), size=n)
        r = (1 - t_k) * p + t_k * e
        ph = np.array([rng.multinomial(n_k, row) for row in r]) / n_k
        eps = t_k + np.sqrt(np.log(2 * 3 / delta) / (2 * n_k))
        parts.append(_interval(ph, np.clip(ph - eps, 0, 1), np.clip(ph + eps, 0, 1), np.full(n, float(n_k))))
    iv = intersect_intervals(*parts)
    mean = kappa_weighted_proba([v.proba for v in parts], [v.kappa for v in parts])
    moved = np.any(np.abs(mean - iv.proba) > 1e-12, axis=1)
    assert moved.mean() > 0.2, moved.mean()
    sigma3 = 3 * np.sqrt(delta * (1 - delta) / p.size)
    assert (np.abs(p - iv.proba) > iv.epsilon).mean() <= delta + sigma3
    held = np.all((iv.lower <= p) & (p <= iv.upper), axis=1)
    assert held.mean() >= 1 - C * delta
    dist_q, dist_mean = np.linalg.norm(iv.proba - p, axis=1), np.linalg.norm(mean - p, axis=1)
    assert np.all(dist_q[held] <= dist_mean[held] + 1e-12)
    assert np.mean(dist_q[moved & held] < dist_mean[moved & held]) == 1.0


class _Identity(TransformerMixin, BaseEstimator):
    """A map fitted on labels that learns nothing: x itself (then centred and scaled by the space)."""

    def fit(self, X, y):
        return self

    def transform(self, X):
        return np.asarray(X, dtype=np.float64)


def _breast_cancer(n_train=300):
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    sc = StandardScaler().fit(X[:n_train])
    return sc.transform(X[:n_train]), y[:n_train], sc.transform(X[n_train:])


def _mean_of_models(clf, Q):
    parts = [m.predict_interval(Q) for m in clf.cross_fit_models_]
    return kappa_weighted_proba([v.proba for v in parts], [v.kappa for v in parts])


def test_predict_proba_is_the_interval_proba_and_never_warns_about_bounds():
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    X, y, Q = _breast_cancer()
    models = (  # the first two: the κ-weighted mean leaves the box on a few rows (measured: 8 and 3 of 269)
        NadarayaWatsonClassifier(metric=LinearDiscriminantAnalysis(), cross_fit=True, lipschitz=0.1, bandwidth=0.3),
        NadarayaWatsonClassifier(metric=LinearDiscriminantAnalysis(), cross_fit=True, lipschitz=0.1, bandwidth="auto"),
        NadarayaWatsonClassifier(metric=_Identity(), cross_fit=3, lipschitz=0.3, bandwidth="auto"),
        DyadicClassifier(metric=_Identity(), cross_fit=True, lipschitz=0.3, resolution=1))
    for i, clf in enumerate(models):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.fit(X, y)
            iv = clf.predict_interval(Q)
            mean = _mean_of_models(clf, Q)
        with warnings.catch_warnings():
            warnings.simplefilter("error", UselessBoundWarning)
            proba = clf.predict_proba(Q)
            pred = clf.predict(Q)
        np.testing.assert_array_equal(proba, iv.proba)
        np.testing.assert_array_equal(pred, clf.classes_[np.argmax(iv.proba, axis=1)])
        assert np.all(iv.lower <= proba) and np.all(proba <= iv.upper)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
        left = np.any((mean < iv.lower - 1e-9) | (mean > iv.upper + 1e-9), axis=1)
        if i < 2:
            assert left.sum() >= 1
            with pytest.raises(ValueError, match="must hold element-wise"):  # what the old proba gave it
                bayes_decision(mean, lower=iv.lower, upper=iv.upper)
            prior = np.bincount(y) / y.size
            d = bayes_decision(proba, train_prior=prior, target_prior=[0.5, 0.5], lower=iv.lower, upper=iv.upper)
            assert d.y_pred.shape == (Q.shape[0],)
    # nor about the bound's form (a Chernoff bound on a kernel without compact support falls back to Hoeffding)
    clf = NadarayaWatsonClassifier(metric=_Identity(), cross_fit=True, lipschitz=0.3, bandwidth=4.0,
                                   kernel="gaussian_untruncated", bound="chernoff")
    with pytest.warns(UserWarning, match="compact support"):
        clf.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        proba = clf.predict_proba(Q)
    with pytest.warns(UserWarning, match="compact support"):
        np.testing.assert_array_equal(proba, clf.predict_interval(Q).proba)
    # without a bound there is no box: the κ-weighted mean of the models' p̂
    clf = NadarayaWatsonClassifier(metric=_Identity(), cross_fit=True, lipschitz=None, bandwidth=4.0).fit(X, y)
    parts = [m._proba_kappa(Q[:10]) for m in clf.cross_fit_models_]
    np.testing.assert_array_equal(clf.predict_proba(Q[:10]),
                                  kappa_weighted_proba([p for p, _ in parts], [k for _, k in parts]))


@pytest.mark.slow
def test_bayes_decision_takes_the_default_cross_fitted_models_output():
    """The defaults on standardized breast-cancer (300 rows, about 4 s): the κ-weighted mean lies
    outside the intersected box on a few test rows (measured: 7 of 269; bayes_decision refused the
    old output), the reported proba does not, and the documented call runs."""
    X, y, Q = _breast_cancer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = NadarayaWatsonClassifier(random_state=0).fit(X, y)
        iv = clf.predict_interval(Q)
        mean = _mean_of_models(clf, Q)
    with pytest.raises(ValueError, match="must hold element-wise"):  # what the old proba gave it
        bayes_decision(mean, lower=iv.lower, upper=iv.upper)
    prior = np.bincount(y) / y.size
    d = bayes_decision(iv.proba, train_prior=prior, target_prior=[0.5, 0.5], lower=iv.lower, upper=iv.upper)
    assert d.y_pred.shape == (Q.shape[0],)
    np.testing.assert_array_equal(bayes_decision(iv.proba, lower=iv.lower, upper=iv.upper).y_pred,
                                  np.argmax(iv.proba, axis=1))
    np.testing.assert_array_equal(clf.predict_proba(Q), iv.proba)
