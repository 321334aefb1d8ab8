"""The localized classifier's kernel sums: over each query's k nearest neighbours, on the CPU.

The distances are recomputed directly in float64 from the coordinates
(:func:`~nwbound._numerics.direct_distances`) unless the caller trusts the index's own; the sums
then carry the same error model as the dense pass (:mod:`._sums`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..._numerics import direct_d2_error_factor, direct_distance_error, direct_distances, square_sum_upper, summation_error
from ...kernels import Kernel
from .._statistics import KernelStatistics
from ._sums_data import TrainingSet, u2_error_rows, zero_statistics
from ._tiles import _U64

neighbor_distances = direct_distances  # the name the engine has always exported

__all__ = ["neighbor_distances", "neighbor_kernel_sums", "search_queries"]


def _reduce_weights(
    out: KernelStatistics,
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
) -> KernelStatistics:
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
    KernelStatistics
        The bound form in NumPy float64, at ``bandwidths`` (``bandwidth`` (1, G)), with
        ``weight_max``, ``sum_error`` and ``u2_error`` (n, G): the directly computed distances'
        error bound on ``u² = d²/λ²`` (0 for the index's own distances).

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
    out = zero_statistics(n_q, bandwidths, n_classes, kernel, need_dist=need_dist, need_tail=tail_radius is not None,
                          weight_max=train.weight_max,
                          sum_error=summation_error(k_nn))  # each sum adds the k neighbours' w_i K_i in float64
    d_feat = train.X.shape[1]
    if queries is not None:
        dist = neighbor_distances(queries, train.X, idx)
        rel = direct_distance_error(d_feat)
    else:
        dist = np.asarray(dist, dtype=np.float64)
        rel = 0.0  # the index's own distances: no bound known here
    lam_max = float(bandwidths.max()) if bandwidths.size else 1.0
    support = kernel.radius * lam_max if kernel.compact else lam_max
    # |d̃² − d²| ≤ ((1 + rel)² − 1)·d̃² per row, in units of S², at the row's farthest neighbour.
    with np.errstate(over="ignore", invalid="ignore"):
        far = np.max(dist, axis=1, initial=0.0) / support
        out.u2_error[...] = u2_error_rows(direct_d2_error_factor(d_feat) * far * far if rel else np.zeros(n_q),
                                          support, bandwidths, n_q)
    with np.errstate(over="ignore"):
        dist_up = dist * (1.0 + rel) if rel else dist  # never below the true distance
    beyond = not np.all(np.isfinite(dist_up))  # a query beyond float64's range of the data: d = +inf
    labels = train.labels[idx]
    unit = train.weight_unit  # the same units as the dense path: no (w K)² overflows
    weights = None if train.weights is None else train.weights[idx].astype(np.float64) / unit
    flat = (np.arange(n_q)[:, None] * n_classes + labels).ravel()
    if keep_points:
        out = dataclasses.replace(out, point_mass=np.empty((n_q, len(bandwidths), k_nn)), point_dist=dist)
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
        np.multiply(out.dist_sum, 1.0 + (k_nn + 4) * _U64, out=out.dist_sum)  # the summation's rounding: still an upper bound
    if unit != 1.0:  # back to the input's units (exact, or inf/0 where not representable)
        with np.errstate(over="ignore", under="ignore"):
            for part in (out.class_sums, out.dist_sum, out.tail_mass, out.point_mass, out.sq_sum):
                if part is not None:  # in place (the statistics are frozen, their arrays are not)
                    part *= unit
            sq_sum = out.sq_sum
            sq_sum *= unit  # in two steps: unit² alone may overflow
    return out


# Index coordinates (training rows within [-1, 1]) beyond this: the query is scaled down for the search.
_FAR_SEARCH = 2.0**480


def search_queries(Q: np.ndarray) -> np.ndarray:
    """Queries in index coordinates, each row beyond ``_FAR_SEARCH`` divided by a power of two.

    An index squares coordinates: a row like 1e308 would overflow to NaN distances and duplicate
    neighbours. Such a row lies so far from every training row (within [-1, 1]) that all its
    distances agree to float64 precision; scaled down along its own direction, it stays that far
    and the index returns k distinct rows. The k distances are recomputed from the true queries.
    """
    if Q.dtype != np.float64 or Q.ndim != 2:  # float32 never reaches 2⁴⁸⁰
        return Q
    largest = np.max(np.abs(Q), axis=1, initial=0.0)
    far = largest > _FAR_SEARCH
    if not far.any():
        return Q
    Q = np.array(Q, dtype=np.float64)
    Q[far] /= np.ldexp(1.0, np.frexp(largest[far])[1] - np.frexp(_FAR_SEARCH)[1])[:, None]
    return Q
