"""Say when the bounds cannot help, why, and what would change that.

The width of a bound has a Hoeffding account ``β·D/κ + sampling``: a **bias
share** set by the assumption (``β = L`` or ``1/γ``) and the kernel's reach
``D/κ`` (mean distance of the weighted neighbours), and a **sampling share**
set by the effective number of neighbours ``n_eff`` (for ``bound="chernoff"``
an account of where the width comes from, not parts of its ε; the words are
those of the user guide's glossary). When most bounds are *trivial* (every
class interval [0, 1]) or no prediction is certified, a user must be told
which of the two is to blame — or that no training mass reached the queries at
all (``κ = 0``, *vacuous*) — and what would change it, in the terms of the
settings in use (:class:`AdviceContext`: no advice to use what is already used,
flags for the command line, parameters for Python):

* bias share dominates → a smaller ``L`` (if it can be justified:
  :mod:`nwbound.assumptions`; with ``lipschitz="auto"`` the held-out rows
  already chose the smallest value they allow), a smaller bandwidth or ``k`` (a closer
  neighbourhood), ``metric="auto"`` where the features are used as they are
  (the bound in a learned space), or more data (closer neighbours);
* sampling share dominates → a larger ``k`` or bandwidth, or more data;
* vacuous → queries outside the training data: a larger bandwidth, or data
  where the queries are.

:func:`bound_usefulness` computes the report; :func:`warn_if_useless` emits a
:class:`UselessBoundWarning` with it. ``predict``, ``predict_proba`` and
``score`` ask for no bound, so they never emit it; they emit a
:class:`VacuousPredictionWarning` (:func:`warn_if_vacuous`) when most queries are
vacuous, i.e. their prediction is only the fallback.

A cross-fitted model (``cross_fit=``) can also tell, without labels, that its
bound failed on a query: where the intervals of its models contradict each other
(:func:`nwbound.spaces.contradicting_rows`). :func:`warn_if_contradicting` emits a
:class:`ContradictingModelsWarning` when that happens on more queries than δ
allows under the assumption (``predict_interval`` at the model's own setting;
never ``predict`` or ``predict_proba``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ._validation import check_open_unit, check_positive

__all__ = [
    "AdviceContext",
    "BoundUsefulness",
    "ContradictingModelsWarning",
    "UselessBoundWarning",
    "VacuousPredictionWarning",
    "bound_usefulness",
    "warn_if_contradicting",
    "warn_if_useless",
    "warn_if_vacuous",
    "vacuous_advice",
]


@dataclass(frozen=True)
class AdviceContext:
    """The settings a piece of advice must fit: what is in use, and how the user sets things.

    Parameters
    ----------
    interface : {"python", "cli"}, default="python"
        Advice names estimator parameters (``bandwidth=``) or command-line flags (``--bandwidth``).
    bound : str or None, default=None
        The bound form in use (no advice to switch to it).
    bandwidth : {"fixed", "scale", "auto"} or None, default=None
        How λ was set; ``"auto"`` chose it per query from the bound, so no λ advice is given.
    lipschitz_auto : bool or None, default=False
        L was estimated (``lipschitz="auto"`` / ``--lipschitz auto``): no advice to estimate it.
        None: unknown (a model file stores L as a number, whether chosen or given), so the
        advice to estimate L says that it applies only to an L given by hand.
    localized : bool or None, default=None
        The localized classifier (advice on ``k``), the regular one (advice on λ), or unknown (both).
    dyadic : bool, default=False
        The dyadic classifier (advice on its ``resolution``).
    learned_space : bool or None, default=None
        ``metric=`` is in use (True), the features are used as they are (False: advice on
        ``metric="auto"`` in Python), or unknown (None: no such advice).

    Examples
    --------
    >>> ctx = AdviceContext(interface="cli", bound="chernoff", bandwidth="auto")
    >>> ctx.param("bandwidth"), AdviceContext().param("bandwidth")
    ('--bandwidth', 'bandwidth=')
    """

    interface: str = "python"
    bound: str | None = None
    bandwidth: str | None = None
    lipschitz_auto: bool | None = False
    localized: bool | None = None
    dyadic: bool = False
    learned_space: bool | None = None

    _FLAGS = {"bandwidth": "--bandwidth", "n_neighbors": "--neighbors", "lipschitz": "--lipschitz",
              "bound": "--bound", "resolution": "--resolution", "empty_neighborhood": None}

    def param(self, name: str) -> str:
        """How the user sets ``name``: ``"name="`` in Python, its flag on the command line."""
        if self.interface == "cli":
            return self._FLAGS.get(name) or f"--{name.replace('_', '-')}"
        return f"{name}="

    @classmethod
    def from_estimator(cls, estimator: Any, interface: str = "python") -> "AdviceContext":
        """The context of a bounded classifier's own settings.

        Examples
        --------
        >>> from nwbound import NadarayaWatsonClassifier
        >>> AdviceContext.from_estimator(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="auto")).bandwidth
        'auto'
        """
        bw = getattr(estimator, "bandwidth", None)
        dyadic = hasattr(estimator, "resolution") and bw is None
        return cls(
            interface=interface,
            bound=getattr(estimator, "bound", None),
            bandwidth=None if dyadic else (bw if isinstance(bw, str) else "fixed"),
            lipschitz_auto=_lipschitz_chosen(estimator),
            localized=None if dyadic else getattr(estimator, "n_neighbors", None) is not None,
            dyadic=dyadic,
            learned_space=getattr(estimator, "metric", None) is not None if hasattr(estimator, "metric") else None,
        )


def _lipschitz_chosen(estimator: Any) -> bool:
    """Whether the estimator's L is ``lipschitz="auto"``'s: the setting, or the chosen value fixed as a number
    (``nwbound fit`` does so before saving, ``lipschitz_report_`` still set)."""
    lip = getattr(estimator, "lipschitz", None)
    if isinstance(lip, str):
        return True
    report = getattr(estimator, "lipschitz_report_", None)
    return report is not None and lip is not None and float(lip) == float(getattr(estimator, "lipschitz_", math.nan))


class VacuousPredictionWarning(UserWarning):
    """Most predictions are vacuous: no training mass reached the query (κ = 0).

    There the prediction is only the ``empty_neighborhood`` fallback (the class
    prior by default). Emitted by ``predict``, ``predict_proba`` and ``score``
    (:func:`warn_if_vacuous`), with the cause and the fix in the settings' terms.

    Examples
    --------
    >>> issubclass(VacuousPredictionWarning, UserWarning)
    True
    """


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


class ContradictingModelsWarning(UserWarning):
    """The cross-fitted models' intervals contradict each other on more queries than δ allows.

    On such a query (:func:`nwbound.spaces.contradicting_rows`) some model's interval
    missed ``p``: label-free evidence that the assumption (``L``) is too small
    there. Those rows report the hull of the models' intervals
    (:func:`nwbound.spaces.intersect_intervals`). Emitted by
    :func:`warn_if_contradicting` (``predict_interval`` of a cross-fitted model, at its
    own setting), with the share and the fix.

    Examples
    --------
    >>> issubclass(ContradictingModelsWarning, UserWarning)
    True
    """


@dataclass(frozen=True)
class BoundUsefulness:
    """How informative a set of bounds is, and why not.

    Attributes
    ----------
    n_queries : int
    share_trivial : float
        Share of queries whose every class interval is [0, 1] (*trivial*,
        vacuous queries included).
    share_vacuous : float
        Share with no training mass in reach (``κ = 0``, *vacuous*).
    share_certified : float
        Share whose predicted class's lower bound is above every other class's
        upper bound (see :attr:`nwbound.PredictionInterval.certified`).
    median_bias_share, mean_bias_share : float
        ``bias / (bias + sampling)`` of the predicted class, over non-vacuous
        queries (NaN if all are vacuous).
    mean_sampling_share : float
        ``1 − mean_bias_share``.
    median_epsilon : float
        Median ``ε`` of the predicted class: the half-width ``max(p̂ − lower,
        upper − p̂)`` of its interval (vacuous queries count as 1).
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
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=50.0).fit(X, y)
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

    @classmethod
    def from_summary(
        cls,
        n_queries: int,
        share_trivial: float,
        share_vacuous: float,
        share_certified: float,
        median_bias_share: float,
        mean_bias_share: float,
        beta_factor_for_half_bias: float,
        median_epsilon: float,
        *,
        beta: float | None = None,
        trivial_threshold: float = 0.5,
        context: AdviceContext | None = None,
    ) -> "BoundUsefulness":
        """The report from its few numbers (computed elsewhere: :func:`bound_usefulness` from the
        arrays, or reductions on the device where the intervals live): the rule (useless, cause) and
        the advice are added here, the one place they are made.

        Parameters
        ----------
        n_queries : int
        share_trivial, share_vacuous, share_certified : float
        median_bias_share, mean_bias_share : float
            NaN when no query has a bias share.
        beta_factor_for_half_bias : float
            NaN when no query has a bias term.
        median_epsilon : float
        beta : float, optional
        trivial_threshold : float in (0, 1), default=0.5
        context : AdviceContext or None, default=None

        Returns
        -------
        BoundUsefulness

        Examples
        --------
        >>> report = BoundUsefulness.from_summary(10, 0.8, 0.0, 0.0, 0.9, 0.85, 0.25, 0.7, beta=4.0)
        >>> report.useless, report.cause, report.beta_for_half_bias
        (True, 'bias', 1.0)
        """
        if beta is not None:
            beta = check_positive(beta, "beta")
        trivial_threshold = check_open_unit(trivial_threshold, "trivial_threshold")
        beta_half = (None if beta is None or not math.isfinite(beta_factor_for_half_bias)
                     else beta * beta_factor_for_half_bias)
        useless = share_trivial >= trivial_threshold or share_certified == 0.0
        if not useless:
            cause = "none"
        elif share_vacuous >= 0.5:
            cause = "vacuous"
        elif math.isfinite(median_bias_share) and median_bias_share > 0.5:
            cause = "bias"
        else:
            cause = "sampling"
        explanation = _explain(cause, median_bias_share, beta, beta_half, beta_factor_for_half_bias, share_vacuous,
                               context or AdviceContext())
        return cls(
            n_queries=int(n_queries),
            share_trivial=share_trivial,
            share_vacuous=share_vacuous,
            share_certified=share_certified,
            median_bias_share=median_bias_share,
            mean_bias_share=mean_bias_share,
            mean_sampling_share=1.0 - mean_bias_share if math.isfinite(mean_bias_share) else math.nan,
            median_epsilon=median_epsilon,
            beta=beta,
            beta_for_half_bias=beta_half,
            beta_factor_for_half_bias=beta_factor_for_half_bias,
            useless=useless,
            cause=cause,
            explanation=explanation,
        )

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
        >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=50.0).fit(X, y)
        >>> row = bound_usefulness(clf.predict_interval(X)).as_dict()
        >>> row["n_queries"], row["beta"]
        (100, None)
        """
        return asdict(self)

    def __str__(self) -> str:
        head = (
            f"{self.n_queries} queries: {100 * self.share_trivial:.1f} % trivial (every class interval [0, 1]), "
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
    context: AdviceContext | None = None,
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
    context : AdviceContext or None, default=None
        The settings the advice must fit (None: a Python user, settings unknown).

    Returns
    -------
    BoundUsefulness

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(300, 2)); y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=20.0).fit(X, y)
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
    median_eps = float(np.median(np.where(vac, 1.0, eps)))
    return BoundUsefulness.from_summary(n, share_trivial, share_vacuous, share_certified, median_share, mean_share,
                                        beta_factor, median_eps, beta=beta, trivial_threshold=trivial_threshold,
                                        context=context)


def _setting(ctx: AdviceContext, name: str, value: str) -> str:
    """``name='value'`` in Python, ``--flag value`` on the command line."""
    return f"{name}={value!r}" if ctx.interface == "python" else f"{ctx.param(name)} {value}"


def _reach_fix(ctx: AdviceContext, wider: bool) -> list[str]:
    """How to move the neighbourhood in the settings' terms (no λ advice where ``"auto"`` chose λ)."""
    if ctx.dyadic:
        return [f"{'a coarser' if wider else 'a finer'} grid ({ctx.param('resolution')})"]
    more = "a larger" if wider else "a smaller"
    fixes = []
    if ctx.localized is not False:
        fixes.append(f"{more} k ({ctx.param('n_neighbors')})")
    if ctx.bandwidth != "auto":
        now = ", now set by 'scale'" if ctx.bandwidth == "scale" else ""
        fixes.append(f"{more} bandwidth λ ({ctx.param('bandwidth')}{now})")
        fixes.append(f"{_setting(ctx, 'bandwidth', 'auto')} (λ per query, from the bound)")
    return fixes


def _sensitivity_hint(ctx: AdviceContext) -> str:
    # Advice to estimate L only where it was not estimated; where that is unknown, said as a condition.
    given = "" if ctx.lipschitz_auto is False else "If L was given by hand (not chosen by lipschitz='auto'), "
    if ctx.interface == "cli":
        hint = ("See how the bounds move with L: fit at a few values of --lipschitz and compare them with "
                "`nwbound evaluate` on a labelled table.")
        if ctx.lipschitz_auto is None:
            hint += (" If this model's L was given by hand (nwbound fit --lipschitz L), `nwbound fit --lipschitz "
                     "auto` (the default) estimates it from the training table.")
        elif not ctx.lipschitz_auto:
            hint += " `--lipschitz auto` estimates L from the training table."
        return hint
    train = ", X_train=X_train, y_train=y_train" if ctx.learned_space else ""
    hint = ("See how the bounds move with L: nwbound.assumptions.sensitivity_report(model, X_test, y_test, "
            f"[L/10, L/3, L]{train}).")
    if ctx.lipschitz_auto is not True:
        hint += f" {given}nwbound.assumptions.estimate_lipschitz estimates L from data."
    return hint


def _explain(
    cause: str, share: float, beta: float | None, beta_half: float | None, factor: float, vac: float,
    ctx: AdviceContext,
) -> str:
    """The one message builder: cause and a fix that fits the settings in ``ctx``."""
    if cause == "none":
        return "The bounds are informative."
    if cause == "vacuous":
        return vacuous_advice(vac, ctx, bound=True)
    if cause == "bias":
        if beta_half is not None:
            need = f"the median bias share would be 1/2 at L = {beta_half:.3g} (now {beta:.3g}, ×{factor:.2g})"
        elif math.isfinite(factor):
            need = f"the median bias share would be 1/2 at {factor:.2g} × the current L"
        else:
            need = "the bias share cannot be computed"
        smaller_l = ("a smaller L only if it can be justified (lipschitz='auto' chose the smallest value on its grid "
                     "that the held-out rows allow: see lipschitz_report_)" if ctx.lipschitz_auto
                     and ctx.interface == "python" else "a smaller L if it can be justified")
        fixes = [smaller_l, *_reach_fix(ctx, wider=False)]
        if ctx.learned_space is False and ctx.interface == "python" and not ctx.dyadic:
            fixes.append("metric='auto' (the bound in a space learned from part of the rows, where the distances "
                         "in L·D/κ are shorter)")
        fixes.append("more data")
        return (f"Cause: the bias term L·D/κ is {_pct(share)} of the width (median); {need}. "
                f"Fix: {'; '.join(fixes)}. " + _sensitivity_hint(ctx))
    fixes = [*_reach_fix(ctx, wider=True), "more data"]
    if ctx.bound is not None and ctx.bound != "chernoff":
        fixes.append(f"{_setting(ctx, 'bound', 'chernoff')} (tighter)")
    return (f"Cause: the sampling term is {_pct(1 - share)} of the width (median): too few effective "
            f"neighbours (n_eff). Fix: {'; '.join(fixes)}. " + _sensitivity_hint(ctx))


def vacuous_advice(share: float, ctx: AdviceContext, *, bound: bool = False) -> str:
    """Cause and fix when a share ``share`` of the queries is vacuous (κ = 0), in ``ctx``'s terms.

    Parameters
    ----------
    share : float
        Share of vacuous queries.
    ctx : AdviceContext
    bound : bool, default=False
        Whether bounds were asked for (then also: ε = 1 there).

    Returns
    -------
    str

    Examples
    --------
    >>> print(vacuous_advice(0.9, AdviceContext(interface="cli", bandwidth="fixed", localized=False)))
    ... # doctest: +NORMALIZE_WHITESPACE
    Cause: no training point within the kernel's reach for 90 % of the queries (κ = 0), so their
    prediction is only the fallback (the class prior by default). Fix: a larger bandwidth λ
    (--bandwidth); --bandwidth scale (λ from the training rows' neighbour distances); training data
    where the queries are (they may lie outside the training domain; check that they are scaled like
    the training rows).
    """
    what = "prediction is only the fallback (the class prior by default)" + (" and ε = 1" if bound else "")
    fixes = []
    if ctx.dyadic:
        fixes.append(f"a coarser grid ({ctx.param('resolution')})")
    elif ctx.bandwidth != "auto":
        fixes.append(f"a larger bandwidth λ ({ctx.param('bandwidth')})")
        if ctx.bandwidth != "scale":
            fixes.append(f"{_setting(ctx, 'bandwidth', 'scale')} (λ from the training rows' neighbour distances)")
    fixes.append("training data where the queries are (they may lie outside the training domain; check "
                 "that they are scaled like the training rows)")
    return (f"Cause: no training point within the kernel's reach for {100 * share:.0f} % of the queries (κ = 0), "
            f"so their {what}. Fix: {'; '.join(fixes)}.")


def warn_if_vacuous(
    vacuous: Any,
    *,
    context: AdviceContext | None = None,
    threshold: float = 0.5,
    stacklevel: int = 2,
) -> float:
    """Emit a :class:`VacuousPredictionWarning` when most queries are vacuous (κ = 0).

    Parameters
    ----------
    vacuous : array-like of bool, shape (n_queries,)
    context : AdviceContext or None, default=None
    threshold : float in (0, 1), default=0.5
        Warn when the vacuous share is above it ("most").
    stacklevel : int, default=2

    Returns
    -------
    float
        The vacuous share (0 for no queries).

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_if_vacuous(np.array([True, True, False]))
    0.6666666666666666
    >>> caught[0].category.__name__
    'VacuousPredictionWarning'
    """
    vac = np.asarray(vacuous, dtype=bool)
    share = float(np.mean(vac)) if vac.size else 0.0
    if share > check_open_unit(threshold, "threshold"):
        ctx = context or AdviceContext()
        warnings.warn(f"Most predictions are vacuous: {vacuous_advice(share, ctx)}", VacuousPredictionWarning,
                      stacklevel=stacklevel)
    return share


def warn_if_useless(
    interval: Any,
    *,
    beta: float | None = None,
    trivial_threshold: float = 0.5,
    stacklevel: int = 2,
    context: AdviceContext | None = None,
) -> BoundUsefulness:
    """Emit a :class:`~nwbound.diagnostics.UselessBoundWarning` when most bounds are trivial or nothing is certified.

    Parameters
    ----------
    interval : PredictionInterval or BoundUsefulness
        The intervals; or their report, already made (:meth:`BoundUsefulness.from_summary`, e.g. from
        reductions on the device where the intervals live), emitted as it is: ``beta``,
        ``trivial_threshold`` and ``context`` are then the report's own.
    beta : float, optional
        ``L`` or ``1/γ`` of the model (see :func:`bound_usefulness`).
    trivial_threshold : float in (0, 1), default=0.5
    stacklevel : int, default=2
        Passed to :func:`warnings.warn` (point it at the user's call).
    context : AdviceContext or None, default=None
        The settings the advice must fit (see :func:`bound_usefulness`).

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
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=50.0).fit(X, y)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = warn_if_useless(clf.predict_interval(X), beta=50.0)
    >>> caught[0].category.__name__
    'UselessBoundWarning'
    """
    if isinstance(interval, BoundUsefulness):
        report = interval
    else:
        report = bound_usefulness(interval, beta=beta, trivial_threshold=trivial_threshold, context=context)
    if report.useless:
        warnings.warn(f"The bounds cannot guide decisions here: {report}", UselessBoundWarning, stacklevel=stacklevel)
    return report


def warn_if_contradicting(
    contradicting: Any,
    delta: float,
    *,
    allowed: float | None = None,
    assumption: str = "lipschitz",
    context: AdviceContext | None = None,
    stacklevel: int = 2,
) -> float:
    """Emit a :class:`ContradictingModelsWarning` when the cross-fitted models contradict each
    other on more queries than δ allows under the assumption.

    A query contradicts where no distribution lies in every model's interval
    (:func:`nwbound.spaces.contradicting_rows`): some model's interval missed ``p`` there.
    Under the assumption each of the K models misses with probability at most ``δ/K`` (all
    classes at once), so a query contradicts with probability at most ``δ``; a larger share is
    evidence that the assumption fails there (``L`` too small, or ``γ`` too large). One warning
    per call.

    Parameters
    ----------
    contradicting : array-like of bool, shape (n_queries,)
    delta : float in (0, 1)
        The model's δ.
    allowed : float in (0, 1] or None, default=None
        The share the assumption allows: ``delta`` (None), or more where the classes are covered
        one by one (``coverage="per_class"``: C·δ with C ≥ 3 classes).
    assumption : {"lipschitz", "margin"}, default="lipschitz"
        Which assumption the advice is about (``L`` or the margin ``γ``).
    context : AdviceContext or None, default=None
        The settings the advice must fit (flags or parameters; ``lipschitz="auto"``).
    stacklevel : int, default=2

    Returns
    -------
    float
        The share of contradicting queries (0 for no queries).

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_if_contradicting(np.array([True, False, False, False]), delta=0.05)
    0.25
    >>> caught[0].category.__name__
    'ContradictingModelsWarning'
    >>> warn_if_contradicting(np.zeros(20, bool), delta=0.05)  # none: no warning
    0.0
    """
    delta = check_open_unit(delta, "delta")
    bound = delta if allowed is None else float(allowed)
    if not 0.0 < bound <= 1.0:
        raise ValueError(f"`allowed` must lie in (0, 1], got {allowed!r}.")
    if assumption not in ("lipschitz", "margin"):
        raise ValueError(f"`assumption` must be 'lipschitz' or 'margin', got {assumption!r}.")
    rows = np.asarray(contradicting, dtype=bool)
    n, hit = rows.size, int(np.count_nonzero(rows))
    share = hit / n if n else 0.0
    if share > bound:
        ctx = context or AdviceContext()
        limit = f"δ = {delta:g}" if allowed is None else f"{bound:.3g} at δ = {delta:g}"
        if assumption == "margin":
            fix = f"a smaller margin γ ({ctx.param('margin')})"
            what = "the margin γ is too large"
        else:
            auto = (f" ({_setting(ctx, 'lipschitz', 'auto')} chose it on held-out rows that could not reject it "
                    "here)" if ctx.lipschitz_auto else "")
            fix = f"a larger L ({ctx.param('lipschitz')}){auto}"
            what = "L is too small"
        warnings.warn(
            f"{100 * share:.1f} % of the queries ({hit} of {n}): the cross-fitted models' intervals contradict "
            f"each other (more than {limit} allows under the assumption): evidence that {what} there; those "
            "rows report the hull of the models' intervals (fewer certificates). The certificates on the other "
            f"rows rest on the same assumption. Fix: {fix}; more training data near these queries; or check "
            "that the queries come from the training rows' distribution.",
            ContradictingModelsWarning, stacklevel=stacklevel,
        )
    return share
