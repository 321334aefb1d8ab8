"""A cross-fitted model's p̂ lies in its box: the κ-weighted mean projected onto
{lower ≤ q ≤ upper, Σq = 1} (spaces.project_into_box, spaces.intersect_intervals), and
predict_proba agrees with predict_interval(X).proba."""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, TransformerMixin

from nwbound import ContradictingModelsWarning, DyadicClassifier, NadarayaWatsonClassifier, PredictionInterval, UselessBoundWarning
from nwbound.diagnostics import AdviceContext, warn_if_contradicting
from nwbound.metrics import bayes_decision
from nwbound.spaces import contradicting_rows, intersect_intervals, kappa_weighted_proba, project_into_box


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


def _old_intersection(parts):
    """The intersection as reported before contradicting rows got the hull (the code of commit
    99f832d, copied): ``(proba, lower, upper, epsilon)``."""
    mean = kappa_weighted_proba([v.proba for v in parts], [v.kappa for v in parts])
    lower = np.max([v.lower for v in parts], axis=0)
    upper = np.maximum(np.min([v.upper for v in parts], axis=0), lower)
    proba, feasible = project_into_box(mean, lower, upper)
    widen = ~feasible[:, None]
    lower = np.where(widen, np.minimum(lower, mean), lower)
    upper = np.where(widen, np.maximum(upper, mean), upper)
    vacuous = np.logical_and.reduce([v.vacuous for v in parts])
    epsilon = np.clip(np.maximum(upper - proba, proba - lower), 0.0, 1.0)
    epsilon[vacuous] = 1.0
    return proba, lower, upper, epsilon


def _slow_row(parts, i):
    """One row by loops over models and classes: ``(contradicts, lower, upper, mean)`` — the
    intersection where every class's intervals meet and it holds a distribution, else the hull."""
    C = parts[0].proba.shape[1]
    lo_max = [max(float(v.lower[i, c]) for v in parts) for c in range(C)]
    up_min = [min(float(v.upper[i, c]) for v in parts) for c in range(C)]
    apart = any(lo_max[c] > up_min[c] + 1e-12 for c in range(C))
    up_int = [max(up_min[c], lo_max[c]) for c in range(C)]
    contradicts = apart or sum(lo_max) > 1 + 1e-9 or sum(up_int) < 1 - 1e-9
    if contradicts:
        lo = [min(float(v.lower[i, c]) for v in parts) for c in range(C)]
        up = [max(float(v.upper[i, c]) for v in parts) for c in range(C)]
    else:
        lo, up = lo_max, up_int
    kap = [float(v.kappa[i]) for v in parts]
    w = [k / sum(kap) for k in kap] if sum(kap) > 0 else [1 / len(parts)] * len(parts)
    mean = [sum(w[k] * float(parts[k].proba[i, c]) for k in range(len(parts))) for c in range(C)]
    return contradicts, np.array(lo), np.array(up), np.array(mean)


@pytest.mark.parametrize("C, K", [(2, 2), (3, 5), (5, 3), (10, 5)])
def test_intersection_puts_proba_in_the_box_and_never_widens_a_class_it_moved(C, K):
    rng = np.random.default_rng(10 * C + K)
    _, parts = _models(500, C, K, rng)
    iv = intersect_intervals(*parts)
    mean = kappa_weighted_proba([v.proba for v in parts], [v.kappa for v in parts])
    contra = contradicting_rows(parts)
    lower = np.max([v.lower for v in parts], axis=0)
    upper = np.maximum(np.min([v.upper for v in parts], axis=0), lower)
    outside = np.any((mean < lower) | (mean > upper), axis=1)
    assert (outside & ~contra).sum() >= 20 and contra.sum() >= 1  # both cases occur here
    # every row, by the slow formula: the intersection or (contradicting rows) the hull, proba its projection
    for i in range(500):
        contradicts, lo, up, m = _slow_row(parts, i)
        assert contradicts == contra[i]
        np.testing.assert_array_equal(iv.lower[i], lo)
        np.testing.assert_array_equal(iv.upper[i], up)
        np.testing.assert_allclose(iv.proba[i], _slow_projection(m, lo, up), atol=1e-12)
        if contradicts:  # the weighted mean lies in the hull: kept
            np.testing.assert_allclose(iv.proba[i], m, atol=1e-12)
    assert np.all(iv.lower <= iv.proba) and np.all(iv.proba <= iv.upper)
    np.testing.assert_allclose(iv.proba.sum(axis=1), 1.0, atol=1e-12)
    # the hull holds every model's interval; elsewhere the rows are those of the previous code, bit for bit
    for v in parts:
        assert np.all(iv.lower[contra] <= v.lower[contra]) and np.all(v.upper[contra] <= iv.upper[contra])
    old = _old_intersection(parts)
    for new, was in zip((iv.proba, iv.lower, iv.upper, iv.epsilon), old):
        np.testing.assert_array_equal(new[~contra], was[~contra])
    assert np.all(old[1][contra] >= iv.lower[contra]) and np.all(old[2][contra] <= iv.upper[contra])  # a superset
    # ε: the interval's half-width about proba; at most the width; no larger than the old ε where
    # the mean lay outside that class's interval (and the same where it did not move).
    old_eps = np.clip(np.maximum(upper - mean, mean - lower), 0, 1)
    vac = np.logical_and.reduce([v.vacuous for v in parts])
    eps = iv.epsilon[~vac]
    np.testing.assert_array_equal(eps, np.maximum(iv.upper - iv.proba, iv.proba - iv.lower)[~vac])
    assert np.all(iv.epsilon[vac] == 1.0)
    assert np.all(eps <= (iv.upper - iv.lower)[~vac] + 1e-15)
    kept_rows = ~vac & ~contra
    moved_class = ((mean < lower) | (mean > upper))[kept_rows]
    assert np.all(iv.epsilon[kept_rows][moved_class] <= old_eps[kept_rows][moved_class] + 1e-15)
    kept = ~outside[kept_rows]
    np.testing.assert_allclose(iv.epsilon[kept_rows][kept], old_eps[kept_rows][kept], atol=1e-15)
    # a class the box certifies is the argmax of proba (it need not be the argmax of the mean)
    top = np.argmax(iv.lower, axis=1)
    others = np.where(np.eye(C, dtype=bool)[top], -np.inf, iv.upper).max(axis=1)
    sure = iv.lower[np.arange(len(top)), top] > others
    assert np.array_equal(np.argmax(iv.proba, axis=1)[sure], top[sure])
    assert np.array_equal(iv.certified, iv.certified & ~vac)
    # a hull row is certified only where every model certifies the same class
    pred = np.argmax(iv.proba, axis=1)
    rows = np.arange(500)
    each = np.stack([v.lower[rows, pred] > np.where(np.eye(C, dtype=bool)[pred], -np.inf, v.upper).max(axis=1)
                     for v in parts])
    assert np.all(each.all(axis=0)[contra & iv.certified])
    # the account: sums, the parts of the model whose end is the reported far end (entry by entry; the
    # least-ε model where no model's end is it), the largest-κ model's bandwidth
    np.testing.assert_allclose(iv.kappa, np.sum([v.kappa for v in parts], axis=0))
    source = np.argmin([v.epsilon for v in parts], axis=0)
    for i, c in np.ndindex(500, C):
        far_upper = iv.upper[i, c] - iv.proba[i, c] >= iv.proba[i, c] - iv.lower[i, c]
        end = iv.upper[i, c] if far_upper else iv.lower[i, c]
        owners = [k for k, v in enumerate(parts) if (v.upper[i, c] if far_upper else v.lower[i, c]) == end]
        source[i, c] = owners[0] if owners else source[i, c]
    assert (source != np.argmin([v.epsilon for v in parts], axis=0)).any()  # the rule matters here
    np.testing.assert_array_equal(iv.bias, np.stack([v.bias for v in parts])[source, np.arange(500)[:, None], np.arange(C)])
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
    # the reported proba lies in the box (the κ-weighted mean need not: bayes_decision refused it)
    assert not np.any((iv.proba < iv.lower) | (iv.proba > iv.upper))
    prior = np.bincount(y) / y.size
    d = bayes_decision(iv.proba, train_prior=prior, target_prior=[0.5, 0.5], lower=iv.lower, upper=iv.upper)
    assert d.y_pred.shape == (Q.shape[0],)
    np.testing.assert_array_equal(bayes_decision(iv.proba, lower=iv.lower, upper=iv.upper).y_pred,
                                  np.argmax(iv.proba, axis=1))
    np.testing.assert_array_equal(clf.predict_proba(Q), iv.proba)


def test_contradicting_rows_by_the_definition_and_bad_input():
    def iv(lo, up):
        lo, up = np.atleast_2d(lo), np.atleast_2d(up)
        return _interval((lo + up) / 2, lo, up, np.ones(lo.shape[0]))

    a = iv([[0.7, 0.1], [0.5, 0.3], [0.5, 0.2], [0.6, 0.3]], [[0.9, 0.3], [0.7, 0.5], [0.5, 0.2], [0.7, 0.4]])
    b = iv([[0.5, 0.2], [0.7, 0.1], [0.3, 0.1], [0.1, 0.1]], [[0.6, 0.5], [0.9, 0.3], [0.6, 0.3], [0.9, 0.9]])
    # row 0: class 0's [0.7, 0.9] and [0.5, 0.6] do not meet; row 1: they touch at 0.7 (and class 1 at 0.3):
    # they meet; row 2: [0.5, 0.5] ∩ [0.3, 0.6] meets, but Σ upper = 0.5 + 0.2 < 1; row 3: meets, holds 0.65/0.35.
    assert contradicting_rows([a, b]).tolist() == [True, False, True, False]
    assert contradicting_rows([b, a]).tolist() == [True, False, True, False]
    assert contradicting_rows([a]).tolist() == [False, False, True, False]  # one box can hold no distribution
    touching = iv([[0.7 + 1e-15, 0.3]], [[0.9, 0.3]])  # meets [0.5, 0.7] up to rounding
    assert contradicting_rows([touching, iv([[0.5, 0.3]], [[0.7, 0.5]])]).tolist() == [False]
    with pytest.raises(TypeError, match="PredictionInterval"):
        contradicting_rows([])
    with pytest.raises(TypeError, match="PredictionInterval"):
        contradicting_rows([a, a.proba])


def test_contradicting_rows_report_the_hull_which_holds_p_where_the_old_box_did_not():
    """Known p; K = 5 models whose labels carry a bias of up to 0.2·|e_k − p| per class, in a direction
    e_k of their own (as models in different learned spaces), and whose intervals account for no bias
    at all (L far too small): Hoeffding at δ/K over the C classes only. The models contradict each
    other on far more than δ of the queries. There the reported box (the hull) must hold p on at
    least 1 − δ of them; the previous code's box ([lower, lower] where a class's intervals did not
    meet, widened to hold p̄) held it on almost none (measured: 0.2 %)."""
    rng = np.random.default_rng(0)
    n, C, K, delta, t = 3000, 3, 5, 0.05, 0.2
    p = rng.dirichlet(np.ones(C), size=n)
    parts = []
    for _ in range(K):
        n_k = int(rng.integers(200, 800))
        r = (1 - t) * p + t * rng.dirichlet(np.ones(C), size=n)
        ph = rng.multinomial(n_k, r) / n_k
        eps = np.sqrt(np.log(2 * C * K / delta) / (2 * n_k))
        parts.append(_interval(ph, np.clip(ph - eps, 0, 1), np.clip(ph + eps, 0, 1), np.full(n, float(n_k))))
    iv = intersect_intervals(*parts)
    contra = contradicting_rows(parts)
    assert contra.mean() > 2 * delta  # the assumption visibly fails
    missed = np.any([np.any((v.lower > p) | (v.upper < p), axis=1) for v in parts], axis=0)
    assert np.all(missed[contra])  # label-free proof: some model's interval missed p on every such row
    held = np.all((iv.lower <= p) & (p <= iv.upper), axis=1)
    _, old_lower, old_upper, _ = _old_intersection(parts)
    held_old = np.all((old_lower <= p) & (p <= old_upper), axis=1)
    assert held[contra].mean() >= 1 - delta, held[contra].mean()
    assert held_old[contra].mean() < 0.05, held_old[contra].mean()
    np.testing.assert_array_equal(held[~contra], held_old[~contra])  # elsewhere: the same boxes
    # certificates on those rows need every model to agree; the ones left name the most probable class
    sure = contra & iv.certified
    assert iv.certified[contra].mean() < iv.certified[~contra].mean()
    assert np.all(np.argmax(p[sure & held], axis=1) == np.argmax(iv.proba[sure & held], axis=1))


def _lda_breast_cancer(lipschitz, metric_fraction, Xt, yt):
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    return NadarayaWatsonClassifier(metric=LinearDiscriminantAnalysis(), cross_fit=True, lipschitz=lipschitz,
                                    bandwidth=1.0, metric_fraction=metric_fraction).fit(Xt, yt)


def test_the_warning_fires_exactly_when_more_than_delta_of_the_queries_contradict():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert warn_if_contradicting(np.r_[np.ones(5, bool), np.zeros(95, bool)], delta=0.05) == 0.05  # = δ: allowed
        assert warn_if_contradicting(np.r_[np.ones(6, bool), np.zeros(94, bool)], delta=0.05) == 0.06
        assert warn_if_contradicting(np.zeros(0, bool), delta=0.05) == 0.0
        warn_if_contradicting(np.r_[np.ones(6, bool), np.zeros(94, bool)], delta=0.05, allowed=0.15)  # per_class
        warn_if_contradicting(np.r_[np.ones(6, bool), np.zeros(14, bool)], delta=0.05, assumption="margin",
                              context=AdviceContext(interface="cli", lipschitz_auto=True))
    assert [w.category for w in caught] == [ContradictingModelsWarning] * 2
    assert str(caught[0].message).startswith("6.0 % of the queries (6 of 100): the cross-fitted models' intervals "
                                             "contradict each other (more than δ = 0.05 allows")
    assert "a larger L (lipschitz=)" in str(caught[0].message)
    assert "30.0 % of the queries (6 of 20)" in str(caught[1].message)
    assert "a smaller margin γ (--margin)" in str(caught[1].message)
    for bad, match in (({"delta": 0.0}, "delta"), ({"delta": 0.05, "allowed": 1.5}, "allowed"),
                       ({"delta": 0.05, "assumption": "L"}, "assumption")):
        with pytest.raises(ValueError, match=match):
            warn_if_contradicting(np.zeros(3, bool), **bad)
    # the estimator: predict_interval warns where the share of its queries that contradict exceeds δ,
    # predict_proba and predict never (measured on these settings: 37 and 0 of 269: far from δ's 13.45)
    X, y, Q = _breast_cancer()
    seen = []
    for lipschitz, fraction in ((0.001, 0.2), (0.3, 0.4)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = _lda_breast_cancer(lipschitz, fraction, X, y)
            parts = [m.predict_interval(Q) for m in clf.cross_fit_models_]
        share = contradicting_rows(parts).mean()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            iv = clf.predict_interval(Q)
        warned = [w for w in caught if w.category is ContradictingModelsWarning]
        assert len(warned) == int(share > clf.delta), (lipschitz, share)
        if warned:
            assert f"{100 * share:.1f} % of the queries ({round(share * Q.shape[0])} of {Q.shape[0]})" in str(warned[0].message)
            assert warned[0].filename == __file__  # points at the user's line
        seen.append(share > clf.delta)
        contra = contradicting_rows(parts)
        np.testing.assert_array_equal(iv.lower[contra], np.min([v.lower for v in parts], axis=0)[contra])
        with warnings.catch_warnings():
            warnings.simplefilter("error", ContradictingModelsWarning)
            np.testing.assert_array_equal(clf.predict_proba(Q), iv.proba)
            clf.predict(Q)
            clf.score(Q[:50], np.zeros(50, int))
    assert seen == [True, False]
