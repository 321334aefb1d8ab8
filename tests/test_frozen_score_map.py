"""FrozenScoreMap: metric="auto"'s score models evaluated from plain arrays, as scikit-learn does."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from nwbound.spaces import FrozenScoreMap, auto_candidates


def _data(n_classes: int, seed: int = 0, missing: float = 0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(500, 4))
    y = (np.floor((X[:, 0] + 0.5 * X[:, 1]) * n_classes / 2) % n_classes).astype(int)
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    return X, y


def _queries(seed: int, missing: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(400, 4)) * 3
    if missing:
        Q[rng.random(Q.shape) < 0.2] = np.nan
        Q[0, 0], Q[1, 1], Q[2, 2] = np.inf, -np.inf, 1e300
    return Q


@pytest.mark.parametrize("n_classes", [2, 3, 5])
@pytest.mark.parametrize("name", ["gradient boosting", "logistic regression"])
def test_equals_scikit_learn_predict_proba(n_classes, name):
    trees = name == "gradient boosting"
    X, y = _data(n_classes, missing=0.1 if trees else 0.0)
    model = auto_candidates(0)[name].fit(X, y)  # the very candidates of metric="auto"
    frozen = FrozenScoreMap.from_estimator(model)
    Q = _queries(1, missing=trees)
    expected = model.predict_proba(Q)
    got = frozen.predict_proba(Q)
    assert got.shape == expected.shape == (Q.shape[0], n_classes)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    if n_classes > 2:  # the softmax is scikit-learn's arithmetic, step by step
        assert np.array_equal(got, expected)
    again = FrozenScoreMap.from_arrays(frozen.kind, frozen.to_arrays(), n_features=4)
    assert np.array_equal(again.predict_proba(Q), got)


def test_missing_values_follow_each_split():
    X, y = _data(2, seed=3, missing=0.3)
    model = HistGradientBoostingClassifier(max_iter=30, random_state=0).fit(X, y)
    Q = np.full((3, 4), np.nan)
    np.testing.assert_allclose(FrozenScoreMap.from_estimator(model).predict_proba(Q), model.predict_proba(Q),
                               rtol=0, atol=1e-12)


def test_other_models_are_refused():
    X, y = _data(2)
    for model in (DecisionTreeClassifier().fit(X, y), make_pipeline(LogisticRegression()).fit(X, y),
                  make_pipeline(StandardScaler(with_mean=False), LogisticRegression()).fit(X, y)):
        with pytest.raises(TypeError, match="StandardScaler|score models only"):
            FrozenScoreMap.from_estimator(model)


def _arrays(name: str) -> dict:
    X, y = _data(3)
    return FrozenScoreMap.from_estimator(auto_candidates(0)[name].fit(X, y)).to_arrays()


@pytest.mark.parametrize("edit, match", [
    (lambda a: a.__setitem__("left", np.where(a["leaf"], a["left"], a["left"] + 10**6)), "'left' points outside"),
    (lambda a: a.__setitem__("right", np.where(a["leaf"], a["right"], 0)), "'right' points outside its tree or backwards"),
    (lambda a: a.__setitem__("feature", np.where(a["leaf"], a["feature"], 7)), "'feature' reads a feature outside"),
    (lambda a: a["value"].__setitem__(0, np.nan), "'value' holds NaN"),
    (lambda a: a.__setitem__("roots", a["roots"][:, ::-1].copy()), "'roots' must list"),
    (lambda a: a.__setitem__("baseline", a["baseline"][:2]), "'baseline' has shape"),
    (lambda a: a.__setitem__("threshold", a["threshold"].astype(object)), "'threshold' must be a 1-D array"),
    (lambda a: a.pop("value"), "needs the arrays"),
])
def test_tampered_trees_are_refused(edit, match):
    arrays = _arrays("gradient boosting")
    edit(arrays)
    with pytest.raises(ValueError, match=match):
        FrozenScoreMap.from_arrays("gradient_boosting", arrays, n_features=4)


@pytest.mark.parametrize("edit, match", [
    (lambda a: a.__setitem__("scale", -a["scale"]), "'scale' must be > 0"),
    (lambda a: a.__setitem__("coef", a["coef"][:2]), "'coef' has shape"),
    (lambda a: a["intercept"].__setitem__(0, np.inf), "'intercept' holds NaN or infinite"),
])
def test_tampered_logistic_is_refused(edit, match):
    arrays = _arrays("logistic regression")
    edit(arrays)
    with pytest.raises(ValueError, match=match):
        FrozenScoreMap.from_arrays("logistic", arrays, n_features=4)
    with pytest.raises(ValueError, match="kind 'forest'"):
        FrozenScoreMap.from_arrays("forest", arrays, n_features=4)
