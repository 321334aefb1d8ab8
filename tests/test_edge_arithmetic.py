"""Exact arithmetic at the kernel's edge: adversarial scales against a direct ‖x − y‖ reference.

The engine forms ``t = 1 − d²/S²`` with the expanded formula, which cancels when λ is small
next to the features' magnitudes. Every test here compares with distances computed directly
(``Σ (y_j − x_j)²`` in float64, from the very values the engine sees) and checks what the
engine promises: the set of points with K > 0 is right, kernel values are within the exposed
error bound, ``dist_sum`` bounds Σ wK·d from above, the histogram is off only where the error
bound makes a bin ambiguous, and nothing depends on the units.
"""

from __future__ import annotations

import numpy as np
import pytest

from nwbound.engine.host import _sums, _tiles
from nwbound.engine import KernelStatistics
from nwbound.engine.host._sums import TrainingSet, dense_kernel_sums, neighbor_distances, neighbor_kernel_sums
from nwbound.kernels import gaussian_kernel, get_kernel

from test_engine_paths import numba_unavailable_reason, route  # noqa: F401  (route: both reductions)

EPAN = get_kernel("epanechnikov")
BOX = get_kernel("boxcar")


def _ref(Q, X, labels, n_classes, kernel, lams, weights=None, bins=0):
    """Slow float64 re-statement from the definitions: direct distances, K(u), sums, histogram."""
    Q64, X64 = np.asarray(Q, dtype=np.float64), np.asarray(X, dtype=np.float64)
    d2 = ((Q64[:, None, :] - X64[None, :, :]) ** 2).sum(axis=2)
    w = np.ones(X.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    out = []
    for lam in lams:
        u2 = d2 / lam**2
        wk = kernel(np.sqrt(u2)).astype(np.float64) * w
        cs = np.stack([wk[:, labels == c].sum(axis=1) for c in range(n_classes)], axis=1)
        hist = None
        if bins:
            r2 = kernel.radius**2
            hist = np.zeros((Q.shape[0], bins))
            for b in range(bins):
                lo, hi = b * r2 / bins, (b + 1) * r2 / bins
                inside = (u2 >= lo) & ((u2 < hi) if b < bins - 1 else (u2 <= hi))
                hist[:, b] = (inside * (w / w.max())).sum(axis=1)
        out.append(dict(u2=u2, cs=cs, sq=(wk * wk).sum(axis=1), dist=(wk * np.sqrt(d2)).sum(axis=1), hist=hist))
    return out


def _check_against_reference(got: KernelStatistics, ref, kernel, lams, weights, lip_u2: float):
    """κ, class sums, sq_sum, dist_sum and histogram within what the exposed error bound allows."""
    n_train = ref[0]["u2"].shape[1]
    w = np.ones(n_train) if weights is None else weights
    err = got.u2_error  # (n, G)
    r2 = kernel.radius**2
    for g, r in enumerate(ref):
        e = err[:, g][:, None] * (1 + 1e-9) + 1e-13 * r["u2"]  # + the direct formula's rounding
        # Points the bound cannot place relative to the edge, and points surely inside.
        near_edge = np.abs(r["u2"] - r2) <= e
        inside = r["u2"] <= r2 + e
        # Kernel values: within lip·Δu² inside, exact outside; edge points can go either way.
        slack = (w * inside * lip_u2 * e).sum(axis=1) + (w * near_edge).sum(axis=1) * kernel(np.ones(1))[0]
        np.testing.assert_array_less(np.abs(got.class_sums[:, g] - r["cs"]).sum(axis=1), slack + 1e-9 * r["cs"].sum(1) + 1e-12)
        if got.dist_sum is not None:
            # An upper bound of the true Σ wK·d (up to the reference's own rounding).
            assert np.all(got.dist_sum[:, g] >= r["dist"] * (1 - 1e-12) - slack * np.sqrt(r2) * lams[g])
        if got.histogram is not None:
            B = got.histogram.shape[2]
            edges = np.arange(1, B + 1) * r2 / B
            cum_got = np.cumsum(got.histogram[:, g], axis=1)
            wn = w / w.max()
            for b, edge in enumerate(edges):
                surely = ((r["u2"] + e < edge) * wn).sum(axis=1)
                maybe = ((r["u2"] - e <= edge * (1 + 1e-12)) * wn).sum(axis=1)
                assert np.all(cum_got[:, b] >= surely - 1e-9) and np.all(cum_got[:, b] <= maybe + 1e-9)


ADVERSARIAL = [
    # (name, dtype, feature range of the last column, n_features, λ, offset)
    ("issue14-float32", np.float32, 1e3, 3, 0.05, 0.0),
    ("float64-range1e7", np.float64, 1e7, 3, 0.05, 0.0),
    ("float32-tiny-lambda", np.float32, 1.0, 20, 0.004, 0.0),
    ("float32-offset", np.float32, 1.0, 4, 0.08, 3e3),
    ("float64-offset", np.float64, 1.0, 4, 0.08, 1e9),
]


@pytest.mark.parametrize("name,dtype,spread,d,lam,offset", ADVERSARIAL, ids=[a[0] for a in ADVERSARIAL])
@pytest.mark.parametrize("kernel", [EPAN, BOX], ids=["epanechnikov", "boxcar"])
def test_adversarial_scales_match_direct_distances(name, dtype, spread, d, lam, offset, kernel, route):
    rng = np.random.default_rng(7)
    X = rng.random((1500, d))
    X[:, -1] *= spread
    X = (X + offset).astype(dtype)
    y = rng.integers(0, 3, X.shape[0])
    w = rng.uniform(0.5, 2.0, X.shape[0])
    # Queries: training rows (the failing case of issue 14) and jittered copies near the edge.
    Q = np.concatenate([X[:120], (X[120:200].astype(np.float64) + rng.normal(scale=lam / 2, size=(80, d))).astype(dtype)])
    lams = np.array([lam / 2, lam])
    train = TrainingSet.build(X, y, 3, w)
    got = dense_kernel_sums(Q, train, kernel, lams, need_dist=True, histogram_bins=8)
    ref = _ref(Q, X, y, 3, kernel, lams, w, bins=8)
    _check_against_reference(got, ref, kernel, lams, w, lip_u2=1.0 if kernel is EPAN else 0.0)
    # A training row queried against itself always has its own mass: never vacuous.
    assert np.all(got.kappa[:120] >= w[:120, None] * (1 - got.u2_error[:120]))
    assert np.all(np.isfinite(got.u2_error)) and np.all(got.u2_error < 2.0**-8 * (lam / lams) ** 2 * 1.01)


def test_issue14_reproduction_float32_no_vacuous_self_queries(route):
    rng = np.random.default_rng(0)
    X = rng.random((2000, 3))
    X[:, 2] *= 1000
    X32 = X.astype(np.float32)
    y = rng.integers(0, 3, 2000)
    got = dense_kernel_sums(X32[:300], TrainingSet.build(X32, y, 3, None), EPAN, np.array([0.05]), need_dist=False)
    assert np.all(got.kappa[:, 0] >= 1.0 - got.u2_error[:, 0])  # K(0) = 1, within the bound
    ref = _ref(X32[:300], X32, y, 3, EPAN, [0.05])[0]
    np.testing.assert_allclose(got.class_sums[:, 0], ref["cs"], atol=1e-5)
    assert np.all(got.class_sums[:, 0].argmax(axis=1) == ref["cs"].argmax(axis=1))


@pytest.mark.parametrize("forced", ["float64", "direct"])
def test_escalation_tiers_match_reference(forced, route, monkeypatch):
    # Force the tiers on benign data: a tiny threshold sends float32 blocks to a float64
    # product, a negative one sends every block to direct recomputation.
    monkeypatch.setattr(_tiles, "_MAX_T_ERROR", 1e-9 if forced == "float64" else -1.0)
    rng = np.random.default_rng(3)
    X = rng.random((800, 5)).astype(np.float32)
    y = rng.integers(0, 2, 800)
    Q = X[:60] + np.float32(0.01)
    lams = np.array([0.2, 0.35])
    got = dense_kernel_sums(Q, TrainingSet.build(X, y, 2, None), EPAN, lams, need_dist=True, histogram_bins=5)
    ref = _ref(Q, X, y, 2, EPAN, lams, bins=5)
    _check_against_reference(got, ref, EPAN, lams, None, lip_u2=1.0)
    bound = got.u2_error[:, -1].max()  # the widest λ: u² = d²/S² (radius 1)
    assert bound < (1e-9 if forced == "float64" else 1e-13)  # float64 product / direct distances


def test_bandwidth_too_small_for_any_product_recomputes_all_pairs(route):
    # ρ² = (s₀/S)² overflows float64: no product at all, every pair directly.
    rng = np.random.default_rng(4)
    X = rng.random((300, 3))
    X[::10] = X[1::10]  # duplicates: the only pairs within a bandwidth of 1e-170
    y = rng.integers(0, 2, 300)
    got = dense_kernel_sums(X[:50], TrainingSet.build(X, y, 2, None), EPAN, np.array([1e-170]), need_dist=True)
    dup = np.array([1 + (i % 10 in (0, 1)) for i in range(50)], dtype=float)
    np.testing.assert_array_equal(got.kappa[:, 0], dup)
    # Duplicates are at distance 0; the upper bound adds at most √(error)·S per unit of mass.
    assert np.all(got.dist_sum[:, 0] >= 0) and np.all(got.dist_sum[:, 0] <= dup * 1e-170 * np.sqrt(got.u2_error[:, 0]) * 1.01)


def test_huge_bandwidth_is_finite_and_everything_counts(route):
    rng = np.random.default_rng(5)
    X = rng.random((200, 3))
    y = rng.integers(0, 2, 200)
    got = dense_kernel_sums(X[:20], TrainingSet.build(X, y, 2, None), EPAN, np.array([1e300]), need_dist=True)
    np.testing.assert_allclose(got.kappa[:, 0], 200.0, rtol=1e-12)
    assert np.all(np.isfinite(got.dist_sum)) and np.all(got.dist_sum >= 0)


def test_unrepresentable_bandwidths_are_clear_errors():
    X = np.random.default_rng(6).random((50, 2))
    train = TrainingSet.build(X, np.zeros(50, dtype=int), 1, None)
    with pytest.raises(ValueError, match="bandwidths"):
        dense_kernel_sums(X, train, EPAN, np.array([1e-320]), need_dist=False)
    with pytest.raises(ValueError, match="bandwidths"):
        dense_kernel_sums(X, train, EPAN, np.array([1e-200, 1e200]), need_dist=False)
    with pytest.raises(ValueError, match="histogram_bins"):
        dense_kernel_sums(X, train, get_kernel("gaussian_untruncated"), np.array([0.3]), need_dist=False,
                          histogram_bins=4)
    with pytest.raises(ValueError, match="histogram_bins"):
        dense_kernel_sums(X, train, EPAN, np.array([0.3]), need_dist=False, histogram_bins=-1)


@pytest.mark.parametrize("factor", [1e150, 1e-150, 1e160, 1e-200])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_scale_invariance(factor, dtype, route):
    if dtype == np.float32 and not 1e-30 < factor < 1e30:
        factor = 2.0**100 if factor > 1 else 2.0**-100  # float32's own range
    rng = np.random.default_rng(8)
    X = rng.random((700, 3))
    y = rng.integers(0, 3, 700)
    Q = X[:80] + rng.normal(scale=0.05, size=(80, 3))
    lams = np.array([0.1, 0.25])
    base = dense_kernel_sums(Q.astype(dtype), TrainingSet.build(X.astype(dtype), y, 3, None), EPAN, lams,
                             need_dist=True, histogram_bins=6)
    Xs, Qs = (X * factor).astype(dtype), (Q * factor).astype(dtype)
    scaled = dense_kernel_sums(Qs, TrainingSet.build(Xs, y, 3, None), EPAN, lams * factor, need_dist=True,
                               histogram_bins=6)
    tol = 1e-9 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(scaled.class_sums, base.class_sums, atol=tol * 10, rtol=tol)
    np.testing.assert_allclose(scaled.dist_sum / factor, base.dist_sum, atol=tol * 10, rtol=tol)
    assert np.all(np.isfinite(scaled.u2_error))
    np.testing.assert_allclose(scaled.u2_error, base.u2_error, rtol=1e-3, atol=1e-12)
    moved = np.abs(scaled.histogram - base.histogram).sum()
    assert moved <= 2  # a point or two may cross a bin edge by rounding


def test_sample_weights_scaled_by_1e300_give_the_same_proba(route):
    rng = np.random.default_rng(9)
    X = rng.random((500, 2))
    y = rng.integers(0, 3, 500)
    w = rng.uniform(0.5, 2.0, 500)
    lams = np.array([0.15])
    a = dense_kernel_sums(X[:60], TrainingSet.build(X, y, 3, w), EPAN, lams, need_dist=True, histogram_bins=4)
    b = dense_kernel_sums(X[:60], TrainingSet.build(X, y, 3, w * 1e300), EPAN, lams, need_dist=True, histogram_bins=4)
    np.testing.assert_allclose(b.class_sums / b.kappa[..., None], a.class_sums / a.kappa[..., None], rtol=1e-12)
    np.testing.assert_allclose(b.histogram, a.histogram, rtol=1e-12)  # normalised by the largest weight
    assert b.weight_max == pytest.approx(w.max() * 1e300)
    # Σ(wK)² ≈ 1e600 is not a float64: inf, never NaN; every other sum scales exactly.
    assert np.all(np.isposinf(b.sq_sum[a.sq_sum > 0])) and np.all(b.sq_sum[a.sq_sum == 0] == 0)
    for name in ("dist_sum", "hist_mass", "hist_dist"):
        np.testing.assert_allclose(getattr(b, name), getattr(a, name) * 1e300, rtol=1e-12, err_msg=name)


@pytest.mark.parametrize("factor", [2.0**-450, 1e-150, 1e150, 2.0**450])
def test_sample_weight_units_change_no_sum(factor, route):
    # Weights are accumulated in units of a power of two ≥ the largest one: every sum scales
    # exactly, including Σ(wK)², as long as the true value is a float64 (no term over- or underflows).
    rng = np.random.default_rng(15)
    X = rng.random((400, 2))
    y = rng.integers(0, 2, 400)
    w = rng.uniform(0.5, 2.0, 400)
    lams = np.array([0.1, 0.2])
    a = dense_kernel_sums(X[:40], TrainingSet.build(X, y, 2, w), EPAN, lams, need_dist=True, histogram_bins=4)
    b = dense_kernel_sums(X[:40], TrainingSet.build(X, y, 2, w * factor), EPAN, lams, need_dist=True,
                          histogram_bins=4)
    ref = _ref(X[:40], X, y, 2, EPAN, lams, w * factor)
    for g in range(2):
        np.testing.assert_allclose(b.class_sums[:, g], ref[g]["cs"], rtol=1e-9)
        np.testing.assert_allclose(b.sq_sum[:, g] / factor / factor, a.sq_sum[:, g], rtol=1e-12)
        np.testing.assert_allclose(b.dist_sum[:, g] / factor, a.dist_sum[:, g], rtol=1e-12)
    np.testing.assert_allclose(b.histogram, a.histogram, rtol=1e-12)


@pytest.mark.parametrize("lams", [[0.03, 0.05], [0.05, 0.012, 0.035, 0.02, 0.05]], ids=["two", "unsorted-five"])
def test_numba_route_equals_numpy_route_including_histogram(lams, monkeypatch):
    # Several unsorted bandwidths (with a duplicate) exercise the compiled route's slot sort.
    if reason := numba_unavailable_reason():
        pytest.skip(reason)
    rng = np.random.default_rng(10)
    X = rng.random((1200, 3))
    X[:, 2] *= 1000
    X32 = X.astype(np.float32)
    y = rng.integers(0, 3, 1200)
    w = rng.uniform(0.5, 2.0, 1200)
    Q = X32[:100]
    lams = np.array(lams)
    for kernel in (EPAN, BOX, get_kernel("tricube"), gaussian_kernel(2.0)):
        train = TrainingSet.build(X32, y, 3, w)
        monkeypatch.setattr(_sums, "USE_NUMBA", True)
        fused = dense_kernel_sums(Q, train, kernel, lams, need_dist=True, histogram_bins=7, working_memory=0.2)
        assert _sums._FUSED_MODULE
        monkeypatch.setattr(_sums, "USE_NUMBA", False)
        for share in (1.0, 0.0):  # the numpy route's sparse and dense branches
            monkeypatch.setattr(_tiles, "_DENSE_SHARE", share)
            numpy = dense_kernel_sums(Q, train, kernel, lams, need_dist=True, histogram_bins=7, working_memory=0.2)
            for name in ("class_sums", "sq_sum", "dist_sum", "histogram", "u2_error"):
                np.testing.assert_allclose(getattr(fused, name), getattr(numpy, name), rtol=1e-10, atol=1e-12,
                                           err_msg=f"{kernel.name} {name} share={share}")


def test_histogram_matches_slow_binning_on_benign_data(route):
    rng = np.random.default_rng(11)
    X = rng.random((900, 2))
    y = rng.integers(0, 2, 900)
    w = rng.uniform(0.1, 3.0, 900)
    Q = rng.random((70, 2))
    lams = np.array([0.1, 0.2, 0.3])
    got = dense_kernel_sums(Q, TrainingSet.build(X, y, 2, w), EPAN, lams, need_dist=False, histogram_bins=16)
    ref = _ref(Q, X, y, 2, EPAN, lams, w, bins=16)
    for g in range(3):
        np.testing.assert_allclose(got.histogram[:, g], ref[g]["hist"], atol=1e-9)
        # The histogram's mass is the mass of the points with K ≥ 0 inside the support.
        np.testing.assert_allclose(got.histogram[:, g].sum(axis=1), (w * (ref[g]["u2"] <= 1)).sum(axis=1) / w.max())
    np.testing.assert_allclose(got.hist_edges, np.linspace(0, 1, 17))


def test_neighbor_path_recomputes_distances_and_keeps_points():
    rng = np.random.default_rng(12)
    X = rng.random((400, 3))
    X[:, 2] *= 1e7
    y = rng.integers(0, 2, 400)
    w = rng.uniform(0.5, 2.0, 400)
    Q = X[:30] + np.array([0.01, 0.0, 0.0])
    d_true = np.sqrt(((Q[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    idx = np.argsort(d_true, axis=1)[:, :5]
    wrong = np.full(idx.shape, 0.5)  # the index's distances, garbage here: must not be used
    train = TrainingSet.build(X, y, 2, w)
    lams = np.array([0.05, 0.1])
    got = neighbor_kernel_sums(wrong, idx, train, EPAN, lams, need_dist=True, queries=Q, keep_points=True)
    d_ref = np.take_along_axis(d_true, idx, axis=1)
    np.testing.assert_allclose(got.point_dist, d_ref, rtol=1e-12)
    for g, lam in enumerate(lams):
        wk = EPAN(d_ref / lam) * w[idx]
        np.testing.assert_allclose(got.point_mass[:, g], wk, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got.kappa[:, g], wk.sum(axis=1), rtol=1e-9)
        assert np.all(got.dist_sum[:, g] >= (wk * d_ref).sum(axis=1))
    assert got.point_mass.shape == (30, 2, 5) and got.weight_max == w.max()


def test_neighbor_distances_at_extreme_scales():
    rng = np.random.default_rng(13)
    X = rng.random((50, 4))
    Q = rng.random((6, 4))
    idx = rng.integers(0, 50, (6, 3))
    base = neighbor_distances(Q, X, idx)
    for factor in (1e160, 1e-200, 1e300):
        np.testing.assert_allclose(neighbor_distances(Q * factor, X * factor, idx) / factor, base, rtol=1e-14)


@pytest.mark.filterwarnings("ignore:The bounds cannot guide decisions")
@pytest.mark.parametrize("n_neighbors", [None, 10], ids=["regular", "localized"])
def test_estimator_scale_invariance(n_neighbors, route):
    # Through the public API: X, λ and L scaled together, and sample weights scaled by 1e300.
    from nwbound import NadarayaWatsonClassifier

    rng = np.random.default_rng(14)
    X = rng.random((600, 3))
    y = rng.integers(0, 3, 600)
    w = rng.uniform(0.5, 2.0, 600)
    Q = X[:50] + 0.01

    def fit(factor, weights):
        model = NadarayaWatsonClassifier(metric=None, bandwidth=0.2 * factor, lipschitz=1.0 / factor, n_neighbors=n_neighbors)
        return model.fit(X * factor, y, sample_weight=weights).predict_interval(Q * factor)

    base = fit(1.0, w)
    for factor, weights in ((1e150, w), (1e-150, w), (1e160, w), (1e-200, w), (1.0, w * 1e300)):
        got = fit(factor, weights)
        np.testing.assert_allclose(got.proba, base.proba, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got.epsilon, base.epsilon, rtol=1e-9, atol=1e-12)


EXTREME = [
    # (name, n_features, X factor, λ, weight factor): the cases where a route could overflow or cancel.
    ("tiny-lambda-no-product", 3, 1.0, 1e-170, 1.0),
    ("huge-lambda", 3, 1.0, 1e300, 1.0),
    ("weights-1e300", 2, 1.0, 0.15, 1e300),
    ("weights-1e-300", 2, 1.0, 0.15, 1e-300),
    ("units-1e-200", 3, 1e-200, 0.1e-200, 1.0),
    ("units-1e160", 3, 1e160, 0.1e160, 1.0),
]


@pytest.mark.parametrize("case", ADVERSARIAL + EXTREME, ids=[a[0] for a in ADVERSARIAL + EXTREME])
def test_numpy_route_equals_numba_route_on_adversarial_cases(case, monkeypatch):
    # Same GEMM tiles, same selection and recomputation rules: the two reductions agree to
    # rounding on every sum, in both of the numpy route's branches (sparse and dense tiles).
    if reason := numba_unavailable_reason():
        pytest.skip(reason)
    rng = np.random.default_rng(16)
    if len(case) == 6:
        _, dtype, spread, d, lam, offset = case
        X = rng.random((600, d))
        X[:, -1] *= spread
        X = (X + offset).astype(dtype)
        w = rng.uniform(0.5, 2.0, 600)
    else:
        _, d, factor, lam, wf = case
        X = rng.random((600, d))
        X[::10] = X[1::10]  # duplicates: the only neighbours at λ = 1e-170
        X = X * factor
        w = rng.uniform(0.5, 2.0, 600) * wf
    y = rng.integers(0, 3, 600)
    Q = X[:80]
    lams = np.array([lam / 2, lam])
    train = TrainingSet.build(X, y, 3, w)
    monkeypatch.setattr(_sums, "USE_NUMBA", True)
    fused = dense_kernel_sums(Q, train, EPAN, lams, need_dist=True, histogram_bins=5, working_memory=0.2)
    assert _sums._FUSED_MODULE
    monkeypatch.setattr(_sums, "USE_NUMBA", False)
    for share in (1.0, 0.0):
        monkeypatch.setattr(_tiles, "_DENSE_SHARE", share)
        numpy = dense_kernel_sums(Q, train, EPAN, lams, need_dist=True, histogram_bins=5, working_memory=0.2)
        for name in ("class_sums", "sq_sum", "dist_sum", "histogram", "hist_mass", "hist_dist", "u2_error"):
            a, b = getattr(fused, name), getattr(numpy, name)
            assert not np.isnan(b).any(), f"{name} share={share}: NaN"
            scale = float(np.abs(a[np.isfinite(a)]).max(initial=0.0))  # sums of 1e-300 weights are ~1e-300
            np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12 * scale, err_msg=f"{name} share={share}")
