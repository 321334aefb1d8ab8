"""The intra-patient split of the ECG experiment: fits per training size, tables and figures.

Private to :mod:`nwbound.experiments`; :func:`nwbound.experiments.ecg.run` drives it
(``--split intra``, the paper's section 5 and appendix E) and writes its summary section.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .._result import PredictionInterval
from ._common import fit_and_query, make_model, new_figure, save_figures
from ._ecg_common import (
    CLASS_NAMES,
    DELTA,
    FLOAT32_FROM,
    _command_error,
    _expand_proba,
    _quiet_bounds,
    bound_settings,
    expand_interval,
    is_symmetric_form,
)
from ..datasets import stratified_subsample
from ..utils import progress

FLAG_FRACTION = 0.10

METHOD_LABELS = {
    "regular": "Regular NWC",
    "localized": "Localized NWC (k=10)",
    "logistic": "Logistic regression",
    "cme": "CME",
    "all_n": "all-N (trivial)",
}


# ---------------------------------------------------------------------------
# one split
# ---------------------------------------------------------------------------
@dataclass
class Fitted:
    """Predictions of one (size, method): 5-column intervals per bound setting."""

    method: str
    n_train: int
    fit_s: float
    query_s: float
    y_pred: np.ndarray
    proba: np.ndarray
    intervals: dict[str, PredictionInterval]
    note: str = ""


def _row(split: str, f: Fitted, y_test: np.ndarray, n_test: int, full_n: int) -> dict[str, Any]:
    from ..metrics import accuracy, errors_caught_at, uncertainty_from_interval, weighted_precision_recall

    labels = np.arange(len(CLASS_NAMES))
    prec, rec = weighted_precision_recall(y_test, f.y_pred, classes=labels)
    nan = math.nan
    row: dict[str, Any] = {
        "split": split,
        "n_train": f.n_train,
        "size": "full" if f.n_train == full_n else f.n_train,
        "method": f.method,
        "n_test": n_test,
        "accuracy": accuracy(y_test, f.y_pred),
        "precision_w": prec,
        "recall_w": rec,
        "fit_s": f.fit_s,
        "query_s": f.query_s,
        "mean_eps_paper": nan,
        "mean_eps_ours": nan,
        "caught10_paper": nan,
        "caught10_ours": nan,
        "vacuous_share": nan,
    }
    for key in ("paper", "ours"):
        iv = f.intervals.get(key)
        if iv is None:
            continue
        top = np.argmax(iv.proba, axis=1)
        row[f"mean_eps_{key}"] = float(iv.epsilon[np.arange(top.shape[0]), top].mean())
        row[f"caught10_{key}"] = float(
            errors_caught_at(FLAG_FRACTION, y_test, f.y_pred, uncertainty_from_interval(iv, "width"))
        )
        row["vacuous_share"] = float(iv.vacuous.mean())
    row["note"] = f.note
    return row


def _fit_nw(name: str, n: int, X: np.ndarray, y: np.ndarray, X_test: np.ndarray, args: argparse.Namespace) -> Fitted:
    model = make_model(name, setting="ours", lipschitz=args.lipschitz, bandwidth=args.bandwidth,
                       n_neighbors=min(args.n_neighbors, n), delta=DELTA)
    note = ""
    if name == "regular" and n >= FLOAT32_FROM:
        model.set_params(dtype="float32")
        note = "float32 distances"
    start = time.perf_counter()
    model.fit(X, y)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    with _quiet_bounds():
        ivs = model.predict_interval(X_test, bounds=bound_settings(args.bound))
    query_s = time.perf_counter() - start
    present = model.classes_.astype(np.intp)
    forms = {"paper": "paper", "ours": args.bound}
    ivs = {k: expand_interval(v, present, symmetric=is_symmetric_form(forms[k])) for k, v in ivs.items()}
    proba = ivs["ours"].proba
    return Fitted(name, n, fit_s, query_s, present[np.argmax(ivs["ours"].proba[:, present], axis=1)],
                  proba, ivs, note)


def _fit_logistic(n: int, X: np.ndarray, y: np.ndarray, X_test: np.ndarray, seed: int) -> Fitted:
    fq = fit_and_query(make_model("logistic", random_state=seed), X, y, X_test, name="logistic")
    present = np.asarray(fq.model.classes_, dtype=np.intp)
    return Fitted("logistic", n, fq.fit_time, fq.query_time, fq.y_pred.astype(np.intp),
                  _expand_proba(fq.proba, present), {})


def _fit_cme(n: int, X: np.ndarray, y: np.ndarray, X_test: np.ndarray, n_all_test: int) -> Fitted:
    fq = fit_and_query(make_model("cme", setting="ours", delta=DELTA), X, y, X_test, name="cme")
    iv = fq.interval
    present = np.asarray(fq.model.classes_, dtype=np.intp)
    # The reference's noise constant 1/4 scales the sampling part by 1/4 ÷ 1/2.
    ratio = 0.25 / float(fq.model.noise_constant)
    paper = PredictionInterval.from_parts(
        proba=iv.proba.copy(), bias=iv.bias.copy(), sampling=iv.sampling * ratio, kappa=iv.kappa,
        n_eff=iv.n_eff, vacuous=iv.vacuous, bandwidth=iv.bandwidth, outside_box=iv.outside_box,
    )
    # The CME bound is p̂ ± ε in both settings.
    ivs = {"paper": expand_interval(paper, present, symmetric=True),
           "ours": expand_interval(iv, present, symmetric=True)}
    query_s = fq.query_time
    note = ""
    if X_test.shape[0] < n_all_test:
        query_s *= n_all_test / X_test.shape[0]
        note = f"scored on {X_test.shape[0]} test beats; query time extrapolated to {n_all_test}"
    return Fitted("cme", n, fq.fit_time, query_s, fq.y_pred.astype(np.intp), ivs["ours"].proba, ivs, note)


@dataclass
class SplitResult:
    split: str
    rows: list[dict[str, Any]]
    largest: dict[str, Fitted]
    X_test_raw: np.ndarray
    y_test: np.ndarray
    n_train_full: int
    files: list[Path]


def _run_split(split: str, beats: Any, args: argparse.Namespace, sizes: list[int], full: bool,
               cme_max: int) -> SplitResult:
    from ..datasets import paper_features, split_beats

    seed = int(args.seed)
    try:
        train, test = split_beats(beats, split=split, random_state=seed)
    except ValueError as exc:
        raise _command_error(f"--split {split}: {exc}") from exc
    X_train, X_test, _ = paper_features(train, test)
    y_train, y_test = train.y, test.y
    n_all = y_train.shape[0]
    wanted = sorted({min(s, n_all) for s in sizes} | ({n_all} if full else set()))
    cme_test = np.arange(y_test.shape[0])
    if args.cme_max_test is not None and args.cme_max_test < y_test.shape[0]:
        cme_test = stratified_subsample(y_test, args.cme_max_test, seed + 1)

    tasks = [(n, m) for n in wanted for m in ("regular", "localized", "logistic", "cme")
             if m != "cme" or n <= cme_max]
    rows: list[dict[str, Any]] = []
    largest: dict[str, Fitted] = {}
    subsets: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for n, method in progress(tasks, desc=f"ecg {split} (size x model)", total=len(tasks), quiet=args.quiet):
        if n not in subsets:
            idx = stratified_subsample(y_train, n, seed)
            subsets = {n: (X_train[idx], y_train[idx])}  # keep one subset in memory
        X, y = subsets[n]
        if np.unique(y).shape[0] < 2:
            raise _command_error(f"--split {split}: the {n} training beats hold a single class; "
                                 "use more records or a larger size.")
        if method in ("regular", "localized"):
            f = _fit_nw(method, n, X, y, X_test, args)
        elif method == "logistic":
            f = _fit_logistic(n, X, y, X_test, seed)
        else:
            f = _fit_cme(n, X, y, X_test[cme_test], y_test.shape[0])
        y_eval = y_test if method != "cme" else y_test[cme_test]
        rows.append(_row(split, f, y_eval, y_eval.shape[0], n_all))
        if method in ("regular", "localized") and n == wanted[-1]:
            largest[method] = f
    # The trivial all-N predictor (label 0), the bar every split has to clear.
    all_n = Fitted("all_n", n_all, 0.0, 0.0, np.zeros_like(y_test), _expand_proba(
        np.ones((y_test.shape[0], 1)), np.array([0])), {})
    rows.append(_row(split, all_n, y_test, y_test.shape[0], n_all))
    return SplitResult(split, rows, largest, test.X, y_test, n_all, [])


# ---------------------------------------------------------------------------
# tables and figures of one split
# ---------------------------------------------------------------------------
def _table2(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        out.append({
            "size": r["size"], "n_train": r["n_train"], "classifier": METHOD_LABELS[r["method"]],
            "accuracy_%": round(100 * r["accuracy"], 2), "precision_w": round(r["precision_w"], 3),
            "recall_w": round(r["recall_w"], 3), "precompute_s": round(r["fit_s"], 4),
            "query_s": round(r["query_s"], 3), "mean_eps_paper": r["mean_eps_paper"],
            "mean_eps_ours": r["mean_eps_ours"], "vacuous_share": r["vacuous_share"],
            "note": r["note"],
        })
    return out


def _analysis_tables(res: SplitResult) -> dict[str, list[dict[str, Any]]]:
    from ..metrics import (
        errors_caught_at,
        expected_calibration_error,
        per_class_precision_recall,
        type_errors,
        uncertainty_from_interval,
    )

    y = res.y_test
    labels = np.arange(len(CLASS_NAMES))
    per_class, caught, types, calib = [], [], [], []
    for method, f in res.largest.items():
        pcr = per_class_precision_recall(y, f.y_pred, classes=labels)
        for c, name in enumerate(CLASS_NAMES):
            per_class.append({"method": method, "n_train": f.n_train, "class": name,
                              "support": int(pcr["support"][c]), "predicted": int(pcr["predicted"][c]),
                              "precision": float(pcr["precision"][c]), "recall": float(pcr["recall"][c]),
                              "f1": float(pcr["f1"][c])})
        fractions = np.array([0.01, 0.05, 0.10, 0.20, 0.50])
        unc = {f"width ({k} ε)": uncertainty_from_interval(iv, "width") for k, iv in f.intervals.items()}
        unc["1 − max p̂"] = uncertainty_from_interval(f.intervals["ours"], "max_proba")
        for uname, u in unc.items():
            got = errors_caught_at(fractions, y, f.y_pred, u)
            caught.append({"method": method, "ranking": uname,
                           **{f"flag {int(100 * q)}%": float(g) for q, g in zip(fractions, got)},
                           "errors": int(np.sum(y != f.y_pred))})
        for key, iv in f.intervals.items():
            t = type_errors(y, iv, y_pred=f.y_pred)
            for c, name in enumerate(CLASS_NAMES):
                types.append({"method": method, "bound": key, "class": name, "support": int(t.support[c]),
                              "type_I": int(t.type_i[c]), "type_II": int(t.type_ii[c]),
                              "type_I_%": 100 * float(t.type_i_share[c]),
                              "type_II_%": 100 * float(t.type_ii_share[c])})
            types.append({"method": method, "bound": key, "class": "all", "support": int(t.support.sum()),
                          "type_I": int(t.type_i.sum()), "type_II": int(t.type_ii.sum()),
                          "type_I_%": 100 * (1 - t.accuracy),
                          "type_II_%": 100 * (t.accuracy - t.conservative_accuracy),
                          "accuracy": t.accuracy, "conservative_accuracy": t.conservative_accuracy})
        ece, table = expected_calibration_error(y, f.proba)
        for b in range(table.count.shape[0]):
            calib.append({"method": method, "bin": f"({table.bin_lower[b]:.1f}, {table.bin_upper[b]:.1f}]",
                          "count": int(table.count[b]), "mean_confidence": float(table.mean_confidence[b]),
                          "accuracy": float(table.accuracy[b]), "ECE": float(ece)})
    return {"per_class": per_class, "errors_caught": caught, "type_errors": types, "calibration": calib}


def _sample_queries(y: np.ndarray, seed: int, per_class: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    picks = []
    for c in range(len(CLASS_NAMES)):
        where = np.flatnonzero(y == c)
        if where.size:
            picks += sorted(rng.choice(where, size=min(per_class, where.size), replace=False).tolist())
    return np.asarray(picks, dtype=np.intp)


def _figures(res: SplitResult, output: Path, seed: int, formats: Sequence[str]) -> list[Path]:
    """Write the Fig. 3 and Appendix E figures of one split; return the files written."""
    files = _fig3_intervals(res, output, seed, formats)
    files += _fig3_bound_width(res, output, formats)
    files += _fig3_precision_recall(res, output, formats)
    files += _fig3_cumulative_recall(res, output, formats)
    files += _figE_waveforms(res, output, seed, formats)
    files += _figE_reliability_type_errors(res, output, formats)
    return files


def _variants(res: SplitResult) -> list[tuple[str, str]]:
    """Every (model, ε variant) pair of the largest fits, in plotting order."""
    return [(m, k) for m in res.largest for k in ("paper", "ours")]


def _fig3_intervals(res: SplitResult, output: Path, seed: int, formats: Sequence[str]) -> list[Path]:
    """Fig. 3a/b: sample beats (one per class) with 95 % bounds, both variants and both bounds."""
    from ..plots import IntervalDisplay

    s, y, fits, names = res.split, res.y_test, res.largest, np.array(CLASS_NAMES)
    variants = _variants(res)
    idx = _sample_queries(y, seed)
    fig, axes = new_figure(len(variants), idx.size, figsize=(2.1 * idx.size, 2.2 * len(variants)))
    for r, (m, k) in enumerate(variants):
        IntervalDisplay.from_interval(fits[m].intervals[k], names[y], classes=names, indices=idx, ax=axes[r])
        axes[r, 0].set_ylabel(f"{m}, {k} ε", fontsize=8)
    fig.suptitle(f"{s}-patient: p̂ and 95 % bounds (δ = {DELTA}), n = {fits['regular'].n_train}", fontsize=9)
    return list(save_figures(fig, output, f"fig3_intervals_{s}", formats=formats))


def _fig3_bound_width(res: SplitResult, output: Path, formats: Sequence[str]) -> list[Path]:
    """Fig. 3c: mean bound width vs predicted probability, correct vs incorrect."""
    from ..plots import BoundWidthDisplay

    fits = res.largest
    fig, axes = new_figure(1, 2, figsize=(9.0, 3.6))
    for j, k in enumerate(("paper", "ours")):
        for m in fits:
            BoundWidthDisplay.from_interval(res.y_test, fits[m].intervals[k], label=m, ax=axes[0, j])
        axes[0, j].set_title(f"{k} bound", fontsize=9)
    return list(save_figures(fig, output, f"fig3_bound_width_{res.split}", formats=formats))


def _fig3_precision_recall(res: SplitResult, output: Path, formats: Sequence[str]) -> list[Path]:
    """Fig. 3d: per-class precision / recall bars for every model."""
    from ..metrics import per_class_precision_recall

    fits = res.largest
    fig, axes = new_figure(1, 2, figsize=(9.0, 3.4))
    x = np.arange(len(CLASS_NAMES))
    width = 0.8 / max(len(fits), 1)
    for j, metric in enumerate(("precision", "recall")):
        ax = axes[0, j]
        for i, (m, f) in enumerate(fits.items()):
            pcr = per_class_precision_recall(res.y_test, f.y_pred, classes=np.arange(len(CLASS_NAMES)))
            ax.bar(x + (i - (len(fits) - 1) / 2) * width, pcr[metric], width=width, label=m)
        ax.set_xticks(x, list(CLASS_NAMES))
        ax.set(ylim=(0, 1.05), ylabel=metric, title=f"per-class {metric}")
        ax.legend(fontsize=7)
    return list(save_figures(fig, output, f"fig3_precision_recall_{res.split}", formats=formats))


def _fig3_cumulative_recall(res: SplitResult, output: Path, formats: Sequence[str]) -> list[Path]:
    """Fig. 3e: cumulative recall curves (ranking by bound width)."""
    from ..metrics import cumulative_recall_curve, uncertainty_from_interval
    from ..plots import CumulativeRecallDisplay

    fits, variants = res.largest, _variants(res)
    fig, axes = new_figure(1, 1, figsize=(5.0, 4.0))
    curves = [cumulative_recall_curve(res.y_test, fits[m].y_pred, uncertainty_from_interval(fits[m].intervals[k]))
              for m, k in variants]
    CumulativeRecallDisplay(curves=curves, labels=[f"{m}, {k} ε" for m, k in variants]).plot(
        ax=axes[0, 0], mark_fraction=FLAG_FRACTION)
    return list(save_figures(fig, output, f"fig3_cumulative_recall_{res.split}", formats=formats))


def _figE_waveforms(res: SplitResult, output: Path, seed: int, formats: Sequence[str]) -> list[Path]:
    """Appendix E: waveforms with class probabilities (regular NWC), two beats per class."""
    y, reg = res.y_test, res.largest["regular"]
    idx2 = _sample_queries(y, seed + 7, per_class=2)
    classes_here = [c for c in range(len(CLASS_NAMES)) if np.any(y[idx2] == c)]
    per = max(int(np.sum(y[idx2] == c)) for c in classes_here)
    fig, axes = new_figure(2 * per, len(classes_here), figsize=(2.4 * len(classes_here), 2.0 * 2 * per))
    for j, c in enumerate(classes_here):
        mine = idx2[y[idx2] == c]
        for i in range(2 * per):
            if i // 2 >= mine.size:
                axes[i, j].set_visible(False)
        for i, q in enumerate(mine):
            wave, bars = axes[2 * i, j], axes[2 * i + 1, j]
            wave.plot(np.arange(res.X_test_raw.shape[1]), res.X_test_raw[q], lw=0.9)
            wave.set_title(f"true {CLASS_NAMES[c]} (beat {q})", fontsize=8)
            wave.set_xlabel("t (samples at 125 Hz)", fontsize=7)
            bars.bar(np.arange(len(CLASS_NAMES)), reg.proba[q], color=["C0"] * len(CLASS_NAMES))
            bars.set_xticks(np.arange(len(CLASS_NAMES)), list(CLASS_NAMES))
            bars.set_ylim(0, 1)
            bars.set_ylabel("p̂", fontsize=8)
    return list(save_figures(fig, output, f"figE_waveforms_{res.split}", formats=formats))


def _figE_reliability_type_errors(res: SplitResult, output: Path, formats: Sequence[str]) -> list[Path]:
    """Appendix E: reliability bars (ECE) per model and Type I / II counts (regular NWC)."""
    from ..plots import ReliabilityDisplay, TypeErrorDisplay

    s, y, fits = res.split, res.y_test, res.largest
    reg = fits["regular"]
    fig, axes = new_figure(1, len(fits), figsize=(4.4 * len(fits), 3.8))
    for j, (m, f) in enumerate(fits.items()):
        ReliabilityDisplay.from_arrays(y, f.proba, label=m, ax=axes[0, j])
        axes[0, j].set_title(m, fontsize=9)
    files = list(save_figures(fig, output, f"figE_reliability_{s}", formats=formats))
    fig, axes = new_figure(1, 2, figsize=(9.0, 3.6))
    for j, k in enumerate(("paper", "ours")):
        disp = TypeErrorDisplay.from_interval(y, reg.intervals[k], y_pred=reg.y_pred, ax=axes[0, j])
        disp.ax_.set_xticks(np.arange(len(CLASS_NAMES)), list(CLASS_NAMES))
        t = disp.table
        axes[0, j].set_title(f"regular NWC, {k} ε: accuracy {100 * t.accuracy:.1f} %, "
                             f"conservative {100 * t.conservative_accuracy:.1f} %", fontsize=8)
    return files + list(save_figures(fig, output, f"figE_type_errors_{s}", formats=formats))
