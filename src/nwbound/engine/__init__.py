"""The engine: the kernel-sum reductions behind one backend seam, and the one statistics type.

:class:`Backend` is what an estimator asks of the engine that computes its kernel sums (the map of
the route is in :mod:`nwbound.engine._backend`); the estimator picks one at ``fit`` with
:func:`select_backend`, the first of :data:`BACKENDS` usable for it:

* ``engine/host/``: ``HostBackend`` and the NumPy and numba reductions it calls (``_sums`` plans a
  call and walks its query blocks, ``_tiles`` reduces one block through ``_fused``'s numba kernels
  or NumPy, ``_sums_data`` holds the training set's layout, ``_neighbor_sums`` the localized sums);
* ``engine/device/``: ``DeviceBackend``, its results kept on the device, and the array-API and
  Triton kernels that :mod:`nwbound.gpu` re-exports.

:class:`KernelStatistics` is what every backend returns and what the bounds read (re-exported as
``nwbound.estimators.KernelStatistics`` and ``nwbound.gpu.KernelStatistics``, the same class);
:class:`BandwidthRanking` the cheaper statistics that rank a bandwidth grid, and
:func:`choose_bandwidths`, :func:`choice_groups` and :func:`rows_by_choice` the ranked choice of
``bandwidth="auto"``, one copy for every backend. The CPU engine fills
the bound form directly (``host._sums_data.zero_statistics`` allocates it, the passes write its
arrays in place); the host's route (``host._backend.query_statistics``, every backend's where
the host bounds) then only restates the bandwidths and distances in the input's units and adds
what the training box says (``outside_box``, ``diameter``).

Imports run one way: ``estimators`` → ``engine`` → (``kernels``, ``bounds``, ``_numerics``, …);
:mod:`nwbound.gpu` is a public face over ``engine/device/``.
"""

from .._namespace import array_namespace_of, compat, to_host
from ._backend import Backend, FittedInputs
from ._ranking import BandwidthRanking, choice_groups, choose_bandwidths, merge_statistics, rows_by_choice
from ._registry import BACKENDS, select_backend
from ._statistics import KernelStatistics

__all__ = [
    "FittedInputs",
    "BACKENDS",
    "Backend",
    "BandwidthRanking",
    "KernelStatistics",
    "array_namespace_of",
    "choice_groups",
    "choose_bandwidths",
    "compat",
    "merge_statistics",
    "rows_by_choice",
    "select_backend",
    "to_host",
]
