"""The device backend: the estimator's ``device=`` path, from the queries to every setting's intervals
on the device (:class:`DeviceBackend`, picked by :func:`nwbound.engine.select_backend`).

The route of :meth:`DeviceBackend.intervals`, one call per step:

* where the device's bounds serve the settings (:func:`bounds_on_device`), :func:`intervals_on_device`:
  the statistics in the bound form (:func:`._sums.bound_statistics`), every setting's bound
  (:func:`nwbound.bounds._chernoff_device.device_limits`), the intervals with the call's one read
  (:func:`._results.intervals_from_limits`). A call reads the device twice: the queries' checks
  (one flag) and that packed read of a few numbers (the vacuous count, the usefulness report's
  numbers). Its results stay there for PyTorch queries (:mod:`._results`);
* ``bandwidth="auto"``: the same call with the grid: ranked where the queries live
  (:func:`._sums.device_ranking`), each query's choice by the bound rules in the tensors' namespace,
  the queries grouped by chosen bandwidth there (:func:`~nwbound.engine._ranking.rows_by_choice`),
  the three steps above once per group, the groups gathered where the queries live. The choice
  reads the inputs only (never a label), so every bound stays valid whatever rounding separates the
  device's choice from the host's at a near tie;
* otherwise the host's bounds on :meth:`DeviceBackend.statistics`, one pass at every bandwidth
  (:func:`~nwbound.engine.host._backend.intervals_at`; the device's sums in the host's bound form,
  :func:`._sums.dense_kernel_sums_array_api` and :func:`._sums.neighbor_kernel_sums_array_api`).

What crosses to the host under ``array_api_dispatch`` (:func:`~._dispatch.validate_queries` with
``keep_namespace``): never the queries of the regular classifier; the localized classifier's
queries once where an HNSW index searches on the host; the per-query sums (``KernelStatistics``,
float64) and the ``outside_box`` flags where the bounds run on the host.

Lives in the engine beside the device kernels it calls (``_sums``, the statistics pass; ``_results``);
:mod:`nwbound.gpu` re-exports their public names and never imports the estimators.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..._config import get_config
from ...kernels import Kernel
from .._ranking import choice_groups, rows_by_choice
from .._statistics import KernelStatistics
from ..host._backend import intervals_at
from ..host._sums import TrainingSet
from ._array_api import HISTOGRAM_KERNELS, compat
from ._results import delivered, intervals_from_limits
from ._sums import (
    _on_device,
    bound_statistics,
    dense_kernel_sums_array_api,
    device_kneighbors,
    device_ranking,
    installed,
    neighbor_kernel_sums_array_api,
)

__all__ = ["DeviceBackend", "bounds_on_device", "intervals_on_device"]


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
    bandwidth: float | np.ndarray,
    specs: dict,
    *,
    device: str,
    fallback: Callable[[np.ndarray], np.ndarray],
    box: tuple[np.ndarray, np.ndarray],
    histogram_bins: int = 32,
    n_neighbors: int | None = None,
    neighbors: Any = None,
    working_memory: float | None = None,
    ranking_fraction: float = 1.0,
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
    bandwidth : float or ndarray of shape (G,)
        One bandwidth, or ``bandwidth="auto"``'s grid (``G ≥ 2``): then the grid is ranked where the
        queries live (:func:`._sums.device_ranking`), each setting's choice made there
        (:func:`~nwbound.engine._ranking.choice_groups`, label-free: every bound stays valid whatever
        rounding separates it from the host's at a near tie), the steps below run once per chosen
        bandwidth and the groups are gathered where ``Xq`` lives (a plain dict).
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
    ranking_fraction : float, default=1.0
        The regular classifier's ranking sample (a grid only).

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
    from ...bounds._chernoff_device import device_limits

    numpy_in = isinstance(Xq, np.ndarray)
    Q = _on_device(Xq, device)
    if not compat().is_torch_array(Q):  # the device bounds are PyTorch's: the caller takes the host route
        return None
    if Q.device.type == "cpu" and not get_config()["device_bounds_on_cpu"]:  # the host's solver is faster there
        return None
    grid = np.asarray(bandwidth, dtype=np.float64).reshape(-1)
    # One group of every query at one bandwidth; with a grid, its ranking and each setting's choice first.
    groups = [(list(specs), [None], [0], None)]
    if grid.shape[0] > 1:
        if n_neighbors is not None and neighbors is None:  # one exact search that every group's bounds reuse
            _, neighbors = device_kneighbors(Q, train, int(n_neighbors), working_memory=working_memory)
        ranking = device_ranking(Q, train, kernel, grid, fraction=ranking_fraction, n_neighbors=n_neighbors,
                                 neighbors=neighbors, working_memory=working_memory)
        groups = [(names, *rows_by_choice(choice, grid.shape[0])) for choice, names in choice_groups(specs, ranking)]
    # Then per group and chosen bandwidth: 1. the statistics in the bound form, on the device; 2. every
    # setting's bound there; 3. the intervals, read once, where the queries live.
    # A grid's groups stay on the device until gathered; one bandwidth's intervals go where Xq lives.
    target = Q.device if grid.shape[0] > 1 else Xq.device if not numpy_in and compat().is_torch_array(Xq) else None
    out = {}
    for names, rows, used, inverse in groups:
        group = {name: specs[name] for name in names}
        chernoff = any(s.is_chernoff for s in group.values())
        parts = []
        for g, r in zip(used, rows):
            rows_nb = neighbors if r is None or neighbors is None else neighbors[r]
            stats = bound_statistics(Q if r is None else Q[r], train, kernel, float(grid[g]), box=box,
                                     histogram_bins=int(histogram_bins) if chernoff else 0, keep_points=chernoff,
                                     n_neighbors=n_neighbors, neighbors=rows_nb, working_memory=working_memory)
            limits = {name: device_limits(spec, stats) for name, spec in group.items()}
            parts.append(intervals_from_limits(limits, group, kappa_unit=train.weight_unit, bandwidth=float(grid[g]),
                                               outside_box=stats.outside_box, fallback=fallback, target=target))
        if inverse is None:  # one bandwidth
            return parts[0]
        out.update({name: type(parts[0][name]).concatenate([p[name] for p in parts]).take(inverse) for name in names})
    return delivered(out, Xq)


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
        if est.index_ is not None:
            inputs.check_device()
            if keep_points:
                extra["keep_points"] = True
            _, idx = self.kneighbors(X, int(est.n_neighbors))
            return neighbor_kernel_sums_array_api(idx, inputs.train, est.kernel_, bandwidths, queries=X,
                                                  need_dist=need_dist, tail_radius=tail_radius, device=est.device,
                                                  working_memory=est.working_memory, **extra)
        if histogram_bins:
            extra["histogram_bins"] = int(histogram_bins)
        return dense_kernel_sums_array_api(X, inputs.train, est.kernel_, bandwidths, need_dist=need_dist,
                                           tail_radius=tail_radius, device=est.device,
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
        """False: the public rounds rank from the exhaustive statistics here (:meth:`intervals` runs
        the route's own ranking on the device)."""
        return False

    def ranking(self, X: Any, fraction: float, row_offset: int = 0) -> None:
        """None: the public ranking is the exhaustive statistics (:meth:`intervals` ranks on the device)."""
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
    def intervals(self, X: Any, specs: dict, certified_only: frozenset = frozenset()) -> dict:
        """Every setting's intervals of validated queries: statistics *and* bounds on the device, where
        its bounds serve these settings and queries; otherwise the host's bounds on its statistics.

        One :func:`intervals_on_device`: at the fit's one bandwidth, or with ``bandwidth="auto"``'s
        grid (where the device bounds one bandwidth), ranked and chosen there, one pass per chosen
        bandwidth, the results where ``X`` lives. Where it declines (None) or the settings are not
        the device's: one pass of :meth:`statistics` at every bandwidth, bounded on the host
        (:func:`~nwbound.engine.host._backend.intervals_at`; this backend ranks in its own route
        only, :meth:`ranks_first`)."""
        est = self._est
        grid = est.bandwidths_
        ranked = X.shape[0] > 0 and grid.shape[0] > 1
        out = None
        if self._bounds_served(specs, grid[:1] if ranked else grid):
            inputs = est.__nwbound_fitted_inputs__()
            k = None if est.index_ is None else int(est.n_neighbors)
            out = intervals_on_device(
                X, inputs.train, est.kernel_, grid if ranked else float(grid[0]), specs, device=est.device,
                box=inputs.box, fallback=inputs.fallback_rows, histogram_bins=int(est.histogram_bins),
                working_memory=est.working_memory, n_neighbors=k,
                ranking_fraction=est.ranking_fraction_ if k is None else 1.0,
            )
        return out if out is not None else intervals_at(self, est, X, specs, grid, certified_only)
