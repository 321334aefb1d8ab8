"""What every bounded classifier here shares: assumptions, bound forms, the
empty-neighbourhood rule and the assembly of a :class:`PredictionInterval`."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from .._result import PredictionInterval
from .._validation import check_beta, check_choice, check_open_unit, check_positive
from ..bounds import BOUND_NAMES, COVERAGE_NAMES, BoundSpec, effective_delta, effective_sample_size

__all__ = ["BoundedClassifierBase", "EMPTY_NEIGHBORHOOD_RULES"]

EMPTY_NEIGHBORHOOD_RULES = ("prior", "uniform", "raise")


class BoundedClassifierBase(ClassifierMixin, BaseEstimator):
    """Shared machinery; subclasses compute kernel sums and call :meth:`_assemble`."""

    # -- fit helpers -------------------------------------------------------------------------
    def _validate_training_data(self, X, y, sample_weight, dtype):
        self._fit_complete = False
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
            if weights.sum() <= 0:
                raise ValueError("sample_weight sums to 0: at least one sample needs a positive weight.")
            weights = None if np.all(weights == 1.0) else weights.astype(dtype)
        w = np.ones(X.shape[0]) if weights is None else weights.astype(np.float64)
        prior = np.bincount(labels, weights=w, minlength=classes.shape[0])
        self._fit_dtype = np.dtype(dtype)
        self.classes_ = classes
        self.class_prior_ = prior / prior.sum()
        return X, labels.astype(np.intp), weights

    def _validate_bound_params(self, *, bound_required: bool, kernel_sup: float = 1.0, kernel_radius: float = 1.0):
        """Check the assumption and bound parameters; set ``beta_``, ``delta_prime_``, ``bound_spec_``."""
        delta = check_open_unit(self.delta, "delta")
        form = check_choice(self.bound, "bound", BOUND_NAMES)
        coverage = check_choice(self.coverage, "coverage", COVERAGE_NAMES)
        sigma = check_positive(self.sigma, "sigma")
        check_choice(self.empty_neighborhood, "empty_neighborhood", EMPTY_NEIGHBORHOOD_RULES)
        ck = check_positive(getattr(self, "ck", None), "ck", allow_none=True)
        if ck is None:
            ck = kernel_sup
        elif form == "paper" and ck < kernel_sup:
            raise ValueError(
                f"ck={ck:g} is below sup K = {kernel_sup:g}, so K/ck > 1 and the paper's bound does not "
                f"hold; use ck >= {kernel_sup:g} (the default ck=None uses sup K)."
            )
        self.beta_ = check_beta(self.lipschitz, self.margin, required=bound_required)
        self.delta_prime_ = effective_delta(delta, self.classes_.shape[0], coverage)
        self.bound_spec_ = (
            None
            if self.beta_ is None
            else BoundSpec(
                form=form,
                beta=self.beta_,
                delta_prime=self.delta_prime_,
                sigma=sigma,
                ck=ck,
                kernel_sup=kernel_sup,
                kernel_radius=kernel_radius,
            )
        )

    # -- predict helpers ---------------------------------------------------------------------
    def _validate_queries(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        return np.ascontiguousarray(X, dtype=self._fit_dtype)

    def _require_bounds(self) -> BoundSpec:
        check_is_fitted(self)
        if self.bound_spec_ is None:
            check_beta(self.lipschitz, self.margin, required=True)  # raises the explanation
        return self.bound_spec_

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
        return proba, vacuous

    def _assemble(
        self,
        class_sums: np.ndarray,
        sq_sum: np.ndarray,
        bias: np.ndarray,
        sampling: np.ndarray,
        bandwidth: np.ndarray,
        outside_box: np.ndarray | None = None,
    ) -> PredictionInterval:
        """Build the interval from per-query sums and the two (n,) parts of ε."""
        kappa = class_sums.sum(axis=1)
        proba, vacuous = self._fallback_proba(class_sums, kappa)
        n_classes = self.classes_.shape[0]
        bias = np.where(vacuous, 1.0, bias)
        sampling = np.where(vacuous, 1.0, sampling)
        return PredictionInterval.from_parts(
            proba=proba,
            bias=np.repeat(bias[:, None], n_classes, axis=1),
            sampling=np.repeat(sampling[:, None], n_classes, axis=1),
            kappa=kappa,
            n_eff=effective_sample_size(kappa, sq_sum),
            vacuous=vacuous,
            bandwidth=np.asarray(bandwidth, dtype=np.float64),
            outside_box=outside_box,
        )

    # -- public API shared by subclasses -----------------------------------------------------
    def predict(self, X) -> np.ndarray:
        """Most probable class for each row of ``X``."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def __sklearn_is_fitted__(self) -> bool:
        # Set as the last step of a successful fit: a fit that raised half-way
        # (after validate_data set n_features_in_) must not count as fitted.
        return getattr(self, "_fit_complete", False)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
