"""Small floating-point helpers that hold at any scale."""

from __future__ import annotations

import numpy as np

__all__ = ["euclidean_norm"]


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
