"""Input checks shared by the metric functions.

Every public metric funnels its arguments through these helpers so that bad
input fails early with a ``ValueError``/``TypeError`` that names the argument,
instead of surfacing as a NaN or a deep numpy traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__: list[str] = []


def _as_1d(y: ArrayLike, name: str) -> np.ndarray:
    """Return ``y`` as a non-empty 1-D array without NaN."""
    if y is None:
        raise ValueError(f"`{name}` is required, got None.")
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D, got an array of shape {arr.shape}.")
    if arr.shape[0] == 0:
        raise ValueError(f"`{name}` is empty; at least one sample is needed.")
    if arr.dtype == object:
        # Object arrays may hide float NaN among labels (e.g. from pandas).
        if any(isinstance(v, float) and v != v for v in arr):
            raise ValueError(f"`{name}` contains NaN; drop or impute those samples first.")
    elif np.issubdtype(arr.dtype, np.number) or arr.dtype == bool:
        if np.issubdtype(arr.dtype, np.complexfloating):
            raise TypeError(f"`{name}` must be real, got dtype {arr.dtype}.")
        if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr)):
            raise ValueError(
                f"`{name}` contains NaN or infinite values; drop or impute those samples first."
            )
    return arr


def _as_float_1d(x: ArrayLike, name: str) -> np.ndarray:
    """Return ``x`` as a finite 1-D float array (non-empty)."""
    arr = _as_1d(x, name)
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"`{name}` must be numeric, got dtype {arr.dtype}.")
    arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"`{name}` contains NaN or infinite values.")
    return arr


def _check_same_length(*pairs: tuple[str, np.ndarray]) -> int:
    """Check that all arrays have the same first dimension; return it."""
    n = pairs[0][1].shape[0]
    for name, arr in pairs[1:]:
        if arr.shape[0] != n:
            raise ValueError(
                f"`{pairs[0][0]}` has {n} samples but `{name}` has {arr.shape[0]}; "
                "they must describe the same samples."
            )
    return n


def _check_classes(classes: ArrayLike, name: str = "classes") -> np.ndarray:
    """Return ``classes`` as a 1-D array of unique labels."""
    arr = _as_1d(classes, name)
    uniq = np.unique(arr)
    if uniq.shape[0] != arr.shape[0]:
        raise ValueError(f"`{name}` must not contain duplicates, got {arr.tolist()}.")
    return arr


def _encode(y: np.ndarray, classes: np.ndarray | None, name: str, n_classes: int | None = None) -> np.ndarray:
    """Map labels to column indices of ``classes``.

    With ``classes=None`` the labels must already be integer indices in
    ``[0, n_classes)``.
    """
    if classes is None:
        if not (np.issubdtype(y.dtype, np.integer) or _is_integral_float(y)):
            raise ValueError(
                f"`{name}` holds labels {np.unique(y)[:5].tolist()}... that are not "
                "integer column indices; pass `classes` (e.g. `estimator.classes_`) "
                "to map labels to columns."
            )
        idx = y.astype(np.intp)
        if n_classes is not None and (idx.min() < 0 or idx.max() >= n_classes):
            raise ValueError(
                f"`{name}` must hold column indices in [0, {n_classes}) when `classes` "
                f"is None, got values in [{idx.min()}, {idx.max()}]."
            )
        return idx
    sorter = np.argsort(classes, kind="stable")
    sorted_classes = classes[sorter]
    try:
        pos = np.searchsorted(sorted_classes, y)
    except TypeError as exc:  # e.g. str labels vs int classes
        raise ValueError(
            f"`{name}` labels (dtype {y.dtype}) cannot be compared with `classes` "
            f"(dtype {classes.dtype}); use the same label type."
        ) from exc
    pos = np.clip(pos, 0, len(classes) - 1)
    found = sorted_classes[pos] == y
    if not np.all(found):
        missing = np.unique(y[~np.asarray(found, dtype=bool)])
        raise ValueError(
            f"`{name}` contains labels not in `classes`: {missing[:10].tolist()} "
            f"(classes = {classes.tolist()})."
        )
    return sorter[pos]


def _is_integral_float(y: np.ndarray) -> bool:
    return bool(np.issubdtype(y.dtype, np.floating) and np.all(np.mod(y, 1) == 0))


def _check_proba(proba: ArrayLike, name: str = "proba") -> np.ndarray:
    """Return ``proba`` as a finite ``(n, C)`` float array with values in [0, 1]."""
    if hasattr(proba, "proba") and not isinstance(proba, np.ndarray):
        proba = proba.proba  # a PredictionInterval
    arr = np.asarray(proba)
    if arr.ndim != 2:
        raise ValueError(f"`{name}` must be 2-D (n_samples, n_classes), got shape {arr.shape}.")
    if arr.shape[0] == 0:
        raise ValueError(f"`{name}` is empty; at least one sample is needed.")
    if arr.shape[1] == 0:
        raise ValueError(f"`{name}` has no class columns.")
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"`{name}` must be a real numeric array, got dtype {arr.dtype}.")
    arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"`{name}` contains NaN or infinite values.")
    tol = 1e-9
    if arr.min() < -tol or arr.max() > 1 + tol:
        raise ValueError(
            f"`{name}` must hold probabilities in [0, 1], got values in "
            f"[{arr.min():.4g}, {arr.max():.4g}]."
        )
    return arr


@dataclass(frozen=True)
class _IntervalArrays:
    proba: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    epsilon: np.ndarray
    vacuous: np.ndarray

    @property
    def n_classes(self) -> int:
        return self.proba.shape[1]


def _check_interval(interval: Any, name: str = "interval") -> _IntervalArrays:
    """Validate a :class:`~nwbound.PredictionInterval` (or a look-alike).

    Any object with ``proba``, ``lower``, ``upper``, ``epsilon`` (n, C) and
    ``vacuous`` (n,) attributes is accepted, so other models can be scored.
    """
    missing = [a for a in ("proba", "lower", "upper", "epsilon", "vacuous") if not hasattr(interval, a)]
    if missing:
        raise TypeError(
            f"`{name}` must be a PredictionInterval (attributes proba, lower, upper, "
            f"epsilon, vacuous); got {type(interval).__name__} without {missing}."
        )
    proba = _check_proba(interval.proba, f"{name}.proba")
    out = {}
    for attr in ("lower", "upper", "epsilon"):
        arr = np.asarray(getattr(interval, attr))
        if arr.shape != proba.shape:
            raise ValueError(
                f"`{name}.{attr}` has shape {arr.shape} but `{name}.proba` has {proba.shape}."
            )
        arr = arr.astype(np.float64, copy=False)
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"`{name}.{attr}` contains NaN or infinite values.")
        out[attr] = arr
    if np.any(out["epsilon"] < 0):
        raise ValueError(f"`{name}.epsilon` must be non-negative.")
    vac = np.asarray(interval.vacuous)
    if vac.shape != (proba.shape[0],):
        raise ValueError(
            f"`{name}.vacuous` must have shape ({proba.shape[0]},), got {vac.shape}."
        )
    return _IntervalArrays(proba=proba, vacuous=vac.astype(bool), **out)


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
