"""Helpers shared by every experiment: model zoo, timing, result rows, grids, figures.

The API is deliberately small and stable (other experiment modules import it):

Models
    :data:`MODEL_NAMES`, :data:`PAPER_SETTING`, :func:`make_model`, :func:`model_zoo`
Timing
    :class:`FitQuery`, :func:`fit_and_query`, :func:`has_bounds`
Result rows
    :func:`result_row` (accuracy, weighted precision/recall, mean bound, vacuous
    share and — where the true probabilities are known — the violation rate)
Command-line values
    :func:`parse_sizes`, :func:`positive_int`, :func:`positive_float`
Figures (built from computed rows, never shown)
    :class:`SizeCurveDisplay`, :func:`new_figure`, :func:`save_figures`
Steps and ``--resume``
    :func:`experiment_steps`: the one :class:`~nwbound.utils.StepLog` every
    experiment runs its steps through (each step's result and parameters
    recorded atomically in ``steps.json`` as it finishes; ``--resume`` skips a
    step whose record matches; ``summary.md`` written last)

Conventions: a *row* is a flat ``dict`` of str → scalar, written with
:func:`nwbound.utils.write_table`; times are in seconds; a
metric that does not apply (e.g. the bound of logistic regression) is
``float("nan")`` in the row, which shows as ``nan`` in the tables and is
skipped by the figures.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from ..utils import StepLog, as_user_error
from ..utils import positive_float, positive_int  # noqa: F401  (re-exported for the experiments)
from ..metrics import accuracy, violation_rate, weighted_precision_recall

__all__ = [
    "experiment_steps",
    "run_parameters",
    "load_or_command_error",
    "quiet_bound_warnings",
    "MODEL_NAMES",
    "PAPER_SETTING",
    "FitQuery",
    "SizeCurveDisplay",
    "fit_and_query",
    "has_bounds",
    "make_model",
    "model_zoo",
    "new_figure",
    "parse_sizes",
    "positive_float",
    "positive_int",
    "result_row",
    "save_figures",
]

MODEL_NAMES: tuple[str, ...] = (
    "regular",
    "regular_auto",
    "localized",
    "localized_auto",
    "dyadic",
    "logistic",
    "cme",
)
"""Names understood by :func:`make_model`.

``regular``/``localized``: :class:`~nwbound.NadarayaWatsonClassifier` over all
training points / the ``n_neighbors`` nearest ones, fixed bandwidth;
``*_auto``: the same with ``bandwidth="auto"`` (per-query λ minimising ε —
only in the ``"ours"`` setting, since the paper's bound has no such option);
``dyadic``: :class:`~nwbound.DyadicClassifier`; ``logistic``: the bound-free
logistic-regression baseline; ``cme``: :class:`~nwbound.baselines.CMEClassifier`.
"""

PAPER_SETTING: dict[str, Any] = {"bound": "paper", "sigma": 0.25, "ck": 1.0, "coverage": "per_class"}
"""Keyword arguments that reproduce the paper's (invalid, σ = 1/4) bound exactly.

Combine with the paper's constants (its ``L`` or ``γ`` and ``λ``), see
``shared/notes/bounds.md``.
"""

_SETTINGS = ("ours", "paper")


# ---------------------------------------------------------------------------
# steps and --resume
# ---------------------------------------------------------------------------


def experiment_steps(output: str | os.PathLike, args: Any, params: Mapping[str, Any], *, name: str) -> StepLog:
    """The step record of one experiment run (every experiment uses this one mechanism).

    Each step run through :meth:`~nwbound.utils.StepLog.run` has its result and
    its parameters (``params`` plus the step's own) written atomically (a
    temporary file, then ``os.replace``) into ``steps.json`` as soon as it
    finishes. With ``--resume`` (``args.resume``) a step whose record matches
    its parameters, and whose files are all present, is reused instead of
    recomputed; any other step is recomputed. An existing ``summary.md`` is
    removed here and rewritten last by :meth:`~nwbound.utils.StepLog.write_summary`,
    so a killed run never leaves a summary of files it did not write.

    Parameters
    ----------
    output : path-like
        The prepared results folder.
    args : argparse.Namespace
        The parsed options; ``resume`` and ``quiet`` are read (absent = False).
    params : mapping
        Every parameter the run's results depend on (seed, sizes, constants…),
        recorded with each step: changing one recomputes every step.
    name : str
        The experiment's name (prefix of the progress lines).

    Returns
    -------
    nwbound.utils.StepLog
        The record, ready to run steps.

    Examples
    --------
    >>> import argparse, tempfile
    >>> from nwbound.experiments._common import experiment_steps
    >>> tmp = tempfile.mkdtemp()
    >>> args = argparse.Namespace(quiet=True)
    >>> log = experiment_steps(tmp, args, {"seed": 0}, name="demo")
    >>> log.run("square", lambda: (3 ** 2, []), params={"x": 3})
    9
    >>> args.resume = True
    >>> again = experiment_steps(tmp, args, {"seed": 0}, name="demo")
    >>> again.run("square", lambda: (-1, []), params={"x": 3}), again.skipped
    (9, ['square'])
    """
    return StepLog(
        output, params=params, resume=bool(getattr(args, "resume", False)), name=name,
        quiet=bool(getattr(args, "quiet", False)),
    )


#: Options that change where or how a run reports, not what it computes.
NOT_PARAMETERS: frozenset[str] = frozenset(
    {"command", "experiment", "output", "overwrite", "resume", "quiet", "threads", "cache_dir"}
)


def run_parameters(args: Any, *, exclude: Iterable[str] = ()) -> dict[str, Any]:
    """The parsed options a run's results depend on, ready to record with its steps.

    Every plain value of ``args`` (numbers, strings, paths — made absolute —,
    and sequences of them) except :data:`NOT_PARAMETERS` and ``exclude``;
    callables and modules (the CLI's dispatch entries) are skipped.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options.
    exclude : iterable of str, default=()
        More option names to leave out.

    Returns
    -------
    dict
        Option name → value, sorted by name.

    Examples
    --------
    >>> import argparse
    >>> from nwbound.experiments._common import run_parameters
    >>> run_parameters(argparse.Namespace(seed=0, sizes="100,200", quiet=True, func=print))
    {'seed': 0, 'sizes': '100,200'}
    """
    skip = NOT_PARAMETERS | set(exclude)

    def plain(value: Any) -> tuple[bool, Any]:
        if value is None or isinstance(value, (bool, int, float, str)):
            return True, value
        if isinstance(value, os.PathLike):
            return True, str(Path(value).resolve())
        if isinstance(value, (list, tuple)):
            items = [plain(v) for v in value]
            return all(ok for ok, _ in items), [v for _, v in items]
        return False, None

    out = {}
    for key, value in sorted(vars(args).items()):
        ok, value = plain(value)
        if ok and key not in skip:
            out[key] = value
    return out


# ---------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------


def make_model(
    name: str,
    *,
    setting: str = "ours",
    bound: str | None = None,
    lipschitz: float | None = None,
    margin: float | None = None,
    bandwidth: float = 0.2,
    n_neighbors: int = 10,
    kernel: str = "epanechnikov",
    delta: float = 0.05,
    resolution: int = 4,
    cme_params: Mapping[str, Any] | None = None,
    logistic_params: Mapping[str, Any] | None = None,
    n_jobs: int | None = None,
    random_state: int | None = 0,
) -> Any:
    """Build one unfitted model of the zoo.

    Parameters
    ----------
    name : str
        One of :data:`MODEL_NAMES`.
    setting : {"ours", "paper"}, default="ours"
        ``"ours"``: the estimators' valid default bound (band-Chernoff,
        simultaneous coverage) unless ``bound`` pins another form;
        ``"paper"``: :data:`PAPER_SETTING` for the NW and dyadic classifiers and
        the reference's noise constant 0.25 for the CME.
    bound : {"chernoff", "hoeffding", "selfnormalized"} or None, default=None
        Form of the valid bound of the NW and dyadic models in the ``"ours"``
        setting; None keeps the estimators' default (``"chernoff"``). Not
        allowed with ``setting="paper"`` (that setting fixes the form).
    lipschitz, margin : float or None
        The assumption behind the bound, **in the units of the features the
        model sees**; give one of them for the bounded models (not used by
        ``logistic`` and ``cme``).
    bandwidth : float, default=0.2
        λ of the fixed-bandwidth NW classifiers.
    n_neighbors : int, default=10
        k of the localized classifier.
    kernel : str, default="epanechnikov"
    delta : float, default=0.05
        Failure probability of the bounds.
    resolution : int, default=4
        Dyadic resolution m (``2^m`` cells per feature).
    cme_params, logistic_params : mapping, optional
        Extra keyword arguments for :class:`~nwbound.baselines.CMEClassifier` /
        :func:`~nwbound.baselines.make_logistic_regression`.
    n_jobs : int or None
        Threads of the NW classifiers.
    random_state : int or None, default=0
        Seed of the logistic regression.

    Returns
    -------
    estimator
        An unfitted scikit-learn style classifier.

    Raises
    ------
    ValueError
        For an unknown ``name``/``setting``, ``bound`` with the paper setting,
        ``*_auto`` in the paper setting, or a
        bounded NW/dyadic model with neither ``lipschitz`` nor ``margin``.

    Examples
    --------
    >>> make_model("regular", lipschitz=1.0).bound
    'chernoff'
    >>> make_model("localized", lipschitz=1.0, bound="hoeffding").bound
    'hoeffding'
    """
    if name not in MODEL_NAMES:
        raise ValueError(f"Unknown model {name!r}; choose from {', '.join(MODEL_NAMES)}.")
    if setting not in _SETTINGS:
        raise ValueError(f"setting must be 'ours' or 'paper', got {setting!r}.")
    if bound is not None and setting == "paper":
        raise ValueError(f"bound={bound!r} applies to the 'ours' setting only; the 'paper' setting fixes "
                         "bound='paper'. Leave bound=None with setting='paper'.")
    from ..baselines import CMEClassifier, make_logistic_regression
    from ..estimators import DyadicClassifier, NadarayaWatsonClassifier

    if name == "logistic":
        params = {"random_state": random_state, **dict(logistic_params or {})}
        return make_logistic_regression(**params)
    if name == "cme":
        params = {"delta": delta, **dict(cme_params or {})}
        if setting == "paper":
            params.setdefault("noise_constant", 0.25)
        return CMEClassifier(**params)
    if lipschitz is None and margin is None:
        raise ValueError(f"Model {name!r} needs `lipschitz` or `margin` (in the units of the features).")
    assumption = {"lipschitz": lipschitz, "margin": margin}
    paper = dict(PAPER_SETTING) if setting == "paper" else ({} if bound is None else {"bound": bound})
    if name == "dyadic":
        paper.pop("ck", None)  # the dyadic cell indicator has sup K = 1 already
        return DyadicClassifier(resolution=resolution, delta=delta, metric=None, **assumption, **paper)
    auto = name.endswith("_auto")
    if auto and setting == "paper":
        raise ValueError(f"{name!r} (bandwidth='auto') exists only in the 'ours' setting.")
    return NadarayaWatsonClassifier(
        metric=None,  # the paper's classifier on the features as given (not the library's default space)
        kernel=kernel,
        bandwidth="auto" if auto else bandwidth,
        n_neighbors=n_neighbors if name.startswith("localized") else None,
        delta=delta,
        n_jobs=n_jobs,
        **assumption,
        **paper,
    )


def model_zoo(names: Iterable[str] = MODEL_NAMES, **params: Any) -> dict[str, Any]:
    """Build several models with :func:`make_model` sharing ``params``.

    ``*_auto`` names are skipped silently in the paper setting (the paper has
    no per-query bandwidth), so one ``names`` list serves both settings.

    Parameters
    ----------
    names : iterable of str, default=MODEL_NAMES
        Models to build, each one of :data:`MODEL_NAMES`.
    **params
        Keyword arguments of :func:`make_model`, shared by every model.

    Returns
    -------
    dict
        name → unfitted estimator, in the order of ``names``.

    Raises
    ------
    ValueError
        As :func:`make_model`.

    Examples
    --------
    >>> from nwbound.experiments._common import model_zoo
    >>> list(model_zoo(["regular", "regular_auto", "logistic"], lipschitz=1.0))
    ['regular', 'regular_auto', 'logistic']
    >>> list(model_zoo(["regular", "regular_auto", "logistic"], lipschitz=1.0, setting="paper"))
    ['regular', 'logistic']
    """
    paper = params.get("setting", "ours") == "paper"
    return {name: make_model(name, **params) for name in names if not (paper and name.endswith("_auto"))}


# ---------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------


@dataclass
class FitQuery:
    """One fitted model, its timings and its predictions on the queries.

    Attributes
    ----------
    name : str
    model : estimator
        The fitted model.
    fit_time, query_time : float
        Wall-clock seconds of ``fit`` and of answering all queries
        (``predict_interval`` where the model has bounds, else ``predict_proba``).
    y_pred : ndarray of shape (n_queries,)
        Predicted labels (argmax of ``proba``, in ``classes_``).
    proba : ndarray of shape (n_queries, n_classes)
    interval : PredictionInterval or None
        None for a bound-free model.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.experiments._common import FitQuery
    >>> fq = FitQuery("demo", None, fit_time=0.5, query_time=0.25,
    ...               y_pred=np.array([0, 1]), proba=np.array([[0.9, 0.1], [0.2, 0.8]]))
    >>> fq.total_time, fq.interval is None
    (0.75, True)
    """

    name: str
    model: Any
    fit_time: float
    query_time: float
    y_pred: np.ndarray
    proba: np.ndarray
    interval: Any = None

    @property
    def total_time(self) -> float:
        """``fit_time + query_time``.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.experiments._common import FitQuery
        >>> FitQuery("m", None, 1.5, 0.5, np.zeros(1), np.ones((1, 2))).total_time
        2.0
        """
        return self.fit_time + self.query_time


@contextlib.contextmanager
def quiet_bound_warnings() -> Iterator[None]:
    """Silence :class:`~nwbound.diagnostics.UselessBoundWarning` and
    :class:`~nwbound.diagnostics.VacuousPredictionWarning` inside an experiment.

    An experiment measures how useful the bounds are and reports the shares
    (certified, trivial, vacuous) in its tables, so the per-call warnings a user
    of the library needs are only noise in its log.

    Examples
    --------
    >>> import warnings
    >>> from nwbound.diagnostics import UselessBoundWarning
    >>> from nwbound.experiments._common import quiet_bound_warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     with quiet_bound_warnings():
    ...         warnings.warn("trivial bounds", UselessBoundWarning)
    >>> seen
    []
    """
    from ..diagnostics import UselessBoundWarning, VacuousPredictionWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UselessBoundWarning)
        warnings.simplefilter("ignore", VacuousPredictionWarning)
        yield


def has_bounds(model: Any) -> bool:
    """Whether ``model`` reports bounds (has ``predict_interval`` and no ``has_bounds=False``).

    Parameters
    ----------
    model : estimator
        Fitted or not.

    Returns
    -------
    bool

    Examples
    --------
    >>> from nwbound.experiments._common import has_bounds, make_model
    >>> has_bounds(make_model("regular", lipschitz=1.0)), has_bounds(make_model("logistic"))
    (True, False)
    """
    return bool(getattr(model, "has_bounds", True)) and hasattr(model, "predict_interval")


def fit_and_query(model: Any, X_train: Any, y_train: Any, X_test: Any, *, name: str = "") -> FitQuery:
    """Fit ``model`` and answer the queries ``X_test``, timing both.

    The query time covers one call of ``predict_interval`` for bounded models
    (probabilities and bounds together) or ``predict_proba`` otherwise; the
    labels are the argmax of those probabilities (no second pass).
    :class:`~nwbound.diagnostics.UselessBoundWarning` is silenced (the result
    rows report the shares of useless bounds).

    Parameters
    ----------
    model : estimator
        An unfitted classifier; it is fitted in place.
    X_train : array-like of shape (n_samples, n_features)
    y_train : array-like of shape (n_samples,)
    X_test : array-like of shape (n_queries, n_features)
    name : str, default=""
        Name recorded in the result; the model's class name when empty.

    Returns
    -------
    FitQuery

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.experiments._common import fit_and_query, make_model
    >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> fq = fit_and_query(make_model("regular", lipschitz=1.0), X, y, X[::10], name="regular")
    >>> fq.name, fq.y_pred.tolist(), fq.proba.shape, fq.interval.epsilon.shape
    ('regular', [0, 0, 1, 1], (4, 2), (4, 2))
    """
    start = time.perf_counter()
    model.fit(X_train, y_train)
    fit_time = time.perf_counter() - start
    start = time.perf_counter()
    with quiet_bound_warnings():  # the rows report the certified / trivial shares
        if has_bounds(model):
            interval = model.predict_interval(X_test)
            proba = np.asarray(interval.proba)
        else:
            interval = None
            proba = np.asarray(model.predict_proba(X_test))
    query_time = time.perf_counter() - start
    y_pred = np.asarray(model.classes_)[np.argmax(proba, axis=1)]
    return FitQuery(name or type(model).__name__, model, fit_time, query_time, y_pred, proba, interval)


# ---------------------------------------------------------------------------
# result rows
# ---------------------------------------------------------------------------


def result_row(
    fq: FitQuery,
    y_test: Any,
    *,
    proba_true: Any = None,
    delta: float = 0.05,
    **extra: Any,
) -> dict[str, Any]:
    """One table row for a fitted model.

    Parameters
    ----------
    fq : FitQuery
    y_test : array-like of shape (n_queries,)
        True labels of the queries.
    proba_true : array-like of shape (n_queries, n_classes), optional
        True class probabilities (synthetic data), columns in ``classes_``
        order; enables the violation columns.
    delta : float, default=0.05
        The δ the bounds were computed for (copied into the row).
    **extra
        Leading columns (e.g. ``dataset=``, ``setting=``, ``n_train=``).

    Returns
    -------
    dict
        ``**extra`` then ``method, n_test, fit_s, query_s, total_s, accuracy,
        precision_w, recall_w, mean_bound, vacuous_share, delta,
        violation_rate, violation_ci_high, violation_any``. ``mean_bound`` is
        ε averaged over queries and classes; ``violation_rate`` is the largest
        per-class share of queries with ``p_c`` outside ``[lower_c, upper_c]`` (the guarantee is
        per class: compare with δ), ``violation_ci_high`` its 95 %
        Clopper–Pearson upper limit, ``violation_any`` the share with any
        class violated. Inapplicable values are NaN.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.experiments._common import fit_and_query, make_model, result_row
    >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> fq = fit_and_query(make_model("logistic"), X, y, X[::10], name="logistic")
    >>> row = result_row(fq, y[::10], dataset="toy")
    >>> list(row)[:3], row["accuracy"], row["n_test"], bool(np.isnan(row["mean_bound"]))
    (['dataset', 'method', 'n_test'], 1.0, 4, True)
    """
    y_test = np.asarray(y_test)
    classes = np.asarray(fq.model.classes_)
    precision, recall = weighted_precision_recall(y_test, fq.y_pred, classes=np.union1d(classes, y_test))
    nan = float("nan")
    row: dict[str, Any] = dict(extra)
    row.update(
        method=fq.name,
        n_test=int(y_test.shape[0]),
        fit_s=fq.fit_time,
        query_s=fq.query_time,
        total_s=fq.total_time,
        accuracy=accuracy(y_test, fq.y_pred),
        precision_w=precision,
        recall_w=recall,
        mean_bound=nan,
        vacuous_share=nan,
        delta=float(delta),
        violation_rate=nan,
        violation_ci_high=nan,
        violation_any=nan,
    )
    iv = fq.interval
    if iv is not None:
        row["mean_bound"] = float(np.mean(iv.epsilon))
        row["vacuous_share"] = float(np.mean(iv.vacuous))
        if proba_true is not None:
            v = violation_rate(proba_true, iv)
            worst = int(np.argmax(v["rate"]))
            row["violation_rate"] = float(v["rate"][worst])
            row["violation_ci_high"] = float(v["ci_high"][worst])
            row["violation_any"] = float(v["simultaneous_rate"])
    return row


# ---------------------------------------------------------------------------
# command-line values
# ---------------------------------------------------------------------------

_NUMBER = re.compile(r"^[+-]?(\d[\d_]*)(\.\d*)?([eE][+-]?\d+)?$")


def parse_sizes(text: str, *, name: str = "--sizes", minimum: int = 1) -> list[int]:
    """Parse a comma-separated list of sample sizes such as ``"100,1e3,10_000"``.

    Parameters
    ----------
    text : str
        Comma-separated sizes; ``1e3`` and ``10_000`` are accepted.
    name : str, default="--sizes"
        The option name used in error messages.
    minimum : int, default=1
        The smallest size allowed.

    Returns
    -------
    list of int
        The sorted distinct sizes.

    Raises
    ------
    ValueError
        One line, naming ``name``, for an empty list, a non-number, a
        non-integer such as ``1.5`` or a value below ``minimum``.

    Examples
    --------
    >>> from nwbound.experiments._common import parse_sizes
    >>> parse_sizes("1e3, 100,10_000,100")
    [100, 1000, 10000]
    >>> parse_sizes("100,1.5")
    Traceback (most recent call last):
    ...
    ValueError: --sizes: '1.5' is not a whole number of samples.
    """
    parts = [p.strip() for p in str(text).split(",")]
    if not any(parts):
        raise ValueError(f"{name}: give at least one size, e.g. {name} 100,1000,10000.")
    sizes: list[int] = []
    for part in parts:
        if not part:
            raise ValueError(f"{name}: empty entry in {text!r}; separate sizes by single commas.")
        if not _NUMBER.match(part):
            raise ValueError(f"{name}: {part!r} is not a number; give integers such as 1000 or 1e3.")
        value = float(part.replace("_", ""))
        if not math.isfinite(value) or value != int(value):
            raise ValueError(f"{name}: {part!r} is not a whole number of samples.")
        if value < minimum:
            raise ValueError(f"{name}: {part!r} is below the minimum of {minimum}.")
        sizes.append(int(value))
    return sorted(set(sizes))


# ---------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------


def new_figure(nrows: int = 1, ncols: int = 1, *, figsize: tuple[float, float] | None = None) -> tuple[Any, np.ndarray]:
    """A matplotlib figure with an array of axes, without pyplot (no GUI, no global state).

    Parameters
    ----------
    nrows, ncols : int, default=1
        The grid of axes.
    figsize : (float, float), optional
        Size in inches; 4.2 × 3.4 per axes by default.

    Returns
    -------
    fig : matplotlib.figure.Figure
    axes : ndarray of Axes, shape (nrows, ncols)

    Examples
    --------
    >>> from nwbound.experiments._common import new_figure
    >>> fig, axes = new_figure(1, 2)
    >>> axes.shape, [round(float(v), 1) for v in fig.get_size_inches()]
    ((1, 2), [8.4, 3.4])
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize or (4.2 * ncols, 3.4 * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def save_figures(fig: Any, out: str | os.PathLike, stem: str, *, formats: Sequence[str] = ("png", "pdf")) -> list[Path]:
    """Save ``fig`` as ``out/stem.png`` and ``.pdf`` (atomic; replaces only these names).

    The results folder has been checked by the CLI (empty, or ``--overwrite``),
    so replacing a figure of the same name is what the user asked for.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure; its layout is tightened first.
    out : str or path-like
        The results folder.
    stem : str
        The file name without suffix.
    formats : sequence of str, default=("png", "pdf")
        One file per format.

    Returns
    -------
    list of pathlib.Path
        The files written.

    Examples
    --------
    >>> import tempfile
    >>> from nwbound.experiments._common import new_figure, save_figures
    >>> fig, axes = new_figure()
    >>> _ = axes[0, 0].plot([1, 2], [3, 4])
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     print([p.name for p in save_figures(fig, tmp, "curve", formats=("png",))])
    ['curve.png']
    """
    from ..plots import save_figure

    fig.tight_layout()
    return list(save_figure(fig, Path(out) / stem, formats=formats, overwrite=True, dpi=150))


_EXTRA_COLORS: dict[str, int] = {}


def _color_index(key: str) -> int:
    """A stable colour per model name (same colour in every figure), else by first use."""
    if key in MODEL_NAMES:
        return MODEL_NAMES.index(key)
    return _EXTRA_COLORS.setdefault(key, len(MODEL_NAMES) + len(_EXTRA_COLORS))


class SizeCurveDisplay:
    """A metric against the training-set size, one line per group (e.g. method).

    Built from result rows (see :func:`result_row`); rows with a NaN metric are
    skipped, repeated ``(group, x)`` pairs are averaged.

    Parameters
    ----------
    curves : dict
        group label → ``(x, y)`` arrays, sorted by x.
    x_label, y_label : str
    logx, logy : bool
    styles : dict, optional
        group label → ``(color key, line-style index)``. Lines with the same
        colour key share a colour (a model name keeps its colour in every
        figure); the index picks solid, dashed, dotted, …

    Attributes
    ----------
    figure_, ax_ : matplotlib objects, set by :meth:`plot`.

    Examples
    --------
    >>> from nwbound.experiments._common import SizeCurveDisplay
    >>> rows = [{"method": "regular", "n_train": n, "accuracy": a} for n, a in [(100, 0.8), (1000, 0.9), (1000, 0.7)]]
    >>> rows.append({"method": "logistic", "n_train": 100, "accuracy": float("nan")})
    >>> disp = SizeCurveDisplay.from_rows(rows, y="accuracy")
    >>> {k: (x.tolist(), y.round(3).tolist()) for k, (x, y) in disp.curves.items()}
    {'regular': ([100.0, 1000.0], [0.8, 0.8])}
    >>> disp.ax_.get_ylabel()
    'accuracy'
    """

    def __init__(
        self,
        *,
        curves: Mapping[str, tuple[np.ndarray, np.ndarray]],
        x_label: str = "training samples n",
        y_label: str = "",
        logx: bool = True,
        logy: bool = False,
        styles: Mapping[str, tuple[str, int]] | None = None,
    ) -> None:
        self.curves = dict(curves)
        self.styles = dict(styles or {})
        self.x_label = x_label
        self.y_label = y_label
        self.logx = logx
        self.logy = logy

    @classmethod
    def from_rows(
        cls,
        rows: Iterable[Mapping[str, Any]],
        *,
        y: str,
        x: str = "n_train",
        group: str | Sequence[str] = "method",
        where: Mapping[str, Any] | None = None,
        ax: Any = None,
        x_label: str = "training samples n",
        y_label: str | None = None,
        logx: bool = True,
        logy: bool = False,
        hline: float | None = None,
        title: str | None = None,
    ) -> "SizeCurveDisplay":
        """Collect the curves from ``rows`` and plot them.

        Parameters
        ----------
        rows : iterable of dict
        y, x : str
            Row keys of the plotted metric and of the size.
        group : str or sequence of str
            Key(s) whose values name a line (joined by ", "). The first key
            sets the colour, the second (if any) the line style.
        where : mapping, optional
            Keep only rows with these key/value pairs.
        ax : Axes, optional
        hline : float, optional
            A dashed reference line (e.g. δ).
        title : str, optional
        x_label, y_label, logx, logy
            As in the constructor; ``y_label`` defaults to ``y``.

        Returns
        -------
        SizeCurveDisplay
            Plotted (``ax_`` and ``figure_`` set).

        Examples
        --------
        >>> from nwbound.experiments._common import SizeCurveDisplay
        >>> rows = [{"method": m, "setting": s, "n_train": n, "mean_bound": b}
        ...         for m, s, n, b in [("regular", "ours", 100, 0.5), ("regular", "ours", 1000, 0.2),
        ...                            ("regular", "paper", 100, 0.4), ("dyadic", "ours", 100, 0.9)]]
        >>> disp = SizeCurveDisplay.from_rows(rows, y="mean_bound", group=["method", "setting"],
        ...                                   where={"n_train": 100}, hline=0.05)
        >>> sorted(disp.curves), disp.styles["regular, paper"]
        (['dyadic, ours', 'regular, ours', 'regular, paper'], ('regular', 1))
        """
        keys = [group] if isinstance(group, str) else list(group)
        acc: dict[str, dict[float, list[float]]] = {}
        styles: dict[str, tuple[str, int]] = {}
        second: dict[str, int] = {}
        for row in rows:
            if where and any(row.get(k) != v for k, v in where.items()):
                continue
            value = row.get(y)
            if value is None or not np.isfinite(float(value)):
                continue
            label = ", ".join(str(row.get(k, "")) for k in keys)
            if label not in styles:
                sub = str(row.get(keys[1], "")) if len(keys) > 1 else ""
                styles[label] = (str(row.get(keys[0], "")), second.setdefault(sub, len(second)))
            acc.setdefault(label, {}).setdefault(float(row[x]), []).append(float(value))
        curves = {}
        for label, points in acc.items():
            xs = np.array(sorted(points))
            curves[label] = (xs, np.array([np.mean(points[v]) for v in xs]))
        disp = cls(curves=curves, x_label=x_label, y_label=y_label or y, logx=logx, logy=logy, styles=styles)
        disp.plot(ax=ax, hline=hline, title=title)
        return disp

    def plot(self, ax: Any = None, *, hline: float | None = None, title: str | None = None) -> "SizeCurveDisplay":
        """Draw the curves on ``ax`` (a new figure when None); return ``self``.

        Parameters
        ----------
        ax : matplotlib Axes, optional
        hline : float, optional
            A dashed reference line (e.g. δ).
        title : str, optional

        Returns
        -------
        SizeCurveDisplay

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.experiments._common import SizeCurveDisplay, new_figure
        >>> disp = SizeCurveDisplay(curves={"regular": (np.array([100, 1000]), np.array([0.5, 0.2]))},
        ...                         y_label="mean ε", logy=True)
        >>> fig, axes = new_figure()
        >>> disp.plot(axes[0, 0], title="bound width").ax_.get_yscale(), len(disp.ax_.lines)
        ('log', 1)
        """
        if ax is None:
            fig, axes = new_figure()
            ax = axes[0, 0]
        markers = "osD^vP*Xh<>"
        line_styles = ("-", "--", ":", "-.")
        for i, (label, (xs, ys)) in enumerate(self.curves.items()):
            key, ls = self.styles.get(label, (label, 0))
            c = _color_index(key)
            ax.plot(
                xs, ys, marker=markers[c % len(markers)], ms=4, lw=1.3, color=f"C{c % 10}",
                ls=line_styles[ls % len(line_styles)], label=label,
            )
        if hline is not None:
            ax.axhline(hline, color="k", ls="--", lw=1.0, label=f"{hline:g}")
        if self.logx:
            ax.set_xscale("log")
        if self.logy:
            ax.set_yscale("log")
        ax.set_xlabel(self.x_label)
        ax.set_ylabel(self.y_label)
        if title:
            ax.set_title(title, fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
        if self.curves:
            ax.legend(fontsize=7)
        self.ax_ = ax
        self.figure_ = ax.figure
        return self


def load_or_command_error(label: str, loader: Any, *args: Any, **kwargs: Any) -> Any:
    """Call a data loader; turn its data problems into a one-line :class:`~nwbound.utils.UserError`.

    Missing or corrupt files, bad sizes and a missing optional dependency
    (``OSError``, ``ValueError``, ``ImportError``) become ``"<label>: <message>"``.

    Examples
    --------
    >>> from nwbound.experiments._common import load_or_command_error
    >>> def loader(path):
    ...     raise FileNotFoundError(f"{path} does not exist")
    >>> try:
    ...     load_or_command_error("MNIST data", loader, "data/mnist")
    ... except Exception as exc:
    ...     print(type(exc).__name__, exc)
    UserError MNIST data: data/mnist does not exist
    """
    try:
        return loader(*args, **kwargs)
    except (OSError, ValueError, ImportError) as exc:
        raise as_user_error(label, exc) from exc
