"""A saved Nadaraya-Watson model's ``predict_interval`` without scikit-learn: a model file's frozen route.

:class:`FrozenNadarayaWatson` is built from a model file's parameters and fitted state (plain
arrays) and, for a learned space, the space's frozen arrays
(:meth:`~nwbound.spaces.LearnedSpace.from_frozen`: the space's own ``transform``, its score model a
:class:`~nwbound.spaces.FrozenScoreMap`). Every rule it applies is the classifier's own: the
parameter and state checks (:func:`._state.training_state`, ``_NWParams``), the bound setting, the
empty-neighbourhood rule and the interval (``_IntervalRules``), the host backend's route
(:class:`~nwbound.engine.host._backend.HostBackend`) and the cross-fitted intersection with its
warnings. It serves the regular classifier on the host (no ``n_neighbors``, no ``device``) in
float64; :func:`nwbound.io.load_model` builds the full classifier for everything else.

Private to :mod:`nwbound.estimators`; :mod:`nwbound.io` builds it (``nwbound predict``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .._numerics import to_feature_unit
from .._threads import blas_limited
from ..engine import FittedInputs
from ..engine._registry import select_backend
from ..engine.host._sums_data import TrainingSet
from ..spaces import divided_delta
from ._bandwidth import resolve_ranking_fraction
from ._rules import _IntervalRules, _NWParams
from ._point import point_proba, with_point_estimate
from ._state import check_one_model, cross_models, positive_state_float, state_classes, state_point_units, state_scalar, training_state

__all__ = ["FrozenNadarayaWatson", "PARAMETERS", "serves"]

#: The parameters of :class:`~nwbound.NadarayaWatsonClassifier` (a test keeps the list equal to its
#: ``get_params()``): a model file's are checked against them without importing the classifier.
PARAMETERS = ("algorithm", "bandwidth", "bandwidth_grid", "bound", "ck", "coverage", "cross_fit", "delta", "device",
              "dtype", "empty_neighborhood", "histogram_bins", "index_params", "kernel", "lipschitz", "margin",
              "metric", "metric_fraction", "n_jobs", "n_neighbors", "point_estimate", "random_state", "ranking_fraction",
              "sigma", "verbose", "working_memory")


def serves(params: Mapping[str, Any]) -> bool:
    """Whether the frozen route serves a saved classifier with these parameters: the regular
    classifier on the host, in float64, with ``metric`` None, ``"standard"`` or ``"auto"``.

    Examples
    --------
    >>> from nwbound.estimators._frozen import serves
    >>> serves({"n_neighbors": None, "device": None, "dtype": "float64", "metric": "auto"})
    True
    >>> serves({"n_neighbors": 10, "device": None, "dtype": "float64", "metric": "auto"})
    False
    """
    return (params.get("n_neighbors") is None and params.get("device") is None
            and params.get("dtype", "float64") == "float64" and params.get("metric") in (None, "standard", "auto"))


class _FrozenModel(_NWParams, _IntervalRules):
    """One fitted model (one of the cross-fitted ones, or the only one): the engine's estimator
    protocol (``bandwidths_``, ``kernel_``, ``__nwbound_fitted_inputs__`` …) over checked arrays."""

    index_ = None  # the regular classifier (serves)
    n_neighbors = None
    device = None

    def __init__(self, params: Mapping[str, Any], state: Mapping[str, Any], space: Any, *, chosen: bool) -> None:
        for name, value in params.items():
            setattr(self, name, value)
        dtype, kernel, auto = self._check_params()
        classes, prior = state_classes(state)
        n_features = state_scalar(state, "n_features_in_", low=1)
        if space is not None and space.n_features_in_ != n_features:
            raise ValueError(f"its frozen space maps {space.n_features_in_} features, not the state's {n_features}.")
        width = n_features if space is None else space.n_components_
        X, labels, weights, grid, box, unit = training_state(
            state, dtype=dtype, width=width, n_classes=classes.shape[0], bandwidth=self.bandwidth)
        self.classes_, self.class_prior_, self.n_features_in_ = classes, prior, n_features
        # lipschitz="auto": the L the fit chose, and the pilot L the bandwidths are chosen at
        self.lipschitz_, self._choice_beta = None, None
        if self.lipschitz == "auto" and self.margin is None:
            self.lipschitz_, self._choice_beta = (positive_state_float(state, k) for k in ("lipschitz_", "pilot_lipschitz"))
        elif self.lipschitz is not None and not isinstance(self.lipschitz, str):
            self.lipschitz_ = float(self.lipschitz)
        self._chosen = chosen
        self.kernel_, self.bandwidths_ = kernel, grid
        self.ranking_fraction_ = resolve_ranking_fraction(self.ranking_fraction, X.shape[0])
        self._train = TrainingSet.build(X, labels, classes.shape[0], weights)
        self._box, self._unit, self._dtype, self._space = box, unit, dtype, space
        self._validate_bound_params(kernel, bound_required=auto)  # the fit's check
        self.backend_ = select_backend(self)  # the host: a frozen model has no device (serves)

    def _check_device(self) -> None:
        """No device: :func:`serves` keeps those models on the full classifier."""

    def _lipschitz_was_chosen(self) -> bool:
        return self._chosen  # the file holds the report of lipschitz="auto"

    def __nwbound_fitted_inputs__(self) -> FittedInputs:
        return FittedInputs(train=self._train, feature_unit=self._unit, box=self._box,
                            index_kneighbors=self._no_index, fallback_rows=self._fallback_rows,
                            check_device=self._check_device, interval=self._interval)

    @staticmethod
    def _no_index(X: Any, n_neighbors: int) -> tuple:
        raise TypeError("the regular classifier has no neighbour index")

    def specs(self) -> dict:
        """``{None: own setting}``, as the classifier's ``predict_interval`` resolves it."""
        return {None: self._bound_spec(self.kernel_, required=True)}

    def intervals(self, X: np.ndarray, specs: dict) -> dict:
        """The intervals of checked float64 queries in the input features (the space maps them)."""
        if self._space is None:
            Z = to_feature_unit(X, self._unit, self._dtype)
        else:
            Z = np.ascontiguousarray(self._space.transform(X), dtype=self._dtype)
        return self.backend_.intervals(Z, specs)


class FrozenNadarayaWatson(_IntervalRules):
    """A saved :class:`~nwbound.NadarayaWatsonClassifier` that predicts intervals without scikit-learn.

    Built by :func:`nwbound.io.load_model` (``frozen=True``) from a model file; its
    ``predict_interval`` gives the intervals of the classifier the file holds (the same rules on
    the same arrays, with the same warnings). It has the classifier's parameters as attributes,
    ``classes_``, ``class_prior_``, ``n_features_in_`` (``feature_names_in_`` when fitted on
    names), ``models_`` (the model, or each cross-fitted one: the classifier's own rules over the
    file's arrays) and, when cross-fitted, ``cross_fit_models_`` (the same list).

    Parameters
    ----------
    params : mapping
        The classifier's parameters (a model file's, checked by its loader).
    state : mapping
        Its fitted state (``get_fitted_state()``'s entries, the learned pieces left out).
    spaces : sequence
        Each model's space (a :class:`~nwbound.spaces.LearnedSpace` from frozen arrays, or None
        for ``metric=None``), one per cross-fitted model or one.
    chosen : bool
        Whether the file holds the report of ``lipschitz="auto"`` (the L was chosen at fit).
    point : FrozenScoreMap or None, default=None
        The point model of ``point_estimate="auto"`` (its columns' units are the state's
        ``point_units``): its probabilities are moved into each box, as the classifier's.

    Raises
    ------
    ValueError
        Any parameter or array the classifier's ``set_fitted_state`` would refuse, naming it.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.estimators._frozen import FrozenNadarayaWatson
    >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
    >>> frozen = FrozenNadarayaWatson(clf.get_params(), clf.get_fitted_state(), [None], chosen=False)
    >>> len(frozen.models_), frozen.cross_fit_models_ is None, frozen.classes_.tolist()
    (1, True, [0, 1])
    """

    def __init__(self, params: Mapping[str, Any], state: Mapping[str, Any], spaces: Sequence[Any], *,
                 chosen: bool, point: Any = None) -> None:
        params = dict(params)
        for name, value in params.items():
            setattr(self, name, value)
        self.classes_, self.class_prior_ = state_classes(state)
        self.n_features_in_ = state_scalar(state, "n_features_in_", low=1)
        names = state.get("feature_names_in_")
        if names is not None:
            names = np.asarray(names, dtype=object)
            if names.shape != (self.n_features_in_,) or not all(isinstance(v, str) for v in names):
                raise ValueError(f"Fitted state 'feature_names_in_' must hold {self.n_features_in_} strings.")
            self.feature_names_in_ = names
        self._cross_fitted = state.get("cross_fit_models_") is not None
        if not self._cross_fitted:
            check_one_model(self.cross_fit)
            if self.metric is None and "metric_" in state:
                raise ValueError("set_fitted_state: the fitted state holds a learned space 'metric_', but this "
                                 "estimator has metric=None.")
        models = cross_models(state, self.metric, self.cross_fit) if self._cross_fitted else [state]
        if len(spaces) != len(models):
            raise ValueError(f"{len(spaces)} frozen spaces for {len(models)} models.")
        # each cross-fitted model predicts at level delta/K (the classifier's _cross_model_settings)
        settings = {**params, "cross_fit": False,
                    "delta": divided_delta(self.delta, len(models)) if self._cross_fitted else self.delta}
        self.cross_fit_models_ = []
        for k, (sub, space) in enumerate(zip(models, spaces)):
            try:
                model = _FrozenModel(settings, sub, space, chosen=chosen)
            except ValueError as exc:
                raise ValueError(f"Fitted state 'cross_fit_models_'[{k}]: {exc}" if self._cross_fitted else str(exc)) from None
            if not (np.array_equal(model.classes_, self.classes_) and model.n_features_in_ == self.n_features_in_):
                raise ValueError(f"Fitted state 'cross_fit_models_'[{k}] has other classes or features than the "
                                 "cross-fitted model.")
            self.cross_fit_models_.append(model)
        self.models_ = self.cross_fit_models_
        self.lipschitz_ = None if self._cross_fitted else self.models_[0].lipschitz_
        self.point_model_, self._point_units = point, None
        if point is not None:
            if point.n_classes_ != self.classes_.shape[0] or point.n_features_in_ != self.n_features_in_:
                raise ValueError(f"its point model predicts {point.n_classes_} classes from {point.n_features_in_} "
                                 f"features, not the state's {self.classes_.shape[0]} from {self.n_features_in_}.")
            self._point_units = state_point_units(state, self.n_features_in_)
        if not self._cross_fitted:
            self.cross_fit_models_ = None

    @blas_limited
    def predict_interval(self, X: Any) -> Any:
        """Class probabilities with per-query bounds, as the saved classifier's ``predict_interval(X)``.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Finite numbers.

        Returns
        -------
        PredictionInterval

        Raises
        ------
        ValueError
            ``X`` is not 2-D with ``n_features_in_`` columns of finite numbers.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> from nwbound.estimators._frozen import FrozenNadarayaWatson
        >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
        >>> frozen = FrozenNadarayaWatson(clf.get_params(), clf.get_fitted_state(), [None], chosen=False)
        >>> frozen.predict_interval([[0.1]]).proba
        array([[1., 0.]])
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_ or not np.all(np.isfinite(X)):
            raise ValueError(f"X must be a 2-D array of finite numbers with {self.n_features_in_} columns, got "
                             f"shape {X.shape}" + ("" if X.ndim != 2 or np.all(np.isfinite(X)) else " with NaN or inf") + ".")
        if not self._cross_fitted:
            specs = self.models_[0].specs()
            out = self._report(self.models_[0].intervals(X, specs), specs, None)
        else:
            parts = [list(model.intervals(X, model.specs()).values()) for model in self.cross_fit_models_]
            out = self._warned_cross(self._intersected([None], parts))
        if self.point_model_ is None:
            return out
        return with_point_estimate(out, point_proba(self.point_model_, self._point_units, X, self.classes_.shape[0]))
