"""Checks for fitted state that comes from outside (a model file, another process).

A fitted state restored by :meth:`set_fitted_state` is untrusted input: every
array is checked for its shape, kind, finiteness and range before an estimator
uses it, and each failure names the field.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

__all__ = ["state_array", "state_scalar", "state_classes", "state_space", "check_score_model", "state_point_model", "state_point_units", "state_point_report", "point_report_state", "POINT_JUDGED", "training_state", "positive_state_float", "cross_models", "check_one_model"]


def _missing(name: str) -> ValueError:
    return ValueError(f"Fitted state is missing {name!r}; it was not written by get_fitted_state().")


def state_array(
    state: Mapping[str, Any],
    name: str,
    *,
    ndim: int,
    kind: str = "f",
    shape: tuple[int | None, ...] | None = None,
    low: float | None = None,
    high: float | None = None,
    optional: bool = False,
) -> np.ndarray | None:
    """One array of a fitted state: ``ndim`` dimensions, dtype kind in ``kind``
    (``"f"`` float, ``"i"`` integer, ``"S"`` bytes, ``"U"`` text), the given
    ``shape`` (None entries are free), finite and within ``[low, high]``."""
    if name not in state or state[name] is None:
        if optional:
            return None
        raise _missing(name)
    value = np.asarray(state[name])
    if value.dtype.kind == "u" and "i" in kind:
        value = value.astype(np.int64)
    if value.dtype.kind not in kind or value.dtype.kind == "O":
        raise ValueError(f"Fitted state {name!r} must have dtype kind {kind!r}, got {value.dtype}.")
    if value.ndim != ndim:
        raise ValueError(f"Fitted state {name!r} must be {ndim}-dimensional, got shape {value.shape}.")
    if shape is not None:
        for axis, (got, want) in enumerate(zip(value.shape, shape)):
            if want is not None and got != want:
                raise ValueError(
                    f"Fitted state {name!r} has shape {value.shape}; axis {axis} must have length {want}."
                )
    if value.dtype.kind in "fi" and value.size:
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise ValueError(f"Fitted state {name!r} holds NaN or infinite values.")
        if low is not None and value.min() < low:
            raise ValueError(f"Fitted state {name!r} must be >= {low:g}, holds {value.min():g}.")
        if high is not None and value.max() > high:
            raise ValueError(f"Fitted state {name!r} must be <= {high:g}, holds {value.max():g}.")
    return value


def positive_state_float(state: Mapping[str, Any], name: str) -> float:
    """A finite float > 0 of a fitted state (the chosen L, the pilot L).

    Examples
    --------
    >>> from nwbound.estimators._state import positive_state_float
    >>> positive_state_float({"lipschitz_": 2}, "lipschitz_")
    2.0
    """
    value = state.get(name)
    if isinstance(value, bool) or not isinstance(value, (float, int, np.floating, np.integer)) or not (
            np.isfinite(value) and value > 0):
        raise ValueError(f"Fitted state {name!r} must be a finite number > 0, got {value!r}.")
    return float(value)


def state_scalar(state: Mapping[str, Any], name: str, *, low: int, high: int | None = None) -> int:
    """An integer scalar of a fitted state within ``[low, high]``."""
    if name not in state:
        raise _missing(name)
    value = np.asarray(state[name])
    if value.ndim != 0 or value.dtype.kind not in "iu":
        raise ValueError(f"Fitted state {name!r} must be an integer, got {state[name]!r}.")
    value = int(value)
    if value < low or (high is not None and value > high):
        raise ValueError(f"Fitted state {name!r} must be in [{low}, {high}], got {value}.")
    return value


def state_classes(state: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """``classes_`` (sorted, unique, ≥ 2) and ``class_prior_`` (a distribution over them)."""
    if "classes_" not in state:
        raise _missing("classes_")
    classes = np.asarray(state["classes_"])
    if classes.dtype.kind == "O" and not all(isinstance(c, str) for c in classes.ravel()):
        raise ValueError("Fitted state 'classes_' of object dtype must hold strings only.")
    if classes.ndim != 1 or classes.shape[0] < 2:
        raise ValueError(f"Fitted state 'classes_' must list at least 2 classes, got {classes!r}.")
    if np.unique(classes).shape[0] != classes.shape[0] or not np.all(classes[:-1] < classes[1:]):
        raise ValueError("Fitted state 'classes_' must be sorted and unique.")
    prior = state_array(state, "class_prior_", ndim=1, shape=(classes.shape[0],), low=0.0, high=1.0)
    if abs(float(prior.sum()) - 1.0) > 1e-9:
        raise ValueError(f"Fitted state 'class_prior_' must sum to 1, sums to {float(prior.sum()):.6g}.")
    return classes, prior.astype(np.float64)


def state_space(state: Mapping[str, Any], kind: str, n_features: int) -> Any:
    """The learned space ``metric_`` of a fitted state: a :class:`~nwbound.spaces.LearnedSpace` of
    ``kind`` over ``n_features`` inputs whose map is one ``metric=kind`` fits (none for
    ``"standard"``; for ``"auto"`` none, a gradient-boosting model or a standardised logistic
    regression, checked by :func:`check_score_model`), and whose output on a query has
    ``n_components_`` finite columns.

    Only its documented attributes are read (``kind``, ``n_features_in_``, ``n_components_``,
    ``map_``); the rest is checked by mapping one query.
    """
    from ..spaces import LearnedSpace

    space = state.get("metric_")
    if not isinstance(space, LearnedSpace):
        raise ValueError(
            f"Fitted state 'metric_' must be the LearnedSpace of metric={kind!r}, got {type(space).__name__}."
        )
    if getattr(space, "kind", None) != kind:
        raise ValueError(f"Fitted state 'metric_' is a space of kind {getattr(space, 'kind', None)!r}, not {kind!r}.")
    if getattr(space, "n_features_in_", None) != n_features:
        raise ValueError(
            f"Fitted state 'metric_' maps {getattr(space, 'n_features_in_', None)!r} features, not the state's {n_features}."
        )
    width = getattr(space, "n_components_", None)
    if not isinstance(width, (int, np.integer)) or isinstance(width, bool) or width < 1:
        raise ValueError(f"Fitted state 'metric_' has n_components_={width!r}; it must be an int >= 1.")
    check_score_model(getattr(space, "map_", None), kind, n_features)
    try:
        probe = np.asarray(space.transform(np.zeros((1, n_features))), dtype=np.float64)
    except (ValueError, TypeError, AttributeError, IndexError, KeyError) as exc:
        raise ValueError(f"Fitted state 'metric_' cannot map a query: {exc}") from None
    if np.shape(probe) != (1, int(width)) or not np.all(np.isfinite(probe)):
        raise ValueError(
            f"Fitted state 'metric_' maps a query to shape {np.shape(probe)}, not (1, {int(width)}) finite coordinates."
        )
    return space


def check_score_model(model: Any, kind: str, n_features: int, name: str = "metric_") -> None:
    """The map of a learned space from outside: one that ``metric=kind`` fits, able to predict safely.

    ``"standard"`` has none; ``"auto"`` none, a ``HistGradientBoostingClassifier`` or a
    ``Pipeline(StandardScaler, LogisticRegression)``. The trees of a gradient-boosting model are
    walked by compiled code that does not check indices, so every node's children must come
    after it and inside the tree (the walk ends) and every split must read a feature of the input
    (no categorical split, no binned prediction). ``name``: the state entry the messages name
    (``"point_model_"``: the point model of ``point_estimate="auto"``, the same kind of model).
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    if model is None:
        return
    if kind != "auto":
        raise ValueError(f"Fitted state {name!r} of kind {kind!r} must have no map, got {type(model).__name__}.")
    if type(model) is Pipeline:
        steps = [type(step) for _, step in getattr(model, "steps", ())]
        if steps != [StandardScaler, LogisticRegression]:
            raise ValueError(
                f"Fitted state {name!r} has a Pipeline of {[s.__name__ for s in steps]}; metric='auto' fits "
                "[StandardScaler, LogisticRegression]."
            )
        return
    if type(model) is not HistGradientBoostingClassifier:
        raise ValueError(
            f"Fitted state {name!r} has a map of type {type(model).__name__}; metric='auto' fits a "
            "HistGradientBoostingClassifier or a Pipeline(StandardScaler, LogisticRegression)."
        )
    _check_gradient_boosting(model, n_features, name)


def _check_gradient_boosting(model: Any, n_features: int, name: str) -> None:
    from sklearn.ensemble._hist_gradient_boosting.common import PREDICTOR_RECORD_DTYPE
    from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor

    from ..spaces import FrozenScoreMap

    def refuse(what: str) -> ValueError:
        return ValueError(f"Fitted state {name!r}: its gradient-boosting model {what}.")

    if getattr(model, "n_features_in_", None) != n_features:
        raise refuse(f"reads {getattr(model, 'n_features_in_', None)!r} features, not {n_features}")
    if getattr(model, "_in_fit", False) or getattr(model, "_preprocessor", None) is not None or \
            getattr(model, "is_categorical_", None) is not None:
        raise refuse("has categorical features or is marked as fitting; metric='auto' fits neither")
    categorical = np.asarray(getattr(getattr(model, "_bin_mapper", None), "is_categorical_", None))
    if categorical.shape != (n_features,) or categorical.dtype.kind not in "bu" or np.any(categorical):
        raise refuse("has categorical features (its bin mapper's is_categorical_)")
    n_trees = getattr(model, "n_trees_per_iteration_", None)
    predictors = getattr(model, "_predictors", None)
    if not isinstance(n_trees, int) or n_trees < 1 or not isinstance(predictors, list):
        raise refuse("has no trees")
    for iteration in predictors:
        if not isinstance(iteration, list) or len(iteration) != n_trees:
            raise refuse(f"has an iteration without {n_trees} trees")
        for tree in iteration:
            nodes = getattr(tree, "nodes", None)
            if type(tree) is not TreePredictor or not isinstance(nodes, np.ndarray) or nodes.dtype != PREDICTOR_RECORD_DTYPE \
                    or nodes.ndim != 1 or nodes.shape[0] < 1:
                raise refuse("has a tree that is not an array of nodes")
    try:  # the trees' structure: the one rule of their frozen arrays (children after their node, inside the tree…)
        FrozenScoreMap.from_estimator(model)
    except (TypeError, ValueError, AttributeError) as exc:
        raise refuse(f"has a tree whose nodes point outside it, backwards, at a missing feature or to a categorical "
                     f"split, or a non-finite value ({exc})") from None


def state_point_model(state: Mapping[str, Any], n_features: int, n_classes: int) -> tuple[Any, np.ndarray]:
    """The point model of ``point_estimate="auto"`` in a fitted state, checked: ``(point_model_,
    point_units)``. The model is one ``metric="auto"`` fits (:func:`check_score_model`) on every
    class (``classes_`` the class indices), the units the columns' powers of two.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from nwbound.estimators._state import state_point_model
    >>> state_point_model({"point_model_": LogisticRegression(), "point_units": np.ones(2)}, 2, 2)
    Traceback (most recent call last):
    ...
    ValueError: Fitted state 'point_model_' has a map of type LogisticRegression; metric='auto' fits a HistGradientBoostingClassifier or a Pipeline(StandardScaler, LogisticRegression).
    """
    model = state.get("point_model_")
    check_score_model(model, "auto", n_features, name="point_model_")
    if model is None:
        raise _missing("point_model_")
    units = state_point_units(state, n_features)
    classes = np.asarray(getattr(model, "classes_", None))
    if classes.shape != (n_classes,) or not np.array_equal(classes, np.arange(n_classes)):
        raise ValueError(f"Fitted state 'point_model_' must know the {n_classes} class indices 0..{n_classes - 1} "
                         f"(it is fitted on every training row), got classes_ {classes!r}.")
    try:
        probe = np.asarray(model.predict_proba(np.zeros((1, n_features))), dtype=np.float64)
    except (ValueError, TypeError, AttributeError, IndexError, KeyError) as exc:
        raise ValueError(f"Fitted state 'point_model_' cannot predict: {exc}") from None
    if probe.shape != (1, n_classes) or not np.all(np.isfinite(probe)):
        raise ValueError(f"Fitted state 'point_model_' predicts shape {probe.shape}, not (1, {n_classes}) finite "
                         "probabilities.")
    return model, units


#: What ``point_report_["judged"]`` may say: the space's own score model judged on the check rows
#: (it saw the map rows only), or the copy fitted on every row but the judging ones.
POINT_JUDGED = ("map rows", "all but the check rows")


def point_report_state(report: Mapping[str, Any] | None) -> dict[str, Any]:
    """``point_report_`` as fitted-state entries of plain numbers and text (empty without one).

    Examples
    --------
    >>> from nwbound.estimators._state import point_report_state
    >>> point_report_state({"n_rows": 40, "point_accuracy": 0.9, "nw_accuracy": 0.8, "used": True,
    ...                     "judged": "map rows"})["point_report_accuracies"].tolist()
    [0.9, 0.8]
    """
    if report is None:
        return {}
    return {"point_report_rows": int(report["n_rows"]),
            "point_report_accuracies": np.array([report["point_accuracy"], report["nw_accuracy"]], dtype=np.float64),
            "point_report_used": bool(report["used"]), "point_report_judged": str(report["judged"])}


def state_point_report(state: Mapping[str, Any], has_model: bool) -> dict[str, Any] | None:
    """``point_report_`` back from :func:`point_report_state`'s entries, checked (None where the
    state has none: no check rows judged, or a file written before it was stored). ``has_model``:
    whether the state holds a point model, which its report must say was used.

    Examples
    --------
    >>> from nwbound.estimators._state import point_report_state, state_point_report
    >>> report = {"n_rows": 40, "point_accuracy": 0.5, "nw_accuracy": 1.0, "used": False,
    ...           "judged": "all but the check rows"}
    >>> state_point_report(point_report_state(report), has_model=False) == report
    True
    >>> state_point_report(point_report_state(report), has_model=True)
    Traceback (most recent call last):
    ...
    ValueError: Fitted state 'point_report_used' is False, but the state holds a point model: a point model is kept only where its judge used it.
    """
    names = ("point_report_rows", "point_report_accuracies", "point_report_used", "point_report_judged")
    present = [name in state for name in names]
    if not any(present):
        return None
    if not all(present):
        raise _missing(names[present.index(False)])
    rows = state_scalar(state, "point_report_rows", low=1)
    accuracies = state_array(state, "point_report_accuracies", ndim=1, shape=(2,), low=0.0, high=1.0)
    used, judged = state["point_report_used"], state["point_report_judged"]
    if not isinstance(used, (bool, np.bool_)):
        raise ValueError(f"Fitted state 'point_report_used' must be a bool, got {used!r}.")
    if str(judged) not in POINT_JUDGED:
        raise ValueError(f"Fitted state 'point_report_judged' must be one of {POINT_JUDGED}, got {judged!r}.")
    if bool(used) != has_model:
        raise ValueError(f"Fitted state 'point_report_used' is {bool(used)}, but the state holds "
                         f"{'a' if has_model else 'no'} point model: a point model is kept only where its judge used it.")
    return {"n_rows": rows, "point_accuracy": float(accuracies[0]), "nw_accuracy": float(accuracies[1]),
            "used": bool(used), "judged": str(judged)}


def state_point_units(state: Mapping[str, Any], n_features: int) -> np.ndarray:
    """``point_units`` of a fitted state (the point model's column units), checked: powers of two.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.estimators._state import state_point_units
    >>> state_point_units({"point_units": np.array([0.5, 4.0])}, 2).tolist()
    [0.5, 4.0]
    >>> state_point_units({"point_units": np.array([3.0])}, 1)
    Traceback (most recent call last):
    ...
    ValueError: Fitted state 'point_units' must hold powers of two (the columns' units).
    """
    units = state_array(state, "point_units", ndim=1, shape=(n_features,), low=np.finfo(np.float64).tiny)
    if np.any(np.frexp(units)[0] != 0.5):
        raise ValueError("Fitted state 'point_units' must hold powers of two (the columns' units).")
    return units.astype(np.float64)


def training_state(state: Mapping[str, Any], *, dtype: Any, width: int, n_classes: int, bandwidth: Any,
                   shard: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray,
                                                 tuple[np.ndarray, np.ndarray], float]:
    """The kernel sums' training rows of one model's fitted state, checked: ``(X, labels, weights,
    bandwidths, (box_low, box_high), feature_unit)``, ready to install (``X`` C-contiguous in
    ``dtype``, labels ``intp``, weights in ``dtype``, the rest float64).

    ``X`` has ``width`` columns (the learned space's, or the features'), labels index the
    ``n_classes`` classes, weights are ``>= 0`` and sum to more than 0 (a ``shard`` may hold
    zeros only), the bandwidths match ``bandwidth`` (the estimator's parameter) and the box
    holds every row. The one check of :meth:`~nwbound.NadarayaWatsonClassifier.set_fitted_state`
    and of a model file's frozen route (:mod:`nwbound.estimators._frozen`).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.estimators._state import training_state
    >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> state = NadarayaWatsonClassifier(metric=None, bandwidth=0.5, lipschitz=1.0).fit(X, y).get_fitted_state()
    >>> X_, labels, weights, grid, box, unit = training_state(state, dtype=np.float64, width=1, n_classes=2, bandwidth=0.5)
    >>> X_.shape, grid.tolist(), unit
    ((40, 1), [0.5], 1.0)
    >>> training_state({**state, "labels": state["labels"] + 1}, dtype=np.float64, width=1, n_classes=2, bandwidth=0.5)
    Traceback (most recent call last):
    ...
    ValueError: Fitted state 'labels' must be <= 1, holds 2.
    """
    X = state_array(state, "X", ndim=2, shape=(None, width))
    if X.shape[0] < 1:
        raise ValueError("Fitted state 'X' holds no training rows.")
    if X.dtype != dtype:
        raise ValueError(f"Fitted state 'X' has dtype {X.dtype}, but this estimator's dtype is {dtype}.")
    n = X.shape[0]
    unit = float(state.get("feature_unit", 1.0))
    if not (np.isfinite(unit) and unit > 0 and np.frexp(unit)[0] == 0.5) or (unit != 1.0 and dtype != np.float32):
        raise ValueError(f"Fitted state 'feature_unit' must be a power of two (float32 models only), got {unit!r}.")
    labels = state_array(state, "labels", ndim=1, kind="i", shape=(n,), low=0, high=n_classes - 1)
    weights = state_array(state, "weights", ndim=1, shape=(n,), low=0.0, optional=True)
    if weights is not None and not shard and not weights.sum() > 0:
        raise ValueError("Fitted state 'weights' sums to 0.")
    grid = state_array(state, "bandwidths_", ndim=1, low=np.finfo(np.float64).tiny)
    fixed = not isinstance(bandwidth, str)
    if grid.shape[0] < 1 or (fixed and not np.array_equal(grid, [float(bandwidth)])) or (
            bandwidth == "scale" and grid.shape[0] != 1):
        raise ValueError(
            f"Fitted state 'bandwidths_' = {grid!r} does not match this estimator's bandwidth={bandwidth!r}."
        )
    low = state_array(state, "box_low", ndim=1, shape=(width,))
    high = state_array(state, "box_high", ndim=1, shape=(width,))
    if np.any(X.min(axis=0).astype(np.float64) * unit < low) or np.any(X.max(axis=0).astype(np.float64) * unit > high):
        raise ValueError("Fitted state 'box_low'/'box_high' must contain every training row 'X'.")
    return (np.ascontiguousarray(X, dtype=dtype), labels.astype(np.intp),
            None if weights is None else weights.astype(dtype), grid.astype(np.float64),
            (low.astype(np.float64), high.astype(np.float64)), unit)


def cross_models(state: Mapping[str, Any], metric: Any, cross: Any) -> list:
    """The model states of a cross-fitted fitted state, checked against the estimator's ``metric`` and
    ``cross_fit``: a map fitted on labels, and 2 models (``True``), ``K`` (an int) or at least 2 (``"auto"``).

    Examples
    --------
    >>> from nwbound.estimators._state import cross_models
    >>> len(cross_models({"cross_fit_models_": [{}, {}]}, "auto", "auto"))
    2
    >>> cross_models({"cross_fit_models_": [{}, {}]}, "auto", 3)
    Traceback (most recent call last):
    ...
    ValueError: Fitted state 'cross_fit_models_' must list 3 model states (cross_fit=3).
    """
    from ..spaces import metric_kind

    models = state["cross_fit_models_"]
    if metric_kind(metric) in (None, "standard") or cross is False:
        raise ValueError(f"set_fitted_state: the fitted state holds cross-fitted models, but this estimator has "
                         f"metric={metric!r}, cross_fit={cross!r}.")
    expected = 2 if cross is True else None if isinstance(cross, str) else int(cross)
    if not isinstance(models, (list, tuple)) or len(models) < 2 or (expected is not None and len(models) != expected):
        raise ValueError(f"Fitted state 'cross_fit_models_' must list {expected or 'at least 2'} model states "
                         f"(cross_fit={cross!r}).")
    return list(models)


def check_one_model(cross: Any) -> None:
    """Refuse a fitted state of one model for an estimator whose ``cross_fit`` (True or an int) always
    cross-fits.

    Examples
    --------
    >>> from nwbound.estimators._state import check_one_model
    >>> check_one_model("auto")
    >>> check_one_model(True)
    Traceback (most recent call last):
    ...
    ValueError: set_fitted_state: cross_fit=True, but the fitted state holds one model (no 'cross_fit_models_').
    """
    if cross is True or (isinstance(cross, (int, np.integer)) and not isinstance(cross, bool)):
        raise ValueError(f"set_fitted_state: cross_fit={cross!r}, but the fitted state holds one model "
                         "(no 'cross_fit_models_').")
