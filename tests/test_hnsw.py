"""HNSWIndex (hnswlib) and algorithm="hnsw" in the localized classifier."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

hnswlib = pytest.importorskip("hnswlib")

from nwbound import NadarayaWatsonClassifier  # noqa: E402
from nwbound.neighbors import HNSWIndex, available_indexes, make_index  # noqa: E402


def brute_neighbors(X: np.ndarray, Q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact k-NN straight from the definition (float64 differences)."""
    dist = np.sqrt(((Q[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    idx = np.argsort(dist, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(dist, idx, axis=1), idx


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    # Low intrinsic dimension (3) embedded in 12 features, as HNSW is meant for.
    z = rng.normal(size=(1700, 3))
    X = np.tanh(z @ rng.normal(size=(3, 12))) + 0.01 * rng.normal(size=(1700, 12))
    y = (z[:, 0] + 0.5 * z[:, 1] > 0).astype(int) + (z[:, 2] > 1.0)
    return X[:1500], y[:1500], X[1500:]


@pytest.fixture(scope="module")
def fitted(data):
    return HNSWIndex(random_state=0).fit(data[0])


def test_registered():
    assert "hnsw" in available_indexes()
    index = make_index("hnsw", n_jobs=2, random_state=3, M=8, ef=20)
    assert isinstance(index, HNSWIndex)
    assert (index.M, index.ef, index.n_jobs, index.random_state) == (8, 20, 2, 3)
    with pytest.raises(ValueError, match="Unknown option.*'m'.*accepts M"):
        make_index("hnsw", m=8)


def test_recall_and_exact_distances(data, fitted):
    X, _, Q = data
    k = 10
    dist, idx = fitted.kneighbors(Q, k)
    true_dist, true_idx = brute_neighbors(X, Q, k)
    assert dist.shape == idx.shape == (Q.shape[0], k)
    assert dist.dtype == np.float64 and np.issubdtype(idx.dtype, np.integer)
    recall = np.mean([len(np.intersect1d(a, b)) / k for a, b in zip(idx, true_idx)])
    assert recall >= 0.99
    # Euclidean (not squared) distances of the returned rows, ascending.
    np.testing.assert_allclose(dist, np.linalg.norm(Q[:, None, :] - X[idx], axis=2), rtol=1e-12, atol=1e-12)
    assert np.all(np.diff(dist, axis=1) >= 0)
    # Where the neighbour set is right, the distances are the exact ones.
    same = np.all(np.sort(idx, axis=1) == np.sort(true_idx, axis=1), axis=1)
    assert same.mean() > 0.9
    np.testing.assert_allclose(dist[same], true_dist[same], rtol=1e-12, atol=1e-12)


def test_float32_distances_without_recompute(data):
    X, _, Q = data
    dist, idx = HNSWIndex(ef_construction=50, random_state=0, exact_distances=False).fit(X).kneighbors(Q, 5)
    np.testing.assert_allclose(dist, np.linalg.norm(Q[:, None, :] - X[idx], axis=2), rtol=1e-4, atol=1e-5)
    assert np.all(dist >= 0) and np.all(np.diff(dist, axis=1) >= 0)


def test_ef_raised_to_k(data):
    X, _, Q = data
    dist, idx = HNSWIndex(ef=1, ef_construction=50, random_state=0).fit(X).kneighbors(Q[:50], 25)
    assert idx.shape == (50, 25)
    # k distinct training rows per query.
    assert all(len(np.unique(row)) == 25 for row in idx)


def test_deterministic_with_random_state(data):
    X, _, Q = data
    # A small ef makes the result depend on the graph, so equality means equal graphs.
    a = HNSWIndex(ef=10, ef_construction=40, random_state=7, n_jobs=1).fit(X).kneighbors(Q, 10)
    b = HNSWIndex(ef=10, ef_construction=40, random_state=7, n_jobs=2).fit(X).kneighbors(Q, 10)
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[0], b[0])


def test_pickle_round_trip(data):
    X, _, Q = data
    index = HNSWIndex(ef=12, ef_construction=50, random_state=0).fit(X)
    clone = pickle.loads(pickle.dumps(index))
    assert clone.ef == 12
    for a, b in zip(index.kneighbors(Q, 8), clone.kneighbors(Q, 8)):
        np.testing.assert_array_equal(a, b)


def test_classifier_matches_exact_index(data):
    X, y, Q = data
    params = dict(n_neighbors=10, bandwidth=1.5, lipschitz=1.0)
    approx = NadarayaWatsonClassifier(metric=None, algorithm="hnsw", **params).fit(X, y)  # default index parameters
    exact = NadarayaWatsonClassifier(metric=None, algorithm="brute", **params).fit(X, y)
    _, true_idx = brute_neighbors(X, Q, 10)
    _, idx = approx.index_.kneighbors(Q, 10)
    same = np.all(np.sort(idx, axis=1) == np.sort(true_idx, axis=1), axis=1)
    a, b = approx.predict_interval(Q), exact.predict_interval(Q)
    np.testing.assert_allclose(a.proba[same], b.proba[same], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.epsilon[same], b.epsilon[same], rtol=1e-12, atol=1e-12)
    assert np.mean(approx.predict(Q) == exact.predict(Q)) >= 0.99
    # The fitted estimator (with its index) pickles.
    again = pickle.loads(pickle.dumps(approx))
    np.testing.assert_array_equal(again.predict_proba(Q), approx.predict_proba(Q))


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(M=1), "M must be an int >= 2"),
        (dict(ef=0), "ef must be an int >= 1"),
        (dict(ef_construction=2.5), "ef_construction"),
        (dict(n_jobs=0), "n_jobs"),
        (dict(random_state="seed"), "random_state"),
    ],
)
def test_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        HNSWIndex(**params).fit(np.zeros((5, 2)))


def test_bad_inputs(data):
    X, _, Q = data
    with pytest.raises(ValueError, match="not fitted"):
        HNSWIndex().kneighbors(Q, 3)
    bad = X[:50].copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        HNSWIndex().fit(bad)
    index = HNSWIndex(random_state=0).fit(X[:20])
    with pytest.raises(ValueError, match="exceeds the 20 indexed"):
        index.kneighbors(Q, 21)
    with pytest.raises(ValueError, match=r"shape \(n_queries, 12\)"):
        index.kneighbors(Q[:, :5], 3)


def test_estimator_passes_random_state_and_index_params(data):
    X, y, Q = data
    params = dict(
        n_neighbors=10, algorithm="hnsw", bandwidth=1.5, lipschitz=1.0, n_jobs=2, random_state=5,
        index_params={"ef": 10, "ef_construction": 40, "M": 8},
    )
    a = NadarayaWatsonClassifier(metric=None, **params).fit(X, y)
    b = NadarayaWatsonClassifier(metric=None, **params).fit(X, y)
    assert (a.index_.ef, a.index_.M, a.index_.random_state, a.index_.n_jobs) == (10, 8, 5, 2)
    # Reproducible refit (what a saved model relies on when it rebuilds the index).
    np.testing.assert_array_equal(a.index_.kneighbors(Q, 10)[1], b.index_.kneighbors(Q, 10)[1])
    np.testing.assert_array_equal(a.predict_interval(Q).epsilon, b.predict_interval(Q).epsilon)
    with pytest.raises(ValueError, match="Unknown option"):
        NadarayaWatsonClassifier(metric=None, **{**params, "index_params": {"efSearch": 5}}).fit(X, y)


# --- ef chosen from a recall target ------------------------------------------------------------
def recall_against_brute(index: HNSWIndex, X: np.ndarray, Q: np.ndarray, k: int) -> float:
    """recall@k of the index's answers, by id, against the definition (ties have probability 0 here)."""
    _, idx = index.kneighbors(Q, k)
    _, true_idx = brute_neighbors(X, Q, k)
    return float(np.mean([len(np.intersect1d(a, b)) / k for a, b in zip(idx, true_idx)]))


@pytest.mark.parametrize("target", [0.9, 0.99])
def test_recall_target_met_on_unseen_queries(data, target):
    X, _, Q = data
    # A sparse graph (M=4) so that the default ef would not do: ef has to grow.
    index = HNSWIndex(M=4, ef_construction=16, recall=target, n_neighbors=10, random_state=0).fit(X)
    assert index.recall_ >= index.recall_lower_ >= target
    steps = [16]  # the documented ladder: steps of √2 (rounded up) from 16 up to 1024
    while steps[-1] < 1024:
        steps.append(min(1024, int(np.ceil(steps[-1] * np.sqrt(2)))))
    assert index.ef_ in steps
    # 375 held-out rows (a quarter) estimate the recall; 200 fresh queries (2 000 slots) may sit below.
    measured = recall_against_brute(index, X, Q, 10)
    assert measured >= target - 3 * np.sqrt(target * (1 - target) / 2000) - 0.005
    # The search stopped at the first ef that met the target: the step below falls short on the
    # held-out rows, and on fresh queries finds fewer neighbours.
    if index.ef_ > 16:
        below = steps[steps.index(index.ef_) - 1]
        half = HNSWIndex(M=4, ef_construction=16, ef=below, n_neighbors=10, random_state=0).fit(X)
        assert half.recall_lower_ < target <= index.recall_lower_
        assert recall_against_brute(half, X, Q, 10) < measured


def test_unreachable_target_warns_and_uses_the_cap(data, monkeypatch):
    from nwbound.neighbors import _hnsw

    monkeypatch.setattr(_hnsw, "_EF_MAX", 32)
    X, _, _ = data
    with pytest.warns(UserWarning, match=r"recall@10 = .* \(95 % lower bound .*\) < recall=1.0 even at ef=32"):
        index = HNSWIndex(M=3, ef_construction=4, recall=1.0, n_neighbors=10, random_state=0).fit(X)
    assert index.ef_ == 32 and index.recall_ < 1.0


def test_disconnected_graph_gives_a_clear_error(data):
    X, _, _ = data
    # M=2 splits this graph into pieces: even ef = n leaves some queries short of k results.
    with pytest.raises(RuntimeError, match="fewer than 10 neighbours .* larger M"):
        HNSWIndex(M=2, ef_construction=2, n_neighbors=10, random_state=0).fit(X)


def test_ef_choice_deterministic_with_random_state(data):
    X, _, Q = data
    params = dict(M=4, ef_construction=16, recall=0.97, random_state=11, n_jobs=2)
    a, b = HNSWIndex(**params).fit(X), HNSWIndex(**params).fit(X)
    assert (a.ef_, a.recall_) == (b.ef_, b.recall_)
    for u, v in zip(a.kneighbors(Q, 10), b.kneighbors(Q, 10)):
        np.testing.assert_array_equal(u, v)


def test_multithreaded_build_same_quality(data):
    X, _, Q = data
    one = HNSWIndex(M=6, ef_construction=32, recall=0.98, random_state=3).fit(X)
    # random_state=None: the graph is built with two threads (not reproducible, as good).
    two = HNSWIndex(M=6, ef_construction=32, recall=0.98, n_jobs=2).fit(X)
    assert one.recall_ >= 0.98 and two.recall_ >= 0.98
    r1, r2 = recall_against_brute(one, X, Q, 10), recall_against_brute(two, X, Q, 10)
    assert r2 >= 0.97 and abs(r1 - r2) <= 0.02


def test_explicit_ef_wins(data):
    X, _, Q = data
    index = HNSWIndex(M=4, ef_construction=16, ef=12, recall=0.999, n_neighbors=10, random_state=0).fit(X)
    assert index.ef_ == 12 and 0.0 < index.recall_ <= 1.0  # measured, not chased
    # Set after fit (as benchmarks sweep it), ef still decides the search.
    index.ef = 200
    assert recall_against_brute(index, X, Q, 10) >= recall_against_brute(
        HNSWIndex(M=4, ef_construction=16, ef=12, n_neighbors=10, random_state=0).fit(X), X, Q, 10)


def test_larger_k_scales_ef(data):
    X, _, Q = data
    index = HNSWIndex(M=4, ef_construction=16, recall=0.95, n_neighbors=5, random_state=0).fit(X)
    assert index._search_ef(5) == index.ef_
    assert index._search_ef(20) == max(20, -(-index.ef_ * 20 // 5))
    assert index._search_ef(2) == index.ef_
    assert recall_against_brute(index, X, Q, 20) >= 0.9


def test_tiny_training_sets():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    index = HNSWIndex(random_state=0).fit(X)  # too small to hold rows out
    assert index.recall_ is None
    dist, idx = index.kneighbors(np.array([[0.9, 0.1]]), 3)
    assert idx.tolist() == [[1, 0, 2]]
    np.testing.assert_allclose(dist, brute_neighbors(X, np.array([[0.9, 0.1]]), 3)[0])


@pytest.mark.parametrize("recall", [0, 1.5, True, "high", float("nan")])
def test_bad_recall(recall):
    with pytest.raises(ValueError, match="0 < recall <= 1"):
        HNSWIndex(recall=recall).fit(np.zeros((5, 2)))


def test_threads_capped_at_the_cores():
    from nwbound.neighbors._hnsw import _machine_cores, _num_threads

    cores = _machine_cores()
    assert _num_threads(None) == 1
    assert _num_threads(10**6) == cores
    assert _num_threads(-1) == cores
    assert _num_threads(-(cores + 5)) == 1
    with pytest.raises(ValueError, match="n_jobs"):
        _num_threads(0)


def test_recall_target_in_float32(data):
    # The estimator hands float32 rows to the index when dtype="float32": the recall check must
    # not count true neighbours as misses because of float32 rounding in the exact search.
    X, _, Q = data
    X32 = X.astype(np.float32)
    a = HNSWIndex(M=8, ef_construction=32, recall=0.99, random_state=0).fit(X32)
    b = HNSWIndex(M=8, ef_construction=32, recall=0.99, random_state=0).fit(X)
    assert a.recall_ >= 0.99 and a.ef_ <= 2 * b.ef_ < 1024
    assert recall_against_brute(a, X32.astype(np.float64), Q, 10) >= 0.97


def test_exact_candidates_in_blocks(data, monkeypatch):
    from nwbound.neighbors import _hnsw

    X, _, _ = data
    monkeypatch.setattr(_hnsw, "_EXACT_BLOCK", 97)  # many blocks, a ragged last one
    held, rest = np.arange(0, 1500, 7), np.setdiff1d(np.arange(1500), np.arange(0, 1500, 7))
    cand = _hnsw._exact_candidates(X, held, rest, 12)
    _, true_pos = brute_neighbors(X[rest], X[held], 12)
    np.testing.assert_array_equal(np.sort(cand, axis=1), np.sort(rest[true_pos], axis=1))
