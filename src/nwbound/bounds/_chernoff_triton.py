"""The band-Chernoff interval search of :mod:`._chernoff_device` as one fused Triton kernel.

The eager search (:func:`._chernoff_device._search`) evaluates the exponent of every (query, class,
end) pair over its ``B`` groups as PyTorch elementwise operations on ``(n, 2C, 2, B)`` float64
temporaries: about forty kernels and as many round trips through device memory per θ step, six θ
steps per probe, twenty to sixty probes (0.5 s at the ECG shapes on an H100, memory-bound). Here
one program owns ``BP`` pairs, loads their query's per-group fields once into registers and runs
the *same* search to the end: the same θ profile (:data:`._chernoff_device._THETA_STEPS`
safeguarded Newton steps, warm-started), the same bracket update and Newton/bisection step in
``m``, the same tolerances and probe cap, every formula in float64 as the host's and the eager
search's. Nothing crosses to the host: a program stops when its pairs are all closed (a
loop on the device, no flag read by the host).

**Validity** is that of :mod:`._chernoff_device`: a pair's reported end is its bracket's ``a``, a
level either given certified (the Hoeffding end) or rejected by a float64 exponent ``≤ log(δ′/2)``
at an explicit θ, and the exponent is monotone in the level. The per-group sums are reduced in
another order than PyTorch's (float64 either way: the same rounding the eager and host searches
already differ by); ``expm1`` (the split form's optimal within-bin mean) is Kahan's
``(e^x − 1)·x/log(e^x)``, accurate to a few ulps like the library's. Both forms reject only where
``φ`` plus a bound on its rounding (``(B + 16)·2⁻⁵²`` per unit of ``θ·s + Σ N·(x + |log den| + 4)``,
per-point; ``θ·(s + |lin|) + Σ_sides Σ W·(x + |log den| + 4)``, split) is at most the level, and
return for each end the θ that rejected it: :func:`._chernoff_device.fused_ends_certified` re-checks
every moved end with PyTorch's float64 exponent before it is reported, both forms by default (a GPU
compiles the kernel with its own contractions and libm; on an H100 the unchecked grouped kernel once
gave ends inside the host's, and the split kernel without the margin 27 ends at the ECG shapes that
the float64 exponent did not reject). The split form's default launch (round 9) is one pair per
one-warp program with ``low_first`` (below): its ends differ from the previous launch's (16 pairs
per 8-warp program) within the search's tol, each certified the same way.

``TRITON_INTERPRET=1`` runs the kernel on PyTorch CPU tensors (the tests); on CUDA it compiles once
per form (a few seconds, then cached by Triton on disk).
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
from typing import Any

from .._config import get_config, parse_search_variant

__all__ = ["triton_search_applies", "triton_search"]

# The default launch per form: pairs per program (``bp``), the programs' warps, ``low_first``. Each
# pair holds its query's groups (B ≤ 64 bins, or k neighbours) in registers, 9 fields in the split
# form. The split form (the regular classifier's) runs one pair per one-warp program with low_first:
# on an H100 at the ECG shapes (21 892 queries x 10 ends, 32 bins) 6.5 ms instead of 21.7 ms for 16
# pairs per 8-warp program (run 1 of round 9, benchmarks/diag_search.py): a program stops with its
# own pair (no lane waits for the slowest of 16), 128 registers and no spills; low_first cuts the
# probes per open pair from 9.9 to 6.2 on average. The grouped form (off on CUDA by default) keeps
# its launch. ``_PREVIOUS`` is the split form's launch before (diag_search.py's baseline).
# The split form's default is the launch measured on an H100 with every moved end certified by the
# float64 re-check (round 9, run 1: one pair per one-warp program, 6.5 ms at the ECG shapes, 0 refused).
# Round 9's run 2 measured the same launch with low_first and the rounding margin on φ at 228 ms for the
# whole Chernoff call (the kernel alone was 6.5 ms): the likely cause, ends the re-check refuses and the
# eager search then re-searches, is what the grouped form (which computes that margin) shows on CUDA
# (7 827 refused at one pair per program). Both stay reachable (config key search_variant="low_first=1,margin=1");
# the re-check, not the margin, is what certifies every reported end.
_DEFAULT = {"split": {"bp": 1, "warps": 1, "low_first": 0, "margin": 0},
            "grouped": {"bp": 32, "warps": 8, "low_first": 0}}
_PREVIOUS = {"bp": 16, "warps": 8, "low_first": 0}


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "") == "1"


def triton_search_applies(s: Any) -> bool:
    """Whether the fused search can run on tensors like ``s`` (CUDA with Triton, or the interpreter on CPU).

    The config key ``triton_search=False`` (:func:`nwbound.config_context`) turns it off: the eager search
    then runs everywhere.

    Examples
    --------
    >>> import torch
    >>> from nwbound.bounds._chernoff_triton import triton_search_applies
    >>> triton_search_applies(torch.zeros(1)) in (True, False)
    True
    >>> import nwbound
    >>> with nwbound.config_context(triton_search=False):
    ...     triton_search_applies(torch.zeros(1))
    False
    """
    if not get_config()["triton_search"]:
        return False
    if not _triton_installed():
        return False
    kind = getattr(getattr(s, "device", None), "type", "")
    return kind == "cuda" or (kind == "cpu" and _interpreting())


@functools.cache
def _triton_installed() -> bool:
    return importlib.util.find_spec("triton") is not None  # once per process (about a millisecond each)


@functools.cache
def _kernel():
    from ._chernoff_search_kernel import search_kernel

    return search_kernel


# Private launch variants (benchmarks/diag_search.py times them; none is the default): ``bp`` pairs per
# program, ``warps``, ``stages``; ``order`` "compact" (the open pairs first, by a stable sort: programs of
# closed pairs only stop at once) or "width" (the open pairs by decreasing bracket width b − a, a proxy of
# their probes, so that a program's pairs need about as many); ``lazy`` (fields re-loaded at each
# evaluation); ``one_exp`` (one exp per split-form bin side); ``count`` (probe and evaluation counts into
# LAST_LAUNCH["counts"]); ``low_first`` (where Newton in m points below the certified end, probe just above
# it once: the pairs whose Chernoff test never beats their Hoeffding end close in two probes instead of a
# bisection's twenty). Read from the config key search_variant ("bp=2,warps=1,order=compact";
# nwbound._config.parse_search_variant) when the caller passes none. The same search and the same
# certified ends (up to float64 summation order: a layout reduces the bins in its own order; one_exp:
# e^{−x} as 1/e^x, within an ulp).
# ``margin=0`` drops the kernel's rounding margin on φ (round 9's kernel before the margin, for the
# diagnostics only: its ends then rely on the float64 re-check alone).
LAST_LAUNCH: dict = {}


def _level_tol(torch: Any, log_level: float, tol: float, device: Any) -> Any:
    """``[log(δ′/2), tol]`` as a float64 tensor filled on ``device`` (two fills, no copy from the host:
    a copy to a GPU from pageable memory waits for the device's queue)."""
    out = torch.empty(2, dtype=torch.float64, device=device)
    out.narrow(0, 0, 1).fill_(float(log_level))
    out.narrow(0, 1, 1).fill_(float(tol))
    return out


def block_bins(B: int) -> int:
    """The kernels' bin block: the next power of two ≥ ``B`` (at least 2).

    Examples
    --------
    >>> from nwbound.bounds._chernoff_triton import block_bins
    >>> block_bins(10), block_bins(32), block_bins(0)
    (16, 32, 2)
    """
    return max(2, 1 << max(0, (max(B, 1) - 1).bit_length()))


def rounding_factor(bb: int) -> float:
    """The factor ``(BB + 16)·2⁻⁵²`` by which the kernel multiplies φ's rounding bound ``err`` before it
    may reject (a bin block of ``bb``).

    Examples
    --------
    >>> from nwbound.bounds._chernoff_triton import rounding_factor
    >>> rounding_factor(16) == 32 * 2.0**-52
    True
    """
    return float((bb + 16) * 2.0**-52)


def _per_pair(torch: Any, n: int, K: int, *arrays: Any) -> list:
    """Each array broadcast to the ``(n, K)`` pairs, as a flat contiguous float64 tensor (the kernels' layout)."""
    return [x.expand(n, K).to(torch.float64).contiguous().reshape(-1) for x in arrays]


def _kernel_fields(torch: Any, split: bool, data: tuple, n: int, device: Any) -> tuple[list, int]:
    """The kernels' nine per-group field pointers as contiguous float64 ``(n, B)`` tensors, and ``B``
    (no groups: one empty column, no mass; ``m_cap = −∞`` in the split form; the grouped form's unused
    pointers repeat its first field)."""
    B = int(data[0].shape[1])
    fields = [x.to(torch.float64).contiguous() for x in data]
    if B == 0:
        fields = [torch.full((n, 1), -torch.inf if split and i == 2 else 0.0, dtype=torch.float64, device=device)
                  for i in range(len(fields))]
        B = 1
    while len(fields) < 9:
        fields.append(fields[0])
    return fields, B


def triton_evaluate(split: bool, data: tuple, s: Any, m: Any, theta: Any, *, series_x: float,
                    bp: int = 1, warps: int = 1) -> tuple[Any, Any, Any]:
    """The fused search kernel's exponent at given ``(m, θ)`` per pair, for the diagnostics: ``(φ, err,
    mass above the band)``, each ``(n, K)`` float64, from the same jitted pieces the search evaluates
    (``err``: its rounding bound before the factor ``(BB + 16)·2⁻⁵²``). Fields as :func:`triton_search`'s.
    Comparing ``φ`` with the eager float64 exponent at the same point tells whether the kernel's
    arithmetic on a device, or its search, departs from the eager form's (``benchmarks/
    diag_grouped_search.py --ecg``).

    Examples
    --------
    >>> import os
    >>> os.environ.get("TRITON_INTERPRET") in (None, "", "0", "1")  # runs on CUDA or the interpreter
    True
    """
    import torch

    n, K = s.shape
    flat = _per_pair(torch, n, K, s, m, theta)
    fields, B = _kernel_fields(torch, split, data, n, s.device)
    out = torch.empty(3 * n * K, dtype=torch.float64, device=s.device)
    if n * K:
        bb = block_bins(B)
        from ._chernoff_search_kernel import evaluate_kernel

        evaluate_kernel[((n * K + bp - 1) // bp,)](
            *flat, out, *fields, n * K, K, B, SPLIT=bool(split), BP=int(bp), BB=bb, SERIES_X=float(series_x),
            INF=math.inf, LIBDEVICE=not _interpreting(), ONE_EXP=False, num_warps=int(warps))
    phi, err, amass = out.reshape(n, K, 3).unbind(-1)
    return phi, err, amass


def triton_search(split: bool, data: tuple, s: Any, a: Any, b: Any, m: Any, theta: Any, t_max: Any,
                  log_level: float, tol: float, open_: Any, *, theta_steps: int, max_probes: int,
                  newton_m_steps: int, decrement: float, margin: float, series_x: float,
                  _variant: dict | None = None) -> Any:
    """The left ends of :func:`._chernoff_device._search` (same arguments, already broadcast to
    ``(n, K)`` pairs), from one launch of the fused kernel, and for each the θ at which the kernel
    rejected it (``-1`` where the end is the given ``a``, not moved by the kernel).

    ``data`` holds the per-group fields as ``(n, B)`` float64 tensors: ``(N, M, R)`` (grouped) or
    ``(A, βD, m_cap, ρ, ρ_in, Λ, n − Λ, a_hi, a_lo)`` (split; zero on empty bins, ``m_cap = −∞``).

    Examples
    --------
    >>> import os
    >>> os.environ.get("TRITON_INTERPRET") in (None, "", "0", "1")  # runs on CUDA or the interpreter
    True
    """
    import torch

    n, K = s.shape
    flat = _per_pair(torch, n, K, s, a, b, m, theta, t_max)
    act = (open_ & (b - a > tol)).expand(n, K).to(torch.int8).contiguous().reshape(-1)
    fields, B = _kernel_fields(torch, split, data, n, s.device)
    v = parse_search_variant(get_config()["search_variant"]) if _variant is None else dict(_variant)
    asked = bool(v) or _variant is not None
    n_pairs = n * K
    order = v.get("order", "none")
    idx = None
    if order != "none" and n_pairs:
        open_flat = act != 0
        if order == "compact":
            key = (~open_flat).to(torch.int8)
        else:  # open pairs by decreasing width, closed ones last
            key = torch.where(open_flat, -(flat[2] - flat[1]), torch.inf)
        idx = torch.sort(key, stable=True).indices.to(torch.int32)
    count = bool(v.get("count", 0))
    cnt = torch.zeros(3 * n_pairs if count else 1, dtype=torch.int32, device=s.device)
    out = torch.empty_like(flat[0])
    cert = torch.empty_like(flat[0])
    if n_pairs == 0:
        return out.reshape(n, K), cert.reshape(n, K)
    form = "split" if split else "grouped"
    v = {**_DEFAULT[form], **v}
    bp = int(v["bp"])
    bb = block_bins(B)
    grid = ((n_pairs + bp - 1) // bp,)
    extra = {"num_stages": int(v["stages"])} if "stages" in v else {}
    launched = _kernel()[grid](
        *flat, act, out, cert, *fields, n_pairs, K, B,
        _level_tol(torch, log_level, tol, s.device),
        idx if idx is not None else act, cnt,
        SPLIT=bool(split), BP=bp, BB=bb, THETA_STEPS=int(theta_steps), MAX_PROBES=int(max_probes),
        NEWTON_M_STEPS=int(newton_m_steps), DECREMENT=float(decrement), MARGIN=float(margin),
        SERIES_X=float(series_x), INF=math.inf, LIBDEVICE=not _interpreting(),
        ROUNDING=rounding_factor(bb) if v.get("margin", 1) else 0.0, INDEXED=idx is not None,
        LAZY=bool(v.get("lazy", 0)), ONE_EXP=bool(v.get("one_exp", 0)) and bool(split), COUNT=count,
        LOW_FIRST=bool(v["low_first"]), num_warps=int(v["warps"]), **extra,
    )
    if asked:  # the diagnostics read the compiled kernel's registers and spills, and the counts
        LAST_LAUNCH.clear()
        LAST_LAUNCH.update(kernel=launched, variant=v, grid=grid[0], bp=bp)
        if count:
            LAST_LAUNCH["counts"] = cnt.reshape(n_pairs, 3)
            LAST_LAUNCH["order"] = idx
    return out.reshape(n, K), cert.reshape(n, K)
