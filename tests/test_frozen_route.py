"""A model file's frozen route (format 4): the saved classifier's intervals from plain arrays, without
scikit-learn, equal to the Python model's; tampered frozen arrays refused, older files on the full route."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier
from nwbound.estimators._frozen import PARAMETERS, FrozenNadarayaWatson
from nwbound.io import ModelFileError, TableModel, load_model, save_model

from test_model_file import _read_npz, _write_npz


def _linear(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    score = X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n)
    return X, np.digitize(score, np.quantile(score, np.linspace(0, 1, k + 1)[1:-1]))


def _angles(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Classes by sector of the angle in the first two features (XOR-like: trees do better)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    return X, (np.floor((np.arctan2(X[:, 1], X[:, 0]) + np.pi) / (2 * np.pi) * 2 * k) % k).astype(int)


CASES = {
    "logistic, 2 classes, cross-fitted": (_linear, 500, 2, {}),
    "logistic, 3 classes, cross-fitted": (_linear, 400, 3, {}),
    "trees, 2 classes, cross-fitted": (_angles, 300, 2, {}),
    "trees, 4 classes, cross-fitted": (_angles, 800, 4, {}),
    "one model (cross_fit=False)": (_angles, 400, 3, {"cross_fit": False}),
    "metric='standard'": (_linear, 300, 2, {"metric": "standard", "lipschitz": 0.8}),
    "metric=None": (_linear, 300, 3, {"metric": None, "lipschitz": 0.5}),
}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Each case fitted with the defaults (but the case's settings) and saved: (model, path, queries)."""
    folder = tmp_path_factory.mktemp("frozen")
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (make, n, k, params) in CASES.items():
            X, y = make(n, k, 0)
            clf = NadarayaWatsonClassifier(random_state=0, **params).fit(X, y)
            path = save_model(clf, folder / f"{len(out)}.npz")
            out[name] = (clf, path, make(150, k, 1)[0])
    return out


def _score_maps(clf) -> list[str]:
    models = clf.cross_fit_models_ if clf._is_cross_fitted() else [clf]
    return [type(m.metric_.map_).__name__ if getattr(m, "metric_", None) is not None else "none" for m in models]


def test_cases_cover_both_score_models_and_cross_fitting(saved):
    maps = {name: _score_maps(clf) for name, (clf, _, _) in saved.items()}
    assert maps["logistic, 2 classes, cross-fitted"] == ["Pipeline", "Pipeline"]
    assert "Pipeline" in maps["logistic, 3 classes, cross-fitted"]
    assert maps["trees, 2 classes, cross-fitted"] == ["HistGradientBoostingClassifier"] * 2
    assert "HistGradientBoostingClassifier" in maps["trees, 4 classes, cross-fitted"]
    assert len(maps["one model (cross_fit=False)"]) == 1


@pytest.mark.parametrize("name", list(CASES))
def test_frozen_route_gives_the_python_models_intervals(saved, name):
    clf, path, Q = saved[name]
    frozen = load_model(path, frozen=True)
    assert isinstance(frozen, FrozenNadarayaWatson)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = clf.predict_interval(Q)
        got = frozen.predict_interval(Q)
    for field in ("proba", "lower", "upper", "epsilon", "kappa", "bandwidth"):
        np.testing.assert_allclose(getattr(got, field), getattr(expected, field), rtol=0, atol=1e-12, err_msg=field)
    assert np.array_equal(got.lower, expected.lower) and np.array_equal(got.upper, expected.upper)  # same arithmetic
    assert np.array_equal(got.predicted_index, expected.predicted_index)
    assert np.array_equal(got.certified, expected.certified)
    assert np.array_equal(frozen.classes_, clf.classes_) and frozen.n_features_in_ == clf.n_features_in_


def test_frozen_route_warns_as_the_python_model(saved):
    clf, path, Q = saved["trees, 2 classes, cross-fitted"]
    far = Q + 50.0  # far from every training row: the bounds cannot help
    with pytest.warns(UserWarning) as python:
        clf.predict_interval(far)
    with pytest.warns(UserWarning) as frozen:
        load_model(path, frozen=True).predict_interval(far)
    assert [str(w.message) for w in frozen] == [str(w.message) for w in python]
    assert {w.filename for w in frozen} == {__file__}  # pointed at the caller's line, as the classifier's


def test_table_model_keeps_its_pipeline(tmp_path):
    X, y = _linear(300, 2, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = TableModel.fit(NadarayaWatsonClassifier(random_state=0), X * 100, y,
                               features=["a", "b", "c", "d"], scale="standard")
        path = save_model(model, tmp_path / "table.npz")
        frozen = load_model(path, frozen=True)
        assert isinstance(frozen, TableModel) and isinstance(frozen.estimator, FrozenNadarayaWatson)
        Q = _linear(50, 2, 1)[0] * 100
        assert np.array_equal(frozen.predict_interval(Q).upper, model.predict_interval(Q).upper)


def test_parameter_list_is_the_classifiers():
    assert sorted(PARAMETERS) == sorted(NadarayaWatsonClassifier().get_params())


def test_files_the_frozen_route_does_not_serve_load_the_full_classifier(tmp_path):
    X, y = _linear(200, 2, 0)
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=0.5, n_neighbors=20).fit(X, y)
    assert isinstance(load_model(save_model(clf, tmp_path / "knn.npz"), frozen=True), NadarayaWatsonClassifier)


def test_a_file_without_frozen_arrays_loads_the_full_classifier(saved, tmp_path):
    """Format 3 (before the frozen arrays): the same model, through the skops dump."""
    clf, path, Q = saved["logistic, 2 classes, cross-fitted"]
    meta, arrays = _read_npz(path)
    assert meta["format_version"] == 5 and "frozen" in meta  # 5: with the point model
    old = {k: v for k, v in arrays.items() if not k.startswith("frozen__")}
    meta = {k: v for k, v in meta.items() if k != "frozen"}
    meta["format_version"] = 3
    _write_npz(tmp_path / "v3.npz", meta, old, resign=True)
    model = load_model(tmp_path / "v3.npz", frozen=True)
    assert isinstance(model, NadarayaWatsonClassifier)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.array_equal(model.predict_interval(Q).upper, clf.predict_interval(Q).upper)


def _tampered(path, tmp_path, edit):
    meta, arrays = _read_npz(path)
    edit(meta, arrays)
    out = tmp_path / "tampered.npz"
    _write_npz(out, meta, arrays, resign=True)  # a fresh checksum: only the checks can refuse it
    return out


def _with_tree_edit(meta, arrays):
    left = arrays["frozen__cross0__map_left"].copy()
    inner = np.flatnonzero(~arrays["frozen__cross0__map_leaf"])
    left[inner[0]] = 10**6
    arrays["frozen__cross0__map_left"] = left


@pytest.mark.parametrize("edit, match", [
    (_with_tree_edit, "'frozen__cross0__map_left' points outside"),
    (lambda meta, arrays: arrays.__setitem__("frozen__cross1__scale", -arrays["frozen__cross1__scale"]),
     "'frozen__cross1__scale' must be > 0"),
    (lambda meta, arrays: arrays["frozen__cross0__map_value"].__setitem__(0, np.nan), "'frozen__cross0__map_value' holds NaN"),
    (lambda meta, arrays: arrays.__setitem__("frozen__cross0__units", arrays["frozen__cross0__units"] * 3),
     "'frozen__cross0__units' must hold powers of two"),
    (lambda meta, arrays: arrays.pop("frozen__cross1__mean"), "'frozen__cross1__mean' must be finite floats"),
    (lambda meta, arrays: arrays.__setitem__("frozen__cross2__mean", arrays["frozen__cross1__mean"]),
     r"unexpected frozen members \['frozen__cross2__mean'\]"),
    (lambda meta, arrays: meta.__setitem__("frozen", {"spaces": [["auto", "forest"]] * 2}), "'frozen' entry must list"),
])
def test_tampered_frozen_arrays_are_refused_naming_the_member(saved, tmp_path, edit, match):
    _, path, _ = saved["trees, 2 classes, cross-fitted"]
    tampered = _tampered(path, tmp_path, edit)
    with pytest.raises(ModelFileError, match=match):
        load_model(tampered, frozen=True)
    with pytest.raises(ModelFileError):  # the full route refuses it too: both copies must agree
        load_model(tampered)


def test_frozen_copy_that_differs_from_the_space_is_refused_by_the_full_route(saved, tmp_path):
    """A valid but different frozen space (another feature weight) would predict other intervals."""
    _, path, _ = saved["trees, 2 classes, cross-fitted"]
    tampered = _tampered(path, tmp_path, lambda meta, arrays: arrays.__setitem__(
        "frozen__cross0__feature_weight", arrays["frozen__cross0__feature_weight"] * 2))
    with pytest.raises(ModelFileError, match="member frozen__cross0__feature_weight is not the frozen copy"):
        load_model(tampered)


def test_training_state_is_checked_on_the_frozen_route(saved, tmp_path):
    _, path, _ = saved["trees, 2 classes, cross-fitted"]
    tampered = _tampered(path, tmp_path, lambda meta, arrays: arrays.__setitem__(
        "state__cross0__labels", arrays["state__cross0__labels"] + 5))
    with pytest.raises(ModelFileError, match=r"'cross_fit_models_'\[0\]: Fitted state 'labels' must be <= 1"):
        load_model(tampered, frozen=True)


def test_saved_file_lists_its_frozen_spaces(saved):
    meta, arrays = _read_npz(saved["trees, 4 classes, cross-fitted"][1])
    assert json.loads(json.dumps(meta["frozen"])) == meta["frozen"]
    assert [kind for kind, _ in meta["frozen"]["spaces"]] == ["auto", "auto"]
    assert all(a.dtype.kind in "fib" for name, a in arrays.items() if name.startswith("frozen__"))


@pytest.mark.parametrize("cross_fit, match", [(3, "must list 3 model states"), (False, "cross_fit=False")])
def test_parameters_that_contradict_the_state_are_refused(saved, tmp_path, cross_fit, match):
    _, path, _ = saved["logistic, 2 classes, cross-fitted"]
    tampered = _tampered(path, tmp_path, lambda meta, arrays: meta["params"].__setitem__("cross_fit", cross_fit))
    for frozen in (True, False):  # the same check on both routes
        with pytest.raises(ModelFileError, match=match):
            load_model(tampered, frozen=frozen)


# -- point_estimate="auto" (format 5): the point model stored as a score model is --------------------
def test_the_point_model_round_trips_on_both_routes(saved):
    """The default's point model is in the file: the full route's intervals are the saved model's to the
    bit, the frozen route's to the score map's rounding (lower and upper to the bit)."""
    for name in ("trees, 2 classes, cross-fitted", "logistic, 3 classes, cross-fitted", "one model (cross_fit=False)"):
        clf, path, Q = saved[name]
        assert clf.point_model_ is not None
        meta, arrays = _read_npz(path)
        assert meta["format_version"] == 5 and meta["frozen"]["point"] in ("gradient_boosting", "logistic")
        assert any(k.startswith("frozen__point__") for k in arrays) and "state__point_units" in arrays
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = clf.predict_interval(Q)
            full = load_model(path)
            assert type(full.point_model_) is type(clf.point_model_)
            for field, value in full.predict_interval(Q).as_dict().items():
                assert value is None or np.array_equal(value, getattr(expected, field)), field
            got = load_model(path, frozen=True).predict_interval(Q)
        np.testing.assert_allclose(got.proba, expected.proba, rtol=0, atol=1e-12)
        assert np.array_equal(got.lower, expected.lower) and np.array_equal(got.upper, expected.upper)


def test_a_model_fitted_with_nw_is_written_as_format_4(tmp_path):
    X, y = _linear(300, 2, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = NadarayaWatsonClassifier(random_state=0, point_estimate="nw").fit(X, y)
    meta, arrays = _read_npz(save_model(clf, tmp_path / "nw.npz"))
    assert meta["format_version"] == 4 and "point" not in meta["frozen"] and "state__point_units" not in arrays


def test_a_file_written_before_point_estimate_loads_with_the_kernel_estimate(tmp_path):
    """Format 4 files do not name point_estimate: they load as "nw", the estimate they were saved with."""
    X, y = _linear(300, 2, 0)
    Q = _linear(80, 2, 1)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = NadarayaWatsonClassifier(random_state=0, point_estimate="nw").fit(X, y)
        meta, arrays = _read_npz(save_model(clf, tmp_path / "new.npz"))
        del meta["params"]["point_estimate"]
        _write_npz(tmp_path / "old.npz", meta, arrays, resign=True)
        for frozen in (False, True):
            model = load_model(tmp_path / "old.npz", frozen=frozen)
            assert model.point_estimate == "nw" and getattr(model, "point_model_", None) is None
            assert np.array_equal(model.predict_interval(Q).proba, clf.predict_interval(Q).proba)


@pytest.mark.parametrize("edit, match", [
    (lambda meta, arrays: arrays.__setitem__("frozen__point__value", arrays["frozen__point__value"][:-1]),
     "'frozen__point__value' has shape"),
    (lambda meta, arrays: meta["frozen"].__setitem__("point", "forest"), "point model kind 'forest'"),
    (lambda meta, arrays: arrays.__setitem__("state__point_units", arrays["state__point_units"] * 3),
     "'point_units' must hold powers of two"),
    (lambda meta, arrays: meta["params"].__setitem__("point_estimate", "nw"), "point"),
])
def test_tampered_point_models_are_refused(saved, tmp_path, edit, match):
    _, path, _ = saved["trees, 2 classes, cross-fitted"]
    tampered = _tampered(path, tmp_path, edit)
    with pytest.raises(ModelFileError, match=match):
        load_model(tampered, frozen=True)
    with pytest.raises(ModelFileError):  # the full route refuses it too
        load_model(tampered)
