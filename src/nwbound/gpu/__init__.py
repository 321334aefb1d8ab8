"""Kernel statistics of the regular classifier on any array library and device (optional extras).

:func:`kernel_statistics` runs in the inputs' own namespace (NumPy, PyTorch CPU/CUDA, CuPy, any
array-API library via ``array_api_compat``); on CUDA tensors with Triton installed it uses a fused
kernel that never writes the distance block to memory (:mod:`nwbound.gpu._triton`).
:func:`dense_kernel_sums_array_api` is the estimator-facing adapter with the signature of the CPU
engine's ``dense_kernel_sums``.
"""

from ._array_api import (
    HISTOGRAM_KERNELS,
    SUPPORTED_KERNELS,
    DeviceTrainingSet,
    KernelStatistics,
    array_namespace_of,
    kernel_statistics,
)
from ._engine import dense_kernel_sums_array_api

__all__ = [
    "kernel_statistics",
    "KernelStatistics",
    "DeviceTrainingSet",
    "array_namespace_of",
    "dense_kernel_sums_array_api",
    "SUPPORTED_KERNELS",
    "HISTOGRAM_KERNELS",
]
