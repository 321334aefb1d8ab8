"""The predict-time rules of the Nadaraya-Watson classifiers, free of scikit-learn: the bound
setting from the parameters, the empty-neighbourhood rule, one setting's interval from kernel
statistics, and the parameters' checks.

Private to :mod:`nwbound.estimators`: :class:`~nwbound.estimators._base.BoundedClassifierBase`
and :class:`~nwbound.NadarayaWatsonClassifier` inherit them, and so does a model file's frozen
route (:mod:`nwbound.estimators._frozen`), which predicts without scikit-learn: one copy of each
rule for both.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping

import numpy as np

from .._result import PredictionInterval
from .._stack import caller_stacklevel
from .._validation import check_beta, check_choice, check_dtype, check_int_range, check_n_jobs, check_open_unit, check_positive
from ..bounds import BOUND_NAMES, COVERAGE_NAMES, BoundSpec, effective_delta, effective_sample_size, get_bound_form
from ..engine import KernelStatistics
from ..diagnostics import AdviceContext, warn_if_contradicting, warn_if_useless
from ..kernels import Kernel, get_kernel
from ..spaces import contradicting_rows, intersect_intervals
from ._certified import CertifiedRows

__all__ = ["BOUND_PARAMETERS", "EMPTY_NEIGHBORHOOD_RULES"]

EMPTY_NEIGHBORHOOD_RULES = ("prior", "uniform", "raise")
# The parameters a bound setting may override (predict_interval(X, bounds=...)). They are read
# when predicting: set_params(lipschitz=...) on a fitted estimator takes effect without a refit.
BOUND_PARAMETERS = ("lipschitz", "margin", "delta", "bound", "coverage", "sigma", "ck")


class _Intersected(dict):
    """``{name: intersected interval}`` of a cross-fitted model, with ``contradicting[name]``: the
    rows whose models' intervals contradict each other (:func:`~nwbound.spaces.contradicting_rows`)."""

    contradicting: dict


class _IntervalRules:
    """The bound setting and the intervals of a fitted classifier, from its attributes: the
    parameters in ``BOUND_PARAMETERS``, ``empty_neighborhood``, ``classes_``, ``class_prior_``,
    ``lipschitz_`` and ``_choice_beta`` (``lipschitz="auto"``)."""

    def _intersected(self, names: list, parts: list[list]) -> _Intersected:
        """A cross-fitted model's intervals: per setting in ``names``, its models' intervals (``parts``:
        one list per model, in the order of ``names``) intersected, with the rows they contradict on."""
        out = _Intersected({name: intersect_intervals(*[part[i] for part in parts]) for i, name in enumerate(names)})
        out.contradicting = {name: contradicting_rows([part[i] for part in parts]) for i, name in enumerate(names)}
        return out

    def _warned_cross(self, out: _Intersected) -> PredictionInterval:
        """A cross-fitted model's own interval (``out[None]``), after its warnings: bounds that cannot
        help, and models that contradict each other on more rows than ``delta`` allows."""
        # Each model has its own L in its own space: the advice gives L as a factor (beta=None), in
        # the terms of this estimator's settings.
        warn_if_useless(out[None], beta=None, stacklevel=caller_stacklevel(1), context=AdviceContext.from_estimator(self))
        # Rows where the models contradict each other: a model's interval missed p there; more than δ
        # of them is evidence against the assumption (per_class coverage with C ≥ 3: C·δ).
        n_classes = self.classes_.shape[0]
        per_class = check_choice(self.coverage, "coverage", COVERAGE_NAMES) == "per_class" and n_classes >= 3
        warn_if_contradicting(out.contradicting[None], self.delta,
                              allowed=min(1.0, n_classes * self.delta) if per_class else None,
                              assumption="margin" if getattr(self, "margin", None) is not None else "lipschitz",
                              stacklevel=caller_stacklevel(1), context=AdviceContext.from_estimator(self))
        return out[None]

    def _report(self, out: dict, specs: dict, bounds: Any):
        """Return the intervals as asked; warn about this estimator's own setting when it cannot help."""
        if bounds is not None:
            return out
        # Said once per call site (Python's default warning filter), with the cause and the fix.
        iv = out[None]
        context = AdviceContext.from_estimator(self)
        if not isinstance(iv.proba, np.ndarray):  # tensors from the device path: the report's numbers from there
            from ..engine.device._results import interval_on_host, usefulness_on_device

            # Read with the intervals' own packed copy where they come from intervals_on_device.
            report = usefulness_on_device(iv, getattr(out, "usefulness", None), beta=specs[None].beta,
                                          context=context)
            if report is not None:
                warn_if_useless(report, stacklevel=caller_stacklevel(1))
                return iv
            iv = interval_on_host(iv)  # no rows: the host's report (and its error)
        warn_if_useless(iv, beta=specs[None].beta, stacklevel=caller_stacklevel(1), context=context)
        return out[None]

    def _lipschitz_was_chosen(self) -> bool:
        """Whether ``lipschitz_`` is the L that this fit's held-out check chose (its report, or the
        held-out rows while the fit runs); after a fit with a numeric L it is that number."""
        return getattr(self, "lipschitz_report_", None) is not None or getattr(self, "_held", None) is not None

    def _bound_spec(self, kernel: Kernel, overrides: Mapping[str, Any] | None = None, *,
                    required: bool = True, localized: bool = False) -> BoundSpec | None:
        """The bound setting of this estimator's parameters, with ``overrides`` applied.

        Returns None when no assumption (``lipschitz``/``margin``) is given and
        ``required`` is False.
        """
        params = {name: getattr(self, name, None) for name in BOUND_PARAMETERS}
        if isinstance(params["lipschitz"], str) and params["lipschitz"] == "auto" and params["margin"] is not None:
            params["lipschitz"] = None  # a margin replaces the default L (_auto_lipschitz)
        elif isinstance(params["lipschitz"], str) and params["lipschitz"] == "auto":
            params["lipschitz"] = getattr(self, "lipschitz_", None)  # chosen at fit (held-out check)
            if params["lipschitz"] is None:
                raise ValueError("lipschitz='auto' is chosen when the estimator is fitted: call fit first.")
            overridden = bool(overrides) and ("lipschitz" in overrides or "margin" in overrides)
            # lipschitz_ is the chosen L only when this fit ran the held-out check (its report, or the
            # held-out rows while the fit runs); after a fit with a numeric L it is that number.
            chosen = self._lipschitz_was_chosen()
            if not overridden and not chosen:
                raise ValueError(
                    f"lipschitz='auto' was set after a fit with lipschitz={params['lipschitz']!r}; 'auto' chooses L "
                    "on rows that fit holds out of the kernel sums, which this fit did not do: call fit again "
                    "with lipschitz='auto', or set a number."
                )
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
        # The form's own checks (its file in nwbound.bounds.forms): an error, or another form to use.
        fallback = get_bound_form(form).check(kernel, ck=ck, localized=localized)
        beta = check_beta(params["lipschitz"], params["margin"], required=required)
        if beta is None:
            return None
        if fallback is not None:
            form, message = fallback
            warnings.warn(message, UserWarning, stacklevel=caller_stacklevel())
        # lipschitz="auto": bandwidths chosen at the pilot L (label-free), whatever L is tested or chosen.
        pinned = getattr(self, "_choice_beta", None) if self.lipschitz == "auto" and params["margin"] is None else None
        return BoundSpec(
            choice_beta=pinned,
            form=form,
            beta=beta,
            delta_prime=effective_delta(delta, self.classes_.shape[0], coverage),
            sigma=sigma,
            ck=ck,
            kernel_sup=kernel.sup,
            kernel_radius=kernel.radius,
        )

    def _validate_bound_params(self, kernel: Kernel, *, bound_required: bool, localized: bool = False) -> None:
        """Check the assumption and bound parameters at fit (they are read again when predicting)."""
        self._bound_args = (kernel, bound_required, localized)  # lipschitz="auto": checked again once L is chosen
        check_choice(self.empty_neighborhood, "empty_neighborhood", EMPTY_NEIGHBORHOOD_RULES)
        self._bound_spec(kernel, required=bound_required, localized=localized)

    def _fallback_proba(self, class_sums: np.ndarray, kappa: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``p̂ = class_sums/κ``; rows with κ = 0 follow ``empty_neighborhood``."""
        vacuous = ~(kappa > 0)
        rows = self._fallback_rows(vacuous)
        proba = np.empty_like(class_sums, dtype=np.float64)
        np.divide(class_sums, kappa[:, None], out=proba, where=~vacuous[:, None])
        proba[vacuous] = rows
        # κ can be tiny (sums of tiny weights): keep p̂ a distribution.
        np.clip(proba, 0.0, 1.0, out=proba)
        return proba, vacuous

    def _fallback_rows(self, vacuous: np.ndarray) -> np.ndarray:
        """The rows ``empty_neighborhood`` gives the queries flagged in ``vacuous`` (κ = 0), one per
        flagged query; ``"raise"`` raises with their count among all ``vacuous.size`` queries."""
        n_vacuous = int(np.count_nonzero(vacuous))
        if n_vacuous and self.empty_neighborhood == "raise":
            raise ValueError(
                f"{n_vacuous} of {vacuous.size} queries have no training mass within the kernel "
                "support (kappa = 0). Increase the bandwidth, or set empty_neighborhood='prior' or "
                "'uniform' to predict a fallback with a vacuous bound (epsilon = 1)."
            )
        n_classes = self.classes_.shape[0]
        row = self.class_prior_ if self.empty_neighborhood == "prior" else np.full(n_classes, 1.0 / n_classes)
        return np.repeat(np.clip(np.asarray(row, dtype=np.float64), 0.0, 1.0)[None, :], n_vacuous, axis=0)

    def _interval(self, stats: KernelStatistics, spec: BoundSpec,
                  certified_only: bool = False) -> PredictionInterval | CertifiedRows:
        """One setting's interval; with several bandwidths, each query takes the λ of least ε.

        ε used for that choice depends on the inputs only (never the labels):
        for ``"chernoff"`` it is the Hoeffding ε on the same points. ``certified_only``: only
        ``proba`` and ``certified`` (:class:`~._certified.CertifiedRows`), the same as the
        interval's, searched for no further than they need (:meth:`BoundSpec.certified`).
        """
        if stats.n_bandwidths > 1:
            choice = spec.for_choice()
            stats = stats.select(choice.least_epsilon(*choice.statistics_parts(stats)))
        class_sums = stats.class_sums[:, 0]
        kappa = class_sums.sum(axis=1)
        proba, vacuous = self._fallback_proba(class_sums, kappa)
        if certified_only:
            certified = spec.certified(stats, proba)
            if certified is not None:
                return CertifiedRows(proba=proba, certified=certified & ~vacuous)
        lower, upper, epsilon, bias, sampling = spec.limits(stats, proba)
        interval = PredictionInterval(
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
        # no shortcut for this form: the full interval's rule
        return CertifiedRows.of(interval) if certified_only else interval



class _NWParams:
    """The parameter checks of the Nadaraya-Watson classifier that do not depend on data."""

    def _check_params(self):
        """Validate the parameters that do not depend on data; return ``(dtype, kernel, auto)``."""
        dtype = check_dtype(self.dtype)
        kernel = get_kernel(self.kernel)
        auto = isinstance(self.bandwidth, str) and self.bandwidth == "auto"
        if isinstance(self.bandwidth, str) and self.bandwidth not in ("auto", "scale"):
            raise ValueError(f"bandwidth must be a number > 0, 'scale' or 'auto', got {self.bandwidth!r}.")
        if not isinstance(self.bandwidth, str):
            check_positive(self.bandwidth, "bandwidth")
        if auto and self.lipschitz is None and self.margin is None:
            raise ValueError(
                "bandwidth='auto' (the default) chooses each query's bandwidth from the bound, so it needs an "
                "assumption: leave lipschitz='auto' (the default), give lipschitz=L or margin=γ, or pass "
                "bandwidth='scale' (or a number) for predictions without bounds."
            )
        if self.working_memory is not None:
            check_positive(self.working_memory, "working_memory")
        check_n_jobs(self.n_jobs)
        check_int_range(self.histogram_bins, "histogram_bins", 1, 4096,
                        hint="Distance bins of the band-Chernoff bound over all training points.")
        if self.index_params is not None and not isinstance(self.index_params, dict):
            raise TypeError(f"index_params must be a dict or None, got {type(self.index_params).__name__}.")
        self._check_device()
        return dtype, kernel, auto

