"""The one pass every Nadaraya-Watson estimate needs: kernel sums per query.

For each query ``y`` and bandwidth ``λ`` (``K_i = K(‖y − y_i‖/λ)``, weights ``w_i``):

* ``class_sums[c] = Σ w_i K_i 1{c_i = c}`` (so ``κ = Σ_c class_sums[c]``),
* ``sq_sum = Σ (w_i K_i)²``, ``dist_sum ≥ Σ w_i K_i ‖y − y_i‖`` (an upper bound, see below),
* ``tail_mass = Σ w_i K_i 1{‖y − y_i‖ > r_t λ}`` (only for the infinite-support lemma),
* optionally ``histogram[b] = Σ w_i/w_max`` over the points whose ``u² = d²/λ²`` falls in
  bin ``b`` of ``[0, R²]`` (compact kernels), for the histogram form of the Chernoff bound.

How the dense (*regular*) path is made fast — the distance matrix is the only
big object, so the work is arranged to touch it as few times as possible:

1. **Augmented product in units of the support.** Training rows are stored once as
   ``[x'', 1, ‖x''‖²]`` with ``x'' = (x − c)/s₀`` (c the bounding-box midpoint, s₀ the power
   of two just above the largest centred coordinate, so the division is exact); a query
   block becomes ``[2ρ²y'', 1 − ρ²‖y''‖², −ρ²]`` with ``ρ = s₀/S``. One GEMM then yields
   ``t = 1 − d²/S²`` directly, where ``S`` is the support radius of the largest bandwidth
   (the largest bandwidth itself for infinite-support kernels). Every quantity is a ratio
   of lengths, so scaling X and λ together by 10¹⁶⁰ or 10⁻²⁰⁰ changes nothing.
2. **Cache-sized tiles.** The product is computed tile by tile
   (``_DENSE_QUERY_BLOCK`` queries × about a thousand training points; ``_QUERY_BLOCK`` ×
   a few thousand when pruning), so ``t`` is still in cache when it is read again.
3. **Sparse extraction.** For a compact kernel only ``t ≥ −e`` can contribute.
   One comparison pass and a ``flatnonzero`` collect those entries; every
   kernel value, square, square root (only where ``K > 0``) and class sum is
   then computed on that short list with ``bincount``. Tiles with many
   contributing entries take a dense route instead.
4. **Pruning (compact kernels).** In few features (at most ``_BALL_MAX_FEATURES``) the training
   set is partitioned once into balls (k-means centres, radius = farthest member), and queries are
   processed in spatially coherent blocks; a (block, ball) pair is skipped
   when every query of the block is farther than ``S + radius`` from the
   ball's centre, because then every kernel value in it is exactly 0. In more features the
   training rows are sorted once along their principal axis ``a`` (*slabs*): ``‖y − x‖ ≥ |a·y − a·x|``,
   so a block of queries sorted along ``a`` needs only the contiguous run of rows whose projection
   lies within ``S`` of the block's, read in place. Whether a pass prunes by slabs is measured on
   the pass itself, before any product: the runs' (query, row) pairs against the dense pass's
   (``_SLAB_MAX_WORK``). Both tests carry a slack beyond every rounding of them (``_prune_reach``).
5. **Threads.** ``n_jobs`` threads work on disjoint query blocks, each with
   one BLAS thread (no oversubscription); numpy and BLAS release the GIL.
6. **Compiled reduction (optional).** When numba is installed and the kernel
   is a built-in one, step 3's passes are replaced by one compiled pass over
   each tile (:mod:`._fused`, GIL released). The numpy route stays the
   fallback and the reference; ``USE_NUMBA = False`` in this module or the
   environment variable ``NWBOUND_DISABLE_NUMBA=1`` forces it.

**Exact arithmetic at the kernel's edge.** The expanded product cancels: when S is small
next to the features' magnitudes, ``t̃`` can be far from ``t``. Each query row ``i`` gets a
rigorous bound ``|t̃_ik − t_ik| ≤ e_i`` for every column k (:func:`._tiles._t_error`): the GEMM's
``γ_{d+2}·Σ_j |a_ij b_kj|`` (any summation order, FMA or not) plus the rounding of the
augmented rows themselves (relative ``η = u + (d+6)u₆₄`` per entry, ``u`` the unit roundoff of
the GEMM's dtype), with ``Σ_j |a_ij b_kj| ≤ 1 + ρ²(‖y''_i‖ + max_k ‖x''_k‖)²``. Then, per
query block:

* ``e ≤ _MAX_T_ERROR`` (the usual case): entries with ``t̃ > e`` are certainly inside the
  support and keep ``d̃²/S² = 1 − t̃``; entries with ``|t̃| ≤ e`` are *ambiguous* and their
  distance is recomputed directly as ``Σ_j ((y_j − x_j)/S)²`` in float64 from the original
  coordinates (relative error ``≤ (d+6)u₆₄``); entries with ``t̃ < −e`` are outside. So the set
  of points with ``K > 0`` is the true one, and every kernel value is evaluated at a ``u²``
  within ``e·(S/λ)²`` of the true one.
* float32 with ``e`` too large: the block's GEMM is redone in float64 (a float64 copy of
  the layout is built on first need and cached).
* float64 data, a compact kernel: the **float32 filter**. A query row whose float32 product has
  ``e ≤ _MAX_T_ERROR`` and selects (``t̃ ≥ −e``) at most ``_tiles._FILTER_MAX_SHARE`` (2 %) of a
  probe of the training rows (about 256, spread over them, :attr:`~._sums_data._Layout.probe`)
  computes its product in float32 against a float32 copy of the layout
  (:meth:`~._sums_data._Layout.augmented_in`), and every entry it selects gets its distance
  recomputed directly in float64: the product only rules out (``t̃ < −e``: certainly outside), so
  the set of points with ``K > 0`` is the true one and every kernel value comes from a direct
  distance (``u2_error`` the direct formula's bound, tighter than the float64 product's). Where
  the support holds few rows (the default model's sums: about 0.4 % of them) the float32 product
  saves about 0.55 ns a pair read against 9 ns a direct distance; where it holds many, the row
  keeps the float64 product. Each row is decided from itself and the training set alone (once
  per pass; the rows of a block that take it are reduced apart from the others), so a query's
  sums do not depend on the other queries or on pruning. The probe only weighs the cost: either
  way the sums meet the bounds above.
* float64 still too large (or ``ρ²`` not representable): every entry the GEMM cannot rule
  out (``t̃ ≥ −e``; all of them when even that product cannot be formed) gets its distance
  recomputed directly.

``dist_sum`` adds ``w K·S·√(d̃²/S²·(1 + c) + e)`` (``c`` the direct formula's relative error):
an upper bound of the true distance, so the Lipschitz bias term stays valid; the float64
summation's rounding is covered by a final factor ``1 + (n + 8)u₆₄``. The per-row bound is
exposed as the statistics' ``u2_error`` (per query and bandwidth, on ``u² = d²/λ²``, scale-free:
:func:`~._sums_data.u2_error_rows`): bound code widens the histogram's bin edges by it. The
histogram bins each point by the very ``u²`` its kernel value was computed from.

**Rounding of the sums.** The terms ``a_i = fl(w_i·K̃_i)`` are what the bound weighs (any
weights that depend on the inputs only keep it valid; the histogram's per-bin kernel range has
slack for the evaluation). Their float64 sums of at most ``n`` terms, in any order, lie within
``1 ± γ_n`` (``u = 2⁻⁵³``) of the exact ones: ``KernelStatistics.sum_error`` carries ``ρ = γ_n`` for the
class sums, per-bin masses and tail masses (``n`` the training points, ``k`` for the localized
sums), and the bound widens by it. ``Σ a_i²`` is made an upper bound at the source
(:func:`~nwbound._numerics.square_sum_upper`), like ``dist_sum``.

Peak memory stays within ``working_memory``: tiles, extracted entries and
buffers are sized from it (split between the threads).

**Where the pieces live.** This module plans a call and walks its query blocks
(:func:`dense_kernel_sums`, :func:`dense_moment_sums`); :mod:`._sums_data` holds the training set's
layout (:class:`TrainingSet`) and allocates the one result type, :class:`~nwbound.engine.KernelStatistics`
(:func:`~._sums_data.zero_statistics`, filled in place); :mod:`._tiles` one block's
product and reduction (:func:`~._tiles._block_sums`, :class:`~._tiles._Accumulator`: the compiled or
numpy route); :mod:`._neighbor_sums` the
localized classifier's sums over given neighbours (:func:`neighbor_kernel_sums`). Every public
name is re-exported here. The tuning constants live with their readers: the block and tile sizes,
``USE_NUMBA`` and the pruning rule (``_BALL_MAX_FEATURES``, ``_SLAB_MAX_WORK``) here, ``_DENSE_SHARE``, ``_MAX_T_ERROR``
and the float32 filter's rule (``_FILTER_MAX_SHARE``) in :mod:`._tiles`, ``_MIN_PRUNE_POINTS`` and ``_FILTER_PROBE`` in
:mod:`._sums_data`.
"""


from __future__ import annotations

import math
import os
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..._numba_cache import numba_switched_off
from ..._memory import block_rows
from ..._numerics import direct_distance_error, summation_error
from ..._threads import limited_blas_threads
from ...kernels import Kernel
from ._neighbor_sums import neighbor_distances, neighbor_kernel_sums
from .._ranking import BandwidthRanking
from .._statistics import KernelStatistics
from ._sums_data import TrainingSet, _Layout, _nearest_center, ranking_sample_rows, zero_statistics
from . import _tiles
from ._tiles import _U64, _FusedSpec, _Plan, _block_sums, _distance_sum_scale, _n_moments, _store

__all__ = [
    "TrainingSet", "bounded_moment_sums", "compiled_module", "dense_kernel_sums", "dense_moment_sums",
    "neighbor_kernel_sums",
    "neighbor_distances", "block_rows", "ranking_sample_rows",
]

# Queries per block: enough rows for an efficient GEMM, few enough that a
# spatially coherent block still prunes most balls.
_QUERY_BLOCK = 128
# Queries per block without pruning: each GEMM call packs its training tile
# once, and more rows amortise that (ECG shapes, bare GEMM on one core: 512-row
# blocks 15–25 % faster than 128-row ones in float32, ~10 % in float64).
_DENSE_QUERY_BLOCK = 512
# Elements of one tile of the distance matrix (2 MiB in float32): the tile and
# its boolean mask stay in the L2/L3 cache between the GEMM and the next pass.
_TILE_ELEMENTS = 1 << 19
# Bytes per extracted entry (flat index, row, column, d², kernel value and temporaries).
_BYTES_PER_ENTRY = 96
# Ball pruning in few dimensions: there k-means balls are small next to a bandwidth that leaves
# few neighbours. In 100 dimensions (even on a 5-dim manifold) the balls are wider than λ and
# skip almost nothing; so do they in the default's learned space (21 coordinates: at 30 000 and
# 100 000 rows, 4–25 % of the pair work skipped, none of the time). More features prune by slabs.
_BALL_MAX_FEATURES = 12
# Slab pruning runs when its runs hold at most this share of the dense pass's pairs: its 128-query
# blocks cost about 1.3× the dense route's 512 per pair read (the default's learned space, 21
# coordinates: reading 53 % of the pairs took 0.68 of the dense time at 12 600 rows, 45 % took 0.6
# at 42 000), so below about 0.77 it pays.
_SLAB_MAX_WORK = 0.75
# Relative slack added to the pruning test so that rounding never drops a
# pair the dense path would keep.
_PRUNE_SLACK = 1e-6
# dense_moment_sums: an expanded sum below this share of the same sum with |coefficients| is rounding.
_MOMENT_TOLERANCE = 1e-10
# The compiled tile reduction (numba): False forces the numpy route, as does
# the environment variable NWBOUND_DISABLE_NUMBA=1.
USE_NUMBA = True
# The ._fused module once imported, False when numba is missing, None: not tried yet.
_FUSED_MODULE = None


def _tile_bytes_per_element(itemsize: int) -> int:
    # tile, mask, and the dense route's float64 temporaries (t, δ, u², K, distances, indices)
    return itemsize + 1 + 6 * 8


def compiled_module():
    """The compiled passes (:mod:`._fused`), or None: numba missing, or switched off (``USE_NUMBA =
    False`` here, or the environment variable ``NWBOUND_DISABLE_NUMBA=1``). Imported lazily, once,
    so that ``import nwbound`` stays fast.

    Examples
    --------
    >>> module = compiled_module()
    >>> module is None or callable(module.tile_sums)
    True
    """
    global _FUSED_MODULE
    if not USE_NUMBA or numba_switched_off():
        return None
    if _FUSED_MODULE is None:
        try:
            from . import _fused
        except ImportError:
            _FUSED_MODULE = False
        else:
            _FUSED_MODULE = _fused
    return _FUSED_MODULE or None


def _fused_spec(kernel: Kernel, lay: _Layout) -> _FusedSpec | None:
    """The compiled reduction's fixed arguments, or None for the numpy route
    (numba missing or switched off, or a kernel it does not evaluate)."""
    module = compiled_module()
    if module is None:
        return None
    spec = module.kernel_code(kernel)
    if spec is None:
        return None
    return _FusedSpec(
        tile_sums=module.tile_sums,
        tile_moments=module.tile_moments,
        code=spec[0],
        radius_sq=spec[1],
        labels=lay.labels.astype(np.intp, copy=False),
        weights=np.empty(0) if lay.weights is None else lay.weights,
    )


def dense_kernel_sums(
    Xq: np.ndarray,
    train: TrainingSet,
    kernel: Kernel,
    bandwidths: np.ndarray,
    *,
    need_dist: bool,
    tail_radius: float | None = None,
    working_memory: int | None = None,
    n_jobs: int | None = None,
    prune: bool | None = None,
    histogram_bins: int = 0,
) -> KernelStatistics:
    """Kernel sums of every query against every training point (the *regular* NWC).

    Parameters
    ----------
    Xq : ndarray of shape (n_queries, n_features)
        Queries, in the training set's dtype.
    train : TrainingSet
    kernel : Kernel
    bandwidths : ndarray of shape (n_bandwidths,)
    need_dist : bool
        Also compute ``dist_sum`` (an upper bound of ``Σ w K d``, see the module docstring).
    tail_radius : float or None, default=None
        Also compute ``tail_mass`` beyond ``tail_radius·λ``.
    working_memory : float or None, default=None
        MiB for all temporaries together (None: scikit-learn's setting).
    n_jobs : int or None, default=None
        Threads over query blocks, each with one BLAS thread; None: one
        thread (BLAS keeps its own threads), -1: all cores.
    prune : bool or None, default=None
        Skip the (query, training point) pairs that lie beyond the kernel's support, found by
        blocks: with at most 12 features by k-means balls (a (query block, ball) pair is skipped
        when every query is farther than the support plus the ball's radius from its centre), with
        more along the training rows' principal axis (each query block reads only the run of rows
        whose projection lies within the support of one of its queries'). Only for a compact kernel
        and a training set of at least 8192 points. None: balls always, the axis where it pays: when
        the runs hold at most ``_SLAB_MAX_WORK`` (75 %) of the pairs, measured on this call's
        queries before any kernel sum. True: always; False: never. The skipped pairs are farther
        than the support by more than every rounding of the test, so the sums do not depend on it
        (up to the rounding of their order), nor do ``u2_error`` and ``sum_error``. The balls or the
        sorted rows are a one-off cost of the first call (cached on ``train``).
    histogram_bins : int, default=0
        ``B > 0`` also fills ``histogram`` (n, G, B): per query and bandwidth, ``Σ w_i/w_max``
        over the points whose ``u² = d²/λ²`` (the value their kernel value came from) falls in
        each of ``B`` equal bins of ``[0, R²]`` (``hist_edges``). Compact kernels only.

    Returns
    -------
    KernelStatistics
        The bound form in NumPy float64, at ``bandwidths`` (``bandwidth`` (1, G)): ``u2_error``
        (n, G) bounds the error of every computed ``u²`` (see the module docstring), with
        ``weight_max``, ``uniform_weights``, ``sum_error`` and, with a histogram, its edges (and
        with sample weights ``hist_count`` and ``weight_min``).

    Raises
    ------
    ValueError
        If the bandwidths cannot be represented next to each other or to the data
        (support radius not a positive finite float64 whose inverse is finite), or
        ``histogram_bins`` is negative or asked for with an infinite-support kernel.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.kernels import get_kernel
    >>> X = np.array([[0.0], [0.5], [3.0]]); train = TrainingSet.build(X, np.array([0, 1, 1]), 2, None)
    >>> s = dense_kernel_sums(np.array([[0.0]]), train, get_kernel("epanechnikov"), np.array([1.0]),
    ...                       need_dist=True, histogram_bins=4)
    >>> s.class_sums[0, 0].tolist(), s.histogram[0, 0].tolist()
    ([1.0, 0.75], [1.0, 1.0, 0.0, 0.0])
    """
    return _dense_pass(Xq, train, kernel, bandwidths, need_dist=need_dist, tail_radius=tail_radius,
                       working_memory=working_memory, n_jobs=n_jobs, prune=prune, histogram_bins=histogram_bins)


def _dense_pass(
    Xq: np.ndarray, train: TrainingSet, kernel: Kernel, bandwidths: np.ndarray, *, need_dist: bool,
    tail_radius: float | None, working_memory: float | None, n_jobs: int | None, prune: bool | None,
    histogram_bins: int, moment_degree: int = -1, any_size: bool = False,
) -> KernelStatistics | np.ndarray:
    """:func:`dense_kernel_sums`, or with ``moment_degree ≥ 0`` the (n, G, M) per-slot moments of
    :func:`dense_moment_sums`. ``any_size``: prune by slabs of the sorted layout whatever the
    training set's size (:func:`bounded_moment_sums`: a small ranking sample, a narrow support)."""
    n_q = Xq.shape[0]
    bandwidths = np.asarray(bandwidths, dtype=np.float64)
    histogram_bins = _check_histogram_bins(histogram_bins, kernel)
    compact = kernel.compact and tail_radius is None
    moments = moment_degree >= 0
    radius_sq = float(kernel.radius) ** 2 if kernel.compact else math.inf
    support, scales, inv_support = _support_scales(kernel, bandwidths)
    if moments:
        out: KernelStatistics | np.ndarray = np.zeros((n_q, len(bandwidths), _n_moments(moment_degree, train.weights)))
    else:
        weighted_bins = bool(histogram_bins) and train.weights is not None
        out = zero_statistics(
            n_q, bandwidths, train.n_classes, kernel, need_dist=need_dist, need_tail=tail_radius is not None,
            histogram_bins=histogram_bins,
            hist_edges=np.linspace(0.0, radius_sq, histogram_bins + 1) if histogram_bins else None,
            count_points=weighted_bins, weight_max=train.weight_max, uniform_weights=train.weights is None,
            # Every sum adds at most n_train non-negative float64 terms, in whatever order the tiles,
            # bincount, BLAS or the compiled pass take: within 1 ± γ_n of the exact sum of the terms.
            sum_error=summation_error(train.X.shape[0]),
            weight_min=(float(train.weights.min()) if train.weights.size else 0.0) if weighted_bins else 0.0,
        )
    if n_q == 0:
        return out
    balls = compact and prune is not False and Xq.shape[1] <= _BALL_MAX_FEATURES and not any_size
    lay = train.layout(prune=balls, axis=compact and prune is not False and not balls, any_size=any_size)
    n_threads = _n_threads(n_jobs)
    tile_elements = _dense_tile_elements(train.X.dtype, working_memory, n_threads)
    plan = _dense_plan(
        lay, kernel, bandwidths, support, scales, inv_support, compact=compact, need_dist=need_dist,
        tail_radius=tail_radius, histogram_bins=histogram_bins, radius_sq=radius_sq,
        weight_max=train.weight_max, n_features=Xq.shape[1], tile_elements=tile_elements, dtype=train.X.dtype,
        moment_degree=moment_degree,
    )
    tasks = _dense_tasks(Xq, lay, n_threads, tile_elements, support, compact, train.X.dtype, prune=prune)

    # Which rows take the float32 filter: each decided alone, all at once (cheaper than per block).
    f32 = _tiles._filter_rows(Xq, plan) if plan.f32_filter else None

    def run(task: tuple[slice | np.ndarray, np.ndarray | None]) -> None:
        rows, cols = task
        rows_f32 = None if f32 is None else tuple(a[rows] for a in f32)
        for part, acc in _block_sums(Xq[rows], cols, plan, rows_f32):  # the rows of the float32 filter apart
            at = rows if part is None else (np.arange(n_q)[rows] if isinstance(rows, slice) else rows)[part]
            if moments:
                out[at] = acc.mom
            else:
                _store(out, at, acc, plan)

    if n_threads > 1 and len(tasks) > 1:
        # Threads over query blocks, one BLAS thread each: no oversubscription.
        with limited_blas_threads(1), ThreadPoolExecutor(n_threads) as pool:
            list(pool.map(run, tasks))
    else:
        for task in tasks:
            run(task)
    return out


def dense_moment_sums(
    Xq: np.ndarray,
    train: TrainingSet,
    kernel: Kernel,
    bandwidths: np.ndarray,
    *,
    working_memory: float | None = None,
    n_jobs: int | None = None,
    prune: bool | None = None,
) -> BandwidthRanking:
    """κ, ``Σ (wK)²`` and ``Σ wK·d`` of every bandwidth from **one** pass, for a polynomial kernel.

    For ``K(u) = Σ_a c_a u^{2a}`` (``kernel.polynomial``) and ``u² = δ·s_g`` (``δ = d²/S²``), the sums
    over the points inside bandwidth ``g`` are polynomials in ``s_g`` whose coefficients are
    distance moments ``Σ w^p δ^a`` over those points. Each point is counted once, in the slot
    of the narrowest bandwidth that reaches it; prefix sums over the slots then give every
    bandwidth. Costs one kernel pass whatever the number of bandwidths (the direct evaluation in
    :func:`dense_kernel_sums` costs one reduction per bandwidth and point).

    Parameters
    ----------
    Xq : ndarray of shape (n_queries, n_features)
        Queries, in the training set's dtype.
    train : TrainingSet
    kernel : Kernel
        With ``kernel.polynomial`` set (Epanechnikov, quartic, triweight, boxcar).
    bandwidths : ndarray of shape (n_bandwidths,)
    working_memory, n_jobs, prune
        As in :func:`dense_kernel_sums`.

    Returns
    -------
    BandwidthRanking
        ``kappa``, ``sq_sum`` and ``dist_sum`` (``≈ Σ w K ‖y − y_i‖``, distances rounded up as in
        :func:`dense_kernel_sums`), each (n_queries, n_bandwidths), clipped at 0, over the rows of
        ``train`` in its units (:meth:`BandwidthRanking.from_sums` restates them), and ``bandwidth``
        (1, n_bandwidths). Computed in expanded polynomial form, so they carry rounding beyond the
        engine's error model: fit to *choose* a bandwidth (a function of the inputs only), never to
        bound. Where one of the three expanded sums is
        within its rounding of 0 (at most ``_MOMENT_TOLERANCE`` times the same sum with
        ``|c_a|``, which is > 0: every point near the support's edge), or κ > 0 with
        ``Σ (wK)² = 0`` (underflow), all three are 0 for that query and bandwidth, so that it
        ranks last rather than on noise.

    Raises
    ------
    ValueError
        If the kernel is not a known polynomial.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.kernels import get_kernel
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((300, 2)); train = TrainingSet.build(X, rng.integers(0, 2, 300), 2, None)
    >>> k, grid = get_kernel("quartic"), np.array([0.1, 0.3, 0.9])
    >>> m = dense_moment_sums(X[:5], train, k, grid)
    >>> s = dense_kernel_sums(X[:5], train, k, grid, need_dist=True)
    >>> bool(np.allclose(m.kappa, s.kappa) and np.allclose(m.sq_sum, s.sq_sum))
    True
    """
    coef, bandwidths = _polynomial(kernel, "dense_moment_sums"), np.asarray(bandwidths, dtype=np.float64)
    n_q, n_bw = Xq.shape[0], bandwidths.shape[0]
    kappa, sq_sum, dist_sum = (np.zeros((n_q, n_bw)) for _ in range(3))
    for rows, moments in _moment_chunks(Xq, train, kernel, bandwidths, coef, working_memory, n_jobs, prune):
        kappa[rows], sq_sum[rows], dist_sum[rows] = _moments_to_sums(moments, coef, kernel, bandwidths, train)
    return BandwidthRanking(kappa=kappa, sq_sum=sq_sum, dist_sum=dist_sum, bandwidth=bandwidths[None, :])


def bounded_moment_sums(
    Xq: np.ndarray,
    train: TrainingSet,
    kernel: Kernel,
    bandwidths: np.ndarray,
    reach: float,
    *,
    working_memory: float | None = None,
    n_jobs: int | None = None,
) -> tuple[BandwidthRanking, np.ndarray]:
    """:func:`dense_moment_sums` from the pairs within the support of the bandwidths up to ``reach``
    only: their sums exactly, and for every wider bandwidth sums whose Hoeffding ε is a lower bound.

    The pass is :func:`dense_moment_sums`'s over the bandwidths ``≤ reach`` alone: its support is
    ``r_c = R·λ_c`` (``λ_c`` the widest of them), it prunes by slabs of the training rows sorted along
    their principal axis (at any size) and reads no pair beyond ``r_c``; the sums of those
    bandwidths are the full pass's, up to rounding (distances in units of ``r_c``, not of the
    widest support). For a wider bandwidth ``λ`` the pairs within ``r_c`` (*in*) give
    ``κ_in``, ``Σ_in (wK)²`` and ``D_in = Σ_in wK·d``, and the others (*out*: every ``d > r_c``,
    so ``K ≤ K(r_c/λ)``) are bounded without being read:

    * ``κ ≤ κ_in + (W − W_in)·K(r_c/λ)`` (``W`` the sample's total weight, ``W_in`` the in pairs');
    * ``Σ (wK)² ≥ Σ_in (wK)²``;
    * ``D/κ ≥ D_in/κ_in``: the out points are farther than every in point.

    The columns of a wider bandwidth hold that ``κ`` bound, ``Σ_in (wK)²``, and ``D`` such that
    ``D/κ = D_in/κ_in``: the Hoeffding parts (``β·D/κ`` and ``√(Σ (wK)²·ln(2/δ′)/2)/κ``, the
    latter decreasing in κ and increasing in ``Σ (wK)²``) are then at most those of the true sums.
    A query whose least ε over the exact columns lies below every wider column's bound chooses as
    the full ranking would; the others need :func:`dense_moment_sums` (the route's test:
    :func:`~nwbound.engine.host._backend.host_intervals`).

    Parameters
    ----------
    Xq, train, kernel, bandwidths, working_memory, n_jobs
        As in :func:`dense_moment_sums`.
    reach : float
        At least the narrowest bandwidth.

    Returns
    -------
    ranking : BandwidthRanking
        As :func:`dense_moment_sums` returns it, with the bounds above in the wider columns.
    exact : ndarray of bool, shape (n_bandwidths,)
        The columns of the bandwidths ``≤ reach`` (their sums exact, up to rounding).

    Raises
    ------
    ValueError
        If the kernel is not a known polynomial, or ``reach`` is below every bandwidth.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.kernels import get_kernel
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((300, 2)); train = TrainingSet.build(X, rng.integers(0, 2, 300), 2, None)
    >>> k, grid = get_kernel("epanechnikov"), np.array([0.1, 0.3, 0.9])
    >>> bounded, exact = bounded_moment_sums(X[:5], train, k, grid, reach=0.3)
    >>> full = dense_moment_sums(X[:5], train, k, grid)
    >>> exact.tolist(), bool(np.allclose(bounded.kappa[:, :2], full.kappa[:, :2]))
    ([True, True, False], True)
    >>> bool(np.all(bounded.kappa[:, 2] >= full.kappa[:, 2] * (1 - 1e-12)))
    True
    """
    coef, bandwidths = _polynomial(kernel, "bounded_moment_sums"), np.asarray(bandwidths, dtype=np.float64)
    exact = bandwidths <= reach
    if not exact.any():
        raise ValueError(f"reach={reach!r} is below every bandwidth (the narrowest is {bandwidths.min():.4g}).")
    inner = bandwidths[exact]
    radius = float(kernel.radius)
    r_c = radius * float(inner.max())  # the pass's support: δ = d²/r_c², every point read has δ ≤ 1
    n_q, n_bw = Xq.shape[0], bandwidths.shape[0]
    weighted = train.weights is not None
    unit = train.weight_unit
    total = float(np.sum(train.weights)) if weighted else float(train.X.shape[0])
    # u² = δ·(r_c/λ)² at a wider λ, and K at the edge δ = 1 (every out point's K is at most this).
    outer = (r_c / bandwidths[~exact]) ** 2
    edge = np.clip(np.asarray(kernel.from_squared(outer), dtype=np.float64), 0.0, None)
    degree = coef.shape[0] - 1
    n_sq, n_lin = 2 * degree + 1, degree + 1
    k0 = n_sq + n_lin if weighted else 0  # Σ w δ^a (Σ w² δ^a = Σ δ^a without weights)
    up = _distance_sum_scale(r_c, train.X.shape[0])
    kappa, sq_sum, dist_sum = (np.zeros((n_q, n_bw)) for _ in range(3))
    for rows, moments in _moment_chunks(Xq, train, kernel, inner, coef, working_memory, n_jobs, None, any_size=True):
        kappa[rows, exact], sq_sum[rows, exact], dist_sum[rows, exact] = _moments_to_sums(
            moments, coef, kernel, inner, train)
        m = moments.sum(axis=1)  # every point within r_c, (n, M)
        with np.errstate(over="ignore", invalid="ignore"):
            k_in = np.maximum(_polyval(m[:, k0:k0 + n_lin], coef, outer) * unit, 0.0)
            q_in = np.maximum(_polyval(m[:, :n_sq], np.convolve(coef, coef), outer) * (unit * unit), 0.0)
            d_in = np.maximum(_polyval(m[:, n_sq:n_sq + n_lin], coef, outer) * (unit * up), 0.0)
            w_out = np.maximum(total - m[:, k0] * unit, 0.0)
            k_up = k_in + w_out[:, None] * edge[None, :]
            d_low = np.where(k_in > 0, k_up * (d_in / np.where(k_in > 0, k_in, 1.0)), 0.0)
        kappa[rows, ~exact], sq_sum[rows, ~exact], dist_sum[rows, ~exact] = (
            np.nan_to_num(a, nan=0.0, posinf=0.0) for a in (k_up, q_in, d_low))
    return BandwidthRanking(kappa=kappa, sq_sum=sq_sum, dist_sum=dist_sum, bandwidth=bandwidths[None, :]), exact


def _polyval(moments: np.ndarray, coef: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """``Σ_a coef[a]·scale^a·moments[:, a]`` for each scale: (n, len(scales))."""
    powers = scales[:, None] ** np.arange(coef.shape[0])  # (S, A)
    return moments @ (powers * coef).T


def _polynomial(kernel: Kernel, caller: str) -> np.ndarray:
    """The kernel's coefficients in ``u²`` (``kernel.polynomial``); a ValueError naming ``caller`` otherwise."""
    if kernel.polynomial is None or not kernel.compact:
        raise ValueError(
            f"{caller} needs a compact kernel that is a polynomial in u² (kernel.polynomial); "
            f"{kernel.name!r} is not one: use dense_kernel_sums."
        )
    return np.asarray(kernel.polynomial, dtype=np.float64)


def _moment_chunks(Xq: np.ndarray, train: TrainingSet, kernel: Kernel, bandwidths: np.ndarray, coef: np.ndarray,
                   working_memory: float | None, n_jobs: int | None, prune: bool | None, any_size: bool = False):
    """``(rows, per-slot moments)`` of the queries in chunks: the moments of a chunk (and their
    prefix sums) fit the working memory, so memory does not grow with the number of queries (whole
    query blocks per thread)."""
    degree = coef.shape[0] - 1
    n_q, n_bw = Xq.shape[0], bandwidths.shape[0]
    budget = _working_memory(working_memory) * 2**20
    per_query = 4 * 8 * max(n_bw, 1) * _n_moments(degree, train.weights)
    step = max(_QUERY_BLOCK * _n_threads(n_jobs), int(budget // per_query) // _QUERY_BLOCK * _QUERY_BLOCK)
    for s in range(0, n_q, step):
        rows = slice(s, min(s + step, n_q))
        yield rows, _dense_pass(Xq[rows], train, kernel, bandwidths, need_dist=False, tail_radius=None,
                                working_memory=working_memory, n_jobs=n_jobs, prune=prune, histogram_bins=0,
                                moment_degree=degree, any_size=any_size)


def _moments_to_sums(moments: np.ndarray, coef: np.ndarray, kernel: Kernel, bandwidths: np.ndarray,
                     train: TrainingSet) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """κ, ``Σ (wK)²`` and ``Σ wK·d`` (each (n, G)) from per-slot moments (see :func:`dense_moment_sums`)."""
    degree = coef.shape[0] - 1
    support, scales, _ = _support_scales(kernel, bandwidths)
    order = np.argsort(-scales, kind="stable")  # slots by increasing λ
    cum = np.cumsum(moments, axis=1)  # slot j: every point inside bandwidth order[j]
    with np.errstate(over="ignore"):  # inf for a grid too wide: the sums are then unsure (below)
        powers = scales[order][:, None] ** np.arange(2 * degree + 1)  # (G, 2m+1)
    n_sq, n_lin = 2 * degree + 1, degree + 1
    kappa_mom = cum[:, :, n_sq + n_lin:] if train.weights is not None else cum[:, :, :n_lin]
    unit = train.weight_unit
    up = _distance_sum_scale(support, train.X.shape[0])
    terms = ((kappa_mom, powers[:, :n_lin], coef, unit),
             (cum[:, :, :n_sq], powers, np.convolve(coef, coef), unit * unit),
             (cum[:, :, n_sq:n_sq + n_lin], powers[:, :n_lin], coef, unit * up))
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.shape[0])
    sums, unsure = [], np.zeros(moments.shape[:2], dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        for mom, pw, c, scale in terms:
            value = np.einsum("nja,ja,a->nj", mom, pw, c)[:, inverse] * scale
            # The same sum with |c_a|: the size of the terms that cancel, which sets the rounding.
            size = np.einsum("nja,ja,a->nj", mom, pw, np.abs(c))[:, inverse] * scale
            # A sum within the expansion's rounding of 0 (every point near the support's edge;
            # Σ(wK)² of degree 2m cancels most) or not finite is noise, not a statistic. An exact
            # 0 (all terms 0, e.g. Σ wK·d of exact copies of the query) is one.
            unsure |= ((value <= _MOMENT_TOLERANCE * size) & (size > 0)) | ~np.isfinite(size)
            sums.append(np.maximum(np.nan_to_num(value, nan=0.0), 0.0))
    # κ > 0 with Σ(wK)² = 0: the squares underflowed (subnormal w·K), no statistic either.
    unsure |= (sums[0] > 0) & ~(sums[1] > 0)
    # Such a bandwidth has κ = 0 for the ranking: it ranks last (ε = inf) instead of on noise.
    for v in sums:
        v[unsure] = 0.0
    return sums[0], sums[1], sums[2]


def _check_histogram_bins(histogram_bins: int, kernel: Kernel) -> int:
    """Validate ``histogram_bins`` (an int ≥ 0, > 0 only with a compact kernel); return it as int."""
    if isinstance(histogram_bins, bool) or not isinstance(histogram_bins, (int, np.integer)) or histogram_bins < 0:
        raise ValueError(f"histogram_bins must be an integer ≥ 0 (0: no histogram), got {histogram_bins!r}.")
    histogram_bins = int(histogram_bins)
    if histogram_bins and not kernel.compact:
        raise ValueError(
            f"histogram_bins needs a kernel with compact support; {kernel.name!r} has none "
            "(use a compact kernel or a truncated Gaussian; to this function, histogram_bins=0 asks for no "
            "histogram; the estimators fall back to bound='hoeffding' for such kernels)."
        )
    return histogram_bins


def _support_scales(kernel: Kernel, bandwidths: np.ndarray) -> tuple[float, np.ndarray, float]:
    """Support radius of the widest bandwidth, ``(support/λ)²`` per bandwidth and ``1/support``.

    Raises a clear error when these overflow: every later step divides by them.
    """
    lam_max = float(bandwidths.max()) if bandwidths.size else 1.0
    support = kernel.radius * lam_max if kernel.compact else lam_max
    with np.errstate(over="ignore", divide="ignore"):
        scales = (support / bandwidths) ** 2
        inv_support = 1.0 / support if support > 0 else math.inf
    if not (math.isfinite(support) and support > 0 and math.isfinite(inv_support) and np.all(np.isfinite(scales))):
        raise ValueError(
            f"bandwidths {bandwidths.min(initial=np.inf):.3g}…{lam_max:.3g} cannot be represented in float64 "
            "next to each other (support radius and its inverse must be finite and > 0); "
            "rescale the features and bandwidths together."
        )
    return support, scales, inv_support



def _working_memory(working_memory: float | None) -> float:
    """MiB of the memory budget: the estimator's, else scikit-learn's ``working_memory`` setting.

    Read from scikit-learn only where it is loaded: otherwise nothing in this process changed it,
    and its default (``SKLEARN_WORKING_MEMORY``, else 1024) is read as scikit-learn does, so that
    ``nwbound predict`` (which maps queries without scikit-learn) does not import it for this.
    """
    if working_memory is not None:
        return working_memory
    sklearn = sys.modules.get("sklearn")
    if sklearn is not None:
        return sklearn.get_config()["working_memory"]
    return int(os.environ.get("SKLEARN_WORKING_MEMORY", 1024))

def _dense_tile_elements(dtype: np.dtype, working_memory: float | None, n_threads: int) -> int:
    """Elements per distance tile so each thread's temporaries fit its share of the memory budget."""
    budget = _working_memory(working_memory) * 2**20
    per_thread = budget / n_threads
    # Tile elements and extracted entries share the thread's budget: a tile
    # can add up to _DENSE_SHARE of its size in entries before a flush.
    per_elem = _tile_bytes_per_element(dtype.itemsize) + 2 * _tiles._DENSE_SHARE * _BYTES_PER_ENTRY
    return int(max(1, min(_TILE_ELEMENTS, per_thread // per_elem)))


def _query_block_rows(n_q: int, n_threads: int, tile_elements: int, pruned: bool) -> int:
    """Queries per block: ``_QUERY_BLOCK`` when pruning (coherent blocks prune best when small),
    else up to ``_DENSE_QUERY_BLOCK`` but no fewer blocks than threads; never above the tile.

    Examples
    --------
    >>> _query_block_rows(100_000, 2, 1 << 19, pruned=False), _query_block_rows(600, 2, 1 << 19, pruned=False)
    (512, 300)
    """
    rows = _QUERY_BLOCK if pruned else max(_QUERY_BLOCK, min(_DENSE_QUERY_BLOCK, -(-n_q // n_threads)))
    return int(max(1, min(rows, tile_elements, n_q)))


def _dense_plan(
    lay: _Layout, kernel: Kernel, bandwidths: np.ndarray, support: float, scales: np.ndarray,
    inv_support: float, *, compact: bool, need_dist: bool, tail_radius: float | None, histogram_bins: int,
    radius_sq: float, weight_max: float, n_features: int, tile_elements: int, dtype: np.dtype,
    moment_degree: int = -1,
) -> _Plan:
    """The :class:`_Plan` shared by every query block of one :func:`dense_kernel_sums` call."""
    with np.errstate(over="ignore"):
        rho_sq = float(np.float64(lay.scale / support) ** 2)  # may be inf: then no product
    g_order = np.argsort(-scales, kind="stable").astype(np.intp)
    return _Plan(
        layout=lay,
        kernel=kernel,
        bandwidths=bandwidths,
        support=support,
        rho_sq=rho_sq,
        scales=scales,
        g_order=g_order,
        tail_cut=(tail_radius if tail_radius is not None else np.inf) * bandwidths * inv_support,
        sparse=compact,
        edge=kernel.compact,
        need_dist=need_dist,
        tail_radius=tail_radius,
        hist_bins=histogram_bins,
        radius_sq=radius_sq,
        # Layout weights are in units of weight_unit; all-zero weights (a shard) count nothing.
        inv_weight_max=lay.weight_unit / weight_max if weight_max > 0 else 0.0,
        direct_factor=1.0 + direct_distance_error(n_features),
        tile_elements=tile_elements,
        flush_entries=max(1, int(_tiles._DENSE_SHARE * tile_elements)),
        dtype=dtype,
        f32_filter=compact and dtype == np.float64,
        fused=_fused_spec(kernel, lay),
        moment_degree=moment_degree,
        **(_slot_table(radius_sq / scales[g_order]) if moment_degree >= 0 else {}),
    )


def _slot_table(thresholds: np.ndarray) -> dict:
    """Plan fields of the moments pass: ``thresholds`` (then inf) and a table of buckets of ``δ``,
    each holding the number of thresholds below its left edge — fine enough (up to 2¹⁶ buckets)
    that a bucket rarely holds a threshold, so finding an entry's slot costs one lookup — and
    ``slot_steps``, the most steps past its bucket's count an entry's slot can be (its bucket's
    thresholds and the next bucket's, for the rounding of ``δ·inv_bucket``; beyond the table, up to
    the slot past every threshold): a fixed number of branch-free steps finds it.

    Examples
    --------
    >>> import numpy as np
    >>> t = _slot_table(np.array([0.25, 0.5, 1.0]))
    >>> t["slot_table"].tolist(), t["slot_steps"]
    ([0, 0, 0, 1, 1, 2, 2, 2, 2, 2], 1)
    """
    top = float(thresholds[-1])
    gaps = np.diff(np.concatenate([[0.0], thresholds]))
    gap = float(gaps[gaps > 0].min()) if np.any(gaps > 0) else top
    n_table = int(min(1 << 16, max(2, math.ceil(2.0 * top / gap) + 2)))
    inv_bucket = (n_table - 1) / top
    # Each bucket's left edge lowered by 4 ulps: an entry whose fl(δ·inv_bucket) reaches bucket b has
    # δ ≥ b/inv_bucket·(1 − 2u), so no threshold counted below the edge lies above δ.
    edges = np.arange(n_table) / inv_bucket * (1.0 - 4.0 * _U64)
    table = np.searchsorted(thresholds, edges, side="left").astype(np.intp)
    # An entry of bucket b < n_table − 1 has δ < (b + 1)/inv_bucket·(1 + 2u) < the left edge of bucket
    # b + 2: its slot is at most table[b + 2] (the number of thresholds, past the table); the last
    # bucket holds every δ above it, up to the slot past every threshold.
    ahead = np.concatenate([table[2:], np.full(2, thresholds.shape[0])])
    steps = max(int(np.max(ahead[:-1] - table[:-1])), int(thresholds.shape[0] - table[-1]))
    return {
        "thresholds": np.append(thresholds, np.inf),
        "slot_table": table,
        "inv_bucket": float(inv_bucket),
        "slot_steps": steps,
    }


def _dense_tasks(
    Xq: np.ndarray, lay: _Layout, n_threads: int, tile_elements: int, support: float, compact: bool,
    dtype: np.dtype, prune: bool | None = None,
) -> list[tuple[slice | np.ndarray, slice | np.ndarray | None]]:
    """Query blocks as ``(rows, training columns: indices, a run of rows, or None for all)``:
    ball-coherent blocks with a ball layout; slab blocks with a sorted one when they hold at most
    ``_SLAB_MAX_WORK`` of the pairs (``prune=None``) or always (True); else (and always with
    ``prune=False``, which may still read a sorted layout) plain blocks of up to ``_DENSE_QUERY_BLOCK``."""
    n_q = Xq.shape[0]
    if compact and prune is not False and (lay.balls is not None or lay.axis is not None):
        n_rows = _query_block_rows(n_q, n_threads, tile_elements, pruned=True)
        eps = float(np.finfo(dtype).eps)
        if lay.balls is not None:
            order, blocks = _coherent_blocks(Xq, lay, n_rows, support, eps)
            return [(order[s:e], cols) for s, e, cols in blocks]
        order, starts, lo, hi = _slab_blocks(Xq, lay, n_rows, support, eps)
        ends = np.minimum(starts + n_rows, n_q)
        if prune or _slab_share(starts, ends, lo, hi, lay.augmented.shape[0]) <= _SLAB_MAX_WORK:
            return [(order[s:e], slice(a, b)) for s, e, a, b in zip(starts, ends, lo, hi)]
    n_rows = _query_block_rows(n_q, n_threads, tile_elements, pruned=False)
    return [(slice(s, min(s + n_rows, n_q)), None) for s in range(0, n_q, n_rows)]


def _slab_share(starts: np.ndarray, ends: np.ndarray, lo: np.ndarray, hi: np.ndarray, n_train: int) -> float:
    """The share of the dense pass's (query, training row) pairs that slab blocks read.

    Examples
    --------
    >>> import numpy as np
    >>> _slab_share(np.array([0, 2]), np.array([2, 4]), np.array([0, 5]), np.array([5, 10]), 10)
    0.5
    """
    total = float(ends[-1] - starts[0]) * n_train if starts.size else 0.0
    return float(np.dot(ends - starts, hi - lo)) / total if total > 0 else 0.0


def _slab_blocks(
    Xq: np.ndarray, lay: _Layout, n_rows: int, support: float, eps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Queries sorted along the layout's axis, cut into blocks of ``n_rows``: the order, each
    block's first position in it, and the run ``[lo, hi)`` of layout rows the block must read.

    A row outside the run is farther from every query of the block than the support: its
    projection differs from each query's by more than ``_prune_reach``, and ``‖y − x‖ ≥ |a·(y − x)|``
    for the unit axis ``a``. Queries whose projection is not finite read every row. Works in the
    layout's scaled coordinates.
    """
    axis = lay.axis
    n_q, n_train = Xq.shape[0], lay.augmented.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        qc = (Xq.astype(np.float64) - lay.center) / lay.scale
        qp = qc @ axis.direction
        q_norm = float(np.sqrt(np.einsum("ij,ij->i", qc, qc).max(initial=0.0)))
    starts = np.arange(0, n_q, n_rows)
    ends = np.minimum(starts + n_rows, n_q)
    if not (math.isfinite(q_norm) and np.all(np.isfinite(qp))):
        return np.arange(n_q), starts, np.zeros_like(starts), np.full_like(starts, n_train)
    order = np.argsort(qp, kind="stable")
    qp = qp[order]
    reach = _prune_reach(support / lay.scale, q_norm, lay, eps)
    lo = np.searchsorted(axis.proj, qp[starts] - reach, side="left")
    hi = np.searchsorted(axis.proj, qp[ends - 1] + reach, side="right")
    return order, starts, lo, hi


def _prune_reach(support: float, query_norm: float, lay: _Layout, eps: float) -> float:
    """How far (scaled units) a pruning test must find a point to skip it: the support plus a slack
    that covers the rounding of the centred coordinates, the projections and distances the tests
    compute in float64 (relative ``(d + 2)u₆₄`` of the norms, ``eps`` at least: the layout's dtype),
    and ``_PRUNE_SLACK`` of the lengths on top, so that rounding never drops a pair the dense path
    would keep."""
    eps = max(eps, 4.0 * (lay.center.shape[0] + 2) * _U64)
    return (support + _PRUNE_SLACK * (support + query_norm + 1.0)
            + 16.0 * eps * (math.sqrt(lay.max_sqnorm + 1.0) + query_norm))


def _coherent_blocks(
    Xq: np.ndarray, lay: _Layout, n_rows: int, support: float, eps: float
) -> tuple[np.ndarray, list[tuple[int, int, np.ndarray | None]]]:
    """Queries sorted by nearest ball, cut into blocks, each with the training
    columns it must see (None: all of them). Works in the layout's scaled coordinates."""
    balls = lay.balls
    support = support / lay.scale
    with np.errstate(over="ignore", invalid="ignore"):
        qc = (Xq.astype(np.float64) - lay.center) / lay.scale
        nearest = _nearest_center(qc, balls.centers)
    order = np.argsort(nearest, kind="stable")
    n_q = Xq.shape[0]
    n_train = lay.augmented.shape[0]
    sizes = np.diff(balls.starts)
    blocks = []
    for s in range(0, n_q, n_rows):
        e = min(s + n_rows, n_q)
        qb = qc[order[s:e]]
        with np.errstate(over="ignore", invalid="ignore"):
            sq = np.einsum("ij,ij->i", qb, qb)
            d2 = sq[:, None] + balls.center_sqnorm[None, :] - 2.0 * (qb @ balls.centers.T)
            # Distance to the nearest possible member of each ball, minus slack for rounding.
            lower = np.sqrt(np.maximum(d2, 0.0)).min(axis=0) - balls.radii
            reach = _prune_reach(support, float(np.sqrt(sq.max())), lay, eps)
            active = np.flatnonzero(~(lower > reach))  # NaN/inf: keep
        if sizes[active].sum() >= 0.8 * n_train:
            blocks.append((s, e, None))
            continue
        blocks.append((s, e, _ranges_to_index(balls.starts[active], balls.starts[active + 1])))
    return order, blocks


def _ranges_to_index(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Concatenate ``arange(starts[i], stops[i])`` without a Python loop."""
    lengths = stops - starts
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, dtype=np.intp)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return (np.arange(total) + offsets).astype(np.intp)


def _n_threads(n_jobs: int | None) -> int:
    if n_jobs is None:
        return 1
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + n_jobs)
    return max(1, int(n_jobs))
