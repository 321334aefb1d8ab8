"""What every bounded classifier here shares: assumptions, bound forms, the
empty-neighbourhood rule and the assembly of a :class:`PredictionInterval`."""

from __future__ import annotations

import numpy as np
from numbers import Integral, Real

from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from typing import Any, Mapping

from .._result import PredictionInterval
from .._validation import check_beta, check_choice, check_open_unit, check_positive
from ..bounds import BOUND_NAMES, COVERAGE_NAMES, BoundSpec, effective_delta, effective_sample_size
from ..diagnostics import warn_if_useless
from ..kernels import Kernel
from ._device import queries_on_host, training_data_on_host, validate_queries
from ._statistics import KernelStatistics

__all__ = ["BoundedClassifierBase", "BOUND_PARAMETERS", "EMPTY_NEIGHBORHOOD_RULES"]

EMPTY_NEIGHBORHOOD_RULES = ("prior", "uniform", "raise")
# The parameters a bound setting may override (predict_interval(X, bounds=...)).
BOUND_PARAMETERS = ("lipschitz", "margin", "delta", "bound", "coverage", "sigma", "ck")


class BoundedClassifierBase(ClassifierMixin, BaseEstimator):
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
    >>> clf = DyadicClassifier(resolution=2, lipschitz=1.0).fit(X, y)
    >>> out = clf.predict_interval(X[:2], bounds={"L=1": {}, "L=0.5": {"lipschitz": 0.5}})
    >>> {name: round(float(iv.epsilon[0, 0]), 3) for name, iv in out.items()}
    {'L=1': 0.321, 'L=0.5': 0.196}
    """

    # scikit-learn's declarative checks; the fit-time checks behind them add
    # what a constraint cannot say (units of L, which fix applies).
    _parameter_constraints: dict = {
        "lipschitz": [Interval(Real, 0, None, closed="neither"), None],
        "margin": [Interval(Real, 0, None, closed="neither"), None],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "bound": [StrOptions(set(BOUND_NAMES))],
        "coverage": [StrOptions(set(COVERAGE_NAMES))],
        "sigma": [Interval(Real, 0, None, closed="neither")],
        "empty_neighborhood": [StrOptions(set(EMPTY_NEIGHBORHOOD_RULES))],
    }

    # -- fit helpers -------------------------------------------------------------------------
    def _validate_training_data(self, X, y, sample_weight, dtype):
        self._fit_complete = False
        X, y, sample_weight = training_data_on_host(X, y, sample_weight)  # array_api_dispatch inputs
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], ensure_min_samples=1)
        X = np.ascontiguousarray(X, dtype=dtype)
        check_classification_targets(y)
        classes, labels = np.unique(y, return_inverse=True)
        if classes.shape[0] < 2:
            raise ValueError(
                f"y has only one class ({classes[0]!r}); a classifier needs at least 2 classes to train."
            )
        weights = None
        if sample_weight is not None:
            weights = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
            if not np.all(np.isfinite(weights)):
                raise ValueError("sample_weight must be finite.")
            if not np.any(weights > 0):
                raise ValueError("sample_weight sums to 0: at least one sample needs a positive weight.")
            # Only relative weights matter (p̂ and every bound are invariant to a common
            # factor): scale the largest to 1, so that weights like 1e308 cannot overflow
            # Σ(wK)². κ and ΣK² are then in units of the largest weight.
            weights = weights / weights.max()
            weights = None if np.all(weights == 1.0) else weights.astype(dtype)
        w = np.ones(X.shape[0]) if weights is None else weights.astype(np.float64)
        prior = np.bincount(labels, weights=w, minlength=classes.shape[0])
        self._fit_dtype = np.dtype(dtype)
        self.classes_ = classes
        self.class_prior_ = prior / prior.sum()
        return X, labels.astype(np.intp), weights

    def _restore_inputs(self, state, classes: np.ndarray, prior: np.ndarray, n_features: int, dtype) -> None:
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

    def _bound_spec(self, kernel: Kernel, overrides: Mapping[str, Any] | None = None, *,
                    required: bool = True, localized: bool = False) -> BoundSpec | None:
        """The bound setting of this estimator's parameters, with ``overrides`` applied.

        Returns None when no assumption (``lipschitz``/``margin``) is given and
        ``required`` is False.
        """
        params = {name: getattr(self, name, None) for name in BOUND_PARAMETERS}
        if overrides:
            unknown = sorted(set(overrides) - set(BOUND_PARAMETERS))
            if unknown:
                raise ValueError(
                    f"Unknown bound setting(s) {unknown}; a setting may override {', '.join(BOUND_PARAMETERS)}."
                )
            params.update(overrides)
            if "lipschitz" in overrides and "margin" not in overrides:
                params["margin"] = None
            if "margin" in overrides and "lipschitz" not in overrides:
                params["lipschitz"] = None
        delta = check_open_unit(params["delta"], "delta")
        form = check_choice(params["bound"], "bound", BOUND_NAMES)
        coverage = check_choice(params["coverage"], "coverage", COVERAGE_NAMES)
        sigma = check_positive(params["sigma"], "sigma")
        ck = check_positive(params["ck"], "ck", allow_none=True)
        if ck is None:
            ck = kernel.sup
        elif form == "paper" and ck < kernel.sup:
            raise ValueError(
                f"ck={ck:g} is below sup K = {kernel.sup:g}, so K/ck > 1 and the paper's bound does not "
                f"hold; use ck >= {kernel.sup:g} (the default ck=None uses sup K)."
            )
        if form == "chernoff" and not localized and not kernel.nonincreasing:
            raise ValueError(
                f"bound='chernoff' over all training points uses a distance histogram, which needs a kernel "
                f"that does not increase with distance; kernel {kernel.name!r} does. Use the exact per-point "
                "form (n_neighbors=k, the localized classifier) or bound='hoeffding'."
            )
        beta = check_beta(params["lipschitz"], params["margin"], required=required)
        if beta is None:
            return None
        return BoundSpec(
            form=form,
            beta=beta,
            delta_prime=effective_delta(delta, self.classes_.shape[0], coverage),
            sigma=sigma,
            ck=ck,
            kernel_sup=kernel.sup,
            kernel_radius=kernel.radius,
        )

    def _validate_bound_params(self, kernel: Kernel, *, bound_required: bool, localized: bool = False) -> None:
        """Check the assumption and bound parameters; set ``beta_``, ``delta_prime_``, ``bound_spec_``."""
        check_choice(self.empty_neighborhood, "empty_neighborhood", EMPTY_NEIGHBORHOOD_RULES)
        spec = self._bound_spec(kernel, required=bound_required, localized=localized)
        self.bound_spec_ = spec
        self.beta_ = None if spec is None else spec.beta
        coverage = check_choice(self.coverage, "coverage", COVERAGE_NAMES)
        self.delta_prime_ = effective_delta(check_open_unit(self.delta, "delta"), self.classes_.shape[0], coverage)

    def _resolve_bounds(self, bounds: Any) -> dict[Any, BoundSpec]:
        """``{None: own setting}`` or ``{name: setting}`` for ``bounds`` (see :meth:`predict_interval`)."""
        check_is_fitted(self)
        kernel, localized = self._bound_kernel(), self._is_localized()
        if bounds is None:
            if self.bound_spec_ is None:
                check_beta(self.lipschitz, self.margin, required=True)  # raises the explanation
            return {None: self.bound_spec_}
        if isinstance(bounds, str):
            raise TypeError(
                "bounds must be a mapping {name: {setting: value}} or a list of bound forms, e.g. "
                f"bounds=[{bounds!r}]; to change this estimator's own bound use set_params(bound={bounds!r})."
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
    def _validate_queries(self, X, *, keep_namespace: bool = False):
        """Checked queries in the fit dtype; with ``keep_namespace``, ``array_api_dispatch`` queries stay
        in their namespace and device (:func:`~nwbound.estimators._device.validate_queries`)."""
        check_is_fitted(self)
        return validate_queries(self, X, self._fit_dtype, keep_namespace=keep_namespace)

    def _keeps_device_queries(self) -> bool:
        """Whether ``predict*`` compute on ``array_api_dispatch`` queries where they live (``device=``)."""
        return False

    def _dispatched_queries(self, X):
        """``(X, restore)`` of :func:`~nwbound.estimators._device.queries_on_host` for ``predict*``."""
        return queries_on_host(X, keep_on_device=self._keeps_device_queries())

    def _proba(self, X) -> np.ndarray:
        """:meth:`predict_proba` as NumPy, of queries from :meth:`_dispatched_queries` (subclasses)."""
        raise NotImplementedError

    def _fallback_proba(self, class_sums: np.ndarray, kappa: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``p̂ = class_sums/κ``; rows with κ = 0 follow ``empty_neighborhood``."""
        vacuous = ~(kappa > 0)
        if vacuous.any() and self.empty_neighborhood == "raise":
            raise ValueError(
                f"{int(vacuous.sum())} of {kappa.shape[0]} queries have no training mass within the kernel "
                "support (kappa = 0). Increase the bandwidth, or set empty_neighborhood='prior' or "
                "'uniform' to predict a fallback with a vacuous bound (epsilon = 1)."
            )
        proba = np.empty_like(class_sums, dtype=np.float64)
        np.divide(class_sums, kappa[:, None], out=proba, where=~vacuous[:, None])
        if self.empty_neighborhood == "prior":
            proba[vacuous] = self.class_prior_
        else:
            proba[vacuous] = 1.0 / self.classes_.shape[0]
        # κ can be tiny (sums of tiny weights): keep p̂ a distribution.
        np.clip(proba, 0.0, 1.0, out=proba)
        return proba, vacuous

    def _interval(self, stats: KernelStatistics, spec: BoundSpec) -> PredictionInterval:
        """One setting's interval; with several bandwidths, each query takes the λ of least ε.

        ε used for that choice depends on the inputs only (never the labels):
        for ``"chernoff"`` it is the Hoeffding ε on the same points.
        """
        if stats.n_bandwidths > 1:
            stats = stats.select(spec.least_epsilon(*spec.statistics_parts(stats)))
        class_sums = stats.class_sums[:, 0]
        kappa = class_sums.sum(axis=1)
        proba, vacuous = self._fallback_proba(class_sums, kappa)
        lower, upper, epsilon, bias, sampling = spec.limits(stats, proba)
        return PredictionInterval(
            proba=proba,
            lower=lower,
            upper=upper,
            epsilon=epsilon,
            bias=bias,
            sampling=sampling,
            kappa=kappa,
            n_eff=effective_sample_size(kappa, stats.sq_sum[:, 0]),
            vacuous=vacuous,
            bandwidth=np.asarray(stats.bandwidth_matrix()[:, 0], dtype=np.float64).copy(),
            outside_box=stats.outside_box,
        )

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
        >>> clf = NadarayaWatsonClassifier(bandwidth=0.2, lipschitz=1.0).fit(X, y)
        >>> stats = clf.kernel_statistics([[0.1]])
        >>> clf.interval_from_statistics(stats).proba
        array([[1., 0.]])
        """
        specs = self._resolve_bounds(bounds)
        return self._report({name: self._interval(stats, spec) for name, spec in specs.items()}, specs, bounds)

    def _report(self, out: dict, specs: dict, bounds: Any, stacklevel: int = 4):
        """Return the intervals as asked; warn about this estimator's own setting when it cannot help."""
        if bounds is not None:
            return out
        # Said once per call site (Python's default warning filter), with the cause and the fix.
        # stacklevel 4: warn_if_useless → _report → the public method → the user's line (5 from
        # _proba, one frame deeper).
        iv = out[None]
        if not isinstance(iv.proba, np.ndarray):  # tensors from the device path: decide there first
            from ._device import interval_on_host, useless_on_device

            if not useless_on_device(iv):
                return iv
            iv = interval_on_host(iv)  # the full report (and only then) on the host
        warn_if_useless(iv, beta=specs[None].beta, stacklevel=stacklevel)
        return out[None]

    # -- public API shared by subclasses -----------------------------------------------------
    def predict(self, X) -> np.ndarray:
        """Most probable class for each row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        ndarray of shape (n_queries,)
            Elements of ``classes_`` (the argmax of :meth:`predict_proba`).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.linspace(0, 1, 40)[:, None]; y = np.where(X[:, 0] > 0.5, "b", "a")
        >>> NadarayaWatsonClassifier(bandwidth=0.2, lipschitz=1.0).fit(X, y).predict([[0.1], [0.9]]).tolist()
        ['a', 'b']
        """
        X, restore = self._dispatched_queries(X)  # array_api_dispatch: numeric labels go back to X's namespace
        proba = self._proba(X)  # first: it checks that the estimator is fitted
        return restore(self.classes_[np.argmax(proba, axis=1)])

    def __sklearn_is_fitted__(self) -> bool:
        # Set as the last step of a successful fit: a fit that raised half-way
        # (after validate_data set n_features_in_) must not count as fitted.
        return getattr(self, "_fit_complete", False)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
