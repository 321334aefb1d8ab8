"""Empirical coverage of the bounds on synthetic data with known class probabilities.

For each setting we draw R independent training sets, and for each one a fresh
set of queries, and count (query, draw) pairs where some class has
``|p_c − p̂_c| > ε`` (simultaneous over classes). The guarantee says each such
event has probability ≤ δ, so the expected violation rate is ≤ δ. We allow a
one-sided binomial tolerance of 3 standard deviations on the N pairs (queries of
one draw are positively correlated, which widens the spread; the measured
rates are far below δ, so the tolerance is not what makes these tests pass).
"""

import math

import numpy as np
import pytest

from nwbound import DyadicClassifier, NadarayaWatsonClassifier
from nwbound.datasets import make_lipschitz_logistic, make_softmax_field

DELTA = 0.05


def _tolerance(n_pairs: int, delta: float = DELTA) -> float:
    return delta + 3.0 * math.sqrt(delta * (1 - delta) / n_pairs)


def _violation_rate(make_model, generator, *, repeats, n_train, n_queries, seed=0, **gen_kw):
    violations = 0
    total = 0
    for r in range(repeats):
        data = generator(n_train, random_state=seed + r, **gen_kw)
        rng = np.random.default_rng(10_000 + seed + r)
        Xq = rng.random((n_queries, data.X.shape[1]))
        p_true = data.true_proba(Xq)
        res = make_model(data).fit(data.X, data.y).predict_interval(Xq)
        violated = np.any(np.abs(p_true - res.proba) > res.epsilon + 1e-12, axis=1)
        violations += int(violated.sum())
        total += n_queries
    return violations / total, total


LOGISTIC = dict(lipschitz=0.15, scale="box")  # L = 3.0 in the [0, 1]² units returned


@pytest.mark.parametrize(
    "name, make_model",
    [
        ("regular λ=0.1", lambda d: NadarayaWatsonClassifier(metric=None, bandwidth=0.1, lipschitz=d.lipschitz)),
        ("regular auto", lambda d: NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=d.lipschitz)),
        ("regular auto, ranked on a fifth", lambda d: NadarayaWatsonClassifier(metric=None, 
            bandwidth="auto", lipschitz=d.lipschitz, ranking_fraction=0.2)),
        ("localized k=50", lambda d: NadarayaWatsonClassifier(metric=None, bandwidth=0.2, n_neighbors=50, lipschitz=d.lipschitz)),
        ("gaussian", lambda d: NadarayaWatsonClassifier(metric=None, kernel="gaussian", bandwidth=0.04, lipschitz=d.lipschitz)),
        ("selfnormalized", lambda d: NadarayaWatsonClassifier(metric=None, bandwidth=0.1, bound="selfnormalized", lipschitz=d.lipschitz)),
        ("paper σ=1/2", lambda d: NadarayaWatsonClassifier(metric=None, bandwidth=0.1, bound="paper", lipschitz=d.lipschitz)),
        ("dyadic m=4", lambda d: DyadicClassifier(metric=None, resolution=4, lipschitz=d.lipschitz)),
    ],
)
def test_two_class_violation_rate_at_most_delta(name, make_model):
    rate, n = _violation_rate(make_model, make_lipschitz_logistic, repeats=6, n_train=3000, n_queries=400, **LOGISTIC)
    assert rate <= _tolerance(n), f"{name}: violation rate {rate:.4f} over {n} pairs"


def test_five_class_simultaneous_coverage():
    make = lambda d: NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=d.lipschitz)  # noqa: E731
    rate, n = _violation_rate(make, make_softmax_field, repeats=5, n_train=4000, n_queries=400,
                              n_classes=5, lipschitz=0.15, scale="box")
    assert rate <= _tolerance(n), f"violation rate {rate:.4f}"


@pytest.mark.slow
def test_the_test_has_power_paper_setting_violates():
    """The paper's constants (σ = 1/4, L = 0.15 taken in the wrong units) are
    not a valid bound: the same test catches them."""
    paper = lambda d: NadarayaWatsonClassifier(metric=None,   # noqa: E731
        bandwidth=0.2, lipschitz=0.15, bound="paper", sigma=0.25, ck=1.0, coverage="per_class"
    )
    rate, n = _violation_rate(paper, make_lipschitz_logistic, repeats=3, n_train=100_000, n_queries=1000, **LOGISTIC)
    assert rate > DELTA, f"paper setting violated only {rate:.4f}"


@pytest.mark.slow
def test_wrong_units_alone_break_coverage():
    """Even with σ = 1/2, using L = 0.15 (raw units) on scaled data under-covers
    where the true slope is 3.0: the bias term is 20× too small."""
    wrong = lambda d: NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=0.15)  # noqa: E731
    right = lambda d: NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=d.lipschitz)  # noqa: E731
    kw = dict(repeats=3, n_train=20_000, n_queries=1000, **LOGISTIC)
    rate_wrong, _ = _violation_rate(wrong, make_lipschitz_logistic, **kw)
    rate_right, n = _violation_rate(right, make_lipschitz_logistic, **kw)
    assert rate_right <= _tolerance(n)
    assert rate_wrong > rate_right
