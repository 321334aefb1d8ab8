"""The float32 filter of float64 data: a float32 product selects, float64 distances decide.

On float64 data each query row whose float32 product selects few entries (``t̃ ≥ −e``, at most
``_tiles._FILTER_MAX_SHARE`` of a probe of the training rows) computes its product in float32 and
recomputes every selected entry's distance from the float64 coordinates; other rows keep the
float64 product (or, where its bound is too large, direct distances). Every test here compares
with an independent slow float64 formula written below (direct distances, ``K(u)``, per pair) and
checks what the engine promises: the set of pairs with ``K > 0`` is the true one, each kernel value
is within the stated ``u²`` error of the exact one, ``dist_sum`` bounds ``Σ w K̃ d`` from above,
``u2_error`` covers the actual ``u²`` error, the fallbacks fire on an ill-conditioned case, nothing
depends on the units (``2^k``), on the other queries of the pass or on pruning, and the intervals
still cover a known ``p`` at the nominal rate.

One class per training point exposes every pair's ``w_c K̃_c`` as ``class_sums[:, :, c]``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier
from nwbound.datasets import make_lipschitz_logistic
from nwbound.engine.host import _sums_data, _tiles
from nwbound.engine.host._sums import TrainingSet, dense_kernel_sums
from nwbound.kernels import get_kernel

from test_engine_paths import numba_unavailable_reason, route  # noqa: F401  (route: both reductions)

EPAN = get_kernel("epanechnikov")
QUARTIC = get_kernel("quartic")
U64 = 2.0**-53


def _exact(Q, X, lam, kernel):
    """Per pair, from the definitions in float64: ``u² = ‖y − x‖²/λ²``, ``K(u)`` and ``‖y − x‖``."""
    d2 = ((Q[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    u2 = d2 / lam**2
    return u2, kernel(np.sqrt(u2)).astype(np.float64), np.sqrt(d2)


def _spy_groups(monkeypatch):
    """Record, for every group of query rows the engine reduces, its size and whether it took the filter."""
    seen = []
    group_sums = _tiles._group_sums

    def spy(Q, cols, plan, filtered=None):
        seen.append((Q.shape[0], filtered is not None))
        return group_sums(Q, cols, plan, filtered)

    monkeypatch.setattr(_tiles, "_group_sums", spy)
    return seen


def _per_pair_checks(got, Q, X, w, lams, kernel, lip_u2):
    """Every pair's ``K̃`` against the exact ``K``: the same zero pattern, ``|K̃ − K| ≤ lip·u2_error``,
    ``dist_sum ≥ Σ w K̃ d`` (exact distances). Pairs within the direct formula's rounding of the edge
    would be undecidable: the data keep them away (checked)."""
    for g, lam in enumerate(lams):
        u2, k_exact, dist = _exact(Q, X, lam, kernel)
        r2 = kernel.radius**2
        assert np.all(np.abs(u2 - r2) > 1e-11), "a pair at the edge within float64 rounding"
        k_got = got.class_sums[:, g, :] / w[None, :]
        np.testing.assert_array_equal(k_got > 0, k_exact > 0)  # the set of pairs with K > 0
        err = got.u2_error[:, g][:, None]
        assert np.all(np.abs(k_got - k_exact) <= lip_u2 * err * (1 + 1e-9) + 1e-15)
        if got.dist_sum is not None:
            lower = (w[None, :] * k_got * dist).sum(axis=1)
            assert np.all(got.dist_sum[:, g] >= lower * (1 - 1e-12))


def _edge_case(seed=0, n=300, d=5, lam=0.05):
    """Training points in [0, 1]^d, one class each; queries at the training points, near them, and at
    ``λ(1 ∓ 1e-9)`` from one along an axis: inside the float32 product's ambiguity, outside float64's."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = np.arange(n)
    w = rng.uniform(0.5, 2.0, n)
    axis = np.eye(d)[0]
    edge = np.concatenate([X[:20] + lam * (1 - 1e-9) * axis, X[20:40] - lam * (1 + 1e-9) * axis])
    Q = np.concatenate([X[40:60], X[60:100] + rng.normal(scale=lam / 3, size=(40, d)), edge])
    return X, y, w, Q, lam


@pytest.mark.parametrize("kernel, lip_u2", [(EPAN, 1.0), (QUARTIC, 2.0)], ids=["epanechnikov", "quartic"])
def test_filtered_rows_match_the_exact_kernel_values_pair_by_pair(kernel, lip_u2, route, monkeypatch):
    X, y, w, Q, lam = _edge_case()
    seen = _spy_groups(monkeypatch)
    lams = np.array([lam / 2, lam])
    got = dense_kernel_sums(Q, TrainingSet.build(X, y, X.shape[0], w), kernel, lams, need_dist=True)
    assert seen == [(Q.shape[0], True)]  # every row took the float32 filter
    _per_pair_checks(got, Q, X, w, lams, kernel, lip_u2)
    # Its distances come from the coordinates: u2_error is the direct formula's bound, not the product's.
    np.testing.assert_allclose(got.u2_error[:, -1], 2.0 * (Q.shape[1] + 6) * U64, rtol=1e-12)
    # The queries at λ(1 − 1e-9) of a point have it (K ≈ 2e-9 > 0); those at λ(1 + 1e-9) do not.
    k_edge = got.class_sums[60:100, 1, :] / w
    assert np.all(k_edge[np.arange(20), np.arange(20)] > 0)
    assert np.all(k_edge[20 + np.arange(20), 20 + np.arange(20)] == 0)


def test_u2_error_covers_the_actual_error_of_every_computed_u2(route):
    # Epanechnikov K = 1 − u² inside the support: |ũ² − u²| = |K̃ − K| there, pair by pair.
    X, y, w, Q, lam = _edge_case(seed=1)
    got = dense_kernel_sums(Q, TrainingSet.build(X, y, X.shape[0], w), EPAN, np.array([lam]), need_dist=False)
    u2, k_exact, _ = _exact(Q, X, lam, EPAN)
    u2_got = 1.0 - got.class_sums[:, 0, :] / w
    inside = k_exact > 0
    actual = np.where(inside, np.abs(u2_got - u2), 0.0).max(axis=1)
    assert np.all(actual <= got.u2_error[:, 0])
    assert actual.max() > 0  # the check compares something


def test_the_float64_product_and_direct_tiers_fire_where_float32_cannot_hold(route, monkeypatch):
    # Features far from the origin (1e6) with a tiny support: the float32 bound exceeds _MAX_T_ERROR
    # (ρ² = (s₀/S)² is huge), so no row takes the filter; the float64 product holds at λ = 1e-3, and
    # at λ = 1e-9 only direct distances do. Each result still meets the bound, pair by pair.
    rng = np.random.default_rng(2)
    X = 1e6 + rng.random((200, 3))
    X[1::2] = X[::2] + rng.normal(scale=3e-4, size=(100, 3))  # pairs within the support
    for lam, tier_error in ((1e-3, None), (1e-9, 2.0 * (3 + 6) * U64)):
        Xs = X if lam == 1e-3 else np.concatenate([X[::2], X[::2] + 3e-10])
        Q = Xs[:40] + (lam / 4 if lam == 1e-3 else 0.0)
        seen = _spy_groups(monkeypatch)
        train = TrainingSet.build(Xs, np.arange(Xs.shape[0]), Xs.shape[0], None)
        got = dense_kernel_sums(Q, train, EPAN, np.array([lam]), need_dist=True)
        assert seen and not any(filtered for _, filtered in seen)  # the filter was refused
        _per_pair_checks(got, Q, Xs, np.ones(Xs.shape[0]), [lam], EPAN, 1.0)
        if tier_error is None:  # the float64 product's bound: above the direct one, well below 2⁻⁸
            assert np.all(got.u2_error[:, 0] > 2.0 * (3 + 6) * U64) and np.all(got.u2_error[:, 0] < 2.0**-8)
        else:  # every distance directly
            np.testing.assert_allclose(got.u2_error[:, 0], tier_error, rtol=1e-12)
        assert np.all(got.kappa[:, 0] > 0)  # each query has a training point within its support


def test_rows_decide_alone_whatever_their_block_or_pruning(monkeypatch):
    # Queries that take the filter and queries that cannot (in a dense cluster, where their product
    # selects most of the probe) in one block: two groups, each row's sums equal to those it gets
    # alone in a pass, and with or without pruning.
    monkeypatch.setattr(_sums_data, "_MIN_PRUNE_POINTS", 64)
    rng = np.random.default_rng(3)
    X = np.concatenate([rng.random((1500, 4)) * 10.0, 5.0 + 0.01 * rng.random((1500, 4))])
    y = rng.integers(0, 3, X.shape[0])
    Q = np.concatenate([rng.random((30, 4)) * 10.0, 5.0 + 0.01 * rng.random((30, 4))])[rng.permutation(60)]
    train = TrainingSet.build(X, y, 3, None)
    seen = _spy_groups(monkeypatch)
    lams = np.array([0.3, 0.6])
    both = dense_kernel_sums(Q, train, EPAN, lams, need_dist=True, histogram_bins=8, prune=False)
    assert sorted(filtered for _, filtered in seen) == [False, True]
    for prune in (False, True):
        for part in (np.arange(0, 60, 2), np.arange(1, 60, 2)):
            alone = dense_kernel_sums(Q[part], train, EPAN, lams, need_dist=True, histogram_bins=8, prune=prune)
            for name in ("class_sums", "sq_sum", "dist_sum", "histogram", "u2_error"):
                np.testing.assert_allclose(getattr(alone, name), getattr(both, name)[part], rtol=1e-13, atol=0,
                                           err_msg=name)


@pytest.mark.parametrize("k", [-60, 40])
def test_power_of_two_units_give_the_same_bits(k, route):
    # X, queries and λ scaled by 2^k: every layout value is the same, so every sum is too (distances
    # scaled by 2^k), through the filter and the float64 tiers alike.
    X, y, w, Q, lam = _edge_case(seed=4)
    lams = np.array([lam / 2, lam])
    base = dense_kernel_sums(Q, TrainingSet.build(X, y, X.shape[0], w), EPAN, lams, need_dist=True, histogram_bins=6)
    f = math.ldexp(1.0, k)
    got = dense_kernel_sums(Q * f, TrainingSet.build(X * f, y, X.shape[0], w), EPAN, lams * f, need_dist=True,
                            histogram_bins=6)
    np.testing.assert_array_equal(got.class_sums, base.class_sums)
    np.testing.assert_array_equal(got.dist_sum, base.dist_sum * f)
    np.testing.assert_array_equal(got.histogram, base.histogram)
    np.testing.assert_array_equal(got.u2_error, base.u2_error)


def test_estimator_intervals_in_power_of_two_units_are_the_same(monkeypatch):
    rng = np.random.default_rng(5)
    X = rng.random((4000, 6))  # six features: the supports hold few of the rows, the filter's case
    y = (X[:, 0] + 0.2 * rng.normal(size=4000) > 0.5).astype(int)
    Q = rng.random((60, 6))
    seen = _spy_groups(monkeypatch)

    def fit(f):
        model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=1.0 / f)
        return model.fit(X * f, y).predict_interval(Q * f)

    base = fit(1.0)
    assert any(filtered for _, filtered in seen)  # the estimator's passes take the filter
    for k in (-100, 70):
        got = fit(math.ldexp(1.0, k))
        # The engine's sums are the same bits (above); the estimator around them rounds its own steps.
        np.testing.assert_allclose(got.proba, base.proba, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(got.epsilon, base.epsilon, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("bound", ["hoeffding", "chernoff"])
def test_known_p_field_is_covered_at_the_nominal_rate(bound, monkeypatch):
    # The paper's logistic field in four features (L = 3 in [0, 1]⁴ units), λ = 0.2: about 1 % of the
    # rows within a query's support, so the filter decides. The share of queries whose true p leaves
    # the interval stays within δ (plus three binomial standard deviations).
    seen = _spy_groups(monkeypatch)
    delta, misses, total = 0.05, 0, 0
    for r in range(4):
        data = make_lipschitz_logistic(6000, n_features=4, random_state=r, lipschitz=0.15, scale="box")
        make_model = lambda d: NadarayaWatsonClassifier(  # noqa: E731
            metric=None, bandwidth=0.2, bound=bound, lipschitz=d.lipschitz)
        Xq = np.random.default_rng(100 + r).random((400, 4))
        iv = make_model(data).fit(data.X, data.y).predict_interval(Xq)
        misses += int(np.any(np.abs(data.true_proba(Xq) - iv.proba) > iv.epsilon + 1e-12, axis=1).sum())
        total += Xq.shape[0]
    assert sum(n for n, filtered in seen if filtered) > 0.5 * sum(n for n, _ in seen)
    assert misses / total <= delta + 3.0 * math.sqrt(delta * (1 - delta) / total)


def test_the_filter_agrees_with_the_float64_product_within_its_bound(monkeypatch):
    # The same pass with the filter switched off (every row on the float64 product): the sums agree
    # within the two routes' error bounds, and the filter's bound is the tighter one.
    rng = np.random.default_rng(6)
    X = rng.normal(size=(3000, 21))
    y = rng.integers(0, 2, 3000)
    Q = rng.normal(size=(200, 21))
    lam = np.array([4.5])
    train = TrainingSet.build(X, y, 2, None)
    filt = dense_kernel_sums(Q, train, EPAN, lam, need_dist=True, histogram_bins=16)
    monkeypatch.setattr(_tiles, "_FILTER_MAX_SHARE", -1.0)
    f64 = dense_kernel_sums(Q, TrainingSet.build(X, y, 2, None), EPAN, lam, need_dist=True, histogram_bins=16)
    assert np.all(filt.u2_error <= f64.u2_error)
    budget = (filt.u2_error + f64.u2_error)[..., None] * 3000 + 1e-12
    assert np.all(np.abs(filt.class_sums - f64.class_sums) <= budget)
    np.testing.assert_array_equal(filt.class_sums > 0, f64.class_sums > 0)
    assert filt.kappa.max() > 0  # the check compares something
