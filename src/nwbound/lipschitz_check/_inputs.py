"""Input checks of :func:`~nwbound.lipschitz_check.check_lipschitz` and
:func:`~nwbound.lipschitz_check.select_lipschitz`."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._validation import check_open_unit, check_positive


def _check_model(model: Any) -> None:
    if not (hasattr(model, "predict_interval") and hasattr(model, "get_params")):
        raise TypeError(
            "model must be a fitted nwbound bounded classifier (NadarayaWatsonClassifier or "
            f"DyadicClassifier), got {type(model).__name__}."
        )
    check_is_fitted(model)


def _check_levels(alpha: Any, beta: Any, free_share: Any) -> tuple[float, float, float]:
    alpha = check_open_unit(alpha, "alpha")
    if beta is None:
        beta = alpha / 2
    elif isinstance(beta, bool) or not isinstance(beta, numbers.Real) or not (0.0 < float(beta) < alpha):
        raise ValueError(
            f"beta must be a number with 0 < beta < alpha = {alpha:g} (the share of alpha spent on the "
            f"Markov allowance), got {beta!r}; the default None uses alpha/2."
        )
    if isinstance(free_share, bool) or not isinstance(free_share, numbers.Real) or not (0.0 <= free_share < 1.0):
        raise ValueError(f"free_share must be a number with 0 <= free_share < 1, got {free_share!r}.")
    free_share = float(free_share)
    return alpha, float(beta), free_share


def _check_rows(model: Any, X: Any, y: Any) -> tuple[np.ndarray, int]:
    """Labels as column indices into ``model.classes_``, and the row count."""
    y_arr = np.asarray(y)
    if y_arr.ndim != 1:
        raise ValueError(f"y must be one-dimensional (one label per row of X), got shape {y_arr.shape}.")
    n_x = X.shape[0] if hasattr(X, "shape") else len(X)
    if n_x != y_arr.shape[0]:
        raise ValueError(f"X has {n_x} rows but y has {y_arr.shape[0]} labels; give one label per row.")
    if n_x == 0:
        raise ValueError("X is empty: the check needs held-out rows.")
    classes = np.asarray(model.classes_)
    seen = np.isin(y_arr, classes)
    if not seen.all():
        unseen = sorted({str(v) for v in y_arr[~seen]})[:10]
        raise ValueError(
            f"y holds labels the model never saw in training: {unseen}; the model's classes are "
            f"{classes.tolist()}. Drop those rows or refit on data that include them."
        )
    uniques, inverse = np.unique(y_arr, return_inverse=True)
    lookup = {v: i for i, v in enumerate(classes.tolist())}
    index = np.array([lookup[v] for v in uniques.tolist()], dtype=np.intp)[inverse.reshape(-1)]
    return index.astype(np.intp), int(n_x)


def _check_flag(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}.")
    return bool(value)


def _check_mapped(mapped: Any, X: Any) -> np.ndarray | None:
    """``mapped`` as float64 rows, one per row of ``X`` (None stays None)."""
    if mapped is None:
        return None
    mapped = np.asarray(mapped, dtype=np.float64)
    n_x = X.shape[0] if hasattr(X, "shape") else len(X)
    if mapped.ndim != 2 or mapped.shape[0] != n_x:
        raise ValueError(f"mapped must hold one row of coordinates per row of X ({n_x}), got shape {mapped.shape}; "
                         "pass model.metric_.transform(X), or None to have X mapped here.")
    return mapped


def _check_flags(value: Any, name: str) -> bool | tuple[bool, ...]:
    """A flag, or a non-empty sequence of flags (returned as a tuple)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) == 0:
        raise ValueError(f"{name} must be True or False, or a non-empty sequence of them, got {value!r}.")
    return tuple(_check_flag(v, name) for v in value)


def _check_certified_at(value: Any) -> str:
    if value not in ("model", "test"):
        raise ValueError(f"certified_at must be 'model' or 'test', got {value!r}.")
    return value


def _check_values(lipschitz: Any) -> tuple[list[float] | None, bool]:
    """``(values, single)``: the L values to test (None: the model's own) and whether one was given."""
    if lipschitz is None:
        return None, True
    if isinstance(lipschitz, numbers.Real) and not isinstance(lipschitz, bool):
        return [check_positive(lipschitz, "lipschitz")], True
    if isinstance(lipschitz, str):
        raise ValueError(f"lipschitz must be None, a number > 0 or a sequence of them, got {lipschitz!r}.")
    try:
        values = [check_positive(v, "lipschitz") for v in lipschitz]
    except TypeError:
        raise ValueError(f"lipschitz must be None, a number > 0 or a sequence of them, got {lipschitz!r}.") from None
    if not values:
        raise ValueError("lipschitz is an empty sequence: give at least one value.")
    return values, False
