"""Every route of the dense kernel-sum engine gives the same sums as a direct
float64 computation from the definitions (pairwise distances, K(d/λ), sums)."""

from __future__ import annotations

import importlib.util
import os
import pickle

import numpy as np
import pytest

from nwbound.engine.host import _sums, _sums_data, _tiles
from nwbound.engine.host._sums import TrainingSet, dense_kernel_sums
from nwbound.kernels import get_kernel


def numba_unavailable_reason() -> str | None:
    """Why the compiled route cannot run here (None: it can)."""
    if os.environ.get("NWBOUND_DISABLE_NUMBA", "").strip() not in ("", "0"):
        return "NWBOUND_DISABLE_NUMBA is set: only the numpy route runs"
    if importlib.util.find_spec("numba") is None:
        return "numba is not installed (the nwbound[fast] extra): only the numpy route runs"
    return None


@pytest.fixture(params=["numba", "numpy"])
def route(request, monkeypatch):
    """Run the test on both reductions of the dense engine (switched by ``_sums.USE_NUMBA``, so CI with
    numba installed still covers the numpy route), and check afterwards that the route really ran."""
    if request.param == "numba" and (reason := numba_unavailable_reason()):
        pytest.skip(reason)
    monkeypatch.setattr(_sums, "USE_NUMBA", request.param == "numba")
    calls = {"fused": 0, "numpy": 0}
    originals = {name: getattr(_tiles._Accumulator, name) for name in ("add_fused", "add_entries", "add_dense")}

    def counted(name, kind):
        def wrapper(acc, *args):
            calls[kind] += 1
            return originals[name](acc, *args)

        return wrapper

    for name in originals:
        monkeypatch.setattr(_tiles._Accumulator, name, counted(name, "fused" if name == "add_fused" else "numpy"))
    yield request.param
    taken = "fused" if request.param == "numba" else "numpy"
    other = "numpy" if taken == "fused" else "fused"
    taken_ok = calls[taken] > 0 or sum(calls.values()) == 0  # (a call may have no tile at all)
    assert calls[other] == 0 and taken_ok, f"{request.param} route not taken: {calls}"


def _direct(Xq, X, labels, n_classes, kernel, lam, weights=None, tail_radius=None):
    """Sums straight from the formulas, float64, no tiling, no tricks."""
    d = np.sqrt(((Xq[:, None, :].astype(np.float64) - X[None, :, :].astype(np.float64)) ** 2).sum(axis=2))
    k = get_kernel(kernel)(d / lam)
    w = np.ones(X.shape[0]) if weights is None else weights
    wk = k * w
    cs = np.stack([wk[:, labels == c].sum(axis=1) for c in range(n_classes)], axis=1)
    tail = None if tail_radius is None else np.where(d > tail_radius * lam, wk, 0.0).sum(axis=1)
    return cs, (wk * wk).sum(axis=1), (wk * d).sum(axis=1), tail


def _clustered(n, d, n_query, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.random((12, d)) * 4.0
    X = centres[rng.integers(0, 12, n)] + rng.normal(scale=0.15, size=(n, d))
    Q = np.concatenate([centres[rng.integers(0, 12, n_query - 5)] + rng.normal(scale=0.2, size=(n_query - 5, d)),
                        rng.random((5, d)) * 8.0 - 2.0])  # a few far-away queries with κ = 0
    y = rng.integers(0, 3, n)
    return X, y, Q


@pytest.mark.parametrize("kernel", ["epanechnikov", "boxcar", "quartic", "tricube", "gaussian"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("prune", [False, True])
def test_sparse_and_pruned_routes_match_direct_sums(kernel, weighted, prune, route, monkeypatch):
    # Small pruning threshold so the ball partition is exercised on small data.
    monkeypatch.setattr(_sums_data, "_MIN_PRUNE_POINTS", 64)
    X, y, Q = _clustered(900, 3, 60)
    w = np.random.default_rng(1).uniform(0.2, 2.0, len(y)) if weighted else None
    train = TrainingSet.build(X, y, 3, w)
    lam = np.array([0.3])
    got = dense_kernel_sums(Q, train, get_kernel(kernel), lam, need_dist=True, prune=prune, working_memory=0.2)
    cs, s2, dsum, _ = _direct(Q, X, y, 3, kernel, 0.3, w)
    np.testing.assert_allclose(got.class_sums[:, 0], cs, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.sq_sum[:, 0], s2, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got.dist_sum[:, 0], dsum, rtol=1e-9, atol=1e-12)
    assert np.all(got.kappa[-5:] == 0)  # far-away queries: no mass, not rounding noise


def test_pruning_really_skips_balls_and_changes_nothing(monkeypatch):
    monkeypatch.setattr(_sums_data, "_MIN_PRUNE_POINTS", 64)
    X, y, Q = _clustered(3000, 2, 400, seed=2)
    train = TrainingSet.build(X, y, 3, None)
    kern = get_kernel("epanechnikov")
    lay = train.layout(prune=True)
    order, blocks = _sums._coherent_blocks(Q, lay, 32, 0.2, 1e-16)
    seen = sum(lay.augmented.shape[0] if cols is None else cols.size for _, _, cols in blocks)
    assert seen < 0.5 * len(blocks) * lay.augmented.shape[0]  # most (block, ball) pairs skipped
    assert sorted(order.tolist()) == list(range(len(Q)))  # every query in exactly one block
    a = dense_kernel_sums(Q, train, kern, np.array([0.2]), need_dist=True, prune=True)
    b = dense_kernel_sums(Q, train, kern, np.array([0.2]), need_dist=True, prune=False)
    np.testing.assert_allclose(a.class_sums, b.class_sums, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(a.dist_sum, b.dist_sum, rtol=1e-12, atol=1e-14)


def test_dense_route_several_bandwidths_and_tail_mass():
    # The untruncated Gaussian has infinite support: no sparse route, tail mass needed.
    X, y, Q = _clustered(400, 4, 30, seed=3)
    train = TrainingSet.build(X, y, 3, None)
    lams = np.array([0.1, 0.5, 2.0])
    got = dense_kernel_sums(Q, train, get_kernel("gaussian_untruncated"), lams, need_dist=True,
                            tail_radius=3.0, working_memory=0.05)
    for g, lam in enumerate(lams):
        cs, s2, dsum, tail = _direct(Q, X, y, 3, "gaussian_untruncated", lam, tail_radius=3.0)
        np.testing.assert_allclose(got.class_sums[:, g], cs, rtol=1e-9, atol=1e-300)
        np.testing.assert_allclose(got.sq_sum[:, g], s2, rtol=1e-9, atol=1e-300)
        np.testing.assert_allclose(got.dist_sum[:, g], dsum, rtol=1e-9, atol=1e-300)
        np.testing.assert_allclose(got.tail_mass[:, g], tail, rtol=1e-9, atol=1e-300)


def test_wide_support_takes_dense_tiles_and_matches(monkeypatch):
    # A bandwidth covering most pairs sends tiles down the numpy route's dense
    # in-place branch (the compiled route, when present, replaces that branch).
    monkeypatch.setattr(_sums, "USE_NUMBA", False)
    X, y, Q = _clustered(500, 3, 40, seed=4)
    train = TrainingSet.build(X, y, 3, None)
    calls = []
    original = _tiles._Accumulator.add_dense
    monkeypatch.setattr(_tiles._Accumulator, "add_dense", lambda self, *a: (calls.append(1), original(self, *a)))
    lams = np.array([0.2, 6.0])  # the largest λ sets the support: every pair inside
    got = dense_kernel_sums(Q, train, get_kernel("epanechnikov"), lams, need_dist=True)
    assert calls, "expected the dense route"
    for g, lam in enumerate(lams):
        cs, s2, dsum, _ = _direct(Q, X, y, 3, "epanechnikov", lam)
        np.testing.assert_allclose(got.class_sums[:, g], cs, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got.dist_sum[:, g], dsum, rtol=1e-9, atol=1e-12)


def test_float32_threads_and_tiny_memory_agree_with_float64(route):
    X, y, Q = _clustered(2000, 20, 300, seed=5)
    kern = get_kernel("epanechnikov")
    lam = np.array([1.2])
    ref = dense_kernel_sums(Q, TrainingSet.build(X, y, 3, None), kern, lam, need_dist=True)
    t32 = TrainingSet.build(X.astype(np.float32), y, 3, None)
    got = dense_kernel_sums(Q.astype(np.float32), t32, kern, lam, need_dist=True, n_jobs=2, working_memory=0.05)
    scale = max(1.0, float(ref.kappa.max()))
    np.testing.assert_allclose(got.class_sums, ref.class_sums, atol=1e-4 * scale)
    # dist_sum bounds Σ wK·d from above (float32 product: within √e·S per unit of mass).
    _, _, dsum32, _ = _direct(Q.astype(np.float32), X.astype(np.float32), y, 3, "epanechnikov", 1.2)
    assert np.all(got.dist_sum[:, 0] >= dsum32)
    slack = got.kappa[:, 0] * 1.2 * np.sqrt(got.u2_error[:, 0])
    assert np.all(got.dist_sum[:, 0] <= dsum32 + slack + 1e-3 * scale)


def test_far_translation_keeps_precision(route):
    # Centring inside the engine: data far from the origin keeps exact-zero sums
    # outside the support and accurate sums inside.
    X, y, Q = _clustered(600, 5, 50, seed=6)
    shift = 1e4
    train = TrainingSet.build(X + shift, y, 3, None)
    got = dense_kernel_sums(Q + shift, train, get_kernel("epanechnikov"), np.array([0.4]), need_dist=False)
    cs, _, _, _ = _direct(Q, X, y, 3, "epanechnikov", 0.4)
    np.testing.assert_allclose(got.class_sums[:, 0], cs, rtol=1e-6, atol=1e-6)


def test_training_set_pickles_without_caches():
    X, y, Q = _clustered(300, 3, 10)
    train = TrainingSet.build(X, y, 3, None)
    train.layout(prune=False)
    assert train._cache
    clone = pickle.loads(pickle.dumps(train))
    assert clone._cache == {}
    a = dense_kernel_sums(Q, train, get_kernel("epanechnikov"), np.array([0.5]), need_dist=False)
    b = dense_kernel_sums(Q, clone, get_kernel("epanechnikov"), np.array([0.5]), need_dist=False)
    np.testing.assert_array_equal(a.class_sums, b.class_sums)


def test_ranges_to_index():
    got = _sums._ranges_to_index(np.array([0, 5, 9]), np.array([2, 5, 12]))
    np.testing.assert_array_equal(got, [0, 1, 9, 10, 11])
