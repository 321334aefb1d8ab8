"""set_params after fit on a cross-fitted model (cross_fit_models_): the bound and predict-time
parameters reach every model at the next predict (delta divided by K), exactly as a model fitted
with that value; a changed fit-time parameter raises, naming it, as on one model."""

import copy
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, TransformerMixin, clone

from nwbound import DyadicClassifier, NadarayaWatsonClassifier
from nwbound.spaces import intersect_intervals


class _Identity(TransformerMixin, BaseEstimator):
    """A map fitted on labels that learns nothing (a cheap stand-in for metric="auto")."""

    def fit(self, X, y):
        return self

    def transform(self, X):
        return np.asarray(X, dtype=np.float64)


def _data(n_train=200):
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    sc = StandardScaler().fit(X[:n_train])
    return sc.transform(X[:n_train]), y[:n_train], sc.transform(X[n_train:n_train + 150])


@pytest.fixture(scope="module")
def data():
    return _data()


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _fit(est, data):
    X, y, _ = data
    return _quiet(est.fit, X, y)


def _same(a, b):
    for name in ("proba", "lower", "upper", "epsilon", "kappa", "vacuous"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def _differs(a, b) -> bool:
    return not (np.array_equal(a.lower, b.lower) and np.array_equal(a.upper, b.upper)
                and np.array_equal(a.proba, b.proba))


# A numeric L: the fitted state does not depend on any bound parameter, so a model fitted with the
# new value is the reference (same split, same models), computed independently of set_params.
_NUMERIC = NadarayaWatsonClassifier(metric=_Identity(), cross_fit=True, lipschitz=0.3, bandwidth="auto",
                                    random_state=0)
_CHANGES = [  # (set before the first predict and on the reference, changed after)
    ({}, {"delta": 0.001}),
    ({}, {"lipschitz": 0.05}),
    ({}, {"lipschitz": None, "margin": 0.4}),
    ({}, {"bound": "hoeffding"}),
    ({}, {"bound": "paper"}),
    ({"bound": "selfnormalized"}, {"sigma": 0.2}),
    ({"bound": "paper"}, {"ck": 2.0}),
    ({}, {"lipschitz": 0.05, "bound": "hoeffding", "delta": 0.2}),
]


@pytest.fixture(scope="module")
def numeric(data):
    return _fit(clone(_NUMERIC), data)


@pytest.mark.parametrize("pre, change", _CHANGES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_a_bound_parameter_set_after_fit_acts_as_if_fitted_with_it(numeric, data, pre, change):
    X, y, Q = data
    clf = copy.deepcopy(numeric).set_params(**pre)
    before = _quiet(clf.predict_interval, Q)
    clf.set_params(**change)
    after = _quiet(clf.predict_interval, Q)
    want = _fit(clone(_NUMERIC).set_params(**pre, **change), data)
    _same(after, _quiet(want.predict_interval, Q))
    assert _differs(after, before)  # the change matters here: the old code ignored it
    np.testing.assert_array_equal(_quiet(clf.predict_proba, Q), _quiet(want.predict_proba, Q))
    np.testing.assert_array_equal(_quiet(clf.predict, Q), _quiet(want.predict, Q))
    # bounds=: the settings not overridden are the parent's current ones too
    bounds = {"h": {"bound": "hoeffding"}, "half": {"delta": 0.025}}
    got, ref = _quiet(clf.predict_interval, Q, bounds=bounds), _quiet(want.predict_interval, Q, bounds=bounds)
    for name in bounds:
        _same(got[name], ref[name])
    # the models show the settings they predict with: delta / K, the rest as the parent's
    K = len(clf.cross_fit_models_)
    for model in clf.cross_fit_models_:
        assert model.delta == clf.delta / K
        assert all(model.get_params()[k] == v for k, v in change.items() if k != "delta")


def test_predict_time_parameters_reach_the_models(data):
    """histogram_bins (the band-Chernoff bound over all training points), empty_neighborhood, n_jobs."""
    X, y, Q = data
    base = NadarayaWatsonClassifier(metric=_Identity(), cross_fit=True, lipschitz=0.3, bandwidth=3.0,
                                    bound="chernoff", histogram_bins=4, random_state=0)
    clf = _fit(clone(base), data)
    far = np.vstack([Q[:20], np.full((3, Q.shape[1]), 50.0)])  # 3 queries with no training mass
    before = _quiet(clf.predict_interval, far)
    assert before.vacuous[-3:].all()
    clf.set_params(histogram_bins=256, empty_neighborhood="uniform", working_memory=64)
    after = _quiet(clf.predict_interval, far)
    want = _fit(clone(base).set_params(histogram_bins=256, empty_neighborhood="uniform", working_memory=64), data)
    _same(after, _quiet(want.predict_interval, far))
    assert _differs(after, before)
    np.testing.assert_array_equal(after.proba[-3:], 0.5)  # uniform, not the training prior
    assert not np.array_equal(before.proba[-3:], after.proba[-3:])
    clf.set_params(empty_neighborhood="raise")
    for method in (clf.predict_interval, clf.predict_proba, clf.predict):
        with pytest.raises(ValueError, match="kappa = 0"):
            _quiet(method, far)
    clf.set_params(empty_neighborhood="prior", n_jobs=0)
    with pytest.raises(ValueError, match="n_jobs"):
        _quiet(clf.predict_interval, Q)
    clf.set_params(n_jobs=2)
    _quiet(clf.predict_proba, Q)
    assert all(m.n_jobs == 2 and m.working_memory == 64 for m in clf.cross_fit_models_)


def test_an_invalid_bound_parameter_set_after_fit_is_refused(numeric, data):
    clf = copy.deepcopy(numeric)
    clf.set_params(delta=1.5)
    with pytest.raises(ValueError, match="delta"):
        _quiet(clf.predict_interval, data[2])
    with pytest.raises(ValueError, match="delta"):
        _quiet(clf.predict_proba, data[2])


@pytest.mark.parametrize("change", [{"bandwidth": 1.0}, {"kernel": "gaussian"}, {"n_neighbors": 5},
                                    {"metric_fraction": 0.5}, {"random_state": 1}, {"cross_fit": 3},
                                    {"metric": None}])
def test_a_fit_time_parameter_set_after_fit_raises_naming_it(numeric, data, change):
    clf = copy.deepcopy(numeric).set_params(**change)
    name = next(iter(change))
    for call in (lambda: clf.predict_interval(data[2]), lambda: clf.predict_interval(data[2], bounds=["hoeffding"]),
                 lambda: clf.predict_proba(data[2]), lambda: clf.predict(data[2]), lambda: clf.score(data[2], np.zeros(150))):
        with pytest.raises(ValueError, match=f"{name}=.* was set after fit .*call fit again"):
            _quiet(call)


def test_lipschitz_auto_is_each_models_own_L_and_a_number_goes_to_every_model(data):
    X, y, Q = data
    clf = _fit(NadarayaWatsonClassifier(metric=_Identity(), cross_fit=3, random_state=0), data)  # lipschitz="auto"
    K = len(clf.cross_fit_models_)
    chosen = [m.lipschitz_ for m in clf.cross_fit_models_]
    assert len(set(chosen)) > 1  # each model its own L
    fitted = copy.deepcopy(clf)

    def reference(**settings):  # the slow way: each model (as fitted) at the setting, δ/K, intersected
        parts = []
        for m in copy.deepcopy(fitted.cross_fit_models_):
            parts.append(_quiet(m.set_params(**settings).predict_interval, Q))
        return intersect_intervals(*parts)

    before = _quiet(clf.predict_interval, Q)
    clf.set_params(delta=0.2)
    after = _quiet(clf.predict_interval, Q)
    _same(after, reference(delta=0.2 / K))  # each model keeps its own chosen L
    assert _differs(after, before)
    assert [m.lipschitz_ for m in clf.cross_fit_models_] == chosen
    clf.set_params(lipschitz=0.05)
    _same(_quiet(clf.predict_interval, Q), reference(delta=0.2 / K, lipschitz=0.05))
    clf.set_params(lipschitz="auto", delta=fitted.delta)  # back: each model's own L again, bit for bit
    _same(_quiet(clf.predict_interval, Q), before)
    np.testing.assert_array_equal(_quiet(clf.predict_proba, Q), _quiet(fitted.predict_proba, Q))


def test_lipschitz_auto_after_a_fit_with_a_number_is_refused(numeric, data):
    clf = copy.deepcopy(numeric).set_params(lipschitz="auto")
    for method in (clf.predict_interval, clf.predict_proba, clf.predict):
        with pytest.raises(ValueError, match="was set after a fit with lipschitz=0.3"):
            _quiet(method, data[2])
    # an override of L in bounds= needs no chosen L (as on one model)
    out = _quiet(clf.predict_interval, data[2], bounds={"L": {"lipschitz": 0.3}})
    _same(out["L"], _quiet(numeric.predict_interval, data[2]))


def test_a_pickle_keeps_the_settings_and_the_fit_time_check(numeric, data):
    Q = data[2]
    clf = copy.deepcopy(numeric).set_params(delta=0.001, bound="hoeffding")
    loaded = pickle.loads(pickle.dumps(clf))
    _same(_quiet(loaded.predict_interval, Q), _quiet(clf.predict_interval, Q))
    loaded.set_params(delta=0.3)
    _same(_quiet(loaded.predict_interval, Q),
          _quiet(_fit(clone(_NUMERIC).set_params(delta=0.3, bound="hoeffding"), data).predict_interval, Q))
    loaded.set_params(bandwidth=1.0)
    with pytest.raises(ValueError, match="bandwidth=1.0 was set after fit"):
        _quiet(loaded.predict_interval, Q)


def test_dyadic_cross_fitted_takes_set_params_too(data):
    X, y, Q = data
    X, Q = X[:, :2], Q[:, :2]  # a few cells, each with training rows
    base = DyadicClassifier(metric=_Identity(), cross_fit=True, lipschitz=0.3, resolution=2, random_state=0)
    clf = _fit(clone(base), (X, y, Q))
    before = _quiet(clf.predict_interval, Q)
    clf.set_params(delta=0.001, bound="hoeffding")
    after = _quiet(clf.predict_interval, Q)
    _same(after, _quiet(_fit(clone(base).set_params(delta=0.001, bound="hoeffding"), (X, y, Q)).predict_interval, Q))
    assert _differs(after, before)
    clf.set_params(resolution=3)
    with pytest.raises(ValueError, match="resolution=3 was set after fit"):
        _quiet(clf.predict_proba, Q)


@pytest.mark.slow
def test_the_default_model_takes_set_params_after_fit():
    """The bug report's case: the defaults (cross_fit="auto": the swapped pair at δ/2, lipschitz="auto")."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    X, y, Q = X[:200], y[:200], X[300:400]
    clf = _quiet(NadarayaWatsonClassifier(n_neighbors=20, random_state=0).fit, X, y)
    assert len(clf.cross_fit_models_) == 2
    fitted = copy.deepcopy(clf)
    before = _quiet(clf.predict_interval, Q)
    clf.set_params(delta=0.001, bound="hoeffding")
    after = _quiet(clf.predict_interval, Q)
    parts = [_quiet(m.set_params(delta=0.001 / 2, bound="hoeffding").predict_interval, Q)
             for m in copy.deepcopy(fitted.cross_fit_models_)]
    _same(after, intersect_intervals(*parts))
    assert _differs(after, before)
    for change in ({"n_neighbors": 3}, {"kernel": "gaussian"}):
        bad = copy.deepcopy(fitted).set_params(**change)
        with pytest.raises(ValueError, match=f"{next(iter(change))}=.* was set after fit"):
            _quiet(bad.predict_interval, Q)


def test_check_lipschitz_checks_the_number_set_after_fit(numeric, data):
    """check_lipschitz(model, X, y) on a cross-fitted model names and tests the L it predicts with."""
    from sklearn.datasets import load_breast_cancer

    from nwbound.lipschitz_check import check_lipschitz

    Q = data[2]
    yq = load_breast_cancer(return_X_y=True)[1][200:350]
    clf = copy.deepcopy(numeric).set_params(lipschitz=0.05)
    check = _quiet(check_lipschitz, clf, Q, yq)
    assert check.lipschitz == 0.05
    own = _quiet(clf.predict_interval, Q)
    assert check.n_certified == int(np.count_nonzero(own.certified)) > 0


def test_divided_delta_is_each_models_delta_and_refuses_bad_input(data):
    from nwbound.spaces import divided_delta

    X, y, _ = data
    clf = NadarayaWatsonClassifier(metric=_Identity(), cross_fit=3, lipschitz=1.0, delta=0.09).fit(X, y)
    assert [m.delta for m in clf.cross_fit_models_] == [divided_delta(0.09, 3)] * 3
    with pytest.raises(ValueError, match="delta must be a number with 0 < delta < 1"):
        divided_delta(1.0, 2)
    for bad in (0, True, 1.5):
        with pytest.raises(ValueError, match="n_models must be a positive integer"):
            divided_delta(0.05, bad)
