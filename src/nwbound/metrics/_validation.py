"""Input checks shared by the metric functions.

Every public metric funnels its arguments through these helpers so that bad
input fails early with a ``ValueError``/``TypeError`` that names the argument,
instead of surfacing as a NaN or a deep numpy traceback.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._validation import as_1d

__all__: list[str] = []


def _as_float_1d(x: ArrayLike, name: str) -> np.ndarray:
    """Return ``x`` as a finite 1-D float array (non-empty)."""
    arr = as_1d(x, name)
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"`{name}` must be numeric, got dtype {arr.dtype}.")
    arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"`{name}` contains NaN or infinite values.")
    return arr


def _check_fraction(x: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"`{name}` must lie in [0, 1], got {x!r}.")
    return arr


def _check_positive_int(x: Any, name: str) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"`{name}` must be an int, got {type(x).__name__}.")
    if x < 1:
        raise ValueError(f"`{name}` must be >= 1, got {x}.")
    return int(x)
