"""Helpers shared by the Dask entry points: input checks, the client, graph glue."""

from __future__ import annotations

import copy
import functools
from typing import Any, Callable, Sequence

import numpy as np

try:
    import dask
    import dask.array as da
except ImportError as exc:  # pragma: no cover - depends on the environment
    from ..utils import install_hint

    raise ImportError(
        f"nwbound.dask needs dask: {install_hint('dask')}."
    ) from exc

from threadpoolctl import threadpool_limits

from .._config import config_context

__all__ = ["check_query_array", "compute", "current_client", "share", "rows_from_blocks", "limited", "task_copy"]


def current_client(client: Any = None) -> Any:
    """The distributed client to use: ``client``, else the active default one, else None.

    Parameters
    ----------
    client : distributed.Client or None, default=None
        An explicit client; returned unchanged when given.

    Returns
    -------
    distributed.Client or None
        ``client``, the running default client, or None when there is none
        (the local dask scheduler is then used).

    Examples
    --------
    >>> from nwbound.dask._common import current_client
    >>> current_client("my-client")
    'my-client'
    """
    if client is not None:
        return client
    try:
        from distributed import default_client
    except ImportError:
        return None
    try:
        return default_client()
    except ValueError:  # no client running: the local dask scheduler is used
        return None


def compute(client: Any, *objs: Any) -> tuple:
    """``dask.compute(*objs)`` on ``client`` when given, else on the default scheduler.

    Parameters
    ----------
    client : distributed.Client or None
        The client to compute on; None uses the default dask scheduler.
    *objs : dask collections or delayed objects
        What to compute.

    Returns
    -------
    tuple
        One computed result per object in ``objs``.

    Examples
    --------
    >>> import dask.array as da
    >>> from nwbound.dask._common import compute
    >>> [int(v) for v in compute(None, da.arange(4, chunks=2).sum(), da.ones(3, chunks=2).sum())]
    [6, 3]
    """
    if client is not None:
        return tuple(client.gather(client.compute(list(objs))))
    return dask.compute(*objs)


def share(obj: Any, client: Any) -> Any:
    """Put ``obj`` in the graph once for every task that uses it.

    With a distributed client the object is scattered to every worker
    (``broadcast=True``) and its future is returned; otherwise a single
    ``dask.delayed`` node holds it, so it is not embedded in each task.

    Parameters
    ----------
    obj : object
        The object shared by the tasks (usually a fitted model).
    client : distributed.Client or None
        The client to scatter to; None builds a delayed node instead.

    Returns
    -------
    distributed.Future or dask.delayed.Delayed
        A handle to pass to every task in place of ``obj``.

    Examples
    --------
    >>> from nwbound.dask._common import share
    >>> share([1, 2, 3], None).compute()
    [1, 2, 3]
    """
    if client is not None:
        # In a list: scatter takes a dict's keys as the futures' names, so a shared dict (a
        # fitted state: "X", "bandwidths_", ...) could meet another model's data under the same key.
        return client.scatter([obj], broadcast=True, hash=False)[0]
    return dask.delayed(obj, pure=True, traverse=False)


def check_query_array(X: Any, name: str, n_features: int | None, dtype: np.dtype | None) -> "da.Array":
    """A 2-D dask array chunked along rows only, with the expected width and dtype.

    Parameters
    ----------
    X : dask.array.Array
        The query rows.
    name : str
        The parameter name used in error messages.
    n_features : int or None
        The number of columns the model was fitted with; None skips the check.
    dtype : numpy.dtype or None
        The dtype the model works in; None skips the check.

    Returns
    -------
    dask.array.Array
        ``X``, with empty row blocks dropped.

    Raises
    ------
    TypeError
        If ``X`` is not a dask array.
    ValueError
        If ``X`` is not 2-D, has no rows, unknown row chunks, several column
        chunks, or the wrong width or dtype.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> from nwbound.dask._common import check_query_array
    >>> X = da.from_array(np.zeros((6, 2)), chunks=(3, -1))
    >>> check_query_array(X, "X", 2, np.dtype("float64")).chunks
    ((3, 3), (2,))
    >>> check_query_array(X, "X", 3, None)
    Traceback (most recent call last):
    ...
    ValueError: X has 2 features, but the model was fitted with 3.
    """
    if not isinstance(X, da.Array):
        raise TypeError(
            f"{name} must be a dask.array.Array, got {type(X).__name__}; wrap a NumPy array with "
            f"dask.array.from_array({name}, chunks=(rows_per_block, -1)) or call the estimator directly."
        )
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got {X.ndim} dimension(s).")
    if any(np.isnan(c) for c in X.chunks[0]):
        raise ValueError(
            f"{name} has unknown chunk sizes along the rows; call {name}.compute_chunk_sizes() first."
        )
    if len(X.chunks[1]) != 1:
        raise ValueError(
            f"{name} is chunked along the feature axis ({len(X.chunks[1])} column chunks); each task "
            f"needs whole rows: rechunk with {name}.rechunk({{1: -1}})."
        )
    if X.shape[0] == 0:
        raise ValueError(f"{name} has no rows.")
    if 0 in X.chunks[0]:
        # Empty row blocks would reach the estimator as 0-row inputs; drop them.
        X = X.rechunk({0: tuple(c for c in X.chunks[0] if c)})
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"{name} has {X.shape[1]} features, but the model was fitted with {n_features}.")
    if dtype is not None and X.dtype != dtype:
        raise ValueError(
            f"{name} has dtype {X.dtype}, but the model works in {dtype}; pass {name}.astype('{dtype}') "
            f"(or fit the model with dtype='{X.dtype}' if it is float32/float64)."
        )
    return X


def _run_limited(func: Callable[..., Any], threads: int, *args: Any) -> Any:
    # blas_threads: the estimators' own BLAS limit (1 at first) takes the task's instead
    with threadpool_limits(limits=threads), config_context(blas_threads=threads):
        return func(*args)


def limited(func: Callable[..., Any], threads: int) -> Callable[..., Any]:
    """``func`` run under a BLAS/OpenMP thread limit (threadpoolctl), so that the
    threads of concurrent tasks on one worker do not oversubscribe its cores.
    A ``functools.partial`` of module-level functions: picklable for process workers.

    Parameters
    ----------
    func : callable
        The task function.
    threads : int
        The thread limit, at least 1.

    Returns
    -------
    callable
        ``func`` wrapped so that it runs under the limit.

    Raises
    ------
    ValueError
        If ``threads`` is not an int >= 1.

    Examples
    --------
    >>> from nwbound.dask._common import limited
    >>> limited(sum, 1)([1, 2, 3])
    6
    >>> limited(sum, 0)
    Traceback (most recent call last):
    ...
    ValueError: threads_per_task must be an int >= 1, got 0.
    """
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads_per_task must be an int >= 1, got {threads!r}.")
    return functools.partial(_run_limited, func, threads)


def task_copy(model: Any) -> Any:
    """A shallow copy of ``model`` with its own thread pool off (``n_jobs=None``):
    parallelism comes from the dask tasks. Arrays are shared, not copied.

    Parameters
    ----------
    model : estimator
        A fitted estimator, with or without an ``n_jobs`` parameter.

    Returns
    -------
    estimator
        ``model`` itself when its ``n_jobs`` is None (or absent), else a
        shallow copy with ``n_jobs=None``.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.dask._common import task_copy
    >>> X = np.linspace(0, 1, 20)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> model = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.2, n_jobs=2).fit(X, y)
    >>> copy = task_copy(model)
    >>> copy.n_jobs, model.n_jobs, copy is model
    (None, 2, False)
    """
    if getattr(model, "n_jobs", None) is None:
        return model
    return copy.copy(model).set_params(n_jobs=None)


def rows_from_blocks(
    parts: Sequence[Any], row_chunks: Sequence[int], tail_shape: tuple[int, ...], dtype: Any
) -> "da.Array":
    """Concatenate one delayed array per row block into a dask array.

    Parameters
    ----------
    parts : sequence of dask.delayed.Delayed
        One delayed array per row block, in row order.
    row_chunks : sequence of int
        The number of rows of each block.
    tail_shape : tuple of int
        The shape of each row (``()`` for one value per row).
    dtype : dtype
        The dtype of every block.

    Returns
    -------
    dask.array.Array
        Shape ``(sum(row_chunks),) + tail_shape``, chunked by ``row_chunks``.

    Examples
    --------
    >>> import dask, numpy as np
    >>> from nwbound.dask._common import rows_from_blocks
    >>> parts = [dask.delayed(np.arange)(2), dask.delayed(np.arange)(3)]
    >>> out = rows_from_blocks(parts, (2, 3), (), np.int64)
    >>> out.chunks, out.compute().tolist()
    (((2, 3),), [0, 1, 0, 1, 2])
    """
    arrays = [
        da.from_delayed(part, shape=(int(n),) + tail_shape, dtype=dtype) for part, n in zip(parts, row_chunks)
    ]
    return da.concatenate(arrays, axis=0)
