"""The CPU engine's float64 sums are inside the bound (issue 19, item 4).

The CPU engine adds the terms ``a_i = fl(w_i K_i)`` in float64: a class sum of ``n`` terms lies
within ``1 ± γ_n`` (``u = 2⁻⁵³``) of the exact one, and nothing used to cover it. Now every CPU
path (the regular classifier's dense pass, the localized classifier's neighbour sums, the dyadic
classifier's cell sums, merged shards) reports ``sum_error`` and makes ``Σ a_i²`` an upper bound,
and the bound widens by them.

The references are written here, independent of the engine: points on a grid ``k/64``, bandwidth
1 and weights powers of two, so every distance, Epanechnikov value ``1 − u²``, weight and product
is an exact dyadic rational (the CPU engine computes them exactly there; only its sums round).
The exact sums are Python integers (as :class:`fractions.Fraction`); the reference interval is the
library's bound of those exact sums with exact distances; the CPU interval must contain it. The
weights span many binades, many of them just below the rounding threshold of a partial sum that
holds a heavy point (``2⁻⁵³ … 2⁻⁴⁹`` next to sums of tens): float64 sums lose about ``1e-13`` of a
class sum, which moves ``p̂`` by far more than the bound's own arithmetic.
"""

from __future__ import annotations

import dataclasses
import warnings
from fractions import Fraction

import numpy as np
import pytest

from nwbound import DyadicClassifier, NadarayaWatsonClassifier
from nwbound._numerics import compose_errors, square_sum_upper, summation_error
from nwbound.bounds._chernoff import chernoff_interval
from nwbound.estimators import KernelStatistics, merge_statistics
from nwbound.kernels import get_kernel

from _exact_sums import exact_statistics

GRID = 64  # x = k / GRID; λ = 1, so u² = (k − j)²/GRID² exactly
BINS = 16
# The bound's own float64 arithmetic (p̂ = S/κ, √, p̂ ± ε) on the same sums: a few ulps. The sums'
# errors must exceed it for the checks to mean something; the widened intervals contain the exact
# ones with no tolerance at all (without the widening they fall up to 2e-14 inside them here).
ARITH_TOL = 2e-15
# The band-Chernoff search places each end within its tol (1e-7) of its exact test's end (both intervals).
CHERNOFF_TOL = 1.5e-7


def _dataset(n_light: int, n_heavy: int, weighted: bool, low: int, high: int, seed: int = 0):
    """Heavy points first (weight 1, both classes), then many light ones of class 0 (weights 2^-e, e in [49, 54)),
    on the grid k in [low, high]: the light ones a float64 sum holding heavy ones drops move p̂."""
    rng = np.random.default_rng(seed)
    mid = (low + high) // 2
    k = np.concatenate([rng.integers(mid - 20, mid + 21, n_heavy), rng.integers(low, high + 1, n_light), [low, high]])
    y = np.concatenate([np.arange(n_heavy) % 2, np.zeros(n_light, int), [0, 1]])
    e = np.concatenate([np.zeros(n_heavy, int), rng.integers(49, 54, n_light) if weighted else np.zeros(n_light, int),
                        [0, 0]])
    return k, y, e


def _x(k) -> np.ndarray:
    return (np.asarray(k) / GRID)[:, None]


def _weights(e):
    return None if (e == 0).all() else 2.0**-e


def _exact_kernel_statistics(k, y, e, queries, *, per_point: bool = False) -> KernelStatistics:
    """Exact Epanechnikov sums over every training point (λ = 1), as statistics with ``u2_error = 0``."""
    return exact_statistics(k, y, e, queries, grid=GRID, bins=BINS, per_point=per_point)


def _interval(clf, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # UselessBoundWarning on a few queries
        return clf.predict_interval(X)


def _inward(got, ref) -> float:
    """How far ``got`` lies inside ``ref`` at its worst end (≤ 0: it contains it)."""
    return max(float(np.max(got.lower - ref.lower)), float(np.max(ref.upper - got.upper)))


def _check(clf, X_queries, ref_stats, bound: str) -> None:
    got = _interval(clf, X_queries)
    ref = clf.interval_from_statistics(ref_stats)
    assert np.all(ref.kappa > 0)  # a real neighbourhood everywhere: the check is not vacuous
    tol = CHERNOFF_TOL if bound == "chernoff" else 0.0
    inward = _inward(got, ref)
    assert inward <= tol, f"the CPU interval lies {inward:.3g} inside the exact one"


def _unwidened(stats: KernelStatistics) -> KernelStatistics:
    """The statistics without the summation error (the bound does not widen for it)."""
    return dataclasses.replace(stats, sum_error=0.0)


def _assert_sums_off(clf, stats: KernelStatistics, exact: KernelStatistics) -> None:
    """The containment checks are not vacuous: the float64 class sums are off by far more than the
    bound's arithmetic (and p̂ with them), and by at most ρ."""
    rel = np.abs(stats.class_sums / exact.class_sums - 1.0)
    assert 10 * ARITH_TOL < rel.max() <= stats.sum_error
    shift = np.abs(clf.interval_from_statistics(stats).proba - clf.interval_from_statistics(exact).proba)
    assert shift.max() > 2 * ARITH_TOL


QUERIES = [0, 16, -40, 63]


@pytest.fixture(scope="module")
def dense_data():
    """``(k, y, e, exact statistics at QUERIES)``, weighted and not."""
    out = {}
    for w in (True, False):
        k, y, e = _dataset(40_000, 64, w, -GRID + 1, GRID - 1)
        out[w] = (k, y, e, _exact_kernel_statistics(k, y, e, QUERIES))
    return out


@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("bound", ["hoeffding", "chernoff"])
def test_regular_interval_contains_the_exact_one(dense_data, bound, weighted):
    k, y, e, exact = dense_data[weighted]
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=1.0, lipschitz=1e-9, bound=bound, histogram_bins=BINS)
    clf.fit(_x(k), y, sample_weight=_weights(e))
    Xq = _x(QUERIES)
    stats = clf.kernel_statistics(Xq)
    assert stats.sum_error == summation_error(k.shape[0])
    _check(clf, Xq, exact, bound)


def test_regular_sums_are_off_by_more_than_the_arithmetic(dense_data):
    # The test above is not vacuous: the engine's float64 class sums differ from the exact ones by far
    # more than the bound's own arithmetic, and by less than ρ.
    k, y, e, exact = dense_data[True]
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=1.0, lipschitz=1e-9).fit(_x(k), y, sample_weight=_weights(e))
    stats = clf.kernel_statistics(_x(QUERIES))
    _assert_sums_off(clf, stats, exact)
    # Σ a² (an upper bound now): never below the exact one, and only by about 2γ_n above it.
    ratio = stats.sq_sum / exact.sq_sum
    assert np.all(ratio >= 1.0) and np.all(ratio < 1.0 + 3 * stats.sum_error)


@pytest.mark.parametrize("bound", ["hoeffding", "chernoff"])
def test_localized_interval_contains_the_exact_one(bound):
    # Every training point among the neighbours (k = n): the localized sums add all n terms.
    k, y, e = _dataset(12_000, 64, True, -GRID + 1, GRID - 1, seed=1)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=1.0, lipschitz=1e-9, bound=bound, n_neighbors=k.shape[0],
                                   algorithm="brute")
    clf.fit(_x(k), y, sample_weight=_weights(e))
    Xq = _x(QUERIES)
    assert clf.kernel_statistics(Xq).sum_error == summation_error(k.shape[0])
    _check(clf, Xq, _exact_kernel_statistics(k, y, e, QUERIES, per_point=(bound == "chernoff")), bound)


def _exact_cell_statistics(k, y, e, queries, resolution: int) -> KernelStatistics:
    """Exact dyadic cell sums for grid data on [0, 256]/64 (cells of 256/2^m grid steps), reach = diameter."""
    side = 256 // 2**resolution
    cell = np.minimum(k // side, 2**resolution - 1)
    w = [Fraction(1, 2**int(v)) for v in e]
    rows = []
    for j in queries:
        members = np.flatnonzero(cell == min(j // side, 2**resolution - 1))
        S = [sum((w[i] for i in members if y[i] == c), Fraction(0)) for c in (0, 1)]
        rows.append((S, sum((w[i] * w[i] for i in members), Fraction(0)), max(w[i] for i in members)))
    reach = side / GRID  # the exact diameter of a cell (1-D)
    kappa = np.array([float(sum(r[0])) for r in rows])
    w_max = np.array([float(r[2]) for r in rows])
    return KernelStatistics(
        class_sums=np.array([[[float(v) for v in r[0]]] for r in rows]), sq_sum=np.array([[float(r[1])] for r in rows]),
        dist_sum=(kappa * reach)[:, None], bandwidth=np.full((len(queries), 1), reach),
        kernel=get_kernel("boxcar"), outside_box=np.zeros(len(queries), bool),
        histogram=(kappa / w_max)[:, None, None], hist_edges=np.array([0.0, 1.0]), weight_max=w_max,
    )


@pytest.fixture(scope="module")
def cell_data():
    return _dataset(30_000, 64, True, 0, 256, seed=2)


@pytest.mark.parametrize("bound", ["hoeffding", "chernoff"])
def test_dyadic_interval_contains_the_exact_one(cell_data, bound):
    k, y, e = cell_data
    clf = DyadicClassifier(metric=None, resolution=3, lipschitz=1e-9, bound=bound).fit(_x(k), y, sample_weight=_weights(e))
    queries = [100, 130, 140]  # the cells of the heavy points (grid 108…148) and their neighbours
    Xq = _x(queries)
    ref_stats = _exact_cell_statistics(k, y, e, queries, 3)
    _check(clf, Xq, ref_stats, bound)
    if bound == "hoeffding":  # not vacuous: the fit's sums (heavy points first) lost many light weights
        stats = clf.kernel_statistics(Xq)
        assert stats.sum_error == summation_error(int(clf.cell_counts_.max()))
        _assert_sums_off(clf, stats, ref_stats)


def test_per_point_chernoff_sum_error_contains_the_perturbed_sums():
    # chernoff_interval's sum_error: class sums off by ±ρ (in opposite directions), per-point masses exact.
    rng = np.random.default_rng(11)
    n, k = 30, 12
    mass = rng.random((n, k))
    labels = rng.random((n, k)) < 0.6
    S = np.stack([(mass * labels).sum(axis=1), (mass * ~labels).sum(axis=1)], axis=1)
    band = 0.05 * rng.random((n, k))
    lo, up = chernoff_interval(S, np.ones((n, k)), mass, mass, band, 0.05, tol=1e-12)
    rho = 1e-3
    for sign in (-1.0, 1.0):
        lo_r, up_r = chernoff_interval(S * (1 + sign * rho * np.array([1.0, -1.0])), np.ones((n, k)), mass, mass,
                                       band, 0.05, tol=1e-12, sum_error=rho)
        assert np.all(lo_r <= lo + 1e-11) and np.all(up_r >= up - 1e-11)
        assert np.all(up_r - lo_r < up - lo + 0.05)  # and only by about the perturbation
    with pytest.raises(ValueError, match="sum_error"):
        chernoff_interval(S, np.ones((n, k)), mass, mass, band, 0.05, sum_error=0.5)


def test_square_sum_upper_bounds_the_exact_sum():
    # Squares of values spanning 1 … 2^-600 (many underflow to 0), added in float64 in the worst
    # order (large first): the rule's result is never below the exact sum of squares.
    rng = np.random.default_rng(5)
    for trial in range(5):
        a = np.ldexp(1.0 + rng.random(3000), -rng.integers(0, 600, 3000))
        a[: 3 + trial] = 1.0
        got = square_sum_upper(float(np.sum(a * a)), a.shape[0])
        exact = sum((Fraction(float(v)) ** 2 for v in a), Fraction(0))
        assert Fraction(got) >= exact
        assert float(Fraction(got) / exact) < 1.0 + 3.0 * summation_error(a.shape[0])


def test_merged_shards_keep_upper_bounds_and_carry_the_sum_error(dense_data):
    # Two training shards' statistics merged: the merge's own addition is counted (ρ grows by γ_1),
    # and Σ a², D stay upper bounds of the exact sums over the union.
    k, y, e, exact = dense_data[True]
    half = k.shape[0] // 2
    shards = [NadarayaWatsonClassifier(metric=None, bandwidth=1.0, lipschitz=1e-9, histogram_bins=BINS, bound="chernoff")
              .fit(_x(k[s]), y[s], sample_weight=_weights(e[s])) for s in (slice(0, half), slice(half, None))]
    Xq = _x(QUERIES)
    parts = [m.kernel_statistics(Xq) for m in shards]
    merged = merge_statistics(parts)
    assert merged.sum_error == compose_errors(max(p.sum_error for p in parts), summation_error(1))
    assert np.all(merged.sq_sum >= exact.sq_sum) and np.all(merged.dist_sum >= exact.dist_sum)
    assert np.all(merged.hist_dist >= exact.hist_dist)
    for bound in ("hoeffding", "chernoff"):
        clf = shards[0].set_params(bound=bound)
        inward = _inward(clf.interval_from_statistics(merged), clf.interval_from_statistics(exact))
        assert inward <= (CHERNOFF_TOL if bound == "chernoff" else 0.0)


def _mean_widths(clf, stats) -> tuple[float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        widened = clf.interval_from_statistics(stats)
        plain = clf.interval_from_statistics(_unwidened(stats))
    return float(np.mean(widened.upper - widened.lower)), float(np.mean(plain.upper - plain.lower))


@pytest.mark.parametrize("model", ["regular", "localized", "dyadic"])
@pytest.mark.parametrize("bound", ["hoeffding", "chernoff"])
def test_widening_is_tiny_on_ordinary_data(model, bound):
    rng = np.random.default_rng(3)
    X = rng.random((4000, 3))
    y = (X[:, 0] + 0.3 * rng.standard_normal(4000) > 0.5).astype(int)
    Xq = rng.random((200, 3))
    if model == "dyadic":
        clf = DyadicClassifier(metric=None, resolution=2, lipschitz=0.5, bound=bound)
    else:
        clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=0.5, bound=bound,
                                       n_neighbors=200 if model == "localized" else None)
    clf.fit(X, y)
    stats = clf.kernel_statistics(Xq)
    assert 0.0 < stats.sum_error < 1e-11
    widened, plain = _mean_widths(clf, stats)
    assert plain <= widened < plain * (1.0 + 1e-9)


def test_dyadic_reach_covers_the_cell_lookups_rounding():
    # Cells of 2⁻³⁰ of the range, found from a rounded (x − low)/span: with low = −0.3 the difference
    # rounds to ulps of 0.3, coarser than the points near 0, so points just outside a cell's exact
    # edges share it. The reach must still bound every exact distance within a cell (the bare
    # diameter does not: the check is not vacuous).
    m = 30
    low, high = -0.3, 0.4
    span = high - low
    first = int(np.ceil(-low / span * 2**m)) + 10  # cell edges just above 0
    step = np.spacing(0.3) / 4
    js = first + np.random.default_rng(0).integers(0, 100_000, 40)
    edges = low + span * (np.concatenate([js, js + 1]) / 2**m)  # both edges of 40 cells
    pts = np.concatenate([[low, high], (edges[:, None] + step * np.arange(-8, 9)[None, :]).ravel()])
    clf = DyadicClassifier(metric=None, resolution=m, lipschitz=1.0, bound="hoeffding").fit(pts[:, None], np.arange(pts.size) % 2)
    cells = clf._cells(pts[:, None])[0][:, 0]
    reach = clf.kernel_statistics(pts[:, None]).bandwidth[:, 0]
    exact = [Fraction(float(v)) for v in pts]
    beyond_diameter = False
    for i in range(pts.size):
        far = max(abs(exact[j] - exact[i]) for j in np.flatnonzero(cells == cells[i]))
        assert far <= Fraction(float(reach[i]))
        beyond_diameter |= far > Fraction(clf.cell_diameter_)
    assert beyond_diameter
    assert np.all(reach < clf.cell_diameter_ * (1 + 1e-6))  # and only by about 8·2⁻⁵³·2³⁰


def test_dask_sharded_interval_contains_the_exact_one(dense_data):
    # Four training shards, their statistics merged in a tree (dask's local threads): each shard's
    # γ_n and each merge's addition are carried; the interval contains the one of the exact sums.
    da = pytest.importorskip("dask.array")
    pytest.importorskip("distributed")
    import dask

    from nwbound.dask import sharded_predict_interval

    k, y, e, exact = dense_data[True]
    Xq = _x(QUERIES)
    params = dict(bandwidth=1.0, lipschitz=1e-9, bound="hoeffding")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = sharded_predict_interval(da.from_array(Xq, chunks=(2, -1)), da.from_array(_x(k), chunks=(10_017, -1)),
                                       y, sample_weight=_weights(e), metric=None, **params)
        (out,) = dask.compute(out, scheduler="threads")
    clf = NadarayaWatsonClassifier(metric=None, **params).fit(_x(k[:100]), y[:100])  # the bound's settings only
    ref = clf.interval_from_statistics(exact)
    assert np.all(out.lower <= ref.lower) and np.all(out.upper >= ref.upper)
