"""The learned pieces of a model file (``metric="auto"``'s space, the chosen L), in skops' format.

A fitted state holds, beside plain arrays, a few objects: the :class:`~nwbound.spaces.LearnedSpace`
of each model (its score model: a ``HistGradientBoostingClassifier`` or a
``Pipeline(StandardScaler, LogisticRegression)``) and the reports of ``metric="auto"`` and
``lipschitz="auto"``. They are written with skops' persistence (``skops.io.dumps``): a ZIP of a
JSON schema and ``.npy`` arrays, read back by building each object from its class and its
attributes, never by unpickling. Every class the schema names must be one of
:func:`trusted_types`, and every node one of ``_NODE_LOADERS``; anything else refuses the file *before*
anything is built. Loading does not import skops (whose import lists every scikit-learn estimator,
about a second of ``nwbound predict``): :class:`_Builder` rebuilds those node kinds as skops does,
from trusted classes only. The objects are then checked by the
estimator's ``set_fitted_state`` as any other untrusted value.
"""

from __future__ import annotations

import functools
import importlib
import io
import json
import zipfile
from typing import Any

import numpy as np

__all__ = ["dump_objects", "load_objects", "trusted_types", "untrusted_types"]

# The skops node kinds a learned space and its reports need (no function, method or reduce node:
# those call a named callable when loading).
_NODE_LOADERS = frozenset({"DictNode", "ListNode", "TupleNode", "JsonNode", "TypeNode", "NdArrayNode",
                           "ObjectNode", "LossNode", "RandomGeneratorNode"})


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


@functools.lru_cache(maxsize=1)
def trusted_types() -> tuple[str, ...]:
    """The classes (``module.Class``, as skops names them) a model file's learned pieces may hold.

    Built from the classes themselves (on first use: it imports scikit-learn's gradient boosting),
    so that a class that moves keeps its place on the list.

    Examples
    --------
    >>> from nwbound.io._learned import trusted_types
    >>> "nwbound.spaces._space.LearnedSpace" in trusted_types()
    True
    """
    from sklearn._loss.link import Interval, LogitLink, MultinomialLogit
    from sklearn._loss.loss import HalfBinomialLoss, HalfMultinomialLoss
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.ensemble._hist_gradient_boosting.binning import _BinMapper
    from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import LabelEncoder, StandardScaler

    from ..lipschitz_check import LipschitzCheck, LipschitzSelection
    from ..spaces import LearnedSpace, LipschitzAutoReport, MetricAutoReport

    losses = (HalfBinomialLoss, HalfMultinomialLoss)
    classes = (
        LearnedSpace, MetricAutoReport, LipschitzAutoReport, LipschitzSelection, LipschitzCheck,
        Pipeline, StandardScaler, LogisticRegression,
        HistGradientBoostingClassifier, TreePredictor, _BinMapper, LabelEncoder, *losses,
        LogitLink, MultinomialLogit, Interval,
        dict, list, tuple, str, int, float, bool, type(None),
        np.ndarray, np.random.Generator, np.float64, np.float32, np.int64, np.int32, np.uint64, np.uint32,
        np.bool_,
    )
    # The compiled losses (CyHalfBinomialLoss…) that skops rebuilds by name beside each loss.
    compiled = tuple(_name(type(loss().closs)) for loss in losses)
    return tuple(sorted({_name(c) for c in classes} | set(compiled) | {"numpy.random._generator.Generator"}))


def _schema_nodes(blob: bytes) -> list[dict]:
    """Every node of a skops dump's schema (read as JSON, nothing built)."""
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        if sum(i.file_size for i in zf.infolist()) > len(blob) or any(
                i.compress_type != zipfile.ZIP_STORED for i in zf.infolist()):
            raise ValueError("the learned pieces' archive is compressed or its member sizes exceed it")
        schema = json.loads(zf.read("schema.json").decode("utf-8"))
    nodes, stack = [], [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "__class__" in node or "__module__" in node or "__loader__" in node:
                nodes.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return nodes


def untrusted_types(blob: bytes) -> list[str]:
    """The classes and node kinds of a skops dump that are not on the trusted lists (sorted).

    Examples
    --------
    >>> import skops.io
    >>> from nwbound.io._learned import untrusted_types
    >>> from sklearn.decomposition import PCA
    >>> untrusted_types(skops.io.dumps({"a": PCA()}))
    ['sklearn.decomposition._pca.PCA']
    """
    trusted = set(trusted_types())
    bad = set()
    for node in _schema_nodes(blob):
        if "__class__" in node or "__module__" in node:
            name = f"{node.get('__module__')}.{node.get('__class__')}"
            if name not in trusted:
                bad.add(name)
        loader = node.get("__loader__")
        if loader is not None and loader not in _NODE_LOADERS:
            bad.add(f"skops node {loader}")
    return sorted(bad)


def dump_objects(objects: dict[str, Any]) -> np.ndarray:
    """``{member name: object}`` as the bytes of a skops dump (a ``uint8`` array for the ``.npz``).

    Refuses, as loading would, any object whose classes are not on the trusted list.

    Examples
    --------
    >>> from nwbound.io._learned import dump_objects, load_objects
    >>> load_objects(dump_objects({"a": (1.5, "x")}))
    {'a': (1.5, 'x')}
    """
    import skops.io

    blob = skops.io.dumps(objects)  # ZIP_STORED: loading checks member sizes against the blob
    bad = untrusted_types(blob)
    if bad:
        raise TypeError(
            f"Cannot save these learned pieces: they hold {', '.join(bad)}, which a model file does not "
            "load (it loads metric='auto' or 'standard' spaces and their reports only). Use pickle for "
            "such models (trusted input only)."
        )
    return np.frombuffer(blob, dtype=np.uint8)


def _trusted_type(module: Any, name: Any) -> type:
    """The class ``module.name``, only when it is on :func:`trusted_types` (imports its module)."""
    full = f"{module}.{name}"
    if full not in trusted_types():
        raise ValueError(f"untrusted type {full}")
    value = getattr(importlib.import_module(str(module)), str(name))
    if not isinstance(value, type):
        raise ValueError(f"{full} is not a class")
    return value


class _Builder:
    """Builds the objects of a skops dump's schema, the way ``skops.io.loads`` does for the node kinds
    of ``_NODE_LOADERS``, without importing skops.

    ``skops.io`` lists every scikit-learn estimator when imported (about a second); ``nwbound
    predict`` reads model files and should not pay it. Every class comes from :func:`trusted_types`,
    checked again here as it is built; objects shared in the dump (one ``__id__``) stay shared.
    """

    def __init__(self, zf: zipfile.ZipFile) -> None:
        self.zf = zf
        self.memo: dict[Any, Any] = {}

    def build(self, node: Any) -> Any:
        if not isinstance(node, dict) or not isinstance(node.get("__loader__"), str):
            raise ValueError("a schema node is not an object with a __loader__")
        key = node.get("__id__")
        if key is not None and key in self.memo:
            return self.memo[key]
        value = getattr(self, "_" + node["__loader__"], None)
        if node["__loader__"] not in _NODE_LOADERS or value is None:
            raise ValueError(f"node kind {node['__loader__']!r}")
        value = value(node)
        if key is not None:
            self.memo[key] = value
        return value

    def _type(self, node: dict) -> type:
        return _trusted_type(node.get("__module__"), node.get("__class__"))

    def _DictNode(self, node: dict) -> dict:
        if self._type(node) is not dict:
            raise ValueError("a DictNode that is not a dict")
        key_types = self.build(node["key_types"])
        content = node["content"]
        if not isinstance(content, dict) or len(key_types) != len(content):
            raise ValueError("a DictNode's keys and key types differ")
        out = {}
        for kind, (key, value) in zip(key_types, content.items()):
            if kind not in (str, int, float, bool):
                raise ValueError(f"dictionary key type {kind!r}")
            out[kind(key)] = self.build(value)
        return out

    def _ListNode(self, node: dict) -> list:
        if self._type(node) is not list:
            raise ValueError("a ListNode that is not a list")
        return [self.build(v) for v in node["content"]]

    def _TupleNode(self, node: dict) -> tuple:
        if self._type(node) is not tuple:  # a named tuple would call its class
            raise ValueError("a TupleNode that is not a tuple")
        return tuple(self.build(v) for v in node["content"])

    def _JsonNode(self, node: dict) -> Any:
        return json.loads(node["content"])

    def _TypeNode(self, node: dict) -> type:
        return self._type(node)

    def _NdArrayNode(self, node: dict) -> Any:
        cls = self._type(node)
        if not (cls is np.ndarray or issubclass(cls, np.generic)):  # no other class is called on the array
            raise ValueError(f"an array node of class {cls.__name__}")
        if node.get("type") == "numpy":
            array = np.load(io.BytesIO(self.zf.read(str(node["file"]))), allow_pickle=False)
            return array if cls is np.ndarray else cls(array)
        if node.get("type") == "json" and cls is np.ndarray:  # object arrays, item by item
            items = [self.build(v) for v in node["content"]]
            shape = self.build(node["shape"])
            if len(shape) == 1:
                out = np.empty(len(items), dtype=object)
                for i, item in enumerate(items):  # one by one: a sequence item stays one cell
                    out[i] = item
                return out
            return np.array(items, dtype=object)
        raise ValueError(f"array storage {node.get('type')!r}")

    def _set_state(self, instance: Any, attrs: Any) -> Any:
        if hasattr(instance, "__setstate__"):
            instance.__setstate__(attrs)
        elif isinstance(attrs, dict):
            instance.__dict__.update(attrs)
        else:
            raise ValueError(f"the state of a {type(instance).__name__} is not a mapping")
        return instance

    def _ObjectNode(self, node: dict) -> Any:
        cls = self._type(node)
        instance = cls.__new__(cls)  # no __init__: the attributes follow
        attrs = self.build(node["content"]) if node.get("content") is not None else None
        return instance if attrs is None else self._set_state(instance, attrs)

    def _LossNode(self, node: dict) -> Any:  # scikit-learn's compiled losses: class(*args), then state
        cls = self._type(node)
        if cls.__module__ != "sklearn._loss._loss":  # no other class is called with the file's arguments
            raise ValueError(f"a loss node of class {cls.__name__}")
        args = self.build(node["__reduce__"]["args"])
        if not isinstance(args, tuple):
            raise ValueError("a loss's arguments are not a tuple")
        instance = cls(*args)
        attrs = self.build(node["content"])
        return instance if not attrs else self._set_state(instance, attrs)

    def _RandomGeneratorNode(self, node: dict) -> np.random.Generator:
        if self._type(node) is not np.random.Generator:
            raise ValueError("a RandomGeneratorNode that is not a numpy Generator")
        seed = self.build(node["content"]["seed_seq"])
        state = self.build(node["content"]["bit_generator"])
        name = state.get("bit_generator") if isinstance(state, dict) else None
        bit_cls = getattr(np.random, str(name), None)
        if not (isinstance(bit_cls, type) and issubclass(bit_cls, np.random.BitGenerator)):
            raise ValueError(f"{name!r} is not a numpy bit generator")
        bits = bit_cls(np.random.SeedSequence(**seed))
        bits.state = state
        return np.random.Generator(bits)


def _build(blob: bytes) -> Any:
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        return _Builder(zf).build(json.loads(zf.read("schema.json").decode("utf-8")))



def load_objects(data: np.ndarray) -> dict[str, Any]:
    """The ``{member name: object}`` of :func:`dump_objects`, built from trusted classes only (without skops).

    Raises
    ------
    ValueError
        The dump names a class or node kind that is not trusted (listed), or is unreadable.

    Examples
    --------
    >>> from nwbound.io._learned import dump_objects, load_objects
    >>> sorted(load_objects(dump_objects({"b": [1], "a": None})))
    ['a', 'b']
    """
    blob = np.asarray(data, dtype=np.uint8).tobytes()
    try:
        bad = untrusted_types(blob)
    except (zipfile.BadZipFile, KeyError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"its learned pieces are unreadable ({type(exc).__name__}: {exc})") from None
    if bad:
        raise ValueError(
            f"its learned pieces name types that a model file may not hold: {', '.join(bad)} (trusted: "
            "nwbound's learned space and reports, the score models of metric='auto' and plain containers "
            "and arrays). Refusing to build them."
        )
    try:
        objects = _build(blob)
    except Exception as exc:  # a damaged schema raises a wide range; each means "invalid"
        raise ValueError(f"its learned pieces cannot be rebuilt ({type(exc).__name__}: {exc})") from None
    if not isinstance(objects, dict) or not all(isinstance(k, str) for k in objects):
        raise ValueError("its learned pieces are not a mapping of member names")
    return objects
