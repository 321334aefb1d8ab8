"""The raise-only estimates of ``L_r`` of :class:`~nwbound.spaces.LearnedSpace` (``metric="auto"``):
the residual scan's construction, the estimates on label draws, and their noise gate.

Split from :mod:`nwbound.spaces._space` (which keeps the estimates' order and the constants of
their sizes) along this seam: each function here reads only its arguments.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: A raise-only estimate raises ``L_r`` only above each of this many estimates on labels drawn from
#: the scores (no residual: noise alone), at the same rows and resolution: noise alone raises it 1
#: time in 20.
_NULL_DRAWS = 19


def _residual_scan(features: np.ndarray, S: np.ndarray, rs: np.random.RandomState, planes_fit: bool = True,
                   pooled: int | None = None, of_levels: bool = False) -> tuple[Any, bool, float | None]:
    """The scan of the residuals of scores ``S`` on rows ``features`` (:meth:`LearnedSpace._scan_residuals`):
    along each feature and either the coordinate planes, 2° apart, of the features with few ties
    (:func:`~nwbound.assumptions.plane_features`; none near the axis of one with long ties,
    :func:`~nwbound.assumptions.tied_features`) where the scan's budget allows
    (:func:`~nwbound.assumptions.plane_directions_fit`; always in two features), or random
    directions (:func:`~nwbound.assumptions.scan_directions`, drawn from ``rs``), in windows from
    :func:`~nwbound.assumptions.scan_min_window` rows; whether it took the planes (never where
    ``planes_fit`` is False: a level scan budgeted along the axes and random directions); and the
    largest spread its slopes read (None: every pair). ``pooled``: a feature whose levels are
    scanned together, in the other features (:func:`~nwbound.assumptions.pooled_levels`; windows
    from the rows of an average level). ``of_levels`` (or ``pooled``): the scan of a feature's levels,
    whose narrowest windows take ``exact_null`` (:class:`~nwbound.assumptions.ResidualScan`)."""
    from ..assumptions import (SCAN_MIN_WINDOW, ResidualScan, plane_directions_fit, plane_features, pooled_levels,
                               scan_directions, scan_min_window, tied_features)

    rows = features if pooled is None else np.delete(features, pooled, axis=1)
    n, d = rows.shape
    levels = 1 if pooled is None else np.unique(features[:, pooled]).shape[0]
    window = scan_min_window(n // levels)
    chosen = np.arange(d) if d <= 2 else plane_features(rows, window)  # in 3+: features with few ties
    planes = planes_fit and plane_directions_fit(d, n, S.shape[1], chosen.shape[0], min_window=window)
    directions = scan_directions(d, random_state=None if planes else rs, planes=chosen if planes else False,
                                 tied=tied_features(rows, window) if planes else None)
    top = None
    if pooled is not None:
        features, directions, top = pooled_levels(features, pooled, directions)
    return ResidualScan(features, directions, S * (1.0 - S), scores=S, min_window=window,
                        single_min_window=SCAN_MIN_WINDOW, exact_null=of_levels or pooled is not None), bool(planes), top


def _estimate_residual(features: np.ndarray, y: np.ndarray, offset: np.ndarray, classes: np.ndarray,
                       seed: int) -> Any:
    """:func:`~nwbound.assumptions.estimate_lipschitz` of ``1{y = c} − offset_c``, ``offset``'s
    columns those of ``classes`` (the classes present in ``y`` are taken)."""
    from ..assumptions import estimate_lipschitz

    return estimate_lipschitz(features, y, offset=_present_columns(offset, classes, y), random_state=seed)


def _present_columns(offset: np.ndarray, classes: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``offset``'s columns (those of ``classes``) of the classes present in ``y``: the offset an
    estimate of ``L`` on labels ``y`` takes."""
    return offset[:, np.searchsorted(classes, np.unique(y))]


def _residual_values(features: np.ndarray, offset: np.ndarray, classes: np.ndarray, seed: int) -> Any:
    """A batch statistic for :func:`_null_maximum`: :func:`_estimate_residual`'s value for each label
    draw (None where it raises ValueError), the work that depends on no label done once for every
    batch (:class:`~nwbound.assumptions.LipschitzDraws`)."""
    from ..assumptions import LipschitzDraws

    draws_of = LipschitzDraws(features, random_state=seed)
    return lambda draws: draws_of.values(draws, [_present_columns(offset, classes, y) for y in draws])


def _each_draw(statistic: Any) -> Any:
    """A batch statistic for :func:`_null_maximum` or :func:`_null_maxima` from one of a single draw
    (None where it raises ValueError)."""
    def batch(draws: list) -> list[float | None]:
        out: list[float | None] = []
        for drawn in draws:
            try:
                out.append(statistic(drawn))
            except ValueError:
                out.append(None)
        return out
    return batch


def _null_maximum(statistic: Any, value: float, offset: np.ndarray, classes: np.ndarray,
                  rs: np.random.RandomState) -> float | None:
    """The noise gate of the raise-only estimates of ``L_r``: ``statistic`` (a list of label draws
    to a list of values, None for a draw it cannot score) on each of ``_NULL_DRAWS`` label draws
    from the scores themselves (``p = s``: what noise alone shows); the largest of them where every
    one stays below ``value``, else None (``value`` is within noise). Stops at the first draw that
    reaches it (noise alone: after two draws on average). The draws go to ``statistic`` in
    batches of 1, 2, 4, … (each draw the same as one at a time: a batch shares the work that
    depends on no label, and a gate that stops early pays for few draws)."""
    def one(draws: list) -> list:
        return [None if v is None else (v,) for v in statistic(draws)]

    return _null_maxima(one, (value,), offset, classes, rs)[0]


def _null_maxima(statistic: Any, values: tuple, offset: np.ndarray, classes: np.ndarray,
                 rs: np.random.RandomState) -> list[float | None]:
    """:func:`_null_maximum` of several statistics on the same draws: ``statistic`` maps a list of
    draws to a list of tuples (one value per statistic, or None for a draw it cannot score); each
    statistic's gate is its own (None once a draw reaches its value), and the draws stop once every
    gate is decided."""
    P = np.where(offset.sum(axis=1, keepdims=True) > 0, offset, 1.0)
    cumulative = np.cumsum(P / P.sum(axis=1, keepdims=True), axis=1)
    largest: list[float | None] = [-np.inf] * len(values)
    done, batch = 0, 1
    while done < _NULL_DRAWS and any(v is not None for v in largest):
        draws = [classes[np.minimum((rs.random_sample(P.shape[0])[:, None] > cumulative).sum(axis=1),
                                    classes.shape[0] - 1)] for _ in range(min(batch, _NULL_DRAWS - done))]
        done, batch = done + len(draws), 2 * batch
        for nulls in statistic(draws):
            if nulls is None:
                continue  # a draw with a single class says nothing about the noise
            for j, null in enumerate(nulls):
                if largest[j] is None:
                    continue
                largest[j] = None if null >= values[j] else max(largest[j], null)
    # -inf: no draw could be scored, nothing says it is noise
    return [None if v is None else float(v) for v in largest]
