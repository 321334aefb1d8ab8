"""Covariate shift: a per-query bound vs guarantees that assume exchangeability.

The class probabilities ``p(c | x)`` are known (the synthetic fields of
:mod:`nwbound.datasets.synthetic`, raw box ``[-10, 10]²`` mapped to ``[0, 1]²``)
and stay the same; only where the inputs fall changes:

* training and calibration inputs are uniform on the left part of the box
  (``x₁ ≤ TRAIN_EDGE`` in raw units);
* queries are uniform on a box shifted to the right (``x₁ ∈ QUERY_RANGE``).

Queries fall in three regions: ``in`` (inside the training inputs' box, but
weighted towards its right edge), ``near`` (outside, but within one bandwidth
of it: some training mass is in reach) and ``far`` (beyond the kernel's
reach). A control set of the same size, drawn like the training inputs, is
the region ``no shift`` (where the exchangeable guarantees apply).

For every field, bound form (``--bounds``) and NW model (regular, localized)
the run measures, per region:

* the **per-query bound**: share of queries where ``p_c`` lies outside ``[lower_c, upper_c]`` for
  some class (guarantee: ≤ δ in expectation for any fixed query, conditional on
  the training inputs — no assumption on where queries fall), the share of
  *false certificates* (certified, yet the predicted class is not the most
  probable one), the certified share and the error among certified;
* **split-conformal sets** (LAC, level α, calibrated on the training
  distribution): their coverage ``Σ_{c ∈ Γ(x)} p_c(x)``, averaged (guarantee:
  ≥ 1 − α, marginal over queries exchangeable with the calibration split);
* **calibrated thresholds** (:class:`~nwbound.baselines.CalibratedAcceptance`
  on ``error_upper`` and on ``1 − max p̂``, calibrated on the training
  distribution): accepted share and error among accepted (guarantee: ≤ α
  with probability ≥ 1 − δ, for exchangeable queries).

Errors and coverage are computed from the true ``p`` (the expected error of a
prediction is ``1 − p_ŷ(x)``), so they carry no label noise; the violation
rates of the bound are over fresh training labels (one draw per repeat).

Outputs: ``shift_rows.csv/.md`` (one row per field, bound, model, repeat and
region), ``shift_summary.csv/.md`` (pooled over repeats, with 95 %
Clopper–Pearson limits on the violation rate), ``summary.md`` and the figure
``shift.png/.pdf``.
"""

from __future__ import annotations

import argparse
import math
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..baselines import CalibratedAcceptance, SplitConformalSets
from ..datasets import make_lipschitz_logistic, make_softmax_field
from ..diagnostics import UselessBoundWarning, VacuousPredictionWarning
from ..metrics import clopper_pearson
from ..utils import StepLog, atomic_write_text, format_markdown, positive_float, positive_int, progress, write_table
from ._common import experiment_steps, make_model, new_figure, save_figures

__all__ = [
    "DESCRIPTION",
    "FIELDS",
    "REGIONS",
    "ShiftConfig",
    "add_arguments",
    "config_from_args",
    "make_shift_data",
    "run",
    "run_field",
    "summary_rows",
    "supported_bounds",
    "write_results",
]

DESCRIPTION = (
    "covariate shift: per-query bound violations vs split-conformal coverage and a calibrated "
    "threshold's accepted error, per query region"
)

FIELDS: tuple[str, ...] = ("logistic", "softmax")
"""``logistic``: 2 classes, ``p₁`` a ramp along x₁ with its 1/2-level at x₁ = 5
(out of the training region); ``softmax``: 5 classes, soft nearest prototype."""

REGIONS: tuple[str, ...] = ("no shift", "in", "near", "far")
MODELS: tuple[str, ...] = ("regular", "localized")

BOX = (-10.0, 10.0)  # raw box of both fields, mapped to [0, 1]²
TRAIN_EDGE = 2.0  # training inputs: x₁ ∈ [-10, 2]
QUERY_RANGE = (-4.0, 10.0)  # queries: x₁ ∈ [-4, 10]
LIPSCHITZ_RAW = 0.15  # the paper's field
LOGISTIC_BOUNDARY = 5.0  # p₁ = 1/2 at x₁ = 5

FULL = {"n_train": 10_000, "n_cal": 2_000, "n_query": 10_000, "repeats": 10}
QUICK = {"n_train": 2_000, "n_cal": 1_000, "n_query": 2_000, "repeats": 2}


@dataclass(frozen=True)
class ShiftConfig:
    """Validated settings of one run (see :func:`config_from_args`)."""

    fields: tuple[str, ...] = FIELDS
    bounds: tuple[str, ...] = ("hoeffding", "chernoff")
    models: tuple[str, ...] = MODELS
    n_train: int = FULL["n_train"]
    n_cal: int = FULL["n_cal"]
    n_query: int = FULL["n_query"]
    repeats: int = FULL["repeats"]
    bandwidth: float = 0.1
    n_neighbors: int = 20
    delta: float = 0.05
    alpha: float = 0.1
    seed: int = 0
    quiet: bool = False


def supported_bounds() -> tuple[str, ...]:
    """Bound forms of the installed estimators among ``hoeffding`` and ``chernoff``.

    Examples
    --------
    >>> "hoeffding" in supported_bounds()
    True
    """
    from ..estimators import NadarayaWatsonClassifier

    X = np.array([[0.0], [0.1], [0.2], [0.3]])
    y = np.array([0, 1, 0, 1])
    out = []
    for bound in ("hoeffding", "chernoff"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UselessBoundWarning)  # a 4-point probe is useless by design
                NadarayaWatsonClassifier(metric=None, bandwidth=0.5, lipschitz=1.0, bound=bound).fit(X, y).predict_interval(X[:1])
        except (TypeError, ValueError):
            continue
        out.append(bound)
    return tuple(out)


# ---------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add this experiment's options (``--quick``, ``--output``, ``--seed`` come from the CLI)."""
    parser.add_argument("--fields", default=",".join(FIELDS), help="comma-separated subset of logistic,softmax")
    parser.add_argument(
        "--bounds", default=None,
        help="comma-separated bound forms, e.g. hoeffding,chernoff (default: every one the estimators support)",
    )
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of regular,localized")
    for name, text in (("n-train", "training points"), ("n-cal", "calibration points"), ("n-query", "queries")):
        key = name.replace("-", "_")
        parser.add_argument(f"--{name}", type=positive_int, default=None,
                            help=f"{text} per repeat (default {FULL[key]}; --quick {QUICK[key]})")
    parser.add_argument("--repeats", type=positive_int, default=None,
                        help=f"independent draws (default {FULL['repeats']}; --quick {QUICK['repeats']})")
    parser.add_argument("--bandwidth", type=positive_float, default=0.1, help="λ in [0, 1] units (default 0.1)")
    parser.add_argument("--n-neighbors", type=positive_int, default=20, help="k of the localized NWC (default 20)")
    parser.add_argument("--delta", type=positive_float, default=0.05, help="δ of the bounds and the threshold")
    parser.add_argument("--alpha", type=positive_float, default=0.1,
                        help="α of the conformal sets and the calibrated threshold (default 0.1)")


def _choices(text: str, allowed: Sequence[str], name: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(p.strip() for p in str(text).split(",") if p.strip()))
    unknown = [p for p in items if p not in allowed]
    if not items or unknown:
        raise ValueError(f"{name}: choose from {', '.join(allowed)} (got {text!r}).")
    return items


def config_from_args(args: argparse.Namespace) -> ShiftConfig:
    """Validate the parsed options; raise :class:`ValueError` with a one-line message."""
    quick = bool(getattr(args, "quick", False))
    sizes = QUICK if quick else FULL
    available = supported_bounds()
    bounds = available if args.bounds is None else _choices(args.bounds, available, "--bounds")
    for name in ("delta", "alpha"):
        if not getattr(args, name) < 1:
            raise ValueError(f"--{name} must be in (0, 1), got {getattr(args, name)}.")
    config = ShiftConfig(
        fields=_choices(args.fields, FIELDS, "--fields"),
        bounds=bounds,
        models=_choices(args.models, MODELS, "--models"),
        n_train=int(args.n_train or sizes["n_train"]),
        n_cal=int(args.n_cal or sizes["n_cal"]),
        n_query=int(args.n_query or sizes["n_query"]),
        repeats=int(args.repeats or sizes["repeats"]),
        bandwidth=float(args.bandwidth),
        n_neighbors=int(args.n_neighbors),
        delta=float(args.delta),
        alpha=float(args.alpha),
        seed=int(args.seed),
        quiet=bool(getattr(args, "quiet", False)),
    )
    if config.n_neighbors > config.n_train:
        raise ValueError(f"--n-neighbors {config.n_neighbors} exceeds --n-train {config.n_train}.")
    # Refuse up front what the calibrated threshold would refuse after the fits.
    from ..baselines import min_calibration_size

    need = min_calibration_size(config.alpha, config.delta)
    if config.n_cal < need:
        raise ValueError(f"--n-cal {config.n_cal} is below the {need} rows the binomial test needs at this α, δ.")
    return config


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ShiftData:
    """One draw: training, calibration and query sets in [0, 1]² units with the true p."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_cal: np.ndarray
    y_cal: np.ndarray
    X_query: np.ndarray
    proba_query: np.ndarray
    region: np.ndarray  # index into REGIONS per query
    lipschitz: float  # true L in the [0, 1]² units


def _rng(seed: int, *keys: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(seed), *map(int, keys)]))


def _field(name: str, seed: int) -> Any:
    """The raw-unit field (its ``true_proba`` is the p shared by all draws)."""
    rng = _rng(seed, FIELDS.index(name), 99)
    if name == "logistic":
        return make_lipschitz_logistic(
            2, lipschitz=LIPSCHITZ_RAW, box=BOX, direction=[1.0, 0.0], offset=-LOGISTIC_BOUNDARY,
            scale=None, random_state=rng,
        )
    return make_softmax_field(5, n_classes=5, lipschitz=LIPSCHITZ_RAW, box=BOX, scale=None, random_state=rng)


def _uniform(rng: np.random.Generator, n: int, x1: tuple[float, float]) -> np.ndarray:
    low = np.array([x1[0], BOX[0]])
    high = np.array([x1[1], BOX[1]])
    return low + (high - low) * rng.uniform(size=(n, 2))


def _labels(proba: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    # Inverse-CDF draw per row, vectorised.
    u = rng.uniform(size=(proba.shape[0], 1))
    return np.minimum((np.cumsum(proba, axis=1) < u).sum(axis=1), proba.shape[1] - 1)


def make_shift_data(field: str, config: ShiftConfig, repeat: int) -> ShiftData:
    """Draw the training, calibration and query sets of one repeat.

    Examples
    --------
    >>> d = make_shift_data("logistic", ShiftConfig(n_train=50, n_cal=60, n_query=70), 0)
    >>> d.X_train.shape, d.X_query.shape, round(d.lipschitz, 3)  # control + shifted queries
    ((50, 2), (140, 2), 3.0)
    >>> bool(d.X_train[:, 0].max() <= 0.6)
    True
    """
    if field not in FIELDS:
        raise ValueError(f"field must be one of {', '.join(FIELDS)}, got {field!r}.")
    f = _field(field, config.seed)
    rng = _rng(config.seed, FIELDS.index(field), repeat)
    span = BOX[1] - BOX[0]
    to_unit = lambda X: (X - BOX[0]) / span  # noqa: E731
    Xt = _uniform(rng, config.n_train, (BOX[0], TRAIN_EDGE))
    Xc = _uniform(rng, config.n_cal, (BOX[0], TRAIN_EDGE))
    Xq = _uniform(rng, config.n_query, QUERY_RANGE)
    # Distance (in [0, 1] units) beyond the training box decides the region.
    outside = np.maximum(Xq[:, 0] - TRAIN_EDGE, 0.0) / span
    region = np.where(outside == 0.0, 1, np.where(outside <= config.bandwidth, 2, 3))
    # The control: queries drawn like the training inputs (region 0).
    Xq = np.vstack([_uniform(rng, config.n_query, (BOX[0], TRAIN_EDGE)), Xq])
    region = np.concatenate([np.zeros(config.n_query, dtype=region.dtype), region])
    return ShiftData(
        X_train=to_unit(Xt),
        y_train=_labels(f.true_proba(Xt), rng),
        X_cal=to_unit(Xc),
        y_cal=_labels(f.true_proba(Xc), rng),
        X_query=to_unit(Xq),
        proba_query=f.true_proba(Xq),
        region=region,
        lipschitz=float(f.lipschitz) * span,
    )


# ---------------------------------------------------------------------------
# the measurements
# ---------------------------------------------------------------------------


def _region_rows(
    data: ShiftData, fitted: Any, conformal: Any, rules: dict[str, Any], **lead: Any
) -> list[dict[str, Any]]:
    """One row per region with counts (pooled later) and rates."""
    iv = fitted.predict_interval(data.X_query)
    p = data.proba_query
    cols = np.searchsorted(np.arange(p.shape[1]), fitted.classes_)
    p = p[:, cols]  # columns in classes_ order (all classes occur in training)
    n = p.shape[0]
    rows_ix = np.arange(n)
    pred = iv.predicted_index
    err = 1.0 - p[rows_ix, pred]  # expected error of each prediction
    # Outside [lower, upper], not |p − p̂| > ε: Chernoff limits are asymmetric (ε is the larger side).
    violated = ((p < iv.lower) | (p > iv.upper)).any(axis=1)
    certified = iv.certified
    false_cert = certified & (p[rows_ix, pred] < p.max(axis=1))
    sets = conformal.predict_set(data.X_query)
    coverage = (sets * p).sum(axis=1)
    accepted = {name: rule.accept(score(iv)) for name, (rule, score) in rules.items()}
    out = []
    for r, region in enumerate(REGIONS):
        m = data.region == r
        k = int(m.sum())
        if k == 0:
            continue
        row: dict[str, Any] = dict(lead)
        row.update(
            region=region,
            n_queries=k,
            mean_epsilon=float(iv.epsilon[m].mean()),
            vacuous_share=float(iv.vacuous[m].mean()),
            n_violated=int(violated[m].sum()),
            violation_rate=float(violated[m].mean()),
            certified_share=float(certified[m].mean()),
            error_among_certified=_mean(err[m & certified]),
            n_false_certificates=int(false_cert[m].sum()),
            false_certificate_rate=float(false_cert[m].mean()),
            error=float(err[m].mean()),
            conformal_coverage=float(coverage[m].mean()),
            conformal_singleton_share=float((sets[m].sum(axis=1) == 1).mean()),
        )
        for name, acc in accepted.items():
            row[f"{name}_accepted_share"] = float(acc[m].mean())
            row[f"{name}_accepted_error"] = _mean(err[m & acc])
        out.append(row)
    return out


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else math.nan


_SCORES = {
    "threshold_error_upper": lambda iv: iv.error_upper,
    "threshold_max_p": lambda iv: 1.0 - iv.proba.max(axis=1),
}


def run_field(field: str, config: ShiftConfig, log: StepLog | None = None) -> list[dict[str, Any]]:
    """All repeats, bounds and models on one field; one row per region.

    With ``log``, each (repeat, bound, model) is one recorded step (its rows
    kept in ``steps.json`` as soon as it finishes; reused on ``--resume``).
    """
    tasks = [(r, b, m) for r in range(config.repeats) for b in config.bounds for m in config.models]
    rows: list[dict[str, Any]] = []
    cache: dict[str, Any] = {}
    with warnings.catch_warnings():
        # The rows report trivial and certified shares; a warning per fit is noise here.
        warnings.simplefilter("ignore", UselessBoundWarning)
        warnings.simplefilter("ignore", VacuousPredictionWarning)  # far queries are the point here
        for task in progress(tasks, desc=f"shift {field}", total=len(tasks), quiet=config.quiet):
            if log is None:
                rows += _run_task(field, config, task, cache)
            else:
                repeat, bound, model = task
                rows += log.run(
                    f"{field} repeat={repeat} {bound} {model}",
                    lambda task=task: (_run_task(field, config, task, cache), []),
                    params={"field": field, "repeat": repeat, "bound": bound, "model": model},
                )
    return rows


def _run_task(field: str, config: ShiftConfig, task: tuple[int, str, str], cache: dict) -> list[dict[str, Any]]:
    """Fit one model on one repeat's data (drawn once per repeat, kept in ``cache``); its region rows."""
    repeat, bound, name = task
    if cache.get("repeat") != repeat:
        cache.update(repeat=repeat, data=make_shift_data(field, config, repeat))
    data = cache["data"]
    model = make_model(
        name, bound=bound, lipschitz=data.lipschitz, bandwidth=config.bandwidth, n_neighbors=config.n_neighbors,
        delta=config.delta,
    )
    model.fit(data.X_train, data.y_train)
    conformal = SplitConformalSets(model, alpha=config.alpha, backend="numpy").fit(data.X_cal, data.y_cal)
    iv_cal = model.predict_interval(data.X_cal)
    y_pred_cal = model.classes_[iv_cal.predicted_index]
    rules = {
        key: (
            CalibratedAcceptance(alpha=config.alpha, delta=config.delta).fit(score(iv_cal), data.y_cal, y_pred_cal),
            score,
        )
        for key, score in _SCORES.items()
    }
    return _region_rows(
        data, model, conformal, rules, field=field, bound=bound, model=name, repeat=repeat,
        lipschitz=round(data.lipschitz, 6), delta=config.delta, alpha=config.alpha,
    )


def summary_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pool the repeats: one row per field, bound, model and region.

    Violation and false-certificate rates are pooled counts with 95 %
    Clopper–Pearson upper limits; the other columns are query-weighted means.
    """
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["field"], row["bound"], row["model"], row["region"]), []).append(row)
    means = [
        "mean_epsilon", "vacuous_share", "certified_share", "error", "conformal_coverage",
        "conformal_singleton_share",
    ] + [f"{k}_accepted_share" for k in _SCORES]
    weighted_by_accepted = {
        "error_among_certified": "certified_share",
        **{f"{k}_accepted_error": f"{k}_accepted_share" for k in _SCORES},
    }
    out = []
    for (field, bound, model, region), grp in groups.items():
        n = sum(r["n_queries"] for r in grp)
        v = sum(r["n_violated"] for r in grp)
        fc = sum(r["n_false_certificates"] for r in grp)
        row: dict[str, Any] = {
            "field": field, "bound": bound, "model": model, "region": region, "n_queries": n,
            "delta": grp[0]["delta"], "alpha": grp[0]["alpha"],
            "violation_rate": v / n,
            "violation_ci_high": float(clopper_pearson(v, n)[1]),
            "false_certificate_rate": fc / n,
        }
        for key in means:
            row[key] = sum(r[key] * r["n_queries"] for r in grp) / n
        for key, share in weighted_by_accepted.items():
            w = np.array([r[share] * r["n_queries"] for r in grp])
            vals = np.array([r[key] for r in grp])
            ok = w > 0
            row[key] = float((vals[ok] * w[ok]).sum() / w[ok].sum()) if ok.any() else math.nan
        out.append(row)
    order = {r: i for i, r in enumerate(REGIONS)}
    return sorted(out, key=lambda r: (r["field"], r["bound"], r["model"], order[r["region"]]))


# ---------------------------------------------------------------------------
# outputs
# ---------------------------------------------------------------------------


def shift_figure(summary: Sequence[dict[str, Any]], out: Path, config: ShiftConfig) -> list[Path]:
    """Per field: bound violations, conformal coverage and accepted error, by region."""
    fields = list(dict.fromkeys(r["field"] for r in summary))
    fig, axes = new_figure(len(fields), 3, figsize=(13.0, 3.6 * len(fields)))
    axes = np.atleast_2d(axes)
    x = np.arange(len(REGIONS))
    for i, field in enumerate(fields):
        rows = [r for r in summary if r["field"] == field]
        series = list(dict.fromkeys((r["bound"], r["model"]) for r in rows))
        width = 0.8 / max(len(series), 1)
        for j, (bound, model) in enumerate(series):
            sel = {r["region"]: r for r in rows if r["bound"] == bound and r["model"] == model}
            vals = lambda key: [sel[g][key] if g in sel else np.nan for g in REGIONS]  # noqa: E731
            pos = x + (j - (len(series) - 1) / 2) * width
            label = f"{model}, {bound}"
            axes[i, 0].bar(pos, vals("violation_rate"), width, label=label)
            axes[i, 1].bar(pos, vals("conformal_coverage"), width, label=label)
            axes[i, 2].bar(pos, vals("threshold_max_p_accepted_error"), width, label=f"{label}: 1−max p̂")
            axes[i, 2].plot(pos, vals("error_among_certified"), "k_", ms=10, mew=2)
        axes[i, 0].axhline(config.delta, color="k", ls="--", lw=1, label="δ")
        top = max([config.delta] + [r["violation_rate"] for r in rows])
        axes[i, 0].set_ylim(0.0, 1.5 * top)
        axes[i, 1].set_ylim(0.0, 1.02)
        axes[i, 2].set_ylim(bottom=0.0)
        axes[i, 1].axhline(1 - config.alpha, color="k", ls="--", lw=1, label="1 − α")
        axes[i, 2].axhline(config.alpha, color="k", ls="--", lw=1, label="α (— marks: error among certified)")
        titles = ("per-query bound: violation rate", "split conformal: coverage", "calibrated threshold: accepted error")
        for ax, title in zip(axes[i], titles):
            ax.set_xticks(x, REGIONS)
            ax.set_title(f"{field}: {title}", fontsize=9)
        axes[i, 0].legend(fontsize=7)
        axes[i, 2].legend(fontsize=7)
    fig.tight_layout()
    return save_figures(fig, out, "shift")


def _summary_text(config: ShiftConfig, summary: Sequence[dict[str, Any]]) -> str:
    lines = [
        "# Covariate shift: per-query bound vs exchangeable guarantees",
        "",
        f"Training/calibration inputs x₁ ∈ [{BOX[0]:g}, {TRAIN_EDGE:g}], queries x₁ ∈ [{QUERY_RANGE[0]:g}, "
        f"{QUERY_RANGE[1]:g}] (raw units; [0, 1]² for the models), same p(c|x). Regions: in = inside the training "
        f"box, near = outside within λ = {config.bandwidth:g}, far = beyond λ. n_train = {config.n_train}, "
        f"n_cal = {config.n_cal}, n_query = {config.n_query}, {config.repeats} repeats, δ = {config.delta:g}, "
        f"α = {config.alpha:g}; true L in [0, 1] units.",
        "",
        "Targets: violation_rate ≤ δ (per-query bound), conformal_coverage ≥ 1 − α (flagged below 1 − α minus "
        "two standard deviations of the calibration draw), threshold_*_accepted_error ≤ α. Errors and coverage "
        "are expectations under the true p.",
        "",
    ]
    lines += ["## Headline (worst over fields, bound forms and models)", ""]
    for region in REGIONS:
        sel = [r for r in summary if r["region"] == region]
        if not sel:
            continue
        errs = [r["threshold_max_p_accepted_error"] for r in sel if math.isfinite(r["threshold_max_p_accepted_error"])]
        lines.append(
            f"- {region}: bound violations ≤ {max(r['violation_rate'] for r in sel):.4f} (δ = {config.delta:g}); "
            f"false certificates ≤ {max(r['false_certificate_rate'] for r in sel):.4f}; conformal coverage ≥ "
            f"{min(r['conformal_coverage'] for r in sel):.3f} (1 − α = {1 - config.alpha:g}); 1 − max p̂ threshold "
            f"accepted error ≤ {max(errs) if errs else float('nan'):.3f} (α = {config.alpha:g})."
        )
    lines += ["", "## Per field, bound form, model and region", ""]
    # Two standard deviations of the pooled coverage from the calibration draws.
    tol = 2.0 * math.sqrt(config.alpha * (1 - config.alpha) / (config.n_cal * config.repeats))
    for row in summary:
        flags = []
        if row["violation_ci_high"] < row["delta"] or row["violation_rate"] <= row["delta"]:
            flags.append("bound holds")
        else:
            flags.append("BOUND VIOLATED")
        if row["conformal_coverage"] < 1 - row["alpha"] - tol:
            flags.append("conformal under-covers")
        for key in _SCORES:
            e = row[f"{key}_accepted_error"]
            if math.isfinite(e) and e > row["alpha"]:
                flags.append(f"{key} accepted error {e:.3f} > α")
        lines.append(
            f"- {row['field']}, {row['bound']}, {row['model']}, {row['region']}: violations "
            f"{row['violation_rate']:.4f} (CI high {row['violation_ci_high']:.4f}), certified "
            f"{row['certified_share']:.3f} (error {row['error_among_certified']:.3f}), conformal coverage "
            f"{row['conformal_coverage']:.3f} — {'; '.join(flags)}."
        )
    lines += ["", "## Pooled table", "", format_markdown(summary)]
    return "\n".join(lines) + "\n"


def write_results(
    rows: list[dict[str, Any]], out: Path, config: ShiftConfig, *, log: StepLog | None = None
) -> list[Path]:
    """Write the tables, the figure and, last, ``summary.md``; return the paths.

    With ``log``, the tables and the figure are one recorded step and the
    summary is written by :meth:`~nwbound.utils.StepLog.write_summary`.
    """
    summary = summary_rows(rows)

    def tables_and_figure() -> tuple[None, list[Path]]:
        files = [*write_table(rows, out / "shift_rows", title="Covariate shift: one row per repeat and region")]
        files += write_table(summary, out / "shift_summary", title="Covariate shift: pooled over repeats")
        files += shift_figure(summary, out, config)
        return None, files

    text = _summary_text(config, summary)
    if log is None:
        _, files = tables_and_figure()
        return [*files, atomic_write_text(out / "summary.md", text)]  # last: everything it lists exists
    log.run("tables and figure", tables_and_figure)
    log.write_summary(text)
    return log.files


def run(args: argparse.Namespace, output: Path) -> list[Path]:
    """Entry point of ``nwbound experiment shift`` (steps recorded, ``--resume``, summary last)."""
    config = config_from_args(args)
    params = asdict(config)
    params.pop("quiet")
    log = experiment_steps(output, args, params, name="shift")
    rows = [row for field in config.fields for row in run_field(field, config, log)]
    return write_results(rows, Path(output), config, log=log)
