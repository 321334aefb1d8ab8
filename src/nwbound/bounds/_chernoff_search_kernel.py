"""The fused band-Chernoff search kernel (Triton); defined only where Triton is installed.

See :mod:`nwbound.bounds._chernoff_triton` for what it computes and why the ends stay certified.
"""

import importlib.util

__all__: list[str] = []

# Importable without Triton (the package imports every module; the kernel is only used where Triton is).
if importlib.util.find_spec("triton") is not None:
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice

    __all__ = ["evaluate_kernel", "search_kernel"]

    # exp and log in full float64 precision: libdevice's __nv_exp and __nv_log on a GPU, stated explicitly
    # (tl.exp and tl.log of float64 are left to the backend's lowering); NumPy's under the interpreter,
    # which has no libdevice.
    @triton.jit
    def _exp(x, LIBDEVICE: tl.constexpr):
        if LIBDEVICE:
            y = libdevice.exp(x)
        else:
            y = tl.exp(x)
        return y


    @triton.jit
    def _log(x, LIBDEVICE: tl.constexpr):
        if LIBDEVICE:
            y = libdevice.log(x)
        else:
            y = tl.log(x)
        return y


    @triton.jit
    def _expm1(x, LIBDEVICE: tl.constexpr):
        # Kahan: (u − 1)·x / log(u), u = e^x, a few ulps; x itself where u rounds to 1.
        u = _exp(x, LIBDEVICE)
        lu = _log(u, LIBDEVICE)
        ok = (u != 1.0) & (lu != 0.0) & (u < 1e300)
        return tl.where(ok, (u - 1.0) * x / tl.where(ok, lu, 1.0), tl.where(u >= 1e300, u, x))


    @triton.jit
    def _eval_grouped(N, M, R, s, m, theta, LIBDEVICE: tl.constexpr):
        nm = N * M
        hi = tl.minimum(m[:, None] + R, 1.0)
        x = theta[:, None] * M
        ex = _exp(-x, LIBDEVICE)
        den = hi + (1.0 - hi) * ex
        q = hi / den
        lg = _log(den, LIBDEVICE)
        phi = -theta * s + tl.sum(N * (x + lg), 1)
        # A bound on φ's rounding here (or in the eager search's order, with torch's exp/log): every
        # term's few ulps, summed in any order, plus the libm's; φ is raised by it before it may reject.
        err = theta * s + tl.sum(N * (x + tl.abs(lg) + 4.0), 1)
        d1 = -s + tl.sum(nm * q, 1)
        d2 = tl.sum(nm * M * (q * (1.0 - q)), 1)
        dm = tl.sum(tl.where(hi < 1.0, N * ((1.0 - ex) / den), 0.0), 1)
        amass = s - tl.sum(nm * hi, 1)
        return phi, d1, d2, dm, amass, err


    @triton.jit
    def _side(W, As, theta, lo, hi, mm, rho, rho_in, SERIES_X: tl.constexpr, LIBDEVICE: tl.constexpr,
              ONE_EXP: tl.constexpr):
        # One end of the chord (W points at mass As): g, and its contributions to φ′, φ″ and ∂φ/∂m.
        x = theta[:, None] * As
        big = x > SERIES_X
        if ONE_EXP:
            # One exp per bin instead of two: u = e^x (x ≤ θ_max·a_top = 700, finite), e^{−x} = 1/u and
            # expm1 from u (Kahan). A private variant (benchmarks/diag_search.py); e^{−x} within an ulp of
            # the default's, so the split form's ends may differ by the search's tol, still certified by
            # the float64 exponent of this kernel (every moved end re-checked, as for the default).
            u = _exp(x, LIBDEVICE)
            lu = _log(u, LIBDEVICE)
            okk = (u != 1.0) & (lu != 0.0)
            em1 = tl.where(okk, (u - 1.0) * x / tl.where(okk, lu, 1.0), x)
            pst = tl.where(big, 1.0 / tl.where(big, x, 1.0) - 1.0 / tl.where(big, em1, 1.0),
                           0.5 - x / 12.0 + x * x * x / 720.0)
            ex = 1.0 / u
        else:
            xs = tl.where(big, x, 1.0)
            pst = tl.where(big, 1.0 / xs - 1.0 / _expm1(xs, LIBDEVICE), 0.5 - x / 12.0 + x * x * x / 720.0)
            ex = _exp(-x, LIBDEVICE)
        p = tl.minimum(tl.maximum(pst, lo), hi)
        den = p + (1.0 - p) * ex
        qt = p / den
        lg = _log(den, LIBDEVICE)
        g = lg + (1.0 - p) * x
        inner = (pst > lo) & (pst < hi) & (x > 1e-6)
        gxp = ex / (den * den) - 1.0
        gpp = ((1.0 - ex) / den) * ((1.0 - ex) / den)
        corr = tl.where(inner & (gpp > 0.0), gxp * gxp / tl.where(gpp > 0.0, gpp, 1.0), 0.0)
        gp = (1.0 - ex) / den - x
        moving = tl.where(pst >= hi, mm + rho < 1.0, (pst <= lo) & (mm + rho_in < 1.0))
        phi = tl.sum(W * g, 1)
        # φ's rounding on this side (as the grouped form's): per bin a few ulps of log den (|log den| + 4:
        # den's relative rounding and the libm's), of (1 − p)·x and of p (|∂g/∂p| ≤ x):
        # W·(x + |log den| + 4).
        err = tl.sum(W * (x + tl.abs(lg) + 4.0), 1)
        d1 = tl.sum(W * As * (qt - p), 1)
        d2 = tl.sum(W * As * As * (qt * (1.0 - qt) + corr), 1)
        dm = tl.sum(tl.where(moving, W * gp, 0.0), 1)
        return phi, d1, d2, dm, err


    @triton.jit
    def _eval_split(A, bD, mcap, rho, rho_in, W0, W1, As0, As1, s, m, theta, SERIES_X: tl.constexpr,
                    LIBDEVICE: tl.constexpr, ONE_EXP: tl.constexpr):
        mm = m[:, None]
        below = (mm < mcap) & (A > 0.0)
        lin = tl.sum(tl.where(below, A * mm + bD, A), 1)
        dm = theta * tl.sum(tl.where(below, A, 0.0), 1)
        lo = tl.minimum(mm + rho_in, 1.0)
        hi = tl.minimum(mm + rho, 1.0)
        p0, a0, b0, c0, e0 = _side(W0, As0, theta, lo, hi, mm, rho, rho_in, SERIES_X, LIBDEVICE, ONE_EXP)
        p1, a1, b1, c1, e1 = _side(W1, As1, theta, lo, hi, mm, rho, rho_in, SERIES_X, LIBDEVICE, ONE_EXP)
        phi = theta * (lin - s) + (p0 + p1)
        # A bound on φ's rounding (the grouped form's rule): θ·(s + |lin|) for the linear part (its B
        # non-negative terms A·m + βD summed in any order, then − s), and each side's per-bin terms.
        err = theta * (s + tl.abs(lin)) + (e0 + e1)
        d1 = lin - s + (a0 + a1)
        d2 = b0 + b1
        dm = dm + (c0 + c1)
        return phi, d1, d2, dm, s - lin, err


    @triton.jit
    def _pair_layout(pairs, pmask, K, B, BB: tl.constexpr):
        # Each pair's row of per-group fields ((n, B), row-major; pair j is row j // K) and its mask.
        row = tl.where(pmask, pairs // K, 0)
        bins = tl.arange(0, BB)
        offs = row[:, None] * B + bins[None, :]
        fmask = pmask[:, None] & (bins[None, :] < B)
        return offs, fmask


    @triton.jit
    def _fields(f0, f1, f2, f3, f4, f5, f6, f7, f8, offs, fmask, SPLIT: tl.constexpr, INF: tl.constexpr):
        # The per-group fields (masked groups: no mass, so no term); m_cap −∞ on empty bins (split form).
        g0 = tl.load(f0 + offs, mask=fmask, other=0.0)
        g1 = tl.load(f1 + offs, mask=fmask, other=0.0)
        if SPLIT:
            g2 = tl.load(f2 + offs, mask=fmask, other=-INF)
            g3 = tl.load(f3 + offs, mask=fmask, other=0.0)
            g4 = tl.load(f4 + offs, mask=fmask, other=0.0)
            g5 = tl.load(f5 + offs, mask=fmask, other=0.0)
            g6 = tl.load(f6 + offs, mask=fmask, other=0.0)
            g7 = tl.load(f7 + offs, mask=fmask, other=0.0)
            g8 = tl.load(f8 + offs, mask=fmask, other=0.0)
        else:
            g2 = tl.load(f2 + offs, mask=fmask, other=0.0)
            g3 = g0
            g4 = g0
            g5 = g0
            g6 = g0
            g7 = g0
            g8 = g0
        return g0, g1, g2, g3, g4, g5, g6, g7, g8


    @triton.jit
    def search_kernel(
        s_ptr, a_ptr, b_ptr, m_ptr, th_ptr, tmax_ptr, act_ptr, out_ptr, cert_ptr,
        f0, f1, f2, f3, f4, f5, f6, f7, f8,
        n_pairs, K, B, level_ptr, idx_ptr, cnt_ptr,
        SPLIT: tl.constexpr, BP: tl.constexpr, BB: tl.constexpr, THETA_STEPS: tl.constexpr,
        MAX_PROBES: tl.constexpr, NEWTON_M_STEPS: tl.constexpr, DECREMENT: tl.constexpr,
        MARGIN: tl.constexpr, SERIES_X: tl.constexpr, INF: tl.constexpr, LIBDEVICE: tl.constexpr,
        ROUNDING: tl.constexpr, INDEXED: tl.constexpr, LAZY: tl.constexpr, ONE_EXP: tl.constexpr,
        COUNT: tl.constexpr, LOW_FIRST: tl.constexpr,
    ):
        # Private variants (benchmarks/diag_search.py; all off by default, the same search either way):
        # INDEXED: the program's pairs are idx[j] (n_pairs of them; the caller's order: the open pairs
        # only, or sorted by expected work); LAZY: the per-group fields re-loaded at every evaluation
        # (from L1/L2) instead of held in registers across the search; ONE_EXP: one exp per split-form
        # bin side (_side); COUNT: per pair its probes and θ evaluations, per program its evaluations
        # (the divergence: a program evaluates until its slowest pair is done), into cnt_ptr; LOW_FIRST:
        # where the Newton step in m from a level not rejected lands at or below a (the root below the
        # certified end, as where the Chernoff test never beats the Hoeffding end it starts from), the
        # next probe is a + tol/2, once per pair: not rejected there, the bracket closes at a (the end the
        # bisection reaches after log2(width/tol) probes); rejected, a moves up (certified) and the
        # search goes on as before. Any probe keeps a certified: the ends are the default's or wider by
        # at most the search's tol where the exponent is monotone in m.
        slot = tl.program_id(0) * BP + tl.arange(0, BP)
        pmask = slot < n_pairs
        if INDEXED:
            pairs = tl.load(idx_ptr + slot, mask=pmask, other=0)
        else:
            pairs = slot
        offs, fmask = _pair_layout(pairs, pmask, K, B, BB)
        s = tl.load(s_ptr + pairs, mask=pmask, other=1.0)
        a = tl.load(a_ptr + pairs, mask=pmask, other=0.0)
        b = tl.load(b_ptr + pairs, mask=pmask, other=0.0)
        m = tl.load(m_ptr + pairs, mask=pmask, other=0.0)
        theta = tl.load(th_ptr + pairs, mask=pmask, other=1.0)
        t_max = tl.load(tmax_ptr + pairs, mask=pmask, other=1.0)
        active = (tl.load(act_ptr + pairs, mask=pmask, other=0) != 0) & pmask
        inf = INF
        # log(δ′/2) and tol as float64 (a Python float argument would reach the kernel as float32).
        log_level = tl.load(level_ptr)
        tol = tl.load(level_ptr + 1)
        if not LAZY:
            g0, g1, g2, g3, g4, g5, g6, g7, g8 = _fields(f0, f1, f2, f3, f4, f5, f6, f7, f8, offs, fmask, SPLIT, INF)
        if COUNT:
            n_probe = tl.zeros((BP,), tl.int32)
            n_eval = tl.zeros((BP,), tl.int32)
            n_prog = tl.zeros((BP,), tl.int32)
        # The θ at which the reported end was rejected (−1: the end given, never moved here), so that the
        # caller can re-check every moved end with its own float64 exponent (_chernoff_device._search).
        cert = tl.full((BP,), -1.0, tl.float64)
        if LOW_FIRST:
            low_used = slot < 0  # none yet
        step = 0
        while (step < MAX_PROBES) & (tl.max(active.to(tl.int32), 0) > 0):
            # The θ profile at m (._chernoff_device._profile).
            best = tl.full((BP,), inf, tl.float64)
            grad = tl.zeros((BP,), tl.float64)
            th_best = theta
            t_lo = tl.zeros((BP,), tl.float64)
            t_hi = tl.full((BP,), inf, tl.float64)
            th = theta
            going = active
            amass = s
            # At most THETA_STEPS θ steps, fewer once no pair of the program moves θ any more (a pair that
            # stopped re-evaluates at the same θ in the eager search: nothing changes, so stopping early
            # gives the same profile). The first step always runs: `going` starts as the open pairs.
            it = 0
            while (it < THETA_STEPS) & (tl.max(going.to(tl.int32), 0) > 0):
                if LAZY:
                    h0, h1, h2, h3, h4, h5, h6, h7, h8 = _fields(f0, f1, f2, f3, f4, f5, f6, f7, f8, offs, fmask,
                                                                 SPLIT, INF)
                else:
                    h0, h1, h2, h3, h4, h5, h6, h7, h8 = g0, g1, g2, g3, g4, g5, g6, g7, g8
                if COUNT:
                    n_eval += going.to(tl.int32)
                    n_prog += 1
                if SPLIT:
                    phi, d1, d2, dm, am, err = _eval_split(h0, h1, h2, h3, h4, h5, h6, h7, h8, s, m, th,
                                                           SERIES_X, LIBDEVICE, ONE_EXP)
                else:
                    phi, d1, d2, dm, am, err = _eval_grouped(h0, h1, h2, s, m, th, LIBDEVICE)
                # Conservative, both forms: the rejection must hold with φ's rounding bound ((BB + 16)
                # units of 2⁻⁵² per unit of err) added, so that the caller's float64 re-check agrees.
                phi = phi + err * ROUNDING
                first = it == 0
                amass = tl.where(first, am, amass)
                going = tl.where(first, going & (am > 0.0), going)
                better = phi < best
                best = tl.where(better, phi, best)
                grad = tl.where(better, dm, grad)
                th_best = tl.where(better, th, th_best)
                t_lo = tl.where(d1 < 0.0, tl.maximum(t_lo, th), t_lo)
                t_hi = tl.where(d1 >= 0.0, tl.minimum(t_hi, th), t_hi)
                pos = d2 > 0.0
                decrement = tl.where(pos, d1 * d1 / tl.where(pos, d2, 1.0), inf)
                going = (going & (decrement > DECREMENT) & (decrement > MARGIN * tl.abs(best - log_level))
                         & ~((d1 < 0.0) & (th >= t_max)))
                # ._chernoff_device._next_theta
                newton = th - d1 / d2
                grow = tl.minimum(4.0 * tl.maximum(th, t_lo), t_max)
                fallback = tl.where(t_hi < inf, 0.5 * (t_lo + t_hi), grow)
                ok = (newton == newton) & (tl.abs(newton) < inf) & (newton > t_lo) & (newton < t_hi)
                nxt = tl.minimum(tl.where(ok, newton, fallback), t_max)
                th = tl.where(going, nxt, th)
                it += 1
            g = tl.where(amass > 0.0, best - log_level, inf)
            # The probe's update (._chernoff_device._probe).
            theta = tl.where(active, tl.maximum(th_best, 1e-12 * t_max), theta)
            rejected = g <= 0.0
            a = tl.where(active & rejected, m, a)
            cert = tl.where(active & rejected, th_best, cert)
            b = tl.where(active & ~rejected, m, b)
            gpos = grad > 0.0
            newton_m = m - g / tl.where(gpos, grad, 1.0)
            mid = 0.5 * (a + b)
            use = (gpos & (newton_m == newton_m) & (tl.abs(newton_m) < inf) & (newton_m > a) & (newton_m < b)
                   & (step < NEWTON_M_STEPS))
            nxt_m = tl.where(use, newton_m, mid)
            if LOW_FIRST:
                jump = (active & ~rejected & gpos & (newton_m == newton_m) & (newton_m <= a) & ~low_used
                        & (step < NEWTON_M_STEPS))
                nxt_m = tl.where(jump, a + 0.5 * tol, nxt_m)
                low_used = low_used | jump
            wide = b - a > tol
            nxt_m = tl.where(wide, tl.minimum(tl.maximum(nxt_m, a + 0.5 * tol), b - 0.5 * tol), mid)
            m = tl.where(active, nxt_m, m)
            if COUNT:
                n_probe += active.to(tl.int32)
            active = active & wide
            step += 1
        tl.store(out_ptr + pairs, a, mask=pmask)
        tl.store(cert_ptr + pairs, cert, mask=pmask)
        if COUNT:
            tl.store(cnt_ptr + 3 * pairs, n_probe, mask=pmask)
            tl.store(cnt_ptr + 3 * pairs + 1, n_eval, mask=pmask)
            tl.store(cnt_ptr + 3 * pairs + 2, n_prog, mask=pmask)


    @triton.jit
    def evaluate_kernel(
        s_ptr, m_ptr, th_ptr, out_ptr, f0, f1, f2, f3, f4, f5, f6, f7, f8, n_pairs, K, B,
        SPLIT: tl.constexpr, BP: tl.constexpr, BB: tl.constexpr, SERIES_X: tl.constexpr, INF: tl.constexpr,
        LIBDEVICE: tl.constexpr, ONE_EXP: tl.constexpr,
    ):
        # One evaluation of the search kernel's exponent per pair, at the caller's (m, θ): φ, its rounding
        # bound and the mass above the band, three float64 per pair (the diagnostics compare them with the
        # eager float64 exponent on a device: benchmarks/diag_grouped_search.py --ecg).
        pairs = tl.program_id(0) * BP + tl.arange(0, BP)
        pmask = pairs < n_pairs
        offs, fmask = _pair_layout(pairs, pmask, K, B, BB)
        s = tl.load(s_ptr + pairs, mask=pmask, other=1.0)
        m = tl.load(m_ptr + pairs, mask=pmask, other=0.0)
        theta = tl.load(th_ptr + pairs, mask=pmask, other=1.0)
        g0, g1, g2, g3, g4, g5, g6, g7, g8 = _fields(f0, f1, f2, f3, f4, f5, f6, f7, f8, offs, fmask, SPLIT, INF)
        if SPLIT:
            phi, d1, d2, dm, am, err = _eval_split(g0, g1, g2, g3, g4, g5, g6, g7, g8, s, m, theta, SERIES_X,
                                                   LIBDEVICE, ONE_EXP)
        else:
            phi, d1, d2, dm, am, err = _eval_grouped(g0, g1, g2, s, m, theta, LIBDEVICE)
        tl.store(out_ptr + 3 * pairs, phi, mask=pmask)
        tl.store(out_ptr + 3 * pairs + 1, err, mask=pmask)
        tl.store(out_ptr + 3 * pairs + 2, am, mask=pmask)
