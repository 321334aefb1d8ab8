"""Say when the bounds cannot help, why, and what would change that.

The half-width of the default bound is ``ε = β·D/κ + sampling``: a **bias
share** set by the assumption (``β = L`` or ``1/γ``) and the kernel's reach
``D/κ`` (mean distance of the weighted neighbours), and a **sampling share**
set by the effective number of neighbours ``n_eff``. When most bounds are
trivial (every class interval [0, 1]) or no prediction is certified, a user
must be told which of the two is to blame — or that no training data reached
the queries at all (``κ = 0``, *vacuous*) — and what would change it:

* bias share dominates → a smaller ``L`` (if it can be justified:
  :mod:`nwbound.assumptions`), a smaller bandwidth or ``k`` (a closer
  neighbourhood), or more data (closer neighbours);
* sampling share dominates → a larger ``k`` or bandwidth, or more data;
* vacuous → queries outside the training data: a larger bandwidth, or data
  where the queries are.

:func:`bound_usefulness` computes the report; :func:`warn_if_useless` emits a
:class:`UselessBoundWarning` with it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ._validation import check_open_unit, check_positive

__all__ = ["BoundUsefulness", "UselessBoundWarning", "bound_usefulness", "warn_if_useless"]

SENSITIVITY_HINT = (
    "See how the bounds move with L: nwbound.assumptions.sensitivity_report(model, X_test, y_test, [L/10, L/3, L]) "
    "(estimate L with nwbound.assumptions.estimate_lipschitz, or `nwbound fit ... --lipschitz auto`)."
)


class UselessBoundWarning(UserWarning):
    """Most bounds are trivial or nothing is certified: the bounds cannot guide decisions here.

    Emitted by :func:`warn_if_useless` (and the estimators that call it); the
    message holds the :class:`BoundUsefulness` report with cause and fix.

    Examples
    --------
    Silence it where trivial bounds are expected:

    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", UselessBoundWarning)
    ...     warnings.warn("no certified prediction", UselessBoundWarning)
    >>> issubclass(UselessBoundWarning, UserWarning)
    True
    """


@dataclass(frozen=True)
class BoundUsefulness:
    """How informative a set of bounds is, and why not.

    Attributes
    ----------
    n_queries : int
    share_trivial : float
        Share of queries whose every class interval is [0, 1].
    share_vacuous : float
        Share with no training mass in reach (``κ = 0``).
    share_certified : float
        Share whose predicted class's lower bound is above every other class's
        upper bound (see :attr:`nwbound.PredictionInterval.certified`).
    median_bias_share, mean_bias_share : float
        ``bias / (bias + sampling)`` of the predicted class, over non-vacuous
        queries (NaN if all are vacuous).
    mean_sampling_share : float
        ``1 − mean_bias_share``.
    median_epsilon : float
        Median ``ε`` of the predicted class (vacuous queries count as 1).
    beta : float or None
        The ``β`` (``L`` or ``1/γ``) the bounds were computed with, if given.
    beta_for_half_bias : float or None
        The ``β`` at which the median bias share would be 1/2 (the bias term
        scales linearly in ``β``); ``None`` without ``beta``.
    beta_factor_for_half_bias : float
        The same as a factor of the current ``β`` (NaN if no bias term).
    useless : bool
        ``share_trivial ≥ trivial_threshold`` or nothing certified.
    cause : str
        ``"vacuous"``, ``"bias"``, ``"sampling"`` or ``"none"``.
    explanation : str
        Cause and fix in plain language.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> X = np.linspace(0, 1, 200)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(bandwidth=0.2, lipschitz=50.0).fit(X, y)
    >>> report = bound_usefulness(clf.predict_interval(X), beta=50.0)
    >>> isinstance(report, BoundUsefulness), report.n_queries, report.cause
    (True, 200, 'bias')
    >>> sorted(report.as_dict())[:3]
    ['beta', 'beta_factor_for_half_bias', 'beta_for_half_bias']
    """

    n_queries: int
    share_trivial: float
    share_vacuous: float
    share_certified: float
    median_bias_share: float
    mean_bias_share: float
    mean_sampling_share: float
    median_epsilon: float
    beta: float | None
    beta_for_half_bias: float | None
    beta_factor_for_half_bias: float
    useless: bool
    cause: str
    explanation: str

    def as_dict(self) -> dict[str, Any]:
        """The fields as a ``dict`` (for tables).

        Returns
        -------
        dict
            Field name → value.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.linspace(0, 1, 100)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> clf = NadarayaWatsonClassifier(bandwidth=0.2, lipschitz=50.0).fit(X, y)
        >>> row = bound_usefulness(clf.predict_interval(X)).as_dict()
        >>> row["n_queries"], row["beta"]
        (100, None)
        """
        return asdict(self)

    def __str__(self) -> str:
        head = (
            f"{self.n_queries} queries: {100 * self.share_trivial:.1f} % trivial bounds (ε = 1), "
            f"{100 * self.share_vacuous:.1f} % vacuous (κ = 0), {100 * self.share_certified:.1f} % certified; "
            f"median ε {self.median_epsilon:.3g}, median bias share {_pct(self.median_bias_share)} "
            f"(sampling {_pct(1 - self.median_bias_share)})."
        )
        return f"{head} {self.explanation}"


def _pct(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{100 * x:.0f} %"


def _parts(interval: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Predicted-class ε, bias and sampling, and the vacuous mask (validated)."""
    missing = [a for a in ("proba", "epsilon", "bias", "sampling", "vacuous", "lower", "upper") if not hasattr(interval, a)]
    if missing:
        raise TypeError(
            f"`interval` must be a nwbound.PredictionInterval (from predict_interval); "
            f"got {type(interval).__name__} without {missing}."
        )
    proba = np.asarray(interval.proba, dtype=np.float64)
    if proba.ndim != 2 or proba.shape[0] == 0:
        raise ValueError(f"`interval.proba` must have shape (n_queries >= 1, n_classes), got {proba.shape}.")
    rows = np.arange(proba.shape[0])
    top = np.argmax(proba, axis=1)
    pick = [np.asarray(getattr(interval, a), dtype=np.float64)[rows, top] for a in ("epsilon", "bias", "sampling")]
    vac = np.asarray(interval.vacuous, dtype=bool)
    return pick[0], pick[1], pick[2], vac


def bound_usefulness(
    interval: Any,
    *,
    beta: float | None = None,
    trivial_threshold: float = 0.5,
) -> BoundUsefulness:
    """Report how informative the bounds are, the cause when they are not, and the fix.

    Parameters
    ----------
    interval : PredictionInterval
        Output of ``predict_interval``.
    beta : float, optional
        The ``L`` (or ``1/γ``) the bounds used (``model.lipschitz``); with it
        the report says which ``L`` would halve the bias share.
    trivial_threshold : float in (0, 1), default=0.5
        Share of trivial bounds from which the bounds count as useless.

    Returns
    -------
    BoundUsefulness

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(300, 2)); y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(bandwidth=0.3, lipschitz=20.0).fit(X, y)
    >>> report = bound_usefulness(clf.predict_interval(X[:50]), beta=20.0)
    >>> report.cause, report.useless
    ('bias', True)
    >>> bool(report.beta_for_half_bias < 20.0)
    True
    """
    if beta is not None:
        beta = check_positive(beta, "beta")
    trivial_threshold = check_open_unit(trivial_threshold, "trivial_threshold")
    eps, bias, samp, vac = _parts(interval)
    n = eps.shape[0]
    share_trivial = float(np.mean(interval.trivial)) if hasattr(interval, "trivial") else float(np.mean(eps >= 1.0))
    share_vacuous = float(np.mean(vac))
    share_certified = float(np.mean(interval.certified)) if hasattr(interval, "certified") else 0.0

    live = ~vac
    total = bias[live] + samp[live]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(total > 0, bias[live] / total, np.nan)
        # β' with β'·b = s, i.e. bias share 1/2, as a factor of the current β.
        factor = np.where(bias[live] > 0, samp[live] / bias[live], np.nan)
    has = np.isfinite(share)
    median_share = float(np.median(share[has])) if has.any() else math.nan
    mean_share = float(np.mean(share[has])) if has.any() else math.nan
    fin = np.isfinite(factor)
    beta_factor = float(np.median(factor[fin])) if fin.any() else math.nan
    beta_half = None if beta is None or not math.isfinite(beta_factor) else beta * beta_factor
    median_eps = float(np.median(np.where(vac, 1.0, eps)))

    useless = share_trivial >= trivial_threshold or share_certified == 0.0
    if not useless:
        cause = "none"
    elif share_vacuous >= 0.5:
        cause = "vacuous"
    elif math.isfinite(median_share) and median_share > 0.5:
        cause = "bias"
    else:
        cause = "sampling"
    explanation = _explain(cause, median_share, beta, beta_half, beta_factor, share_vacuous)
    return BoundUsefulness(
        n_queries=n,
        share_trivial=share_trivial,
        share_vacuous=share_vacuous,
        share_certified=share_certified,
        median_bias_share=median_share,
        mean_bias_share=mean_share,
        mean_sampling_share=1.0 - mean_share if math.isfinite(mean_share) else math.nan,
        median_epsilon=median_eps,
        beta=beta,
        beta_for_half_bias=beta_half,
        beta_factor_for_half_bias=beta_factor,
        useless=useless,
        cause=cause,
        explanation=explanation,
    )


def _explain(
    cause: str, share: float, beta: float | None, beta_half: float | None, factor: float, vac: float
) -> str:
    if cause == "none":
        return "The bounds are informative."
    if cause == "vacuous":
        return (
            f"Cause: no training point within the kernel's reach for {100 * vac:.0f} % of the queries (κ = 0), "
            "so ε = 1 there. Fix: a larger bandwidth λ or k, or training data where the queries are "
            "(they may lie outside the training domain)."
        )
    if cause == "bias":
        if beta_half is not None:
            need = f"the median bias share would be 1/2 at L = {beta_half:.3g} (now {beta:.3g}, ×{factor:.2g})"
        elif math.isfinite(factor):
            need = f"the median bias share would be 1/2 at {factor:.2g} × the current L"
        else:
            need = "the bias share cannot be computed"
        return (
            f"Cause: the bias term L·D/κ is {_pct(share)} of ε (median); {need}. Fix: a smaller L if it can "
            "be justified, a smaller bandwidth λ or k (closer neighbours), or more data. " + SENSITIVITY_HINT
        )
    return (
        f"Cause: the sampling term is {_pct(1 - share)} of ε (median): too few effective neighbours (n_eff). "
        "Fix: a larger k or bandwidth λ, or more data; bound='chernoff' where available is tighter. "
        + SENSITIVITY_HINT
    )


def warn_if_useless(
    interval: Any,
    *,
    beta: float | None = None,
    trivial_threshold: float = 0.5,
    stacklevel: int = 2,
) -> BoundUsefulness:
    """Emit a :class:`~nwbound.diagnostics.UselessBoundWarning` when most bounds are trivial or nothing is certified.

    Parameters
    ----------
    interval : PredictionInterval
    beta : float, optional
        ``L`` or ``1/γ`` of the model (see :func:`bound_usefulness`).
    trivial_threshold : float in (0, 1), default=0.5
    stacklevel : int, default=2
        Passed to :func:`warnings.warn` (point it at the user's call).

    Returns
    -------
    BoundUsefulness
        The report, whether or not it warned.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> X = np.linspace(0, 1, 200)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(bandwidth=0.2, lipschitz=50.0).fit(X, y)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = warn_if_useless(clf.predict_interval(X), beta=50.0)
    >>> caught[0].category.__name__
    'UselessBoundWarning'
    """
    report = bound_usefulness(interval, beta=beta, trivial_threshold=trivial_threshold)
    if report.useless:
        warnings.warn(f"The bounds cannot guide decisions here: {report}", UselessBoundWarning, stacklevel=stacklevel)
    return report
