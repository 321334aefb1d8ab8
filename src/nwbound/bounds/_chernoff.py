"""The band-Chernoff confidence interval for a class probability.

For one query ``y`` and class ``c`` the observed statistic is
``S = Σ_i a_i 1{c_i = c}`` with ``a_i ≥ 0`` the (weighted) kernel values. The
labels are independent given the inputs, and under the Lipschitz (or margin)
assumption the mean of each label lies in the band
``[m − ρ_i, m + ρ_i] ∩ [0, 1]`` around ``m = p_c(y)``. The test of
``H0: p_c(y) = m`` bounds both tails of ``S`` with the exact Bernoulli
moment-generating function at the worst mean inside each band:

* upper tail (rejects small ``m``)::

      min_{θ>0}  −θS + Σ_g n_g log(1 + hi_g(m)(e^{θ u_g} − 1))  ≤  log(δ′/2)

* lower tail (rejects large ``m``)::

      min_{θ>0}   θS + Σ_g n_g log(1 + lo_g(m)(e^{−θ l_g} − 1))  ≤  log(δ′/2)

with ``hi_g = min(1, m + ρ_g)``, ``lo_g = max(0, m − ρ_g)``, ``n_g`` the
(possibly fractional) number of points of group ``g``, ``u_g`` an upper and
``l_g`` a lower bound on their ``a_i``. The points are grouped so that the
regular classifier can pass a histogram over distance (``B`` groups per query)
and the localized and dyadic classifiers one group per point (``count = 1``).
The proof, and why fractional counts are valid, is in the user guide
(``docs/source/user_guide/chernoff.md``). With exact per-bin kernel and
distance masses the regular and dyadic classifiers use the tighter split form
of :mod:`._chernoff_binned` instead; this grouped form remains for statistics
without them (the GPU engines).

The set of ``m`` that neither tail rejects is an interval containing
``p̂ = S/κ``; :func:`chernoff_interval` finds its two ends by a bracketing
search that keeps a point *certified* rejected (by an explicit θ) on the
outer side and reports that point, so the interval returned always contains
the exact confidence set. The θ-minimisation is a few safeguarded Newton
steps on a convex function, warm-started from the Hoeffding point, and the
search starts from the Hoeffding end, so the result is never wider than the
Hoeffding interval on the same groups.

The search in ``m`` (:func:`_bracket`; compiled, :func:`_bracket_pair`) and the θ-profile
(:func:`_profile`) take the exponent as an argument: the split form of :mod:`._chernoff_binned`
runs the same search on its own exponent.

The lower tail is the upper tail of the complementary labels: with
``S′ = Σ_g n_g l_g − S`` and ``m′ = 1 − m`` its exponent is
``−θS′ + Σ_g n_g log(1 + hi_g(m′)(e^{θ l_g} − 1))`` (the identity
``log(1 + p(e^{−x} − 1)) = −x + log(1 + (1 − p)(e^x − 1))``). One solver
therefore serves both ends.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .._numba_cache import numba_switched_off
from .._validation import check_open_unit, check_positive

__all__ = ["chernoff_interval", "group_hoeffding_interval"]

# θ·mass is kept at or below this: e^{−700} is still a normal float64, so
# log(p + (1 − p)e^{−x}) never sees 0, and the cancellation in −θS + θΣn·u
# stays far below the test threshold.
_MAX_EXPONENT = 700.0
# Relative slack on the mass contract (Σ n·u ≥ κ ≥ Σ n·l) for rounding in the caller's sums.
_CONTRACT_RTOL = 1e-9
# Newton steps in m before the search falls back to plain bisection, and the cap on all steps.
_NEWTON_M_STEPS = 12
_MAX_STEPS = 80
# θ-minimisation: at most this many Newton steps per probe; a pair stops when the Newton
# decrement φ′²/φ″ is below _THETA_DECREMENT or below _THETA_MARGIN × |φ − log(δ′/2)|.
_THETA_STEPS = 30
_THETA_DECREMENT = 1e-12
_THETA_MARGIN = 0.1
# Pairs solved together: bounds the (pairs × groups) temporaries of the numpy route.
_BLOCK_PAIRS = 4096
# The compiled route (numba): False forces numpy, as does NWBOUND_DISABLE_NUMBA=1.
USE_NUMBA = True
_NUMBA_MODULE = None  # the compiled route once built, False when numba is missing


def _as_float_array(value: object, name: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real numbers: {exc}") from None
    return arr


def _group_array(value: object, name: str, shape: tuple[int, int], *, allow_inf: bool = False) -> np.ndarray:
    """A per-group array of shape (n, B) or (B,), broadcast to (n, B), finite (or +inf) and ≥ 0."""
    arr = _as_float_array(value, name)
    if arr.shape not in (shape, shape[1:]):
        raise ValueError(
            f"{name} must have shape {shape} (per query and group) or {shape[1:]} (per group), "
            f"got {arr.shape}."
        )
    if np.isnan(arr).any() or (not allow_inf and np.isinf(arr).any()):
        allowed = "finite or +inf" if allow_inf else "finite"
        raise ValueError(f"{name} must be {allowed}; it contains NaN or an infinite value.")
    if (arr < 0).any():
        raise ValueError(f"{name} must be >= 0; its smallest value is {arr.min()!r}.")
    return np.broadcast_to(arr, shape)


def _check_inputs(class_sums: object, count: object, mass_upper: object, mass_lower: object,
                  band_radius: object, delta_prime: object, tol: object, sum_error: float = 0.0) -> tuple:
    S = _as_float_array(class_sums, "class_sums")
    if S.ndim != 2:
        raise ValueError(f"class_sums must be a 2-D array (queries, classes), got shape {S.shape}.")
    if not np.isfinite(S).all() or (S < 0).any():
        raise ValueError("class_sums must be finite and >= 0 (sums of non-negative kernel values).")
    N = _as_float_array(count, "count")
    if N.ndim != 2 or N.shape[0] != S.shape[0]:
        raise ValueError(
            f"count must have shape (n_queries, n_groups) = ({S.shape[0]}, B) to match class_sums, "
            f"got {N.shape}."
        )
    if not np.isfinite(N).all() or (N < 0).any():
        raise ValueError("count must be finite and >= 0 (the number of points in each group).")
    shape = N.shape
    U = _group_array(mass_upper, "mass_upper", shape)
    L = _group_array(mass_lower, "mass_lower", shape)
    R = _group_array(band_radius, "band_radius", shape, allow_inf=True)
    if (L > U).any():
        raise ValueError("mass_lower must be <= mass_upper in every group (a lower and an upper bound on a_i).")
    d = check_open_unit(delta_prime, "delta_prime")
    tol = check_positive(tol, "tol")
    if tol >= 0.5:
        raise ValueError(f"tol must be < 0.5 (the precision of the interval ends), got {tol!r}.")
    kappa = S.sum(axis=1)
    cover_u = np.einsum("ij,ij->i", N, U)
    cover_l = np.einsum("ij,ij->i", N, L)
    # The masses bound the exact sums; class sums within 1 ± ρ of them (sum_error) may be off by ρκ.
    slack = (_CONTRACT_RTOL + sum_error) * kappa + 1e-300
    if (cover_u < kappa - slack).any():
        raise ValueError(
            "Σ_g count·mass_upper must be >= κ = Σ_c class_sums for every query (mass_upper bounds "
            "each point's kernel value from above and count covers every point); it is smaller for "
            f"{int((cover_u < kappa - slack).sum())} queries."
        )
    if (cover_l > kappa + slack).any():
        raise ValueError(
            "Σ_g count·mass_lower must be <= κ = Σ_c class_sums for every query (mass_lower bounds "
            "each point's kernel value from below); it is larger for "
            f"{int((cover_l > kappa + slack).sum())} queries."
        )
    return S, N, np.ascontiguousarray(U), np.ascontiguousarray(L), np.ascontiguousarray(R), d, tol, kappa


def _evaluate(S: np.ndarray, data: tuple, m: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, ...]:
    """The upper-tail exponent at (m, θ) per pair for the groups ``data = (N, M, R)`` (each (P, B)), and
    the derivatives the search needs.

    Returns ``φ``, ``∂φ/∂θ``, ``∂²φ/∂θ²``, ``∂φ/∂m`` and ``A = S − Σ n·u·hi(m)``
    (``= −∂φ/∂θ`` at θ = 0; ``A ≤ 0`` means ``m`` is not rejected for any θ).
    """
    N, M, R = data
    hi = np.minimum(m[:, None] + R, 1.0)
    x = theta[:, None] * M
    ex = np.exp(-x)
    # hi + (1 − hi)e^{−x}: a sum of two terms ≥ 0 (no cancellation), ≥ e^{−700} > 0.
    den = hi + (1.0 - hi) * ex
    psi = x + np.log(den)  # log(1 + hi(e^x − 1)), stable for large x (absolute error ~ eps·x)
    q = hi / den  # the tilted label mean
    nm = N * M
    phi = -theta * S + np.einsum("ij,ij->i", N, psi)
    d1 = -S + np.einsum("ij,ij->i", nm, q)
    d2 = np.einsum("ij,ij->i", nm * M, q * (1.0 - q))
    dm = np.einsum("ij,ij->i", N * (hi < 1.0), (1.0 - ex) / den)
    a = S - np.einsum("ij,ij->i", nm, hi)
    return phi, d1, d2, dm, a


def _next_theta(theta: np.ndarray, d1: np.ndarray, d2: np.ndarray, t_lo: np.ndarray | float,
                t_hi: np.ndarray | float, t_max: np.ndarray) -> np.ndarray:
    """Newton step on the convex θ ↦ φ, kept inside the bracket (t_lo, t_hi) of the minimiser
    (bisection inside it, or ×4 while no upper end is known), and at most t_max."""
    with np.errstate(divide="ignore", invalid="ignore"):
        newton = theta - d1 / d2
    grow = np.minimum(4.0 * np.maximum(theta, t_lo), t_max)
    fallback = np.where(np.isfinite(t_hi), 0.5 * (t_lo + t_hi), grow)
    ok = np.isfinite(newton) & (newton > t_lo) & (newton < t_hi)
    return np.minimum(np.where(ok, newton, fallback), t_max)


def _profile(S: np.ndarray, data: tuple, m: np.ndarray, theta: np.ndarray, t_max: np.ndarray,
             log_level: float, evaluate: Callable = _evaluate) -> tuple[np.ndarray, ...]:
    """``g(m) = min_θ φ(m, θ) − log(δ′/2)`` (from above), ``∂g/∂m`` and the best θ, per pair.

    ``evaluate(S, data, m, θ)`` is the exponent (:func:`_evaluate`, or the split form's), ``data``
    its per-pair arrays (first axis the pairs).

    Safeguarded Newton on the convex θ ↦ φ from the warm start ``theta``. A pair
    stops once the Newton decrement ``φ′²/φ″`` (about twice the gap to the
    minimum) is negligible, or small next to its distance from the threshold
    (then further steps cannot change the decision), or θ reaches ``t_max``.
    Every φ is evaluated at an explicit θ, so ``g ≤ 0`` certifies rejection.
    """
    P = S.shape[0]
    best = np.full(P, np.inf)
    grad = np.zeros(P)
    th_best = theta.copy()
    t_lo = np.zeros(P)
    t_hi = np.full(P, np.inf)
    amass = np.zeros(P)
    th = theta.copy()
    idx = np.arange(P)
    for it in range(_THETA_STEPS):
        phi, d1, d2, dm, a = evaluate(S[idx], tuple(d[idx] for d in data), m[idx], th[idx])
        if it == 0:
            amass[idx] = a
        better = phi < best[idx]
        sel = idx[better]
        best[sel], grad[sel], th_best[sel] = phi[better], dm[better], th[sel]
        t_lo[idx] = np.where(d1 < 0, np.maximum(t_lo[idx], th[idx]), t_lo[idx])
        t_hi[idx] = np.where(d1 >= 0, np.minimum(t_hi[idx], th[idx]), t_hi[idx])
        with np.errstate(divide="ignore", invalid="ignore"):
            decrement = np.where(d2 > 0, d1 * d1 / d2, np.inf)
        margin = np.abs(best[idx] - log_level)
        more = (
            (amass[idx] > 0)
            & (decrement > _THETA_DECREMENT)
            & (decrement > _THETA_MARGIN * margin)
            & ~((d1 < 0) & (th[idx] >= t_max[idx]))
        )
        nxt = _next_theta(th[idx], d1, d2, t_lo[idx], t_hi[idx], t_max[idx])
        th[idx] = nxt
        idx = idx[more]
        if idx.size == 0:
            break
    g = np.where(amass > 0, best - log_level, np.inf)
    return g, grad, th_best


def _left_end_block(S: np.ndarray, N: np.ndarray, M: np.ndarray, R: np.ndarray, right: np.ndarray,
                    log_level: float, tol: float) -> np.ndarray:
    """Left end of the upper-tail confidence set for a block of pairs (numpy).

    ``S`` (P,), ``N``, ``M``, ``R`` (P, B), ``right`` (P,) a point known not
    rejected. Returns the largest point found with a θ certifying its rejection
    (or 0), within ``tol`` of the first point judged not rejected.
    """
    P = S.shape[0]
    nm = N * M
    m1 = nm.sum(axis=1)
    v = (nm * M).sum(axis=1)
    with np.errstate(invalid="ignore"):
        rho_mass = np.where(nm > 0, nm * R, 0.0).sum(axis=1)
    theta_max = _MAX_EXPONENT / np.maximum(M.max(axis=1, initial=0.0), 1e-300)
    theta_min = 1e-12 * theta_max
    a = np.zeros(P)
    b = right.copy()
    # S = 0 (or no mass): A ≤ 0 at every m, nothing is rejected.
    done = (S <= 0) | (v <= 0) | (b <= 0)
    b[done] = 0.0
    # Start from the Hoeffding end on the same groups; certify it with θ* = 4A/V.
    with np.errstate(divide="ignore", invalid="ignore"):
        m_h = (S - rho_mass - np.sqrt(v * (-log_level) / 2.0)) / m1
    m_h = np.where(np.isfinite(m_h) & ~done, np.clip(m_h, 0.0, b), 0.0)
    theta = np.full(P, 1.0)
    idx = np.flatnonzero(~done)
    if idx.size:
        hi = np.minimum(m_h[idx, None] + R[idx], 1.0)
        amass = S[idx] - (nm[idx] * hi).sum(axis=1)
        t_star = np.clip(4.0 * amass / v[idx], theta_min[idx], theta_max[idx])
        theta[idx] = t_star
        phi, d1, d2, dm, _ = _evaluate(S[idx], (N[idx], M[idx], R[idx]), m_h[idx], t_star)
        ok = (m_h[idx] > 0) & (phi <= log_level)
        a[idx[ok]] = m_h[idx[ok]]
        # First probe: a Newton step in m from the certified Hoeffding end (θ* is not the
        # minimiser, so the step is short but safe); where no end was certified, m = 0.
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = m_h[idx] - (phi - log_level) / dm
        aa, bb = a[idx], b[idx]
        good = ok & (dm > 0) & np.isfinite(newton) & (newton > aa) & (newton < bb)
        first = np.where(good, newton, 0.5 * (aa + bb))
        first = np.where(bb - aa > tol, np.clip(first, aa + 0.5 * tol, bb - 0.5 * tol), first)
        theta[idx] = np.where(ok, _next_theta(t_star, d1, d2, 0.0, np.inf, theta_max[idx]), t_star)
        theta[idx] = np.maximum(theta[idx], theta_min[idx])
        m_first = np.zeros(P)
        m_first[idx] = np.where(ok, first, 0.0)
    else:
        m_first = np.zeros(P)
    return _bracket(S, (N, M, R), _evaluate, a, b, m_first, theta, theta_max, log_level, tol)


def _bracket(S: np.ndarray, data: tuple, evaluate: Callable, a: np.ndarray, b: np.ndarray, m: np.ndarray,
             theta: np.ndarray, theta_max: np.ndarray, log_level: float, tol: float,
             above: np.ndarray | None = None, below: np.ndarray | None = None) -> np.ndarray:
    """The bracketed search in ``m`` of every exponent (numpy; :func:`_bracket_pair` is the compiled one).

    Per pair, ``a`` is certified rejected (0, or a level rejected at an explicit θ), ``b`` judged not
    rejected and ``m`` the first probe, ``theta`` its warm start (at least ``1e-12·theta_max``).
    Each probe's θ-profile (:func:`_profile` with ``evaluate`` on ``data``) moves ``a`` up where it
    certifies rejection, else ``b`` down; the next probe is a Newton step in ``m`` (the first
    ``_NEWTON_M_STEPS``) kept ``tol/2`` inside the bracket, or its midpoint. A pair stops when
    ``b − a ≤ tol``, when ``S ≤ 0``, or (``above``/``below``, default never) once ``a > above`` or
    ``b ≤ below``. Returns ``a`` (updated in place, as are ``b``, ``m`` and ``theta``).
    """
    n = S.shape[0]
    above = np.full(n, np.inf) if above is None else above
    below = np.full(n, -np.inf) if below is None else below
    theta_min = 1e-12 * theta_max
    half = 0.5 * tol
    active = np.flatnonzero((S > 0) & (b - a > tol) & ~(a > above) & ~(b <= below))
    for step in range(_MAX_STEPS):
        if active.size == 0:
            break
        x = m[active]
        g, gm, th = _profile(S[active], tuple(d[active] for d in data), x, theta[active], theta_max[active],
                             log_level, evaluate)
        theta[active] = np.maximum(th, theta_min[active])
        rejected = g <= 0
        aa = np.where(rejected, x, a[active])
        bb = np.where(rejected, b[active], x)
        a[active], b[active] = aa, bb
        # Next probe: Newton in m (the envelope derivative ∂φ/∂m at the best θ),
        # kept at least tol/2 inside the bracket so that it straddles the root.
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = x - g / gm
        mid = 0.5 * (aa + bb)
        use_newton = (step < _NEWTON_M_STEPS) & (gm > 0) & np.isfinite(newton) & (newton > aa) & (newton < bb)
        nxt = np.where(use_newton, newton, mid)
        m[active] = np.where(bb - aa > tol, np.clip(nxt, aa + half, bb - half), mid)
        active = active[(bb - aa > tol) & ~(aa > above[active]) & ~(bb <= below[active])]
    return a


def _numba_route() -> "_NumbaRoute | None":
    global _NUMBA_MODULE
    if not USE_NUMBA or numba_switched_off():
        return None
    if _NUMBA_MODULE is None:  # import numba lazily, once
        try:
            _NUMBA_MODULE = _NumbaRoute()
        except ImportError:
            _NUMBA_MODULE = False
    return _NUMBA_MODULE or None


def _left_ends(S: np.ndarray, rows: np.ndarray, N: np.ndarray, M: np.ndarray, R: np.ndarray,
               right: np.ndarray, log_level: float, tol: float, engine: "_NumbaRoute | None") -> np.ndarray:
    """Left ends for pairs (S[k], query rows[k]) in blocks."""
    out = np.zeros(S.shape[0])
    if engine is not None:
        engine.left_ends(S, rows.astype(np.intp), N, M, R, right, log_level, tol, out)
        return out
    for start in range(0, S.shape[0], _BLOCK_PAIRS):
        sl = slice(start, start + _BLOCK_PAIRS)
        q = rows[sl]
        out[sl] = _left_end_block(S[sl], N[q], M[q], R[q], right[sl], log_level, tol)
    return out


def chernoff_interval(
    class_sums: np.ndarray,
    count: np.ndarray,
    mass_upper: np.ndarray,
    mass_lower: np.ndarray,
    band_radius: np.ndarray,
    delta_prime: float,
    *,
    tol: float = 1e-7,
    engine: str = "auto",
    sum_error: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Band-Chernoff confidence interval of every class probability of every query.

    Each class's interval is the set of ``m`` that neither Chernoff tail test
    (exact Bernoulli moment-generating function, label means in the band
    ``[m − ρ_g, m + ρ_g] ∩ [0, 1]``) rejects at level ``δ′/2``; see the module
    docstring and the user guide for the test and its proof. The ends are
    found by a bracketing search and rounded outward, so the interval returned
    contains the exact confidence set and is at most ``tol`` wider at each end.

    Parameters
    ----------
    class_sums : ndarray of shape (n, C)
        ``S_c = Σ_i a_i 1{c_i = c}`` with ``a_i ≥ 0`` the (weighted) kernel values;
        ``κ = Σ_c S_c``.
    count : ndarray of shape (n, B)
        Number of points in each group (≥ 0, may be fractional: ``Σ w_i / w_max``).
    mass_upper : ndarray of shape (n, B) or (B,)
        A value ≥ ``a_i`` of every point of the group (the upper tail uses it).
    mass_lower : ndarray of shape (n, B) or (B,)
        A value in ``[0, a_i]`` for every point of the group (the lower tail uses it).
    band_radius : ndarray of shape (n, B) or (B,)
        ``ρ_g ≥ β·r_i`` for every point of the group (``β = L`` or ``1/γ``); ``+inf``
        allowed (the band is then ``[0, 1]``).
    delta_prime : float
        Failure probability per class, in (0, 1); each tail gets ``δ′/2``.
    tol : float, default=1e-7
        Precision of each end: it lies at most ``tol`` outside the exact end.
    engine : {"auto", "numba", "numpy"}, default="auto"
        ``"auto"`` uses the compiled route when numba is installed (the ``fast`` extra).
    sum_error : float, default=0
        ``ρ`` in [0, 1/2): ``class_sums`` are only known within a factor ``1 ± ρ`` of the exact
        sums (the masses and counts bound each point as they are). The exponent of a lower end
        only grows with ``S``, so it is certified with ``S/(1 + ρ)``, and an upper end with
        ``Σ count·mass_lower − S/(1 − ρ)``: the interval contains the one of the exact sums.

    Returns
    -------
    lower, upper : ndarray of shape (n, C)
        In ``[0, 1]`` with ``lower ≤ S/κ ≤ upper``; ``(0, 1)`` where ``κ = 0``.

    Raises
    ------
    ValueError
        Shape mismatch, negative or non-finite sums, counts or masses,
        ``mass_lower > mass_upper``, ``Σ count·mass_upper < κ`` or
        ``Σ count·mass_lower > κ`` (the groups must cover the points),
        ``delta_prime`` outside (0, 1) or ``sum_error`` outside [0, 1/2).

    Examples
    --------
    Ten neighbours at kernel value 1, all of class 0, with no bias (ρ = 0):

    >>> import numpy as np
    >>> from nwbound.bounds._chernoff import chernoff_interval
    >>> S = np.array([[10.0, 0.0]])
    >>> lo, up = chernoff_interval(S, np.ones((1, 10)), np.ones(10), np.ones(10),
    ...                            np.zeros(10), 0.05)
    >>> print(np.round(lo, 4), np.round(up, 4))
    [[0.6915 0.    ]] [[1.     0.3085]]

    The class-0 lower end is the exact binomial one: ``m^10 = 0.025``.

    >>> round(0.025 ** 0.1, 4)
    0.6915
    """
    rel = float(sum_error)
    if not 0.0 <= rel < 0.5:
        raise ValueError(f"sum_error must be in [0, 0.5) (a relative error bound of the sums), got {sum_error!r}.")
    S, N, U, L, R, d, tol, kappa = _check_inputs(
        class_sums, count, mass_upper, mass_lower, band_radius, delta_prime, tol, rel
    )
    if engine not in ("auto", "numba", "numpy"):
        raise ValueError(f"engine must be 'auto', 'numba' or 'numpy', got {engine!r}.")
    route = None if engine == "numpy" else _numba_route()
    if engine == "numba" and route is None:
        from ..utils import install_hint

        raise ValueError(f"engine='numba' needs numba: {install_hint('fast')}; or use engine='auto'.")
    n, C = S.shape
    lower = np.zeros((n, C))
    upper = np.ones((n, C))
    live = kappa > 0
    if not live.any():
        return lower, upper
    rows_q, cls = np.nonzero(np.broadcast_to(live[:, None], (n, C)))
    s = S[rows_q, cls]
    p_hat = np.clip(s / kappa[rows_q], 0.0, 1.0)
    log_level = math.log(d / 2.0)
    s_comp = np.einsum("ij,ij->i", N, L)[rows_q]
    if rel > 0:  # each end certified with the sum that rejects least (1 + 2⁻⁵²: the divisions' rounding)
        s_comp = np.maximum(s_comp - s / (1.0 - rel) * (1.0 + 2.0**-52), 0.0)
        s = s / (1.0 + rel) / (1.0 + 2.0**-52)
    else:
        s_comp = s_comp - s
    lo = _left_ends(s, rows_q, N, U, R, p_hat, log_level, tol, route)
    # Lower tail = upper tail of the complementary labels at m′ = 1 − m.
    up = 1.0 - _left_ends(s_comp, rows_q, N, L, R, 1.0 - p_hat, log_level, tol, route)
    lower[rows_q, cls] = np.clip(np.minimum(lo, p_hat), 0.0, 1.0)
    upper[rows_q, cls] = np.clip(np.maximum(up, p_hat), 0.0, 1.0)
    return lower, upper


def group_hoeffding_interval(
    class_sums: np.ndarray,
    count: np.ndarray,
    mass_upper: np.ndarray,
    mass_lower: np.ndarray,
    band_radius: np.ndarray,
    delta_prime: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Hoeffding interval on the same groups: where :func:`chernoff_interval` starts.

    Lower end ``(S − Σ n·u·ρ − √(ln(2/δ′)·Σ n·u²/2)) / Σ n·u`` and the mirrored
    upper end with the lower masses, clipped to ``[0, 1]``. For one group per
    point (``count = 1``, ``u = l = a_i``, ``ρ_i = β·r_i``) this is the
    ``"hoeffding"`` bound ``p̂ ± (β·D/κ + √(ln(2/δ′)·S2/2)/κ)``.

    Parameters
    ----------
    class_sums, count, mass_upper, mass_lower, band_radius, delta_prime
        As in :func:`chernoff_interval`.

    Returns
    -------
    lower, upper : ndarray of shape (n, C)
        ``(0, 1)`` where ``κ = 0``.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.bounds._chernoff import group_hoeffding_interval
    >>> lo, up = group_hoeffding_interval(np.array([[10.0, 0.0]]), np.ones((1, 10)),
    ...                                   np.ones(10), np.ones(10), np.zeros(10), 0.05)
    >>> print(np.round(lo, 4))
    [[0.5705 0.    ]]
    """
    S, N, U, L, R, d, _, kappa = _check_inputs(
        class_sums, count, mass_upper, mass_lower, band_radius, delta_prime, 0.1
    )
    width = math.log(2.0 / d) / 2.0

    def left(s, mass):
        nm = N * mass
        m1, v = nm.sum(axis=1), (nm * mass).sum(axis=1)
        with np.errstate(invalid="ignore"):
            rho = np.where(nm > 0, nm * R, 0.0).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = (s - rho[:, None] - np.sqrt(v * width)[:, None]) / m1[:, None]
        return np.where(np.isfinite(out), out, -np.inf)

    live = (kappa > 0)[:, None]
    lo = np.where(live, np.clip(left(S, U), 0.0, 1.0), 0.0)
    comp = np.einsum("ij,ij->i", N, L)[:, None] - S
    up = np.where(live, np.clip(1.0 - left(comp, L), 0.0, 1.0), 1.0)
    return lo, up


# ---------------------------------------------------------------------------
# Compiled route. The same search as ``_left_end_block``, one pair at a time:
# plain Python functions that numba compiles on first use (``_numba_route``),
# with ``_prange``, ``_eval_pair``, ``_profile_pair`` and ``_bracket_pair`` bound to their
# compiled forms then. ``_profile_pair`` and ``_bracket_pair`` also serve the split form
# (``_chernoff_binned``), compiled there on its exponent.
# ---------------------------------------------------------------------------


def _eval_pair(N, M, R, q, s, m, theta):  # pragma: no cover - compiled by numba
    phi = -theta * s
    d1 = -s
    d2 = 0.0
    dm = 0.0
    amass = s
    for j in range(N.shape[1]):
        n = N[q, j]
        if n == 0.0:
            continue
        u = M[q, j]
        hi = min(m + R[q, j], 1.0)
        x = theta * u
        ex = math.exp(-x)
        den = hi + (1.0 - hi) * ex
        qq = hi / den
        phi += n * (x + math.log(den))
        d1 += n * u * qq
        d2 += n * u * u * qq * (1.0 - qq)
        if hi < 1.0:
            dm += n * ((1.0 - ex) / den)
        amass -= n * u * hi
    return phi, d1, d2, dm, amass


def _profile_pair(N, M, R, q, s, m, theta, t_max, log_level, steps, dec_abs, dec_rel):  # pragma: no cover
    """One pair's ``_profile``: (g, ∂g/∂m, best θ)."""
    best = math.inf
    grad = 0.0
    th_best = theta
    t_lo = 0.0
    t_hi = math.inf
    th = theta
    amass = 0.0
    for it in range(steps):
        phi, d1, d2, dm, a = _eval_pair(N, M, R, q, s, m, th)
        if it == 0:
            amass = a
            if amass <= 0.0:
                break
        if phi < best:
            best = phi
            grad = dm
            th_best = th
        if d1 < 0.0:
            t_lo = max(t_lo, th)
        else:
            t_hi = min(t_hi, th)
        decrement = d1 * d1 / d2 if d2 > 0.0 else math.inf
        margin = abs(best - log_level)
        newton = th - d1 / d2 if d2 != 0.0 else math.nan
        if math.isfinite(newton) and t_lo < newton < t_hi:
            nxt = newton
        elif math.isfinite(t_hi):
            nxt = 0.5 * (t_lo + t_hi)
        else:
            nxt = min(4.0 * max(th, t_lo), t_max)
        at_cap = d1 < 0.0 and th >= t_max
        th = min(nxt, t_max)
        if not (decrement > dec_abs and decrement > dec_rel * margin) or at_cap:
            break
    if amass <= 0.0:
        return math.inf, grad, th_best
    return best - log_level, grad, th_best


def _left_ends_loop(S, rows, N, M, R, right, log_level, tol, out, max_exp, newton_steps, max_steps,
                    theta_steps, dec_abs, dec_rel):  # pragma: no cover - compiled by numba
    for k in _prange(S.shape[0]):
        s = S[k]
        q = rows[k]
        m1 = 0.0
        v = 0.0
        rho_mass = 0.0
        mmax = 0.0
        for j in range(N.shape[1]):
            nm = N[q, j] * M[q, j]
            m1 += nm
            v += nm * M[q, j]
            if nm > 0.0:
                rho_mass += nm * R[q, j]
            mmax = max(mmax, M[q, j])
        theta_max = max_exp / max(mmax, 1e-300)
        theta_min = 1e-12 * theta_max
        a = 0.0
        b = right[k]
        if s <= 0.0 or v <= 0.0 or b <= 0.0:
            out[k] = 0.0
            continue
        m_h = (s - rho_mass - math.sqrt(v * (-log_level) / 2.0)) / m1
        if not math.isfinite(m_h):
            m_h = 0.0
        m_h = min(max(m_h, 0.0), b)
        amass_h = s
        for j in range(N.shape[1]):
            amass_h -= N[q, j] * M[q, j] * min(m_h + R[q, j], 1.0)
        theta = min(max(4.0 * amass_h / v, theta_min), theta_max)
        phi_h, d1_h, d2_h, dm_h, _ = _eval_pair(N, M, R, q, s, m_h, theta)
        half = 0.5 * tol
        x = 0.0
        if m_h > 0.0 and phi_h <= log_level:
            a = m_h
            x = 0.5 * (a + b)
            if dm_h > 0.0:
                newton = m_h - (phi_h - log_level) / dm_h
                if math.isfinite(newton) and a < newton < b:
                    x = newton
            if b - a > tol:
                x = min(max(x, a + half), b - half)
            newton_t = theta - d1_h / d2_h if d2_h != 0.0 else math.nan
            if math.isfinite(newton_t) and 0.0 < newton_t:
                theta = newton_t
            else:
                theta = 4.0 * theta
            theta = max(min(theta, theta_max), theta_min)
        out[k] = _bracket_pair(N, M, R, q, s, a, b, x, theta, theta_max, log_level, tol, math.inf, -math.inf,
                               newton_steps, max_steps, theta_steps, dec_abs, dec_rel)


def _bracket_pair(N, M, R, q, s, a, b, x, theta, t_max, log_level, tol, above, below, newton_steps, max_steps,
                  theta_steps, dec_abs, dec_rel):  # pragma: no cover - compiled by numba
    """:func:`_bracket` for one pair (query ``q``, sum ``s``), the exponent's arrays ``N, M, R`` passed to
    ``_profile_pair`` (bound, when compiled, to the grouped or the split exponent's profile)."""
    t_min = 1e-12 * t_max
    half = 0.5 * tol
    for step in range(max_steps):
        if not b - a > tol or a > above or b <= below:
            break
        g, gm, th = _profile_pair(N, M, R, q, s, x, theta, t_max, log_level, theta_steps, dec_abs, dec_rel)
        theta = max(th, t_min)
        if g <= 0.0:
            a = x
        else:
            b = x
        nxt = 0.5 * (a + b)
        if step < newton_steps and gm > 0.0:
            newton = x - g / gm
            if math.isfinite(newton) and a < newton < b:
                nxt = newton
        if b - a > tol:
            nxt = min(max(nxt, a + half), b - half)
        x = nxt
    return a


def _prange(n):  # the pure-Python stand-in for numba.prange
    return range(n)


class _NumbaRoute:
    """The compiled ``left_ends``; built once, on first use."""

    def __init__(self) -> None:
        import types

        import numba

        from .._numba_cache import njit_cached

        eval_pair = njit_cached(_eval_pair)
        profile = types.FunctionType(_profile_pair.__code__, dict(globals(), _eval_pair=eval_pair),
                                     "_profile_pair")
        profile = njit_cached(profile)
        bracket = njit_cached(types.FunctionType(_bracket_pair.__code__, dict(globals(), _profile_pair=profile),
                                                 "_bracket_pair"))
        scope = dict(globals(), _eval_pair=eval_pair, _bracket_pair=bracket, _prange=numba.prange)
        loop = types.FunctionType(_left_ends_loop.__code__, scope, "_left_ends_loop")
        self._loop = njit_cached(loop, parallel=True)

    def left_ends(self, S: np.ndarray, rows: np.ndarray, N: np.ndarray, M: np.ndarray, R: np.ndarray,
                  right: np.ndarray, log_level: float, tol: float, out: np.ndarray) -> None:
        self._loop(S, rows, N, M, R, right, log_level, tol, out, _MAX_EXPONENT, _NEWTON_M_STEPS,
                   _MAX_STEPS, _THETA_STEPS, _THETA_DECREMENT, _THETA_MARGIN)
