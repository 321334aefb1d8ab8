"""The library's defaults are metric="auto", lipschitz="auto", bandwidth="auto" (issue 21): what
they give on real data, what they refuse loudly, and where the paper's classifier is pinned."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

from nwbound import DyadicClassifier, NadarayaWatsonClassifier

PAPER = {"metric": None, "lipschitz": 1.0}


def _field(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 2))
    p = 1 / (1 + np.exp(-8 * (X[:, 0] - 0.5)))
    return X, (rng.uniform(size=n) < p).astype(int)


@pytest.mark.parametrize("estimator, expected", [
    (NadarayaWatsonClassifier(), {"metric": "auto", "lipschitz": "auto", "bandwidth": "auto", "cross_fit": "auto"}),
    (NadarayaWatsonClassifier(n_neighbors=25), {"metric": "auto", "lipschitz": "auto", "bandwidth": "auto"}),
    (DyadicClassifier(), {"metric": "auto", "lipschitz": "auto", "cross_fit": "auto"}),
])
def test_the_defaults_are_auto(estimator, expected):
    params = estimator.get_params()
    assert {k: params[k] for k in expected} == expected
    assert params["margin"] is None


@pytest.mark.slow
def test_default_model_on_standardized_breast_cancer():
    """NadarayaWatsonClassifier() on standardized breast-cancer reaches accuracy ≥ 0.90 and its
    certified errors stay within their summed ceilings. One fold of a 5-fold split. (Issue 21's
    "certifies most rows" held until round 10; round 11's two-constant space certifies 13 % of
    this fold, 82 % of a 70/30 split: the user guide's tables.)"""
    X, y = load_breast_cancer(return_X_y=True)
    tr, te = next(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    sc = StandardScaler().fit(X[tr])
    clf = NadarayaWatsonClassifier().fit(sc.transform(X[tr]), y[tr])
    Q = sc.transform(X[te])
    iv = clf.predict_interval(Q)
    wrong = clf.predict(Q) != y[te]
    assert 1 - wrong.mean() >= 0.90
    assert wrong[iv.certified].sum() <= iv.error_upper[iv.certified].sum()


@pytest.mark.parametrize("make", [
    lambda: NadarayaWatsonClassifier(),
    lambda: NadarayaWatsonClassifier(n_neighbors=3),
    lambda: DyadicClassifier(),
    lambda: NadarayaWatsonClassifier(metric=None),  # lipschitz="auto" alone splits too (check rows)
])
@pytest.mark.parametrize("n, n_classes", [(4, 2), (6, 2), (10, 3)])
def test_too_few_rows_for_the_defaults_is_a_clear_error(make, n, n_classes):
    rng = np.random.default_rng(0)
    X, y = rng.uniform(size=(n, 2)), np.arange(n) % n_classes
    with pytest.raises(ValueError) as info:
        make().fit(X, y)
    message = str(info.value)
    assert "lipschitz='auto'" in message and f"these {n} training rows" in message
    assert "metric=None with a numeric lipschitz" in message  # the fix
    assert info.value.__suppress_context__  # raised from the guard, not a deep traceback
    # The fix the message names fits on the same rows.
    assert make().set_params(metric=None, lipschitz=1.0).fit(X, y).predict(X).shape == (n,)


def test_a_margin_replaces_the_default_lipschitz():
    X, y = _field()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # metric=None: nothing to warn about
        clf = NadarayaWatsonClassifier(metric=None, margin=0.5, bandwidth=0.3).fit(X, y)
    assert clf.lipschitz_ is None and clf.bound_spec_.beta == pytest.approx(2.0)
    assert clf.n_samples_fit_ == X.shape[0]  # no held-out rows: nothing to choose
    ref = NadarayaWatsonClassifier(metric=None, lipschitz=None, margin=0.5, bandwidth=0.3).fit(X, y)
    np.testing.assert_array_equal(clf.predict_interval(X[:20]).epsilon, ref.predict_interval(X[:20]).epsilon)


def test_a_number_in_the_learned_space_warns_once():
    X, y = _field(300)
    with pytest.warns(UserWarning, match="units of the space that metric='auto'") as record:
        clf = NadarayaWatsonClassifier(lipschitz=1.0, bandwidth=0.5, cross_fit=True).fit(X, y)
    assert sum("metric='auto'" in str(w.message) for w in record) == 1  # once, not once per model
    with pytest.raises(ValueError, match="cross_fit_models_"):  # one setting per model, none of its own
        clf.bound_spec_
    assert clf.cross_fit_models_[0].bound_spec_.beta == 1.0 and clf.lipschitz_ == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        NadarayaWatsonClassifier(**PAPER, bandwidth=0.5).fit(X, y)


def test_auto_bandwidth_without_an_assumption_names_the_fix():
    X, y = _field(50)
    with pytest.raises(ValueError, match="bandwidth='scale'"):
        NadarayaWatsonClassifier(metric=None, lipschitz=None).fit(X, y)
    assert NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale").fit(X, y).bandwidth_ > 0


def test_the_paper_models_of_the_experiments_are_pinned():
    from nwbound.experiments._common import make_model

    for name in ("regular", "localized", "regular_auto", "dyadic"):
        model = make_model(name, lipschitz=1.0)
        assert model.metric is None and model.lipschitz == 1.0, name


def test_cli_fit_follows_the_defaults_space_included(tmp_path):
    from nwbound.cli.main import main
    from nwbound.io import load_model

    X, y = _field(240)
    path = tmp_path / "train.csv"
    path.write_text("a,b,label\n" + "".join(f"{a},{b},{c}\n" for (a, b), c in zip(X, y)))
    assert main(["fit", str(path), "--target", "label", "-o", str(tmp_path / "m.npz"), "--quiet"]) == 0
    est = load_model(tmp_path / "m.npz").estimator
    assert est.get_params() == NadarayaWatsonClassifier().get_params()  # a model file holds the learned space
    assert est.metric_ is not None or est._is_cross_fitted()
