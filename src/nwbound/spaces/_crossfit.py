"""Cross-fitting: several splits of the training rows, their intervals intersected, p̂ moved into the box."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from .._result import PredictionInterval
from .._validation import check_open_unit
from ._lipschitz import CrossFitReports

__all__ = ["contradicting_rows", "cross_fit_attributes", "shared_residual_raise", "divided_bounds", "divided_delta", "intersect_intervals", "kappa_weighted_proba", "move_into_box", "project_into_box"]

#: Rounding slack of ``Σ lower ≤ 1 ≤ Σ upper`` (the box holds a distribution).
_SUM_TOL = 1e-9
#: Rounding slack of ``max_k lower_k ≤ min_k upper_k`` (a class's intervals meet).
_MEET_TOL = 1e-12
#: Bisection steps for the projection's shift τ: the bracket starts at most 2 wide, 2⁻⁵⁹ after.
_BISECTION_STEPS = 60


def cross_fit_attributes(models: Sequence[Any], *, chooses_lipschitz: bool) -> dict[str, Any]:
    """The fitted attributes a cross-fitted estimator takes from its K fitted models.

    One rule for the in-memory estimator and :class:`nwbound.dask.ShardedNadarayaWatson`: no one
    space (``metric_`` None: each model has its own), no check rows of its own (``check_rows_``
    empty: each model has its own), every model's rows counted (``n_samples_fit_``), and the
    models' reports as one :class:`~nwbound.spaces.CrossFitReports`. With ``lipschitz="auto"``
    (``chooses_lipschitz``) ``lipschitz_`` is the largest model's L (each model bounds with its
    own); with a number it is that number, and there is no report.

    Parameters
    ----------
    models : sequence of fitted estimators
        The cross-fitted models (``cross_fit_models_``), at least one, each with ``lipschitz_``,
        ``lipschitz_report_`` and ``metric_report_``.
    chooses_lipschitz : bool
        Whether the models chose their L on held-out rows
        (:func:`~nwbound.spaces.chooses_lipschitz` of the settings).

    Returns
    -------
    dict
        ``{attribute: value}`` for ``metric_``, ``metric_report_``, ``check_rows_``,
        ``lipschitz_``, ``lipschitz_report_`` and, where the models have it, ``n_samples_fit_``.

    Raises
    ------
    ValueError
        ``models`` is empty.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.spaces import cross_fit_attributes
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 3)); y = (rng.random(600) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(int)
    >>> clf = NadarayaWatsonClassifier(random_state=0).fit(X, y)
    >>> attributes = cross_fit_attributes(clf.cross_fit_models_, chooses_lipschitz=True)
    >>> attributes["lipschitz_"] == clf.lipschitz_ == max(m.lipschitz_ for m in clf.cross_fit_models_)
    True
    >>> attributes["n_samples_fit_"] == clf.n_samples_fit_, attributes["check_rows_"].size
    (True, 0)
    """
    models = list(models)
    if not models:
        raise ValueError("cross_fit_attributes needs at least one fitted model (cross_fit_models_).")
    first = models[0]
    out: dict[str, Any] = {
        "metric_": None,
        "metric_report_": (CrossFitReports(m.metric_report_ for m in models)
                           if getattr(first, "metric_report_", None) is not None else None),
        "check_rows_": np.zeros(0, np.intp),
    }
    if hasattr(first, "n_samples_fit_"):
        out["n_samples_fit_"] = sum(m.n_samples_fit_ for m in models)
    if chooses_lipschitz:
        out["lipschitz_"] = max(m.lipschitz_ for m in models)
        out["lipschitz_report_"] = CrossFitReports(m.lipschitz_report_ for m in models)
    else:
        out["lipschitz_"], out["lipschitz_report_"] = first.lipschitz_, None
    return out


def shared_residual_raise(spaces: Sequence[Any]) -> float | None:
    """The ``L_r`` every cross-fitted model must assume where one model's scan raised its own.

    Each model's interval holds at level δ/K only if its own assumption does, and the estimator
    intersects them: a raise of ``L_r`` in one model widens that model's intervals, but the
    intersection keeps another model's narrower ones, which assumed what the raise showed false.
    So the largest raise by a scan (``scan_["raised"]``: the residuals' directional scan or the scan
    inside neighbourhoods, :func:`~nwbound.spaces.scan_sentence`) becomes every model's floor
    (``LearnedSpace.share_residual_raise``): raise-only, it can only widen intervals.

    Only the scans' raises are shared. They read variation in windows of a few rows, finer than any
    score model of the family resolves, so what one model's rows show there is in ``p`` itself and
    every model's scores miss it alike. The second, isotropic estimate reads each model's own
    residual at a coarse bandwidth, where two score models fitted on different rows misfit
    differently, and noise alone passes its gate in some fits: shared, it would take every model's
    certificates for one model's misfit.

    One rule for the in-memory estimator and :class:`nwbound.dask.ShardedNadarayaWatson`.

    Parameters
    ----------
    spaces : sequence of LearnedSpace or None
        Each model's ``metric_`` (None, or a space without ``residual_lipschitz_``: no ``"auto"``
        space, nothing to share).

    Returns
    -------
    float or None
        The largest ``L_r`` a scan raised to, where some model's ``residual_lipschitz_`` is smaller;
        else None.

    Examples
    --------
    >>> from types import SimpleNamespace as Space
    >>> from nwbound.spaces import shared_residual_raise
    >>> raised = Space(residual_lipschitz_=2.0, scan_={"raised": True, "lipschitz": 2.0})
    >>> plain = Space(residual_lipschitz_=0.5, scan_={"raised": False, "lipschitz": 0.0})
    >>> shared_residual_raise([raised, plain]), shared_residual_raise([plain, plain])
    (2.0, None)
    """
    spaces = [m for m in spaces if m is not None and hasattr(m, "residual_lipschitz_")]
    raised = [float(m.scan_["lipschitz"]) for m in spaces if (getattr(m, "scan_", None) or {}).get("raised")]
    if not raised or len(spaces) < 2:
        return None
    top = max(raised)
    return top if any(m.residual_lipschitz_ < top for m in spaces) else None


def divided_delta(delta: float, n_models: int) -> float:
    """The level δ/K of each of ``n_models`` cross-fitted models, from the estimator's ``delta``.

    A cross-fitted estimator intersects its K models' intervals, each at level δ/K, so that the
    intersection holds at level δ (a union bound). Every place that sets a model's own ``delta``
    (the in-memory estimator, :class:`nwbound.dask.ShardedNadarayaWatson`) and every per-call
    setting (:func:`divided_bounds`) divides it here.

    Parameters
    ----------
    delta : float
        The estimator's level, in (0, 1).
    n_models : int
        The number of cross-fitted models, K ≥ 1 (1: one model, δ as it is).

    Returns
    -------
    float
        ``delta / n_models``.

    Raises
    ------
    ValueError
        ``delta`` outside (0, 1), or ``n_models`` not a positive integer.

    Examples
    --------
    >>> from nwbound.spaces import divided_delta
    >>> divided_delta(0.05, 2), divided_delta(0.05, 1)
    (0.025, 0.05)
    >>> divided_delta(1.5, 2)
    Traceback (most recent call last):
    ...
    ValueError: delta must be a number with 0 < delta < 1, got 1.5.
    """
    if isinstance(n_models, bool) or not isinstance(n_models, (int, np.integer)) or n_models < 1:
        raise ValueError(f"n_models must be a positive integer (the number of cross-fitted models), got {n_models!r}.")
    return check_open_unit(delta, "delta") / n_models


def divided_bounds(bounds: Any, n_models: int) -> Any:
    """``bounds`` for each of ``n_models`` cross-fitted models: each setting's ``delta`` divided by
    ``n_models`` (:func:`divided_delta`).

    A cross-fitted estimator intersects its models' intervals, each at level δ/K, so that the
    intersection holds at level δ (a union bound). A setting without ``delta`` takes each model's
    own, which is at δ/K already.

    Parameters
    ----------
    bounds : None, str, mapping or list
        As for ``predict_interval(X, bounds=...)``: None (each model's own setting), a mapping
        ``{name: {setting: value}}`` or a list of bound forms (``["hoeffding"]`` is
        ``{"hoeffding": {"bound": "hoeffding"}}``). None and a str come back as they are (a str
        is refused by the estimator's own check, with its explanation).
    n_models : int
        The number of cross-fitted models, K.

    Returns
    -------
    None, str or dict
        ``{name: settings}`` with each ``delta`` divided by ``n_models`` (the settings copied).

    Raises
    ------
    TypeError
        A setting is not a mapping.
    ValueError
        A ``delta`` outside (0, 1).

    Examples
    --------
    >>> from nwbound.spaces import divided_bounds
    >>> divided_bounds({"tight": {"delta": 0.1}, "own": {"bound": "hoeffding"}}, 2)
    {'tight': {'delta': 0.05}, 'own': {'bound': 'hoeffding'}}
    >>> divided_bounds(["chernoff"], 2), divided_bounds(None, 2)
    ({'chernoff': {'bound': 'chernoff'}}, None)
    >>> divided_bounds({"a": 0.1}, 2)
    Traceback (most recent call last):
    ...
    TypeError: bounds['a'] must be a mapping of settings, got float.
    """
    if bounds is None or isinstance(bounds, str):
        return bounds
    named = dict(bounds) if isinstance(bounds, Mapping) else {form: {"bound": form} for form in bounds}
    out = {}
    for name, overrides in named.items():
        if not isinstance(overrides, Mapping):
            raise TypeError(f"bounds[{name!r}] must be a mapping of settings, got {type(overrides).__name__}.")
        settings = dict(overrides)
        if "delta" in settings:
            settings["delta"] = divided_delta(settings["delta"], n_models)
        out[name] = settings
    return out


def kappa_weighted_proba(proba: Sequence[np.ndarray], kappa: Sequence[np.ndarray]) -> np.ndarray:
    """``Σ_k κ_k p̂_k / Σ_k κ_k`` over the cross-fitted models; the plain mean where every κ is 0.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import kappa_weighted_proba
    >>> kappa_weighted_proba((np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])), (np.array([3.0]), np.array([1.0])))
    array([[0.75, 0.25]])
    >>> kappa_weighted_proba([np.array([[1.0, 0.0]])] * 2 + [np.array([[0.0, 1.0]])], [np.zeros(1)] * 3).round(3)
    array([[0.667, 0.333]])
    """
    if len(proba) != len(kappa) or len(proba) == 0:
        raise ValueError(f"kappa_weighted_proba needs one kappa per proba, got {len(proba)} and {len(kappa)}.")
    K = np.stack([np.asarray(k, dtype=np.float64) for k in kappa])[:, :, None]  # (models, n, 1)
    P = np.stack([np.asarray(p, dtype=np.float64) for p in proba])               # (models, n, C)
    total = K.sum(axis=0)
    weights = np.divide(K, total, out=np.full_like(K, 1.0 / K.shape[0]), where=total > 0)
    return np.sum(weights * P, axis=0)


def _checked(parts: Sequence[PredictionInterval]) -> tuple[PredictionInterval, ...]:
    parts = tuple(parts)
    if len(parts) == 0 or not all(isinstance(part, PredictionInterval) for part in parts):
        raise TypeError("intersect_intervals and contradicting_rows take PredictionInterval objects (one per model, "
                        "at least one).")
    return parts


def _meet(parts: Sequence[PredictionInterval]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lower, upper, contradicting)`` of the intersection: ``max_k lower_k``, ``min_k upper_k``
    (raised to ``lower`` where it falls below), and the rows whose models contradict each other."""
    lower = np.max([v.lower for v in parts], axis=0)
    least_upper = np.min([v.upper for v in parts], axis=0)
    apart = np.any(lower > least_upper + _MEET_TOL, axis=1)  # some class's intervals do not meet
    upper = np.maximum(least_upper, lower)
    empty = (lower.sum(axis=1) > 1.0 + _SUM_TOL) | (upper.sum(axis=1) < 1.0 - _SUM_TOL)  # no distribution
    return lower, upper, apart | empty


def contradicting_rows(parts: Sequence[PredictionInterval]) -> np.ndarray:
    """The queries where the cross-fitted models' intervals contradict each other, shape (n,).

    A row *contradicts* where some class's intervals do not meet (``max_k lower_k > min_k upper_k``
    beyond a rounding slack of ``1e-12``), or where their intersection holds no distribution
    (``Σ_c lower_c > 1`` or ``Σ_c upper_c < 1`` beyond ``1e-9``). Every model's box holds a
    distribution that sums to 1 (its ``p̂``), so on such a row no ``p`` lies in every box: **some
    model's interval missed p there** — label-free proof. If each of the K models' intervals holds
    ``p`` with probability ``≥ 1 − δ/K``, a row contradicts with probability at most ``δ`` (union
    bound); a larger share of contradicting queries is evidence against the assumption there (L
    too small). :func:`intersect_intervals` reports the hull of the models' intervals on these rows.

    Parameters
    ----------
    parts : sequence of PredictionInterval
        The models' intervals of the same queries, with the same classes.

    Returns
    -------
    ndarray of bool, shape (n_queries,)

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> from nwbound.spaces import contradicting_rows
    >>> def iv(p, e):
    ...     return PredictionInterval.from_parts(proba=np.array([[p, 1 - p]]), bias=np.zeros((1, 2)),
    ...         sampling=np.full((1, 2), e), kappa=np.ones(1), n_eff=np.ones(1),
    ...         vacuous=np.array([False]), bandwidth=np.ones(1))
    >>> contradicting_rows([iv(0.8, 0.1), iv(0.6, 0.15)]).tolist()  # [0.7, 0.9] and [0.45, 0.75] meet
    [False]
    >>> contradicting_rows([iv(0.8, 0.05), iv(0.6, 0.1)]).tolist()  # [0.75, 0.85] and [0.5, 0.7] do not
    [True]
    """
    return _meet(_checked(parts))[2]


def intersect_intervals(first: PredictionInterval, *others: PredictionInterval) -> PredictionInterval:
    """The cross-fitted interval: the intervals of K models, each at level ``δ/K``, intersected.

    ``lower = max_k lower_k``, ``upper = min_k upper_k``: if each model's interval misses ``p``
    with probability at most ``δ/K``, the intersection misses it with probability at most ``δ``
    (union bound).

    **Rows where the models contradict each other** (:func:`contradicting_rows`: some class's
    intervals do not meet, or their intersection holds no distribution) report the **hull** of
    the models' intervals instead, ``lower = min_k lower_k``, ``upper = max_k upper_k``, on every
    class of the row. On such a row some model's interval has missed ``p`` (no distribution lies
    in every box, and each box holds its model's ``p̂``); the intersection there is known to be
    wrong, and certifying from it would certify on a query where the model itself can tell that
    its bound failed. The hull holds ``p`` whenever *any* one model's interval does, so it misses
    ``p`` only where every model's does (probability ``≤ δ/K``). Validity of the whole rule: the
    reported box misses ``p`` only where some model's interval misses it (a row that does not
    contradict reports the intersection, which holds ``p`` when all do; one that does reports the
    hull), so with probability at most ``δ``, as before; and a row contradicts only where some
    model misses, so on at most a share ``δ`` of the queries in expectation under the assumption
    (a larger share is evidence that L is too small there). The hull contains every model's
    interval, hence the box the intersection would report; a certificate from it needs every
    model to agree, so such rows are rarely certified.

    ``proba`` lies in the box, and rows sum to 1. It is the κ-weighted mean ``p̄`` of the models'
    ``p̂`` (:func:`kappa_weighted_proba`) moved into the box: its Euclidean projection ``q`` onto
    ``{q : lower ≤ q ≤ upper, Σ_c q_c = 1}`` (:func:`project_into_box`; ``p̄`` itself where it
    lies in the box already, as it does in the hull: each ``p̂_k`` lies in its own interval, so
    their weighted mean lies in the hull). On the event that the box holds ``p``, ``p`` is in that
    convex set, so ``‖q − p‖₂ ≤ ‖p̄ − p‖₂`` (a projection onto a convex set is non-expansive), and
    a class the box certifies (its lower end above every other upper end) is the argmax of ``q``.
    Should a box still hold no distribution (a model whose ``p̂`` left its own interval by
    rounding), ``proba`` stays ``p̄`` and that row's box is widened to contain it
    (``lower = min(lower, p̄)``, ``upper = max(upper, p̄)``), so ``lower ≤ proba ≤ upper`` on every
    row.

    ``epsilon = max(upper − proba, proba − lower)`` (1 where ``vacuous``), so that
    ``|p − proba| ≤ ε`` on the same event; it is at most the box's width ``upper − lower``. On a
    class where ``p̄`` lay outside its interval it is smaller than ``p̄``'s
    ``max(upper − p̄, p̄ − lower)``; on the other classes of such a row it can be larger (``q``
    moves off ``p̄`` to make the row sum to 1), never beyond the width. ``bias``/``sampling`` are
    those of the model whose interval end is the reported end that sets ``ε`` (an account, per
    entry: on a contradicting row the hull's far end, so the account is of the width reported;
    the model with the smallest ``ε`` where the box was widened to hold ``p̄``), ``bandwidth`` that of the
    model with the largest ``κ``; ``kappa`` and ``n_eff`` add up; ``vacuous`` where every model is
    vacuous; ``outside_box`` where the query lies outside every model's box.

    Parameters
    ----------
    first, *others : PredictionInterval
        The models' intervals of the same queries, with the same classes.

    Returns
    -------
    PredictionInterval

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> from nwbound.spaces import intersect_intervals
    >>> def iv(p, e, k):
    ...     return PredictionInterval.from_parts(proba=np.array([[p, 1 - p]]), bias=np.zeros((1, 2)),
    ...         sampling=np.full((1, 2), e), kappa=np.array([k]), n_eff=np.array([k]),
    ...         vacuous=np.array([False]), bandwidth=np.array([1.0]))
    >>> both = intersect_intervals(iv(0.8, 0.3, 1.0), iv(0.6, 0.1, 1.0))
    >>> both.lower.round(2).tolist(), both.upper.round(2).tolist(), both.proba.round(2).tolist()
    ([[0.5, 0.3]], [[0.7, 0.5]], [[0.7, 0.3]])
    >>> moved = intersect_intervals(iv(0.8, 0.05, 1.0), iv(0.5, 0.3, 1.0))  # p̄ = 0.65, box [0.75, 0.8]
    >>> moved.lower.round(2).tolist(), moved.upper.round(2).tolist(), moved.proba.round(2).tolist()
    ([[0.75, 0.2]], [[0.8, 0.25]], [[0.75, 0.25]])
    >>> apart = intersect_intervals(iv(0.8, 0.05, 1.0), iv(0.6, 0.1, 1.0))  # [0.75, 0.85], [0.5, 0.7]: the hull
    >>> apart.lower.round(2).tolist(), apart.upper.round(2).tolist(), apart.proba.round(2).tolist()
    ([[0.5, 0.15]], [[0.85, 0.5]], [[0.7, 0.3]])
    >>> bool(apart.certified[0])
    False
    """
    parts = _checked((first,) + others)
    mean = kappa_weighted_proba([v.proba for v in parts], [v.kappa for v in parts])
    lower, upper, contradicting = _meet(parts)
    hull = contradicting[:, None]
    lower = np.where(hull, np.min([v.lower for v in parts], axis=0), lower)
    upper = np.where(hull, np.max([v.upper for v in parts], axis=0), upper)
    proba, feasible = project_into_box(mean, lower, upper)
    widen = ~feasible[:, None]
    lower = np.where(widen, np.minimum(lower, mean), lower)
    upper = np.where(widen, np.maximum(upper, mean), upper)
    vacuous = np.logical_and.reduce([v.vacuous for v in parts])
    epsilon = _half_width(proba, lower, upper, vacuous)
    source = _end_source(parts, proba, lower, upper)
    largest = np.argmax([v.kappa for v in parts], axis=0)
    outside = None
    if all(v.outside_box is not None for v in parts):
        outside = np.logical_and.reduce([v.outside_box for v in parts])
    return PredictionInterval(
        proba=proba,
        lower=lower,
        upper=upper,
        epsilon=epsilon,
        bias=_pick([v.bias for v in parts], source),
        sampling=_pick([v.sampling for v in parts], source),
        kappa=np.sum([v.kappa for v in parts], axis=0),
        n_eff=np.sum([v.n_eff for v in parts], axis=0),
        vacuous=vacuous,
        bandwidth=_pick([v.bandwidth for v in parts], largest),
        outside_box=outside,
    )


def move_into_box(interval: PredictionInterval, proba: np.ndarray) -> PredictionInterval:
    """``interval`` with another point estimate: ``proba`` moved into its box.

    The box ``[lower, upper]`` is what the bound guarantees, whatever point is reported inside it;
    ``point_estimate="auto"`` reports a score model's probabilities instead of the NW estimate.
    Each row of ``proba`` is projected onto ``{q : lower ≤ q ≤ upper, Σ_c q_c = 1}``
    (:func:`project_into_box`); where that set is empty the interval's own ``proba`` stays.
    ``epsilon`` becomes ``max(proba − lower, upper − proba)`` (1 where ``vacuous``); ``lower``,
    ``upper`` and every other field are kept. A class the box certifies (its lower end above every
    other upper end) is the argmax of any distribution in the box, so :attr:`certified` and the
    certified class do not change.

    Parameters
    ----------
    interval : PredictionInterval
        NumPy fields.
    proba : ndarray of shape (n_queries, n_classes)
        The estimate to report, in the interval's class order.

    Returns
    -------
    PredictionInterval

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> from nwbound.spaces import move_into_box
    >>> iv = PredictionInterval.from_parts(proba=np.array([[0.6, 0.4]]), bias=np.zeros((1, 2)),
    ...     sampling=np.full((1, 2), 0.1), kappa=np.ones(1), n_eff=np.ones(1),
    ...     vacuous=np.array([False]), bandwidth=np.ones(1))
    >>> moved = move_into_box(iv, np.array([[0.9, 0.1]]))  # box [0.5, 0.7] × [0.3, 0.5]
    >>> moved.proba.round(2).tolist(), moved.epsilon.round(2).tolist(), moved.upper.round(2).tolist()
    ([[0.7, 0.3]], [[0.2, 0.2]], [[0.7, 0.5]])
    """
    q, feasible = project_into_box(proba, interval.lower, interval.upper)
    proba = np.where(feasible[:, None], q, interval.proba)
    return replace(interval, proba=proba,
                   epsilon=_half_width(proba, interval.lower, interval.upper, np.asarray(interval.vacuous, dtype=bool)))


def _half_width(proba: np.ndarray, lower: np.ndarray, upper: np.ndarray, vacuous: np.ndarray) -> np.ndarray:
    """``ε`` of a reported point inside its box: ``max(upper − proba, proba − lower)`` in [0, 1], 1 where vacuous."""
    epsilon = np.clip(np.maximum(upper - proba, proba - lower), 0.0, 1.0)
    epsilon[vacuous] = 1.0
    return epsilon


def _end_source(parts: Sequence[PredictionInterval], proba: np.ndarray, lower: np.ndarray,
                upper: np.ndarray) -> np.ndarray:
    """Per entry, the model whose interval end is the reported end that sets ``ε`` (the first on ties).

    The far end (``upper`` where ``upper − proba ≥ proba − lower``) is some model's end: the
    intersection's (``min upper``, ``max lower``) or, on contradicting rows, the hull's (``max upper``,
    ``min lower``). Where no model has it (a box widened to hold ``p̄``), the model with the smallest ``ε``.
    """
    far_upper = upper - proba >= proba - lower
    end = np.where(far_upper, upper, lower)
    ends = np.stack([np.where(far_upper, v.upper, v.lower) for v in parts])
    match = ends == end[None]
    least = np.argmin([v.epsilon for v in parts], axis=0)
    return np.where(match.any(axis=0), np.argmax(match, axis=0), least)


def _pick(arrays: Sequence[np.ndarray], which: np.ndarray) -> np.ndarray:
    """Entry by entry, the entry of ``arrays[which]`` (any number of arrays, unlike ``np.choose``)."""
    return np.take_along_axis(np.stack(arrays), np.asarray(which)[None], axis=0)[0]


def _inside(proba: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Rows whose every entry lies in its interval."""
    return np.all((lower <= proba) & (proba <= upper), axis=1)


def project_into_box(proba: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The Euclidean projection of each row of ``proba`` onto ``{q : lower ≤ q ≤ upper, Σ_c q_c = 1}``.

    Where that set is empty (``Σ lower > 1`` or ``Σ upper < 1``, beyond a rounding tolerance of
    ``1e-9``) the row is left as it is. The projection is ``q_c = clip(p̂_c − τ, lower_c, upper_c)``
    with the one ``τ`` per row that makes the row sum to 1 (the KKT conditions of
    ``min ‖q − p̂‖²`` over the set); ``Σ_c clip(p̂_c − τ, …)`` falls as ``τ`` grows, so ``τ`` is found
    by a fixed number of bisection steps on all rows at once, then made exact on the classes it
    leaves free. Rows already inside their intervals are returned unchanged (they are in the set
    where they sum to 1). Used by :func:`intersect_intervals`.

    Parameters
    ----------
    proba, lower, upper : ndarray of shape (n, C)
        ``lower ≤ upper`` entry by entry.

    Returns
    -------
    q : ndarray of shape (n, C)
        The projection; ``proba``'s row where the set is empty.
    feasible : ndarray of bool, shape (n,)
        Where the set is non-empty.

    Raises
    ------
    ValueError
        Arrays of other shapes than ``proba``'s (n, C), non-finite values, or ``lower > upper``.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import project_into_box
    >>> q, ok = project_into_box(np.array([[0.65, 0.35]]), np.array([[0.75, 0.0]]), np.array([[0.8, 0.5]]))
    >>> q.round(6).tolist(), ok.tolist()
    ([[0.75, 0.25]], [True])
    >>> q, ok = project_into_box(np.array([[0.5, 0.5]]), np.array([[0.6, 0.6]]), np.array([[0.7, 0.7]]))
    >>> q.tolist(), ok.tolist()  # Σ lower = 1.2 > 1: no distribution in the box, p̂ kept
    ([[0.5, 0.5]], [False])
    """
    p = np.asarray(proba, dtype=np.float64)
    lo = np.asarray(lower, dtype=np.float64)
    up = np.asarray(upper, dtype=np.float64)
    for name, arr in (("proba", p), ("lower", lo), ("upper", up)):
        if arr.ndim != 2 or arr.shape != p.shape or not np.all(np.isfinite(arr)):
            raise ValueError(f"project_into_box needs finite `{name}` of the shape of `proba` (n, C), "
                             f"got shape {arr.shape}{'' if np.all(np.isfinite(arr)) else ' with non-finite values'}.")
    if np.any(lo > up):
        raise ValueError(f"project_into_box needs lower ≤ upper; {int(np.count_nonzero(lo > up))} entries have "
                         "lower > upper (an intersection of intervals that do not meet: set upper = lower there).")
    q = p.copy()
    feasible = (lo.sum(axis=1) <= 1.0 + _SUM_TOL) & (up.sum(axis=1) >= 1.0 - _SUM_TOL)
    rows = np.flatnonzero(feasible & ~_inside(p, lo, up))
    if rows.size == 0:
        return q, feasible
    p, lo, up = p[rows], lo[rows], up[rows]
    # g(τ) = Σ_c clip(p̂_c − τ, lo_c, up_c) falls from Σ up (τ ≤ min(p̂ − up)) to Σ lo (τ ≥ max(p̂ − lo)).
    a, b = np.min(p - up, axis=1), np.max(p - lo, axis=1)
    for _ in range(_BISECTION_STEPS):  # a fixed count over all rows: the bracket's width halves each time
        mid = 0.5 * (a + b)
        high = np.clip(p - mid[:, None], lo, up).sum(axis=1) > 1.0  # g(mid) > 1: τ lies above mid
        a, b = np.where(high, mid, a), np.where(high, b, mid)
    tau = 0.5 * (a + b)
    # Exact τ on the classes left free at that τ: Σ_free (p̂_c − τ) + Σ_clipped bound = 1.
    shifted = p - tau[:, None]
    at_lo, at_up = shifted <= lo, shifted >= up
    free = ~(at_lo | at_up)
    n_free = free.sum(axis=1)
    rest = np.where(at_lo, lo, 0.0).sum(axis=1) + np.where(at_up, up, 0.0).sum(axis=1)
    exact = (np.where(free, p, 0.0).sum(axis=1) + rest - 1.0) / np.maximum(n_free, 1)
    tau = np.where(n_free > 0, exact, tau)
    q[rows] = np.clip(p - tau[:, None], lo, up)
    return q, feasible
