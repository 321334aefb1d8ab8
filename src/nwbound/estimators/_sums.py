"""The one pass every Nadaraya-Watson estimate needs: kernel sums per query.

For each query ``y`` and bandwidth ``λ`` (``K_i = K(‖y − y_i‖/λ)``, weights ``w_i``):

* ``class_sums[c] = Σ w_i K_i 1{c_i = c}`` (so ``κ = Σ_c class_sums[c]``),
* ``sq_sum = Σ (w_i K_i)²``, ``dist_sum = Σ w_i K_i ‖y − y_i‖``,
* ``tail_mass = Σ w_i K_i 1{‖y − y_i‖ > r_t λ}`` (only for the infinite-support lemma).

The dense path works on blocks of queries whose distance matrix fits in
``working_memory``: squared distances through one matrix product
(``‖q‖² + ‖x‖² − 2 q·x``, clipped at 0), kernel weights, then one more matrix
product with the weighted one-hot labels for the class sums.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from sklearn import get_config
from threadpoolctl import threadpool_limits

from ..kernels import Kernel

__all__ = ["TrainingSet", "KernelSums", "dense_kernel_sums", "neighbor_kernel_sums"]

# Temporaries of one block row, in units of n_train·itemsize: the squared
# distances, the distances, the kernel weights and one product.
_BLOCK_TEMPORARIES = 4


@dataclass(frozen=True)
class TrainingSet:
    """Training data in the layout the kernel sums need."""

    X: np.ndarray  # (n, d), the estimator's dtype
    sqnorm: np.ndarray  # (n,), ‖x_i‖²
    labels: np.ndarray  # (n,), class indices 0..C-1
    weights: np.ndarray | None  # (n,) sample weights, None for all ones
    weighted_onehot: np.ndarray  # (n, C), w_i·1{c_i = c}

    @classmethod
    def build(cls, X: np.ndarray, labels: np.ndarray, n_classes: int, weights: np.ndarray | None) -> "TrainingSet":
        onehot = np.zeros((X.shape[0], n_classes), dtype=X.dtype)
        onehot[np.arange(X.shape[0]), labels] = 1.0 if weights is None else weights
        sqnorm = np.einsum("ij,ij->i", X, X)
        return cls(X=X, sqnorm=sqnorm, labels=labels, weights=weights, weighted_onehot=onehot)

    @property
    def n_classes(self) -> int:
        return self.weighted_onehot.shape[1]


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
) -> KernelSums:
    """Kernel sums of every query against every training point (the *regular* NWC)."""
    n_q = Xq.shape[0]
    n_train = train.X.shape[0]
    out = KernelSums.empty(n_q, len(bandwidths), train.n_classes, need_dist, tail_radius is not None)
    row_bytes = _BLOCK_TEMPORARIES * n_train * train.X.dtype.itemsize
    chunk = block_rows(row_bytes, n_q, working_memory)
    n_threads = _n_threads(n_jobs)
    if n_threads > 1:
        # Split the block budget between the threads so peak memory stays bounded.
        chunk = max(1, chunk // n_threads)
    q_sqnorm = np.einsum("ij,ij->i", Xq, Xq)
    inv_sq = [1.0 / float(lam) ** 2 for lam in bandwidths]

    def block(start: int) -> None:
        rows = slice(start, min(start + chunk, n_q))
        sqd = Xq[rows] @ train.X.T
        sqd *= -2.0
        sqd += q_sqnorm[rows, None]
        sqd += train.sqnorm[None, :]
        np.maximum(sqd, 0.0, out=sqd)
        dist = np.sqrt(sqd) if (need_dist or tail_radius is not None) else None
        for g, lam in enumerate(bandwidths):
            k = kernel.from_squared(sqd * sqd.dtype.type(inv_sq[g]))
            class_sums = k @ train.weighted_onehot
            if train.weights is not None:
                k *= train.weights
            cut = None if tail_radius is None else tail_radius * float(lam)
            _reduce_weights(out, rows, g, k, class_sums, dist, cut)

    starts = range(0, n_q, chunk)
    if n_threads > 1 and n_q > chunk:
        # Threads over query blocks, one BLAS thread each: no oversubscription.
        with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(n_threads) as pool:
            list(pool.map(block, starts))
    else:
        for start in starts:
            block(start)
    return out


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
        import os

        return max(1, (os.cpu_count() or 1) + 1 + n_jobs)
    return max(1, int(n_jobs))
