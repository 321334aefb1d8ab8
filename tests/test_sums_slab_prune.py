"""Slab pruning of the dense kernel sums (many features): exact, and run only where it pays."""

import numpy as np
import pytest

from nwbound.engine.host import _sums, _sums_data
from nwbound.engine.host._sums import bounded_moment_sums, dense_kernel_sums, dense_moment_sums
from nwbound.engine.host._sums_data import TrainingSet
from nwbound.kernels import get_kernel


def _learned_like(n, n_query, seed=0, n_features=20, feature_scale=0.05):
    """The default's learned space in small: one score coordinate spread over [-1, 1] and many
    raw features at a small weight (high dimension, low effective dimension)."""
    rng = np.random.default_rng(seed)

    def draw(m):
        score = rng.uniform(-1.0, 1.0, (m, 1))
        return np.hstack([score, feature_scale * rng.normal(size=(m, n_features))])

    X, Q = draw(n), draw(n_query)
    y = (rng.random(n) < 0.5 + 0.4 * X[:, 0]).astype(int)
    return X, y, Q


def _spread(n, n_query, seed=0, n_features=20):
    """An isotropic 20-D Gaussian: no direction along which the support is narrow."""
    rng = np.random.default_rng(seed)
    X, Q = rng.normal(size=(n, n_features)), rng.normal(size=(n_query, n_features))
    return X, rng.integers(0, 3, n), Q


def _pairs_read(monkeypatch):
    """Patch the block reduction to count the (query, training row) pairs each pass reads."""
    seen = {"pairs": 0}
    block_sums = _sums._block_sums

    def counting(Q, cols, plan, *rest):
        n = plan.layout.augmented.shape[0]
        width = n if cols is None else cols.stop - cols.start if isinstance(cols, slice) else cols.size
        seen["pairs"] += Q.shape[0] * width
        return block_sums(Q, cols, plan, *rest)

    monkeypatch.setattr(_sums, "_block_sums", counting)
    return seen


def _assert_same_sums(a, b, n_train, support, slope=1.0, k_max=1.0):
    """Equal within the engine's stated error bounds: each route's kernel values come from a ``u²``
    within its ``u2_error`` of the true one (the products of different blocks round differently),
    so a term moves by at most ``slope·(u2_error_a + u2_error_b)`` (Epanechnikov ``1 − u²``: slope
    1, K ≤ 1), a distance by at most ``support·√(u2_error_a + u2_error_b)``, and each sum's order
    by ``sum_error``. The set of points inside the support is exact in both, so the zero patterns
    agree, and so does every histogram's total per query."""
    rel = 2.0 * a.sum_error + 1e-15
    du = slope * (a.u2_error + b.u2_error) * n_train  # every term's shift, summed over the points
    unit = max(a.weight_max, b.weight_max)
    shift = {"class_sums": du[..., None] * unit, "sq_sum": 2.0 * k_max * du * unit * unit,
             "dist_sum": (du + n_train * k_max * np.sqrt(a.u2_error + b.u2_error)) * unit * support}
    for name, atol in shift.items():
        x, z = getattr(a, name), getattr(b, name)
        assert (x is None) == (z is None)
        if x is None:
            continue
        np.testing.assert_array_equal(x == 0, z == 0, err_msg=name)
        assert np.all(np.abs(x - z) <= rel * np.maximum(np.abs(x), np.abs(z)) + atol), name
    for name in ("histogram", "hist_mass", "hist_dist"):
        x, z = getattr(a, name), getattr(b, name)
        assert (x is None) == (z is None)
        if x is not None and name == "histogram":  # a point may change bins by u2_error, not leave them
            np.testing.assert_allclose(z.sum(axis=-1), x.sum(axis=-1), rtol=rel, atol=0, err_msg=name)
    np.testing.assert_allclose(b.u2_error, a.u2_error, rtol=1e-12, atol=0)
    assert a.sum_error == b.sum_error


@pytest.mark.parametrize("weighted, dtype", [(False, np.float64), (True, np.float64), (False, np.float32)])
def test_slabs_prune_the_learned_shape_and_change_no_sum(weighted, dtype, monkeypatch):
    monkeypatch.setattr(_sums_data, "_MIN_PRUNE_POINTS", 64)
    X, y, Q = _learned_like(3000, 700)
    X, Q = X.astype(dtype), Q.astype(dtype)
    w = np.random.default_rng(1).uniform(0.2, 2.0, len(y)) if weighted else None
    train = TrainingSet.build(X, y, 2, w)
    kern, lam = get_kernel("epanechnikov"), np.array([0.2, 0.35])
    seen = _pairs_read(monkeypatch)
    ref = dense_kernel_sums(Q, train, kern, lam, need_dist=True, histogram_bins=16, prune=False)
    assert seen["pairs"] == len(Q) * len(X)
    seen["pairs"] = 0
    got = dense_kernel_sums(Q, train, kern, lam, need_dist=True, histogram_bins=16)
    # The default (prune=None) measured that slabs pay here and read under half of the pairs.
    assert seen["pairs"] < 0.5 * len(Q) * len(X)
    assert train.layout(prune=False).axis is not None  # one copy of the rows: the sorted one
    _assert_same_sums(ref, got, len(X), 0.35)
    seen["pairs"] = 0
    again = dense_kernel_sums(Q, train, kern, lam, need_dist=True, histogram_bins=16, prune=False)
    assert seen["pairs"] == len(Q) * len(X)  # prune=False never prunes, even on the sorted rows
    _assert_same_sums(ref, again, len(X), 0.35)


def test_slabs_are_skipped_where_they_do_not_pay(monkeypatch):
    monkeypatch.setattr(_sums_data, "_MIN_PRUNE_POINTS", 64)
    X, y, Q = _spread(3000, 300)
    train = TrainingSet.build(X, y, 3, None)
    kern, lam = get_kernel("epanechnikov"), np.array([2.0])
    seen = _pairs_read(monkeypatch)
    got = dense_kernel_sums(Q, train, kern, lam, need_dist=True)
    assert seen["pairs"] == len(Q) * len(X)  # measured: the runs would hold most pairs, so dense
    seen["pairs"] = 0
    forced = dense_kernel_sums(Q, train, kern, lam, need_dist=True, prune=True)
    assert seen["pairs"] > _sums._SLAB_MAX_WORK * len(Q) * len(X)  # what pruning would have read
    _assert_same_sums(got, forced, len(X), 2.0)
    tasks = _sums._dense_tasks(Q, train.layout(prune=False, axis=True), 1, 1 << 19, 2.0, True, np.dtype(np.float64))
    assert all(cols is None for _, cols in tasks)


def test_slab_blocks_cover_every_query_and_every_point_in_reach(monkeypatch):
    monkeypatch.setattr(_sums_data, "_MIN_PRUNE_POINTS", 64)
    X, y, Q = _learned_like(2000, 300, seed=4)
    train = TrainingSet.build(X, y, 2, None)
    lay = train.layout(prune=False, axis=True)
    support = 0.25
    tasks = _sums._dense_tasks(Q, lay, 1, 1 << 19, support, True, np.dtype(np.float64))
    rows = np.concatenate([r for r, _ in tasks])
    assert sorted(rows.tolist()) == list(range(len(Q)))
    points = lay.points
    for r, cols in tasks:
        d = np.sqrt(((Q[r][:, None, :] - points[None, :, :]) ** 2).sum(-1))
        inside = np.flatnonzero((d <= support * (1 + 1e-9)).any(axis=0))
        assert isinstance(cols, slice) and np.all((inside >= cols.start) & (inside < cols.stop))


def test_slabs_keep_a_point_just_inside_the_support():
    # Every point far from the query but two, on the axis at 1 ∓ 1e-12 of the support: the one
    # inside (K ≈ 1.5e-12) must be read, the sums equal the unpruned ones.
    rng = np.random.default_rng(3)
    lam = 0.5
    base = np.concatenate([-np.linspace(1.0, 4.0, 4096), np.linspace(1.0, 4.0, 4096)])
    X = np.column_stack([base, 1e-3 * rng.normal(size=(8192, 13))])
    X[:2, 1:] = 0.0
    X[0, 0], X[1, 0] = lam * (1 - 1e-12), -lam * (1 + 1e-12)
    q = np.zeros((1, 14))
    y = rng.integers(0, 2, len(X))
    train = TrainingSet.build(X, y, 2, None)
    kern = get_kernel("epanechnikov")
    got = dense_kernel_sums(q, train, kern, np.array([lam]), need_dist=True, prune=True)
    ref = dense_kernel_sums(q, train, kern, np.array([lam]), need_dist=True, prune=False)
    _assert_same_sums(ref, got, len(X), lam)
    assert 0.0 < got.kappa[0, 0] < 1e-11  # the point just inside, alone


def test_moment_sums_with_slabs_match_the_dense_pass(monkeypatch):
    monkeypatch.setattr(_sums_data, "_MIN_PRUNE_POINTS", 64)
    X, y, Q = _learned_like(2500, 400, seed=5)
    train = TrainingSet.build(X, y, 2, None)
    kern, grid = get_kernel("epanechnikov"), np.geomspace(0.05, 0.3, 6)
    seen = _pairs_read(monkeypatch)
    got = dense_moment_sums(Q, train, kern, grid)
    assert seen["pairs"] < 0.75 * len(Q) * len(X)
    ref = dense_moment_sums(Q, train, kern, grid, prune=False)
    np.testing.assert_allclose(got.kappa, ref.kappa, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.sq_sum, ref.sq_sum, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.dist_sum, ref.dist_sum, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("weighted, kernel", [(False, "epanechnikov"), (True, "epanechnikov"), (False, "quartic")])
def test_bounded_moment_sums_are_exact_up_to_the_reach_and_bound_epsilon_beyond(weighted, kernel, monkeypatch):
    """The bounded ranking pass (on a sample below ``_MIN_PRUNE_POINTS``: it sorts at any size): the
    columns up to the reach equal the full pass's within rounding; beyond, κ is an upper bound,
    Σ(wK)² a lower bound and D/κ a lower bound, so every Hoeffding ε there is at most the full one;
    and it reads fewer pairs than the full pass."""
    from nwbound.bounds import BoundSpec

    X, y, Q = _learned_like(3000, 500, seed=6)
    w = np.random.default_rng(2).uniform(0.2, 2.0, len(y)) if weighted else None
    train = TrainingSet.build(X, y, 2, w)
    assert len(X) < _sums_data._MIN_PRUNE_POINTS
    kern, grid = get_kernel(kernel), np.geomspace(0.1, 3.0, 9)
    seen = _pairs_read(monkeypatch)
    ref = dense_moment_sums(Q, train, kern, grid)
    assert seen["pairs"] == len(Q) * len(X)
    seen["pairs"] = 0
    got, exact = bounded_moment_sums(Q, train, kern, grid, reach=grid[3])
    assert exact.tolist() == [True] * 4 + [False] * 5
    assert seen["pairs"] < 0.8 * len(Q) * len(X)
    for name in ("kappa", "sq_sum", "dist_sum"):
        np.testing.assert_allclose(getattr(got, name)[:, exact], getattr(ref, name)[:, exact], rtol=1e-9, atol=1e-12)
    wide = ~exact
    live = ref.kappa[:, wide] > 0
    assert live.all() and (got.kappa[:, wide] > 0).all()
    slack = 1.0 + 1e-9
    assert np.all(got.kappa[:, wide] * slack >= ref.kappa[:, wide])
    assert np.all(got.sq_sum[:, wide] <= ref.sq_sum[:, wide] * slack)
    assert np.all(got.dist_sum[:, wide] / got.kappa[:, wide] <= ref.dist_sum[:, wide] / ref.kappa[:, wide] * slack)
    spec = BoundSpec(form="hoeffding", beta=2.0, delta_prime=0.05)
    low = np.add(*spec.parts(got.kappa, got.sq_sum, got.dist_sum, got.bandwidth))
    full = np.add(*spec.parts(ref.kappa, ref.sq_sum, ref.dist_sum, ref.bandwidth))
    assert np.all(low[:, wide] <= full[:, wide] * slack)
    assert np.any(low[:, wide] < 0.9 * full[:, wide])  # bounds, not the sums themselves


def test_bounded_moment_sums_refuse_a_reach_below_the_grid():
    X, y, Q = _learned_like(200, 5)
    train = TrainingSet.build(X, y, 2, None)
    with pytest.raises(ValueError, match="reach=0.01 is below every bandwidth"):
        bounded_moment_sums(Q, train, get_kernel("epanechnikov"), np.array([0.1, 0.2]), reach=0.01)
    with pytest.raises(ValueError, match="polynomial"):
        bounded_moment_sums(Q, train, get_kernel("gaussian"), np.array([0.1, 0.2]), reach=0.2)
