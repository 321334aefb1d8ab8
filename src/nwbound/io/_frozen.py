"""A model file's frozen arrays (format 4; format 5 adds the point model of ``point_estimate="auto"``):
each learned space as plain arrays, and the route that predicts from them without scikit-learn.

``save_model`` stores, next to the skops dump of each learned space, what its ``transform`` reads
(:meth:`~nwbound.spaces.LearnedSpace.frozen_arrays`: the score model of ``metric="auto"`` as a
:class:`~nwbound.spaces.FrozenScoreMap`, the units, the standardisation, the features' weight),
as members ``frozen__<name>`` (one model) or ``frozen__cross<k>__<name>`` (the k-th cross-fitted
model), and the spaces' kinds in the metadata's ``frozen`` entry; the point model of
``point_estimate="auto"`` (the same kind of model as a score model) as members
``frozen__point__<name>``, its kind the entry's ``point``. :func:`load_model` checks that
these arrays are exactly those of the spaces it rebuilds (a file whose two copies differ is
refused); ``load_model(path, frozen=True)`` builds instead, from the plain arrays alone, a
:class:`~nwbound.estimators._frozen.FrozenNadarayaWatson` whose ``predict_interval`` gives the
same intervals without importing scikit-learn (``nwbound predict``). Files without frozen arrays
(format 3 and older), localized, device or float32 classifiers and the dyadic grid take the full
route.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping

import numpy as np

__all__ = ["FROZEN_PREFIX", "POINT_PREFIX", "check_frozen", "frozen_members", "frozen_model", "frozen_payload"]

FROZEN_PREFIX = "frozen__"
# The point model of point_estimate="auto" (format 5): its FrozenScoreMap arrays, the map kind in the
# metadata's frozen entry ("point"); its columns' units are the state's point_units.
POINT_PREFIX = f"{FROZEN_PREFIX}point__"
_SPACE_KINDS = ("standard", "auto")
_MAP_KINDS = ("none", "gradient_boosting", "logistic")


def _prefix(k: int, cross: bool) -> str:
    return f"{FROZEN_PREFIX}cross{k}__" if cross else FROZEN_PREFIX


def _model_states(state: Mapping[str, Any]) -> tuple[list, bool]:
    models = state.get("cross_fit_models_")
    return (list(models), True) if models is not None else ([state], False)


def frozen_payload(state: Mapping[str, Any]) -> tuple[dict | None, dict[str, np.ndarray]]:
    """The ``frozen`` metadata entry and the members of a fitted state's learned spaces (None and
    no member without one).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.io._frozen import frozen_payload
    >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric="standard", bandwidth=0.5, lipschitz=1.0).fit(X, y)
    >>> entry, members = frozen_payload(clf.get_fitted_state())
    >>> entry, sorted(members)[:2]
    ({'spaces': [['standard', 'none']]}, ['frozen__balance', 'frozen__feature_weight'])
    """
    from ..spaces import FrozenScoreMap

    models, cross = _model_states(state)
    spaces, members = [], {}
    for k, model in enumerate(models):
        space = model.get("metric_")
        if space is None:
            return None, {}
        map_kind, arrays = space.frozen_arrays()
        spaces.append([space.kind, map_kind])
        members.update({_prefix(k, cross) + name: arr for name, arr in arrays.items()})
    entry: dict[str, Any] = {"spaces": spaces}
    point = state.get("point_model_")
    if point is not None:  # the same kind of model as a score model: stored the same way
        frozen = point if isinstance(point, FrozenScoreMap) else FrozenScoreMap.from_estimator(point)
        entry["point"] = frozen.kind
        members.update({POINT_PREFIX + name: np.asarray(arr) for name, arr in frozen.to_arrays().items()})
    return entry, members


def frozen_members(arrays: Mapping[str, np.ndarray]) -> set[str]:
    """The members of a file that are frozen arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.io._frozen import frozen_members
    >>> sorted(frozen_members({"frozen__mean": np.zeros(1), "state__X": np.zeros((1, 1))}))
    ['frozen__mean']
    """
    return {name for name in arrays if name.startswith(FROZEN_PREFIX)}


def _spaces(entry: Any, arrays: Mapping[str, np.ndarray], n_models: int, cross: bool, n_features: int) -> list:
    """Each model's space from its frozen arrays (every array checked; the member named on a failure)."""
    from ..spaces import LearnedSpace
    kinds = entry.get("spaces") if isinstance(entry, dict) else None
    if not (isinstance(kinds, list) and len(kinds) == n_models and all(
            isinstance(k, list) and len(k) == 2 and k[0] in _SPACE_KINDS and k[1] in _MAP_KINDS for k in kinds)):
        raise ValueError(f"its 'frozen' entry must list [space kind, map kind] for each of its {n_models} model(s)")
    spaces, used = [], {name for name in arrays if name.startswith(POINT_PREFIX)}  # the point model's: _point
    for k, (kind, map_kind) in enumerate(kinds):
        prefix = _prefix(k, cross)
        own = {name[len(prefix):]: arr for name, arr in arrays.items()
               if name.startswith(prefix) and (cross or not name.startswith(f"{FROZEN_PREFIX}cross"))
               and not name.startswith(POINT_PREFIX)}
        used |= {prefix + name for name in own}
        spaces.append(LearnedSpace.from_frozen(kind, map_kind, own, n_features, prefix=prefix))
    extra = sorted(frozen_members(arrays) - used)
    if extra:
        raise ValueError(f"unexpected frozen members {extra}")
    return spaces


def _point(entry: Any, arrays: Mapping[str, np.ndarray], n_features: int) -> Any:
    """The point model's :class:`~nwbound.spaces.FrozenScoreMap` from its frozen arrays (None without
    one); every array checked, the member named on a failure."""
    from ..spaces import FrozenScoreMap

    kind = entry.get("point") if isinstance(entry, dict) else None
    own = {name[len(POINT_PREFIX):]: arr for name, arr in arrays.items() if name.startswith(POINT_PREFIX)}
    if kind is None:
        if own:
            raise ValueError(f"point model members {sorted(POINT_PREFIX + k for k in own)} without a 'point' entry")
        return None
    if kind not in _MAP_KINDS[1:]:
        raise ValueError(f"its 'frozen' entry's point model kind {kind!r} is not one of {list(_MAP_KINDS[1:])}")
    return FrozenScoreMap.from_arrays(kind, own, n_features, prefix=POINT_PREFIX)


def check_frozen(est: Any, meta: dict, arrays: Mapping[str, np.ndarray]) -> None:
    """Refuse a file whose frozen arrays are not exactly those of the spaces :func:`load_model`
    rebuilt from the skops dump: both routes must predict with the same numbers.

    Raises
    ------
    ValueError
        Naming the first member that differs (or a ``frozen`` entry that does not describe the spaces).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.io._frozen import check_frozen, frozen_payload
    >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric="standard", bandwidth=0.5, lipschitz=1.0).fit(X, y)
    >>> entry, members = frozen_payload(clf.get_fitted_state())
    >>> check_frozen(clf, {"frozen": entry}, members)
    >>> check_frozen(clf, {"frozen": entry}, {**members, "frozen__mean": members["frozen__mean"] + 1})
    Traceback (most recent call last):
    ...
    ValueError: member frozen__mean is not the frozen copy of its learned space (edited, or written by another nwbound)
    """
    members = frozen_members(arrays)
    if "frozen" not in meta:
        if members:
            raise ValueError(f"frozen members {sorted(members)} without a 'frozen' entry")
        return
    entry, expected = frozen_payload(est.get_fitted_state())
    if entry is None or entry != meta["frozen"]:
        raise ValueError("its 'frozen' entry does not describe its learned spaces")
    for name in sorted(members | set(expected)):
        got, want = arrays.get(name), expected.get(name)
        if got is None or want is None or got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
            raise ValueError(f"member {name} is not the frozen copy of its learned space (edited, or written "
                             "by another nwbound)")


def frozen_model(meta: dict, arrays: dict[str, np.ndarray], params: dict, state: dict, n_features: int,
                 chosen: bool) -> Any:
    """The :class:`~nwbound.estimators._frozen.FrozenNadarayaWatson` of a file's checked parameters and
    state (learned pieces left out) and its frozen arrays; it then answers one probe query, as the full
    route's model does, so that a value only the prediction path rejects refuses the file here.

    Raises
    ------
    ValueError
        Any invalid parameter, state entry or frozen array, naming it.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.io._frozen import frozen_model, frozen_payload
    >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric="standard", bandwidth=0.5, lipschitz=1.0).fit(X, y)
    >>> state = clf.get_fitted_state(); entry, members = frozen_payload(state)
    >>> model = frozen_model({"frozen": entry}, members, clf.get_params(), state, 1, chosen=False)
    >>> bool(np.array_equal(model.predict_interval(X).upper, clf.predict_interval(X).upper))
    True
    """
    from ..estimators._frozen import FrozenNadarayaWatson
    models, cross = _model_states(state)
    point = None
    if params.get("metric") is None:
        if frozen_members(arrays) or "frozen" in meta:
            raise ValueError("frozen arrays for a model with metric=None")
        spaces = [None] * len(models)
    else:
        spaces = _spaces(meta.get("frozen"), arrays, len(models), cross, n_features)
        point = _point(meta.get("frozen"), arrays, n_features)
    if point is not None and params.get("point_estimate") != "auto":
        raise ValueError(f"point_estimate={params.get('point_estimate')!r}, but the file holds a point model")
    model = FrozenNadarayaWatson(params, state, spaces, chosen=chosen, point=point)
    parts = model.models_
    rules = [part.empty_neighborhood for part in parts]
    try:  # the origin may be far from the data: for the probe, no refusal of an empty neighbourhood
        for part in parts:
            part.empty_neighborhood = "prior"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.predict_interval(np.zeros((1, n_features)))
    except (TypeError, OverflowError, FloatingPointError) as exc:
        raise ValueError(str(exc)) from None
    finally:
        for part, rule in zip(parts, rules):
            part.empty_neighborhood = rule
    return model
