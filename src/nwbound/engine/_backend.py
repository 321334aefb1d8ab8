"""The backend seam: what an estimator asks of the engine that computes its kernel sums.

::

    NadarayaWatsonClassifier.fit ──► select_backend(estimator) ─► backend_      (once; see _engine)
                                         │ first of BACKENDS whose is_usable_for(estimator)
                                         ├── DeviceBackend   device= given: the array-API and Triton
                                         │                    kernels, bounds there where they serve
                                         │                    (engine/device/)
                                         └── HostBackend     always: NumPy and numba (engine/host/)

    predict_interval(X) ──► backend_.intervals(X, specs)  (one call: the backend's route)
                                 │ DeviceBackend: ranking, choice, statistics and bounds on the device
                                 │ the host's route, host/_backend.host_intervals (HostBackend; the
                                 │ device, one pass at every bandwidth, where its bounds do not serve):
                                 └► backend_.ranks_first? ─► ranking ─► choice_groups ─► rows_by_choice
                                    ─► per chosen bandwidth (or one pass at every bandwidth):
                                    backend_.statistics(X, …) ─► the estimator's host bounds

Rounding: every backend returns the bound-form :class:`~nwbound.engine.KernelStatistics` with the
error bounds of its own arithmetic (``sum_error``, ``u2_error``), so the bounds stay valid whichever
computed them; the host is the reference (float64), the device within its stated ``ρ``.

Layout: this package owns the reductions; the estimators import it, never the other way round.
``engine/host/`` holds ``HostBackend`` and the reductions it calls, ``engine/device/`` holds
``DeviceBackend`` and the device kernels (re-exported by :mod:`nwbound.gpu`), ``_registry`` the
``BACKENDS`` tuple that :func:`~nwbound.engine.select_backend` walks. A new backend touches two
files: its own module (whose ``intervals`` may be the host's route on its statistics,
:func:`~nwbound.engine.host._backend.host_intervals`), and that tuple.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from ._statistics import KernelStatistics

__all__ = ["Backend", "FittedInputs"]



@dataclass(frozen=True)
class FittedInputs:
    """What a backend reads from its fitted estimator beside the public attributes (``kernel_``,
    ``bandwidths_``, ``index_``, ``n_neighbors``, ``device``, ``working_memory``, ``n_jobs``,
    ``histogram_bins``, ``ranking_fraction_``).

    The estimator hands it over at each call through its ``__nwbound_fitted_inputs__()`` protocol
    method (as scikit-learn's ``__sklearn_tags__``), so that no backend reads the estimator's private
    members; built per call because ``set_params`` may change the predict-time settings after fit.

    Parameters
    ----------
    train : TrainingSet
        The kernel sums' training rows (:class:`nwbound.engine.host._sums_data.TrainingSet`).
    feature_unit : float
        The power of two the training rows were divided by at fit (1 for most data).
    box : tuple of ndarray or None
        The training rows' bounding box ``(low, high)`` (input units), or None.
    index_kneighbors : callable
        ``(X, k) -> (distances, indices)``: the fitted neighbour index's search.
    fallback_rows : callable
        ``vacuous mask -> rows``: ``empty_neighborhood``'s class probabilities for queries without mass.
    check_device : callable
        Raises where the estimator's ``device`` cannot serve the localized classifier.
    interval : callable
        ``(stats, spec, certified_only) -> interval``: the estimator's host bounds on bound-form
        statistics for one setting (its ``empty_neighborhood`` rule; ``certified_only``: the
        ``CertifiedRows`` of ``proba`` and ``certified`` alone).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> X = np.linspace(0, 1, 20)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=1.0).fit(X, y)
    >>> inputs = clf.__nwbound_fitted_inputs__()
    >>> inputs.train.X.shape, inputs.feature_unit
    ((20, 1), 1.0)
    """

    train: Any
    feature_unit: float
    box: tuple[np.ndarray, np.ndarray] | None
    index_kneighbors: Callable[[Any, int], tuple]
    fallback_rows: Callable[[np.ndarray], np.ndarray]
    check_device: Callable[[], None]
    interval: Callable[[KernelStatistics, Any, bool], Any]


@runtime_checkable
class Backend(Protocol):
    """What the estimators' route asks of a backend (``backend_``, picked once at fit).

    Attributes
    ----------
    keeps_queries : bool
        Whether ``array_api_dispatch`` queries are validated and used where they live (True) or
        copied to the host first (False).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.engine import Backend
    >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
    >>> isinstance(clf.backend_, Backend)
    True
    """

    keeps_queries: bool

    @classmethod
    def is_usable_for(cls, estimator: Any) -> bool:
        """Whether this backend can serve a fitted ``estimator`` (its ``device``, kernel, index)."""

    def serves(self, estimator: Any) -> bool:
        """Whether this bound backend is still the one to use for ``estimator`` (after ``set_params``)."""

    def statistics(self, X: Any, bandwidths: np.ndarray, *, need_dist: bool, tail_radius: float | None,
                   histogram_bins: int, keep_points: bool) -> KernelStatistics:
        """Bound-form statistics of validated queries at ``bandwidths`` (regular: over every training
        row, with a ``histogram_bins`` histogram when > 0; localized: over the ``k`` nearest, with the
        per-point masses when ``keep_points``)."""

    def kneighbors(self, X: Any, n_neighbors: int) -> tuple[Any, Any]:
        """``(distances or None, indices)`` of the ``n_neighbors`` nearest training rows."""

    def ranks_from_moments(self) -> bool:
        """Whether :meth:`ranking` comes from one pass of distance moments."""

    def ranks_first(self, specs: dict, fraction: float) -> bool:
        """Whether the grid is ranked first (:meth:`ranking`, then exact statistics at each query's
        choice): in the public rounds, and in the host's route
        (:func:`~nwbound.engine.host._backend.host_intervals`)."""

    def ranking(self, X: Any, fraction: float, row_offset: int = 0) -> Any:
        """The grid's ranking (a ``BandwidthRanking``) from a cheaper pass, or None: the exhaustive
        statistics rank it."""

    def intervals(self, X: Any, specs: dict, certified_only: frozenset = frozenset()) -> dict:
        """Every setting's intervals of validated queries (``CertifiedRows`` allowed for the names in
        ``certified_only``): this backend's own route (its ranking, choice, statistics and bounds), or
        the host's bounds on its statistics (:func:`~nwbound.engine.host._backend.host_intervals`)."""
