"""Predictions of a fitted classifier over a Dask array of queries."""

from __future__ import annotations

import operator
import warnings
from typing import Any

import dask
import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._result import PredictionInterval
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


def _as_fields(interval: Any, n_rows: int) -> dict[str, np.ndarray]:
    out = interval.as_dict()
    if out.get("outside_box") is None:
        # Keep every block the same schema; an unknown flag reads "not outside".
        out["outside_box"] = np.zeros(n_rows, dtype=bool)
    return out


def _interval_block(model: Any, block: np.ndarray, bounds: Any = None) -> dict[str, Any]:
    out = task_copy(model).predict_interval(block) if bounds is None else task_copy(model).predict_interval(block, bounds=bounds)
    if bounds is None:
        return _as_fields(out, block.shape[0])
    return {name: _as_fields(iv, block.shape[0]) for name, iv in out.items()}


def _map_rows(func, model: Any, X: Any, client: Any, threads: int, *extra: Any) -> list[Any]:
    shared = share(model, current_client(client))
    task = limited(func, threads)
    return [dask.delayed(task, pure=True)(shared, blk, *extra) for blk in X.to_delayed().ravel()]


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

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound import dask as nwdask
    >>> X = np.linspace(0, 1, 50)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> model = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
    >>> nwdask.predict_proba(model, da.from_array(X[:2], chunks=(1, -1))).compute()
    array([[1., 0.],
           [1., 0.]])
    """
    X = _checked(model, X, "predict_proba")
    parts = _map_rows(_proba_block, model, X, client, threads_per_task)
    return rows_from_blocks(parts, X.chunks[0], (len(model.classes_),), np.float64)


def predict(model: Any, X: Any, *, client: Any = None, threads_per_task: int = 1) -> "dask.array.Array":
    """Predicted class of each row of a Dask array (lazy; see :func:`~nwbound.dask.predict_proba`).

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound import dask as nwdask
    >>> X = np.linspace(0, 1, 50)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> model = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
    >>> nwdask.predict(model, da.from_array(X[-3:], chunks=(2, -1))).compute().tolist()
    [1, 1, 1]
    """
    X = _checked(model, X, "predict")
    parts = _map_rows(_predict_block, model, X, client, threads_per_task)
    return rows_from_blocks(parts, X.chunks[0], (), np.asarray(model.classes_).dtype)


def predict_interval(
    model: Any, X: Any, *, bounds: Any = None, client: Any = None, threads_per_task: int = 1
) -> PredictionInterval | dict[Any, PredictionInterval]:
    """:meth:`~nwbound.NadarayaWatsonClassifier.predict_interval` of ``model`` over a Dask array of queries.

    Parameters
    ----------
    model : fitted classifier
        E.g. a fitted :class:`~nwbound.NadarayaWatsonClassifier`, sent to each worker once.
    X : dask.array.Array of shape (n_queries, n_features)
        Chunked along rows only, with the model's dtype.
    bounds : None, mapping or list, default=None
        As for the estimator's ``predict_interval``: several bound settings, all from one kernel
        pass per block.
    client : distributed.Client or None, default=None
        None: the active default client if any, else the local scheduler.
    threads_per_task : int, default=1
        BLAS/OpenMP threads inside each task.

    Returns
    -------
    PredictionInterval or dict
        The estimator's return type, with lazy Dask arrays for fields (``outside_box`` filled:
        False where the model did not record it); with ``bounds``, setting name → such an
        interval. Each block's interval is computed once for all its fields: compute them
        together with :meth:`~nwbound.PredictionInterval.compute` (or ``dask.compute(result)``).
        A failing block raises on compute; no rows are dropped.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound import dask as nwdask
    >>> X = np.linspace(0, 1, 50)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> model = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
    >>> iv = nwdask.predict_interval(model, da.from_array(X, chunks=(20, -1)))
    >>> iv.epsilon.shape, type(iv.certified).__name__  # lazy
    ((50, 2), 'Array')
    >>> done = iv.compute()  # every field, each block once
    >>> bool((done.lower <= done.proba).all()), int(done.certified.sum())
    (True, 38)
    """
    X = _checked(model, X, "predict_interval")
    if bounds is not None:
        with warnings.catch_warnings():  # the settings are checked now, not in a task at compute time
            warnings.simplefilter("ignore")
            names = list(model.predict_interval(X[:1].compute(), bounds=bounds))
    parts = _map_rows(_interval_block, model, X, client, threads_per_task, bounds)
    if bounds is None:
        return lazy_interval(parts, X.chunks[0], len(model.classes_))
    return lazy_intervals(parts, X.chunks[0], len(model.classes_), names)


def lazy_intervals(
    parts: list[Any], row_chunks: Any, n_classes: int, names: list[Any]
) -> dict[Any, PredictionInterval]:
    """One :func:`lazy_interval` per bound setting from per-block ``{name: fields}`` dicts.

    Parameters
    ----------
    parts : list of dask.delayed.Delayed
        One delayed ``{setting name: {field: array}}`` dict per row block.
    row_chunks : sequence of int
        The number of rows of each block.
    n_classes : int
        The number of classes (the width of the per-class fields).
    names : list
        The bound-setting names, the keys of each block's dict.

    Returns
    -------
    dict
        ``{name: PredictionInterval}``, each with lazy fields as :func:`lazy_interval`'s.

    Examples
    --------
    >>> import dask, numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.dask._predict import _interval_block, lazy_intervals
    >>> X = np.linspace(0, 1, 30)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> model = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
    >>> bounds = {"a": {"delta": 0.1}, "b": {"delta": 0.01}}
    >>> parts = [dask.delayed(_interval_block)(model, X[:10], bounds), dask.delayed(_interval_block)(model, X[10:], bounds)]
    >>> out = lazy_intervals(parts, (10, 20), 2, ["a", "b"])
    >>> sorted(out), out["a"].epsilon.shape
    (['a', 'b'], (30, 2))
    """
    return {
        name: lazy_interval([dask.delayed(operator.getitem, pure=True)(p, name) for p in parts], row_chunks, n_classes)
        for name in names
    }


def lazy_interval(parts: list[Any], row_chunks: Any, n_classes: int) -> PredictionInterval:
    """A :class:`~nwbound.PredictionInterval` of lazy Dask arrays from per-block delayed dicts.

    Parameters
    ----------
    parts : list of dask.delayed.Delayed
        One delayed ``{field: array}`` dict per row block, in row order.
    row_chunks : sequence of int
        The number of rows of each block.
    n_classes : int
        The number of classes (the width of the per-class fields).

    Returns
    -------
    PredictionInterval
        One Dask array per field of :data:`INTERVAL_FIELDS`: ``(n_rows, n_classes)``
        for per-class fields, ``(n_rows,)`` for the others. Every field reads the same
        per-block tasks, so computing them together runs each block once.

    Examples
    --------
    >>> import dask, numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.dask._predict import _interval_block, lazy_interval
    >>> X = np.linspace(0, 1, 30)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> model = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
    >>> parts = [dask.delayed(_interval_block)(model, X[:10]), dask.delayed(_interval_block)(model, X[10:])]
    >>> iv = lazy_interval(parts, (10, 20), 2)
    >>> iv.proba.shape, iv.kappa.shape, iv.vacuous.dtype.name
    ((30, 2), (30,), 'bool')
    """
    out = {}
    for name, per_class, dtype in INTERVAL_FIELDS:
        fields = [dask.delayed(operator.getitem, pure=True)(p, name) for p in parts]
        out[name] = rows_from_blocks(fields, row_chunks, (n_classes,) if per_class else (), dtype)
    return PredictionInterval(**out)
