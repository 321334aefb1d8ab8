"""A directional, multi-scale scan of residuals: how fast their local mean moves along a direction.

An isotropic estimate of a Lipschitz constant smooths at a bandwidth that holds enough rows in
every direction at once, so it cannot see variation finer than that bandwidth. Along one
direction, a window of rows sorted by their projection holds as many rows as it likes, however
narrow it is in that direction: the scan compares the mean residual of adjacent windows of ``m``
rows, at several ``m``, along several label-free directions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["ResidualScan", "scan_directions"]

#: The finest window of the scan, in rows: a mean of fewer rows is too far from normal for its
#: z-score to mean much, and each finer scale adds tests (the noise gate then asks more).
SCAN_MIN_WINDOW = 32
#: Random unit directions beside the coordinate axes: they space the half-circle at about 11° in
#: two features, so an oblique structure a few windows wide is seen; in many features a random
#: direction is nearly orthogonal to any fixed one (cosine ~ 1/√d), and more would cost time for
#: little (the scan is linear in the directions).
SCAN_RANDOM_DIRECTIONS = 16
#: In two features every direction is an angle: this many, evenly spaced over the half-circle (2°
#: apart, the axes among them), replace the random ones. A direction θ off a structure blurs it by
#: θ times the spread of the other coordinate (~0.4 std·θ): at 2°, ~0.015 std, below a ripple's
#: half-period at the scales the windows resolve. In more features the sphere cannot be covered so.
SCAN_PLANE_DIRECTIONS = 90
#: A window's noise is at least that of one row of variance 1/4 (the largest a label can have):
#: where the scores are near 0 or 1 one unexpected label would otherwise look like a huge z.
_NOISE_FLOOR = 0.25


def scan_directions(n_features: int, n_random: int = SCAN_RANDOM_DIRECTIONS, random_state: Any = None) -> np.ndarray:
    """The directions of the scan: each coordinate axis, then ``n_random`` random unit directions;
    in two features, ``SCAN_PLANE_DIRECTIONS`` directions evenly spaced over the half-circle instead.

    The directions use no labels; the random ones are drawn uniformly on the sphere.

    Parameters
    ----------
    n_features : int
        Dimension of the features, at least 1.
    n_random : int, default=16
        Random directions beside the axes (``SCAN_RANDOM_DIRECTIONS``; 0: the axes only; none in one
        feature).
    random_state : int, RandomState or None, default=None
        Seed of the random directions.

    Returns
    -------
    ndarray of shape (n_features + n_random, n_features)
        Unit rows (``(SCAN_PLANE_DIRECTIONS, 2)`` in two features, the two axes first).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.assumptions import scan_directions
    >>> U = scan_directions(3, 2, random_state=0)
    >>> U.shape, bool(np.allclose(np.linalg.norm(U, axis=1), 1.0)), bool(np.array_equal(U[:3], np.eye(3)))
    ((5, 3), True, True)
    >>> P = scan_directions(2); P.shape, bool(np.allclose(P[:2], np.eye(2)))
    ((90, 2), True)
    """
    if not isinstance(n_features, (int, np.integer)) or n_features < 1:
        raise ValueError(f"n_features must be a positive integer, got {n_features!r}.")
    if not isinstance(n_random, (int, np.integer)) or n_random < 0:
        raise ValueError(f"n_random must be a non-negative integer, got {n_random!r}.")
    if n_features == 1:
        return np.ones((1, 1))
    if n_features == 2:
        angles = np.pi * np.arange(SCAN_PLANE_DIRECTIONS) / SCAN_PLANE_DIRECTIONS
        angles = np.r_[0.0, np.pi / 2, angles[(angles != 0.0) & (angles != np.pi / 2)]]
        return np.column_stack([np.cos(angles), np.sin(angles)])
    G = check_random_state(random_state).normal(size=(int(n_random), int(n_features)))
    G /= np.maximum(np.linalg.norm(G, axis=1, keepdims=True), np.finfo(float).tiny)
    return np.vstack([np.eye(int(n_features)), G])


class ResidualScan:
    """Slopes of the mean residual between adjacent windows of rows sorted along each direction.

    For each direction ``u`` the rows are sorted by ``t = x·u``. At each window size
    ``m = SCAN_MIN_WINDOW·2^j`` (up to a quarter of the rows), every pair of adjacent disjoint
    windows ``A`` (rows ``i … i+m−1`` in that order) and ``B`` (the next ``m``), at starts ``i``
    spaced ``m/4`` apart, gives

    * ``difference = mean_B(r) − mean_A(r)``, per residual column ``r``,
    * ``spread = mean_B(t) − mean_A(t) ≥ 0``,
    * ``noise``: the standard deviation of ``difference`` when the residuals are independent
      with mean 0 and the given variances, ``√(Σ_{A∪B} v + 1/4)/m`` (the ``1/4`` keeps one
      label from looking like a large effect where every variance is near 0).

    If ``r = h(x) + ε`` with ``E[ε | x] = 0`` and ``h`` is ``L``-Lipschitz, and the other
    coordinates' law does not shift along ``t``, then ``|E[difference]| ≤ L·spread``: pair the
    ``k``-th row of ``A`` with the ``k``-th row of ``B`` (``t_B,k ≥ t_A,k``); each pair's
    expected difference is at most ``L (t_B,k − t_A,k)``. So ``|difference|/spread`` estimates
    a lower value of ``L``, at the scale of the window, whatever the number of features.

    Parameters
    ----------
    features : array-like of shape (n, d)
        The rows' features (standardised, so that a slope is per standard deviation).
    directions : array-like of shape (k, d)
        Unit directions (:func:`scan_directions`).
    variances : array-like of shape (n,) or (n, C)
        Each residual's variance when the residual has mean 0 (for ``r = 1{y = c} − s_c``
        under ``p = s``: ``s_c (1 − s_c)``).
    min_window : int, default=32
        The finest window, in rows (``SCAN_MIN_WINDOW``).

    Attributes
    ----------
    n_directions : int
    windows : ndarray of int
        The window sizes, finest first.
    pair_window : ndarray of int of shape (n_pairs,)
        Each window pair's window size.
    spread : ndarray of shape (n_pairs, k)
        Each window pair's ``spread`` along each direction.
    noise : ndarray of shape (n_pairs, k, C)
        Each pair's ``noise``.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.assumptions import ResidualScan, scan_directions
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 1, (4000, 2))
    >>> s = np.full(4000, 0.5)
    >>> p = 0.5 + 0.3 * np.sin(2 * np.pi * X[:, 1] / 0.05)  # a ripple along x1 the scores s miss
    >>> y = (rng.random(4000) < p).astype(float)
    >>> scan = ResidualScan(X / X.std(axis=0), scan_directions(2, 0), s * (1 - s))
    >>> scan.windows.tolist()
    [32, 64, 128, 256, 512]
    >>> z = scan.largest_z(y - s); bool(z > 6)
    True
    >>> bool(scan.slope(y - s, threshold=5.0) > 1.0)  # per std of x1, beyond 5 noise std
    True
    """

    def __init__(self, features: Any, directions: Any, variances: Any, *, min_window: int = SCAN_MIN_WINDOW):
        F = np.asarray(features, dtype=np.float64)
        U = np.asarray(directions, dtype=np.float64)
        V = _columns(variances, "variances")
        if F.ndim != 2 or U.ndim != 2 or U.shape[1] != F.shape[1] or V.shape[0] != F.shape[0]:
            raise ValueError(f"features (n, d), directions (k, d) and variances (n,) or (n, C) must agree; got "
                             f"shapes {F.shape}, {U.shape} and {np.shape(variances)}.")
        if not isinstance(min_window, (int, np.integer)) or min_window < 1:
            raise ValueError(f"min_window must be a positive integer, got {min_window!r}.")
        n = F.shape[0]
        windows = []
        m = int(min_window)
        while 4 * m <= n:
            windows.append(m)
            m *= 2
        self.windows = np.asarray(windows, dtype=np.intp)
        self.n_directions = U.shape[0]
        T = (F @ U.T).T  # (k, n): each direction's projections; the work below runs along rows
        self._order = np.ascontiguousarray(np.argsort(T, axis=1, kind="stable"))
        lo, size = [], []
        for m in windows:
            starts = np.arange(0, n - 2 * m + 1, max(1, m // 4))
            lo.append(starts)
            size.append(np.full(starts.shape[0], m))
        self._lo = np.concatenate(lo) if lo else np.zeros(0, np.intp)
        self.pair_window = np.concatenate(size).astype(np.intp) if size else np.zeros(0, np.intp)
        self._m = self.pair_window.astype(np.float64)
        # every start and size is a multiple of one block (8 rows at the default): sums of blocks,
        # then a cumulative sum over n/block of them, give every window sum (the cumulative sum is
        # sequential, so this is most of the cost saved)
        self._block = int(np.gcd.reduce(np.r_[self._lo, self.pair_window])) if self._lo.shape[0] else 1
        self._block = max(self._block, 1)
        self._lo = self._lo // self._block
        self._mid = self._lo + self.pair_window // self._block
        self._hi = self._mid + self.pair_window // self._block
        self._spread = self._pair_difference(np.take_along_axis(T, self._order, axis=1))  # (k, n_pairs)
        self._noise = np.sqrt(self._window_sum(self._sorted(V)) + _NOISE_FLOOR) / self._m  # (C, k, n_pairs)

    @property
    def spread(self) -> np.ndarray:
        """Each window pair's ``spread`` along each direction, shape (n_pairs, k)."""
        return self._spread.T

    @property
    def noise(self) -> np.ndarray:
        """Each pair's ``noise`` per direction and column, shape (n_pairs, k, C)."""
        return self._noise.transpose(2, 1, 0)

    def _sorted(self, R: np.ndarray) -> np.ndarray:
        """``R`` (n, C) in each direction's order: (C, k, n)."""
        return np.take(np.ascontiguousarray(R.T), self._order, axis=1)

    def _cumulative(self, S: np.ndarray) -> np.ndarray:
        """Cumulative sums of ``S``'s blocks along the last axis, a 0 first (the rows after the last
        whole block are in no window)."""
        n_blocks = S.shape[-1] // self._block
        B = S[..., :n_blocks * self._block].reshape(S.shape[:-1] + (n_blocks, self._block)).sum(axis=-1)
        C = np.zeros(S.shape[:-1] + (n_blocks + 1,))
        np.cumsum(B, axis=-1, out=C[..., 1:])
        return C

    def _pair_difference(self, S: np.ndarray) -> np.ndarray:
        """``mean_B − mean_A`` of the sorted values ``S`` (along the last axis) for every window pair."""
        C = self._cumulative(S)
        return (C[..., self._hi] - 2.0 * C[..., self._mid] + C[..., self._lo]) / self._m

    def _window_sum(self, S: np.ndarray) -> np.ndarray:
        """The sum of the sorted values ``S`` (along the last axis) over each pair's two windows."""
        C = self._cumulative(S)
        return C[..., self._hi] - C[..., self._lo]

    def _differences(self, residuals: Any) -> np.ndarray:
        R = _columns(residuals, "residuals")
        if R.shape[0] != self._order.shape[1] or R.shape[1] != self._noise.shape[0]:
            raise ValueError(f"residuals must have shape ({self._order.shape[1]}, {self._noise.shape[0]}) like the "
                             f"variances; got {np.shape(residuals)}.")
        return self._pair_difference(self._sorted(R))

    def differences(self, residuals: Any) -> np.ndarray:
        """``mean_B − mean_A`` of ``residuals`` ((n,) or (n, C)) for every pair and direction: (n_pairs, k, C)."""
        return self._differences(residuals).transpose(2, 1, 0)

    def largest_z(self, residuals: Any) -> float:
        """The largest ``|difference|/noise`` over every pair, direction and column (0 with no pair).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.assumptions import ResidualScan
        >>> X = np.arange(200.0)[:, None]; v = np.full(200, 0.25)
        >>> round(ResidualScan(X, np.ones((1, 1)), v).largest_z(np.zeros(200)), 6)
        0.0
        """
        if not self._lo.shape[0]:
            return 0.0
        return float(np.max(np.abs(self._differences(residuals)) / self._noise))

    def slope(self, residuals: Any, threshold: float = 0.0) -> float:
        """The largest ``(|difference| − threshold·noise)/spread`` over the pairs where it is positive
        and ``spread > 0``: with ``threshold`` the level that noise alone reaches, a slope of the
        residuals' local mean that noise does not explain (0 where there is none).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.assumptions import ResidualScan
        >>> X = np.arange(256.0)[:, None]; r = X[:, 0] / 256  # slope 1/256 per unit of X
        >>> scan = ResidualScan(X, np.ones((1, 1)), np.full(256, 0.25))
        >>> round(scan.slope(r) * 256, 6), scan.slope(r, threshold=10.0)
        (1.0, 0.0)
        """
        if not self._lo.shape[0]:
            return 0.0
        excess = np.abs(self._differences(residuals)) - float(threshold) * self._noise
        spread = self._spread[None, :, :]
        ok = (excess > 0) & (spread > 0)
        if not np.any(ok):
            return 0.0
        return float(np.max(excess[ok] / np.broadcast_to(spread, excess.shape)[ok]))


def _columns(A: Any, name: str) -> np.ndarray:
    A = np.asarray(A, dtype=np.float64)
    if A.ndim == 1:
        A = A[:, None]
    if A.ndim != 2 or not np.all(np.isfinite(A)):
        raise ValueError(f"{name} must be a finite array of shape (n,) or (n, C); got shape {A.shape}.")
    return A
