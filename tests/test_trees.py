"""The compiled walk of a gradient-boosting model's trees (:func:`nwbound.spaces.model_proba`):
``predict_proba``'s bits, and ``predict_proba`` itself wherever the walk does not apply."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression

from nwbound.spaces import _trees, model_proba


def _rows(n_classes: int, n: int = 600, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    score = X[:, 0] + np.sin(3 * X[:, 1]) + 0.5 * X[:, 2] * X[:, 3]
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y


@pytest.mark.parametrize("n_classes", [2, 3, 5])
@pytest.mark.parametrize("max_bins", [255, 15])
def test_same_bits_as_predict_proba(n_classes, max_bins):
    X, y = _rows(n_classes)
    X[::9, 1] = np.nan  # missing values in training: splits learn a side for them
    model = HistGradientBoostingClassifier(max_iter=30, max_bins=max_bins, random_state=0).fit(X, y)
    Q, _ = _rows(n_classes, n=257, seed=1)
    Q[::5, 1] = np.nan
    Q[::7, 0] = np.inf
    Q[3] = -np.inf
    assert np.array_equal(model_proba(model, Q), model.predict_proba(Q))
    assert np.array_equal(model_proba(model, Q[:1]), model.predict_proba(Q[:1]))  # fewer rows than a group


def test_nan_side_never_seen_in_training():
    """A split that saw no missing value in training sends them where scikit-learn does."""
    X, y = _rows(2)
    model = HistGradientBoostingClassifier(max_iter=10, random_state=0).fit(X, y)
    Q = np.full((4, 4), np.nan)
    Q[1, 0] = 0.3
    assert np.array_equal(model_proba(model, Q), model.predict_proba(Q))


def test_stump_and_refit_use_current_trees():
    """One-leaf trees walk zero steps; a refit model's new trees replace the cached ones."""
    X, y = _rows(2)
    model = HistGradientBoostingClassifier(max_iter=3, max_depth=1, random_state=0).fit(X, y)
    assert np.array_equal(model_proba(model, X), model.predict_proba(X))
    constant = HistGradientBoostingClassifier(max_iter=2, random_state=0).fit(X, np.arange(X.shape[0]) % 2)
    assert np.array_equal(model_proba(constant, X), constant.predict_proba(X))
    model.set_params(max_iter=20, max_depth=None).fit(X[::-1], y[::-1])
    assert np.array_equal(model_proba(model, X), model.predict_proba(X))


def test_other_models_and_categorical_splits_take_predict_proba(monkeypatch):
    X, y = _rows(2)
    logistic = LogisticRegression().fit(X, y)
    assert np.array_equal(model_proba(logistic, X), logistic.predict_proba(X))
    Xc = X.copy()
    Xc[:, 3] = np.floor(np.abs(Xc[:, 3]) * 3) % 4
    categorical = HistGradientBoostingClassifier(max_iter=10, categorical_features=[3], random_state=0).fit(Xc, y)
    assert _trees._walk_arrays(categorical) is None
    assert np.array_equal(model_proba(categorical, Xc), categorical.predict_proba(Xc))
    model = HistGradientBoostingClassifier(max_iter=10, random_state=0).fit(X, y)
    monkeypatch.setenv("NWBOUND_DISABLE_NUMBA", "1")
    calls = []
    original = HistGradientBoostingClassifier.predict_proba
    monkeypatch.setattr(HistGradientBoostingClassifier, "predict_proba",
                        lambda self, Q: calls.append(1) or original(self, Q))
    assert np.array_equal(model_proba(model, X), original(model, X))
    assert calls == [1]


def test_errors_are_predict_proba_errors():
    X, y = _rows(2)
    model = HistGradientBoostingClassifier(max_iter=5, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model_proba(model, X[:, :3])
    with pytest.raises(Exception, match="not fitted"):
        model_proba(HistGradientBoostingClassifier(), X)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_default_model_same_bits_with_and_without_the_walk(monkeypatch, n_classes):
    """The default model (score model and point model both gradient boosting) gives the same
    intervals, point estimate and L whether the trees are walked or scikit-learn predicts."""
    from nwbound import NadarayaWatsonClassifier

    X, y = _rows(n_classes, n=5_000)
    Q, _ = _rows(n_classes, n=400, seed=2)
    fits, walked_calls = [], []
    compiled = _trees._compiled_walk
    for walk in (True, False):
        monkeypatch.setattr(_trees, "_compiled_walk",
                            (lambda: walked_calls.append(1) or compiled()) if walk else (lambda: None))
        model = NadarayaWatsonClassifier(random_state=0).fit(X, y)
        fits.append((model.lipschitz_, model.predict_interval(Q)))
    (l_walk, walked), (l_sk, plain) = fits
    assert len(walked_calls) >= 3  # the candidates' check, the map, the point model
    assert l_walk == l_sk
    for name in ("lower", "upper", "proba", "certified"):
        assert np.array_equal(getattr(walked, name), getattr(plain, name)), name


def test_a_walk_that_differs_from_predict_proba_is_not_used(monkeypatch):
    """The walk reads scikit-learn's private tree layout: the first walk of each model is checked
    against predict_proba on its first rows, and a model whose walk differs (or whose layout cannot
    be read) answers with predict_proba from then on."""
    X, y = _rows(3)
    tree_arrays = _trees._tree_arrays

    def shifted(model):  # a layout read wrongly: every leaf value off
        a = dict(tree_arrays(model))
        a["value"] = a["value"] + 1e-3
        return a

    monkeypatch.setattr(_trees, "_tree_arrays", shifted)
    model = HistGradientBoostingClassifier(max_iter=10, random_state=0).fit(X, y)
    for rows in (X, X[:3], X):
        assert np.array_equal(model_proba(model, rows), model.predict_proba(rows))
    assert _trees._walk_arrays(model) is None  # remembered: not walked again

    def unreadable(model):
        raise AttributeError("'TreePredictor' object has no attribute 'nodes'")

    monkeypatch.setattr(_trees, "_tree_arrays", unreadable)
    other = HistGradientBoostingClassifier(max_iter=10, random_state=1).fit(X, y)
    assert np.array_equal(model_proba(other, X), other.predict_proba(X))
    monkeypatch.setattr(_trees, "_tree_arrays", tree_arrays)
    fresh = HistGradientBoostingClassifier(max_iter=10, random_state=2).fit(X, y)
    assert np.array_equal(model_proba(fresh, X), fresh.predict_proba(X)) and _trees._walk_arrays(fresh) is not None
