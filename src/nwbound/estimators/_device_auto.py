"""``bandwidth="auto"`` on the device: the grid ranked where the queries live.

The host ranks the grid of ``bandwidth="auto"`` by each query's label-free ε (the Hoeffding parts of
:meth:`~nwbound.bounds.BoundSpec.parts`, :meth:`~nwbound.bounds.BoundSpec.least_epsilon`) and then
computes exact statistics at each query's chosen bandwidth. With ``device=`` and bounds that run on
the device (:func:`~._device.bounds_on_device`), the same steps run there:

1. :func:`device_ranking`: κ, ``Σ a_i²`` and ``Σ a_i d_i`` of every grid bandwidth, per query, as
   float64 tensors on the queries' device — the regular classifier from
   :func:`nwbound.gpu.kernel_statistics` on the ranking sample (the rows of
   :func:`~._sums_data.ranking_sample_rows`, the host's sample, scaled by ``1/fraction`` as the host),
   the localized one from :func:`nwbound.gpu.neighbor_kernel_statistics` over the neighbours of one
   exact device search (the host ranks the localized grid on every neighbour too);
2. each setting's choice by the bound rules themselves, in the tensors' namespace (no host copy);
3. :func:`rows_by_choice`: the queries grouped by their chosen bandwidth on the device (a stable
   sort), with one read of the ``G`` group sizes; each group's intervals come from
   :func:`~._device.intervals_on_device` at its bandwidth and are put back in the queries' order
   on the device.

The choice reads the inputs only (never a label), so every bound stays valid whatever rounding
separates the device's choice from the host's at a near tie.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..gpu import array_namespace_of, compat, kernel_statistics, neighbor_kernel_statistics
from ..kernels import Kernel
from ._device import _device_training_set, _neighbor_training_set, _on_device, device_kneighbors
from ._statistics import BandwidthRanking
from ._sums import TrainingSet

__all__ = ["device_ranking", "rows_by_choice"]


def device_ranking(Xq: Any, train: TrainingSet, kernel: Kernel, grid: np.ndarray, *, fraction: float = 1.0,
                   feature_unit: float = 1.0, n_neighbors: int | None = None, neighbors: Any = None,
                   device: str | None = None, working_memory: float | None = None) -> BandwidthRanking:
    """The :class:`~nwbound.estimators.BandwidthRanking` of ``Xq`` over ``grid``, where ``Xq`` lives.

    Parameters
    ----------
    Xq : array of shape (n_queries, n_features)
        Validated queries in the fit's feature unit (NumPy queries are moved to ``device``).
    train : TrainingSet
    kernel : Kernel
    grid : ndarray of shape (G,)
        The bandwidths, in the fit's feature unit (as the engines see them).
    fraction : float, default=1.0
        The regular classifier's ranking sample (:meth:`TrainingSet.sample`): its sums are divided
        by ``fraction``, as the host's ranking.
    feature_unit : float, default=1.0
        The fit's feature unit: the distance sums come back in the input's units.
    n_neighbors : int or None, default=None
        The localized classifier's ``k`` (None: the regular classifier).
    neighbors : int tensor of shape (n_queries, k) or None
        The localized classifier's neighbours when already searched (None: searched here, exactly).
    device : str or None, default=None
    working_memory : float or None, default=None

    Returns
    -------
    BandwidthRanking
        ``kappa``, ``sq_sum``, ``dist_sum`` (n, G) float64 tensors on the queries' device, in the
        input's units; ``bandwidth`` the (1, G) grid in the input's units (NumPy).

    Examples
    --------
    >>> import numpy as np
    >>> import torch  # the device path needs PyTorch
    >>> from nwbound.estimators._sums import TrainingSet
    >>> from nwbound.estimators._device_auto import device_ranking
    >>> from nwbound.kernels import get_kernel
    >>> train = TrainingSet.build(np.array([[0.0], [0.5], [3.0]]), np.array([0, 1, 1]), 2, None)
    >>> r = device_ranking(np.zeros((1, 1)), train, get_kernel("epanechnikov"), np.array([1.0, 4.0]), device="cpu")
    >>> type(r.kappa).__name__, [round(v, 4) for v in r.kappa[0].tolist()]
    ('Tensor', [1.75, 2.4219])
    """
    Q = _on_device(Xq, device)
    xp, dev = array_namespace_of(Q), compat().device(Q)
    grid = np.asarray(grid, dtype=np.float64).reshape(-1)
    dtype = "float32" if train.X.dtype == np.float32 else "float64"
    columns: list[tuple[Any, Any, Any]] = []
    if n_neighbors is None:
        sample = train.sample(fraction) if fraction < 1.0 else train
        dev_train = _device_training_set(sample, xp, dev, dtype)
        unit, scale = sample.weight_unit, float(fraction)
        for lam in grid:
            st = kernel_statistics(Q, dev_train, kernel=kernel, bandwidth=float(lam), need_dist=True,
                                   histogram_bins=0, dtype=dtype, working_memory=working_memory, check_input=False)
            columns.append(_sums_of(xp, st))
    else:
        X_dev, onehot_dev = _neighbor_training_set(train, xp, dev)
        if neighbors is None:
            _, neighbors = device_kneighbors(Q, train, int(n_neighbors), working_memory=working_memory)
        unit, scale = train.weight_unit, 1.0
        for lam in grid:
            st = neighbor_kernel_statistics(Q, X_dev, onehot_dev, neighbors, kernel=kernel, bandwidth=float(lam),
                                            need_dist=True, keep_points=False, working_memory=working_memory,
                                            check_input=False)  # validated queries, the fit's rows, our search
            columns.append(_sums_of(xp, st))
    kappa, sq_sum, dist_sum = (xp.stack([c[i] for c in columns], axis=1) for i in range(3))
    # The host's units (weights back from weight_unit, distances from the feature unit), then its
    # sample scaling: ε's parts are ratios, so this changes no choice beyond rounding.
    kappa = kappa * unit / scale
    sq_sum = sq_sum * unit * unit / scale
    dist_sum = dist_sum * (unit * feature_unit) / scale
    return BandwidthRanking(kappa, sq_sum, dist_sum, (grid * feature_unit)[None, :])


def _sums_of(xp: Any, st: Any) -> tuple[Any, Any, Any]:
    """κ, ``Σ a_i²`` and ``Σ a_i d_i`` (each (n,), float64) of one bandwidth's device-form statistics."""
    f64 = xp.float64
    return (xp.sum(xp.astype(st.class_sums[:, 0, :], f64), axis=1), xp.astype(st.sq_sum[:, 0], f64),
            xp.astype(st.dist_sum[:, 0], f64))


def rows_by_choice(choice: Any, n_bandwidths: int) -> tuple[list[Any], list[int], Any]:
    """The queries of each chosen bandwidth, where ``choice`` lives: ``(rows, used, inverse)``.

    ``rows[j]`` are the query indices that chose ``used[j]`` (increasing), ``inverse`` puts the
    concatenated groups back in the queries' order. One read: the ``G`` group sizes.

    Examples
    --------
    >>> import torch
    >>> from nwbound.estimators._device_auto import rows_by_choice
    >>> rows, used, inverse = rows_by_choice(torch.tensor([2, 0, 2, 2]), 3)
    >>> [r.tolist() for r in rows], used, inverse.tolist()
    ([[1], [0, 2, 3]], [0, 2], [1, 0, 2, 3])
    """
    xp = array_namespace_of(choice)
    order = xp.argsort(choice, stable=True)
    ones = xp.ones_like(choice)
    counts = xp.zeros((n_bandwidths,), dtype=choice.dtype, device=compat().device(choice))
    if compat().is_torch_array(choice):
        counts = counts.index_add(0, choice, ones)
    else:  # any other namespace: one comparison per bandwidth
        counts = xp.stack([xp.sum(xp.astype(choice == g, choice.dtype)) for g in range(n_bandwidths)])
    sizes = [int(v) for v in (counts.tolist() if hasattr(counts, "tolist") else np.asarray(counts))]  # the read
    rows, used, start = [], [], 0
    for g, size in enumerate(sizes):
        if size:
            rows.append(order[start : start + size])
            used.append(g)
            start += size
    inverse = xp.argsort(order, stable=True)
    return rows, used, inverse
