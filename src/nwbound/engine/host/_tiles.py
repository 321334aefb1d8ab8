"""One block of the dense engine's reduction: its product, its tiles and their running sums.

:func:`._sums.dense_kernel_sums` plans a call and cuts the queries into blocks; :func:`_block_sums`
computes one block's distance product (:func:`_block_product`, in the precision its error bound
allows) in cache-sized tiles (see :mod:`._sums` for the arithmetic and its error bounds); for every tile
:class:`_Accumulator` adds the kernel sums — through the compiled pass of :mod:`._fused`
(:meth:`_Accumulator.add_fused`), the sparse extraction (:meth:`_Accumulator.add_entries`) or the
dense route (:meth:`_Accumulator.add_dense`) — and :func:`_store` writes a finished block back into
the call's :class:`~nwbound.engine.KernelStatistics` (:func:`~._sums_data.zero_statistics`) in the
input's units. :class:`_Plan` is what every block
of one call shares.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._numerics import square_sum_upper
from ...kernels import Kernel
from .._statistics import KernelStatistics
from ._sums_data import _Layout, u2_error_rows

__all__: list[str] = []

# Above this share of contributing entries a tile takes the dense route.
_DENSE_SHARE = 0.25
# Largest bound on |t̃ − t| (t = 1 − d²/S²) a block may keep: above it the block's
# product is redone in float64, then distances are recomputed directly. Kernel
# values are then evaluated within 2⁻⁸ (in u² units at the largest λ) of the truth.
_MAX_T_ERROR = 2.0**-8
# Entries per chunk of a direct distance recomputation (entries × features floats).
_DIRECT_CHUNK_ELEMENTS = 1 << 20
_U64 = 2.0**-53  # unit roundoff of float64
# The moments pass recomputes from the coordinates the entries that may lie inside a bandwidth
# whose δ threshold θ is below this many times the product's error bound on δ (u² off by > R²/16:
# the product cannot place them; finer resolution would recompute most float32 entries).
_MOMENT_RESOLVE = 2.0**4
# The float32 filter of float64 data (:func:`_block_sums`): a query row's float32 product only selects the
# entries that may lie inside the support (t̃ ≥ −e), and each of those gets its distance from the float64
# coordinates. A query row takes it when its float32 product selects at most _FILTER_MAX_SHARE of a probe
# of the training rows (:func:`_filter_rows`); otherwise its product is float64. Measured
# on the default's learned space (21 coordinates, one core): the float32 product saves about 0.55 ns a pair
# read, a direct distance costs about 9 ns, so the filter pays below about 6 % of the pairs read selected;
# pruning reads about half the pairs, the nearer half, hence 2 % of all (the final sums: about 0.4 %).
_FILTER_MAX_SHARE = 0.02
_F32 = np.dtype(np.float32)
_NO_SUM = np.zeros((0, 0))  # stands for a sum that is not wanted
_NO_HIST = np.zeros((0, 0, 0))
_NO_HIST_MD = np.zeros((0, 0, 0, 0))


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
    dtype: np.dtype  # the training set's: the product's unless a block takes the float32 filter
    f32_filter: bool = False  # float64 data, a compact kernel: query rows may take the float32 filter
    fused: _FusedSpec | None = None  # the compiled reduction, when it applies
    # Ranking pass of bandwidth="auto" (:func:`dense_moment_sums`): the kernel's degree in u²
    # (−1: the ordinary sums), the slot thresholds R²/scale by increasing λ (then inf) and
    # the bucket table that starts each entry's slot search (:func:`_slot_table`).
    moment_degree: int = -1
    thresholds: np.ndarray | None = None
    slot_table: np.ndarray | None = None
    inv_bucket: float = 0.0
    slot_steps: int = 0


@dataclass(frozen=True)
class _FusedSpec:
    """Arguments of :func:`._fused.tile_sums` that are the same for every tile."""

    tile_sums: object  # the compiled function
    tile_moments: object  # its per-slot moments variant
    code: int
    radius_sq: float
    labels: np.ndarray  # (n,) intp, layout order
    weights: np.ndarray  # (n,) float64 or (0,)


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
                plan.inv_bucket, plan.slot_steps, plan.moment_degree, self.mom, _MOMENT_RESOLVE,
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


def _distance_sum_scale(support: float, n_points: int) -> float:
    """Back from units of ``S`` to the input's, with a float64 sum over ``n_points`` terms rounded up."""
    return support * (1.0 + (n_points + 8) * _U64)


def _store(out: KernelStatistics, rows: slice | np.ndarray, acc: _Accumulator, plan: _Plan) -> None:
    """Write one block's sums into ``out``'s arrays in the input's units (distances: S; weights:
    ``weight_unit``), and its distance-error bound as ``u2_error``."""
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
    out.u2_error[rows] = u2_error_rows(acc.row_err, plan.support, plan.bandwidths, acc.n_rows)


def _n_moments(degree: int, weights: np.ndarray | None) -> int:
    """Moments per slot for a kernel of ``degree`` in u² (0 for the ordinary sums)."""
    if degree < 0:
        return 0
    return (2 * degree + 1) + (degree + 1) + (degree + 1 if weights is not None else 0)


def _block_product(Q: np.ndarray, plan: _Plan, dtype: np.dtype) -> tuple[np.ndarray | None, np.ndarray]:
    """The query side ``[2ρ²y'', 1 − ρ²‖y''‖², −ρ²]`` in ``dtype`` and its error bound per row
    (None and inf when it cannot be represented)."""
    A, err = _query_side(Q, plan, dtype)
    if not np.all(np.isfinite(A)):
        return None, np.full(Q.shape[0], np.inf)
    return A, err


def _query_side(Q: np.ndarray, plan: _Plan, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_block_product`'s query side and error bound, rows that cannot be represented included."""
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
    return A, _t_error(q_norm, lay.max_norm, plan.rho_sq, Q.shape[1], unit)


def _lower_in(dtype: np.dtype, x: np.ndarray) -> np.ndarray:
    """``x`` rounded down into ``dtype``: a selection ``t ≥ x`` in that dtype keeps every entry it should."""
    y = x.astype(dtype)
    return np.where(y.astype(np.float64) > x, np.nextafter(y, dtype.type(-np.inf)), y)


def _filter_rows(Q: np.ndarray, plan: _Plan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which query rows take the float32 filter (see ``_FILTER_MAX_SHARE``), with the float32 query side
    and its error bound: rows whose float32 product is representable, within ``_MAX_T_ERROR``, and selects
    (``t̃ ≥ −e``) at most ``_FILTER_MAX_SHARE`` of the layout's probe (about ``_FILTER_PROBE`` training rows
    spread over them, the same in every layout of a training set). Each row is decided from itself and
    the training set alone, so a query's sums do not depend on the other queries of its block, nor on
    pruning. :func:`._sums._dense_pass` decides every query of a pass at once (blocks of a few
    thousand rows: one product each, not one per query block)."""
    A, err = _query_side(Q, plan, _F32)
    ok = np.isfinite(A).all(axis=1) & (err <= _MAX_T_ERROR)
    probe = plan.layout.probe
    most = _FILTER_MAX_SHARE * probe.shape[0]  # selected probe rows a row may have
    step = max(1, plan.tile_elements // max(1, probe.shape[0]))
    with np.errstate(over="ignore", invalid="ignore"):  # rows not ok may hold inf: their count is unused
        for s in range(0, Q.shape[0], step):
            t = A[s : s + step] @ probe.T
            t -= _lower_in(_F32, -err[s : s + step])[:, None]
            ok[s : s + step] &= (t >= 0).sum(axis=1) <= most
    return ok, A, err


def _block_sums(Q: np.ndarray, cols: np.ndarray | slice | None, plan: _Plan,
                filter_rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                ) -> list[tuple[np.ndarray | None, _Accumulator]]:
    """Kernel sums of the query rows ``Q`` against the training columns ``cols`` (layout rows; a slice:
    a run of them; None: all), as ``(rows of Q, their sums)`` (None: all rows): the rows that take the
    float32 filter (``filter_rows``: :func:`_filter_rows` of ``Q``, None: none of them) apart."""
    if filter_rows is None or Q.shape[0] == 0:
        return [(None, _group_sums(Q, cols, plan))]
    ok, A, err = filter_rows
    if ok.all():
        return [(None, _group_sums(Q, cols, plan, (A, err)))]
    if not ok.any():
        return [(None, _group_sums(Q, cols, plan))]
    f, d = np.flatnonzero(ok), np.flatnonzero(~ok)
    return [(f, _group_sums(Q[f], cols, plan, (A[f], err[f]))), (d, _group_sums(Q[d], cols, plan))]


def _group_sums(Q: np.ndarray, cols: np.ndarray | slice | None, plan: _Plan,
                filtered: tuple[np.ndarray, np.ndarray] | None = None) -> _Accumulator:
    """:func:`_block_sums` of rows that all take the float32 filter (``filtered``: their float32 query
    side and error bound) or none of them."""
    lay = plan.layout
    n_rows = Q.shape[0]
    # A run of rows (slab pruning) is read in place like the whole layout, from its first row.
    first = cols.start if isinstance(cols, slice) else 0
    if isinstance(cols, slice):
        n_cols, cols = cols.stop - cols.start, None
    else:
        n_cols = lay.augmented.shape[0] if cols is None else cols.shape[0]
    acc = _Accumulator(n_rows, len(plan.bandwidths), lay.onehot.shape[1] if plan.moment_degree < 0 else 0, plan.need_dist,
                       plan.tail_radius is not None, plan.hist_bins, _n_moments(plan.moment_degree, lay.weights),
                       count_points=lay.weights is not None)
    if n_cols == 0:
        return acc
    acc.q64 = np.ascontiguousarray(Q, dtype=np.float64)
    # The float32 filter (its product only selects, every selected entry is recomputed), else the
    # product's precision for this block from the rigorous error bound.
    if filtered is not None:
        dtype, (A, err) = _F32, filtered
    else:
        dtype = plan.dtype
        A, err = _block_product(Q, plan, dtype)
        if (A is None or err.max() > _MAX_T_ERROR) and dtype != np.float64:
            dtype = np.dtype(np.float64)
            A, err = _block_product(Q, plan, dtype)
    augmented = lay.augmented_in(dtype)
    direct = filtered is not None or A is None or err.max() > _MAX_T_ERROR
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
            B = augmented[first + j0:first + j1]
            col_index: slice | np.ndarray = slice(first + j0, first + j1)
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
        cglob_of = (lambda c: c + first + j0) if cols is None else (lambda c: cols[j0 + c])
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
