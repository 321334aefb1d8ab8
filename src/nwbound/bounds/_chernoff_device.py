"""The band-Chernoff interval search where the statistics live (PyTorch, any device).

The same test and the same search as the host solvers (:mod:`._chernoff`, the grouped and
per-point form; :mod:`._chernoff_binned`, the split form of a histogram with exact per-bin sums),
batched for a device:

* every (query, class, end) pair advances together: the lower ends search the upper tail with
  ``S``, the upper ends the upper tail of the complementary labels (``S′``, ``m′ = 1 − m``), in
  one ``(n, 2C)`` array against the per-query groups ``(n, 1, B)`` (broadcast, never gathered);
* a pair's bracket ``[a, b]`` keeps ``a`` *certified* rejected (an explicit θ with exponent
  ``≤ log(δ′/2)``, or the Hoeffding end of a dominating test) and ``b`` judged not rejected; each
  probe takes a fixed number of safeguarded Newton steps in θ, warm-started from the previous
  probe's best θ; finished pairs are frozen by masks, and the host reads one flag every few
  probes (no per-pair traffic).

Why the result contains the exact confidence set, as the host's does: the reported end is always
a bracket's ``a``, a level rejected at an explicit θ by an exponent that dominates the exact one
(evaluated in float64, the host's formulas), and the exact exponent is monotone in the level, so
every level below ``a`` is rejected too. Fewer θ steps than the host's can only leave a probe
uncertified, which moves ``b`` (never ``a``) inward: the interval can be wider, never narrower.
The upper end ``1 − a′`` is rounded up (one ulp towards 1), which the host leaves to ``tol``.

Why this is a second copy of the host's bracket (:func:`._chernoff._bracket`) and not the same code
through the array-API namespace: the host compacts the open pairs after every probe (fancy indexing, a
data-dependent shape) and runs each θ-profile to its decrement test; here the shapes stay fixed
(masks, a fixed number of θ steps, a compiled probe, the fused Triton kernel) so that the host reads
the device only once every few probes. One routine would force one strategy on both: host results
no longer bit for bit the same, or a device that synchronises at every probe.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable

from .._config import get_config
from ._chernoff import (
    _MAX_EXPONENT,
    _NEWTON_M_STEPS,
    _THETA_DECREMENT,
    _THETA_MARGIN,
)

__all__ = ["chernoff_interval_binned_device", "chernoff_interval_device", "device_limits", "hoeffding_limits_device"]

# θ Newton steps per probe (warm-started; the host takes up to 30 from the same start), probes in
# all (the host's cap is 80: with tol = 1e-7 bisection alone needs 24), and probes between two
# reads of the "any pair still open" flag on the host.
_THETA_STEPS = 6
_MAX_PROBES = 64
_CHECK_EVERY = 4
_SERIES_X = 1e-3


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - the device path checks for torch first
        from ..utils import install_hint

        raise ImportError(f"The device bound solver needs PyTorch: {install_hint('gpu')}.") from exc
    return torch


def _f64(torch: Any, a: Any, device: Any) -> Any:
    """``a`` as a float64 tensor on ``device``: tensors converted there, Python and NumPy scalars filled
    there (no copy from the host: a copy to a GPU from pageable memory waits for the device's queue)."""
    if isinstance(a, (int, float)) or (type(a).__module__ == "numpy" and getattr(a, "ndim", None) == 0):
        return torch.full((), float(a), dtype=torch.float64, device=device)
    return torch.as_tensor(a, dtype=torch.float64, device=device)


# Host-computed constant arrays (the histogram's edges and kernel values) copied once per value and device.
_CONSTANTS: dict = {}


def _constant(torch: Any, a: Any, device: Any) -> Any:
    """NumPy array ``a`` (a constant of the bound: a few values) as a float64 tensor on ``device``, copied
    once per value and device and then reused (the copy of the first call is the only synchronisation)."""
    import numpy as np

    arr = np.ascontiguousarray(a, dtype=np.float64)
    key = (str(device), arr.shape, arr.tobytes())
    if key not in _CONSTANTS:
        if len(_CONSTANTS) >= 256:
            _CONSTANTS.clear()
        _CONSTANTS[key] = torch.as_tensor(arr, device=device)
    return _CONSTANTS[key]


# ---------------------------------------------------------------------------
# Exponents: (phi, ∂φ/∂θ, ∂²φ/∂θ², ∂φ/∂m, S − linear part) at (m, θ) for pairs (n, K), and one
# probe of the search. Plain functions of tensors (no Python state), so that torch.compile can
# fuse a probe (its θ steps and the exponent's reductions over the bins) into a few kernels.
# ---------------------------------------------------------------------------


def _eval_grouped(torch: Any, data: tuple, s: Any, m: Any, theta: Any) -> tuple:
    """:func:`._chernoff._evaluate` for groups ``N, M, R`` of shape (n, K or 1, B)."""
    N, M, R = data
    nm = N * M
    hi = torch.clamp(m[..., None] + R, max=1.0)
    x = theta[..., None] * M
    ex = torch.exp(-x)
    den = hi + (1.0 - hi) * ex
    q = hi / den
    phi = -theta * s + (N * (x + torch.log(den))).sum(-1)
    d1 = -s + (nm * q).sum(-1)
    d2 = (nm * M * (q * (1.0 - q))).sum(-1)
    dm = torch.where(hi < 1.0, N * ((1.0 - ex) / den), 0.0).sum(-1)
    amass = s - (nm * hi).sum(-1)
    return phi, d1, d2, dm, amass


def _grouped_at(torch: Any, data: tuple, s: Any, m: Any) -> Callable:
    """:func:`_eval_grouped` at a fixed ``m`` as a function of θ: the terms that do not depend on θ
    (``N·M``, the band's ``hi``, the mass above it) computed once per probe instead of once per θ step.
    The same operations in the same order on the same values: the same results, fewer kernels."""
    N, M, R = data
    nm = N * M
    nmM = nm * M
    hi = torch.clamp(m[..., None] + R, max=1.0)
    low = 1.0 - hi
    below = hi < 1.0
    amass = s - (nm * hi).sum(-1)
    minus_s = -s
    minus_M = -M  # θ·(−M) = −(θ·M) and a − (−x) = a + x exactly: e^{−x} and x + log den with one kernel fewer

    def at(theta: Any) -> tuple:
        neg_x = theta[..., None] * minus_M
        ex = torch.exp(neg_x)
        den = hi + low * ex
        q = hi / den
        phi = (N * (torch.log(den) - neg_x)).sum(-1) - theta * s  # = −θ·s + Σ N·(x + log den), exactly
        d1 = minus_s + (nm * q).sum(-1)
        d2 = (nmM * (q * (1.0 - q))).sum(-1)
        dm = torch.where(below, N * ((1.0 - ex) / den), 0.0).sum(-1)
        return phi, d1, d2, dm, amass

    return at


def _split_phi(torch: Any, data: tuple, s: Any, m: Any, theta: Any) -> tuple:
    """The split form's exponent φ and ``S − linear part`` (what a rejection needs), and the
    intermediate terms :func:`_eval_split` goes on from: one copy of the formula for both."""
    A, bD, mcap, rho, rho_in, W, Aside = data
    mm = m[..., None, None]
    below = (mm < mcap) & (A > 0)
    lin = torch.where(below, A * mm + bD, A).sum((-2, -1))
    lo = torch.clamp(mm + rho_in, max=1.0)
    hi = torch.clamp(mm + rho, max=1.0)
    x = theta[..., None, None] * Aside
    pst = torch.where(x > _SERIES_X, 1.0 / x - 1.0 / torch.expm1(x), 0.5 - x / 12.0 + x**3 / 720.0)
    p = torch.minimum(torch.maximum(pst, lo), hi)
    ex = torch.exp(-x)
    den = p + (1.0 - p) * ex
    g = torch.log(den) + (1.0 - p) * x
    phi = theta * (lin - s) + (W * g).sum((-2, -1))
    return phi, s - lin, (mm, below, lin, lo, hi, x, pst, p, ex, den)


def _eval_split(torch: Any, data: tuple, s: Any, m: Any, theta: Any) -> tuple:
    """:func:`._chernoff_binned._evaluate_split` for per-bin fields of shape (n, 1, 1, B) and the
    chord's two ends ``W``, ``Aside`` (n, 1, 2, B) (Λ at a_hi, n − Λ at a_lo)."""
    A, bD, mcap, rho, rho_in, W, Aside = data
    phi, amass, (mm, below, lin, lo, hi, x, pst, p, ex, den) = _split_phi(torch, data, s, m, theta)
    dm = theta * torch.where(below, A, 0.0).sum((-2, -1))
    qt = p / den
    inner = (pst > lo) & (pst < hi) & (x > 1e-6)
    gxp = ex / (den * den) - 1.0
    gpp = ((1.0 - ex) / den) ** 2
    corr = torch.where(inner & (gpp > 0), gxp * gxp / torch.where(gpp > 0, gpp, 1.0), 0.0)
    gp = (1.0 - ex) / den - x
    moving = torch.where(pst >= hi, mm + rho < 1.0, (pst <= lo) & (mm + rho_in < 1.0))
    d1 = lin - s + (W * Aside * (qt - p)).sum((-2, -1))
    d2 = (W * Aside * Aside * (qt * (1.0 - qt) + corr)).sum((-2, -1))
    dm = dm + torch.where(moving, W * gp, 0.0).sum((-2, -1))
    return phi, d1, d2, dm, amass


def _finite(torch: Any, x: Any) -> Any:
    """``torch.isfinite(x)`` in two kernels instead of four (``|x| < ∞`` is False for NaN and ±∞ alike)."""
    return x.abs() < math.inf


def _next_theta(torch: Any, theta: Any, d1: Any, d2: Any, t_lo: Any, t_hi: Any, t_max: Any) -> Any:
    newton = theta - d1 / d2
    grow = torch.minimum(4.0 * torch.maximum(theta, t_lo), t_max)
    fallback = torch.where(_finite(torch, t_hi), 0.5 * (t_lo + t_hi), grow)
    ok = _finite(torch, newton) & (newton > t_lo) & (newton < t_hi)
    return torch.minimum(torch.where(ok, newton, fallback), t_max)


def _profile(torch: Any, evaluate: Callable, data: tuple, s: Any, m: Any, theta: Any, t_max: Any,
             log_level: Any) -> tuple:
    """``g(m) = min over the θ tried of φ − log(δ′/2)`` (an upper bound on the true minimum:
    ``g ≤ 0`` certifies rejection), ``∂φ/∂m`` at the best θ, and that θ.

    Kernel count (the per-point form is launch-bound on a GPU): the grouped exponent's θ-free terms
    once per probe (:func:`_grouped_at`), the comparisons shared, and the last θ step updates only
    the best value (its bracket and next θ would go unused): the same values as step-by-step."""
    if evaluate is _eval_grouped:
        at = _grouped_at(torch, data, s, m)
    else:
        def at(th: Any) -> tuple:
            return evaluate(torch, data, s, m, th)
    best = torch.full_like(s, math.inf)
    grad = torch.zeros_like(s)
    th_best = theta
    t_lo = torch.zeros_like(s)
    t_hi = torch.full_like(s, math.inf)
    th = theta
    going = torch.ones_like(s, dtype=torch.bool)
    amass = s
    for it in range(_THETA_STEPS):
        phi, d1, d2, dm, a = at(th)
        if it == 0:
            amass = a
            going = going & (amass > 0)
        better = phi < best
        best = torch.where(better, phi, best)
        grad = torch.where(better, dm, grad)
        th_best = torch.where(better, th, th_best)
        if it == _THETA_STEPS - 1:
            break  # the bracket, the decrement and the next θ of the last step are not used
        falling = d1 < 0
        t_lo = torch.where(falling, torch.maximum(t_lo, th), t_lo)
        t_hi = torch.where(d1 >= 0, torch.minimum(t_hi, th), t_hi)
        curved = d2 > 0
        decrement = torch.where(curved, d1 * d1 / torch.where(curved, d2, 1.0), math.inf)
        going = (going & (decrement > _THETA_DECREMENT) & (decrement > _THETA_MARGIN * (best - log_level).abs())
                 & ~(falling & (th >= t_max)))
        th = torch.where(going, _next_theta(torch, th, d1, d2, t_lo, t_hi, t_max), th)
    g = torch.where(amass > 0, best - log_level, math.inf)
    return g, grad, th_best


def _probe(torch: Any, split: bool, data: tuple, s: Any, a: Any, b: Any, m: Any, theta: Any, t_max: Any,
           active: Any, log_level: Any, tol: Any, newton_m: Any) -> tuple:
    """One probe of every pair: the θ profile at ``m``, the bracket's update, the next ``m``."""
    evaluate = _eval_split if split else _eval_grouped
    g, gm, th = _profile(torch, evaluate, data, s, m, theta, t_max, log_level)
    theta = torch.where(active, torch.maximum(th, 1e-12 * t_max), theta)
    rejected = g <= 0
    a = torch.where(active & rejected, m, a)
    b = torch.where(active & ~rejected, m, b)
    newton = m - g / torch.where(gm > 0, gm, 1.0)
    mid = 0.5 * (a + b)
    use = (gm > 0) & _finite(torch, newton) & (newton > a) & (newton < b)
    use = use & newton_m  # a 0-d bool tensor: one compiled graph for every probe
    nxt = torch.where(use, newton, mid)
    wide = b - a > tol
    nxt = torch.where(wide, torch.minimum(torch.maximum(nxt, a + 0.5 * tol), b - 0.5 * tol), mid)
    m = torch.where(active, nxt, m)
    return a, b, m, theta, active & wide


_COMPILED: dict = {}
# The fused Triton search (:mod:`._chernoff_triton`) where it applies; "failed" after a failure.
_TRITON_SEARCH: dict = {}
# A list (benchmarks/diag_grouped_search.py sets one): every fused search call's inputs and outputs are
# appended to it; None (the default) keeps none.
_RECORD: list | None = None


def _probe_for(torch: Any, device: Any) -> Callable:
    """The eager search's probe, ``torch.compile``'d as the config key ``compile_bounds`` says: True always,
    "auto" on CUDA (fused kernels; the first call compiles), False never (the default until a device check
    has timed both: bench_device_bounds.py). A compile failure falls back to eager with a warning.

    Examples
    --------
    >>> import torch
    >>> import nwbound
    >>> from nwbound.bounds._chernoff_device import _probe, _probe_for
    >>> _probe_for(torch, torch.device("cpu")) is _probe
    True
    >>> with nwbound.config_context(compile_bounds="auto"):  # compiled on CUDA only
    ...     _probe_for(torch, torch.device("cpu")) is _probe
    True
    """
    mode = get_config()["compile_bounds"]
    want = mode is True or (mode == "auto" and getattr(device, "type", "") == "cuda")
    if not want or _COMPILED.get("failed"):
        return _probe
    if "probe" not in _COMPILED:
        _COMPILED["probe"] = torch.compile(_probe, dynamic=True)
    compiled = _COMPILED["probe"]

    def run(*args: Any) -> tuple:
        try:
            return compiled(*args)
        except Exception as exc:  # noqa: BLE001 - the eager probe computes the same
            _COMPILED["failed"] = True
            warnings.warn(f"torch.compile of the device Chernoff search failed ({type(exc).__name__}: "
                          f"{str(exc)[:200]}); using the eager search.", RuntimeWarning, stacklevel=2)
            return _probe(*args)

    return run


def _fused_for(split: bool, s: Any) -> bool:
    """Whether :func:`_search` takes the fused Triton kernel for these pairs (:func:`._chernoff_triton.
    triton_search_applies`). The split (binned) form always; the grouped (per-point) form on CUDA only
    with the config key ``fused_grouped`` True (the kernel's own launch) or ``"bp1"`` (:data:`_GROUPED_BP1`:
    one pair per program, one warp), off by default (on an H100 its raw kernel, 32 pairs per program,
    rejected levels the float64 exponent does not, and the re-check then sent them to the eager search,
    so it cost time and gained none), and always under Triton's CPU interpreter (the tests)."""
    from ._chernoff_triton import triton_search_applies

    if not triton_search_applies(s):
        return False
    return split or s.device.type != "cuda" or get_config()["fused_grouped"] is not False


# The grouped form's launch under fused_grouped="bp1" (issue 19): one (query, class, end) pair per
# program and one warp, the launch whose split-form ends were all certified by the float64 re-check on an
# H100 (0 refused, 6.5 ms, against 27 refused with 16 pairs per program); passed to the kernel's private
# launch switch (``triton_search(..., _variant=...)``). The re-check of every moved end stays on.
_GROUPED_BP1 = {"bp": 1, "warps": 1}


def _grouped_launch(split: bool) -> dict | None:
    """The fused kernel's launch for :func:`_search`: :data:`_GROUPED_BP1` for the grouped form under
    the config key ``fused_grouped="bp1"``; None otherwise (the kernel's defaults, or the key ``search_variant``)."""
    if split or get_config()["fused_grouped"] != "bp1":
        return None
    return dict(_GROUPED_BP1)


def _verify_fused(split: bool) -> bool:
    """Whether the fused kernel's moved ends are re-checked by :func:`fused_ends_certified`:
    the config key ``fused_verify`` True (default) both forms, ``"grouped"`` the per-point form only
    (round 9's default before the re-check of the split form), False none (the diagnostics only: an end
    then rests on the kernel's own float64 arithmetic and its margin)."""
    mode = get_config()["fused_verify"]
    return mode is True or (mode == "grouped" and not split)


def fused_ends_certified(torch: Any, split: bool, data: Any, s: Any, given: Any, ends: Any, cert: Any,
                         log_level: float) -> Any:
    """Which ends of the fused kernel are certified by this module's own float64 exponent (PyTorch).

    An end the kernel moved (``ends != given``) counts only where the eager exponent at the kernel's
    θ (``cert``) rejects it: ``φ(end, θ) ≤ log(δ′/2)`` with mass above the band. The kernel runs the
    same formulas, but a GPU compiles them with its own contractions (FMA) and libm, so its rejection
    is re-checked here before an end is reported; where the check fails :func:`_search` searches
    those pairs again with the eager search (from ``given``, a certified end). A few elementwise kernels on
    ``(n, K, B)``, no read.

    Examples
    --------
    >>> import math
    >>> import torch
    >>> from nwbound.bounds._chernoff_device import fused_ends_certified
    >>> f64 = dict(dtype=torch.float64)
    >>> N, M, R = torch.ones(1, 1, 4, **f64), torch.ones(1, 1, 4, **f64), torch.zeros(1, 1, 4, **f64)
    >>> s, given = torch.tensor([[4.0]], dtype=torch.float64), torch.zeros(1, 1, dtype=torch.float64)
    >>> ok = fused_ends_certified(torch, False, (N, M, R), s, given, torch.tensor([[0.2]], dtype=torch.float64),
    ...                           torch.tensor([[40.0]], dtype=torch.float64), math.log(0.025))
    >>> bad = fused_ends_certified(torch, False, (N, M, R), s, given, torch.tensor([[0.5]], dtype=torch.float64),
    ...                            torch.tensor([[40.0]], dtype=torch.float64), math.log(0.025))
    >>> bool(ok[0, 0]), bool(bad[0, 0])
    (True, False)
    """
    theta = torch.where(cert > 0, cert, 1.0)
    if split:  # φ alone (no derivatives): one evaluation of the exponent per pair
        phi, amass, _ = _split_phi(torch, data, s, ends, theta)
    else:
        phi, _, _, _, amass = _eval_grouped(torch, data, s, ends, theta)
    moved = ends != given
    rejects = (cert > 0) & (amass > 0) & (phi <= log_level) & torch.isfinite(ends)
    return ~moved | rejects


#: Refused ends of the fused search searched again without a warning: at most this many, or 1 % of the
#: ends it moved (rounding disagreements at the level are rare, not zero).
_QUIET_REFUSALS = 16

#: How much stricter (relative to ``|log(δ′/2)|``, at least 1) the level of the fused kernel's second launch
#: is, on the ends the float64 re-check refused: far above the few ulps by which the kernel's and PyTorch's
#: float64 exponents differ, far below the search's tolerance in the level's effect on an end.
_RETRY_LEVEL_GAP = 1e-9


def _search(torch: Any, split: bool, data: tuple, s: Any, a: Any, b: Any, m: Any, theta: Any, t_max: Any,
            log_level: float, tol: float, open_: Any, *, fused: bool = True, few: bool = False) -> Any:
    """Left ends: bracket ``[a, b]`` (``a`` certified rejected), first probe ``m``; ``open_`` the pairs
    still searched. Returns ``a`` at the end (the largest certified level).

    The fused Triton kernel where it applies (``fused``); its moved ends re-checked in float64, both
    forms by default (:func:`fused_ends_certified`: one evaluation of φ for every pair, moved or not —
    gathering the moved ones would need a read and copy about as much as it saves —, and one read of the
    refused count): where some are refused (with a warning where they are more than
    :data:`_QUIET_REFUSALS` and 1 % of the moved ends), the kernel once more on those pairs alone, with
    its rounding margin and a level stricter by :data:`_RETRY_LEVEL_GAP`, re-checked the same way; the
    eager search's ends for the pairs refused again.

    Rounds of :data:`_CHECK_EVERY` probes; between rounds the host reads how many pairs are still open
    and, once they are under half of all, the next rounds probe only those (their query's groups
    gathered): the few slow pairs do not keep the finished ones busy. ``few``: the open pairs are few from
    the start (the fused kernel's refused ends), so the first round reads and gathers them too.
    """
    from ._chernoff_triton import _interpreting, triton_search

    if fused and _fused_for(split, s) and not _TRITON_SEARCH.get("failed"):
        n = s.shape[0]
        if split:  # (n, 1, 1, B) fields and the chord's (n, 1, 2, B) ends → (n, B) each
            B = data[0].shape[-1]
            flat = tuple(x.reshape(n, B) for x in data[:5]) + (
                data[5][:, 0, 0, :], data[5][:, 0, 1, :], data[6][:, 0, 0, :], data[6][:, 0, 1, :])
        else:  # (n, 1, B) groups
            flat = tuple(x[:, 0, :] for x in data)
        launch = _grouped_launch(split)
        try:
            ends, cert = triton_search(split, flat, s, a, b, m, theta, t_max, log_level, tol, open_,
                                       theta_steps=_THETA_STEPS, max_probes=_MAX_PROBES,
                                       newton_m_steps=_NEWTON_M_STEPS, decrement=_THETA_DECREMENT,
                                       margin=_THETA_MARGIN, series_x=_SERIES_X,
                                       **({} if launch is None else {"_variant": launch}))
        except Exception as exc:  # noqa: BLE001 - the eager search computes the same ends
            if _interpreting():
                raise  # the tests: a broken kernel must fail loudly
            _TRITON_SEARCH["failed"] = True
            warnings.warn(f"The fused Triton Chernoff search failed ({type(exc).__name__}: {str(exc)[:300]}); "
                          "using the eager PyTorch search.", RuntimeWarning, stacklevel=2)
        else:
            if _RECORD is not None:
                _RECORD.append(dict(split=split, data=data, s=s, given=a.expand(ends.shape), ends=ends, cert=cert,
                                    t_max=t_max.expand(ends.shape), log_level=log_level))
            if not _verify_fused(split):
                return ends
            given = a.expand(ends.shape)
            ok = fused_ends_certified(torch, split, data, s, given, ends, cert, log_level)
            refused_t = (~ok).sum()
            _TRITON_SEARCH["unverified"] = refused_t  # the diagnostics read it
            refused, moved = (int(v) for v in torch.stack([refused_t, (ends != given).sum()]).tolist())  # the one read
            if refused == 0:
                return ends
            if refused > max(_QUIET_REFUSALS, moved // 100):
                # A few refusals are rounding: the kernel's float64 and PyTorch's (libm, summation order)
                # disagree on a level within an ulp of the bound's; those pairs are searched again quietly,
                # the interval being the same kind. Many mean the kernel's arithmetic is off on this device
                # (the per-point form on an H100: thousands): said, as the eager search is much slower.
                hint = ("nwbound.config_context(triton_search=False) skips the fused search" if split else
                        "nwbound.config_context(fused_grouped=False) skips the fused per-point search")
                warnings.warn(f"The fused Triton Chernoff search gave {refused} interval ends (of {moved} it moved) "
                              "that its float64 re-check does not certify; those are searched again (the kernel at a "
                              f"stricter level, then the eager PyTorch search) ({hint}).", RuntimeWarning, stacklevel=2)
            # Once more through the kernel, the refused pairs alone, with its rounding margin and a level
            # stricter by _RETRY_LEVEL_GAP: a disagreement of rounding at the level clears there, in one
            # launch and one read, where the eager search costs thousands of launches (about 7 400 on an
            # H200 at the ECG shapes). A stricter level only widens an interval; the re-check stays at the
            # true level, so every reported end is certified as before.
            retry = open_ & ~ok
            ends2, cert2 = triton_search(split, flat, s, a, b, m, theta, t_max,
                                         log_level - _RETRY_LEVEL_GAP * max(1.0, abs(log_level)), tol, retry,
                                         theta_steps=_THETA_STEPS, max_probes=_MAX_PROBES,
                                         newton_m_steps=_NEWTON_M_STEPS, decrement=_THETA_DECREMENT,
                                         margin=_THETA_MARGIN, series_x=_SERIES_X,
                                         _variant={**(launch or {}), "margin": 1})
            ends = torch.where(ok, ends, ends2)
            ok = ok | fused_ends_certified(torch, split, data, s, given, ends2, cert2, log_level)
            still_t = (~ok).sum()
            _TRITON_SEARCH["unverified_after_retry"] = still_t
            if int(still_t) == 0:  # the second read
                return ends
            # few=True: the refused pairs are gathered from the first round (the in-place first round of
            # the eager search would probe every pair's fields for a handful of open ones).
            eager = _search(torch, split, data, s, a, b, m, theta, t_max, log_level, tol, open_ & ~ok, fused=False,
                            few=True)
            return torch.where(ok, ends, eager)
    probe = _probe_for(torch, s.device)
    shape = s.shape
    K = shape[1]
    # The level and the tolerance as 0-d tensors: a compiled probe serves every δ′ without recompiling.
    # Filled on the device (a copy from the host waits for the device's queue), and the first round in
    # place without reading the open pairs (pairs not open do not move): the same ends as reading them,
    # two to five host reads fewer. The config key search_reads="full" (issue 19's diag_knn.py): the
    # form before issue 19 (host copies, the first round's open pairs read).
    lean = get_config()["search_reads"] == "lean"
    if lean:
        level_t, tol_t = (torch.full((), v, dtype=torch.float64, device=s.device) for v in (log_level, tol))
        flags = [torch.full((), v, dtype=torch.bool, device=s.device) for v in (True, False)]
    else:
        level_t, tol_t = (torch.tensor(v, dtype=torch.float64, device=s.device) for v in (log_level, tol))
        flags = [torch.tensor(v, device=s.device) for v in (True, False)]
    state = [x.expand(shape).contiguous() for x in (a, b, m, theta)]
    t_max = t_max.expand(shape).contiguous()
    active = (open_ & (b - a > tol)).expand(shape).contiguous()
    total = active.numel()
    step = 0
    while step < _MAX_PROBES:
        # The one read per round: the open pairs' indices (their count decides the round's form; the
        # gathered form uses them, so it needs no second read).
        if lean and step == 0 and not few:
            idx, n_open = None, total  # the first round in place, unread
        else:
            idx = torch.nonzero(active.reshape(-1)).squeeze(1)
            n_open = int(idx.shape[0])
        if n_open == 0:
            break
        if 2 * n_open > total:  # most pairs open: all of them, in place
            args = (data, s, *state, t_max, active)
            for _ in range(_CHECK_EVERY):
                a_, b_, m_, th_, active = probe(torch, split, *args[:6], args[6], active, level_t, tol_t,
                                                flags[0] if step < _NEWTON_M_STEPS else flags[1])
                state = [a_, b_, m_, th_]
                args = (data, s, *state, t_max, active)
                step += 1
            continue
        rows = torch.div(idx, K, rounding_mode="floor")
        sub = tuple(x[rows] for x in data)
        flat = [x.reshape(-1, 1) for x in (s, *state, t_max)]
        ss, aa, bb, mm, tt, tm = (x[idx] for x in flat)
        act = torch.ones_like(ss, dtype=torch.bool)
        for _ in range(_CHECK_EVERY):
            aa, bb, mm, tt, act = probe(torch, split, sub, ss, aa, bb, mm, tt, tm, act, level_t, tol_t,
                                        flags[0] if step < _NEWTON_M_STEPS else flags[1])
            step += 1
        for full, part in zip(flat[1:5], (aa, bb, mm, tt)):
            full[idx] = part
        state = [x.reshape(shape) for x in flat[1:5]]
        act_full = active.reshape(-1, 1).clone()
        act_full[idx] = act
        active = act_full.reshape(shape)
    return state[0]


def _finish(torch: Any, lo: Any, up_comp: Any, p_hat: Any, live: Any) -> tuple[Any, Any]:
    """``lower = min(lo, p̂)``, ``upper = max(1 − up_comp, p̂)`` rounded up; ``[0, 1]`` where κ = 0."""
    upper = torch.nextafter(1.0 - up_comp, torch.ones_like(up_comp))  # the certified level is 1 − up_comp
    lower = torch.clamp(torch.minimum(lo, p_hat), 0.0, 1.0)
    upper = torch.clamp(torch.maximum(upper, p_hat), 0.0, 1.0)
    return torch.where(live, lower, 0.0), torch.where(live, upper, 1.0)


def _check(torch: Any, delta_prime: float, tol: float, *arrays: Any) -> None:
    if not 0.0 < float(delta_prime) < 1.0:
        raise ValueError(f"delta_prime must be in (0, 1), got {delta_prime!r}.")
    if not 0.0 < float(tol) < 0.5:
        raise ValueError(f"tol must be in (0, 0.5) (the precision of the interval ends), got {tol!r}.")
    bad = torch.zeros((), dtype=torch.bool, device=arrays[0].device)
    for arr in arrays:
        bad = bad | (torch.isnan(arr) | (arr < 0)).any()
    if bool(bad):  # one read on the host
        raise ValueError("The Chernoff statistics must be >= 0 and not NaN (sums of non-negative kernel values).")


def chernoff_interval_device(
    class_sums: Any,
    count: Any,
    mass: Any,
    band_radius: Any,
    delta_prime: float,
    *,
    tol: float = 1e-7,
    sum_error: float = 0.0,
) -> tuple[Any, Any]:
    """:func:`~nwbound.bounds._chernoff.chernoff_interval` with ``mass_upper = mass_lower = mass`` on a device.

    The per-point form of the localized classifier (one group per neighbour, ``count = 1`` where
    the mass is positive), computed where the PyTorch tensors live (float64), the ends certified
    and rounded outward as on the host (module docstring).

    Parameters
    ----------
    class_sums : tensor of shape (n, C)
    count : tensor of shape (n, B)
    mass : tensor of shape (n, B)
        Each group's kernel value (both the upper and the lower mass).
    band_radius : tensor of shape (n, B)
        ``ρ_g ≥ β·r_g`` (``+inf`` allowed).
    delta_prime : float
        Per-class failure probability in (0, 1).
    tol : float, default=1e-7
    sum_error : float, default=0
        ``ρ`` in [0, 1/2) of ``class_sums`` (within ``1 ± ρ`` of the exact sums): each end is
        certified with the sum that rejects least, as on the host (``S/(1 + ρ)`` for a lower end,
        ``Σ mass − S/(1 − ρ)`` for an upper one), so the interval contains the exact sums' one.

    Returns
    -------
    lower, upper : float64 tensors of shape (n, C), on the inputs' device

    Examples
    --------
    >>> import torch
    >>> from nwbound.bounds._chernoff_device import chernoff_interval_device
    >>> lo, up = chernoff_interval_device(torch.tensor([[10.0, 0.0]]), torch.ones(1, 10), torch.ones(1, 10),
    ...                                   torch.zeros(1, 10), 0.05)
    >>> round(float(lo[0, 0]), 4), round(float(up[0, 1]), 4)
    (0.6915, 0.3085)
    """
    torch = _torch()
    dev = class_sums.device
    S = _f64(torch, class_sums, dev)
    N, M, R = (_f64(torch, a, dev) for a in (count, mass, band_radius))
    _check(torch, delta_prime, tol, S, N, M, R)
    n, C = S.shape
    kappa = S.sum(1)
    live = (kappa > 0)[:, None]
    p_hat = torch.clamp(S / torch.where(live, kappa[:, None], 1.0), 0.0, 1.0)
    log_level = math.log(float(delta_prime) / 2.0)
    N3, M3, R3 = N[:, None, :], M[:, None, :], R[:, None, :]
    nm = N3 * M3
    rel = float(sum_error)
    if not 0.0 <= rel < 0.5:
        raise ValueError(f"sum_error must be in [0, 0.5) (a relative error bound of the sums), got {sum_error!r}.")
    if rel > 0:  # each end certified with the sum that rejects least (1 + 2⁻⁵²: the divisions' rounding)
        s_comp = torch.clamp(nm.sum(-1) - S / (1.0 - rel) * (1.0 + 2.0**-52), min=0.0)
        s_low = S / (1.0 + rel) / (1.0 + 2.0**-52)
    else:
        s_comp, s_low = nm.sum(-1) - S, S  # Σ n·l − S with l = the same mass
    s = torch.cat([s_low, s_comp], 1)  # (n, 2C): lower ends, then the complementary upper ends
    right = torch.cat([p_hat, 1.0 - p_hat], 1)
    m1 = nm.sum(-1)
    v = (nm * M3).sum(-1)
    rho_mass = torch.where(nm > 0, nm * R3, 0.0).sum(-1)
    t_max = (_MAX_EXPONENT / torch.clamp(M.amax(1, keepdim=True) if M.shape[1] else torch.zeros(n, 1, dtype=M.dtype, device=dev),
                                         min=1e-300)).expand(n, 2 * C)
    t_min = 1e-12 * t_max
    data = (N3, M3, R3)
    open_ = live.expand(n, 2 * C) & (s > 0) & (v > 0) & (right > 0)
    b = torch.where(open_, right, 0.0)
    # The Hoeffding end on the same groups, certified at θ* = 4A/V (as the host).
    m_h = (s - rho_mass - torch.sqrt(v * (-log_level) / 2.0)) / torch.where(m1 > 0, m1, 1.0)
    m_h = torch.where(torch.isfinite(m_h) & open_, torch.minimum(torch.clamp(m_h, min=0.0), b), 0.0)
    hi = torch.clamp(m_h[..., None] + R3, max=1.0)
    amass = s - (nm * hi).sum(-1)
    t_star = torch.minimum(torch.maximum(4.0 * amass / torch.where(v > 0, v, 1.0), t_min), t_max)
    phi, d1, d2, dm, _ = _eval_grouped(torch, data, s, m_h, t_star)
    ok = open_ & (m_h > 0) & (phi <= log_level)
    a = torch.where(ok, m_h, 0.0)
    newton = m_h - (phi - log_level) / torch.where(dm > 0, dm, 1.0)
    good = ok & (dm > 0) & torch.isfinite(newton) & (newton > a) & (newton < b)
    first = torch.where(good, newton, 0.5 * (a + b))
    first = torch.where(b - a > tol, torch.minimum(torch.maximum(first, a + 0.5 * tol), b - 0.5 * tol), first)
    m = torch.where(ok, first, 0.0)
    theta = torch.where(ok, _next_theta(torch, t_star, d1, d2, torch.zeros_like(s), torch.full_like(s, math.inf), t_max),
                        t_star)
    theta = torch.maximum(theta, t_min)
    ends = _search(torch, False, data, s, a, b, m, theta, t_max, log_level, float(tol), open_)
    return _finish(torch, ends[:, :C], ends[:, C:], p_hat, live)


def chernoff_interval_binned_device(
    class_sums: Any,
    count: Any,
    mass: Any,
    dist_mass: Any,
    mass_lower: Any,
    mass_upper: Any,
    band_radius: Any,
    beta: float,
    delta_prime: float,
    *,
    sq_sum: Any,
    band_radius_inner: Any,
    dist_sum: Any,
    tol: float = 1e-7,
    sum_error: float = 0.0,
) -> tuple[Any, Any]:
    """:func:`~nwbound.bounds._chernoff_binned.chernoff_interval_binned` on a device (PyTorch, float64).

    Same parameters (every per-bin array of shape (n, B), ``sq_sum`` and ``dist_sum`` of shape (n,),
    all on one device) and the same guarantee: the ends are certified levels, so the interval contains
    the one of the exact sums (with ``sum_error`` moved to the widening side exactly as on the host).

    Returns
    -------
    lower, upper : float64 tensors of shape (n, C), on the inputs' device

    Examples
    --------
    >>> import torch
    >>> from nwbound.bounds._chernoff_device import chernoff_interval_binned_device
    >>> one = torch.ones(1, 1)
    >>> lo, up = chernoff_interval_binned_device(torch.tensor([[10.0, 0.0]]), 10 * one, 10 * one, 0 * one,
    ...                                          one, one, 0 * one, 1.0, 0.05, sq_sum=torch.tensor([10.0]),
    ...                                          band_radius_inner=0 * one, dist_sum=torch.tensor([0.0]))
    >>> round(float(lo[0, 0]), 4), round(float(up[0, 1]), 4)
    (0.6915, 0.3085)
    """
    torch = _torch()
    dev = class_sums.device
    S = _f64(torch, class_sums, dev)
    N, A, D, lo_m, hi_m, R, R_in, q2, dsum = (
        _f64(torch, x, dev) for x in (count, mass, dist_mass, mass_lower, mass_upper, band_radius,
                                      band_radius_inner, sq_sum, dist_sum))
    shape = N.shape
    lo_m, hi_m, R, R_in = (x.expand(shape) for x in (lo_m, hi_m, R, R_in))
    _check(torch, delta_prime, tol, S, N, A, D, lo_m, hi_m, R, R_in, q2, dsum)
    beta = float(beta)
    if not (math.isfinite(beta) and beta >= 0):
        raise ValueError(f"beta must be finite and >= 0 (L or 1/γ), got {beta!r}.")
    rel = float(sum_error)
    if not 0.0 <= rel < 0.5:
        raise ValueError(f"sum_error must be in [0, 0.5) (a relative error bound of the sums), got {sum_error!r}.")
    n, C = S.shape
    kappa = S.sum(1)
    if rel > 0:  # the largest exact A_b the sums allow (never above count·mass_upper): widens
        A = torch.minimum(A / (1.0 - rel) * (1.0 + 2.0**-52), N * hi_m)
    # The host's _pack: Λ, m_cap and the empty bins' zeros.
    positive = A > 0
    span = hi_m - lo_m
    lam = torch.where(span > 0, (A - N * lo_m) / torch.where(span > 0, span, 1.0), N)
    lam = torch.minimum(torch.clamp(lam, min=0.0), N)
    bD = beta * D
    mcap = torch.where(positive, 1.0 - bD / torch.where(positive, A, 1.0), -math.inf)
    rho = torch.where(positive, R, 0.0)
    rho_in = torch.minimum(torch.where(positive, R_in, 0.0), rho)
    z = lambda x: torch.where(positive, x, 0.0)[:, None, None, :]  # noqa: E731 - (n, 1, 1, B)
    P = {
        "A": z(A), "bD": z(bD), "mcap": mcap[:, None, None, :], "rho": z(rho), "rho_in": z(rho_in),
        "w": torch.stack([z(lam)[:, :, 0], z(N - lam)[:, :, 0]], 2),
        "a": torch.stack([z(hi_m)[:, :, 0], z(lo_m)[:, :, 0]], 2),
    }
    live = (kappa > 0)[:, None]
    kap = torch.where(live, kappa[:, None], 1.0)
    p_hat = torch.clamp(S / kap, 0.0, 1.0)
    s = S
    s_comp = torch.clamp(kap - S, min=0.0)
    if rel > 0:  # as the host: each sum to the side that widens
        grow = 1.0 + 2.0**-52
        s = s / (1.0 + rel) / grow
        s_comp = torch.clamp(s_comp - (C + 1) * 2.0**-53 * kap, min=0.0) / (1.0 + rel) / grow
        kap = kap / (1.0 - rel) * grow
    log_level = math.log(float(delta_prime) / 2.0)
    root = torch.sqrt(q2 * math.log(2.0 / float(delta_prime)) / 2.0)
    half_h = (beta * dsum + root)[:, None]
    theta_h = (4.0 * root / torch.clamp(q2, min=1e-300))[:, None].expand(n, 2 * C)
    a_top = torch.where(positive, hi_m, 0.0).amax(1, keepdim=True) if shape[1] else torch.zeros(n, 1, dtype=S.dtype, device=dev)
    t_max = (_MAX_EXPONENT / torch.clamp(a_top, min=1e-300)).expand(n, 2 * C)
    lo_h = torch.minimum(torch.clamp((s - half_h) / kap, min=0.0), p_hat)
    up_h = torch.minimum(torch.clamp((s_comp - half_h) / kap, min=0.0), 1.0 - p_hat)
    ss = torch.cat([s, s_comp], 1)
    a = torch.cat([lo_h, up_h], 1)
    b = torch.cat([p_hat, 1.0 - p_hat], 1)
    theta = torch.minimum(torch.maximum(theta_h, 1e-12 * t_max), t_max)
    open_ = live.expand(n, 2 * C) & (ss > 0)
    data = (P["A"], P["bD"], P["mcap"], P["rho"], P["rho_in"], P["w"], P["a"])
    ends = _search(torch, True, data, ss, a, b, 0.5 * (a + b), theta, t_max, log_level, float(tol), open_)
    return _finish(torch, ends[:, :C], ends[:, C:], p_hat, live)


def hoeffding_limits_device(class_sums: Any, sq_sum: Any, dist_sum: Any, beta: float, delta_prime: float,
                            *, sum_error: float = 0.0) -> dict:
    """The ``"hoeffding"`` limits of :meth:`~nwbound.bounds.BoundSpec.limits` where the sums live: the
    host's rule itself (:func:`~nwbound.bounds.hoeffding_limits`) on float64 tensors.

    The interval ``[p̂ − w, p̂ + w] ∩ [0, 1]`` with ``w = min(1, β·D/κ′ + √(ln(2/δ′)·S2/2)/κ′ +
    ρ/(2(1 − ρ)))``, ``κ′ = κ/(1 + ρ)`` (the host's rule for sums with a summation error ``ρ``) and
    ``p̂ = S/κ``; ``ε`` is its half-width ``max(p̂ − lower, upper − p̂)`` (the glossary's one
    meaning); rows with ``κ = 0`` get ``[0, 1]`` and ``ε = bias = sampling = 1``.

    Returns
    -------
    dict
        ``proba``, ``lower``, ``upper``, ``epsilon``, ``bias``, ``sampling`` (n, C) float64 tensors,
        ``kappa`` (n,), ``vacuous`` (n,) bool, on the inputs' device.

    Examples
    --------
    >>> import torch
    >>> from nwbound.bounds._chernoff_device import hoeffding_limits_device
    >>> out = hoeffding_limits_device(torch.tensor([[3.0, 1.0]]), torch.tensor([4.0]), torch.tensor([0.4]),
    ...                               1.0, 0.05)
    >>> round(float(out["bias"][0, 0]), 3), round(float(out["sampling"][0, 0]), 3)
    (0.1, 0.679)
    """
    from .forms.hoeffding import hoeffding_limits

    torch = _torch()
    dev = class_sums.device
    return hoeffding_limits(_f64(torch, class_sums, dev), _f64(torch, sq_sum, dev), _f64(torch, dist_sum, dev),
                            float(beta), float(delta_prime), sum_error=sum_error)


# Bytes the search may hold per block of queries (its largest temporaries are (rows, 2C, 2, B)
# float64, about 24 of them alive): larger inputs go through in blocks of rows.
BLOCK_BYTES = {"cuda": 4 << 30, "cpu": 512 << 20}


def _in_blocks(torch: Any, solve: Callable, arrays: tuple, *extra: Any, fused: bool, **options: Any) -> tuple[Any, Any]:
    """``solve(*arrays, *extra, **options)`` over blocks of rows (every array's first axis), results concatenated;
    ``fused``: whether the search takes the fused Triton kernel (:func:`_fused_for`)."""
    n, C = arrays[0].shape
    B = max(int(arrays[1].shape[1]), 1)
    budget = BLOCK_BYTES.get(arrays[0].device.type, BLOCK_BYTES["cpu"])
    # The fused search holds no (rows, 2C, 2, B) temporaries: only the inputs and (n, 2C) states; the
    # re-check of its ends evaluates the exponent once on (rows, 2C, 2, B) (split) or (rows, 2C, B)
    # (per-point, which also evaluates its Hoeffding start there) float64 temporaries, and where some
    # are refused the eager search runs: about 24 of them alive.
    split = solve is not chernoff_interval_device
    side = 2 if split else 1
    per_row = (2 * C * 2 * B * 8 * 24 if not fused else
               30 * B * 8 + 2 * C * 8 * 16 + (2 * C * side * B * 8 * 24 if (_verify_fused(split) or not split) else 0))
    rows = max(1, int(budget // per_row))
    if n <= rows:
        return solve(*arrays, *extra, **options)
    parts = [solve(*(a[s : s + rows] for a in arrays), *extra, **options) for s in range(0, n, rows)]
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])


def device_limits(spec: Any, stats: Any) -> dict:
    """:meth:`~nwbound.bounds.BoundSpec.limits` for one bandwidth, where the statistics live (PyTorch).

    Reads a :class:`~nwbound.engine.KernelStatistics` in the bound form (``weight_max`` set, the
    distance error as ``u2_error``) with one bandwidth (``G = 1``) and its arrays on one PyTorch
    device; the estimators' device path (:func:`nwbound.engine.device._backend.intervals_on_device`)
    turns the engines' device form into it without leaving the device. The same rules as the host's
    :meth:`~nwbound.bounds.BoundSpec.limits`: ``"hoeffding"`` (:func:`hoeffding_limits_device`) and
    ``"chernoff"`` in its split form (``histogram`` with ``hist_mass`` and ``hist_dist``, the regular
    classifier's device statistics) or its per-point form (``point_mass``, ``point_dist``: the
    localized classifier's); masses in any common unit (``weight_max``, ``weight_min`` in it too),
    ``sum_error`` the sums' ``ρ``.

    Parameters
    ----------
    spec : BoundSpec
        ``form`` ``"hoeffding"`` or ``"chernoff"``.
    stats : KernelStatistics
        Bound form, ``G = 1``, one bandwidth for every query; ``class_sums`` (n, 1, C), ``sq_sum``
        and ``dist_sum`` (n, 1), the histogram's arrays (n, 1, B) over ``B`` equal bins of ``u²``
        in [0, 1] (``hist_edges`` None or those edges), ``point_mass`` (n, 1, k) and
        ``point_dist`` (n, k) already rounded up to cover their computation; ``u2_error`` a float
        or (n, 1).

    Returns
    -------
    dict
        ``proba`` (``S/κ``; the caller's fallback where κ = 0), ``lower``, ``upper``, ``epsilon``,
        ``bias``, ``sampling`` (n, C), ``kappa``, ``n_eff`` (n,) float64 and ``vacuous`` (n,) bool.

    Raises
    ------
    ValueError
        Device-form statistics (``weight_max`` None: convert them first), more than one bandwidth,
        or histogram edges other than equal bins of [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> import torch
    >>> from nwbound.bounds import BoundSpec
    >>> from nwbound.bounds._chernoff_device import device_limits
    >>> from nwbound.engine import KernelStatistics
    >>> from nwbound.kernels import get_kernel
    >>> stats = KernelStatistics(class_sums=torch.tensor([[[10.0, 0.0]]]), sq_sum=torch.tensor([[10.0]]),
    ...                          dist_sum=torch.tensor([[0.0]]), bandwidth=np.ones((1, 1)),
    ...                          kernel=get_kernel("epanechnikov"), point_mass=torch.ones(1, 1, 10),
    ...                          point_dist=torch.zeros(1, 10))
    >>> out = device_limits(BoundSpec(form="chernoff", beta=0.0, delta_prime=0.05), stats)
    >>> round(float(out["lower"][0, 0]), 4)
    0.6915
    """
    import numpy as np

    if stats.weight_max is None:
        raise ValueError(
            "device_limits reads kernel statistics in the bound form (weight_max set, the distance error as "
            "u2_error); these are in the device form (nwbound.gpu.kernel_statistics): convert them as the "
            "estimators' device path does (intervals_on_device), or use the estimator's predict_interval."
        )
    if stats.n_bandwidths != 1 or np.size(stats.bandwidth) != 1:
        raise ValueError(
            f"device_limits bounds one bandwidth (G = 1, one λ for every query), got G = {stats.n_bandwidths} "
            f"and {np.size(stats.bandwidth)} bandwidth values: select one column first (KernelStatistics.select)."
        )
    if np.size(stats.weight_max) != 1 or np.size(stats.weight_min) != 1:
        raise ValueError("device_limits reads one weight_max and one weight_min for every query (the device "
                         "engines' training-set values), not per-query arrays: use the host bounds (BoundSpec.limits).")
    if stats.histogram is not None and stats.hist_edges is not None:
        B = int(stats.histogram.shape[2])
        if not np.array_equal(np.asarray(stats.hist_edges, dtype=np.float64), np.linspace(0.0, 1.0, B + 1)):
            raise ValueError("device_limits reads histograms of equal bins of u² in [0, 1] (hist_edges "
                             "np.linspace(0, 1, B + 1)); use the host bounds (BoundSpec.limits) for other edges.")

    def column(a: Any) -> Any:
        return None if a is None else a[:, 0]

    u2_error = stats.u2_error
    if getattr(u2_error, "ndim", 0) == 2:
        u2_error = u2_error[:, 0]
    return _limits_from_arrays(
        spec, class_sums=column(stats.class_sums), sq_sum=column(stats.sq_sum), dist_sum=column(stats.dist_sum),
        bandwidth=float(np.asarray(stats.bandwidth).reshape(-1)[0]), sum_error=float(stats.sum_error),
        u2_error=u2_error, kernel=stats.kernel, histogram=column(stats.histogram),
        hist_mass=column(stats.hist_mass), hist_dist=column(stats.hist_dist), hist_count=column(stats.hist_count),
        weight_max=float(stats.weight_max), weight_min=float(stats.weight_min),
        uniform_weights=bool(stats.uniform_weights), point_mass=column(stats.point_mass),
        point_dist=stats.point_dist)


def _limits_from_arrays(spec: Any, *, class_sums: Any, sq_sum: Any, dist_sum: Any, bandwidth: float,
                        sum_error: float = 0.0, u2_error: Any = 0.0, kernel: Any = None, histogram: Any = None,
                        hist_mass: Any = None, hist_dist: Any = None, hist_count: Any = None,
                        weight_max: float = 1.0, weight_min: float = 0.0, uniform_weights: bool = True,
                        point_mass: Any = None, point_dist: Any = None) -> dict:
    """:func:`device_limits` from one bandwidth's arrays: ``class_sums`` (n, C), ``sq_sum`` and
    ``dist_sum`` (n,), the histogram's arrays (n, B) (``histogram`` in units of ``weight_max``),
    ``point_mass`` and ``point_dist`` (n, k), ``u2_error`` a float or (n,)."""
    import numpy as np

    from .forms.chernoff import histogram_bins
    from .forms.hoeffding import hoeffding_limits

    if spec.form not in ("hoeffding", "chernoff"):
        raise ValueError(f"The device bounds are 'hoeffding' and 'chernoff', not {spec.form!r}: use the host path.")
    torch = _torch()
    dev = class_sums.device
    # Every array on the device in float64 first, then the forms' rules: the Hoeffding limits (every
    # form's), the Chernoff search's bins, and last the search itself.
    S = _f64(torch, class_sums, dev)
    q2 = _f64(torch, sq_sum, dev)
    dsum = _f64(torch, dist_sum, dev)
    rho = float(sum_error)
    n, C = S.shape
    lam = float(bandwidth)
    chernoff = spec.form == "chernoff"
    if chernoff:
        u_err = torch.sqrt(_f64(torch, u2_error, dev).expand(n))
        if point_mass is not None:
            mass = _f64(torch, point_mass, dev)
            dist = _f64(torch, point_dist, dev) + (lam * u_err)[:, None]
        else:
            if hist_mass is None or hist_dist is None or histogram is None:
                raise ValueError("bound='chernoff' on a device needs the histogram's per-bin masses (hist_mass, "
                                 "hist_dist) or the per-point statistics (point_mass, point_dist).")
            B = int(histogram.shape[1])
            edges_np = np.linspace(0.0, 1.0, B + 1)
            k_edges_np = np.asarray(kernel.from_squared(edges_np), dtype=np.float64) / spec.kernel_sup
            edges, k_edges = _constant(torch, edges_np, dev), _constant(torch, k_edges_np, dev)
            counted = not uniform_weights and hist_count is not None
            floor = float(weight_max) if uniform_weights else float(weight_min) if counted else 0.0
            count = _f64(torch, hist_count if counted else histogram, dev)
            mass, dist_mass = _f64(torch, hist_mass, dev), _f64(torch, hist_dist, dev)
        fused = _fused_for(point_mass is None, S)
        if point_mass is None:
            mass_upper, _, a_lo, radius, inner = histogram_bins(edges, k_edges, spec.kernel_sup, lam, u_err,
                                                                float(weight_max), floor)  # the host's rule
    out = hoeffding_limits(S, q2, dsum, float(spec.beta), float(spec.delta_prime), sum_error=rho)
    out["n_eff"] = torch.where(q2 > 0, out["kappa"] * out["kappa"] / torch.where(q2 > 0, q2, 1.0), 0.0)
    if not chernoff:
        return out
    vac = out["vacuous"][:, None]
    if point_mass is not None:
        lower, upper = _in_blocks(torch, chernoff_interval_device, (S, (mass > 0).to(torch.float64), mass,
                                                                    spec.beta * dist), spec.delta_prime,
                                  fused=fused, sum_error=rho)
    else:
        def binned(S_, count_, mass_, dist_, lo_, hi_, radius_, inner_, q2_, dsum_):
            return chernoff_interval_binned_device(S_, count_, mass_, dist_, lo_, hi_, radius_, spec.beta,
                                                   spec.delta_prime, sq_sum=q2_, band_radius_inner=inner_,
                                                   dist_sum=dsum_, sum_error=rho)

        lower, upper = _in_blocks(torch, binned, (
            S, count, mass, dist_mass, a_lo.expand(n, B),
            mass_upper.expand(n, B), spec.beta * radius, spec.beta * inner, q2, dsum), fused=fused)
    proba = out["proba"]
    out["lower"] = torch.where(vac, 0.0, lower)
    out["upper"] = torch.where(vac, 1.0, upper)
    out["epsilon"] = torch.where(vac, 1.0, torch.maximum(proba - lower, upper - proba))
    return out
