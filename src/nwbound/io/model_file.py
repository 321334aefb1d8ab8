"""Safe model files: one ``.npz`` of plain arrays plus JSON metadata, never pickle.

Format (``nwbound-model``, versions 2 to 5)
-------------------------------------------
A model file is an ordinary NumPy ``.npz`` archive (a ZIP of ``.npy`` members,
stored uncompressed exactly as :func:`numpy.savez` writes them, with fixed
timestamps so that the same model always gives the same bytes). Every member
is a plain numeric, boolean, bytes or unicode array; no member may hold Python
objects, so the file is read with ``allow_pickle=False`` and loading never
executes code. A model without learned pieces (``metric=None`` with a numeric
``lipschitz``, ``margin`` or none) is written as version 2, which older nwbound
reads too; the default model (``metric="auto"``, ``lipschitz="auto"``,
``cross_fit="auto"``) as version 4: the learned pieces (version 3) and their frozen arrays; with
a point model (``point_estimate="auto"``) as version 5. Members:

``__metadata__``
    UTF-8 JSON (as a ``uint8`` array) with ``format`` (``"nwbound-model"``),
    ``format_version``, ``nwbound_version``, ``estimator`` (class name),
    ``params`` (``get_params()``; the kernel must be a name), ``n_features_in``,
    ``state`` (name → kind of each fitted-state entry, see below),
    ``pipeline`` (null, or the feature columns, target name, scaling method
    and the assumption as given in raw units — see :class:`TableModel`),
    ``arrays`` (name → dtype and shape) and ``sha256``.
``state__<name>``
    One member per entry of the estimator's fitted state, exactly as its
    documented ``get_fitted_state()`` returns it (e.g. ``state__X``,
    ``state__classes_``). Scalars are 0-d arrays; the ``state`` kind
    (``"array"``, ``"str_objects"`` for an object array of strings stored as
    unicode, ``"int"``, ``"float"``, ``"bool"``, ``"str"``, ``"dtype"``,
    ``"none"``) says how to read each back.
``param_bandwidth_grid``
    The ``bandwidth_grid`` parameter, when set.
``scaler_shift``, ``scaler_scale``
    The scaling pipeline (``x_scaled = (x − shift)·scale``).
``state__cross<k>__<name>`` (version 3)
    The fitted state of the k-th cross-fitted model; the ``state`` entry
    ``cross_fit_models_`` lists each model's kinds.
``__learned__`` (version 3)
    The fitted-state entries of kind ``"object"`` (``metric_``: each model's
    :class:`~nwbound.spaces.LearnedSpace` with its score model;
    ``lipschitz_report_``: how ``lipschitz="auto"`` chose L), keyed by their
    member names, as one skops dump (``skops.io.dumps``: a ZIP of a JSON schema
    and ``.npy`` arrays) stored as a ``uint8`` array. Loading first reads the
    schema as JSON and refuses the file if it names any class outside an
    explicit trusted list (:func:`nwbound.io._learned.trusted_types`: nwbound's
    space and reports, ``HistGradientBoostingClassifier`` and its parts,
    ``Pipeline``, ``StandardScaler``, ``LogisticRegression``, plain containers
    and arrays) or any skops node that calls a named function; only then does
    skops build the objects, from their classes and attributes. The space is
    kept whole (its attributes, whatever they are), so the loaded model's
    intervals are those of the saved one, byte for byte. These bytes are not
    reproducible (skops names its members after object ids), unlike the rest.
``frozen__<name>``, ``frozen__cross<k>__<name>`` (version 4, a Nadaraya-Watson classifier)
    Each learned space again as plain arrays (metadata ``frozen``: the kinds), for the route that
    predicts without scikit-learn (``load_model(path, frozen=True)``, :mod:`nwbound.io._frozen`);
    :func:`load_model` refuses a file whose frozen arrays are not those of its rebuilt spaces.
``state__point_model_``, ``state__point_units``, ``frozen__point__<name>`` (version 5)
    ``point_estimate="auto"``'s point model (skops), its columns' units, and its frozen arrays
    (metadata ``frozen``'s ``point``: its kind); ``state__point_report_<rows|accuracies|used|judged>``:
    ``point_report_`` (absent: None). Files without ``point_estimate`` load as ``"nw"``.

Loading builds the estimator from ``params`` and hands the state to its
``set_fitted_state``, which checks **every** array and scalar (shapes, dtypes,
finiteness, ranges, consistency between arrays) and rebuilds what is derived
(e.g. the neighbour index of the localized classifier, which is never stored).
A learned space must be one ``metric="auto"`` or ``"standard"`` fits, and a
gradient-boosting model's trees must stay inside themselves (compiled code
walks them unchecked). Nothing is written into the estimator from outside. The loaded model then
answers one probe query, so that a value only the prediction path rejects
refuses the file at load. ``n_jobs`` from a file is capped to the cores of
the loading machine. Version-1 files (training arrays
``train_X``… or the dyadic ``cell_*_`` arrays), version-2 and version-3 files are still read.

What the checksum promises
--------------------------
``sha256`` is an **unkeyed** SHA-256 of the array payload — for each member
in sorted name order: its name, dtype, shape and raw bytes — followed by the
canonical JSON of the metadata without the ``sha256`` field. It detects
accidents (truncation, bit rot, a careless edit): such files are refused. It
does **not** prove where a file came from: anyone can edit a file and compute
a fresh checksum. That is why every loaded value is validated as untrusted
input; a crafted file can at worst be refused (or describe a different but
valid model), never run code or yield probabilities outside [0, 1]. To trust a
model's origin, check a signature or a hash of the whole file obtained over a
trusted channel.

Pickle
------
The estimators remain picklable for scikit-learn workflows (``joblib.dump``,
``pickle``); unpickling runs code, so only unpickle files you trust. Use
:func:`save_model`/:func:`load_model` to exchange models.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import math
import numbers
import os
import re
import tempfile
import warnings
import zipfile
from collections.abc import Mapping
from collections.abc import Sequence as _SequenceABC
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ._frozen import check_frozen, frozen_members, frozen_model, frozen_payload
from .pipeline import SCALE_METHODS, FeatureScaler, TableModel, check_table_columns

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "FeatureScaler",
    "ModelFileError",
    "TableModel",
    "load_model",
    "save_model",
]

FORMAT_NAME = "nwbound-model"
FORMAT_VERSION = 5
_READABLE_VERSIONS = (1, 2, 3, 4, 5)
# A file without learned pieces is written as version 2 (older nwbound reads it); one with them as 4
# (3: without their frozen arrays), 5 with a point model (older nwbound then says: upgrade).
_PLAIN_VERSION, _LEARNED_VERSION, _FROZEN_VERSION = 2, 3, 4

_META = "__metadata__"
_STATE = "state__"
_STATE_KINDS = ("array", "str_objects", "int", "float", "bool", "str", "dtype", "none", "object")
# Format 3: the learned pieces (kind "object") as one skops dump, and the state of each cross-fitted
# model under ``<prefix>cross<k>__`` (its kinds a list in the parent's "cross_fit_models_" entry).
_LEARNED = "__learned__"
_MODELS = "cross_fit_models_"
_MAX_MODELS = 64
_PIPELINE_ARRAYS = {"scaler_shift", "scaler_scale"}
# Members of format-1 files (the training set or the dyadic grid).
_V1_NW_ARRAYS = {"classes_", "class_prior_", "train_X", "train_labels", "train_weights", "bandwidths_", "param_bandwidth_grid"}
_V1_DYADIC_ARRAYS = {"classes_", "class_prior_", "cell_keys_", "cell_class_sums_", "cell_sq_sums_", "grid_low_", "grid_span_"}
# Fixed ZIP timestamp: identical models give byte-identical files.
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ModelFileError(ValueError):
    """A model file that cannot be loaded (corrupt, edited, invalid, newer, wrong model).

    Examples
    --------
    >>> from nwbound.io import ModelFileError
    >>> issubclass(ModelFileError, ValueError)
    True
    """


def _estimator_classes() -> dict[str, type]:
    from ..estimators import DyadicClassifier, NadarayaWatsonClassifier

    return {"NadarayaWatsonClassifier": NadarayaWatsonClassifier, "DyadicClassifier": DyadicClassifier}


def _machine_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on every platform
        return os.cpu_count() or 1


# ----------------------------------------------------------------------------------------------
# Saving
# ----------------------------------------------------------------------------------------------
def _json_value(value: Any, name: str) -> Any:
    """A parameter value as plain JSON (refuse anything that would need code to rebuild)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"Cannot save parameter {name}={value!r}: only finite numbers can be stored.")
        return value
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise TypeError(f"Cannot save parameter {name}: its dict keys must be strings.")
        return {k: _json_value(v, f"{name}[{k!r}]") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v, f"{name}[{i}]") for i, v in enumerate(value)]
    raise TypeError(
        f"Cannot save parameter {name} of type {type(value).__name__}: a model file stores only "
        "numbers, strings, None and lists/dicts of them. Use pickle for such models (trusted input only)."
    )


def _params_for_file(est: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    from ..kernels import KERNEL_NAMES, Kernel, get_kernel

    params = dict(est.get_params(deep=False))
    arrays: dict[str, np.ndarray] = {}
    kernel = params.get("kernel")
    if "kernel" in params and not isinstance(kernel, str):
        if isinstance(kernel, Kernel) and kernel.name in KERNEL_NAMES and get_kernel(kernel.name) is kernel:
            params["kernel"] = kernel.name
        else:
            raise TypeError(
                f"Cannot save a model whose kernel is {kernel!r}: a model file stores the kernel by "
                f"name only ({', '.join(KERNEL_NAMES)}) so that loading never runs code. Refit with a "
                "named kernel, or use pickle (trusted input only)."
            )
    if "dtype" in params and params["dtype"] is not None and not isinstance(params["dtype"], str):
        params["dtype"] = np.dtype(params["dtype"]).name
    if params.get("bandwidth_grid") is not None:
        arrays["param_bandwidth_grid"] = np.asarray(params["bandwidth_grid"], dtype=np.float64)
        params["bandwidth_grid"] = "<array param_bandwidth_grid>"
    return {k: _json_value(v, k) for k, v in params.items()}, arrays


# The fitted-state entries that are objects (get_fitted_state's learned pieces), not arrays.
_OBJECT_KEYS = frozenset({"metric_", "lipschitz_report_", "point_model_"})


def _flatten_state(state: Mapping[str, Any], prefix: str, arrays: dict[str, np.ndarray],
                   objects: dict[str, Any]) -> dict[str, Any]:
    """The kinds of a fitted state's entries; their arrays into ``arrays``, objects into ``objects``,
    both under ``prefix + key`` (each cross-fitted model's state under ``prefix + "cross<k>__"``)."""
    kinds: dict[str, Any] = {}
    for key, value in state.items():
        if not isinstance(key, str) or not _KEY.match(key):
            raise TypeError(f"Fitted state key {key!r} cannot name a file member.")
        if key == _MODELS:
            kinds[key] = [_flatten_state(sub, f"{prefix}cross{k}__", arrays, objects) for k, sub in enumerate(value)]
            continue
        kinds[key], arr = _state_member(key, value)
        if kinds[key] == "object":
            objects[prefix + key] = value
        elif arr is not None:
            arrays[prefix + key] = arr
    return kinds


def _state_member(key: str, value: Any) -> tuple[str, np.ndarray | None]:
    """(kind, array) of one fitted-state entry; no array may need pickle to be read."""
    if value is None:
        return "none", None
    if isinstance(value, (bool, np.bool_)):
        return "bool", np.asarray(bool(value))
    if isinstance(value, numbers.Integral):
        return "int", np.asarray(int(value), dtype=np.int64)
    if isinstance(value, numbers.Real):
        return "float", np.asarray(float(value), dtype=np.float64)
    if isinstance(value, str):
        return "str", np.asarray(value, dtype=str)
    if isinstance(value, np.dtype):
        return "dtype", np.asarray(value.name, dtype=str)
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biufSU":
            return "array", value if value.flags.c_contiguous else value.copy(order="C")
        if value.dtype.kind == "O" and all(isinstance(v, str) for v in value.ravel()):
            return "str_objects", np.asarray(value.tolist(), dtype=str).reshape(value.shape)
    elif key in _OBJECT_KEYS:  # a learned space or a report: the skops dump (save_model checks its types)
        return "object", None
    raise TypeError(
        f"Cannot save fitted state {key!r} of type {type(value).__name__}"
        f"{'' if not isinstance(value, np.ndarray) else f' (dtype {value.dtype})'}: a model file stores "
        "numbers, strings and plain arrays only (string class labels included). Use pickle for such "
        "models (trusted input only)."
    )


def _estimator_payload(est: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    classes = _estimator_classes()
    if type(est) not in classes.values():
        raise TypeError(
            f"save_model supports {' and '.join(classes)} (optionally in a TableModel), got "
            f"{type(est).__name__}. Use pickle for other models (trusted input only)."
        )
    try:
        check_is_fitted(est)
    except NotFittedError:
        raise ValueError(f"This {type(est).__name__} is not fitted yet; call fit before save_model.") from None
    # First: it refuses, with the reason, what a model file cannot hold (a metric= given as an estimator).
    state = est.get_fitted_state()
    params, arrays = _params_for_file(est)
    objects: dict[str, Any] = {}
    kinds = _flatten_state(state, _STATE, arrays, objects)
    if objects:
        from ._learned import dump_objects

        arrays[_LEARNED] = dump_objects(objects)
    meta = {
        "estimator": type(est).__name__,
        "params": params,
        "state": kinds,
        "n_features_in": int(est.n_features_in_),
    }
    # A Nadaraya-Watson classifier's learned spaces as plain arrays too: its frozen route (nwbound predict)
    entry, members = frozen_payload(state) if type(est).__name__ == "NadarayaWatsonClassifier" else (None, {})
    if entry is not None:
        meta["frozen"] = entry
        arrays.update(members)
    return meta, arrays


def _digest(arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> str:
    """SHA-256 of the arrays (sorted by name: name, dtype, shape, bytes) and the metadata."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        arr = np.asarray(arrays[name])  # not ascontiguousarray: it turns 0-d scalars into shape (1,)
        h.update(name.encode("utf-8") + b"\0" + arr.dtype.str.encode("ascii") + b"\0")
        h.update(repr(tuple(int(s) for s in arr.shape)).encode("ascii") + b"\0")
        h.update(arr.tobytes())
    rest = {k: v for k, v in meta.items() if k != "sha256"}
    h.update(json.dumps(rest, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8"))
    return h.hexdigest()


def _write_npz(fh: Any, arrays: dict[str, np.ndarray]) -> None:
    # What np.savez writes (stored .npy members), with a fixed timestamp.
    with zipfile.ZipFile(fh, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name in sorted(arrays):
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            with zf.open(info, "w", force_zip64=True) as member:
                arr = np.asarray(arrays[name])
                np.lib.format.write_array(member, arr if arr.flags.c_contiguous else arr.copy(order="C"), allow_pickle=False)


def save_model(model: Any, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write a fitted model to a safe ``.npz`` model file (see the module docs for the format).

    The fitted state comes from the estimator's public ``get_fitted_state()``.

    Parameters
    ----------
    model : NadarayaWatsonClassifier, DyadicClassifier or TableModel
        A fitted estimator (regular or localized NW, or dyadic), optionally
        with its scaling pipeline: the default model (``metric="auto"``,
        ``lipschitz="auto"``, cross-fitted or not), ``metric="standard"`` or
        ``metric=None``; not a ``metric`` given as an estimator.
    path : str or path-like
        Target file (``.npz`` recommended). Written to a temporary file in the
        same folder, then renamed into place, so a crash never leaves a
        truncated model.
    overwrite : bool, default=False
        Replace an existing file. Without it an existing file is left alone.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False.
    TypeError
        A callable kernel, an unsupported estimator or unsupported classes.
    ValueError
        An unfitted estimator; a ``metric`` given as an estimator (PCA, LDA, …).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.io import load_model, save_model
    >>> X = np.array([[0.0], [0.2], [0.8], [1.0]]); y = [0, 0, 1, 1]
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.5, lipschitz=1.0).fit(X, y)
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> path = save_model(clf, folder / "model.npz")
    >>> load_model(path).predict_proba([[0.1]]).tolist() == clf.predict_proba([[0.1]]).tolist()
    True
    """
    from .. import __version__

    path = Path(path)
    if isinstance(model, TableModel):
        meta, arrays = _estimator_payload(model.estimator)
        pipeline: dict[str, Any] = {
            "features": list(model.features),
            "target": model.target,
            "scale": "none" if model.scaler is None else model.scaler.method,
            "lipschitz": _json_value(model.lipschitz, "lipschitz"),
            "margin": _json_value(model.margin, "margin"),
            "id_columns": list(model.id_columns),
        }
        if len(model.features) != meta["n_features_in"]:
            raise ValueError(
                f"TableModel lists {len(model.features)} features but its estimator was fitted on {meta['n_features_in']}."
            )
        if model.scaler is not None:
            arrays["scaler_shift"] = model.scaler.shift
            arrays["scaler_scale"] = model.scaler.scale
        meta["pipeline"] = pipeline
    else:
        meta, arrays = _estimator_payload(model)
        meta["pipeline"] = None
    if path.exists() and not overwrite:
        raise FileExistsError(f"Model file {path} already exists; pass overwrite=True (--overwrite) or choose another path.")
    if path.is_dir():
        raise IsADirectoryError(f"Model path {path} is a folder; give a file name such as model.npz.")
    version = (FORMAT_VERSION if "point" in meta.get("frozen", {}) else _FROZEN_VERSION if "frozen" in meta
               else _LEARNED_VERSION if _LEARNED in arrays else _PLAIN_VERSION)
    header = {"format": FORMAT_NAME, "format_version": version, "nwbound_version": __version__}
    meta = {**header, **meta}
    meta["arrays"] = {n: {"dtype": a.dtype.str, "shape": list(a.shape)} for n, a in sorted(arrays.items())}
    meta["sha256"] = _digest(arrays, meta)
    text = json.dumps(meta, sort_keys=True, indent=1, allow_nan=False).encode("utf-8")
    payload = {**arrays, _META: np.frombuffer(text, dtype=np.uint8)}

    if not path.parent.is_dir():
        raise FileNotFoundError(f"Folder {path.parent} for the model file does not exist.")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o644)  # mkstemp makes 0600 files
        with os.fdopen(fd, "wb") as fh:
            _write_npz(fh, payload)
            fh.flush()
            os.fsync(fh.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            try:  # a hard link fails if the target appeared meanwhile: no clobbering
                os.link(tmp, path)
            except FileExistsError:
                raise FileExistsError(f"Model file {path} already exists; pass overwrite=True.") from None
            except OSError:  # no hard links on this file system
                if path.exists():
                    raise FileExistsError(f"Model file {path} already exists; pass overwrite=True.") from None
                os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path


# ----------------------------------------------------------------------------------------------
# Loading
# ----------------------------------------------------------------------------------------------
_MEMBER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.npy$")


def _read_members(path: Path) -> dict[str, np.ndarray]:
    """Every member of the archive as an array, checked before anything is allocated."""
    size = path.stat().st_size
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        names = [i.filename for i in infos]
        if len(set(names)) != len(names):
            raise ModelFileError(f"Model file {path} has duplicate members.")
        total = 0
        for info in infos:
            if not _MEMBER_NAME.match(info.filename):
                raise ModelFileError(f"Model file {path} has an unexpected member {info.filename!r}.")
            if info.compress_type != zipfile.ZIP_STORED:
                raise ModelFileError(f"Model file {path}: member {info.filename!r} is compressed, which the format does not use.")
            total += info.file_size
        if total > size:  # stored members cannot be larger than the file
            raise ModelFileError(f"Model file {path} is corrupt (member sizes exceed the file size).")
        arrays = {}
        for info in infos:
            data = zf.read(info)  # checks the CRC-32
            fp = io.BytesIO(data)
            version = np.lib.format.read_magic(fp)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp)
            else:
                raise ModelFileError(f"Model file {path}: member {info.filename!r} has .npy version {version}.")
            if dtype.hasobject:
                raise ModelFileError(
                    f"Model file {path}: member {info.filename!r} holds Python objects, which would need "
                    "pickle; nwbound model files never do. Refusing to load it."
                )
            count = math.prod(shape)
            if count * dtype.itemsize != len(data) - fp.tell():
                raise ModelFileError(f"Model file {path}: member {info.filename!r} is truncated or corrupt.")
            fp.seek(0)
            arrays[info.filename[:-4]] = np.lib.format.read_array(fp, allow_pickle=False)
    return arrays


def _check(cond: bool, path: Path, what: str) -> None:
    if not cond:
        raise ModelFileError(f"Model file {path} is invalid: {what}.")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_FILE_DEFAULTS = {"metric": None, "lipschitz": None, "bandwidth": "scale", "point_estimate": "nw"}
"""Parameters a model file leaves out take these values (the files' classifier), not the constructor's defaults."""


def _params_from_file(meta_params: Any, allowed: set[str], estimator: str, arrays: dict[str, np.ndarray],
                      path: Path) -> dict[str, Any]:
    """The constructor parameters of ``estimator`` (its parameter names ``allowed``); unknown names
    refused, ``n_jobs`` capped to this machine."""
    _check(isinstance(meta_params, dict), path, "params is not an object")
    unknown = sorted(set(meta_params) - allowed)
    if unknown:
        raise ModelFileError(
            f"Model file {path} sets parameters {unknown} that this nwbound's {estimator} does not "
            "have; it was probably written by another nwbound version."
        )
    # A parameter the file does not name takes the value of the classifier files were written with
    # before it existed, never today's default: metric=None (a file holds no learned map), and the
    # defaults before metric/lipschitz/bandwidth/point_estimate="auto" became the constructor's (user guide, "Defaults").
    params = {**{k: v for k, v in _FILE_DEFAULTS.items() if k in allowed}, **meta_params}
    if params.get("bandwidth_grid") is not None:
        _check(params["bandwidth_grid"] == "<array param_bandwidth_grid>" and "param_bandwidth_grid" in arrays,
               path, "param bandwidth_grid: its array param_bandwidth_grid is missing")
        grid = arrays["param_bandwidth_grid"]
        _check(grid.ndim == 1 and grid.dtype.kind == "f", path, "param bandwidth_grid must be a 1-D float array")
        params["bandwidth_grid"] = grid
    else:
        _check("param_bandwidth_grid" not in arrays, path, "param_bandwidth_grid is stored but bandwidth_grid is None")
    if "kernel" in params:
        _check(isinstance(params["kernel"], str), path, "param kernel must be stored by name")
    if params.get("n_jobs") is not None:
        n_jobs = params["n_jobs"]
        _check(_is_int(n_jobs) and (n_jobs >= 1 or n_jobs == -1), path,
               f"param n_jobs must be None, -1 or a positive int, got {n_jobs!r}")
        # A file must not decide how many threads this machine starts.
        params["n_jobs"] = -1 if n_jobs == -1 else min(n_jobs, _machine_cores())
    return params


def _state_value(key: str, kind: Any, arrays: dict[str, np.ndarray], path: Path, prefix: str = _STATE,
                 objects: Mapping[str, Any] | None = None) -> Any:
    """One fitted-state entry read back from its member (or the learned pieces), by its recorded kind."""
    _check(isinstance(kind, str) and kind in _STATE_KINDS, path, f"state {key}: unknown kind {kind!r}")
    member = prefix + key
    if kind == "object":
        _check(key in _OBJECT_KEYS, path, f"state {key} cannot be an object")
        _check(objects is not None and member in objects, path, f"state {key}: {member} is not among the learned pieces")
        return objects[member]
    if kind == "none":
        _check(member not in arrays, path, f"state {key} is None but has a member")
        return None
    _check(member in arrays, path, f"state {key}: member {member} is missing")
    arr = arrays[member]
    if kind == "array":
        return arr
    if kind == "str_objects":
        _check(arr.dtype.kind == "U", path, f"state {key} must be stored as unicode strings")
        if key == "classes_":
            return arr  # set_fitted_state takes text classes as a unicode array
        out = np.empty(arr.shape, dtype=object)
        out[...] = arr.tolist() if arr.ndim else arr.item()
        return out
    _check(arr.ndim == 0, path, f"state {key} must be a scalar (0-d array), got shape {arr.shape}")
    expected = {"int": "iu", "float": "f", "bool": "b", "str": "U", "dtype": "U"}[kind]
    _check(arr.dtype.kind in expected, path, f"state {key}: a {kind} stored with dtype {arr.dtype}")
    value = arr.item()
    if kind == "dtype":
        _check(value in ("float32", "float64"), path, f"state {key}: dtype {value!r} is not float32/float64")
        return np.dtype(value)
    return {"int": int, "float": float, "bool": bool, "str": str}[kind](value)


def _restore(cls: type, params: dict, state: dict[str, Any], path: Path) -> Any:
    """A fitted estimator from params and state, through the estimator's own checks.

    The model then answers one query (the origin), so that a value only the
    prediction path rejects (e.g. a bandwidth too large to represent) refuses
    the file here rather than at the user's first prediction.
    """
    try:
        est = cls(**params)
        est.set_fitted_state(state)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. "no feature names", a useless-bound note
            probe = np.zeros((1, int(est.n_features_in_)))
            # A copy that does not refuse an empty neighbourhood: the origin may be far from the data.
            trial = copy.copy(est).set_params(empty_neighborhood="prior")
            if getattr(est, "lipschitz", None) is None and getattr(est, "margin", None) is None:
                trial.predict_proba(probe)
            else:
                trial.predict_interval(probe)
    except (ValueError, TypeError, OverflowError, FloatingPointError) as exc:
        raise ModelFileError(f"Model file {path} is invalid: {exc}") from None
    return est


def _unflatten_state(kinds: Any, prefix: str, arrays: dict[str, np.ndarray], objects: Mapping[str, Any] | None,
                     path: Path, used: set[str], depth: int = 0) -> dict[str, Any]:
    """:func:`_flatten_state` back; ``used`` collects the member names read (every stored one must be)."""
    _check(isinstance(kinds, dict) and all(isinstance(k, str) and _KEY.match(k) for k in kinds), path,
           "state is not an object of member names")
    state: dict[str, Any] = {}
    for key, kind in kinds.items():
        if key == _MODELS:
            _check(depth == 0 and isinstance(kind, list) and 2 <= len(kind) <= _MAX_MODELS, path,
                   f"state {_MODELS} must list 2 to {_MAX_MODELS} model states")
            state[key] = [_unflatten_state(sub, f"{prefix}cross{k}__", arrays, objects, path, used, depth + 1)
                          for k, sub in enumerate(kind)]
            continue
        state[key] = _state_value(key, kind, arrays, path, prefix, objects)
        used.add(prefix + key)
    return state


def _build_v2(cls: type, params: dict, arrays: dict[str, np.ndarray], meta: dict, path: Path) -> Any:
    """Formats 2 and 3: the fitted state from its members (and, in 3, the learned pieces)."""
    objects = None
    if _LEARNED in arrays:
        from ._learned import load_objects

        blob = arrays.pop(_LEARNED)
        _check(blob.dtype == np.uint8 and blob.ndim == 1, path, f"{_LEARNED} is not a byte string")
        try:
            objects = load_objects(blob)
        except ValueError as exc:
            raise ModelFileError(f"Model file {path} is invalid: {exc}.") from None
    return _restore(cls, params, _file_state(meta, arrays, objects, path), path)


def _file_state(meta: dict, arrays: dict[str, np.ndarray], objects: Mapping[str, Any] | None, path: Path) -> dict:
    """The fitted state of a format-2+ file from its members and learned pieces (every member read)."""
    used: set[str] = set()
    state = _unflatten_state(meta.get("state"), _STATE, arrays, objects, path, used)
    stored = {n for n in arrays if n.startswith(_STATE)} | set(objects or ())
    _check(stored <= used, path, f"unexpected state members {sorted(stored - used)}")
    return state


def _restore_classes_v1(arrays: dict[str, np.ndarray], dtype_name: Any, path: Path) -> np.ndarray:
    classes = arrays["classes_"]
    _check(classes.ndim == 1 and classes.shape[0] >= 2, path, "classes_ must list at least 2 classes")
    _check(classes.dtype.kind in "biufU", path, f"classes_ has dtype {classes.dtype}")
    if dtype_name == "object":
        _check(classes.dtype.kind == "U", path, "object classes must be stored as strings")
        return classes  # set_fitted_state takes text classes as a unicode array
    _check(dtype_name == classes.dtype.str, path, "classes_ dtype does not match the metadata")
    return classes


def _build_v1_nw(cls: type, params: dict, arrays: dict[str, np.ndarray], classes: np.ndarray, path: Path) -> Any:
    """Format 1 stored the training set: refit on it (public ``fit`` checks every value)."""
    X, labels = arrays.get("train_X"), arrays.get("train_labels")
    _check(X is not None and labels is not None and "bandwidths_" in arrays, path, "training arrays missing")
    _check(X.ndim == 2 and X.shape[0] >= 1 and X.dtype.kind == "f", path, "train_X must be a 2-D float array")
    _check(labels.shape == (X.shape[0],) and labels.dtype.kind in "iu", path, "train_labels must be one class index per row")
    _check(bool(np.all((labels >= 0) & (labels < classes.shape[0]))), path, "train_labels out of range")
    # every class must occur, or refitting would drop it
    _check(np.unique(labels).shape[0] == classes.shape[0], path, "a class has no training sample")
    weights = arrays.get("train_weights")
    if weights is not None:
        _check(weights.shape == (X.shape[0],) and weights.dtype.kind == "f", path, "train_weights must be one float per row")
    try:
        est = cls(**params).fit(X, classes[labels], sample_weight=weights)
    except (ValueError, TypeError) as exc:
        raise ModelFileError(f"Model file {path} is invalid: {exc}") from None
    stored_bw = arrays["bandwidths_"]
    _check(np.array_equal(est.classes_, classes)
           and np.allclose(est.class_prior_, arrays["class_prior_"], rtol=1e-12, atol=0.0),
           path, "refitting on the stored training data does not reproduce the stored classes and prior")
    _check(stored_bw.ndim == 1 and stored_bw.dtype.kind == "f", path, "bandwidths_ must be a 1-D float array")
    if not np.array_equal(est.get_fitted_state()["bandwidths_"], stored_bw):
        # A newer grid rule: keep the bandwidths the model was saved with (checked on the way in).
        est = _restore(cls, params, {**est.get_fitted_state(), "bandwidths_": stored_bw}, path)
    return est


def _build_v1_dyadic(cls: type, params: dict, arrays: dict[str, np.ndarray], classes: np.ndarray, d: int, path: Path) -> Any:
    """Format 1 stored the dyadic grid under its own names: map them onto the fitted state
    (without ``cell_weight_max_``, which ``set_fitted_state`` then bounds by ``√(Σ w²)``)."""
    need = ("cell_keys_", "cell_class_sums_", "cell_sq_sums_", "grid_low_", "grid_span_")
    _check(all(n in arrays for n in need), path, "grid arrays missing")
    state = {
        "classes_": classes,
        "class_prior_": arrays["class_prior_"],
        "n_features_in_": d,
        "grid_low": arrays["grid_low_"],
        "grid_span": arrays["grid_span_"],
        "cell_keys_": arrays["cell_keys_"],
        "cell_class_sums_": arrays["cell_class_sums_"],
        "cell_sq_sums_": arrays["cell_sq_sums_"],
    }
    return _restore(cls, params, state, path)


def _check_expected(model: Any, expected: Any, path: Path) -> None:
    if isinstance(model, TableModel):
        names: Sequence[str] | None = model.features
        n = len(model.features)
    else:
        fn = getattr(model, "feature_names_in_", None)
        names = None if fn is None else [str(f) for f in fn]
        n = int(model.n_features_in_)
    if isinstance(expected, numbers.Integral) and not isinstance(expected, bool):
        if int(expected) != n:
            raise ModelFileError(f"Model file {path} was fitted on {n} features, not the expected {int(expected)}.")
        return
    if isinstance(expected, str) or not isinstance(expected, (_SequenceABC, np.ndarray)):
        raise TypeError("expected_features must be a list of feature names or a number of features.")
    expected = [str(e) for e in expected]
    if names is None:
        raise ModelFileError(
            f"Model file {path} stores no feature names (fitted on a plain array), so it cannot be "
            f"checked against {expected}; pass the number of features ({n}) instead."
        )
    if list(names) != expected:
        missing = [e for e in expected if e not in names]
        extra = [x for x in names if x not in expected]
        detail = f"missing in the model: {missing}; only in the model: {extra}" if (missing or extra) else "same names, different order"
        raise ModelFileError(
            f"Model file {path} was fitted on features {list(names)}, not the expected {expected} ({detail})."
        )


def _read_verified(path: Path) -> tuple[dict, dict[str, np.ndarray], int]:
    """The metadata, arrays and format version of a model file whose checksum holds (nothing built)."""
    if not path.is_file():
        raise FileNotFoundError(f"Model file {path} does not exist (or is not a file).")
    try:
        arrays = _read_members(path)
    except (ModelFileError, PermissionError):
        raise
    except Exception as exc:
        # zipfile and numpy's .npy header parser raise a wide, version-dependent
        # range of errors on damaged bytes (BadZipFile, struct.error, zlib.error,
        # tokenize.TokenError, ...); every one of them means "not a valid file".
        raise ModelFileError(
            f"Model file {path} is not a readable nwbound model file (truncated or corrupt: {type(exc).__name__}: {exc})."
        ) from None
    if _META not in arrays:
        raise ModelFileError(f"Model file {path} has no nwbound metadata; it is not a nwbound model file.")
    raw = arrays.pop(_META)
    try:
        _check(raw.dtype == np.uint8 and raw.ndim == 1, path, "metadata is not a byte string")
        meta = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ModelFileError(f"Model file {path} has unreadable metadata ({exc}).") from None
    _check(isinstance(meta, dict), path, "metadata is not an object")
    if meta.get("format") != FORMAT_NAME:
        raise ModelFileError(f"Model file {path} is not a nwbound model file (format {meta.get('format')!r}).")
    version = meta.get("format_version")
    _check(_is_int(version) and version >= 1, path, "bad format_version")
    if version > FORMAT_VERSION:
        raise ModelFileError(
            f"Model file {path} uses format version {version}, newer than this nwbound supports "
            f"({FORMAT_VERSION}; written by nwbound {meta.get('nwbound_version')}). Upgrade nwbound to load it."
        )
    digest = meta.get("sha256")
    try:
        actual = _digest(arrays, meta)
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"Model file {path} has invalid metadata ({exc}).") from None
    if not isinstance(digest, str) or digest != actual:
        raise ModelFileError(
            f"Model file {path} fails its SHA-256 check: it was corrupted or edited after saving. "
            "Refusing to load it; re-create it with nwbound fit / save_model."
        )
    return meta, arrays, version


def stored_features(path: str | os.PathLike) -> list[str] | None:
    """The feature names a model file was fitted on, read without building the model.

    Cheap (no scikit-learn import, no check of the fitted state): for a
    command to refuse a table without the model's columns at once. The
    checksum is verified; everything else is left to :func:`load_model`.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    list of str or None
        The feature names in order; None for a model fitted on a plain array.

    Raises
    ------
    FileNotFoundError, ModelFileError
        As :func:`load_model` for a missing, corrupt or edited file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> import pandas as pd
    >>> from nwbound import DyadicClassifier
    >>> from nwbound.io import save_model
    >>> from nwbound.io.model_file import stored_features
    >>> X = pd.DataFrame({"a": [0.0, 0.1, 0.9, 1.0], "b": [0.0, 0.2, 1.0, 0.8]})
    >>> clf = DyadicClassifier(metric=None, resolution=1, lipschitz=1.0).fit(X, ["x", "x", "y", "y"])
    >>> stored_features(save_model(clf, pathlib.Path(tempfile.mkdtemp()) / "grid.npz"))
    ['a', 'b']
    """
    meta, arrays, _ = _read_verified(Path(path))
    pipeline = meta.get("pipeline")
    stored = arrays.get(_STATE + "feature_names_in_")
    if isinstance(pipeline, dict):
        names = pipeline.get("features")
    elif stored is not None and stored.dtype.kind == "U" and stored.ndim == 1:  # format 2
        names = stored.tolist()
    else:  # format 1
        names = meta.get("feature_names_in")
    if isinstance(names, list) and all(isinstance(n, str) for n in names):
        return names
    return None


def load_model(path: str | os.PathLike, *, expected_features: Sequence[str] | int | None = None,
               frozen: bool = False) -> Any:
    """Load a model written by :func:`~nwbound.io.save_model`; never runs code from the file.

    Every array and parameter in the file is treated as untrusted input: the
    estimator's ``set_fitted_state`` validates each one (the checksum only
    catches accidents, see the module docs), and ``n_jobs`` is capped to the
    cores of this machine.

    Parameters
    ----------
    path : str or path-like
    expected_features : sequence of str or int, optional
        Refuse the model unless it was fitted on exactly these feature names
        (in this order), or on this number of features.
    frozen : bool, default=False
        Where the file allows it (a regular :class:`~nwbound.NadarayaWatsonClassifier` on
        the host in float64, its learned spaces' frozen arrays stored: format 4 or 5), return a
        model that only predicts intervals (``predict_interval``; ``classes_``,
        ``n_features_in_``, the parameters), built from plain arrays without importing
        scikit-learn: the same intervals, for ``nwbound predict`` (see
        :mod:`nwbound.io._frozen`). Other files load as without it.

    Returns
    -------
    NadarayaWatsonClassifier, DyadicClassifier or TableModel
        Whatever was saved (``frozen``: a ``FrozenNadarayaWatson`` in its place where
        allowed); intervals are byte-identical to those of the saved model.

    Raises
    ------
    FileNotFoundError
        No such file.
    ModelFileError (a ValueError)
        Truncated or corrupt file, checksum mismatch (edited file), any
        invalid value (the message names it), a newer format version, an
        unknown estimator class, a learned piece of a type not on the trusted
        list, a pipeline whose ``features`` repeat a name or hold the ``target``,
        or a different feature set.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np
    >>> from nwbound import DyadicClassifier
    >>> from nwbound.io import load_model, save_model
    >>> X = np.array([[0.0, 0.0], [0.1, 0.2], [0.9, 1.0], [1.0, 0.8]])
    >>> clf = DyadicClassifier(metric=None, resolution=1, lipschitz=1.0).fit(X, ["a", "a", "b", "b"])
    >>> path = save_model(clf, pathlib.Path(tempfile.mkdtemp()) / "grid.npz")
    >>> load_model(path, expected_features=2).predict([[0.05, 0.1]]).tolist()
    ['a']
    """
    path = Path(path)
    meta, arrays, version = _read_verified(path)
    try:
        model = (_build_frozen(meta, arrays, version, path) if frozen else None) or _build(meta, arrays, version, path)
    except ModelFileError:
        raise
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise ModelFileError(f"Model file {path} is invalid: {exc}") from None
    if expected_features is not None:
        _check_expected(model, expected_features, path)
    return model


def _build(meta: dict, arrays: dict[str, np.ndarray], version: int, path: Path) -> Any:
    classes_by_name = _estimator_classes()
    name = meta.get("estimator")
    if name not in classes_by_name:
        raise ModelFileError(
            f"Model file {path} holds a {name!r}; this nwbound loads only {', '.join(classes_by_name)}."
        )
    cls = classes_by_name[name]
    n_features = meta.get("n_features_in")
    _check(_is_int(n_features) and n_features >= 1, path, "bad n_features_in")
    pipeline = meta.get("pipeline")
    allowed_extra = ({"param_bandwidth_grid"} | (_PIPELINE_ARRAYS if pipeline is not None else set()))
    params = _params_from_file(meta.get("params"), set(cls().get_params(deep=False)), name, arrays, path)
    if version == 1:
        own = _V1_NW_ARRAYS if name == "NadarayaWatsonClassifier" else _V1_DYADIC_ARRAYS
        _check(set(arrays) <= own | allowed_extra, path, f"unexpected arrays {sorted(set(arrays) - own - allowed_extra)}")
        _check("classes_" in arrays and "class_prior_" in arrays, path, "classes_ missing")
        classes = _restore_classes_v1(arrays, (meta.get("classes") or {}).get("dtype"), path)
        if name == "NadarayaWatsonClassifier":
            est = _build_v1_nw(cls, params, arrays, classes, path)
        else:
            est = _build_v1_dyadic(cls, params, arrays, classes, n_features, path)
        names = meta.get("feature_names_in")
        if names is not None:
            _check(isinstance(names, list) and len(names) == n_features and all(isinstance(s, str) for s in names),
                   path, "feature_names_in malformed")
            state = est.get_fitted_state()
            state["feature_names_in_"] = np.asarray(names, dtype=object)
            est = _restore(cls, params, state, path)
    else:
        _check_members(arrays, version, allowed_extra, path)
        est = _build_v2(cls, params, arrays, meta, path)
        check_frozen(est, meta, arrays)
    _check(int(est.n_features_in_) == n_features, path, "n_features_in does not match the fitted state")
    return _table_model(est, pipeline, arrays, n_features, path)


def _build_frozen(meta: dict, arrays: dict[str, np.ndarray], version: int, path: Path) -> Any:
    """:func:`load_model`'s ``frozen=True``: the model from plain arrays, or None where the file needs the
    full classifier (:func:`nwbound.estimators._frozen.serves`, or no frozen arrays for its learned space)."""
    from ..estimators._frozen import PARAMETERS, serves

    if meta.get("estimator") != "NadarayaWatsonClassifier" or version < 2:
        return None
    n_features = meta.get("n_features_in")
    _check(_is_int(n_features) and n_features >= 1, path, "bad n_features_in")
    params = _params_from_file(meta.get("params"), set(PARAMETERS), "NadarayaWatsonClassifier", arrays, path)
    if set(params) != set(PARAMETERS) or not serves(params) or (params["metric"] is not None and "frozen" not in meta):
        return None
    pipeline = meta.get("pipeline")
    _check_members(arrays, version, {"param_bandwidth_grid"} | (_PIPELINE_ARRAYS if pipeline is not None else set()), path)
    arrays = {k: v for k, v in arrays.items() if k != _LEARNED}  # the skops dump: never read on this route
    kinds = meta.get("state")
    models = kinds.get(_MODELS) if isinstance(kinds, dict) else None
    first = models[0] if isinstance(models, list) and models and isinstance(models[0], dict) else kinds
    chosen = isinstance(first, dict) and first.get("lipschitz_report_") == "object"
    objects = {name: None for name in _object_members(kinds, _STATE)}  # the learned pieces: left out
    state = _file_state(meta, arrays, objects, path)
    est = frozen_model(meta, arrays, params, state, n_features, chosen)
    _check(int(est.n_features_in_) == n_features, path, "n_features_in does not match the fitted state")
    return _table_model(est, pipeline, arrays, n_features, path)


def _object_members(kinds: Any, prefix: str) -> list[str]:
    """The member names of a state's entries of kind ``"object"`` (the learned pieces)."""
    subs = kinds.get(_MODELS) if isinstance(kinds, dict) else None
    return ([] if not isinstance(kinds, dict) else [prefix + key for key, kind in kinds.items() if kind == "object"]) + [
        name for k, sub in enumerate(subs if isinstance(subs, list) else []) for name in _object_members(sub, f"{prefix}cross{k}__")]


def _check_members(arrays: dict[str, np.ndarray], version: int, allowed_extra: set[str], path: Path) -> None:
    """Format 2+: no member beyond the state, the learned pieces (3+), their frozen arrays (4) and ``allowed_extra``."""
    unexpected = {n for n in arrays if not n.startswith(_STATE)} - allowed_extra - (
        {_LEARNED} if version >= 3 else set()) - (frozen_members(arrays) if version >= 4 else set())
    _check(not unexpected, path, f"unexpected arrays {sorted(unexpected)}")


def _table_model(est: Any, pipeline: Any, arrays: dict[str, np.ndarray], n_features: int, path: Path) -> Any:
    """``est`` alone, or in the :class:`TableModel` of the file's ``pipeline`` entry (checked)."""
    if pipeline is None:
        return est
    _check(isinstance(pipeline, dict), path, "pipeline is not an object")
    features = pipeline.get("features")
    _check(isinstance(features, list) and len(features) == n_features and all(isinstance(s, str) for s in features),
           path, "pipeline features malformed")
    scale = pipeline.get("scale")
    _check(scale in SCALE_METHODS, path, f"unknown scaling {scale!r}")
    scaler = None
    if scale != "none":
        _check("scaler_shift" in arrays and "scaler_scale" in arrays, path, "scaler arrays missing")
        scaler = FeatureScaler(scale, arrays["scaler_shift"], arrays["scaler_scale"])
        _check(scaler.shift.shape == (n_features,), path, "scaler arrays do not match the features")
    else:
        _check(not (_PIPELINE_ARRAYS & set(arrays)), path, "scaler arrays stored without a scaling")
    for key in ("lipschitz", "margin"):
        v = pipeline.get(key)
        _check(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0),
               path, f"pipeline {key} must be null or a finite number > 0")
    target = pipeline.get("target")
    _check(target is None or isinstance(target, str), path, "pipeline target malformed")
    id_columns = pipeline.get("id_columns", [])  # absent in files written before it was recorded
    _check(isinstance(id_columns, list) and all(isinstance(c, str) for c in id_columns), path,
           "pipeline id_columns malformed")
    try:  # an edited file: a feature named twice, the target as a feature (issue 32, finding 4)
        check_table_columns(features, target, id_columns, field="pipeline.")
    except ValueError as exc:
        raise ModelFileError(f"Model file {path} is invalid: {exc}") from None
    return TableModel(
        estimator=est,
        features=tuple(features),
        scaler=scaler,
        target=target,
        lipschitz=pipeline.get("lipschitz"),
        margin=pipeline.get("margin"),
        id_columns=tuple(id_columns),
    )
