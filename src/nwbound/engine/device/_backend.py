"""The device backend: the estimator's ``device=`` path, from the training set's copy on the device
to every setting's intervals there (:class:`DeviceBackend`, picked by :func:`nwbound.engine.select_backend`).

* The training set is copied to the device once per device and dtype (cached on it), and the
  kernel sums come from :func:`nwbound.gpu.kernel_statistics` (regular classifier) or
  :func:`nwbound.gpu.neighbor_kernel_statistics` over the neighbours of an exact device search
  (localized): :func:`dense_kernel_sums_array_api` and :func:`neighbor_kernel_sums_array_api` bring
  them to the host in the bound form, for the host's bounds.
* Where the device's bounds serve the settings (:func:`bounds_on_device`), :func:`intervals_on_device`
  computes statistics *and* bounds there; a call then reads the device twice: the queries' checks
  (one flag) and one packed read of a few numbers at its end (the vacuous count, the usefulness
  report's numbers). Its results stay there for PyTorch queries (:mod:`._device_results`).
* ``bandwidth="auto"``: the grid ranked where the queries live (:func:`device_ranking`), each
  query's choice by the bound rules in the tensors' namespace, the queries grouped by chosen
  bandwidth there (:func:`rows_by_choice`). The choice reads the inputs only (never a label), so
  every bound stays valid whatever rounding separates the device's choice from the host's at a
  near tie.

What crosses to the host under ``array_api_dispatch`` (:func:`~._dispatch.validate_queries` with
``keep_namespace``): never the queries of the regular classifier; the localized classifier's
queries once where an HNSW index searches on the host; the per-query sums (``KernelStatistics``,
float64) and the ``outside_box`` flags where the bounds run on the host.

Lives in the engine beside the device kernels it calls (``_array_api``, ``_triton``, ``_neighbors``);
:mod:`nwbound.gpu` re-exports their public names and never imports the estimators.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from ..._config import get_config
from ..._numerics import compose_errors, direct_d2_error_factor, summation_error
from .._statistics import KernelStatistics
from ._array_api import (
    HISTOGRAM_KERNELS,
    DeviceTrainingSet,
    array_namespace_of,
    compat,
    neighbor_kernel_statistics,
)
from ._triton import kernel_statistics
from ._array_api import to_host
from ...kernels import Kernel
from ._results import delivered, intervals_from_limits
from .._ranking import BandwidthRanking, choice_groups, rows_by_choice
from ..host._sums import TrainingSet
from ..host._sums_data import u2_error_rows, zero_statistics

__all__ = [
    "DeviceBackend",
    "bounds_on_device",
    "dense_kernel_sums_array_api",
    "device_kneighbors",
    "device_ranking",
    "intervals_on_device",
    "neighbor_kernel_sums_array_api",
    "rows_by_choice",
]


def _device_training_set(train: TrainingSet, xp: Any, device: Any, dtype: str) -> DeviceTrainingSet:
    key = ("array_api", xp.__name__, str(device), dtype)
    if key not in train._cache:  # one copy to the device per training set, device and dtype
        X = xp.asarray(np.ascontiguousarray(train.X), device=device)
        # In units of weight_unit, as the CPU engine: weights in [0, 1], so no (wK)² overflows.
        onehot = xp.asarray(train.weighted_onehot.astype(np.float64) / train.weight_unit, device=device)
        train._cache[key] = DeviceTrainingSet.build(X, onehot, dtype=dtype)
    return train._cache[key]


def _smallest_positive(weights: np.ndarray, unit: float, dtype: str) -> float:
    """The smallest positive weight as the device sees it (``w/unit`` rounded to ``dtype``, times ``unit``).

    The device paths count the points of positive weight only: a point of weight 0 carries no
    mass and enters no sum, so the bound may leave it out (the CPU engine counts it and takes
    ``weight_min = 0``: the same interval or a wider one). 0 without a positive weight.
    """
    seen = (weights.astype(np.float64) / unit).astype(dtype).astype(np.float64) * unit
    positive = seen[seen > 0]
    return float(positive.min()) if positive.size else 0.0


def _refuse_tail(tail_radius: float | None) -> None:
    if tail_radius is not None:
        raise ValueError(
            "tail_radius (the kernel's tail mass, for bound='paper' with an untruncated kernel) is not "
            "supported by the array-API engine: use the CPU engine (device=None)."
        )


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


def _neighbor_training_set(train: TrainingSet, xp: Any, dev: Any) -> tuple[Any, Any]:
    """The training rows (as fitted) and the one-hot in units of ``weight_unit`` on ``dev``, copied once."""
    key = ("neighbors", xp.__name__, str(dev))
    if key not in train._cache:  # one copy to the device per training set and device
        train._cache[key] = (xp.asarray(np.ascontiguousarray(train.X), device=dev),
                             xp.asarray(train.weighted_onehot.astype(np.float64) / train.weight_unit, device=dev))
    return train._cache[key]


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
    >>> from nwbound.engine.device._backend import device_kneighbors
    >>> train = TrainingSet.build(np.array([[0.0], [1.0], [3.0]]), np.array([0, 1, 1]), 2, None)
    >>> d, i = device_kneighbors(np.array([[0.9]]), train, 2, device="cpu")
    >>> i.tolist()
    [[1, 0]]
    """
    from ._neighbors import exact_kneighbors

    Q = _on_device(Xq, device)
    xp, dev = array_namespace_of(Q), compat().device(Q)
    X_dev, _ = _neighbor_training_set(train, xp, dev)
    dtype = "float32" if train.X.dtype == np.float32 else "float64"
    dev_train = _device_training_set(train, xp, dev, dtype)
    return exact_kneighbors(Q, dev_train, xp.astype(X_dev, xp.float64), int(n_neighbors), working_memory=working_memory)


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
    >>> from nwbound.engine.device._backend import neighbor_kernel_sums_array_api
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
    out = zero_statistics(n_q, bandwidths, train.n_classes, kernel, need_dist=need_dist, need_tail=False,
                          weight_max=train.weight_max)
    if keep_points:
        out = dataclasses.replace(out, point_mass=np.empty((n_q, len(bandwidths), k_nn)))
    far = np.zeros(n_q)
    point_dist, sum_error = None, 0.0
    for g, lam in enumerate(bandwidths):
        # The points are always kept: the error bound below needs each row's farthest distance
        # relative to the support (its absolute square may underflow).
        st = neighbor_kernel_statistics(
            Xq, X_dev, onehot_dev, nb, kernel=kernel, bandwidth=float(lam), need_dist=need_dist,
            keep_points=True, working_memory=working_memory, check_input=False,  # the estimator's: validated
        ).to_numpy()
        with np.errstate(over="ignore", under="ignore"):  # back to the input's units: inf/0 where not representable
            _store_sums(out, g, st, unit)
            if keep_points:
                out.point_mass[:, g] = st.point_mass[:, 0] * unit
                point_dist = st.point_dist
        far = np.max(st.point_dist, axis=1, initial=0.0)
        # The device's summation error composed with k float64 terms, as device_bound_statistics.
        sum_error = max(sum_error, compose_errors(st.sum_error, summation_error(k_nn, "float64")))
    with np.errstate(over="ignore", invalid="ignore"):  # as the CPU engine: in units of S²
        out.u2_error[...] = u2_error_rows(direct_d2_error_factor(train.X.shape[1]) * (far / support) ** 2,
                                          support, bandwidths, n_q)
    return dataclasses.replace(out, sum_error=sum_error, **({} if point_dist is None else {"point_dist": point_dist}))


def _store_sums(out: KernelStatistics, g: int, st: Any, unit: float) -> None:
    """Bandwidth ``g``'s sums of ``st`` (NumPy device-form statistics, ``G = 1``, weights in units of
    ``unit``) into ``out``, in the input's units."""
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
    >>> from nwbound.engine.device._backend import dense_kernel_sums_array_api
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
    out = zero_statistics(
        n_q, bandwidths, train.n_classes, kernel, need_dist=need_dist, need_tail=False, histogram_bins=bins,
        hist_edges=np.linspace(0.0, 1.0, bins + 1),  # u², radius-1 kernels (checked above)
        count_points=weighted_bins, weight_max=train.weight_max, uniform_weights=train.weights is None,
        weight_min=_smallest_positive(train.weights, train.weight_unit, dtype) if weighted_bins else 0.0,
    )
    # The engine's error convention: d2_error_rel·S² bounds |d̃² − d²| with S the largest support.
    support = float(kernel.radius * bandwidths.max()) if kernel.compact else float(bandwidths.max())
    sum_error = 0.0
    d2_err = None
    for g, lam in enumerate(bandwidths):  # a handful of bandwidths, each one full pass
        st = kernel_statistics(
            Xq, dev_train, kernel=kernel, bandwidth=float(lam), need_dist=need_dist, histogram_bins=bins,
            dtype=dtype, engine=engine, working_memory=working_memory,
        ).to_numpy()
        with np.errstate(over="ignore", under="ignore"):  # back to the input's units: inf/0 where not representable
            _store_sums(out, g, st, train.weight_unit)
        d2_err = st.d2_error
        # The device's summation error, then the host's: the units' product and κ = Σ_c class_sums.
        sum_error = max(sum_error, compose_errors(st.sum_error, summation_error(train.n_classes + 1)))
    if d2_err is None:
        d2_err = np.zeros(n_q)
    # E = γ_{m+3}(‖q'‖ + R)² ≥ (m + 3)·u·(‖q'‖ + R)², so E·4/(m + 3) adds 4u·(‖q'‖ + R)² ≥ 4u·d̃²:
    # the rounding of u² = d̃²·(1/λ²) and of its bin index, which E alone does not cover.
    m = int(train.X.shape[1])
    with np.errstate(over="ignore", divide="ignore"):
        d2_error_rel = np.asarray(d2_err, dtype=np.float64) * (1.0 + 4.0 / (m + 3)) / (support * support)
        out.u2_error[...] = u2_error_rows(d2_error_rel, support, bandwidths, n_q)
    return dataclasses.replace(out, sum_error=sum_error)


def device_bound_statistics(st: KernelStatistics, train: TrainingSet, *,
                            n_neighbors: int | None = None) -> KernelStatistics:
    """The bound form of one bandwidth's device-form statistics, where they live (nothing crosses).

    What :func:`nwbound.bounds._chernoff_device.device_limits` (and, after a copy, the host's
    :meth:`~nwbound.bounds.BoundSpec.limits`) reads, from :func:`nwbound.gpu.kernel_statistics`
    (``n_neighbors`` None) or :func:`nwbound.gpu.neighbor_kernel_statistics` (``n_neighbors`` the
    ``k`` of the neighbour lists) computed on ``train``'s device copy, in its weight units:

    * ``sum_error``: the engine's ``ρ`` composed with the host's (``κ = Σ_c class_sums``: ``C + 1``
      float64 additions; the localized sums: ``k`` float64 terms), as the host's statistics route;
    * the regular classifier: ``u2_error`` (n, 1) from ``d2_error`` (the rounding of ``d̃²/λ²`` and
      of its bin index included, as the host route's :func:`~._sums_data.u2_error_rows`); the histogram in units of
      ``weight_max`` (the training set's largest weight) with its edges, ``uniform_weights`` and,
      with sample weights, ``hist_count`` and ``weight_min``;
    * the localized classifier: ``point_dist`` rounded up by its error bound (directly computed
      distances, as the host's), ``u2_error`` 0.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.engine.host._sums import TrainingSet
    >>> from nwbound.gpu import kernel_statistics
    >>> from nwbound.engine.device._backend import device_bound_statistics
    >>> train = TrainingSet.build(np.array([[0.0], [0.5]]), np.array([0, 1]), 2, None)
    >>> st = kernel_statistics(np.zeros((1, 1)), train.X, np.eye(2), bandwidth=1.0, histogram_bins=4)
    >>> b = device_bound_statistics(st, train)
    >>> st.weight_max is None, b.weight_max, b.d2_error is None, b.hist_edges.tolist()
    (True, 1.0, True, [0.0, 0.25, 0.5, 0.75, 1.0])
    """
    unit = train.weight_unit
    C, m = train.n_classes, int(train.X.shape[1])
    w_max = train.weight_max / unit
    form = dict(d2_error=None, weight_max=w_max, uniform_weights=train.weights is None, hist_count=None,
                weight_min=0.0)
    if n_neighbors is None:
        lam = float(np.asarray(st.bandwidth).reshape(-1)[0])
        u2_err = (st.d2_error * (1.0 + 4.0 / (m + 3)) / lam) / lam  # as the host route's u2_error_rows
        if getattr(u2_err, "ndim", 0) == 1:
            u2_err = array_namespace_of(u2_err).expand_dims(u2_err, axis=1)
        form.update(sum_error=compose_errors(st.sum_error, summation_error(C + 1)), u2_error=u2_err)
        if st.histogram is not None:
            B = int(st.histogram.shape[2])
            form.update(histogram=st.histogram / w_max if w_max > 0 else st.histogram * 0.0,
                        hist_edges=np.linspace(0.0, 1.0, B + 1))
            if train.weights is not None:
                dtype = "float32" if train.X.dtype == np.float32 else "float64"
                form.update(hist_count=st.hist_count,
                            weight_min=_smallest_positive(train.weights, unit, dtype) / unit)
    else:
        # Float64 sums of k terms: within 1 ± γ_k, as the host's localized sums.
        form.update(sum_error=compose_errors(st.sum_error, summation_error(int(n_neighbors), "float64")),
                    u2_error=0.0)
        if st.point_dist is not None:  # directly computed distances, rounded up by their error bound (as the host)
            form.update(point_dist=st.point_dist * (1.0 + (m + 8) * 2.0**-53))
    return dataclasses.replace(st, **form)


def bounds_on_device(specs: dict, *, localized: bool, bandwidths: np.ndarray, kernel: Kernel) -> bool:
    """Whether :func:`intervals_on_device` serves these settings: one bandwidth, every setting's
    form ``"hoeffding"`` or ``"chernoff"`` (the regular classifier's histogram needs a kernel
    supported on the unit ball), and PyTorch installed. Otherwise the statistics come to the host.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.bounds import BoundSpec
    >>> from nwbound.kernels import get_kernel
    >>> specs = {None: BoundSpec(form="paper", beta=1.0, delta_prime=0.05)}
    >>> bounds_on_device(specs, localized=False, bandwidths=np.ones(1), kernel=get_kernel("epanechnikov"))
    False
    """
    from ._triton import installed

    if np.size(bandwidths) != 1 or not specs or not installed("torch"):
        return False
    if any(s.form not in ("hoeffding", "chernoff") for s in specs.values()):
        return False
    if not any(s.is_chernoff for s in specs.values()):
        return True
    if localized:
        return True
    # The regular classifier's band-Chernoff search on a GPU: measured on an H100 at the ECG shapes
    # (bench_device_bounds.py), the eager PyTorch search took 520 ms, slower than the statistics pass
    # plus the host solver (≈ 0.3 s). It runs on the device where the fused Triton search
    # (nwbound.bounds._chernoff_triton) is installed, or when asked for (regular_chernoff_on_device);
    # the localized classifier's per-point search and Hoeffding always run there.
    config = get_config()
    fused = installed("triton") and config["triton_search"]
    return kernel.name in HISTOGRAM_KERNELS and (config["regular_chernoff_on_device"] or fused)


def intervals_on_device(
    Xq: Any,
    train: TrainingSet,
    kernel: Kernel,
    bandwidth: float,
    specs: dict,
    *,
    device: str,
    fallback: Callable[[np.ndarray], np.ndarray],
    box: tuple[np.ndarray, np.ndarray],
    histogram_bins: int = 32,
    n_neighbors: int | None = None,
    neighbors: Any = None,
    working_memory: float | None = None,
) -> dict | None:
    """Every setting's :class:`~nwbound.PredictionInterval` with statistics *and* bounds on ``device``.

    The regular classifier (``n_neighbors`` None): :func:`nwbound.gpu.kernel_statistics` (with the
    histogram's per-bin sums where a setting is ``"chernoff"``); the localized one: the exact
    ``n_neighbors`` nearest by :func:`nwbound.engine.device._neighbors.exact_kneighbors` (no host search) and
    :func:`nwbound.gpu.neighbor_kernel_statistics` with the per-point masses. Then the bounds of
    :func:`nwbound.bounds._chernoff_device.device_limits` on the same device. What crosses to the
    host: one packed read of a few numbers (the count of rows without training mass and, for results
    that stay on the device, the numbers of the setting ``None``'s usefulness report, kept in
    :class:`DeviceIntervals`), the flags the Chernoff searches read, and for NumPy queries the final
    per-query results (one packed copy); for array-API queries (``array_api_dispatch``) the results
    stay on the queries' device. Rows without training mass take the rows of ``fallback`` (the
    estimator's ``empty_neighborhood`` rule, which may raise), asked only where there are such rows.

    Parameters
    ----------
    Xq : array of shape (n_queries, n_features)
        Validated queries (NumPy or an array-API array), in the fit dtype.
    train : TrainingSet
    kernel : Kernel
    bandwidth : float
    specs : dict
        Setting name to :class:`~nwbound.bounds.BoundSpec` (:func:`bounds_on_device` true).
    device : str
        A PyTorch device.
    fallback : callable
        ``vacuous`` (NumPy bool, (n,)) to the (n_vacuous, C) probabilities of those rows. Asked with
        the count alone (a mask of as many rows) where its rows are all one row (the estimator's rules);
        with the rows themselves (one more read) otherwise.
    box : (low, high)
        The training inputs' bounding box (``outside_box``).
    histogram_bins : int, default=32
    n_neighbors : int or None, default=None
    neighbors : int tensor of shape (n_queries, n_neighbors) or None, default=None
        The localized classifier's neighbours when already searched on the device (None: searched here).
    working_memory : float or None, default=None

    Returns
    -------
    dict, DeviceIntervals or None
        Setting name to :class:`~nwbound.PredictionInterval`: NumPy for NumPy queries, tensors on the
        queries' device otherwise (a :class:`DeviceIntervals`). None where the queries do not reach a
        PyTorch device (the caller then computes the statistics there and the bounds on the host).

    Examples
    --------
    >>> import numpy as np
    >>> import torch  # the device path needs PyTorch
    >>> from nwbound.bounds import BoundSpec
    >>> from nwbound.engine.host._sums import TrainingSet
    >>> from nwbound.kernels import get_kernel
    >>> import nwbound
    >>> from nwbound.engine.device._backend import intervals_on_device
    >>> nwbound.set_config(device_bounds_on_cpu=True)  # PyTorch's CPU device standing in for a GPU
    >>> X = np.linspace(0.0, 1.0, 21)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> train = TrainingSet.build(X, y, 2, None)
    >>> out = intervals_on_device(np.array([[0.1]]), train, get_kernel("epanechnikov"), 0.3,
    ...                           {None: BoundSpec(form="chernoff", beta=0.0, delta_prime=0.05)}, device="cpu",
    ...                           fallback=lambda v: np.full((int(v.sum()), 2), 0.5), box=(X.min(0), X.max(0)))
    >>> out[None].proba.tolist(), round(float(out[None].lower[0, 0]), 3)
    ([[1.0, 0.0]], 0.631)
    >>> nwbound.set_config(device_bounds_on_cpu=False)
    """
    import torch

    from ...bounds._chernoff_device import device_limits

    numpy_in = isinstance(Xq, np.ndarray)
    Q = _on_device(Xq, device)
    if not compat().is_torch_array(Q):  # the device bounds are PyTorch's: the caller takes the host route
        return None
    if Q.device.type == "cpu" and not get_config()["device_bounds_on_cpu"]:  # the host's solver is faster there
        return None
    xp = array_namespace_of(Q)
    dev = compat().device(Q)
    unit = train.weight_unit
    lam = float(bandwidth)
    dtype = "float32" if train.X.dtype == np.float32 else "float64"
    n_q = int(Q.shape[0])
    chernoff = any(s.is_chernoff for s in specs.values())
    low, high = _box_on_device(train, box, Q.device)
    outside = torch.any((Q < low) | (Q > high), dim=1)
    # 1. The statistics, in the engines' device form (G = 1, the queries' namespace and device).
    if n_neighbors is None:
        dev_train = _device_training_set(train, xp, dev, dtype)
        bins = int(histogram_bins) if chernoff else 0
        st = kernel_statistics(Q, dev_train, kernel=kernel, bandwidth=lam, need_dist=True, histogram_bins=bins,
                               dtype=dtype, working_memory=working_memory, check_input=False)  # validated
    else:
        X_dev, onehot_dev = _neighbor_training_set(train, xp, dev)
        idx = neighbors if neighbors is not None else device_kneighbors(
            Q, train, int(n_neighbors), working_memory=working_memory)[1]
        st = neighbor_kernel_statistics(Q, X_dev, onehot_dev, idx, kernel=kernel, bandwidth=lam, need_dist=True,
                                        keep_points=chernoff, working_memory=working_memory,
                                        check_input=False)  # validated queries, the fit's rows, our search
    # 2. The same statistics in the bound form, still on the device; 3. every setting's bound there;
    # 4. the intervals, read once, where the queries live.
    stats = device_bound_statistics(st, train, n_neighbors=n_neighbors)
    limits = {name: device_limits(spec, stats) for name, spec in specs.items()}
    target = Xq.device if not numpy_in and compat().is_torch_array(Xq) else None
    return intervals_from_limits(limits, specs, kappa_unit=unit, bandwidth=lam, outside_box=outside,
                                 fallback=fallback, target=target)


def _box_on_device(train: TrainingSet, box: tuple[np.ndarray, np.ndarray], dev: Any) -> tuple[Any, Any]:
    """The bounding box's ends as float64 tensors on ``dev``, copied once per box and device: a copy
    to a GPU from pageable memory waits for the device's queue (a synchronisation)."""
    import torch

    low, high = (np.ascontiguousarray(b, dtype=np.float64) for b in box)
    key = ("box", str(dev), low.tobytes(), high.tobytes())
    if key not in train._cache:
        train._cache[key] = (torch.as_tensor(low, device=dev), torch.as_tensor(high, device=dev))
    return train._cache[key]


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
    >>> from nwbound.engine.device._backend import device_ranking
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
        sample = train.sample(fraction)
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
    return BandwidthRanking.from_sums(kappa, sq_sum, dist_sum, (grid * feature_unit)[None, :], fraction=scale,
                                      weight_unit=unit, feature_unit=feature_unit)


def _sums_of(xp: Any, st: Any) -> tuple[Any, Any, Any]:
    """κ, ``Σ a_i²`` and ``Σ a_i d_i`` (each (n,), float64) of one bandwidth's device-form statistics."""
    f64 = xp.float64
    return (xp.sum(xp.astype(st.class_sums[:, 0, :], f64), axis=1), xp.astype(st.sq_sum[:, 0], f64),
            xp.astype(st.dist_sum[:, 0], f64))


class DeviceBackend:
    """Kernel sums (and, where they apply, bounds) on a PyTorch or array-API device (``device=``).

    The functions of this module behind :class:`nwbound.engine.Backend`. What it
    decides once per call, from the queries alone: whether the bounds run on the device too
    (:meth:`intervals`; PyTorch queries there, and not PyTorch's CPU unless the config key
    ``device_bounds_on_cpu``); otherwise its statistics cross to the host's bounds.

    Parameters
    ----------
    estimator : NadarayaWatsonClassifier
        A fitted classifier with ``device`` set (read at each call, as ``working_memory`` and
        ``histogram_bins``).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.engine.device._backend import DeviceBackend
    >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
    >>> DeviceBackend.is_usable_for(clf), DeviceBackend.keeps_queries
    (False, True)
    """

    keeps_queries = True

    def __init__(self, estimator: Any) -> None:
        self._est = estimator

    @classmethod
    def is_usable_for(cls, estimator: Any) -> bool:
        """``device=`` given (its kernel was checked at fit and at predict: ``_check_device``)."""
        return getattr(estimator, "device", None) is not None

    def serves(self, estimator: Any) -> bool:
        """Whether this backend is still the one :func:`select_backend` picks for ``estimator``."""
        return self._est is estimator and self.is_usable_for(estimator)

    def _searches(self) -> bool:
        """An exact index (``algorithm="auto"`` promises exact search, or HNSW where exact is too slow:
        on the device exact is cheap): the localized classifier's k-NN runs on the device."""
        from ...neighbors import AutoIndex, ExactIndex

        return self._est.index_ is not None and isinstance(self._est.index_, (ExactIndex, AutoIndex))

    # -- the reductions ------------------------------------------------------------------------
    def statistics(self, X: Any, bandwidths: np.ndarray, *, need_dist: bool, tail_radius: float | None,
                   histogram_bins: int, keep_points: bool) -> KernelStatistics:
        """The bound-form statistics of validated queries at ``bandwidths``, computed on the device
        and brought to the host (NumPy float64)."""
        est = self._est
        inputs = est.__nwbound_fitted_inputs__()
        extra: dict = {}
        if est.index_ is None:
            if histogram_bins:
                extra["histogram_bins"] = int(histogram_bins)
            return dense_kernel_sums_array_api(X, inputs.train, est.kernel_, bandwidths, need_dist=need_dist,
                                               tail_radius=tail_radius, device=est.device,
                                               working_memory=est.working_memory, **extra)
        inputs.check_device()
        if keep_points:
            extra["keep_points"] = True
        _, idx = self.kneighbors(X, int(est.n_neighbors))
        return neighbor_kernel_sums_array_api(idx, inputs.train, est.kernel_, bandwidths, queries=X,
                                              need_dist=need_dist, tail_radius=tail_radius, device=est.device,
                                              working_memory=est.working_memory, **extra)

    def kneighbors(self, X: Any, n_neighbors: int) -> tuple[Any, Any]:
        """``(distances or None, indices)``: the exact search where the queries are (nothing crosses),
        or the host index's (an HNSW index is on the host)."""
        est = self._est
        inputs = est.__nwbound_fitted_inputs__()
        if not self._searches():  # an HNSW index searches on the host
            return inputs.index_kneighbors(X, n_neighbors)
        _, idx = device_kneighbors(X, inputs.train, int(n_neighbors), device=est.device,
                                   working_memory=est.working_memory)
        return None, idx

    def ranks_from_moments(self) -> bool:
        """False: the device ranks the grid from every bandwidth's sums."""
        return False

    def ranks_first(self, specs: dict, fraction: float) -> bool:
        """False: the public rounds rank from the exhaustive statistics here (:meth:`chooses_first`
        is the route's own ranking on the device)."""
        return False

    def ranking(self, X: Any, fraction: float, row_offset: int = 0) -> None:
        """None: the public ranking is the exhaustive statistics (:meth:`choice_ranking` ranks on the device)."""
        return None

    def _bounds_served(self, specs: dict, bandwidths: np.ndarray) -> bool:
        """Settings the device bounds serve (:func:`bounds_on_device`) and, for the localized
        classifier, an exact index. Not for a float32 fit stored in a feature unit other than 1 (data
        beyond 2^±100): the device route takes the bandwidth and the distance sums in the input's
        units, so such a fit's statistics cross to the host's bounds (which restate them)."""
        est = self._est
        if est.__nwbound_fitted_inputs__().feature_unit != 1.0 or (est.index_ is not None and not self._searches()):
            return False
        return bounds_on_device(specs, localized=est.index_ is not None, bandwidths=bandwidths, kernel=est.kernel_)

    # -- the route -----------------------------------------------------------------------------
    def intervals(self, X: Any, specs: dict) -> dict | None:
        """Every setting's intervals of validated queries, statistics *and* bounds on the device, where
        its bounds serve these settings and queries; None otherwise (the estimator then bounds
        :meth:`statistics` on the host).

        ``bandwidth="auto"`` (where the device bounds one bandwidth and the queries reach a PyTorch
        device that is not its CPU, or ``device_bounds_on_cpu``): the grid ranked where the queries
        live (:func:`device_ranking`, with one exact search for the localized classifier that every
        group's bounds reuse), each setting's choice there, then :func:`intervals_on_device` once per
        chosen bandwidth, the results where ``X`` lives. Otherwise one :func:`intervals_on_device` at
        the fit's one bandwidth."""
        est = self._est
        grid = est.bandwidths_
        if X.shape[0] == 0 or grid.shape[0] < 2:
            return self._intervals_at(X, specs, grid) if self._bounds_served(specs, grid) else None
        if not self._bounds_served(specs, grid[:1]) or not self._bounds_run_where_queries_go():
            return None
        inputs = est.__nwbound_fitted_inputs__()
        Q = _on_device(X, est.device)
        unit, k = inputs.feature_unit, None if est.index_ is None else int(est.n_neighbors)
        neighbors = None
        if k is not None:
            _, neighbors = device_kneighbors(Q, inputs.train, k, working_memory=est.working_memory)
        ranking = device_ranking(Q, inputs.train, est.kernel_, grid / unit, feature_unit=unit,
                                 fraction=est.ranking_fraction_ if k is None else 1.0, n_neighbors=k,
                                 neighbors=neighbors, working_memory=est.working_memory)
        out = {}
        for choice, names in choice_groups(specs, ranking):
            rows, used, inverse = rows_by_choice(choice, grid.shape[0])
            group = {name: specs[name] for name in names}
            parts = [self._intervals_at(Q[r], group, grid[g : g + 1], None if neighbors is None else neighbors[r])
                     for g, r in zip(used, rows)]
            out.update({name: type(parts[0][name]).concatenate([p[name] for p in parts]).take(inverse)
                        for name in names})
        return delivered(out, X)

    def _bounds_run_where_queries_go(self) -> bool:
        """The estimator's device is not PyTorch's CPU (there the host's solver is faster), or the
        config key ``device_bounds_on_cpu`` asks for the device bounds there anyway."""
        import torch

        device = self._est.device
        target = torch.device(device) if isinstance(device, str) else device
        return target.type != "cpu" or get_config()["device_bounds_on_cpu"]

    def _intervals_at(self, X: Any, specs: dict, bandwidths: np.ndarray, neighbors: Any = None) -> dict | None:
        """:func:`intervals_on_device` at the one bandwidth of ``bandwidths`` (``neighbors``: the
        localized classifier's, when already searched on the device)."""
        est = self._est
        inputs = est.__nwbound_fitted_inputs__()
        return intervals_on_device(
            X, inputs.train, est.kernel_, float(bandwidths[0]), specs, device=est.device, box=inputs.box,
            fallback=inputs.fallback_rows, histogram_bins=int(est.histogram_bins), working_memory=est.working_memory,
            n_neighbors=None if est.index_ is None else int(est.n_neighbors), neighbors=neighbors,
        )

