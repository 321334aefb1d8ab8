"""A calibrated accept/review rule: error among accepted predictions ≤ α with probability ≥ 1 − δ.

Selective classification (Geifman & El-Yaniv, NeurIPS 2017) accepts a prediction
when its doubt score is at most a threshold ``t`` and sends the rest to review.
The threshold is chosen on a calibration split by Learn-then-Test (Angelopoulos
et al., 2021): for each candidate ``t`` of a label-free grid the null hypothesis
``H_t: R(t) > α`` — ``R(t)`` the error rate among predictions with score ``≤ t``
— is tested with the exact binomial tail p-value

.. math:: p_t = P\\big(\\mathrm{Bin}(N_t, α) ≤ k_t\\big),

``N_t`` accepted calibration rows, ``k_t`` errors among them (given ``N_t``,
``k_t ~ Bin(N_t, R(t))`` for exchangeable data, and the tail is largest at
``R(t) = α``). Fixed-sequence testing walks the grid from the strictest
threshold upward and stops at the first ``p_t > δ``; every threshold passed is
rejected at family-wise level δ, so the largest one has ``R(t) ≤ α`` with
probability ``≥ 1 − δ`` over the calibration draw.

This is a **marginal** guarantee: it averages over queries drawn like the
calibration split (exchangeability), unlike the per-query bound of the NW
classifier, which is conditional on the query and holds under covariate shift.

MAPIE's risk-control module (``BinaryClassificationController``) controls the
risk of a binary classifier's positive-class threshold, not an accept/review
rule on an arbitrary score, and MAPIE is an optional dependency here; its
p-value (``compute_hoeffding_bentkus_p_value(..., binary=True)``) and its
fixed-sequence procedure give the same numbers (checked in the tests).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validation import check_int_range, check_open_unit, check_params_as_fitted

__all__ = ["CalibratedAcceptance", "binomial_tail_pvalue", "min_calibration_size"]


def min_calibration_size(alpha: float, delta: float) -> int:
    """Fewest accepted calibration rows with which any threshold can pass the test.

    With ``N`` accepted rows and no error the p-value is ``(1 − α)^N``; it
    reaches ``δ`` only from ``N = ⌈ln δ / ln(1 − α)⌉``.

    Parameters
    ----------
    alpha : float in (0, 1)
        Target error rate among accepted predictions.
    delta : float in (0, 1)
        Allowed probability that the guarantee fails.

    Returns
    -------
    int

    Examples
    --------
    >>> min_calibration_size(0.05, 0.05)
    59
    """
    alpha = check_open_unit(alpha, "alpha")
    delta = check_open_unit(delta, "delta")
    n = math.ceil(math.log(delta) / math.log1p(-alpha) - 1e-12)
    return max(1, n)


def binomial_tail_pvalue(n_errors: ArrayLike, n_accepted: ArrayLike, alpha: float) -> np.ndarray:
    """Exact p-value of ``H: error rate > α`` from ``k`` errors among ``N`` accepted.

    ``P(Bin(N, α) ≤ k)``; 1 where ``N = 0`` (no evidence).

    Parameters
    ----------
    n_errors, n_accepted : array-like of int
        Broadcastable counts, ``0 ≤ k ≤ N``.
    alpha : float in (0, 1)

    Returns
    -------
    ndarray of float

    Examples
    --------
    >>> float(binomial_tail_pvalue(0, 59, 0.05)) < 0.05
    True
    """
    alpha = check_open_unit(alpha, "alpha")
    k = np.asarray(n_errors)
    n = np.asarray(n_accepted)
    if np.any(k < 0) or np.any(k > n):
        raise ValueError("`n_errors` must lie in [0, n_accepted].")
    return np.where(n > 0, stats.binom.cdf(k, np.maximum(n, 1), alpha), 1.0)


class CalibratedAcceptance(BaseEstimator):
    """Accept predictions whose doubt score is at most a calibrated threshold.

    Fit on a calibration split (scores and labels of predictions not used for
    training); afterwards ``accept(scores)`` is True where the error rate among
    accepted predictions is guaranteed ``≤ alpha`` with probability
    ``≥ 1 − delta`` over the calibration draw, for queries exchangeable with
    the calibration split (Learn-then-Test with fixed-sequence testing and an
    exact binomial p-value; see the module docstring).

    Parameters
    ----------
    alpha : float in (0, 1), default=0.05
        Target error rate among accepted predictions.
    delta : float in (0, 1), default=0.05
        Allowed probability that the calibrated threshold violates ``alpha``.
    n_thresholds : int, default=100
        Size of the label-free threshold grid: quantiles of the calibration
        scores, from the one that accepts ``min_calibration_size(alpha, delta)``
        rows to the one that accepts all.

    Attributes
    ----------
    threshold_ : float
        Accept where ``score ≤ threshold_`` (``-inf``: accept nothing).
    thresholds_ : ndarray of shape (n_grid,)
        The grid, ascending (strictest first: the order of the tests).
    p_values_ : ndarray of shape (n_grid,)
    n_accepted_, n_errors_ : ndarray of int, shape (n_grid,)
        Calibration rows accepted and errors among them at each threshold.
    accepted_share_ : float
        Share of calibration rows accepted at ``threshold_``.
    accepted_error_ : float
        Error among accepted calibration rows at ``threshold_`` (NaN if none).
    n_calibration_ : int

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> score = rng.uniform(size=2000)                # larger = more doubtful
    >>> wrong = rng.uniform(size=2000) < 0.4 * score  # error rate grows with the score
    >>> y_true = np.where(wrong, 1, 0); y_pred = np.zeros(2000, dtype=int)
    >>> rule = CalibratedAcceptance(alpha=0.1, delta=0.05).fit(score, y_true, y_pred)
    >>> bool(rule.accepted_error_ <= 0.1)
    True
    >>> rule.accept([0.0, 1.0]).tolist()
    [True, False]
    """

    def __init__(self, alpha: float = 0.05, delta: float = 0.05, n_thresholds: int = 100) -> None:
        self.alpha = alpha
        self.delta = delta
        self.n_thresholds = n_thresholds

    def _check_params(self) -> tuple[float, float, int]:
        alpha = check_open_unit(self.alpha, "alpha")
        delta = check_open_unit(self.delta, "delta")
        return alpha, delta, check_int_range(self.n_thresholds, "n_thresholds", 1)

    def fit(self, scores: ArrayLike, y_true: ArrayLike, y_pred: ArrayLike) -> "CalibratedAcceptance":
        """Choose the threshold on a calibration split.

        Parameters
        ----------
        scores : array-like of shape (n,)
            Doubt score of each calibration prediction, larger = more doubtful
            (``1 − max p̂``, ``error_upper``, ε, ...). Must be computed by a
            model that did not see these rows.
        y_true, y_pred : array-like of shape (n,)
            True and predicted labels of the calibration rows.

        Returns
        -------
        self : CalibratedAcceptance
            The calibrated rule.

        Raises
        ------
        ValueError
            ``alpha``/``delta`` outside (0, 1), non-finite scores, mismatched
            lengths, a calibration split with a single class label, or fewer
            rows than the binomial test needs to accept anything.

        Examples
        --------
        >>> import numpy as np
        >>> y = np.r_[np.zeros(200, int), np.ones(200, int)]  # errors only at high scores
        >>> rule = CalibratedAcceptance(alpha=0.2).fit(np.linspace(0, 1, 400), y, np.zeros(400, int))
        >>> round(rule.threshold_, 4), rule.n_calibration_
        (0.589, 400)
        >>> CalibratedAcceptance(alpha=0.2).fit([0.1, 0.2], [0, 1], [0, 0])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        ValueError: The calibration split has 2 rows; ... needs at least 14 ...
        """
        alpha, delta, m = self._check_params()
        s = _scores(scores, "scores")
        t = np.asarray(y_true).ravel()
        p = np.asarray(y_pred).ravel()
        if not (t.shape[0] == p.shape[0] == s.shape[0]):
            raise ValueError(
                f"`scores`, `y_true` and `y_pred` must have the same length, got "
                f"{s.shape[0]}, {t.shape[0]} and {p.shape[0]}."
            )
        labels = np.unique(t)
        if labels.shape[0] < 2:
            raise ValueError(
                f"The calibration split holds a single class ({labels.tolist()}); it must be drawn like the "
                "queries, with every class. Use a stratified split (sklearn's train_test_split(..., stratify=y))."
            )
        n = s.shape[0]
        n_min = min_calibration_size(alpha, delta)
        if n < n_min:
            raise ValueError(
                f"The calibration split has {n} rows; with alpha={alpha:g} and delta={delta:g} the binomial test "
                f"needs at least {n_min} (= ceil(ln delta / ln(1 - alpha))) even with no error. Use more "
                "calibration rows or a larger alpha/delta."
            )
        wrong = t != p
        order = np.argsort(s, kind="stable")
        s_sorted = s[order]
        cum_err = np.concatenate([[0], np.cumsum(wrong[order])])
        # Label-free grid: score quantiles accepting n_min … n rows.
        counts = np.unique(np.linspace(n_min, n, m).round().astype(np.intp))
        thresholds = np.unique(s_sorted[counts - 1])
        n_acc = np.searchsorted(s_sorted, thresholds, side="right")
        n_err = cum_err[n_acc]
        pv = binomial_tail_pvalue(n_err, n_acc, alpha)
        # Fixed-sequence testing: reject while p ≤ δ, stop at the first failure.
        failed = np.flatnonzero(pv > delta)
        n_pass = int(failed[0]) if failed.size else thresholds.shape[0]
        self.thresholds_ = thresholds
        self.p_values_ = pv
        self.n_accepted_ = n_acc
        self.n_errors_ = n_err
        self.n_calibration_ = n
        # The threshold holds at these alpha and delta only: set_params of any needs a refit.
        self._fit_params = {"alpha": self.alpha, "delta": self.delta, "n_thresholds": self.n_thresholds}
        if n_pass == 0:
            self.threshold_ = -math.inf
            self.accepted_share_ = 0.0
            self.accepted_error_ = math.nan
        else:
            i = n_pass - 1
            self.threshold_ = float(thresholds[i])
            self.accepted_share_ = float(n_acc[i] / n)
            self.accepted_error_ = float(n_err[i] / n_acc[i])
        return self

    def accept(self, scores: ArrayLike) -> np.ndarray:
        """True where a prediction is accepted (score ≤ ``threshold_``), shape (n,).

        Parameters
        ----------
        scores : array-like of shape (n,)
            The same score as in :meth:`fit`, from the same model.

        Returns
        -------
        ndarray of bool

        Examples
        --------
        >>> import numpy as np
        >>> y = np.r_[np.zeros(200, int), np.ones(200, int)]
        >>> rule = CalibratedAcceptance(alpha=0.2).fit(np.linspace(0, 1, 400), y, np.zeros(400, int))
        >>> rule.accept([0.0, 0.5, 1.0]).tolist()
        [True, True, False]
        """
        check_is_fitted(self, "threshold_")
        check_params_as_fitted(self, getattr(self, "_fit_params", None))
        return _scores(scores, "scores") <= self.threshold_

    def review(self, scores: ArrayLike) -> np.ndarray:
        """The complement of :meth:`accept`: predictions to send to review.

        Examples
        --------
        >>> import numpy as np
        >>> y = np.r_[np.zeros(200, int), np.ones(200, int)]
        >>> rule = CalibratedAcceptance(alpha=0.2).fit(np.linspace(0, 1, 400), y, np.zeros(400, int))
        >>> rule.review([0.0]).tolist()
        [False]
        """
        return ~self.accept(scores)

    @property
    def guarantee(self) -> str:
        """The guarantee in words.

        Examples
        --------
        >>> import numpy as np
        >>> y = np.r_[np.zeros(200, int), np.ones(200, int)]
        >>> rule = CalibratedAcceptance(alpha=0.2).fit(np.linspace(0, 1, 400), y, np.zeros(400, int))
        >>> rule.guarantee
        'error among accepted <= 0.2 with prob. >= 0.95 (marginal; queries exchangeable with the calibration split)'
        """
        check_is_fitted(self, "threshold_")
        check_params_as_fitted(self, getattr(self, "_fit_params", None))
        return (
            f"error among accepted <= {self.alpha:g} with prob. >= {1 - self.delta:g} "
            "(marginal; queries exchangeable with the calibration split)"
        )


def _scores(scores: Any, name: str) -> np.ndarray:
    try:
        s = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"`{name}` must be numbers (one doubt score per prediction): {exc}") from None
    if s.ndim != 1:
        raise ValueError(f"`{name}` must be one-dimensional (one score per prediction), got shape {s.shape}.")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"`{name}` contains NaN or infinite values; give a finite doubt score per prediction.")
    return s
