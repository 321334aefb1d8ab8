"""set_params on a fitted estimator: the bound parameters take effect at the next predict,
the parameters the fitted state depends on are refused until fit runs again.

Before this, ``set_params(lipschitz=L)`` after ``fit`` was silently ignored: the
fitted ``bound_spec_`` kept the old L. The reference for every "takes effect"
case is a fresh estimator fitted with the new parameters from the start.
"""

from __future__ import annotations

import numpy as np
import pytest

from nwbound import DyadicClassifier, NadarayaWatsonClassifier

pytestmark = pytest.mark.filterwarnings("ignore::nwbound.diagnostics.UselessBoundWarning")

FIELDS = ("proba", "lower", "upper", "epsilon", "bias", "sampling", "kappa", "n_eff", "vacuous")


def _data(n_classes: int = 3, n: int = 300, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 2))
    y = np.minimum((X[:, 0] * n_classes + 0.3 * rng.standard_normal(n)).astype(int), n_classes - 1).clip(0)
    Q = rng.random((7, 2))
    return X, y, Q


def _same_interval(a, b) -> None:
    for field in FIELDS:
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)


# (parameters at fit, parameters set after fit): each change must act as a fresh fit with them.
CHANGES = [
    ({"lipschitz": 1.0}, {"lipschitz": 4.0}),
    ({"lipschitz": 1.0}, {"lipschitz": None, "margin": 0.3}),
    ({"lipschitz": 1.0}, {"delta": 0.2}),
    ({"lipschitz": 1.0}, {"bound": "hoeffding"}),
    ({"lipschitz": 1.0, "bound": "hoeffding"}, {"bound": "chernoff"}),
    ({"lipschitz": 1.0}, {"coverage": "per_class"}),
    ({"lipschitz": 1.0, "bound": "selfnormalized"}, {"sigma": 0.3}),
    ({"lipschitz": 1.0, "bound": "paper"}, {"ck": 2.0}),
    ({}, {"lipschitz": 2.0}),
]


@pytest.mark.parametrize("n_neighbors", [None, 40])
@pytest.mark.parametrize("at_fit, after", CHANGES)
def test_bound_parameters_take_effect_without_refit(at_fit, after, n_neighbors):
    X, y, Q = _data()
    base = {"bandwidth": 0.3, "n_neighbors": n_neighbors}
    clf = NadarayaWatsonClassifier(**{"metric": None, "lipschitz": None, **base, **at_fit}).fit(X, y)
    if at_fit.get("lipschitz") is not None:
        clf.predict_interval(Q)  # a prediction before the change must not pin anything
    clf.set_params(**after)
    fresh = NadarayaWatsonClassifier(**{"metric": None, "lipschitz": None, **base, **at_fit, **after}).fit(X, y)
    _same_interval(clf.predict_interval(Q), fresh.predict_interval(Q))
    assert clf.beta_ == fresh.beta_ and clf.delta_prime_ == fresh.delta_prime_
    # interval_from_statistics reads the current setting too (the statistics are for it)
    _same_interval(clf.interval_from_statistics(clf.kernel_statistics(Q)), fresh.predict_interval(Q))


def test_changed_bound_is_what_bandwidth_auto_ranks_with():
    X, y, Q = _data()
    clf = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=0.5).fit(X, y)
    clf.predict_proba(Q)
    clf.set_params(lipschitz=20.0, bound="hoeffding")
    fresh = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=20.0, bound="hoeffding").fit(X, y)
    _same_interval(clf.predict_interval(Q), fresh.predict_interval(Q))
    np.testing.assert_array_equal(clf.predict_proba(Q), fresh.predict_proba(Q))


@pytest.mark.parametrize("at_fit, after", CHANGES[:6])
def test_dyadic_bound_parameters_take_effect(at_fit, after):
    X, y, Q = _data()
    clf = DyadicClassifier(metric=None, resolution=2, **at_fit).fit(X, y)
    clf.set_params(**after)
    fresh = DyadicClassifier(metric=None, resolution=2, **{**at_fit, **after}).fit(X, y)
    _same_interval(clf.predict_interval(Q), fresh.predict_interval(Q))


@pytest.mark.parametrize("estimator", [NadarayaWatsonClassifier(metric=None, bandwidth=0.3),
                                       DyadicClassifier(metric=None, resolution=2)])
def test_lipschitz_auto_set_after_a_numeric_fit_is_refused(estimator):
    """``lipschitz="auto"`` chooses L on rows held out at fit. Set after a fit with a numeric L, it
    used to predict silently with that old number as if it had been chosen: now it asks for a refit."""
    X, y, Q = _data()
    clf = estimator.set_params(lipschitz=1.0).fit(X, y)
    clf.set_params(lipschitz="auto")
    for method in (clf.predict_interval, lambda q: clf.beta_):
        with pytest.raises(ValueError, match=r"lipschitz='auto' was set after a fit with lipschitz=1.0.*call fit again"):
            method(Q)
    # A fit that chose L keeps it through a numeric detour, and a refit chooses one.
    auto = clf.fit(X, y)
    chosen, expected = auto.lipschitz_, auto.predict_interval(Q)
    assert auto.lipschitz_report_ is not None and auto.beta_ == chosen
    auto.set_params(lipschitz=2 * chosen).set_params(lipschitz="auto")
    _same_interval(auto.predict_interval(Q), expected)


def test_beta_and_delta_prime_follow_the_parameters():
    X, y, _ = _data(n_classes=3)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=1.0, delta=0.06).fit(X, y)
    assert (clf.beta_, clf.delta_prime_) == (1.0, pytest.approx(0.02))  # δ/C, C = 3
    clf.set_params(lipschitz=None, margin=0.25, coverage="per_class")
    assert (clf.beta_, clf.delta_prime_) == (4.0, 0.06)
    assert clf.bound_spec_.beta == 4.0


@pytest.mark.parametrize(
    "change",
    [{"kernel": "boxcar"}, {"bandwidth": 0.5}, {"n_neighbors": 10}, {"bandwidth_grid": [0.1, 0.2]},
     {"dtype": "float32"}, {"algorithm": "brute"}, {"ranking_fraction": 0.5}, {"random_state": 3}],
)
def test_fit_time_parameter_changed_after_fit_is_refused(change):
    X, y, Q = _data()
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=1.0).fit(X, y)
    expected = clf.predict_interval(Q)
    before = {name: clf.get_params()[name] for name in change}
    clf.set_params(**change)
    name = next(iter(change))
    for method in (clf.predict_interval, clf.predict_proba, clf.predict, clf.kernel_statistics):
        with pytest.raises(ValueError, match=rf"{name}=.*call fit again"):
            method(Q)
    clf.set_params(**before)  # back as fitted: predicts again, unchanged
    _same_interval(clf.predict_interval(Q), expected)
    clf.set_params(**change)
    assert clf.fit(X, y).predict_proba(Q).shape == (Q.shape[0], 3)  # a refit accepts it


def test_dyadic_resolution_changed_after_fit_is_refused():
    X, y, Q = _data()
    clf = DyadicClassifier(metric=None, resolution=2, lipschitz=1.0).fit(X, y)
    clf.set_params(resolution=3)
    for method in (clf.predict_interval, clf.predict_proba, clf.predict, clf.kernel_statistics):
        with pytest.raises(ValueError, match=r"resolution=3.*call fit again"):
            method(Q)


def test_equal_values_of_another_type_are_not_a_change():
    X, y, Q = _data()
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, bandwidth_grid=[0.1, 0.3], lipschitz=1.0).fit(X, y)
    expected = clf.predict_proba(Q)
    clf.set_params(bandwidth=np.float64(0.3), bandwidth_grid=np.array([0.1, 0.3]), n_jobs=1, working_memory=64)
    np.testing.assert_array_equal(clf.predict_proba(Q), expected)


def test_invalid_bound_parameter_set_after_fit_names_it():
    X, y, Q = _data()
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=1.0).fit(X, y)
    clf.set_params(delta=1.5)
    with pytest.raises(ValueError, match="delta"):
        clf.predict_interval(Q)
    clf.set_params(delta=0.05, empty_neighborhood="nothing")
    with pytest.raises(ValueError, match="empty_neighborhood"):
        clf.predict_proba(Q)
    clf.set_params(empty_neighborhood="prior", lipschitz=None)
    with pytest.raises(ValueError, match="lipschitz"):
        clf.predict_interval(Q)
    assert clf.predict_proba(Q).shape == (Q.shape[0], 3)  # p̂ needs no assumption


def test_error_advice_for_a_bound_name_is_what_works():
    X, y, Q = _data()
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=1.0).fit(X, y)
    with pytest.raises(TypeError, match=r"set_params\(bound='hoeffding'\)") as info:
        clf.predict_interval(Q, bounds="hoeffding")
    assert "refit" in str(info.value)
    expected = clf.predict_interval(Q, bounds=["hoeffding"])["hoeffding"]
    clf.set_params(bound="hoeffding")  # the advice, followed on the fitted estimator
    _same_interval(clf.predict_interval(Q), expected)


def test_sharded_dask_estimator_follows_set_params():
    da = pytest.importorskip("dask.array")
    from nwbound.dask import ShardedNadarayaWatson

    X, y, Q = _data()
    Xd, Qd = da.from_array(X, chunks=(100, -1)), da.from_array(Q, chunks=(4, -1))
    for extra in ({}, {"n_neighbors": 30}):
        model = ShardedNadarayaWatson(metric=None, bandwidth=0.3, lipschitz=1.0, **extra).fit(Xd, y)
        model.set_params(lipschitz=3.0, bound="hoeffding", delta=0.1)
        fresh = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=3.0, bound="hoeffding", delta=0.1, **extra).fit(X, y)
        got, want = model.predict_interval(Qd), fresh.predict_interval(Q)
        for field in ("lower", "upper", "epsilon", "proba"):
            np.testing.assert_allclose(getattr(got, field).compute(), getattr(want, field), rtol=1e-12, atol=1e-12)
        for change in ({"bandwidth": 0.5}, {"kernel": "boxcar"}, {"n_neighbors": 5 if extra else 7}):
            name = next(iter(change))
            before = model.get_params()[name]
            model.set_params(**change)
            with pytest.raises(ValueError, match=rf"{name}=.*call fit again"):
                model.predict_proba(Qd)
            model.set_params(**{name: before})
        assert model.predict(Qd).compute().shape == (Q.shape[0],)  # back as fitted: predicts again
