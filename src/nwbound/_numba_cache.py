"""numba's on-disk cache for the package's compiled loops, with a fallback directory.

``numba.njit(cache=True)`` stores the machine code next to the module (or in
numba's user-wide cache directory when that folder is not writable), so only
the first process on a machine pays the compile time (seconds per loop). When
neither directory is writable numba refuses to decorate the function at all
(``RuntimeError: cannot cache function``); :func:`njit_cached` then points
numba at a private folder under the temporary directory, and compiles without a
cache where even that fails: a read-only install never crashes.

numba keys a cached function on its own source file only. A loop assembled
from code in several files (see :mod:`nwbound.bounds._chernoff_binned`) passes
them as ``sources``: the key then includes their bytes, so that editing any of
them recompiles instead of loading stale machine code.

Importing this module imports nothing; numba is imported on the first call.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

__all__ = ["njit_cached", "fallback_cache_dir", "numba_switched_off"]


def numba_switched_off() -> bool:
    """Whether the environment variable ``NWBOUND_DISABLE_NUMBA`` switches nwbound's compiled
    passes off (any value but empty or ``0``): read at each call, so a test or a user may set it
    at any time. One rule for every compiled route (the engine's sums, the band-Chernoff solver,
    the trees' walk).

    Examples
    --------
    >>> import os
    >>> from nwbound._numba_cache import numba_switched_off
    >>> os.environ["NWBOUND_DISABLE_NUMBA"] = "1"; numba_switched_off()
    True
    >>> os.environ["NWBOUND_DISABLE_NUMBA"] = "0"; numba_switched_off()
    False
    >>> del os.environ["NWBOUND_DISABLE_NUMBA"]
    """
    return os.environ.get("NWBOUND_DISABLE_NUMBA", "").strip() not in ("", "0")


def fallback_cache_dir() -> Path:
    """The folder used when numba finds no writable cache directory of its own.

    Examples
    --------
    >>> fallback_cache_dir().name.startswith("nwbound-numba")
    True
    """
    user = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    return Path(tempfile.gettempdir()) / f"nwbound-numba-{user}"


def _sources_digest(sources: Sequence[str | os.PathLike]) -> str:
    digest = hashlib.sha256()
    for source in sources:
        digest.update(Path(source).read_bytes())
    return digest.hexdigest()


def _cache_class(sources: Sequence[str | os.PathLike]) -> type:
    from numba.core.caching import FunctionCache

    if not sources:
        return FunctionCache
    digest = _sources_digest(sources)

    class _SourcesCache(FunctionCache):
        """numba's cache, its index key extended by the bytes of every source file of the loop."""

        def _index_key(self, sig: Any, codegen: Any) -> tuple:
            return (*super()._index_key(sig, codegen), digest)

    return _SourcesCache


def _function_cache(py_func: Callable, sources: Sequence[str | os.PathLike]) -> Any | None:
    """numba's cache object for ``py_func`` (what ``cache=True`` sets), or None when nothing is writable."""
    from numba.core import config

    try:
        cls = _cache_class(sources)
    except OSError:  # a source file cannot be read: better no cache than a stale one
        return None
    try:
        return cls(py_func)
    except RuntimeError:  # "cannot cache function …: no locator available": no writable folder
        pass
    folder = fallback_cache_dir()
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        config.CACHE_DIR = str(folder)  # numba's NUMBA_CACHE_DIR, read when each cache is made
        return cls(py_func)
    except (OSError, RuntimeError):
        return None


def njit_cached(func: Callable | None = None, *, sources: Sequence[str | os.PathLike] = (), **options: Any) -> Any:
    """``numba.njit(cache=True, **options)(func)`` that never fails for want of a writable folder.

    Parameters
    ----------
    func : callable, optional
        The Python function to compile; without it, a decorator
        (``@njit_cached(nogil=True)``).
    sources : sequence of path-like, default=()
        Files whose code ``func`` is built from besides its own (functions it
        calls, copied code objects); their bytes join the cache key.
    **options
        Further options of :func:`numba.njit` (``parallel``, ``nogil``, …).

    Returns
    -------
    numba dispatcher
        Compiled on first call, or loaded from the on-disk cache.

    Examples
    --------
    >>> def add(a, b):
    ...     return a + b
    >>> njit_cached(add)(1, 2)
    3
    """
    if func is None:
        return lambda f: njit_cached(f, sources=sources, **options)
    import numba

    dispatcher = numba.njit(**options)(func)
    cache = _function_cache(dispatcher.py_func, sources)
    if cache is not None:
        dispatcher._cache = cache  # what numba's cache=True (Dispatcher.enable_caching) sets
    return dispatcher
