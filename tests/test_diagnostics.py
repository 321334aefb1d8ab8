"""Tests for nwbound.diagnostics: bound usefulness report and UselessBoundWarning."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier, PredictionInterval
from nwbound.diagnostics import BoundUsefulness, UselessBoundWarning, bound_usefulness, warn_if_useless


def _interval(proba, bias, sampling, vacuous):
    proba = np.asarray(proba, float)
    n, c = proba.shape
    bias = np.repeat(np.asarray(bias, float)[:, None], c, axis=1)
    sampling = np.repeat(np.asarray(sampling, float)[:, None], c, axis=1)
    return PredictionInterval.from_parts(
        proba, bias, sampling, kappa=np.ones(n), n_eff=np.ones(n), vacuous=np.asarray(vacuous, bool),
        bandwidth=np.ones(n),
    )


def _slow_report(iv, beta):
    """Per-query restatement of the report's numbers."""
    shares, factors, eps = [], [], []
    for i in range(len(iv)):
        top = int(np.argmax(iv.proba[i]))
        b, s = iv.bias[i, top], iv.sampling[i, top]
        eps.append(1.0 if iv.vacuous[i] else iv.epsilon[i, top])
        if iv.vacuous[i]:
            continue
        if b + s > 0:
            shares.append(b / (b + s))
        if b > 0:
            factors.append(s / b)
    return {
        "median_bias_share": float(np.median(shares)),
        "mean_bias_share": float(np.mean(shares)),
        "beta_for_half_bias": beta * float(np.median(factors)),
        "median_epsilon": float(np.median(eps)),
    }


def test_numbers_against_slow_restatement():
    rng = np.random.default_rng(0)
    n = 40
    proba = rng.dirichlet([1, 1, 1], size=n)
    bias = rng.uniform(0, 0.5, size=n)
    samp = rng.uniform(0, 0.5, size=n)
    vac = rng.uniform(size=n) < 0.2
    iv = _interval(proba, bias, samp, vac)
    rep = bound_usefulness(iv, beta=3.0)
    want = _slow_report(iv, 3.0)
    for key, value in want.items():
        assert getattr(rep, key) == pytest.approx(value), key
    assert rep.share_vacuous == pytest.approx(vac.mean())
    assert rep.share_trivial == pytest.approx(iv.trivial.mean())
    assert rep.share_certified == pytest.approx(iv.certified.mean())
    assert rep.mean_sampling_share == pytest.approx(1 - want["mean_bias_share"])


def test_halving_beta_factor_makes_bias_share_half():
    # Scaling the bias term by the reported factor puts the median share at 1/2.
    rng = np.random.default_rng(1)
    n = 51
    proba = rng.dirichlet([2, 1], size=n)
    bias = rng.uniform(0.2, 0.9, size=n)
    samp = rng.uniform(0.01, 0.2, size=n)
    rep = bound_usefulness(_interval(proba, bias, samp, np.zeros(n)), beta=2.0)
    rescaled = bound_usefulness(
        _interval(proba, bias * rep.beta_factor_for_half_bias, samp, np.zeros(n)), beta=rep.beta_for_half_bias
    )
    assert rescaled.median_bias_share == pytest.approx(0.5, abs=0.02)
    assert rep.beta_for_half_bias == pytest.approx(2.0 * rep.beta_factor_for_half_bias)


@pytest.mark.parametrize(
    "bias, samp, vac_share, cause",
    [(0.9, 0.2, 0.0, "bias"), (0.05, 0.9, 0.0, "sampling"), (0.1, 0.1, 0.8, "vacuous")],
)
def test_cause(bias, samp, vac_share, cause):
    n = 20
    proba = np.tile([0.6, 0.4], (n, 1))
    vac = np.arange(n) < vac_share * n
    rep = bound_usefulness(_interval(proba, np.full(n, bias), np.full(n, samp), vac), beta=1.0)
    assert rep.useless and rep.cause == cause
    assert "Fix:" in rep.explanation
    if cause != "vacuous":
        assert "sensitivity_report" in rep.explanation


def test_informative_bounds_do_not_warn():
    n = 30
    proba = np.tile([0.95, 0.05], (n, 1))
    iv = _interval(proba, np.full(n, 0.05), np.full(n, 0.1), np.zeros(n))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rep = warn_if_useless(iv, beta=1.0)
    assert not rep.useless and rep.cause == "none" and rep.share_certified == 1.0


def test_warning_is_public_userwarning_and_names_cause():
    X = np.linspace(0, 1, 200)[:, None]
    y = (X[:, 0] > 0.5).astype(int)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=50.0).fit(X, y)
    with pytest.warns(UselessBoundWarning, match="bias term") as rec:
        rep = warn_if_useless(clf.predict_interval(X), beta=50.0)
    assert issubclass(UselessBoundWarning, UserWarning)
    assert rec[0].filename == __file__  # stacklevel points at the caller
    assert isinstance(rep, BoundUsefulness) and rep.share_trivial > 0.5
    assert rep.beta_for_half_bias < 50.0
    assert "smaller L" in str(rep)


def test_without_beta_still_gives_factor():
    n = 10
    iv = _interval(np.tile([0.6, 0.4], (n, 1)), np.full(n, 0.8), np.full(n, 0.4), np.zeros(n))
    rep = bound_usefulness(iv)
    assert rep.beta is None and rep.beta_for_half_bias is None
    assert rep.beta_factor_for_half_bias == pytest.approx(0.5)
    assert "0.5 × the current L" in rep.explanation


def test_all_vacuous_gives_nan_shares_not_errors():
    n = 5
    iv = _interval(np.tile([0.5, 0.5], (n, 1)), np.zeros(n), np.zeros(n), np.ones(n))
    rep = bound_usefulness(iv)
    assert rep.cause == "vacuous" and math.isnan(rep.median_bias_share)
    assert rep.as_dict()["share_vacuous"] == 1.0


def test_bad_input():
    with pytest.raises(TypeError, match="PredictionInterval"):
        bound_usefulness(np.zeros((3, 2)))
    n = 4
    iv = _interval(np.tile([0.6, 0.4], (n, 1)), np.full(n, 0.1), np.full(n, 0.1), np.zeros(n))
    with pytest.raises(ValueError, match="trivial_threshold"):
        bound_usefulness(iv, trivial_threshold=1.5)
    with pytest.raises(ValueError, match="beta"):
        bound_usefulness(iv, beta=-1.0)
