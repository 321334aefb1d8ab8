"""The config key ``blas_threads``: the estimators' calls run BLAS on that many threads (1 at first),
None leaves the library's own pool, and the limit set outside is restored after each call."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from nwbound import NadarayaWatsonClassifier, config_context, get_config, set_config
from nwbound.engine.host import _sums
from nwbound.spaces import _space

if not any(lib["user_api"] == "blas" for lib in threadpool_info()):
    pytest.skip("no BLAS library that threadpoolctl can see", allow_module_level=True)


def _blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


@pytest.fixture
def seen(monkeypatch):
    """BLAS's thread counts seen where the default model chooses its score model (fit) and where the
    kernel sums run (fit and predict)."""
    out: dict[str, list[set[int]]] = {"score model": [], "sums": []}

    def spy(name, func):
        def run(*args, **kwargs):
            out[name].append(_blas_threads())
            return func(*args, **kwargs)
        return run

    monkeypatch.setattr(_space, "_choose_score_model", spy("score model", _space._choose_score_model))
    monkeypatch.setattr(_sums, "_dense_pass", spy("sums", _sums._dense_pass))
    return out


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (rng.random(n) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(int)
    return X, y


def test_the_default_runs_blas_on_one_thread_and_restores_the_callers_limit(seen):
    X, y = _data()
    with threadpool_limits(limits=2, user_api="blas"):
        clf = NadarayaWatsonClassifier(random_state=0).fit(X, y)
        n_fit = len(seen["sums"])
        clf.predict_interval(X[:50])
        assert _blas_threads() == {2}  # restored after each call
    assert seen["score model"] and all(t == {1} for t in seen["score model"])
    assert n_fit and len(seen["sums"]) > n_fit  # the sums ran in fit and in predict_interval
    assert all(t == {1} for t in seen["sums"])


def test_blas_threads_none_leaves_the_library_pool_and_an_integer_sets_it(seen):
    X, y = _data()
    with threadpool_limits(limits=2, user_api="blas"):
        with config_context(blas_threads=None):
            NadarayaWatsonClassifier(random_state=0).fit(X, y)
        assert all(t == {2} for t in seen["sums"] + seen["score model"])
        seen["sums"].clear()
        with config_context(blas_threads=3):
            NadarayaWatsonClassifier(metric=None, lipschitz=1.0).fit(X, y).predict_proba(X[:20])
        assert seen["sums"] and all(t == {3} for t in seen["sums"])


def test_the_same_intervals_with_one_blas_thread_or_the_librarys_pool():
    X, y = _data(seed=1)
    clf = NadarayaWatsonClassifier(random_state=0).fit(X, y)
    one = clf.predict_interval(X[:100])
    with config_context(blas_threads=None):
        pool = NadarayaWatsonClassifier(random_state=0).fit(X, y).predict_interval(X[:100])
    np.testing.assert_allclose(one.lower, pool.lower, rtol=0, atol=1e-12)
    np.testing.assert_allclose(one.upper, pool.upper, rtol=0, atol=1e-12)


@pytest.mark.parametrize("value", [0, -2, 1.5, "2", True])
def test_a_bad_blas_threads_names_the_key(value):
    before = get_config()
    with pytest.raises(ValueError, match="'blas_threads' must be a positive integer or None"):
        set_config(blas_threads=value)
    assert get_config() == before and before["blas_threads"] == 1


def test_warnings_from_inside_a_wrapped_call_point_at_the_callers_line():
    # The wrapper is one more frame between the user and the warning: the stacklevel is counted to
    # the first frame outside nwbound, not fixed.
    X, y = _data()
    with pytest.warns(UserWarning, match="ranks the bandwidth grid on no row") as fit_warnings:
        clf = NadarayaWatsonClassifier(metric=None, lipschitz=1.0, ranking_fraction=1e-9).fit(X, y)
    with pytest.warns(UserWarning, match="cannot guide decisions") as predict_warnings:
        NadarayaWatsonClassifier(metric=None, lipschitz=1e6).fit(X, y).predict_interval(X[:30])
    assert {w.filename for w in fit_warnings} | {w.filename for w in predict_warnings} == {__file__}
    assert clf.predict(X[:3]).shape == (3,)
