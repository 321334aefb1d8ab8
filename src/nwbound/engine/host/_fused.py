"""Compiled one-pass reduction of a GEMM tile into kernel sums (optional, numba).

The dense engine (:mod:`._sums`) computes each tile ``t = 1 − d²/S²`` with
BLAS. What remains is a reduction of that tile into the per-query sums; in
numpy it costs several passes over ``t`` (comparison, ``flatnonzero``,
gathers, ``bincount`` per sum). Here it is one pass, compiled with numba:

1. **Select.** Each tile row is scanned in chunks of 64 entries: four 16-wide
   vector compares build a 64-bit mask of the entries with ``t ≥ select``
   (``−e``, the error bound), and one trailing-zero count per set bit collects
   their column and ``t`` — the cost follows the number of hits, with no
   mispredicted branch per entry.
2. **Evaluate.** ``δ = d²/S² = max(1 − t, 0)`` — or, for the entries the
   engine's error bound cannot place (``t < redo``, the band around the support's
   edge), ``δ`` straight from the coordinates in float64 — then the kernel values
   of the collected entries at ``u² = δ·(S/λ)²``, one tight loop per bandwidth;
   the kernel is chosen by an integer code *outside* that loop, so each loop
   body is branch-free.
3. **Accumulate** into float64: ``Σ wK`` per class, ``Σ (wK)²``, ``Σ wK·d̄``
   (``d̄ ≥ d`` the distance's upper bound, only where ``wK > 0``), the tail mass,
   and the histogram of ``u²`` (the same ``u²`` the kernel value came from).

Every entry is converted to float64 before ``δ`` is formed, as in the numpy
route, so both give the same sums up to summation order.

The function releases the GIL (``nogil``): the engine's ``n_jobs`` threads run
it concurrently on disjoint query blocks. numba's on-disk cache stores the
machine code next to this file (or in numba's user-wide cache, or a temporary
folder, when that folder is not writable: :func:`nwbound._numba_cache.njit_cached`),
so only the first call on a machine pays the compile time.

Importing this module imports numba; :mod:`._sums` does so lazily, once, and
falls back to numpy when numba is missing. So does the pilot of ``lipschitz="auto"``
(:mod:`nwbound.assumptions`), whose kernel values of a block of distances come from
:func:`distance_kernel_values` (numpy's bits, one pass), and :func:`tile_moments` is the
ranking pass of ``bandwidth="auto"``.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import types, uint64
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

from ..._numba_cache import njit_cached
from ...kernels import Kernel
from ...kernels import gaussian_kernel, get_kernel

__all__ = ["KERNEL_CODES", "distance_kernel_values", "kernel_code", "tile_moments", "tile_sums"]

# Integer codes of the kernels the compiled reduction evaluates itself.
EPANECHNIKOV, BOXCAR, QUARTIC, TRIWEIGHT, TRICUBE, COSINE, GAUSSIAN = range(7)
KERNEL_CODES: dict[str, int] = {
    "epanechnikov": EPANECHNIKOV,
    "boxcar": BOXCAR,
    "quartic": QUARTIC,
    "triweight": TRIWEIGHT,
    "tricube": TRICUBE,
    "cosine": COSINE,
    "gaussian": GAUSSIAN,
}
# Entries per chunk of the selection scan: one bit each in a 64-bit mask.
_CHUNK = 64
# The top bit of a chunk's mask: keeps ``trailing_zeros`` in range on an empty mask.
_TOP = uint64(1) << uint64(63)


def kernel_code(kernel: Kernel) -> tuple[int, float] | None:
    """The compiled reduction's code for ``kernel`` and its squared radius, or None.

    Only the built-in profiles qualify — recognised by identity of their
    profile functions, not by name, so a user's :class:`Kernel` that merely
    reuses a built-in name keeps the numpy route. The Gaussian qualifies only
    when truncated (finite radius).

    Examples
    --------
    >>> from nwbound.kernels import gaussian_kernel, get_kernel
    >>> kernel_code(get_kernel("quartic")) == (QUARTIC, 1.0), kernel_code(gaussian_kernel(None))
    (True, None)
    """
    name = kernel.name
    if name not in KERNEL_CODES:
        return None
    if name == "gaussian":
        rebuild = kernel.rebuild
        if (
            len(rebuild) == 2
            and rebuild[0] is gaussian_kernel
            and rebuild[1]
            and rebuild[1][0] is not None
            and math.isfinite(kernel.radius)
            and float(rebuild[1][0]) == kernel.radius
            and getattr(kernel.of_squared, "__qualname__", "").endswith("<locals>.truncated_sq")
        ):
            return GAUSSIAN, float(kernel.radius) ** 2
        return None
    builtin = get_kernel(name)  # the registered profile of that name
    # The engine evaluates ``from_squared``: of_squared when present, else of_distance.
    same = (
        kernel.of_squared is builtin.of_squared
        if builtin.of_squared is not None
        else kernel.of_squared is None and kernel.of_distance is builtin.of_distance
    )
    if not same or kernel.radius != builtin.radius:
        return None
    return KERNEL_CODES[name], float(kernel.radius) ** 2


@intrinsic
def _mask16(typingctx, row, start, threshold):  # pragma: no cover - compiled
    """Bit k set iff ``row[start + k] ≥ threshold`` (k < 16; ordered: NaN gives 0), as uint64.

    One vector compare whose 16 result bits are reinterpreted as an integer
    (``vcmpps`` + ``kmovw``/``vmovmskps`` on x86); written as LLVM IR because
    LLVM does not recognise that pattern in a scalar loop. ``row`` is a
    C-contiguous float32/float64 vector, ``threshold`` of the same dtype, and
    ``start + 16 ≤ len(row)`` (the caller's duty: nothing is checked).
    """
    if not (isinstance(row, types.Array) and row.ndim == 1 and row.layout == "C"
            and row.dtype in (types.float32, types.float64) and threshold == row.dtype):
        return None

    def codegen(context, builder, signature, args):
        array, start, th = args
        data = context.make_array(signature.args[0])(context, builder, array).data
        vector = ir.VectorType(context.get_data_type(signature.args[0].dtype), 16)
        entries = builder.load(builder.bitcast(builder.gep(data, [start]), vector.as_pointer()), align=1)
        undef = ir.Constant(vector, ir.Undefined)
        first = builder.insert_element(undef, th, ir.Constant(ir.IntType(32), 0))
        splat = builder.shuffle_vector(first, undef, ir.Constant(ir.VectorType(ir.IntType(32), 16), [0] * 16))
        bits = builder.bitcast(builder.fcmp_ordered(">=", entries, splat), ir.IntType(16))
        return builder.zext(bits, ir.IntType(64))

    return types.uint64(row, types.intp, row.dtype), codegen


@njit_cached(nogil=True)
def _select(row, threshold, cols, vals):  # pragma: no cover - compiled
    """Columns and values of ``row`` with ``row ≥ threshold`` (returns their count).

    A 64-bit mask per chunk (four 16-wide vector compares, :func:`_mask16`), then
    one step per set bit: the cost follows the number of hits, with no
    mispredicted branch per entry. ``row`` is C-contiguous and ``threshold`` of
    its dtype; ``cols`` and ``vals`` hold at least ``len(row)`` entries.
    """
    width = row.shape[0]
    n = 0
    n_full = width // _CHUNK
    for c in range(n_full):
        base = c * _CHUNK
        mask = (
            _mask16(row, base, threshold)
            | (_mask16(row, base + 16, threshold) << uint64(16))
            | (_mask16(row, base + 32, threshold) << uint64(32))
            | (_mask16(row, base + 48, threshold) << uint64(48))
        )
        # Set bits four at a time, branch-free inside: the loop exit depends on the hit
        # count, and one mispredicted exit per chunk (not per hit) is what it costs. A group
        # that runs out of bits reads entry 63 and writes slot n again (overwritten or unused):
        # then the chunk has a miss, so n < base + 64 ≤ width, in bounds.
        while mask:
            for _ in range(4):
                j = base + trailing_zeros(mask | _TOP)
                cols[n] = j
                vals[n] = row[j]
                n += mask != uint64(0)
                mask &= mask - uint64(1)
    for j in range(n_full * _CHUNK, width):
        cols[n] = j
        vals[n] = row[j]
        n += row[j] >= threshold
    return n


@njit_cached(nogil=True)
def _evaluate(code, u2, radius_sq, out, n):  # pragma: no cover - compiled
    """``out[:n] = K(√u2[:n])``; the branch on ``code`` sits outside every loop."""
    if code == EPANECHNIKOV:
        for k in range(n):
            out[k] = max(1.0 - u2[k], 0.0)
    elif code == BOXCAR:
        for k in range(n):
            out[k] = 1.0 if u2[k] <= 1.0 else 0.0
    elif code == QUARTIC:
        for k in range(n):
            b = max(1.0 - u2[k], 0.0)
            out[k] = b * b
    elif code == TRIWEIGHT:
        for k in range(n):
            b = max(1.0 - u2[k], 0.0)
            out[k] = b * b * b
    elif code == TRICUBE:
        for k in range(n):
            u = math.sqrt(u2[k])
            b = max(1.0 - u * u * u, 0.0)
            out[k] = b * b * b
    elif code == COSINE:
        for k in range(n):
            u = math.sqrt(u2[k])
            out[k] = math.cos(0.5 * math.pi * u) if u <= 1.0 else 0.0
    else:  # GAUSSIAN, truncated at radius_sq
        for k in range(n):
            out[k] = math.exp(-0.5 * u2[k]) if u2[k] <= radius_sq else 0.0


@njit_cached(nogil=True)
def _distance_values(D, lam, code, out):  # pragma: no cover - compiled
    """``out = K(D/λ)`` for a profile that is a polynomial in ``u²`` (or the boxcar): per entry
    ``u = d/λ``, ``u²``, then the profile, as numpy's :class:`~nwbound.kernels.Kernel` evaluates it."""
    n_rows, width = D.shape
    for i in range(n_rows):
        for j in range(width):
            u = D[i, j] / lam
            u2 = u * u
            if code == BOXCAR:
                out[i, j] = 1.0 if u2 <= 1.0 else 0.0
            else:
                b = max(1.0 - u2, 0.0)
                if code == QUARTIC:
                    b = b * b
                elif code == TRIWEIGHT:
                    b = b * b * b
                out[i, j] = b


def distance_kernel_values(D: np.ndarray, lam: float, kernel: Kernel) -> np.ndarray | None:
    """``K(D/λ)`` of a float64 block of distances in one compiled pass, or None.

    For the built-in profiles that are polynomials in ``u²`` (Epanechnikov, quartic, triweight)
    and the boxcar, the very float64 operations of the kernel's numpy profile, in the same order
    (``u = d/λ``, ``u·u``, ``1 − u²`` clipped at 0, its power): the same bits as
    ``kernel(D / lam)``, without its four full-size temporaries. None for any other kernel (and
    for a user's kernel that reuses a built-in name, :func:`kernel_code`): evaluate it in numpy.

    Parameters
    ----------
    D : ndarray of shape (n, m)
        Distances (any float dtype: converted to float64, as the numpy route computes).
    lam : float
        Bandwidth λ > 0.
    kernel : Kernel

    Returns
    -------
    ndarray of shape (n, m), float64, or None

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.kernels import get_kernel
    >>> D = np.array([[0.0, 0.5, 1.0, 2.0]])
    >>> distance_kernel_values(D, 1.0, get_kernel("quartic")).tolist()
    [[1.0, 0.5625, 0.0, 0.0]]
    >>> distance_kernel_values(D, 1.0, get_kernel("tricube")) is None
    True
    """
    spec = kernel_code(kernel)
    if spec is None or spec[0] not in (EPANECHNIKOV, BOXCAR, QUARTIC, TRIWEIGHT):
        return None
    D = np.ascontiguousarray(D, dtype=np.float64)
    out = np.empty_like(D)
    _distance_values(D, float(lam), spec[0], out)
    return out


@njit_cached(nogil=True)
def _slopes(D, P_rows, P, h, best, arg, n_far):  # pragma: no cover - compiled
    """Per row ``i`` of ``D``: the largest ``max_c |P_rows[i, c] − P[j, c]| / D[i, j]`` over ``D[i, j] ≥ h``
    (−inf where none), its first ``j`` (the first NaN, as ``np.argmax``) and how many ``j`` qualify."""
    n_rows, width = D.shape
    n_classes = P.shape[1]
    for i in range(n_rows):
        b = -np.inf
        a = 0
        count = 0
        for j in range(width):
            d = D[i, j]
            s = -np.inf
            if d >= h:
                count += 1
                diff = 0.0
                for c in range(n_classes):
                    v = abs(P_rows[i, c] - P[j, c])
                    if v > diff or v != v:  # np.maximum: NaN propagates
                        diff = v
                s = diff / d
            if s > b or (s != s and b == b):
                b = s
                a = j
        best[i] = b
        arg[i] = a
        n_far[i] = count


def steepest_slopes(D: np.ndarray, P_rows: np.ndarray, P: np.ndarray,
                    h: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """For each row of a float64 block of distances ``D`` (rows of ``P_rows`` against those of ``P``):
    the steepest slope ``max_c |ΔP_c|/d`` to a point at least ``h`` away, that point's column and the
    number of such points, in one compiled pass; None unless ``D``, ``P_rows`` and ``P`` are float64.

    The very float64 operations of the numpy route of :func:`nwbound.assumptions.estimate_lipschitz`
    (the largest class difference, the division, the first column of the largest slope), so the same
    bits, without its full-size temporaries (one pass instead of about eight over the block).

    Examples
    --------
    >>> import numpy as np
    >>> D = np.array([[0.0, 0.5, 2.0]]); P = np.array([[0.1, 0.9], [0.4, 0.6], [0.9, 0.1]])
    >>> best, arg, n_far = steepest_slopes(D, P[:1], P, 0.25)
    >>> best.round(3).tolist(), arg.tolist(), n_far.tolist()
    ([0.6], [1], [2])
    """
    if not (D.dtype == P_rows.dtype == P.dtype == np.float64):
        return None
    n = D.shape[0]
    best, arg, n_far = np.empty(n), np.empty(n, dtype=np.intp), np.empty(n, dtype=np.intp)
    _slopes(np.ascontiguousarray(D), np.ascontiguousarray(P_rows), np.ascontiguousarray(P), float(h), best, arg,
            n_far)
    return best, arg, n_far


@njit_cached(nogil=True, fastmath={"reassoc", "contract"})
def _pair_delta(queries, i, points, c, inv_support):  # pragma: no cover - compiled
    """``Σ_j ((y_j − x_j)/S)²`` in float64 from the original coordinates (query row ``i``, point ``c``).

    The additions may be reordered and each square fused with its addition (``reassoc``, ``contract``:
    LLVM vectorises the loop, 2–3× faster than one chain; no other fast-math flag, so inf and NaN keep
    their meaning): a sum of non-negative terms keeps the relative error bound ``(d+6)u₆₄`` of the
    direct formula whatever the order of its additions, with or without FMA.
    """
    s = 0.0
    for j in range(points.shape[1]):
        d = (queries[i, j] - np.float64(points[c, j])) * inv_support
        s += d * d
    return s


@njit_cached(nogil=True)
def tile_sums(
    t,
    select,
    redo,
    col_ids,
    labels,
    weights,
    points,
    queries,
    inv_support,
    direct_factor,
    row_err,
    scales,
    g_order,
    tail_cut,
    code,
    radius_sq,
    inv_weight_max,
    class_sums,
    sq_sum,
    dist_sum,
    tail_mass,
    hist,
    hist_md,
):  # pragma: no cover - compiled
    """Add one tile's kernel sums to the accumulators, in one pass over ``t``.

    Distances are in units of the support radius S (``δ = d²/S²``).

    Parameters
    ----------
    t : ndarray of shape (rows, width), float32 or float64, C-contiguous
        ``t̃ = 1 − d̃²/S²`` of each (query, training point) pair of the tile.
    select : ndarray of shape (rows,), the dtype of ``t``
        Per row, entries with ``t̃ < select`` are skipped (``−e`` for a compact kernel,
        ``−inf`` to visit all).
    redo : float64 ndarray of shape (rows,)
        Per row, entries with ``t̃ < redo`` get ``δ`` recomputed directly from the
        coordinates (the band ``|t̃| ≤ e`` around the support's edge; ``inf``: all).
    col_ids : intp ndarray of shape (width,)
        Layout index of each tile column.
    labels : intp ndarray of shape (n_train,)
    weights : float64 ndarray of shape (n_train,) or (0,)
        Sample weights in units of a power of two ≥ the largest (``TrainingSet.weight_unit``: no
        ``(w K)²`` overflows); empty for unit weights. The caller scales the sums back.
    points : ndarray of shape (n_train, d)
        Original training rows (layout order), for direct distances.
    queries : float64 ndarray of shape (rows, d)
        Original query rows.
    inv_support : float
        ``1/S``.
    direct_factor : float
        ``1 +`` the relative error bound of a direct distance.
    row_err : float64 ndarray of shape (rows,)
        Bound on ``|δ̃ − δ|`` of the product's entries; added under the square root of
        ``dist_sum`` so that it bounds the true distances from above.
    scales : float64 ndarray of shape (G,)
        ``(S/λ)²`` per bandwidth: ``u² = δ·scales[g]``.
    g_order : intp ndarray of shape (G,)
        The bandwidths by decreasing ``scales`` (increasing λ). With several bandwidths the
        entries are sorted by the first position in this order whose ``u² ≤ R²`` (their
        *slot*); bandwidth ``g_order[j]`` then visits only the prefix of entries with slot
        ``≤ j`` — the others have ``K = 0`` there, so the sums are unchanged.
    tail_cut : float64 ndarray of shape (G,)
        Tail radius ``r_t·λ/S`` per bandwidth (ignored without ``tail_mass``).
    code : int
        Kernel code (see :data:`KERNEL_CODES`).
    radius_sq : float
        Squared support radius ``R²`` (the truncation radius for the Gaussian), the
        histogram's range.
    inv_weight_max : float
        ``unit/max w`` for ``weights`` in that unit: histogram entries add ``w_i/max w``.
    class_sums : float64 ndarray of shape (rows, G, C)
    sq_sum : float64 ndarray of shape (rows, G)
    dist_sum, tail_mass : float64 ndarray of shape (rows, G) or (0, 0)
        Accumulated only when non-empty (``dist_sum`` in units of S).
    hist : float64 ndarray of shape (rows, G, B) or (0, 0, 0)
        Bin ``⌊u²·B/R²⌋`` (clipped to B − 1) of each entry with ``u² ≤ R²``.
    hist_md : float64 ndarray of shape (rows, G, B, 2 or 3) or (0, 0, 0, 0)
        Per bin ``Σ w_i K_i`` and ``Σ w_i K_i r_i⁺`` (``r⁺`` the upper-bounded distance of
        ``dist_sum``, units of S): the split histogram form of the Chernoff bound; with a third
        field (weighted data) also the number of points in the bin.
    """
    n_rows, width = t.shape
    n_bw = scales.shape[0]
    weighted = weights.shape[0] > 0
    need_dist = dist_sum.shape[0] > 0
    need_tail = tail_mass.shape[0] > 0
    need_hist = hist.shape[0] > 0
    need_md = hist_md.shape[0] > 0
    need_count = need_md and hist_md.shape[3] > 2
    n_bins = hist.shape[2]
    hist_scale = n_bins / radius_sq if need_hist else 0.0
    cols = np.empty(width, dtype=np.intp)
    vals = np.empty(width, dtype=t.dtype)
    d2 = np.empty(width)
    redo_at = np.empty(width, dtype=np.intp)
    u2 = np.empty(width)
    wk = np.empty(width)
    w_sel = np.empty(width if weighted else 0)
    lab = np.empty(width, dtype=np.intp)
    slot = np.empty(width, dtype=np.intp)
    d2_sorted = np.empty(width)
    cols_sorted = np.empty(width, dtype=np.intp)
    counts = np.zeros(n_bw + 2, dtype=np.intp)
    s_sorted = np.empty(n_bw)
    for j in range(n_bw):
        s_sorted[j] = scales[g_order[j]]
    n_classes = class_sums.shape[2]
    part = np.zeros((4, n_classes))
    for i in range(n_rows):
        n = _select(t[i], select[i], cols, vals)
        if n == 0:
            continue
        rd = redo[i]
        # Branch-free: δ from the product for every entry, and the positions of those it
        # cannot place (t̃ < redo: near the edge, or all when too coarse) listed apart
        # (slot n_redo ≤ k is written each time: in bounds).
        n_redo = 0
        for k in range(n):
            cols[k] = col_ids[cols[k]]
            v = np.float64(vals[k])
            d2[k] = max(1.0 - v, 0.0)
            redo_at[n_redo] = k
            n_redo += v < rd
        for m in range(n_redo):  # their distance from the coordinates instead
            k = redo_at[m]
            d2[k] = _pair_delta(queries, i, points, cols[k], inv_support)
        if n_bw > 1:
            # Slot of each entry: the first bandwidth (by increasing λ) that reaches it; a
            # counting sort by slot makes every bandwidth's entries a prefix.
            counts[:] = 0
            for k in range(n):
                lo = 0
                hi = n_bw  # slot n_bw: outside every bandwidth
                while lo < hi:  # u² = δ·s is monotone in s: binary search
                    mid = (lo + hi) // 2
                    if d2[k] * s_sorted[mid] <= radius_sq:
                        hi = mid
                    else:
                        lo = mid + 1
                slot[k] = lo
                counts[lo + 1] += 1
            for j in range(n_bw + 1):
                counts[j + 1] += counts[j]
            for k in range(n):
                pos = counts[slot[k]]
                counts[slot[k]] += 1
                d2_sorted[pos] = d2[k]
                cols_sorted[pos] = cols[k]
            for k in range(n):
                d2[k] = d2_sorted[k]
                cols[k] = cols_sorted[k]
        for k in range(n):
            lab[k] = labels[cols[k]]
        if weighted:
            for k in range(n):
                w_sel[k] = weights[cols[k]]
        err = row_err[i]
        n_all = n
        for j in range(n_bw):
            g = g_order[j]
            # after the counting sort counts[j] = number of entries with slot ≤ j
            n = counts[j] if n_bw > 1 else n_all
            if n == 0:
                continue
            scale = scales[g]
            for k in range(n):
                u2[k] = d2[k] * scale
            _evaluate(code, u2, radius_sq, wk, n)
            if weighted:
                for k in range(n):
                    wk[k] *= w_sel[k]
            # Four interleaved partial sums: consecutive entries of the same
            # class would otherwise wait on each other's store (and add).
            part[:, :] = 0.0
            s0 = s1 = s2 = s3 = 0.0
            k = 0
            while k + 4 <= n:
                v0, v1, v2, v3 = wk[k], wk[k + 1], wk[k + 2], wk[k + 3]
                s0 += v0 * v0
                s1 += v1 * v1
                s2 += v2 * v2
                s3 += v3 * v3
                part[0, lab[k]] += v0
                part[1, lab[k + 1]] += v1
                part[2, lab[k + 2]] += v2
                part[3, lab[k + 3]] += v3
                k += 4
            for kk in range(k, n):
                s0 += wk[kk] * wk[kk]
                part[0, lab[kk]] += wk[kk]
            sq_sum[i, g] += (s0 + s1) + (s2 + s3)
            for c in range(n_classes):
                class_sums[i, g, c] += (part[0, c] + part[1, c]) + (part[2, c] + part[3, c])
            if need_hist:
                for k in range(n):
                    if u2[k] <= radius_sq:  # the very u² the kernel value came from
                        b = min(np.intp(u2[k] * hist_scale), n_bins - 1)
                        hist[i, g, b] += (w_sel[k] if weighted else 1.0) * inv_weight_max
                        if need_count:  # the points themselves (weighted data)
                            hist_md[i, g, b, 2] += 1.0
                        if need_md and wk[k] > 0.0:
                            hist_md[i, g, b, 0] += wk[k]
                            hist_md[i, g, b, 1] += wk[k] * math.sqrt(d2[k] * direct_factor + err)
            if need_dist or need_tail:
                ds = 0.0
                tm = 0.0
                cut = tail_cut[g]
                for k in range(n):
                    if wk[k] > 0.0:  # the square root only where K > 0 matters
                        dist = math.sqrt(d2[k] * direct_factor + err)  # ≥ the true distance
                        ds += wk[k] * dist
                        if dist > cut:
                            tm += wk[k]
                if need_dist:
                    dist_sum[i, g] += ds
                if need_tail:
                    tail_mass[i, g] += tm


@njit_cached(nogil=True, inline="always")
def _add_linear(part, o, d, r):  # pragma: no cover - compiled
    """One entry's moments of a kernel of degree 1 in ``u²`` (unit weights) into ``part[o : o + 5]``:
    ``1, δ, δ², r, r·δ``."""
    part[o] += 1.0
    part[o + 1] += d
    part[o + 2] += d * d
    part[o + 3] += r
    part[o + 4] += r * d


@njit_cached(nogil=True)
def tile_moments(
    t,
    select,
    redo,
    col_ids,
    weights,
    points,
    queries,
    inv_support,
    direct_factor,
    row_err,
    thresholds,
    slot_table,
    inv_bucket,
    slot_steps,
    degree,
    mom,
    resolve,
):  # pragma: no cover - compiled
    """Add one tile's per-slot distance moments to ``mom`` (the ``bandwidth="auto"`` ranking pass).

    Each entry is found (``t̃ ≥ select``) and its ``δ = d²/S²`` formed as in :func:`tile_sums`;
    its *slot* is the number of ``thresholds`` below ``δ`` (the narrowest bandwidth that reaches
    it). Per slot the sums ``Σ w² δ^a`` (a ≤ 2m), ``Σ w r δ^a`` (a ≤ m, ``r`` the distance's upper
    bound) and, with weights, ``Σ w δ^a`` (a ≤ m) are added: for a kernel that is a polynomial of
    degree ``m`` in ``u²``, prefix sums over the slots give κ, ``Σ (wK)²`` and ``Σ wK·d`` of every
    bandwidth at once, at a cost that does not grow with the number of bandwidths.

    Parameters
    ----------
    t, select, redo, col_ids, weights, points, queries, inv_support, direct_factor, row_err
        As in :func:`tile_sums`.
    thresholds : float64 ndarray of shape (G + 1,)
        ``R²/scale`` of the bandwidths by increasing λ (increasing values), then ``inf``: an entry
        lies in the support of bandwidth ``j`` (in that order) when ``δ ≤ thresholds[j]``.
    slot_table : intp ndarray of shape (T,)
        Number of thresholds below ``b/inv_bucket`` for each bucket ``b`` of ``δ``: the slot
        search starts there and steps past the few thresholds inside the bucket.
    inv_bucket : float
        Buckets per unit of ``δ``.
    slot_steps : int
        Steps past the bucket's count that reach any entry's slot (``_sums._slot_table``): taken
        branch-free, whatever the entry (a loop that stops at the slot mispredicts its exit
        wherever hits and misses of the widest support mix: 14 → 5 ns an entry at 45 % hits).
    degree : int
        ``m``, the kernel's degree in ``u²``.
    mom : float64 ndarray of shape (rows, G, M)
        ``M = (2m + 1) + (m + 1)`` moments per slot, ``+ (m + 1)`` with weights, in that order.
    resolve : float
        Entries that may lie inside a bandwidth of threshold ``θ < resolve·row_err`` (the product
        cannot place them) get ``δ`` from the coordinates (``_tiles._MOMENT_RESOLVE``).
    """
    n_rows, width = t.shape
    n_bw = thresholds.shape[0] - 1
    n_table = slot_table.shape[0]
    weighted = weights.shape[0] > 0
    n_sq = 2 * degree + 1
    n_lin = degree + 1
    n_mom = mom.shape[2]
    cols = np.empty(width, dtype=np.intp)
    vals = np.empty(width, dtype=t.dtype)
    d2 = np.empty(width)
    dist = np.empty(width)
    slot = np.empty(width, dtype=np.intp)
    # Four interleaved partial sums per slot (entry k in row k & 3): consecutive entries of the
    # same slot would otherwise wait on each other's store. One array per row, so that the
    # unrolled loop below names each row's accumulators directly.
    stride = (n_bw + 1) * n_mom
    part = np.zeros((4, stride))
    p0, p1, p2, p3 = part[0], part[1], part[2], part[3]
    every = np.arange(width)  # the column list of a row visited in full
    visit_all = True  # guessed from the previous row: tiles of one block look alike
    for i in range(n_rows):
        row = t[i]
        sel = select[i]
        rd = redo[i]
        if visit_all:
            # Most entries count (the widest bandwidth often covers everything): a branch-free
            # pass over all of them; misses get δ = 2, beyond every support (slot G, dropped).
            hits = 0
            ambiguous = 0
            for k in range(width):
                v = np.float64(row[k])
                inside = v >= sel
                d2[k] = max(1.0 - v, 0.0) if inside else 2.0
                hits += inside
                ambiguous += inside and v < rd
            visit_all = 2 * hits >= width
            if hits == 0:
                continue
            n = width
            idx = every
            if ambiguous:
                for k in range(width):
                    v = np.float64(row[k])
                    if v >= sel and v < rd:  # ambiguous near the edge: from the coordinates
                        d2[k] = _pair_delta(queries, i, points, col_ids[k], inv_support)
        else:
            n = _select(row, sel, cols, vals)
            visit_all = 2 * n >= width
            if n == 0:
                continue
            idx = cols
            for k in range(n):
                v = np.float64(vals[k])
                if v < rd:  # ambiguous near the edge: the distance from the coordinates
                    d2[k] = _pair_delta(queries, i, points, col_ids[cols[k]], inv_support)
                else:
                    d2[k] = max(1.0 - v, 0.0)
        err = row_err[i]
        # Entries that may lie inside a bandwidth the product cannot resolve (θ < resolve·err: u²
        # off by more than R²/resolve) from the coordinates, with a relative error only.
        cut = -1.0
        for s in range(n_bw):
            if thresholds[s] < resolve * err:
                cut = thresholds[s] + err
        for k in range(n):
            dist[k] = math.sqrt(d2[k] * direct_factor + err)
        if cut >= 0.0:  # rare (a grid far wider than the data): apart, so the loop above vectorises
            for k in range(n):
                if d2[k] <= cut:
                    d2[k] = _pair_delta(queries, i, points, col_ids[idx[k]], inv_support)
                    dist[k] = math.sqrt(d2[k] * direct_factor)
        for k in range(n):
            d = d2[k]
            b = d * inv_bucket  # (may be inf for a far pair recomputed directly)
            s = slot_table[np.intp(b) if b < n_table - 1 else n_table - 1]
            for _ in range(slot_steps):  # s stops at the slot: thresholds[n_bw] = inf, and δ ≤ θ_s after
                s += np.intp(d > thresholds[s])
            while d > thresholds[s]:  # never taken (slot_steps suffice): a guard, predicted
                s += 1
            slot[k] = s
        part[:, :] = 0.0
        if degree == 1 and not weighted:  # Epanechnikov, unit weights: the common case, unrolled
            k = 0
            while k + 4 <= n:  # entries k … k + 3 to rows 0 … 3 (k is a multiple of 4)
                _add_linear(p0, slot[k] * 5, d2[k], dist[k])
                _add_linear(p1, slot[k + 1] * 5, d2[k + 1], dist[k + 1])
                _add_linear(p2, slot[k + 2] * 5, d2[k + 2], dist[k + 2])
                _add_linear(p3, slot[k + 3] * 5, d2[k + 3], dist[k + 3])
                k += 4
            for kk in range(k, n):
                _add_linear(part[kk & 3], slot[kk] * 5, d2[kk], dist[kk])
        else:
            for k in range(n):
                row_k = part[k & 3]
                o = slot[k] * n_mom
                d = d2[k]
                w = weights[col_ids[idx[k]]] if weighted else 1.0
                w2 = w * w
                wr = w * dist[k]
                x = 1.0
                for a in range(n_sq):
                    row_k[o + a] += w2 * x
                    if a < n_lin:
                        row_k[o + n_sq + a] += wr * x
                        if weighted:
                            row_k[o + n_sq + n_lin + a] += w * x
                    x *= d
        for s in range(n_bw):  # slot n_bw: outside every bandwidth
            for a in range(n_mom):
                o = s * n_mom + a
                mom[i, s, a] += (p0[o] + p1[o]) + (p2[o] + p3[o])
