"""The synthetic experiments of the paper (Sec. 5, figure 2), plus measured coverage.

For every training size ``n`` of a grid, the classifiers — regular and localized
NWC, dyadic, logistic regression and CME (up to ``--cme-max``) — are fitted on
fresh data and queried on a fixed test set drawn from the same distribution,
whose true class probabilities are known. Each bounded classifier runs in two
settings:

* ``paper`` — the paper's constants and bound: ``bound="paper"``, σ = 1/4,
  c_k = 1, per-class δ, ``L = 0.15`` (a raw-unit value) applied to the min-max
  scaled data, or ``γ = 6.67`` for the separable data; Epanechnikov, λ = 0.2;
  the CME with the reference's noise constant 1/4.
* ``ours`` — the valid default bound with the true constant in the scaled units
  (``L ≈ 3.0``, ``γ ≈ 0.45``), the same λ and ``bandwidth="auto"``; the CME with
  the correct noise constant 1/2.

Besides the paper's quantities (fit, query and total time, mean bound at
δ = 0.05, accuracy) every row reports the measured violation rate of the bound
against the known ``p`` (see :func:`nwbound.experiments._common.result_row`),
the certified share and the error among certified predictions, the share of
errors caught by reviewing the 10 % with the largest ``1 − max p̂``,
``error_upper`` and ``ε`` (:func:`nwbound.metrics.review_comparison`), and the
mean ε where the true ``max_c p_c ≥ 0.95``. The ``ours`` setting runs once per
bound form of ``--bounds`` (default: every form the estimators support, e.g.
``hoeffding`` and ``chernoff``); ``bounds.csv/.md`` sets their widths and
violation rates side by side. The figures show the estimators' default form.

``--datasets softmax`` adds a 5-class soft-nearest-prototype field with a
certified L (:func:`nwbound.datasets.make_softmax_field`).

Outputs (in the results folder): ``<dataset>_results.csv/.md`` (one row per
dataset, setting, size, repeat and method), ``coverage.csv/.md``,
``scaling.csv/.md`` (fitted exponents of time vs n), ``summary.md`` and the
figures ``figure2.png/.pdf`` (the six panels), one file per panel (full run only:
``fig2_*``) and ``<dataset>_coverage.png/.pdf``.
"""

from __future__ import annotations

import argparse
import math
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .._result import PredictionInterval
from ..diagnostics import UselessBoundWarning
from ..datasets import make_lipschitz_logistic, make_margin_clusters, make_softmax_field
from ._common import (
    MODEL_NAMES,
    FitQuery,
    SizeCurveDisplay,
    experiment_steps,
    fit_and_query,
    make_model,
    new_figure,
    parse_sizes,
    positive_float,
    positive_int,
    result_row,
    save_figures,
)
from ..utils import StepLog, atomic_write_text, format_markdown, write_table
from ..utils import progress

__all__ = [
    "DESCRIPTION",
    "DATASETS",
    "SyntheticConfig",
    "add_arguments",
    "config_from_args",
    "coverage_rows",
    "make_split",
    "run",
    "bound_rows",
    "run_dataset",
    "run_params",
    "scaling_rows",
    "write_results",
]

DESCRIPTION = "figure 2: time, bound, accuracy and measured coverage vs n on synthetic data"

DATASETS: tuple[str, ...] = ("overlapping", "separable", "softmax")
"""``overlapping``: the logistic field with known L (appendix C); ``separable``:
margin clusters with known γ; ``softmax``: 5 classes, known L (not in the default run)."""

DEFAULT_DATASETS: tuple[str, ...] = ("overlapping", "separable")

REVIEW_SHARE = 0.1  # the review share of the errors-caught columns
CONFIDENT = 0.95  # ε is also averaged where the true max_c p_c is at least this

PAPER_LIPSCHITZ = 0.15  # the paper's L, stated for [-10, 10]² but used on [0, 1]²
PAPER_MARGIN = 6.67  # the paper's γ ("equivalent" to L = 0.15: 1/γ = 0.15)
PAPER_BANDWIDTH = 0.2
CME_PAPER_NOISE = 0.25  # the reference's sub-Gaussian constant (should be 1/2)

FULL_SIZES = (100, 300, 1_000, 3_000, 10_000, 30_000, 100_000)
QUICK_SIZES = (100, 1_000, 10_000)
FULL_CME_MAX, QUICK_CME_MAX = 10_000, 1_000
FULL_N_TEST, QUICK_N_TEST = 2_000, 500
MIN_SIZE = 20  # smaller training sets often miss a class

_BOUNDED_NW = ("regular", "regular_auto", "localized", "localized_auto", "dyadic")


@dataclass(frozen=True)
class SyntheticConfig:
    """Validated settings of one run (see :func:`config_from_args`)."""

    datasets: tuple[str, ...] = DEFAULT_DATASETS
    bounds: tuple[str, ...] = ("hoeffding", "chernoff")
    sizes: tuple[int, ...] = FULL_SIZES
    cme_max: int = FULL_CME_MAX
    n_test: int = FULL_N_TEST
    repeats: int = 1
    models: tuple[str, ...] = ("regular", "regular_auto", "localized", "dyadic", "logistic", "cme")
    bandwidth: float = PAPER_BANDWIDTH
    n_neighbors: int = 10
    resolution: int = 4
    delta: float = 0.05
    seed: int = 0
    quiet: bool = False
    separate_panels: bool = True  # one file per panel besides the combined figure


# ---------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser, *, datasets: bool = True) -> None:
    """Add this experiment's options (``--quick``, ``--output`` … come from the CLI)."""
    if datasets:
        parser.add_argument(
            "--datasets", default=",".join(DEFAULT_DATASETS),
            help="comma-separated subset of overlapping,separable,softmax (default: overlapping,separable)",
        )
    parser.add_argument(
        "--bounds", default=None,
        help="bound forms of the 'ours' setting, e.g. hoeffding,chernoff (default: every one the estimators support)",
    )
    parser.add_argument(
        "--sizes", default=None,
        help="training sizes, comma-separated, e.g. 100,1e3,1e4 (default: 1e2…1e5; --quick: 100,1000,10000)",
    )
    parser.add_argument(
        "--cme-max", default=None,
        help=f"largest n for the CME (O(n³) fit, 8n² bytes; default {FULL_CME_MAX}, --quick {QUICK_CME_MAX})",
    )
    parser.add_argument("--n-test", type=positive_int, default=None,
                        help=f"test queries (default {FULL_N_TEST}; --quick {QUICK_N_TEST})")
    parser.add_argument("--repeats", type=positive_int, default=1, help="independent training sets per size")
    parser.add_argument("--models", default=None,
                        help=f"comma-separated subset of {','.join(MODEL_NAMES)} (default: all but localized_auto)")
    parser.add_argument("--bandwidth", type=positive_float, default=PAPER_BANDWIDTH,
                        help="fixed λ of the NW classifiers (default 0.2, the paper's)")
    parser.add_argument("--n-neighbors", type=positive_int, default=10, help="k of the localized NWC (default 10)")
    parser.add_argument("--resolution", type=positive_int, default=4, help="dyadic resolution m (default 4)")
    parser.add_argument("--delta", type=positive_float, default=0.05, help="failure probability δ (default 0.05)")


def _choices(text: str, allowed: Sequence[str], name: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(p.strip() for p in str(text).split(",") if p.strip()))
    if not items:
        raise ValueError(f"{name}: give at least one of {', '.join(allowed)}.")
    unknown = [p for p in items if p not in allowed]
    if unknown:
        raise ValueError(f"{name}: unknown value(s) {', '.join(unknown)}; choose from {', '.join(allowed)}.")
    return items


def config_from_args(args: argparse.Namespace, *, datasets: Sequence[str] | None = None) -> SyntheticConfig:
    """Validate the parsed options; raise :class:`ValueError` with a one-line message."""
    quick = bool(getattr(args, "quick", False))
    base = SyntheticConfig()
    sizes = (
        parse_sizes(args.sizes, name="--sizes", minimum=MIN_SIZE)
        if args.sizes is not None
        else list(QUICK_SIZES if quick else FULL_SIZES)
    )
    if args.cme_max is not None:
        cme_max = parse_sizes(args.cme_max, name="--cme-max", minimum=1)
        if len(cme_max) != 1:
            raise ValueError("--cme-max: give a single size, e.g. --cme-max 10000.")
        cme_max = cme_max[0]
    else:
        cme_max = QUICK_CME_MAX if quick else FULL_CME_MAX
    if datasets is None:
        datasets = _choices(getattr(args, "datasets", ",".join(DEFAULT_DATASETS)), DATASETS, "--datasets")
    from .shift import supported_bounds

    available = supported_bounds()
    text = getattr(args, "bounds", None)
    bounds = available if text is None else _choices(text, available, "--bounds")
    models = _choices(args.models, MODEL_NAMES, "--models") if args.models else base.models
    delta = float(args.delta)
    if not delta < 1:
        raise ValueError(f"--delta must be in (0, 1), got {args.delta}.")
    if any(m.startswith("localized") for m in models) and args.n_neighbors > sizes[0]:
        raise ValueError(
            f"--n-neighbors {args.n_neighbors} exceeds the smallest training size {sizes[0]}; "
            "lower k or drop that size."
        )
    if "cme" in models:
        from ..baselines import CMEClassifier

        largest = max([n for n in sizes if n <= cme_max], default=0)
        if largest:
            # Refuse up front rather than after the cheaper models have run.
            CMEClassifier()._check_memory(largest)
    return replace(
        base,
        datasets=tuple(datasets),
        bounds=tuple(bounds),
        sizes=tuple(sizes),
        cme_max=int(cme_max),
        n_test=int(args.n_test or (QUICK_N_TEST if quick else FULL_N_TEST)),
        repeats=int(args.repeats),
        models=tuple(models),
        bandwidth=float(args.bandwidth),
        n_neighbors=int(args.n_neighbors),
        resolution=int(args.resolution),
        delta=delta,
        seed=int(args.seed),
        quiet=bool(getattr(args, "quiet", False)),
        # matplotlib text layout dominates a quick run: combined figures only.
        separate_panels=not quick,
    )


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Split:
    """Scaled training data, the test queries in the same units and the constants."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    proba_test: np.ndarray
    lipschitz: float | None  # true, in the scaled units
    margin: float | None  # true, in the scaled units


def _rng(seed: int, *keys: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(seed), *map(int, keys)]))


def make_test_set(dataset: str, n_test: int, seed: int, repeat: int = 0) -> Any:
    """The raw-unit test data (a :class:`~nwbound.datasets.SyntheticData`) of one repeat."""
    rng = _rng(seed, DATASETS.index(dataset), repeat, 0)
    if dataset == "overlapping":
        return make_lipschitz_logistic(n_test, lipschitz=PAPER_LIPSCHITZ, scale=None, random_state=rng)
    if dataset == "softmax":
        return make_softmax_field(n_test, n_classes=5, lipschitz=PAPER_LIPSCHITZ, scale=None, random_state=rng)
    return make_margin_clusters(n_test, margin=20.0 / 3.0, scale=None, random_state=rng)


def make_split(dataset: str, n: int, test: Any, seed: int, repeat: int = 0) -> Split:
    """Draw ``n`` training points like ``test``, min-max scale them, map ``test`` along.

    The scaler is fitted on the training sample (as the paper's
    ``MinMaxScaler``); the generator restates L or γ in those units.
    """
    rng = _rng(seed, DATASETS.index(dataset), repeat, n)
    if dataset == "overlapping":
        # The field's direction comes from the test set, so both share one p.
        direction = 2.0 * test.weights[1]
        train = make_lipschitz_logistic(
            n, lipschitz=PAPER_LIPSCHITZ, direction=direction, scale="minmax", random_state=rng
        )
    elif dataset == "softmax":
        # Same prototypes as the test set, so both share one p.
        train = make_softmax_field(
            n, n_classes=5, lipschitz=PAPER_LIPSCHITZ, centers=test.centers, scale="minmax", random_state=rng
        )
    else:
        train = make_margin_clusters(n, margin=20.0 / 3.0, scale="minmax", random_state=rng)
    X_test = train.from_raw(test.X)
    return Split(train.X, train.y, X_test, test.y, test.proba_true, train.lipschitz, train.margin)


# ---------------------------------------------------------------------------
# the grid
# ---------------------------------------------------------------------------


def _assumption(dataset: str, setting: str, split: Split) -> dict[str, float]:
    if dataset in ("overlapping", "softmax"):
        return {"lipschitz": PAPER_LIPSCHITZ if setting == "paper" else split.lipschitz}
    return {"margin": PAPER_MARGIN if setting == "paper" else split.margin}


def _with_noise_constant(fq: FitQuery, noise_constant: float) -> FitQuery:
    """The CME's interval for another noise constant, without refitting.

    ``ε = P(x)·√B + P(x)·c_g/√(nλ_r)`` with ``c_g`` proportional to the noise
    constant, so only the sampling part scales; the cost is the same.
    """
    iv = fq.interval
    ratio = noise_constant / float(fq.model.noise_constant)
    scaled = PredictionInterval.from_parts(
        proba=iv.proba, bias=iv.bias.copy(), sampling=iv.sampling * ratio, kappa=iv.kappa,
        n_eff=iv.n_eff, vacuous=iv.vacuous, bandwidth=iv.bandwidth, outside_box=iv.outside_box,
    )
    return replace(fq, interval=scaled)


def _jobs(config: SyntheticConfig, n: int) -> list[tuple[str, str, str]]:
    """``(model, setting, bound)`` at size ``n``; setting ``none`` for the bound-free model.

    The NW and dyadic models run the ``ours`` setting once per bound form.
    """
    jobs: list[tuple[str, str, str]] = []
    for name in config.models:
        if name == "cme" and n > config.cme_max:
            continue
        if name == "logistic":
            jobs.append((name, "none", ""))
        elif name == "cme":
            jobs.append((name, "ours", ""))  # the paper row is derived from this fit
        else:
            if not name.endswith("_auto"):
                jobs.append((name, "paper", "paper"))
            jobs += [(name, "ours", b) for b in config.bounds]
    return jobs


def _review_columns(fq: FitQuery, y_test: np.ndarray, proba_true: np.ndarray) -> dict[str, float]:
    """Certified share, error among certified, errors caught at 10 % review per score, confident ε."""
    from ..metrics import errors_caught_at
    from ..metrics._bounds import review_comparison

    nan = float("nan")
    pct = f"{100 * REVIEW_SHARE:.0f}"
    cols = {
        "certified_share": nan, "error_among_certified": nan, f"caught_{pct}_max_p": nan,
        f"caught_{pct}_error_upper": nan, f"caught_{pct}_epsilon": nan, "mean_bound_confident": nan,
    }
    if fq.interval is None:
        cols[f"caught_{pct}_max_p"] = errors_caught_at(REVIEW_SHARE, y_test, fq.y_pred, 1.0 - fq.proba.max(axis=1))
        return cols
    rows = review_comparison(y_test, fq.interval, fq.model.classes_, review_share=REVIEW_SHARE)
    cert, max_p, eu, eps = rows[:4]
    cols.update({
        "certified_share": cert["accepted_share"], "error_among_certified": cert["error_among_accepted"],
        f"caught_{pct}_max_p": max_p["errors_caught"], f"caught_{pct}_error_upper": eu["errors_caught"],
        f"caught_{pct}_epsilon": eps["errors_caught"],
    })
    confident = proba_true.max(axis=1) >= CONFIDENT
    if confident.any():
        cols["mean_bound_confident"] = float(np.mean(fq.interval.epsilon[confident]))
    return cols


def run_dataset(dataset: str, config: SyntheticConfig, log: StepLog | None = None) -> list[dict[str, Any]]:
    """Fit and query every model at every size; return the result rows.

    With ``log``, each (repeat, size) is one recorded step (its rows kept in
    ``steps.json`` as soon as it finishes; reused on ``--resume`` when the
    parameters match).
    """
    if dataset not in DATASETS:
        raise ValueError(f"dataset must be one of {', '.join(DATASETS)}, got {dataset!r}.")
    grid = [(r, n) for r in range(config.repeats) for n in config.sizes]
    rows: list[dict[str, Any]] = []
    for repeat, n in progress(grid, desc=f"{dataset} data", total=len(grid), quiet=config.quiet):
        if log is None:
            rows += _size_rows(dataset, config, repeat, n)
        else:
            rows += log.run(
                f"{dataset} repeat={repeat} n={n}",
                lambda repeat=repeat, n=n: (_size_rows(dataset, config, repeat, n), []),
                params={"dataset": dataset, "repeat": repeat, "n": n},
            )
    return rows


def _size_rows(dataset: str, config: SyntheticConfig, repeat: int, n: int) -> list[dict[str, Any]]:
    """The rows of every model at one training size of one repeat."""
    test = make_test_set(dataset, config.n_test, config.seed, repeat)
    split = make_split(dataset, n, test, config.seed, repeat)
    rows: list[dict[str, Any]] = []
    for name, setting, bound in _jobs(config, n):
        assumption = _assumption(dataset, setting, split)
        model = make_model(
            name,
            setting="ours" if setting == "none" else setting,
            bandwidth=config.bandwidth,
            n_neighbors=config.n_neighbors,
            resolution=config.resolution,
            delta=config.delta,
            random_state=config.seed,
            **(assumption if name in _BOUNDED_NW else {}),
        )
        if name in _BOUNDED_NW and setting == "ours":
            model.set_params(bound=bound)
        with warnings.catch_warnings():
            # The rows report trivial and certified shares; a warning per fit is noise here.
            warnings.simplefilter("ignore", UselessBoundWarning)
            fq = fit_and_query(model, split.X_train, split.y_train, split.X_test, name=name)
        results = [(setting, fq)]
        if name == "cme":
            results.append(("paper", _with_noise_constant(fq, CME_PAPER_NOISE)))
        for s, res in results:
            if name in _BOUNDED_NW:
                label = ", ".join(f"{'L' if k == 'lipschitz' else 'γ'}={v:.4g}" for k, v in _assumption(dataset, s, split).items())
            elif name == "cme":
                label = f"noise={CME_PAPER_NOISE if s == 'paper' else fq.model.noise_constant:g}"
            else:
                label = ""
            row = result_row(
                res, split.y_test, proba_true=split.proba_test, delta=config.delta,
                dataset=dataset, setting=s, bound=bound if name in _BOUNDED_NW else "", n_train=n, repeat=repeat,
                assumption=label,
                bandwidth="auto" if name.endswith("_auto") else (config.bandwidth if name in _BOUNDED_NW else ""),
            )
            row.update(_review_columns(res, split.y_test, split.proba_test))
            rows.append(row)
    return rows


# ---------------------------------------------------------------------------
# summaries
# ---------------------------------------------------------------------------


def coverage_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (dataset, setting, method) with a bound: worst violation rate over n.

    ``status`` is ``"violated"`` where some size's rate exceeds δ and
    ``"holds"`` otherwise; ``significant`` says whether the worst rate is above
    δ beyond sampling noise (its 95 % Clopper–Pearson interval excludes δ).
    """
    from ..metrics import clopper_pearson

    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
    for row in rows:
        if math.isfinite(row["violation_rate"]):
            key = (row["dataset"], row["setting"], row.get("bound", ""), row["method"])
            groups.setdefault(key, []).append(row)
    out = []
    for (dataset, setting, bound, method), grp in groups.items():
        worst = max(grp, key=lambda r: r["violation_rate"])
        largest = max(grp, key=lambda r: r["n_train"])
        count = int(round(worst["violation_rate"] * worst["n_test"]))
        low, _ = clopper_pearson(count, worst["n_test"], 0.95)
        delta = worst["delta"]
        out.append(
            {
                "dataset": dataset,
                "setting": setting,
                "bound": bound,
                "method": method,
                "sizes": len({r["n_train"] for r in grp}),
                "worst_violation_rate": worst["violation_rate"],
                "at_n": worst["n_train"],
                "ci_high": worst["violation_ci_high"],
                "mean_violation_rate": float(np.mean([r["violation_rate"] for r in grp])),
                "violation_at_largest_n": largest["violation_rate"],
                "mean_bound_at_largest_n": largest["mean_bound"],
                "delta": delta,
                "status": "violated" if worst["violation_rate"] > delta else "holds",
                "significant": bool(float(low) > delta),
            }
        )
    return sorted(out, key=lambda r: (r["dataset"], r["setting"], r["bound"], r["method"]))


def bound_rows(rows: Sequence[dict[str, Any]], reference: str = "hoeffding") -> list[dict[str, Any]]:
    """Each bound form of the ``ours`` setting against ``reference``, per dataset, method and size.

    Columns: mean ε of both, their ratio (form / reference) overall and where
    the true ``max_c p_c ≥ 0.95``, both violation rates (any class), the
    certified shares and the errors among certified. Averaged over repeats.
    Empty when only one form ran.

    Examples
    --------
    >>> base = {"dataset": "overlapping", "setting": "ours", "method": "regular", "n_train": 100,
    ...         "mean_bound_confident": 0.5, "violation_any": 0.0, "certified_share": 0.1,
    ...         "error_among_certified": 0.0}
    >>> rows = [dict(base, bound="hoeffding", mean_bound=0.5), dict(base, bound="chernoff", mean_bound=0.4)]
    >>> [(r["bound"], round(r["width_ratio"], 2)) for r in bound_rows(rows)]
    [('chernoff', 0.8)]
    """
    groups: dict[tuple[str, str, int, str], list[dict[str, Any]]] = {}
    for row in rows:
        if row["setting"] == "ours" and row.get("bound"):
            groups.setdefault((row["dataset"], row["method"], row["n_train"], row["bound"]), []).append(row)

    def mean(key: str, grp: list[dict[str, Any]]) -> float:
        vals = [r[key] for r in grp if math.isfinite(r[key])]
        return float(np.mean(vals)) if vals else float("nan")

    out = []
    for (dataset, method, n, bound), grp in sorted(groups.items()):
        ref = groups.get((dataset, method, n, reference))
        if bound == reference or ref is None:
            continue
        entry: dict[str, Any] = {"dataset": dataset, "method": method, "n_train": n, "bound": bound, "reference": reference}
        for key in ("mean_bound", "mean_bound_confident", "violation_any", "certified_share", "error_among_certified"):
            entry[key] = mean(key, grp)
            entry[f"{key}_{reference}"] = mean(key, ref)
        for key, label in (("mean_bound", "width_ratio"), ("mean_bound_confident", "width_ratio_confident")):
            a, b = entry[key], entry[f"{key}_{reference}"]
            entry[label] = a / b if b > 0 else float("nan")
        out.append(entry)
    return out


def _primary_bound(config: SyntheticConfig) -> str:
    """The form the figures show: the estimators' default when it ran, else the first one."""
    from ..estimators import NadarayaWatsonClassifier

    default = NadarayaWatsonClassifier().bound
    return default if default in config.bounds else config.bounds[0]


def scaling_rows(rows: Sequence[dict[str, Any]], *, min_n: int = 1_000) -> list[dict[str, Any]]:
    """Fitted exponents ``b`` of ``time ≈ a·n^b`` (least squares in log-log, sizes ≥ ``min_n``).

    Uses the timings of the ``ours``/``none`` rows (the paper rows cost the same).
    """
    groups: dict[tuple[str, str], dict[int, list[dict[str, Any]]]] = {}
    for row in rows:
        if row["setting"] != "paper":
            groups.setdefault((row["dataset"], row["method"]), {}).setdefault(row["n_train"], []).append(row)
    out = []
    for (dataset, method), by_n in sorted(groups.items()):
        ns = np.array(sorted(n for n in by_n if n >= min_n), dtype=float)
        entry: dict[str, Any] = {"dataset": dataset, "method": method, "sizes_used": len(ns)}
        for key in ("fit_s", "query_s", "total_s"):
            t = np.array([np.mean([r[key] for r in by_n[int(n)]]) for n in ns])
            ok = t > 0
            entry[f"{key[:-2]}_exponent"] = (
                float(np.polyfit(np.log10(ns[ok]), np.log10(t[ok]), 1)[0]) if ok.sum() >= 2 else float("nan")
            )
        largest = max(by_n)
        entry["n_max"] = largest
        entry["total_s_at_n_max"] = float(np.mean([r["total_s"] for r in by_n[largest]]))
        out.append(entry)
    return out


# ---------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------

_PANELS = (
    ("total_time", "total_s", "total time [s]", True),
    ("query_time", "query_s", "query time [s]", True),
    ("fit_time", "fit_s", "fit time [s]", True),
)


def _not_paper(rows: Sequence[dict[str, Any]], dataset: str) -> list[dict[str, Any]]:
    return [r for r in rows if r["dataset"] == dataset and r["setting"] != "paper"]


def _draw_panel(ax: Any, panel: str, rows: Sequence[dict[str, Any]], delta: float) -> None:
    timing = {p[0]: p for p in _PANELS}
    if panel in timing:
        _, key, label, logy = timing[panel]
        data = _not_paper(rows, "overlapping") or _not_paper(rows, "separable")
        which = data[0]["dataset"] if data else "overlapping"
        SizeCurveDisplay.from_rows(data, y=key, ax=ax, y_label=label, logy=logy, title=f"{label[:-4]} ({which})")
    elif panel == "mean_bound":
        data = [r for r in rows if r["dataset"] == "overlapping"] or list(rows)
        SizeCurveDisplay.from_rows(
            data, y="mean_bound", group=("method", "setting"), ax=ax, logy=True,
            y_label=f"mean bound ε̄ (δ = {delta:g})", title=f"mean bound ({data[0]['dataset'] if data else ''})",
        )
    else:  # accuracy_<dataset>
        dataset = panel.split("_", 1)[1]
        data = _not_paper(rows, dataset)
        if not data:
            ax.text(0.5, 0.5, f"{dataset} data not run", ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
            return
        SizeCurveDisplay.from_rows(data, y="accuracy", ax=ax, y_label="accuracy", title=f"accuracy ({dataset})")


FIGURE2_PANELS = ("total_time", "query_time", "fit_time", "mean_bound", "accuracy_overlapping", "accuracy_separable")


def figure2(
    rows: Sequence[dict[str, Any]],
    out: Path,
    delta: float,
    *,
    panels: Sequence[str] = FIGURE2_PANELS,
    stem: str = "figure2",
    separate: bool = True,
) -> list[Path]:
    """The panels of the paper's figure 2: combined (``stem``) and, if ``separate``, one file each (``fig2_*``).

    Timing panels use the overlapping data when present (else the separable);
    the mean bound shows both settings.
    """
    files: list[Path] = []
    ncols = 3
    nrows = -(-len(panels) // ncols)
    fig, axes = new_figure(nrows, ncols, figsize=(5.0 * ncols, 4.2 * nrows))
    for ax, panel in zip(axes.ravel(), panels):
        _draw_panel(ax, panel, rows, delta)
    for ax in axes.ravel()[len(panels):]:
        ax.set_axis_off()
    files += save_figures(fig, out, stem)
    for panel in panels if separate else ():
        fig, axes = new_figure()
        _draw_panel(axes[0, 0], panel, rows, delta)
        files += save_figures(fig, out, f"fig2_{panel}")
    return files


def coverage_figure(rows: Sequence[dict[str, Any]], out: Path, dataset: str, delta: float) -> list[Path]:
    """Violation rate vs n, the paper's setting next to ours, with δ marked."""
    data = [r for r in rows if r["dataset"] == dataset and math.isfinite(r["violation_rate"])]
    fig, axes = new_figure(1, 2, figsize=(10.0, 3.8))
    top = max([r["violation_rate"] for r in data] + [delta]) * 1.15
    for ax, setting in zip(axes[0], ("paper", "ours")):
        SizeCurveDisplay.from_rows(
            data, y="violation_rate", where={"setting": setting}, ax=ax, hline=delta,
            y_label="share of queries with p outside [lower, upper]", title=f"{setting} setting ({dataset} data)",
        )
        ax.set_ylim(0.0, top)
    return save_figures(fig, out, f"{dataset}_coverage")


# ---------------------------------------------------------------------------
# writing
# ---------------------------------------------------------------------------


def _review_table(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Certificate and 10 % review columns at the largest size, averaged over repeats."""
    pct = f"{100 * REVIEW_SHARE:.0f}"
    keys = ("accuracy", "certified_share", "error_among_certified", f"caught_{pct}_max_p",
            f"caught_{pct}_error_upper", f"caught_{pct}_epsilon")
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["setting"], r.get("bound", ""), r["method"]), []).append(r)
    out = []
    for (dataset, setting, bound, method), grp in sorted(groups.items()):
        n = max(r["n_train"] for r in grp)
        at = [r for r in grp if r["n_train"] == n]
        entry: dict[str, Any] = {"dataset": dataset, "setting": setting, "bound": bound, "method": method, "n_train": n}
        for key in keys:
            vals = [r[key] for r in at if math.isfinite(r.get(key, float("nan")))]
            entry[key] = float(np.mean(vals)) if vals else float("nan")
        out.append(entry)
    return out


def _summary(
    config: SyntheticConfig, rows: list[dict], coverage: list[dict], scaling: list[dict], bounds: list[dict] | None = None
) -> str:
    lines = [
        "# Synthetic experiments (paper figure 2) with measured coverage\n",
        f"Datasets: {', '.join(config.datasets)}; sizes {list(config.sizes)} (CME up to {config.cme_max}); "
        f"{config.n_test} test queries with known p; {config.repeats} repeat(s); δ = {config.delta:g}; "
        f"Epanechnikov λ = {config.bandwidth:g}, localized k = {config.n_neighbors}, dyadic m = {config.resolution}; "
        f"seed {config.seed}.\n",
        "Settings: **paper** = bound='paper', σ = 0.25, c_k = 1, per class, L = 0.15 / γ = 6.67 on the min-max "
        "scaled data (CME noise constant 0.25); **ours** = our valid bound forms "
        f"({', '.join(config.bounds)}) with the true L / γ in the "
        "scaled units (CME noise constant 0.5). The CME's paper row reuses the fit of its ours row "
        "(only ε's sampling part differs), so both show the same times.\n",
        "## Coverage (violation rate = share of test queries with p_c outside [lower_c, upper_c], worst class, worst n)\n",
        format_markdown(coverage) if coverage else "(no bounded model was run)",
        f"\n## Certificate and review at the largest n ({100 * REVIEW_SHARE:.0f} % reviewed per score)\n",
        "certified = the top class's lower bound is above every other class's upper bound; caught_* = share of "
        "all errors among the 10 % of queries with the largest score.\n",
        format_markdown(_review_table(rows)) if rows else "",
        "\n## Bound forms side by side (width ratio = mean ε of the form / mean ε of Hoeffding)\n",
        format_markdown(bounds) if bounds else "(only one bound form was run)",
        "\n## Time scaling (fitted exponent b of time ≈ a·n^b, sizes ≥ 1000)\n",
        format_markdown(scaling) if scaling else "(too few sizes)",
        "",
    ]
    return "\n".join(lines)


def run_params(config: SyntheticConfig) -> dict[str, Any]:
    """What the results depend on: every setting but the display ones (recorded with each step)."""
    params = asdict(config)
    for key in ("quiet", "separate_panels"):
        params.pop(key)
    return params


def write_results(
    rows: list[dict[str, Any]],
    out: Path,
    config: SyntheticConfig,
    *,
    panels: Sequence[str] = FIGURE2_PANELS,
    stem: str = "figure2",
    log: StepLog | None = None,
) -> list[Path]:
    """Write the tables, the figures and, last, ``summary.md`` of ``rows`` into ``out``; return the files.

    With ``log``, the tables and figures are one recorded step and the summary
    is written by :meth:`~nwbound.utils.StepLog.write_summary`.
    """
    # Figures and time scaling: one bound form per (method, setting), the default one.
    primary = _primary_bound(config)
    shown = [r for r in rows if r.get("bound", "") in ("", "paper", primary)]
    coverage = coverage_rows(rows)
    scaling = scaling_rows(shown)
    bounds = bound_rows(rows)

    def tables_and_figures() -> tuple[None, list[Path]]:
        files: list[Path] = []
        for dataset in config.datasets:
            subset = [r for r in rows if r["dataset"] == dataset]
            files += write_table(subset, out / f"{dataset}_results", title=f"Results on the {dataset} synthetic data")
        if coverage:
            files += write_table(coverage, out / "coverage", title=f"Measured coverage of the bounds (δ = {config.delta:g})")
        if scaling:
            files += write_table(scaling, out / "scaling", title="Fitted exponents of time vs n")
        if bounds:
            files += write_table(bounds, out / "bounds", title="Bound forms side by side (ours setting, true L / γ)")
        files += figure2(shown, out, config.delta, panels=panels, stem=stem, separate=config.separate_panels)
        for dataset in config.datasets:
            files += coverage_figure(shown, out, dataset, config.delta)
        return None, files

    text = _summary(config, rows, coverage, scaling, bounds)
    if log is None:
        _, files = tables_and_figures()
        return [*files, atomic_write_text(out / "summary.md", text)]  # last: everything it lists exists
    log.run("tables and figures", tables_and_figures,
            params={"panels": list(panels), "stem": stem, "separate_panels": config.separate_panels})
    log.write_summary(text)
    return log.files


def run(args: argparse.Namespace, output: Path) -> list[Path]:
    """Entry point of ``nwbound experiment synthetic``.

    Each (dataset, repeat, size) is a recorded step (see
    :func:`~nwbound.experiments._common.experiment_steps`); ``--resume``
    reuses the finished ones; ``summary.md`` is written last.
    """
    config = config_from_args(args)
    log = experiment_steps(output, args, run_params(config), name="synthetic")
    rows: list[dict[str, Any]] = []
    for dataset in config.datasets:
        rows += run_dataset(dataset, config, log)
    return write_results(rows, Path(output), config, log=log)
