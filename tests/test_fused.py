"""The compiled (numba) tile reduction gives the sums of the formulas and of the numpy route.

Skipped when numba is not installed or NWBOUND_DISABLE_NUMBA is set. The reference is the direct float64
computation of ``test_engine_paths._direct`` (pairwise distances, K(d/λ),
sums); the numpy route is compared with the compiled one on the very same GEMM
tiles, with the numpy route held on its float64 sparse branch
(``_DENSE_SHARE = 1``) so that both form d² from the same tile entries.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from test_engine_paths import _clustered, _direct, numba_unavailable_reason  # noqa: E402

if _reason := numba_unavailable_reason():  # the numpy route alone is covered by test_engine_paths
    pytest.skip(_reason, allow_module_level=True)

from nwbound import NadarayaWatsonClassifier  # noqa: E402
from nwbound.engine.host import _sums, _sums_data, _tiles  # noqa: E402
from nwbound.engine.host._sums import TrainingSet, dense_kernel_sums  # noqa: E402
from nwbound.kernels import Kernel, gaussian_kernel, get_kernel  # noqa: E402

# Every kernel the compiled reduction evaluates itself.
COMPILED_KERNELS = ["epanechnikov", "boxcar", "quartic", "triweight", "tricube", "cosine", "gaussian"]
LAMS = np.array([0.15, 0.3, 0.6])


class _Routes:
    """Counts which reduction handled the tiles of one call."""

    def __init__(self, monkeypatch):
        self.fused = self.numpy = 0
        fused, entries, dense = _tiles._Accumulator.add_fused, _tiles._Accumulator.add_entries, _tiles._Accumulator.add_dense

        def count(name, original):
            def wrapper(acc, *args):
                setattr(self, name, getattr(self, name) + 1)
                return original(acc, *args)

            return wrapper

        monkeypatch.setattr(_tiles._Accumulator, "add_fused", count("fused", fused))
        monkeypatch.setattr(_tiles._Accumulator, "add_entries", count("numpy", entries))
        monkeypatch.setattr(_tiles._Accumulator, "add_dense", count("numpy", dense))


def _both_routes(monkeypatch, *args, **kwargs):
    """(compiled sums, numpy sums) of one ``dense_kernel_sums`` call, checking the route taken."""
    routes = _Routes(monkeypatch)
    fused = dense_kernel_sums(*args, **kwargs)
    assert routes.fused > 0 and routes.numpy == 0, "compiled route not taken"
    monkeypatch.setattr(_sums, "USE_NUMBA", False)
    numpy = dense_kernel_sums(*args, **kwargs)
    monkeypatch.setattr(_sums, "USE_NUMBA", True)
    assert routes.numpy > 0
    return fused, numpy


def _assert_sums_close(a, b, rtol, atol):
    for name in ("class_sums", "sq_sum", "dist_sum", "tail_mass"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("kernel", COMPILED_KERNELS)
@pytest.mark.parametrize("weighted", [False, True])
def test_compiled_route_matches_direct_sums_float64(kernel, weighted, monkeypatch):
    monkeypatch.setattr(_tiles, "_DENSE_SHARE", 1.0)
    X, y, Q = _clustered(700, 3, 50, seed=11)
    w = np.random.default_rng(2).uniform(0.2, 2.0, len(y)) if weighted else None
    train = TrainingSet.build(X, y, 3, w)
    fused, numpy = _both_routes(monkeypatch, Q, train, get_kernel(kernel), LAMS, need_dist=True,
                                working_memory=0.1, prune=False)
    for g, lam in enumerate(LAMS):
        cs, s2, dsum, _ = _direct(Q, X, y, 3, kernel, lam, w)
        np.testing.assert_allclose(fused.class_sums[:, g], cs, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(fused.sq_sum[:, g], s2, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(fused.dist_sum[:, g], dsum, rtol=1e-9, atol=1e-12)
        empty = cs.sum(axis=1) == 0
        assert empty.any() and np.all(fused.kappa[empty, g] == 0)  # no mass: exactly 0, not rounding noise
    _assert_sums_close(fused, numpy, rtol=1e-12, atol=1e-12)
    assert fused.tail_mass is None


@pytest.mark.parametrize("kernel", COMPILED_KERNELS)
def test_compiled_route_float32_equals_numpy_route(kernel, monkeypatch):
    # Same float32 tiles in both routes, d² formed in float64 in both: equal up to summation order.
    monkeypatch.setattr(_tiles, "_DENSE_SHARE", 1.0)
    X, y, Q = _clustered(900, 6, 80, seed=12)
    X32, Q32 = X.astype(np.float32), Q.astype(np.float32)
    w = np.random.default_rng(3).uniform(0.5, 1.5, len(y))
    train = TrainingSet.build(X32, y, 3, w)
    lams = LAMS * 2.0
    fused, numpy = _both_routes(monkeypatch, Q32, train, get_kernel(kernel), lams, need_dist=True,
                                working_memory=0.1, n_jobs=2)
    _assert_sums_close(fused, numpy, rtol=1e-10, atol=1e-12)
    # ... and close to the float64 formulas (float32 inputs: relative error ~1e-6 of the scale).
    for g, lam in enumerate(lams):
        cs, s2, dsum, _ = _direct(Q32, X32, y, 3, kernel, lam, w)
        scale = max(1.0, float(cs.sum(axis=1).max()))
        np.testing.assert_allclose(fused.class_sums[:, g], cs, atol=1e-4 * scale)
        np.testing.assert_allclose(fused.dist_sum[:, g], dsum, atol=1e-4 * scale * 10)


@pytest.mark.parametrize("kernel", ["epanechnikov", "gaussian"])
def test_compiled_route_tail_mass_and_all_entries(kernel, monkeypatch):
    # With a tail radius the engine visits every entry (threshold −inf), not only t ≥ 0.
    X, y, Q = _clustered(400, 4, 30, seed=13)
    w = np.random.default_rng(4).uniform(0.2, 2.0, len(y))
    train = TrainingSet.build(X, y, 3, w)
    lams = np.array([0.2, 0.5, 1.5])
    fused, numpy = _both_routes(monkeypatch, Q, train, get_kernel(kernel), lams, need_dist=True,
                                tail_radius=0.5, working_memory=0.05)
    for g, lam in enumerate(lams):
        cs, s2, dsum, tail = _direct(Q, X, y, 3, kernel, lam, w, tail_radius=0.5)
        np.testing.assert_allclose(fused.class_sums[:, g], cs, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(fused.sq_sum[:, g], s2, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(fused.dist_sum[:, g], dsum, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(fused.tail_mass[:, g], tail, rtol=1e-9, atol=1e-12)
        assert np.any(tail > 0) and np.any(tail < cs.sum(axis=1))  # the cut really splits the mass
    _assert_sums_close(fused, numpy, rtol=1e-10, atol=1e-12)


def test_compiled_route_on_pruned_blocks(monkeypatch):
    # Pruned blocks hand the reduction gathered column subsets instead of ranges.
    monkeypatch.setattr(_sums_data, "_MIN_PRUNE_POINTS", 64)
    X, y, Q = _clustered(2500, 2, 300, seed=14)
    w = np.random.default_rng(5).uniform(0.2, 2.0, len(y))
    train = TrainingSet.build(X, y, 3, w)
    kern = get_kernel("quartic")
    fused, numpy = _both_routes(monkeypatch, Q, train, kern, np.array([0.1, 0.2]), need_dist=True, prune=True)
    for g, lam in enumerate([0.1, 0.2]):
        cs, s2, dsum, _ = _direct(Q, X, y, 3, "quartic", lam, w)
        np.testing.assert_allclose(fused.class_sums[:, g], cs, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(fused.dist_sum[:, g], dsum, rtol=1e-9, atol=1e-12)
    _assert_sums_close(fused, numpy, rtol=1e-9, atol=1e-12)


def test_truncation_radius_of_the_gaussian_is_honoured(monkeypatch):
    X, y, Q = _clustered(500, 3, 40, seed=15)
    train = TrainingSet.build(X, y, 3, None)
    kern = gaussian_kernel(1.3)
    fused, _ = _both_routes(monkeypatch, Q, train, kern, np.array([0.25]), need_dist=False)
    cs, s2, _, _ = _direct(Q, X, y, 3, kern, 0.25)
    np.testing.assert_allclose(fused.class_sums[:, 0], cs, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fused.sq_sum[:, 0], s2, rtol=1e-9, atol=1e-12)


def test_unsupported_kernels_keep_the_numpy_route(monkeypatch):
    from nwbound.engine.host import _fused

    X, y, Q = _clustered(300, 3, 20, seed=16)
    train = TrainingSet.build(X, y, 3, None)
    builtin = get_kernel("epanechnikov")
    impostor = Kernel("epanechnikov", lambda u: np.maximum(1.0 - u, 0.0))  # a built-in name, another profile
    user = get_kernel(lambda u: np.maximum(1.0 - u, 0.0))
    for kern in (get_kernel("gaussian_untruncated"), impostor, user):
        assert _fused.kernel_code(kern) is None
        routes = _Routes(monkeypatch)
        dense_kernel_sums(Q, train, kern, np.array([0.4]), need_dist=True)
        assert routes.fused == 0 and routes.numpy > 0
    assert _fused.kernel_code(builtin) == (_fused.EPANECHNIKOV, 1.0)
    assert _fused.kernel_code(gaussian_kernel(2.0)) == (_fused.GAUSSIAN, 4.0)


def test_switches_force_the_numpy_route(monkeypatch):
    X, y, Q = _clustered(300, 3, 20, seed=17)
    train = TrainingSet.build(X, y, 3, None)
    kern = get_kernel("epanechnikov")
    routes = _Routes(monkeypatch)
    monkeypatch.setenv("NWBOUND_DISABLE_NUMBA", "1")
    dense_kernel_sums(Q, train, kern, np.array([0.4]), need_dist=False)
    assert routes.fused == 0 and routes.numpy > 0
    monkeypatch.setenv("NWBOUND_DISABLE_NUMBA", "0")
    dense_kernel_sums(Q, train, kern, np.array([0.4]), need_dist=False)
    assert routes.fused > 0


@pytest.mark.filterwarnings("ignore:The bounds cannot guide decisions")  # L = 1 on purpose: wide bounds
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_estimator_auto_bandwidth_same_intervals(dtype, monkeypatch):
    # bandwidth="auto": 16 bandwidths per query, the bound picks one.
    X, y, Q = _clustered(800, 4, 100, seed=18)
    w = np.random.default_rng(6).uniform(0.5, 1.5, len(y))
    model = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=1.0, dtype=dtype).fit(X, y, sample_weight=w)
    monkeypatch.setattr(_tiles, "_DENSE_SHARE", 1.0)
    fused = model.predict_interval(Q)
    monkeypatch.setattr(_sums, "USE_NUMBA", False)
    numpy = model.predict_interval(Q)
    assert len(model.bandwidths_) > 1
    np.testing.assert_allclose(fused.epsilon, numpy.epsilon, rtol=1e-7, atol=1e-12)
    same = fused.bandwidth == numpy.bandwidth
    assert same.mean() > 0.95
    np.testing.assert_allclose(fused.proba[same], numpy.proba[same], rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(fused.kappa[same], numpy.kappa[same], rtol=1e-7, atol=1e-12)


def test_import_nwbound_does_not_import_numba():
    code = "import sys, nwbound, nwbound.engine.host._sums; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("kernel", ["epanechnikov", "boxcar", "gaussian"])
@pytest.mark.parametrize("weighted", [False, True])
def test_histogram_bin_sums_match_direct(kernel, weighted, monkeypatch):
    """Per-bin Σ wK and Σ wK·d (split Chernoff form) in both routes, against a direct binning."""
    monkeypatch.setattr(_tiles, "_DENSE_SHARE", 1.0)
    X, y, Q = _clustered(700, 3, 50, seed=5)
    w = np.random.default_rng(3).uniform(0.2, 2.0, len(y)) if weighted else None
    train = TrainingSet.build(X, y, 3, w)
    kern = get_kernel(kernel)
    n_bins = 8
    fused, numpy = _both_routes(monkeypatch, Q, train, kern, LAMS, need_dist=True, histogram_bins=n_bins,
                                working_memory=0.1, prune=False)
    d = np.sqrt(((Q[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    r_sq = float(kern.radius) ** 2
    for g, lam in enumerate(LAMS):
        u2 = (d / lam) ** 2
        wk = kern(d / lam) * (1.0 if w is None else w)
        b = np.minimum((u2 * n_bins / r_sq).astype(int), n_bins - 1)
        inside = u2 <= r_sq
        mass = np.stack([np.where(inside & (b == j), wk, 0.0).sum(axis=1) for j in range(n_bins)], axis=1)
        dist = np.stack([np.where(inside & (b == j), wk * d, 0.0).sum(axis=1) for j in range(n_bins)], axis=1)
        # Rows with a point within rounding of a bin edge may bin it on either side: skipped.
        pos = u2 * n_bins / r_sq
        near = (np.abs(pos - np.round(pos)) < 1e-9 * np.maximum(pos, 1.0)) & (u2 <= r_sq * (1 + 1e-9))
        clear = ~near.any(axis=1)
        assert clear.mean() > 0.8
        for got in (fused, numpy):
            np.testing.assert_allclose(got.hist_mass[clear, g], mass[clear], rtol=1e-9, atol=1e-12)
            # an upper bound of Σ wK̃·d (K̃ the engine’s kernel value, within rounding of K)
            assert np.all(got.hist_dist[clear, g] >= dist[clear] * (1 - 1e-9) - 1e-14)
            np.testing.assert_allclose(got.hist_dist[clear, g], dist[clear], rtol=1e-6, atol=1e-9)
            np.testing.assert_allclose(got.hist_mass[:, g].sum(axis=1), got.kappa[:, g], rtol=1e-12, atol=1e-12)
    assert fused.uniform_weights == (w is None)


def test_select_collects_exactly_the_entries_at_or_above_the_threshold():
    """The branch-free extraction of ``_select``: every width class (tail only, whole chunks, both),
    empty and full chunks, more than four hits in a chunk, the chunk's top bit, ties at the threshold,
    and no write past ``len(row)`` even when every entry is a hit."""
    from nwbound.engine.host._fused import _select

    rng = np.random.default_rng(11)
    for width in (1, 5, 63, 64, 65, 128, 200, 512):
        for dtype in (np.float32, np.float64):
            rows = [rng.standard_normal(width), np.full(width, -1.0), np.full(width, 0.5)]
            top = np.full(width, -1.0)
            top[63::64] = 2.0  # only each chunk's last entry
            dense = np.where(rng.random(width) < 0.5, 1.0, -1.0)  # ~32 hits per chunk
            tie = rng.choice([-0.25, 0.25], width)
            rows += [top, dense, tie]
            for row in rows:
                row = np.ascontiguousarray(row, dtype=dtype)
                threshold = dtype(0.25)
                # Buffers of exactly len(row) inside a guard zone: nothing is written past them.
                cols_guard = np.full(width + 8, -7, dtype=np.intp)
                vals_guard = np.full(width + 8, -7.0, dtype=dtype)
                n = _select(row, threshold, cols_guard[:width], vals_guard[:width])
                want = np.flatnonzero(row >= threshold)
                assert n == want.size
                np.testing.assert_array_equal(cols_guard[:n], want)
                np.testing.assert_array_equal(vals_guard[:n], row[want])
                assert np.all(cols_guard[width:] == -7) and np.all(vals_guard[width:] == -7.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sums_do_not_depend_on_the_block_shape(dtype, monkeypatch):
    """Query blocks of 512 rows and of 128 rows, against tiles of different widths, give the same
    sums (up to summation order), and the larger blocks are the ones taken without pruning."""
    X, y, Q = _clustered(1500, 4, 700, seed=9)
    X, Q = X.astype(dtype), Q.astype(dtype)
    train = TrainingSet.build(X, y, 3, None)
    kern = get_kernel("epanechnikov")
    kwargs = dict(need_dist=True, histogram_bins=8, prune=False, n_jobs=1)
    assert _sums._query_block_rows(Q.shape[0], 1, 1 << 19, pruned=False) == 512
    assert _sums._query_block_rows(Q.shape[0], 1, 1 << 19, pruned=True) == 128
    a = dense_kernel_sums(Q, train, kern, LAMS, **kwargs)  # 512 + 188 rows × 1024 + 476 columns
    monkeypatch.setattr(_sums, "_DENSE_QUERY_BLOCK", 128)
    monkeypatch.setattr(_sums, "_TILE_ELEMENTS", 1 << 16)  # 128-row blocks × 512 columns
    b = dense_kernel_sums(Q, train, kern, LAMS, **kwargs)
    assert (a.kappa[:, -1] > 0).mean() > 0.9
    _assert_sums_close(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.hist_mass, b.hist_mass, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(a.histogram, b.histogram)
    np.testing.assert_array_equal(a.u2_error, b.u2_error)


@pytest.mark.parametrize("kernel", COMPILED_KERNELS)
def test_distance_kernel_values_are_numpys_bits(kernel):
    # The pilot of lipschitz="auto" evaluates K(D/λ) on a whole block of distances (issue 30's
    # cost): the compiled pass must give the numpy profile's very bits, or decline.
    from nwbound.engine.host._fused import distance_kernel_values

    rng = np.random.default_rng(4)
    lam = 0.37
    D = np.concatenate([rng.random((40, 50)) * 0.5, [[0.0, lam, np.nextafter(lam, 0.0), np.nextafter(lam, 1.0)] * 3
                                                     + [0.0] * 38]])
    k = gaussian_kernel(3.0) if kernel == "gaussian" else get_kernel(kernel)
    got = distance_kernel_values(D, lam, k)
    if kernel in ("epanechnikov", "boxcar", "quartic", "triweight"):
        assert got.tobytes() == np.asarray(k(D / lam), dtype=np.float64).tobytes()
        assert np.count_nonzero(got) < got.size  # the block reaches beyond the support
    else:  # profiles of u (tricube, cosine) or exp: numpy's own functions, not re-derived
        assert got is None
    custom = Kernel("epanechnikov", lambda u: np.maximum(1.0 - u * u, 0.0), radius=1.0)
    assert distance_kernel_values(D, lam, custom) is None


def test_pilot_takes_the_compiled_kernel_values_unless_switched_off(monkeypatch):
    # L_r's pilot evaluates its kernel through the engine's compiled pass, and NWBOUND_DISABLE_NUMBA=1
    # (the engine's switch) sends it back to numpy: the same estimate either way.
    from nwbound.assumptions import estimate_lipschitz
    from nwbound.engine.host import _fused

    rng = np.random.default_rng(0)
    X = rng.random((400, 3))
    y = (X[:, 0] + 0.2 * rng.random(400) > 0.6).astype(int)
    calls = []
    real = _fused.distance_kernel_values
    monkeypatch.setattr(_fused, "distance_kernel_values", lambda *a: calls.append(1) or real(*a))
    compiled = estimate_lipschitz(X, y, random_state=0).value
    assert calls
    calls.clear()
    monkeypatch.setenv("NWBOUND_DISABLE_NUMBA", "1")
    assert estimate_lipschitz(X, y, random_state=0).value == compiled
    assert not calls


def test_steepest_slopes_are_the_numpy_routes_bits(monkeypatch):
    """L_r's pilot (``estimate_lipschitz``) takes each evaluation point's steepest slope to a point at
    least h away in one compiled pass (``_fused.steepest_slopes``) instead of about eight numpy passes
    over each distance block: the same float64 operations, so the same estimate bit for bit, ties
    (the first column), rows with no point far enough (−inf, column 0) and float32 blocks (numpy)
    included."""
    from nwbound.assumptions import estimate_lipschitz
    from nwbound.engine.host import _fused

    rng = np.random.default_rng(3)
    D = rng.uniform(0.0, 2.0, (60, 80))
    D[5] = 0.1  # no point far enough
    P = np.round(rng.random((80, 3)), 1)  # ties of |ΔP|
    D[7, 10:13] = 1.0
    got = _fused.steepest_slopes(D, P[:60], P, 0.3)
    diff = np.zeros_like(D)
    for c in range(3):
        np.maximum(diff, np.abs(P[:60, c, None] - P[None, :, c]), out=diff)
    far = D >= 0.3
    slope = np.where(far, diff / np.where(far, D, 1.0), -np.inf)
    arg = slope.argmax(axis=1)
    for a, b in zip(got, (slope[np.arange(60), arg], arg, far.sum(axis=1))):
        np.testing.assert_array_equal(a, b)
    assert got[0][5] == -np.inf and got[1][5] == 0 and got[2][5] == 0
    assert _fused.steepest_slopes(D.astype(np.float32), P[:60], P, 0.3) is None

    X = rng.normal(size=(1500, 4))
    y = (rng.random(1500) < 1.0 / (1.0 + np.exp(-2.0 * X[:, 0] - np.sin(3.0 * X[:, 1])))).astype(int)
    compiled = estimate_lipschitz(X, y, random_state=0)
    monkeypatch.setattr(_fused, "steepest_slopes", lambda *a: None)  # the numpy route
    numpy_route = estimate_lipschitz(X, y, random_state=0)
    assert compiled.value == numpy_route.value and compiled.raw_value == numpy_route.raw_value
    assert repr(compiled.details) == repr(numpy_route.details)
