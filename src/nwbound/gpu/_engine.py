"""Adapter from the estimator's training set to :func:`kernel_statistics` (the estimator hook)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..estimators._sums import KernelSums, TrainingSet
from ..kernels import Kernel
from ._array_api import DeviceTrainingSet, array_namespace_of, compat, kernel_statistics

__all__ = ["dense_kernel_sums_array_api"]


def _device_training_set(train: TrainingSet, xp: Any, device: Any, dtype: str) -> DeviceTrainingSet:
    key = ("array_api", xp.__name__, str(device), dtype)
    if key not in train._cache:  # one copy to the device per training set, device and dtype
        X = xp.asarray(np.ascontiguousarray(train.X), device=device)
        onehot = xp.asarray(np.ascontiguousarray(train.weighted_onehot), device=device)
        train._cache[key] = DeviceTrainingSet.build(X, onehot, dtype=dtype)
    return train._cache[key]


def dense_kernel_sums_array_api(
    Xq: Any,
    train: TrainingSet,
    kernel: Kernel,
    bandwidths: np.ndarray,
    *,
    need_dist: bool,
    tail_radius: float | None = None,
    dtype: str | None = None,
    engine: str = "auto",
    device: str | None = None,
) -> KernelSums:
    """:func:`nwbound.estimators._sums.dense_kernel_sums` on ``Xq``'s namespace and device.

    The training set is copied to ``Xq``'s device once (cached on ``train``); the sums come back
    to the host as the engine's float64 :class:`~nwbound.estimators._sums.KernelSums`.

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
    dtype : {"float32", "float64"} or None, default=None
        Compute dtype (None: the training set's).
    engine : {"auto", "array_api", "triton"}, default="auto"
    device : str or None, default=None
        A PyTorch device (``"cuda"``, ``"cuda:1"``, ``"cpu"``): NumPy queries are moved there first
        (needs torch). None: compute where ``Xq`` lives.

    Returns
    -------
    KernelSums

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.estimators._sums import TrainingSet
    >>> from nwbound.kernels import get_kernel
    >>> from nwbound.gpu import dense_kernel_sums_array_api
    >>> train = TrainingSet.build(np.array([[0.0], [0.5]]), np.array([0, 1]), 2, None)
    >>> s = dense_kernel_sums_array_api(np.zeros((1, 1)), train, get_kernel("epanechnikov"),
    ...                                 np.array([1.0]), need_dist=False)
    >>> np.round(s.class_sums, 6).tolist()
    [[[1.0, 0.75]]]
    """
    if tail_radius is not None:
        raise ValueError("tail_radius is not supported by the array-API engine: use the CPU engine.")
    if device is not None:
        try:
            import torch
        except ImportError as exc:
            raise ImportError(f"device={device!r} needs PyTorch: pip install 'nwbound[gpu]'.") from exc
        try:
            Xq = torch.as_tensor(Xq, device=torch.device(device))
        except (RuntimeError, TypeError) as exc:
            raise ValueError(f"device={device!r} is not a usable PyTorch device here: {exc}") from exc
    xp = array_namespace_of(Xq)
    device_of = compat().device
    dtype = dtype or ("float32" if train.X.dtype == np.float32 else "float64")
    dev_train = _device_training_set(train, xp, device_of(Xq), dtype)
    bandwidths = np.asarray(bandwidths, dtype=np.float64).ravel()
    n_q = int(Xq.shape[0])
    out = KernelSums.empty(n_q, len(bandwidths), train.n_classes, need_dist, False)
    for g, lam in enumerate(bandwidths):  # a handful of bandwidths, each one full pass
        st = kernel_statistics(
            Xq, dev_train, kernel=kernel, bandwidth=float(lam), need_dist=need_dist, dtype=dtype, engine=engine
        ).to_numpy()
        out.class_sums[:, g] = st.class_sums
        out.sq_sum[:, g] = st.sq_sum
        if need_dist:
            out.dist_sum[:, g] = st.dist_sum
    return out
