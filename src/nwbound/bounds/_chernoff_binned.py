"""The band-Chernoff interval from a distance histogram with exact per-bin sums (split form).

Each point's log-MGF term splits into a linear part and a convex remainder::

    log(1 + p(e^x − 1)) = p·x + g(x, p),   g(x, p) = log(1 + p(e^x − 1)) − p·x ≥ 0,

``g`` convex and increasing in ``x ≥ 0``, ``g(0, p) = 0``, concave in ``p`` with
maximiser ``p*(x) = 1/x − 1/(e^x − 1)``. The exact upper-tail exponent at level
``m`` takes each label mean at its worst value ``hi_i = min(1, m + β r_i)``;
with ``x_i = θ a_i`` it is bounded per bin ``b`` (``n_b`` points, ``A_b = Σ a_i``,
``D_b ≥ Σ a_i r_i``, ``a_lo ≤ a_i ≤ a_hi``, ``ρ_in ≤ β r_i ≤ ρ_b``) by

* the linear part, from the exact sums (Jensen on the concave ``r ↦ min(1, m + βr)``):
  ``Σ_i hi_i a_i ≤ min(A_b, m·A_b + β·D_b)``;
* the remainder, by the chord of the convex ``x ↦ G_b(x) = max_{p ∈ [lo_b, hi_b]} g(x, p)``
  (``lo_b = min(1, m + ρ_in)``, ``hi_b = min(1, m + ρ_b)``, so every ``hi_i`` is in the band)
  on ``[θ a_lo, θ a_hi]``: ``Σ_i g(θ a_i, hi_i) ≤ Λ_b G_b(θ a_hi) + (n_b − Λ_b) G_b(θ a_lo)``,
  ``Λ_b = (A_b − n_b a_lo)/(a_hi − a_lo)`` (``= n_b`` when ``a_lo = a_hi``).

This bound need not be monotone in ``m``; the exact exponent is (it grows with
every ``hi_i``). A level ``a`` certified by an explicit θ (split bound ≤ log(δ′/2))
is therefore rejected by the exact test, and so is every level below it: the
interval returned contains the exact per-point confidence set. The same holds
for the Hoeffding bound on the exact sums (κ, ``Σ a_i²``, ``D``), which also
dominates the exact exponent, so the search starts from the Hoeffding end and
the result is never wider than ``"hoeffding"``. The proof is in the user guide
(``docs/source/user_guide/chernoff.md``).

The lower tail is the upper tail of the complementary labels (``S′ = κ − S``,
``m′ = 1 − m``; ``A_b``, ``D_b`` and the chord are unchanged).
"""

from __future__ import annotations

import math
import types
from dataclasses import dataclass

import numpy as np

from .._validation import check_open_unit, check_positive
from . import _chernoff as _base
from ._chernoff import _MAX_EXPONENT, _group_array, _as_float_array

__all__ = ["chernoff_interval_binned"]

# Rows of the packed per-bin array (n, _FIELDS, B) that both routes read.
_CNT, _A, _BD, _LAM, _ALO, _AHI, _RHO, _MCAP, _RHO_IN = range(9)
_FIELDS = 9
# Default precision of each interval end.
_TOL = 1e-7
# Below this x the maximiser p*(x) comes from its series (1/x − 1/expm1(x) cancels).
_SERIES_X = 1e-3


def _pack(count: np.ndarray, mass: np.ndarray, bdist: np.ndarray, a_lo: np.ndarray, a_hi: np.ndarray,
          rho: np.ndarray, rho_in: np.ndarray) -> np.ndarray:
    """Per query and bin: count, A, β·D, Λ, a_lo, a_hi, ρ, m_cap, ρ_in."""
    span = a_hi - a_lo
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(span > 0, (mass - count * a_lo) / np.where(span > 0, span, 1.0), count)
        mcap = np.where(mass > 0, 1.0 - bdist / np.where(mass > 0, mass, 1.0), -np.inf)
    lam = np.clip(lam, 0.0, count)  # rounding only: A_b lies in [n·a_lo, n·a_hi]
    packed = np.stack([count, mass, bdist, lam, a_lo, a_hi, rho, mcap, np.minimum(rho_in, rho)], axis=1)
    # Empty bins contribute nothing: zero their weights so both routes skip them.
    empty = ~(mass > 0)[:, None, :] & np.ones((1, _FIELDS, 1), dtype=bool)
    empty[:, _MCAP] = False
    packed[empty] = 0.0
    return np.ascontiguousarray(packed)


def _evaluate_split(S: np.ndarray, data: tuple, m: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, ...]:
    """Split exponent at (m, θ) per pair for the packed bins ``data = (P,)`` and the derivatives the
    search needs (numpy).

    Same contract as :func:`._chernoff._evaluate`: ``φ``, ``∂φ/∂θ``, ``∂²φ/∂θ²``,
    ``∂φ/∂m`` and ``S − Σ_b min(A_b, m A_b + βD_b)`` (``= −∂φ/∂θ`` at θ = 0).
    """
    (P,) = data
    A, bD, lam, cnt = P[:, _A], P[:, _BD], P[:, _LAM], P[:, _CNT]
    mcap, rho, rho_in = P[:, _MCAP], P[:, _RHO], P[:, _RHO_IN]
    mm = m[:, None]
    below = (mm < mcap) & (A > 0)
    lin = np.where(below, A * mm + bD, A).sum(axis=1)
    lo = np.minimum(mm + rho_in, 1.0)
    hi = np.minimum(mm + rho, 1.0)
    move_hi = mm + rho < 1.0
    move_lo = mm + rho_in < 1.0
    phi = theta * (lin - S)
    d1 = lin - S
    d2 = np.zeros_like(S)
    dm = theta * np.where(below, A, 0.0).sum(axis=1)
    for w, a in ((lam, P[:, _AHI]), (cnt - lam, P[:, _ALO])):
        x = theta[:, None] * a
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            pst = np.where(x > _SERIES_X, 1.0 / x - 1.0 / np.expm1(x), 0.5 - x / 12.0 + x**3 / 720.0)
        p = np.clip(pst, lo, hi)
        ex = np.exp(-x)
        den = p + (1.0 - p) * ex
        qt = p / den
        g = np.log(den) + (1.0 - p) * x
        gxx = qt * (1.0 - qt)
        inner = (pst > lo) & (pst < hi) & (x > 1e-6)
        with np.errstate(divide="ignore", invalid="ignore"):
            gxp = ex / (den * den) - 1.0
            gpp = ((1.0 - ex) / den) ** 2
            corr = np.where(inner & (gpp > 0), gxp * gxp / gpp, 0.0)
        gp = (1.0 - ex) / den - x
        moving = np.where(pst >= hi, move_hi, np.where(pst <= lo, move_lo, False))
        phi += np.einsum("ij,ij->i", w, g)
        d1 += np.einsum("ij,ij->i", w * a, qt - p)
        d2 += np.einsum("ij,ij->i", w * a * a, gxx + corr)
        dm += np.einsum("ij,ij->i", w, np.where(moving, gp, 0.0))
    return phi, d1, d2, dm, S - lin


def _left_end_block(S: np.ndarray, P: np.ndarray, start: np.ndarray, right: np.ndarray, theta0: np.ndarray,
                    theta_max: np.ndarray, log_level: float, tol: float, above: np.ndarray,
                    below: np.ndarray) -> np.ndarray:
    """Left ends of a block of pairs (numpy): ``start`` is certified rejected (Hoeffding), ``right`` not;
    the search is :func:`._chernoff._bracket` on the split exponent, from the midpoint.

    A pair stops early once its bracket ``[a, b]`` lies above ``above`` or at most ``below`` (see
    :func:`_left_ends`)."""
    a, b = start.copy(), right.copy()
    theta = np.clip(theta0, 1e-12 * theta_max, theta_max)
    return _base._bracket(S, (P,), _evaluate_split, a, b, 0.5 * (a + b), theta, theta_max, log_level, tol,
                          above, below)


# ---------------------------------------------------------------------------
# Compiled route: the same exponent one pair at a time, H1's _profile_pair and _bracket_pair on top.
# ---------------------------------------------------------------------------


def _eval_split_pair(P, _m1, _m2, q, s, m, theta):  # pragma: no cover - compiled by numba
    lin = 0.0
    dm = 0.0
    phi = 0.0
    d1 = 0.0
    d2 = 0.0
    for j in range(P.shape[2]):
        A = P[q, 1, j]
        if A <= 0.0:
            continue
        mcap = P[q, 7, j]
        below = m < mcap
        if below:
            lin += A * m + P[q, 2, j]
            dm += theta * A
        else:
            lin += A
        lo = min(m + P[q, 8, j], 1.0)
        if lo >= 1.0:  # every label mean at 1: the remainder g(x, 1) = 0
            continue
        hi = min(m + P[q, 6, j], 1.0)
        move_hi = m + P[q, 6, j] < 1.0
        move_lo = m + P[q, 8, j] < 1.0
        lam = P[q, 3, j]
        for side in range(2):
            if side == 0:
                w = lam
                a = P[q, 5, j]
            else:
                w = P[q, 0, j] - lam
                a = P[q, 4, j]
            if w <= 0.0 or a <= 0.0:
                continue
            x = theta * a
            ex = math.exp(-x)
            if x > 1e-3:  # 1/(e^x − 1) = e^{−x}/(1 − e^{−x}): one exponential for both
                pst = 1.0 / x - ex / (1.0 - ex)
            else:
                pst = 0.5 - x / 12.0 + x * x * x / 720.0
            p = min(max(pst, lo), hi)
            den = p + (1.0 - p) * ex
            qt = p / den
            phi += w * (math.log(den) + (1.0 - p) * x)
            d1 += w * a * (qt - p)
            curv = qt * (1.0 - qt)
            if lo < pst < hi and x > 1e-6:
                gpp = ((1.0 - ex) / den) ** 2
                if gpp > 0.0:
                    gxp = ex / (den * den) - 1.0
                    curv += gxp * gxp / gpp
            d2 += w * a * a * curv
            if (pst >= hi and move_hi) or (pst <= lo and pst < hi and move_lo):
                dm += w * ((1.0 - ex) / den - x)
    phi += theta * (lin - s)
    d1 += lin - s
    return phi, d1, d2, dm, s - lin


def _split_loop(S, rows, P, start, right, theta0, theta_max, log_level, tol, out, newton_steps, max_steps,
                theta_steps, dec_abs, dec_rel, above, below):  # pragma: no cover - compiled by numba
    for k in _prange(S.shape[0]):
        a = start[k]
        if S[k] <= 0.0:
            out[k] = a
            continue
        # The linear part at a with each bin's term at its least over m ≥ a (rounding is monotone):
        # where it reaches S, every probe m ≥ a finds no mass left (the profile's g = inf), nothing
        # is rejected and the search would return a after ~20 evaluations of every bin.
        lin = 0.0
        for j in range(P.shape[2]):
            A = P[rows[k], 1, j]
            if A > 0.0:
                lin += min(A, A * a + P[rows[k], 2, j])
        if lin >= S[k]:
            out[k] = a
            continue
        b = right[k]
        t_max = theta_max[k]
        theta = min(max(theta0[k], 1e-12 * t_max), t_max)
        out[k] = _bracket_pair(P, P, P, rows[k], S[k], a, b, 0.5 * (a + b), theta, t_max, log_level, tol,
                               above[k], below[k], newton_steps, max_steps, theta_steps, dec_abs, dec_rel)


_NUMBA_ROUTE = None  # the compiled loop once built, False when numba is missing


def _numba_loop() -> object | None:
    """The compiled split search (built once), or None where the numpy route applies."""
    global _NUMBA_ROUTE
    if _base._numba_route() is None:  # H1's switches: USE_NUMBA, NWBOUND_DISABLE_NUMBA, numba present
        return None
    if _NUMBA_ROUTE is None:
        import numba

        from .._numba_cache import njit_cached

        # Only the loop is cached (its machine code includes the two functions it calls), keyed
        # on both files it is built from: numba alone would key it on this file and could load
        # a stale exponent after an edit of _chernoff.py.
        ev = numba.njit(_eval_split_pair)
        prof = types.FunctionType(_base._profile_pair.__code__, dict(vars(_base), _eval_pair=ev), "_profile_split")
        prof = numba.njit(prof)
        bracket = numba.njit(types.FunctionType(_base._bracket_pair.__code__, dict(vars(_base), _profile_pair=prof),
                                                "_bracket_split"))
        scope = dict(globals(), _bracket_pair=bracket, _prange=numba.prange)
        _NUMBA_ROUTE = njit_cached(types.FunctionType(_split_loop.__code__, scope, "_split_loop"),
                                   sources=(__file__, _base.__file__), parallel=True)
    return _NUMBA_ROUTE


def _left_ends(S: np.ndarray, rows: np.ndarray, P: np.ndarray, start: np.ndarray, right: np.ndarray,
               theta0: np.ndarray, theta_max: np.ndarray, log_level: float, tol: float,
               loop: object | None, above: np.ndarray | None = None, below: np.ndarray | None = None) -> np.ndarray:
    """Left ends of the pairs (S[k], query rows[k]): compiled loop, or numpy blocks.

    ``above``/``below`` (default: never): a pair's search stops as soon as its bracket ``[a, b]``
    has ``a > above[k]`` or ``b <= below[k]`` and returns that ``a``. Each pair's steps are the
    full search's until then, so where it does not stop its end is the full search's, bit for bit.
    """
    n = S.shape[0]
    above = np.full(n, np.inf) if above is None else np.ascontiguousarray(above, dtype=np.float64)
    below = np.full(n, -np.inf) if below is None else np.ascontiguousarray(below, dtype=np.float64)
    if loop is not None:
        out = np.zeros(n)
        loop(S, rows.astype(np.intp), P, start, right, theta0, theta_max, log_level, tol, out,
             _base._NEWTON_M_STEPS, _base._MAX_STEPS, _base._THETA_STEPS, _base._THETA_DECREMENT,
             _base._THETA_MARGIN, above, below)
        return out
    out = np.empty(n)
    for i in range(0, n, _base._BLOCK_PAIRS):
        sl = slice(i, i + _base._BLOCK_PAIRS)
        out[sl] = _left_end_block(S[sl], P[rows[sl]], start[sl], right[sl], theta0[sl], theta_max[sl],
                                  log_level, tol, above[sl], below[sl])
    return out


def chernoff_interval_binned(
    class_sums: np.ndarray,
    count: np.ndarray,
    mass: np.ndarray,
    dist_mass: np.ndarray,
    mass_lower: np.ndarray,
    mass_upper: np.ndarray,
    band_radius: np.ndarray,
    beta: float,
    delta_prime: float,
    *,
    sq_sum: np.ndarray,
    band_radius_inner: np.ndarray | float = 0.0,
    dist_sum: np.ndarray | None = None,
    tol: float = _TOL,
    engine: str = "auto",
    sum_error: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Band-Chernoff interval of every class probability from a histogram with exact per-bin sums.

    The split form (module docstring; proof in the user guide): exact per-bin
    kernel mass ``A_b`` and distance mass ``D_b`` for the linear part of the
    log-MGF, a chord over each bin's range of kernel values for the convex
    remainder. Intersected with the Hoeffding interval on the exact sums, so
    never wider than it.

    Parameters
    ----------
    class_sums : ndarray of shape (n, C)
        ``S_c = Σ_i a_i 1{c_i = c}``, ``a_i ≥ 0``; ``κ = Σ_c S_c``.
    count : ndarray of shape (n, B)
        Points per bin (``Σ w_i/w_max`` is valid when ``mass_lower = 0``).
    mass : ndarray of shape (n, B)
        ``A_b = Σ_{i∈b} a_i``.
    dist_mass : ndarray of shape (n, B)
        ``D_b ≥ Σ_{i∈b} a_i r_i`` (``r_i`` the distance the band uses).
    mass_lower, mass_upper : ndarray of shape (n, B) or (B,)
        ``a_lo ≤ a_i ≤ a_hi`` for every point of the bin (``a_lo = 0`` for weighted data).
    band_radius : ndarray of shape (n, B) or (B,)
        ``ρ_b ≥ β·r_i`` for every point of the bin (``+inf`` allowed).
    beta : float
        ``L`` or ``1/γ``, ≥ 0 (``β·D_b`` is the bin's drift).
    delta_prime : float
        Per-class failure probability in (0, 1); each tail gets ``δ′/2``.
    sq_sum : ndarray of shape (n,)
        ``Σ a_i²`` (the Hoeffding interval on the exact sums).
    band_radius_inner : float or ndarray of shape (n, B) or (B,), default=0
        ``ρ_in,b ≤ β·r_i`` for every point of the bin (the bin's inner radius; 0 is
        always valid): the band of the remainder is ``[m + ρ_in, m + ρ] ∩ [0, 1]``.
    dist_sum : ndarray of shape (n,), optional
        ``D ≥ Σ a_i r_i`` for the Hoeffding interval; default ``Σ_b D_b``.
    tol : float, default=1e-7
        Each end lies at most ``tol`` outside the exact end of the split test.
    engine : {"auto", "numba", "numpy"}, default="auto"
    sum_error : float, default=0
        ``ρ`` in [0, 1/2): ``class_sums`` and ``mass`` are only known within a factor ``1 ± ρ``
        of the exact sums (``sq_sum``, ``dist_mass`` and ``dist_sum`` must still be upper bounds).
        Each input then moves to the side that can only widen the interval: the exponent grows
        with every ``A_b`` and shrinks with ``S``, so a lower end is certified with ``S/(1 + ρ)``,
        an upper end with the other classes' sum over ``1 + ρ``, both with ``A_b/(1 − ρ)``
        (at most ``count·mass_upper``) and ``κ/(1 − ρ)`` in the Hoeffding start: the interval
        contains the one of the exact sums.

    Returns
    -------
    lower, upper : ndarray of shape (n, C)
        In ``[0, 1]``, ``lower ≤ S/κ ≤ upper``; ``(0, 1)`` where ``κ = 0``.

    Raises
    ------
    ValueError
        Shape mismatch, negative or non-finite inputs, ``mass_lower > mass_upper``,
        a bin mass outside ``[count·a_lo, count·a_hi]`` (relative slack 1e-9),
        ``beta < 0`` or ``delta_prime`` outside (0, 1).

    Examples
    --------
    Ten points at kernel value 1 in one bin, all of class 0, no bias:

    >>> import numpy as np
    >>> from nwbound.bounds._chernoff_binned import chernoff_interval_binned
    >>> lo, up = chernoff_interval_binned(np.array([[10.0, 0.0]]), [[10.0]], [[10.0]], [[0.0]],
    ...                                   [1.0], [1.0], [0.0], 1.0, 0.05, sq_sum=np.array([10.0]))
    >>> print(np.round(lo, 4), np.round(up, 4))
    [[0.6915 0.    ]] [[1.     0.3085]]

    The exact binomial end, as for :func:`~nwbound.bounds._chernoff.chernoff_interval`
    with one group per point: ``0.025 ** 0.1 = 0.6915``.
    """
    return _prepared(class_sums, count, mass, dist_mass, mass_lower, mass_upper, band_radius, beta, delta_prime,
                     sq_sum=sq_sum, band_radius_inner=band_radius_inner, dist_sum=dist_sum, tol=tol, engine=engine,
                     sum_error=sum_error).interval()


def _prepared(class_sums, count, mass, dist_mass, mass_lower, mass_upper, band_radius, beta, delta_prime, *,
              sq_sum, band_radius_inner=0.0, dist_sum=None, tol=_TOL, engine="auto", sum_error=0.0) -> "_Pairs":
    """Checked inputs packed once, and every (query, class) pair's search set up (Hoeffding start)."""
    S = _as_float_array(class_sums, "class_sums")
    if S.ndim != 2 or not np.isfinite(S).all() or (S < 0).any():
        raise ValueError("class_sums must be a finite 2-D array (queries, classes) of values >= 0.")
    n = S.shape[0]
    N = _as_float_array(count, "count")
    if N.ndim != 2 or N.shape[0] != n:
        raise ValueError(f"count must have shape (n_queries, n_bins) = ({n}, B), got {N.shape}.")
    shape = N.shape
    N = _group_array(N, "count", shape)
    A = _group_array(mass, "mass", shape)
    D = _group_array(dist_mass, "dist_mass", shape)
    lo_m = _group_array(mass_lower, "mass_lower", shape)
    hi_m = _group_array(mass_upper, "mass_upper", shape)
    R = _group_array(band_radius, "band_radius", shape, allow_inf=True)
    R_in = _group_array(np.broadcast_to(_as_float_array(band_radius_inner, "band_radius_inner"), shape[1:])
                        if np.ndim(band_radius_inner) == 0 else band_radius_inner, "band_radius_inner", shape)
    beta = float(_as_float_array(beta, "beta"))
    if not (math.isfinite(beta) and beta >= 0):
        raise ValueError(f"beta must be finite and >= 0 (L or 1/γ), got {beta!r}.")
    d = check_open_unit(delta_prime, "delta_prime")
    tol = check_positive(tol, "tol")
    if tol >= 0.5:
        raise ValueError(f"tol must be < 0.5 (the precision of the interval ends), got {tol!r}.")
    if engine not in ("auto", "numba", "numpy"):
        raise ValueError(f"engine must be 'auto', 'numba' or 'numpy', got {engine!r}.")
    if (lo_m > hi_m).any():
        raise ValueError("mass_lower must be <= mass_upper in every bin (bounds on each a_i).")
    rel = float(sum_error)
    if not 0.0 <= rel < 0.5:
        raise ValueError(f"sum_error must be in [0, 0.5) (a relative error bound of the sums), got {sum_error!r}.")
    slack = _base._CONTRACT_RTOL * np.maximum(A, 1e-300)
    # With ρ the exact A_b is anywhere in [A/(1 + ρ), A/(1 − ρ)]: that range must meet the bin's.
    if (A / (1.0 + rel) > N * hi_m + slack).any() or (A / (1.0 - rel) < N * lo_m - slack).any():
        raise ValueError("mass must lie in [count·mass_lower, count·mass_upper] in every bin "
                         "(the bin's points have a_i in [mass_lower, mass_upper]).")
    kappa = S.sum(axis=1)
    if rel > 0:  # the largest exact A_b the sums allow (never above count·mass_upper): widens
        A = np.minimum(A / (1.0 - rel) * (1.0 + 2.0**-52), N * hi_m)
    q2 = _as_float_array(sq_sum, "sq_sum")
    dsum = D.sum(axis=1) if dist_sum is None else _as_float_array(dist_sum, "dist_sum")
    for arr, name in ((q2, "sq_sum"), (dsum, "dist_sum")):
        if arr.shape != (n,) or not np.isfinite(arr).all() or (arr < 0).any():
            raise ValueError(f"{name} must be a finite array of shape ({n},) with values >= 0.")
    loop = None if engine == "numpy" else _numba_loop()
    if engine == "numba" and loop is None:
        from ..utils import install_hint

        raise ValueError(f"engine='numba' needs numba: {install_hint('fast')}; or use engine='auto'.")

    C = S.shape[1]
    live = kappa > 0
    if not live.any():
        return _Pairs(n=n, n_classes=C, live=live)
    with np.errstate(invalid="ignore"):
        rho = np.where(A > 0, R, 0.0)
    P = _pack(N, A, beta * D, lo_m, hi_m, rho, np.where(A > 0, R_in, 0.0))
    rows, cls = np.nonzero(np.broadcast_to(live[:, None], (n, C)))
    s = S[rows, cls]
    kap = kappa[rows]
    p_hat = np.clip(s / kap, 0.0, 1.0)
    log_level = math.log(d / 2.0)
    s_comp = np.maximum(kap - s, 0.0)
    if rel > 0:
        # Lower ends: the class's sum at its smallest; upper ends: the other classes' (κ − S, less the
        # row sum's and the difference's float64 roundings, ≤ (C + 1)·2⁻⁵³·κ); κ at its largest.
        grow = 1.0 + 2.0**-52
        s = s / (1.0 + rel) / grow
        s_comp = np.maximum(s_comp - (C + 1) * 2.0**-53 * kap, 0.0) / (1.0 + rel) / grow
        kap = kap / (1.0 - rel) * grow
    # Hoeffding on the exact sums: its ends are certified rejected by a valid test.
    half_h = (beta * dsum + np.sqrt(q2 * math.log(2.0 / d) / 2.0))[rows]
    theta_h = 4.0 * np.sqrt(q2 * math.log(2.0 / d) / 2.0)[rows] / np.maximum(q2[rows], 1e-300)
    a_top = np.where(A > 0, hi_m, 0.0).max(axis=1)
    theta_max = (_MAX_EXPONENT / np.maximum(a_top, 1e-300))[rows]
    lo_h = np.clip((s - half_h) / kap, 0.0, p_hat)
    up_h = np.clip((s_comp - half_h) / kap, 0.0, 1.0 - p_hat)
    return _Pairs(n=n, n_classes=C, live=live, rows=rows, cls=cls, P=P, s=s, s_comp=s_comp, p_hat=p_hat,
                  lo_h=lo_h, up_h=up_h, theta_h=theta_h, theta_max=theta_max, log_level=log_level, tol=tol,
                  loop=loop)


@dataclass
class _Pairs:
    """The searches of :func:`chernoff_interval_binned`: one lower and one upper end per live
    (query, class) pair ``(rows[k], cls[k])``, each started at its certified Hoeffding end."""

    n: int
    n_classes: int
    live: np.ndarray
    rows: np.ndarray | None = None
    cls: np.ndarray | None = None
    P: np.ndarray | None = None
    s: np.ndarray | None = None
    s_comp: np.ndarray | None = None
    p_hat: np.ndarray | None = None
    lo_h: np.ndarray | None = None
    up_h: np.ndarray | None = None
    theta_h: np.ndarray | None = None
    theta_max: np.ndarray | None = None
    log_level: float = 0.0
    tol: float = 0.0
    loop: object | None = None

    def lower_ends(self, k: np.ndarray | slice = slice(None), above: np.ndarray | None = None,
                   below: np.ndarray | None = None) -> np.ndarray:
        """The reported lower ends of pairs ``k`` (``above``/``below``: stop early, :func:`_left_ends`)."""
        lo = _left_ends(self.s[k], self.rows[k], self.P, self.lo_h[k], self.p_hat[k], self.theta_h[k],
                        self.theta_max[k], self.log_level, self.tol, self.loop, above, below)
        return np.clip(np.minimum(lo, self.p_hat[k]), 0.0, 1.0)

    def upper_ends(self, k: np.ndarray | slice = slice(None)) -> np.ndarray:
        """The reported upper ends of pairs ``k``: the lower tail is the upper tail of the other labels."""
        return self._upper_from(self._complement_ends(k), k)

    def _complement_ends(self, k: np.ndarray | slice, above: np.ndarray | None = None) -> np.ndarray:
        """The left ends of the other labels' searches (``1 −`` the upper ends, before clipping)."""
        return _left_ends(self.s_comp[k], self.rows[k], self.P, self.up_h[k], 1.0 - self.p_hat[k],
                          self.theta_h[k], self.theta_max[k], self.log_level, self.tol, self.loop, above)

    def _two_class_certified(self, live: np.ndarray, k_top: np.ndarray, out: np.ndarray) -> np.ndarray:
        """:meth:`certified` with two classes: the top pair's one search (:meth:`_two_class_ends`) decides,
        ``lower[top] = min(e, p̂_top) > upper[other] = max(1 − e, p̂_other)``, non-decreasing in its end
        ``e``. It stops once its bracket lies above ``max(p̂_other, 1/2, 1 − p̂_top + 2⁻⁵²)`` (then the
        comparison holds, roundings included) or at most ``max(p̂_other, 1/2)`` (then it fails); the
        comparison is made on the end returned, as :meth:`interval` makes it on the full end."""
        o = np.flatnonzero(self.p_hat[k_top] > self.p_hat[k_top ^ 1])  # else not certified
        k, other = k_top[o], k_top[o] ^ 1
        p_top, p_other = self.p_hat[k], self.p_hat[other]
        below = np.maximum(p_other, 0.5)
        ends = self._two_class_ends(k, above=np.maximum(below, 1.0 - p_top + 2.0**-52), below=below)
        lower = np.clip(np.minimum(ends, p_top), 0.0, 1.0)
        out[live[o[lower > self._upper_from(ends, other)]]] = True
        return out

    def _upper_from(self, ends: np.ndarray, k: np.ndarray | slice) -> np.ndarray:
        """Reported upper ends from those left ends (non-increasing in them)."""
        return np.clip(np.maximum(1.0 - ends, self.p_hat[k]), 0.0, 1.0)

    def _two_class_ends(self, k: np.ndarray, above: np.ndarray | None = None,
                        below: np.ndarray | None = None) -> np.ndarray:
        """Two classes: the left end of the test of pair ``k``'s class, which is also the test of the
        other class's upper end (its complementary labels are ``k``'s): one search for both.

        The two searches it replaces differ by rounding only: ``k``'s sum ``S/(1 + ρ)`` against the
        other pair's ``κ − S′`` less its rounding allowance, and their Hoeffding starts. It takes the
        smaller sum and the lower start (a level below a rejected one is rejected; the search only
        ever returns a level its test rejects), so its end is valid for both: at most the exact end
        of either test, within ``tol`` of it (``above``/``below``: stop early, :func:`_left_ends`)."""
        other = k ^ 1  # the live pairs of a query are consecutive: (q, 0), (q, 1)
        return _left_ends(np.minimum(self.s[k], self.s_comp[other]), self.rows[k], self.P,
                          np.minimum(self.lo_h[k], self.up_h[other]),
                          np.maximum(self.p_hat[k], 1.0 - self.p_hat[other]), self.theta_h[k], self.theta_max[k],
                          self.log_level, self.tol, self.loop, above, below)

    def interval(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` of every pair; ``(0, 1)`` where ``κ = 0``. Two classes: one search per
        pair, for its lower end and the other class's upper end (:meth:`_two_class_ends`)."""
        lower = np.zeros((self.n, self.n_classes))
        upper = np.ones((self.n, self.n_classes))
        if self.rows is not None and self.n_classes == 2:
            k = np.arange(self.rows.size)
            ends = self._two_class_ends(k)
            lower[self.rows, self.cls] = np.clip(np.minimum(ends, self.p_hat), 0.0, 1.0)
            upper[self.rows, self.cls] = self._upper_from(ends[k ^ 1], k)
        elif self.rows is not None:
            lower[self.rows, self.cls] = self.lower_ends()
            upper[self.rows, self.cls] = self.upper_ends()
        return lower, upper

    def certified(self, top: np.ndarray) -> np.ndarray:
        """Whether ``lower[top] > max_{c ≠ top} upper[c]`` for :meth:`interval`'s ends, per query.

        Exactly that comparison, searching only as far as it needs. Each reported end lies between
        its Hoeffding start and ``p̂`` (a search only moves its certified end inward, and the
        reported end is clipped at ``p̂``), and a search stopped early has an end no further in
        than the full search's. So:

        1. where ``p̂[top]`` is not above every other ``p̂``, the query is not certified;
        2. the top class's lower end is searched until it lies above every other class's highest
           possible upper end (certified) or at most the largest ``p̂`` of the others (not);
           otherwise in full, giving the reported end ``ℓ``;
        3. there, each other class whose highest possible upper end reaches ``ℓ`` is searched until
           its upper end is below ``ℓ`` (stopped early, re-searched in full in the rare case where
           the stop was not conclusive), or in full: certified when none reaches ``ℓ``.

        False where ``κ = 0``.
        """
        n, C = self.n, self.n_classes
        out = np.zeros(n, dtype=bool)
        if self.rows is None or C < 2:  # one class: certified wherever mass reached the query
            return self.live.copy() if C < 2 else out
        index = np.full((n, C), -1, dtype=np.intp)
        index[self.rows, self.cls] = np.arange(self.rows.size)
        live = np.flatnonzero(self.live)
        top = np.asarray(top, dtype=np.intp)[live]
        k_top = index[live, top]
        if C == 2:
            return self._two_class_certified(live, k_top, out)
        others = np.ones((live.size, C), dtype=bool)
        others[np.arange(live.size), top] = False
        k_other = index[live][others].reshape(live.size, C - 1)
        lowest = self.p_hat[k_other]  # upper[c] ≥ p̂_c
        highest = self._upper_from(self.up_h[k_other], k_other)  # upper[c] ≤ this: its search starts at up_h
        low_max, high_max = lowest.max(axis=1), highest.max(axis=1)
        o = np.flatnonzero(self.p_hat[k_top] > low_max)  # 1.
        lower = self.lower_ends(k_top[o], above=high_max[o], below=low_max[o])  # 2.
        out[live[o[lower > high_max[o]]]] = True
        mid = (lower > low_max[o]) & ~(lower > high_max[o])  # neither stop applied: lower is the full end
        if not mid.any():
            return out
        rows_m, ell = o[mid], lower[mid]
        r, c = np.nonzero(highest[rows_m] >= ell[:, None])  # 3. the classes that may reach ℓ
        k = k_other[rows_m][r, c]
        hint = 1.0 - ell[r]  # past it the upper end is below ℓ, up to rounding (checked next)
        raw = self._complement_ends(k, above=hint)
        upper = self._upper_from(raw, k)  # at least the full search's reported end
        unsure = (upper >= ell[r]) & (raw > hint)  # may have stopped on the hint: search in full
        if unsure.any():
            upper[unsure] = self._upper_from(self._complement_ends(k[unsure]), k[unsure])
        reaches = np.zeros(rows_m.size, dtype=bool)
        np.logical_or.at(reaches, r, upper >= ell[r])
        out[live[rows_m[~reaches]]] = True
        return out
