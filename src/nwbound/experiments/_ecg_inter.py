"""The inter-patient split of the ECG experiment (DS1 → DS2): feature sets, EC57, bounds per patient.

Private to :mod:`nwbound.experiments`; :func:`nwbound.experiments.ecg.run` drives it
(``--split inter``), and :mod:`nwbound.experiments.ecg_adaptive` reuses its result types,
decision rule and tables.
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
from ._common import make_model, new_figure, save_figures
from ._ecg_common import (
    CLASS_NAMES,
    DELTA,
    FLOAT32_FROM,
    _command_error,
    _expand_proba,
    _fmt,
    _quiet_bounds,
    expand_interval,
    is_symmetric_form,
)
from ..datasets import stratified_subsample
from ..utils import format_markdown, progress, write_table


# ---------------------------------------------------------------------------
# inter-patient experiment (DS1 → DS2): feature sets, EC57, bounds per patient
# ---------------------------------------------------------------------------
#: Published inter-patient results (DS1 → DS2, AAMI classes): accuracy %, S Se/+P %, V Se/+P %.
ANCHORS: tuple[dict[str, Any], ...] = (
    {"method": "de Chazal et al. 2004, linear discriminants, RR + morphology, both leads",
     "accuracy %": 86.2, "S Se %": 75.9, "S +P %": 38.5, "V Se %": 77.7, "V +P %": 81.9},
    {"method": "Llamedo & Martínez 2011, 8 features (RR + wavelet), both leads",
     "accuracy %": 93.0, "S Se %": 77.0, "S +P %": 39.0, "V Se %": 81.0, "V +P %": 87.0},
    {"method": "Mondéjar-Guerra et al. 2019, SVM ensemble (RR, normalised RR, wavelets, HOS, LBP)",
     "accuracy %": 94.5, "S Se %": None, "S +P %": None, "V Se %": None, "V +P %": None},
)
INTER_FEATURE_SETS = ("morphology", "rhythm", "both")
INTER_QUICK_TRAIN = 8_000
INTER_NW = ("regular", "localized", "dyadic")
INTER_DYADIC_RESOLUTION = 2
#: Decision rules on p̂: plain argmax (training priors) and Bayes' rule with target priors that
#: give N, S and V equal shares of their joint training mass; F and Q keep their training priors
#: (DS1 holds 415 F and 8 Q beats: weighting them up would flood the predictions with them).
RULES = ("argmax", "balanced")
BALANCED_CLASSES = ("N", "S", "V")
FLAG_REVIEW = 0.10
#: The configuration of the per-record tables, the strip figure and the confusion table.
HEADLINE = ("both", "regular", "argmax")
# Reference levels of a plain re-run on the rebuilt beats (shared/notes/ecg-and-baselines.md).
REFERENCE_INTER = {"regular": "87.2–88.9 %", "localized": "86.1–87.9 %", "logistic": "87.2–88.7 %",
                   "all-N": "89.0 %"}


@dataclass
class InterFit:
    """One (feature set, classifier, rule) on DS2."""

    feature_set: str
    classifier: str
    rule: str
    n_train: int
    fit_s: float
    query_s: float
    y_pred: np.ndarray
    certified: np.ndarray | None
    error_upper: np.ndarray | None
    report: Any
    lipschitz: float = math.nan
    vacuous_share: float = math.nan


@dataclass
class InterResult:
    fits: list[InterFit]
    y_test: np.ndarray
    records: np.ndarray
    samples: np.ndarray
    n_train: int
    n_train_full: int
    params: dict[str, dict[str, float]]
    strip: dict[str, Any] | None
    #: The learned-space attempt (``--inter-learned``, :func:`._ecg_inter_learned.add_learned`): its
    #: summary lines (``text``) and DS1 weight table (``selection``); its rows are in ``fits``.
    learned: Any = None


def _inter_params(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    return {
        "morphology": {"bandwidth": float(args.bandwidth), "rhythm_weight": 1.0},
        "rhythm": {"bandwidth": float(args.rhythm_bandwidth), "rhythm_weight": 1.0},
        "both": {"bandwidth": float(args.both_bandwidth), "rhythm_weight": float(args.rhythm_weight)},
    }


def _decide(proba: np.ndarray, lower: np.ndarray | None, upper: np.ndarray | None, train_prior: np.ndarray,
            rule: str) -> Any:
    from ..metrics import bayes_decision

    prior = np.maximum(train_prior, 1e-12)  # a class absent from training keeps p̂ = 0 anyway
    target = None
    if rule == "balanced":
        target = prior.copy()
        idx = [CLASS_NAMES.index(c) for c in BALANCED_CLASSES]
        target[idx] = prior[idx].sum() / len(idx)
    return bayes_decision(proba, train_prior=prior, target_prior=target, lower=lower, upper=upper)


def _inter_nw(kind: str, X: np.ndarray, y: np.ndarray, X_test: np.ndarray, L: float, lam: float,
              args: argparse.Namespace) -> tuple[PredictionInterval, float, float]:
    from .. import DyadicClassifier, NadarayaWatsonClassifier

    if kind == "dyadic":
        model = DyadicClassifier(resolution=INTER_DYADIC_RESOLUTION, metric=None, lipschitz=L, delta=DELTA,
                                 bound=args.bound)
    else:
        model = NadarayaWatsonClassifier(
            metric=None, kernel="epanechnikov", bandwidth=lam, lipschitz=L, delta=DELTA, bound=args.bound,
            n_neighbors=min(args.n_neighbors, X.shape[0]) if kind == "localized" else None,
            dtype="float32" if kind == "regular" and X.shape[0] >= FLOAT32_FROM else "float64",
        )
    start = time.perf_counter()
    model.fit(X, y)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    with _quiet_bounds():
        iv = model.predict_interval(X_test)
    query_s = time.perf_counter() - start
    return expand_interval(iv, model.classes_.astype(np.intp), symmetric=is_symmetric_form(args.bound)), fit_s, query_s


def _inter_peer(name: str, X: np.ndarray, y: np.ndarray, X_test: np.ndarray, seed: int) -> tuple[np.ndarray, float, float]:
    """Class probabilities (5 columns) of logistic regression or the class-weighted boosting peer."""
    if name == "logistic":
        model = make_model("logistic", random_state=seed)
    else:
        from sklearn.ensemble import HistGradientBoostingClassifier

        model = HistGradientBoostingClassifier(class_weight="balanced", random_state=seed)
    start = time.perf_counter()
    model.fit(X, y)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    proba = model.predict_proba(X_test)
    query_s = time.perf_counter() - start
    return _expand_proba(proba, np.asarray(model.classes_, dtype=np.intp)), fit_s, query_s


def _run_inter(beats: Any, args: argparse.Namespace, quick: bool) -> InterResult:
    from ..datasets.mitbih import ecg_features, split_beats
    from ..metrics import ec57_report
    from ..scaling import restate_lipschitz

    seed = int(args.seed)
    try:
        train, test = split_beats(beats, split="inter")
    except ValueError as exc:
        raise _command_error(f"--split inter: {exc}") from exc
    n_full = len(train)
    cap = args.inter_train or (INTER_QUICK_TRAIN if quick else None)
    if cap is not None and cap < n_full:
        train = train.subset(stratified_subsample(train.y, cap, seed))
    if np.unique(train.y).shape[0] < 2:
        raise _command_error("--split inter: the training records hold a single class.")
    train_prior = np.bincount(train.y, minlength=len(CLASS_NAMES)) / len(train)
    params = _inter_params(args)
    feature_sets = args.feature_sets
    fits: list[InterFit] = []
    tasks = [(fs, c) for fs in feature_sets for c in (*INTER_NW, "logistic", "boosting")]
    for fs, clf in progress(tasks, desc="ecg inter (features x model)", total=len(tasks), quiet=args.quiet):
        try:
            X, X_test, scaler = ecg_features(train, test, fs, rhythm_weight=params[fs]["rhythm_weight"])
        except ValueError as exc:
            raise _command_error(f"--feature-sets {fs}: {exc}") from exc
        L = restate_lipschitz(args.lipschitz, scaler)  # L is given per unit of the raw features
        if clf in INTER_NW:
            iv, fit_s, query_s = _inter_nw(clf, X, train.y, X_test, L, params[fs]["bandwidth"], args)
            for rule in RULES:
                if rule == "argmax":
                    y_pred, cert, err = iv.predicted_index, iv.certified, iv.error_upper
                else:
                    d = _decide(iv.proba, iv.lower, iv.upper, train_prior, rule)
                    y_pred, cert, err = d.y_pred, d.certified, d.error_upper
                fits.append(InterFit(fs, clf, rule, len(train), fit_s, query_s, y_pred, cert, err,
                                     ec57_report(test.y, y_pred, records=test.record), L,
                                     float(iv.vacuous.mean())))
        else:
            proba, fit_s, query_s = _inter_peer(clf, X, train.y, X_test, seed)
            rules = RULES if clf == "logistic" else ("class weights",)
            for rule in rules:
                y_pred = (np.argmax(proba, axis=1) if rule != "balanced"
                          else _decide(proba, None, None, train_prior, rule).y_pred)
                fits.append(InterFit(fs, clf, rule, len(train), fit_s, query_s, y_pred, None, None,
                                     ec57_report(test.y, y_pred, records=test.record)))
    strip = None
    head = next((f for f in fits if (f.feature_set, f.classifier, f.rule) == HEADLINE), None)
    if head is not None and args.data_dir is not None:
        strip = _strip_data(args.data_dir, test, head)
    return InterResult(fits, test.y, test.record, test.sample, len(train), n_full, params, strip)


def _strip_data(data_dir: Path, test: Any, f: InterFit, seconds: float = 10.0) -> dict[str, Any] | None:
    """The 10 s of DS2 shown in the strip: the record with most S beats, around its first S beat."""
    from ..datasets.mitbih import load_mitbih_signal

    s_idx = np.flatnonzero(test.y == CLASS_NAMES.index("S"))
    if s_idx.size == 0:
        s_idx = np.flatnonzero(test.y != 0) if np.any(test.y != 0) else np.arange(len(test))
    recs, counts = np.unique(test.record[s_idx], return_counts=True)
    rec = str(recs[np.argmax(counts)])
    first = int(test.sample[s_idx[test.record[s_idx] == rec][0]])
    try:
        signal, fs, lead = load_mitbih_signal(data_dir, rec)
    except (OSError, ValueError):
        return None
    start = max(0.0, first / fs - 3.0)
    sel = np.flatnonzero(test.record == rec)
    return {"signal": signal, "fs": fs, "lead": lead, "record": rec, "start_s": start, "duration_s": seconds,
            "beat_sample": test.sample[sel], "y_true": test.y[sel], "y_pred": f.y_pred[sel],
            "certified": f.certified[sel], "error_upper": np.clip(f.error_upper[sel], 0.0, 1.0)}


def _config(f: InterFit) -> str:
    return f"{f.feature_set} / {f.classifier} / {f.rule}"


def _inter_overview(res: InterResult) -> list[dict[str, Any]]:
    from ..metrics import errors_caught_at

    S, V = CLASS_NAMES.index("S"), CLASS_NAMES.index("V")
    rows = []
    for f in res.fits:
        r = f.report
        wrong = f.y_pred != res.y_test
        row = {"feature_set": f.feature_set, "classifier": f.classifier, "rule": f.rule, "n_train": f.n_train,
               "accuracy_%": 100 * r.accuracy,
               "S_Se_%": 100 * r.sensitivity[S], "S_+P_%": 100 * r.positive_predictivity[S],
               "V_Se_%": 100 * r.sensitivity[V], "V_+P_%": 100 * r.positive_predictivity[V],
               "certified_%": math.nan, "error_certified_%": math.nan, "review_%": math.nan,
               "caught_by_review_%": math.nan, "caught_top10%_%": math.nan,
               "L_seen": f.lipschitz, "vacuous_%": 100 * f.vacuous_share, "fit_s": f.fit_s, "query_s": f.query_s}
        if f.certified is not None:
            c = f.certified
            row["certified_%"] = 100 * c.mean()
            row["error_certified_%"] = 100 * wrong[c].mean() if c.any() else math.nan
            row["review_%"] = 100 * (1 - c.mean())
            row["caught_by_review_%"] = 100 * wrong[~c].sum() / wrong.sum() if wrong.any() else math.nan
            row["caught_top10%_%"] = 100 * float(errors_caught_at(FLAG_REVIEW, res.y_test, f.y_pred, f.error_upper))
        rows.append(row)
    return rows


def _ec57_rows(res: InterResult) -> list[dict[str, Any]]:
    rows = []
    for f in res.fits:
        wrong = f.y_pred != res.y_test
        base = {"split": "inter", "feature_set": f.feature_set, "classifier": f.classifier, "rule": f.rule,
                "n_train": f.n_train}
        for j, t in enumerate(f.report.table()):
            row = {**base, **{k: t[k] for k in ("class", "support")},
                   "sensitivity": t["Se"], "positive_predictivity": t["+P"], "false_positive_rate": t["FPR"],
                   "sensitivity_record_avg": t["Se_avg"], "positive_predictivity_record_avg": t["+P_avg"],
                   "false_positive_rate_record_avg": t["FPR_avg"],
                   "certified_share": math.nan, "error_among_certified": math.nan}
            if f.certified is not None:
                mine = res.y_test == j
                cert = f.certified & mine
                row["certified_share"] = float(cert.sum() / mine.sum()) if mine.any() else math.nan
                row["error_among_certified"] = float(wrong[cert].mean()) if cert.any() else math.nan
            rows.append(row)
    return rows


def _record_rows(res: InterResult, f: InterFit) -> list[dict[str, Any]]:
    """Per DS2 record: review queue, error among certified beats and whether it breaks the bound."""
    from ..metrics import clopper_pearson

    recs, inv = np.unique(res.records, return_inverse=True)
    wrong = (f.y_pred != res.y_test).astype(np.int64)
    cert = f.certified.astype(np.int64)
    n = np.bincount(inv, minlength=recs.size)
    n_err = np.bincount(inv, weights=wrong, minlength=recs.size)
    n_cert = np.bincount(inv, weights=cert, minlength=recs.size)
    err_cert = np.bincount(inv, weights=wrong * cert, minlength=recs.size)
    ceil_cert = np.bincount(inv, weights=f.error_upper * cert, minlength=recs.size)
    n_s = np.bincount(inv, weights=(res.y_test == 1), minlength=recs.size)
    n_v = np.bincount(inv, weights=(res.y_test == 2), minlength=recs.size)
    rows = []
    for i, r in enumerate(recs):  # one row per record (22), not a hot path
        row = {"record": r, "beats": int(n[i]), "S_beats": int(n_s[i]), "V_beats": int(n_v[i]),
               "accuracy_%": 100 * (1 - n_err[i] / n[i]), "review_%": 100 * (1 - n_cert[i] / n[i]),
               "certified": int(n_cert[i]), "errors_certified": int(err_cert[i]),
               "error_certified_%": math.nan, "mean_ceiling_certified_%": math.nan,
               "error_certified_CI_low_%": math.nan, "bound_visibly_fails": False}
        if n_cert[i] > 0 and f.rule != "argmax":
            row["error_certified_%"] = 100 * err_cert[i] / n_cert[i]
        if f.rule != "argmax":
            # Under re-weighted priors the ceiling bounds q (the target-prior posterior), not the
            # label error on this patient's own priors: no check, by design.
            row["bound_visibly_fails"] = ""
        if n_cert[i] > 0 and f.rule == "argmax":
            low, _ = clopper_pearson(int(err_cert[i]), int(n_cert[i]), 0.95)
            mean_ceiling = ceil_cert[i] / n_cert[i]
            row.update({"error_certified_%": 100 * err_cert[i] / n_cert[i],
                        "mean_ceiling_certified_%": 100 * mean_ceiling,
                        "error_certified_CI_low_%": 100 * float(np.ravel(low)[0]),
                        # The bound promises an error rate ≤ the mean ceiling (at level 1 − δ per beat);
                        # a 95 % lower confidence limit above it means the assumption fails on this patient.
                        "bound_visibly_fails": bool(float(np.ravel(low)[0]) > mean_ceiling + DELTA)})
        rows.append(row)
    return rows


def _inter_summary(res: InterResult, args: argparse.Namespace) -> str:
    """The inter-patient section of ``summary.md``: setup, anchors, targets, bounds, per patient."""
    overview = _inter_overview(res)
    lines = _inter_setup(res, args)
    lines.append(_inter_anchor_table(overview) + "\n")
    lines += _inter_targets(overview)
    lines.append("### Bounds on this split\n")
    bounded = [r for r in overview if math.isfinite(r["certified_%"])]
    lines.append(format_markdown([{k: (_fmt(v, 2) if isinstance(v, float) else v) for k, v in r.items()
                                   if k in ("feature_set", "classifier", "rule", "accuracy_%", "certified_%",
                                            "error_certified_%", "review_%", "caught_by_review_%",
                                            "caught_top10%_%", "vacuous_%", "L_seen", "fit_s", "query_s")}
                                  for r in bounded]) + "\n")
    if res.learned is not None:
        lines += res.learned.text
    lines += _inter_per_patient(res)
    lines.append("Notes' plain re-run (morphology only, regular NWC / localized / LR): "
                 + ", ".join(f"{k} {v}" for k, v in REFERENCE_INTER.items()) + ".\n")
    return "\n".join(lines)


def _inter_setup(res: InterResult, args: argparse.Namespace) -> list[str]:
    """Opening lines: split sizes, feature sets, L and bandwidths, decision rules, peers."""
    all_n = float(np.mean(res.y_test == 0))
    return [
        f"## Inter-patient (de Chazal DS1 → DS2, paced records excluded): {res.n_train} training beats"
        + (f" (stratified from {res.n_train_full})" if res.n_train < res.n_train_full else "")
        + f" / {res.y_test.shape[0]} test beats; trivial all-N accuracy {100 * all_n:.1f} %\n",
        "Feature sets: morphology (first 100 samples, the paper's), rhythm (pre-/post-/local/average RR "
        "and the three ratios to the running average, causal up to one beat), both; MinMax on DS1 only. "
        f"L = {args.lipschitz:g} per unit of the raw features, restated in the units each classifier sees "
        f"(`L_seen`); bound {args.bound}, δ = {DELTA}, simultaneous over the 5 classes. "
        + "; ".join(f"{k}: λ = {v['bandwidth']:g}" + (f", rhythm weight {v['rhythm_weight']:g}"
                                                     if k == "both" else "") for k, v in res.params.items())
        + f"; localized k = {args.n_neighbors}; dyadic resolution {INTER_DYADIC_RESOLUTION}. "
        "Rules: `argmax` of p̂ (training priors); `balanced`: Bayes' rule on p̂ with target priors π' that "
        f"give {', '.join(BALANCED_CLASSES)} equal shares of their joint training mass (F and Q keep their "
        "training priors: too few DS1 beats to weight up), q_c ∝ p̂_c·π'_c/π_c, certified only where every "
        "p inside the bounds gives the same decision. "
        "Peers: logistic regression (both rules) and gradient boosting with balanced class weights.\n",
        "### Per-class Se / +P beside the anchors (%)\n",
    ]


def _inter_anchor_table(overview: list[dict[str, Any]]) -> str:
    """Markdown table of the published anchors followed by our measured rows."""
    anchor_rows = [{"method": a["method"], "accuracy %": _fmt(a["accuracy %"], 1),
                    "S Se / +P": f"{_fmt(a['S Se %'], 1)} / {_fmt(a['S +P %'], 1)}",
                    "V Se / +P": f"{_fmt(a['V Se %'], 1)} / {_fmt(a['V +P %'], 1)}",
                    "certified %": "–", "error among certified %": "–"} for a in ANCHORS]
    for r in overview:
        anchor_rows.append({
            "method": f"ours: {r['feature_set']} / {r['classifier']} / {r['rule']}",
            "accuracy %": f"{r['accuracy_%']:.1f}",
            "S Se / +P": f"{_fmt(r['S_Se_%'], 1)} / {_fmt(r['S_+P_%'], 1)}",
            "V Se / +P": f"{_fmt(r['V_Se_%'], 1)} / {_fmt(r['V_+P_%'], 1)}",
            "certified %": _fmt(r["certified_%"], 1), "error among certified %": _fmt(r["error_certified_%"], 2)})
    return format_markdown(anchor_rows)


def _inter_targets(overview: list[dict[str, Any]]) -> list[str]:
    """The issue's targets checked on the measured rows: rhythm gain, de Chazal reach, review queues."""
    lines = []
    S, V = "S_Se_%", "V_Se_%"
    morph = [r for r in overview if r["feature_set"] == "morphology"]
    rest = [r for r in overview if r["feature_set"] != "morphology"]
    if morph and rest:
        best_m = {k: max((r[k] for r in morph if math.isfinite(r[k])), default=math.nan)
                  for k in ("accuracy_%", S, V)}
        best_r = {k: max((r[k] for r in rest if math.isfinite(r[k])), default=math.nan)
                  for k in ("accuracy_%", S, V)}
        lines.append("Best morphology-only vs best with rhythm features (over classifiers and rules): "
                     + "; ".join(f"{k.rstrip('_%').replace('_', ' ')} {_fmt(best_m[k], 1)} → {_fmt(best_r[k], 1)} %"
                                 for k in best_m) + ".\n")
    dc = ANCHORS[0]
    reach = [r for r in overview if r[S] >= dc["S Se %"] and r["S_+P_%"] >= dc["S +P %"]
             and r[V] >= dc["V Se %"] and r["V_+P_%"] >= dc["V +P %"]]
    lines.append(f"Rows reaching de Chazal's S and V Se at equal or better +P: {len(reach)}"
                 + (" (" + ", ".join(f"{r['feature_set']}/{r['classifier']}/{r['rule']}" for r in reach) + ")"
                    if reach else "") + ".\n")
    bounded = [r for r in overview if math.isfinite(r["certified_%"])]
    queue = [r for r in bounded if r["review_%"] <= 100 * FLAG_REVIEW and r["caught_by_review_%"] >= 50]
    lines.append(f"Bounded rows whose review queue (uncertified beats) is ≤ {100 * FLAG_REVIEW:.0f} % of beats and "
                 f"catches ≥ 50 % of the errors: {len(queue)} of {len(bounded)}"
                 + (" (" + ", ".join(f"{r['feature_set']}/{r['classifier']}/{r['rule']}" for r in queue) + ")"
                    if queue else "") + ". Ranking by the error ceiling instead, the top 10 % catch up to "
                 + f"{max((r['caught_top10%_%'] for r in bounded), default=math.nan):.1f} % of the errors.\n")
    return lines


def _inter_per_patient(res: InterResult) -> list[str]:
    """Per-patient check of the headline configuration and its EC57 confusion table."""
    head = next((f for f in res.fits if (f.feature_set, f.classifier, f.rule) == HEADLINE), None)
    lines = ["A certificate under the `balanced` rule says the decision is Bayes-optimal under the target "
             "priors for every p inside the bounds; it is not a ceiling on the label error on DS2's own "
             "priors (deciding S when p̂_S is a few % is the point of the rule), so the error among "
             "certified beats is checked against the ceiling for `argmax` only.\n"]
    for f in res.fits:
        if (f.feature_set, f.classifier, f.rule) != HEADLINE or f.certified is None:
            continue
        rec = _record_rows(res, f)
        fails = [r["record"] for r in rec if r["bound_visibly_fails"]]
        lines.append(f"### Per patient ({_config(f)}): review queue and error among certified beats\n")
        lines.append(format_markdown([{k: (_fmt(v, 2) if isinstance(v, float) else v) for k, v in r.items()}
                                      for r in rec]) + "\n")
        lines.append(("Records where the 95 % lower confidence limit of the error among certified beats exceeds "
                      "their mean error ceiling + δ, i.e. the bound's assumption (L, and labels of this patient "
                      f"behaving like DS1's) visibly fails: {', '.join(fails)}.\n") if fails else
                     "No record's error among certified beats exceeds its mean error ceiling + δ at 95 % "
                     "confidence.\n")
    if head is not None:
        lines.append(f"EC57 confusion table ({_config(head)}; rows reference, columns algorithm):\n")
        lines.append(format_markdown(head.report.confusion_table()) + "\n")
    return lines


def _inter_outputs(res: InterResult, output: Path, formats: Sequence[str]) -> list[Path]:
    files: list[Path] = []
    files += write_table(_inter_overview(res), output / "inter_overview",
                         title="Inter-patient (DS1 → DS2): accuracy, S/V Se and +P, bounds")
    conf, recs = [], []
    for f in res.fits:
        conf += [{"feature_set": f.feature_set, "classifier": f.classifier, "rule": f.rule, **r}
                 for r in f.report.confusion_table()]
        if f.certified is not None:
            recs += [{"feature_set": f.feature_set, "classifier": f.classifier, "rule": f.rule, **r}
                     for r in _record_rows(res, f)]
    files += write_table(conf, output / "inter_confusion", title="EC57 confusion tables (rows reference)")
    files += write_table(recs, output / "inter_records", title="Per DS2 record: review queue and bound check")
    if res.learned is not None:
        files += write_table(res.learned.selection, output / "inter_learned_selection",
                             title="Learned space: class weights on DS1's out-of-fold beats (never DS2)")
    if res.strip is not None:
        from ..plots import ECGStripDisplay

        st = res.strip
        fig, axes = new_figure(1, 1, figsize=(14.0, 3.6))
        ECGStripDisplay(
            signal=st["signal"], fs=st["fs"], beat_sample=st["beat_sample"], y_true=st["y_true"],
            y_pred=st["y_pred"], certified=st["certified"], error_upper=st["error_upper"],
            class_names=CLASS_NAMES, start_s=st["start_s"], duration_s=st["duration_s"],
            title=f"DS2 record {st['record']} (lead {st['lead']}), {HEADLINE[0]} features, "
                  f"{HEADLINE[1]} NWC, {HEADLINE[2]} rule",
        ).plot(ax=axes[0, 0])
        files += save_figures(fig, output, "fig_ecg_strip_inter", formats=formats)
    return files
