"""Failure modes of the defaults found on data they were not tuned to (issue 21, "data you do not see").

Each test pins one generic failure mode met on real-like data (n_features > n_samples, a rare
class, constant or duplicated columns, many classes) and asserts the property that the fix
restores; ``nwbound experiment tabular --datasets ...`` (user guide, "On data the defaults were not
tuned to") has the figures.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.neighbors import NearestNeighbors

from nwbound.assumptions import estimate_lipschitz


def test_pilot_bandwidth_reaches_evaluation_points_when_distances_concentrate():
    # Six equidistant points (a regular simplex: every pairwise distance is √2), the extreme of
    # distance concentration in high dimension. The pilot half's own ⌈√3⌉ = 2nd-neighbour distance
    # is √2, where the Epanechnikov kernel is 0: no evaluation point had any mass and
    # estimate_lipschitz raised ("Fewer than 2 evaluation points ..."). Now λ is the median
    # distance from the evaluation points to their 2nd nearest pilot point, nudged past it.
    est = estimate_lipschitz(np.eye(6), [0, 1, 2, 0, 1, 2], random_state=0)
    assert est.details["bandwidth"] == np.nextafter(np.sqrt(2.0), np.inf)
    assert est.details["n_eval"] == 3  # every evaluation point reached
    assert est.value == 0.0  # p̂ is the same mean at every evaluation point: no slope


def test_pilot_bandwidth_fallback_on_a_wide_score_space():
    # The shape met with metric="auto" on 150 × 400 data: two classes at ±1 in the score column,
    # beside 400 standardised features at weight 0.0125. This draw raised before the fallback.
    rng = np.random.default_rng(114)
    y = rng.permutation(np.repeat([0, 1], 10))
    X = np.hstack([(2 * y - 1.0)[:, None], rng.normal(size=(20, 400)) * 0.0125])
    est = estimate_lipschitz(X, y, random_state=0)
    lam, n_eval = est.details["bandwidth"], est.details["n_eval"]
    assert n_eval >= 2 and np.isfinite(est.value) and est.value > 0
    # Independent formulas (the pilot half is the first half of the seed's permutation; m = 10,
    # k = ⌈√10⌉ = 4): the pilot half's own rule reaches fewer than 2 evaluation rows, so the
    # fallback is used, and it equals the median distance to the 4th nearest pilot row, nudged.
    perm = np.random.default_rng(0).permutation(20)
    pilot, evaluation = X[perm[:10]], X[perm[10:]]
    own = np.median(NearestNeighbors(n_neighbors=5).fit(pilot).kneighbors(pilot)[0][:, -1])
    to_pilot = NearestNeighbors(n_neighbors=4).fit(pilot).kneighbors(evaluation)[0]
    assert np.sum(to_pilot[:, 0] < own) < 2
    assert lam == pytest.approx(np.nextafter(np.median(to_pilot[:, -1]), np.inf), rel=1e-12)
    assert np.sum(to_pilot[:, 0] < lam) >= 5  # at least half of the 10 evaluation rows reached


def _binary_cube(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three binary features; p(y = 1) = 0.2 + 0.3·(x₀ + x₁): 0.2, 0.5 or 0.8 at the 8 corners."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, (n, 3)).astype(np.float64)
    p = 0.2 + 0.3 * (X[:, 0] + X[:, 1])
    return X, (rng.random(n) < p).astype(int), p


def test_pilot_bandwidth_on_repeated_rows_is_the_distance_to_the_next_distinct_point():
    # Discrete features: each corner of the cube holds ~125 rows, far more than ⌈√m⌉, so every
    # k-th neighbour distance was 0 and estimate_lipschitz raised ("the points' neighbours
    # coincide"), which made fit(lipschitz="auto") fail on any table of binary/one-hot columns.
    X, y, _ = _binary_cube(1000, 0)
    est = estimate_lipschitz(X, y, random_state=0)
    # Independent: the nearest distinct corner of a unit cube is at distance exactly 1.
    assert est.details["bandwidth"] == 1.0
    # p moves by 0.3 between adjacent corners (distance 1): the pilot's slope is about that, times
    # the safety factor 2; the noise of ~60 rows per corner keeps it within a loose range.
    assert 0.3 <= est.value <= 2.0


def test_lipschitz_auto_fits_discrete_features_and_its_certified_intervals_cover_p():
    from nwbound import NadarayaWatsonClassifier

    X, y, p = _binary_cube(1400, 1)
    X_q, _, p_q = _binary_cube(400, 2)
    # metric=None: the same pilot, without the score model's cost (the pilot runs in whatever
    # space the kernel works in; metric="auto"'s feature block is as discrete as the features).
    clf = NadarayaWatsonClassifier(metric=None, lipschitz="auto", bandwidth="auto", random_state=0).fit(X, y)
    iv = clf.predict_interval(X_q)
    assert np.isfinite(clf.lipschitz_) and clf.lipschitz_ > 0
    covered = (iv.lower[:, 1] <= p_q) & (p_q <= iv.upper[:, 1])
    assert covered.mean() >= 0.95
    cert = np.asarray(iv.certified)
    assert cert.any()
    # A certificate names the class with p > 1/2: never at the corners where p = 0.5.
    assert not np.any(cert & np.isclose(p_q, 0.5))
    assert np.all(clf.classes_[iv.predicted_index][cert] == (p_q[cert] > 0.5))


# ---------------------------------------------------------------------------------------------
# Advice that fits the settings the defaults use (cross-fitted, learned space, L and λ "auto")
# ---------------------------------------------------------------------------------------------
def _noise(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels independent of the features: p = 1/2 everywhere, nothing can be certified."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3)), rng.integers(0, 2, n)


def test_cross_fitted_useless_warning_gives_advice_that_fits_its_settings():
    import warnings

    from nwbound import NadarayaWatsonClassifier
    from nwbound.diagnostics import UselessBoundWarning

    X, y = _noise(400, 0)
    clf = NadarayaWatsonClassifier(metric="auto", lipschitz="auto", bandwidth="auto", cross_fit=True,
                                   random_state=0).fit(X[:300], y[:300])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        iv = clf.predict_interval(X[300:])
    assert not np.any(iv.certified)
    text = " ".join(str(w.message) for w in caught if issubclass(w.category, UselessBoundWarning))
    assert text, "0 % certified must be said"
    # It chose λ and L itself: no advice to set λ, to use bandwidth='auto', to estimate L, or on k
    # (not localized); L is given as a factor, each model having its own L in its own space.
    for wrong in ("bandwidth=", "n_neighbors", "estimate_lipschitz", "at L = "):
        assert wrong not in text
    assert "lipschitz_report_" in text and "× the current L" in text
    # sensitivity_report on a learned space needs the training rows: the advice passes them.
    assert "X_train=X_train, y_train=y_train" in text


def test_plain_features_advice_names_metric_auto_in_python_only():
    import dataclasses

    from nwbound import NadarayaWatsonClassifier
    from nwbound.diagnostics import AdviceContext, bound_usefulness

    X, y = _noise(300, 1)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=2.0, lipschitz=5.0).fit(X, y)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        iv = clf.predict_interval(X[:50])
    ctx = AdviceContext.from_estimator(clf)
    assert ctx.learned_space is False
    report = bound_usefulness(iv, beta=5.0, context=ctx)
    assert report.cause == "bias" and "metric='auto'" in report.explanation
    cli = bound_usefulness(iv, beta=5.0, context=dataclasses.replace(ctx, interface="cli"))
    assert "metric" not in cli.explanation  # the command line has no such option


def test_sensitivity_report_on_a_learned_space_asks_for_the_training_rows():
    from nwbound import NadarayaWatsonClassifier
    from nwbound.assumptions import sensitivity_report

    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 3))
    y = (rng.random(400) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(int)
    clf = NadarayaWatsonClassifier(metric="standard", bandwidth=1.0, lipschitz=0.5).fit(X[:300], y[:300])
    with pytest.raises(ValueError, match="pass X_train and y_train"):
        sensitivity_report(clf, X[300:], y[300:], [0.1, 0.5])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = sensitivity_report(clf, X[300:], y[300:], [0.1, 0.5, 2.0], X_train=X[:300], y_train=y[:300])
        own = clf.predict_interval(X[300:])
    # At the model's own L the refit reproduces the model (the same map on the same rows)...
    assert rows[1]["mean_epsilon"] == pytest.approx(
        float(own.epsilon[np.arange(100), np.argmax(own.proba, axis=1)].mean()), rel=1e-12)
    # ...and the intervals are nested in L.
    eps = [r["mean_epsilon"] for r in rows]
    assert eps[0] < eps[1] < eps[2]


# ---------------------------------------------------------------------------------------------
# Columns constant on the rows a scale is fitted on (pixels, rare categories)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("metric", ["standard", "auto"])
def test_a_column_constant_on_the_fit_rows_is_left_unscaled(metric):
    from nwbound.spaces import LearnedSpace

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    X[:, 1] = 0.1  # constant on the fit rows; np.full(120, 0.1).std() is ~1e-17, not 0
    assert X[:, 1].std() > 0
    y = (X[:, 0] > 0).astype(int)
    space = LearnedSpace(metric, random_state=0).fit(X, y)
    Q = X[:5].copy()
    Q[:, 1] = 1.1  # a value the fit rows never had (a pixel lit only outside them)
    shift = space.transform(Q) - space.transform(X[:5])
    # Independent: unscaled, the constant column moves by exactly 1.1 − 0.1 = 1 (times the feature
    # weight r in "auto"); every other coordinate is unchanged.
    # The column is first divided by its power-of-two unit (0.1 ∈ [2⁻⁴, 2⁻³): 1/16), exactly.
    weight = (1.0 if metric == "standard" else space.feature_weight_) * 16.0
    column = space.n_components_ - 3 + 1
    assert shift[:, column] == pytest.approx(np.full(5, weight), rel=1e-9)
    assert np.abs(np.delete(shift, column, axis=1)).max() < 1e-12


def test_cli_feature_scaler_leaves_a_constant_column_unscaled():
    from nwbound.io.pipeline import FeatureScaler

    X = np.column_stack([np.full(7, 0.1), np.arange(7.0)])
    scaler = FeatureScaler.fit(X, "standard")
    assert scaler.scale.tolist()[0] == 1.0  # was 1/1.4e-17
    assert scaler.scale[1] == pytest.approx(1.0 / np.arange(7.0).std())


def test_pilot_halves_keep_every_class_on_small_data():
    # 10 rows, 7 of class 0 and 3 of class 1 (a few dozen rows per model is what cross-fitting
    # leaves a small table). With random_state=13 the random half holds class 0 only, and
    # estimate_lipschitz raised "The pilot half holds a single class", which made
    # fit(lipschitz="auto") fail on 30-row tables. The rows are now dealt class by class.
    codes = np.array([0] * 7 + [1] * 3)
    perm = np.random.default_rng(13).permutation(10)
    assert np.unique(codes[perm[:5]]).shape[0] == 1  # the case the fallback is for
    X = np.linspace(0.0, 1.0, 10)[:, None]
    est = estimate_lipschitz(X, codes, random_state=13)
    # Independent count: the pilot gets ⌈n_c/2⌉ rows of each class.
    assert est.details["n_pilot"] == 4 + 2
    assert np.isfinite(est.value) and est.value >= 0


def test_lipschitz_auto_fits_thirty_rows():
    from nwbound import NadarayaWatsonClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = (X[:, 0] > 0).astype(int)
    clf = NadarayaWatsonClassifier(metric=None, lipschitz="auto", bandwidth="auto", random_state=0).fit(X, y)
    assert np.isfinite(clf.lipschitz_) and clf.lipschitz_ > 0
    assert clf.predict(X[:5]).shape == (5,)
