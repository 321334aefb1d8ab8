"""The adaptive split's shared neighbour search gives exactly what separate searches give."""

from __future__ import annotations

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier
from nwbound.experiments._ecg_neighbors import SHARED_ALGORITHM, SharedIndex, SharedSearch


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.random((400, 4)) * 8) / 8  # a binary grid: many tied distances, all exact
    X = np.vstack([X, X[:50]])  # and duplicated rows
    y = (X[:, 0] + 0.3 * rng.random(X.shape[0]) > 0.6).astype(int) + (X[:, 1] > 0.8)
    return X, y, np.round(rng.random((60, 4)) * 8) / 8, rng.uniform(0.5, 3.0, X.shape[0])


def _slow_neighbours(X, q, k):
    """The k nearest by (direct float64 distance, row), one query at a time."""
    d = [float(np.sqrt(np.sum((q - x) ** 2))) for x in X]
    return sorted(range(len(X)), key=lambda i: (d[i], i))[:k]


def test_shared_models_equal_separate_ones_bit_for_bit():
    X, y, Q, w = _data()
    shared = SharedSearch(9)
    kw = dict(metric=None, kernel="epanechnikov", bandwidth=0.4, lipschitz=0.5, bound="chernoff")
    out = {}
    for k in (5, 9):
        m = NadarayaWatsonClassifier(n_neighbors=k, algorithm=SHARED_ALGORITHM, index_params={"shared": shared},
                                     **kw).fit(X, y, sample_weight=w)
        plain = NadarayaWatsonClassifier(n_neighbors=k, **kw).fit(X, y, sample_weight=w)
        a, b = m.predict_interval(Q), plain.predict_interval(Q)
        for name in ("proba", "lower", "upper"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        out[k] = m
    assert (shared.searches, shared.reused) == (1, 1)
    # the k = 5 answer is the first 5 of the shared k = 9 search, and the slow tie rule agrees
    dist, idx = out[5].index_.kneighbors(Q / out[5]._index_scale, 5)
    for i in range(Q.shape[0]):
        assert idx[i].tolist() == _slow_neighbours(X / out[5]._index_scale, Q[i] / out[5]._index_scale, 5)


def test_shared_search_does_not_reuse_other_queries_or_rows():
    X, _, Q, _ = _data(1)
    shared = SharedSearch(4)
    index = SharedIndex(shared).fit(X)
    index.kneighbors(Q, 3)
    other = Q[::-1].copy()  # same shape, other queries: a new search
    np.testing.assert_array_equal(index.kneighbors(other, 3)[1],
                                  np.array([_slow_neighbours(X, q, 3) for q in other]))
    assert shared.searches == 2
    index2 = SharedIndex(shared).fit(X + 1.0)  # other rows: a new index, nothing reused
    assert index2.index_ is not index.index_ and shared.results == {}
    assert index2.kneighbors(Q, 6)[1].shape == (Q.shape[0], 6)  # more than the shared k: searched as asked


def test_shared_search_rejects_bad_settings():
    with pytest.raises(ValueError, match="n_neighbors"):
        SharedSearch(0)
    with pytest.raises(TypeError, match="SharedSearch"):
        SharedIndex(object())
    with pytest.raises(ValueError, match="index_params"):
        NadarayaWatsonClassifier(metric=None, lipschitz=None, n_neighbors=3, algorithm=SHARED_ALGORITHM, bandwidth=1.0).fit(np.arange(6.0)[:, None], [0, 1] * 3)
