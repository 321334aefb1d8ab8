"""The residual scan inside small neighbourhoods: structure that is thin in every direction.

:class:`~nwbound.assumptions.ResidualScan` sorts every row along a direction, so a window is a slab
across the whole range of the other features. A curved structure (a ring, a sphere, a band along a
parabola) meets each slab at a slant over most of its length and is blurred along every direction.
Inside a neighbourhood of a few dozen rows a curved structure is nearly straight: sorted along a
direction within it, windows of a few rows are thin strips, and along its normal they resolve it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils import check_random_state

from ._scan import SCAN_PLANE_VALUES, _ROUNDING_SPREAD, ResidualScan, _columns, _distinct_values

__all__ = ["LOCAL_SCAN_MAX_FEATURES", "LocalResidualScan", "local_directions", "local_scan_rows", "local_scans"]

#: Rows of each neighbourhood, one scan per size: a curved structure of radius ρ (in std) deviates
#: from its tangent by R²/(2ρ) over a neighbourhood of radius R; 64 rows of 2 000 in two features
#: are R ≈ 0.33 std, where a circle of radius 1 std deviates by 0.05 std, about the width of the
#: thinnest band windows of 4 rows resolve there. 256 rows: windows of a band's width hold more rows
#: (a steadier sum) where the structure bends less.
LOCAL_SCAN_SCALES = (64, 128, 256)
LOCAL_SCAN_ROWS = LOCAL_SCAN_SCALES[0]
#: Centres per ``LOCAL_SCAN_ROWS`` rows: each row lies in about this many neighbourhoods.
LOCAL_SCAN_COVER = 3
#: The finest window inside a neighbourhood: 4 rows, a strip a sixteenth of its width.
LOCAL_SCAN_WINDOW = 4
#: Angle between the directions inside a neighbourhood, in degrees: θ blurs a strip by θ·R, 0.03 std at 5°.
LOCAL_SCAN_DEGREES = 5.0
#: In three features a neighbourhood is wider (its radius shrinks as n^(−1/d): 64 rows of 2 000 are
#: 0.65 std wide, where a sphere of radius 1.15 std bends by 0.18 std) and directions 5° apart
#: number 826. There the local scan runs lighter: directions 15° apart (92), neighbourhoods of 64
#: rows only, one centre per 64 rows (``LOCAL_SCAN_3D``); it adds 12-24 % to a fit, where 10° and
#: three sizes tripled it. It holds thin shells at 5 000-20 000 rows on some seeds (at 3 000 the
#: blur of a 0.65-std neighbourhood hides them), and runs only where every feature has more than
#: ``SCAN_PLANE_VALUES`` values: the levels of a feature with few values slice a neighbourhood into
#: flat layers, where a direction at θ from a layer's normal shortens the spread by sin θ and so
#: lengthens the slope by 1/sin θ (a coarse sine flipped by a binary feature read 1-9 per std where
#: p's steepest slope is 1.1). Single pairs of 4-row windows where the scores are near 0 or 1 read
#: 1-5 per std on smooth fields (their labels vary more than the scores say): single pairs from 16
#: rows, as the scan of every row reads them from 32. Four features and more: none.
LOCAL_SCAN_MAX_FEATURES = 3
#: The single-pair statistics' finest window, in two features and three (round 21; the aggregated
#: sums still read windows from ``LOCAL_SCAN_WINDOW``): 4-row pairs where the scores are near 0 or 1
#: read noise as slope (in two features a field whose scores are off by 0.24-0.41 per std read 1.7
#: and 3.1; once one cross-fitted model's raise became every model's, that took the fit's
#: certificates), and the thin rings and bands of the known-p lists still raise from 16 rows.
LOCAL_SCAN_SINGLE_WINDOW = 16
#: In three features: (degrees between directions, neighbourhood sizes, centres per k rows, the
#: single-pair statistics' finest window).
LOCAL_SCAN_3D = (15.0, (64,), 1.0, LOCAL_SCAN_SINGLE_WINDOW)
#: The most centres × directions × rows of the local scans of one fit, per residual column (their
#: cost, the 19 null draws included, is about linear in it; the scan of every row has the same).
#: Per column since round 22: a fit's other work grows with its classes too, and a budget shared by
#: the columns ran fewer centres, or none, the more classes a fit had (three classes on 8 000 rows:
#: none; a thin ring beside a third class missed 32-41 % of the queries near it).
LOCAL_SCAN_BUDGET = 2_200_000


def local_directions(n_features: int, degrees: float = LOCAL_SCAN_DEGREES) -> np.ndarray:
    """Unit directions about ``degrees`` apart over the half-sphere (a direction and its opposite
    sort the same rows): evenly spaced over the half-circle in two features, a Fibonacci lattice of
    the upper half-sphere in three. Uses no labels.

    Parameters
    ----------
    n_features : int
        1 to 3 (the local scan itself runs in up to ``LOCAL_SCAN_MAX_FEATURES``).
    degrees : float, default=5.0
        The spacing (``LOCAL_SCAN_DEGREES``).

    Returns
    -------
    ndarray of shape (k, n_features)

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.assumptions import local_directions
    >>> local_directions(2).shape, local_directions(3).shape
    ((36, 2), (826, 3))
    >>> bool(np.allclose(np.linalg.norm(local_directions(3), axis=1), 1.0))
    True
    """
    if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)) \
            or not 1 <= n_features <= 3:
        raise ValueError(f"n_features must be 1, 2 or 3 (the local scan's dimensions), got {n_features!r}.")
    if not 0 < degrees < 90:
        raise ValueError(f"degrees must be in (0, 90), got {degrees!r}.")
    angle = np.radians(degrees)
    if n_features == 1:
        return np.ones((1, 1))
    if n_features == 2:
        theta = np.arange(int(np.ceil(np.pi / angle))) * np.pi / np.ceil(np.pi / angle)
        return np.column_stack([np.cos(theta), np.sin(theta)])
    k = int(np.ceil(2 * np.pi / angle**2))  # the half-sphere's area over one direction's patch
    i = np.arange(k) + 0.5
    z = 1.0 - i / k  # uniform in z on (0, 1): uniform on the upper half-sphere
    phi = np.pi * (1 + 5**0.5) * i
    r = np.sqrt(1.0 - z**2)
    return np.column_stack([r * np.cos(phi), r * np.sin(phi), z])


class LocalResidualScan(ResidualScan):
    """:class:`ResidualScan` inside neighbourhoods: each of ``n_centres`` rows drawn at random
    (label-free) with its ``rows`` nearest rows, sorted along each of ``directions``; windows of
    ``min_window`` rows and up, pairs of adjacent windows as in :class:`ResidualScan`, one
    (neighbourhood, direction) standing for one direction there (its statistics, slopes and
    aggregated sums are per such pair).

    Within a neighbourhood the same argument bounds a pair's expected difference by ``L·spread``:
    the neighbourhood is a function of the features alone, so the labels of its rows are still
    independent with means ``p``.

    Parameters
    ----------
    features : array-like of shape (n, d)
        Standardised features (1 to 3 columns unless ``directions`` are given).
    variances : array-like of shape (n,) or (n, C)
    rows : int, default=64
        Rows per neighbourhood (``LOCAL_SCAN_ROWS``; at most n).
    cover : float, default=3
        Centres per ``rows`` rows (``LOCAL_SCAN_COVER``).
    directions : array-like of shape (k, d) or None
        None: :func:`local_directions`.
    min_window : int, default=4
    scores : array-like, optional
        As in :class:`ResidualScan`.
    single_min_window : int or None, default=None
    random_state : int, RandomState or None
        Draws the centres.

    Attributes
    ----------
    centres : ndarray of int
        The rows whose neighbourhoods are scanned.
    rows : int
        Rows per neighbourhood.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.assumptions import LocalResidualScan
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1.5, 1.5, (3000, 2))
    >>> p = 0.1 + 0.8 * np.exp(-(((np.linalg.norm(X, axis=1) - 1) / 0.05) ** 2))  # a thin ring
    >>> s = np.full(3000, p.mean())
    >>> y = (rng.random(3000) < p).astype(float)
    >>> scan = LocalResidualScan(X / X.std(axis=0), s * (1 - s), random_state=0)
    >>> bool(scan.aggregated_z(y - s) > 10)
    True
    """

    def __init__(self, features: Any, variances: Any, *, rows: int = LOCAL_SCAN_ROWS,
                 cover: float = LOCAL_SCAN_COVER, directions: Any = None, min_window: int = LOCAL_SCAN_WINDOW,
                 scores: Any = None, single_min_window: int | None = None, random_state: Any = None):
        from sklearn.neighbors import NearestNeighbors

        F = np.asarray(features, dtype=np.float64)
        V = _columns(variances, "variances")
        if F.ndim != 2 or V.shape[0] != F.shape[0]:
            raise ValueError(f"features (n, d) and variances (n,) or (n, C) must agree; got shapes {F.shape} and "
                             f"{np.shape(variances)}.")
        U = local_directions(F.shape[1]) if directions is None else np.asarray(directions, dtype=np.float64)
        if U.ndim != 2 or U.shape[1] != F.shape[1]:
            raise ValueError(f"directions must be (k, {F.shape[1]}); got shape {U.shape}.")
        if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 2:
            raise ValueError(f"rows must be an integer of at least 2, got {rows!r}.")
        if not cover > 0:
            raise ValueError(f"cover must be positive, got {cover!r}.")
        S = None if scores is None else _columns(scores, "scores")
        if S is not None and S.shape != V.shape:
            raise ValueError(f"scores must have the variances' shape {V.shape}; got {np.shape(scores)}.")
        n = F.shape[0]
        k = int(min(rows, n))
        self.rows = k
        n_centres = int(min(n, np.ceil(cover * n / max(k, 1)))) if n else 0
        self.centres = np.sort(check_random_state(random_state).choice(n, size=n_centres, replace=False)) \
            if n_centres else np.zeros(0, np.intp)
        if n_centres:
            near = NearestNeighbors(n_neighbors=k).fit(F).kneighbors(F[self.centres], return_distance=False)
        else:
            near = np.zeros((0, k), np.intp)
        T = np.einsum("ckd,jd->cjk", F[near], U)  # (centres, directions, rows): projections inside each
        inner = np.argsort(T, axis=2, kind="stable")
        order = np.take_along_axis(np.broadcast_to(near[:, None, :], T.shape), inner, axis=2).reshape(-1, k)
        sorted_t = np.take_along_axis(T, inner, axis=2).reshape(-1, k)
        least = _ROUNDING_SPREAD * (np.ptp(sorted_t, axis=1) if k else np.zeros(order.shape[0]))
        self._build(order, sorted_t, least, V, S, min_window=min_window, single_min_window=single_min_window,
                    exact_null=False)


def _settings(d: int) -> tuple:
    """(degrees between directions, neighbourhood sizes, centres per size's rows, single-pair window) in ``d`` features."""
    return (LOCAL_SCAN_DEGREES, LOCAL_SCAN_SCALES, LOCAL_SCAN_COVER, LOCAL_SCAN_SINGLE_WINDOW) if d == 2 else LOCAL_SCAN_3D


def _cost_per_row(d: int) -> int:
    """The local scans' cost per row and residual column in ``d`` features (what ``LOCAL_SCAN_BUDGET``
    counts at one centre per neighbourhood's rows): neighbourhood sizes × directions."""
    degrees, scales, _, _ = _settings(d)
    return len(scales) * local_directions(d, degrees).shape[0]


def local_scan_rows(n_rows: int, n_features: int, *, random_state: Any = None,
                    budget: float = LOCAL_SCAN_BUDGET) -> np.ndarray:
    """The rows :func:`local_scans` should read: every one of ``n_rows`` where the local scans of
    that many rows fit ``budget`` at one centre per neighbourhood (``cover`` 1), else a random
    subset of as many as fit (sorted). Uses no labels.

    A fit whose local scans do not fit runs none (:func:`local_scans`), and a structure they would
    have seen goes unseen. The scans raise ``L_r`` only, so any rows may feed them; fewer rows make
    each neighbourhood wider, a coarser scan but a scan. (``metric="auto"`` scans at most
    ``AUTO_RESIDUAL_ROWS`` rows, which fit: this keeps a larger scan from running none.)

    Parameters
    ----------
    n_rows : int
        The rows available.
    n_features : int
        The features the scan reads (the local scans run in 2 and 3).
    random_state : int, RandomState or None
        Draws the subset (only where one is needed).
    budget : float, default=2200000
        ``LOCAL_SCAN_BUDGET``.

    Returns
    -------
    ndarray of int
        Sorted row indices.

    Examples
    --------
    >>> from nwbound.assumptions import local_scan_rows
    >>> local_scan_rows(8000, 2).shape[0], local_scan_rows(30000, 2, random_state=0).shape[0]
    (8000, 20370)
    """
    if not 2 <= n_features <= LOCAL_SCAN_MAX_FEATURES:
        return np.arange(n_rows)
    fits = int(budget // _cost_per_row(n_features))
    if n_rows <= fits:
        return np.arange(n_rows)
    return np.sort(check_random_state(random_state).choice(n_rows, fits, replace=False))


def local_scans(features: Any, variances: Any, scores: Any = None, *, random_state: Any = None,
                budget: float = LOCAL_SCAN_BUDGET) -> list[LocalResidualScan]:
    """The local scans of a fit: one :class:`LocalResidualScan` per neighbourhood size of
    ``LOCAL_SCAN_SCALES`` (at most the rows), in at most ``LOCAL_SCAN_MAX_FEATURES`` features (at
    least 2: along one feature the scan of every row is local already); in three features lighter
    (``LOCAL_SCAN_3D``), and only where every feature has more than ``SCAN_PLANE_VALUES`` values;
    where centres × directions × rows exceed ``budget`` (per residual column), fewer centres (``cover`` down
    to 1), else none (:func:`local_scan_rows` picks rows that fit). Uses no labels.

    Parameters
    ----------
    features : array-like of shape (n, d)
    variances : array-like of shape (n,) or (n, C)
    scores : array-like or None
    random_state : int, RandomState or None
        Draws the centres.
    budget : float, default=2200000
        ``LOCAL_SCAN_BUDGET``.

    Returns
    -------
    list of LocalResidualScan

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.assumptions import local_scans
    >>> rng = np.random.default_rng(0)
    >>> [s.centres.shape[0] for s in local_scans(rng.normal(size=(2000, 2)), np.full(2000, 0.25), random_state=0)]
    [94, 47, 24]
    >>> [(s.rows, s.centres.shape[0], s.n_directions) for s in local_scans(rng.normal(size=(2000, 3)), np.full(2000, 0.25))]
    [(64, 32, 2944)]
    >>> local_scans(rng.normal(size=(2000, 4)), np.full(2000, 0.25)), local_scans(rng.normal(size=(2000, 1)), np.full(2000, 0.25))
    ([], [])
    """
    F = np.asarray(features, dtype=np.float64)
    V = _columns(variances, "variances")
    if F.ndim != 2 or V.shape[0] != F.shape[0]:
        raise ValueError(f"features (n, d) and variances (n,) or (n, C) must agree; got shapes {F.shape} and "
                         f"{np.shape(variances)}.")
    n, d = F.shape
    if not 2 <= d <= LOCAL_SCAN_MAX_FEATURES or n < 4 * LOCAL_SCAN_WINDOW * 2:
        return []
    if d == 3 and np.any(_distinct_values(F, SCAN_PLANE_VALUES) <= SCAN_PLANE_VALUES):
        return []  # a feature's levels slice every neighbourhood into flat layers (LOCAL_SCAN_3D)
    degrees, scales, most, single = _settings(d)
    U = local_directions(d, degrees)
    sizes = sorted({int(min(k, n)) for k in scales})
    # centres × rows ≈ cover·n per size; per residual column (below 256 rows `most` caps it)
    cover = min(float(most), float(budget) / (n * _cost_per_row(d)))
    if cover < 1:
        return []
    rs = check_random_state(random_state)
    return [LocalResidualScan(F, V, rows=k, cover=cover, directions=U, scores=scores, single_min_window=single,
                              random_state=rs) for k in sizes]
