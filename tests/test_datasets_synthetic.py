"""Tests for the synthetic generators: stated Lipschitz constants / margins are valid."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from nwbound.datasets import (
    SyntheticData,
    make_lipschitz_logistic,
    make_margin_clusters,
    make_softmax_field,
)


def _short_pair_slopes(data: SyntheticData, rng: np.random.Generator, n_pairs: int, h: float) -> np.ndarray:
    """|p_c(a) - p_c(b)| / ‖a - b‖ for random short pairs around the data, all classes."""
    idx = rng.integers(0, data.X.shape[0], n_pairs)
    a = data.X[idx]
    u = rng.standard_normal(a.shape)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    b = a + h * u
    diff = np.abs(data.true_proba(a) - data.true_proba(b))
    return diff / np.linalg.norm(a - b, axis=1, keepdims=True)


def _random_pair_slopes(data: SyntheticData, rng: np.random.Generator, n_pairs: int) -> np.ndarray:
    i = rng.integers(0, data.X.shape[0], n_pairs)
    j = rng.integers(0, data.X.shape[0], n_pairs)
    keep = i != j
    a, b = data.X[i[keep]], data.X[j[keep]]
    dist = np.linalg.norm(a - b, axis=1, keepdims=True)
    keep2 = dist[:, 0] > 0
    return np.abs(data.proba_true[i[keep]] - data.proba_true[j[keep]])[keep2] / dist[keep2]


# --------------------------------------------------------------------------- logistic


def test_logistic_matches_sigmoid_formula_of_appendix_c():
    L = 0.15
    data = make_lipschitz_logistic(2000, lipschitz=L, direction=(3.0, 4.0), scale=None, random_state=1)
    w = np.array([0.6, 0.8])  # (3, 4) normalised; box (-10, 10)² is centred at 0
    p1 = 1.0 / (1.0 + np.exp(-4.0 * L * (data.X @ w)))
    np.testing.assert_allclose(data.proba_true[:, 1], p1, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(data.proba_true.sum(axis=1), 1.0, rtol=1e-12)
    assert data.lipschitz == pytest.approx(L)
    assert data.X.shape == (2000, 2) and data.y.dtype == np.int64
    assert np.all((data.X >= -10) & (data.X <= 10))
    assert set(np.unique(data.y)) <= {0, 1}
    np.testing.assert_array_equal(data.classes, [0, 1])


def test_logistic_offset_moves_the_half_probability_hyperplane():
    data = make_lipschitz_logistic(10, direction=(1.0, 0.0), offset=2.0, box=(0.0, 10.0), scale=None, random_state=0)
    # p_1 = 1/2 where w·(y − m) = −offset, i.e. y_0 = 5 − 2 = 3.
    p = data.true_proba(np.array([[3.0, 7.0], [3.0, 1.0]]))
    np.testing.assert_allclose(p, 0.5, atol=1e-12)


def test_logistic_stated_lipschitz_is_valid_and_tight():
    L = 0.15
    rng = np.random.default_rng(0)
    data = make_lipschitz_logistic(5000, lipschitz=L, scale=None, random_state=2)
    slopes_short = _short_pair_slopes(data, rng, 20000, h=1e-3)
    slopes_far = _random_pair_slopes(data, rng, 20000)
    assert slopes_short.max() <= L * (1 + 1e-6)
    assert slopes_far.max() <= L * (1 + 1e-6)
    # The steepest short pair near the hyperplane comes close to L (the bound is exact).
    assert slopes_short.max() >= 0.95 * L


def test_logistic_labels_follow_true_probabilities():
    data = make_lipschitz_logistic(20000, lipschitz=0.15, scale=None, random_state=3)
    p1 = data.proba_true[:, 1]
    # Bernoulli sum: z-score of the total and inside deciles of p_1.
    z = (data.y.sum() - p1.sum()) / np.sqrt((p1 * (1 - p1)).sum())
    assert abs(z) < 4.5
    edges = np.quantile(p1, np.linspace(0, 1, 11))
    bins = np.clip(np.searchsorted(edges, p1, side="right") - 1, 0, 9)
    for b in range(10):
        m = bins == b
        zb = (data.y[m].sum() - p1[m].sum()) / np.sqrt(max((p1[m] * (1 - p1[m])).sum(), 1e-12))
        assert abs(zb) < 4.5, (b, zb)


def test_logistic_minmax_restates_lipschitz_in_scaled_units():
    raw = make_lipschitz_logistic(3000, scale=None, random_state=4)
    scaled = make_lipschitz_logistic(3000, scale="minmax", random_state=4)
    lo, ptp = raw.X.min(axis=0), np.ptp(raw.X, axis=0)
    np.testing.assert_allclose(scaled.X, (raw.X - lo) / ptp, atol=1e-12)
    np.testing.assert_array_equal(scaled.y, raw.y)
    assert scaled.lipschitz == pytest.approx(0.15 * ptp.max())
    # Paper: 0.15 on [-10, 10]² is (just under) 3.0 on [0, 1]².
    assert 2.95 < scaled.lipschitz <= 3.0
    assert scaled.lipschitz_raw == pytest.approx(0.15)
    np.testing.assert_allclose(scaled.true_proba(scaled.X), raw.proba_true, atol=1e-12)
    rng = np.random.default_rng(5)
    assert _short_pair_slopes(scaled, rng, 20000, h=1e-4).max() <= scaled.lipschitz * (1 + 1e-6)


def test_logistic_box_scaling_gives_paper_value_exactly():
    data = make_lipschitz_logistic(100, lipschitz=0.15, box=(-10.0, 10.0), scale="box", random_state=0)
    assert data.lipschitz == pytest.approx(3.0, rel=1e-12)
    assert np.all((data.X >= 0) & (data.X <= 1))
    np.testing.assert_allclose(data.scale_range, [20.0, 20.0])
    # Scaled slope bound still holds along the steepest direction.
    rng = np.random.default_rng(1)
    assert _short_pair_slopes(data, rng, 5000, h=1e-4).max() <= 3.0 * (1 + 1e-6)


def test_from_raw_inverts_to_raw():
    data = make_lipschitz_logistic(50, n_features=3, random_state=7)
    pts = np.random.default_rng(0).random((10, 3))
    np.testing.assert_allclose(data.from_raw(data.to_raw(pts)), pts, atol=1e-12)


# --------------------------------------------------------------------------- softmax


def test_softmax_field_matches_soft_nearest_prototype_formula():
    data = make_softmax_field(3000, n_classes=4, lipschitz=0.2, scale=None, random_state=0)
    # Independent form: p_c ∝ exp(−k/2 ‖y − μ_c‖²).
    d2 = cdist(data.X, data.centers, "sqeuclidean")
    logits = -0.5 * data.steepness * d2
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(data.proba_true, p, atol=1e-12)
    np.testing.assert_allclose(data.proba_true.sum(axis=1), 1.0)
    assert data.proba_true.shape == (3000, 4)


@pytest.mark.parametrize("n_classes, n_features", [(2, 2), (5, 2), (3, 1), (6, 4)])
def test_softmax_stated_lipschitz_is_an_upper_bound(n_classes, n_features):
    L = 0.15
    rng = np.random.default_rng(n_classes * 10 + n_features)
    data = make_softmax_field(4000, n_classes=n_classes, n_features=n_features, lipschitz=L, scale=None, random_state=1)
    slopes = _short_pair_slopes(data, rng, 20000, h=1e-3)
    assert slopes.max() <= L * (1 + 1e-6)
    assert _random_pair_slopes(data, rng, 20000).max() <= L * (1 + 1e-6)
    # Finite-difference gradient norm of each p_c at random points, also ≤ L.
    pts = data.X[rng.integers(0, 4000, 2000)]
    eps = 1e-6
    grad = np.stack(
        [(data.true_proba(pts + eps * e) - data.true_proba(pts - eps * e)) / (2 * eps) for e in np.eye(n_features)],
        axis=-1,
    )
    assert np.linalg.norm(grad, axis=-1).max() <= L * (1 + 1e-4)
    if n_classes == 2:  # the bound is attained for two classes
        assert slopes.max() >= 0.9 * L


def test_softmax_labels_follow_true_probabilities():
    data = make_softmax_field(20000, n_classes=5, scale=None, random_state=2)
    counts = np.bincount(data.y, minlength=5)
    expected = data.proba_true.sum(axis=0)
    sd = np.sqrt((data.proba_true * (1 - data.proba_true)).sum(axis=0))
    assert np.all(np.abs(counts - expected) < 4.5 * sd)
    assert np.all(counts > 0)


def test_softmax_minmax_scaled_bound_valid():
    data = make_softmax_field(3000, n_classes=5, lipschitz=0.15, random_state=3)
    assert np.allclose(data.X.min(axis=0), 0) and np.allclose(data.X.max(axis=0), 1)
    assert data.lipschitz == pytest.approx(0.15 * data.scale_range.max())
    rng = np.random.default_rng(4)
    assert _short_pair_slopes(data, rng, 20000, h=1e-4).max() <= data.lipschitz * (1 + 1e-6)


def test_softmax_user_centers():
    centers = np.array([[-5.0, 0.0], [5.0, 0.0], [0.0, 5.0]])
    data = make_softmax_field(500, n_classes=3, centers=centers, lipschitz=0.1, scale=None, random_state=0)
    # k = 4L / max pairwise distance (10 here).
    assert data.steepness == pytest.approx(4 * 0.1 / 10.0)
    with pytest.raises(ValueError, match="centers must have shape"):
        make_softmax_field(10, n_classes=2, centers=centers)
    with pytest.raises(ValueError, match="coincide"):
        make_softmax_field(10, n_classes=2, centers=np.zeros((2, 2)))


# --------------------------------------------------------------------------- margin


@pytest.mark.parametrize("n_classes, n_features", [(2, 2), (4, 2), (3, 1), (5, 3)])
def test_margin_holds_for_all_pairs_raw(n_classes, n_features):
    gamma, r = 1.5, 0.7
    data = make_margin_clusters(
        900, n_classes=n_classes, margin=gamma, cluster_radius=r, n_features=n_features, scale=None, random_state=0
    )
    assert data.margin == gamma
    dist = cdist(data.X, data.X)
    different = data.y[:, None] != data.y[None, :]
    assert dist[different].min() >= gamma
    # Points lie in their class ball.
    assert np.all(np.linalg.norm(data.X - data.centers[data.y], axis=1) <= r * (1 + 1e-12))
    onehot = np.eye(n_classes)[data.y]
    np.testing.assert_array_equal(data.proba_true, onehot)
    np.testing.assert_array_equal(data.true_proba(data.X), onehot)


def test_margin_scaled_restatement_is_valid():
    raw = make_margin_clusters(800, n_classes=3, margin=20 / 3, cluster_radius=2.0, scale=None, random_state=5)
    scaled = make_margin_clusters(800, n_classes=3, margin=20 / 3, cluster_radius=2.0, scale="minmax", random_state=5)
    ptp = np.ptp(raw.X, axis=0)
    assert scaled.margin == pytest.approx((20 / 3) / ptp.max())
    assert scaled.margin_raw == pytest.approx(20 / 3)
    dist = cdist(scaled.X, scaled.X)
    different = scaled.y[:, None] != scaled.y[None, :]
    assert dist[different].min() >= scaled.margin
    np.testing.assert_allclose(scaled.to_raw(scaled.X), raw.X, atol=1e-9)


# --------------------------------------------------------------------------- common


@pytest.mark.parametrize("make", [make_lipschitz_logistic, make_softmax_field, make_margin_clusters])
def test_reproducible_with_random_state(make):
    a, b, c = make(300, random_state=11), make(300, random_state=11), make(300, random_state=12)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.array_equal(a.X, c.X)
    g1, g2 = make(50, random_state=np.random.default_rng(3)), make(50, random_state=np.random.default_rng(3))
    np.testing.assert_array_equal(g1.X, g2.X)


@pytest.mark.parametrize("make", [make_lipschitz_logistic, make_softmax_field, make_margin_clusters])
def test_single_sample_is_finite(make):
    data = make(1, random_state=0)
    assert data.X.shape[0] == 1 and np.all(np.isfinite(data.X))
    assert np.isfinite(data.lipschitz if data.lipschitz is not None else data.margin)


@pytest.mark.parametrize(
    "make, kwargs, exc, match",
    [
        (make_lipschitz_logistic, {"n_samples": 0}, ValueError, "n_samples"),
        (make_lipschitz_logistic, {"n_samples": 2.5}, TypeError, "n_samples"),
        (make_lipschitz_logistic, {"n_samples": True}, TypeError, "n_samples"),
        (make_lipschitz_logistic, {"n_samples": 10, "lipschitz": -1.0}, ValueError, "lipschitz"),
        (make_lipschitz_logistic, {"n_samples": 10, "lipschitz": float("nan")}, ValueError, "lipschitz"),
        (make_lipschitz_logistic, {"n_samples": 10, "box": (1.0, -1.0)}, ValueError, "box"),
        (make_lipschitz_logistic, {"n_samples": 10, "box": 5.0}, ValueError, "box"),
        (make_lipschitz_logistic, {"n_samples": 10, "direction": (0.0, 0.0)}, ValueError, "direction"),
        (make_lipschitz_logistic, {"n_samples": 10, "direction": (1.0, 0.0, 0.0)}, ValueError, "direction"),
        (make_lipschitz_logistic, {"n_samples": 10, "scale": "standard"}, ValueError, "scale"),
        (make_lipschitz_logistic, {"n_samples": 10, "offset": float("inf")}, ValueError, "offset"),
        (make_lipschitz_logistic, {"n_samples": 10, "n_features": 0}, ValueError, "n_features"),
        (make_lipschitz_logistic, {"n_samples": 10, "random_state": "seed"}, TypeError, "random_state"),
        (make_softmax_field, {"n_samples": 10, "n_classes": 1}, ValueError, "n_classes"),
        (make_softmax_field, {"n_samples": 10, "lipschitz": 0}, ValueError, "lipschitz"),
        (make_margin_clusters, {"n_samples": 10, "margin": 0.0}, ValueError, "margin"),
        (make_margin_clusters, {"n_samples": 10, "cluster_radius": -2.0}, ValueError, "cluster_radius"),
        (make_margin_clusters, {"n_samples": 10, "scale": "box"}, ValueError, "scale"),
    ],
)
def test_invalid_inputs_raise_clear_errors(make, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        make(**kwargs)


def test_true_proba_rejects_bad_points():
    data = make_lipschitz_logistic(20, random_state=0)
    with pytest.raises(ValueError, match=r"shape \(n_points, 2\)"):
        data.true_proba(np.zeros(2))
    with pytest.raises(ValueError, match="NaN"):
        data.true_proba(np.array([[np.nan, 0.0]]))
