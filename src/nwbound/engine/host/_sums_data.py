"""The CPU engine's data: the training set in the layout the kernel sums read, and the sums.

:class:`TrainingSet` holds the fitted training points and builds, once and cached, the dense
path's :class:`_Layout` (centred at the bounding-box midpoint, scaled by a power of two, in the
augmented form ``[x'', 1, ‖x''‖²]``; with ``prune`` the k-means ball partition too, or the rows sorted along
their principal axis for slab pruning).
Every engine pass returns the one :class:`~nwbound.engine.KernelStatistics` (bound form, NumPy
float64, per query and bandwidth): :func:`zero_statistics` allocates it, the pass fills its
arrays in place, :func:`u2_error_rows` turns the pass's distance-error bound into ``u2_error``;
:func:`gathered_statistics` builds it from a device pass's per-bandwidth sums in one call.
:func:`ranking_sample_rows` picks the rows of ``bandwidth="auto"``'s ranking sample.
The passes that fill the sums live in :mod:`._sums` (dense), :mod:`._tiles` (one block's
reduction) and :mod:`._neighbor_sums` (localized).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from ..._numerics import compose_errors
from .._statistics import KernelStatistics
from ...kernels import Kernel

__all__ = ["TrainingSet", "gathered_statistics", "ranking_sample_rows", "u2_error_rows", "zero_statistics"]

# Pruning: training points per ball, and fewer points than this are never pruned.
_BALL_SIZE = 128
_MIN_PRUNE_POINTS = 8192
# Power iterations for the principal axis of the slab layout: the axis only decides what may be
# skipped (any unit vector keeps the sums exact), so a rough one is enough.
_AXIS_ITERATIONS = 16
# Training rows in the float32 filter's probe (:attr:`_Layout.probe`, read by ``_tiles._filter_rows``).
_FILTER_PROBE = 256


@dataclass(frozen=True)
class _Balls:
    """A partition of the (reordered) training rows into balls (scaled coordinates)."""

    centers: np.ndarray  # (k, d) float64, in centred and scaled coordinates
    center_sqnorm: np.ndarray  # (k,)
    radii: np.ndarray  # (k,) float64
    starts: np.ndarray  # (k + 1,) row ranges in the reordered layout


@dataclass(frozen=True)
class _Axis:
    """The layout's rows sorted along one direction (scaled coordinates), for slab pruning: every
    pair is at least ``|a·y'' − a·x''|`` apart, so a query block needs only a contiguous run of rows."""

    direction: np.ndarray  # (d,) float64, unit length up to rounding (the principal axis)
    proj: np.ndarray  # (n,) float64, non-decreasing: direction · x'' of the layout's rows


@dataclass(frozen=True)
class _Layout:
    """Training rows in the order and shape the dense path reads them."""

    center: np.ndarray  # (d,) float64 bounding-box midpoint, subtracted from every point
    scale: float  # s₀: a power of two ≥ every |x − c|; coordinates are divided by it (exactly)
    augmented: np.ndarray  # (n, d + 2) [x'', 1, ‖x''‖²], the training set's dtype
    points: np.ndarray  # (n, d) the original rows in layout order, for direct distances
    labels: np.ndarray  # (n,) in layout order
    weights: np.ndarray | None  # (n,) float64 in layout order, in units of ``weight_unit``
    onehot: np.ndarray  # (n, C) weighted one-hot, estimator dtype, layout order
    max_norm: float  # max ‖x''‖, for the error bound of the product
    balls: _Balls | None  # None: too small to prune
    weight_unit: float = 1.0
    axis: _Axis | None = None  # rows sorted along it (slab pruning); None: not sorted  # the training set's :attr:`TrainingSet.weight_unit`
    # (m, d + 2) float32: augmented rows of every ⌈n/_FILTER_PROBE⌉-th training row in the training set's
    # order (so the same in every layout of it): the probe that decides which rows take the float32 filter.
    probe: np.ndarray | None = None
    # The float64 copy of ``augmented`` for blocks whose float32 product is too coarse, and the float32
    # copy of a float64 one for a float32 product (:meth:`augmented_in`).
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def max_sqnorm(self) -> float:
        return self.max_norm**2

    def augmented64(self) -> np.ndarray:
        if self.augmented.dtype == np.float64:
            return self.augmented
        if "augmented64" not in self._cache:
            centred = (self.points.astype(np.float64) - self.center) / self.scale
            self._cache["augmented64"] = _augmented(centred, np.dtype(np.float64))[0]
        return self._cache["augmented64"]

    def augmented_in(self, dtype: np.dtype) -> np.ndarray:
        """The augmented rows in the product's ``dtype``: ``augmented`` itself, the float64 copy
        (:meth:`augmented64`), or (float64 rows, a float32 product) their rounding to float32, built
        once: each entry within float32's unit roundoff of the float64 one, which the product's
        error bound covers (``_tiles._t_error``).

        Examples
        --------
        >>> import numpy as np
        >>> train = TrainingSet.build(np.array([[0.0, 1.0], [2.0, 3.0]]), np.array([0, 1]), 2, None)
        >>> lay = train.layout(prune=False)
        >>> lay.augmented_in(np.dtype(np.float32)).dtype, lay.augmented_in(np.dtype(np.float64)) is lay.augmented
        (dtype('float32'), True)
        """
        dtype = np.dtype(dtype)
        if dtype == self.augmented.dtype:
            return self.augmented
        if dtype == np.float64:
            return self.augmented64()
        key = ("augmented", dtype.str)
        if key not in self._cache:
            self._cache[key] = self.augmented.astype(dtype)
        return self._cache[key]


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

    def layout(self, prune: bool, axis: bool = False, any_size: bool = False) -> _Layout:
        """The dense path's layout, cached: with the ball partition when ``prune``, else sorted along
        the principal axis when ``axis`` (slab pruning); either only from ``_MIN_PRUNE_POINTS`` rows,
        the sorted one at any size with ``any_size`` (the ranking's bounded pass: its pruning reach
        is narrower than the grid, so it pays on a small sample too).

        The sorted layout serves unpruned passes as well, so a training set keeps at most one
        unsorted-or-sorted copy: building the sorted one drops the plain one, and a plain request
        reuses the sorted one.

        Examples
        --------
        >>> import numpy as np
        >>> train = TrainingSet.build(np.zeros((3, 2)), np.array([0, 1, 1]), 2, None)
        >>> train.layout(prune=False, axis=True).axis is None  # too few rows: the plain layout
        True
        """
        big = self.X.shape[0] >= _MIN_PRUNE_POINTS
        sorted_ok = big or (any_size and axis and self.X.shape[0] > 0)
        key = "pruned" if prune and big else "axis" if (axis or "axis" in self._cache) and sorted_ok else "plain"
        if key not in self._cache:
            self._cache[key] = _build_layout(self, with_balls=(key == "pruned"), with_axis=(key == "axis"))
            if key == "axis":
                self._cache.pop("plain", None)
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


def zero_statistics(n: int, bandwidths: np.ndarray, n_classes: int, kernel: Kernel, *, need_dist: bool,
                    need_tail: bool, histogram_bins: int = 0, hist_edges: np.ndarray | None = None,
                    count_points: bool = False, **fields) -> KernelStatistics:
    """The bound-form :class:`~nwbound.engine.KernelStatistics` an engine pass fills in place: zero
    float64 arrays (n, G, …) for the sums asked for, ``u2_error`` a zero (n, G) array, ``bandwidth``
    the (1, G) grid the pass computes at (in the units the pass sees), and ``fields`` as given
    (``weight_max``, ``uniform_weights``, ``sum_error``, …).

    The dataclass is frozen, its arrays are not: the passes write into them block by block.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.kernels import get_kernel
    >>> st = zero_statistics(2, np.array([0.5, 1.0]), 3, get_kernel("epanechnikov"), need_dist=True,
    ...                      need_tail=False, histogram_bins=4, hist_edges=np.linspace(0.0, 1.0, 5))
    >>> st.class_sums.shape, st.histogram.shape, st.tail_mass is None, st.u2_error.shape
    ((2, 2, 3), (2, 2, 4), True, (2, 2))
    """
    bandwidths = np.asarray(bandwidths, dtype=np.float64).reshape(-1)
    G, B = bandwidths.shape[0], int(histogram_bins)

    def zeros(*shape: int) -> np.ndarray:
        return np.zeros((n, G) + shape)

    return KernelStatistics(
        class_sums=zeros(n_classes),
        sq_sum=zeros(),
        dist_sum=zeros() if need_dist else None,
        bandwidth=bandwidths[None, :],
        kernel=kernel,
        tail_mass=zeros() if need_tail else None,
        histogram=zeros(B) if B else None,
        hist_mass=zeros(B) if B else None,
        hist_dist=zeros(B) if B else None,
        hist_count=zeros(B) if B and count_points else None,
        hist_edges=hist_edges if B else None,
        u2_error=zeros(),
        **fields,
    )


def u2_error_rows(d2_error_rel: np.ndarray | float, support: float, bandwidths: np.ndarray, n: int) -> np.ndarray:
    """Bound on ``|ũ² − u²|`` (``u = d/λ``), shape (n, G), from a bound ``d2_error_rel`` on
    ``|d̃² − d²|/S²`` per row (or one float) and the support radius ``S`` of the widest bandwidth.

    Scale-free: ``S/λ`` is a ratio of lengths, so it never overflows where ``S²`` would.

    Examples
    --------
    >>> u2_error_rows(np.array([1e-8, 2e-8]), 2.0, np.array([1.0, 2.0]), 2).tolist()
    [[4e-08, 1e-08], [8e-08, 2e-08]]
    """
    ratio = (support / np.asarray(bandwidths, dtype=np.float64)) ** 2
    return np.broadcast_to(np.asarray(d2_error_rel, dtype=np.float64), (n,))[:, None] * ratio[None, :]


def gathered_statistics(n: int, parts: list, bandwidths: np.ndarray, n_classes: int, kernel: Kernel, *, unit: float,
                        need_dist: bool, d2_error_rel: np.ndarray | float, support: float, host_error: float,
                        histogram_bins: int = 0, hist_edges: np.ndarray | None = None, count_points: bool = False,
                        points: int = 0, **fields) -> KernelStatistics:
    """The bound-form statistics of a device pass, from its per-bandwidth sums: :func:`zero_statistics`,
    each part stored in the input's units, ``u2_error`` from ``d2_error_rel`` (:func:`u2_error_rows`)
    and ``sum_error`` each part's composed with the host's ``host_error``.

    Parameters
    ----------
    n : int
        The queries.
    parts : list of KernelStatistics
        One per bandwidth: the device form with ``G = 1`` as NumPy float64
        (:meth:`~nwbound.engine.KernelStatistics.to_numpy`), weights in units of ``unit``.
    bandwidths : ndarray of shape (G,)
    n_classes : int
    kernel : Kernel
    unit : float
        The training set's weight unit: the sums are multiplied back by it.
    need_dist : bool
    d2_error_rel : ndarray of shape (n,) or float
        The pass's bound on ``|d̃² − d²|/support²``.
    support : float
        The support radius of the widest bandwidth.
    host_error : float
        The relative rounding error of the host's own sums over the parts' (composed with each
        part's ``sum_error``).
    histogram_bins, hist_edges, count_points : as :func:`zero_statistics`
    points : int, default=0
        ``k > 0``: also ``point_mass`` (n, G, k) from the parts and ``point_dist`` (n, k), the last part's.
    **fields
        Passed to :func:`zero_statistics` (``weight_max``, ``uniform_weights``, ``weight_min``).

    Returns
    -------
    KernelStatistics

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.engine import KernelStatistics
    >>> from nwbound.kernels import get_kernel
    >>> part = KernelStatistics(class_sums=np.array([[[1.0, 0.5]]]), sq_sum=np.array([[1.25]]), dist_sum=None,
    ...                         bandwidth=np.array([[1.0]]), kernel=get_kernel("epanechnikov"), sum_error=1e-7)
    >>> st = gathered_statistics(1, [part], np.array([1.0]), 2, get_kernel("epanechnikov"), unit=2.0, need_dist=False,
    ...                          d2_error_rel=0.0, support=1.0, host_error=0.0, weight_max=1.0)
    >>> st.class_sums.tolist(), st.sq_sum.tolist(), st.sum_error >= 1e-7
    ([[[2.0, 1.0]]], [[5.0]], True)
    """
    out = zero_statistics(n, bandwidths, n_classes, kernel, need_dist=need_dist, need_tail=False,
                          histogram_bins=histogram_bins, hist_edges=hist_edges, count_points=count_points, **fields)
    point_dist = None
    if points:
        out = dataclasses.replace(out, point_mass=np.empty((n, out.bandwidth.shape[1], int(points))))
    with np.errstate(over="ignore", under="ignore"):  # back to the input's units: inf/0 where not representable
        for g, st in enumerate(parts):
            out.class_sums[:, g] = st.class_sums[:, 0] * unit
            out.sq_sum[:, g] = st.sq_sum[:, 0] * unit
            out.sq_sum[:, g] *= unit  # in two steps: unit² alone may overflow
            for name in ("dist_sum", "hist_mass", "hist_dist"):
                if getattr(out, name) is not None:
                    getattr(out, name)[:, g] = getattr(st, name)[:, 0] * unit
            if out.histogram is not None:  # Σ w_i/weight_max per bin, as the CPU engine
                out.histogram[:, g] = st.histogram[:, 0] * (unit / out.weight_max) if out.weight_max > 0 else 0.0
            if out.hist_count is not None:  # points, not weights: no unit
                out.hist_count[:, g] = st.hist_count[:, 0]
            if points:
                out.point_mass[:, g] = st.point_mass[:, 0] * unit
                point_dist = st.point_dist
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        out.u2_error[...] = u2_error_rows(d2_error_rel, support, bandwidths, n)
    sum_error = max([0.0] + [compose_errors(st.sum_error, host_error) for st in parts])
    return dataclasses.replace(out, sum_error=sum_error, **({} if point_dist is None else {"point_dist": point_dist}))


# ---------------------------------------------------------------------------------------------
# Layout and ball partition
# ---------------------------------------------------------------------------------------------
def _power_of_two_above(x: float) -> float:
    """The smallest power of two ≥ ``x`` (1 for ``x == 0``): dividing by it is exact."""
    if not x > 0:
        return 1.0
    mant, exp = math.frexp(x)
    return math.ldexp(1.0, exp - 1) if mant == 0.5 else math.ldexp(1.0, exp)


def _build_layout(train: TrainingSet, with_balls: bool, with_axis: bool = False) -> _Layout:
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
    probe = _augmented(centred[:: max(1, X.shape[0] // _FILTER_PROBE)], np.dtype(np.float32))[0]
    balls = axis = order = None
    if with_balls:
        order, balls = _ball_partition(centred)
        centred = centred[order]
    elif with_axis:
        order, axis = _axis_order(centred)
        centred = centred[order]
    augmented, sq = _augmented(centred, X.dtype)
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
        axis=axis,
        probe=probe,
    )


def _augmented(centred: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """``[x'', 1, ‖x''‖²]`` of centred and scaled float64 rows in ``dtype``, and ``‖x''‖²`` in float64."""
    sq = np.einsum("ij,ij->i", centred, centred)
    out = np.empty((centred.shape[0], centred.shape[1] + 2), dtype=dtype)
    out[:, :-2] = centred
    out[:, -2] = 1.0
    out[:, -1] = sq
    return out, sq


def _axis_order(centred: np.ndarray) -> tuple[np.ndarray, _Axis]:
    """The row order along the principal axis of ``centred`` (power iteration from the per-column
    spreads, deterministic) and that axis with the sorted projections."""
    n, d = centred.shape
    mean = centred.mean(axis=0)
    v = centred.max(axis=0, initial=0.0) - centred.min(axis=0, initial=0.0)  # the columns' ranges
    for _ in range(_AXIS_ITERATIONS):
        if not np.all(np.isfinite(v)) or not np.linalg.norm(v) > 0:
            break
        v = v / np.linalg.norm(v)
        w = centred @ v - mean @ v  # (X − mean)·v without a centred copy of X: memory stays n floats
        v = centred.T @ w - mean * w.sum()
    norm = np.linalg.norm(v)
    if not (np.all(np.isfinite(v)) and norm > 0):
        v, norm = np.eye(1, d).ravel(), 1.0  # no spread (or none measurable): any axis is exact
    v = v / norm
    proj = centred @ v
    order = np.argsort(proj, kind="stable")
    return order, _Axis(direction=v, proj=np.ascontiguousarray(proj[order]))


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

