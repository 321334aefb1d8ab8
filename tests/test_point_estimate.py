"""``point_estimate`` (issue 30, accuracy): the space's score model fitted on every training row, its
probabilities moved into the bound's box; the box, the certified rows and their class unchanged."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.utils._param_validation import InvalidParameterError

from nwbound import NadarayaWatsonClassifier
from nwbound.spaces import column_units, fit_score_model, in_column_units, intersect_intervals, move_into_box, split_seed


def _sectors(n: int, seed: int, k: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Classes by sector of the angle of the first two features (trees beat the kernel estimate)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    return X, (np.floor((np.arctan2(X[:, 1], X[:, 0]) + np.pi) / (2 * np.pi) * 2 * k) % k).astype(int)


def _smooth(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A smooth two-class field whose bounds certify many rows."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    return X, (rng.random(n) < 1 / (1 + np.exp(-6 * X[:, 0]))).astype(int)


def _fit(X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return NadarayaWatsonClassifier(random_state=0, **params).fit(X, y)


def _interval(clf, Q, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return clf.predict_interval(Q, **kwargs)


@pytest.fixture(scope="module")
def pairs():
    """For each route (cross-fitted, one split): the model at "nw" and at "auto", and the queries."""
    X, y = _smooth(1200, 0)
    Q = _smooth(600, 1)[0]
    return {route: (_fit(X, y, point_estimate="nw", **params), _fit(X, y, point_estimate="auto", **params), Q)
            for route, params in {"cross-fitted": {}, "one split": {"cross_fit": False}}.items()}


def test_the_parameter_exists_defaults_to_auto_and_refuses_other_values():
    assert NadarayaWatsonClassifier().get_params()["point_estimate"] == "auto"
    X, y = _smooth(300, 0)
    with pytest.raises(InvalidParameterError, match="'point_estimate' parameter .* must be a str among"):
        NadarayaWatsonClassifier(point_estimate="hgb").fit(X, y)


@pytest.mark.parametrize("route", ["cross-fitted", "one split"])
def test_auto_moves_only_the_point_the_box_and_certificates_stay(pairs, route):
    nw, auto, Q = pairs[route]
    assert nw.point_model_ is None and type(auto.point_model_).__name__ in (
        "HistGradientBoostingClassifier", "Pipeline")
    a, b = _interval(nw, Q), _interval(auto, Q)
    for field in ("lower", "upper", "bias", "sampling", "kappa", "n_eff", "vacuous", "bandwidth"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert b.certified.any() and np.array_equal(a.certified, b.certified)
    assert np.array_equal(a.predicted_index[a.certified], b.predicted_index[b.certified])
    assert not np.array_equal(a.proba, b.proba)  # the point did move
    assert np.all(b.lower <= b.proba + 1e-12) and np.all(b.proba <= b.upper + 1e-12)
    np.testing.assert_allclose(b.proba.sum(axis=1), 1.0, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(b.epsilon, np.clip(np.maximum(b.upper - b.proba, b.proba - b.lower), 0, 1))


@pytest.mark.parametrize("route", ["cross-fitted", "one split"])
def test_predict_and_predict_proba_report_the_moved_point(pairs, route):
    _, auto, Q = pairs[route]
    iv = _interval(auto, Q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.array_equal(auto.predict_proba(Q), iv.proba)
        assert np.array_equal(auto.predict(Q), auto.classes_[np.argmax(iv.proba, axis=1)])


def test_nw_is_the_kernel_estimate():
    """``"nw"`` reports the models' κ-weighted mean moved into their intersected box, as before."""
    X, y = _smooth(800, 0)
    clf = _fit(X, y, point_estimate="nw")
    Q = _smooth(200, 1)[0]
    parts = [_interval(m, Q) for m in clf.cross_fit_models_]
    assert np.array_equal(_interval(clf, Q).proba, intersect_intervals(*parts).proba)


def test_every_setting_of_bounds_gets_the_moved_point(pairs):
    nw, auto, Q = pairs["one split"]
    settings = {"tight": {"delta": 0.2}, "hoeffding": {"bound": "hoeffding"}}
    old, new = _interval(nw, Q, bounds=settings), _interval(auto, Q, bounds=settings)
    assert sorted(new) == sorted(settings)
    for name in settings:
        assert np.array_equal(old[name].upper, new[name].upper)
        expected = move_into_box(old[name], _interval(auto, Q).proba)  # the same model's point, another box
        np.testing.assert_allclose(new[name].proba, expected.proba, rtol=0, atol=1e-12)


def test_auto_is_at_least_as_accurate_where_the_score_model_beats_the_kernel_estimate():
    X, y = _sectors(1500, 0)
    Q, y_q = _sectors(3000, 1)
    nw, auto = (_fit(X, y, point_estimate=value) for value in ("nw", "auto"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert auto.score(Q, y_q) >= nw.score(Q, y_q)


@pytest.mark.parametrize("cross_fit", ["auto", False])
def test_the_point_model_is_a_copy_of_the_chosen_candidate_fitted_on_every_row(cross_fit):
    """Judged by the first model's check rows: where the space's own score model (map rows only)
    passes, the point model is fitted once, on every row; otherwise a copy fitted without them is
    judged, which a cross-fitted fit (small data) then refits on every row."""
    X, y = _sectors(900, 0)
    w = 0.5 + (X[:, 2] > 0)  # weights of the inputs only
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = NadarayaWatsonClassifier(random_state=0, cross_fit=cross_fit).fit(X, y, sample_weight=w)
    judge = clf.cross_fit_models_[0] if cross_fit else clf
    chosen = judge.metric_report_.chosen
    kind = {"gradient boosting": "HistGradientBoostingClassifier", "logistic regression": "Pipeline"}[chosen]
    assert type(clf.point_model_).__name__ == kind
    assert clf.point_model_.classes_.tolist() == [0, 1, 2]
    report = clf.point_report_
    assert report["used"] and report["n_rows"] == min(judge.check_rows_.shape[0], X.shape[0] // 10) > 0
    # the same candidate on those rows (in their columns' units) with the weights: the same model
    every_row = cross_fit or report["judged"] == "map rows"
    rows = np.arange(X.shape[0]) if every_row else np.setdiff1d(np.arange(X.shape[0]), judge.check_rows_)
    units = column_units(X[rows])
    again = fit_score_model(chosen, in_column_units(X[rows], units), y[rows], (w / w.max())[rows], random_state=0)
    Q = _sectors(200, 1)[0]
    assert np.array_equal(clf.point_model_.predict_proba(in_column_units(Q, units)),
                          again.predict_proba(in_column_units(Q, units)))


def test_above_point_coarse_rows_the_gradient_boosting_point_model_bins_coarser_and_the_box_stays(monkeypatch):
    """Above ``POINT_COARSE_ROWS`` rows the gradient-boosting point model bins each feature into at
    most ``POINT_MAX_BINS`` values (the cost of its fit); the space's score model keeps 255, so the
    box, the certified rows and their class are those of the 255-bin point model, bit for bit."""
    import nwbound.estimators._point as point

    X, y = _sectors(900, 0)
    Q = _sectors(300, 1)[0]
    fine = _fit(X, y, cross_fit=False)
    assert fine.metric_report_.chosen == "gradient boosting" and fine.point_model_.max_bins == 255
    monkeypatch.setattr(point, "POINT_COARSE_ROWS", 100)  # 900 rows: above it
    coarse = _fit(X, y, cross_fit=False)
    assert point.POINT_MAX_BINS == 63 and coarse.point_model_.max_bins == point.POINT_MAX_BINS
    assert coarse.metric_.map_.max_bins == 255  # the space's score model: the bound's ingredients unchanged
    a, b = _interval(fine, Q), _interval(coarse, Q)
    for name in ("lower", "upper", "certified"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.proba, b.proba)  # the reported point did move
    assert np.all((b.proba >= b.lower) & (b.proba <= b.upper))


def _counted_point_fits(monkeypatch) -> list:
    """The rows of every point-model fit from now on (``fit_point_model`` as the classifier calls it), in order."""
    import nwbound.estimators._nadaraya_watson as nw_module

    fitted_rows, original = [], nw_module.fit_point_model

    def counted(kind, metric, reports, X, labels, weights, random_state):
        fitted_rows.append(X.shape[0])
        return original(kind, metric, reports, X, labels, weights, random_state)

    monkeypatch.setattr(nw_module, "fit_point_model", counted)
    return fitted_rows


@pytest.mark.parametrize("cross_fit", ["auto", False])
def test_where_the_spaces_own_score_model_passes_the_point_model_is_fitted_once_on_every_row(cross_fit, monkeypatch):
    """The space's score model saw only the map rows: on the check rows its prediction is held out.
    Where the kernel estimate does not beat it beyond noise there, the same model on every row (a
    superset of its rows) needs no judged copy: one fit, on every row (two before: a cross-fitted
    fit judged a copy fitted without the check rows, then refitted it)."""
    fitted_rows = _counted_point_fits(monkeypatch)
    X, y = _sectors(900, 0)
    clf = _fit(X, y, cross_fit=cross_fit)
    judge = clf.cross_fit_models_[0] if cross_fit else clf
    report = clf.point_report_
    assert report["judged"] == "map rows" and report["used"]
    assert report["n_rows"] == min(judge.check_rows_.shape[0], X.shape[0] // 10)  # at most a tenth of the rows
    assert fitted_rows == [X.shape[0]] and clf.point_model_ is not None
    # the judgement is that of the space's score model on the held-out check rows, recomputed here
    # (a fixed random subset of them, drawn with the fit's seed)
    rows = np.sort(np.random.RandomState(split_seed(0)).choice(judge.check_rows_, report["n_rows"], replace=False))
    map_rows = np.setdiff1d(judge.metric_rows_, judge.check_rows_)
    probe = judge.metric_.map_.predict_proba(in_column_units(X[rows], column_units(X[map_rows])))
    assert report["point_accuracy"] == pytest.approx(np.mean(np.argmax(probe, axis=1) == y[rows]))


def test_where_the_spaces_score_model_fails_a_copy_without_the_judging_rows_is_judged_and_kept(monkeypatch):
    """make_classification at 1 400 rows: the kernel estimate beats the space's score model (a few
    hundred map rows) beyond noise; a copy fitted on every row but the judging ones (a tenth of the
    rows) passes and is kept as judged: one fit, not a refit on top."""
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split

    fitted_rows = _counted_point_fits(monkeypatch)
    X, y = make_classification(n_samples=2000, n_features=20, n_informative=10, random_state=0)
    X, _, y, _ = train_test_split(X, y, test_size=0.3, random_state=0)  # benchmarks/bench_defaults.py's rows
    clf = _fit(X, y)
    report = clf.point_report_
    assert report["judged"] == "all but the check rows" and report["used"] and report["n_rows"] == 140
    assert fitted_rows == [1400 - 140] and clf.point_model_ is not None
    assert report["point_accuracy"] > report["nw_accuracy"]


def test_the_kernel_estimate_stays_where_it_beats_the_point_model_on_the_check_rows():
    """10 classes of make_classification at 1 400 rows: the spaces choose logistic regression on their
    map rows, which the kernel estimate (reading the features too) beats by 20 points."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=2000, n_features=20, n_informative=10, n_classes=10, random_state=0)
    auto, nw = _fit(X[:1400], y[:1400]), _fit(X[:1400], y[:1400], point_estimate="nw")
    report = auto.point_report_
    assert auto.point_model_ is None and not report["used"] and report["point_accuracy"] < report["nw_accuracy"]
    # the space's own score model failed first, then the copy fitted without the check rows
    assert report["judged"] == "all but the check rows"
    assert np.array_equal(_interval(auto, X[1400:]).proba, _interval(nw, X[1400:]).proba)


def test_without_a_score_model_auto_means_nw():
    X, y = _smooth(400, 0)
    Q = _smooth(100, 1)[0]
    for params in ({"metric": None, "lipschitz": 1.0}, {"metric": "standard", "lipschitz": 1.0},
                   {"metric": PCA(2), "lipschitz": 1.0, "bandwidth": 0.5}, {"n_neighbors": 30}):
        auto, nw = _fit(X, y, point_estimate="auto", **params), _fit(X, y, point_estimate="nw", **params)
        assert auto.point_model_ is None
        assert np.array_equal(_interval(auto, Q).proba, _interval(nw, Q).proba)


def test_a_classifier_given_as_metric_is_refitted_on_every_row():
    X, y = _sectors(600, 0)
    clf = _fit(X, y, metric=LogisticRegression(), lipschitz=2.0, bandwidth=0.5)
    assert isinstance(clf.point_model_, LogisticRegression)
    assert clf.point_model_ is not clf.metric_.map_ and clf.point_model_.n_features_in_ == 3
    iv = _interval(clf, _sectors(100, 1)[0])
    assert np.all(iv.lower <= iv.proba + 1e-12) and np.all(iv.proba <= iv.upper + 1e-12)


def test_changing_point_estimate_after_fit_needs_a_refit(pairs):
    _, auto, Q = pairs["one split"]
    changed = NadarayaWatsonClassifier(**{**auto.get_params(), "point_estimate": "nw"})
    changed.__dict__.update({k: v for k, v in auto.__dict__.items() if k.endswith("_") or k.startswith("_")})
    with pytest.raises(ValueError, match="point_estimate"):
        changed.predict_proba(Q)


def test_cross_fitted_models_keep_their_own_kernel_estimate(pairs):
    _, auto, _ = pairs["cross-fitted"]
    assert all(m.point_estimate == "nw" and m.point_model_ is None for m in auto.cross_fit_models_)


@pytest.mark.parametrize("route", ["cross-fitted", "one split"])
def test_the_fitted_state_holds_the_point_model(pairs, route):
    nw, auto, Q = pairs[route]
    state = auto.get_fitted_state()
    assert state["point_model_"] is auto.point_model_ and state["point_units"].shape == (2,)
    again = NadarayaWatsonClassifier(**auto.get_params()).set_fitted_state(state)
    for field, value in _interval(again, Q).as_dict().items():
        assert value is None or np.array_equal(value, getattr(_interval(auto, Q), field)), field
    kept = NadarayaWatsonClassifier(**auto.get_params()).set_fitted_state(nw.get_fitted_state())
    assert kept.point_model_ is None  # a state without one keeps the kernel estimate
    with pytest.raises(ValueError, match="holds a point model 'point_model_'"):
        NadarayaWatsonClassifier(**nw.get_params()).set_fitted_state(state)
    with pytest.raises(ValueError, match="'point_units' must hold powers of two"):
        NadarayaWatsonClassifier(**auto.get_params()).set_fitted_state({**state, "point_units": state["point_units"] * 3})


@pytest.mark.parametrize("route", ["cross-fitted", "one split"])
def test_the_point_report_survives_the_fitted_state_and_a_model_file(pairs, route, tmp_path):
    from nwbound.io import load_model, save_model

    nw, auto, _ = pairs[route]
    assert auto.point_report_ is not None and nw.point_report_ is None
    state = auto.get_fitted_state()
    again = NadarayaWatsonClassifier(**auto.get_params()).set_fitted_state(state)
    assert again.point_report_ == auto.point_report_
    assert load_model(save_model(auto, tmp_path / f"{route}.npz")).point_report_ == auto.point_report_
    assert NadarayaWatsonClassifier(**nw.get_params()).set_fitted_state(nw.get_fitted_state()).point_report_ is None
    with pytest.raises(ValueError, match="'point_report_used' is False, but the state holds a point model"):
        NadarayaWatsonClassifier(**auto.get_params()).set_fitted_state({**state, "point_report_used": False})
    with pytest.raises(ValueError, match="'point_report_judged' must be one of"):
        NadarayaWatsonClassifier(**auto.get_params()).set_fitted_state({**state, "point_report_judged": "all rows"})
    with pytest.raises(ValueError, match="'point_report_accuracies' must be <= 1"):
        NadarayaWatsonClassifier(**auto.get_params()).set_fitted_state(
            {**state, "point_report_accuracies": np.array([1.5, 0.5])})
    partial = {k: v for k, v in state.items() if k != "point_report_rows"}
    with pytest.raises(ValueError, match="missing 'point_report_rows'"):
        NadarayaWatsonClassifier(**auto.get_params()).set_fitted_state(partial)


@pytest.mark.parametrize("cross_fit", ["auto", False])
def test_the_judge_reads_the_kernel_estimate_the_check_of_l_computed(cross_fit, monkeypatch):
    """The judge's kernel estimate on its check rows is the one the held-out check of L computed on
    them (the same numbers as predict_proba of the check rows in one batch: every setting chooses its
    bandwidths at the pilot L), not a second kernel pass: fit calls predict_proba no more, and the
    report is that of judge_point_model on those numbers. Nothing of it is kept after fit."""
    from nwbound.estimators._point import judge_point_model

    calls = []
    original = NadarayaWatsonClassifier.predict_proba

    def counted(self, X):
        calls.append(len(X))
        return original(self, X)

    monkeypatch.setattr(NadarayaWatsonClassifier, "predict_proba", counted)
    X, y = _sectors(900, 0)
    clf = _fit(X, y, cross_fit=cross_fit)
    assert calls == []  # one predict_proba of the judging rows before
    judge = clf.cross_fit_models_[0] if cross_fit else clf
    models = [clf, *(clf.cross_fit_models_ if cross_fit else [])]
    assert all(getattr(m, "_check_proba", None) is None for m in models)
    monkeypatch.setattr(NadarayaWatsonClassifier, "predict_proba", original)
    report = clf.point_report_
    rows = np.sort(np.random.RandomState(split_seed(0)).choice(judge.check_rows_, report["n_rows"], replace=False))
    kernel = judge if cross_fit else _fit(X, y, cross_fit=False, point_estimate="nw")  # its own estimate, no point model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nw = kernel.predict_proba(X[judge.check_rows_])[np.searchsorted(judge.check_rows_, rows)]
    probe = judge.metric_.score_proba(X[rows], np.arange(3))
    assert {**judge_point_model(probe, nw, y[rows]), "judged": "map rows"} == report


def test_the_judge_computes_the_rows_the_check_did_not_test():
    """Rows beyond the check's (at most AUTO_CHECK_ROWS of them, a fixed subset) are computed:
    the judge gets every row it asks for, the read ones equal to the check's."""
    from nwbound.estimators._point import judge_rows_proba

    X, y = _smooth(600, 0)
    clf = _fit(X, y, cross_fit=False, point_estimate="nw")
    rows = clf.check_rows_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        every = clf.predict_proba(X[rows])
    half = rows.shape[0] // 2
    got = judge_rows_proba(clf, (rows[:half], every[:half]), X, rows[::-1])
    assert np.array_equal(got[::-1][:half], every[:half])
    assert np.allclose(got[::-1][half:], every[half:], rtol=0, atol=1e-12)
