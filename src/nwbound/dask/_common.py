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
    raise ImportError(
        "nwbound.dask needs dask: pip install 'dask[array]' distributed (the 'dask' extra of nwbound)."
    ) from exc

from threadpoolctl import threadpool_limits

__all__ = ["check_query_array", "compute", "current_client", "share", "rows_from_blocks", "limited", "task_copy"]


def current_client(client: Any = None) -> Any:
    """The distributed client to use: ``client``, else the active default one, else None."""
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
    """``dask.compute(*objs)`` on ``client`` when given, else on the default scheduler."""
    if client is not None:
        return tuple(client.gather(client.compute(list(objs))))
    return dask.compute(*objs)


def share(obj: Any, client: Any) -> Any:
    """Put ``obj`` in the graph once for every task that uses it.

    With a distributed client the object is scattered to every worker
    (``broadcast=True``) and its future is returned; otherwise a single
    ``dask.delayed`` node holds it, so it is not embedded in each task.
    """
    if client is not None:
        return client.scatter(obj, broadcast=True, hash=False)
    return dask.delayed(obj, pure=True, traverse=False)


def check_query_array(X: Any, name: str, n_features: int | None, dtype: np.dtype | None) -> "da.Array":
    """A 2-D dask array chunked along rows only, with the expected width and dtype."""
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
    with threadpool_limits(limits=threads):
        return func(*args)


def limited(func: Callable[..., Any], threads: int) -> Callable[..., Any]:
    """``func`` run under a BLAS/OpenMP thread limit (threadpoolctl), so that the
    threads of concurrent tasks on one worker do not oversubscribe its cores.
    A ``functools.partial`` of module-level functions: picklable for process workers."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads_per_task must be an int >= 1, got {threads!r}.")
    return functools.partial(_run_limited, func, threads)


def task_copy(model: Any) -> Any:
    """A shallow copy of ``model`` with its own thread pool off (``n_jobs=None``):
    parallelism comes from the dask tasks. Arrays are shared, not copied."""
    if getattr(model, "n_jobs", None) is None:
        return model
    return copy.copy(model).set_params(n_jobs=None)


def rows_from_blocks(
    parts: Sequence[Any], row_chunks: Sequence[int], tail_shape: tuple[int, ...], dtype: Any
) -> "da.Array":
    """Concatenate one delayed array per row block into a dask array."""
    arrays = [
        da.from_delayed(part, shape=(int(n),) + tail_shape, dtype=dtype) for part, n in zip(parts, row_chunks)
    ]
    return da.concatenate(arrays, axis=0)
