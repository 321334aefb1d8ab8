"""Queries and results across array namespaces, under scikit-learn's ``array_api_dispatch``.

:func:`queries_on_host` (the queries for the host code, and the function that puts a result where
they came from), :func:`validate_queries` (checked in their own namespace with ``keep_namespace``:
the ``device=`` path, where nothing crosses to the host but the checks' scalar answers) and
:func:`training_data_on_host` (``fit``'s arrays as NumPy). Without ``device=`` (and for the dyadic
classifier) the queries make one round trip.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import numpy as np
import sklearn
from sklearn.utils.validation import validate_data

from .._numerics import to_feature_unit
from .._validation import numeric_features
from .._result import PredictionInterval
from ..engine import compat, to_host

__all__ = ["queries_on_host", "training_data_on_host", "validate_queries"]


def queries_on_host(X: Any, *, keep_on_device: bool = False) -> tuple[Any, Callable[[Any], Any]]:
    """``X`` for the host code, and the function that puts a result where ``X`` came from.

    Under scikit-learn's ``array_api_dispatch`` (``sklearn.set_config(array_api_dispatch=True)``
    or ``sklearn.config_context(array_api_dispatch=True)``), with queries ``X`` that are a
    non-NumPy array-API array (PyTorch, CuPy, ``array_api_strict``, ...): a NumPy copy of ``X``
    (one host copy), or with ``keep_on_device`` ``X`` itself (an estimator with ``device=``: it
    validates and computes on ``X`` where it lives, :func:`validate_queries`), and a
    function that moves every numeric array of a result — an array, a
    :class:`~nwbound.PredictionInterval` or a dict of them — to ``X``'s namespace and device (as
    scikit-learn's ``move_to``); non-numeric arrays (string class labels) stay NumPy. Otherwise
    (dispatch off, the default, or NumPy / list queries): ``X`` itself and the identity.

    A helper called at the start and the returns of ``predict``, ``predict_proba`` and
    ``predict_interval``.

    Raises
    ------
    ValueError
        When ``X``'s device has no float64 (the bounds are float64: rounding them to float32 would
        move them inwards).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.estimators._dispatch import queries_on_host
    >>> X, restore = queries_on_host(np.zeros((1, 3)))  # NumPy in: unchanged, NumPy out
    >>> restore(np.full((1, 2), 0.5)).tolist()
    [[0.5, 0.5]]
    """
    target = _dispatch_target(X)
    if target is None:
        return X, _same
    return (X if keep_on_device else to_host(X)), functools.partial(_to_namespace, xp=target[0], dev=target[1])


def training_data_on_host(*arrays: Any) -> tuple[Any, ...]:
    """``fit``'s arrays (``X``, ``y``, ``sample_weight``) as NumPy where ``array_api_dispatch`` hands
    them in another array-API namespace (PyTorch, CuPy, ``array_api_strict``); others unchanged.

    The training set lives on the host (with ``device=`` it is copied to the device once, at the
    first prediction), so a fit under dispatch takes one host copy of what it is given.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.estimators._dispatch import training_data_on_host
    >>> X, y, w = training_data_on_host(np.zeros((2, 1)), [0, 1], None)  # dispatch off: unchanged
    >>> y, w
    ([0, 1], None)
    """
    return tuple(to_host(a) if _is_dispatched(a) else a for a in arrays)


def validate_queries(estimator: Any, X: Any, dtype: Any, *, keep_namespace: bool = False, unit: float = 1.0) -> Any:
    """``estimator``'s checked queries in ``dtype`` (the fit dtype): NumPy, or in their own namespace.

    scikit-learn's ``validate_data`` (2-D, ``n_features_in_``, feature names, finite values, real
    numbers) in every case. ``array_api_dispatch`` queries (non-NumPy array-API arrays while
    dispatch is on) are checked in their own namespace and cast there with ``keep_namespace`` (the
    ``device=`` path: nothing crosses to the host but the checks' scalar answers); without it
    they are copied to the host first (the host engines, and the public methods that return
    NumPy: ``kernel_statistics``, ``kneighbors``, ``bandwidth_ranking``). The queries come back
    divided by ``unit`` (the fit's :func:`~nwbound._numerics.feature_unit`, a power of two) before
    the cast; a value ``dtype`` cannot hold then raises a ValueError naming the dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.estimators._dispatch import validate_queries
    >>> clf = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale").fit([[0.0], [1.0]], [0, 1])
    >>> validate_queries(clf, [[0.5]], np.float64).dtype
    dtype('float64')
    """
    if _is_dispatched(X):
        if keep_namespace:
            xp = compat().array_namespace(X)
            want = xp.float32 if np.dtype(dtype) == np.float32 else xp.float64
            # One read answers every value check: X finite and X/unit within the fit dtype (the cast of
            # a value that is not finite is not finite); where it fails, the checks again, each with its
            # message. A plain PyTorch matrix skips scikit-learn's structural checks (shape, dtype and
            # feature names, about a millisecond of host time before the first kernel): it passes them.
            plain = _plain_torch_queries(estimator, X)
            Xv = X if plain else validate_data(estimator, X, reset=False, dtype=[xp.float64, xp.float32],
                                               ensure_all_finite=False)
            scaled = Xv if unit == 1.0 else Xv / unit  # exact: a power of two
            out = scaled if scaled.dtype == want else xp.astype(scaled, want)
            if not bool(xp.all(xp.isfinite(out))):  # the one read
                Xv = validate_data(estimator, X, reset=False, dtype=[xp.float64, xp.float32])  # NaN, inf: sklearn's
                to_feature_unit(to_host(Xv), unit, dtype)  # raises the explanation (float32 overflow)
            return out
        X = to_host(X)
    with numeric_features(X):
        X = validate_data(estimator, X, reset=False, dtype=[np.float64, np.float32])
    return to_feature_unit(X, unit, dtype)


def _plain_torch_queries(estimator: Any, X: Any) -> bool:
    """Whether ``X`` is a PyTorch float32/float64 matrix with at least one row and the fit's number of
    features, for an estimator fit without feature names: ``validate_data``'s structural checks
    would pass it unchanged (its value checks still run, :func:`validate_queries`)."""
    if not compat().is_torch_array(X) or getattr(estimator, "feature_names_in_", None) is not None:
        return False
    import torch

    return (X.ndim == 2 and X.shape[0] >= 1 and X.shape[1] == getattr(estimator, "n_features_in_", -1)
            and X.dtype in (torch.float32, torch.float64) and not X.requires_grad)


def _same(out: Any) -> Any:
    return out


def _is_dispatched(X: Any) -> bool:
    """Whether ``X`` is a non-NumPy array-API array while ``array_api_dispatch`` is on."""
    if isinstance(X, np.ndarray) or not sklearn.get_config().get("array_api_dispatch", False):
        return False
    aac = compat()
    return bool(aac.is_array_api_obj(X) and not aac.is_numpy_array(X))


def _dispatch_target(X: Any) -> tuple[Any, Any] | None:
    """``(namespace, device)`` of array-API queries under ``array_api_dispatch``, else None."""
    if not _is_dispatched(X):
        return None
    aac = compat()
    xp, dev = aac.array_namespace(X), aac.device(X)
    info = getattr(xp, "__array_namespace_info__", None)
    # PyTorch's info lists the same dtypes for every device, but MPS has no float64.
    no_float64 = aac.is_torch_namespace(xp) and getattr(dev, "type", "") == "mps"
    if no_float64 or (info is not None and "float64" not in info().dtypes(device=dev, kind="real floating")):
        raise ValueError(
            f"The queries' device {dev!r} has no float64, and the probabilities and bounds are float64 "
            "(float32 would round the bounds inwards): pass the queries on a device with float64 (e.g. the "
            "CPU), or turn scikit-learn's array_api_dispatch off to get NumPy results."
        )
    return xp, dev


def _to_namespace(out: Any, xp: Any, dev: Any) -> Any:
    if isinstance(out, dict):
        return {k: _to_namespace(v, xp, dev) for k, v in out.items()}
    if isinstance(out, PredictionInterval):
        return dataclasses.replace(out, **{
            f.name: _to_namespace(getattr(out, f.name), xp, dev) for f in dataclasses.fields(out)})
    if isinstance(out, np.ndarray) and out.dtype.kind in "biuf":
        return xp.asarray(np.ascontiguousarray(out), device=dev)
    return out  # None, and labels that are not numbers (no array-API dtype)
