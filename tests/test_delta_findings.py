"""Issue 32, findings 6 and 7: what δ does to intervals with bandwidth="auto", and to an L chosen at fit."""

from __future__ import annotations

import warnings

import numpy as np

from nwbound import NadarayaWatsonClassifier


def _data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, 2))
    return X, (rng.random(n) < 1 / (1 + np.exp(-6 * (X[:, 0] - 0.5)))).astype(int)


def test_fixed_bandwidth_intervals_nest_in_delta_and_the_docstring_says_auto_does_not():
    X, y = _data(3000, 0)
    Q, _ = _data(300, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = NadarayaWatsonClassifier(metric=None, lipschitz=3.0, bandwidth=0.1).fit(X, y)
        wide = clf.predict_interval(Q, bounds={"a": {"delta": 0.01}})["a"]
        narrow = clf.predict_interval(Q, bounds={"a": {"delta": 0.05}})["a"]
    assert np.all(wide.lower <= narrow.lower + 1e-12) and np.all(wide.upper >= narrow.upper - 1e-12)
    doc = NadarayaWatsonClassifier.__doc__
    assert "**not nested**" in doc and "fix ``bandwidth``" in doc


def test_set_params_delta_after_fit_keeps_the_chosen_lipschitz_as_documented():
    X, y = _data(1500, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.1, lipschitz="auto", delta=0.05).fit(X, y)
        chosen = clf.lipschitz_
        clf.set_params(delta=0.01)
        clf.predict_interval(X[:5])
    assert clf.lipschitz_ == chosen and clf.bound_spec_.beta == chosen and clf.delta == 0.01
    assert "keeps that L" in NadarayaWatsonClassifier.__doc__
