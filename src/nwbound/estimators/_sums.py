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
4. **Pruning (compact kernels).** The training set is partitioned once into
   balls (k-means centres, radius = farthest member), and queries are
   processed in spatially coherent blocks; a (block, ball) pair is skipped
   when every query of the block is farther than ``S + radius`` from the
   ball's centre, because then every kernel value in it is exactly 0.
5. **Threads.** ``n_jobs`` threads work on disjoint query blocks, each with
   one BLAS thread (no oversubscription); numpy and BLAS release the GIL.
6. **Compiled reduction (optional).** When numba is installed and the kernel
   is a built-in one, step 3's passes are replaced by one compiled pass over
   each tile (:mod:`._fused`, GIL released). The numpy route stays the
   fallback and the reference; ``USE_NUMBA = False`` in this module or the
   environment variable ``NWBOUND_DISABLE_NUMBA=1`` forces it.

**Exact arithmetic at the kernel's edge.** The expanded product cancels: when S is small
next to the features' magnitudes, ``t̃`` can be far from ``t``. Each query row ``i`` gets a
rigorous bound ``|t̃_ik − t_ik| ≤ e_i`` for every column k (:func:`_t_error`): the GEMM's
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
* float64 still too large (or ``ρ²`` not representable): every entry the GEMM cannot rule
  out (``t̃ ≥ −e``; all of them when even that product cannot be formed) gets its distance
  recomputed directly.

``dist_sum`` adds ``w K·S·√(d̃²/S²·(1 + c) + e)`` (``c`` the direct formula's relative error):
an upper bound of the true distance, so the Lipschitz bias term stays valid; the float64
summation's rounding is covered by a final factor ``1 + (n + 8)u₆₄``. The per-row bound is
exposed as :attr:`KernelSums.d2_error` (input units) and :meth:`KernelSums.u2_error`
(per bandwidth, on ``u² = d²/λ²``): bound code widens the histogram's bin edges by it. The
histogram bins each point by the very ``u²`` its kernel value was computed from.

**Rounding of the sums.** The terms ``a_i = fl(w_i·K̃_i)`` are what the bound weighs (any
weights that depend on the inputs only keep it valid; the histogram's per-bin kernel range has
slack for the evaluation). Their float64 sums of at most ``n`` terms, in any order, lie within
``1 ± γ_n`` (``u = 2⁻⁵³``) of the exact ones: ``KernelSums.sum_error`` carries ``ρ = γ_n`` for the
class sums, per-bin masses and tail masses (``n`` the training points, ``k`` for the localized
sums), and the bound widens by it. ``Σ a_i²`` is made an upper bound at the source
(:func:`~nwbound._numerics.square_sum_upper`), like ``dist_sum``.

Peak memory stays within ``working_memory``: tiles, extracted entries and
buffers are sized from it (split between the threads).
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from sklearn import get_config
from threadpoolctl import threadpool_limits

from .._memory import block_rows
from .._numerics import direct_d2_error_factor, direct_distance_error, direct_distances, square_sum_upper, summation_error
from ..kernels import Kernel

neighbor_distances = direct_distances  # the name this module has always exported

__all__ = [
    "TrainingSet", "KernelSums", "MomentSums", "dense_kernel_sums", "dense_moment_sums", "neighbor_kernel_sums",
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
# Above this share of contributing entries a tile takes the dense route.
_DENSE_SHARE = 0.25
# Bytes per extracted entry (flat index, row, column, d², kernel value and temporaries).
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
# Largest bound on |t̃ − t| (t = 1 − d²/S²) a block may keep: above it the block's
# product is redone in float64, then distances are recomputed directly. Kernel
# values are then evaluated within 2⁻⁸ (in u² units at the largest λ) of the truth.
_MAX_T_ERROR = 2.0**-8
# Entries per chunk of a direct distance recomputation (entries × features floats).
_DIRECT_CHUNK_ELEMENTS = 1 << 20
_U64 = 2.0**-53  # unit roundoff of float64
# dense_moment_sums: an expanded sum below this share of the same sum with |coefficients| is rounding.
_MOMENT_TOLERANCE = 1e-10
# The moments pass recomputes from the coordinates the entries that may lie inside a bandwidth
# whose δ threshold θ is below this many times the product's error bound on δ (u² off by > R²/16:
# the product cannot place them; finer resolution would recompute most float32 entries).
_MOMENT_RESOLVE = 2.0**4
# The compiled tile reduction (numba): False forces the numpy route, as does
# the environment variable NWBOUND_DISABLE_NUMBA=1.
USE_NUMBA = True
# The ._fused module once imported, False when numba is missing, None: not tried yet.
_FUSED_MODULE = None
_NO_SUM = np.zeros((0, 0))  # stands for a sum that is not wanted
_NO_HIST = np.zeros((0, 0, 0))
_NO_HIST_MD = np.zeros((0, 0, 0, 0))


def _tile_bytes_per_element(itemsize: int) -> int:
    # tile, mask, and the dense route's float64 temporaries (t, δ, u², K, distances, indices)
    return itemsize + 1 + 6 * 8


@dataclass(frozen=True)
class _Balls:
    """A partition of the (reordered) training rows into balls (scaled coordinates)."""

    centers: np.ndarray  # (k, d) float64, in centred and scaled coordinates
    center_sqnorm: np.ndarray  # (k,)
    radii: np.ndarray  # (k,) float64
    starts: np.ndarray  # (k + 1,) row ranges in the reordered layout


@dataclass(frozen=True)
class _Layout:
    """Training rows in the order and shape the dense path reads them."""

    center: np.ndarray  # (d,) float64 bounding-box midpoint, subtracted from every point
    scale: float  # s₀: a power of two ≥ every |x − c|; coordinates are divided by it (exactly)
    augmented: np.ndarray  # (n, d + 2) [x'', 1, ‖x''‖²], estimator dtype
    points: np.ndarray  # (n, d) the original rows in layout order, for direct distances
    labels: np.ndarray  # (n,) in layout order
    weights: np.ndarray | None  # (n,) float64 in layout order, in units of ``weight_unit``
    onehot: np.ndarray  # (n, C) weighted one-hot, estimator dtype, layout order
    max_norm: float  # max ‖x''‖, for the error bound of the product
    balls: _Balls | None  # None: too small to prune
    weight_unit: float = 1.0  # the training set's :attr:`TrainingSet.weight_unit`
    # The float64 copy of ``augmented`` for blocks whose float32 product is too coarse.
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def max_sqnorm(self) -> float:
        return self.max_norm**2

    def augmented64(self) -> np.ndarray:
        if self.augmented.dtype == np.float64:
            return self.augmented
        if "augmented64" not in self._cache:
            centred = (self.points.astype(np.float64) - self.center) / self.scale
            aug = np.empty(self.augmented.shape)
            aug[:, :-2] = centred
            aug[:, -2] = 1.0
            aug[:, -1] = np.einsum("ij,ij->i", centred, centred)
            self._cache["augmented64"] = aug
        return self._cache["augmented64"]


@dataclass(frozen=True)
class TrainingSet:
    """Training data in the layout the kernel sums need.

    Examples
    --------
    >>> import numpy as np
    >>> train = TrainingSet.build(np.array([[0.0, 1.0], [2.0, 3.0]]), np.array([0, 1]), 2, None)
    >>> train.n_classes, train.weight_max, train.layout(prune=False).scale
    (2, 1.0, 1.0)
    """

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
        with np.errstate(over="ignore"):  # informational only; the engine never reads it
            sqnorm = np.einsum("ij,ij->i", X, X)
        return cls(X=X, sqnorm=sqnorm, labels=labels, weights=weights, weighted_onehot=onehot)

    @property
    def n_classes(self) -> int:
        return self.weighted_onehot.shape[1]

    @property
    def weight_max(self) -> float:
        """Largest sample weight (1 without weights)."""
        return 1.0 if self.weights is None or self.weights.size == 0 else float(np.max(self.weights))

    @property
    def weight_unit(self) -> float:
        """The power of two ``≥ weight_max`` in which both routes accumulate (1 without weights).

        Every ``w_i/unit ∈ [0, 1]``, so no ``(w_i K_i)²`` overflows or loses its scale, whatever
        the weights' units; dividing and multiplying back by a power of two is exact.

        Examples
        --------
        >>> import numpy as np
        >>> TrainingSet.build(np.zeros((2, 1)), np.array([0, 1]), 2, np.array([3.0, 1e300])).weight_unit == 2.0**997
        True
        """
        return 1.0 if self.weights is None else _power_of_two_above(self.weight_max)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_cache"] = {}  # rebuilt on demand: keeps pickles small
        return state

    def __setstate__(self, state: dict) -> None:
        state.setdefault("_cache", {})
        object.__setattr__(self, "__dict__", state)

    def sample(self, fraction: float, row_offset: int = 0) -> "TrainingSet":
        """The rows :func:`ranking_sample_rows` keeps (cached; ``self`` when ``fraction`` is 1).

        Examples
        --------
        >>> import numpy as np
        >>> train = TrainingSet.build(np.arange(8.0)[:, None], np.arange(8) % 2, 2, None)
        >>> train.sample(1.0) is train, train.sample(0.5).X.shape[1]
        (True, 1)
        """
        if fraction >= 1.0:
            return self
        key = ("sample", float(fraction), int(row_offset))
        if key not in self._cache:
            rows = np.flatnonzero(ranking_sample_rows(self.X.shape[0], fraction, row_offset))
            self._cache[key] = TrainingSet(
                X=np.ascontiguousarray(self.X[rows]), sqnorm=self.sqnorm[rows], labels=self.labels[rows],
                weights=None if self.weights is None else self.weights[rows],
                weighted_onehot=self.weighted_onehot[rows],
            )
        return self._cache[key]

    def layout(self, prune: bool) -> _Layout:
        """The dense path's layout (with the ball partition when ``prune``), cached."""
        key = "pruned" if prune and self.X.shape[0] >= _MIN_PRUNE_POINTS else "plain"
        if key not in self._cache:
            self._cache[key] = _build_layout(self, with_balls=(key == "pruned"))
        return self._cache[key]


def ranking_sample_rows(n_rows: int, fraction: float, row_offset: int = 0) -> np.ndarray:
    """Which of rows ``row_offset … row_offset + n_rows − 1`` a ranking sample of ``fraction`` keeps.

    Row ``i`` is kept when a 64-bit hash of ``i`` (SplitMix64's finaliser), read as a number in
    [0, 1), is below ``fraction``: each row independently with probability ``fraction``, decided
    by its row number alone, so that shards of a training set (rows numbered from their offset)
    keep exactly the rows the whole set keeps, and a model keeps the same rows at every call.

    Parameters
    ----------
    n_rows : int
    fraction : float in (0, 1]
        1 keeps every row.
    row_offset : int, default=0
        Number of the first row (a shard's place in the whole training set).

    Returns
    -------
    ndarray of bool, shape (n_rows,)

    Examples
    --------
    >>> whole = ranking_sample_rows(10, 0.5)
    >>> whole.astype(int).tolist()
    [0, 1, 1, 0, 1, 1, 1, 0, 1, 0]
    >>> bool((ranking_sample_rows(4, 0.5, row_offset=6) == whole[6:]).all())
    True
    """
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}.")
    z = np.arange(row_offset, row_offset + n_rows, dtype=np.uint64)  # uint64 products wrap (mod 2⁶⁴)
    z = (z + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53 < fraction


@dataclass
class KernelSums:
    """Per-query, per-bandwidth kernel sums (float64).

    ``d2_error_rel`` bounds ``|d̃² − d²|/S²`` for every pair the sums used (per query, or one
    float), ``support`` is ``S``; ``d2_error`` gives the bound in the input's units and
    :meth:`u2_error` per bandwidth on ``u² = d²/λ²``. ``histogram`` (n, G, B) holds
    ``Σ w_i/weight_max`` per bin of ``u²`` with edges ``hist_edges`` (B + 1,). The localized
    split form of the Chernoff bound also reads, per bin, ``hist_mass = Σ w_i K_i`` and
    ``hist_dist ≥ Σ w_i K_i ‖y − y_i‖`` (the distance bound of ``dist_sum``), and
    ``uniform_weights`` (no sample weights: every point's mass is ``w_max·K_i``); with sample
    weights, ``hist_count`` (n, G, B) counts the points per bin and ``weight_min`` is the smallest
    weight, so each point's mass is at least ``weight_min·K`` at the bin's outer edge. The localized
    path with ``keep_points`` adds ``point_mass`` (n, G, k) ``= w_i K_i`` and ``point_dist``
    (n, k), the directly computed neighbour distances.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.kernels import get_kernel
    >>> train = TrainingSet.build(np.array([[0.0], [0.5]]), np.array([0, 1]), 2, np.array([1.0, 2.0]))
    >>> s = dense_kernel_sums(np.array([[0.0]]), train, get_kernel("epanechnikov"), np.array([1.0, 2.0]),
    ...                       need_dist=True)
    >>> s.kappa.round(4).tolist(), s.weight_max, bool(s.u2_error([1.0, 2.0]).max() < 1e-12)
    ([[2.5, 2.875]], 2.0, True)
    """

    class_sums: np.ndarray  # (n, G, C)
    sq_sum: np.ndarray  # (n, G)
    dist_sum: np.ndarray | None  # (n, G)
    tail_mass: np.ndarray | None  # (n, G)
    d2_error_rel: np.ndarray | float = 0.0  # (n,) or scalar, units of S²
    support: float = 1.0  # S
    histogram: np.ndarray | None = None  # (n, G, B)
    hist_edges: np.ndarray | None = None  # (B + 1,) in u²
    weight_max: float = 1.0
    hist_mass: np.ndarray | None = None  # (n, G, B) Σ w_i K_i per bin
    hist_dist: np.ndarray | None = None  # (n, G, B) ≥ Σ w_i K_i ‖y − y_i‖ per bin
    uniform_weights: bool = False  # set by dense_kernel_sums (no sample weights)
    point_mass: np.ndarray | None = None  # (n, G, k)
    point_dist: np.ndarray | None = None  # (n, k)
    moments: np.ndarray | None = None  # (n, G, M) per slot, the ranking pass of dense_moment_sums
    hist_count: np.ndarray | None = None  # (n, G, B) points per bin (weighted data)
    weight_min: float = 0.0  # the smallest sample weight (weighted data)
    sum_error: float = 0.0  # ρ: class_sums, hist_mass, tail_mass within 1 ± ρ of the exact sums of the w_i K_i

    @property
    def kappa(self) -> np.ndarray:
        return self.class_sums.sum(axis=2)

    @property
    def d2_error(self) -> np.ndarray | float:
        """Bound on ``|d̃² − d²|`` in the input's squared units (``inf`` only where ``S²``
        itself overflows; :meth:`u2_error` never does)."""
        with np.errstate(over="ignore"):
            return self.d2_error_rel * (self.support * self.support)

    def u2_error(self, bandwidths: np.ndarray) -> np.ndarray:
        """Bound on ``|ũ² − u²|`` (``u = d/λ``), shape (n, G) for the (G,) ``bandwidths``."""
        ratio = (self.support / np.asarray(bandwidths, dtype=np.float64)) ** 2
        n = self.class_sums.shape[0]
        return np.broadcast_to(np.asarray(self.d2_error_rel, dtype=np.float64), (n,))[:, None] * ratio[None, :]

    @classmethod
    def empty(cls, n: int, n_bandwidths: int, n_classes: int, need_dist: bool, need_tail: bool,
              histogram_bins: int = 0) -> "KernelSums":
        return cls(
            class_sums=np.zeros((n, n_bandwidths, n_classes)),
            sq_sum=np.zeros((n, n_bandwidths)),
            dist_sum=np.zeros((n, n_bandwidths)) if need_dist else None,
            tail_mass=np.zeros((n, n_bandwidths)) if need_tail else None,
            histogram=np.zeros((n, n_bandwidths, histogram_bins)) if histogram_bins else None,
            hist_mass=np.zeros((n, n_bandwidths, histogram_bins)) if histogram_bins else None,
            hist_dist=np.zeros((n, n_bandwidths, histogram_bins)) if histogram_bins else None,
        )


# ---------------------------------------------------------------------------------------------
# Layout and ball partition
# ---------------------------------------------------------------------------------------------
def _power_of_two_above(x: float) -> float:
    """The smallest power of two ≥ ``x`` (1 for ``x == 0``): dividing by it is exact."""
    if not x > 0:
        return 1.0
    mant, exp = math.frexp(x)
    return math.ldexp(1.0, exp - 1) if mant == 0.5 else math.ldexp(1.0, exp)


def _build_layout(train: TrainingSet, with_balls: bool) -> _Layout:
    X = train.X
    # Centre at the bounding-box midpoint: it shrinks the norms (and so the
    # cancellation error of the expanded distance) like the mean would, but is
    # exactly invariant to row order and duplicated rows, so those never move
    # a point across the kernel's support boundary by rounding. Halves first: no overflow.
    if X.shape[0] == 0:
        center = np.zeros(X.shape[1])
    else:
        center = 0.5 * X.min(axis=0).astype(np.float64) + 0.5 * X.max(axis=0).astype(np.float64)
    centred = X.astype(np.float64) - center
    if not np.all(np.isfinite(centred)):
        raise ValueError("X: feature values too large to take differences in float64; rescale the features.")
    scale = _power_of_two_above(float(np.max(np.abs(centred), initial=0.0)))
    centred /= scale  # exact: a power of two
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
    if weights is not None:  # in units of weight_unit (exact: a power of two)
        weights = (weights if order is None else weights[order]).astype(np.float64) / train.weight_unit
    onehot = train.weighted_onehot if order is None else train.weighted_onehot[order]
    return _Layout(
        center=center,
        scale=scale,
        augmented=augmented,
        points=X if order is None else np.ascontiguousarray(X[order]),
        labels=np.ascontiguousarray(labels),
        weights=weights,
        onehot=np.ascontiguousarray(onehot),
        max_norm=float(np.sqrt(sq.max(initial=0.0))),
        balls=balls,
        weight_unit=train.weight_unit,
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
    out.sq_sum[rows, g] = square_sum_upper(np.einsum("ij,ij->i", wk, wk), wk.shape[1])  # an upper bound
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
    support: float  # S
    rho_sq: float  # (s₀/S)²: the product's scale (may be inf: then no product at all)
    scales: np.ndarray  # (G,) (S/λ_g)²: u² = δ·scales[g] with δ = d²/S²
    g_order: np.ndarray  # (G,) intp, bandwidths by increasing λ (the compiled route's slots)
    tail_cut: np.ndarray  # (G,) r_t·λ_g/S (inf without tail mass)
    sparse: bool  # compact kernel and no tail mass: extract t ≥ −e only
    edge: bool  # compact kernel: entries near the support's edge are recomputed
    need_dist: bool
    tail_radius: float | None
    hist_bins: int
    radius_sq: float  # R² (compact kernels), the histogram's range
    inv_weight_max: float
    direct_factor: float  # 1 + relative error bound of a direct distance
    tile_elements: int
    flush_entries: int
    dtype: np.dtype
    fused: _FusedSpec | None = None  # the compiled reduction, when it applies
    # Ranking pass of bandwidth="auto" (:func:`dense_moment_sums`): the kernel's degree in u²
    # (−1: the ordinary sums), the slot thresholds R²/scale by increasing λ (then inf) and
    # the bucket table that starts each entry's slot search (:func:`_slot_table`).
    moment_degree: int = -1
    thresholds: np.ndarray | None = None
    slot_table: np.ndarray | None = None
    inv_bucket: float = 0.0


@dataclass(frozen=True)
class _FusedSpec:
    """Arguments of :func:`._fused.tile_sums` that are the same for every tile."""

    tile_sums: object  # the compiled function
    tile_moments: object  # its per-slot moments variant
    code: int
    radius_sq: float
    labels: np.ndarray  # (n,) intp, layout order
    weights: np.ndarray  # (n,) float64 or (0,)


def _fused_spec(kernel: Kernel, lay: _Layout) -> _FusedSpec | None:
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
        tile_moments=_FUSED_MODULE.tile_moments,
        code=spec[0],
        radius_sq=spec[1],
        labels=lay.labels.astype(np.intp, copy=False),
        weights=np.empty(0) if lay.weights is None else lay.weights,
    )


def _t_error(q_norm: np.ndarray, max_norm: float, rho_sq: float, n_features: int, unit: float) -> np.ndarray:
    """Rigorous bound on ``|t̃ − t|`` per query row for a product in a dtype of unit roundoff ``unit``.

    ``t̃ = fl(Σ_j ã_j b̃_j)`` over ``n = d + 2`` terms: ``|fl(Σ) − Σ ã b̃| ≤ γ_n Σ|ã b̃|`` (Higham,
    *Accuracy and Stability of Numerical Algorithms*, §3.1, any order, with or without FMA),
    and the augmented entries carry a relative rounding ``η = unit + (d+6)u₆₄`` each
    (float64 centring, squaring and summing; exact power-of-two scaling; the cast), so
    ``|Σ ã b̃ − Σ a b| ≤ (2η + η²) Σ|a b|``. ``Σ_j |a_j b_j| ≤ 1 + ρ²(‖y''‖ + max‖x''‖)²``;
    forming ``1 − ρ²‖y''‖²`` adds ``(d+6)u₆₄(1 + ρ²‖y''‖²)``, and ``δ = 1 − t̃`` in float64 ``2u₆₄``.
    """
    n = n_features + 2
    gamma = n * unit / (1.0 - n * unit)
    eta = unit + (n_features + 6) * _U64
    coef = gamma * (1.0 + eta) ** 2 + 2.0 * eta + eta * eta + 2.0 * (n_features + 8) * _U64
    with np.errstate(over="ignore", invalid="ignore"):
        total = 1.0 + rho_sq * (q_norm + max_norm) ** 2
        err = coef * total * (1.0 + 1e-10)  # the bound's own float64 rounding
    return np.where(np.isfinite(err), err, np.inf)


def _direct_delta(q64: np.ndarray, rows: np.ndarray, points: np.ndarray, cols: np.ndarray,
                  inv_support: float) -> np.ndarray:
    """``Σ_j ((y_j − x_j)/S)²`` for the pairs (q64[rows], points[cols]) in float64, chunked.

    The difference of the two original coordinates first (exact for float32 inputs), then
    the scaling: no overflow or underflow whatever the units. Relative error ≤ (d+6)u₆₄.
    """
    out = np.empty(rows.shape[0])
    step = max(1, _DIRECT_CHUNK_ELEMENTS // max(1, q64.shape[1]))
    with np.errstate(over="ignore"):  # far pairs may overflow to inf: K = 0 there
        for s in range(0, rows.shape[0], step):
            diff = q64[rows[s : s + step]] - points[cols[s : s + step]].astype(np.float64)
            diff *= inv_support
            out[s : s + step] = np.einsum("ij,ij->i", diff, diff)
    return out


def _histogram_add(hist: np.ndarray, rows: np.ndarray, u2: np.ndarray, w: np.ndarray | None, plan: _Plan,
                   g: int, hist_md: np.ndarray | None = None, wk: np.ndarray | None = None,
                   dist: np.ndarray | None = None) -> None:
    """Add ``w/w_max`` of each entry with ``u² ≤ R²`` to its bin (same formula as the compiled route),
    and to ``hist_md`` its ``w·K`` and ``w·K·r⁺`` (``dist``: the upper-bounded distances, units of S)."""
    n, _, B = hist.shape
    inside = np.flatnonzero(u2 <= plan.radius_sq)
    b = np.minimum((u2[inside] * (B / plan.radius_sq)).astype(np.intp), B - 1)
    mass = None if w is None else w[inside] * plan.inv_weight_max
    if mass is None and plan.inv_weight_max != 1.0:
        mass = np.full(inside.shape[0], plan.inv_weight_max)
    flat = rows[inside] * B + b
    hist[:, g] += np.bincount(flat, weights=mass, minlength=n * B).reshape(n, B)
    if hist_md is not None:
        k = wk[inside]
        hist_md[:, g, :, 0] += np.bincount(flat, weights=k, minlength=n * B).reshape(n, B)
        hist_md[:, g, :, 1] += np.bincount(flat, weights=k * dist[inside], minlength=n * B).reshape(n, B)
        if hist_md.shape[3] > 2:  # the points themselves (weighted data)
            hist_md[:, g, :, 2] += np.bincount(flat, minlength=n * B).reshape(n, B)


class _Accumulator:
    """Per-block running sums (float64) for ``rows`` query rows; distances in units of S."""

    def __init__(self, n_rows: int, n_bandwidths: int, n_classes: int, need_dist: bool, need_tail: bool,
                 hist_bins: int = 0, n_moments: int = 0, count_points: bool = False):
        self.n_rows = n_rows
        # Per slot distance moments (the ranking pass of bandwidth="auto", :func:`_moments_of`).
        self.mom = np.zeros((n_rows, n_bandwidths, n_moments)) if n_moments else None
        self.n_classes = n_classes
        self.class_sums = np.zeros((n_rows, n_bandwidths, n_classes))
        self.sq_sum = np.zeros((n_rows, n_bandwidths))
        self.dist_sum = np.zeros((n_rows, n_bandwidths)) if need_dist else None
        self.tail_mass = np.zeros((n_rows, n_bandwidths)) if need_tail else None
        self.hist = np.zeros((n_rows, n_bandwidths, hist_bins)) if hist_bins else None
        # Per bin Σ w·K and Σ w·K·r⁺ (the split histogram form of the Chernoff bound).
        # (and, with sample weights, the number of points: the weighted split form's count).
        self.hist_md = np.zeros((n_rows, n_bandwidths, hist_bins, 3 if count_points else 2)) if hist_bins else None
        self.row_err = np.zeros(n_rows)  # bound on |δ̃ − δ| of the GEMM entries, per row
        self.select = np.full(n_rows, -np.inf)  # keep entries with t̃ ≥ select (tile dtype)
        self.redo = np.full(n_rows, -np.inf)  # recompute entries with t̃ < redo directly
        self.q64: np.ndarray | None = None  # the block's queries, float64
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.d2: list[np.ndarray] = []
        self.pending = 0

    def add_entries(self, rows: np.ndarray, cols: np.ndarray, d2: np.ndarray, plan: _Plan) -> None:
        """Queue entries (query row, training column, δ = d²/S²) for the next flush."""
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
        delta = np.concatenate(self.d2)
        self.rows, self.cols, self.d2, self.pending = [], [], [], 0
        lay = plan.layout
        if self.mom is not None:
            self._flush_moments(rows, cols, delta, plan)
            return
        n, C = self.n_rows, self.n_classes
        flat = rows * C + lay.labels[cols]
        w = None if lay.weights is None else lay.weights[cols]
        dist = None
        for g in range(len(plan.bandwidths)):
            u2 = delta * plan.scales[g]
            wk = np.asarray(plan.kernel.from_squared(u2), dtype=np.float64)
            if w is not None:
                wk = wk * w
            self.class_sums[:, g] += np.bincount(flat, weights=wk, minlength=n * C).reshape(n, C)
            self.sq_sum[:, g] += np.bincount(rows, weights=wk * wk, minlength=n)
            if self.dist_sum is not None or self.tail_mass is not None or self.hist is not None:
                if dist is None:
                    dist = np.sqrt(delta * plan.direct_factor + self.row_err[rows])  # upper bound, units of S
            if self.hist is not None:
                _histogram_add(self.hist, rows, u2, w, plan, g, self.hist_md, wk, dist)
            if self.dist_sum is not None or self.tail_mass is not None:
                pos = np.flatnonzero(wk)  # the square root only where K > 0 matters
                if self.dist_sum is not None:
                    self.dist_sum[:, g] += np.bincount(rows[pos], weights=wk[pos] * dist[pos], minlength=n)
                if self.tail_mass is not None:
                    far = pos[dist[pos] > plan.tail_cut[g]]
                    self.tail_mass[:, g] += np.bincount(rows[far], weights=wk[far], minlength=n)

    def _flush_moments(self, rows: np.ndarray, cols: np.ndarray, delta: np.ndarray, plan: _Plan) -> None:
        """Numpy route of :func:`._fused.tile_moments`: per slot ``Σ w²δ^a``, ``Σ w r δ^a``, ``Σ w δ^a``."""
        G = plan.thresholds.shape[0] - 1
        err = self.row_err[rows]
        # As in tile_moments: entries the product cannot place among narrow bandwidths, directly.
        narrow = np.searchsorted(plan.thresholds[:G], _MOMENT_RESOLVE * self.row_err, side="left")
        cut = np.where(narrow > 0, plan.thresholds[np.maximum(narrow - 1, 0)] + self.row_err, -1.0)[rows]
        low = np.flatnonzero(delta <= cut)
        if low.size:
            delta[low] = _direct_delta(self.q64, rows[low], plan.layout.points, cols[low], 1.0 / plan.support)
            err[low] = 0.0  # a direct distance: relative error only (direct_factor)
        slot = np.searchsorted(plan.thresholds, delta, side="left")  # first j with δ ≤ θ_j (G: none)
        keep = np.flatnonzero(slot < G)
        rows, delta, slot, err = rows[keep], delta[keep], slot[keep], err[keep]
        w = None if plan.layout.weights is None else plan.layout.weights[cols[keep]]
        dist = np.sqrt(delta * plan.direct_factor + err)
        flat = rows * G + slot
        size = self.n_rows * G
        m = plan.moment_degree
        power = np.ones_like(delta)
        for a in range(2 * m + 1):
            self.mom[:, :, a] += np.bincount(flat, weights=power if w is None else w * w * power,
                                             minlength=size).reshape(self.n_rows, G)
            if a <= m:
                self.mom[:, :, 2 * m + 1 + a] += np.bincount(
                    flat, weights=dist * power if w is None else w * dist * power, minlength=size
                ).reshape(self.n_rows, G)
                if w is not None:
                    self.mom[:, :, 3 * m + 2 + a] += np.bincount(flat, weights=w * power, minlength=size).reshape(
                        self.n_rows, G)
            power = power * delta

    def add_fused(self, t: np.ndarray, col: slice | np.ndarray, plan: _Plan) -> None:
        """Compiled route: every sum of one tile ``t̃ = 1 − d̃²/S²`` in one pass."""
        spec = plan.fused
        col_ids = np.arange(col.start, col.stop, dtype=np.intp) if isinstance(col, slice) else col
        if self.mom is not None:
            spec.tile_moments(
                t, self.select.astype(t.dtype), self.redo, col_ids, spec.weights, plan.layout.points, self.q64,
                1.0 / plan.support, plan.direct_factor, self.row_err, plan.thresholds, plan.slot_table,
                plan.inv_bucket, plan.moment_degree, self.mom, _MOMENT_RESOLVE,
            )
            return
        spec.tile_sums(
            t, self.select.astype(t.dtype), self.redo, col_ids, spec.labels, spec.weights,
            plan.layout.points, self.q64, 1.0 / plan.support, plan.direct_factor, self.row_err,
            plan.scales, plan.g_order, plan.tail_cut, spec.code, spec.radius_sq, plan.inv_weight_max,
            self.class_sums, self.sq_sum,
            _NO_SUM if self.dist_sum is None else self.dist_sum,
            _NO_SUM if self.tail_mass is None else self.tail_mass,
            _NO_HIST if self.hist is None else self.hist,
            _NO_HIST_MD if self.hist_md is None else self.hist_md,
        )

    def add_dense(self, d2: np.ndarray, col: slice | np.ndarray, plan: _Plan) -> None:
        """Dense route for one tile of ``δ = d²/S²`` (float64; entries beyond the support are > 1)."""
        lay = plan.layout
        # Unweighted float64 indicator: weights stay float64, as in the other routes.
        onehot = np.zeros((d2.shape[1], self.n_classes))
        onehot[np.arange(d2.shape[1]), lay.labels[col]] = 1.0
        w = None if lay.weights is None else lay.weights[col]
        dist = None
        if self.dist_sum is not None or self.tail_mass is not None or self.hist is not None:
            dist = np.sqrt(d2 * plan.direct_factor + self.row_err[:, None])
        rows = None
        for g in range(len(plan.bandwidths)):
            u2 = d2 * plan.scales[g]
            k = np.asarray(plan.kernel.from_squared(u2), dtype=np.float64)
            if w is not None:
                k *= w
            self.class_sums[:, g] += k @ onehot
            self.sq_sum[:, g] += np.einsum("ij,ij->i", k, k)
            if self.dist_sum is not None:  # only where K > 0: a far pair's distance may be inf
                self.dist_sum[:, g] += np.einsum("ij,ij->i", k, np.where(k > 0.0, dist, 0.0))
            if self.tail_mass is not None:
                self.tail_mass[:, g] += np.where(dist > plan.tail_cut[g], k, 0.0).sum(axis=1)
            if self.hist is not None:
                if rows is None:
                    rows = np.repeat(np.arange(d2.shape[0]), d2.shape[1])
                wf = None if w is None else np.broadcast_to(w, d2.shape).ravel()
                _histogram_add(self.hist, rows, u2.ravel(), wf, plan, g, self.hist_md, k.ravel(), dist.ravel())


def _block_product(Q: np.ndarray, plan: _Plan, dtype: np.dtype) -> tuple[np.ndarray | None, np.ndarray]:
    """The query side ``[2ρ²y'', 1 − ρ²‖y''‖², −ρ²]`` in ``dtype`` and its error bound per row
    (None and inf when it cannot be represented)."""
    lay = plan.layout
    with np.errstate(over="ignore", invalid="ignore"):  # a far query: inf here, recomputed directly
        qs = (Q.astype(np.float64) - lay.center) / lay.scale
        q_norm = np.sqrt(np.einsum("ij,ij->i", qs, qs))
        A64 = np.empty((Q.shape[0], Q.shape[1] + 2))
        A64[:, :-2] = qs * (2.0 * plan.rho_sq)
        A64[:, -2] = 1.0 - plan.rho_sq * q_norm**2
        A64[:, -1] = -plan.rho_sq
        A = A64.astype(dtype, copy=False)
    unit = float(np.finfo(dtype).eps) / 2.0
    err = _t_error(q_norm, lay.max_norm, plan.rho_sq, Q.shape[1], unit)
    if not np.all(np.isfinite(A)):
        return None, np.full(Q.shape[0], np.inf)
    return A, err


def _lower_in(dtype: np.dtype, x: np.ndarray) -> np.ndarray:
    """``x`` rounded down into ``dtype``: a selection ``t ≥ x`` in that dtype keeps every entry it should."""
    y = x.astype(dtype)
    return np.where(y.astype(np.float64) > x, np.nextafter(y, dtype.type(-np.inf)), y)


def _block_sums(Q: np.ndarray, cols: np.ndarray | None, plan: _Plan) -> _Accumulator:
    """Kernel sums of the query rows ``Q`` against the training columns ``cols`` (None: all)."""
    lay = plan.layout
    n_rows = Q.shape[0]
    n_cols = lay.augmented.shape[0] if cols is None else cols.shape[0]
    acc = _Accumulator(n_rows, len(plan.bandwidths), lay.onehot.shape[1] if plan.moment_degree < 0 else 0, plan.need_dist,
                       plan.tail_radius is not None, plan.hist_bins, _n_moments(plan.moment_degree, lay.weights),
                       count_points=lay.weights is not None)
    if n_cols == 0:
        return acc
    acc.q64 = np.ascontiguousarray(Q, dtype=np.float64)
    # Choose the product's precision for this block from the rigorous error bound.
    dtype = plan.dtype
    A, err = _block_product(Q, plan, dtype)
    if A is None or err.max() > _MAX_T_ERROR:
        if dtype != np.float64:
            dtype = np.dtype(np.float64)
            A, err = _block_product(Q, plan, dtype)
    augmented = lay.augmented if dtype == plan.dtype else lay.augmented64()
    direct = A is None or err.max() > _MAX_T_ERROR
    d_feat = Q.shape[1]
    if direct:
        # Distances recomputed from the coordinates; the product (when it exists) only rules out.
        acc.row_err = np.full(n_rows, 2.0 * (d_feat + 6) * _U64)
        acc.redo = np.full(n_rows, np.inf)
        select = -err if plan.sparse and A is not None else np.full(n_rows, -np.inf)
    else:
        acc.row_err = err
        acc.redo = err if plan.edge else np.full(n_rows, -np.inf)  # only compact kernels have an edge
        select = -err if plan.sparse else np.full(n_rows, -np.inf)
    acc.select = _lower_in(dtype, select)
    width = max(1, min(n_cols, plan.tile_elements // n_rows))
    tile_buf = np.empty(n_rows * width, dtype=dtype)
    mask_buf = np.empty(n_rows * width, dtype=bool) if plan.fused is None else None
    gather_buf = None if cols is None else np.empty((width, augmented.shape[1]), dtype=dtype)
    for j0 in range(0, n_cols, width):
        j1 = min(j0 + width, n_cols)
        w = j1 - j0
        if cols is None:
            B = augmented[j0:j1]
            col_index: slice | np.ndarray = slice(j0, j1)
        else:
            col_index = cols[j0:j1]
            B = np.take(augmented, col_index, axis=0, out=gather_buf[:w])
        t = tile_buf[: n_rows * w].reshape(n_rows, w)
        if A is None:
            t.fill(0.0)  # no product: every entry is recomputed
        else:
            np.matmul(A, B.T, out=t)
        if plan.fused is not None:
            acc.add_fused(t, col_index, plan)
            continue
        cglob_of = (lambda c: c + j0) if cols is None else (lambda c: cols[j0 + c])
        mask = mask_buf[: n_rows * w].reshape(n_rows, w)
        np.greater_equal(t, acc.select[:, None], out=mask)
        count = int(np.count_nonzero(mask))
        if count == 0:
            continue
        if plan.sparse and (count <= _DENSE_SHARE * t.size or acc.mom is not None):
            flat = np.flatnonzero(mask)
            r, c = np.divmod(flat, w)
            tv = t.ravel()[flat].astype(np.float64)
            delta = np.maximum(1.0 - tv, 0.0)
            cglob = cglob_of(c)
            redo = np.flatnonzero(tv < acc.redo[r])
            if redo.size:
                delta[redo] = _direct_delta(acc.q64, r[redo], lay.points, cglob[redo], 1.0 / plan.support)
            acc.add_entries(r, cglob, delta, plan)
            continue
        # Dense route: δ = 1 − t̃ in float64, the ambiguous entries recomputed, the rest set beyond reach.
        t64 = t.astype(np.float64)
        delta = np.maximum(1.0 - t64, 0.0)
        redo_mask = mask & (t64 < acc.redo[:, None])
        if redo_mask.any():
            r, c = np.nonzero(redo_mask)
            delta[r, c] = _direct_delta(acc.q64, r, lay.points, cglob_of(c), 1.0 / plan.support)
        if plan.sparse:
            delta[~mask] = 2.0  # ruled out by the bound (δ > 1): K = 0, outside every histogram bin
        acc.add_dense(delta, col_index, plan)
    acc.flush(plan)
    return acc


def _distance_sum_scale(support: float, n_points: int) -> float:
    """Back from units of ``S`` to the input's, with a float64 sum over ``n_points`` terms rounded up."""
    return support * (1.0 + (n_points + 8) * _U64)


def _store(out: KernelSums, rows: slice | np.ndarray, acc: _Accumulator, plan: _Plan) -> None:
    """Write one block's sums back in the input's units (distances: S; weights: ``weight_unit``)."""
    unit = plan.layout.weight_unit
    # Exact (a power of two) unless the true sum is not representable: then inf or 0, never NaN.
    with np.errstate(over="ignore", under="ignore"):
        out.class_sums[rows] = acc.class_sums * unit
        out.sq_sum[rows] = square_sum_upper(acc.sq_sum, plan.layout.augmented.shape[0]) * unit * unit
        # Back to input units, and the float64 summation's rounding covered: an upper bound.
        up = _distance_sum_scale(plan.support, plan.layout.augmented.shape[0])
        if out.dist_sum is not None:
            out.dist_sum[rows] = acc.dist_sum * up * unit
        if out.tail_mass is not None:
            out.tail_mass[rows] = acc.tail_mass * unit
        if out.histogram is not None:
            out.histogram[rows] = acc.hist
            out.hist_mass[rows] = acc.hist_md[..., 0] * unit
            out.hist_dist[rows] = acc.hist_md[..., 1] * up * unit
            if out.hist_count is not None:
                out.hist_count[rows] = acc.hist_md[..., 2]
    out.d2_error_rel[rows] = acc.row_err
    if acc.mom is not None:
        out.moments[rows] = acc.mom


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
        Also compute ``dist_sum`` (an upper bound of ``Σ w K d``, see the module docstring).
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
    histogram_bins : int, default=0
        ``B > 0`` also fills ``histogram`` (n, G, B): per query and bandwidth, ``Σ w_i/w_max``
        over the points whose ``u² = d²/λ²`` (the value their kernel value came from) falls in
        each of ``B`` equal bins of ``[0, R²]`` (``hist_edges``). Compact kernels only.

    Returns
    -------
    KernelSums
        With ``d2_error_rel``/``support`` (see :attr:`KernelSums.d2_error`) and ``weight_max``.

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
    histogram_bins: int, moment_degree: int = -1,
) -> KernelSums:
    """:func:`dense_kernel_sums`, or with ``moment_degree ≥ 0`` the per-slot moments of :func:`dense_moment_sums`."""
    n_q = Xq.shape[0]
    bandwidths = np.asarray(bandwidths, dtype=np.float64)
    histogram_bins = _check_histogram_bins(histogram_bins, kernel)
    compact = kernel.compact and tail_radius is None
    moments = moment_degree >= 0
    out = KernelSums.empty(n_q, len(bandwidths), 0 if moments else train.n_classes, need_dist,
                           tail_radius is not None, histogram_bins)
    if moments:
        out.moments = np.zeros((n_q, len(bandwidths), _n_moments(moment_degree, train.weights)))
    out.weight_max = train.weight_max
    out.uniform_weights = train.weights is None
    # Every sum adds at most n_train non-negative float64 terms, in whatever order the tiles,
    # bincount, BLAS or the compiled pass take: within 1 ± γ_n of the exact sum of the terms.
    out.sum_error = summation_error(train.X.shape[0])
    radius_sq = float(kernel.radius) ** 2 if kernel.compact else math.inf
    if histogram_bins:
        out.hist_edges = np.linspace(0.0, radius_sq, histogram_bins + 1)
        if train.weights is not None:
            out.hist_count = np.zeros((n_q, len(bandwidths), histogram_bins))
            out.weight_min = float(train.weights.min()) if train.weights.size else 0.0
    support, scales, inv_support = _support_scales(kernel, bandwidths)
    out.support = support
    out.d2_error_rel = np.zeros(n_q)
    if n_q == 0:
        return out
    if prune is None:
        prune = Xq.shape[1] <= _AUTO_PRUNE_MAX_FEATURES
    lay = train.layout(prune=bool(prune and compact))
    n_threads = _n_threads(n_jobs)
    tile_elements = _dense_tile_elements(train.X.dtype, working_memory, n_threads)
    plan = _dense_plan(
        lay, kernel, bandwidths, support, scales, inv_support, compact=compact, need_dist=need_dist,
        tail_radius=tail_radius, histogram_bins=histogram_bins, radius_sq=radius_sq,
        weight_max=out.weight_max, n_features=Xq.shape[1], tile_elements=tile_elements, dtype=train.X.dtype,
        moment_degree=moment_degree,
    )
    n_rows = _query_block_rows(n_q, n_threads, tile_elements, pruned=lay.balls is not None and compact)
    tasks = _dense_tasks(Xq, lay, n_rows, support, compact, train.X.dtype)

    def run(task: tuple[slice | np.ndarray, np.ndarray | None]) -> None:
        rows, cols = task
        _store(out, rows, _block_sums(Xq[rows], cols, plan), plan)

    if n_threads > 1 and len(tasks) > 1:
        # Threads over query blocks, one BLAS thread each: no oversubscription.
        with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(n_threads) as pool:
            list(pool.map(run, tasks))
    else:
        for task in tasks:
            run(task)
    return out


@dataclass
class MomentSums:
    """κ, ``Σ (wK)²`` and ``Σ wK·d`` per query and bandwidth from distance moments (for ranking).

    Computed in expanded polynomial form, so they carry rounding beyond the engine's error
    model: fit to *choose* a bandwidth (a function of the inputs only), never to bound.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.kernels import get_kernel
    >>> train = TrainingSet.build(np.array([[0.0], [0.5], [3.0]]), np.array([0, 1, 1]), 2, None)
    >>> m = dense_moment_sums(np.array([[0.0]]), train, get_kernel("epanechnikov"), np.array([1.0, 4.0]))
    >>> m.kappa.round(4).tolist()
    [[1.75, 2.4219]]
    """

    kappa: np.ndarray  # (n, G)
    sq_sum: np.ndarray  # (n, G)
    dist_sum: np.ndarray  # (n, G), ≈ Σ w K ‖y − y_i‖ (distances rounded up as in dist_sum)


def _n_moments(degree: int, weights: np.ndarray | None) -> int:
    """Moments per slot for a kernel of ``degree`` in u² (0 for the ordinary sums)."""
    if degree < 0:
        return 0
    return (2 * degree + 1) + (degree + 1) + (degree + 1 if weights is not None else 0)


def dense_moment_sums(
    Xq: np.ndarray,
    train: TrainingSet,
    kernel: Kernel,
    bandwidths: np.ndarray,
    *,
    working_memory: float | None = None,
    n_jobs: int | None = None,
    prune: bool | None = None,
) -> MomentSums:
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
    MomentSums
        Each (n_queries, n_bandwidths), clipped at 0. Where one of the three expanded sums is
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
    coef = None if kernel.polynomial is None else np.asarray(kernel.polynomial, dtype=np.float64)
    if coef is None or not kernel.compact:
        raise ValueError(
            f"dense_moment_sums needs a compact kernel that is a polynomial in u² (kernel.polynomial); "
            f"{kernel.name!r} is not one: use dense_kernel_sums."
        )
    bandwidths = np.asarray(bandwidths, dtype=np.float64)
    degree = coef.shape[0] - 1
    n_q, n_bw = Xq.shape[0], bandwidths.shape[0]
    kappa, sq_sum, dist_sum = (np.zeros((n_q, n_bw)) for _ in range(3))
    # Queries in chunks: the per-slot moments (and their prefix sums) of a chunk fit the working
    # memory, so memory does not grow with the number of queries (whole query blocks per thread).
    budget = (get_config()["working_memory"] if working_memory is None else working_memory) * 2**20
    per_query = 4 * 8 * max(n_bw, 1) * _n_moments(degree, train.weights)
    step = max(_QUERY_BLOCK * _n_threads(n_jobs), int(budget // per_query) // _QUERY_BLOCK * _QUERY_BLOCK)
    for s in range(0, n_q, step):
        rows = slice(s, min(s + step, n_q))
        moments = _dense_pass(Xq[rows], train, kernel, bandwidths, need_dist=False, tail_radius=None,
                              working_memory=working_memory, n_jobs=n_jobs, prune=prune, histogram_bins=0,
                              moment_degree=degree).moments
        kappa[rows], sq_sum[rows], dist_sum[rows] = _moments_to_sums(moments, coef, kernel, bandwidths, train)
    return MomentSums(kappa=kappa, sq_sum=sq_sum, dist_sum=dist_sum)


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


def _dense_tile_elements(dtype: np.dtype, working_memory: float | None, n_threads: int) -> int:
    """Elements per distance tile so each thread's temporaries fit its share of the memory budget."""
    budget = (get_config()["working_memory"] if working_memory is None else working_memory) * 2**20
    per_thread = budget / n_threads
    # Tile elements and extracted entries share the thread's budget: a tile
    # can add up to _DENSE_SHARE of its size in entries before a flush.
    per_elem = _tile_bytes_per_element(dtype.itemsize) + 2 * _DENSE_SHARE * _BYTES_PER_ENTRY
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
        flush_entries=max(1, int(_DENSE_SHARE * tile_elements)),
        dtype=dtype,
        fused=_fused_spec(kernel, lay),
        moment_degree=moment_degree,
        **(_slot_table(radius_sq / scales[g_order]) if moment_degree >= 0 else {}),
    )


def _slot_table(thresholds: np.ndarray) -> dict:
    """Plan fields of the moments pass: ``thresholds`` (then inf) and a table of buckets of ``δ``,
    each holding the number of thresholds below its left edge — fine enough (up to 2¹⁶ buckets)
    that a bucket rarely holds a threshold, so finding an entry's slot costs one lookup."""
    top = float(thresholds[-1])
    gaps = np.diff(np.concatenate([[0.0], thresholds]))
    gap = float(gaps[gaps > 0].min()) if np.any(gaps > 0) else top
    n_table = int(min(1 << 16, max(2, math.ceil(2.0 * top / gap) + 2)))
    inv_bucket = (n_table - 1) / top
    # Each bucket's left edge lowered by 4 ulps: an entry whose fl(δ·inv_bucket) reaches bucket b has
    # δ ≥ b/inv_bucket·(1 − 2u), so no threshold counted below the edge lies above δ.
    edges = np.arange(n_table) / inv_bucket * (1.0 - 4.0 * _U64)
    return {
        "thresholds": np.append(thresholds, np.inf),
        "slot_table": np.searchsorted(thresholds, edges, side="left").astype(np.intp),
        "inv_bucket": float(inv_bucket),
    }


def _dense_tasks(
    Xq: np.ndarray, lay: _Layout, n_rows: int, support: float, compact: bool, dtype: np.dtype
) -> list[tuple[slice | np.ndarray, np.ndarray | None]]:
    """Query blocks as ``(rows, training columns or None)``; ball-coherent blocks when pruning."""
    if lay.balls is not None and compact:
        eps = float(np.finfo(dtype).eps)
        order, blocks = _coherent_blocks(Xq, lay, n_rows, support, eps)
        return [(order[s:e], cols) for s, e, cols in blocks]
    return [(slice(s, min(s + n_rows, Xq.shape[0])), None) for s in range(0, Xq.shape[0], n_rows)]


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
            slack = _PRUNE_SLACK * (support + float(np.sqrt(sq.max())) + 1.0) + 16.0 * eps * math.sqrt(lay.max_sqnorm + 1.0)
            active = np.flatnonzero(~(lower > support + slack))  # NaN/inf: keep
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
    queries: np.ndarray | None = None,
    keep_points: bool = False,
) -> KernelSums:
    """Kernel sums over each query's k nearest neighbours (the *localized* NWC).

    Parameters
    ----------
    dist, idx : ndarray of shape (n_queries, k)
        The index's neighbour distances and training indices.
    train : TrainingSet
    kernel : Kernel
    bandwidths : ndarray of shape (n_bandwidths,)
    need_dist : bool
        Also compute ``dist_sum`` (an upper bound of ``Σ w K d``).
    tail_radius : float or None, default=None
        Also compute ``tail_mass`` beyond ``tail_radius·λ``.
    queries : ndarray of shape (n_queries, n_features) or None, default=None
        When given, the distances are recomputed directly in float64 from the
        coordinates (:func:`neighbor_distances`) instead of trusting ``dist``.
    keep_points : bool, default=False
        Also return ``point_mass`` (n, G, k) ``= w_i K_i`` and ``point_dist`` (n, k), for the
        exact per-point Chernoff form.

    Returns
    -------
    KernelSums

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.kernels import get_kernel
    >>> X = np.array([[0.0], [0.5], [3.0]]); train = TrainingSet.build(X, np.array([0, 1, 1]), 2, None)
    >>> s = neighbor_kernel_sums(None, np.array([[0, 1]]), train, get_kernel("epanechnikov"), np.array([1.0]),
    ...                          need_dist=True, queries=np.array([[0.0]]), keep_points=True)
    >>> s.class_sums[0, 0].tolist(), s.point_dist.tolist()
    ([1.0, 0.75], [[0.0, 0.5]])
    """
    idx = np.asarray(idx)
    n_q, k_nn = idx.shape
    n_classes = train.n_classes
    bandwidths = np.asarray(bandwidths, dtype=np.float64)
    out = KernelSums.empty(n_q, len(bandwidths), n_classes, need_dist, tail_radius is not None)
    out.weight_max = train.weight_max
    out.sum_error = summation_error(k_nn)  # each sum adds the k neighbours' w_i K_i in float64
    d_feat = train.X.shape[1]
    if queries is not None:
        dist = neighbor_distances(queries, train.X, idx)
        rel = direct_distance_error(d_feat)
    else:
        dist = np.asarray(dist, dtype=np.float64)
        rel = 0.0  # the index's own distances: no bound known here
    lam_max = float(bandwidths.max()) if bandwidths.size else 1.0
    support = kernel.radius * lam_max if kernel.compact else lam_max
    out.support = support
    # |d̃² − d²| ≤ ((1 + rel)² − 1)·d̃² per row, in units of S², at the row's farthest neighbour.
    with np.errstate(over="ignore", invalid="ignore"):
        far = np.max(dist, axis=1, initial=0.0) / support
        out.d2_error_rel = direct_d2_error_factor(d_feat) * far * far if rel else np.zeros(n_q)
    with np.errstate(over="ignore"):
        dist_up = dist * (1.0 + rel) if rel else dist  # never below the true distance
    beyond = not np.all(np.isfinite(dist_up))  # a query beyond float64's range of the data: d = +inf
    labels = train.labels[idx]
    unit = train.weight_unit  # the same units as the dense path: no (w K)² overflows
    weights = None if train.weights is None else train.weights[idx].astype(np.float64) / unit
    flat = (np.arange(n_q)[:, None] * n_classes + labels).ravel()
    if keep_points:
        out.point_mass = np.empty((n_q, len(bandwidths), k_nn))
        out.point_dist = dist
    for g, lam in enumerate(bandwidths):
        with np.errstate(over="ignore"):  # d/λ = +inf far away: K = 0
            wk = np.asarray(kernel(dist / float(lam)), dtype=np.float64)
        if weights is not None:
            wk = wk * weights
        if keep_points:
            out.point_mass[:, g] = wk
        class_sums = np.bincount(flat, weights=wk.ravel(), minlength=n_q * n_classes).reshape(n_q, n_classes)
        cut = None if tail_radius is None else tail_radius * float(lam)
        # K(∞) = 0: an infinitely far neighbour adds nothing to Σ w K d (not 0·∞ = NaN)
        _reduce_weights(out, slice(None), g, wk, class_sums, np.where(wk > 0, dist_up, 0.0) if beyond else dist_up, cut)
    if out.dist_sum is not None and rel:
        out.dist_sum *= 1.0 + (k_nn + 4) * _U64  # the summation's rounding: still an upper bound
    if unit != 1.0:  # back to the input's units (exact, or inf/0 where not representable)
        with np.errstate(over="ignore", under="ignore"):
            for part in (out.class_sums, out.dist_sum, out.tail_mass, out.point_mass):
                if part is not None:
                    part *= unit
            out.sq_sum *= unit
            out.sq_sum *= unit  # in two steps: unit² alone may overflow
    return out


def _n_threads(n_jobs: int | None) -> int:
    if n_jobs is None:
        return 1
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + n_jobs)
    return max(1, int(n_jobs))
