"""nwbound.assumptions on synthetic data with a known Lipschitz constant / margin.

Expected values come from the generators (true L, true γ) and from brute-force
distance computations with scipy, never from this module's own output.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.distance import cdist, pdist

from nwbound import DyadicClassifier, NadarayaWatsonClassifier
from nwbound.assumptions import (
    LipschitzEstimate,
    MarginEstimate,
    OverlapReport,
    empirical_margin,
    estimate_lipschitz,
    lipschitz_lower_bound,
    overlap_test,
    sensitivity_report,
    strongin_lipschitz,
)
from nwbound.datasets import make_lipschitz_logistic, make_margin_clusters


@pytest.fixture(scope="module")
def logistic():
    # The paper's field: L = 0.15 on [-10, 10]², min-max scaled to [0, 1]² → L ≈ 3.0.
    return make_lipschitz_logistic(4000, random_state=0)


# ---------------------------------------------------------------------------
# Strongin and the lower bound
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_strongin_is_of_the_true_order(logistic, seed):
    L = logistic.lipschitz
    assert L == pytest.approx(3.0, rel=1e-2)
    est = strongin_lipschitz(logistic.X, logistic.y, random_state=seed)
    assert isinstance(est, LipschitzEstimate)
    assert est.method == "strongin" and not est.certified and not est.lower_bound_only
    # The raw slope is of the right order, and the safety factor puts it above L
    # while staying within a factor 3 of it.
    assert L / 3 <= est.raw_value <= 3 * L
    assert est.value == pytest.approx(2.0 * est.raw_value)
    assert L <= est.value <= 3 * L
    d = est.details
    assert d["pair_distance"] >= d["min_pair_distance"] * (1 - 1e-9)
    assert d["n_pilot"] == 2000 and 0 < d["n_eval"] <= 2000 and d["n_pairs"] > 0
    assert "units of the features" in est.units


def test_strongin_on_raw_labels_would_be_meaningless(logistic):
    # What the docstring warns about: on raw 0/1 labels the largest slope is
    # 1 / (closest differently labelled pair), far above the true L = 3.
    X, y = logistic.X, logistic.y
    closest = cdist(X[y == 0], X[y == 1]).min()
    assert 1.0 / closest > 30 * logistic.lipschitz
    est = strongin_lipschitz(X, y, random_state=0)
    assert est.raw_value < 1.0 / closest / 10


def test_strongin_parameters_and_errors(logistic):
    X, y = logistic.X[:600], logistic.y[:600]
    est = strongin_lipschitz(X, y, safety_factor=1.5, bandwidth=0.15, min_pair_distance=0.3, n_eval=200,
                             random_state=0)
    assert est.safety_factor == 1.5 and est.value == pytest.approx(1.5 * est.raw_value)
    assert est.details["bandwidth"] == 0.15 and est.details["min_pair_distance"] == 0.3
    with pytest.raises(ValueError, match="safety_factor"):
        strongin_lipschitz(X, y, safety_factor=0.5)
    with pytest.raises(ValueError, match="min_pair_distance"):
        strongin_lipschitz(X, y, min_pair_distance=10.0, random_state=0)  # the square's diagonal is √2
    with pytest.raises(ValueError, match="bandwidth"):
        strongin_lipschitz(X, y, bandwidth="silverman")
    with pytest.raises(ValueError, match="class"):
        strongin_lipschitz(X, np.zeros(600))


def test_lower_bound_is_below_true_L_and_matches_formula(logistic):
    X, y = logistic.X[:1500], logistic.y[:1500]
    est = lipschitz_lower_bound(X, y, 0.5)
    diameter = pdist(X).max()
    assert est.value == pytest.approx(0.5 / diameter, rel=1e-9)
    assert est.value < logistic.lipschitz
    assert est.lower_bound_only and not est.certified and est.method == "lower_bound"
    assert any("LOWER bound" in a for a in est.assumptions)
    box = lipschitz_lower_bound(X, y, 0.5, diameter="box")
    assert box.value <= est.value  # the box diagonal is at least the diameter
    with pytest.raises(ValueError, match="threshold_probability"):
        lipschitz_lower_bound(X, y, 1.5)
    with pytest.raises(ValueError, match="diameter"):
        lipschitz_lower_bound(X, y, 0.5, diameter="fast")


# ---------------------------------------------------------------------------
# overlap test and margin
# ---------------------------------------------------------------------------


def test_overlap_test_logistic_is_overlapping(logistic):
    rep = overlap_test(logistic.X, logistic.y, random_state=0)
    assert isinstance(rep, OverlapReport)
    assert rep.decision == "overlapping"
    assert rep.n_used == 1000 and sum(rep.class_counts.values()) == 1000
    assert rep.within_class_max <= rep.global_max
    assert "units of the features" in rep.units


@pytest.mark.parametrize("n_classes,scale", [(2, None), (3, "minmax")])
def test_overlap_test_margin_clusters_is_separable(n_classes, scale):
    data = make_margin_clusters(800, n_classes=n_classes, scale=scale, random_state=1)
    rep = overlap_test(data.X, data.y, random_state=0)
    assert rep.decision == "separable"
    assert rep.sample_margin >= data.margin


def test_overlap_test_numbers_match_brute_force():
    data = make_margin_clusters(300, n_classes=3, random_state=2)
    X, y = data.X, data.y
    rep = overlap_test(X, y, n_samples=10_000, working_memory=0.01)  # all points, many small blocks
    assert rep.n_used == 300
    assert rep.global_max == pytest.approx(pdist(X).max(), rel=1e-9)
    within = max(pdist(X[y == c]).max() for c in np.unique(y))
    assert rep.within_class_max == pytest.approx(within, rel=1e-9)
    assert rep.ratio == pytest.approx(within / pdist(X).max(), rel=1e-9)
    between = min(cdist(X[y == a], X[y == b]).min() for a in range(3) for b in range(a + 1, 3))
    assert rep.sample_margin == pytest.approx(between, rel=1e-9)
    for c in range(3):
        assert rep.per_class_max[c] == pytest.approx(pdist(X[y == c]).max(), rel=1e-9)


def test_overlap_test_too_small_sample():
    data = make_lipschitz_logistic(200, random_state=0)
    with pytest.raises(ValueError, match="n_samples"):
        overlap_test(data.X, data.y, n_samples=3, random_state=0)
    y = data.y.copy()
    y[:] = 0
    y[0] = 1  # a class with one point: no within-class distance
    with pytest.raises(ValueError, match="too small|n_samples|stratified"):
        overlap_test(data.X, y, n_samples=50, random_state=0)
    with pytest.raises(ValueError, match="threshold"):
        overlap_test(data.X, data.y, threshold=1.5)
    with pytest.raises(ValueError):
        overlap_test(np.full((10, 2), np.nan), np.arange(10) % 2)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_empirical_margin_at_least_generator_margin(n_classes):
    data = make_margin_clusters(1500, n_classes=n_classes, random_state=3)
    est = empirical_margin(data.X, data.y)
    assert isinstance(est, MarginEstimate) and not est.certified
    assert est.value >= data.margin
    brute = min(
        cdist(data.X[data.y == a], data.X[data.y == b]).min()
        for a in range(n_classes) for b in range(a + 1, n_classes)
    )
    assert est.value == pytest.approx(brute, rel=1e-9)
    i, j = est.pair
    assert data.y[i] != data.y[j]
    assert np.linalg.norm(data.X[i] - data.X[j]) == pytest.approx(est.value)


def test_empirical_margin_zero_for_coinciding_points():
    X = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 1.0], [3.0, 0.0]])
    y = np.array([0, 0, 1, 1])
    assert empirical_margin(X, y).value == 0.0
    with pytest.raises(ValueError, match="class"):
        empirical_margin(X, np.zeros(4))


# ---------------------------------------------------------------------------
# sensitivity report
# ---------------------------------------------------------------------------


def test_sensitivity_report_rows(logistic):
    X, y = logistic.X[:2000], logistic.y[:2000]
    X_test, y_test = logistic.X[2000:2600], logistic.y[2000:2600]
    model = NadarayaWatsonClassifier(metric=None, bandwidth=0.15, lipschitz=3.0).fit(X, y)
    values = [1.0, 3.0, 9.0]
    rows = sensitivity_report(model, X_test, y_test, values)
    assert [r["lipschitz"] for r in rows] == values
    acc = float(np.mean(model.predict(X_test) == y_test))
    for r in rows:
        # λ is fixed, so the predictions (and accuracy) do not depend on L.
        assert r["accuracy"] == pytest.approx(acc)
        f = r["share_flagged"]
        parts = [(f, r["accuracy_flagged"]), (1 - f, r["accuracy_unflagged"])]
        assert sum(w * a for w, a in parts if w > 0) == pytest.approx(acc)
    eps = [r["mean_epsilon"] for r in rows]
    assert eps == sorted(eps) and eps[0] < eps[-1]
    flagged = [r["share_flagged"] for r in rows]
    assert flagged == sorted(flagged)
    # With X_train given explicitly the result is the same.
    again = sensitivity_report(model, X_test, y_test, values, X_train=X, y_train=y)
    assert [r["mean_epsilon"] for r in again] == pytest.approx(eps)


def test_sensitivity_report_bad_input(logistic):
    X, y = logistic.X[:200], logistic.y[:200]
    model = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=3.0)
    with pytest.raises(ValueError, match="fit"):
        sensitivity_report(model, X, y, [1.0])
    model.fit(X, y)
    for bad in ([], [0.0], [-1.0], [math.inf]):
        with pytest.raises(ValueError, match="lipschitz_values"):
            sensitivity_report(model, X, y, bad)
    with pytest.raises(TypeError, match="lipschitz"):
        sensitivity_report(object(), X, y, [1.0])
    with pytest.raises(ValueError, match="y_test"):
        sensitivity_report(model, X, y[:10], [1.0])


def test_sensitivity_report_on_a_dyadic_model_asks_for_the_training_rows(logistic):
    # It said "model is not a fitted NadarayaWatsonClassifier: fit it first" of a fitted DyadicClassifier.
    X, y = logistic.X[:200], logistic.y[:200]
    model = DyadicClassifier(metric=None, lipschitz=1.0, resolution=3).fit(X, y)
    with pytest.raises(ValueError, match="fitted DyadicClassifier keeps per-cell sums, not its training rows: pass X_train"):
        sensitivity_report(model, X[:50], y[:50], [0.5, 1.0])
    rows = sensitivity_report(model, X[:50], y[:50], [0.5, 1.0], X_train=X, y_train=y)
    assert len(rows) == 2


def test_sensitivity_report_reads_the_labels_it_scores(logistic):
    # Text labels for a model with integer classes scored every prediction wrong (accuracy 0,
    # silently), and a column of labels (m, 1) broadcast against the m predictions.
    X, y = logistic.X[:300], logistic.y[:300]
    model = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=3.0).fit(X, y)
    with pytest.raises(ValueError, match="y_test.*label types"):
        sensitivity_report(model, X[:50], np.where(y[:50] == 1, "1", "0"), [1.0])
    rows = sensitivity_report(model, X[:50], y[:50], [1.0, 3.0])
    column = sensitivity_report(model, X[:50], y[:50, None], [1.0, 3.0])
    assert column == rows
    assert rows[0]["accuracy"] == pytest.approx(np.mean(model.predict(X[:50]) == y[:50]))


# ---------------------------------------------------------------------------
# overlap: touching classes next to a far one (iris), mixed nearest neighbours
# ---------------------------------------------------------------------------


def test_overlap_test_iris_is_overlapping():
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import MinMaxScaler

    X, y = load_iris(return_X_y=True)
    rep = overlap_test(MinMaxScaler().fit_transform(X), y, random_state=0)
    # The ratio alone (0.64) reads "separable": setosa is far, but versicolor and virginica touch.
    assert rep.ratio < rep.threshold
    assert rep.decision == "overlapping"
    assert rep.mixed_neighbour_share > rep.mixed_threshold
    assert "nearest neighbour" in str(rep)


def test_mixed_neighbour_share_matches_brute_force():
    data = make_lipschitz_logistic(300, random_state=3)
    X, y = data.X, data.y
    rep = overlap_test(X, y, n_samples=10_000, working_memory=0.01)
    D = cdist(X, X)
    np.fill_diagonal(D, np.inf)
    want = np.mean(y[D.argmin(axis=1)] != y)
    assert rep.mixed_neighbour_share == pytest.approx(want)


def test_overlap_test_bad_mixed_threshold():
    data = make_lipschitz_logistic(100, random_state=0)
    for bad in (-0.1, 1.0, "x", True):
        with pytest.raises(ValueError, match="mixed_threshold"):
            overlap_test(data.X, data.y, mixed_threshold=bad)


# ---------------------------------------------------------------------------
# estimate_lipschitz: the documented default for --lipschitz auto
# ---------------------------------------------------------------------------


def test_estimate_lipschitz_is_strongin_in_the_scaled_units():
    from sklearn.preprocessing import MinMaxScaler

    raw = make_lipschitz_logistic(1500, scale=None, random_state=4)
    scaler = MinMaxScaler().fit(raw.X)
    est = estimate_lipschitz(raw.X, raw.y, scaler=scaler, random_state=5)
    ref = strongin_lipschitz(scaler.transform(raw.X), raw.y, random_state=np.random.default_rng(5))
    assert est.value == pytest.approx(ref.value)
    assert est.safety_factor == 2.0 and est.value == pytest.approx(2.0 * est.raw_value)
    assert "MinMaxScaler" in est.units and "classifier sees" in est.units
    # The true L of the field in [0, 1]² units is 0.15 · 20 = 3.0; pilot-Strongin is of that order.
    assert 1.5 < est.value < 15.0


def test_estimate_lipschitz_subsamples_and_is_reproducible(logistic):
    a = estimate_lipschitz(logistic.X, logistic.y, max_samples=1000)
    b = estimate_lipschitz(logistic.X, logistic.y, max_samples=1000)
    assert a.details["n_used"] == 1000 and a.value == b.value
    assert a.units == strongin_lipschitz(logistic.X[:100], logistic.y[:100], random_state=0).units


def test_estimate_lipschitz_bad_input(logistic):
    with pytest.raises(TypeError, match="scaler"):
        estimate_lipschitz(logistic.X, logistic.y, scaler=object())
    with pytest.raises((TypeError, ValueError), match="max_samples"):
        estimate_lipschitz(logistic.X, logistic.y, max_samples=2)
    with pytest.raises(ValueError, match="safety_factor"):
        estimate_lipschitz(logistic.X, logistic.y, safety_factor=0.5)
