"""The one pass every Nadaraya-Watson estimate needs: kernel sums per query.

For each query ``y`` and bandwidth ``λ`` (``K_i = K(‖y − y_i‖/λ)``, weights ``w_i``):

* ``class_sums[c] = Σ w_i K_i 1{c_i = c}`` (so ``κ = Σ_c class_sums[c]``),
* ``sq_sum = Σ (w_i K_i)²``, ``dist_sum = Σ w_i K_i ‖y − y_i‖``,
* ``tail_mass = Σ w_i K_i 1{‖y − y_i‖ > r_t λ}`` (only for the infinite-support lemma).

How the dense (*regular*) path is made fast — the distance matrix is the only
big object, so the work is arranged to touch it as few times as possible:

1. **Augmented product.** Training rows are stored once as ``[x', 1, ‖x'‖²]``
   (``x' = x − c``, c the bounding-box midpoint: centring shrinks the norms and so the cancellation
   error of the expanded formula); a query block becomes
   ``[2y'/S², 1 − ‖y'‖²/S², −1/S²]``. One GEMM then yields ``t = 1 − d²/S²``
   directly, where ``S`` is the support radius of the largest bandwidth
   (the largest bandwidth itself for infinite-support kernels).
2. **Cache-sized tiles.** The product is computed tile by tile
   (``_QUERY_BLOCK`` queries × a few thousand training points), so ``t`` is
   still in cache when it is read again.
3. **Sparse extraction.** For a compact kernel only ``t ≥ 0`` contributes.
   One comparison pass and a ``flatnonzero`` collect those entries; every
   kernel value, square, square root (only where ``K > 0``) and class sum is
   then computed on that short list with ``bincount``. Tiles with many
   contributing entries take a dense in-place route instead.
4. **Pruning (compact kernels).** The training set is partitioned once into
   balls (k-means centres, radius = farthest member), and queries are
   processed in spatially coherent blocks; a (block, ball) pair is skipped
   when every query of the block is farther than ``S + radius`` from the
   ball's centre, because then every kernel value in it is exactly 0. The
   results are the dense results (up to floating-point summation order).
5. **Threads.** ``n_jobs`` threads work on disjoint query blocks, each with
   one BLAS thread (no oversubscription); numpy and BLAS release the GIL.
6. **Compiled reduction (optional).** When numba is installed and the kernel
   is a built-in one, step 3's passes are replaced by one compiled pass over
   each tile (:mod:`._fused`, GIL released). The numpy route stays the
   fallback and the reference; ``USE_NUMBA = False`` in this module or the
   environment variable ``NWBOUND_DISABLE_NUMBA=1`` forces it.

Peak memory stays within ``working_memory``: tiles, extracted entries and
buffers are sized from it (split between the threads).
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from sklearn import get_config
from threadpoolctl import threadpool_limits

from ..kernels import Kernel

__all__ = ["TrainingSet", "KernelSums", "dense_kernel_sums", "neighbor_kernel_sums", "block_rows"]

# Queries per block: enough rows for an efficient GEMM, few enough that a
# spatially coherent block still prunes most balls.
_QUERY_BLOCK = 128
# Elements of one tile of the distance matrix (2 MiB in float32): the tile and
# its boolean mask stay in the L2/L3 cache between the GEMM and the next pass.
_TILE_ELEMENTS = 1 << 19
# Above this share of contributing entries a tile takes the dense route.
_DENSE_SHARE = 0.25
# Bytes per tile element for the buffers of one thread (tile, mask, and the
# dense route's kernel/distance temporaries), and per extracted entry
# (flat index, row, column, d², kernel value and temporaries, all 8 bytes).
_BYTES_PER_ENTRY = 96
# Pruning: training points per ball, and fewer points than this are never pruned.
_BALL_SIZE = 128
_MIN_PRUNE_POINTS = 8192
# Automatic pruning only in few dimensions: there k-means balls are small
# next to a bandwidth that leaves few neighbours. In 100 dimensions (even on
# a 5-dim manifold) the balls are wider than λ and pruning skips almost nothing.
_AUTO_PRUNE_MAX_FEATURES = 12
# Relative slack added to the pruning test so that rounding never drops a
# pair the dense path would keep.
_PRUNE_SLACK = 1e-6
# The compiled tile reduction (numba): False forces the numpy route, as does
# the environment variable NWBOUND_DISABLE_NUMBA=1.
USE_NUMBA = True
# The ._fused module once imported, False when numba is missing, None: not tried yet.
_FUSED_MODULE = None
_NO_SUM = np.zeros((0, 0))  # stands for a sum that is not wanted


def _tile_bytes_per_element(itemsize: int) -> int:
    return 4 * itemsize + 1


@dataclass(frozen=True)
class _Balls:
    """A partition of the (reordered) training rows into balls."""

    centers: np.ndarray  # (k, d) float64, in centred coordinates
    center_sqnorm: np.ndarray  # (k,)
    radii: np.ndarray  # (k,) float64
    starts: np.ndarray  # (k + 1,) row ranges in the reordered layout


@dataclass(frozen=True)
class _Layout:
    """Training rows in the order and shape the dense path reads them."""

    center: np.ndarray  # (d,) float64 bounding-box midpoint, subtracted from every point
    augmented: np.ndarray  # (n, d + 2) [x', 1, ‖x'‖²], estimator dtype
    labels: np.ndarray  # (n,) in layout order
    weights: np.ndarray | None  # (n,) float64 in layout order
    onehot: np.ndarray  # (n, C) weighted one-hot, estimator dtype, layout order
    max_sqnorm: float  # max ‖x'‖², for the rounding tolerance
    balls: _Balls | None  # None: too small to prune


@dataclass(frozen=True)
class TrainingSet:
    """Training data in the layout the kernel sums need."""

    X: np.ndarray  # (n, d), the estimator's dtype
    sqnorm: np.ndarray  # (n,), ‖x_i‖²
    labels: np.ndarray  # (n,), class indices 0..C-1
    weights: np.ndarray | None  # (n,) sample weights, None for all ones
    weighted_onehot: np.ndarray  # (n, C), w_i·1{c_i = c}
    # Engine caches (built on first use); never pickled, never compared.
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def build(cls, X: np.ndarray, labels: np.ndarray, n_classes: int, weights: np.ndarray | None) -> "TrainingSet":
        onehot = np.zeros((X.shape[0], n_classes), dtype=X.dtype)
        onehot[np.arange(X.shape[0]), labels] = 1.0 if weights is None else weights
        sqnorm = np.einsum("ij,ij->i", X, X)
        return cls(X=X, sqnorm=sqnorm, labels=labels, weights=weights, weighted_onehot=onehot)

    @property
    def n_classes(self) -> int:
        return self.weighted_onehot.shape[1]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_cache"] = {}  # rebuilt on demand: keeps pickles small
        return state

    def __setstate__(self, state: dict) -> None:
        state.setdefault("_cache", {})
        object.__setattr__(self, "__dict__", state)

    def layout(self, prune: bool) -> _Layout:
        """The dense path's layout (with the ball partition when ``prune``), cached."""
        key = "pruned" if prune and self.X.shape[0] >= _MIN_PRUNE_POINTS else "plain"
        if key not in self._cache:
            self._cache[key] = _build_layout(self, with_balls=(key == "pruned"))
        return self._cache[key]


@dataclass
class KernelSums:
    """Per-query, per-bandwidth kernel sums (float64)."""

    class_sums: np.ndarray  # (n, G, C)
    sq_sum: np.ndarray  # (n, G)
    dist_sum: np.ndarray | None  # (n, G)
    tail_mass: np.ndarray | None  # (n, G)

    @property
    def kappa(self) -> np.ndarray:
        return self.class_sums.sum(axis=2)

    @classmethod
    def empty(cls, n: int, n_bandwidths: int, n_classes: int, need_dist: bool, need_tail: bool) -> "KernelSums":
        return cls(
            class_sums=np.zeros((n, n_bandwidths, n_classes)),
            sq_sum=np.zeros((n, n_bandwidths)),
            dist_sum=np.zeros((n, n_bandwidths)) if need_dist else None,
            tail_mass=np.zeros((n, n_bandwidths)) if need_tail else None,
        )


# ---------------------------------------------------------------------------------------------
# Layout and ball partition
# ---------------------------------------------------------------------------------------------
def _build_layout(train: TrainingSet, with_balls: bool) -> _Layout:
    X = train.X
    # Centre at the bounding-box midpoint: it shrinks the norms (and so the
    # cancellation error of the expanded distance) like the mean would, but is
    # exactly invariant to row order and duplicated rows, so those never move
    # a point across the kernel's support boundary by rounding.
    center = 0.5 * (X.min(axis=0).astype(np.float64) + X.max(axis=0).astype(np.float64))
    centred = X.astype(np.float64) - center
    balls = None
    order = None
    if with_balls:
        order, balls = _ball_partition(centred)
        centred = centred[order]
    sq = np.einsum("ij,ij->i", centred, centred)
    augmented = np.empty((X.shape[0], X.shape[1] + 2), dtype=X.dtype)
    augmented[:, :-2] = centred
    augmented[:, -2] = 1.0
    augmented[:, -1] = sq
    labels = train.labels if order is None else train.labels[order]
    weights = train.weights
    if weights is not None:
        weights = (weights if order is None else weights[order]).astype(np.float64)
    onehot = train.weighted_onehot if order is None else train.weighted_onehot[order]
    return _Layout(
        center=center,
        augmented=augmented,
        labels=np.ascontiguousarray(labels),
        weights=weights,
        onehot=np.ascontiguousarray(onehot),
        max_sqnorm=float(sq.max(initial=0.0)),
        balls=balls,
    )


def _ball_partition(centred: np.ndarray) -> tuple[np.ndarray, _Balls]:
    """k-means balls of about ``_BALL_SIZE`` points, ordered so that nearby balls are adjacent.

    Returns the row order (grouping each ball's members) and the balls. The
    partition only decides what may be skipped; any partition keeps the
    results exact, so a few cheap Lloyd iterations on a sample suffice.
    """
    from sklearn.cluster import KMeans

    n = centred.shape[0]
    k = int(min(1024, max(2, n // _BALL_SIZE)))
    rng = np.random.default_rng(0)
    sample = centred[rng.choice(n, size=min(n, 16 * k), replace=False)]
    km = KMeans(n_clusters=k, init="random", n_init=1, max_iter=8, tol=1e-3, random_state=0)
    centers = km.fit(sample).cluster_centers_
    # Order the centres along coarse groups so consecutive balls are close:
    # coherent query blocks then need few, adjacent balls.
    n_groups = max(1, k // 16)
    group = KMeans(n_clusters=n_groups, n_init=1, max_iter=20, random_state=0).fit_predict(centers)
    centers = centers[np.lexsort((np.arange(k), group))]
    assign = _nearest_center(centred, centers)
    order = np.argsort(assign, kind="stable")
    counts = np.bincount(assign, minlength=k)
    keep = counts > 0
    centers, counts = centers[keep], counts[keep]
    starts = np.concatenate([[0], np.cumsum(counts)])
    members = centred[order]
    ball_id = np.repeat(np.arange(centers.shape[0]), counts)
    radii = np.zeros(centers.shape[0])
    np.maximum.at(radii, ball_id, np.linalg.norm(members - centers[ball_id], axis=1))
    balls = _Balls(
        centers=centers,
        center_sqnorm=np.einsum("ij,ij->i", centers, centers),
        radii=radii,
        starts=starts,
    )
    return order, balls


def _nearest_center(points: np.ndarray, centers: np.ndarray, chunk: int = 8192) -> np.ndarray:
    csq = np.einsum("ij,ij->i", centers, centers)
    out = np.empty(points.shape[0], dtype=np.intp)
    for s in range(0, points.shape[0], chunk):
        p = points[s : s + chunk].astype(np.float64, copy=False)
        out[s : s + chunk] = np.argmin(csq[None, :] - 2.0 * (p @ centers.T), axis=1)
    return out


# ---------------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------------
def _reduce_weights(
    out: KernelSums,
    rows: slice,
    g: int,
    wk: np.ndarray,
    class_sums: np.ndarray,
    dist: np.ndarray | None,
    tail_cut: float | None,
) -> None:
    """Store the sums of one block of weighted kernel values ``wk = w_i K_i``."""
    out.class_sums[rows, g] = class_sums
    out.sq_sum[rows, g] = np.einsum("ij,ij->i", wk, wk)
    if out.dist_sum is not None:
        out.dist_sum[rows, g] = np.einsum("ij,ij->i", wk, dist)
    if out.tail_mass is not None:
        out.tail_mass[rows, g] = np.where(dist > tail_cut, wk, 0.0).sum(axis=1)


@dataclass
class _Plan:
    """What one call of :func:`dense_kernel_sums` needs in every block."""

    layout: _Layout
    kernel: Kernel
    bandwidths: np.ndarray
    support_sq: float  # S²
    sparse: bool  # compact kernel: extract t ≥ −tol only
    tol: float  # rounding tolerance on t
    need_dist: bool
    tail_radius: float | None
    tile_elements: int
    flush_entries: int
    dtype: np.dtype
    fused: _FusedSpec | None = None  # the compiled reduction, when it applies


@dataclass(frozen=True)
class _FusedSpec:
    """Arguments of :func:`._fused.tile_sums` that are the same for every tile."""

    tile_sums: object  # the compiled function
    code: int
    radius_sq: float
    labels: np.ndarray  # (n,) intp, layout order
    inv_lam2: np.ndarray  # (G,) 1/λ²
    tail_cut: np.ndarray  # (G,) r_t·λ (unused without tail mass)
    threshold: np.floating  # skip t below this (estimator dtype; −inf: visit all)


def _fused_spec(kernel: Kernel, lay: _Layout, bandwidths: np.ndarray, tail_radius: float | None,
                sparse: bool, tol: float, dtype: np.dtype) -> _FusedSpec | None:
    """The compiled reduction's fixed arguments, or None for the numpy route
    (numba missing or switched off, or a kernel it does not evaluate)."""
    global _FUSED_MODULE
    if not USE_NUMBA or os.environ.get("NWBOUND_DISABLE_NUMBA", "").strip() not in ("", "0"):
        return None
    if _FUSED_MODULE is None:  # import numba lazily, once: `import nwbound` stays fast
        try:
            from . import _fused
        except ImportError:
            _FUSED_MODULE = False
        else:
            _FUSED_MODULE = _fused
    if _FUSED_MODULE is False:
        return None
    spec = _FUSED_MODULE.kernel_code(kernel)
    if spec is None:
        return None
    return _FusedSpec(
        tile_sums=_FUSED_MODULE.tile_sums,
        code=spec[0],
        radius_sq=spec[1],
        labels=lay.labels.astype(np.intp, copy=False),
        inv_lam2=1.0 / bandwidths**2,
        tail_cut=(tail_radius if tail_radius is not None else np.inf) * bandwidths,
        threshold=dtype.type(-tol if sparse else -np.inf),
    )


class _Accumulator:
    """Per-block running sums (float64) for ``rows`` query rows."""

    def __init__(self, n_rows: int, n_bandwidths: int, n_classes: int, need_dist: bool, need_tail: bool):
        self.n_rows = n_rows
        self.n_classes = n_classes
        self.class_sums = np.zeros((n_rows, n_bandwidths, n_classes))
        self.sq_sum = np.zeros((n_rows, n_bandwidths))
        self.dist_sum = np.zeros((n_rows, n_bandwidths)) if need_dist else None
        self.tail_mass = np.zeros((n_rows, n_bandwidths)) if need_tail else None
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.d2: list[np.ndarray] = []
        self.pending = 0

    def add_entries(self, rows: np.ndarray, cols: np.ndarray, d2: np.ndarray, plan: _Plan) -> None:
        self.rows.append(rows)
        self.cols.append(cols)
        self.d2.append(d2)
        self.pending += rows.shape[0]
        if self.pending >= plan.flush_entries:
            self.flush(plan)

    def flush(self, plan: _Plan) -> None:
        """Reduce the extracted entries with ``bincount`` (one call per sum and bandwidth)."""
        if not self.rows:
            return
        rows = np.concatenate(self.rows)
        cols = np.concatenate(self.cols)
        d2 = np.concatenate(self.d2)
        self.rows, self.cols, self.d2, self.pending = [], [], [], 0
        lay = plan.layout
        n, C = self.n_rows, self.n_classes
        flat = rows * C + lay.labels[cols]
        w = None if lay.weights is None else lay.weights[cols]
        dist = None
        for g, lam in enumerate(plan.bandwidths):
            k = plan.kernel.from_squared(d2 * (1.0 / float(lam) ** 2))
            wk = np.asarray(k, dtype=np.float64)
            if w is not None:
                wk = wk * w
            self.class_sums[:, g] += np.bincount(flat, weights=wk, minlength=n * C).reshape(n, C)
            self.sq_sum[:, g] += np.bincount(rows, weights=wk * wk, minlength=n)
            if self.dist_sum is not None or self.tail_mass is not None:
                if dist is None:
                    dist = np.sqrt(d2)
                pos = np.flatnonzero(wk)  # the square root only where K > 0 matters
                if self.dist_sum is not None:
                    self.dist_sum[:, g] += np.bincount(rows[pos], weights=wk[pos] * dist[pos], minlength=n)
                if self.tail_mass is not None:
                    cut = plan.tail_radius * float(lam)
                    far = pos[dist[pos] > cut]
                    self.tail_mass[:, g] += np.bincount(rows[far], weights=wk[far], minlength=n)

    def add_fused(self, t: np.ndarray, col: slice | np.ndarray, plan: _Plan) -> None:
        """Compiled route: every sum of one tile ``t = 1 − d²/S²`` in one pass."""
        spec = plan.fused
        weights = plan.layout.weights
        spec.tile_sums(
            t, spec.labels[col], np.empty(0) if weights is None else weights[col],
            spec.inv_lam2, spec.tail_cut, plan.support_sq, spec.threshold, spec.code, spec.radius_sq,
            self.class_sums, self.sq_sum,
            _NO_SUM if self.dist_sum is None else self.dist_sum,
            _NO_SUM if self.tail_mass is None else self.tail_mass,
        )

    def add_dense(self, d2: np.ndarray, col: slice | np.ndarray, plan: _Plan) -> None:
        """Dense route for one tile of squared distances (overwritten)."""
        lay = plan.layout
        onehot = lay.onehot[col]
        w = None if lay.weights is None else lay.weights[col].astype(d2.dtype)
        dist = None
        if plan.need_dist or plan.tail_radius is not None:
            dist = np.sqrt(d2)
        for g, lam in enumerate(plan.bandwidths):
            u2 = d2 * d2.dtype.type(1.0 / float(lam) ** 2)
            k = plan.kernel.from_squared(u2)
            self.class_sums[:, g] += k @ onehot
            if w is not None:
                k *= w
            self.sq_sum[:, g] += np.einsum("ij,ij->i", k, k, dtype=np.float64)
            if self.dist_sum is not None:
                self.dist_sum[:, g] += np.einsum("ij,ij->i", k, dist, dtype=np.float64)
            if self.tail_mass is not None:
                cut = plan.tail_radius * float(lam)
                self.tail_mass[:, g] += np.where(dist > cut, k, 0.0).sum(axis=1, dtype=np.float64)


def _block_sums(Q: np.ndarray, cols: np.ndarray | None, plan: _Plan) -> _Accumulator:
    """Kernel sums of the query rows ``Q`` against the training columns ``cols`` (None: all)."""
    lay = plan.layout
    dtype = plan.dtype
    n_rows = Q.shape[0]
    n_cols = lay.augmented.shape[0] if cols is None else cols.shape[0]
    acc = _Accumulator(n_rows, len(plan.bandwidths), lay.onehot.shape[1], plan.need_dist, plan.tail_radius is not None)
    if n_cols == 0:
        return acc
    # Query side of the augmented product: t = 1 − d²/S².
    S2 = plan.support_sq
    qc = Q.astype(np.float64) - lay.center
    A = np.empty((n_rows, Q.shape[1] + 2), dtype=dtype)
    A[:, :-2] = qc * (2.0 / S2)
    A[:, -2] = 1.0 - np.einsum("ij,ij->i", qc, qc) / S2
    A[:, -1] = -1.0 / S2
    width = max(1, min(n_cols, plan.tile_elements // n_rows))
    tile_buf = np.empty(n_rows * width, dtype=dtype)
    mask_buf = np.empty(n_rows * width, dtype=bool) if plan.sparse and plan.fused is None else None
    gather_buf = None if cols is None else np.empty((width, lay.augmented.shape[1]), dtype=dtype)
    threshold = dtype.type(-plan.tol)
    for j0 in range(0, n_cols, width):
        j1 = min(j0 + width, n_cols)
        w = j1 - j0
        if cols is None:
            B = lay.augmented[j0:j1]
            col_index: slice | np.ndarray = slice(j0, j1)
        else:
            col_index = cols[j0:j1]
            B = np.take(lay.augmented, col_index, axis=0, out=gather_buf[:w])
        t = tile_buf[: n_rows * w].reshape(n_rows, w)
        np.matmul(A, B.T, out=t)
        if plan.fused is not None:
            acc.add_fused(t, col_index, plan)
            continue
        if plan.sparse:
            mask = mask_buf[: n_rows * w].reshape(n_rows, w)
            np.greater_equal(t, threshold, out=mask)
            count = int(np.count_nonzero(mask))
            if count == 0:
                continue
            if count <= _DENSE_SHARE * t.size:
                flat = np.flatnonzero(mask)
                r, c = np.divmod(flat, w)
                d2 = (1.0 - t.ravel()[flat].astype(np.float64)) * S2
                np.maximum(d2, 0.0, out=d2)
                cglob = c + j0 if cols is None else cols[j0 + c]
                acc.add_entries(r, cglob, d2, plan)
                continue
        # Dense route: t becomes d² in place.
        np.subtract(1.0, t, out=t)
        t *= dtype.type(S2)
        np.maximum(t, 0.0, out=t)
        acc.add_dense(t, col_index, plan)
    acc.flush(plan)
    return acc


def _store(out: KernelSums, rows: slice | np.ndarray, acc: _Accumulator) -> None:
    out.class_sums[rows] = acc.class_sums
    out.sq_sum[rows] = acc.sq_sum
    if out.dist_sum is not None:
        out.dist_sum[rows] = acc.dist_sum
    if out.tail_mass is not None:
        out.tail_mass[rows] = acc.tail_mass


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
) -> KernelSums:
    """Kernel sums of every query against every training point (the *regular* NWC).

    Parameters
    ----------
    Xq : ndarray of shape (n_queries, n_features)
        Queries, in the training set's dtype.
    train : TrainingSet
    kernel : Kernel
    bandwidths : ndarray of shape (n_bandwidths,)
    need_dist : bool
        Also compute ``dist_sum``.
    tail_radius : float or None, default=None
        Also compute ``tail_mass`` beyond ``tail_radius·λ``.
    working_memory : float or None, default=None
        MiB for all temporaries together (None: scikit-learn's setting).
    n_jobs : int or None, default=None
        Threads over query blocks, each with one BLAS thread; None: one
        thread (BLAS keeps its own threads), -1: all cores.
    prune : bool or None, default=None
        Skip (query block, ball) pairs beyond the kernel's support. None:
        when the kernel is compact, the training set has at least 8192 points
        and at most 12 features. Building the balls is a one-off cost of the
        first call (cached on ``train``). The sums do not depend on it (up to rounding).

    Returns
    -------
    KernelSums
    """
    n_q = Xq.shape[0]
    bandwidths = np.asarray(bandwidths, dtype=np.float64)
    out = KernelSums.empty(n_q, len(bandwidths), train.n_classes, need_dist, tail_radius is not None)
    if n_q == 0:
        return out
    dtype = train.X.dtype
    compact = kernel.compact and tail_radius is None
    if prune is None:
        prune = Xq.shape[1] <= _AUTO_PRUNE_MAX_FEATURES
    lay = train.layout(prune=bool(prune and compact))
    lam_max = float(bandwidths.max())
    support = kernel.radius * lam_max if compact else lam_max
    support_sq = support * support
    # Absolute rounding error of t: a few ulps of the (centred) norms over S².
    eps = float(np.finfo(dtype).eps)
    q_max = float(np.max(np.einsum("ij,ij->i", Xq.astype(np.float64) - lay.center, Xq.astype(np.float64) - lay.center)))
    tol = 8.0 * eps * (q_max + lay.max_sqnorm + 1.0) / support_sq

    n_threads = _n_threads(n_jobs)
    budget = (get_config()["working_memory"] if working_memory is None else working_memory) * 2**20
    per_thread = budget / n_threads
    # Tile elements and extracted entries share the thread's budget: a tile
    # can add up to _DENSE_SHARE of its size in entries before a flush.
    per_elem = _tile_bytes_per_element(dtype.itemsize) + 2 * _DENSE_SHARE * _BYTES_PER_ENTRY
    tile_elements = int(max(1, min(_TILE_ELEMENTS, per_thread // per_elem)))
    plan = _Plan(
        layout=lay,
        kernel=kernel,
        bandwidths=bandwidths,
        support_sq=support_sq,
        sparse=compact,
        tol=tol,
        need_dist=need_dist,
        tail_radius=tail_radius,
        tile_elements=tile_elements,
        flush_entries=max(1, int(_DENSE_SHARE * tile_elements)),
        dtype=dtype,
        fused=_fused_spec(kernel, lay, bandwidths, tail_radius, compact, tol, dtype),
    )
    n_rows = int(max(1, min(_QUERY_BLOCK, tile_elements, n_q)))

    if lay.balls is not None and compact:
        order, blocks = _coherent_blocks(Xq, lay, n_rows, support, eps)
        tasks = [(order[s:e], cols) for s, e, cols in blocks]
    else:
        tasks = [(slice(s, min(s + n_rows, n_q)), None) for s in range(0, n_q, n_rows)]

    def run(task: tuple[slice | np.ndarray, np.ndarray | None]) -> None:
        rows, cols = task
        _store(out, rows, _block_sums(Xq[rows], cols, plan))

    if n_threads > 1 and len(tasks) > 1:
        # Threads over query blocks, one BLAS thread each: no oversubscription.
        with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(n_threads) as pool:
            list(pool.map(run, tasks))
    else:
        for task in tasks:
            run(task)
    return out


def _coherent_blocks(
    Xq: np.ndarray, lay: _Layout, n_rows: int, support: float, eps: float
) -> tuple[np.ndarray, list[tuple[int, int, np.ndarray | None]]]:
    """Queries sorted by nearest ball, cut into blocks, each with the training
    columns it must see (None: all of them)."""
    balls = lay.balls
    qc = Xq.astype(np.float64) - lay.center
    nearest = _nearest_center(qc, balls.centers)
    order = np.argsort(nearest, kind="stable")
    n_q = Xq.shape[0]
    n_train = lay.augmented.shape[0]
    sizes = np.diff(balls.starts)
    blocks = []
    for s in range(0, n_q, n_rows):
        e = min(s + n_rows, n_q)
        qb = qc[order[s:e]]
        sq = np.einsum("ij,ij->i", qb, qb)
        d2 = sq[:, None] + balls.center_sqnorm[None, :] - 2.0 * (qb @ balls.centers.T)
        # Distance to the nearest possible member of each ball, minus slack for rounding.
        lower = np.sqrt(np.maximum(d2, 0.0)).min(axis=0) - balls.radii
        slack = _PRUNE_SLACK * (support + float(np.sqrt(sq.max())) + 1.0) + 16.0 * eps * math.sqrt(lay.max_sqnorm + 1.0)
        active = np.flatnonzero(lower <= support + slack)
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


def neighbor_kernel_sums(
    dist: np.ndarray,
    idx: np.ndarray,
    train: TrainingSet,
    kernel: Kernel,
    bandwidths: np.ndarray,
    *,
    need_dist: bool,
    tail_radius: float | None = None,
) -> KernelSums:
    """Kernel sums over each query's k nearest neighbours (the *localized* NWC)."""
    n_q, k_nn = idx.shape
    n_classes = train.n_classes
    out = KernelSums.empty(n_q, len(bandwidths), n_classes, need_dist, tail_radius is not None)
    dist = np.asarray(dist, dtype=np.float64)
    labels = train.labels[idx]
    weights = None if train.weights is None else train.weights[idx].astype(np.float64)
    flat = (np.arange(n_q)[:, None] * n_classes + labels).ravel()
    for g, lam in enumerate(bandwidths):
        wk = kernel(dist / float(lam)).astype(np.float64, copy=False)
        if weights is not None:
            wk = wk * weights
        class_sums = np.bincount(flat, weights=wk.ravel(), minlength=n_q * n_classes).reshape(n_q, n_classes)
        cut = None if tail_radius is None else tail_radius * float(lam)
        _reduce_weights(out, slice(None), g, wk, class_sums, dist, cut)
    return out


def block_rows(row_bytes: int, n_rows: int, working_memory: float | None = None) -> int:
    """Rows per block so one block's temporaries fit in ``working_memory`` MiB
    (scikit-learn's global ``working_memory`` setting when None); at least 1."""
    budget = get_config()["working_memory"] if working_memory is None else working_memory
    return int(max(1, min(n_rows, (budget * 2**20) // max(1, row_bytes))))


def _n_threads(n_jobs: int | None) -> int:
    if n_jobs is None:
        return 1
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + n_jobs)
    return max(1, int(n_jobs))
