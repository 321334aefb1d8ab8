"""The estimator's ``device=`` path: its training set through :func:`nwbound.gpu.kernel_statistics`
(regular classifier) or :func:`nwbound.gpu.neighbor_kernel_statistics` (localized), and its outputs
in the queries' namespace under scikit-learn's ``array_api_dispatch`` (:func:`queries_on_host`).

What crosses to the host under dispatch with ``device=`` (:func:`validate_queries` with
``keep_namespace``): never the queries of the regular classifier (checked and cast in their own
namespace, read by the kernel pass on the device); the localized classifier's queries once, for
the host neighbour index; the per-query sums (``KernelStatistics``, float64) and the ``outside_box``
flags, for the float64 bound arithmetic, whose results go back. Without ``device=`` (and for the
dyadic classifier) the queries make one round trip. Where the bounds run on the device too
(:func:`intervals_on_device`), a call reads the device twice: the queries' checks (one flag) and
one packed read of a few numbers at its end (the vacuous count, the usefulness report's numbers).

Lives with the estimators (which import :mod:`nwbound.gpu` on use), so that
:mod:`nwbound.gpu` never imports the estimators.
"""

from __future__ import annotations

import dataclasses
import math
import functools
from typing import Any, Callable

import os

import numpy as np
import sklearn
from sklearn.utils.validation import validate_data

from .._result import PredictionInterval
from ..kernels import Kernel
from ..gpu import (
    HISTOGRAM_KERNELS,
    DeviceTrainingSet,
    array_namespace_of,
    compat,
    kernel_statistics,
    neighbor_kernel_statistics,
)
from .._numerics import compose_errors, direct_d2_error_factor, summation_error, to_feature_unit
from ..gpu._array_api import to_host
from ..engine import KernelStatistics
from ._sums import TrainingSet
from ._sums_data import u2_error_rows, zero_statistics

__all__ = [
    "dense_kernel_sums_array_api",
    "neighbor_kernel_sums_array_api",
    "outside_box",
    "queries_on_host",
    "validate_queries",
]


def queries_on_host(X: Any, *, keep_on_device: bool = False) -> tuple[Any, Callable[[Any], Any]]:
    """``X`` for the host code, and the function that puts a result where ``X`` came from.

    Under scikit-learn's ``array_api_dispatch`` (``sklearn.set_config(array_api_dispatch=True)``
    or ``sklearn.config_context(array_api_dispatch=True)``), with queries ``X`` that are a
    non-NumPy array-API array (PyTorch, CuPy, ``array_api_strict``, ...): a NumPy copy of ``X``
    (one host copy), or with ``keep_on_device`` ``X`` itself (an estimator with ``device=``: it
    validates and computes on ``X`` where it lives, :func:`validate_queries`), and a
    function that moves every numeric array of a result — an array, a
    :class:`~nwbound.PredictionInterval` or a dict of them — to ``X``'s namespace and device (as
    scikit-learn's ``move_to``); non-numeric arrays (string class labels) stay NumPy. Otherwise
    (dispatch off, the default, or NumPy / list queries): ``X`` itself and the identity.

    A helper called at the start and the returns of ``predict``, ``predict_proba`` and
    ``predict_interval``, not a decorator: an extra frame would move the ``stacklevel`` of their
    warnings off the user's line.

    Raises
    ------
    ValueError
        When ``X``'s device has no float64 (the bounds are float64: rounding them to float32 would
        move them inwards).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.estimators._device import queries_on_host
    >>> X, restore = queries_on_host(np.zeros((1, 3)))  # NumPy in: unchanged, NumPy out
    >>> restore(np.full((1, 2), 0.5)).tolist()
    [[0.5, 0.5]]
    """
    target = _dispatch_target(X)
    if target is None:
        return X, _same
    return (X if keep_on_device else to_host(X)), functools.partial(_to_namespace, xp=target[0], dev=target[1])


def training_data_on_host(*arrays: Any) -> tuple[Any, ...]:
    """``fit``'s arrays (``X``, ``y``, ``sample_weight``) as NumPy where ``array_api_dispatch`` hands
    them in another array-API namespace (PyTorch, CuPy, ``array_api_strict``); others unchanged.

    The training set lives on the host (with ``device=`` it is copied to the device once, at the
    first prediction), so a fit under dispatch takes one host copy of what it is given.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.estimators._device import training_data_on_host
    >>> X, y, w = training_data_on_host(np.zeros((2, 1)), [0, 1], None)  # dispatch off: unchanged
    >>> y, w
    ([0, 1], None)
    """
    return tuple(to_host(a) if _is_dispatched(a) else a for a in arrays)


def validate_queries(estimator: Any, X: Any, dtype: Any, *, keep_namespace: bool = False, unit: float = 1.0) -> Any:
    """``estimator``'s checked queries in ``dtype`` (the fit dtype): NumPy, or in their own namespace.

    scikit-learn's ``validate_data`` (2-D, ``n_features_in_``, feature names, finite values, real
    numbers) in every case. ``array_api_dispatch`` queries (non-NumPy array-API arrays while
    dispatch is on) are checked in their own namespace and cast there with ``keep_namespace`` (the
    ``device=`` path: nothing crosses to the host but the checks' scalar answers); without it
    they are copied to the host first (the host engines, and the public methods that return
    NumPy: ``kernel_statistics``, ``kneighbors``, ``bandwidth_ranking``). The queries come back
    divided by ``unit`` (the fit's :func:`~nwbound._numerics.feature_unit`, a power of two) before
    the cast; a value ``dtype`` cannot hold then raises a ValueError naming the dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.estimators._device import validate_queries
    >>> clf = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale").fit([[0.0], [1.0]], [0, 1])
    >>> validate_queries(clf, [[0.5]], np.float64).dtype
    dtype('float64')
    """
    if _is_dispatched(X):
        if keep_namespace:
            xp = compat().array_namespace(X)
            want = xp.float32 if np.dtype(dtype) == np.float32 else xp.float64
            # One read answers every value check: X finite and X/unit within the fit dtype (the cast of
            # a value that is not finite is not finite); where it fails, the checks again, each with its
            # message. A plain PyTorch matrix skips scikit-learn's structural checks (shape, dtype and
            # feature names, about a millisecond of host time before the first kernel): it passes them.
            plain = _plain_torch_queries(estimator, X)
            Xv = X if plain else validate_data(estimator, X, reset=False, dtype=[xp.float64, xp.float32],
                                               ensure_all_finite=False)
            scaled = Xv if unit == 1.0 else Xv / unit  # exact: a power of two
            out = scaled if scaled.dtype == want else xp.astype(scaled, want)
            if not bool(xp.all(xp.isfinite(out))):  # the one read
                Xv = validate_data(estimator, X, reset=False, dtype=[xp.float64, xp.float32])  # NaN, inf: sklearn's
                to_feature_unit(to_host(Xv), unit, dtype)  # raises the explanation (float32 overflow)
            return out
        X = to_host(X)
    X = validate_data(estimator, X, reset=False, dtype=[np.float64, np.float32])
    return to_feature_unit(X, unit, dtype)


def _plain_torch_queries(estimator: Any, X: Any) -> bool:
    """Whether ``X`` is a PyTorch float32/float64 matrix with at least one row and the fit's number of
    features, for an estimator fit without feature names: ``validate_data``'s structural checks
    would pass it unchanged (its value checks still run, :func:`validate_queries`)."""
    if not compat().is_torch_array(X) or getattr(estimator, "feature_names_in_", None) is not None:
        return False
    import torch

    return (X.ndim == 2 and X.shape[0] >= 1 and X.shape[1] == getattr(estimator, "n_features_in_", -1)
            and X.dtype in (torch.float32, torch.float64) and not X.requires_grad)


def outside_box(X: Any, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Rows of ``X`` (any namespace) with a coordinate outside ``[low, high]``, as NumPy booleans.

    Computed where ``X`` lives; only the ``n`` answers cross to the host.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.estimators._device import outside_box
    >>> outside_box(np.array([[0.5], [2.0]]), np.zeros(1), np.ones(1)).tolist()
    [False, True]
    """
    if isinstance(X, np.ndarray):
        return np.any((X < low) | (X > high), axis=1)
    xp, dev = compat().array_namespace(X), compat().device(X)
    lo, hi = (xp.asarray(np.ascontiguousarray(b, dtype=np.float64), device=dev) for b in (low, high))
    return to_host(xp.any((X < lo) | (X > hi), axis=1))


def _same(out: Any) -> Any:
    return out


def _is_dispatched(X: Any) -> bool:
    """Whether ``X`` is a non-NumPy array-API array while ``array_api_dispatch`` is on."""
    if isinstance(X, np.ndarray) or not sklearn.get_config().get("array_api_dispatch", False):
        return False
    aac = compat()
    return bool(aac.is_array_api_obj(X) and not aac.is_numpy_array(X))


def _dispatch_target(X: Any) -> tuple[Any, Any] | None:
    """``(namespace, device)`` of array-API queries under ``array_api_dispatch``, else None."""
    if not _is_dispatched(X):
        return None
    aac = compat()
    xp, dev = aac.array_namespace(X), aac.device(X)
    info = getattr(xp, "__array_namespace_info__", None)
    # PyTorch's info lists the same dtypes for every device, but MPS has no float64.
    no_float64 = aac.is_torch_namespace(xp) and getattr(dev, "type", "") == "mps"
    if no_float64 or (info is not None and "float64" not in info().dtypes(device=dev, kind="real floating")):
        raise ValueError(
            f"The queries' device {dev!r} has no float64, and the probabilities and bounds are float64 "
            "(float32 would round the bounds inwards): pass the queries on a device with float64 (e.g. the "
            "CPU), or turn scikit-learn's array_api_dispatch off to get NumPy results."
        )
    return xp, dev


def _to_namespace(out: Any, xp: Any, dev: Any) -> Any:
    if isinstance(out, dict):
        return {k: _to_namespace(v, xp, dev) for k, v in out.items()}
    if isinstance(out, PredictionInterval):
        return dataclasses.replace(out, **{
            f.name: _to_namespace(getattr(out, f.name), xp, dev) for f in dataclasses.fields(out)})
    if isinstance(out, np.ndarray) and out.dtype.kind in "biuf":
        return xp.asarray(np.ascontiguousarray(out), device=dev)
    return out  # None, and labels that are not numbers (no array-API dtype)


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
        from ..utils import install_hint

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
    :func:`nwbound.gpu._neighbors.exact_kneighbors` on the training set copied there once.

    Returns float64 distances and int64 row indices (ascending; ties to the lower row) as tensors.

    Examples
    --------
    >>> import numpy as np
    >>> import torch  # the device path needs PyTorch
    >>> from nwbound.estimators._sums import TrainingSet
    >>> from nwbound.estimators._device import device_kneighbors
    >>> train = TrainingSet.build(np.array([[0.0], [1.0], [3.0]]), np.array([0, 1, 1]), 2, None)
    >>> d, i = device_kneighbors(np.array([[0.9]]), train, 2, device="cpu")
    >>> i.tolist()
    [[1, 0]]
    """
    from ..gpu._neighbors import exact_kneighbors

    Q = _on_device(Xq, device)
    xp, dev = array_namespace_of(Q), compat().device(Q)
    X_dev, _ = _neighbor_training_set(train, xp, dev)
    dtype = "float32" if train.X.dtype == np.float32 else "float64"
    return exact_kneighbors(Q, _device_training_set(train, xp, dev, dtype), xp.astype(X_dev, xp.float64),
                            int(n_neighbors), working_memory=working_memory)


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
    """:func:`nwbound.estimators._sums.neighbor_kernel_sums` (with ``queries``) on a device.

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
    >>> from nwbound.estimators._sums import TrainingSet
    >>> from nwbound.kernels import get_kernel
    >>> from nwbound.estimators._device import neighbor_kernel_sums_array_api
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
    """:func:`nwbound.estimators._sums.dense_kernel_sums` on ``Xq``'s namespace and device.

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
    >>> from nwbound.estimators._sums import TrainingSet
    >>> from nwbound.kernels import get_kernel
    >>> from nwbound.estimators._device import dense_kernel_sums_array_api
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


# PyTorch's CPU device: the statistics there, the bounds by the host's (numba) solver, which beats
# the batched search on CPU cores. True routes them through the device search too (the tests do).
BOUNDS_ON_CPU = False

# The regular classifier's band-Chernoff search on a GPU: measured on an H100 at the ECG shapes
# (bench_device_bounds.py), the eager PyTorch search took 520 ms, slower than the statistics pass
# plus the host solver (≈ 0.3 s). It runs on the device where the fused Triton search
# (nwbound.bounds._chernoff_triton) is installed, or when the compiled eager search is asked for
# (NWBOUND_COMPILE_BOUNDS); the localized classifier's per-point search (eager on CUDA; the fused
# Triton form with NWBOUND_FUSED_GROUPED=1, its ends re-checked in float64) and Hoeffding always run there.
REGULAR_CHERNOFF_ON_DEVICE = os.environ.get("NWBOUND_COMPILE_BOUNDS", "0") not in ("", "0")


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
    >>> from nwbound.estimators._sums import TrainingSet
    >>> from nwbound.gpu import kernel_statistics
    >>> from nwbound.estimators._device import device_bound_statistics
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
    from ..gpu._triton import installed

    if np.size(bandwidths) != 1 or not specs or not installed("torch"):
        return False
    if any(s.form not in ("hoeffding", "chernoff") for s in specs.values()):
        return False
    if not any(s.is_chernoff for s in specs.values()):
        return True
    if localized:
        return True
    fused = installed("triton") and os.environ.get("NWBOUND_TRITON_SEARCH", "1") != "0"
    return kernel.name in HISTOGRAM_KERNELS and (REGULAR_CHERNOFF_ON_DEVICE or fused)


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
    ``n_neighbors`` nearest by :func:`nwbound.gpu._neighbors.exact_kneighbors` (no host search) and
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
    >>> from nwbound.estimators._sums import TrainingSet
    >>> from nwbound.kernels import get_kernel
    >>> from nwbound.estimators import _device
    >>> from nwbound.estimators._device import intervals_on_device
    >>> _device.BOUNDS_ON_CPU = True  # PyTorch's CPU device standing in for a GPU
    >>> X = np.linspace(0.0, 1.0, 21)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> train = TrainingSet.build(X, y, 2, None)
    >>> out = intervals_on_device(np.array([[0.1]]), train, get_kernel("epanechnikov"), 0.3,
    ...                           {None: BoundSpec(form="chernoff", beta=0.0, delta_prime=0.05)}, device="cpu",
    ...                           fallback=lambda v: np.full((int(v.sum()), 2), 0.5), box=(X.min(0), X.max(0)))
    >>> out[None].proba.tolist(), round(float(out[None].lower[0, 0]), 3)
    ([[1.0, 0.0]], 0.631)
    >>> _device.BOUNDS_ON_CPU = False
    """
    import torch

    from ..bounds._chernoff_device import device_limits

    numpy_in = isinstance(Xq, np.ndarray)
    Q = _on_device(Xq, device)
    if not compat().is_torch_array(Q):  # the device bounds are PyTorch's: the caller takes the host route
        return None
    if Q.device.type == "cpu" and not BOUNDS_ON_CPU:  # the host's compiled solver is faster on the CPU
        return None
    xp = array_namespace_of(Q)
    dev = compat().device(Q)
    unit = train.weight_unit
    lam = float(bandwidth)
    dtype = "float32" if train.X.dtype == np.float32 else "float64"
    n_q = int(Q.shape[0])
    chernoff = any(s.is_chernoff for s in specs.values())
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
    # 2. The same statistics in the bound form, still on the device; 3. every setting's bound there.
    stats = device_bound_statistics(st, train, n_neighbors=n_neighbors)
    limits = {name: device_limits(spec, stats) for name, spec in specs.items()}
    first = next(iter(limits.values()))
    vacuous = first["vacuous"]
    proba = first["proba"]  # S/κ; the fallback rows (κ = 0) are set after the read below
    kappa = first["kappa"] * unit  # back to the input's units (inf where not representable, as the host)
    low, high = _box_on_device(train, box, Q.device)
    outside = torch.any((Q < low) | (Q > high), dim=1)
    common = dict(kappa=kappa, n_eff=first["n_eff"], vacuous=vacuous,
                  bandwidth=torch.full((n_q,), lam, dtype=torch.float64, device=Q.device), outside_box=outside)
    out = {}
    for name, lim in limits.items():
        lower, upper = lim["lower"], lim["upper"]
        epsilon = lim["epsilon"]
        if specs[name].is_chernoff:  # ε from p̂ where κ > 0 (the fallback rows are [0, 1] with ε = 1)
            epsilon = torch.where(vacuous[:, None], 1.0, torch.maximum(proba - lower, upper - proba))
        fields = dict(proba=proba, lower=lower, upper=upper, epsilon=epsilon, bias=lim["bias"],
                      sampling=lim["sampling"], **common)
        out[name] = PredictionInterval(**{k: v.contiguous() for k, v in fields.items()})
    target = Xq.device if not numpy_in and compat().is_torch_array(Xq) else None
    # The call's one read: the number of rows without mass and, for results that stay on the device
    # and the estimator's own setting (None, the one predict_interval warns about), the numbers of its
    # usefulness report. Neither depends on the fallback rows' p̂ (they are vacuous: [0, 1], ε = 1,
    # never certified, no bias share).
    summary = target is not None and None in out and n_q > 0
    packed = [vacuous.sum().to(torch.float64)[None]] + ([usefulness_parts(out[None])] if summary else [])
    read = torch.cat(packed).tolist()
    n_vacuous = int(read[0])
    if n_vacuous:  # the rule (and its error) is the estimator's
        filled = _with_fallback(proba, vacuous, n_vacuous, fallback)
        out = {name: dataclasses.replace(iv, proba=filled) for name, iv in out.items()}
    if numpy_in or target is None:  # NumPy, or another array-API library: its own namespace via the estimator's restore
        return {name: _interval_to_host(iv) for name, iv in out.items()}
    result = DeviceIntervals({name: dataclasses.replace(iv, **{f.name: getattr(iv, f.name).to(target)
                                                               for f in dataclasses.fields(iv)})
                              for name, iv in out.items()})
    result.usefulness = tuple(read[1:]) if summary else None
    return result


def _box_on_device(train: TrainingSet, box: tuple[np.ndarray, np.ndarray], dev: Any) -> tuple[Any, Any]:
    """The bounding box's ends as float64 tensors on ``dev``, copied once per box and device: a copy
    to a GPU from pageable memory waits for the device's queue (a synchronisation)."""
    import torch

    low, high = (np.ascontiguousarray(b, dtype=np.float64) for b in box)
    key = ("box", str(dev), low.tobytes(), high.tobytes())
    if key not in train._cache:
        train._cache[key] = (torch.as_tensor(low, device=dev), torch.as_tensor(high, device=dev))
    return train._cache[key]


class DeviceIntervals(dict):
    """:func:`intervals_on_device`'s tensor results (setting name to interval, a plain ``dict``), with
    ``usefulness``: the numbers :func:`usefulness_on_device` reads for the setting ``None``, read
    with the call's one packed copy (None where not computed).

    Examples
    --------
    >>> from nwbound.estimators._device import DeviceIntervals
    >>> DeviceIntervals({None: 1}).usefulness is None
    True
    """

    usefulness: tuple | None = None


def _with_fallback(proba: Any, vacuous: Any, n_vacuous: int, fallback: Callable[[np.ndarray], np.ndarray]) -> Any:
    """``proba`` with ``fallback``'s rows where ``vacuous``: the estimator's rule gives one row to every
    vacuous query (the prior, or uniform) or raises with their count, so it is asked with the count
    alone; a rule whose rows differ gets the rows themselves (a second read)."""
    import torch

    n = int(proba.shape[0])
    stand_in = np.zeros(n, dtype=bool)
    stand_in[:n_vacuous] = True
    rows = np.asarray(fallback(stand_in), dtype=np.float64)
    if rows.shape == (n_vacuous, proba.shape[1]) and np.all(rows == rows[:1]):
        # The row filled on the device (a copy from the host would wait for the device's queue).
        row = torch.stack([torch.full((), float(v), dtype=torch.float64, device=proba.device) for v in rows[0]])
        return torch.where(vacuous[:, None], row, proba)
    vac_host = to_host(vacuous)
    where = torch.as_tensor(np.flatnonzero(vac_host), device=proba.device)
    filled = proba.clone()
    filled[where] = torch.as_tensor(fallback(vac_host), dtype=torch.float64, device=proba.device)
    return filled


def _masked_median(torch: Any, values: Any, keep: Any) -> Any:
    """``np.median(values[keep])`` where ``values`` live, without a read: NaN where nothing is kept or
    a kept value is NaN; with an even count the mean ``(a + b)/2`` of the middle two, as NumPy's.
    Along the last axis: stacked rows of ``values`` and ``keep`` give one median each (one sort)."""
    count = keep.sum(-1)
    ordered = torch.sort(torch.where(keep, values, math.inf), dim=-1).values  # kept values first
    middle = torch.stack([torch.clamp((count - 1) // 2, min=0), count // 2], -1)
    # gather, not ordered[lo]: a 0-d index tensor is read on the host (ATen selects with its item).
    a, b = torch.gather(ordered, -1, middle).unbind(-1)
    mid = torch.where(count % 2 == 1, a, (a + b) / 2.0)
    bad = (count == 0) | (keep & torch.isnan(values)).any(-1)
    return torch.where(bad, math.nan, mid)


def usefulness_parts(interval: PredictionInterval) -> Any:
    """The numbers of :func:`nwbound.diagnostics.bound_usefulness` for a tensor interval, computed where
    it lives (nothing read): a float64 tensor ``[trivial, vacuous, certified]`` (counts), then the
    median and mean bias share, the median factor for half bias and the median ε (the same rules).

    Examples
    --------
    >>> import torch
    >>> from nwbound import PredictionInterval
    >>> from nwbound.estimators._device import usefulness_parts
    >>> p = torch.tensor([[0.5, 0.5]], dtype=torch.float64)
    >>> iv = PredictionInterval(proba=p, lower=0 * p, upper=1 + 0 * p, epsilon=p, bias=p, sampling=p,
    ...                         kappa=p[:, 0], n_eff=p[:, 0], vacuous=torch.tensor([False]), bandwidth=p[:, 0])
    >>> usefulness_parts(iv).tolist()
    [1.0, 0.0, 0.0, 0.5, 0.5, 1.0, 0.5]
    """
    import torch

    f64 = torch.float64
    vac = interval.vacuous.to(torch.bool)
    live = ~vac
    certified, _ = device_certificates(interval)
    trivial = torch.all((interval.lower <= 0.0) & (interval.upper >= 1.0), dim=1)
    top = torch.argmax(interval.proba, dim=1)[:, None]  # the first of the largest, as np.argmax
    eps, bias, samp = (torch.gather(getattr(interval, k).to(f64), 1, top)[:, 0]
                       for k in ("epsilon", "bias", "sampling"))
    total = bias + samp
    share = bias / total
    has = live & (total > 0) & torch.isfinite(share)
    factor = samp / bias  # β' with β'·b = s (bias share 1/2), as a factor of the current β
    fin = live & (bias > 0) & torch.isfinite(factor)
    mean_share = torch.where(has, share, 0.0).sum() / has.sum()  # NaN where none
    # the three medians in one sort: the bias share, the factor for half bias, ε
    share_m, factor_m, eps_m = _masked_median(
        torch, torch.stack([share.to(f64), factor.to(f64), torch.where(vac, 1.0, eps)]),
        torch.stack([has, fin, torch.ones_like(vac)])).unbind()
    return torch.stack([trivial.sum().to(f64), vac.sum().to(f64), certified.sum().to(f64),
                        share_m, mean_share.to(f64), factor_m, eps_m])


def usefulness_on_device(interval: PredictionInterval, parts: Any = None, *, beta: float | None = None,
                         trivial_threshold: float = 0.5, context: Any = None) -> Any:
    """:func:`nwbound.diagnostics.bound_usefulness` of a tensor interval from :func:`usefulness_parts`
    (``parts``: those numbers already read, as :func:`intervals_on_device` does; else one read here).

    The same report, to the mean bias share's last bits (a sum in another order); None for an
    interval without rows (the host's report then raises its error).

    Examples
    --------
    >>> import torch
    >>> from nwbound import PredictionInterval
    >>> from nwbound.estimators._device import usefulness_on_device
    >>> p = torch.tensor([[0.5, 0.5]], dtype=torch.float64)
    >>> iv = PredictionInterval(proba=p, lower=0 * p, upper=1 + 0 * p, epsilon=p, bias=p, sampling=p,
    ...                         kappa=p[:, 0], n_eff=p[:, 0], vacuous=torch.tensor([False]), bandwidth=p[:, 0])
    >>> report = usefulness_on_device(iv)
    >>> report.useless, report.share_trivial, report.cause
    (True, 1.0, 'sampling')
    """
    from ..diagnostics import BoundUsefulness

    n = int(interval.proba.shape[0])
    if n == 0:
        return None
    values = list(parts) if parts is not None else usefulness_parts(interval).tolist()  # one read
    trivial, vacuous, certified, median_share, mean_share, factor, median_eps = values
    return BoundUsefulness.from_summary(n, trivial / n, vacuous / n, certified / n, median_share, mean_share, factor,
                                        median_eps, beta=beta, trivial_threshold=trivial_threshold, context=context)


def _interval_to_host(iv: PredictionInterval) -> PredictionInterval:
    """A tensor interval as NumPy in one device-to-host copy (every field packed into one float64 block)."""
    import torch

    names = [f.name for f in dataclasses.fields(iv)]
    cols = [getattr(iv, k).to(torch.float64).reshape(iv.proba.shape[0], -1) for k in names]
    packed = torch.cat(cols, 1).cpu().numpy()
    out, at = {}, 0
    for k, c in zip(names, cols):
        block = packed[:, at : at + c.shape[1]]
        at += c.shape[1]
        ref = getattr(iv, k)
        if ref.dtype == torch.bool:
            out[k] = block[:, 0] > 0.5
        else:
            out[k] = np.ascontiguousarray(block if ref.ndim == 2 else block[:, 0])
    return PredictionInterval(**out)


def device_certificates(interval: PredictionInterval) -> tuple[Any, Any]:
    """:attr:`~nwbound.PredictionInterval.certified` and :attr:`~nwbound.PredictionInterval.error_upper`
    of an interval whose arrays are PyTorch tensors, computed where they live (same rules: the
    predicted class is the first of largest ``proba``; it is certified when its lower end lies
    strictly above every other class's upper end and the row is not vacuous).

    Examples
    --------
    >>> import numpy as np
    >>> import torch
    >>> from nwbound import PredictionInterval
    >>> from nwbound.estimators._device import device_certificates
    >>> iv = PredictionInterval.from_parts(
    ...     proba=np.array([[0.9, 0.1], [0.5, 0.5]]), bias=np.full((2, 2), 0.1),
    ...     sampling=np.full((2, 2), 0.2), kappa=np.array([10.0, 10.0]), n_eff=np.array([8.0, 8.0]),
    ...     vacuous=np.array([False, False]), bandwidth=np.array([1.0, 1.0]))
    >>> t = PredictionInterval(**{k: torch.as_tensor(v) for k, v in vars(iv).items() if v is not None})
    >>> certified, error_upper = device_certificates(t)
    >>> certified.tolist(), [round(v, 2) for v in error_upper.tolist()]
    ([True, False], [0.4, 0.8])
    """
    import torch

    proba, lower, upper = interval.proba, interval.lower, interval.upper
    n, C = proba.shape
    top = torch.argmax(proba, dim=1)  # the first of the largest, as np.argmax
    low_top = torch.gather(lower, 1, top[:, None])[:, 0]
    live = ~interval.vacuous.to(torch.bool)
    if C < 2:
        return live, 1.0 - low_top
    others = upper.scatter(1, top[:, None], -math.inf).amax(1)
    return (low_top > others) & live, 1.0 - low_top


def interval_on_host(interval: PredictionInterval) -> PredictionInterval:
    """A copy of ``interval`` with every array as NumPy (:func:`~nwbound.gpu._array_api.to_host`).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> from nwbound.estimators._device import interval_on_host
    >>> iv = PredictionInterval.from_parts(proba=np.array([[1.0]]), bias=np.zeros((1, 1)),
    ...     sampling=np.zeros((1, 1)), kappa=np.ones(1), n_eff=np.ones(1), vacuous=np.array([False]),
    ...     bandwidth=np.ones(1))
    >>> interval_on_host(iv).proba.tolist()
    [[1.0]]
    """
    values = [getattr(interval, f.name) for f in dataclasses.fields(interval)]
    if all(compat().is_torch_array(v) for v in values):  # the device path's intervals: one packed copy
        return _interval_to_host(interval)
    return dataclasses.replace(interval, **{f.name: None if getattr(interval, f.name) is None
                                            else to_host(getattr(interval, f.name)) for f in dataclasses.fields(interval)})
