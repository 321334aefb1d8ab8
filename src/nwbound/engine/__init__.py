"""The engine's shared pieces: the one kernel-statistics type, the backend seam and the array-namespace helpers.

:class:`Backend` is what an estimator asks of the engine that computes its kernel sums (the map of
the route is in :mod:`nwbound.engine._backend`); the estimator picks one at ``fit``.

:class:`KernelStatistics` is what every engine returns — the CPU engine behind the estimators,
the array-API and Triton engines of :mod:`nwbound.gpu` — and what the bounds read. It is
re-exported as ``nwbound.estimators.KernelStatistics`` and ``nwbound.gpu.KernelStatistics`` (the
same class). The backends (``nwbound.engine.host._backend``) call the host engines of
:mod:`nwbound.estimators` (``_sums``, ``_tiles``, ``_fused``: NumPy and numba) and :mod:`nwbound.gpu`
(``_array_api``, ``_triton``).

The bounds take the statistics object: the host's :meth:`~nwbound.bounds.BoundSpec.limits` and the
device's :func:`nwbound.bounds._chernoff_device.device_limits` both read the bound form (the
estimators' device path builds it where the statistics live, from the engines' device form and the
training set's weights). The CPU engine fills the bound form directly (``_sums_data.zero_statistics``
allocates it, the passes write its arrays in place); the estimator then only restates the
bandwidths and distances in the input's units and adds what it alone knows (``outside_box``,
``diameter``).
"""

from ._backend import Backend
from .._namespace import array_namespace_of, compat, to_host
from ._statistics import KernelStatistics

__all__ = ["Backend", "KernelStatistics", "array_namespace_of", "compat", "to_host"]
