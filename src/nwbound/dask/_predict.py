"""Predictions of a fitted classifier over a Dask array of queries."""

from __future__ import annotations

import operator
from typing import Any

import dask
import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._validation import check_dtype
from ._common import check_query_array, current_client, limited, rows_from_blocks, share, task_copy

__all__ = ["predict", "predict_proba", "predict_interval", "INTERVAL_FIELDS"]

# PredictionInterval fields: (name, per-class?, dtype).
INTERVAL_FIELDS: tuple[tuple[str, bool, Any], ...] = (
    ("proba", True, np.float64),
    ("lower", True, np.float64),
    ("upper", True, np.float64),
    ("epsilon", True, np.float64),
    ("bias", True, np.float64),
    ("sampling", True, np.float64),
    ("kappa", False, np.float64),
    ("n_eff", False, np.float64),
    ("vacuous", False, np.bool_),
    ("bandwidth", False, np.float64),
    ("outside_box", False, np.bool_),
)


def _checked(model: Any, X: Any, method: str) -> Any:
    if not hasattr(model, method):
        raise TypeError(f"model must be a fitted nwbound classifier with {method}(), got {type(model).__name__}.")
    check_is_fitted(model)  # NotFittedError (a ValueError) with sklearn's explanation
    # The working precision is a parameter (float64 for estimators without one).
    dtype = check_dtype(getattr(model, "dtype", "float64"))
    return check_query_array(X, "X", getattr(model, "n_features_in_", None), dtype)


def _proba_block(model: Any, block: np.ndarray) -> np.ndarray:
    return task_copy(model).predict_proba(block)


def _predict_block(model: Any, block: np.ndarray) -> np.ndarray:
    return task_copy(model).predict(block)


def _interval_block(model: Any, block: np.ndarray) -> dict[str, np.ndarray]:
    out = task_copy(model).predict_interval(block).as_dict()
    if out.get("outside_box") is None:
        # Keep every block the same schema; an unknown flag reads "not outside".
        out["outside_box"] = np.zeros(block.shape[0], dtype=bool)
    return out


def _map_rows(func, model: Any, X: Any, client: Any, threads: int) -> list[Any]:
    shared = share(model, current_client(client))
    task = limited(func, threads)
    return [dask.delayed(task, pure=True)(shared, blk) for blk in X.to_delayed().ravel()]


def predict_proba(model: Any, X: Any, *, client: Any = None, threads_per_task: int = 1) -> "dask.array.Array":
    """Class probabilities of ``model`` for the rows of a Dask array.

    Parameters
    ----------
    model : fitted classifier
        E.g. a fitted :class:`~nwbound.NadarayaWatsonClassifier`. It is sent to
        each worker once (scattered with ``broadcast=True`` when a distributed
        client is active, else held by one graph node).
    X : dask.array.Array of shape (n_queries, n_features)
        Chunked along rows only, with the model's dtype (``model.dtype``).
    client : distributed.Client or None, default=None
        None: the active default client if any, else the local scheduler.
    threads_per_task : int, default=1
        BLAS/OpenMP threads inside each task (threadpoolctl); the model's own
        ``n_jobs`` is switched off in tasks.

    Returns
    -------
    dask.array.Array of shape (n_queries, n_classes), float64 (lazy).
    """
    X = _checked(model, X, "predict_proba")
    parts = _map_rows(_proba_block, model, X, client, threads_per_task)
    return rows_from_blocks(parts, X.chunks[0], (len(model.classes_),), np.float64)


def predict(model: Any, X: Any, *, client: Any = None, threads_per_task: int = 1) -> "dask.array.Array":
    """Predicted class of each row of a Dask array (lazy; see :func:`predict_proba`)."""
    X = _checked(model, X, "predict")
    parts = _map_rows(_predict_block, model, X, client, threads_per_task)
    return rows_from_blocks(parts, X.chunks[0], (), np.asarray(model.classes_).dtype)


def predict_interval(
    model: Any, X: Any, *, client: Any = None, threads_per_task: int = 1
) -> dict[str, "dask.array.Array"]:
    """:meth:`predict_interval` of ``model`` over a Dask array of queries.

    Each block's :class:`~nwbound.PredictionInterval` is computed once; the
    returned dict holds one lazy Dask array per field (``proba``, ``lower``,
    ``upper``, ``epsilon``, ``bias``, ``sampling`` of shape (n, C); ``kappa``,
    ``n_eff``, ``vacuous``, ``bandwidth``, ``outside_box`` of shape (n,)).
    Compute them together (``dask.compute(result)``) so each block runs once.
    A failing block raises on compute; no rows are dropped.
    """
    X = _checked(model, X, "predict_interval")
    parts = _map_rows(_interval_block, model, X, client, threads_per_task)
    return interval_arrays(parts, X.chunks[0], len(model.classes_))


def interval_arrays(parts: list[Any], row_chunks: Any, n_classes: int) -> dict[str, "dask.array.Array"]:
    """One Dask array per interval field from per-block delayed dicts."""
    out = {}
    for name, per_class, dtype in INTERVAL_FIELDS:
        fields = [dask.delayed(operator.getitem, pure=True)(p, name) for p in parts]
        out[name] = rows_from_blocks(fields, row_chunks, (n_classes,) if per_class else (), dtype)
    return out
