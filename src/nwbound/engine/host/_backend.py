"""The host backend: kernel sums with NumPy and numba, the neighbour search by the estimator's index.

:class:`HostBackend` calls this package's reductions (``_sums``: the dense pass and its plan;
``_tiles``: the accumulator of one query block; ``_fused``: its numba tile kernels; ``_sums_data``:
the training set's layout; ``_neighbor_sums``: the localized sums). It serves every estimator
(the last of :data:`nwbound.engine.BACKENDS`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._statistics import KernelStatistics
from .._ranking import BandwidthRanking, rows_by_choice
from ._sums import dense_kernel_sums, dense_moment_sums, neighbor_kernel_sums

__all__ = ["HostBackend", "rows_by_bandwidth", "scaled"]


def scaled(a: np.ndarray | None, factor: float) -> np.ndarray | None:
    """``a·factor`` (None stays None; a factor of 1 returns ``a`` itself)."""
    return a if a is None or factor == 1.0 else a * factor


def rows_by_bandwidth(choice: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """The query rows of each bandwidth in ``choice`` (NumPy), and those bandwidths (ascending):
    :func:`~nwbound.engine._ranking.rows_by_choice` without the order back.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.engine.host._backend import rows_by_bandwidth
    >>> rows, used = rows_by_bandwidth(np.array([2, 0, 2]))
    >>> [r.tolist() for r in rows], used.tolist()
    ([[1], [0, 2]], [0, 2])
    """
    rows, used, _ = rows_by_choice(choice, int(choice.max()) + 1 if choice.size else 0)
    return rows, np.asarray(used, dtype=choice.dtype)


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
        inputs = est.__nwbound_fitted_inputs__()
        extra: dict = {}
        if est.index_ is None:
            if histogram_bins:
                extra["histogram_bins"] = int(histogram_bins)
            return dense_kernel_sums(X, inputs.train, est.kernel_, bandwidths, need_dist=need_dist,
                                     tail_radius=tail_radius, working_memory=est.working_memory, n_jobs=est.n_jobs,
                                     **extra)
        if keep_points:
            extra["keep_points"] = True
        dist, idx = self.kneighbors(X, int(est.n_neighbors))
        return neighbor_kernel_sums(dist, idx, inputs.train, est.kernel_, bandwidths, need_dist=need_dist,
                                    tail_radius=tail_radius, queries=X, **extra)

    def kneighbors(self, X: Any, n_neighbors: int) -> tuple[Any, Any]:
        """``(distances, indices)`` of the estimator's index."""
        return self._est.__nwbound_fitted_inputs__().index_kneighbors(X, n_neighbors)

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

    def ranking(self, X: Any, fraction: float, row_offset: int = 0) -> BandwidthRanking | None:
        """The grid's ranking from distance moments or a sample of rows; None where it is the exhaustive
        statistics (the estimator then takes them from :meth:`statistics`)."""
        est = self._est
        inputs = est.__nwbound_fitted_inputs__()
        unit = inputs.feature_unit  # X and the engines' bandwidths in the fit's feature unit; dist_sum in input units
        if self.ranks_from_moments():
            s = dense_moment_sums(X, inputs.train.sample(fraction, row_offset), est.kernel_, est.bandwidths_ / unit,
                                  working_memory=est.working_memory, n_jobs=est.n_jobs)
        elif fraction < 1.0 and est.index_ is None:  # other kernels: every bandwidth, on the sample
            s = dense_kernel_sums(X, inputs.train.sample(fraction, row_offset), est.kernel_, est.bandwidths_ / unit,
                                  need_dist=True, tail_radius=None, working_memory=est.working_memory,
                                  n_jobs=est.n_jobs)
        else:
            return None
        return BandwidthRanking.from_sums(s.kappa, s.sq_sum, s.dist_sum, est.bandwidths_[None, :], fraction=fraction,
                                          feature_unit=unit)

    # -- the route -----------------------------------------------------------------------------
    def intervals(self, X: Any, specs: dict) -> dict | None:
        """None: the host has no route of its own (the estimator bounds :meth:`statistics`)."""
        return None
