"""Array namespaces: which library an array belongs to, and its host copy.

The one place the engine asks ``array_api_compat`` (installed, or scikit-learn's vendored copy)
about arrays; :mod:`nwbound.gpu` and the estimators' device path re-use these helpers.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["array_namespace_of", "compat", "to_host"]


@functools.cache
def compat() -> Any:
    """The ``array_api_compat`` module: the installed one, else scikit-learn's vendored copy.

    Found once per process: where ``array_api_compat`` is not installed, a failed import searches
    the whole path again (≈ 0.3 ms each; 15 asks per ``predict_interval`` cost 4 ms a call on a GPU host).

    Raises
    ------
    ImportError
        When neither is available.

    Examples
    --------
    >>> from nwbound.engine import compat
    >>> callable(compat().array_namespace)
    True
    """
    try:
        import array_api_compat
    except ImportError:
        try:  # scikit-learn ≥ 1.4 ships a copy: no extra install on a machine that has it
            from sklearn.externals import array_api_compat
        except ImportError as exc:
            from .utils import install_hint

            raise ImportError(
                f"nwbound.gpu needs array_api_compat: {install_hint('arrayapi')}."
            ) from exc
    return array_api_compat


def array_namespace_of(*arrays: Any) -> Any:
    """The array-API namespace shared by ``arrays`` (via :mod:`array_api_compat`).

    Raises
    ------
    ImportError
        When ``array_api_compat`` is not installed (the ``arrayapi`` extra).
    TypeError
        When the arrays come from different libraries.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.gpu import array_namespace_of
    >>> array_namespace_of(np.zeros(2)).__name__.endswith("array_api_compat.numpy")
    True
    """
    array_api_compat = compat()
    try:
        return array_api_compat.array_namespace(*arrays)
    except TypeError as exc:
        raise TypeError(
            "Xq, X_train and onehot must be arrays of one library (all NumPy, all PyTorch, all CuPy, ...): "
            f"{exc}"
        ) from exc


def to_host(a: Any) -> np.ndarray:
    """A NumPy copy of an array of any namespace and device, in its own dtype (one host copy).

    As scikit-learn's ``_convert_to_numpy``: the library's own call where DLPack cannot cross
    devices (CuPy ``.get()``, PyTorch ``.cpu()``, ``array_api_strict``'s CPU device).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.engine import to_host
    >>> to_host(np.arange(3, dtype=np.float32)).dtype
    dtype('float32')
    """
    if isinstance(a, np.ndarray):
        return a
    module = type(a).__module__
    if module.startswith("cupy"):
        return a.get()
    if hasattr(a, "detach"):  # torch
        return a.detach().cpu().numpy()
    if module.startswith("array_api_strict"):
        xp = a.__array_namespace__()
        return np.asarray(xp.asarray(a, device=xp.Device("CPU_DEVICE")))
    return np.from_dlpack(a) if hasattr(a, "__dlpack__") else np.asarray(a)
