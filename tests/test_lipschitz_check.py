"""The held-out check of an assumed Lipschitz constant (nwbound.lipschitz_check)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from nwbound import DyadicClassifier, NadarayaWatsonClassifier, PredictionInterval
from nwbound.assumptions import LipschitzCheck, LipschitzSelection, check_lipschitz, select_lipschitz
from nwbound.datasets import make_lipschitz_logistic, make_margin_clusters
from nwbound.lipschitz_check import _dominating_tests, poisson_binomial_sf


# ---------------------------------------------------------------------------
# independent slow formulas
# ---------------------------------------------------------------------------


def _exact_sf(probs: list[Fraction], k: int) -> Fraction:
    """P(Σ Bernoulli(p_i) ≥ k) by enumerating all 2^n outcomes, in exact fractions."""
    total = Fraction(0)
    for outcome in itertools.product((0, 1), repeat=len(probs)):
        if sum(outcome) >= k:
            term = Fraction(1)
            for z, p in zip(outcome, probs):
                term *= p if z else 1 - p
            total += term
    return total


def _worst_case_tail(ceilings: list[Fraction], observed: int, free: int) -> Fraction:
    """sup over every set F of at most ``free`` rows (which err surely) of P(count ≥ observed)."""
    n = len(ceilings)
    best = Fraction(0)
    for size in range(min(free, n) + 1):
        for failed in itertools.combinations(range(n), size):
            rest = [c for i, c in enumerate(ceilings) if i not in failed]
            best = max(best, _exact_sf(rest, observed - size))
    return best


# ---------------------------------------------------------------------------
# Poisson-binomial tails
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_poisson_binomial_sf_matches_enumeration(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 11))
    probs = [Fraction(int(v), 64) for v in rng.integers(0, 65, size=n)]  # exact in float64
    got = poisson_binomial_sf(np.array([float(p) for p in probs]), np.arange(-1, n + 3))
    for k, value in zip(range(-1, n + 3), got):
        assert value == pytest.approx(float(_exact_sf(probs, k)), abs=1e-13)


def test_poisson_binomial_sf_large_n_against_binomial():
    from scipy.stats import binom

    p = np.full(5000, 0.03)  # all equal: a binomial, whose tail scipy computes independently
    k = np.array([100, 150, 180, 200, 250])
    assert np.allclose(poisson_binomial_sf(p, k), binom.sf(k - 1, 5000, 0.03), rtol=1e-9, atol=1e-13)


def test_poisson_binomial_sf_bad_input():
    with pytest.raises(ValueError, match="probabilities in \\[0, 1\\]"):
        poisson_binomial_sf([0.5, 1.5], 1)
    with pytest.raises(ValueError, match="one-dimensional"):
        poisson_binomial_sf([[0.5]], 1)
    with pytest.raises(ValueError, match="integer"):
        poisson_binomial_sf([0.5], 0.5)


@pytest.mark.parametrize("seed", range(5))
def test_allowance_is_the_exact_worst_case(seed):
    """m′ + PB(all but the m′ smallest ceilings) is the sup over which ≤ m rows fail."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 8))
    free = int(rng.integers(0, 3))
    ceilings = [Fraction(int(v), 32) for v in rng.integers(0, 33, size=n)]
    rows = np.ones((n + 3, n), dtype=bool)
    observed = np.arange(-1, n + 2)
    p_value, threshold, expected = _dominating_tests(
        np.tile([float(c) for c in ceilings], (n + 3, 1)), rows, observed, free, 0.1
    )
    for obs, p in zip(observed, p_value):
        assert p == pytest.approx(float(_worst_case_tail(ceilings, int(obs), free)), abs=1e-13)
    # threshold: the smallest t whose exceedance probability is ≤ the level
    t = int(threshold[0])
    assert float(_worst_case_tail(ceilings, t + 1, free)) <= 0.1 + 1e-13
    assert t == 0 or float(_worst_case_tail(ceilings, t, free)) > 0.1
    assert expected[0] == pytest.approx(float(sum(ceilings)))


def test_allowance_on_a_subset_of_rows():
    ceilings = np.array([[0.1, 0.9, 0.5, 0.2]])
    rows = np.array([[True, False, True, True]])
    p_value, _, expected = _dominating_tests(ceilings, rows, np.array([2]), 1, 0.05)
    exact = _worst_case_tail([Fraction(1, 10), Fraction(1, 2), Fraction(1, 5)], 2, 1)
    assert p_value[0] == pytest.approx(float(exact), abs=1e-13)
    assert expected[0] == pytest.approx(0.8)


# ---------------------------------------------------------------------------
# a model whose intervals are exact (known p), to check the level sharply
# ---------------------------------------------------------------------------


class _ExactIntervals(BaseEstimator):
    """Stands for a fitted classifier whose every interval is ``[p, p]`` (or wrong on chosen rows)."""

    def __init__(self, proba, classes=(0, 1)):
        self.proba = np.asarray(proba, dtype=np.float64)
        self.classes_ = np.asarray(classes)
        self.beta_ = 1.0
        self.delta = 0.05

    def get_params(self, deep=True):
        return {"lipschitz": 1.0, "margin": None, "delta": self.delta}

    def fit(self, X, y):  # never called; scikit-learn's check_is_fitted wants an estimator
        raise NotImplementedError

    def __sklearn_is_fitted__(self):
        return True

    def predict_interval(self, X, bounds=None):
        p = self.proba[np.asarray(X, dtype=np.intp)[:, 0]]
        n = p.shape[0]
        iv = PredictionInterval(
            proba=p, lower=p, upper=p, epsilon=np.zeros_like(p), bias=np.zeros_like(p),
            sampling=np.zeros_like(p), kappa=np.ones(n), n_eff=np.ones(n), vacuous=np.zeros(n, dtype=bool),
            bandwidth=np.ones(n),
        )
        return {name: iv for name in bounds}


def test_tests_that_cannot_reject_take_no_share_of_the_level():
    n = 50
    model = _ExactIntervals(np.column_stack([np.zeros(n), np.ones(n)]))  # p_1 = 1 everywhere, known exactly
    X = np.arange(n)[:, None]
    check = check_lipschitz(model, X, np.ones(n, dtype=int), lipschitz=1.0, free_share=0.0, contrast=False)
    used = {t["test"]: t["used"] for t in check.tests}
    # "too many 1s" where every ceiling is 1, and the empty "not predicted 1" group, cannot reject
    assert used == {
        "certified rows: errors": True,
        "class 1 in rows predicted 1: too many": False,
        "class 1 in rows predicted 1: too few": True,
        "class 1 in rows not predicted 1: too many": False,
        "class 1 in rows not predicted 1: too few": False,
    }
    assert not check.rejected and check.p_value == 1.0
    y = np.ones(n, dtype=int)
    y[0] = 0  # impossible under p_1 = 1: one error among certified rows
    check = check_lipschitz(model, X, y, lipschitz=1.0, free_share=0.0, contrast=False)
    assert check.rejected and check.p_value == 0.0
    assert set(check.rejected_by) == {"certified rows: errors", "class 1 in rows predicted 1: too few"}
    assert "not used" in str(check)


@pytest.mark.slow
def test_level_with_exact_intervals():
    """Ceilings equal to the truth: the count tests reject at most alpha − beta of the time."""
    rng = np.random.default_rng(0)
    n = 300
    p1 = rng.uniform(0.0, 1.0, size=n)
    model = _ExactIntervals(np.column_stack([1 - p1, p1]))
    X = np.arange(n)[:, None]
    draws = 600
    rejections = 0
    for _ in range(draws):
        y = (rng.uniform(size=n) < p1).astype(int)
        rejections += check_lipschitz(model, X, y, lipschitz=1.0, free_share=0.0, contrast=False).rejected
    rate = rejections / draws
    # level alpha − beta = 0.025 when no interval fails; 3 standard errors of slack
    assert rate <= 0.025 + 3 * np.sqrt(0.025 * 0.975 / draws)
    assert rate > 0  # not vacuous: the tails are exact, so some draws do reject


@pytest.mark.slow
def test_level_when_the_allowed_rows_fail_adversarially():
    """m rows whose intervals fail and which always err: still at most alpha − beta."""
    rng = np.random.default_rng(1)
    n = 300
    p1 = rng.uniform(0.5, 1.0, size=n)  # class 1 predicted everywhere; ceilings 1 − p1
    model = _ExactIntervals(np.column_stack([1 - p1, p1]))
    X = np.arange(n)[:, None]
    free = int(np.floor(0.02 * n))  # check_lipschitz(free_share=0.02) below
    worst = np.argsort(1 - p1)[:free]  # the rows where a sure error costs most
    truth = p1.copy()
    truth[worst] = 0.0
    draws = 400
    rejections = 0
    for _ in range(draws):
        y = (rng.uniform(size=n) < truth).astype(int)
        rejections += check_lipschitz(
            model, X, y, lipschitz=1.0, per_class=False, free_share=0.02, contrast=False
        ).rejected
    assert rejections / draws <= 0.025 + 3 * np.sqrt(0.025 * 0.975 / draws)


# ---------------------------------------------------------------------------
# on real classifiers
# ---------------------------------------------------------------------------


def _field(seed, n=3000):
    data = make_lipschitz_logistic(n, lipschitz=0.5, n_features=1, scale="box", random_state=seed)
    cut = 2 * n // 3
    return data, data.X[:cut], data.y[:cut], data.X[cut:], data.y[cut:]


@pytest.mark.slow
def test_level_on_a_known_field_at_the_true_lipschitz():
    rejections = 0
    draws = 10
    for seed in range(draws):
        data, Xf, yf, Xh, yh = _field(100 + seed, n=1600)
        clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=data.lipschitz, bound="hoeffding").fit(Xf, yf)
        rejections += check_lipschitz(clf, Xh[:600], yh[:600]).rejected
    assert rejections <= 2  # expected ≤ 0.05 · 10; the bound is conservative, so usually 0


@pytest.mark.parametrize("seed", [1, 2])
def test_power_far_below_the_true_lipschitz(seed):
    data, Xf, yf, Xh, yh = _field(seed)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=data.lipschitz).fit(Xf, yf)
    low, true = check_lipschitz(clf, Xh, yh, lipschitz=[data.lipschitz / 20, data.lipschitz])
    assert low.rejected and low.rejected_by
    assert not true.rejected and true.rejected_by == ()
    assert isinstance(low, LipschitzCheck)
    assert "not a certified fact" in str(low)


def test_sequence_matches_single_values():
    data, Xf, yf, Xh, yh = _field(3)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=data.lipschitz, bound="hoeffding").fit(Xf, yf)
    both = check_lipschitz(clf, Xh, yh, lipschitz=[1.0, 10.0])
    for value, check in zip([1.0, 10.0], both):
        single = check_lipschitz(clf, Xh, yh, lipschitz=value)
        assert single == check
    own = check_lipschitz(clf, Xh, yh)
    assert own == both[1]
    # the bookkeeping agrees with the intervals
    iv = clf.predict_interval(Xh)
    assert own.n_certified == int(iv.certified.sum())
    top = clf.classes_[iv.predicted_index]
    assert own.errors_certified == int(np.sum((top != yh) & iv.certified))
    assert own.allowance == int(np.floor(0.002 * Xh.shape[0]))
    assert own.delta == pytest.approx(own.beta * (own.allowance + 1) / Xh.shape[0])
    assert own.alpha == 0.05 and own.beta == 0.025


def test_certified_at_the_test_level():
    data, Xf, yf, Xh, yh = _field(3)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=data.lipschitz, bound="hoeffding").fit(Xf, yf)
    at_model = check_lipschitz(clf, Xh, yh, lipschitz=2.0)
    at_test = check_lipschitz(clf, Xh, yh, lipschitz=2.0, certified_at="test")
    setting = {"lipschitz": 2.0, "delta": at_test.delta, "coverage": "simultaneous"}
    iv = clf.predict_interval(Xh, bounds={0: setting})[0]
    assert at_test.n_certified == int(iv.certified.sum()) <= at_model.n_certified
    assert at_test.model_delta == at_test.delta
    for a, b in zip(at_test.tests[1:], at_model.tests[1:]):  # the class counts do not depend on it
        assert a["p_value"] == pytest.approx(b["p_value"], abs=1e-12)
        assert {k: v for k, v in a.items() if k != "p_value"} == {k: v for k, v in b.items() if k != "p_value"}
    with pytest.raises(ValueError, match="certified_at"):
        check_lipschitz(clf, Xh, yh, certified_at="own")


def test_bandwidth_pinned_for_every_lipschitz():
    data, Xf, yf, Xh, yh = _field(7, n=2400)
    clf = NadarayaWatsonClassifier(metric=None, 
        bandwidth="auto", bandwidth_grid=[0.05, 0.1, 0.2, 0.4], lipschitz=data.lipschitz, bound="hoeffding"
    ).fit(Xf, yf)
    grid = [0.5, 2.0, 10.0, 40.0]
    pinned = check_lipschitz(clf, Xh, yh, lipschitz=grid, bandwidth_at=data.lipschitz)
    # the bandwidth chosen at L0 for every L: p̂, hence every group, is the same; ceilings only grow
    for test in range(1, len(pinned[0].tests)):  # 0 counts the certified rows, which shrink
        assert len({c.tests[test]["rows"] for c in pinned}) == 1
        sums = [c.tests[test]["expected"] for c in pinned]
        assert sums == sorted(sums)
    counts = [c.n_certified for c in pinned]
    assert counts == sorted(counts, reverse=True)
    # at L0 itself the pinned choice is the model's own
    own = check_lipschitz(clf, Xh, yh, lipschitz=data.lipschitz)
    assert check_lipschitz(clf, Xh, yh, lipschitz=data.lipschitz, bandwidth_at=data.lipschitz) == own
    # a fixed bandwidth ignores it
    fixed = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=data.lipschitz, bound="hoeffding").fit(Xf, yf)
    assert check_lipschitz(fixed, Xh, yh, bandwidth_at=1.0) == check_lipschitz(fixed, Xh, yh)
    with pytest.raises(ValueError, match="bandwidth_at"):
        check_lipschitz(clf, Xh, yh, bandwidth_at=-1.0)


def test_selection_picks_the_smallest_value_above_every_rejection():
    data, Xf, yf, Xh, yh = _field(1)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=data.lipschitz, bound="hoeffding").fit(Xf, yf)
    grid = [20.0, 0.5, 1.0, 2.0, 5.0, 10.0, 0.5]
    sel = select_lipschitz(clf, Xh, yh, grid)
    assert isinstance(sel, LipschitzSelection)
    assert sel.grid == (0.5, 1.0, 2.0, 5.0, 10.0, 20.0)
    rejected = [c.rejected for c in sel.checks]
    assert rejected[0] and not rejected[-1]
    last = max(i for i, r in enumerate(rejected) if r)
    assert sel.chosen == sel.grid[last + 1] and not sel.all_rejected
    assert [row["chosen"] for row in sel.table()].count(True) == 1
    assert "chosen" in str(sel)
    # monotone: a grid that adds values cannot lower the choice below a rejected value
    finer = select_lipschitz(clf, Xh, yh, [0.25, 0.5, 0.75, 1.0, 20.0])
    assert finer.chosen >= min(L for L, r in zip(sel.grid, rejected) if r)


def test_all_rejected_says_so():
    data, Xf, yf, Xh, yh = _field(1)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=data.lipschitz, bound="hoeffding").fit(Xf, yf)
    with pytest.warns(UserWarning, match="Every L on the grid"):
        sel = select_lipschitz(clf, Xh, yh, [0.1, 0.3])
    assert sel.chosen is None and sel.all_rejected
    assert "no L chosen" in str(sel)


def test_other_classifiers_and_margin_models():
    data, Xf, yf, Xh, yh = _field(4)
    for clf in (
        NadarayaWatsonClassifier(metric=None, bandwidth="scale", n_neighbors=50, lipschitz=data.lipschitz),
        DyadicClassifier(metric=None, resolution=4, lipschitz=data.lipschitz),
    ):
        clf.fit(Xf, yf)
        low, true = check_lipschitz(clf, Xh, yh, lipschitz=[0.2, data.lipschitz])
        assert not true.rejected
        assert low.lipschitz == 0.2
    clusters = make_margin_clusters(900, n_classes=3, random_state=0)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.1, margin=clusters.margin).fit(clusters.X[:600], clusters.y[:600])
    check = check_lipschitz(clf, clusters.X[600:], clusters.y[600:])
    assert check.margin == clusters.margin and check.lipschitz is None
    assert not check.rejected
    assert len(check.tests) == 1 + 4 * 3  # certified rows, then 2 groups × 2 sides per class
    assert "γ =" in str(check)
    assert "13 more tests, none rejected" in str(check)  # a long list is summarised


def test_the_default_cross_fitted_model_checks_its_own_assumption():
    """check_lipschitz(model, X, y) on a cross-fitted model (as the defaults are) used to raise from bound_spec_
    (no single beta_); it now tests each model's own L, and the counts are those of the model's own
    intervals (recounted here from predict_interval)."""
    data, Xf, yf, Xh, yh = _field(5, n=600)
    model = NadarayaWatsonClassifier(n_neighbors=20, cross_fit=True).fit(Xf, yf)  # 2 models: faster than 5
    assert len(model.cross_fit_models_) > 1
    check = check_lipschitz(model, Xh, yh)
    assert check.lipschitz == model.lipschitz_ == max(m.lipschitz_ for m in model.cross_fit_models_)
    own = model.predict_interval(Xh)
    certified = np.asarray(own.certified, dtype=bool)
    assert check.n_certified == int(certified.sum()) and check.n_rows == Xh.shape[0]
    assert check.errors_certified == int(np.count_nonzero((model.predict(Xh) != yh) & certified))
    assert not any(t["kind"] == "contrast" for t in check.tests)  # no single space to match rows in
    with pytest.warns(UserWarning, match="learned space"):  # a margin in the learned space's units
        margin = NadarayaWatsonClassifier(n_neighbors=20, cross_fit=True, margin=0.05).fit(Xf, yf)
    assert check_lipschitz(margin, Xh, yh).margin == 0.05


def test_bad_input():
    data, Xf, yf, Xh, yh = _field(5, n=2400)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=data.lipschitz, bound="hoeffding").fit(Xf, yf)
    with pytest.raises(ValueError, match="X has 800 rows but y has 799"):
        check_lipschitz(clf, Xh, yh[:-1])
    with pytest.raises(NotFittedError):
        check_lipschitz(NadarayaWatsonClassifier(metric=None, bandwidth="scale", lipschitz=1.0), Xh, yh)
    with pytest.raises(TypeError, match="bounded classifier"):
        check_lipschitz(object(), Xh, yh)
    for alpha in (0, 1, 1.5, -0.1, "0.05"):
        with pytest.raises(ValueError, match="alpha"):
            check_lipschitz(clf, Xh, yh, alpha=alpha)
    with pytest.raises(ValueError, match="beta"):
        check_lipschitz(clf, Xh, yh, alpha=0.05, beta=0.05)
    for share in (-0.1, 1.0):
        with pytest.raises(ValueError, match="free_share"):
            check_lipschitz(clf, Xh, yh, free_share=share)
    bad = yh.copy()
    bad[0] = 7
    with pytest.raises(ValueError, match="labels the model never saw.*7"):
        check_lipschitz(clf, Xh, bad)
    for value in (0.0, -1.0, float("nan"), [], [1.0, -2.0], "auto"):
        with pytest.raises(ValueError, match="lipschitz"):
            check_lipschitz(clf, Xh, yh, lipschitz=value)
    with pytest.raises(ValueError, match="grid"):
        select_lipschitz(clf, Xh, yh, 1.0)
    with pytest.raises(ValueError, match="empty"):
        select_lipschitz(clf, Xh, yh, [])
    with pytest.raises(ValueError, match="empty"):
        check_lipschitz(clf, Xh[:0], yh[:0])
    no_assumption = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.3).fit(Xf, yf)
    with pytest.raises(ValueError, match="no assumption to check"):
        check_lipschitz(no_assumption, Xh, yh)
    assert not check_lipschitz(no_assumption, Xh, yh, lipschitz=data.lipschitz).rejected


def test_string_labels():
    data, Xf, yf, Xh, yh = _field(6, n=2400)
    names = np.array(["neg", "pos"])
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=data.lipschitz, bound="hoeffding").fit(Xf, names[yf])
    check = check_lipschitz(clf, Xh, names[yh])
    assert check.n_rows == 800 and not check.rejected
    assert any("'pos'" in t["test"] for t in check.tests)


# ---------------------------------------------------------------------------
# contrast tests: labels at the two ends of p̂_c against what L allows
# ---------------------------------------------------------------------------


def _slow_contrast(z, proba_c, labels, c, share, lipschitz):
    """Independent slow formula for one contrast test: (n_terms, mean bound, observed), with the
    matching found by trying every permutation (small k only)."""
    n = len(z)
    k = int(np.floor(share * n))
    order = sorted(range(n), key=lambda j: (-proba_c[j], j))
    high, low = order[:k], order[n - k:]
    best = min(
        itertools.permutations(range(k)),
        key=lambda perm: sum(abs(z[high[i]] - z[low[perm[i]]]) for i in range(k)),
    )
    mean_bound = k + sum(min(1.0, lipschitz * abs(z[high[i]] - z[low[best[i]]])) for i in range(k))
    observed = sum(labels[j] == c for j in high) + sum(labels[j] != c for j in low)
    return 2 * k, mean_bound, observed


def _sup_tail_given_mean(n_terms, mean_bound, s, rng, tries=60):
    """A lower estimate of sup P(Σ Bernoulli(p_i) ≥ s) over p with Σ p_i ≤ mean_bound: tails by
    enumeration at random and extreme feasible p (equal p_i; p_i ∈ {0, 1} but one)."""
    candidates = [[mean_bound / n_terms] * n_terms]
    whole = int(np.floor(mean_bound))
    candidates.append([1.0] * whole + [mean_bound - whole] + [0.0] * (n_terms - whole - 1))
    for _ in range(tries):
        raw = rng.dirichlet(np.ones(n_terms)) * mean_bound
        if raw.max() <= 1.0:
            candidates.append(raw.tolist())
    return max(float(_exact_sf(p, s)) for p in candidates)


@pytest.mark.parametrize("seed", range(3))
def test_contrast_tail_bound_is_valid(seed):
    """The p-value bounds the tail of every Poisson-binomial with the allowed mean (exact enumeration)."""
    from nwbound.lipschitz_check import _mean_bounded_sf

    rng = np.random.default_rng(seed)
    n_terms = 7
    mean_bound = float(rng.uniform(1.0, 5.5))
    for s in range(n_terms + 1):
        bound = float(_mean_bounded_sf(np.array([n_terms]), np.array([mean_bound]), np.array([s]))[0])
        assert bound >= _sup_tail_given_mean(n_terms, mean_bound, s, rng) - 1e-12
    # and it is not vacuous: all 8 terms at mean 2 is rare
    assert _mean_bounded_sf(np.array([8]), np.array([2.0]), np.array([8]))[0] < 1e-4


def test_contrast_strata_against_a_slow_formula():
    from nwbound.lipschitz_check import _contrast_strata, _contrast_tests

    rng = np.random.default_rng(5)
    n = 24
    z = rng.uniform(0, 1, n)
    proba = np.column_stack([1 - z**2, z**2]) + rng.normal(0, 0.05, (n, 2))
    labels = (rng.uniform(size=n) < z).astype(int)
    strata = _contrast_strata(z[:, None], proba, [1])
    assert [s["share"] for s in strata] == [0.1, 0.3]
    for lipschitz in (0.3, 2.0):
        n_terms, mean_bound, observed, _ = _contrast_tests(strata, labels, lipschitz)
        for i, share in enumerate((0.1, 0.3)):
            slow = _slow_contrast(z, proba[:, 1], labels, 1, share, lipschitz)
            assert (n_terms[i], observed[i]) == (slow[0], slow[2])
            assert slow[1] <= mean_bound[i] <= slow[1] * (1 + 1e-8)  # rounding allowance: never below


def test_contrast_strata_of_capped_shares_share_one_matching(monkeypatch):
    """From 4 000 held-out rows on, both shares are capped at CONTRAST_MAX_PAIRS pairs: the same ends
    of p̂, matched once per class (the assignment is O(k³)), each share's stratum as before."""
    from scipy.optimize import linear_sum_assignment
    from scipy.spatial.distance import cdist

    import nwbound.lipschitz_check._contrast as contrast

    calls = []
    monkeypatch.setattr(contrast, "linear_sum_assignment", lambda d: calls.append(d.shape) or linear_sum_assignment(d))
    rng = np.random.default_rng(3)
    n = 4000
    Z = rng.normal(size=(n, 2))
    p1 = 1 / (1 + np.exp(-Z[:, 0])) + rng.normal(0, 0.01, n)
    strata = contrast._contrast_strata(Z, np.column_stack([1 - p1, p1]), [0, 1])
    assert calls == [(400, 400)] * 2 and [s["share"] for s in strata] == [0.1, 0.3, 0.1, 0.3]
    for s in strata:  # each stratum as its own matching gives it
        order = np.argsort(-np.column_stack([1 - p1, p1])[:, s["class"]], kind="stable")
        high, low = order[:400], order[n - 400:]
        dist = cdist(Z[high], Z[low])
        rows, cols = linear_sum_assignment(dist)
        assert np.array_equal(s["high"], high[rows]) and np.array_equal(s["low"], low[cols])
        assert np.array_equal(s["distance"], dist[rows, cols])


class _Coordinates:
    """A fitted 'map' that drops the row-index column of ``_ExactIntervals``' inputs."""

    def transform(self, X):
        return np.asarray(X, dtype=np.float64)[:, 1:]


class _ExactOnALine(_ExactIntervals):
    metric_ = _Coordinates()

    def predict_interval(self, X, bounds=None):
        return super().predict_interval(np.asarray(X)[:, :1], bounds)


@pytest.mark.slow
def test_contrast_level_on_a_field_that_uses_all_of_its_lipschitz_constant():
    """p = 0.5 + L(x − 0.5) on a line: every matched pair's gap is exactly L·d, the contrast bound is
    tight in the mean; at the true L the whole family rejects at most alpha − beta of the time."""
    rng = np.random.default_rng(2)
    n, lipschitz = 400, 0.8
    x = np.sort(rng.uniform(0, 1, n))
    p1 = 0.5 + lipschitz * (x - 0.5)
    model = _ExactOnALine(np.column_stack([1 - p1, p1]))
    X = np.column_stack([np.arange(n), x])
    draws, rejections, low = 300, 0, 0
    for _ in range(draws):
        y = (rng.uniform(size=n) < p1).astype(int)
        true, half = check_lipschitz(model, X, y, lipschitz=[lipschitz, lipschitz / 2], per_class=False,
                                     free_share=0.0)
        rejections += true.rejected
        low += any(t["rejected"] for t in half.tests if t["kind"] == "contrast")
    assert rejections / draws <= 0.025 + 3 * np.sqrt(0.025 * 0.975 / draws)
    assert low / draws > 0.9  # not vacuous: half the constant is seen by the contrasts


@pytest.mark.slow
def test_contrast_sees_what_the_counts_miss_on_a_2d_field():
    """The README's weak case: 2-D logistic field, λ = 0.15, L*/20. The count tests do not reject it;
    the contrasts do (5 of 5 draws measured), and the true L stays unrejected."""
    data = make_lipschitz_logistic(3000, lipschitz=0.5, n_features=2, scale="box", random_state=0)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.15, lipschitz=data.lipschitz).fit(data.X[:2000], data.y[:2000])
    grid = [data.lipschitz / 20, data.lipschitz]
    low, true = check_lipschitz(clf, data.X[2000:], data.y[2000:], lipschitz=grid)
    assert low.rejected and all(name.startswith("contrast") for name in low.rejected_by)
    assert not true.rejected
    old = check_lipschitz(clf, data.X[2000:], data.y[2000:], lipschitz=grid[0], contrast=False)
    assert not old.rejected
    contrasts = [t for t in low.tests if t["kind"] == "contrast"]
    assert [t["pairs"] for t in contrasts] == [100, 300]  # 0.1 and 0.3 of the 1 000 rows
    assert all(t["mean_distance"] > 0 and t["rows"] == 2 * t["pairs"] for t in contrasts)


def test_selection_records_the_contrasts_and_margin_models_skip_them():
    data, Xf, yf, Xh, yh = _field(4)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=data.lipschitz).fit(Xf, yf)
    sel = select_lipschitz(clf, Xh, yh, [data.lipschitz / 20, data.lipschitz])
    kinds = [t["kind"] for t in sel.checks[0].tests]
    assert kinds.count("contrast") == 2 and kinds.count("count") == 5
    assert sel.chosen == data.lipschitz
    margin = make_margin_clusters(1200, margin=0.2, random_state=0)
    m = NadarayaWatsonClassifier(metric=None, bandwidth=0.1, margin=0.2).fit(margin.X[:800], margin.y[:800])
    check = check_lipschitz(m, margin.X[800:], margin.y[800:])
    assert all(t["kind"] == "count" for t in check.tests)
    with pytest.raises(ValueError, match="contrast must be True or False"):
        check_lipschitz(clf, Xh, yh, contrast="yes")


def test_contrast_families_from_one_set_of_intervals():
    # contrast=(False, True): each result equals its own call, and the intervals are computed once
    data, Xf, yf, Xh, yh = _field(3)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=data.lipschitz, bound="hoeffding").fit(Xf, yf)
    calls = []
    original = clf._interval_settings  # the check's one call for every setting (predict_interval's pass)

    def counted(X, bounds, certified_only=frozenset()):
        calls.append(bounds)
        return original(X, bounds, certified_only=certified_only)

    clf._interval_settings = counted
    counts, full = check_lipschitz(clf, Xh, yh, per_class=False, contrast=(False, True))
    assert len(calls) == 1
    assert counts == check_lipschitz(clf, Xh, yh, per_class=False, contrast=False)
    assert full == check_lipschitz(clf, Xh, yh, per_class=False, contrast=True)
    assert len(calls) == 3
    assert {t["kind"] for t in counts.tests} == {"count"} and "contrast" in {t["kind"] for t in full.tests}
    # with several values: one list per flag, each the single-flag call's
    values = [1.0, data.lipschitz]
    fams = check_lipschitz(clf, Xh, yh, lipschitz=values, contrast=[True, False])
    assert fams == [check_lipschitz(clf, Xh, yh, lipschitz=values, contrast=flag) for flag in (True, False)]
    assert check_lipschitz(clf, Xh, yh, contrast=(True,)) == [check_lipschitz(clf, Xh, yh)]
    for bad in ((), "yes", (True, 1), None):
        with pytest.raises(ValueError, match="contrast"):
            check_lipschitz(clf, Xh, yh, contrast=bad)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_check_maps_its_rows_into_the_models_space_once(dtype, monkeypatch):
    """The contrasts' coordinates (metric_.transform of the held-out rows) are mapped first and the
    model's intervals read them, instead of mapping the rows a second time; rows in another dtype
    than the fit's are mapped again as the model validates them. The check is the same either way."""
    import warnings

    import nwbound.lipschitz_check._run as run
    from nwbound.spaces import LearnedSpace

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4)).astype(dtype)
    y = (rng.random(3000) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = NadarayaWatsonClassifier(random_state=0, cross_fit=False, dtype=dtype).fit(X[:2000], y[:2000])
    mapped = []
    transform = LearnedSpace.transform
    monkeypatch.setattr(LearnedSpace, "transform", lambda self, A: mapped.append(len(A)) or transform(self, A))
    grid = [clf.lipschitz_, 2 * clf.lipschitz_]
    once = select_lipschitz(clf, X[2000:], y[2000:], grid)
    assert mapped == [1000]  # twice before: the contrasts' coordinates and the model's queries
    select_lipschitz(clf, X[2000:].astype(np.float64 if dtype == "float32" else np.float32), y[2000:], grid)
    assert mapped == [1000] * 3  # rows in another dtype than the fit's: mapped again, as validated
    original = run._intervals
    monkeypatch.setattr(run, "_intervals", lambda model, X, bounds, at, mapped=None: original(model, X, bounds, at))
    twice = select_lipschitz(clf, X[2000:], y[2000:], grid)
    assert once.table() == twice.table() and once.chosen == twice.chosen
