"""The device's statistics pass: what the device backend asks of the device kernels, each in one call.

* :func:`bound_statistics`: one bandwidth's statistics of queries on a PyTorch device in the bound
  form that :func:`nwbound.bounds._chernoff_device.device_limits` reads (with their ``outside_box``
  flags), over every training row or over each query's neighbours of an exact device search;
* :func:`device_ranking`: the sums that rank the bandwidth grid, where the queries live;
* :func:`dense_kernel_sums_array_api` and :func:`neighbor_kernel_sums_array_api`: the statistics at
  every bandwidth in the host's bound form (NumPy float64), for the host's bounds;
* :func:`device_kneighbors`: the exact neighbour search (:mod:`._neighbors`);
* :func:`kernel_statistics` (public as :func:`nwbound.gpu.kernel_statistics`): the regular
  classifier's pass at one bandwidth, its checks and its launch choice, once: the fused Triton
  kernel (:mod:`._triton`) where it applies (:func:`triton_applies`), else the array-API pass of
  :mod:`._array_api` (which also holds the training set's device form, the unit roundoff, the
  distance error bounds and the kernel of ``u²``).

The training set is copied to a device once per device and dtype (cached on it).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import os
from typing import Any

import numpy as np

from ..._numerics import direct_d2_error_factor, summation_error
from ..._validation import check_choice, check_int_range, check_positive
from ...kernels import Kernel
from .._ranking import BandwidthRanking
from .._statistics import KernelStatistics
from ..host._sums import TrainingSet
from ..host._sums_data import gathered_statistics
from ._array_api import (
    HISTOGRAM_KERNELS,
    DeviceTrainingSet,
    _array_api_statistics,
    _check_matrix,
    _smallest_positive,
    array_namespace_of,
    compat,
    device_bound_statistics,
    neighbor_sums,
    supported_kernel_name,
)
from ._neighbors import exact_kneighbors
from ._triton import triton_kernel_statistics

__all__ = [
    "bound_statistics",
    "dense_kernel_sums_array_api",
    "device_kneighbors",
    "device_ranking",
    "installed",
    "kernel_statistics",
    "neighbor_kernel_sums_array_api",
    "triton_applies",
]


def bound_statistics(Q: Any, train: TrainingSet, kernel: Kernel, bandwidth: float, *,
                     box: tuple[np.ndarray, np.ndarray], histogram_bins: int = 0, keep_points: bool = False,
                     n_neighbors: int | None = None, neighbors: Any = None,
                     working_memory: float | None = None) -> KernelStatistics:
    """One bandwidth's statistics of validated queries ``Q`` (a PyTorch tensor) in the bound form, on
    ``Q``'s device: what :func:`nwbound.bounds._chernoff_device.device_limits` reads.

    The regular classifier (``n_neighbors`` None): :func:`kernel_statistics` over every training row
    (with a ``histogram_bins`` histogram when > 0); the localized one: the ``n_neighbors`` nearest of
    an exact device search (:func:`device_kneighbors`; ``neighbors``: already searched) and
    :func:`nwbound.gpu.neighbor_kernel_statistics` (with the per-point masses when ``keep_points``).
    Then :func:`~._array_api.device_bound_statistics`, with ``outside_box`` the queries outside the training
    inputs' bounding box ``box``. Nothing crosses to the host.

    Examples
    --------
    >>> import numpy as np
    >>> import torch  # the device path needs PyTorch
    >>> from nwbound.engine.host._sums import TrainingSet
    >>> from nwbound.engine.device._sums import bound_statistics
    >>> from nwbound.kernels import get_kernel
    >>> X = np.array([[0.0], [0.5]]); train = TrainingSet.build(X, np.array([0, 1]), 2, None)
    >>> s = bound_statistics(torch.tensor([[0.0], [2.0]]), train, get_kernel("epanechnikov"), 1.0, box=(X.min(0), X.max(0)))
    >>> s.class_sums[:, 0].tolist(), s.outside_box.tolist()
    ([[1.0, 0.75], [0.0, 0.0]], [False, True])
    """
    import torch

    xp = array_namespace_of(Q)
    dev = compat().device(Q)
    lam = float(bandwidth)
    dtype = "float32" if train.X.dtype == np.float32 else "float64"
    low, high = _box_on_device(train, box, Q.device)
    outside = torch.any((Q < low) | (Q > high), dim=1)
    # The statistics in the engines' device form (G = 1, the queries' namespace and device), then the bound form.
    if n_neighbors is None:
        rows = _device_training_set(train, xp, dev, dtype)
    else:
        idx = neighbors if neighbors is not None else device_kneighbors(
            Q, train, int(n_neighbors), working_memory=working_memory)[1]
        rows = (*_neighbor_training_set(train, xp, dev), idx)
    st = _sums_at(xp, Q, rows, kernel, lam, dtype=dtype, histogram_bins=int(histogram_bins),
                  keep_points=bool(keep_points), working_memory=working_memory)
    return dataclasses.replace(device_bound_statistics(st, train, n_neighbors=n_neighbors), outside_box=outside)


def _sums_at(xp: Any, Q: Any, rows: Any, kernel: Kernel, lam: float, *, dtype: str, histogram_bins: int = 0,
             keep_points: bool = False, working_memory: float | None = None) -> KernelStatistics:
    """One bandwidth's device-form statistics of validated queries ``Q``: over every row of the device
    training set ``rows`` (the regular classifier), or over the neighbour lists of
    ``rows = (X_dev, onehot_dev, neighbors)`` (the localized one: the fit's rows, our search)."""
    if isinstance(rows, DeviceTrainingSet):
        return kernel_statistics(Q, rows, kernel=kernel, bandwidth=lam, need_dist=True, histogram_bins=histogram_bins,
                                 dtype=dtype, working_memory=working_memory, check_input=False)
    X_dev, onehot_dev, neighbors = rows
    return neighbor_sums(xp, Q, X_dev, onehot_dev, neighbors, supported_kernel_name(kernel), lam, True, keep_points,
                         working_memory)


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
    >>> from nwbound.engine.host._sums import TrainingSet
    >>> from nwbound.engine.device._sums import device_ranking
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
    if n_neighbors is None:
        sample = train.sample(fraction)
        rows = _device_training_set(sample, xp, dev, dtype)
        unit, scale = sample.weight_unit, float(fraction)
    else:
        if neighbors is None:
            _, neighbors = device_kneighbors(Q, train, int(n_neighbors), working_memory=working_memory)
        rows = (*_neighbor_training_set(train, xp, dev), neighbors)
        unit, scale = train.weight_unit, 1.0
    f64 = xp.float64
    columns: list[tuple[Any, Any, Any]] = []  # per bandwidth: κ, Σ a_i² and Σ a_i d_i, each (n,) float64
    for lam in grid:
        st = _sums_at(xp, Q, rows, kernel, float(lam), dtype=dtype, working_memory=working_memory)
        columns.append((xp.sum(xp.astype(st.class_sums[:, 0, :], f64), axis=1), xp.astype(st.sq_sum[:, 0], f64),
                        xp.astype(st.dist_sum[:, 0], f64)))
    kappa, sq_sum, dist_sum = (xp.stack([c[i] for c in columns], axis=1) for i in range(3))
    return BandwidthRanking.from_sums(kappa, sq_sum, dist_sum, (grid * feature_unit)[None, :], fraction=scale,
                                      weight_unit=unit, feature_unit=feature_unit)


def dense_kernel_sums_array_api(
    Xq: Any,
    train: TrainingSet,
    kernel: Kernel,
    bandwidths: np.ndarray,
    *,
    need_dist: bool,
    tail_radius: float | None = None,
    histogram_bins: int = 0,
    dtype: str | None = None,
    engine: str = "auto",
    device: str | None = None,
    working_memory: float | None = None,
) -> KernelStatistics:
    """:func:`nwbound.engine.host._sums.dense_kernel_sums` on ``Xq``'s namespace and device.

    The training set is copied to ``Xq``'s device once (cached on ``train``); the sums come back
    to the host as the CPU engine's bound-form :class:`~nwbound.engine.KernelStatistics` (NumPy
    float64).

    Parameters
    ----------
    Xq : array of shape (n_queries, n_features)
        Queries as a NumPy, PyTorch, CuPy or other array-API array.
    train : TrainingSet
    kernel : Kernel
    bandwidths : ndarray of shape (n_bandwidths,)
    need_dist : bool
    tail_radius : None
        Tail masses are not computed here; anything but None raises ``ValueError``.
    histogram_bins : int, default=0
        ``B > 0``: also ``histogram``, ``hist_mass`` and ``hist_dist`` (n, G, B) over ``B`` equal bins
        of ``u²`` in [0, 1] (``hist_edges``), as the CPU engine; kernels supported on the unit ball
        only (:data:`~nwbound.gpu.HISTOGRAM_KERNELS`); every engine gives all three (the
        Chernoff bound's split form), and with sample weights ``hist_count`` (points of positive
        weight per bin) and ``weight_min`` (the smallest positive weight), as the CPU engine's.
    dtype : {"float32", "float64"} or None, default=None
        Compute dtype (None: the training set's).
    engine : {"auto", "array_api", "triton"}, default="auto"
    device : str or None, default=None
        A PyTorch device (``"cuda"``, ``"cuda:1"``, ``"cpu"``): NumPy queries are moved there first
        (needs torch). None: compute where ``Xq`` lives.
    working_memory : float or None, default=None
        MiB for the array-API engine's block temporaries (None: scikit-learn's ``working_memory``).

    Returns
    -------
    KernelStatistics
        With ``u2_error`` (n, G) bounding the error of every computed ``u²`` (the rounding of
        ``d̃²/λ²`` included), ``weight_max`` and ``uniform_weights`` from ``train``.

    Raises
    ------
    ImportError
        ``device`` given and PyTorch missing (the ``gpu`` extra).
    ValueError
        ``tail_radius`` given, ``device`` not a usable PyTorch device, or a kernel without an
        array-API form.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.engine.host._sums import TrainingSet
    >>> from nwbound.kernels import get_kernel
    >>> from nwbound.engine.device._sums import dense_kernel_sums_array_api
    >>> train = TrainingSet.build(np.array([[0.0], [0.5]]), np.array([0, 1]), 2, None)
    >>> s = dense_kernel_sums_array_api(np.zeros((1, 1)), train, get_kernel("epanechnikov"),
    ...                                 np.array([1.0]), need_dist=False)
    >>> np.round(s.class_sums, 6).tolist()
    [[[1.0, 0.75]]]
    """
    _refuse_tail(tail_radius)
    Xq = _on_device(Xq, device)
    bins = int(histogram_bins)
    if bins and kernel.name not in HISTOGRAM_KERNELS:
        raise ValueError(
            f"The distance histogram (histogram_bins, behind bound='chernoff') on a device needs a kernel "
            f"supported on the unit ball ({', '.join(HISTOGRAM_KERNELS)}), not {kernel.name!r}: use "
            "bound='hoeffding', such a kernel, or the CPU engine (device=None)."
        )
    xp = array_namespace_of(Xq)
    device_of = compat().device
    dtype = dtype or ("float32" if train.X.dtype == np.float32 else "float64")
    dev_train = _device_training_set(train, xp, device_of(Xq), dtype)
    bandwidths = np.asarray(bandwidths, dtype=np.float64).ravel()
    n_q = int(Xq.shape[0])
    weighted_bins = bool(bins) and train.weights is not None  # the split Chernoff form's point counts
    # The engine's error convention: d2_error_rel·S² bounds |d̃² − d²| with S the largest support.
    support = float(kernel.radius * bandwidths.max()) if kernel.compact else float(bandwidths.max())
    parts = [  # a handful of bandwidths, each one full pass
        kernel_statistics(
            Xq, dev_train, kernel=kernel, bandwidth=float(lam), need_dist=need_dist, histogram_bins=bins,
            dtype=dtype, engine=engine, working_memory=working_memory,
        ).to_numpy()
        for lam in bandwidths
    ]
    d2_err = parts[-1].d2_error if parts else np.zeros(n_q)
    # E = γ_{m+3}(‖q'‖ + R)² ≥ (m + 3)·u·(‖q'‖ + R)², so E·4/(m + 3) adds 4u·(‖q'‖ + R)² ≥ 4u·d̃²:
    # the rounding of u² = d̃²·(1/λ²) and of its bin index, which E alone does not cover.
    m = int(train.X.shape[1])
    with np.errstate(over="ignore", divide="ignore"):
        d2_error_rel = np.asarray(d2_err, dtype=np.float64) * (1.0 + 4.0 / (m + 3)) / (support * support)
    # The device's summation error, then the host's: the units' product and κ = Σ_c class_sums.
    return gathered_statistics(
        n_q, parts, bandwidths, train.n_classes, kernel, unit=train.weight_unit, need_dist=need_dist,
        d2_error_rel=d2_error_rel, support=support, host_error=summation_error(train.n_classes + 1),
        histogram_bins=bins, hist_edges=np.linspace(0.0, 1.0, bins + 1),  # u², radius-1 kernels (checked above)
        count_points=weighted_bins, weight_max=train.weight_max, uniform_weights=train.weights is None,
        weight_min=_smallest_positive(train.weights, train.weight_unit, dtype) if weighted_bins else 0.0,
    )


def neighbor_kernel_sums_array_api(
    idx: np.ndarray,
    train: TrainingSet,
    kernel: Kernel,
    bandwidths: np.ndarray,
    *,
    queries: Any,
    need_dist: bool,
    tail_radius: float | None = None,
    keep_points: bool = False,
    device: str | None = None,
    working_memory: float | None = None,
) -> KernelStatistics:
    """:func:`nwbound.engine.host._sums.neighbor_kernel_sums` (with ``queries``) on a device.

    The neighbours ``idx`` come from the estimator's index (on the host); the kernel weights,
    class sums, ``Σ (wK)²``, ``Σ wK·d⁺`` and the per-point masses are computed by
    :func:`nwbound.gpu.neighbor_kernel_statistics` where ``queries`` live (or on ``device``), with the
    training set copied there once, and come back as the CPU engine's bound-form
    :class:`~nwbound.engine.KernelStatistics` in NumPy float64 (the same distances' error bound,
    ``u2_error``).

    Parameters
    ----------
    idx : int ndarray of shape (n_queries, k)
    train : TrainingSet
    kernel : Kernel
    bandwidths : ndarray of shape (n_bandwidths,)
    queries : array of shape (n_queries, n_features)
    need_dist : bool
    tail_radius : None
        Tail masses are not computed here; anything but None raises ``ValueError``.
    keep_points : bool, default=False
        Also ``point_mass`` (n, G, k) and ``point_dist`` (n, k), for the per-point Chernoff form.
    device : str or None, default=None
        A PyTorch device; None: compute where ``queries`` live.
    working_memory : float or None, default=None

    Returns
    -------
    KernelStatistics

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.engine.host._sums import TrainingSet
    >>> from nwbound.kernels import get_kernel
    >>> from nwbound.engine.device._sums import neighbor_kernel_sums_array_api
    >>> train = TrainingSet.build(np.array([[0.0], [0.5], [3.0]]), np.array([0, 1, 1]), 2, None)
    >>> s = neighbor_kernel_sums_array_api(np.array([[0, 1]]), train, get_kernel("epanechnikov"), np.array([1.0]),
    ...                                    queries=np.zeros((1, 1)), need_dist=False)
    >>> s.class_sums.tolist()
    [[[1.0, 0.75]]]
    """
    _refuse_tail(tail_radius)
    Xq = _on_device(queries, device)
    xp = array_namespace_of(Xq)
    dev = compat().device(Xq)
    unit = train.weight_unit  # as the CPU engine: weights in [0, 1], so no (w K)² overflows
    X_dev, onehot_dev = _neighbor_training_set(train, xp, dev)
    if isinstance(idx, np.ndarray):
        nb = xp.asarray(np.ascontiguousarray(idx, dtype=np.int64), device=dev)
    else:  # from device_kneighbors: already there
        nb = idx
    bandwidths = np.asarray(bandwidths, dtype=np.float64).ravel()
    n_q, k_nn = (int(v) for v in np.shape(idx))
    lam_max = float(bandwidths.max()) if bandwidths.size else 1.0
    support = float(kernel.radius * lam_max) if kernel.compact else lam_max
    # The points are always kept: the error bound below needs each row's farthest distance
    # relative to the support (its absolute square may underflow).
    parts = [
        neighbor_sums(xp, Xq, X_dev, onehot_dev, nb, supported_kernel_name(kernel), float(lam), bool(need_dist), True,
                      working_memory).to_numpy()  # the estimator's queries: validated
        for lam in bandwidths
    ]
    far = np.max(parts[-1].point_dist, axis=1, initial=0.0) if parts else np.zeros(n_q)
    with np.errstate(over="ignore", invalid="ignore"):  # as the CPU engine: in units of S²
        d2_error_rel = direct_d2_error_factor(train.X.shape[1]) * (far / support) ** 2
    # The device's summation error composed with k float64 terms, as device_bound_statistics.
    return gathered_statistics(n_q, parts, bandwidths, train.n_classes, kernel, unit=unit, need_dist=need_dist,
                               d2_error_rel=d2_error_rel, support=support,
                               host_error=summation_error(k_nn, "float64"), points=k_nn if keep_points else 0,
                               weight_max=train.weight_max)


def device_kneighbors(Xq: Any, train: TrainingSet, n_neighbors: int, *, device: str | None = None,
                      working_memory: float | None = None) -> tuple[Any, Any]:
    """The exact ``n_neighbors`` nearest training rows of ``Xq`` where it lives (or on ``device``):
    :func:`nwbound.engine.device._neighbors.exact_kneighbors` on the training set copied there once.

    Returns float64 distances and int64 row indices (ascending; ties to the lower row) as tensors.

    Examples
    --------
    >>> import numpy as np
    >>> import torch  # the device path needs PyTorch
    >>> from nwbound.engine.host._sums import TrainingSet
    >>> from nwbound.engine.device._sums import device_kneighbors
    >>> train = TrainingSet.build(np.array([[0.0], [1.0], [3.0]]), np.array([0, 1, 1]), 2, None)
    >>> d, i = device_kneighbors(np.array([[0.9]]), train, 2, device="cpu")
    >>> i.tolist()
    [[1, 0]]
    """
    Q = _on_device(Xq, device)
    xp, dev = array_namespace_of(Q), compat().device(Q)
    X_dev, _ = _neighbor_training_set(train, xp, dev)
    dtype = "float32" if train.X.dtype == np.float32 else "float64"
    dev_train = _device_training_set(train, xp, dev, dtype)
    return exact_kneighbors(Q, dev_train, xp.astype(X_dev, xp.float64), int(n_neighbors), working_memory=working_memory)


def kernel_statistics(
    Xq: Any,
    X_train: Any,
    onehot: Any | None = None,
    *,
    kernel: str | Kernel = "epanechnikov",
    bandwidth: float,
    need_dist: bool = True,
    histogram_bins: int = 0,
    block_rows: int | None = None,
    dtype: str = "float32",
    engine: str = "auto",
    precision: str = "ieee",
    gemm: str | None = None,
    working_memory: float | None = None,
    check_input: bool = True,
) -> KernelStatistics:
    """Kernel statistics of every query against every training point, on the inputs' device.

    Parameters
    ----------
    Xq : array of shape (n_queries, n_features)
        Queries (NumPy, PyTorch, CuPy or any array-API array); results come back in the same
        namespace and on the same device.
    X_train : array of shape (n_train, n_features) or DeviceTrainingSet
        Training points, same namespace and device as ``Xq``; or a prepared
        :class:`~nwbound.gpu.DeviceTrainingSet` (then ``onehot`` must be None).
    onehot : array of shape (n_train, n_classes) or None
        Weighted one-hot class membership (``w_i`` in column ``c_i``).
    kernel : str or Kernel, default="epanechnikov"
        One of ``nwbound.gpu.SUPPORTED_KERNELS``.
    bandwidth : float
        ``λ > 0``.
    need_dist : bool, default=True
        Compute ``dist_sum``.
    histogram_bins : int, default=0
        ``B > 0``: also the histogram of ``u²`` over ``B`` equal bins of [0, 1] (kernels of
        ``nwbound.gpu.HISTOGRAM_KERNELS`` only, whose support is exactly that interval).
    block_rows : int or None, default=None
        Queries per block (array-API engine); None: as many as fit in ``working_memory``.
    dtype : {"float32", "float64"}, default="float32"
        Compute dtype of the distance product (never TF32; see the module docstring).
    engine : {"auto", "array_api", "triton"}, default="auto"
        ``"triton"``: the fused kernel of ``nwbound.engine.device._triton`` (PyTorch or CuPy arrays on a
        CUDA device, Triton installed, float32); ``"auto"``: that where it applies, else the
        array-API engine.
    precision : {"ieee", "tf32x3"}, default="ieee"
        Triton engine only: the dot's ``input_precision``. ``"tf32x3"`` uses the tensor cores with a
        wider, hardware-model-based distance error bound (see ``nwbound.engine.device._triton``).
    gemm : {"fused", "library"} or None, default=None
        Triton engine only: ``"fused"`` forms the dot products inside the kernel (the distance block
        never reaches memory); ``"library"`` takes them from PyTorch's float32 product (cuBLAS, no
        TF32) of a block of queries, which the kernel then reads once (``precision="ieee"`` only).
        None: ``"library"`` with ``precision="ieee"`` (the fastest exact form measured: 1.39× the
        bare product against 3.6× fused, H200, ECG shapes; see ``benchmarks/README.md``), else
        ``"fused"``.
    working_memory : float or None, default=None
        MiB for the block temporaries (None: scikit-learn's ``working_memory``).
    check_input : bool, default=True
        Check that ``Xq`` is finite: one device-to-host read (a synchronisation on a GPU). False
        for queries already checked (an estimator's ``validate_data``); queries that are not
        finite then give NaN statistics, never an error.

    Returns
    -------
    KernelStatistics
        The device form (one bandwidth, ``G = 1``): ``class_sums`` (n, 1, C), ``sq_sum`` and
        ``dist_sum`` (n, 1), the histogram's arrays (n, 1, B), ``d2_error`` (n,) and ``sum_error``,
        in ``Xq``'s namespace and on its device; ``weight_max`` is None (the histogram counts
        ``Σ w_i`` in the one-hot's units).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.gpu import kernel_statistics
    >>> X = np.array([[0.0], [0.5], [3.0]])
    >>> onehot = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    >>> st = kernel_statistics(np.array([[0.0]]), X, onehot, bandwidth=1.0, histogram_bins=2)
    >>> np.round(st.class_sums, 6).tolist(), np.round(st.histogram, 6).tolist()
    ([[[1.0, 0.75]]], [[[2.0, 0.0]]])
    >>> float(st.dist_sum[0, 0]) >= 0.75 * 0.5  # an upper bound of Σ K·d (exact: 0.375)
    True
    """
    check_choice(engine, "engine", ("auto", "array_api", "triton"))
    check_choice(dtype, "dtype", ("float32", "float64"))
    check_choice(precision, "precision", ("ieee", "tf32x3"))
    check_choice(gemm, "gemm", (None, "fused", "library"))
    lam = check_positive(bandwidth, "bandwidth")
    name = supported_kernel_name(kernel)
    bins = check_int_range(histogram_bins, "histogram_bins", 0, 4096)
    if bins and name not in HISTOGRAM_KERNELS:
        raise ValueError(
            f"histogram_bins needs a kernel supported on the unit ball ({', '.join(HISTOGRAM_KERNELS)}); "
            f"got kernel {name!r}. Pass histogram_bins=0 to this function (no histogram)."
        )
    if block_rows is not None:
        block_rows = check_int_range(block_rows, "block_rows", 1)
    if not isinstance(need_dist, (bool, np.bool_)):
        raise TypeError(f"need_dist must be True or False, got {need_dist!r}.")
    if isinstance(X_train, DeviceTrainingSet):
        if onehot is not None:
            raise ValueError("Pass onehot=None with a DeviceTrainingSet: it already holds the labels.")
        train = X_train
        if train.dtype_name != dtype:
            raise ValueError(f"The DeviceTrainingSet was built with {train.dtype}, not dtype={dtype!r}: rebuild it.")
        xp = array_namespace_of(Xq, train.centred)
    else:
        if onehot is None:
            raise ValueError("onehot is required with a raw X_train (or pass a DeviceTrainingSet).")
        xp = array_namespace_of(Xq, X_train, onehot)
        train = DeviceTrainingSet.build(X_train, onehot, dtype=dtype)
    # Decide the engine first (a probe of the namespace and device only), then check and compute.
    refusal = None if engine == "array_api" else _triton_refusal(xp, Xq, dtype)
    use_triton = engine == "triton" or (engine == "auto" and refusal is None)
    Xq = _check_matrix(xp, Xq, "Xq", finite=bool(check_input))
    if Xq.shape[1] != train.n_features:
        raise ValueError(
            f"Xq has {Xq.shape[1]} features but the training set has {train.n_features}: "
            "queries must be in the same feature space (and scaling) as X_train."
        )
    if not use_triton:
        if gemm == "library":
            raise ValueError("gemm='library' needs the Triton engine (CUDA tensors, triton installed); omit it.")
        if precision != "ieee":
            raise ValueError("precision='tf32x3' needs the Triton engine (CUDA tensors, triton installed); use 'ieee'.")
        return _array_api_statistics(xp, Xq, train, name, lam, bool(need_dist), bins, block_rows, working_memory)
    if refusal is not None:  # engine="triton" where it cannot run: say why
        raise ValueError(_REFUSED.format(refusal))
    return triton_kernel_statistics(
        Xq, train, name, lam, need_dist=bool(need_dist), histogram_bins=bins, precision=precision, gemm=gemm
    )


def triton_applies(xp: Any, Xq: Any, dtype: str, *, reason: bool) -> bool:
    """Whether the fused kernel can run on these inputs; with ``reason=True`` raise why not.

    It runs on PyTorch or CuPy arrays on a CUDA device in float32, with Triton installed; with
    ``TRITON_INTERPRET=1`` also on PyTorch CPU tensors (Triton's interpreter).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.gpu import array_namespace_of
    >>> from nwbound.engine.device._sums import triton_applies
    >>> x = np.zeros((2, 2))
    >>> triton_applies(array_namespace_of(x), x, "float32", reason=False)
    False
    """
    refusal = _triton_refusal(xp, Xq, dtype)
    if refusal is not None and reason:
        raise ValueError(_REFUSED.format(refusal))
    return refusal is None


_REFUSED = "engine='triton' cannot run here: {}. Use engine='auto' or 'array_api'."


def _triton_refusal(xp: Any, Xq: Any, dtype: str) -> str | None:
    """Why the fused kernel cannot run on these inputs (None: it can), as :func:`triton_applies` says it."""
    if dtype != "float32":
        return "the fused kernel computes in float32 only (dtype='float32')"
    try:
        aac = compat()
    except ImportError:
        return "array_api_compat is not installed"
    is_cupy_namespace = aac.is_cupy_namespace
    if not (aac.is_torch_namespace(xp) or is_cupy_namespace(xp)):
        return "inputs must be PyTorch tensors or CuPy arrays"
    if not (installed("torch") and installed("triton")):
        from ...utils import install_hint

        return f"triton and torch must be installed ({install_hint('gpu')})"
    on_cuda = is_cupy_namespace(xp) or getattr(getattr(Xq, "device", None), "type", "") == "cuda"
    if not on_cuda and not _interpreting():
        return "the arrays are not on a CUDA device (set TRITON_INTERPRET=1 to run Triton's CPU interpreter)"
    import torch  # only now: importing triton outside the interpreter would break a later interpreted run

    if on_cuda and not torch.cuda.is_available():
        return "PyTorch sees no CUDA device"
    return None


@functools.cache
def installed(name: str) -> bool:
    """Whether the module ``name`` can be imported (``importlib.util.find_spec``, asked once per
    process: a search of the path costs about a millisecond, on every prediction otherwise).

    Examples
    --------
    >>> from nwbound.engine.device._sums import installed
    >>> installed("numpy")
    True
    """
    return importlib.util.find_spec(name) is not None


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "") == "1"


def _on_device(a: Any, device: str | None) -> Any:
    """``a`` as a PyTorch tensor on ``device`` (None: unchanged)."""
    if device is None:
        return a
    try:
        import torch
    except ImportError as exc:
        from ...utils import install_hint

        raise ImportError(f"device={device!r} needs PyTorch: {install_hint('gpu')}.") from exc
    try:
        return torch.as_tensor(a, device=torch.device(device))
    except (RuntimeError, TypeError, AssertionError) as exc:  # AssertionError: torch built without CUDA
        raise ValueError(f"device={device!r} is not a usable PyTorch device here: {exc}") from exc


def _device_training_set(train: TrainingSet, xp: Any, device: Any, dtype: str) -> DeviceTrainingSet:
    key = ("array_api", xp.__name__, str(device), dtype)
    if key not in train._cache:  # one copy to the device per training set, device and dtype
        X = xp.asarray(np.ascontiguousarray(train.X), device=device)
        # In units of weight_unit, as the CPU engine: weights in [0, 1], so no (wK)² overflows.
        onehot = xp.asarray(train.weighted_onehot.astype(np.float64) / train.weight_unit, device=device)
        train._cache[key] = DeviceTrainingSet.build(X, onehot, dtype=dtype)
    return train._cache[key]


def _neighbor_training_set(train: TrainingSet, xp: Any, dev: Any) -> tuple[Any, Any]:
    """The training rows (as fitted) and the one-hot in units of ``weight_unit`` on ``dev``, copied once."""
    key = ("neighbors", xp.__name__, str(dev))
    if key not in train._cache:  # one copy to the device per training set and device
        train._cache[key] = (xp.asarray(np.ascontiguousarray(train.X), device=dev),
                             xp.asarray(train.weighted_onehot.astype(np.float64) / train.weight_unit, device=dev))
    return train._cache[key]


def _box_on_device(train: TrainingSet, box: tuple[np.ndarray, np.ndarray], dev: Any) -> tuple[Any, Any]:
    """The bounding box's ends as float64 tensors on ``dev``, copied once per box and device: a copy
    to a GPU from pageable memory waits for the device's queue (a synchronisation)."""
    import torch

    low, high = (np.ascontiguousarray(b, dtype=np.float64) for b in box)
    key = ("box", str(dev), low.tobytes(), high.tobytes())
    if key not in train._cache:
        train._cache[key] = (torch.as_tensor(low, device=dev), torch.as_tensor(high, device=dev))
    return train._cache[key]


def _refuse_tail(tail_radius: float | None) -> None:
    if tail_radius is not None:
        raise ValueError(
            "tail_radius (the kernel's tail mass, for bound='paper' with an untruncated kernel) is not "
            "supported by the array-API engine: use the CPU engine (device=None)."
        )
