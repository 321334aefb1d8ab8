"""BLAS threads inside nwbound's calls: one rule, read from the config key ``blas_threads``.

A fit of the default model makes many small matrix products (the space's transforms, the logistic
regression among its score models, the moment sums) between gradient boosting's OpenMP work and the
compiled bounds. With the BLAS library's default pool (every core), its threads wait spinning after
each product and compete with the other pools and with other processes: on 2 cores a 30 000-row fit
and predict took 1.4-1.9 s of wall time and 2.8-3.7 s of CPU, against 1.1-1.2 s and 1.6-1.7 s with
one BLAS thread; on 16 cores 5× longer (user guide, "Threads"). So the estimators' public calls run
BLAS on ``get_config()["blas_threads"]`` threads (1 at first; None leaves the library's own pool),
and nwbound's own parallelism is ``n_jobs``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, TypeVar

from threadpoolctl import ThreadpoolController

from ._config import get_config

__all__ = ["blas_limited", "limited_blas_threads"]

_F = TypeVar("_F", bound=Callable[..., Any])
_CONTROLLER: list[ThreadpoolController] = []  # built once: scanning the loaded libraries takes ~3 ms


def _controller() -> ThreadpoolController:
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def limited_blas_threads(threads: int | None):
    """A context in which the BLAS libraries loaded in this process run ``threads`` threads.

    ``None`` changes nothing. The limit is the process's (BLAS pools are not per thread) and is
    restored at the end of the block.

    Parameters
    ----------
    threads : int or None
        Threads for every BLAS library (OpenBLAS, MKL, BLIS) already loaded.

    Returns
    -------
    context manager

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound._threads import limited_blas_threads
    >>> with limited_blas_threads(1):
    ...     float((np.ones((4, 4)) @ np.ones(4))[0])
    4.0
    """
    if threads is None:
        import contextlib

        return contextlib.nullcontext()
    return _controller().limit(limits=threads, user_api="blas")


def blas_limited(method: _F) -> _F:
    """``method`` run with BLAS limited to the config key ``blas_threads`` (see :mod:`nwbound._threads`).

    Parameters
    ----------
    method : callable
        A public computing method of an estimator (``fit``, ``predict_interval``, ...).

    Returns
    -------
    callable
        The same method, run inside :func:`limited_blas_threads`.

    Examples
    --------
    >>> from nwbound._threads import blas_limited
    >>> @blas_limited
    ... def twice(x):
    ...     return 2 * x
    >>> twice(3)
    6
    """

    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        with limited_blas_threads(get_config()["blas_threads"]):
            return method(*args, **kwargs)

    return run  # type: ignore[return-value]
