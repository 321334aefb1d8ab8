"""Kernel statistics of the regular classifier on any array library and device (optional extras).

:func:`kernel_statistics` (and :func:`neighbor_kernel_statistics`, the localized classifier's
sums over given neighbours) runs in the inputs' own namespace (NumPy, PyTorch CPU/CUDA, CuPy, any
array-API library via ``array_api_compat``); on CUDA tensors with Triton installed it uses a fused
kernel that never writes the distance block to memory. This package is the public face of the
engine's device half (``nwbound.engine.device``, where the code lives); the estimators reach it
through ``NadarayaWatsonClassifier(device=...)``; :func:`compat` returns the ``array_api_compat``
module in use.
"""

from ..engine.device._array_api import (  # KernelStatistics is nwbound.engine's, the one type of every engine
    HISTOGRAM_KERNELS,
    SUPPORTED_KERNELS,
    DeviceTrainingSet,
    KernelStatistics,
    array_namespace_of,
    compat,
    neighbor_kernel_statistics,
)
from ..engine.device._sums import kernel_statistics  # the entry point: the fused kernel or the array-API pass

__all__ = [
    "kernel_statistics",
    "neighbor_kernel_statistics",
    "KernelStatistics",
    "DeviceTrainingSet",
    "array_namespace_of",
    "compat",
    "SUPPORTED_KERNELS",
    "HISTOGRAM_KERNELS",
]
