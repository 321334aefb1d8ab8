"""Small floating-point helpers that hold at any scale."""

from __future__ import annotations

import numpy as np

__all__ = ["direct_d2_error_factor", "direct_distance_error", "euclidean_norm", "square_underflow"]


def euclidean_norm(a: np.ndarray, axis: int | None = -1) -> np.ndarray:
    """``‖a‖₂`` along ``axis`` without overflow or underflow of the squares.

    Each vector is divided by a power of two near its largest entry (exact),
    so magnitudes from 1e-300 to 1e300 keep their value.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound._numerics import euclidean_norm
    >>> print(f"{float(euclidean_norm(np.array([3e200, 4e200]))):.6g}")
    5e+200
    >>> print(np.array2string(euclidean_norm(np.array([[3e-200, 4e-200], [0.0, 0.0]]), axis=1), precision=6))
    [5.e-200 0.e+000]
    """
    a = np.asarray(a, dtype=np.float64)
    largest = np.max(np.abs(a), axis=axis, keepdims=True, initial=0.0)
    scale = np.where(largest > 0, np.ldexp(1.0, np.frexp(largest)[1]), 1.0)
    scale = np.where(np.isfinite(scale), scale, 1.0)
    norm = np.sqrt(np.sum((a / scale) ** 2, axis=axis, keepdims=True)) * scale
    return np.squeeze(norm, axis=axis) if axis is not None else norm.reshape(())


def direct_distance_error(n_features: int) -> float:
    """Relative error bound of a distance computed directly in float64, ``√Σ_j (y_j − x_j)²``.

    ``(d + 6)·2⁻⁵³`` (the differences, squares, a ``d``-term sum in any order, the square root
    and an exact power-of-two rescaling), times 1.01 for the second-order terms. The one copy
    of this rule for the CPU engine and the array-API path.

    Examples
    --------
    >>> from nwbound._numerics import direct_distance_error
    >>> direct_distance_error(2) == 8 * 2.0**-53 * 1.01
    True
    """
    return (int(n_features) + 6) * 2.0**-53 * 1.01


def direct_d2_error_factor(n_features: int) -> float:
    """``c`` with ``|d̃² − d²| ≤ c·d_far²`` for direct distances ``d̃ ≤ d_far``: ``(2r + r²)(1 + r)²``.

    ``r`` is :func:`direct_distance_error`; ``d_far`` the largest distance of the row.

    Examples
    --------
    >>> from nwbound._numerics import direct_d2_error_factor, direct_distance_error
    >>> r = direct_distance_error(3)
    >>> direct_d2_error_factor(3) == (2 * r + r * r) * (1 + r) ** 2
    True
    """
    rel = direct_distance_error(n_features)
    return (2.0 * rel + rel * rel) * (1.0 + rel) ** 2


def square_underflow(n_terms: int, dtype: str | np.dtype = "float64") -> float:
    """Bound on what ``n_terms`` squares computed in ``dtype`` lose to underflow: ``n·`` its smallest subnormal.

    A product that lands below the smallest normal number keeps only an absolute accuracy: it is
    off by at most half the smallest subnormal (0 where it flushes), and the square of a rounded
    subnormal factor adds far less. Added to a computed ``Σ (wK)²`` (factors in [0, 1], e.g.
    weights in units of the largest) so that it stays an upper bound: with weights far below the
    largest one the squares flush to 0, and ``Σ (wK)² = 0`` with ``κ > 0`` would make the
    sampling term 0. The one copy of this rule: the CPU engine's float64 squares (``2⁻¹⁰⁷⁴``
    each), the device paths' float32 squares (``2⁻¹⁴⁹`` each: the Triton kernel, the array-API
    engine in float32) and float64 ones. Relative rounding is the caller's to cover.

    Examples
    --------
    >>> from nwbound._numerics import square_underflow
    >>> square_underflow(3) == 3 * 2.0**-1074, square_underflow(2, "float32") == 2 * 2.0**-149
    (True, True)
    """
    return int(n_terms) * float(np.finfo(np.dtype(dtype)).smallest_subnormal)
