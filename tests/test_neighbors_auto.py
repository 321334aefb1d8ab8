"""algorithm="auto": exact search below AUTO_HNSW_RULE, HNSW above it (when hnswlib is installed)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier
from nwbound.neighbors import AUTO_HNSW_RULE, AutoIndex, AutoRule, ExactIndex, make_index
from nwbound.neighbors import _index as index_module

HAVE_HNSWLIB = importlib.util.find_spec("hnswlib") is not None


def brute_neighbors(X: np.ndarray, Q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact k-NN straight from the definition (float64 differences)."""
    dist = np.sqrt(((Q[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    idx = np.argsort(dist, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(dist, idx, axis=1), idx


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(1300, 3))
    X = np.tanh(z @ rng.normal(size=(3, 20))) + 0.01 * rng.normal(size=(1300, 20))
    y = (z[:, 0] > 0).astype(int) + (z[:, 1] > 0.8)
    return X[:1200], y[:1200], X[1200:]


@pytest.fixture
def low_threshold(monkeypatch):
    """A rule the 1 200-row test set is above (the real one is far larger)."""
    monkeypatch.setattr(index_module, "AUTO_HNSW_RULE", AutoRule(min_samples=1000, min_features=16))


def test_rule_is_one_documented_constant():
    assert isinstance(AUTO_HNSW_RULE, AutoRule)
    # HNSW only where trees do not answer exactly and fast: scikit-learn's brute-force regime.
    assert AUTO_HNSW_RULE.min_features == 16
    assert AUTO_HNSW_RULE.min_samples >= 10_000


def test_boundaries_of_the_rule(monkeypatch):
    n, d = AUTO_HNSW_RULE.min_samples, AUTO_HNSW_RULE.min_features
    assert not AutoIndex.uses_hnsw(n - 1, 100)
    assert not AutoIndex.uses_hnsw(10 * n, d - 1)
    assert AutoIndex.uses_hnsw(n, d) == HAVE_HNSWLIB
    # Without hnswlib "auto" stays exact at any size.
    monkeypatch.setattr(index_module.importlib.util, "find_spec", lambda name: None)
    assert not AutoIndex.uses_hnsw(10 * n, 100)


def test_auto_is_exact_below_the_threshold(data):
    X, _, Q = data
    index = make_index("auto", n_jobs=2, random_state=0).fit(X)
    assert index.algorithm_ == "exact" and isinstance(index.index_, ExactIndex)
    dist, idx = index.kneighbors(Q, 7)
    true_dist, true_idx = brute_neighbors(X, Q, 7)
    np.testing.assert_array_equal(idx, true_idx)
    np.testing.assert_allclose(dist, true_dist, rtol=1e-10, atol=1e-12)


def test_estimator_default_is_exact_for_small_data(data):
    X, y, Q = data
    params = dict(n_neighbors=10, bandwidth=1.5, lipschitz=1.0)
    auto = NadarayaWatsonClassifier(metric=None, **params).fit(X, y)  # algorithm="auto" by default
    brute = NadarayaWatsonClassifier(metric=None, algorithm="brute", **params).fit(X, y)
    assert auto.index_.algorithm_ == "exact"
    a, b = auto.predict_interval(Q), brute.predict_interval(Q)
    np.testing.assert_allclose(a.proba, b.proba, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.epsilon, b.epsilon, rtol=1e-12, atol=1e-12)


@pytest.mark.skipif(not HAVE_HNSWLIB, reason="needs hnswlib")
def test_auto_builds_hnsw_above_the_threshold(data, low_threshold):
    from nwbound.neighbors import HNSWIndex

    X, y, Q = data
    index = make_index("auto", n_jobs=2, random_state=4, recall=0.97, n_neighbors=10).fit(X)
    assert index.algorithm_ == "hnsw" and isinstance(index.index_, HNSWIndex)
    assert (index.index_.recall, index.index_.random_state, index.index_.n_jobs) == (0.97, 4, 2)
    assert index.index_.recall_ >= 0.97
    _, idx = index.kneighbors(Q, 10)
    _, true_idx = brute_neighbors(X, Q, 10)
    assert np.mean([len(np.intersect1d(a, b)) / 10 for a, b in zip(idx, true_idx)]) >= 0.95
    # Low-dimensional data stays exact at any size: trees win there.
    assert make_index("auto").fit(X[:, :4]).algorithm_ == "exact"
    # Through the estimator, with its index_params.
    model = NadarayaWatsonClassifier(metric=None, n_neighbors=10, bandwidth=1.5, lipschitz=1.0, random_state=0,
                                     index_params={"recall": 0.95}).fit(X, y)
    assert model.index_.algorithm_ == "hnsw" and model.index_.index_.recall == 0.95
    exact = NadarayaWatsonClassifier(metric=None, n_neighbors=10, bandwidth=1.5, lipschitz=1.0, algorithm="brute").fit(X, y)
    assert np.mean(model.predict(Q) == exact.predict(Q)) >= 0.95


def test_auto_options():
    assert make_index("auto", leaf_size=5).leaf_size == 5
    assert make_index("auto", M=8, ef=20).hnsw_params == {"M": 8, "ef": 20}
    with pytest.raises(ValueError, match="Unknown option.*'bogus'.*algorithm='auto'.*leaf_size"):
        make_index("auto", bogus=1)
    # The exact algorithms take (and ignore) the k an index may be tuned for.
    assert isinstance(make_index("brute", n_neighbors=10), ExactIndex)
    with pytest.raises(ValueError, match="not fitted"):
        AutoIndex().kneighbors(np.zeros((1, 2)), 1)


@pytest.mark.skipif(not HAVE_HNSWLIB, reason="needs hnswlib")
def test_auto_hnsw_pickles(data, low_threshold):
    import pickle

    X, _, Q = data
    index = make_index("auto", random_state=2).fit(X)
    clone = pickle.loads(pickle.dumps(index))
    assert clone.algorithm_ == "hnsw" and clone.index_.ef_ == index.index_.ef_
    for a, b in zip(index.kneighbors(Q, 10), clone.kneighbors(Q, 10)):
        np.testing.assert_array_equal(a, b)
