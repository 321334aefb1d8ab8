"""The fitted state beyond the kernel sums: a learned space, the L that ``lipschitz="auto"`` chose,
cross-fitted models (``get_fitted_state``/``set_fitted_state`` of every bounded classifier).

Private to :mod:`nwbound.estimators`: :class:`~nwbound.estimators._base.BoundedClassifierBase`
inherits these methods; each classifier's ``get_fitted_state``/``set_fitted_state`` adds its own
kernel sums. Everything restored is checked as untrusted input (:mod:`._state`).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
from sklearn.base import clone

from ..spaces import LipschitzAutoReport, cross_fit_attributes, metric_kind
from ._state import check_one_model, cross_models, point_report_state, positive_state_float, state_classes, state_point_model, state_point_report, state_scalar, state_space


class _LearnedState:
    """The learned part of a fitted state, shared by the bounded classifiers."""

    def _refuse_learned_state(self, action: str) -> None:
        """A fitted state holds ``metric=None``, ``"standard"`` or ``"auto"`` (the default), never a
        map given as an estimator: that is an arbitrary object, which a safe model file cannot hold."""
        if metric_kind(getattr(self, "metric", None)) in ("transformer", "scores"):
            raise ValueError(
                f"{action}: a learned metric given as an estimator (metric={self.metric!r}) is an arbitrary "
                "scikit-learn object that a safe model file cannot store; a fitted state holds metric=None, "
                "'standard' or 'auto' (the default). Keep the model with joblib/pickle (trusted files only), "
                "or fit with metric='auto' or None."
            )

    def _learned_state(self) -> dict[str, Any]:
        """The entries of a fitted state beyond the kernel sums: ``metric_`` (the
        :class:`~nwbound.spaces.LearnedSpace` itself) and, after the held-out check of
        ``lipschitz="auto"``, ``lipschitz_``, ``lipschitz_report_`` and ``pilot_lipschitz``."""
        self._refuse_learned_state("get_fitted_state")
        state: dict[str, Any] = {}
        if getattr(self, "metric_", None) is not None:
            state["metric_"] = self.metric_
        if getattr(self, "lipschitz_report_", None) is not None:
            state.update(lipschitz_=float(self.lipschitz_), lipschitz_report_=self.lipschitz_report_,
                         pilot_lipschitz=float(self._choice_beta))
        return state

    def _restore_learned(self, state: Mapping[str, Any], n_features: int) -> int:
        """Check and set what :meth:`_learned_state` wrote (before the kernel sums are installed:
        their check reads the chosen L); return the width of the space the kernel works in."""
        self._refuse_learned_state("set_fitted_state")
        kind = metric_kind(getattr(self, "metric", None))
        check_one_model(getattr(self, "cross_fit", False))
        if kind is None:
            if state.get("metric_") is not None:
                raise ValueError("set_fitted_state: the fitted state holds a learned space 'metric_', but this "
                                 "estimator has metric=None.")
            self.metric_ = None
        else:
            if state.get("metric_") is None:
                raise ValueError(f"set_fitted_state: this estimator has metric={self.metric!r}, but the fitted state "
                                 "holds no learned space 'metric_' (it was fitted with metric=None).")
            self.metric_ = state_space(state, kind, n_features)
        self.metric_report_ = getattr(self.metric_, "report_", None)
        self._cross_fitted = False
        report = state.get("lipschitz_report_")
        if report is None:
            if self._chooses_lipschitz():
                raise ValueError("set_fitted_state: lipschitz='auto', but the fitted state holds no "
                                 "'lipschitz_report_' (the L that fit chose on held-out rows).")
            self.lipschitz_ = None if self.lipschitz is None or isinstance(self.lipschitz, str) else float(self.lipschitz)
            self.lipschitz_report_, self._choice_beta = None, None
        else:
            if not isinstance(report, LipschitzAutoReport):
                raise ValueError(f"Fitted state 'lipschitz_report_' must be a LipschitzAutoReport, got {type(report).__name__}.")
            value, pilot = (positive_state_float(state, name) for name in ("lipschitz_", "pilot_lipschitz"))
            if value != report.value:
                raise ValueError(f"Fitted state 'lipschitz_' = {value!r} is not the value of its 'lipschitz_report_' "
                                 f"({report.value!r}).")
            self.lipschitz_, self.lipschitz_report_, self._choice_beta = value, report, pilot
        return n_features if self.metric_ is None else int(self.metric_.n_components_)

    def _point_state(self) -> dict[str, Any]:
        """``point_model_`` and ``point_units`` of ``point_estimate="auto"`` (none without a point model),
        and ``point_report_``'s entries (none without a report)."""
        model = getattr(self, "point_model_", None)
        state = {} if model is None else {"point_model_": model, "point_units": self._point_units}
        return {**state, **point_report_state(getattr(self, "point_report_", None))}

    def _restore_point(self, state: Mapping[str, Any], n_features: int, spaces: list) -> None:
        """Check and set what :meth:`_point_state` wrote: a point model only where ``point_estimate="auto"``
        and a space with a score model (``spaces``: each model's ``metric_``) let the fit make one. A
        state without one keeps the kernel estimate (fitted with ``"nw"``, or the kernel estimate was
        more accurate on the check rows)."""
        held = state.get("point_model_") is not None or state.get("point_units") is not None
        allowed = self._fits_point_model() and any(getattr(space, "map_", None) is not None for space in spaces)
        self.point_model_, self._point_units, self.point_report_ = None, None, None
        if held and not allowed:
            raise ValueError("set_fitted_state: the fitted state holds a point model 'point_model_', which this "
                             f"estimator does not fit (point_estimate={getattr(self, 'point_estimate', None)!r}, "
                             "n_neighbors, or no score model in its space): pass the parameters it was fitted with.")
        if held:
            self.point_model_, self._point_units = state_point_model(state, n_features, self.classes_.shape[0])
        report = state_point_report(state, has_model=held)
        if report is not None and not allowed:
            raise ValueError("set_fitted_state: the fitted state holds 'point_report_used', the report of a point "
                             f"model this estimator does not fit (point_estimate={getattr(self, 'point_estimate', None)!r}"
                             ", n_neighbors, or no score model in its space): pass the parameters it was fitted with.")
        self.point_report_ = report

    def _cross_state(self) -> dict[str, Any]:
        """The fitted state of a cross-fitted model: its inputs' record and one state per model."""
        state: dict[str, Any] = {
            "classes_": self.classes_,
            "class_prior_": self.class_prior_,
            "n_features_in_": int(self.n_features_in_),
            "cross_fit_models_": [model.get_fitted_state() for model in self.cross_fit_models_],
            **self._point_state(),
        }
        if self._unit() != 1.0:
            state["feature_unit"] = self._unit()
        if hasattr(self, "feature_names_in_"):
            state["feature_names_in_"] = self.feature_names_in_
        return state

    def _restore_cross(self, state: Mapping[str, Any], dtype) -> "BoundedClassifierBase":
        """:meth:`_cross_state` back: each model restored (and checked) by its own ``set_fitted_state``,
        with the settings ``fit`` gives it (:meth:`_cross_model_settings`)."""
        self._refuse_learned_state("set_fitted_state")
        models = cross_models(state, getattr(self, "metric", None), self.cross_fit)
        classes, prior = state_classes(state)
        n_features = state_scalar(state, "n_features_in_", low=1)
        unit = float(state.get("feature_unit", 1.0))
        settings = self._cross_model_settings(len(models))
        halves = []
        for k, sub in enumerate(models):
            if not isinstance(sub, Mapping) or "cross_fit_models_" in sub:
                raise ValueError(f"Fitted state 'cross_fit_models_'[{k}] must be one model's fitted state.")
            half = clone(self).set_params(cross_fit=False, **self._cross_model_params, **settings)
            try:
                half.set_fitted_state(sub)
            except ValueError as exc:
                raise ValueError(f"Fitted state 'cross_fit_models_'[{k}]: {exc}") from None
            same_names = np.array_equal(getattr(half, "feature_names_in_", None), state.get("feature_names_in_"))
            if not (np.array_equal(half.classes_, classes) and half.n_features_in_ == n_features and same_names
                    and half._unit() == unit):
                raise ValueError(f"Fitted state 'cross_fit_models_'[{k}] has other classes, features or feature unit "
                                 "than the cross-fitted model.")
            halves.append(half)
        self._restore_inputs(state, classes, prior, n_features, dtype, unit)
        self._restore_point(state, n_features, [half.metric_ for half in halves])
        return self._adopt_cross_models(halves)

    def _adopt_cross_models(self, halves: list) -> "BoundedClassifierBase":
        """Make this estimator the cross-fitted model of ``halves`` (fitted models, one per layout)."""
        self.cross_fit_models_ = halves
        self._cross_fitted = True
        for name, value in cross_fit_attributes(halves, chooses_lipschitz=self._chooses_lipschitz()).items():
            setattr(self, name, value)
        self._snapshot_fit_params()  # a fit-time parameter changed after fit: predict raises (_check_fitted)
        self._fit_complete = True
        return self
