"""Safe model files: one ``.npz`` of plain arrays plus JSON metadata, never pickle.

Format (``nwbound-model``, version 1)
-------------------------------------
A model file is an ordinary NumPy ``.npz`` archive (a ZIP of ``.npy`` members,
stored uncompressed exactly as :func:`numpy.savez` writes them, with fixed
timestamps so that the same model always gives the same bytes). Every member
is a plain numeric, boolean, bytes or unicode array; no member may hold Python
objects, so the file is read with ``allow_pickle=False`` and loading never
executes code. Members:

``__metadata__``
    UTF-8 JSON (as a ``uint8`` array) with ``format`` (``"nwbound-model"``),
    ``format_version``, ``nwbound_version``, ``estimator`` (class name),
    ``params`` (``get_params()``; the kernel must be a name), ``classes``
    (``dtype``: the dtype of ``classes_``, ints/bools/floats/strings),
    ``feature_names_in`` (list or null), ``n_features_in``, ``pipeline``
    (null, or the feature columns, target name, scaling method and the
    assumption as given in raw units — see :class:`TableModel`), ``arrays``
    (name → dtype and shape) and ``sha256``.
``classes_``, ``class_prior_``
    The fitted classes and their prior.
Nadaraya-Watson classifiers
    ``train_X``, ``train_labels`` (class indices), optionally ``train_weights``
    and ``param_bandwidth_grid``, and ``bandwidths_`` (checked after the
    refit). The estimator is rebuilt by ``fit`` on the stored training data,
    which also rebuilds the neighbour index of the localized classifier (the
    index itself is never serialised). Exact indexes give byte-identical
    predictions after loading; an approximate index (``"hnsw"``) is rebuilt
    with the stored ``random_state`` and matches when its build is
    deterministic.
Dyadic classifiers
    ``cell_keys_``, ``cell_class_sums_``, ``cell_sq_sums_``, ``grid_low_``,
    ``grid_span_`` (the fitted hash grid).
Scaling pipeline
    ``scaler_shift``, ``scaler_scale`` (``x_scaled = (x − shift)·scale``).

``sha256`` is the SHA-256 of the array payload — for each member in sorted
name order: its name, dtype, shape and raw bytes — followed by the canonical
JSON of the metadata without the ``sha256`` field. A mismatch means the file
was corrupted or edited and it is refused.

Pickle
------
The estimators remain picklable for scikit-learn workflows (``joblib.dump``,
``pickle``); unpickling runs code, so only unpickle files you trust. Use
:func:`save_model`/:func:`load_model` to exchange models.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import numbers
import os
import re
import tempfile
import zipfile
from collections.abc import Sequence as _SequenceABC
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

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
FORMAT_VERSION = 1
SCALE_METHODS = ("none", "minmax", "standard")

_META = "__metadata__"
# Members each estimator may hold (anything else makes the file invalid).
_NW_ARRAYS = {"classes_", "class_prior_", "train_X", "train_labels", "train_weights", "bandwidths_", "param_bandwidth_grid"}
_DYADIC_ARRAYS = {"classes_", "class_prior_", "cell_keys_", "cell_class_sums_", "cell_sq_sums_", "grid_low_", "grid_span_"}
_PIPELINE_ARRAYS = {"scaler_shift", "scaler_scale"}
# Fixed ZIP timestamp: identical models give byte-identical files.
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


class ModelFileError(ValueError):
    """A model file that cannot be loaded (corrupt, edited, newer, wrong model)."""


# ----------------------------------------------------------------------------------------------
# The scaling pipeline
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class FeatureScaler:
    """Per-feature affine scaling ``x_scaled = (x − shift)·scale``.

    Parameters
    ----------
    method : {"minmax", "standard"}
        ``"minmax"``: ``shift = min``, ``scale = 1/range`` (maps the training
        data to [0, 1]); ``"standard"``: ``shift = mean``, ``scale = 1/std``
        (population std). A constant feature gets ``scale = 1``.
    shift, scale : ndarray of shape (n_features,)
    """

    method: str
    shift: np.ndarray
    scale: np.ndarray

    def __post_init__(self) -> None:
        if self.method not in ("minmax", "standard"):
            raise ValueError(f"FeatureScaler method must be 'minmax' or 'standard', got {self.method!r}.")
        shift = np.asarray(self.shift, dtype=np.float64)
        scale = np.asarray(self.scale, dtype=np.float64)
        if shift.ndim != 1 or scale.shape != shift.shape:
            raise ValueError("FeatureScaler shift and scale must be 1-D arrays of the same length.")
        if not (np.all(np.isfinite(shift)) and np.all(np.isfinite(scale)) and np.all(scale > 0)):
            raise ValueError("FeatureScaler shift must be finite and scale finite and > 0.")
        object.__setattr__(self, "shift", shift)
        object.__setattr__(self, "scale", scale)

    @classmethod
    def fit(cls, X: np.ndarray, method: str) -> "FeatureScaler":
        """Learn the scaling of the training features ``X`` (n, d)."""
        X = np.asarray(X, dtype=np.float64)
        if method == "minmax":
            shift = X.min(axis=0)
            spread = X.max(axis=0) - shift
        elif method == "standard":
            shift = X.mean(axis=0)
            spread = X.std(axis=0)
        else:
            raise ValueError(f"scale must be one of {', '.join(SCALE_METHODS)}, got {method!r}.")
        # A constant feature carries no scale; leave it unscaled (s_j = 1 keeps
        # the restated L and γ valid, see nwbound.scaling).
        scale = 1.0 / np.where(spread > 0, spread, 1.0)
        return cls(method=method, shift=shift, scale=scale)

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Scale ``X`` (n, d) — elementwise, so the result never depends on chunking."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.shift.shape[0]:
            raise ValueError(f"FeatureScaler expects {self.shift.shape[0]} features, got shape {X.shape}.")
        return (X - self.shift) * self.scale


@dataclass(eq=False)
class TableModel:
    """A fitted classifier together with how to build its inputs from a table.

    Parameters
    ----------
    estimator : NadarayaWatsonClassifier or DyadicClassifier
        Fitted on the *scaled* features.
    features : tuple of str
        Feature columns, in order.
    scaler : FeatureScaler or None
        Applied to the raw features before the estimator.
    target : str or None
        Name of the target column in the training table.
    lipschitz, margin : float or None
        The assumption as the user gave it, in raw feature units (the
        estimator holds the restated value in scaled units).
    """

    estimator: Any
    features: tuple[str, ...]
    scaler: FeatureScaler | None = None
    target: str | None = None
    lipschitz: float | None = None
    margin: float | None = None

    @classmethod
    def fit(
        cls,
        estimator: Any,
        X: np.ndarray,
        y: np.ndarray,
        *,
        features: Sequence[str],
        scale: str = "none",
        lipschitz: float | None = None,
        margin: float | None = None,
        target: str | None = None,
        sample_weight: np.ndarray | None = None,
    ) -> "TableModel":
        """Scale the raw features, restate L/γ in scaled units and fit a copy of ``estimator``.

        Parameters
        ----------
        estimator : unfitted NadarayaWatsonClassifier or DyadicClassifier
            Its ``lipschitz``/``margin`` are replaced by the restated values.
        X : ndarray of shape (n_samples, n_features)
            Raw features.
        y : ndarray of shape (n_samples,)
        features : sequence of str
            Column names of ``X``.
        scale : {"none", "minmax", "standard"}
        lipschitz, margin : float or None
            The assumption in the units of the raw features (at most one).
            When both are None the estimator's own ``lipschitz``/``margin``
            are kept as they are (i.e. they must already be in scaled units).
        sample_weight : ndarray of shape (n_samples,), optional
        """
        from sklearn.base import clone

        from ..scaling import restate_lipschitz, restate_margin

        features = tuple(str(f) for f in features)
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(features):
            raise ValueError(f"X has shape {X.shape} but {len(features)} feature names were given.")
        if lipschitz is not None and margin is not None:
            raise ValueError("Give lipschitz or margin, not both.")
        if scale not in SCALE_METHODS:
            raise ValueError(f"scale must be one of {', '.join(SCALE_METHODS)}, got {scale!r}.")
        scaler = None if scale == "none" else FeatureScaler.fit(X, scale)
        est = clone(estimator)
        if lipschitz is not None or margin is not None:
            # L, γ are properties of p in a metric: restate them for the scaled space.
            scales = None if scaler is None else scaler.scale
            est.set_params(
                lipschitz=None if lipschitz is None else (lipschitz if scales is None else restate_lipschitz(lipschitz, scales)),
                margin=None if margin is None else (margin if scales is None else restate_margin(margin, scales)),
            )
        est.fit(X if scaler is None else scaler.transform(X), y, sample_weight=sample_weight)
        return cls(
            estimator=est,
            features=features,
            scaler=scaler,
            target=target,
            lipschitz=None if lipschitz is None else float(lipschitz),
            margin=None if margin is None else float(margin),
        )

    @property
    def classes_(self) -> np.ndarray:
        return self.estimator.classes_

    @property
    def n_features_in_(self) -> int:
        return len(self.features)

    def transform(self, X) -> np.ndarray:
        """Raw features (n, d) → the estimator's inputs."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(self.features):
            raise ValueError(f"Expected {len(self.features)} features ({', '.join(self.features)}), got shape {X.shape}.")
        return X if self.scaler is None else self.scaler.transform(X)

    def predict_interval(self, X):
        """:meth:`predict_interval` of the estimator on the scaled features."""
        return self.estimator.predict_interval(self.transform(X))

    def predict_proba(self, X) -> np.ndarray:
        return self.estimator.predict_proba(self.transform(X))

    def predict(self, X) -> np.ndarray:
        return self.estimator.predict(self.transform(X))


# ----------------------------------------------------------------------------------------------
# Saving
# ----------------------------------------------------------------------------------------------
def _estimator_classes() -> dict[str, type]:
    from ..estimators import DyadicClassifier, NadarayaWatsonClassifier

    return {"NadarayaWatsonClassifier": NadarayaWatsonClassifier, "DyadicClassifier": DyadicClassifier}


def _json_value(value: Any, name: str) -> Any:
    """A parameter value as plain JSON (refuse anything that would need code to rebuild)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"Cannot save parameter {name}={value!r}: only finite numbers can be stored.")
        return value
    if isinstance(value, dict):
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


def _classes_for_file(classes: np.ndarray) -> tuple[str, np.ndarray]:
    classes = np.asarray(classes)
    if classes.dtype.kind in "biuf":
        return classes.dtype.str, classes
    if classes.dtype.kind == "U":
        return classes.dtype.str, classes
    if classes.dtype.kind == "O" and all(isinstance(c, str) for c in classes):
        return "object", np.asarray(classes.tolist(), dtype=str)
    raise TypeError(
        f"Cannot save classes_ of dtype {classes.dtype} ({classes[:3].tolist()}...): a model file "
        "stores integer, boolean, float or string class labels only."
    )


def _estimator_payload(est: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    from ..estimators import DyadicClassifier, NadarayaWatsonClassifier

    cls_name = type(est).__name__
    if type(est) not in (NadarayaWatsonClassifier, DyadicClassifier):
        raise TypeError(
            f"save_model supports NadarayaWatsonClassifier and DyadicClassifier (optionally in a "
            f"TableModel), got {type(est).__name__}. Use pickle for other models (trusted input only)."
        )
    if not getattr(est, "_fit_complete", False):
        raise ValueError(f"This {cls_name} is not fitted yet; call fit before save_model.")
    params, arrays = _params_for_file(est)
    classes_dtype, classes = _classes_for_file(est.classes_)
    arrays["classes_"] = classes
    arrays["class_prior_"] = np.asarray(est.class_prior_, dtype=np.float64)
    if isinstance(est, NadarayaWatsonClassifier):
        train = est._train
        arrays["train_X"] = np.ascontiguousarray(train.X)
        arrays["train_labels"] = np.asarray(train.labels, dtype=np.int64)
        if train.weights is not None:
            arrays["train_weights"] = np.asarray(train.weights)
        arrays["bandwidths_"] = np.asarray(est.bandwidths_, dtype=np.float64)
    else:
        arrays["cell_keys_"] = est.cell_keys_
        arrays["cell_class_sums_"] = est.cell_class_sums_
        arrays["cell_sq_sums_"] = est.cell_sq_sums_
        arrays["grid_low_"] = np.asarray(est._low, dtype=np.float64)
        arrays["grid_span_"] = np.asarray(est._span, dtype=np.float64)
    names = getattr(est, "feature_names_in_", None)
    meta = {
        "estimator": cls_name,
        "params": params,
        "classes": {"dtype": classes_dtype},
        "feature_names_in": None if names is None else [str(n) for n in names],
        "n_features_in": int(est.n_features_in_),
    }
    return meta, arrays


def _digest(arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> str:
    """SHA-256 of the arrays (sorted by name: name, dtype, shape, bytes) and the metadata."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        arr = np.ascontiguousarray(arrays[name])
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
                np.lib.format.write_array(member, np.ascontiguousarray(arrays[name]), allow_pickle=False)


def save_model(model: Any, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write a fitted model to a safe ``.npz`` model file (see the module docs for the format).

    Parameters
    ----------
    model : NadarayaWatsonClassifier, DyadicClassifier or TableModel
        A fitted estimator (regular or localized NW, or dyadic), optionally
        with its scaling pipeline.
    path : str or path-like
        Target file (``.npz`` recommended). Written to a temporary file in the
        same folder, then renamed into place, so a crash never leaves a
        truncated model.
    overwrite : bool, default=False
        Replace an existing file. Without it an existing file is left alone.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False.
    TypeError
        A callable kernel, an unsupported estimator or unsupported classes.
    ValueError
        An unfitted estimator.
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
    header = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION, "nwbound_version": __version__}
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


def _params_from_file(meta_params: Any, cls: type, arrays: dict[str, np.ndarray], path: Path) -> dict[str, Any]:
    _check(isinstance(meta_params, dict), path, "params is not an object")
    allowed = set(cls().get_params(deep=False))
    unknown = sorted(set(meta_params) - allowed)
    if unknown:
        raise ModelFileError(
            f"Model file {path} sets parameters {unknown} that this nwbound's {cls.__name__} does not "
            "have; it was probably written by another nwbound version."
        )
    params = dict(meta_params)
    if params.get("bandwidth_grid") is not None:
        _check("param_bandwidth_grid" in arrays, path, "bandwidth_grid array missing")
        params["bandwidth_grid"] = arrays["param_bandwidth_grid"]
    if "kernel" in params:
        _check(isinstance(params["kernel"], str), path, "the kernel must be stored by name")
    return params


def _restore_classes(arrays: dict[str, np.ndarray], dtype_name: Any, path: Path) -> np.ndarray:
    classes = arrays["classes_"]
    _check(classes.ndim == 1 and classes.shape[0] >= 2, path, "classes_ must list at least 2 classes")
    _check(classes.dtype.kind in "biufU", path, f"classes_ has dtype {classes.dtype}")
    if dtype_name == "object":
        _check(classes.dtype.kind == "U", path, "object classes must be stored as strings")
        return np.asarray(classes.tolist(), dtype=object)
    _check(dtype_name == classes.dtype.str, path, "classes_ dtype does not match the metadata")
    return classes


def _build_nw(cls: type, params: dict, arrays: dict[str, np.ndarray], classes: np.ndarray, meta: dict, path: Path) -> Any:
    X, labels = arrays.get("train_X"), arrays.get("train_labels")
    _check(X is not None and labels is not None and "bandwidths_" in arrays, path, "training arrays missing")
    _check(X.ndim == 2 and X.shape[0] >= 1 and X.dtype.kind == "f", path, "train_X must be a 2-D float array")
    _check(X.shape[1] == meta["n_features_in"], path, "train_X does not match n_features_in")
    _check(labels.shape == (X.shape[0],) and labels.dtype.kind in "iu", path, "train_labels must be one class index per row")
    _check(bool(np.all((labels >= 0) & (labels < classes.shape[0]))), path, "train_labels out of range")
    # every class must occur, or refitting would drop it
    _check(np.unique(labels).shape[0] == classes.shape[0], path, "a class has no training sample")
    weights = arrays.get("train_weights")
    if weights is not None:
        _check(weights.shape == (X.shape[0],) and weights.dtype.kind == "f", path, "train_weights must be one float per row")
    est = cls(**params)
    # Refit on the stored training set: rebuilds every derived array and the
    # neighbour index exactly as the original fit did.
    est.fit(X, classes[labels], sample_weight=weights)
    same = (
        np.array_equal(est.classes_, classes)
        and est.bandwidths_.shape == arrays["bandwidths_"].shape
        and np.array_equal(est.bandwidths_, arrays["bandwidths_"])
        and np.array_equal(est.class_prior_, arrays["class_prior_"])
    )
    _check(same, path, "refitting on the stored training data does not reproduce the stored model")
    return est


def _build_dyadic(cls: type, params: dict, arrays: dict[str, np.ndarray], classes: np.ndarray, meta: dict, path: Path) -> Any:
    from .._validation import check_int_range

    need = ("cell_keys_", "cell_class_sums_", "cell_sq_sums_", "grid_low_", "grid_span_")
    _check(all(n in arrays for n in need), path, "grid arrays missing")
    d = meta["n_features_in"]
    keys, sums, sq = arrays["cell_keys_"], arrays["cell_class_sums_"], arrays["cell_sq_sums_"]
    low, span = arrays["grid_low_"], arrays["grid_span_"]
    n_cells = keys.shape[0] if keys.ndim == 1 else -1
    _check(keys.ndim == 1 and keys.dtype == np.dtype(f"S{8 * d + 1}") and n_cells >= 1, path, "cell_keys_ malformed")
    _check(bool(np.all(keys[1:] > keys[:-1])), path, "cell_keys_ must be sorted and unique")
    _check(sums.shape == (n_cells, classes.shape[0]) and sums.dtype == np.float64, path, "cell_class_sums_ malformed")
    _check(sq.shape == (n_cells,) and sq.dtype == np.float64, path, "cell_sq_sums_ malformed")
    _check(low.shape == (d,) and span.shape == (d,) and low.dtype == span.dtype == np.float64, path, "grid box malformed")
    _check(bool(np.all(np.isfinite(low)) and np.all(np.isfinite(span)) and np.all(span > 0)), path, "grid box not finite")
    _check(bool(np.all(np.isfinite(sums)) and np.all(sums >= 0) and np.all(np.isfinite(sq))), path, "cell sums malformed")
    prior = arrays["class_prior_"]
    _check(prior.shape == classes.shape and prior.dtype == np.float64, path, "class_prior_ malformed")
    est = cls(**params)
    m = check_int_range(est.resolution, "resolution", 1, 30)
    # Restore the fitted state the way fit sets it.
    est.classes_ = classes
    est.class_prior_ = prior
    est._fit_dtype = np.dtype(np.float64)
    est._validate_bound_params(bound_required=False)
    est._low, est._span, est._n_side = low, span, 2**m
    est.cell_diameter_ = float(np.linalg.norm(span) / 2**m)
    est.cell_keys_, est.cell_class_sums_, est.cell_sq_sums_ = keys, sums, sq
    est.n_cells_ = n_cells
    est.n_features_in_ = d
    est._fit_complete = True
    return est


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


def load_model(path: str | os.PathLike, *, expected_features: Sequence[str] | int | None = None) -> Any:
    """Load a model written by :func:`save_model`; never runs code from the file.

    Parameters
    ----------
    path : str or path-like
    expected_features : sequence of str or int, optional
        Refuse the model unless it was fitted on exactly these feature names
        (in this order), or on this number of features.

    Returns
    -------
    NadarayaWatsonClassifier, DyadicClassifier or TableModel
        Whatever was saved; predictions and intervals are byte-identical to
        those of the saved model.

    Raises
    ------
    FileNotFoundError
        No such file.
    ModelFileError (a ValueError)
        Truncated or corrupt file, checksum mismatch (edited file), a newer
        format version, an unknown estimator class or a different feature set.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Model file {path} does not exist (or is not a file).")
    try:
        arrays = _read_members(path)
    except ModelFileError:
        raise
    except PermissionError:
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
    _check(isinstance(version, int) and not isinstance(version, bool) and version >= 1, path, "bad format_version")
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
    try:
        model = _build(meta, arrays, path)
    except ModelFileError:
        raise
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise ModelFileError(f"Model file {path} is invalid: {exc}") from None
    if expected_features is not None:
        _check_expected(model, expected_features, path)
    return model


def _build(meta: dict, arrays: dict[str, np.ndarray], path: Path) -> Any:
    classes_by_name = _estimator_classes()
    name = meta.get("estimator")
    if name not in classes_by_name:
        raise ModelFileError(
            f"Model file {path} holds a {name!r}; this nwbound loads only {', '.join(classes_by_name)}."
        )
    cls = classes_by_name[name]
    n_features = meta.get("n_features_in")
    _check(isinstance(n_features, int) and not isinstance(n_features, bool) and n_features >= 1, path, "bad n_features_in")
    pipeline = meta.get("pipeline")
    allowed = (_NW_ARRAYS if name == "NadarayaWatsonClassifier" else _DYADIC_ARRAYS) | (
        _PIPELINE_ARRAYS if pipeline is not None else set()
    )
    _check(set(arrays) <= allowed, path, f"unexpected arrays {sorted(set(arrays) - allowed)}")
    _check("classes_" in arrays and "class_prior_" in arrays, path, "classes_ missing")
    classes = _restore_classes(arrays, (meta.get("classes") or {}).get("dtype"), path)
    params = _params_from_file(meta.get("params"), cls, arrays, path)
    build = _build_nw if name == "NadarayaWatsonClassifier" else _build_dyadic
    est = build(cls, params, arrays, classes, meta, path)
    names = meta.get("feature_names_in")
    if names is not None:
        _check(isinstance(names, list) and len(names) == n_features and all(isinstance(s, str) for s in names),
               path, "feature_names_in malformed")
        est.feature_names_in_ = np.asarray(names, dtype=object)
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
    for key in ("lipschitz", "margin"):
        v = pipeline.get(key)
        _check(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)), path, f"pipeline {key} malformed")
    target = pipeline.get("target")
    _check(target is None or isinstance(target, str), path, "pipeline target malformed")
    return TableModel(
        estimator=est,
        features=tuple(features),
        scaler=scaler,
        target=target,
        lipschitz=pipeline.get("lipschitz"),
        margin=pipeline.get("margin"),
    )
