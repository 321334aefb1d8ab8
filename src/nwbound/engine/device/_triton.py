"""Fused Triton kernel for the regular classifier's tile reduction (optional: needs triton + torch).

One program owns a block of ``BM`` queries and a contiguous run of training tiles of ``BN``
points. For each tile it forms the centred dot products with ``tl.dot`` (``input_precision``
``"ieee"``: float32 FMA, no TF32), turns them into ``d̃²``, evaluates the kernel and reduces
``Σ wK`` (into the tile's class), ``Σ (wK)²``, ``Σ wK·d⁺`` and the ``u²`` histogram (per bin
``Σ w``, ``Σ wK`` and ``Σ wK·d⁺``: ``histogram``, ``hist_mass``, ``hist_dist``, binned by the
very ``u²`` the kernel value came from) in registers: the distance block never reaches device
memory. Partial sums of the ``SPLIT`` runs are added afterwards in a fixed order; the histogram's
per-bin ``Σ wK`` and ``Σ wK·d⁺`` are added by float64 atomics (the default epilogue, see
:func:`_epilogue`): order-dependent in the last bits, inside ``sum_error`` (see **Sums**).

**Class sums without a per-class pass.** The training points are sorted by class and each class
is padded (weight 0) to a multiple of :data:`LAYOUT_TILE` points, so every tile holds one class:
a tile's row sums go to that class's column. The padding adds at most ``C·LAYOUT_TILE`` points.

**Precision ``"tf32x3"``** (opt-in) splits each float32 operand into two TF32 parts and uses the
tensor cores for three products; the dropped low-by-low product and the split's rounding bound the
relative error of each term by ``12u`` and, with tensor-core accumulation that truncates (Fasi,
Higham, Mikaitis and Pranesh, *PeerJ Comput. Sci.* 2021), each addition by ``2u``. The distance
error bound ``E`` then uses ``(16 + 2(m + 3))·u`` instead of ``γ_{m+3}``, so ``d⁺`` stays an upper
bound under that hardware model; it is not the default because the model is not a guarantee of
every GPU.

**``gemm="library"``** replaces the in-kernel dot by a load of ``q'·x'`` that PyTorch's float32
product (cuBLAS, TF32 off: the same ``γ_{m+3}`` bound) wrote for a block of queries; the
epilogue is the same code. It writes and reads the block once more, and is measured against the
fused form by ``benchmarks/bench_gpu.py``.

**Default ``gemm``**: ``"library"`` for ``precision="ieee"``: the fastest exact form of the first
device run (H200, ECG shapes 87 554 × 100 / 21 892 queries: 15.2 ms, 1.39× the bare cuBLAS
product's 10.9 ms, against 39 ms for the fused FMA dot; 795 ms, 1.61×, at 1M × 100 / 100k).

**Histogram.** Without sample weights (every positive weight 1) the default epilogue
(``"atomic_count"``) adds 1.0 per point inside the bandwidth to its (query, bin) count by float32
atomics (exact integers below 2²⁴ rows: order-free), and each nonzero ``wK`` and ``wK·d⁺`` to the
bin's float64 sums by atomics: no per-bin reduction of the tile (issue 19, H100 at the ECG shapes
with 32 bins: 21.8 ms against 39.7 ms for the per-bin loop, product 10.8 ms). With per-class or
sample weights the sums take the atomics and the counts the forms below (``"atomic"``).
Where every positive weight of a tile is the same (unweighted or per-class
weights: tiles hold one class), the kernel counts points per bin, several bins per int32 word
(8-bit fields for ``BN ≤ 64``, 10-bit for 128: a row's count ≤ ``BN`` never carries), one
reduction per word instead of one per bin, and scales by the tile's weight; otherwise (sample
weights) one masked reduction per bin. ``hist_count`` (the points of positive weight per bin, for
the split Chernoff form with sample weights) comes from the same packed counts; where every
positive weight is 1 it is the histogram itself. ``hist_mass`` and ``hist_dist`` take one masked reduction
per bin each (float32 within a tile, float64 across tiles, as the other sums); ``hist_dist`` gets
the same covering factor as ``dist_sum``. (These per-bin reductions are the ``"loop"`` epilogue,
the default before issue 19; ``nwbound.config_context(hist_epilogue="loop")`` selects it.)

``Σ (wK)²`` is summed in float32 within a tile: squares of ``wK`` below ``2⁻⁷⁵`` underflow, so
the sum gets :func:`~nwbound.engine.device._array_api.square_sum_bound` (``n·2⁻¹⁴⁹`` and the tile's
roundings) to stay an upper bound (multiplications compile without flush-to-zero: checked by
``tests/test_gpu_compile.py``).

``d⁺`` uses ``tl.sqrt`` (``sqrt.approx.ftz.f32`` on sm_90, relative error below 2⁻²²) and
float32 tile sums of at most ``BN`` terms; the factor ``1 + (BN + 8)u + 2⁻²¹`` applied to
``dist_sum`` and ``hist_dist`` covers both. Block sizes (:data:`CONFIGS`) were chosen from ptxas
reports for sm_90.

**Sums.** The weights are ``a_i = fl(w_i·K_i)`` (the float32 product the kernel forms once and uses
in every sum: deterministic, label-free weights). A tile adds at most ``BN`` of them in float32
(any order: a factor ``1 ± γ_BN``), the tiles' sums are added in float64 (``1 ± γ_T``, ``T`` the
number of tiles); ``sum_error = (1 + γ_BN)(1 + γ_T) − 1`` bounds ``class_sums`` and ``hist_mass``
(:func:`~nwbound._numerics.summation_error`), and the bound carries it. The atomic epilogue adds a
bin's terms (float32 values, exact in float64) one by one in float64, in the hardware's order: a
recursive sum of at most ``n`` nonnegative terms (``n`` the padded training rows) in some order,
so within ``γ_n`` (``u = 2⁻⁵³``) of the exact sum whatever the order; ``sum_error`` is the larger of
the two. ``hist_dist``'s atomic sums drop the float32 tile sum that the factor's ``BN·u`` covers,
and ``γ_n`` at ``u = 2⁻⁵³`` is far below it (``n < BN·2²⁹``): the same factor stays an upper bound.

``TRITON_INTERPRET=1`` runs the same kernel on the CPU with PyTorch CPU tensors (tests).

**The entry point.** :func:`nwbound.engine.device._sums.kernel_statistics` (public as
:func:`nwbound.gpu.kernel_statistics`) decides once between this kernel and the array-API pass of
:mod:`nwbound.engine.device._array_api`, on which this module builds (the training set's device
copy, the error bounds, the device form).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ._array_api import (
    SUPPORTED_KERNELS,
    DeviceTrainingSet,
    KernelStatistics,
    compat,
    device_statistics,
    distance_error_bounds,
    full_precision_matmul,
    square_sum_bound,
    unit_roundoff,
)
from ..._config import get_config
from ..._numerics import compose_errors, summation_error

__all__ = ["triton_kernel_statistics", "LAYOUT_TILE", "CONFIGS"]

# Training points per class are padded to a multiple of this; every BN divides it.
LAYOUT_TILE = 128
# Feature padding (the dot's K step).
_BK = 16
_KERNEL_CODES = {"epanechnikov": 0, "quartic": 1, "triweight": 2, "boxcar": 3, "gaussian": 4, "gaussian_untruncated": 5}
# (BM, BN, num_warps, num_stages) tried on first use per problem kind (a few seconds of
# compilation each, then cached by Triton on disk). Chosen from ptxas reports for sm_90 (Triton
# 3.9 here): every listed config compiles without register spills (or ≤ 8 bytes), while
# 128×128 tiles, tf32x3 at 128×64 with 4 warps and the histogram at 64×64 with 4 warps spill.
CONFIGS: dict[str, tuple[tuple[int, int, int, int], ...]] = {
    "ieee": ((64, 64, 4, 2), (64, 64, 8, 2), (128, 64, 8, 2), (64, 128, 8, 2)),
    "tf32x3": ((128, 64, 8, 3), (128, 64, 8, 2), (64, 64, 8, 3), (64, 64, 4, 3)),
    # With the histogram (counts, and per bin Σ wK and Σ wK·d⁺: two more row reductions per bin),
    # BN = 32: ptxas for sm_90 (Triton 3.9, no GPU needed: tests/test_gpu_compile.py), M_PAD 112,
    # 32 bins: no spills with the histogram from packed counts (unweighted, per-class weights), ≤ 28
    # bytes with sample weights (per-bin Σw, packed point counts for the split form's hist_count);
    # 0.5–30 KB at BN = 64, at 64×32, and at 2 warps per 16×32.
    "histogram": ((32, 32, 8, 2), (16, 32, 4, 1), (32, 32, 8, 1), (16, 32, 4, 2)),
    # gemm="library": the epilogue alone reads the product block (memory-bound: wide rows; taller
    # tiles of the loaded block spill, e.g. 64×64 with 4 warps: 1.2 KB).
    "library": ((16, 128, 4, 2), (32, 128, 8, 1), (16, 128, 4, 1), (32, 64, 4, 2)),
    # gemm="library" with the histogram, the per-bin loop epilogue (hist_epilogue="loop"): as
    # "histogram" (32 bins: no spills, ≤ 12 bytes with sample weights; 16 bins: ≤ 16 bytes).
    "library_histogram": ((16, 32, 4, 2), (32, 32, 8, 2), (16, 32, 4, 1), (32, 32, 8, 1)),
    # gemm="library" with the histogram, the atomic epilogues (the default) without sample weights:
    # H100, ECG shapes, 32 bins (issue 19 run 1, atomic_count): 16×32 w4 21.8 ms, 32×32 w8 22.5 ms,
    # 16×64 w4 23.6 ms. With sample weights (the per-bin Σw loop stays) "library_histogram": 16×64
    # w4 spills 1.5 KB there (ptxas, sm_90).
    "library_histogram_atomic": ((16, 32, 4, 2), (32, 32, 8, 2), (16, 64, 4, 2)),
}
# gemm="library": bytes of one product block (queries × padded training points, float32): under 2³¹
# elements, as the epilogue's loads index it with int32 offsets; at the ECG shapes (21 892 × 87 568,
# 7.7 GB) one block, one product and one epilogue launch (a 4 GiB cap split it in two: ~0.5 ms more).
_PRODUCT_BYTES = 4 * (2**31 - 1)
_INTERPRET_CONFIG = (16, 32, 1, 1)
# The packed histogram (one reduction per int32 word of bins, not per bin) up to this many bins;
# beyond, the per-bin form (either needs a static loop: keep B small, as the bounds do).
_PACKED_MAX_BINS = 64
_TUNED: dict[tuple, tuple[int, int, int, int]] = {}
# Every timing taken while tuning, per problem kind: (config, milliseconds) — the benchmark prints it.
TUNING_LOG: dict[tuple, list[tuple[tuple[int, int, int, int], float]]] = {}


@functools.cache
def _kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def nw_tile_kernel(
        q_ptr, qn_ptr, qerr_ptr, qeta_ptr,
        x_ptr, xn_ptr, w_ptr, tcls_ptr, tw_ptr,
        cs_ptr, sq_ptr, ds_ptr, h_ptr, hm_ptr, hd_ptr, hc_ptr, p_ptr,
        n_q, tiles_per_split, n_tiles, inv_lam2, r2, p_stride,
        M_PAD: tl.constexpr, C_PAD: tl.constexpr, BINS: tl.constexpr, B_PAD: tl.constexpr,
        KERNEL: tl.constexpr, NEED_DIST: tl.constexpr, PRECISION: tl.constexpr, FROM_PRODUCT: tl.constexpr,
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, STEPS: tl.constexpr,
        HIST_WORDS: tl.constexpr, FIELDS: tl.constexpr, BITS: tl.constexpr, UNIFORM: tl.constexpr,
        COUNT: tl.constexpr, ATOMIC: tl.constexpr = False, SKIP: tl.constexpr = False,
        BIN_LOOP: tl.constexpr = True, ATOMIC_COUNT: tl.constexpr = False, PACKED_ATOMIC: tl.constexpr = False,
    ):
        pid_m = tl.program_id(0)
        pid_s = tl.program_id(1)
        rows = pid_m * BM + tl.arange(0, BM)
        rmask = rows < n_q
        qn = tl.load(qn_ptr + rows, mask=rmask, other=0.0)
        qerr = tl.load(qerr_ptr + rows, mask=rmask, other=0.0)
        qeta = tl.load(qeta_ptr + rows, mask=rmask, other=0.0)
        acc_cs = tl.zeros((BM, C_PAD), tl.float64)
        acc_sq = tl.zeros((BM,), tl.float64)
        acc_ds = tl.zeros((BM,), tl.float64)
        acc_h = tl.zeros((BM, B_PAD), tl.float32)  # float32: fewer registers, counts exact to 2^24
        acc_hm = tl.zeros((BM, B_PAD), tl.float64)  # per bin Σ wK and Σ wK·d⁺ (float64, as acc_ds)
        acc_hd = tl.zeros((BM, B_PAD), tl.float64)
        acc_hc = tl.zeros((BM, B_PAD), tl.float32)  # points of positive weight per bin (COUNT only)
        cls_ids = tl.arange(0, C_PAD)
        bin_ids = tl.arange(0, B_PAD)
        t0 = pid_s * tiles_per_split
        n_steps = tl.minimum(t0 + tiles_per_split, n_tiles) - t0
        # STEPS > 0 (the interpreter only): a Python-int bound, as Triton < 3.9's interpreter cannot
        # take a tensor as a range bound (int() of a 1-element array); a constexpr ternary, since
        # the interpreter turns every assigned value into a tensor.
        for i in range(0, STEPS if STEPS > 0 else n_steps):
            t = t0 + i
            cols = t * BN + tl.arange(0, BN)
            if FROM_PRODUCT:  # gemm="library": the block's q'·x' were written by the library's product
                dot = tl.load(p_ptr + rows[:, None] * p_stride + cols[None, :], mask=rmask[:, None], other=0.0)
            else:
                dot = tl.zeros((BM, BN), tl.float32)
                for k0 in tl.static_range(0, M_PAD, BK):
                    ks = k0 + tl.arange(0, BK)
                    a = tl.load(q_ptr + rows[:, None] * M_PAD + ks[None, :], mask=rmask[:, None], other=0.0)
                    b = tl.load(x_ptr + cols[None, :] * M_PAD + ks[:, None])
                    dot = tl.dot(a, b, dot, input_precision=PRECISION)
            xn = tl.load(xn_ptr + cols)
            w = tl.load(w_ptr + cols)
            d2 = tl.maximum((qn[:, None] + xn[None, :]) - 2.0 * dot, 0.0)
            u2 = d2 * inv_lam2
            if KERNEL == 3:
                k = tl.where(u2 <= 1.0, 1.0, 0.0)
            elif KERNEL == 4:
                k = tl.where(u2 <= r2, tl.exp(-0.5 * u2), 0.0)
            elif KERNEL == 5:
                k = tl.exp(-0.5 * u2)
            else:
                k = tl.maximum(1.0 - u2, 0.0)
                if KERNEL == 1:
                    k = k * k
                elif KERNEL == 2:
                    k = k * k * k
            wk = k * w[None, :]
            cls = tl.load(tcls_ptr + t)
            row_sum = tl.sum(wk, axis=1).to(tl.float64)
            acc_cs += tl.where(cls_ids[None, :] == cls, row_sum[:, None], 0.0)
            acc_sq += tl.sum(wk * wk, axis=1).to(tl.float64)
            # w·K·d⁺ (d⁺ ≥ d): for dist_sum and the histogram's per-bin sums (dead code without either).
            wkd = wk * (tl.sqrt(d2 + qerr[:, None]) + qeta[:, None])
            if NEED_DIST:
                acc_ds += tl.sum(wkd, axis=1).to(tl.float64)
            if BINS > 0:
                idx = (tl.minimum(u2, 2.0) * BINS).to(tl.int32)  # far points: no int overflow
                idx = tl.where(u2 == 1.0, BINS - 1, idx)
                # SKIP (private switch): a tile with no point of positive weight in a bin would add exact
                # zeros. A constexpr ternary in the test itself (an assigned True would become a
                # tensor, and the branch a runtime one): without SKIP the branch is static.
                if (tl.max(tl.where((idx < BINS) & (w[None, :] > 0.0), 1, 0)) > 0) if SKIP else True:
                    if HIST_WORDS > 0:
                        # Count per bin, FIELDS bins per int32 word of BITS-bit fields (a row's count ≤ BN <
                        # 2^BITS: no carry, exact), one reduction per word instead of one per bin;
                        # zero-weight points (padding) not counted. UNIFORM (every positive weight of
                        # the tile equals tw): the histogram is the counts times tw.
                        inside = (idx < BINS) & (w[None, :] > 0.0)
                        word = idx // FIELDS
                        one = tl.where(inside, 1 << ((idx - word * FIELDS) * BITS), 0)
                        bin_word = bin_ids // FIELDS
                        bin_shift = (bin_ids - bin_word * FIELDS) * BITS
                        counts = tl.zeros((BM, B_PAD), tl.int32)
                        for hw in tl.static_range(HIST_WORDS):  # not `k` (the kernel values: a branch may not retype it)
                            packed = tl.sum(tl.where(word == hw, one, 0), axis=1)
                            field = (packed[:, None] >> bin_shift[None, :]) & ((1 << BITS) - 1)
                            counts += tl.where(bin_word[None, :] == hw, field, 0)
                        if UNIFORM:
                            acc_h += counts.to(tl.float32) * tl.load(tw_ptr + t)
                        if COUNT:
                            acc_hc += counts.to(tl.float32)
                    if ATOMIC:
                        # (private switch) Per bin Σ wK and Σ wK·d⁺ by float64 atomic adds of the
                        # nonzero terms straight into this launch's [n_q, B_PAD] outputs: no per-bin
                        # reductions; the order of the float64 additions is the hardware's.
                        hit = (idx < BINS) & (wk > 0.0) & rmask[:, None]
                        offs = rows[:, None] * B_PAD + idx
                        counted = (idx < BINS) & (w[None, :] > 0.0) & rmask[:, None]
                        if PACKED_ATOMIC:  # (query, bin) → 4 float64 (Σ wK, Σ wK·d⁺, count, pad): one sector
                            tl.atomic_add(hm_ptr + offs * 4, wk.to(tl.float64), mask=hit, sem="relaxed")
                            tl.atomic_add(hm_ptr + offs * 4 + 1, wkd.to(tl.float64), mask=hit, sem="relaxed")
                            if ATOMIC_COUNT:  # float64 adds of 1.0: exact integers in any order
                                tl.atomic_add(hm_ptr + offs * 4 + 2, tl.where(counted, 1.0, 0.0).to(tl.float64),
                                              mask=counted, sem="relaxed")
                        else:
                            tl.atomic_add(hm_ptr + offs, wk.to(tl.float64), mask=hit, sem="relaxed")
                            tl.atomic_add(hd_ptr + offs, wkd.to(tl.float64), mask=hit, sem="relaxed")
                            if ATOMIC_COUNT:  # every positive weight 1: the histogram is the count, float32
                                # adds of 1.0 (exact below 2^24 rows: any order gives the same integers)
                                tl.atomic_add(h_ptr + offs, tl.where(counted, 1.0, 0.0), mask=counted, sem="relaxed")
                    if BIN_LOOP:
                        # Per bin Σ wK and Σ wK·d⁺ over the same idx (the split Chernoff form), and the
                        # counts here too where the packed form does not apply (sample weights). A tile's
                        # per-bin sums are placed by selects (exact) and added to float64 once per tile.
                        tile_hm = tl.zeros((BM, B_PAD), tl.float32)
                        tile_hd = tl.zeros((BM, B_PAD), tl.float32)
                        for bin_b in tl.static_range(BINS):  # not `b` (the dot's operand under SKIP's branch)
                            in_b = idx == bin_b
                            col_b = bin_ids[None, :] == bin_b
                            if not ATOMIC:
                                tile_hm = tl.where(col_b, tl.sum(tl.where(in_b, wk, 0.0), axis=1)[:, None], tile_hm)
                                tile_hd = tl.where(col_b, tl.sum(tl.where(in_b, wkd, 0.0), axis=1)[:, None], tile_hd)
                            if not UNIFORM:
                                hb = tl.sum(tl.where(in_b, w[None, :], 0.0), axis=1)
                                acc_h += tl.where(col_b, hb[:, None], 0.0)
                            if COUNT and HIST_WORDS == 0:  # more bins than the packed form holds
                                hc = tl.sum(tl.where(in_b & (w[None, :] > 0.0), 1.0, 0.0), axis=1)
                                acc_hc += tl.where(col_b, hc[:, None], 0.0)
                        if not ATOMIC:
                            acc_hm += tile_hm.to(tl.float64)
                            acc_hd += tile_hd.to(tl.float64)
        out_rows = pid_s * n_q + rows
        tl.store(cs_ptr + out_rows[:, None] * C_PAD + cls_ids[None, :], acc_cs, mask=rmask[:, None])
        tl.store(sq_ptr + out_rows, acc_sq, mask=rmask)
        if NEED_DIST:
            tl.store(ds_ptr + out_rows, acc_ds, mask=rmask)
        if BINS > 0:
            h_offs = out_rows[:, None] * B_PAD + bin_ids[None, :]
            if not ATOMIC_COUNT:
                tl.store(h_ptr + h_offs, acc_h, mask=rmask[:, None])
            if not ATOMIC:
                tl.store(hm_ptr + h_offs, acc_hm, mask=rmask[:, None])
                tl.store(hd_ptr + h_offs, acc_hd, mask=rmask[:, None])
            if COUNT:
                tl.store(hc_ptr + h_offs, acc_hc, mask=rmask[:, None])

    return nw_tile_kernel


def _pow2(n: int, low: int = 1) -> int:
    return max(low, 1 << max(0, int(n) - 1).bit_length())


class _Layout:
    """Class-sorted, padded float32 training layout (torch tensors on the training set's device)."""

    def __init__(self, train: DeviceTrainingSet):
        import torch

        X = _as_torch(train.centred)
        onehot = _as_torch(train.onehot)
        n, m = X.shape
        self.n_features = m
        self.m_pad = _BK * math.ceil(max(m, 1) / _BK)
        n_cls = onehot.shape[1]
        self.n_classes = n_cls
        self.c_pad = _pow2(n_cls, 2)
        labels = torch.argmax((onehot > 0).to(torch.int8), dim=1)
        weights = onehot.sum(dim=1)
        counts = torch.bincount(labels, minlength=n_cls)
        padded = (counts + LAYOUT_TILE - 1) // LAYOUT_TILE * LAYOUT_TILE
        starts_pad = torch.cumsum(padded, 0) - padded
        starts = torch.cumsum(counts, 0) - counts
        order = torch.argsort(labels, stable=True)
        sorted_labels = labels[order]
        pos = starts_pad[sorted_labels] + (torch.arange(n, device=X.device) - starts[sorted_labels])
        n_pad = int(padded.sum())  # ≥ LAYOUT_TILE: the training set is never empty
        dev = X.device
        self.x = torch.zeros((n_pad, self.m_pad), dtype=torch.float32, device=dev)
        self.x[pos, :m] = X[order].to(torch.float32)
        self.xn = torch.zeros(n_pad, dtype=torch.float32, device=dev)
        self.xn[pos] = _as_torch(train.sqnorm)[order].to(torch.float32)
        self.w = torch.zeros(n_pad, dtype=torch.float32, device=dev)
        self.w[pos] = weights[order].to(torch.float32)
        # Each padded class segment carries its class id (padding has weight 0).
        self.cls = torch.repeat_interleave(torch.arange(n_cls, device=dev, dtype=torch.int32), padded)
        self.n_pad = n_pad
        # Every positive weight is 1 (no sample weights): the histogram is the count already.
        self.unit_weights = bool(((self.w == 0) | (self.w == 1)).all())
        self._tile_w: dict[int, tuple[Any, bool]] = {}

    def tile_classes(self, bn: int) -> Any:
        return self.cls[::bn].contiguous()

    def tile_weights(self, bn: int) -> tuple[Any, bool]:
        """Each tile's largest weight, and whether every positive weight equals its tile's.

        True for unweighted and per-class-weighted fits (tiles hold one class): the histogram then
        counts points per bin and scales by the tile's weight (the packed form of the kernel).
        """
        if bn not in self._tile_w:
            w = self.w.view(-1, bn)
            tw = w.amax(dim=1).contiguous()
            self._tile_w[bn] = (tw, bool(((w == 0) | (w == tw[:, None])).all()))
        return self._tile_w[bn]


def _as_torch(a: Any) -> Any:
    import torch

    if isinstance(a, torch.Tensor):
        return a
    return torch.from_dlpack(a)  # CuPy → torch, zero copy


def _layout(train: DeviceTrainingSet) -> _Layout:
    # One layout per training set object (frozen dataclass: cache in a side table by id).
    key = id(train)
    cached = _LAYOUTS.get(key)
    if cached is None or cached[0] is not train:
        _LAYOUTS.clear()  # keep one: the layout holds a full copy of the training set
        cached = (train, _Layout(train))
        _LAYOUTS[key] = cached
    return cached[1]


_LAYOUTS: dict[int, tuple[DeviceTrainingSet, _Layout]] = {}


def triton_kernel_statistics(
    Xq: Any,
    train: DeviceTrainingSet,
    kernel: str,
    bandwidth: float,
    *,
    need_dist: bool = True,
    histogram_bins: int = 0,
    precision: str = "ieee",
    gemm: str | None = None,
    config: tuple[int, int, int, int] | None = None,
    epilogue: str | None = None,
) -> KernelStatistics:
    """The statistics of :func:`nwbound.gpu.kernel_statistics` from the fused kernel.

    Parameters are those of :func:`~nwbound.gpu.kernel_statistics` (already checked), plus
    ``precision`` (``"ieee"`` or ``"tf32x3"``, see the module docstring), ``gemm`` and ``config``
    ``(BM, BN, num_warps, num_stages)`` (None: tuned once per problem kind among :data:`CONFIGS`).
    ``gemm="fused"`` computes the dot products inside the kernel (nothing but the sums reaches
    memory); ``gemm="library"`` lets PyTorch's float32 product (cuBLAS, TF32 off) write
    ``q'·x'`` for a block of queries (at most 4 GiB and a quarter of the free device memory) and the
    same kernel's epilogue reads it once: one extra write and read of the block, in exchange for
    the library's product speed. ``gemm=None`` (default): ``"library"`` with ``precision="ieee"``,
    the fastest exact form measured (H200, ECG shapes: 15.2 ms against 39 ms fused, product
    10.9 ms), ``"fused"`` with ``"tf32x3"``. ``epilogue`` (private, for measurements): how the
    histogram's per-bin sums are formed, see :func:`_epilogue` (None: the config key ``hist_epilogue``,
    else ``"atomic_count"``, the fastest measured; ``"loop"`` is the deterministic form before it).

    Examples
    --------
    Needs torch and triton, and a CUDA device (or ``TRITON_INTERPRET=1`` set before importing triton):

    >>> import torch                                                      # doctest: +SKIP
    >>> from nwbound.gpu import DeviceTrainingSet
    >>> from nwbound.engine.device._triton import triton_kernel_statistics
    >>> X = torch.tensor([[0.0], [0.5], [3.0]], device="cuda")            # doctest: +SKIP
    >>> onehot = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], device="cuda")  # doctest: +SKIP
    >>> train = DeviceTrainingSet.build(X, onehot)                        # doctest: +SKIP
    >>> q = torch.zeros((1, 1), device="cuda")                            # doctest: +SKIP
    >>> triton_kernel_statistics(q, train, "epanechnikov", 1.0).class_sums.tolist()  # doctest: +SKIP
    [[[1.0, 0.75]]]
    """
    import torch

    aac = compat()
    if precision not in ("ieee", "tf32x3"):
        raise ValueError(f"precision must be 'ieee' or 'tf32x3', got {precision!r}.")
    if gemm is None:
        gemm = "library" if precision == "ieee" else "fused"
    if gemm not in ("fused", "library"):
        raise ValueError(f"gemm must be 'fused', 'library' or None, got {gemm!r}.")
    if gemm == "library" and precision != "ieee":
        raise ValueError("gemm='library' computes the product in full float32: use precision='ieee'.")
    back_to_cupy = aac.is_cupy_namespace(aac.array_namespace(Xq))
    lay = _layout(train)
    q = _as_torch(Xq)
    dev = lay.x.device
    n_q, m = q.shape
    center = _as_torch(train.center).to(dev)
    qc = (q.to(torch.float64) - center).to(torch.float32)
    qc64 = qc.to(torch.float64)
    q_sq64 = (qc64 * qc64).sum(dim=1)
    u = unit_roundoff(np, np.float32)
    d2_err, eta = distance_error_bounds(aac.array_namespace(q_sq64), q_sq64, train)
    if precision == "tf32x3":  # the tensor-core model's constant instead of γ_{m+3}
        k_terms = m + 3
        d2_err = d2_err * ((16 + 2 * k_terms) * (1.0 - k_terms * u) / k_terms)
    qpad = torch.zeros((n_q, lay.m_pad), dtype=torch.float32, device=dev)
    qpad[:, :m] = qc
    qn = q_sq64.to(torch.float32)  # float64 norm rounded once, as the training side
    bins = int(histogram_bins)
    b_pad = _pow2(bins, 2) if bins else 2
    atomic, skip, count_atomic, packed_atomic = _epilogue(epilogue)

    def run(cfg: tuple[int, int, int, int]) -> tuple:
        if gemm == "fused":
            return _launch(qpad, qn, d2_err, eta, lay, kernel, bandwidth, need_dist, bins, b_pad, precision, cfg, None,
                           atomic, skip, count_atomic, packed_atomic)
        rows = max(1, min(n_q, _product_bytes(dev) // (4 * lay.n_pad)))
        parts = []
        with full_precision_matmul(aac.array_namespace(qpad)):
            for s in range(0, n_q, rows):  # query blocks: the product block stays < 2³¹ elements
                e = min(s + rows, n_q)
                prod = torch.matmul(qpad[s:e], lay.x.T)
                parts.append(_launch(qpad[s:e], qn[s:e], d2_err[s:e], eta[s:e], lay, kernel, bandwidth, need_dist,
                                     bins, b_pad, precision, cfg, prod, atomic, skip, count_atomic, packed_atomic))
        return tuple(None if parts[0][i] is None else torch.cat([p[i] for p in parts]) for i in range(7))

    if config is None:
        if gemm == "library":
            # The atomic epilogue's family where it leaves no per-bin loop (every tile's positive
            # weights equal); with sample weights (the Σw loop stays) the loop's: 16×64 spills there.
            atomic_family = atomic and lay.tile_weights(LAYOUT_TILE)[1]
            family = ("library_histogram_atomic" if atomic_family else "library_histogram") if bins else "library"
        else:
            family = "histogram" if bins else precision
        config = _INTERPRET_CONFIG if dev.type != "cuda" else _tuned_config(
            (precision, gemm, lay.m_pad, lay.c_pad, bins, bool(need_dist), kernel, _pow2(n_q), lay.n_pad // 4096,
             family, atomic, skip, count_atomic, packed_atomic), run, family,
        )
    cs, sq, ds, hist, hm, hd, hc = run(config)
    # d⁺'s square root, product and float32 tile sum (≤ BN terms) are covered by the factor
    # (dist_sum and each bin's hist_dist alike).
    factor = 1.0 + (config[1] + 8) * u + 2.0**-21
    out = device_statistics(
        kernel, bandwidth,
        class_sums=cs[:, : lay.n_classes],
        # float32 squares of wK (underflow below 2⁻¹⁴⁹: weights far below the largest), w·K, the
        # square and a BN-term float32 tile sum rounded: an upper bound again (padding adds 0).
        sq_sum=square_sum_bound(sq, int(train.centred.shape[0]), "float32", config[1] + 1),
        dist_sum=ds * factor if need_dist else None,
        histogram=hist[:, :bins] if bins else None,
        d2_error=d2_err,
        hist_mass=hm[:, :bins] if bins else None,
        hist_dist=hd[:, :bins] * factor if bins else None,
        hist_count=hc[:, :bins] if bins else None,
        # float32 tile sums of ≤ BN terms, then float64 over the tiles (every split's); the atomic
        # epilogue adds hist_mass's float32 terms (exact in float64) in float64 in any order: γ_n.
        sum_error=max(compose_errors(summation_error(config[1], "float32"),
                                     summation_error(lay.n_pad // config[1] + 1, "float64")),
                      summation_error(lay.n_pad, "float64") if atomic and bins else 0.0),
    )
    if back_to_cupy:
        import cupy

        out = out.map_arrays(lambda a: cupy.from_dlpack(a.contiguous()))
    return out


def _launch(qpad, qn, d2_err, eta, lay: _Layout, kernel: str, bandwidth: float, need_dist: bool,
            bins: int, b_pad: int, precision: str, config: tuple[int, int, int, int], product,
            atomic: bool = False, skip: bool = False, count_atomic: bool = False, packed_atomic: bool = False):
    import torch
    import triton

    bm, bn, warps, stages = config
    if LAYOUT_TILE % bn:
        raise ValueError(f"config BN={bn} must divide LAYOUT_TILE={LAYOUT_TILE}.")
    n_q = qpad.shape[0]
    dev = qpad.device
    n_tiles = lay.n_pad // bn
    m_blocks = triton.cdiv(n_q, bm)
    if dev.type == "cuda":
        n_sm = torch.cuda.get_device_properties(dev).multi_processor_count
        split = max(1, min(n_tiles, math.ceil(4 * n_sm / m_blocks)))
    else:  # the interpreter: two runs (partial sums covered), each of exactly STEPS tiles
        split = 2 if n_tiles % 2 == 0 else 1
    split, tiles_per_split = _splits(n_tiles, bn, split)
    steps = tiles_per_split if dev.type != "cuda" else 0  # compiled: runtime bound, one binary for all sizes
    f64 = dict(dtype=torch.float64, device=dev)
    cs = torch.empty((split, n_q, lay.c_pad), **f64)
    sq = torch.empty((split, n_q), **f64)
    ds = torch.empty((split, n_q), **f64) if need_dist else sq
    atomic = bool(atomic and bins)
    # Unit weights, atomic epilogue "atomic_count": the histogram (the counts) by atomic adds too.
    atomic_count = atomic and count_atomic and lay.unit_weights and lay.n_pad <= _EXACT_COUNT_ROWS
    packed_atomic = atomic and packed_atomic
    # "atomic_packed": one zeroed [n_q, B_PAD, 4] float64 array (Σ wK, Σ wK·d⁺, count, pad) for the atomics.
    sector = torch.zeros((n_q, b_pad, 4), dtype=torch.float64, device=dev) if packed_atomic else None
    if atomic_count:
        hist = torch.zeros((n_q, b_pad), dtype=torch.float32, device=dev)
    else:
        hist = torch.empty((split, n_q, b_pad), dtype=torch.float32, device=dev) if bins else sq
    # The atomic epilogue adds into one zeroed [n_q, B_PAD] array (no per-split partial sums).
    hist_mass = (torch.zeros((n_q, b_pad), **f64) if atomic else torch.empty((split, n_q, b_pad), **f64)) if bins else sq
    hist_dist = (torch.zeros((n_q, b_pad), **f64) if atomic else torch.empty((split, n_q, b_pad), **f64)) if bins else sq
    if packed_atomic:
        hist_mass = hist_dist = sector
    count = bool(bins) and not lay.unit_weights  # with weights 1 the histogram is the count
    hist_count = torch.empty((split, n_q, b_pad), dtype=torch.float32, device=dev) if count else sq
    r2 = SUPPORTED_KERNELS[kernel] if math.isfinite(SUPPORTED_KERNELS[kernel]) else 0.0
    tile_w, uniform = lay.tile_weights(bn)
    # A row's count per tile (≤ BN) must fit its field and the top field stay below the sign bit.
    fields, bits = (4, 8) if bn <= 64 else (3, 10)
    packed = bool(bins) and bins <= _PACKED_MAX_BINS and (uniform or count)
    hist_words = -(-bins // fields) if packed and not atomic_count else 0
    # The per-bin loop: for hist_mass/hist_dist unless atomic, for Σw per bin without uniform
    # tiles, for the counts beyond the packed form.
    uniform_flag = bool(packed and uniform) or atomic_count  # the histogram needs no per-bin Σw
    bin_loop = bool(bins) and (not atomic or not uniform_flag or (count and not hist_words))
    _kernel()[(m_blocks, split)](
        qpad, qn, d2_err.to(torch.float32), eta.to(torch.float32),
        lay.x, lay.xn, lay.w, lay.tile_classes(bn), tile_w,
        cs, sq, ds, hist, hist_mass, hist_dist, hist_count, qpad if product is None else product,
        n_q, tiles_per_split, n_tiles, 1.0 / (bandwidth * bandwidth), r2,
        lay.n_pad if product is None else product.stride(0),
        M_PAD=lay.m_pad, C_PAD=lay.c_pad, BINS=bins, B_PAD=b_pad,
        KERNEL=_KERNEL_CODES[kernel], NEED_DIST=bool(need_dist), PRECISION=precision,
        FROM_PRODUCT=product is not None,
        BM=bm, BN=bn, BK=_BK, STEPS=steps, HIST_WORDS=hist_words, FIELDS=fields, BITS=bits,
        UNIFORM=uniform_flag, COUNT=count, ATOMIC=atomic, SKIP=bool(skip and bins), BIN_LOOP=bin_loop,
        ATOMIC_COUNT=bool(atomic_count), PACKED_ATOMIC=bool(packed_atomic),
        num_warps=warps, num_stages=stages,
    )
    if not bins:
        return cs.sum(0), sq.sum(0), ds.sum(0) if need_dist else None, None, None, None, None
    if packed_atomic:
        hist_mass, hist_dist = sector[:, :, 0].contiguous(), sector[:, :, 1].contiguous()
        if atomic_count:
            hist = sector[:, :, 2].contiguous()
    hist = hist.to(torch.float64) if atomic_count else hist.sum(0, dtype=torch.float64)
    if not atomic:
        hist_mass, hist_dist = hist_mass.sum(0), hist_dist.sum(0)
    return (cs.sum(0), sq.sum(0), ds.sum(0) if need_dist else None, hist, hist_mass, hist_dist,
            hist_count.sum(0, dtype=torch.float64) if count else hist)


# A split's histogram counts accumulate in float32 (fewer registers): exact integers below 2²⁴, so no
# split holds more training rows than that (a query's count in one bin could otherwise round).
_EXACT_COUNT_ROWS = 1 << 24


def _splits(n_tiles: int, bn: int, wanted: int) -> tuple[int, int]:
    """``(splits, tiles per split)``: about ``wanted`` splits of the ``n_tiles`` tiles of ``bn`` rows,
    more where a split would hold more than ``_EXACT_COUNT_ROWS`` rows.

    Examples
    --------
    >>> from nwbound.engine.device._triton import _splits
    >>> _splits(10, 64, 2), _splits(2**20, 64, 1)  # 2²⁶ rows: four splits of 2²⁴ rows at most
    ((2, 5), (4, 262144))
    """
    per_split = -(-n_tiles // max(1, wanted))
    per_split = max(1, min(per_split, _EXACT_COUNT_ROWS // bn))
    return -(-n_tiles // per_split), per_split


EPILOGUES = ("loop", "skip", "atomic", "atomic_skip", "atomic_count", "atomic_packed")


def _epilogue(name: str | None) -> tuple[bool, bool, bool, bool]:
    """``(atomic, skip, atomic counts, packed)`` of a histogram epilogue (a private switch; default ``"atomic_count"``).

    * ``"loop"``: per bin two masked row reductions of the tile (``Σ wK``, ``Σ wK·d⁺``), float32
      within the tile, float64 across tiles; deterministic (the default before issue 19).
    * ``"skip"``: the same, skipped for tiles with no point of positive weight in a bin (they would
      add exact zeros: bit-identical to ``"loop"``).
    * ``"atomic"``: each nonzero term added to its (query, bin) by a float64 atomic add (relaxed):
      no per-bin loop for these sums; the sum's order is the hardware's, so results may differ
      from run to run in the last bits (float64 sums of float32 terms: within ``γ_n`` of the exact
      sum, ``n`` the padded training rows, which ``sum_error`` carries).
    * ``"atomic_skip"``: both.
    * ``"atomic_count"`` (the default): ``"atomic"``, and where every positive weight is 1 (the
      histogram is the count) the counts too, by float32 atomic adds of 1.0 (exact integers below
      2²⁴ training rows: order-free, bit-identical to ``"loop"``), instead of the packed per-word
      reductions; with per-class or sample weights it is ``"atomic"``. Fastest measured (H100, ECG
      shapes, 32 bins, 16×32 tiles: 21.8 ms; ``"atomic"`` 27.5, ``"loop"`` 39.7, product 10.8).
    * ``"atomic_packed"`` (being measured): ``"atomic_count"`` with a (query, bin)'s ``Σ wK``,
      ``Σ wK·d⁺`` and count side by side in one 32-byte sector (4 float64; the count by float64
      adds of 1.0, exact): a point's atomics touch one sector instead of three arrays.

    ``None`` reads the config key ``hist_epilogue`` (default ``"atomic_count"``).

    Examples
    --------
    >>> from nwbound.engine.device._triton import _epilogue
    >>> _epilogue("loop"), _epilogue("atomic_skip"), _epilogue("atomic_count")
    ((False, False, False, False), (True, True, False, False), (True, False, True, False))
    """
    if name is None:
        name = get_config()["hist_epilogue"]  # checked by set_config
    if name not in EPILOGUES:
        raise ValueError(f"epilogue must be one of {EPILOGUES}, got {name!r}.")
    return "atomic" in name, "skip" in name, name in ("atomic_count", "atomic_packed"), name == "atomic_packed"


def _product_bytes(dev: Any) -> int:
    """gemm="library": bytes of one product block: under 2³¹ float32 elements (8 GiB), at most a
    quarter of the free memory."""
    if dev.type != "cuda":
        return _PRODUCT_BYTES
    import torch

    return max(1 << 20, min(_PRODUCT_BYTES, torch.cuda.mem_get_info(dev)[0] // 4))


def _tuned_config(key: tuple, run, family: str) -> tuple[int, int, int, int]:
    """Time each candidate (best of two runs after a warm-up that compiles it) and keep the fastest.

    """
    import torch

    if key in _TUNED:
        return _TUNED[key]
    best, best_ms, failure = None, math.inf, None
    log = TUNING_LOG.setdefault(key, [])
    for cfg in CONFIGS[family]:
        try:
            run(cfg)  # compile + warm
        except Exception as exc:  # a config the compiler rejects (resources) is skipped, never fatal
            failure = exc
            continue
        ms = math.inf
        for _ in range(2):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run(cfg)
            stop.record()
            torch.cuda.synchronize()
            ms = min(ms, start.elapsed_time(stop))
        log.append((cfg, ms))
        if ms < best_ms:
            best, best_ms = cfg, ms
    if best is None:
        raise RuntimeError(f"No Triton configuration of {CONFIGS[family]} ran on this device.") from failure
    _TUNED[key] = best
    return best


