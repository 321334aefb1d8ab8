"""The host backend: kernel sums with NumPy and numba, the neighbour search by the estimator's index;
and the host's bounds on any backend's statistics.

:class:`HostBackend` calls this package's reductions (``_sums``: the dense pass and its plan;
``_tiles``: the accumulator of one query block; ``_fused``: its numba tile kernels; ``_sums_data``:
the training set's layout; ``_neighbor_sums``: the localized sums). It serves every estimator
(the last of :data:`nwbound.engine.BACKENDS`).

The host's route, one copy for every backend (:func:`host_intervals`; the device's where its own
bounds decline): ``bandwidth="auto"`` where the backend ranks first, the grid's ranking
(:func:`bandwidth_ranking`), each setting's choice (:func:`~nwbound.engine.choice_groups`) and one
exact pass per chosen bandwidth; otherwise one pass at every bandwidth (:func:`intervals_at`: each
query then takes the λ of least ε). A pass is the backend's statistics in the input's units with
what the estimator alone knows (:func:`query_statistics`), bounded by the estimator's own rule
(:attr:`~nwbound.engine.FittedInputs.interval`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..._namespace import compat, to_host
from ..._numerics import euclidean_norm
from ...bounds import TAIL_RADIUS, get_bound_form
from .._backend import Backend
from .._statistics import KernelStatistics
from .._ranking import BandwidthRanking, choice_groups, rows_by_choice
from ._sums import bounded_moment_sums, dense_kernel_sums, dense_moment_sums, neighbor_kernel_sums

__all__ = ["HostBackend", "bandwidth_ranking", "host_intervals", "intervals_at", "query_statistics",
           "rows_by_bandwidth", "scaled"]

# Queries per block of the host's bounds with bound="chernoff" (its statistics hold
# queries × bandwidths × bins values; 2048 keeps them to a few MiB).
CHERNOFF_QUERY_BLOCK = 2048
# The bounded ranking of the host's route (:func:`_route_ranking`): from this many queries, a pilot
# of this many (spread over the batch) ranked in full, and a query resolved where its least ε over
# the exact columns lies below every wider column's bound by this relative margin (it covers the
# rounding of both rankings' expanded sums, and of D/κ's bound, see bounded_moment_sums).
BOUNDED_MIN_QUERIES = 2048
BOUNDED_PILOT_QUERIES = 256
BOUNDED_MARGIN = 1e-6
# The reach is the widest bandwidth the pilot chose where the bounds at that reach settle at least
# this share of the pilot's queries, else the next wider one (:func:`_bounded_reach`): a query they
# do not settle is ranked in full, at a few times a bounded query's cost, while the narrower reach
# saves about a quarter of the bounded pass.
BOUNDED_SETTLED = 0.9


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
        statistics (:func:`bandwidth_ranking` then takes them from :meth:`statistics`)."""
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

    def bounded_ranking(self, X: Any, fraction: float, reach: float) -> tuple[BandwidthRanking, np.ndarray]:
        """:meth:`ranking` from the pairs within the support of the bandwidths up to ``reach``
        (input units): exact there, bounds of the Hoeffding parts beyond, and those exact columns
        (:func:`~._sums.bounded_moment_sums`). Only where :meth:`ranks_from_moments`."""
        est = self._est
        inputs = est.__nwbound_fitted_inputs__()
        unit = inputs.feature_unit
        s, exact = bounded_moment_sums(X, inputs.train.sample(fraction), est.kernel_, est.bandwidths_ / unit,
                                       reach / unit, working_memory=est.working_memory, n_jobs=est.n_jobs)
        return BandwidthRanking.from_sums(s.kappa, s.sq_sum, s.dist_sum, est.bandwidths_[None, :], fraction=fraction,
                                          feature_unit=unit), exact

    # -- the route -----------------------------------------------------------------------------
    def intervals(self, X: Any, specs: dict, certified_only: frozenset = frozenset()) -> dict:
        """Every setting's intervals of validated queries: the host's route (:func:`host_intervals`)."""
        return host_intervals(self, self._est, X, specs, certified_only)


def host_intervals(backend: "Backend", estimator: Any, X: Any, specs: dict,
                   certified_only: frozenset = frozenset()) -> dict:
    """Every setting's intervals of validated queries from ``backend``'s statistics and the host's bounds.

    ``bandwidth="auto"`` where the backend ranks first: the grid's ranking, each setting's choice
    (label-free: every bound stays valid), then one exact pass per chosen bandwidth; otherwise one
    pass at every bandwidth of the fit (each query then takes the λ of least ε).

    Parameters
    ----------
    backend : Backend
        The estimator's backend (its statistics, ranking and ``ranks_first``).
    estimator : NadarayaWatsonClassifier
        The fitted classifier (``bandwidths_``, ``ranking_fraction_``).
    X : array of shape (n_queries, n_features)
        Validated queries.
    specs : dict
        Setting name to :class:`~nwbound.bounds.BoundSpec`.
    certified_only : frozenset, default=frozenset()
        Names whose results are ``CertifiedRows`` (``proba`` and ``certified`` only).

    Returns
    -------
    dict
        Setting name to :class:`~nwbound.PredictionInterval` (NumPy).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.engine.host._backend import host_intervals
    >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=1.0).fit(X, y)
    >>> specs = {None: clf.bound_spec_}
    >>> iv = host_intervals(clf.backend_, clf, np.array([[0.1], [0.9]]), specs)[None]
    >>> iv.proba.tolist() == clf.predict_interval([[0.1], [0.9]]).proba.tolist()
    True
    """
    grid = estimator.bandwidths_
    if X.shape[0] == 0 or not backend.ranks_first(specs, estimator.ranking_fraction_):
        return intervals_at(backend, estimator, X, specs, grid, certified_only)
    groups = choice_groups(specs, _route_ranking(backend, estimator, X, specs))
    if len(groups) > 1 and all(isinstance(choice, np.ndarray) for choice, _ in groups):
        return _joint_intervals(backend, estimator, X, specs, groups, certified_only)
    out = {}
    for choice, names in groups:
        rows, used, inverse = rows_by_choice(choice, grid.shape[0])
        group = {name: specs[name] for name in names}
        parts = [intervals_at(backend, estimator, X[r], group, grid[g : g + 1], certified_only)
                 for g, r in zip(used, rows)]
        out.update({name: _concatenated([p[name] for p in parts]).take(inverse) for name in names})
    return out


def _route_ranking(backend: "Backend", estimator: Any, X: Any, specs: dict) -> BandwidthRanking:
    """The ranking the route chooses from: :func:`bandwidth_ranking`, or, where it chooses alike and
    costs less, the bounded ranking (the host's moments, many NumPy queries, settings that choose
    by the Hoeffding parts: ``"hoeffding"`` and ``"chernoff"``).

    The widest bandwidth that the settings choose on a pilot of the queries (ranked in full), or the
    next wider one, sets the reach (:func:`_bounded_reach`). The other queries get
    :meth:`HostBackend.bounded_ranking` (exact sums up to the reach, a lower bound of each wider
    bandwidth's ε beyond, :func:`~._sums.bounded_moment_sums`); a query keeps it where every setting's
    least ε over the exact columns lies below each wider column's bound (by ``BOUNDED_MARGIN``), so
    that every setting chooses there as from the full ranking; the others are ranked in full. The
    wider columns of a kept query hold those bounds, not its sums: the ranking serves the choice
    only (``bandwidth_ranking`` stays the public one). The pruned pass reads the pairs within the
    reach's support (on make_classification, 20 features, in the default's learned space: about
    half of the ranking sample's pairs at 100 000 rows, where every pair lies within the widest)."""
    fraction, grid, n = estimator.ranking_fraction_, estimator.bandwidths_, X.shape[0]
    if not (isinstance(backend, HostBackend) and isinstance(X, np.ndarray) and n >= BOUNDED_MIN_QUERIES
            and backend.ranks_from_moments()
            and all(type(s.for_choice().bound_form).parts is type(get_bound_form("hoeffding")).parts
                    for s in specs.values())):
        return bandwidth_ranking(backend, estimator, X, fraction)
    pilot = np.zeros(n, dtype=bool)
    pilot[np.linspace(0, n - 1, BOUNDED_PILOT_QUERIES).astype(np.intp)] = True
    first = bandwidth_ranking(backend, estimator, X[pilot], fraction)
    chosen = max(float(grid[choice].max()) for choice, _ in choice_groups(specs, first))
    sums = tuple(np.empty((n, grid.shape[0])) for _ in range(3))
    for a, b in zip(sums, (first.kappa, first.sq_sum, first.dist_sum)):
        a[pilot] = b
    rest = np.flatnonzero(~pilot)
    reach = _bounded_reach(backend, X[pilot], specs, fraction, grid, chosen)
    if reach is not None:
        bounded, exact = backend.bounded_ranking(X[rest], fraction, reach)
        kept = _settled(specs, bounded, exact)
        for a, b in zip(sums, (bounded.kappa, bounded.sq_sum, bounded.dist_sum)):
            a[rest[kept]] = b[kept]
        rest = rest[~kept]
    if rest.size:
        full = bandwidth_ranking(backend, estimator, X[rest], fraction)
        for a, b in zip(sums, (full.kappa, full.sq_sum, full.dist_sum)):
            a[rest] = b
    return BandwidthRanking(*sums, grid[None, :])


def _settled(specs: dict, bounded: BandwidthRanking, exact: np.ndarray) -> np.ndarray:
    """The queries of a bounded ranking (:meth:`HostBackend.bounded_ranking`) whose every setting's
    least ε over the ``exact`` columns lies below each wider column's bound (by ``BOUNDED_MARGIN``):
    they choose as from the full ranking."""
    kept = np.ones(bounded.kappa.shape[0], dtype=bool)
    with np.errstate(invalid="ignore"):
        for spec in specs.values():
            eps = np.add(*spec.for_choice().parts(bounded.kappa, bounded.sq_sum, bounded.dist_sum, bounded.bandwidth))
            kept &= eps[:, exact].min(axis=1) < eps[:, ~exact].min(axis=1) * (1.0 - BOUNDED_MARGIN)
    return kept


def _bounded_reach(backend: "Backend", pilot: np.ndarray, specs: dict, fraction: float, grid: np.ndarray,
                   chosen: float) -> float | None:
    """The bounded ranking's reach (input units): ``chosen``, the widest bandwidth the ``pilot``
    queries chose, where the bounds at that reach settle (:func:`_settled`) at least
    ``BOUNDED_SETTLED`` of the pilot's queries, else the next wider bandwidth of the ``grid``; None
    where ``chosen`` is the widest (no bounded pass).

    The narrower reach reads fewer pairs: 0.37 against 0.49 s for 30 000 queries at 100 000 rows of
    ``bench_defaults.py`` (2 classes), 0.13 against 0.19 s at 30 000 rows, where it settles 96 % of
    the queries. Where the ε of the chosen bandwidths differ little from the next one's (uniform
    inputs, constant p), its bounds settle few (14 % on 5 uniform features) and the wider reach,
    which settles 93 %, costs less by half."""
    wider = grid[grid > chosen]
    if not wider.size:
        return None
    ranking, exact = backend.bounded_ranking(pilot, fraction, chosen)
    if np.mean(_settled(specs, ranking, exact)) >= BOUNDED_SETTLED:
        return chosen
    return float(wider.min())


def _joint_intervals(backend: "Backend", estimator: Any, X: np.ndarray, specs: dict, groups: list,
                     certified_only: frozenset) -> dict:
    """:func:`host_intervals` where the settings chose apart (NumPy choices, ``groups`` of
    :func:`~nwbound.engine.choice_groups`): one pass per query at the set of bandwidths its settings
    chose, each setting bounded at its own column.

    A pass at several bandwidths computes the distance product once (at the widest one's support)
    and reduces each bandwidth from it, so a query whose settings chose two bandwidths costs about
    one pass instead of two, and one whose settings agree costs one (the held-out check of
    ``lipschitz="auto"``: its test and model settings, at two levels δ, choose alike on about 60 %
    of the rows). The statistics of a column are those of a pass at that bandwidth alone up to the
    rounding of their order, within the engine's stated error bounds (``u2_error``, ``sum_error``)."""
    choices = np.stack([choice for choice, _ in groups], axis=1)  # (n, settings' groups)
    sets, pattern = np.unique(np.sort(choices, axis=1), axis=0, return_inverse=True)
    rows, used, inverse = rows_by_choice(pattern.reshape(-1), sets.shape[0])
    grid = estimator.bandwidths_
    names_of = [names for _, names in groups]
    parts: dict = {name: [] for name in specs}
    for p, r in zip(used, rows):
        bandwidths = np.unique(sets[p])
        columns = {name: np.searchsorted(bandwidths, choices[r, i])
                   for i, names in enumerate(names_of) for name in names}
        piece = intervals_at(backend, estimator, X[r], specs, grid[bandwidths], certified_only, columns)
        for name in specs:
            parts[name].append(piece[name])
    return {name: _concatenated(parts[name]).take(inverse) for name in specs}


def intervals_at(backend: "Backend", estimator: Any, X: Any, specs: dict, bandwidths: np.ndarray,
                 certified_only: frozenset = frozenset(), columns: dict | None = None) -> dict:
    """Intervals of validated queries for every setting in ``specs`` from one pass at ``bandwidths``
    (``certified_only``: names that get ``CertifiedRows``): ``backend``'s statistics
    (:func:`query_statistics`), the estimator's host bounds (:attr:`~nwbound.engine.FittedInputs.interval`).
    ``columns`` (name to (n,) indices into ``bandwidths``, NumPy queries): each setting bounded at
    its queries' columns (:meth:`~nwbound.engine.KernelStatistics.select`) instead of at the λ of least ε.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.engine.host._backend import intervals_at
    >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
    >>> intervals_at(clf.backend_, clf, np.array([[0.1]]), {None: clf.bound_spec_}, clf.bandwidths_)[None].proba
    array([[1., 0.]])
    """
    # Queries in blocks when a bound keeps per-query histograms or neighbour lists, so that
    # memory stays bounded however many queries come in.
    interval = estimator.__nwbound_fitted_inputs__().interval
    n = X.shape[0]
    block = n if not any(s.is_chernoff for s in specs.values()) else CHERNOFF_QUERY_BLOCK
    def at(stats: KernelStatistics, name: str, s: int) -> KernelStatistics:
        return stats if columns is None else stats.select(columns[name][s : s + stats.n_queries])

    pieces = [
        {name: interval(at(stats, name, s), spec, name in certified_only) for name, spec in specs.items()}
        for s, stats in (  # in-range stops and a trailing ellipsis: array-API (device=) queries too
            (s, query_statistics(backend, estimator, X[s : min(s + block, n), ...], list(specs.values()),
                                 need_bounds=True, bandwidths=bandwidths))
            for s in range(0, max(n, 1), max(block, 1))
        )
    ]
    return {name: _concatenated([p[name] for p in pieces]) for name in specs}


def _concatenated(parts: list) -> Any:
    """Consecutive blocks of one setting's results (intervals, or ``CertifiedRows``), as one."""
    return type(parts[0]).concatenate(parts)


def bandwidth_ranking(backend: "Backend", estimator: Any, X: Any, fraction: float,
                      row_offset: int = 0) -> BandwidthRanking:
    """The grid's ranking of validated queries: ``backend``'s (moments or a sample of rows), or the
    exhaustive statistics of every bandwidth (:func:`query_statistics`).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.engine.host._backend import bandwidth_ranking
    >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=1.0).fit(X, y)
    >>> bandwidth_ranking(clf.backend_, clf, np.array([[0.5]]), 1.0).kappa.shape == (1, clf.bandwidths_.shape[0])
    True
    """
    ranking = backend.ranking(X, fraction, row_offset)
    if ranking is not None:
        return ranking
    stats = query_statistics(backend, estimator, X, [], need_bounds=True)
    return BandwidthRanking(stats.kappa, stats.sq_sum, stats.dist_sum, estimator.bandwidths_[None, :])  # per row already


def query_statistics(backend: "Backend", estimator: Any, X: Any, specs: list, *, need_bounds: bool,
                     bandwidths: np.ndarray | None = None) -> KernelStatistics:
    """Kernel statistics of validated queries from ``backend`` with what ``specs`` need (class sums
    only when not ``need_bounds``), at ``bandwidths`` (default: every bandwidth of the fit), in the
    input's units, with what only the estimator knows (its training box: ``outside_box``, ``diameter``).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.engine.host._backend import query_statistics
    >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
    >>> stats = query_statistics(clf.backend_, clf, np.array([[0.1], [2.0]]), [], need_bounds=True)
    >>> stats.class_sums.shape, stats.outside_box.tolist()
    ((2, 1, 2), [False, True])
    """
    inputs = estimator.__nwbound_fitted_inputs__()
    bandwidths = estimator.bandwidths_ if bandwidths is None else bandwidths
    # X is in the fit's feature unit (float32 far from 1): so are the engines' bandwidths; the
    # distances they return are brought back to the input's units below.
    unit = inputs.feature_unit
    raw_bandwidths, bandwidths = bandwidths, bandwidths / unit
    need_dist = need_bounds and (not specs or any(s.needs_distance_sum for s in specs))
    need_tail = need_bounds and any(s.needs_tail_mass for s in specs)
    chernoff = need_bounds and any(s.is_chernoff for s in specs)
    # What only the estimator knows (its training box), then the engine's sums: the histogram
    # (regular) or the per-point masses (localized) of the band-Chernoff bound.
    outside_box, diameter = _box_facts(X, inputs.box, unit, need_tail)
    sums = backend.statistics(X, bandwidths, need_dist=need_dist, tail_radius=TAIL_RADIUS if need_tail else None,
                              histogram_bins=int(estimator.histogram_bins) if chernoff else 0, keep_points=chernoff)
    # The engines give the bound form at the engine's bandwidths (the fit's feature unit): the
    # estimator's bandwidths, distances back in the input's units.
    return dataclasses.replace(
        sums,
        dist_sum=scaled(sums.dist_sum, unit),
        bandwidth=raw_bandwidths[None, :],
        outside_box=outside_box,
        diameter=diameter,
        # Dense path: the expanded distance's rounding bound; the localized path's
        # distances are recomputed directly (relative error ~1e-15, covered below).
        u2_error=sums.u2_error if estimator.index_ is None else 0.0,
        hist_dist=scaled(sums.hist_dist, unit),
        # Directly computed distances have relative error ≤ (d + 6)·2⁻⁵³: round them up.
        point_dist=scaled(sums.point_dist, unit * (1.0 + (X.shape[1] + 8) * 2.0**-53)),
    )


def _box_facts(X: Any, box: tuple[np.ndarray, np.ndarray], unit: float,
               need_tail: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """What the training ``box`` says of validated queries ``X`` (any namespace, in the fit's feature
    ``unit``): the rows with a coordinate outside it (NumPy booleans, computed where ``X`` lives: only
    the ``n`` answers cross to the host) and, with ``need_tail``, each row's distance Φ(y) to the box's
    farthest corner (None otherwise)."""
    low, high = box
    X_input = X if unit == 1.0 else to_host(X).astype(np.float64) * unit
    if isinstance(X_input, np.ndarray):
        outside_box = np.any((X_input < low) | (X_input > high), axis=1)
    else:
        xp, dev = compat().array_namespace(X_input), compat().device(X_input)
        lo, hi = (xp.asarray(np.ascontiguousarray(b, dtype=np.float64), device=dev) for b in (low, high))
        outside_box = to_host(xp.any((X_input < lo) | (X_input > hi), axis=1))
    if not need_tail:
        return outside_box, None
    # ‖y − y_i‖ ≤ Φ(y) for every training point (the paper's assumption 5).
    far = np.maximum(np.abs(X_input - low), np.abs(X_input - high))
    return outside_box, euclidean_norm(far, axis=1)
