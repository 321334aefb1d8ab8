"""Parameter checks shared by the estimators: one clear message per mistake."""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "check_positive",
    "check_open_unit",
    "check_choice",
    "check_int_range",
    "check_dtype",
    "check_beta",
    "check_n_jobs",
]


def check_positive(value: object, name: str, *, allow_none: bool = False) -> float | None:
    """A finite real number > 0 (TypeError for a non-number, ValueError otherwise)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a finite number > 0, got {value!r} of type {type(value).__name__}.")
    if not math.isfinite(float(value)) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")
    return float(value)


def check_open_unit(value: object, name: str) -> float:
    """A real number strictly between 0 and 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (0.0 < float(value) < 1.0):
        raise ValueError(f"{name} must be a number with 0 < {name} < 1, got {value!r}.")
    return float(value)


def check_choice(value: object, name: str, choices: tuple) -> object:
    """One of a fixed set of values (strings, or None where allowed)."""
    if not any(value is c or (isinstance(value, str) and value == c) for c in choices):
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}, got {value!r}.")
    return value


def check_int_range(value: object, name: str, low: int, high: int | None = None, hint: str = "") -> int:
    """An integer in ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}.")
    if value < low or (high is not None and value > high):
        upper = "" if high is None else f" and <= {high}"
        raise ValueError(f"{name} must be >= {low}{upper}, got {value}.{(' ' + hint) if hint else ''}")
    return int(value)


def check_dtype(value: object) -> np.dtype:
    """float64 or float32."""
    try:
        dtype = np.dtype(value)
    except TypeError:
        dtype = None
    if dtype not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"dtype must be float64 or float32, got {value!r}.")
    return dtype


def check_beta(lipschitz: object, margin: object, *, required: bool) -> float | None:
    """``β = L`` or ``1/γ`` from exactly one of ``lipschitz`` and ``margin``."""
    if lipschitz is not None and margin is not None:
        raise ValueError(
            "Give either lipschitz (overlapping classes) or margin (separable classes), not both."
        )
    if lipschitz is not None:
        return check_positive(lipschitz, "lipschitz")
    if margin is not None:
        return 1.0 / check_positive(margin, "margin")
    if required:
        raise ValueError(
            "Bounds need an assumption on the data: set lipschitz=L (the Lipschitz constant of the "
            "class probabilities, in the units of the features the classifier sees) or margin=γ "
            "(the distance separating different classes)."
        )
    return None


def check_n_jobs(value: object) -> int | None:
    """None, a positive int, or a negative int counted back from the cores (-1: all, -2: all but one)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value == 0:
        raise ValueError(
            f"n_jobs must be None, a positive int, or a negative int (-1: all cores, -2: all but one), got {value!r}."
        )
    return int(value)
