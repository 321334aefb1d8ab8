"""Kernel profiles ``K(u)`` of the scaled distance ``u = ‖y − y_i‖/λ``."""

from ._kernels import KERNEL_NAMES, Kernel, gaussian_kernel, get_kernel

__all__ = ["KERNEL_NAMES", "Kernel", "gaussian_kernel", "get_kernel"]
