"""nwbound's global switches: :func:`set_config`, :func:`get_config` and :func:`config_context`.

The way scikit-learn does it (``sklearn.set_config``): one dict per thread, started from the
process's defaults, read where a switch matters (at each call, so a :func:`config_context` changes
the next call). Every key is listed in :data:`_KEYS` with its default and a check of its value, and
documented by :func:`set_config`; an unknown key or a bad value raises a ``ValueError`` that names the
key. None of these keys changes an interval's validity (``fused_verify=False`` aside, a diagnostic):
they choose where, and by which of equivalent routines, the device path computes, and how many
BLAS threads the estimators' calls run (``blas_threads``, :mod:`nwbound._threads`).

No key reads an environment variable: a script, or a subprocess it starts, sets them with
:func:`set_config`. Two environment variables remain, each read at the point of use:

* ``NWBOUND_DISABLE_NUMBA`` (``"1"``: the numpy routes instead of the numba-compiled ones), read by
  ``nwbound.bounds`` and ``nwbound.engine.host._sums`` each time they choose the route. It stays an
  environment variable because it is a whole-process switch set from outside Python (a CI job
  without numba, ``benchmarks/bench_regular.py``) that must reach every process the work spreads to
  (subprocesses, Dask workers), which inherit the environment but not a thread's config.
* ``TRITON_INTERPRET`` is Triton's own (``"1"``: its CPU interpreter, fixed when Triton is imported);
  nwbound only reads it, to know whether the kernels run interpreted.

(``USERNAME`` names the numba cache's folder on systems without ``os.getuid``: not a switch.)
"""

from __future__ import annotations

import contextlib
import numbers
import threading
from typing import Any, Callable, Iterator

__all__ = ["config_context", "get_config", "parse_knn_topk", "parse_search_variant", "set_config"]


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


def _bool_or(*allowed: str) -> Callable[[str, Any], bool | str]:
    def check(key: str, value: Any) -> bool | str:
        if not isinstance(value, bool) and value not in allowed:
            raise ValueError(f"nwbound config {key!r} must be True, False or one of "
                             f"{', '.join(map(repr, allowed))}, got {value!r}.")
        return value

    return check


def _threads_or_none(key: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"nwbound config {key!r} must be a positive integer or None (the BLAS library's own "
                         f"threads), got {value!r}.")
    return int(value)


_KNN_TOPK_WORDS = ("full", "noclamp", "bf16", "chunks=N", "onesync")
_KNN_TOPK_DEFAULT = "bf16+onesync"


def parse_knn_topk(text: str) -> dict | None:
    """The config key ``knn_topk`` (or :func:`nwbound.engine.device._neighbors.exact_kneighbors`'s ``_topk``) as
    ``{"bf16": bool, "chunks": int, "onesync": bool}`` (empty or ``"default"``: ``"bf16+onesync"``); None
    for ``"full"`` (the float32 search as written). The forms are described in :mod:`nwbound.engine.device._neighbors`.

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


# The fused Triton search's private launch switches (key ``search_variant``; benchmarks/diag_search.py
# times them, none is the default): ``bp`` pairs per program, ``warps``, ``stages``; ``order`` "compact"
# (the open pairs first) or "width" (by decreasing bracket width); ``lazy`` (fields re-loaded at each
# evaluation); ``one_exp`` (one exp per split-form bin side); ``count`` (probe and evaluation counts);
# ``low_first`` (a first probe just above the certified end); ``margin`` (0: no rounding margin on φ).
# :mod:`nwbound.bounds._chernoff_triton` describes each.
_VARIANT_KEYS = {"bp": int, "warps": int, "stages": int, "order": str, "lazy": int, "one_exp": int, "count": int,
                 "low_first": int, "margin": int}


def parse_search_variant(text: str) -> dict:
    """The config key ``search_variant`` (``"bp=2,warps=1,order=compact"``) as a dict of launch switches
    (``{"bp": 2, "warps": 1, "order": "compact"}``; empty: ``{}``, the kernel's defaults).

    Raises
    ------
    ValueError
        An unknown or empty item, an ``order`` other than none, compact or width, or a ``bp`` that is not a
        power of two.

    Examples
    --------
    >>> from nwbound._config import parse_search_variant
    >>> parse_search_variant("bp=2, warps=1,order=width")
    {'bp': 2, 'warps': 1, 'order': 'width'}
    >>> parse_search_variant("")
    {}
    """
    out: dict = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        key, _, val = item.partition("=")
        key = key.strip()
        if key not in _VARIANT_KEYS or not val.strip():
            raise ValueError(f"search_variant: unknown or empty item {item!r}; keys are "
                             f"{', '.join(_VARIANT_KEYS)} (e.g. 'bp=2,warps=1,order=compact').")
        try:
            out[key] = _VARIANT_KEYS[key](val.strip())
        except ValueError:
            raise ValueError(f"search_variant: {key} must be an integer, got {val.strip()!r}.") from None
    if out.get("order", "none") not in ("none", "compact", "width"):
        raise ValueError(f"search_variant: order must be none, compact or width, got {out['order']!r}.")
    bp = out.get("bp", 1)
    if bp < 1 or bp & (bp - 1):
        raise ValueError(f"search_variant: bp must be a power of two, got {bp}.")
    return out


def _parsed_by(parse: Callable[[str], Any], example: str) -> Callable[[str, Any], str]:
    def check(key: str, value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError(f"nwbound config {key!r} must be a string such as '' or {example!r}, got {value!r}.")
        try:
            parse(value)
        except ValueError as exc:
            raise ValueError(f"nwbound config {key!r}: {exc}") from None
        return value

    return check


# key -> (default, check); set_config's docstring says what each does.
_KEYS: dict[str, tuple[Any, Callable[[str, Any], Any]]] = {
    "device_bounds_on_cpu": (False, _bool),
    "regular_chernoff_on_device": (False, _bool),
    "triton_search": (True, _bool),
    "compile_bounds": (False, _bool_or("auto")),
    "fused_grouped": (False, _bool_or("bp1")),
    "fused_verify": (True, _bool_or("grouped")),
    "search_variant": ("", _parsed_by(parse_search_variant, "bp=2,warps=1")),
    "search_reads": ("lean", _choice("lean", "full")),
    "knn_topk": ("", _parsed_by(parse_knn_topk, "bf16+chunks=4")),
    "hist_epilogue": ("atomic_count", _choice("loop", "atomic_skip", "atomic_count", "atomic_packed")),
    "blas_threads": (1, _threads_or_none),
}

_global_config = {key: default for key, (default, _) in _KEYS.items()}
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
        False at first. Run the regular classifier's band-Chernoff search on the device even without the
        fused Triton search (the eager PyTorch search; slower than the host's solver on an H100).
    triton_search : bool
        True at first. Use the fused Triton Chernoff search where it applies (CUDA with Triton installed,
        or Triton's CPU interpreter); False runs the eager PyTorch search everywhere, and routes the regular
        classifier's Chernoff bounds to the host unless ``regular_chernoff_on_device``.
    compile_bounds : bool or "auto"
        False at first. ``torch.compile`` the eager PyTorch search's probe: True always, ``"auto"`` on CUDA
        only (the first call compiles, minutes), False never. A compile failure falls back to the eager
        probe with a warning.
    fused_grouped : bool or "bp1"
        False at first. Where the fused Triton search runs the localized classifier's per-point (grouped)
        form on CUDA: False not (the eager search; on an H100 the kernel's ends were refused by the
        float64 re-check by the thousands), True with the kernel's own launch, ``"bp1"`` with one pair per
        one-warp program. The binned form, and Triton's CPU interpreter, always run fused.
    fused_verify : bool or "grouped"
        True at first. Re-check the fused kernel's moved interval ends in float64 (PyTorch) before they are
        reported, searching the refused ones again: True both forms, ``"grouped"`` the per-point form only,
        False none (for the diagnostics only: an end then rests on the kernel's own arithmetic).
    search_variant : str
        ``""`` at first (the kernel's launch). The fused search kernel's launch, as comma-separated
        ``name=value`` items among ``bp`` (pairs per program, a power of two), ``warps``, ``stages``,
        ``order`` (none, compact or width), ``lazy``, ``one_exp``, ``count``, ``low_first``, ``margin``
        (:func:`parse_search_variant`; for the benchmarks). A launch passed by the caller wins.
    search_reads : {"lean", "full"}
        ``"lean"`` at first. The eager search's host reads: ``"full"`` the form before issue 19 (levels
        copied from the host, the first round's open pairs read), for the benchmarks; the same ends.
    knn_topk : str
        ``""`` at first. The device's exact k-NN candidate search (:mod:`nwbound.engine.device._neighbors`): ``""`` the
        default, ``"full"``, or ``"+"``-separated parts among ``bf16``, ``noclamp``, ``onesync``,
        ``chunks=N``.
    hist_epilogue : {"loop", "atomic_skip", "atomic_count", "atomic_packed"}
        ``"atomic_count"`` at first. How the fused Triton kernel forms the distance histogram's per-bin sums.
    blas_threads : int or None
        1 at first. The BLAS library's threads (OpenBLAS, MKL) inside the estimators' calls (``fit``,
        ``predict_interval``, ``predict_proba``, ...): their many small matrix products run faster, and
        leave the cores to gradient boosting and other processes, on one thread (user guide, "Threads").
        None leaves the library's own pool (every core unless ``OPENBLAS_NUM_THREADS`` says otherwise);
        nwbound's own threads are the estimators' ``n_jobs``.

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
    >>> nwbound.set_config(fused_grouped="fast")
    Traceback (most recent call last):
    ...
    ValueError: nwbound config 'fused_grouped' must be True, False or one of 'bp1', got 'fast'.
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
