"""Tests for nwbound.baselines.selective: the calibrated accept/review threshold."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from nwbound.baselines import CalibratedAcceptance, binomial_tail_pvalue, min_calibration_size


def _draw(n: int, rng: np.random.Generator):
    """Scores uniform on [0, 1]; P(error | score) = 0.3·score (known risk curve)."""
    s = rng.uniform(size=n)
    wrong = rng.uniform(size=n) < 0.3 * s
    y_pred = np.zeros(n, dtype=int)
    y_true = np.where(wrong, 1, 0)
    y_true[:2] = [0, 1]  # both classes present (changes two rows of thousands)
    y_pred[:2] = y_true[:2]
    return s, y_true, y_pred


def _true_risk(t: float) -> float:
    # Error among accepted with score ≤ t: mean of 0.3·s over U[0, t] = 0.15·t.
    return 0.15 * min(max(t, 0.0), 1.0)


def test_pvalue_equals_binomial_cdf_written_here():
    k = np.array([0, 1, 3, 10, 0])
    n = np.array([59, 40, 100, 100, 0])
    want = np.array([binom.cdf(k[i], n[i], 0.05) if n[i] else 1.0 for i in range(5)])
    np.testing.assert_allclose(binomial_tail_pvalue(k, n, 0.05), want, rtol=1e-12)


def test_min_calibration_size_is_smallest_passing_n():
    for alpha, delta in [(0.05, 0.05), (0.01, 0.1), (0.2, 0.01)]:
        n = min_calibration_size(alpha, delta)
        assert (1 - alpha) ** n <= delta < (1 - alpha) ** (n - 1)


def test_fixed_sequence_selection_by_hand():
    rng = np.random.default_rng(1)
    s, t, p = _draw(3000, rng)
    rule = CalibratedAcceptance(alpha=0.08, delta=0.1, n_thresholds=30).fit(s, t, p)
    # Slow restatement: walk the grid, stop at the first p-value above δ.
    wrong = t != p
    chosen = -math.inf
    for thr in rule.thresholds_:
        acc = s <= thr
        pv = binom.cdf(wrong[acc].sum(), acc.sum(), 0.08)
        if pv > 0.1:
            break
        chosen = thr
    assert rule.threshold_ == chosen
    assert chosen > 0.3  # the true risk stays below 0.08 up to t ≈ 0.53
    acc = rule.accept(s)
    assert rule.accepted_error_ == pytest.approx(wrong[acc].mean())
    assert np.array_equal(rule.review(s), ~acc)


def test_matches_mapie_pvalue_and_fixed_sequence():
    methods = pytest.importorskip("mapie.risk_control.methods")
    fwer = pytest.importorskip("mapie.risk_control.fwer_control")
    rng = np.random.default_rng(2)
    s, t, p = _draw(2000, rng)
    rule = CalibratedAcceptance(alpha=0.1, delta=0.05, n_thresholds=40).fit(s, t, p)
    r_hat = rule.n_errors_ / rule.n_accepted_
    theirs = methods.compute_hoeffding_bentkus_p_value(
        r_hat, rule.n_accepted_.astype(float), 0.1, binary=True
    )[:, 0]
    # MAPIE recomputes k as ceil(N·r̂); float round-off makes that k + 1 for
    # some grid points (a larger, conservative p-value). Equal wherever it is k.
    same_k = np.ceil(rule.n_accepted_ * r_hat) == rule.n_errors_
    assert same_k.sum() > 30
    np.testing.assert_allclose(rule.p_values_[same_k], theirs[same_k], rtol=1e-9)
    assert np.all(rule.p_values_ <= theirs + 1e-15)
    valid = fwer.control_fwer(rule.p_values_, 0.05, fwer_method="fixed_sequence")
    assert rule.threshold_ == rule.thresholds_[valid].max()


@pytest.mark.slow
def test_guarantee_by_simulation():
    """Accepted error ≤ α in ≥ 1 − δ of repeats (binomial tolerance on the repeat count)."""
    alpha, delta, repeats = 0.1, 0.1, 1000
    rng = np.random.default_rng(3)
    fails = 0
    shares = []
    for _ in range(repeats):
        s, t, p = _draw(800, rng)
        rule = CalibratedAcceptance(alpha=alpha, delta=delta, n_thresholds=50).fit(s, t, p)
        shares.append(rule.accepted_share_)
        fails += _true_risk(rule.threshold_) > alpha
    # One-sided 99.9 % binomial tolerance on the failure count.
    assert fails <= binom.ppf(0.999, repeats, delta), fails
    assert np.mean(shares) > 0.3  # it does accept (the true curve allows t ≤ 0.67)


def test_accepts_nothing_when_the_strictest_threshold_fails():
    n = 200
    s = np.linspace(0, 1, n)
    y_pred = np.zeros(n, dtype=int)
    y_true = np.ones(n, dtype=int)
    y_true[::2] = 0  # half wrong everywhere
    rule = CalibratedAcceptance(alpha=0.05, delta=0.05).fit(s, y_true, y_pred)
    assert rule.threshold_ == -math.inf
    assert not rule.accept(s).any()
    assert math.isnan(rule.accepted_error_)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 2, "0.1", True])
def test_alpha_delta_outside_unit(bad):
    s, t, p = _draw(500, np.random.default_rng(0))
    with pytest.raises(ValueError, match="alpha"):
        CalibratedAcceptance(alpha=bad).fit(s, t, p)
    with pytest.raises(ValueError, match="delta"):
        CalibratedAcceptance(delta=bad).fit(s, t, p)


def test_bad_calibration_split():
    s = np.linspace(0, 1, 100)
    with pytest.raises(ValueError, match="single class"):
        CalibratedAcceptance().fit(s, np.zeros(100), np.zeros(100))
    y = np.arange(30) % 2
    with pytest.raises(ValueError, match="needs at least 59"):
        CalibratedAcceptance(alpha=0.05, delta=0.05).fit(s[:30], y, y)
    with pytest.raises(ValueError, match="same length"):
        CalibratedAcceptance().fit(s, np.arange(99) % 2, np.arange(99) % 2)
    s2 = s.copy()
    s2[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        CalibratedAcceptance().fit(s2, np.arange(100) % 2, np.arange(100) % 2)
    with pytest.raises(TypeError, match="n_thresholds"):
        CalibratedAcceptance(n_thresholds=2.5).fit(s, np.arange(100) % 2, np.arange(100) % 2)


def test_accept_before_fit():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        CalibratedAcceptance().accept([0.1])


@pytest.mark.parametrize("change", [{"alpha": 0.01}, {"delta": 0.2}, {"n_thresholds": 7}])
def test_a_setting_changed_after_fit_is_refused_not_claimed(change):
    """set_params(alpha=0.01) after fit used to leave the threshold calibrated for the old alpha
    while ``guarantee`` claimed the new one ("error among accepted <= 0.01"): now a refit is asked."""
    rng = np.random.default_rng(3)
    score = rng.uniform(size=2000)
    wrong = rng.uniform(size=2000) < 0.4 * score
    rule = CalibratedAcceptance(alpha=0.1).fit(score, wrong.astype(int), np.zeros(2000, int))
    accepted, guarantee = rule.accept(score), rule.guarantee
    rule.set_params(**change)
    name = next(iter(change))
    for use in (lambda: rule.accept(score), lambda: rule.review(score), lambda: rule.guarantee):
        with pytest.raises(ValueError, match=rf"{name}=.* was set after fit .*call fit again"):
            use()
    rule.set_params(alpha=0.1, delta=0.05, n_thresholds=100)  # back as fitted
    np.testing.assert_array_equal(rule.accept(score), accepted)
    assert rule.guarantee == guarantee
    refit = rule.set_params(**change).fit(score, wrong.astype(int), np.zeros(2000, int))
    assert f"{change.get('alpha', 0.1):g}" in refit.guarantee

