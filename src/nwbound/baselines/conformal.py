"""Split-conformal prediction sets: a marginal guarantee to set beside our bounds.

Split conformal prediction (Vovk et al. 2005; Sadinle, Lei & Wasserman 2019
for the "LAC" score) turns any fitted probabilistic classifier into sets
``Γ(x)`` with ``P(c ∈ Γ(x)) ≥ 1 − α`` *on average over* the test
distribution and the calibration draw — a marginal guarantee, unlike the
per-query, per-class bounds ``|p_c(x) − p̂_c(x)| ≤ ε`` of the NW classifier.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._result import PredictionInterval
from .._validation import check_params_as_fitted

__all__ = ["SplitConformalSets"]

# Slack for comparing scores with the quantile, the same as MAPIE's EPSILON:
# keeps a class whose score equals the quantile up to rounding.
_SCORE_TOLERANCE = 1e-8


def _mapie_available() -> bool:
    try:
        from mapie.classification import SplitConformalClassifier  # noqa: F401
    except ImportError:
        return False
    return True


class SplitConformalSets(BaseEstimator):
    """Split-conformal (LAC) prediction sets for a fitted classifier.

    The score of a calibration pair is ``s = 1 − p̂_y(x)``; with
    ``k = ⌈(n + 1)(1 − α)⌉`` and ``q̂`` the k-th smallest of the n scores,
    ``Γ(x) = {c : 1 − p̂_c(x) ≤ q̂}``.

    Parameters
    ----------
    estimator : classifier
        An already fitted classifier with ``predict_proba`` and ``classes_``
        (rows of ``predict_proba`` must sum to 1). It is not refitted.
    alpha : float, default=0.1
        Miscoverage level: sets cover the true label with marginal
        probability at least ``1 − α``.
    backend : {"auto", "mapie", "numpy"}, default="auto"
        ``"mapie"`` uses ``mapie.classification.SplitConformalClassifier``
        (MAPIE ≥ 1.0, ``prefit=True``); ``"numpy"`` the small implementation
        here; ``"auto"`` MAPIE when it imports, else numpy.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The estimator's classes (column order of the sets).
    backend_ : str
        The backend used (``"mapie"`` or ``"numpy"``).
    scores_ : ndarray of shape (n_calibration,)
        Calibration scores ``1 − p̂_y(x)``.
    quantile_ : float
        ``q̂`` (computed with numpy for both backends).
    n_calibration_ : int
        Size of the calibration set.

    Notes
    -----
    The rank is ``k = ⌈(n + 1)(1 − α)⌉`` computed with the product rounded to
    9 decimals, so that float noise such as ``100·0.9 = 90.000…01`` does not
    add one; MAPIE uses the raw product, so the two backends could differ
    (MAPIE more conservative by one rank) exactly at such boundary sizes.
    ``k > n`` (calibration set smaller than ``1/α − 1``) is refused: the only
    valid sets would contain every class.

    Examples
    --------
    Train, calibrate and test on three disjoint splits:

    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 2)); y = (X[:, 0] + 0.5 * rng.normal(size=600) > 0).astype(int)
    >>> clf = LogisticRegression().fit(X[:200], y[:200])
    >>> sets = SplitConformalSets(clf, alpha=0.1, backend="numpy").fit(X[200:400], y[200:400])
    >>> sets.n_calibration_, sets.backend_
    (200, 'numpy')
    >>> sets.predict_set([[-3.0, 0.0], [0.0, 0.0], [3.0, 0.0]]).tolist()
    [[True, False], [True, True], [False, True]]
    """

    def __init__(self, estimator: Any, *, alpha: float = 0.1, backend: str = "auto") -> None:
        self.estimator = estimator
        self.alpha = alpha
        self.backend = backend

    def _check(self) -> str:
        alpha = self.alpha
        if (
            isinstance(alpha, bool)
            or not isinstance(alpha, numbers.Real)
            or not 0.0 < float(alpha) < 1.0
        ):
            raise ValueError(f"SplitConformalSets: alpha must lie in (0, 1), got {self.alpha!r}.")
        if self.backend not in ("auto", "mapie", "numpy"):
            raise ValueError(
                "SplitConformalSets: backend must be 'auto', 'mapie' or 'numpy', "
                f"got {self.backend!r}."
            )
        if not hasattr(self.estimator, "predict_proba"):
            raise TypeError(
                "SplitConformalSets: estimator must have predict_proba; got "
                f"{type(self.estimator).__name__}."
            )
        check_is_fitted(self.estimator)
        if self.backend == "numpy":
            return "numpy"
        if _mapie_available():
            return "mapie"
        if self.backend == "mapie":
            from ..utils import install_hint

            raise ImportError(
                f"SplitConformalSets: backend='mapie' needs MAPIE >= 1.0 ({install_hint('conformal')}); "
                "use backend='numpy' instead."
            )
        return "numpy"

    def _proba(self, X: Any) -> np.ndarray:
        proba = np.asarray(self.estimator.predict_proba(X), dtype=np.float64)
        if proba.ndim != 2 or proba.shape[1] != self.classes_.shape[0]:
            raise ValueError(
                "SplitConformalSets: estimator.predict_proba must return shape "
                f"(n_samples, {self.classes_.shape[0]}), got {proba.shape}."
            )
        return proba

    def fit(self, X_cal: Any, y_cal: Any) -> "SplitConformalSets":
        """Calibrate on a held-out split (not the estimator's training data).

        Parameters
        ----------
        X_cal : array-like of shape (n_calibration, n_features)
            Calibration inputs.
        y_cal : array-like of shape (n_calibration,)
            Calibration labels, all among ``estimator.classes_``.

        Returns
        -------
        self : SplitConformalSets
            The calibrated object.

        Raises
        ------
        ValueError
            ``alpha`` outside (0, 1), an unknown ``backend``, mismatched
            lengths, labels the estimator was not trained on, or fewer than
            ``⌈1/α⌉ − 1`` calibration samples.
        TypeError
            ``estimator`` has no ``predict_proba``.
        ImportError
            ``backend="mapie"`` without MAPIE installed.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.linear_model import LogisticRegression
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(600, 2)); y = (X[:, 0] + 0.5 * rng.normal(size=600) > 0).astype(int)
        >>> clf = LogisticRegression().fit(X[:200], y[:200])
        >>> sets = SplitConformalSets(clf, alpha=0.1, backend="numpy").fit(X[200:400], y[200:400])
        >>> sets.n_calibration_, sets.scores_.shape
        (200, (200,))
        >>> SplitConformalSets(clf, alpha=0.1).fit(X[:5], y[:5])
        Traceback (most recent call last):
            ...
        ValueError: SplitConformalSets.fit: 5 calibration samples are too few for alpha=0.1: need at least 9.
        """
        backend = self._check()
        self.classes_ = np.asarray(self.estimator.classes_)
        y_cal = np.asarray(y_cal)
        if y_cal.ndim != 1:
            raise ValueError(f"SplitConformalSets.fit: y_cal must be 1-D, got shape {y_cal.shape}.")
        proba = self._proba(X_cal)
        n_cal = y_cal.shape[0]
        if proba.shape[0] != n_cal:
            raise ValueError(
                f"SplitConformalSets.fit: X_cal has {proba.shape[0]} rows but y_cal has {n_cal}."
            )
        # classes_ is sorted (scikit-learn convention), so searchsorted maps labels to columns.
        index = np.searchsorted(self.classes_, y_cal)
        index = np.clip(index, 0, self.classes_.shape[0] - 1)
        unknown = self.classes_[index] != y_cal
        if np.any(unknown):
            raise ValueError(
                "SplitConformalSets.fit: y_cal holds labels the estimator was not "
                f"trained on: {np.unique(y_cal[unknown])[:10].tolist()}."
            )
        rank = math.ceil(round((n_cal + 1) * (1.0 - float(self.alpha)), 9))
        if rank > n_cal:
            raise ValueError(
                f"SplitConformalSets.fit: {n_cal} calibration samples are too few for "
                f"alpha={self.alpha}: need at least {math.ceil(1.0 / float(self.alpha)) - 1}."
            )
        self.scores_ = 1.0 - proba[np.arange(n_cal), index]
        self.quantile_ = float(np.partition(self.scores_, rank - 1)[rank - 1])
        self.n_calibration_ = n_cal
        self.backend_ = backend
        # q̂ (and MAPIE's copy) hold for this estimator at this alpha: set_params of either needs a refit
        self._fit_params = {"estimator": self.estimator, "alpha": self.alpha, "backend": self.backend}
        if backend == "mapie":
            from mapie.classification import SplitConformalClassifier

            self._mapie = SplitConformalClassifier(
                self.estimator,
                confidence_level=1.0 - float(self.alpha),
                conformity_score="lac",
                prefit=True,
            ).conformalize(X_cal, y_cal)
        return self

    def predict_set(self, X: Any) -> np.ndarray:
        """Return the prediction sets as a boolean membership matrix.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
            Query inputs.

        Returns
        -------
        ndarray of bool, shape (n_queries, n_classes)
            ``True`` where the class (``classes_`` order) is in the set. A set
            may be empty (LAC sets are).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.linear_model import LogisticRegression
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(600, 2)); y = (X[:, 0] + 0.5 * rng.normal(size=600) > 0).astype(int)
        >>> clf = LogisticRegression().fit(X[:200], y[:200])
        >>> sets = SplitConformalSets(clf, alpha=0.1, backend="numpy").fit(X[200:400], y[200:400])
        >>> sets.predict_set([[-3.0, 0.0], [0.0, 0.0]]).tolist()  # sure, then ambiguous
        [[True, False], [True, True]]
        """
        check_is_fitted(self, "quantile_")
        check_params_as_fitted(self, getattr(self, "_fit_params", None))
        if self.backend_ == "mapie":
            _, sets = self._mapie.predict_set(X)
            return np.asarray(sets[:, :, 0], dtype=bool)
        return (1.0 - self._proba(X)) - self.quantile_ <= _SCORE_TOLERANCE

    def coverage(self, X: Any, y: Any) -> float:
        """Empirical coverage: the share of ``(x, y)`` with ``y ∈ Γ(x)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test inputs (not used for calibration).
        y : array-like of shape (n_samples,)
            Their labels.

        Returns
        -------
        float
            Fraction of covered samples; its expectation is ≥ 1 − α.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.linear_model import LogisticRegression
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(600, 2)); y = (X[:, 0] + 0.5 * rng.normal(size=600) > 0).astype(int)
        >>> clf = LogisticRegression().fit(X[:200], y[:200])
        >>> sets = SplitConformalSets(clf, alpha=0.1, backend="numpy").fit(X[200:400], y[200:400])
        >>> sets.coverage(X[400:], y[400:])
        0.89
        """
        sets = self.predict_set(X)
        return _set_coverage(sets, self.classes_, np.asarray(y))

    def compare(self, X: Any, y: Any, interval: PredictionInterval) -> dict[str, float]:
        """Set the conformal sets beside sets derived from per-query bounds.

        The bound set keeps each class that the bounds cannot rule out as
        the most probable one: ``{c : upper_c ≥ max_c′ lower_c′}``. It carries
        a per-query statement (through the bounds), not a coverage guarantee;
        the numbers show how large each kind of set is and how often it holds
        the true label.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test inputs.
        y : array-like of shape (n_samples,)
            Their labels.
        interval : PredictionInterval
            Bounds for the same ``X``, columns in ``classes_`` order.

        Returns
        -------
        dict
            ``conformal_coverage``, ``conformal_mean_size``,
            ``conformal_empty_share``, ``bound_coverage``,
            ``bound_mean_size``, ``alpha``.

        Raises
        ------
        ValueError
            ``interval`` does not match ``X`` and ``classes_`` in shape, or
            ``y`` has the wrong length.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(600, 2)); y = (X[:, 0] + 0.5 * rng.normal(size=600) > 0).astype(int)
        >>> nw = NadarayaWatsonClassifier(metric=None, bandwidth=0.5, lipschitz=0.5).fit(X[:200], y[:200])
        >>> sets = SplitConformalSets(nw, alpha=0.1, backend="numpy").fit(X[200:400], y[200:400])
        >>> row = sets.compare(X[400:], y[400:], nw.predict_interval(X[400:]))
        >>> sorted(row)
        ['alpha', 'bound_coverage', 'bound_mean_size', 'conformal_coverage', 'conformal_empty_share', 'conformal_mean_size']
        >>> bool(row["bound_mean_size"] >= 1.0)
        True
        """
        y = np.asarray(y)
        sets = self.predict_set(X)
        if interval.upper.shape != sets.shape:
            raise ValueError(
                "SplitConformalSets.compare: interval has shape "
                f"{interval.upper.shape}, expected {sets.shape} (same X, classes_ order)."
            )
        bound_sets = interval.upper >= interval.lower.max(axis=1, keepdims=True)
        return {
            "alpha": float(self.alpha),
            "conformal_coverage": _set_coverage(sets, self.classes_, y),
            "conformal_mean_size": float(sets.sum(axis=1).mean()),
            "conformal_empty_share": float((~sets.any(axis=1)).mean()),
            "bound_coverage": _set_coverage(bound_sets, self.classes_, y),
            "bound_mean_size": float(bound_sets.sum(axis=1).mean()),
        }


def _set_coverage(sets: np.ndarray, classes: np.ndarray, y: np.ndarray) -> float:
    """Share of rows whose label's column is True (unknown labels: not covered)."""
    if y.shape != (sets.shape[0],):
        raise ValueError(f"y must have shape ({sets.shape[0]},), got {y.shape}.")
    index = np.clip(np.searchsorted(classes, y), 0, classes.shape[0] - 1)
    known = classes[index] == y
    return float(np.mean(known & sets[np.arange(sets.shape[0]), index]))
