"""``bandwidth="auto"`` attacked on odd grids, odd data and every engine setting.

The ranking pass (distance moments) only *chooses*; each check below holds the result to
independent references: the exact ε of every grid bandwidth from single-bandwidth passes (the
chosen one must be the least), a slow direct formula for p̂ at the chosen bandwidth, the
statistics of ``kernel_statistics(X, bandwidth_index=choice)`` (the assembly: each query's
interval from its own row and bandwidth), and the in-memory estimator for the sharded one.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from test_engine_paths import _clustered, route  # noqa: F401  (route: fixture)

from nwbound import NadarayaWatsonClassifier
from nwbound.engine.host import _sums, _sums_data
from nwbound.kernels import get_kernel

pytestmark = pytest.mark.filterwarnings("ignore::nwbound.diagnostics.UselessBoundWarning")


def _exact_epsilon(model, Q, spec=None):
    """Label-free ε of every grid bandwidth, each from its own exact single-bandwidth pass."""
    spec = model.bound_spec_ if spec is None else spec
    cols = []
    for g in range(model.bandwidths_.shape[0]):
        stats = model.kernel_statistics(Q, bandwidth_index=np.full(Q.shape[0], g))
        bias, sampling = spec.statistics_parts(stats)
        cols.append((bias + sampling)[:, 0])
    return np.stack(cols, axis=1)


def _direct_proba(Q, X, codes, n_classes, kernel, lam, weights):
    """p̂ straight from the formula, scale-safe (differences divided by λ before squaring)."""
    u2 = (((Q[:, None, :].astype(np.float64) - X[None, :, :].astype(np.float64)) / lam) ** 2).sum(axis=2)
    wk = get_kernel(kernel).from_squared(u2) * (1.0 if weights is None else weights[None, :])
    sums = np.stack([wk[:, codes == c].sum(axis=1) for c in range(n_classes)], axis=1)
    total = sums.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, sums / total, np.nan)


def _assert_auto_sound(model, X, y, Q, w=None):
    """Every property of ``predict_interval`` under ``bandwidth="auto"`` that the references pin down."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow / invalid on the way
        iv = model.predict_interval(Q)
    for name in ("proba", "lower", "upper", "epsilon", "kappa", "bandwidth"):
        assert np.all(np.isfinite(getattr(iv, name))), name
    assert np.all(iv.lower <= iv.proba + 1e-12) and np.all(iv.proba <= iv.upper + 1e-12)
    col = np.searchsorted(model.bandwidths_, iv.bandwidth)
    np.testing.assert_array_equal(model.bandwidths_[col], iv.bandwidth)  # a grid value, per query
    # The choice: least exact ε of the grid (inf only where every bandwidth is vacuous).
    eps = _exact_epsilon(model, Q)
    chosen, best = eps[np.arange(Q.shape[0]), col], eps.min(axis=1)
    np.testing.assert_array_equal(np.isinf(chosen), np.isinf(best))
    finite = np.isfinite(best)
    assert np.all(chosen[finite] <= best[finite] * (1 + 1e-9)), np.max(chosen[finite] / best[finite])
    # The assembly: each query's interval from its own statistics at its own bandwidth.
    own = model.interval_from_statistics(model.kernel_statistics(Q, bandwidth_index=col))
    np.testing.assert_array_equal(own.bandwidth, iv.bandwidth)
    np.testing.assert_allclose(own.upper, iv.upper, atol=1e-12)
    np.testing.assert_allclose(own.lower, iv.lower, atol=1e-12)
    np.testing.assert_allclose(own.proba, iv.proba, atol=1e-12)
    # p̂ at the chosen bandwidth from the formula itself.
    codes = np.searchsorted(model.classes_, y)
    direct = np.full(iv.proba.shape, np.nan)
    for g in np.unique(col):
        rows = col == g
        direct[rows] = _direct_proba(Q[rows], X, codes, len(model.classes_), model.kernel, model.bandwidths_[g], w)
    mass = np.isfinite(direct).all(axis=1)
    # float32: the product's distance error moves K (bounded, and carried into ε by the engine).
    np.testing.assert_allclose(iv.proba[mass], direct[mass], atol=1e-9 if X.dtype == np.float64 else 1e-5)
    np.testing.assert_array_equal(iv.vacuous, ~mass)
    # Query order: a reversed batch gives the reversed answers.
    back = model.predict_interval(Q[::-1])
    np.testing.assert_array_equal(back.bandwidth, iv.bandwidth[::-1])
    np.testing.assert_allclose(back.upper, iv.upper[::-1], atol=1e-12)
    return iv


def _base(seed=7, n=600, d=3, n_query=40):
    return _clustered(n, d, n_query, seed=seed)


def _case(name):
    """(X, y, Q, weights, estimator parameters) of one odd case."""
    X, y, Q = _base()
    rng = np.random.default_rng(1)
    params = {"lipschitz": 0.5}
    w = None
    if name == "grid_one_value":
        params["bandwidth_grid"] = [0.3]
    elif name == "grid_duplicates":
        params["bandwidth_grid"] = [0.3, 0.1, 0.3, 0.1, 0.6]
    elif name == "grid_huge_ratio":
        params["bandwidth_grid"] = np.geomspace(1e-6, 1e6, 13)
    elif name == "grid_far_wider_than_data":
        # δ = d²/S² of near pairs (~1e-18) below the product's resolution at S = 1e6: before the
        # fix every narrow bandwidth looked full (δ̃ = 0), 55 of 60 queries chose one with κ = 0.
        X, Q = X * 0.01, Q * 0.01
        params.update(lipschitz=50.0, bandwidth_grid=np.geomspace(1e-6, 1e6, 13))
    elif name == "grid_below_nearest_neighbour":
        params["bandwidth_grid"] = [1e-6, 1e-5, 1e-4, 0.3, 0.9]
    elif name == "grid_200_values":
        params["bandwidth_grid"] = np.geomspace(0.01, 5.0, 200)
    elif name == "duplicate_rows":
        X, y = np.concatenate([X, X[:200], X[:50]]), np.concatenate([y, y[:200], (y[:50] + 1) % 3])
    elif name == "queries_are_training_rows":
        Q = X[::15]
    elif name == "queries_far_outside":
        Q = Q + 100.0
    elif name == "two_training_rows":
        X, y = X[:2], np.array([0, 1])
    elif name == "one_feature":
        X, Q = X[:, :1], Q[:, :1]
    elif name == "one_query":
        Q = Q[:1]
    elif name == "float32_offset":
        X, Q = X.astype(np.float32), Q.astype(np.float32)
        X[:, 0] += 1e4
        Q[:, 0] += 1e4
        params["dtype"] = np.float32
    elif name in ("scale_1e-200", "scale_1e160"):
        scale = float(name.split("_")[1])
        X, Q = X * scale, Q * scale
        params["lipschitz"] = 0.5 / scale
    elif name == "weights_with_zeros":
        w = rng.uniform(0.5, 2.0, len(y))
        w[::3] = 0.0
    elif name == "weights_tiny":
        w = 1e-300 * rng.uniform(0.5, 2.0, len(y))
    elif name == "weights_huge":
        w = 1e300 * rng.uniform(0.5, 2.0, len(y))
    elif name == "two_classes":
        y = y % 2
    elif name == "seven_classes":
        y = rng.integers(0, 7, len(y))
    elif name == "string_labels":
        y = np.array(["b", "a", "ccc"])[y]
    else:
        raise AssertionError(name)
    return X, y, Q, w, params


CASES = [
    "grid_one_value", "grid_duplicates", "grid_huge_ratio", "grid_far_wider_than_data", "grid_below_nearest_neighbour",
    "grid_200_values",
    "duplicate_rows", "queries_are_training_rows", "queries_far_outside", "two_training_rows", "one_feature",
    "one_query", "float32_offset", "scale_1e-200", "scale_1e160", "weights_with_zeros", "weights_tiny",
    "weights_huge", "two_classes", "seven_classes", "string_labels",
]


@pytest.mark.parametrize("name", CASES)
def test_auto_on_odd_grids_and_data(name, route):
    X, y, Q, w, params = _case(name)
    kernel = "triweight" if name in ("grid_huge_ratio", "duplicate_rows", "weights_with_zeros") else "epanechnikov"
    model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", kernel=kernel, **params).fit(X, y, sample_weight=w)
    iv = _assert_auto_sound(model, X, y, Q, w)
    if name == "queries_far_outside":
        assert np.all(iv.vacuous) and np.all(iv.lower == 0.0) and np.all(iv.upper == 1.0)
    if name == "grid_duplicates":
        np.testing.assert_array_equal(model.bandwidths_, [0.1, 0.3, 0.6])


@pytest.mark.parametrize("kernel", ["epanechnikov", "quartic", "triweight", "boxcar"])
def test_a_bandwidth_holding_only_edge_points_is_not_chosen_on_rounding_noise(kernel, route):
    # At λ = 0.1 the only point lies at u² = 1 − 1e-3: K ≈ 1e-9 (triweight), whose Σ(wK)² ≈ 1e-18
    # the degree-6 expansion cannot resolve. Its ε is ≥ 1 (one point); λ = 2 has hundreds.
    # Before the fix the triweight ranking read Σ(wK)² = 0, ε ≈ 0.02, and chose λ = 0.1 (exact ε 1.38).
    rng = np.random.default_rng(0)
    X = np.concatenate([[0.1 * np.sqrt(1 - 1e-3)], rng.uniform(0.5, 1.5, 400)])[:, None]
    y = np.arange(X.shape[0]) % 2
    Q = np.array([[0.0], [0.02], [1.0]])
    model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", kernel=kernel, lipschitz=0.2,
                                     bandwidth_grid=[0.1, 2.0, 3.0]).fit(X, y)
    iv = _assert_auto_sound(model, X, y, Q)
    assert iv.bandwidth[0] == 2.0


def test_duplicates_of_the_query_alone_in_a_narrow_bandwidth_are_a_real_statistic(route):
    # λ = 1e-3 next to λ_max = 1e6: the product cannot resolve it, the 20 copies of the query are
    # recomputed exactly (d = 0, so Σ wK·d = 0 exactly): an exact 0, not rounding noise — the
    # narrow bandwidth (no bias, n_eff = 20) has the least ε and must stay rankable.
    rng = np.random.default_rng(3)
    angle, radius = rng.uniform(0, 2 * np.pi, 300), rng.uniform(0.5, 1.0, 300)
    X = np.concatenate([np.zeros((20, 2)), np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)])
    y = np.concatenate([np.zeros(20, int), rng.integers(0, 2, 300)])
    model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=5.0, bandwidth_grid=[1e-3, 1.0, 1e6]).fit(X, y)
    iv = _assert_auto_sound(model, X, y, np.zeros((1, 2)))
    assert iv.bandwidth[0] == 1e-3


def test_auto_same_on_small_tiles_threads_and_pruned_layout(route, monkeypatch):
    X, y, Q = _clustered(3000, 2, 150, seed=3)
    w = np.random.default_rng(0).uniform(0.0, 2.0, len(y))
    base = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=0.5, kernel="quartic").fit(X, y, sample_weight=w)
    ref = base.predict_interval(Q)
    monkeypatch.setattr(_sums_data, "_MIN_PRUNE_POINTS", 64)  # the pruned (ball) layout, ≤ 12 features
    for params in ({"n_jobs": -1}, {"working_memory": 0.05}, {"working_memory": 0.05, "n_jobs": -1}):
        model = clone(base).set_params(**params).fit(X, y, sample_weight=w)
        iv = model.predict_interval(Q)
        np.testing.assert_array_equal(iv.bandwidth, ref.bandwidth)
        np.testing.assert_allclose(iv.upper, ref.upper, atol=1e-12)
        np.testing.assert_allclose(iv.lower, ref.lower, atol=1e-12)
        np.testing.assert_array_equal(model.predict_proba(Q), iv.proba)
        np.testing.assert_array_equal(model.predict(Q), model.classes_[np.argmax(iv.proba, axis=1)])
    _assert_auto_sound(clone(base).set_params(working_memory=0.05).fit(X, y, sample_weight=w), X, y, Q[:40], w)


def test_slot_table_never_starts_past_the_slot_at_bucket_edges():
    # Thresholds and δ on or one ulp from a bucket's edge (fl(δ·inv) rounds up into the next bucket):
    # with the edges unlowered, table 335 here started past the slot (the entry then counted
    # outside a bandwidth that holds it).
    rng = np.random.default_rng(0)
    for it in range(1000):
        size = int(rng.integers(1, 200))
        kind = it % 4
        if kind == 0:
            thresholds = rng.random(size)
        elif kind == 1:
            thresholds = 10 ** rng.uniform(-24, 0, size)
        elif kind == 2:
            base = rng.random(max(1, size // 2))
            thresholds = np.concatenate([base, np.nextafter(base, 2)])
        else:
            thresholds = np.round(rng.random(size), 3) + 1e-3
        thresholds = np.unique(thresholds)
        plan = _sums._slot_table(thresholds)
        table, inv = plan["slot_table"], plan["inv_bucket"]
        n = table.shape[0]
        edges = np.arange(n) / inv
        delta = np.concatenate([thresholds, np.nextafter(thresholds, 0), np.nextafter(thresholds, 2), edges,
                                np.nextafter(edges, 0), np.nextafter(edges, 2), rng.random(50) * 1.1, [0.0, 2.0]])
        bucket = delta * inv  # the compiled route's lookup (tile_moments)
        start = table[np.where(bucket < n - 1, bucket, n - 1).astype(np.intp)]
        assert np.all(start <= np.searchsorted(thresholds, delta, side="left")), it


def test_ranking_memory_is_bounded_by_working_memory(monkeypatch):
    # The per-slot moments are (queries × bandwidths × moments): computed chunk by chunk of queries
    # (other tiles too: the sums agree to the expansion's rounding)
    # (400 000 queries, 16 bandwidths, weighted triweight: 1.9 GB before, 0.29 GB at 64 MB).
    X, y, Q = _clustered(900, 2, 700, seed=13)
    train = _sums.TrainingSet.build(X, y, 3, np.random.default_rng(1).uniform(0.5, 2.0, len(y)))
    kernel, grid = get_kernel("triweight"), np.geomspace(0.02, 3.0, 16)
    whole = _sums.dense_moment_sums(Q, train, kernel, grid, n_jobs=1)
    calls = []
    original = _sums._dense_pass
    monkeypatch.setattr(_sums, "_dense_pass", lambda Xq, *a, **k: (calls.append(Xq.shape[0]), original(Xq, *a, **k))[1])
    chunked = _sums.dense_moment_sums(Q, train, kernel, grid, n_jobs=1, working_memory=0.05)
    assert len(calls) > 1 and sum(calls) == Q.shape[0]
    for name in ("kappa", "sq_sum", "dist_sum"):
        np.testing.assert_allclose(getattr(chunked, name), getattr(whole, name), rtol=1e-9, atol=1e-12)
    assert _sums.dense_moment_sums(Q[:0], train, kernel, grid).kappa.shape == (0, 16)


def test_auto_settings_that_choose_differently_survive_files_and_pickles(tmp_path):
    from nwbound.io import load_model, save_model

    X, y, Q = _clustered(1000, 2, 60, seed=4)
    y = np.array(["x", "y", "z"])[y]
    model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=0.5, kernel="triweight",
                                     bandwidth_grid=np.geomspace(0.01, 3.0, 30)).fit(X, y)
    bounds = {"loose": {"lipschitz": 5.0}, "tight": {"lipschitz": 0.05, "bound": "chernoff"},
              "self": {"bound": "selfnormalized", "delta": 0.2}}
    both = model.predict_interval(Q, bounds=bounds)
    assert len({tuple(iv.bandwidth) for iv in both.values()}) == 3  # three different choices
    for name, setting in bounds.items():
        alone = model.predict_interval(Q, bounds={name: setting})[name]
        np.testing.assert_array_equal(both[name].bandwidth, alone.bandwidth)
        np.testing.assert_allclose(both[name].upper, alone.upper, atol=1e-12)
        spec = model._resolve_bounds({name: setting})[name]
        eps = _exact_epsilon(model, Q, spec)
        col = np.searchsorted(model.bandwidths_, alone.bandwidth)
        assert np.all(eps[np.arange(len(Q)), col] <= eps.min(axis=1) * (1 + 1e-9))
    save_model(model, tmp_path / "m.nwb")
    for other in (load_model(tmp_path / "m.nwb"), pickle.loads(pickle.dumps(model)), clone(model).fit(X, y)):
        again = other.predict_interval(Q, bounds=bounds)
        for name in bounds:
            np.testing.assert_array_equal(again[name].bandwidth, both[name].bandwidth)
            np.testing.assert_array_equal(again[name].upper, both[name].upper)
        np.testing.assert_array_equal(other.predict(Q), model.predict(Q))


# -- the sharded estimator: the same two rounds over shards --------------------------------------
DASK_CASES = [
    dict(bandwidth="auto", lipschitz=1.0),
    dict(bandwidth="auto", lipschitz=1.0, kernel="tricube"),  # ranked from exhaustive shard statistics
    # Triweight + Chernoff: a query whose narrow λ holds one edge point chose it in memory only.
    dict(bandwidth="auto", lipschitz=1.0, kernel="triweight", bound="chernoff", histogram_bins=8),
    dict(bandwidth="auto", lipschitz=1.0, kernel="boxcar", bandwidth_grid=np.geomspace(1e-6, 1e6, 13)),
]


@pytest.mark.parametrize("params", DASK_CASES, ids=lambda p: p.get("kernel", "epanechnikov"))
def test_sharded_auto_equals_in_memory(params):
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")
    from nwbound.dask import ShardedNadarayaWatson

    rng = np.random.default_rng(1)
    X = rng.uniform(size=(700, 3))
    y = np.array(["a", "b", "c"])[(X[:, 0] + 0.2 * rng.normal(size=700) > 0.5).astype(int) + (X[:, 1] > 0.85)]
    w = rng.uniform(0.5, 2.0, size=700)
    Q = rng.uniform(-0.1, 1.1, size=(130, 3))
    ref = NadarayaWatsonClassifier(metric=None, **params).fit(X, y, sample_weight=w)
    model = ShardedNadarayaWatson(metric=None, **params).fit(da.from_array(X, chunks=((300, 250, 1, 149), (3,))), y,
                                                sample_weight=w)
    Qd = da.from_array(Q, chunks=(50, -1))
    bounds = ["hoeffding", "chernoff"]
    one, several, labels = dask.compute(model.predict_interval(Qd), model.predict_interval(Qd, bounds),
                                        model.predict(Qd), scheduler="threads")
    expected = ref.predict_interval(Q)
    np.testing.assert_array_equal(one.bandwidth, expected.bandwidth)
    np.testing.assert_allclose(one.upper, expected.upper, atol=2e-7)
    np.testing.assert_allclose(one.proba, expected.proba, atol=1e-12)
    np.testing.assert_array_equal(labels, ref.predict(Q))
    for name, iv in ref.predict_interval(Q, bounds=bounds).items():
        np.testing.assert_array_equal(several[name].bandwidth, iv.bandwidth)
        np.testing.assert_allclose(several[name].lower, iv.lower, atol=2e-7)


def test_sharded_auto_of_a_kernel_without_polynomial_takes_the_in_memory_pass(monkeypatch):
    # In memory such a kernel chooses from the exhaustive statistics and takes its intervals from
    # them; the sharded estimator did a second round at the chosen λ (other statistics: upper
    # differed by 5e-5 on this grid). Now both run the same exhaustive pass (shard rounding: ~6e-7).
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")
    from nwbound.dask import ShardedNadarayaWatson, _parts

    def no_ranking(*args):
        raise AssertionError("ranking round run for a kernel the in-memory estimator does not rank")

    monkeypatch.setattr(_parts, "_shard_ranking", no_ranking)
    X, y, Q = _clustered(700, 3, 80, seed=12)
    params = dict(bandwidth="auto", lipschitz=1.0, kernel="tricube", bandwidth_grid=np.geomspace(1e-4, 1e4, 13))
    ref = NadarayaWatsonClassifier(metric=None, **params).fit(X, y).predict_interval(Q)
    model = ShardedNadarayaWatson(metric=None, **params).fit(da.from_array(X, chunks=(250, -1)), y)
    (got,) = dask.compute(model.predict_interval(da.from_array(Q, chunks=(40, -1))), scheduler="threads")
    np.testing.assert_array_equal(got.bandwidth, ref.bandwidth)
    np.testing.assert_allclose(got.upper, ref.upper, atol=5e-6)
    np.testing.assert_allclose(got.proba, ref.proba, atol=1e-6)


def test_ranking_skips_a_bandwidth_whose_squares_underflow():
    # Relative weight 1e-310: w·K is subnormal, Σ(wK)² = 0 although κ > 0. The bounds read that as
    # sampling = 0 (xfail below); the ranking must not choose the bandwidth on it.
    X, y = np.array([[0.0], [10.0], [10.5]]), np.array([0, 1, 0])
    model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=0.01, bandwidth_grid=[1.0, 20.0]).fit(
        X, y, sample_weight=[1e-310, 1.0, 1.0])
    assert model.bandwidth_ranking([[0.0]]).kappa[0, 0] == 0.0
    assert model.predict_interval([[0.0]]).bandwidth[0] == 20.0


# -- found here, to be fixed outside the auto path (see the report of branch auto-review) ------------
@pytest.mark.parametrize("n_neighbors", [None, 2])
def test_fixed_bandwidth_with_an_underflowing_sum_of_squares_is_not_certified(n_neighbors):
    # Weights 1 and 1e-310 (relative): the query's only neighbour has w·K subnormal, Σ(wK)² = 0, so
    # ε = β·D/κ alone (0 here); one point can never certify: ε ≥ √(log(2/δ')/2) > 1.
    X = np.array([[0.0], [10.0], [10.5]])
    y = np.array([0, 1, 0])
    model = NadarayaWatsonClassifier(metric=None, bandwidth=1.0, lipschitz=0.5, n_neighbors=n_neighbors).fit(
        X, y, sample_weight=[1e-310, 1.0, 1.0])
    iv = model.predict_interval([[0.0]])
    assert iv.vacuous[0] or np.all(iv.epsilon[0] >= 1.0), (iv.kappa, iv.epsilon)


def test_sharded_fit_accepts_a_shard_of_zero_weights():
    da = pytest.importorskip("dask.array")
    from nwbound.dask import ShardedNadarayaWatson

    X, y, Q = _clustered(400, 2, 10, seed=2)
    w = np.ones(len(y))
    w[:100] = 0.0
    for params in (dict(bandwidth="auto", lipschitz=1.0), dict(bandwidth=0.5, n_neighbors=7, lipschitz=1.0)):
        sharded = ShardedNadarayaWatson(metric=None, **params).fit(da.from_array(X, chunks=(100, -1)), y, sample_weight=w)
        got = sharded.predict_interval(da.from_array(Q, chunks=(5, -1)))
        ref = NadarayaWatsonClassifier(metric=None, **params).fit(X, y, sample_weight=w).predict_interval(Q)
        np.testing.assert_allclose(got.proba.compute(), ref.proba, atol=1e-9)
        np.testing.assert_allclose(got.upper.compute(), ref.upper, atol=1e-6)
        # The zero-weight state itself: every κ is 0, and the histogram counts nothing (no NaN).
        state = NadarayaWatsonClassifier(metric=None, **params).fit(X, y).get_fitted_state()
        state["weights"] = np.zeros(len(y))
        with pytest.raises(ValueError, match="'weights' sums to 0"):  # a model file is never a shard
            NadarayaWatsonClassifier(metric=None, **params).set_fitted_state(state)
        empty = NadarayaWatsonClassifier(metric=None, **params).set_fitted_state(state, shard=True)
        stats = empty.kernel_statistics(Q)
        assert np.all(stats.kappa == 0)
        assert stats.histogram is None or not np.any(np.isnan(stats.histogram))
        assert np.all(empty.predict_interval(Q).vacuous)
