"""nwbound's global switches: :func:`set_config`, :func:`get_config` and :func:`config_context`.

The way scikit-learn does it (``sklearn.set_config``): one dict per thread, started from the
process's defaults, read where a switch matters. Every key is documented in :data:`_KEYS` with its
default and a check of its value; an unknown key or a bad value raises a ``ValueError`` that names
the key. None of these keys changes an interval's validity: they choose where, and by which of
equivalent routines, the device path computes.

The process's defaults of two keys start from an environment variable (:func:`_from_environment`),
read once at import: ``nwbound.bounds`` reads the same variables in processes that the device
check starts with them (``NWBOUND_COMPILE_BOUNDS``, ``NWBOUND_TRITON_SEARCH``), and the route must
agree with the search those processes get. ``NWBOUND_DISABLE_NUMBA`` stays an environment variable
(read by ``nwbound.bounds`` and ``nwbound.estimators._sums`` when they are imported, before any
code could call :func:`set_config`, and inherited by the subprocesses the tests start).
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any, Callable, Iterator

__all__ = ["config_context", "get_config", "parse_knn_topk", "set_config"]


def _bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"nwbound config {key!r} must be True or False, got {value!r}.")
    return value


def _choice(*allowed: str) -> Callable[[str, Any], str]:
    def check(key: str, value: Any) -> str:
        if value not in allowed:
            raise ValueError(f"nwbound config {key!r} must be one of {', '.join(map(repr, allowed))}, got {value!r}.")
        return value

    return check


_KNN_TOPK_WORDS = ("full", "noclamp", "bf16", "chunks=N", "onesync")
_KNN_TOPK_DEFAULT = "bf16+onesync"


def parse_knn_topk(text: str) -> dict | None:
    """The config key ``knn_topk`` (or :func:`nwbound.gpu._neighbors.exact_kneighbors`'s ``_topk``) as
    ``{"bf16": bool, "chunks": int, "onesync": bool}`` (empty or ``"default"``: ``"bf16+onesync"``); None
    for ``"full"`` (the float32 search as written). The forms are described in :mod:`nwbound.gpu._neighbors`.

    Examples
    --------
    >>> from nwbound._config import parse_knn_topk
    >>> parse_knn_topk("bf16+chunks=8")
    {'bf16': True, 'chunks': 8, 'onesync': False}
    """
    text = text.strip()
    if text == "full":
        return None
    if text in ("", "default"):
        text = _KNN_TOPK_DEFAULT
    out = {"bf16": False, "chunks": 1, "onesync": False}
    for word in text.replace(",", "+").split("+"):
        word = word.strip()
        if word == "noclamp":
            continue
        if word in ("bf16", "onesync"):
            out[word] = True
        elif word.startswith("chunks=") and word[7:].isdigit() and int(word[7:]) >= 1:
            out["chunks"] = int(word[7:])
        else:
            raise ValueError(f"knn_topk: unknown part {word!r} in {text!r}; use '+'-separated parts among "
                             f"{', '.join(_KNN_TOPK_WORDS)} (N >= 1; 'full' alone), or leave it empty for the "
                             "default search.")
    return out


def _knn_topk(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"nwbound config {key!r} must be a string such as '' or 'bf16+chunks=4', got {value!r}.")
    try:
        parse_knn_topk(value)
    except ValueError as exc:
        raise ValueError(f"nwbound config {key!r}: {exc}") from None
    return value


# key -> (default, check); set_config's docstring says what each does. _from_environment may replace
# two defaults once, at import.
_KEYS: dict[str, tuple[Any, Callable[[str, Any], Any]]] = {
    "device_bounds_on_cpu": (False, _bool),
    "regular_chernoff_on_device": (False, _bool),
    "triton_search": (True, _bool),
    "knn_topk": ("", _knn_topk),
    "hist_epilogue": ("atomic_count", _choice("loop", "atomic_skip", "atomic_count", "atomic_packed")),
}


def _from_environment() -> dict[str, Any]:
    """The process's defaults: :data:`_KEYS`'s, with the two keys that ``nwbound.bounds`` also reads
    from the environment taken from it (see the module's docstring)."""
    out = {key: default for key, (default, _) in _KEYS.items()}
    out["regular_chernoff_on_device"] = os.environ.get("NWBOUND_COMPILE_BOUNDS", "0") not in ("", "0")
    out["triton_search"] = os.environ.get("NWBOUND_TRITON_SEARCH", "1") != "0"
    return out


_global_config = _from_environment()
_threadlocal = threading.local()


def _config() -> dict[str, Any]:
    if not hasattr(_threadlocal, "config"):  # a new thread starts from the process's defaults
        _threadlocal.config = _global_config.copy()
    return _threadlocal.config


def get_config() -> dict[str, Any]:
    """The current values of nwbound's switches (a copy: changing it changes nothing).

    Returns
    -------
    dict
        Key to value; the keys and their meaning are listed by :func:`set_config`.

    Examples
    --------
    >>> import nwbound
    >>> nwbound.get_config()["hist_epilogue"]
    'atomic_count'
    """
    return _config().copy()


def set_config(**changes: Any) -> None:
    """Set nwbound's switches for this thread (until changed again; :func:`config_context` restores).

    Only the keys given change; each starts at the value said below.

    Parameters
    ----------
    device_bounds_on_cpu : bool
        False at first. With ``device="cpu"`` (PyTorch's CPU), compute the bounds there too, with the device's
        solvers, instead of the host's compiled ones (faster on CPU cores).
    regular_chernoff_on_device : bool
        At first True where ``NWBOUND_COMPILE_BOUNDS`` held a value other than ``""`` or ``"0"`` at
        import, else False. Run the regular classifier's band-Chernoff search on the device even
        without the fused Triton search (the eager PyTorch search).
    triton_search : bool
        At first False where ``NWBOUND_TRITON_SEARCH`` was ``"0"`` at import, else True. Use the
        fused Triton Chernoff search where it applies.
    knn_topk : str
        ``""`` at first. The device's exact k-NN candidate search (:mod:`nwbound.gpu._neighbors`): ``""`` the
        default, ``"full"``, or ``"+"``-separated parts among ``bf16``, ``noclamp``, ``onesync``,
        ``chunks=N``.
    hist_epilogue : {"loop", "atomic_skip", "atomic_count", "atomic_packed"}
        ``"atomic_count"`` at first. How the fused Triton kernel forms the distance histogram's per-bin sums.

    Raises
    ------
    ValueError
        An unknown key, or a value the key does not take (the message names the key).

    Examples
    --------
    >>> import nwbound
    >>> nwbound.set_config(knn_topk="full")
    >>> nwbound.get_config()["knn_topk"]
    'full'
    >>> nwbound.set_config(knn_topk="")
    """
    checked = {}
    for key, value in changes.items():
        if key not in _KEYS:
            raise ValueError(f"Unknown nwbound config key {key!r}; the keys are {', '.join(sorted(_KEYS))}.")
        checked[key] = _KEYS[key][1](key, value)
    _config().update(checked)  # all or nothing: every value was checked first


@contextlib.contextmanager
def config_context(**changes: Any) -> Iterator[None]:
    """Set nwbound's switches inside a ``with`` block (this thread), and restore them at its end.

    Parameters
    ----------
    **changes
        Keys and values as :func:`set_config` takes them.

    Raises
    ------
    ValueError
        An unknown key, or a value the key does not take (the message names the key); nothing is set.

    Examples
    --------
    >>> import nwbound
    >>> with nwbound.config_context(hist_epilogue="loop"):
    ...     nwbound.get_config()["hist_epilogue"]
    'loop'
    >>> nwbound.get_config()["hist_epilogue"]
    'atomic_count'
    """
    old = get_config()
    set_config(**changes)
    try:
        yield
    finally:
        _config().clear()
        _config().update(old)
