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
(``docs/source/user_guide/chernoff.md``).

The set of ``m`` that neither tail rejects is an interval containing
``p̂ = S/κ``; :func:`chernoff_interval` finds its two ends by a bracketing
search that keeps a point *certified* rejected (by an explicit θ) on the
outer side and reports that point, so the interval returned always contains
the exact confidence set. The θ-minimisation is a few safeguarded Newton
steps on a convex function, warm-started from the Hoeffding point, and the
search starts from the Hoeffding end, so the result is never wider than the
Hoeffding interval on the same groups.

The lower tail is the upper tail of the complementary labels: with
``S′ = Σ_g n_g l_g − S`` and ``m′ = 1 − m`` its exponent is
``−θS′ + Σ_g n_g log(1 + hi_g(m′)(e^{θ l_g} − 1))`` (the identity
``log(1 + p(e^{−x} − 1)) = −x + log(1 + (1 − p)(e^x − 1))``). One solver
therefore serves both ends.
"""

from __future__ import annotations

import math
import os

import numpy as np

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
# Pairs solved together: bounds the (pairs × groups) temporaries of the numpy route.
_BLOCK_PAIRS = 4096
# The compiled route (numba): False forces numpy, as does NWBOUND_DISABLE_NUMBA=1.
USE_NUMBA = True
_NUMBA_MODULE = None  # ._chernoff_numba once imported, False when numba is missing


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


def _check_inputs(class_sums, count, mass_upper, mass_lower, band_radius, delta_prime, tol):
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
    slack = _CONTRACT_RTOL * kappa + 1e-300
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


def _evaluate(S, N, M, R, m, theta):
    """The upper-tail exponent at (m, θ) per pair, and the derivatives the search needs.

    Returns ``φ``, ``∂φ/∂θ``, ``∂²φ/∂θ²``, ``∂φ/∂m`` and ``A = S − Σ n·u·hi(m)``
    (``= −∂φ/∂θ`` at θ = 0; ``A ≤ 0`` means ``m`` is not rejected for any θ).
    """
    hi = np.minimum(m[:, None] + R, 1.0)
    x = theta[:, None] * M
    e = np.expm1(-x)  # e^{−x} − 1 ∈ (−1, 0]
    omp_e = (1.0 - hi) * e
    den = 1.0 + omp_e  # hi + (1 − hi)e^{−x} ≥ e^{−700} > 0
    psi = x + np.log1p(omp_e)  # log(1 + hi(e^x − 1)), stable for large x
    q = hi / den  # the tilted label mean
    nm = N * M
    phi = -theta * S + np.einsum("ij,ij->i", N, psi)
    d1 = -S + np.einsum("ij,ij->i", nm, q)
    d2 = np.einsum("ij,ij->i", nm * M, q * (1.0 - q))
    dm = np.einsum("ij,ij->i", N * (hi < 1.0), -e / den)
    a = S - np.einsum("ij,ij->i", nm, hi)
    return phi, d1, d2, dm, a


def _theta_step(theta, d1, d2, theta_max):
    """One safeguarded Newton step on the convex θ ↦ φ: at most ×4 or ÷4, inside (0, θ_max]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        step = np.where(d2 > 0, theta - d1 / d2, np.where(d1 < 0, 4.0 * theta, 0.25 * theta))
    step = np.nan_to_num(step, nan=theta, posinf=4.0 * theta, neginf=0.25 * theta)
    return np.clip(step, 0.25 * theta, np.minimum(4.0 * theta, theta_max))


def _left_end_block(S, N, M, R, right, log_level, tol):
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
        phi = _evaluate(S[idx], N[idx], M[idx], R[idx], m_h[idx], t_star)[0]
        ok = (m_h[idx] > 0) & (phi <= log_level)
        a[idx[ok]] = m_h[idx[ok]]
    m = a.copy()  # first probe: the current rejected end (or 0), now with an optimised θ
    active = np.flatnonzero(~done & (b - a > tol))
    for step in range(_MAX_STEPS):
        if active.size == 0:
            break
        s, n_, mm, r = S[active], N[active], M[active], R[active]
        th0 = theta[active]
        tmax, tmin = theta_max[active], theta_min[active]
        x = m[active]
        phi0, d10, d20, dm0, amass = _evaluate(s, n_, mm, r, x, th0)
        th1 = np.maximum(_theta_step(th0, d10, d20, tmax), tmin)
        phi1, d11, d21, dm1, _ = _evaluate(s, n_, mm, r, x, th1)
        first = phi0 <= phi1
        g = np.where(first, phi0, phi1) - log_level
        gm = np.where(first, dm0, dm1)
        th_best = np.where(first, th0, th1)
        # Warm start for the next probe: one more Newton step from the last θ.
        theta[active] = np.where(
            first, th0, np.maximum(_theta_step(th1, d11, d21, tmax), tmin)
        )
        rejected = (g <= 0) & (amass > 0)
        aa, bb = a[active], b[active]
        aa = np.where(rejected, x, aa)
        bb = np.where(rejected, bb, x)
        a[active], b[active] = aa, bb
        del th_best
        # Next probe: Newton in m (the envelope derivative ∂φ/∂m at the best θ),
        # kept at least tol/2 inside the bracket so that it straddles the root.
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = x - g / gm
        mid = 0.5 * (aa + bb)
        use_newton = (step < _NEWTON_M_STEPS) & (gm > 0) & np.isfinite(newton) & (newton > aa) & (newton < bb)
        nxt = np.where(use_newton, newton, mid)
        half = 0.5 * tol
        nxt = np.where(bb - aa > tol, np.clip(nxt, aa + half, bb - half), mid)
        m[active] = nxt
        active = active[bb - aa > tol]
    return a


def _numba_route():
    global _NUMBA_MODULE
    if not USE_NUMBA or os.environ.get("NWBOUND_DISABLE_NUMBA", "").strip() not in ("", "0"):
        return None
    if _NUMBA_MODULE is None:  # import numba lazily, once
        try:
            from . import _chernoff_numba
        except ImportError:
            _NUMBA_MODULE = False
        else:
            _NUMBA_MODULE = _chernoff_numba
    return _NUMBA_MODULE or None


def _left_ends(S, rows, N, M, R, right, log_level, tol, engine):
    """Left ends for pairs (S[k], query rows[k]) in blocks."""
    out = np.zeros(S.shape[0])
    if engine is not None:
        engine.left_ends(S, rows.astype(np.intp), N, M, R, right, log_level, tol, out,
                         _MAX_EXPONENT, _NEWTON_M_STEPS, _MAX_STEPS)
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
        ``"auto"`` uses the compiled route when numba is installed (``nwbound[fast]``).

    Returns
    -------
    lower, upper : ndarray of shape (n, C)
        In ``[0, 1]`` with ``lower ≤ S/κ ≤ upper``; ``(0, 1)`` where ``κ = 0``.

    Raises
    ------
    ValueError
        Shape mismatch, negative or non-finite sums, counts or masses,
        ``mass_lower > mass_upper``, ``Σ count·mass_upper < κ`` or
        ``Σ count·mass_lower > κ`` (the groups must cover the points), or
        ``delta_prime`` outside (0, 1).

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
    S, N, U, L, R, d, tol, kappa = _check_inputs(
        class_sums, count, mass_upper, mass_lower, band_radius, delta_prime, tol
    )
    if engine not in ("auto", "numba", "numpy"):
        raise ValueError(f"engine must be 'auto', 'numba' or 'numpy', got {engine!r}.")
    route = None if engine == "numpy" else _numba_route()
    if engine == "numba" and route is None:
        raise ValueError("engine='numba' needs numba: install nwbound[fast], or use engine='auto'.")
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
    lo = _left_ends(s, rows_q, N, U, R, p_hat, log_level, tol, route)
    # Lower tail = upper tail of the complementary labels at m′ = 1 − m.
    s_comp = np.einsum("ij,ij->i", N, L)[rows_q] - s
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
