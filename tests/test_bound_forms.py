"""Bound forms as registered objects: a new form is one file (here, this test file only)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier
from nwbound.bounds import (
    BOUND_NAMES,
    BoundForm,
    BoundSpec,
    bound_form_names,
    get_bound_form,
    hoeffding_limits,
    hoeffding_sampling,
    lipschitz_bias,
    register_bound_form,
    sum_error_margin,
    unregister_bound_form,
)
from nwbound.engine import KernelStatistics


class DoubledHoeffding(BoundForm):
    """A deliberately loose form: twice the Hoeffding bias and sampling terms.

    Proof sketch: the Hoeffding interval ``p̂ ± (β·D/κ + √(ln(2/δ′)·S2/2)/κ)`` holds with probability
    at least ``1 − δ′``; this one contains it, so it holds whenever that one does.
    """

    name = "doubled_hoeffding"

    def parts(self, spec, kappa, sq_sum, dist_sum, bandwidth, tail_mass=None):
        return 2.0 * lipschitz_bias(spec.beta, dist_sum, kappa), 2.0 * hoeffding_sampling(kappa, sq_sum, spec.delta_prime)


@pytest.fixture
def doubled():
    form = register_bound_form(DoubledHoeffding())
    yield form
    unregister_bound_form(form.name)


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 2))
    y = (rng.random(n) < X[:, 0]).astype(int)
    return X, y, rng.random((60, 2))


def test_a_form_registered_in_a_test_file_gives_intervals_through_the_estimator(doubled):
    X, y, Q = _data()
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
    out = clf.predict_interval(Q, bounds={"loose": {"bound": "doubled_hoeffding"}, "h": {"bound": "hoeffding"}})
    loose, h = out["loose"], out["h"]
    live = ~h.vacuous
    assert live.any()
    np.testing.assert_array_equal(loose.bias[live], 2.0 * h.bias[live])
    # The summation-error margin ρ/(2(1 − ρ)) of the sums is added once to each form's sampling term.
    margin = sum_error_margin(clf.kernel_statistics(Q).sum_error)
    np.testing.assert_allclose(loose.sampling[live], 2.0 * h.sampling[live] - margin, rtol=1e-12)
    # The p̂ ± ε rule of every such form: ε = min(1, bias + sampling) before clipping to [0, 1].
    eps = np.minimum(1.0, loose.bias + loose.sampling)
    np.testing.assert_array_equal(loose.lower[live], np.clip(h.proba - eps, 0, 1)[live])
    assert np.all(loose.lower <= h.lower) and np.all(loose.upper >= h.upper)
    assert np.any(loose.upper - loose.lower > h.upper - h.lower)


def test_the_default_estimator_and_the_bound_parameter_take_a_registered_form(doubled):
    X, y, Q = _data(600, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        clf = NadarayaWatsonClassifier().fit(X, y)  # the defaults: learned space, L chosen, cross-fitted
        out = clf.predict_interval(Q, bounds={"loose": {"bound": "doubled_hoeffding"}, "h": {"bound": "hoeffding"}})
        assert np.all(out["loose"].lower <= out["h"].lower) and np.all(out["loose"].upper >= out["h"].upper)
        own = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0, bound="doubled_hoeffding").fit(X, y)
        np.testing.assert_array_equal(own.predict_interval(Q).lower, own.predict_interval(Q, bounds=["doubled_hoeffding"])
                                      ["doubled_hoeffding"].lower)
    assert "doubled_hoeffding" in BOUND_NAMES and "doubled_hoeffding" in bound_form_names()


def test_an_unregistered_form_is_refused_naming_the_registered_ones():
    X, y, Q = _data()
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
    with pytest.raises(ValueError, match="bound must be one of 'chernoff', 'hoeffding'"):
        clf.predict_interval(Q, bounds={"x": {"bound": "doubled_hoeffding"}})
    # Before the registry an unknown name passed BoundSpec and failed only when parts were computed.
    with pytest.raises(ValueError, match="bound must be one of"):
        BoundSpec(form="doubled_hoeffding", beta=1.0, delta_prime=0.05)


def test_registration_errors_name_the_problem(doubled):
    with pytest.raises(ValueError, match="already registered.*replace=True"):
        register_bound_form(DoubledHoeffding())
    assert register_bound_form(DoubledHoeffding(), replace=True).name == "doubled_hoeffding"

    class Shadow(DoubledHoeffding):
        name = "hoeffding"

    with pytest.raises(ValueError, match="already registered; choose another name"):
        register_bound_form(Shadow(), replace=True)
    with pytest.raises(ValueError, match="cannot be removed"):
        unregister_bound_form("chernoff")
    with pytest.raises(TypeError, match="BoundForm instance"):
        register_bound_form(DoubledHoeffding)
    with pytest.raises(ValueError, match="non-empty string name"):
        register_bound_form(BoundForm())


def test_a_form_without_parts_says_what_to_implement():
    class Empty(BoundForm):
        name = "empty_form"

    register_bound_form(Empty())
    try:
        with pytest.raises(NotImplementedError, match="'empty_form' must implement parts"):
            BoundSpec(form="empty_form", beta=1.0, delta_prime=0.05).parts(np.ones(1), np.ones(1), np.ones(1), 1.0)
    finally:
        unregister_bound_form("empty_form")


def test_the_built_in_forms_declare_what_they_read():
    assert get_bound_form("chernoff").needs_histogram and not get_bound_form("hoeffding").needs_histogram
    assert not get_bound_form("paper").needs_distance_sum
    spec = BoundSpec(form="paper", beta=1.0, delta_prime=0.05, kernel_radius=np.inf)
    assert spec.needs_tail_mass and not BoundSpec(form="paper", beta=1.0, delta_prime=0.05).needs_tail_mass


def _statistics(sum_error, seed=2):
    rng = np.random.default_rng(seed)
    n, C = 40, 3
    S = rng.uniform(0, 5, (n, C)) * (rng.random((n, 1)) > 0.1)  # some κ = 0 rows
    sq = (S.sum(1) ** 2) / rng.uniform(1, 30, n)
    ds = rng.uniform(0, 1, n) * S.sum(1)
    stats = KernelStatistics(class_sums=S[:, None], sq_sum=sq[:, None], dist_sum=ds[:, None],
                             bandwidth=np.ones((1, 1)), kernel=None, outside_box=np.zeros(n, bool),
                             sum_error=sum_error)
    kappa = S.sum(1)
    proba = np.where(kappa[:, None] > 0, S / np.where(kappa > 0, kappa, 1)[:, None], 0.0)
    return S, sq, ds, stats, proba


def test_one_hoeffding_rule_for_the_host_and_any_namespace():
    """The host limits and hoeffding_limits (what the device calls on its tensors) are one rule: bit for
    bit on NumPy, and the same numbers through the array-API namespace (array_api_strict)."""
    S, sq, ds, stats, proba = _statistics(0.0)
    host = BoundSpec(form="hoeffding", beta=0.7, delta_prime=0.02).limits(stats, proba)
    out = hoeffding_limits(S, sq, ds, 0.7, 0.02)
    for got, want in zip((out[k] for k in ("lower", "upper", "epsilon", "bias", "sampling")), host):
        np.testing.assert_array_equal(got, want)
    xps = pytest.importorskip("array_api_strict")
    strict = hoeffding_limits(xps.asarray(S), xps.asarray(sq), xps.asarray(ds), 0.7, 0.02)
    for name in ("lower", "upper", "epsilon", "bias", "sampling", "kappa", "vacuous"):
        np.testing.assert_allclose(np.asarray(strict[name]), out[name], rtol=1e-15, err_msg=name)


def test_hoeffding_limits_with_a_summation_error_contain_the_exact_sums_limits():
    S, sq, ds, stats, proba = _statistics(1e-6)
    wide = hoeffding_limits(S, sq, ds, 0.7, 0.02, sum_error=1e-6)
    exact = hoeffding_limits(S, sq, ds, 0.7, 0.02)
    assert np.all(wide["lower"] <= exact["lower"]) and np.all(wide["upper"] >= exact["upper"])
    host = BoundSpec(form="hoeffding", beta=0.7, delta_prime=0.02).limits(stats, proba)
    np.testing.assert_allclose(wide["epsilon"], host[2], rtol=1e-13)
    with pytest.raises(ValueError, match="sum_error must be in"):
        hoeffding_limits(S, sq, ds, 0.7, 0.02, sum_error=0.5)
