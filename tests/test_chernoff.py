"""The band-Chernoff interval (``nwbound.bounds._chernoff``) against slow re-statements.

The reference below is written from the test's definition (shared/notes/tighter-bounds.md §2),
independent of the library: for one (query, class) it scans m on a grid, minimises the exact
Chernoff exponent over θ with scipy, and refines the two ends by bisection.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from nwbound.bounds._chernoff import chernoff_interval, group_hoeffding_interval

TOL = 1e-7


# ---------------------------------------------------------------- slow reference
def _min_exponent(f, t_max):
    """min over θ in (0, t_max] of a convex f with f(0) = 0 (Brent on log θ, plus the ends)."""
    res = minimize_scalar(lambda z: f(math.exp(z)), bounds=(math.log(t_max) - 40, math.log(t_max)),
                          method="bounded", options={"xatol": 1e-11})
    return min(res.fun, f(t_max), 0.0)


def reference_interval(s, n, u, l, rho, delta_prime, grid=201):
    """(lower, upper) for one (query, class): groups with counts n, masses u (upper tail)
    and l (lower tail), band radii rho; exact Bernoulli MGF at the band's worst mean."""
    level = math.log(delta_prime / 2)
    n, u, l, rho = (np.asarray(v, float) for v in (n, u, l, rho))

    def upper_rejects(m):  # P(S ≥ s) small: m too small
        hi = np.minimum(m + rho, 1.0)
        return _min_exponent(lambda t: -t * s + np.sum(n * np.log1p(hi * np.expm1(t * u))),
                             700 / u.max()) <= level

    def lower_rejects(m):  # P(S ≤ s) small: m too large
        lo = np.maximum(m - rho, 0.0)
        return _min_exponent(lambda t: t * s + np.sum(n * np.log((1 - lo) + lo * np.exp(-t * l))),
                             700 / max(l.max(), 1e-300)) <= level

    ms = np.linspace(0.0, 1.0, grid)
    accepted = np.array([not (upper_rejects(m) or lower_rejects(m)) for m in ms])
    idx = np.flatnonzero(accepted)
    assert idx.size and np.all(np.diff(idx) == 1), "the confidence set is not an interval"

    def refine(rejects, x_rej, x_acc):
        for _ in range(45):
            mid = 0.5 * (x_rej + x_acc)
            x_rej, x_acc = (mid, x_acc) if rejects(mid) else (x_rej, mid)
        return x_rej

    i, j = idx[0], idx[-1]
    lower = 0.0 if i == 0 else refine(upper_rejects, ms[i - 1], ms[i])
    upper = 1.0 if j == grid - 1 else refine(lower_rejects, ms[j + 1], ms[j])
    return lower, upper


def hoeffding_reference(a, labels, r, beta, delta_prime, n_classes):
    """p̂ ± (β·Σ a r/κ + √(ln(2/δ′)·Σ a²/2)/κ), clipped to [0, 1], written out per class."""
    kappa = a.sum()
    eps = beta * np.sum(a * r) / kappa + math.sqrt(math.log(2 / delta_prime) * np.sum(a * a) / 2) / kappa
    p = np.array([a[labels == c].sum() / kappa for c in range(n_classes)])
    return np.clip(p - eps, 0, 1), np.clip(p + eps, 0, 1)


def per_point(a, labels, r, beta, n_classes):
    """The exact per-point form: one group per point."""
    S = np.array([[a[labels == c].sum() for c in range(n_classes)]])
    k = a.size
    return S, np.ones((1, k)), a[None], a[None], (beta * r)[None]


def histogram(a, labels, r, beta, n_classes, n_bins, w=None):
    """Distance histogram of per-point data: a bin's count Σw/w_max, masses w_max·(max/min
    kernel value in the bin), band radius β·(outer edge). a = w·K."""
    w = np.ones_like(a) if w is None else w
    k = a / w
    edges = np.linspace(0.0, r.max() * (1 + 1e-9) + 1e-12, n_bins + 1)
    b = np.clip(np.searchsorted(edges, r, side="right") - 1, 0, n_bins - 1)
    count = np.zeros(n_bins)
    up = np.zeros(n_bins)
    lo = np.zeros(n_bins)
    for g in range(n_bins):
        sel = b == g
        if sel.any():
            w_max = w[sel].max()
            count[g] = w[sel].sum() / w_max
            up[g] = w_max * k[sel].max()
            lo[g] = w_max * k[sel].min()
    S = np.array([[a[labels == c].sum() for c in range(n_classes)]])
    return S, count[None], up[None], lo[None], (beta * edges[1:])[None]


def random_points(rng, k, n_classes, *, concentrated=False):
    r = rng.uniform(0.0, 1.0, k)
    a = np.maximum(1.0 - r**2, 0.05)
    if concentrated:
        labels = np.where(rng.random(k) < 0.9, 0, rng.integers(0, n_classes, k))
    else:
        labels = rng.integers(0, n_classes, k)
    return a, labels, r


# ---------------------------------------------------------------- (1) reference
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("form", ["per_point", "histogram"])
def test_matches_slow_reference(seed, form):
    rng = np.random.default_rng(seed)
    n_classes = 2 + seed % 2
    a, labels, r = random_points(rng, int(rng.integers(3, 15)), n_classes, concentrated=seed % 2 == 0)
    beta = [0.0, 0.05, 0.3][seed % 3]
    w = rng.uniform(0.5, 2.0, a.size) if form == "histogram" else None
    if w is not None:
        a = a * w
        args = histogram(a, labels, r, beta, n_classes, 4, w)
    else:
        args = per_point(a, labels, r, beta, n_classes)
    delta_prime = [0.05, 0.01, 0.2][seed % 3]
    refs = [reference_interval(args[0][0, c], *(x[0] for x in args[1:]), delta_prime)
            for c in range(n_classes)]
    for engine in ("numpy", "auto"):
        lower, upper = chernoff_interval(*args, delta_prime, tol=TOL, engine=engine)
        for c, (ref_lo, ref_up) in enumerate(refs):
            # contains the reference interval (up to the reference's own θ precision) …
            assert lower[0, c] <= ref_lo + 1e-8 and upper[0, c] >= ref_up - 1e-8
            # … and is within tol of it
            assert lower[0, c] >= ref_lo - TOL - 1e-8 and upper[0, c] <= ref_up + TOL + 1e-8


def test_all_neighbours_agree_is_the_binomial_bound():
    # ρ = 0, k points of kernel value 1 all of class 0: the lower end solves m^k = δ′/2.
    for k in (1, 5, 10, 40):
        lo, up = chernoff_interval(np.array([[k, 0.0]]), np.ones((1, k)), np.ones(k), np.ones(k),
                                   np.zeros(k), 0.05)
        assert lo[0, 0] == pytest.approx(0.025 ** (1 / k), abs=2 * TOL)
        assert lo[0, 0] <= 0.025 ** (1 / k)  # outward
        assert up[0, 0] == 1.0 and lo[0, 1] == 0.0
        assert up[0, 1] == pytest.approx(1 - 0.025 ** (1 / k), abs=2 * TOL)


# ---------------------------------------------------------------- (2) never wider than Hoeffding
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**31 - 1),
    k=st.integers(1, 40),
    n_classes=st.integers(2, 5),
    beta=st.sampled_from([0.0, 0.01, 0.1, 1.0, 10.0]),
    delta_prime=st.sampled_from([0.001, 0.01, 0.05, 0.3]),
)
def test_per_point_never_wider_than_hoeffding(seed, k, n_classes, beta, delta_prime):
    rng = np.random.default_rng(seed)
    a, labels, r = random_points(rng, k, n_classes, concentrated=seed % 2 == 0)
    args = per_point(a, labels, r, beta, n_classes)
    lower, upper = chernoff_interval(*args, delta_prime, tol=TOL)
    h_lo, h_up = hoeffding_reference(a, labels, r, beta, delta_prime, n_classes)
    assert np.all(lower[0] >= h_lo - TOL) and np.all(upper[0] <= h_up + TOL)
    g_lo, g_up = group_hoeffding_interval(*args, delta_prime)
    np.testing.assert_allclose(g_lo[0], h_lo, atol=1e-12)
    np.testing.assert_allclose(g_up[0], h_up, atol=1e-12)


# ---------------------------------------------------------------- (3) loosening monotonicity
def _contains(outer, inner, slack=TOL):
    return np.all(outer[0] <= inner[0] + slack) and np.all(outer[1] >= inner[1] - slack)


@pytest.mark.parametrize("seed", range(8))
def test_loosening_never_narrows(seed):
    rng = np.random.default_rng(100 + seed)
    n_classes = 2 + seed % 3
    a, labels, r = random_points(rng, 12, n_classes, concentrated=seed % 2 == 0)
    S, N, U, L, R = per_point(a, labels, r, 0.1, n_classes)
    base = chernoff_interval(S, N, U, L, R, 0.05)
    g = rng.integers(0, 12)
    bigger_u, smaller_l, wider = U.copy(), L.copy(), R.copy()
    bigger_u[0, g] *= 1.5
    smaller_l[0, g] *= 0.5
    wider[0, g] += 0.2
    assert _contains(chernoff_interval(S, N, bigger_u, L, R, 0.05), base)
    assert _contains(chernoff_interval(S, N, U, smaller_l, R, 0.05), base)
    assert _contains(chernoff_interval(S, N, U, L, wider, 0.05), base)
    infinite = R.copy()
    infinite[0, g] = np.inf
    assert _contains(chernoff_interval(S, N, U, L, infinite, 0.05), base)


@pytest.mark.parametrize("n_bins", [1, 4, 16])
@pytest.mark.parametrize("weighted", [False, True])
def test_histogram_never_narrower_than_exact(n_bins, weighted):
    rng = np.random.default_rng(7 + n_bins)
    n_queries, k, n_classes = 30, 50, 3
    exact, hist = [], []
    for q in range(n_queries):  # one row per query, solved in one call below
        a, labels, r = random_points(rng, k, n_classes, concentrated=q % 2 == 0)
        w = rng.uniform(0.2, 3.0, k) if weighted else None
        if w is not None:
            a = a * w
        exact.append(per_point(a, labels, r, 0.2, n_classes))
        hist.append(histogram(a, labels, r, 0.2, n_classes, n_bins, w))
    exact = chernoff_interval(*(np.concatenate(parts) for parts in zip(*exact)), 0.05)
    hist_args = [np.concatenate(parts) for parts in zip(*hist)]
    hist = chernoff_interval(*hist_args, 0.05)
    assert np.all(hist[0] <= exact[0] + TOL) and np.all(hist[1] >= exact[1] - TOL)
    # … and the histogram form is still never wider than Hoeffding on the same groups
    h_lo, h_up = group_hoeffding_interval(*hist_args, 0.05)
    assert np.all(hist[0] >= h_lo - TOL) and np.all(hist[1] <= h_up + TOL)


def test_histogram_approaches_exact_with_more_bins():
    rng = np.random.default_rng(3)
    a, labels, r = random_points(rng, 400, 3, concentrated=True)
    exact = chernoff_interval(*per_point(a, labels, r, 0.05, 3), 0.05)
    widths = [np.mean(h[1] - h[0]) for h in
              (chernoff_interval(*histogram(a, labels, r, 0.05, 3, b), 0.05) for b in (2, 8, 64))]
    assert widths[0] >= widths[1] >= widths[2] >= np.mean(exact[1] - exact[0]) - TOL
    assert widths[2] <= 1.1 * np.mean(exact[1] - exact[0])


# ---------------------------------------------------------------- (4) empirical coverage
def _coverage_data(rng, n_classes, k, repeats, beta):
    """One fixed design (k points at distances r_i), class probabilities in the Lipschitz band
    around the query's p (pushed to the band's edge, the worst case), fresh labels per repeat."""
    p_query = rng.dirichlet(np.full(n_classes, 0.5))
    r = rng.uniform(0.0, 1.0, k)
    a = np.maximum(1.0 - r**2, 0.0) + 0.01
    vertex = np.eye(n_classes)[rng.integers(0, n_classes, k)]
    t = np.minimum(beta * r / 2, 1.0)  # |p_c(x_i) − p_c(y)| ≤ t_i·|e − p| ≤ β r_i (L1 ≤ 2 t_i)
    p_points = (1 - t)[:, None] * p_query + t[:, None] * vertex
    cum = np.cumsum(p_points, axis=1)
    labels = (rng.random((repeats, k, 1)) > cum[None, :, :]).sum(axis=2).clip(0, n_classes - 1)
    S = np.stack([(a * (labels == c)).sum(axis=1) for c in range(n_classes)], axis=1)
    return p_query, a, r, S


@pytest.mark.slow
@pytest.mark.parametrize("n_classes", [2, 5])
@pytest.mark.parametrize("form", ["per_point", "histogram"])
def test_empirical_coverage(n_classes, form):
    rng = np.random.default_rng(11 + n_classes)
    delta = 0.2  # large, so that a violation rate above δ would be visible
    repeats, k, beta = 4000, 20, 0.1
    delta_prime = delta / n_classes if n_classes > 2 else delta
    for design in range(3):
        p_query, a, r, S = _coverage_data(rng, n_classes, k, repeats, beta)
        if form == "per_point":
            N, U, L, R = np.ones((repeats, k)), a, a, beta * r
        else:  # 4 distance bins; masses at the bins' extreme kernel values
            edges = np.linspace(0, 1.0 + 1e-9, 5)
            b = np.searchsorted(edges, r, side="right") - 1
            N = np.bincount(b, minlength=4).astype(float)[None].repeat(repeats, 0)
            U = np.array([a[b == g].max() if (b == g).any() else 1.0 for g in range(4)])
            L = np.array([a[b == g].min() if (b == g).any() else 0.0 for g in range(4)])
            R = beta * edges[1:]
        lower, upper = chernoff_interval(S, N, U, L, R, delta_prime)
        missed = (p_query < lower - 1e-12) | (p_query > upper + 1e-12)
        violations = missed.any(axis=1)
        rate = violations.mean()
        assert rate <= delta + 3 * math.sqrt(delta * (1 - delta) / repeats), rate


# ---------------------------------------------------------------- (5) edge cases, engines, bad input
def test_edge_cases():
    k = 4
    S = np.array([[0.0, 0.0], [0.0, 2.0], [2.0, 0.0], [1.0, 1.0]])
    N = np.full((4, k), 1.0)
    N[0] = 0.0  # κ = 0 and no points
    U = np.full(k, 0.5)
    lower, upper = chernoff_interval(S, N, U, U, np.zeros(k), 0.1)
    assert np.all(lower[0] == 0) and np.all(upper[0] == 1)  # κ = 0: vacuous
    assert lower[1, 0] == 0.0 and upper[1, 1] == 1.0  # S = 0 → lower 0; S = κ → upper 1
    assert lower[2, 1] == 0.0 and upper[2, 0] == 1.0
    assert np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))
    p_hat = S[1:] / S[1:].sum(axis=1, keepdims=True)
    assert np.all(lower[1:] <= p_hat) and np.all(p_hat <= upper[1:])
    # groups with zero count, p exactly 0 or 1 in the band, ρ = inf
    N2 = np.array([[3.0, 0.0, 2.0]])
    for rho in ([0.0, 0.0, 0.0], [0.0, np.inf, 5.0], [np.inf, np.inf, np.inf]):
        lo, up = chernoff_interval(np.array([[2.0, 0.5]]), N2, [0.5, 7.0, 0.5], [0.5, 0.0, 0.5], rho, 0.05)
        assert np.all((0 <= lo) & (lo <= up) & (up <= 1))
    lo, up = chernoff_interval(np.array([[2.0, 0.5]]), N2, [0.5, 7.0, 0.5], [0.5, 0.0, 0.5],
                               [np.inf] * 3, 0.05)
    assert np.all(lo == 0) and np.all(up == 1)  # no assumption at all: the band is [0, 1]


def test_large_masses_and_tiny_delta_stay_finite():
    rng = np.random.default_rng(5)
    n, k = 200, 10
    a = rng.uniform(1e-6, 1e4, (n, k))
    labels = rng.integers(0, 3, (n, k))
    S = np.stack([(a * (labels == c)).sum(1) for c in range(3)], 1)
    lo, up = chernoff_interval(S, np.ones((n, k)), a, a, rng.uniform(0, 0.3, (n, k)), 1e-12)
    p_hat = S / S.sum(1, keepdims=True)
    assert np.all(np.isfinite(lo)) and np.all(np.isfinite(up))
    assert np.all((0 <= lo) & (lo <= p_hat) & (p_hat <= up) & (up <= 1))


def test_numba_and_numpy_agree():
    pytest.importorskip("numba")
    rng = np.random.default_rng(9)
    n, B, C = 300, 16, 4
    count = rng.poisson(5.0, (n, B)).astype(float) * rng.uniform(0.5, 1.0, (n, B))
    U = np.sort(rng.uniform(0.1, 1.0, B))[::-1].copy()
    L = 0.8 * U
    share = rng.dirichlet(np.full(C, 0.4), n)
    S = (count * (0.9 * U)).sum(1, keepdims=True) * share
    R = np.linspace(0.01, 0.2, B)
    a = chernoff_interval(S, count, U, L, R, 0.01, engine="numpy")
    b = chernoff_interval(S, count, U, L, R, 0.01, engine="numba")
    # Same algorithm: equal up to rounding, unless rounding flips one decision near the
    # threshold (then both are still outward-rounded ends within tol of the exact end).
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, atol=TOL)
        assert np.mean(np.abs(x - y) <= 1e-9) >= 0.99


@pytest.mark.parametrize(
    "change, name",
    [
        (dict(class_sums=np.ones(3)), "class_sums"),
        (dict(class_sums=-np.ones((2, 2))), "class_sums"),
        (dict(count=np.ones((3, 4))), "count"),
        (dict(count=-np.ones((2, 4))), "count"),
        (dict(mass_upper=np.ones(5)), "mass_upper"),
        (dict(mass_upper=np.full(4, np.nan)), "mass_upper"),
        (dict(mass_lower=-np.ones(4)), "mass_lower"),
        (dict(mass_lower=np.full(4, 2.0)), "mass_lower"),
        (dict(band_radius=np.full((2, 3), 0.1)), "band_radius"),
        (dict(band_radius=np.full(4, -0.1)), "band_radius"),
        (dict(delta_prime=0.0), "delta_prime"),
        (dict(delta_prime=1.0), "delta_prime"),
        (dict(mass_upper=np.full(4, 0.1), mass_lower=np.full(4, 0.1)), "mass_upper"),
        (dict(engine="fast"), "engine"),
        (dict(tol=0.7), "tol"),
    ],
)
def test_bad_input_names_the_parameter(change, name):
    args = dict(class_sums=np.full((2, 2), 1.0), count=np.ones((2, 4)), mass_upper=np.ones(4),
                mass_lower=np.full(4, 0.5), band_radius=np.full(4, 0.1), delta_prime=0.05)
    args.update(change)
    with pytest.raises(ValueError, match=name):
        chernoff_interval(**args)


def test_two_classes_mirror_in_the_exact_form():
    rng = np.random.default_rng(21)
    n, k = 200, 12
    a = rng.uniform(0.05, 1.0, (n, k))
    labels = rng.random((n, k)) < rng.uniform(0, 1, (n, 1))
    S = np.stack([(a * ~labels).sum(1), (a * labels).sum(1)], 1)
    lo, up = chernoff_interval(S, np.ones((n, k)), a, a, rng.uniform(0, 0.1, (n, k)), 0.05)
    np.testing.assert_allclose(lo[:, 0], 1 - up[:, 1], atol=1e-9)
    np.testing.assert_allclose(up[:, 0], 1 - lo[:, 1], atol=1e-9)
