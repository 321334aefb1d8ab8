"""The bandwidth grid of ``bandwidth="auto"``, the ``bandwidth="scale"`` rule and the ranking sample.

Label-free: everything here reads the training inputs only. :mod:`nwbound.estimators` re-exports
the public names (and :mod:`nwbound.estimators._nadaraya_watson` too, where they used to live).
"""

from __future__ import annotations

import numpy as np

from .._numerics import euclidean_norm

__all__ = [
    "bandwidth_grid_from_nearest",
    "bandwidth_grid_pilot",
    "default_bandwidth_grid",
    "resolve_ranking_fraction",
    "pilot_nearest_distances",
    "scale_bandwidth",
    "scale_bandwidth_from_nearest",
    "scale_neighbor_rank",
    "SCALE_NEIGHBORS",
    "SCALE_QUANTILE",
]

_AUTO_GRID_SIZE = 16
_AUTO_PILOT_SIZE = 256
# ranking_fraction="auto": every row up to this many, then this many rows but at least a sixteenth.
# Label-free: the sample moves only which λ each query gets. Mean ε at the chosen λ against the
# grid's least over every row: ECG stand-in (87 554 rows, a sixteenth) +0.02 %, p99 +0.6 %
# (benchmarks/bench_ranking_sample.py); the default's learned space on bench_defaults' 2-class data
# +0.2 % at 12 600 and 42 000 rows, p99 +3.8 % and +4.6 % (8 192 rows: +0.05 % and +0.1 %, p99 +1.5 %
# and +2.6 %), for 0.2 s and 0.8 s less ranking there. It was 8 192 before round 13.
_RANKING_ROWS = 4096
_RANKING_MIN_FRACTION = 1.0 / 16
# bandwidth="scale": λ is the SCALE_QUANTILE quantile, over the pilot rows, of the distance from a
# training row to its SCALE_NEIGHBORS-th nearest other row (see scale_bandwidth).
SCALE_NEIGHBORS = 10
SCALE_QUANTILE = 0.9


def bandwidth_grid_pilot(n_samples: int) -> np.ndarray:
    """Rows whose nearest-neighbour distances set the ``bandwidth="auto"`` grid.

    Up to 256 evenly spaced row numbers of a training set of ``n_samples`` rows.

    Examples
    --------
    >>> from nwbound.estimators import bandwidth_grid_pilot
    >>> bandwidth_grid_pilot(5)
    array([0, 1, 2, 3, 4])
    """
    return np.unique(np.linspace(0, n_samples - 1, min(_AUTO_PILOT_SIZE, n_samples)).astype(int))


def pilot_nearest_distances(X: np.ndarray, pilot: np.ndarray, n_neighbors: int = 2) -> np.ndarray:
    """Distances from each ``pilot`` row to its (up to) ``n_neighbors`` nearest rows of ``X``, at any scale.

    Both are divided by one power of two near their largest magnitude first (exact), so
    coordinates like 1e-200 or 1e160 neither underflow nor overflow in the squared distances,
    and the grid of ``bandwidth="auto"`` scales with the data. The first column is 0 when the
    pilot row is itself a row of ``X``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    pilot : array-like of shape (n_pilot, n_features)
    n_neighbors : int, default=2
        How many nearest rows (2 for the ``"auto"`` grid, ``SCALE_NEIGHBORS + 1`` for ``"scale"``).

    Returns
    -------
    ndarray of shape (n_pilot, min(n_neighbors, n_samples))
        Each row sorted increasingly.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.estimators import pilot_nearest_distances
    >>> X = np.array([[0.0], [1e-200], [3e-200]])
    >>> (pilot_nearest_distances(X, X[:1]) / 1e-200).round(6).tolist()
    [[0.0, 1.0]]
    """
    X = np.asarray(X, dtype=np.float64)
    pilot = np.asarray(pilot, dtype=np.float64)
    scale = _power_of_two_scale(np.array([np.max(np.abs(X), initial=0.0), np.max(np.abs(pilot), initial=0.0)]))
    n_nb = min(int(n_neighbors), X.shape[0])
    from sklearn.neighbors import NearestNeighbors  # here: the module loads without scikit-learn

    dist, _ = NearestNeighbors(n_neighbors=n_nb, algorithm="brute").fit(X / scale).kneighbors(pilot / scale)
    return dist * scale


def bandwidth_grid_from_nearest(nearest: np.ndarray, diagonal: float,
                                n_bandwidths: int = _AUTO_GRID_SIZE) -> np.ndarray:
    """The ``bandwidth="auto"`` grid from the pilot rows' nearest-other-row distances.

    ``n_bandwidths`` geometrically spaced values from the median of the
    positive ``nearest`` distances up to ``diagonal`` (the bounding box's
    diagonal). Training shards compute ``nearest`` over all shards and call
    this, so a sharded fit gets the same grid as an in-memory one.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.estimators import bandwidth_grid_from_nearest
    >>> bandwidth_grid_from_nearest(np.array([0.1, 0.1, 0.3]), 1.0, n_bandwidths=3)
    array([0.1       , 0.31622777, 1.        ])
    """
    if not diagonal > 0.0:
        raise ValueError(
            "All training points coincide, so bandwidth='auto' cannot derive a scale from them; "
            "pass bandwidth_grid=[...] explicitly or a fixed bandwidth."
        )
    nearest = np.asarray(nearest, dtype=np.float64)
    low = float(np.median(nearest[nearest > 0])) if np.any(nearest > 0) else diagonal * 1e-3
    low = min(low, diagonal)
    return np.geomspace(low, diagonal, n_bandwidths) if low < diagonal else np.array([diagonal])


def default_bandwidth_grid(X: np.ndarray, n_bandwidths: int = _AUTO_GRID_SIZE) -> np.ndarray:
    """The grid searched by ``bandwidth="auto"``.

    ``n_bandwidths`` geometrically spaced values from the median distance of
    (up to 256, evenly spaced) training points to their nearest other training
    point, up to the diagonal of the training data's bounding box. Depends on
    the training inputs only, never on labels.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.estimators import default_bandwidth_grid
    >>> default_bandwidth_grid(np.linspace(0, 1, 11)[:, None], n_bandwidths=3)
    array([0.1       , 0.31622777, 1.        ])
    """
    X = np.asarray(X, dtype=np.float64)
    diagonal = float(euclidean_norm(X.max(axis=0) - X.min(axis=0)))
    if diagonal == 0.0:
        return bandwidth_grid_from_nearest(np.zeros(1), diagonal, n_bandwidths)  # raises the explanation
    dist = pilot_nearest_distances(X, X[bandwidth_grid_pilot(X.shape[0])])
    return bandwidth_grid_from_nearest(dist[:, -1], diagonal, n_bandwidths)


def scale_bandwidth_from_nearest(kth_nearest: np.ndarray, diagonal: float) -> float:
    """The ``bandwidth="scale"`` λ from the pilot rows' distances to their k-th nearest other row.

    The ``SCALE_QUANTILE`` (0.9) quantile of ``kth_nearest``. Where that is 0 (rows repeated more
    than k times), the largest of ``kth_nearest``; where every one is 0, ``diagonal`` (the
    training inputs' bounding-box diagonal); where that is 0 too (every row coincides), 1.
    Training shards compute ``kth_nearest`` over all shards and call this, so a sharded fit
    gets the λ of an in-memory one.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.estimators import scale_bandwidth_from_nearest
    >>> scale_bandwidth_from_nearest(np.arange(11.0), diagonal=20.0)
    9.0
    >>> scale_bandwidth_from_nearest(np.zeros(5), diagonal=20.0)
    20.0
    """
    d = np.asarray(kth_nearest, dtype=np.float64).ravel()
    for value in (float(np.quantile(d, SCALE_QUANTILE)) if d.size else 0.0, float(np.max(d, initial=0.0)),
                  float(diagonal)):
        if value > 0.0 and np.isfinite(value):
            return value
    return 1.0


def scale_neighbor_rank(n_samples: int, n_neighbors: int | None = None) -> int:
    """The neighbour rank k whose distance sets ``bandwidth="scale"`` (:func:`scale_bandwidth`).

    ``k = max(SCALE_NEIGHBORS, n_neighbors)``, capped at ``n_samples - 1`` (a row has that many
    other rows). The in-memory estimator and :class:`nwbound.dask.ShardedNadarayaWatson` both
    take k from here.

    Parameters
    ----------
    n_samples : int
        Training rows in the kernel sums.
    n_neighbors : int or None, default=None
        The localized classifier's k (None: the regular classifier).

    Returns
    -------
    int
        The rank k (0 when ``n_samples`` is 1: a single row has no other row).

    Examples
    --------
    >>> from nwbound.estimators import scale_neighbor_rank
    >>> scale_neighbor_rank(1000), scale_neighbor_rank(1000, n_neighbors=50), scale_neighbor_rank(6)
    (10, 50, 5)
    """
    return min(max(SCALE_NEIGHBORS, int(n_neighbors or 0)), int(n_samples) - 1)


def scale_bandwidth(X: np.ndarray, n_neighbors: int | None = None) -> float:
    """The label-free bandwidth of ``bandwidth="scale"`` (needs no assumption; the default is ``"auto"``): the data's own neighbour scale.

    λ is the 0.9 quantile (``SCALE_QUANTILE``), over up to 256 evenly spaced training rows
    (:func:`bandwidth_grid_pilot`), of the distance from a row to its k-th nearest other row,
    with ``k = max(SCALE_NEIGHBORS, n_neighbors)`` (10 for the regular classifier; the
    localized classifier's own k when larger), capped at ``n_samples − 1``
    (:func:`scale_neighbor_rank`). So about 9 in 10
    training rows — and queries drawn like them — hold at least k training rows within λ: a
    fixed bandwidth then never silently reaches no point where the data are (a query with
    ``κ = 0`` only predicts the fallback), and k ≈ 10 is about the fewest agreeing
    neighbours with which a bound can certify a prediction. The rule is in the units of the
    features and scales with them (a feature scaled by ``s`` scales λ by ``s``). It reads
    the training inputs only, never the labels, so every bound computed at this λ stays valid.
    Like k nearest neighbours it counts rows, not sample weights (a repeated row is two rows).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    n_neighbors : int or None, default=None
        The localized classifier's k (None: the regular classifier).

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.estimators import scale_bandwidth
    >>> X = np.linspace(0, 1, 101)[:, None]   # rows 0.01 apart: the 10th nearest is 0.05 away inside
    >>> round(scale_bandwidth(X), 6)
    0.05
    >>> round(scale_bandwidth(1000 * X), 6)
    50.0
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    diagonal = float(euclidean_norm(X.max(axis=0) - X.min(axis=0))) if n else 0.0
    k = scale_neighbor_rank(n, n_neighbors)
    if k < 1 or not diagonal > 0.0:
        return scale_bandwidth_from_nearest(np.zeros(0), diagonal)
    dist = pilot_nearest_distances(X, X[bandwidth_grid_pilot(n)], n_neighbors=k + 1)
    return scale_bandwidth_from_nearest(dist[:, k], diagonal)


def resolve_ranking_fraction(ranking_fraction: float | str, n_samples: int) -> float:
    """The share of training rows ``bandwidth="auto"`` ranks its grid on (``ranking_fraction_``).

    ``"auto"``: every row up to 4 096 rows; beyond, ``max(4096/n, 1/16)``. A number in (0, 1]:
    itself.

    Examples
    --------
    >>> from nwbound.estimators import resolve_ranking_fraction
    >>> resolve_ranking_fraction("auto", 4000), resolve_ranking_fraction("auto", 8192)
    (1.0, 0.5)
    >>> resolve_ranking_fraction("auto", 10**6), resolve_ranking_fraction(0.25, 10**6)
    (0.0625, 0.25)
    """
    if isinstance(ranking_fraction, str):
        if ranking_fraction != "auto":
            raise ValueError(f"ranking_fraction must be a number in (0, 1] or 'auto', got {ranking_fraction!r}.")
        return 1.0 if n_samples <= _RANKING_ROWS else max(_RANKING_ROWS / n_samples, _RANKING_MIN_FRACTION)
    fraction = float(ranking_fraction)
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"ranking_fraction must be in (0, 1] (1: rank on every training row), got {ranking_fraction!r}.")
    return fraction


def _power_of_two_scale(X: np.ndarray) -> float:
    """A power of two near the largest coordinate magnitude (1 for an all-zero X)."""
    largest = float(np.max(np.abs(X), initial=0.0))
    if largest == 0.0 or not np.isfinite(largest):
        return 1.0
    return float(np.ldexp(1.0, int(np.frexp(largest)[1])))
