"""Every ``default=X`` a numpydoc "Parameters" section states is the signature's default.

Generic over the public API: every name in the ``__all__`` of the public modules, their public
methods, and each class's ``__init__`` (documented in the class docstring). A default the docs
state but the code does not have (or another value) is a documentation bug users act on.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import math
import re

import pytest
from numpydoc.docscrape import NumpyDocString

MODULES = [
    "nwbound",
    "nwbound.estimators",
    "nwbound.bounds",
    "nwbound.assumptions",
    "nwbound.diagnostics",
    "nwbound.metrics",
    "nwbound.baselines",
    "nwbound.kernels",
    "nwbound.neighbors",
    "nwbound.io",
    "nwbound.scaling",
    "nwbound.datasets",
    "nwbound.dask",
    "nwbound.gpu",
]

_DEFAULT = re.compile(r"default\s*[=:]\s*(.+)$", re.IGNORECASE)
_MISSING = object()


def _public_callables():
    """(qualified name, callable whose signature holds the defaults, docstring) of the public API."""
    seen = set()
    for module_name in MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # an optional extra (dask, gpu) that is not installed
            continue
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name, None)
            if obj is None or id(obj) in seen or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            seen.add(id(obj))
            qual = f"{module_name}.{name}"
            if inspect.isfunction(obj):
                yield qual, obj, inspect.getdoc(obj)
                continue
            if "__init__" in vars(obj) or inspect.getdoc(obj):
                yield qual, obj, inspect.getdoc(obj)
            for attr in dir(obj):  # own and inherited methods defined in nwbound
                member = inspect.getattr_static(obj, attr)
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if attr.startswith("_") or not inspect.isfunction(member) or id(member) in seen:
                    continue
                if not getattr(member, "__module__", "").startswith("nwbound"):
                    continue
                seen.add(id(member))
                yield f"{qual}.{attr}", member, inspect.getdoc(member)


def _documented_defaults(doc: str):
    """(parameter name, default text) of every ``default=`` in the Parameters section."""
    try:
        parsed = NumpyDocString(doc)
    except Exception:  # noqa: BLE001 - a docstring numpydoc cannot parse is another test's business
        return
    for param in parsed["Parameters"]:
        match = _DEFAULT.search(param.type)
        if match is None:
            continue
        text = match.group(1).strip().rstrip(".")
        for name in param.name.replace("\\", "").split(","):
            name = name.strip().lstrip("*")
            if name:
                yield name, text


_ARITHMETIC = re.compile(r"^[0-9.eE+\-*/() ]*((exp|log|sqrt)\([0-9.eE+\-*/ ]+\)[0-9.eE+\-*/() ]*)*$")
_MATH = {"exp": math.exp, "log": math.log, "sqrt": math.sqrt}


def _literal(text: str):
    """The documented default as a Python value (a literal, or arithmetic such as ``20/3`` or
    ``exp(2.6)``), or _MISSING when it is prose (e.g. "sup K")."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        pass
    if _ARITHMETIC.match(text):
        try:
            return float(eval(text, {"__builtins__": {}}, _MATH))  # digits, operators and exp/log/sqrt only
        except (ValueError, SyntaxError, ZeroDivisionError, TypeError):
            return _MISSING
    return _MISSING


def _same(documented, actual) -> bool:
    if isinstance(actual, (list, tuple)) and isinstance(documented, (list, tuple)):
        return list(actual) == list(documented)
    if isinstance(documented, bool) or isinstance(actual, bool) or documented is None or actual is None:
        return documented is actual
    if isinstance(documented, str) != isinstance(actual, str):
        return False
    if isinstance(documented, float) and isinstance(actual, (int, float)):
        return math.isclose(documented, actual, rel_tol=1e-12)
    return documented == actual


def _cases():
    cases = []
    for qual, obj, doc in _public_callables():
        if not doc:
            continue
        try:
            signature = inspect.signature(obj)
        except (TypeError, ValueError):
            continue
        for name, text in _documented_defaults(doc):
            cases.append((qual, name, text, signature))
    return cases


CASES = _cases()


def test_the_scan_finds_the_estimators_defaults():
    names = {(qual, name) for qual, name, _, _ in CASES}
    assert ("nwbound.NadarayaWatsonClassifier", "delta") in names
    assert ("nwbound.DyadicClassifier", "resolution") in names
    assert len(CASES) > 100


@pytest.mark.parametrize("qual, name, text, signature", CASES, ids=[f"{c[0]}({c[1]})" for c in CASES])
def test_documented_default_is_the_signature_default(qual, name, text, signature):
    parameter = signature.parameters.get(name)
    assert parameter is not None, f"{qual} documents a parameter {name!r} (default={text}) it does not take"
    actual = parameter.default
    assert actual is not inspect.Parameter.empty, f"{qual}: {name!r} is documented with default={text} but is required"
    documented = _literal(text)
    if documented is _MISSING:
        # Prose or an expression: at least the signature's default must be stated literally when it
        # is a plain value (a number, a string, None, a bool).
        if isinstance(actual, (int, float, str, bool)) or actual is None:
            pytest.fail(f"{qual}: {name!r} documented as default={text}, signature default {actual!r}")
        return
    assert _same(documented, actual), f"{qual}: {name!r} documented default={text}, signature default {actual!r}"
