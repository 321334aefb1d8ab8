"""Tests for nwbound.baselines: CME classifier, logistic regression, split conformal."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from nwbound.baselines import CMEClassifier, SplitConformalSets, make_logistic_regression
from nwbound.baselines.cme import _available_memory_bytes, _project_rows_to_simplex


# --------------------------------------------------------------------------- helpers
def _blobs(n: int, n_classes: int = 3, d: int = 3, seed: int = 0, spread: float = 2.0):
    """Overlapping Gaussian blobs (labels 0..C-1, every class present)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    rng.shuffle(y)
    centres = rng.normal(scale=spread, size=(n_classes, d))
    X = centres[y] + rng.normal(size=(n, d))
    return X, y


def _reference_cme(X_train, y_train, X_query, *, amplitude, gamma, regularization,
                   rkhs_bound, delta, noise_constant):
    """The reference per-query formula (Baumann & Schön; the paper's code).

    For every query: build K + nλ_r I from explicit pairwise differences and
    solve it with ``np.linalg.solve``; c_g from ``slogdet`` (an LU, not a
    Cholesky). Returns raw p̂, the bias part P·√B and the sampling part
    P·c_g/√(nλ_r).
    """
    n = X_train.shape[0]
    classes = np.unique(y_train)
    Y = (y_train[None, :] == classes[:, None]).astype(float)  # C × n one-hot

    def k(a, b):
        diff = a[:, None, :] - b[None, :, :]
        return amplitude**2 * np.exp(-gamma * np.sum(diff * diff, axis=-1))

    sign, logdet = np.linalg.slogdet(k(X_train, X_train) + max(1.0, n * regularization) * np.eye(n))
    assert sign > 0
    c_g = noise_constant * math.sqrt(logdet - 2.0 * math.log(delta))
    raw, bias, sampling = [], [], []
    for x in X_query:  # per query, as the reference does
        K_reg = k(X_train, X_train) + n * regularization * np.eye(n)
        k_x = k(X_train, x[None, :])[:, 0]
        sol = np.linalg.solve(K_reg, k_x)
        raw.append(Y @ sol)
        P = math.sqrt(max(amplitude**2 - k_x @ sol, 0.0))
        bias.append(P * math.sqrt(rkhs_bound))
        sampling.append(P * c_g / math.sqrt(n * regularization))
    return np.array(raw), np.array(bias), np.array(sampling), logdet


# --------------------------------------------------------------------------- sklearn API
@parametrize_with_checks([CMEClassifier()])
def test_sklearn_compatible(estimator, check):
    # No expected failures: every check applies to a dense multiclass classifier.
    check(estimator)


# --------------------------------------------------------------------------- CME
@pytest.mark.parametrize(
    "params",
    [
        {},  # defaults: nλ_r = 0.02 < 1, log-det of K + I needs its own factor
        # nλ_r = 2: both log-dets come from the one factor.
        {"regularization": 0.01, "noise_constant": 0.25, "rkhs_bound": 2.0, "delta": 0.1},
        {"amplitude": 1.0, "gamma": 0.5},
    ],
)
def test_cme_matches_per_query_reference(params):
    X, y = _blobs(200, n_classes=3, d=3, seed=1)
    rng = np.random.default_rng(2)
    # Queries near the data, between clusters and far away (P → s there).
    X_query = np.vstack([X[:5] + 0.01, rng.normal(scale=3.0, size=(10, 3)), [[40.0, -40.0, 40.0]]])
    model = CMEClassifier(**params).fit(X, y)
    full = {
        "amplitude": np.exp(2.6), "gamma": 1 / np.exp(2) ** 2, "regularization": 1e-4,
        "rkhs_bound": 1.0, "delta": 0.05, "noise_constant": 0.5, **params,
    }
    raw_ref, bias_ref, sampling_ref, logdet_ref = _reference_cme(X, y, X_query, **full)

    np.testing.assert_allclose(model.log_det_, logdet_ref, rtol=1e-10)
    np.testing.assert_allclose(model.predict_raw(X_query), raw_ref, rtol=0, atol=1e-8)
    interval = model.predict_interval(X_query)
    for c in range(3):  # the same ε for every class
        np.testing.assert_allclose(interval.bias[:, c], bias_ref, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(interval.sampling[:, c], sampling_ref, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(interval.proba, np.clip(raw_ref, 0, 1), rtol=0, atol=1e-8)
    # Far from the data P(x) = s: the bound is s·(√B + c_g/√(nλ_r)).
    np.testing.assert_allclose(
        interval.bias[-1, 0] + interval.sampling[-1, 0],
        full["amplitude"] * model.epsilon_factor_,
        rtol=1e-10,
    )


def test_cme_interval_invariants():
    X, y = _blobs(150, n_classes=3, d=2, seed=3)
    X_query = np.random.default_rng(4).normal(scale=4.0, size=(60, 2))
    # Small B and noise constant: the default CME bound is vacuous (ε = 1) here.
    model = CMEClassifier(
        gamma=0.5, amplitude=1.0, regularization=1e-3, rkhs_bound=1e-3, noise_constant=1e-3
    ).fit(X, y)
    it = model.predict_interval(X_query)
    assert len(it) == 60 and it.proba.shape == (60, 3)
    assert np.all(it.epsilon >= 0) and np.all(it.epsilon <= 1)
    assert np.all(it.lower <= it.proba) and np.all(it.proba <= it.upper)
    assert np.all((0 <= it.lower) & (it.upper <= 1))
    width = np.minimum(1.0, it.bias + it.sampling)  # the same for every class
    assert np.all(width == width[:, :1])
    np.testing.assert_array_equal(it.lower, np.clip(it.proba - width, 0, 1))
    np.testing.assert_array_equal(it.upper, np.clip(it.proba + width, 0, 1))
    np.testing.assert_array_equal(it.epsilon, np.maximum(it.proba - it.lower, it.upper - it.proba))
    assert not it.vacuous.any()
    np.testing.assert_array_equal(it.n_eff, np.full(60, 150.0))
    np.testing.assert_allclose(it.bandwidth, 1.0)  # 1/√(2·0.5)
    kappa = np.exp(-0.5 * ((X_query[:, None, :] - X[None]) ** 2).sum(-1)).sum(1)
    np.testing.assert_allclose(it.kappa, kappa, rtol=1e-12)
    # Some bounds must be informative here (ε < 1), or the checks above are empty.
    assert np.mean(it.epsilon < 1) > 0.5
    outside = np.any((X_query < X.min(0)) | (X_query > X.max(0)), axis=1)
    np.testing.assert_array_equal(it.outside_box, outside)


def test_cme_proba_is_simplex_projection_and_matches_predict():
    X, y = _blobs(120, n_classes=4, d=2, seed=5, spread=1.0)
    X_query = np.random.default_rng(6).normal(scale=3.0, size=(200, 2))
    model = CMEClassifier(gamma=2.0, amplitude=1.0, regularization=1e-5).fit(X, y)
    raw = model.predict_raw(X_query)
    proba = model.predict_proba(X_query)
    assert np.any((raw < 0) | (raw > 1)), "test data should produce raw values outside [0, 1]"
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(model.classes_[proba.argmax(1)], model.predict(X_query))
    # Same argmax as p̂ wherever p̂'s top two entries differ beyond rounding.
    top2 = np.sort(raw, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-12
    assert clear.sum() > 100
    np.testing.assert_array_equal(raw.argmax(1)[clear], proba.argmax(1)[clear])
    # Projection = max(raw − θ, 0) with θ solving Σ max(raw − θ, 0) = 1 (bisection).
    lo, hi = raw.min(1) - 1.0, raw.max(1)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        too_big = np.maximum(raw - mid[:, None], 0).sum(1) > 1
        lo, hi = np.where(too_big, mid, lo), np.where(too_big, hi, mid)
    np.testing.assert_allclose(proba, np.maximum(raw - lo[:, None], 0), atol=1e-10)


def test_project_rows_to_simplex_fixed_points():
    rows = np.array([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0], [-1.0, -1.0, -1.0], [3.0, 0.0, 0.0]])
    out = _project_rows_to_simplex(rows)
    np.testing.assert_allclose(out, [[0.2, 0.3, 0.5], [1, 0, 0], [1 / 3] * 3, [1, 0, 0]])


def test_cme_chunked_prediction_equals_single_batch():
    X, y = _blobs(100, seed=7)
    X_query = np.random.default_rng(8).normal(size=(37, 3))
    whole = CMEClassifier().fit(X, y).predict_interval(X_query)
    # 0.002 MiB ≈ 2 kB: batches of one query.
    chunked = CMEClassifier(working_memory=0.002).fit(X, y).predict_interval(X_query)
    for name in ("proba", "epsilon", "kappa"):
        # Different BLAS paths round differently; the condition number amplifies it.
        np.testing.assert_allclose(
            getattr(chunked, name), getattr(whole, name), rtol=1e-8, atol=1e-10
        )


def test_cme_translation_invariant_far_from_origin():
    # The kernel depends on differences only; a large offset must not change p̂.
    X, y = _blobs(80, seed=9)
    q = np.random.default_rng(10).normal(size=(10, 3))
    model = CMEClassifier(gamma=0.3, amplitude=1.0).fit(X, y)
    shifted = CMEClassifier(gamma=0.3, amplitude=1.0).fit(X + 1e6, y)
    np.testing.assert_allclose(shifted.predict_raw(q + 1e6), model.predict_raw(q), atol=1e-6)


@pytest.mark.parametrize("change", [{"gamma": 5.0}, {"amplitude": 3.0}, {"regularization": 0.1},
                                    {"delta": 0.5}, {"noise_constant": 2.0}])
def test_cme_setting_changed_after_fit_is_refused(change):
    """set_params(gamma=...) after fit used to predict with the new kernel and the old alpha_ and
    Cholesky factor (neither the old model nor a fresh fit), and delta/noise_constant were silently
    ignored: a refit is asked now. rkhs_bound, read when predicting, acts as a fresh fit."""
    X, y = _blobs(150, seed=21)
    clf = CMEClassifier(gamma=0.5, regularization=1e-2).fit(X, y)
    expected = clf.predict_interval(X[:20])
    clf.set_params(**change)
    name = next(iter(change))
    for method in (clf.predict_interval, clf.predict_proba, clf.predict, clf.predict_raw):
        with pytest.raises(ValueError, match=rf"{name}=.* was set after fit .*call fit again"):
            method(X[:20])
    clf.set_params(gamma=0.5, amplitude=CMEClassifier().amplitude, regularization=1e-2, delta=0.05,
                   noise_constant=0.5)
    np.testing.assert_array_equal(clf.predict_interval(X[:20]).upper, expected.upper)
    clf.set_params(rkhs_bound=4.0)
    fresh = CMEClassifier(gamma=0.5, regularization=1e-2, rkhs_bound=4.0).fit(X, y)
    np.testing.assert_allclose(clf.predict_interval(X[:20]).upper, fresh.predict_interval(X[:20]).upper, rtol=1e-12)
    assert clf.epsilon_factor_ == pytest.approx(fresh.epsilon_factor_, rel=1e-12)


def test_cme_memory_refusal_names_gib():
    X, y = _blobs(200, seed=11)
    with pytest.raises(ValueError, match=r"GiB.*[Ss]ubsample"):
        CMEClassifier(max_memory_bytes=1000).fit(X, y)


def test_cme_default_memory_limit_refuses_before_allocating():
    if _available_memory_bytes() is None:
        pytest.skip("available memory is not readable on this platform")
    n = 400_000  # Gram matrix 1.2 TiB; X itself is 3 MiB
    X = np.linspace(0, 1, n)[:, None]
    y = np.arange(n) % 2
    with pytest.raises(ValueError, match="GiB"):
        CMEClassifier().fit(X, y)


@pytest.mark.parametrize(
    ("X", "y", "match"),
    [
        (np.array([[0.0, np.nan], [1.0, 2.0], [2.0, 1.0]]), np.array([0, 1, 0]), "NaN"),
        (np.array([[0.0, np.inf], [1.0, 2.0], [2.0, 1.0]]), np.array([0, 1, 0]), "infinity"),
        (np.ones((4, 2)), np.zeros(4), "1 class"),
        (np.ones((4, 2)), np.array([0.1, 0.2, 0.3, 0.4]), "Unknown label type"),
        (np.ones((4, 2)), np.array([0, 1, 0]), "inconsistent numbers of samples"),
    ],
)
def test_cme_bad_training_input(X, y, match):
    with pytest.raises(ValueError, match=match):
        CMEClassifier().fit(X, y)


def test_cme_bad_prediction_input():
    X, y = _blobs(50, d=3, seed=12)
    model = CMEClassifier().fit(X, y)
    with pytest.raises(ValueError, match="2 features.*expecting 3 features"):
        model.predict(X[:, :2])
    with pytest.raises(ValueError, match="NaN"):
        model.predict_interval(np.full((2, 3), np.nan))
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        CMEClassifier().predict_interval(X)


@pytest.mark.parametrize(
    ("param", "value", "error"),
    [
        ("gamma", -1.0, ValueError),
        ("amplitude", 0.0, ValueError),
        ("regularization", 0.0, ValueError),
        ("delta", 1.5, ValueError),
        ("rkhs_bound", -1.0, ValueError),
        ("noise_constant", float("nan"), ValueError),
        ("max_memory_bytes", -5, ValueError),
        ("gamma", "auto", TypeError),
    ],
)
def test_cme_bad_parameters_are_named(param, value, error):
    X, y = _blobs(30, seed=13)
    with pytest.raises(error, match=param):
        CMEClassifier(**{param: value}).fit(X, y)


# --------------------------------------------------------------------------- logistic
def test_logistic_pipeline():
    model = make_logistic_regression(C=0.5, random_state=0)
    assert model.has_bounds is False and clone(model).has_bounds is False
    assert isinstance(model.steps[0][1], StandardScaler)
    logreg = model.steps[-1][1]
    assert isinstance(logreg, LogisticRegression) and logreg.C == 0.5 and logreg.max_iter == 5000
    assert make_logistic_regression(max_iter=50).steps[-1][1].max_iter == 50
    X, y = _blobs(300, seed=14)
    model.fit(X * 1000.0, y)  # unscaled features: the scaler makes this converge
    proba = model.predict_proba(X * 1000.0)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    assert (model.predict(X * 1000.0) == y).mean() > 0.8
    assert not hasattr(model, "predict_interval")


def test_logistic_unknown_keyword():
    with pytest.raises(TypeError, match="max_iters"):
        make_logistic_regression(max_iters=10)


# --------------------------------------------------------------------------- conformal
@pytest.fixture(scope="module")
def conformal_data():
    X, y = _blobs(4000, n_classes=3, d=2, seed=15, spread=1.5)
    model = make_logistic_regression().fit(X[:1000], y[:1000])
    return model, (X[1000:2000], y[1000:2000]), (X[2000:], y[2000:])


def test_conformal_numpy_quantile_and_sets(conformal_data):
    model, (X_cal, y_cal), (X_test, _) = conformal_data
    sets = SplitConformalSets(model, alpha=0.1, backend="numpy").fit(X_cal, y_cal)
    # q̂: the smallest calibration score with at least ⌈(n+1)(1−α)⌉ = 901 scores ≤ it.
    scores = 1.0 - model.predict_proba(X_cal)[np.arange(1000), y_cal]
    candidates = np.sort(scores)
    counts = (scores[None, :] <= candidates[:, None]).sum(1)
    assert sets.quantile_ == candidates[np.argmax(counts >= 901)]
    member = sets.predict_set(X_test)
    expected = 1.0 - model.predict_proba(X_test) <= sets.quantile_ + 1e-8
    np.testing.assert_array_equal(member, expected)


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2])
def test_conformal_mapie_and_numpy_agree(conformal_data, alpha):
    pytest.importorskip("mapie.classification")
    model, (X_cal, y_cal), (X_test, _) = conformal_data
    ours = SplitConformalSets(model, alpha=alpha, backend="numpy").fit(X_cal, y_cal)
    theirs = SplitConformalSets(model, alpha=alpha, backend="mapie").fit(X_cal, y_cal)
    assert theirs.backend_ == "mapie"
    np.testing.assert_array_equal(ours.predict_set(X_test), theirs.predict_set(X_test))


@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_conformal_marginal_coverage(conformal_data, backend):
    model, (X_cal, y_cal), (X_test, y_test) = conformal_data
    sets = SplitConformalSets(model, alpha=0.1, backend=backend).fit(X_cal, y_cal)
    # Coverage over 2000 test points; sd ≈ √(0.09/1000 + 0.09/2000) ≈ 0.012 → 3 sd.
    assert sets.coverage(X_test, y_test) >= 0.9 - 0.036


@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_conformal_setting_changed_after_fit_is_refused(conformal_data, backend):
    """set_params(alpha=...) after fit used to keep the old q̂ (sets at the old level) while
    ``compare`` reported the new alpha; another estimator was used with the old q̂. Both refused now."""
    model, (X_cal, y_cal), (X_test, y_test) = conformal_data
    sets = SplitConformalSets(model, alpha=0.1, backend=backend).fit(X_cal, y_cal)
    expected = sets.predict_set(X_test)
    other = make_logistic_regression(C=0.01).fit(X_cal, y_cal)
    for change in ({"alpha": 0.3}, {"estimator": other}):
        sets.set_params(**change)
        name = next(iter(change))
        for use in (lambda: sets.predict_set(X_test), lambda: sets.coverage(X_test, y_test)):
            with pytest.raises(ValueError, match=rf"(?s){name}=.* was set after fit .*call fit again"):
                use()
        sets.set_params(alpha=0.1, estimator=model)
        np.testing.assert_array_equal(sets.predict_set(X_test), expected)
    refit = sets.set_params(alpha=0.3).fit(X_cal, y_cal)
    assert refit.predict_set(X_test).sum() < expected.sum()  # a larger alpha: smaller sets


def test_conformal_compare_with_cme_bounds():
    X, y = _blobs(900, n_classes=3, d=2, seed=16, spread=1.5)
    cme = CMEClassifier(gamma=0.5, amplitude=1.0, regularization=1e-3).fit(X[:300], y[:300])
    sets = SplitConformalSets(cme, alpha=0.1).fit(X[300:600], y[300:600])
    report = sets.compare(X[600:], y[600:], cme.predict_interval(X[600:]))
    assert set(report) == {
        "alpha", "conformal_coverage", "conformal_mean_size", "conformal_empty_share",
        "bound_coverage", "bound_mean_size",
    }
    assert 0 <= report["conformal_coverage"] <= 1 and 1 <= report["bound_mean_size"] <= 3
    assert report["conformal_coverage"] >= 0.9 - 0.06  # 300 test points


def test_conformal_bad_input(conformal_data):
    model, (X_cal, y_cal), _ = conformal_data
    with pytest.raises(ValueError, match="too few"):
        SplitConformalSets(model, alpha=0.01, backend="numpy").fit(X_cal[:50], y_cal[:50])
    with pytest.raises(ValueError, match="not trained on"):
        SplitConformalSets(model, backend="numpy").fit(X_cal[:20], np.full(20, 7))
    with pytest.raises(ValueError, match="alpha"):
        SplitConformalSets(model, alpha=1.0).fit(X_cal, y_cal)
    with pytest.raises(ValueError, match="backend"):
        SplitConformalSets(model, backend="torch").fit(X_cal, y_cal)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        SplitConformalSets(make_logistic_regression()).fit(X_cal, y_cal)
