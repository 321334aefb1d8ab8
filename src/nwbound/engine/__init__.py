"""The engine's shared pieces: the one kernel-statistics type and the array-namespace helpers.

:class:`KernelStatistics` is what every engine returns — the CPU engine behind the estimators,
the array-API and Triton engines of :mod:`nwbound.gpu` — and what the bounds read. It is
re-exported as ``nwbound.estimators.KernelStatistics`` and ``nwbound.gpu.KernelStatistics`` (the
same class). The backends themselves still live in :mod:`nwbound.estimators` (``_sums``,
``_tiles``, ``_fused``: NumPy and numba) and :mod:`nwbound.gpu` (``_array_api``, ``_triton``).

Still to unify (issue 19): the CPU engine's internal ``KernelSums`` (the estimators' path turns it
into the bound form), the device form's histogram units and ``d2_error`` (the estimators' device
path converts them), and the device bounds (:mod:`nwbound.bounds._chernoff_device`), which take
the device form's arrays one by one rather than the statistics object.
"""

from ._namespace import array_namespace_of, compat, to_host
from ._statistics import KernelStatistics

__all__ = ["KernelStatistics", "array_namespace_of", "compat", "to_host"]
