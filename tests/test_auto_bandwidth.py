"""``bandwidth="auto"`` from one ranking pass: distance moments per slot, then exact statistics at the
chosen bandwidth. Checked against slow direct formulas and against the exhaustive path (statistics of
every bandwidth, then the choice), on both reductions of the engine."""

from __future__ import annotations

import numpy as np
import pytest
from test_engine_paths import _clustered, _direct, route  # noqa: F401  (route: fixture)

from nwbound import NadarayaWatsonClassifier
from nwbound.engine import BandwidthRanking
from nwbound.engine.host import _sums, _sums_data
from nwbound.engine.host._sums import TrainingSet, dense_kernel_sums, dense_moment_sums
from nwbound.kernels import get_kernel

GRID = np.array([0.08, 0.15, 0.3, 0.55, 1.0, 2.5])


@pytest.mark.parametrize("kernel", ["epanechnikov", "quartic", "triweight", "boxcar"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_moment_sums_equal_direct_formulas(kernel, weighted, dtype, route):
    X, y, Q = _clustered(700, 3, 50, seed=5)
    X, Q = X.astype(dtype), Q.astype(dtype)
    w = np.random.default_rng(2).uniform(0.2, 3.0, len(y)) if weighted else None
    train = TrainingSet.build(X, y, 3, w)
    got = dense_moment_sums(Q, train, get_kernel(kernel), GRID, working_memory=0.2)
    if dtype == np.float32:
        # The float32 product's distance error (bounded and carried by the engine) moves each u²
        # alike in both passes: compare the moment algebra with the direct kernel sums of that engine.
        ref = dense_kernel_sums(Q, train, get_kernel(kernel), GRID, need_dist=True, working_memory=0.2)
        expected = [(ref.kappa[:, g], ref.sq_sum[:, g], ref.dist_sum[:, g]) for g in range(len(GRID))]
    else:
        expected = []
        for lam in GRID:
            cs, s2, dsum, _ = _direct(Q, X, y, 3, kernel, lam, w)
            expected.append((cs.sum(axis=1), s2, dsum))
    for g, (kappa, s2, dsum) in enumerate(expected):
        # Expanded polynomials: rounding grows with the degree; ranking needs no more.
        tol = 1e-9
        np.testing.assert_allclose(got.kappa[:, g], kappa, rtol=tol, atol=tol * (1 + kappa.max()))
        np.testing.assert_allclose(got.sq_sum[:, g], s2, rtol=tol, atol=tol * (1 + s2.max()))
        np.testing.assert_allclose(got.dist_sum[:, g], dsum, rtol=tol, atol=tol * (1 + dsum.max()))
    assert np.all(got.kappa[-5:, :2] == 0)  # far queries: no point within the narrow supports


def test_moment_pass_returns_the_one_ranking_type():
    # One statistics type for ranking (issue 31): the host's moment pass returns the engine's
    # BandwidthRanking (it had its own near-duplicate, MomentSums, without the grid).
    X, y, Q = _clustered(300, 2, 20, seed=7)
    train = TrainingSet.build(X, y, 3, None)
    got = dense_moment_sums(Q, train, get_kernel("epanechnikov"), GRID)
    assert type(got) is BandwidthRanking
    np.testing.assert_array_equal(got.bandwidth, GRID[None, :])
    assert got.merge(got).kappa.shape == (20, len(GRID))
    assert not hasattr(_sums, "MomentSums")


def test_moment_sums_with_pruning_and_many_bandwidths(monkeypatch):
    monkeypatch.setattr(_sums_data, "_MIN_PRUNE_POINTS", 64)
    X, y, Q = _clustered(2000, 2, 80, seed=6)
    train = TrainingSet.build(X, y, 3, None)
    grid = np.geomspace(0.02, 3.0, 40)  # finer than the table's first guess: slots stepped past
    kern = get_kernel("epanechnikov")
    got = dense_moment_sums(Q, train, kern, grid, prune=True)
    ref = dense_kernel_sums(Q, train, kern, grid, need_dist=True, prune=False)
    np.testing.assert_allclose(got.kappa, ref.kappa, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got.sq_sum, ref.sq_sum, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got.dist_sum, ref.dist_sum, rtol=1e-9, atol=1e-9)


def test_slot_table_finds_the_narrowest_bandwidth():
    thresholds = np.array([1e-6, 2e-6, 0.3, 0.3000001, 1.0])
    plan = _sums._slot_table(thresholds)
    delta = np.concatenate([thresholds, np.nextafter(thresholds, 2.0), [0.0, 0.5, 1.5]])
    table, inv = plan["slot_table"], plan["inv_bucket"]
    start = table[np.minimum((delta * inv).astype(np.intp), table.shape[0] - 1)]
    slot = np.array([s + np.count_nonzero(d > plan["thresholds"][s:]) for d, s in zip(delta, start)])
    np.testing.assert_array_equal(slot, np.searchsorted(thresholds, delta, side="left"))
    assert np.all(start <= slot)  # the table never starts past the slot


def test_non_polynomial_kernel_is_refused_with_the_way_out():
    X, y, Q = _clustered(100, 2, 10)
    train = TrainingSet.build(X, y, 3, None)
    with pytest.raises(ValueError, match="polynomial.*dense_kernel_sums"):
        dense_moment_sums(Q, train, get_kernel("tricube"), GRID)


def _exhaustive(model, Q, bounds=None):
    """The reference: statistics of every grid bandwidth, then the choice of least ε."""
    return model.interval_from_statistics(model.kernel_statistics(Q, bounds=bounds), bounds=bounds)


@pytest.mark.parametrize("bound", ["chernoff", "hoeffding", "selfnormalized", "paper"])
@pytest.mark.parametrize("weighted", [False, True])
def test_auto_predict_interval_matches_the_exhaustive_choice(bound, weighted, route):
    X, y, Q = _clustered(1500, 3, 120, seed=7)
    w = np.random.default_rng(3).uniform(0.5, 2.0, len(y)) if weighted else None
    model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=0.5, bound=bound,
                                     histogram_bins=16).fit(X, y, sample_weight=w)
    fast = model.predict_interval(Q)
    ref = _exhaustive(model, Q)
    # The choice: the ε of the fast path's bandwidth (from exact statistics) is the least one.
    stats = model.kernel_statistics(Q)
    bias, sampling = model.bound_spec_.statistics_parts(stats)
    eps = bias + sampling
    col = np.searchsorted(model.bandwidths_, fast.bandwidth)
    chosen = eps[np.arange(len(Q)), col]
    best = eps.min(axis=1)
    finite = np.isfinite(best)
    assert np.all(chosen[finite] <= best[finite] * (1 + 1e-9))
    assert np.all(np.isinf(best) == np.isinf(chosen))
    same = fast.bandwidth == ref.bandwidth
    assert same.mean() > 0.95
    # Same bandwidth: the same statistics up to the distance rounding (the exhaustive pass scales
    # distances by the widest bandwidth, so its error margin is wider).
    np.testing.assert_allclose(fast.proba[same], ref.proba[same], atol=1e-9)
    np.testing.assert_allclose(fast.kappa[same], ref.kappa[same], rtol=1e-9)
    np.testing.assert_allclose(fast.lower[same], ref.lower[same], atol=1e-6)
    np.testing.assert_allclose(fast.upper[same], ref.upper[same], atol=1e-6)
    assert np.all(fast.lower <= fast.proba + 1e-12) and np.all(fast.proba <= fast.upper + 1e-12)


def test_several_settings_in_one_call_and_query_order_kept():
    X, y, Q = _clustered(1200, 2, 90, seed=8)
    model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=0.5).fit(X, y)
    bounds = {"loose": {"lipschitz": 5.0}, "tight": {"lipschitz": 0.05, "bound": "hoeffding"}}
    both = model.predict_interval(Q, bounds=bounds)
    for name in bounds:
        alone = model.predict_interval(Q, bounds={name: bounds[name]})[name]
        np.testing.assert_array_equal(both[name].bandwidth, alone.bandwidth)
        np.testing.assert_allclose(both[name].upper, alone.upper, atol=1e-12)
    # A larger L favours smaller bandwidths: the two settings really choose differently.
    assert np.mean(both["loose"].bandwidth) < np.mean(both["tight"].bandwidth)
    perm = np.random.default_rng(0).permutation(len(Q))
    shuffled = model.predict_interval(Q[perm])
    np.testing.assert_allclose(shuffled.upper, model.predict_interval(Q).upper[perm], atol=1e-12)
    np.testing.assert_array_equal(model.predict(Q[perm]), model.predict(Q)[perm])


def test_kernels_without_a_polynomial_keep_the_exhaustive_path(monkeypatch):
    X, y, Q = _clustered(600, 2, 40, seed=9)
    calls = []
    original = _sums._dense_pass
    monkeypatch.setattr(_sums, "_dense_pass", lambda *a, **k: (calls.append(k.get("moment_degree", -1)),
                                                               original(*a, **k))[1])
    for kernel, ranked in [("tricube", False), ("quartic", True)]:
        calls.clear()
        model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", kernel=kernel, lipschitz=0.5).fit(X, y)
        got = model.predict_interval(Q)
        assert (max(calls) >= 0) is ranked
        ref = _exhaustive(model, Q)
        assert np.mean(got.bandwidth == ref.bandwidth) > 0.95


# -- the public pieces: ranking, choice, statistics at the chosen bandwidth -------------------------
@pytest.mark.parametrize("kernel", ["epanechnikov", "tricube"])
def test_ranking_choice_and_statistics_at_the_choice(kernel):
    X, y, Q = _clustered(800, 2, 60, seed=10)
    model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", kernel=kernel, lipschitz=0.5).fit(X, y)
    ranking = model.bandwidth_ranking(Q)
    full = model.kernel_statistics(Q)
    np.testing.assert_allclose(ranking.kappa, full.kappa, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ranking.sq_sum, full.sq_sum, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ranking.dist_sum, full.dist_sum, rtol=1e-9, atol=1e-9)
    choice = model.choose_bandwidths(ranking)
    np.testing.assert_array_equal(model.bandwidths_[choice], model.predict_interval(Q).bandwidth)
    at = model.kernel_statistics(Q, bandwidth_index=choice)
    picked = full.select(choice)
    assert at.n_bandwidths == 1
    np.testing.assert_array_equal(at.bandwidth[:, 0], model.bandwidths_[choice])
    np.testing.assert_allclose(at.class_sums, picked.class_sums, rtol=1e-9, atol=1e-9)
    # Each query's statistics at its own λ give the interval predict_interval returns.
    np.testing.assert_allclose(model.interval_from_statistics(at).upper, model.predict_interval(Q).upper,
                               atol=1e-12)
    both = model.choose_bandwidths(ranking.merge(ranking), bounds=["hoeffding", "chernoff"])
    assert set(both) == {"hoeffding", "chernoff"}


def test_ranking_api_refuses_what_it_cannot_serve():
    X, y, Q = _clustered(300, 2, 10, seed=11)
    model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=0.5).fit(X, y)
    other = NadarayaWatsonClassifier(metric=None, bandwidth="auto", bandwidth_grid=[0.1, 0.2], lipschitz=0.5).fit(X, y)
    ranking = model.bandwidth_ranking(Q)
    with pytest.raises(ValueError, match="another bandwidth grid"):
        other.choose_bandwidths(ranking)
    with pytest.raises(ValueError, match="different queries or bandwidth grids"):
        ranking.merge(other.bandwidth_ranking(Q))
    for bad in ([0] * (len(Q) - 1), [len(model.bandwidths_)] * len(Q), [-1] * len(Q), [0.5] * len(Q)):
        with pytest.raises(ValueError, match="bandwidth_index must hold one integer"):
            model.kernel_statistics(Q, bandwidth_index=bad)
    untruncated = NadarayaWatsonClassifier(metric=None, bandwidth="auto", kernel="gaussian_untruncated", margin=1.0,
                                           bound="paper").fit(X, y)
    with pytest.raises(ValueError, match="tail mass"):
        untruncated.choose_bandwidths(untruncated.bandwidth_ranking(Q))
    a = model.kernel_statistics(Q[:2], bandwidth_index=[0, 1])
    b = model.kernel_statistics(Q[:2], bounds=["hoeffding"], bandwidth_index=[0, 1])
    with pytest.raises(ValueError, match="histograms with different bin edges"):  # one has none
        type(a).concatenate([a, b])


# -- the ranking sample (ranking_fraction) --------------------------------------------------------
def test_ranking_sample_rows_are_shard_consistent_and_of_the_asked_share():
    from nwbound.engine.host._sums import ranking_sample_rows

    whole = ranking_sample_rows(200_000, 0.1)
    # Each row independently with probability 0.1: the count within 5 standard deviations.
    assert abs(whole.sum() - 20_000) < 5 * np.sqrt(200_000 * 0.1 * 0.9)
    # By row number alone: shards (any cut) keep the rows the whole set keeps, at every call.
    cuts = [0, 7, 7, 65_536, 123_457, 200_000]
    parts = [ranking_sample_rows(b - a, 0.1, row_offset=a) for a, b in zip(cuts[:-1], cuts[1:])]
    np.testing.assert_array_equal(np.concatenate(parts), whole)
    np.testing.assert_array_equal(ranking_sample_rows(200_000, 0.1), whole)
    # Nested: a larger share keeps every row of a smaller one; 1 keeps all.
    assert np.all(ranking_sample_rows(200_000, 0.3)[whole])
    assert ranking_sample_rows(1000, 1.0).all()
    # No pattern in the row numbers (sorted or grouped data are sampled evenly): every tenth of the
    # rows holds its share.
    shares = whole.reshape(10, -1).mean(axis=1)
    assert np.all(np.abs(shares - 0.1) < 5 * np.sqrt(0.09 / 20_000))
    with pytest.raises(ValueError, match=r"fraction must be in \(0, 1\]"):
        ranking_sample_rows(10, 0.0)


def test_resolved_ranking_fraction_and_its_errors():
    from nwbound.estimators import resolve_ranking_fraction

    assert resolve_ranking_fraction("auto", 4096) == 1.0
    assert resolve_ranking_fraction("auto", 4097) < 1.0  # 8 192 rows before round 13
    assert resolve_ranking_fraction("auto", 4 * 4096) == 0.25
    assert resolve_ranking_fraction("auto", 10**7) == 1 / 16
    X, y, _ = _clustered(300, 2, 10, seed=12)
    assert NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=1.0).fit(X, y).ranking_fraction_ == 1.0
    for bad in (0.0, 1.5, -0.2, "half"):
        with pytest.raises(ValueError, match="ranking_fraction"):
            NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=1.0, ranking_fraction=bad).fit(X, y)
    model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=1.0).fit(X, y)
    with pytest.raises(ValueError, match="row_offset"):
        model.bandwidth_ranking(X[:2], row_offset=-1)
    with pytest.raises(ValueError, match="ranking_fraction"):
        model.bandwidth_ranking(X[:2], fraction=2.0)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kernel", ["epanechnikov", "tricube"])  # moments; every bandwidth on the sample
def test_sampled_ranking_equals_direct_sums_over_the_sample(weighted, kernel):
    from nwbound.engine.host._sums import ranking_sample_rows

    X, y, Q = _clustered(1500, 3, 40, seed=13)
    w = np.random.default_rng(4).uniform(0.5, 2.0, len(y)) if weighted else None
    model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", bandwidth_grid=GRID, lipschitz=0.5, kernel=kernel,
                                     ranking_fraction=0.3).fit(X, y, sample_weight=w)
    assert model.ranks_first()
    got = model.bandwidth_ranking(Q)
    keep = ranking_sample_rows(len(y), 0.3)
    w_rel = None if w is None else (w / w.max())[keep]  # the model keeps weights relative to the largest
    for g, lam in enumerate(GRID):
        cs, s2, dsum, _ = _direct(Q, X[keep], y[keep], 3, kernel, lam, w_rel)
        np.testing.assert_allclose(got.kappa[:, g], cs.sum(axis=1) / 0.3, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(got.sq_sum[:, g], s2 / 0.3, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(got.dist_sum[:, g], dsum / 0.3, rtol=1e-9, atol=1e-9)
    # A shard's ranking of its rows (the whole set's fraction, its offset) adds up to the whole's.
    halves = [NadarayaWatsonClassifier(metric=None, bandwidth="auto", bandwidth_grid=GRID, lipschitz=0.5, kernel=kernel).fit(
        X[s], y[s], sample_weight=None if w is None else w[s]) for s in (slice(0, 700), slice(700, None))]
    scale = [1.0, 1.0] if w is None else [w[:700].max() / w.max(), w[700:].max() / w.max()]
    parts = [h.bandwidth_ranking(Q, fraction=0.3, row_offset=o) for h, o in zip(halves, (0, 700))]
    np.testing.assert_allclose(parts[0].kappa * scale[0] + parts[1].kappa * scale[1], got.kappa, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("bound, kernel", [("chernoff", "epanechnikov"), ("hoeffding", "epanechnikov"),
                                           ("hoeffding", "tricube")])
def test_sampled_choice_keeps_exact_statistics_and_nearly_least_epsilon(bound, kernel):
    X, y, Q = _clustered(6000, 3, 200, seed=14)
    model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=0.5, bound=bound, kernel=kernel,
                                     ranking_fraction=0.25).fit(X, y)
    got = model.predict_interval(Q)
    # Exact statistics at the chosen bandwidth: the fixed-λ classifier's interval at that λ.
    for lam in np.unique(got.bandwidth):
        rows = got.bandwidth == lam
        fixed = NadarayaWatsonClassifier(metric=None, bandwidth=float(lam), lipschitz=0.5, bound=bound, kernel=kernel).fit(X, y)
        ref = fixed.predict_interval(Q[rows])
        np.testing.assert_allclose(got.kappa[rows], ref.kappa, rtol=1e-12)
        np.testing.assert_allclose(got.lower[rows], ref.lower, atol=1e-12)
        np.testing.assert_allclose(got.upper[rows], ref.upper, atol=1e-12)
    # The sampled choice's ε (exact, every row) is close to the least of the grid.
    bias, sampling = model.bound_spec_.statistics_parts(model.kernel_statistics(Q))
    eps = bias + sampling
    chosen = eps[np.arange(len(Q)), np.searchsorted(model.bandwidths_, got.bandwidth)]
    best = eps.min(axis=1)
    finite = np.isfinite(best)
    ratio = chosen[finite] / best[finite]
    assert ratio.mean() < 1.01 and ratio.max() < 1.15, (ratio.mean(), ratio.max())


def test_an_empty_ranking_sample_takes_the_widest_bandwidth():
    X, y, Q = _clustered(40, 2, 6, seed=15)
    with pytest.warns(UserWarning, match=r"ranking_fraction=1e-06 of \d+ training rows ranks the bandwidth grid on no row"):
        model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=0.5, ranking_fraction=1e-6).fit(X, y)
    ranking = model.bandwidth_ranking(Q)
    assert np.all(ranking.kappa == 0)  # no row sampled: nothing to rank on
    got = model.predict_interval(Q)
    np.testing.assert_array_equal(got.bandwidth, model.bandwidths_[-1])
    assert not np.any(got.vacuous[:-5])  # the widest bandwidth reaches the near queries' points


def test_which_settings_rank_first():
    X, y, _ = _clustered(300, 2, 10, seed=16)

    def fitted(**kw):
        return NadarayaWatsonClassifier(metric=None, **{"bandwidth": "auto", "lipschitz": 0.5, **kw}).fit(X, y)

    assert fitted().ranks_first() and fitted(kernel="quartic").ranks_first()
    assert not fitted(kernel="tricube").ranks_first()  # every row: the exhaustive pass is cheaper
    assert fitted(kernel="tricube", ranking_fraction=0.5).ranks_first()
    assert not fitted(bandwidth=0.3).ranks_first()  # one bandwidth: nothing to rank
    assert not fitted(n_neighbors=20).ranks_first()  # localized: k points per query, cheap already
    # A setting that needs the kernel's tail mass (the paper's form, infinite support) is never ranked.
    gauss = fitted(kernel="gaussian_untruncated", margin=1.0, lipschitz=None, bound="paper", ranking_fraction=0.5)
    assert not gauss.ranks_first()
    assert fitted(ranking_fraction=0.5).ranks_first(bounds=["hoeffding", "chernoff"])


@pytest.mark.parametrize("thresholds", [
    np.geomspace(0.003, 1.0, 16),                 # the default grid's slots
    np.array([0.25, 0.5, 1.0]),
    np.array([0.1, 0.1, 0.4, 0.4000001, 1.0]),    # duplicates and a gap that caps the table (2¹⁶ buckets)
    np.array([1e-9, 0.5, 0.75]),
])
def test_slot_steps_reach_every_slot_branch_free(thresholds):
    """``tile_moments`` finds an entry's slot in ``slot_steps`` branch-free steps from its bucket's
    count (a loop that stopped at the slot mispredicted wherever hits and misses mix): those steps
    reach the slot of every δ — at and next to each threshold and bucket edge, beyond the table, inf."""
    t = _sums._slot_table(thresholds)
    table, inv, steps, thr = t["slot_table"], t["inv_bucket"], t["slot_steps"], t["thresholds"]
    edges = np.arange(table.size) / inv
    probes = np.concatenate([thresholds, edges, np.random.default_rng(0).uniform(0, 2 * thresholds[-1], 20000),
                             [0.0, thresholds[-1] * 2, 2.0, np.inf]])
    probes = np.concatenate([probes, np.nextafter(probes, -np.inf), np.nextafter(probes, np.inf)])
    probes = probes[probes >= 0]
    b = probes * inv
    s = table[np.where(b < table.size - 1, b, table.size - 1).astype(np.intp)]
    for _ in range(steps):
        s = s + (probes > thr[s])
    np.testing.assert_array_equal(s, np.searchsorted(thresholds, probes, side="left"))
