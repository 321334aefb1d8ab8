"""Issue 22 (hardening 3): float32 at extreme scales, the array API properties, the untruncated
Gaussian with the Chernoff bound, far queries, model-file consistency and CSV formula injection."""

from __future__ import annotations

import numpy as np
import pytest

from nwbound import DyadicClassifier, NadarayaWatsonClassifier

# -- 1. float32 features far below (or above) float32's range ---------------------------------------


def _two_sided_field():
    """p₁ = 0 on [0, 0.4], p₁ = 1 on [0.6, 1]: the queries 0.2 and 0.8 have p₁ = 0 and 1."""
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.uniform(0.0, 0.4, 200), rng.uniform(0.6, 1.0, 200)])[:, None]
    return X, (X[:, 0] > 0.5).astype(int), np.array([[0.2], [0.8]]), np.array([0.0, 1.0])


_MAKERS = {
    "regular": lambda s, dtype: NadarayaWatsonClassifier(bandwidth=0.1 * s, lipschitz=1.0 / s, dtype=dtype),
    "localized": lambda s, dtype: NadarayaWatsonClassifier(bandwidth=0.1 * s, lipschitz=1.0 / s, n_neighbors=30,
                                                           dtype=dtype),
    "dyadic": lambda s, dtype: DyadicClassifier(resolution=3, lipschitz=1.0 / s),  # float64 only
}


@pytest.mark.parametrize("kind", sorted(_MAKERS))
@pytest.mark.parametrize("scale", [1e-46, 1e-200, 1e-44, 1e39, 1e160])
def test_float32_scaled_features_give_the_unscaled_intervals(kind, scale):
    X, y, Q, p1 = _two_sided_field()
    reference = _MAKERS[kind](1.0, "float32").fit(X, y).predict_interval(Q)
    scaled = _MAKERS[kind](scale, "float32").fit(X * scale, y).predict_interval(Q * scale)
    # X·s is rounded to float32 differently from X: the intervals agree up to that rounding.
    np.testing.assert_allclose(scaled.lower, reference.lower, atol=1e-4)
    np.testing.assert_allclose(scaled.upper, reference.upper, atol=1e-4)
    np.testing.assert_allclose(scaled.proba, reference.proba, atol=1e-4)
    assert np.all(scaled.lower[:, 1] <= p1) and np.all(p1 <= scaled.upper[:, 1])
    # the field is separable at these queries: both must still be told apart (no collapse to ½)
    assert scaled.upper[0, 1] < 0.5 < scaled.lower[1, 1]


@pytest.mark.parametrize("scale", [1e-46, 1e160])
@pytest.mark.parametrize("n_neighbors", [None, 30])
def test_float32_unit_survives_state_model_file_and_auto_grid(tmp_path, scale, n_neighbors):
    from nwbound.io import load_model, save_model

    X, y, Q, _ = _two_sided_field()
    ref = NadarayaWatsonClassifier(bandwidth="auto", lipschitz=1.0, n_neighbors=n_neighbors, dtype="float32").fit(X, y)
    clf = NadarayaWatsonClassifier(bandwidth="auto", lipschitz=1.0 / scale, n_neighbors=n_neighbors,
                                   dtype="float32").fit(X * scale, y)
    np.testing.assert_allclose(clf.bandwidths_ / scale, ref.bandwidths_, rtol=1e-3)  # grid in input units
    state = clf.get_fitted_state()
    assert state["X"].dtype == np.float32 and np.all(np.isfinite(state["X"])) and np.any(state["X"] != 0)
    np.testing.assert_allclose(state["X"].astype(np.float64) * state["feature_unit"], X * scale, rtol=1e-6)
    loaded = load_model(save_model(clf, tmp_path / "m.npz"))
    np.testing.assert_array_equal(loaded.predict_interval(Q * scale).lower, clf.predict_interval(Q * scale).lower)
    if n_neighbors:
        dist, _ = clf.kneighbors(Q * scale, 2)  # distances in the input's units
        np.testing.assert_allclose(dist / scale, ref.kneighbors(Q, 2)[0], atol=1e-6)  # float32 rounding of X


def test_float32_refuses_what_it_cannot_hold_naming_the_dtype():
    X, y, Q, _ = _two_sided_field()
    clf = NadarayaWatsonClassifier(bandwidth=0.1, lipschitz=1.0, dtype="float32").fit(X, y)
    for far in (1e39, 1.7e308):
        with pytest.raises(ValueError, match='dtype="float32".*dtype="float64"'):
            clf.predict_interval([[far]])
    tiny = NadarayaWatsonClassifier(bandwidth=0.1, lipschitz=1.0, dtype="float32").fit(X * 1e-46, y)
    with pytest.raises(ValueError, match='dtype="float32"'):
        tiny.predict_interval([[1.0]])  # 1e46 units of the training data: beyond float32
    # a state whose unit is not a power of two is refused
    state = tiny.get_fitted_state()
    state["feature_unit"] = 3.0
    with pytest.raises(ValueError, match="feature_unit"):
        NadarayaWatsonClassifier(bandwidth=0.1e-46, lipschitz=1.0, dtype="float32").set_fitted_state(state)


# -- 4. far finite queries (1.7e308) in every classifier -------------------------------------------

_FAR = np.array([[1.7e308, 0.0], [-1.7e308, 1.7e308], [1e300, 1.0]])


@pytest.mark.parametrize("make", [
    lambda: NadarayaWatsonClassifier(bandwidth=0.2, lipschitz=1.0),
    lambda: NadarayaWatsonClassifier(bandwidth=0.2, lipschitz=1.0, n_neighbors=20),
    lambda: NadarayaWatsonClassifier(bandwidth=0.2, lipschitz=1.0, n_neighbors=20, bound="hoeffding"),
    lambda: NadarayaWatsonClassifier(bandwidth="auto", margin=0.1, n_neighbors=20),
    lambda: NadarayaWatsonClassifier(bandwidth=0.2, lipschitz=1.0, n_neighbors=20, kernel="gaussian_untruncated",
                                     bound="hoeffding"),
    lambda: DyadicClassifier(resolution=3, lipschitz=1.0),
    lambda: DyadicClassifier(resolution=3, lipschitz=1.0, bound="hoeffding"),
    lambda: DyadicClassifier(resolution=3, margin=0.1),
], ids=["regular", "localized", "localized-hoeffding", "localized-auto-margin", "localized-gauss",
        "dyadic", "dyadic-hoeffding", "dyadic-margin"])
def test_far_finite_queries_get_valid_vacuous_or_trivial_intervals(make):
    rng = np.random.default_rng(0)
    X = rng.random((300, 2))
    y = (X[:, 0] > 0.5).astype(int)
    near = np.array([[0.5, 0.5], [0.1, 0.9]])
    clf = make().fit(X, y)
    alone = clf.predict_interval(near)
    iv = clf.predict_interval(np.vstack([near, _FAR]))
    for a in (iv.lower, iv.upper, iv.proba, iv.epsilon):
        assert np.all(np.isfinite(a))
    assert np.all((0 <= iv.lower) & (iv.lower <= iv.proba) & (iv.proba <= iv.upper) & (iv.upper <= 1))
    # nothing is known that far away: every class's interval is [0, 1], nothing certified
    assert iv.trivial[2:].all() and not iv.certified[2:].any()
    # the far rows do not disturb the others (the regular classifier's block then recomputes its
    # distances directly: equal up to float64 rounding)
    np.testing.assert_allclose(iv.lower[:2], alone.lower, rtol=0, atol=1e-9)
    np.testing.assert_allclose(iv.upper[:2], alone.upper, rtol=0, atol=1e-9)
    assert clf.predict(_FAR).shape == (3,)
    if getattr(clf, "n_neighbors", None):
        dist, idx = clf.kneighbors(_FAR)
        assert all(len(set(row)) == row.size for row in idx)  # k distinct training rows
        assert np.all(dist >= 1e300) and not np.isnan(dist).any()
        assert np.isinf(dist[1]).all()  # ‖(−1.7e308, 1.7e308) − x‖ > float64's largest number

