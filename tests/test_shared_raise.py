"""A raise of L_r in one cross-fitted model is every model's (round 21).

The estimator intersects its models' intervals, so each model's must hold: where one model's scans
raised ``L_r`` (variation beyond noise in what its score model misses), the others are fitted again
with that ``L_r`` as a floor (``LearnedSpace(residual_lipschitz_floor=...)``, raise-only).
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier
from nwbound.spaces import LearnedSpace, shared_residual_raise, two_constant_pilot


def _space(value, scan=None):
    # a fitted "auto" space: its L_r, and what its scan raised it to (None: no scan raise)
    return SimpleNamespace(residual_lipschitz_=value,
                           scan_={"raised": scan is not None, "lipschitz": 0.0 if scan is None else scan})


@pytest.mark.parametrize(("spaces", "expected"), [
    ([], None),
    ([_space(2.0, 2.0)], None),  # one model: nothing to share
    ([_space(2.0, 2.0), _space(0.5)], 2.0),
    ([_space(0.5), _space(2.0, 2.0), _space(3.0, 3.0)], 3.0),  # the largest raise
    ([_space(2.0, 2.0), _space(2.0)], None),  # every model already there
    ([_space(2.0), _space(0.5)], None),  # raised by the second, isotropic estimate alone: not shared
    ([_space(2.5, 1.5), _space(0.5)], 1.5),  # the scan's value, not the second estimate's above it
    ([_space(2.0, 2.0), _space(3.0)], None),  # a model already above the raise
    ([None, _space(2.0, 2.0), _space(0.5)], 2.0),
    ([SimpleNamespace(), _space(2.0, 2.0)], None),  # no "auto" space beside it: nothing to compare
])
def test_shared_residual_raise(spaces, expected):
    assert shared_residual_raise(spaces) == expected


@pytest.fixture(scope="module")
def ramp():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(900, 2))
    y = (rng.random(900) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(int)
    return X, y


def _fit(X, y, floor=None):
    return LearnedSpace("auto", random_state=0, residual_lipschitz_floor=floor).fit(
        X[:500], y[:500], held_out=(X[500:], y[500:]))


def test_the_floor_raises_l_r_and_the_spaces_l_as_the_two_constant_bound_states(ramp):
    X, y = ramp
    plain = _fit(X, y)
    floor = 10 * plain.residual_lipschitz_
    raised = _fit(X, y, floor)
    assert raised.residual_lipschitz_ == raised.shared_residual_lipschitz_ == floor
    # the slow formula: |Δp| ≤ ‖Δs‖ + L_r′‖Δx‖ ≤ √(1 + ρ²/c²)‖Δz‖, ρ = L_r′/L_r, the space unchanged
    rho = floor / raised.feature_weight_
    assert raised.lipschitz_ == pytest.approx(np.sqrt(1 + rho**2 / raised.balance_**2), rel=1e-12)
    assert raised.lipschitz_ > plain.lipschitz_
    np.testing.assert_array_equal(raised.transform(X), plain.transform(X))
    assert raised.report_.shared_lipschitz == floor and "largest raise among the cross-fitted" in str(raised.report_)


def test_sharing_a_raise_after_fit_is_the_floor_at_fit(ramp):
    X, y = ramp
    floor = 7.5 * _fit(X, y).residual_lipschitz_
    at_fit, after = _fit(X, y, floor), _fit(X, y).share_residual_raise(floor)
    for name in ("residual_lipschitz_", "shared_residual_lipschitz_", "lipschitz_", "feature_weight_", "balance_"):
        assert getattr(after, name) == getattr(at_fit, name), name
    assert str(after.report_) == str(at_fit.report_)
    with pytest.raises(ValueError, match="value must be a positive finite number"):
        after.share_residual_raise(float("nan"))
    with pytest.raises(ValueError, match="needs a LearnedSpace\\('auto'\\) fitted with held-out rows"):
        LearnedSpace("standard").fit(X, y).share_residual_raise(1.0)


def test_a_floor_below_l_r_changes_nothing(ramp):
    X, y = ramp
    plain = _fit(X, y)
    below = _fit(X, y, 0.5 * plain.residual_lipschitz_)
    assert below.shared_residual_lipschitz_ is None and below.report_.shared_lipschitz is None
    assert (below.residual_lipschitz_, below.lipschitz_) == (plain.residual_lipschitz_, plain.lipschitz_)
    assert str(below.report_) == str(plain.report_)


@pytest.mark.parametrize("floor", [0, -1.0, float("nan"), float("inf"), "2", True])
def test_a_bad_floor_names_the_parameter(ramp, floor):
    X, y = ramp
    with pytest.raises(ValueError, match="residual_lipschitz_floor must be a positive finite number or None"):
        _fit(X, y, floor)


def _ring(n, seed):
    # p = 0.9 on a ring of radius 0.6 and width 0.04, 0.1 away from it (known_p_suite.ring2small)
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.5, 1.5, (n, 2))
    p = 0.1 + 0.8 * np.exp(-(((np.linalg.norm(X, axis=1) - 0.6) / 0.04) ** 2))
    return X, (rng.random(n) < p).astype(int)


def test_every_cross_fitted_model_assumes_the_largest_raise():
    X, y = _ring(2000, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = NadarayaWatsonClassifier(random_state=1).fit(X, y)
    spaces = [m.metric_ for m in clf.cross_fit_models_]
    top = max(s.residual_lipschitz_ for s in spaces)
    assert all(s.residual_lipschitz_ == top for s in spaces)
    shared = [s for s in spaces if s.shared_residual_lipschitz_ is not None]
    assert len(shared) == 1 and shared[0].shared_residual_lipschitz_ == top  # one model raised, the other took it
    assert top > 2 * max(s.feature_weight_ for s in spaces)
    assert "the largest raise among the cross-fitted models" in str(clf.metric_report_)
    assert "raised to √(1 + ρ²/c²) by another cross-fitted model's raise" in two_constant_pilot(shared[0])[1]
    # the model that took it chose L again from the raised pilot, on its own check rows
    took = clf.cross_fit_models_[spaces.index(shared[0])]
    assert took.lipschitz_report_.pilot == shared[0].lipschitz_
    assert not hasattr(took, "_held_for_share")


def test_a_model_file_keeps_the_shared_raise(tmp_path):
    from nwbound.io import load_model, save_model

    X, y = _ring(2000, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = NadarayaWatsonClassifier(random_state=1).fit(X, y)
        back = load_model(save_model(clf, tmp_path / "ring.npz"))
        Q = X[:200]
        before, after = clf.predict_interval(Q), back.predict_interval(Q)
    assert [m.metric_.shared_residual_lipschitz_ for m in back.cross_fit_models_] == \
        [m.metric_.shared_residual_lipschitz_ for m in clf.cross_fit_models_]
    assert str(back.metric_report_) == str(clf.metric_report_)
    np.testing.assert_array_equal(after.lower, before.lower)
    np.testing.assert_array_equal(after.upper, before.upper)
