"""What every bounded classifier here shares: assumptions, bound forms, the
empty-neighbourhood rule and the assembly of a :class:`PredictionInterval`."""

from __future__ import annotations

import contextlib
import copy
import time
import warnings
from numbers import Integral, Real

import numpy as np

from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, _num_samples, check_is_fitted, validate_data

from typing import Any, Mapping

from .._numerics import feature_unit, to_feature_unit
from .._result import PredictionInterval
from .._stack import caller_stacklevel
from .._threads import blas_limited
from .._validation import numeric_features, check_beta, check_choice, check_class_count, check_label_free_weights, check_open_unit, check_params_as_fitted
from ..bounds import BOUND_NAMES, COVERAGE_NAMES, BoundSpec, effective_delta
from ..bounds import CHERNOFF_FALLBACK_START as _CHERNOFF_FALLBACK_START
from ..diagnostics import AdviceContext, warn_if_vacuous
from ..kernels import Kernel
from ..utils import report
from ..spaces import auto_cross_fits, check_cross_fit_metric, shared_residual_raise, check_subset, LearnedSpace, check_fraction, check_groups, check_map_classes, check_rows_split, choose_lipschitz, cross_fit_layouts, divided_bounds, divided_delta, pilot_lipschitz, kappa_weighted_proba, lipschitz_units, metric_kind, nw_share_weights, residual_rows, split_rows, split_seed, two_constant_pilot
from ._fit_errors import _auto_lipschitz, _split_settings_errors
from ._dispatch import queries_on_host, training_data_on_host, validate_queries
from ._fitted_state import _LearnedState
from ._rules import BOUND_PARAMETERS, EMPTY_NEIGHBORHOOD_RULES, _IntervalRules
from ..engine import KernelStatistics

__all__ = ["BoundedClassifierBase", "BOUND_PARAMETERS", "EMPTY_NEIGHBORHOOD_RULES"]

_PARAM_NAMES: dict = {}  # class -> its parameter names (BoundedClassifierBase._get_param_names)


_UNITS_WARNING_START = "The assumption"


# scikit-learn's warnings on feature names that differ between fit and predict (validate_data).
_FEATURE_NAMES_WARNING = r"X (does not have valid feature names|has feature names, but)"


@contextlib.contextmanager
def _feature_names_said(already: bool):
    """Silence scikit-learn's feature-names warning for a cross-fitted model after the first: the
    models all see the same X, so the user reads it once, not once per model."""
    with warnings.catch_warnings():
        if already:
            warnings.filterwarnings("ignore", category=UserWarning, message=_FEATURE_NAMES_WARNING)
        yield


class BoundedClassifierBase(_IntervalRules, _LearnedState, ClassifierMixin, BaseEstimator):
    """Shared machinery: assumptions, bound settings, the empty-neighbourhood rule,
    intervals from :class:`KernelStatistics`.

    Not used directly: :class:`~nwbound.NadarayaWatsonClassifier` and
    :class:`~nwbound.DyadicClassifier` derive from it and share its
    ``predict``, ``predict_proba`` and ``predict_interval(X, bounds=...)``
    (several bound settings, the parameters in ``BOUND_PARAMETERS``, from one
    pass over the data).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import DyadicClassifier
    >>> from nwbound.estimators._base import BoundedClassifierBase
    >>> issubclass(DyadicClassifier, BoundedClassifierBase)
    True
    >>> X = np.linspace(0, 1, 200)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = DyadicClassifier(metric=None, resolution=2, lipschitz=1.0).fit(X, y)
    >>> out = clf.predict_interval(X[:2], bounds={"L=1": {}, "L=0.5": {"lipschitz": 0.5}})
    >>> {name: round(float(iv.epsilon[0, 0]), 3) for name, iv in out.items()}
    {'L=1': 0.321, 'L=0.5': 0.196}
    """

    # scikit-learn's declarative checks; the fit-time checks behind them add
    # what a constraint cannot say (units of L, which fix applies).
    _parameter_constraints: dict = {
        "lipschitz": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"}), None],
        "metric": [None, StrOptions({"standard", "auto"}), HasMethods(["fit"])],
        "metric_fraction": [Interval(Real, 0, 1, closed="neither")],
        "cross_fit": ["boolean", StrOptions({"auto"}), Interval(Integral, 2, None, closed="left")],
        "margin": [Interval(Real, 0, None, closed="neither"), None],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "bound": [StrOptions(BOUND_NAMES)],  # the registered forms, read at each check
        "coverage": [StrOptions(set(COVERAGE_NAMES))],
        "sigma": [Interval(Real, 0, None, closed="neither")],
        "empty_neighborhood": [StrOptions(set(EMPTY_NEIGHBORHOOD_RULES))],
    }

    # Parameters read when predicting besides BOUND_PARAMETERS (subclasses add theirs): changing
    # one with set_params takes effect at once. Every other parameter shapes the fitted state, and
    # predicting after set_params changed it raises (call fit again) instead of silently keeping it.
    _predict_time_parameters: tuple[str, ...] = ("empty_neighborhood",)

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """scikit-learn's parameter names (``__init__``'s signature), read once per class: scikit-learn
        runs ``inspect.signature`` at every ``get_params``, and ``predict*`` validate the parameters."""
        names = _PARAM_NAMES.get(cls)
        if names is None:
            names = _PARAM_NAMES[cls] = tuple(super()._get_param_names())
        return list(names)

    # -- progress (verbose=) -------------------------------------------------------------------
    def _verbosity(self) -> int:
        """``verbose`` (0 for an estimator without it)."""
        return int(getattr(self, "verbose", 0) or 0)

    def _say(self, message: str, level: int = 1) -> None:
        """``verbose=``: one line to stderr when ``verbose >= level``, with the seconds since ``fit`` began.

        Estimators without a ``verbose`` parameter say nothing. A cross-fitted model's lines name it
        (``model 1/2``), and count from the cross-fit's start.
        """
        if self._verbosity() < level:
            return
        started = getattr(self, "_fit_started", None)
        elapsed = "" if started is None else f" ({time.perf_counter() - started:.1f} s)"
        label = getattr(self, "_progress_label", "")
        first, *rest = message.splitlines() or [""]
        report("\n".join([f"[{type(self).__name__}{' ' + label if label else ''}] {first}{elapsed}",
                          *("    " + line for line in rest)]))

    def _start_clock(self) -> None:
        """Start ``verbose=``'s clock, unless a cross-fit started it already (its models share it)."""
        if getattr(self, "_forced_split", None) is None:
            self._fit_started = time.perf_counter()

    # -- fit helpers -------------------------------------------------------------------------
    def _validate_training_data(self, X, y, sample_weight, dtype):
        self._fit_complete = False
        self._start_clock()
        self._choice_beta = None  # set again by lipschitz="auto" (_finish_fit)
        X, y, sample_weight = training_data_on_host(X, y, sample_weight)  # array_api_dispatch inputs
        with numeric_features(X):
            X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], ensure_min_samples=1)
        # float32 data far from 1 (1e-200, 1e160) are stored in a power-of-two unit: scaled
        # before the cast, so nothing underflows to 0 or overflows to inf (feature_unit).
        unit = feature_unit(X, dtype)
        X = to_feature_unit(X, unit, dtype)
        check_classification_targets(y)
        classes, labels = np.unique(y, return_inverse=True)
        if classes.shape[0] < 2:
            raise ValueError(
                f"y has only one class ({classes[0]!r}); a classifier needs at least 2 classes to train."
            )
        check_class_count(classes.shape[0], X.shape[0], name="y")  # e.g. an id column as the target
        weights = None
        if sample_weight is not None:
            weights = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
            if not np.all(np.isfinite(weights)):
                raise ValueError("sample_weight must be finite.")
            if not np.any(weights > 0):
                raise ValueError("sample_weight sums to 0: at least one sample needs a positive weight.")
            weights = nw_share_weights(weights, None, dtype)  # relative: the largest scaled to 1
        if weights is not None and (self.lipschitz is not None or getattr(self, "margin", None) is not None):
            check_label_free_weights(weights, labels, classes)  # with a bound: weights of the inputs only
        w = np.ones(X.shape[0]) if weights is None else weights.astype(np.float64)
        prior = np.bincount(labels, weights=w, minlength=classes.shape[0])
        self._fit_dtype = np.dtype(dtype)
        self._feature_unit = unit
        self.classes_ = classes
        self.class_prior_ = prior / prior.sum()
        return X, labels.astype(np.intp), weights

    def _restore_inputs(self, state, classes: np.ndarray, prior: np.ndarray, n_features: int, dtype,
                        unit: float = 1.0) -> None:
        """What ``fit``'s input validation sets, from a checked fitted state (feature names checked here)."""
        names = state.get("feature_names_in_")
        if names is not None:
            names = np.asarray(names, dtype=object)
            if names.shape != (n_features,) or not all(isinstance(v, str) for v in names):
                raise ValueError(f"Fitted state 'feature_names_in_' must hold {n_features} strings.")
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.classes_, self.class_prior_ = classes, prior
        self.n_features_in_ = n_features
        self._fit_dtype = np.dtype(dtype)
        self._feature_unit = unit

    # -- learned space (metric=) and held-out rows ---------------------------------------------
    def _fit_space(self, X: np.ndarray, labels: np.ndarray, weights: np.ndarray | None, groups: Any, dtype):
        """Split the validated training rows, fit ``metric=`` on its share, map the NW share.

        Returns ``(Z, labels, weights)`` of the NW share in the mapped space (the rows the kernel
        sums use), and sets ``metric_``, ``metric_rows_``, ``check_rows_`` and ``nw_rows_``. With
        ``metric=None`` and a numeric ``lipschitz`` nothing is split: the inputs come back as they
        are (today's classifier, bit for bit).
        """
        kind = metric_kind(getattr(self, "metric", None))
        auto_lipschitz = _auto_lipschitz(self)
        n = X.shape[0]
        self._cross_fitted = False
        self.metric_, self.metric_rows_, self.check_rows_ = None, np.zeros(0, np.intp), np.zeros(0, np.intp)
        self.metric_report_ = None
        self.lipschitz_ = None if self.lipschitz is None or isinstance(self.lipschitz, str) else float(self.lipschitz)
        self.lipschitz_report_ = None
        self.nw_rows_ = np.arange(n)
        groups = check_groups(groups, n)
        forced = getattr(self, "_forced_split", None)  # cross-fitting: the halves are given
        if forced is None:
            self._warn_assumption_units()
        uses_labels = kind not in (None, "standard")
        if not uses_labels and not auto_lipschitz:
            if kind == "standard":  # label-free: fitted on every training input, no split
                self.metric_ = LearnedSpace("standard").fit(X, labels)
                X = np.ascontiguousarray(self.metric_.transform(X), dtype=dtype)
            self._say(f"{n} training rows, all in the kernel sums")
            return X, labels, weights
        fraction = check_fraction(getattr(self, "metric_fraction", 0.4))
        seed = split_seed(getattr(self, "random_state", None))
        with _split_settings_errors(self, labels, groups):
            if forced is not None:
                metric_rows, nw_rows = forced
            else:
                metric_rows, nw_rows = split_rows(labels, fraction, groups=groups, random_state=seed)
            map_rows, check_rows = metric_rows, np.zeros(0, np.intp)
            if auto_lipschitz:  # the metric share: map (and pilot L) rows, then check rows
                map_rows, check_rows = check_rows_split(labels, metric_rows, groups=groups, random_state=seed)
            if uses_labels:
                check_map_classes(labels[map_rows], self.metric)
            mapped_fit_rows = None  # metric_.transform(X[map_rows]), when the map was fitted on exactly those
            mapped_check = None  # metric_.transform(X[check_rows]), from the score model's validation of them
            mapped_nw = None  # metric_.transform(X[nw_rows]), its predictions shared with the raise-only L_r
            self._say(f"{n} training rows split: {map_rows.shape[0]} fit the map"
                      + (" and the pilot L" if auto_lipschitz and kind != "auto" else "")
                      + (f", {check_rows.shape[0]} check L" if auto_lipschitz else "")
                      + f", {nw_rows.shape[0]} enter the kernel sums")
            if kind is not None:
                fit_rows = map_rows if uses_labels else np.arange(n)
                w = None if weights is None else weights[fit_rows].astype(np.float64)
                self.metric_ = LearnedSpace(self.metric, random_state=seed)
                fit_args = (X[fit_rows], labels[fit_rows], w)
                fit_groups = None if groups is None else groups[fit_rows]
                if kind == "auto":  # L_r is estimated on the check rows (the map never sees them)
                    held = (X[check_rows], labels[check_rows]) if auto_lipschitz else None
                    # and again, raise-only, on every row the map never sees (the kernel sums' too)
                    rows = residual_rows(check_rows, nw_rows, seed)
                    unseen = (X[rows], labels[rows]) if auto_lipschitz else None
                    if held is None:
                        self.metric_.fit(*fit_args, groups=fit_groups, unseen=unseen)
                    else:  # the check's and the kernel rows' coordinates: each row's scores predicted once
                        at = np.zeros(n, np.intp)
                        at[check_rows], at[nw_rows] = np.arange(check_rows.shape[0]), np.arange(nw_rows.shape[0])
                        kernel = (X[nw_rows], np.isin(rows, check_rows), at[rows])
                        mapped_check, mapped_nw = self.metric_.fit_transform_held_out(
                            *fit_args, groups=fit_groups, held_out=held, unseen=unseen, kernel=kernel)
                elif uses_labels:  # the pilot rows are the map rows: their coordinates come with the fit
                    mapped_fit_rows = self.metric_.fit_transform(*fit_args, groups=fit_groups)
                else:
                    self.metric_.fit(*fit_args, groups=fit_groups)
        self.metric_rows_, self.check_rows_, self.nw_rows_ = metric_rows, check_rows, nw_rows
        self.metric_report_ = getattr(self.metric_, "report_", None)
        if self.metric_ is not None:
            self._say(f"metric={self.metric!r} fitted on {map_rows.shape[0] if uses_labels else n} rows")
            if self.metric_report_ is not None and self._verbosity() >= 2:
                self._say(str(self.metric_report_).splitlines()[0], level=2)
        if auto_lipschitz:  # what the check needs after the kernel sums are in place (_finish_fit)
            if kind == "auto":  # the two-constant space states its own L (LearnedSpace.lipschitz_)
                pilot = None
            else:
                pilot = (X[map_rows] if self.metric_ is None else
                         mapped_fit_rows if mapped_fit_rows is not None else self.metric_.transform(X[map_rows]))
            self._held = (pilot, labels[map_rows], X[check_rows], self.classes_[labels[check_rows]], labels,
                          mapped_check)
            self.lipschitz_ = 1.0  # replaced by the chosen value in _finish_fit, before the fit returns
        Z = X[nw_rows] if mapped_nw is None else mapped_nw
        if self.metric_ is not None and mapped_nw is None:
            Z = self.metric_.transform(Z)
        return np.ascontiguousarray(Z, dtype=dtype), labels[nw_rows], nw_share_weights(weights, nw_rows, dtype)

    def _warn_assumption_units(self) -> None:
        """``metric="auto"`` (the default) with a numeric ``lipschitz`` or a ``margin``: say once per fit
        that the number is read in the learned space's units, and how to state it on the features as given."""
        if metric_kind(getattr(self, "metric", None)) != "auto" or _auto_lipschitz(self):
            return
        given = (f"lipschitz={self.lipschitz!r}" if self.margin is None else f"margin={self.margin!r}")
        if self.margin is None and self.lipschitz is None:
            return  # no assumption, no bound: nothing is read in any units
        warnings.warn(
            f"{_UNITS_WARNING_START} ({given}) is read in the units of the space that metric='auto' (the default) "
            "learns, metric_.transform(X), not in the units of the features as given. For the paper's "
            "classifier on the features as given pass metric=None; to have L chosen on held-out rows in the "
            "learned space leave lipschitz='auto' (the default).",
            UserWarning, stacklevel=caller_stacklevel(),
        )

    # -- cross-fitting --------------------------------------------------------------------------
    def _fit_cross(self, X, y, sample_weight, groups) -> "BoundedClassifierBase":
        """Cross-fitting: one clone per layout of :func:`~nwbound.spaces.cross_fit_layouts`, each at
        level δ/(number of models), their intervals intersected."""
        check_cross_fit_metric(self.cross_fit, getattr(self, "metric", None))
        dtype = np.float64 if getattr(self, "dtype", None) is None else self._check_params()[0]
        Xv, labels, weights = self._validate_training_data(X, y, sample_weight, dtype)
        groups = check_groups(groups, Xv.shape[0])
        self._warn_assumption_units()
        with _split_settings_errors(self, labels, groups):
            layouts = cross_fit_layouts(labels, self.cross_fit, check_fraction(self.metric_fraction), groups=groups,
                                        random_state=split_seed(getattr(self, "random_state", None)))
        self._say(f"cross_fit={self.cross_fit!r}: {len(layouts)} models on {Xv.shape[0]} training rows, each at "
                  f"level delta/{len(layouts)}")
        halves = []
        with warnings.catch_warnings():  # said once, above, not once per model
            warnings.filterwarnings("ignore", category=UserWarning, message=_UNITS_WARNING_START)
            for i, layout in enumerate(layouts):
                half = clone(self).set_params(cross_fit=False, **self._cross_model_params,
                                              **self._cross_model_settings(len(layouts)))
                half._forced_split = layout
                half._judges_for_whole = i == 0 and self._fits_point_model()  # _fit_point_estimate's judge
                half._fit_started, half._progress_label = self._fit_started, f"model {i + 1}/{len(layouts)}"
                halves.append(half.fit(X, y, sample_weight=sample_weight, groups=groups))
            shared = shared_residual_raise([half.metric_ for half in halves])
            if shared is not None:  # one model's raise is every model's: those below it choose L again with it
                self._say(f"L_r raised to {shared:.3g} in one model: the models below it take it and check L again")
                for half in halves:
                    if half.metric_.residual_lipschitz_ < shared:
                        half._take_shared_raise(shared)
        for half in halves:
            half.__dict__.pop("_held_for_share", None)
        self.metric_rows_, self.nw_rows_ = layouts[0]
        self._adopt_cross_models(halves)
        self._fit_point_estimate(Xv, labels, weights)
        self._say("fit done")
        return self

    #: Parameters every cross-fitted model is fitted (and restored) with, beside ``cross_fit=False``.
    _cross_model_params: dict = {}

    def _fit_point_estimate(self, X: np.ndarray, labels: np.ndarray, weights: np.ndarray | None) -> "BoundedClassifierBase":
        """The last step of ``fit``, on every validated training row (the classifiers' own; none here)."""
        return self

    def _point_estimate(self, X: Any, out: Any) -> Any:
        """``out`` (an interval or a dict of them) with the reported point estimate (the classifiers' own)."""
        return out

    def _fits_point_model(self) -> bool:
        """Whether ``fit`` fits a point model where the space has a score model (the classifiers' own)."""
        return False

    def _cross_model_settings(self, n_models: int) -> dict[str, Any]:
        """The settings each of ``n_models`` cross-fitted models predicts with: this estimator's
        bound and predict-time parameters as they are now, ``delta`` divided by ``n_models``.

        ``lipschitz`` is passed as it is: ``"auto"`` keeps each model's own chosen L (its own space,
        its own ``lipschitz_``), a number is every model's, and ``"auto"`` after a fit with a number
        is refused by each model as on a single one (:meth:`_bound_spec`).
        """
        params = self.get_params(deep=False)
        settings = {name: params[name] for name in (*BOUND_PARAMETERS, *self._predict_time_parameters)
                    if name in params}
        settings["delta"] = divided_delta(self.delta, n_models)
        return settings

    def _cross_models(self) -> list:
        """``cross_fit_models_`` set to this estimator's current settings, for every predict path of
        a cross-fitted model (the one rule, :meth:`_cross_model_settings`).

        This estimator is checked first (:meth:`_check_fitted`): a fit-time parameter changed since
        fit raises, naming it, as on one model. The models then show the settings they predict
        with (``cross_fit_models_[0].delta`` is ``delta / K``); ``set_params`` on one of them is
        overwritten at the next predict of this estimator.
        """
        self._check_fitted()
        models = self.cross_fit_models_
        settings = self._cross_model_settings(len(models))
        for model in models:
            model.set_params(**settings)
        return models

    def _uses_cross_fit(self, X: Any = None) -> bool:
        """Whether ``fit(X)`` cross-fits (:func:`nwbound.spaces.auto_cross_fits`; user guide, "Cross-fitting")."""
        return auto_cross_fits(getattr(self, "cross_fit", False), getattr(self, "metric", None),
                               getattr(self, "metric_fraction", 0.4), _num_samples(X) if X is not None else 0)

    def _is_cross_fitted(self) -> bool:
        return getattr(self, "cross_fit_models_", None) is not None and getattr(self, "_cross_fitted", False)

    def _no_cross_fit(self, method: str) -> None:
        if self._is_cross_fitted():
            raise ValueError(
                f"{method} is not defined for a cross-fitted model (cross_fit={self.cross_fit!r}): its "
                f"{len(self.cross_fit_models_)} models have different spaces. Call it on one of cross_fit_models_ "
                f"(each at level delta/{len(self.cross_fit_models_)})."
            )


    def _cross_interval(self, X, bounds: Any):
        """The intersection of the models' intervals, each at level δ/K (:func:`~nwbound.spaces.intersect_intervals`)."""
        models = self._cross_models()  # checked, and set to this estimator's current settings
        if isinstance(bounds, str):
            return models[0].predict_interval(X, bounds=bounds)  # raises the explanation
        out = self._cross_intervals(X, bounds)
        if bounds is not None:
            return out
        return self._warned_cross(out)

    def _cross_intervals(self, X, bounds: Any, *, required: bool = True) -> dict | None:
        """``{name: intersected interval}`` without any warning; ``bounds=None``: ``{None: …}`` at each
        model's own setting (this estimator's current one, δ/K: the caller ran :meth:`_cross_models`),
        or, where ``required`` is False and the models have no bound (neither ``lipschitz`` nor
        ``margin``), None."""
        halved = divided_bounds({None: {}} if bounds is None else bounds, len(self.cross_fit_models_))
        specs = []
        for h in self.cross_fit_models_:
            if bounds is None and not required:  # predict_proba: no word about the bound's form either
                h._check_fitted()
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", category=UserWarning, message=_CHERNOFF_FALLBACK_START)
                    spec = h._own_spec()
                if spec is None:
                    return None
                specs.append({None: spec})
            else:  # bounds=None: each model's own setting; otherwise the settings, δ divided by K.
                specs.append(h._resolve_bounds(None if bounds is None else dict(enumerate(halved.values()))))
        parts = []
        for i, (h, s) in enumerate(zip(self.cross_fit_models_, specs)):
            with _feature_names_said(i > 0):
                parts.append(list(h._intervals(X, s).values()))
        return self._intersected(list(halved), parts)

    def _finish_fit(self) -> "BoundedClassifierBase":
        """``lipschitz="auto"``: choose L on the check rows now that the kernel sums are in place."""
        held = getattr(self, "_held", None)
        if held is None:
            if getattr(self, "_forced_split", None) is None:  # a cross-fitted model: the cross-fit says it
                self._say("fit done")
            return self
        self._held = None
        if getattr(self, "_forced_split", None) is not None:  # a cross-fitted model may take a shared raise
            self._held_for_share = held
        pilot_Z, pilot_y, X_check, y_check, train_labels, mapped_check = held
        self._say(f"kernel sums on {self.nw_rows_.shape[0]} rows in place; lipschitz='auto': checking L on "
                  f"{X_check.shape[0]} held-out rows")
        with _split_settings_errors(self, train_labels):
            source = ""
            if pilot_Z is None:  # metric="auto": L = √(1 + 1/c²) by the two-constant assumption (LearnedSpace)
                pilot, source = two_constant_pilot(self.metric_)
            else:
                pilot = pilot_lipschitz(pilot_Z, pilot_y, random_state=split_seed(getattr(self, "random_state", None)))
            self._choice_beta = pilot  # bandwidth="auto" chooses at the pilot L: intervals nested in L
            self._check_memo = {}
            try:
                report = choose_lipschitz(self, pilot_Z, pilot_y, X_check, y_check, units=lipschitz_units(self.metric_),
                                          random_state=split_seed(getattr(self, "random_state", None)), pilot=pilot,
                                          pilot_source=source, mapped=mapped_check)
            finally:
                memo = self.__dict__.pop("_check_memo")
        self._keep_check_proba(memo.get("proba"), X_check.shape[0])
        self.lipschitz_, self.lipschitz_report_ = report.value, report
        self._validate_bound_params(*self._bound_args[:1], bound_required=self._bound_args[1],
                                    localized=self._bound_args[2])
        verdict = ("every grid L rejected" if report.all_rejected else
                   "the pilot kept" if report.value == report.pilot else "raised above the pilot")
        self._say(f"L = {report.value:.4g} ({verdict}; {len(report.selection.grid)} value(s) checked)")
        if self._verbosity() >= 2:
            self._say(str(report.selection), level=2)
        if getattr(self, "_forced_split", None) is None:
            self._say("fit done")
        return self

    def _take_shared_raise(self, value: float) -> "BoundedClassifierBase":
        """A cross-fitted model below the largest raise of ``L_r`` among the models: its space takes
        it (:meth:`~nwbound.spaces.LearnedSpace.share_residual_raise`) and the L check runs again on
        the same rows, from the new pilot: what a fit with ``residual_lipschitz_floor=value`` gives."""
        self.metric_.share_residual_raise(value)
        self.metric_report_ = self.metric_.report_
        self._held = self.__dict__.pop("_held_for_share")
        return self._finish_fit()

    def _keep_check_proba(self, proba: np.ndarray | None, n_check: int) -> None:
        """Keep the L check's ``p̂`` of its rows as ``_check_proba = (training rows, p̂)``, where a point
        model's judge will read them (:meth:`_judges_point_model`): the same as ``predict_proba`` of
        those rows (every setting of the check chooses its bandwidths at the pilot L, as the model does;
        a query's sums do not depend on the other queries). Taken (and dropped) by the end of ``fit``."""
        self._check_proba = None
        if proba is None or not self._judges_point_model():
            return
        keep = check_subset(n_check, split_seed(getattr(self, "random_state", None)))
        rows = self.check_rows_ if keep is None else self.check_rows_[keep]
        if rows.shape[0] == proba.shape[0]:
            self._check_proba = (rows, proba)

    def _judges_point_model(self) -> bool:
        """Whether a point model is judged on this model's check rows (the classifiers' own; none here)."""
        return False

    def _chooses_lipschitz(self) -> bool:
        """:func:`_auto_lipschitz` of this estimator (for :class:`._fitted_state._LearnedState`)."""
        return _auto_lipschitz(self)

    def _snapshot_fit_params(self) -> None:
        """Remember the parameters that shape the fitted state (see :meth:`_check_fitted`)."""
        live = set(BOUND_PARAMETERS) | set(self._predict_time_parameters)
        self._fit_params = {
            name: copy.deepcopy(value) if isinstance(value, (np.ndarray, list, tuple, dict)) else value
            for name, value in self.get_params(deep=False).items()
            if name not in live
        }

    def _check_fitted(self) -> None:
        """Fitted, with the parameters as fit left them: the bound parameters (``BOUND_PARAMETERS``)
        and the predict-time ones may change with ``set_params`` (checked here); any other needs a refit."""
        check_is_fitted(self)
        # None: a pickle from before the check
        check_params_as_fitted(self, getattr(self, "_fit_params", None),
                               live=tuple(BOUND_PARAMETERS) + tuple(self._predict_time_parameters))
        self._validate_params()  # set_params does not validate: the predict-time parameters are checked here
        check_choice(self.empty_neighborhood, "empty_neighborhood", EMPTY_NEIGHBORHOOD_RULES)

    def _own_spec(self) -> BoundSpec | None:
        """This estimator's own bound setting from its current parameters (None without an assumption)."""
        return self._bound_spec(self._bound_kernel(), required=False, localized=self._is_localized())

    @property
    def bound_spec_(self) -> BoundSpec | None:
        """The bound setting of the current parameters (None without ``lipschitz``/``margin``); a
        cross-fitted model (the default below the row cap) has one per model (``cross_fit_models_``)."""
        check_is_fitted(self)
        self._no_cross_fit("bound_spec_")
        return self._own_spec()

    @property
    def beta_(self) -> float | None:
        """L or 1/γ of the current parameters (None without an assumption)."""
        spec = self.bound_spec_
        return None if spec is None else spec.beta

    @property
    def delta_prime_(self) -> float:
        """Per-class failure probability used in ε: δ, or δ/C under ``coverage="simultaneous"`` with C ≥ 3."""
        check_is_fitted(self)
        coverage = check_choice(self.coverage, "coverage", COVERAGE_NAMES)
        return effective_delta(check_open_unit(self.delta, "delta"), self.classes_.shape[0], coverage)

    def _resolve_bounds(self, bounds: Any) -> dict[Any, BoundSpec]:
        """``{None: own setting}`` or ``{name: setting}`` for ``bounds`` (see :meth:`predict_interval`)."""
        self._check_fitted()
        kernel, localized = self._bound_kernel(), self._is_localized()
        if bounds is None:
            spec = self._own_spec()  # the current parameters: set_params(lipschitz=...) needs no refit
            if spec is None:
                check_beta(self.lipschitz, self.margin, required=True)  # raises the explanation
            return {None: spec}
        if isinstance(bounds, str):
            raise TypeError(
                "bounds must be a mapping {name: {setting: value}} or a list of bound forms, e.g. "
                f"bounds=[{bounds!r}]; to change this estimator's own bound use set_params(bound={bounds!r}) "
                "(it takes effect at the next predict, without a refit)."
            )
        if isinstance(bounds, Mapping):
            items = list(bounds.items())
        else:
            try:
                items = [(form, {"bound": form}) for form in bounds]
            except TypeError:
                raise TypeError(
                    f"bounds must be None, a mapping {{name: {{setting: value}}}} or a list of bound forms, "
                    f"got {type(bounds).__name__}."
                ) from None
        if not items:
            raise ValueError("bounds is empty: give at least one bound setting (or None for this estimator's own).")
        specs = {}
        for name, overrides in items:
            if not isinstance(overrides, Mapping):
                raise TypeError(f"bounds[{name!r}] must be a mapping of settings, got {type(overrides).__name__}.")
            specs[name] = self._bound_spec(kernel, overrides, required=True, localized=localized)
        return specs

    def _bound_kernel(self) -> Kernel:
        """The kernel whose values the bound sees."""
        return self.kernel_

    def _is_localized(self) -> bool:
        return False

    # -- predict helpers ---------------------------------------------------------------------
    def _validate_queries(self, X, *, keep_namespace: bool = False, checked: bool = False):
        """Checked queries in the fit dtype; with ``keep_namespace``, ``array_api_dispatch`` queries stay
        in their namespace and device (:func:`~nwbound.estimators._dispatch.validate_queries`). ``checked``:
        the caller ran :meth:`_check_fitted` in this call already (scikit-learn's parameter validation,
        about 0.3 ms, runs once per ``predict*``)."""
        if not checked:
            self._check_fitted()
        space = getattr(self, "metric_", None)
        if space is None:
            return validate_queries(self, X, self._fit_dtype, keep_namespace=keep_namespace, unit=self._unit())
        # metric=: queries come in the original features (n_features_in_), and are mapped here,
        # before any kernel sum, neighbour search or bounding-box test.
        given = self.__dict__.get("_mapped_queries")  # (X, metric_.transform(X)) of _interval_settings
        Xv = validate_queries(self, X, self._fit_dtype)
        if given is not None and given[0] is X and isinstance(X, np.ndarray) and X.dtype == Xv.dtype:
            return np.ascontiguousarray(given[1], dtype=self._fit_dtype)  # the same rows, mapped once
        return np.ascontiguousarray(space.transform(Xv), dtype=self._fit_dtype)

    def _unit(self) -> float:
        """The power of two the fitted features are stored in (:func:`~nwbound._numerics.feature_unit`)."""
        return float(getattr(self, "_feature_unit", 1.0))  # older pickles lack it: 1

    def _keeps_device_queries(self) -> bool:
        """Whether ``predict*`` compute on ``array_api_dispatch`` queries where they live (``device=``)."""
        return False

    def _dispatched_queries(self, X):
        """``(X, restore)`` of :func:`~nwbound.estimators._dispatch.queries_on_host` for ``predict*``."""
        return queries_on_host(X, keep_on_device=self._keeps_device_queries())

    def _proba_kappa(self, X) -> tuple[np.ndarray, np.ndarray]:
        """``(p̂, κ)`` as NumPy, of queries from :meth:`_dispatched_queries` (subclasses)."""
        raise NotImplementedError

    def _proba_vacuous(self, X) -> tuple[np.ndarray, np.ndarray]:
        """``(p̂, vacuous)``. Cross-fitted: ``predict_interval(X).proba`` (the models' κ-weighted mean
        ``p̂`` moved into the intersected box, :func:`~nwbound.spaces.intersect_intervals`), computed
        without any bound warning; without a bound (neither ``lipschitz`` nor ``margin``) there is
        no box, and ``p̂`` is the κ-weighted mean. Vacuous where every model is."""
        check_is_fitted(self)
        if self._is_cross_fitted():
            models = self._cross_models()  # checked, and set to this estimator's current settings
            iv = self._cross_intervals(X, None, required=False)
            if iv is not None:
                iv = self._point_estimate(X, iv[None])
                return iv.proba, iv.vacuous
            parts = []
            for i, h in enumerate(models):
                with _feature_names_said(i > 0):
                    parts.append(h._proba_kappa(X))
            proba = kappa_weighted_proba([p for p, _ in parts], [k for _, k in parts])
            kappa = np.sum([np.asarray(k) for _, k in parts], axis=0)
        else:
            proba, kappa = self._proba_kappa(X)
        return proba, ~(np.asarray(kappa) > 0)

    def _proba(self, X) -> np.ndarray:
        """:meth:`predict_proba` as NumPy; warns when most queries are vacuous (never about bounds)."""
        proba, vacuous = self._proba_vacuous(X)
        warn_if_vacuous(vacuous, context=AdviceContext.from_estimator(self), stacklevel=caller_stacklevel(1))
        return proba

    def _interval_settings(self, X, bounds: Mapping, certified_only: frozenset = frozenset(),
                           mapped: np.ndarray | None = None) -> dict:
        """``predict_interval(X, bounds=bounds)`` for a mapping of settings, from the same pass, except
        that the settings named in ``certified_only`` give :class:`~._certified.CertifiedRows` (``proba``
        and ``certified``, the same as their intervals', at a fraction of the cost): what the held-out
        check of :mod:`nwbound.lipschitz_check` reads of the model's own setting. NumPy results.
        ``mapped``: ``metric_.transform(X)`` where the caller has it (the check's contrasts), read instead
        of mapping ``X`` again where ``X`` is a NumPy array in the fit dtype (validation leaves it as it is)."""
        from ._certified import CertifiedRows

        if self._is_cross_fitted() or self._keeps_device_queries():  # the public route, then the two arrays
            out = self.predict_interval(X, bounds=bounds)
            return {name: CertifiedRows.of(iv) if name in certified_only else iv for name, iv in out.items()}
        X, _ = self._dispatched_queries(X)
        if mapped is not None:
            self._mapped_queries = (X, mapped)  # read by _validate_queries in this call only
        try:
            out = self._intervals(X, self._resolve_bounds(bounds), certified_only=frozenset(certified_only))
        finally:
            self.__dict__.pop("_mapped_queries", None)
        memo = getattr(self, "_check_memo", None)
        if memo is not None and certified_only:  # _finish_fit's check: its rows' p̂, kept for the point model's judge
            memo.setdefault("proba", out[min(certified_only)].proba)
        return out

    def interval_from_statistics(self, stats: KernelStatistics, bounds: Any = None):
        """Turn kernel statistics into intervals, for this estimator's bound or several settings.

        Parameters
        ----------
        stats : KernelStatistics
            From :meth:`kernel_statistics` (computed with the same ``bounds``),
            possibly merged over training shards.
        bounds : None, mapping or list, default=None
            None: this estimator's own bound setting. A mapping
            ``{name: {setting: value}}`` (settings among ``lipschitz``, ``margin``,
            ``delta``, ``bound``, ``coverage``, ``sigma``, ``ck``) or a list of
            bound forms: one interval per entry.

        Returns
        -------
        PredictionInterval, or dict of name to PredictionInterval when ``bounds`` is given.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
        >>> stats = clf.kernel_statistics([[0.1]])
        >>> clf.interval_from_statistics(stats).proba
        array([[1., 0.]])
        """
        self._no_cross_fit("interval_from_statistics")
        stats.check_bound_form()  # device-form statistics (nwbound.gpu) raise, naming the fix
        check_is_fitted(self)
        n_classes = self.classes_.shape[0]
        if stats.class_sums.ndim != 3 or stats.class_sums.shape[2] != n_classes:
            raise ValueError(
                f"stats hold class sums of shape {tuple(stats.class_sums.shape)} (queries, bandwidths, classes), "
                f"but this model has {n_classes} classes ({self.classes_.tolist()!r}): bound statistics with the "
                "model (or shards restored with the same classes) that computed them."
            )
        specs = self._resolve_bounds(bounds)
        return self._report({name: self._interval(stats, spec) for name, spec in specs.items()}, specs, bounds)

    # -- public API shared by subclasses -----------------------------------------------------
    @blas_limited
    def predict(self, X) -> np.ndarray:
        """Most probable class for each row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        ndarray of shape (n_queries,)
            Elements of ``classes_`` (the argmax of :meth:`predict_proba`). Like
            it, warns (:class:`~nwbound.VacuousPredictionWarning`) when most
            queries are vacuous, and never about bounds.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.linspace(0, 1, 40)[:, None]; y = np.where(X[:, 0] > 0.5, "b", "a")
        >>> NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y).predict([[0.1], [0.9]]).tolist()
        ['a', 'b']
        """
        return self._predict(X)

    def _predict(self, X):
        X, restore = self._dispatched_queries(X)  # array_api_dispatch: numeric labels go back to X's namespace
        proba = self._proba(X)  # first: it checks that the estimator is fitted
        return restore(self.classes_[np.argmax(proba, axis=1)])

    @blas_limited
    def score(self, X, y, sample_weight=None) -> float:
        """Accuracy of :meth:`predict` on ``X`` against ``y``.

        Like ``predict``, it warns (:class:`~nwbound.diagnostics.VacuousPredictionWarning`)
        when most queries are vacuous, and never about bounds.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        y : array-like of shape (n_queries,)
            True labels.
        sample_weight : array-like of shape (n_queries,), default=None

        Returns
        -------
        float
            The (weighted) share of rows whose predicted class is ``y``.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.2).fit(X, y).score(X, y)
        1.0
        """
        from sklearn.metrics import accuracy_score

        return float(accuracy_score(y, self._predict(X), sample_weight=sample_weight))

    def __sklearn_is_fitted__(self) -> bool:
        # Set as the last step of a successful fit: a fit that raised half-way
        # (after validate_data set n_features_in_) must not count as fitted.
        return getattr(self, "_fit_complete", False)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
