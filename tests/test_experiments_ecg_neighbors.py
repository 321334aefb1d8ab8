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


def test_shared_search_stacks_earlier_blocks_in_order():
    rng = np.random.default_rng(3)
    X, Q = rng.random((200, 3)), rng.random((30, 3))
    shared = SharedSearch(6)
    index = SharedIndex(shared).fit(X)
    plain = SharedIndex(SharedSearch(6)).fit(X)
    index.kneighbors(rng.random((4, 3)), 6)  # an unrelated search first: skipped over
    for block in (Q[:12], Q[12:25], Q[25:]):  # the blocks a blocked model queries in
        index.kneighbors(block, 6)
    assert (shared.searches, shared.reused) == (4, 0)
    dist, idx = index.kneighbors(Q, 4)  # all rows at once: the blocks' answers, stacked
    assert (shared.searches, shared.reused) == (4, 1)
    d_ref, i_ref = plain.kneighbors(Q, 4)
    assert np.array_equal(idx, i_ref) and np.array_equal(dist, d_ref)
    for other in (Q[1:], Q[:24], Q[::-1]):  # not whole blocks in order: searched
        before = shared.searches
        assert np.array_equal(index.kneighbors(other, 4)[1], plain.kneighbors(other, 4)[1])
        assert shared.searches == before + 1
    assert shared._from_blocks(Q, 7) is None  # more neighbours than the blocks found
