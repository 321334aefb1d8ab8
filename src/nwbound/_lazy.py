"""Public names that load on first use (PEP 562): one rule for every package that defers its imports.

:mod:`nwbound` and :mod:`nwbound.estimators` defer theirs so that ``nwbound predict`` reads a model
file without importing scikit-learn.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

__all__ = ["lazy_attributes"]


def lazy_attributes(module_name: str, lazy: dict[str, str],
                    namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module's ``__getattr__`` and ``__dir__`` that import each name of ``lazy`` on first use.

    Parameters
    ----------
    module_name : str
        The module's ``__name__`` (the anchor of the relative module paths in ``lazy``).
    lazy : dict of str to str
        ``{name: module path}``, the path absolute or relative to ``module_name``.
    namespace : dict
        The module's ``globals()``: a loaded name is stored there, so later look-ups skip
        ``__getattr__``.

    Returns
    -------
    (__getattr__, __dir__) : tuple of callables

    Examples
    --------
    >>> from nwbound._lazy import lazy_attributes
    >>> namespace = {}
    >>> getattr_, dir_ = lazy_attributes("nwbound", {"restate_lipschitz": ".scaling"}, namespace)
    >>> getattr_("restate_lipschitz").__name__, "restate_lipschitz" in namespace, dir_()
    ('restate_lipschitz', True, ['restate_lipschitz'])
    """

    def __getattr__(name: str) -> Any:
        if name in lazy:
            value = getattr(importlib.import_module(lazy[name], module_name), name)
            namespace[name] = value  # later look-ups skip this function
            return value
        raise AttributeError(f"module {module_name!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(lazy))

    return __getattr__, __dir__
