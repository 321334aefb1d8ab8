"""Property-based invariants (hypothesis)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from nwbound import DyadicClassifier, NadarayaWatsonClassifier

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)

# Bandwidths that are not round numbers: hypothesis favours integer-valued
# points, and a training point at exactly d = λ from a query sits on the
# kernel's support boundary, where K = 0 ± rounding decides whether κ > 0.
# That knife edge is not what these invariants are about.
LAM_A, LAM_B, LAM_C = 0.9173, 0.6829, 1.4387


@st.composite
def datasets(draw, max_n=40, max_d=3, max_classes=4):
    n = draw(st.integers(4, max_n))
    d = draw(st.integers(1, max_d))
    X = draw(arrays(np.float64, (n, d), elements=st.floats(-3, 3, allow_nan=False, width=32)))
    n_classes = draw(st.integers(2, max_classes))
    y = draw(arrays(np.int64, n, elements=st.integers(0, n_classes - 1)))
    y[:2] = [0, 1]  # at least two classes
    Q = draw(arrays(np.float64, (5, d), elements=st.floats(-4, 4, allow_nan=False, width=32)))
    # bandwidth="auto" derives its grid from the spread of X (coincident points are refused).
    assume(np.ptp(X, axis=0).max() > 0)
    return X, y, Q


def _models():
    return [
        NadarayaWatsonClassifier(metric=None, bandwidth=LAM_A, lipschitz=0.5),
        NadarayaWatsonClassifier(metric=None, kernel="gaussian", bandwidth=LAM_B, margin=2.0, bound="selfnormalized"),
        NadarayaWatsonClassifier(metric=None, bandwidth=LAM_C, n_neighbors=3, lipschitz=0.5, bound="paper"),
        NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=0.5),
        DyadicClassifier(metric=None, resolution=2, lipschitz=0.5),
    ]


@SETTINGS
@given(datasets())
def test_probabilities_sum_to_one_and_lie_inside_bounds(data):
    X, y, Q = data
    for model in _models():
        res = model.fit(X, y).predict_interval(Q)
        assert np.all(np.isfinite(res.proba)) and np.all(np.isfinite(res.epsilon))
        np.testing.assert_allclose(res.proba.sum(axis=1), 1.0, rtol=1e-9)
        assert np.all(res.lower <= res.proba + 1e-12) and np.all(res.proba <= res.upper + 1e-12)
        assert np.all((res.epsilon > 0) & (res.epsilon <= 1.0))
        assert np.all((res.lower >= 0) & (res.upper <= 1))
        np.testing.assert_array_equal(res.vacuous, res.kappa == 0)
        np.testing.assert_allclose(model.predict_proba(Q), res.proba)


@SETTINGS
@given(datasets(), st.randoms(use_true_random=False))
def test_permuting_training_rows_changes_nothing(data, rnd):
    X, y, Q = data
    perm = np.array(rnd.sample(range(len(y)), len(y)))
    for model in _models()[:2] + _models()[3:]:  # k-NN ties may pick other equidistant rows
        a = model.fit(X, y).predict_interval(Q)
        b = model.fit(X[perm], y[perm]).predict_interval(Q)
        np.testing.assert_allclose(a.proba, b.proba, atol=1e-9)
        np.testing.assert_allclose(a.epsilon, b.epsilon, atol=1e-9)


@SETTINGS
@given(datasets(), st.data())
def test_duplicated_rows_equal_sample_weight_two(data, draw):
    X, y, Q = data
    dup = np.array(draw.draw(st.lists(st.integers(0, len(y) - 1), min_size=1, max_size=len(y), unique=True)))
    weights = np.ones(len(y))
    weights[dup] = 2.0
    X2, y2 = np.vstack([X, X[dup]]), np.concatenate([y, y[dup]])
    for model in (NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=LAM_A), DyadicClassifier(metric=None, lipschitz=None, resolution=2)):
        a = model.fit(X, y, sample_weight=weights).predict_proba(Q)
        b = model.fit(X2, y2).predict_proba(Q)
        np.testing.assert_allclose(a, b, atol=1e-9)


# -- scale invariance: X, λ and L (or γ) scaled together describe the same problem ----------
SCALES = [2.0**-600, 1e-200, 1e-7, 1e7, 1e160, 1e300]


def _scaled_models(s):
    return [
        NadarayaWatsonClassifier(metric=None, bandwidth=LAM_A * s, lipschitz=0.5 / s, bound="chernoff"),
        NadarayaWatsonClassifier(metric=None, bandwidth=LAM_A * s, lipschitz=0.5 / s, bound="hoeffding"),
        NadarayaWatsonClassifier(metric=None, bandwidth=LAM_C * s, n_neighbors=5, margin=2.0 * s, bound="chernoff"),
        DyadicClassifier(metric=None, resolution=3, lipschitz=0.5 / s, bound="chernoff"),
        # The grid follows the data's scale; the moments ranking works in units of the support.
        NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=0.5 / s, bound="chernoff"),
    ]


@pytest.mark.parametrize("s", SCALES, ids=[f"{s:g}" for s in SCALES])
def test_scaling_inputs_bandwidth_and_assumption_together_changes_nothing(s):
    rng = np.random.default_rng(3)
    X = rng.uniform(-3, 3, (300, 3))
    y = (X[:, 0] + 0.3 * rng.standard_normal(300) > 0).astype(int)
    Q = rng.uniform(-3.5, 3.5, (40, 3))
    for ref_model, model in zip(_scaled_models(1.0), _scaled_models(s)):
        ref = ref_model.fit(X, y).predict_interval(Q)
        got = model.fit(X * s, y).predict_interval(Q * s)
        for name in ("proba", "lower", "upper", "epsilon"):
            arr = getattr(got, name)
            assert np.all(np.isfinite(arr)), (model, name)
            np.testing.assert_allclose(arr, getattr(ref, name), atol=1e-7, err_msg=f"{model} {name}")
        np.testing.assert_array_equal(got.vacuous, ref.vacuous)
        np.testing.assert_allclose(got.bandwidth, ref.bandwidth * s, rtol=1e-9)


@pytest.mark.parametrize("factor", [1e-300, 1e-5, 3.0, 1e300, 8e307])
def test_scaling_sample_weights_changes_nothing(factor):
    rng = np.random.default_rng(4)
    X = rng.random((200, 2))
    y = (X[:, 0] > 0.5).astype(int)
    w = rng.uniform(0.5, 2.0, 200)
    for model in (NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=1.0, bound="chernoff"),
                  NadarayaWatsonClassifier(metric=None, bandwidth=0.3, n_neighbors=7, lipschitz=1.0, bound="chernoff"),
                  DyadicClassifier(metric=None, resolution=2, lipschitz=1.0, bound="chernoff")):
        ref = model.fit(X, y, sample_weight=w).predict_interval(X[:30])
        got = model.fit(X, y, sample_weight=w * factor).predict_interval(X[:30])
        for name in ("proba", "lower", "upper"):
            assert np.all(np.isfinite(getattr(got, name)))
            np.testing.assert_allclose(getattr(got, name), getattr(ref, name), atol=1e-9, err_msg=f"{model} {name}")
