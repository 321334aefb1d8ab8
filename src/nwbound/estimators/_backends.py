"""The two backends of :class:`~nwbound.NadarayaWatsonClassifier` behind :class:`nwbound.engine.Backend`.

:class:`HostBackend` calls the host engines (``_sums``: NumPy and numba; ``_neighbor_sums``; the
estimator's neighbour index); :class:`DeviceBackend` calls the array-API and Triton engines of
:mod:`nwbound.gpu` through ``_device`` and ``_device_auto`` (``device=``). :func:`select_backend`
is the one place that picks between them: the first of :data:`BACKENDS` whose ``is_usable_for``
accepts the estimator. A new backend is one module with its class and one entry in
:data:`BACKENDS`.

They live with the estimators, not in :mod:`nwbound.engine`: they call the host engines of this
package, which import :mod:`nwbound.engine` (its statistics type), so an engine module that
imported them would close an import circle between the two packages.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .._config import get_config
from ..engine import KernelStatistics, to_host
from ._statistics import BandwidthRanking
from ._neighbor_sums import search_queries
from ._sums import dense_kernel_sums, dense_moment_sums, neighbor_kernel_sums

__all__ = ["BACKENDS", "DeviceBackend", "HostBackend", "rows_by_bandwidth", "select_backend"]


def _times(a: np.ndarray | None, factor: float) -> np.ndarray | None:
    """``a·factor`` (None stays None; a factor of 1 returns ``a`` itself)."""
    return a if a is None or factor == 1.0 else a * factor


def rows_by_bandwidth(choice: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """The query rows of each bandwidth in ``choice`` (NumPy), and those bandwidths (ascending).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.estimators._backends import rows_by_bandwidth
    >>> rows, used = rows_by_bandwidth(np.array([2, 0, 2]))
    >>> [r.tolist() for r in rows], used.tolist()
    ([[1], [0, 2]], [0, 2])
    """
    used = np.unique(choice)
    return [np.flatnonzero(choice == g) for g in used], used


class HostBackend:
    """Kernel sums on the host (NumPy and numba), the neighbour search by the estimator's index.

    Parameters
    ----------
    estimator : NadarayaWatsonClassifier
        A fitted classifier (its training set, kernel and index; the predict-time parameters
        ``working_memory`` and ``n_jobs`` are read at each call).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
    >>> type(clf.backend_).__name__, clf.backend_.keeps_queries
    ('HostBackend', False)
    """

    keeps_queries = False

    def __init__(self, estimator: Any) -> None:
        self._est = estimator

    @classmethod
    def is_usable_for(cls, estimator: Any) -> bool:
        """Always: the host computes whatever the estimator asks (its fallback)."""
        return True

    def serves(self, estimator: Any) -> bool:
        """Whether this backend is still the one :func:`select_backend` picks for ``estimator``."""
        return self._est is estimator and getattr(estimator, "device", None) is None

    # -- the reductions ------------------------------------------------------------------------
    def statistics(self, X: Any, bandwidths: np.ndarray, *, need_dist: bool, tail_radius: float | None,
                   histogram_bins: int, keep_points: bool) -> KernelStatistics:
        """The bound-form statistics of validated queries at ``bandwidths`` (the fit's feature unit)."""
        est = self._est
        extra: dict = {}
        if est.index_ is None:
            if histogram_bins:
                extra["histogram_bins"] = int(histogram_bins)
            return dense_kernel_sums(X, est._train, est.kernel_, bandwidths, need_dist=need_dist,
                                     tail_radius=tail_radius, working_memory=est.working_memory, n_jobs=est.n_jobs,
                                     **extra)
        if keep_points:
            extra["keep_points"] = True
        dist, idx = self.kneighbors(X, int(est.n_neighbors))
        return neighbor_kernel_sums(dist, idx, est._train, est.kernel_, bandwidths, need_dist=need_dist,
                                    tail_radius=tail_radius, queries=X, **extra)

    def kneighbors(self, X: Any, n_neighbors: int) -> tuple[Any, Any]:
        """``(distances, indices)`` of the index's search (coordinates scaled by a power of two: exact)."""
        est = self._est
        return est.index_.kneighbors(search_queries(to_host(X) / est._index_scale), int(n_neighbors))

    def ranks_from_moments(self) -> bool:
        """The regular classifier with a compact kernel that is a polynomial in ``u²``."""
        est = self._est
        return est.index_ is None and est.kernel_.polynomial is not None and est.kernel_.compact

    def ranks_first(self, specs: dict, fraction: float) -> bool:
        """``bandwidth="auto"`` ranked first (:meth:`ranking`), then exact at each query's choice: the
        public rounds of :meth:`~nwbound.NadarayaWatsonClassifier.ranks_first`."""
        est = self._est
        return (est.bandwidths_.shape[0] > 1 and est.index_ is None
                and not any(spec.needs_tail_mass for spec in specs.values())
                and (self.ranks_from_moments() or fraction < 1.0))

    def chooses_first(self, specs: dict, fraction: float) -> bool:
        """Whether ``predict_interval`` ranks and chooses before its exact pass: :meth:`ranks_first`."""
        return self.ranks_first(specs, fraction)

    def ranking(self, X: Any, fraction: float, row_offset: int = 0) -> BandwidthRanking | None:
        """The grid's ranking from distance moments or a sample of rows; None where it is the exhaustive
        statistics (the estimator then takes them from :meth:`statistics`)."""
        est = self._est
        unit = est._unit()  # X and the engines' bandwidths in the fit's feature unit; dist_sum in input units
        grid = est.bandwidths_[None, :]
        if self.ranks_from_moments():
            m = dense_moment_sums(X, est._train.sample(fraction, row_offset), est.kernel_, est.bandwidths_ / unit,
                                  working_memory=est.working_memory, n_jobs=est.n_jobs)
            return BandwidthRanking(m.kappa / fraction, m.sq_sum / fraction, _times(m.dist_sum, unit) / fraction, grid)
        if fraction < 1.0 and est.index_ is None:  # other kernels: every bandwidth, on the sample
            s = dense_kernel_sums(X, est._train.sample(fraction, row_offset), est.kernel_, est.bandwidths_ / unit,
                                  need_dist=True, tail_radius=None, working_memory=est.working_memory,
                                  n_jobs=est.n_jobs)
            return BandwidthRanking(s.kappa / fraction, s.sq_sum / fraction, _times(s.dist_sum, unit) / fraction, grid)
        return None

    # -- the route's steps -------------------------------------------------------------------
    def choice_ranking(self, X: Any, fraction: float) -> tuple[Any, Any, Any]:
        """``(queries, ranking, neighbours)`` for the route's choice: the queries as given, the
        :meth:`ranking` (never None where :meth:`ranks_first` holds), no neighbours kept."""
        return X, self.ranking(X, fraction), None

    @staticmethod
    def choice_groups(specs: dict, ranking: Any, choose: Callable[[Any, dict], dict]) -> list[tuple[Any, list]]:
        """The settings grouped by equal choices: ``[(choice, names), …]`` (one exact pass per group)."""
        groups: list[tuple[Any, list]] = []
        for name, choice in choose(ranking, specs).items():
            same = next((g for g in groups if np.array_equal(g[0], choice)), None)
            if same is None:
                groups.append((choice, [name]))
            else:
                same[1].append(name)
        return groups

    @staticmethod
    def rows_by_choice(choice: Any, n_bandwidths: int) -> tuple[list[Any], list[int], Any]:
        """``(rows, used, inverse)``: the queries of each chosen bandwidth, and the order that puts
        the concatenated groups back."""
        rows, used = rows_by_bandwidth(choice)
        return rows, [int(g) for g in used], np.argsort(np.concatenate(rows), kind="stable")

    def intervals(self, X: Any, specs: dict, bandwidths: np.ndarray, neighbors: Any = None) -> dict | None:
        """None: the host has no bound solver of its own (the estimator bounds :meth:`statistics`)."""
        return None

    @staticmethod
    def deliver(out: dict, X: Any) -> dict:
        """The intervals as computed (NumPy)."""
        return out


class DeviceBackend:
    """Kernel sums (and, where they apply, bounds) on a PyTorch or array-API device (``device=``).

    Wraps :mod:`nwbound.estimators._device` and :mod:`nwbound.estimators._device_auto`. What it
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
    >>> from nwbound.estimators._backends import DeviceBackend
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
        from ..neighbors import AutoIndex, ExactIndex

        return self._est.index_ is not None and isinstance(self._est.index_, (ExactIndex, AutoIndex))

    # -- the reductions ------------------------------------------------------------------------
    def statistics(self, X: Any, bandwidths: np.ndarray, *, need_dist: bool, tail_radius: float | None,
                   histogram_bins: int, keep_points: bool) -> KernelStatistics:
        """The bound-form statistics of validated queries at ``bandwidths``, computed on the device
        and brought to the host (NumPy float64)."""
        from ._device import dense_kernel_sums_array_api, neighbor_kernel_sums_array_api

        est = self._est
        extra: dict = {}
        if est.index_ is None:
            if histogram_bins:
                extra["histogram_bins"] = int(histogram_bins)
            return dense_kernel_sums_array_api(X, est._train, est.kernel_, bandwidths, need_dist=need_dist,
                                               tail_radius=tail_radius, device=est.device,
                                               working_memory=est.working_memory, **extra)
        est._check_device()
        if keep_points:
            extra["keep_points"] = True
        _, idx = self.kneighbors(X, int(est.n_neighbors))
        return neighbor_kernel_sums_array_api(idx, est._train, est.kernel_, bandwidths, queries=X,
                                              need_dist=need_dist, tail_radius=tail_radius, device=est.device,
                                              working_memory=est.working_memory, **extra)

    def kneighbors(self, X: Any, n_neighbors: int) -> tuple[Any, Any]:
        """``(distances or None, indices)``: the exact search where the queries are (nothing crosses),
        or the host index's (an HNSW index is on the host)."""
        from ._device import device_kneighbors

        est = self._est
        if not self._searches():
            return HostBackend(est).kneighbors(X, n_neighbors)
        _, idx = device_kneighbors(X, est._train, int(n_neighbors), device=est.device,
                                   working_memory=est.working_memory)
        return None, idx

    def ranks_from_moments(self) -> bool:
        """False: the device ranks the grid from every bandwidth's sums."""
        return False

    def ranks_first(self, specs: dict, fraction: float) -> bool:
        """False: the public rounds rank from the exhaustive statistics here (:meth:`chooses_first`
        is the route's own ranking on the device)."""
        return False

    def chooses_first(self, specs: dict, fraction: float) -> bool:
        """``bandwidth="auto"`` ranked on the device, where the bounds at one bandwidth run there."""
        est = self._est
        if est.bandwidths_.shape[0] < 2 or not self._bounds_served(specs, est.bandwidths_[:1]):
            return False
        import torch

        target = torch.device(est.device) if isinstance(est.device, str) else est.device
        return target.type != "cpu" or get_config()["device_bounds_on_cpu"]

    def ranking(self, X: Any, fraction: float, row_offset: int = 0) -> None:
        """None: the public ranking is the exhaustive statistics (:meth:`choice_ranking` ranks on the device)."""
        return None

    def _bounds_served(self, specs: dict, bandwidths: np.ndarray) -> bool:
        """Settings the device bounds serve (:func:`~._device.bounds_on_device`) and, for the localized
        classifier, an exact index. Not for a float32 fit stored in a feature unit other than 1 (data
        beyond 2^±100): the device route takes the bandwidth and the distance sums in the input's
        units, so such a fit's statistics cross to the host's bounds (which restate them)."""
        from ._device import bounds_on_device

        est = self._est
        if est._unit() != 1.0 or (est.index_ is not None and not self._searches()):
            return False
        return bounds_on_device(specs, localized=est.index_ is not None, bandwidths=bandwidths, kernel=est.kernel_)

    # -- the route's steps -------------------------------------------------------------------
    def choice_ranking(self, X: Any, fraction: float) -> tuple[Any, Any, Any]:
        """``(queries on the device, ranking there, neighbours)``: the grid ranked where the queries
        live (:func:`~._device_auto.device_ranking`), with one exact search for the localized
        classifier that every group's bounds reuse."""
        from ._device import _on_device, device_kneighbors
        from ._device_auto import device_ranking

        est = self._est
        Q = _on_device(X, est.device)
        unit, k = est._unit(), None if est.index_ is None else int(est.n_neighbors)
        neighbors = None
        if k is not None:
            _, neighbors = device_kneighbors(Q, est._train, k, working_memory=est.working_memory)
        ranking = device_ranking(Q, est._train, est.kernel_, est.bandwidths_ / unit, feature_unit=unit,
                                 fraction=fraction if k is None else 1.0, n_neighbors=k,
                                 neighbors=neighbors, working_memory=est.working_memory)
        return Q, ranking, neighbors

    @staticmethod
    def choice_groups(specs: dict, ranking: Any, choose: Callable[[Any, dict], dict]) -> list[tuple[Any, list]]:
        """Settings whose choosing parts agree (β and δ′ of the Hoeffding ε) choose alike: one choice
        per group, computed in the tensors' namespace (no read)."""
        keyed: dict = {}
        for name, spec in specs.items():
            keyed.setdefault((spec.for_choice().beta, spec.for_choice().delta_prime), []).append(name)
        return [(choose(ranking, {names[0]: specs[names[0]]})[names[0]], names) for names in keyed.values()]

    @staticmethod
    def rows_by_choice(choice: Any, n_bandwidths: int) -> tuple[list[Any], list[int], Any]:
        """:func:`~._device_auto.rows_by_choice`: grouped where ``choice`` lives (one read of the sizes)."""
        from ._device_auto import rows_by_choice

        return rows_by_choice(choice, n_bandwidths)

    def intervals(self, X: Any, specs: dict, bandwidths: np.ndarray, neighbors: Any = None) -> dict | None:
        """Statistics and bounds on the device (:func:`~._device.intervals_on_device`) where they serve
        these settings and queries; None otherwise (the statistics then cross to the host's bounds)."""
        if not self._bounds_served(specs, bandwidths):
            return None
        from ._device import intervals_on_device

        est = self._est
        return intervals_on_device(
            X, est._train, est.kernel_, float(bandwidths[0]), specs, device=est.device, box=est._box,
            fallback=est._fallback_rows, histogram_bins=int(est.histogram_bins), working_memory=est.working_memory,
            n_neighbors=None if est.index_ is None else int(est.n_neighbors), neighbors=neighbors,
        )

    @staticmethod
    def deliver(out: dict, X: Any) -> dict:
        """Intervals computed on the device, where ``X`` lives: on its device for PyTorch queries,
        NumPy otherwise (one packed copy per setting)."""
        import dataclasses

        from ..engine import compat
        from ._device import interval_on_host

        if compat().is_torch_array(X):
            return {name: dataclasses.replace(iv, **{f.name: getattr(iv, f.name).to(X.device)
                                                     for f in dataclasses.fields(iv)}) for name, iv in out.items()}
        return {name: interval_on_host(iv) for name, iv in out.items()}


# The backends in the order select_backend asks them; the host serves everything (the last).
BACKENDS: tuple = (DeviceBackend, HostBackend)


def select_backend(estimator: Any) -> Any:
    """The first backend of :data:`BACKENDS` usable for a fitted ``estimator``, bound to it.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.estimators._backends import select_backend
    >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
    >>> type(select_backend(clf)).__name__
    'HostBackend'
    """
    return next(backend for backend in BACKENDS if backend.is_usable_for(estimator))(estimator)
