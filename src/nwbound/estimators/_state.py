"""Checks for fitted state that comes from outside (a model file, another process).

A fitted state restored by :meth:`set_fitted_state` is untrusted input: every
array is checked for its shape, kind, finiteness and range before an estimator
uses it, and each failure names the field.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

__all__ = ["state_array", "state_scalar", "state_classes"]


def _missing(name: str) -> ValueError:
    return ValueError(f"Fitted state is missing {name!r}; it was not written by get_fitted_state().")


def state_array(
    state: Mapping[str, Any],
    name: str,
    *,
    ndim: int,
    kind: str = "f",
    shape: tuple[int | None, ...] | None = None,
    low: float | None = None,
    high: float | None = None,
    optional: bool = False,
) -> np.ndarray | None:
    """One array of a fitted state: ``ndim`` dimensions, dtype kind in ``kind``
    (``"f"`` float, ``"i"`` integer, ``"S"`` bytes, ``"U"`` text), the given
    ``shape`` (None entries are free), finite and within ``[low, high]``."""
    if name not in state or state[name] is None:
        if optional:
            return None
        raise _missing(name)
    value = np.asarray(state[name])
    if value.dtype.kind == "u" and "i" in kind:
        value = value.astype(np.int64)
    if value.dtype.kind not in kind or value.dtype.kind == "O":
        raise ValueError(f"Fitted state {name!r} must have dtype kind {kind!r}, got {value.dtype}.")
    if value.ndim != ndim:
        raise ValueError(f"Fitted state {name!r} must be {ndim}-dimensional, got shape {value.shape}.")
    if shape is not None:
        for axis, (got, want) in enumerate(zip(value.shape, shape)):
            if want is not None and got != want:
                raise ValueError(
                    f"Fitted state {name!r} has shape {value.shape}; axis {axis} must have length {want}."
                )
    if value.dtype.kind in "fi" and value.size:
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise ValueError(f"Fitted state {name!r} holds NaN or infinite values.")
        if low is not None and value.min() < low:
            raise ValueError(f"Fitted state {name!r} must be >= {low:g}, holds {value.min():g}.")
        if high is not None and value.max() > high:
            raise ValueError(f"Fitted state {name!r} must be <= {high:g}, holds {value.max():g}.")
    return value


def state_scalar(state: Mapping[str, Any], name: str, *, low: int, high: int | None = None) -> int:
    """An integer scalar of a fitted state within ``[low, high]``."""
    if name not in state:
        raise _missing(name)
    value = np.asarray(state[name])
    if value.ndim != 0 or value.dtype.kind not in "iu":
        raise ValueError(f"Fitted state {name!r} must be an integer, got {state[name]!r}.")
    value = int(value)
    if value < low or (high is not None and value > high):
        raise ValueError(f"Fitted state {name!r} must be in [{low}, {high}], got {value}.")
    return value


def state_classes(state: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """``classes_`` (sorted, unique, ≥ 2) and ``class_prior_`` (a distribution over them)."""
    if "classes_" not in state:
        raise _missing("classes_")
    classes = np.asarray(state["classes_"])
    if classes.dtype.kind == "O" and not all(isinstance(c, str) for c in classes.ravel()):
        raise ValueError("Fitted state 'classes_' of object dtype must hold strings only.")
    if classes.ndim != 1 or classes.shape[0] < 2:
        raise ValueError(f"Fitted state 'classes_' must list at least 2 classes, got {classes!r}.")
    if np.unique(classes).shape[0] != classes.shape[0] or not np.all(classes[:-1] < classes[1:]):
        raise ValueError("Fitted state 'classes_' must be sorted and unique.")
    prior = state_array(state, "class_prior_", ndim=1, shape=(classes.shape[0],), low=0.0, high=1.0)
    if abs(float(prior.sum()) - 1.0) > 1e-9:
        raise ValueError(f"Fitted state 'class_prior_' must sum to 1, sums to {float(prior.sum()):.6g}.")
    return classes, prior.astype(np.float64)
