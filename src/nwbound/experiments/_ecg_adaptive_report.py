"""The patient-adaptive split's tables, strip figures and summary section, and its per-record
certificate table.

Private to :mod:`nwbound.experiments`: :mod:`nwbound.experiments.ecg_adaptive` runs the split
and re-exports the public names (:func:`record_certificate_rows`, :func:`adaptive_ec57_rows`,
:data:`ADAPTIVE_ANCHORS`, :data:`CHECK_ALPHA`, :data:`VISIBLE_FACTOR`, :data:`HEADLINE_RULE`);
this module imports nothing from it at run time.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ._common import new_figure, save_figures
from ._ecg_common import CLASS_NAMES
from ._ecg_inter import InterResult, _ec57_rows, _inter_overview
from ..utils import format_markdown

if TYPE_CHECKING:
    from .ecg_adaptive import AdaptiveResult

__all__ = [
    "ADAPTIVE_ANCHORS",
    "CHECK_ALPHA",
    "HEADLINE_RULE",
    "VISIBLE_FACTOR",
    "adaptive_ec57_rows",
    "record_certificate_rows",
]

#: Level of the per-record certificate test.
CHECK_ALPHA = 0.05
#: A record "visibly fails" where certified beats err more than this many times their mean ceiling.
VISIBLE_FACTOR = 2.0
#: The rule of the headline row, the per-record table and the strip figures.
HEADLINE_RULE = "weighted"

#: Published patient-adapted results on MIT-BIH (AAMI classes; labelled beats of each test record
#: used for training), gross S and V sensitivity / positive predictivity in %. Source of the figures:
#: the comparison table (Table 4) of the open-access article doi:10.1155/2017/4108720 (PMC5499251),
#: which quotes them from the papers; the papers themselves could not be fetched here.
ADAPTIVE_ANCHORS: tuple[dict[str, Any], ...] = (
    {"method": "de Chazal & Reilly 2006, patient-adapting linear discriminants (global + local classifier, "
               "first 500 beats of each record annotated)",
     "S Se %": 87.7, "S +P %": 47.0, "V Se %": 94.3, "V +P %": 96.2},
    {"method": "Kiranyaz, Ince & Gabbouj 2016, patient-specific 1-D CNN (common beats + each record's first "
               "5 min)",
     "S Se %": 64.6, "S +P %": 62.1, "V Se %": 95.0, "V +P %": 89.5},
    {"method": "Ince, Kiranyaz & Gabbouj 2009, patient-specific networks evolved by particle swarms "
               "(common beats + each record's first 5 min)",
     "S Se %": 63.5, "S +P %": 53.7, "V Se %": 84.6, "V +P %": 86.7},
)


# ---------------------------------------------------------------------------
# per-record certificate table
# ---------------------------------------------------------------------------
def record_certificate_rows(
    y_true: Any, y_pred: Any, certified: Any, error_upper: Any, records: Any, *,
    factor: float = VISIBLE_FACTOR,
) -> list[dict[str, Any]]:
    """Per record: certified beats, their errors, their mean error ceiling and a visible failure.

    A record *visibly fails* where its certified beats err more than ``factor``
    times their mean error ceiling (and at least one certified beat errs).

    Parameters
    ----------
    y_true, y_pred : array-like of int, shape (n,)
    certified : array-like of bool, shape (n,)
    error_upper : array-like of float, shape (n,)
        Ceiling on each beat's error probability (``PredictionInterval.error_upper``).
    records : array-like, shape (n,)
        Record id of each beat.
    factor : float, default 2.0

    Returns
    -------
    list of dict
        One row per record (sorted): ``record``, ``beats``, ``certified``,
        ``errors_certified``, ``error_certified_%``, ``mean_ceiling_certified_%``,
        ``ratio`` (error rate / mean ceiling) and ``visibly_fails``.

    Examples
    --------
    >>> rows = record_certificate_rows([0, 0, 1, 1], [0, 1, 0, 1], [True, True, True, False],
    ...                                [0.1, 0.1, 0.1, 0.5], ["a", "a", "b", "b"])
    >>> [(r["record"], r["errors_certified"], r["visibly_fails"]) for r in rows]
    [('a', 1, True), ('b', 1, True)]
    >>> record_certificate_rows([0], [0], [True], [0.2], ["a"])[0]["visibly_fails"]
    False
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    cert = np.asarray(certified, dtype=bool)
    ceil = np.asarray(error_upper, dtype=np.float64)
    recs = np.asarray(records).astype(str)
    n = y_true.shape[0]
    for name, a in (("y_pred", y_pred), ("certified", cert), ("error_upper", ceil), ("records", recs)):
        if a.shape != (n,):
            raise ValueError(f"{name} must have shape ({n},) like y_true, got {a.shape}")
    if not math.isfinite(factor) or factor <= 0:
        raise ValueError(f"factor must be a positive number, got {factor!r}")
    names, inv = np.unique(recs, return_inverse=True)
    k = names.size
    wrong = (y_true != y_pred).astype(np.float64)
    n_all = np.bincount(inv, minlength=k)
    n_cert = np.bincount(inv, weights=cert, minlength=k)
    e_cert = np.bincount(inv, weights=wrong * cert, minlength=k)
    c_cert = np.bincount(inv, weights=np.where(cert, ceil, 0.0), minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(n_cert > 0, e_cert / np.maximum(n_cert, 1), np.nan)
        mean_c = np.where(n_cert > 0, c_cert / np.maximum(n_cert, 1), np.nan)
        ratio = np.where(mean_c > 0, rate / mean_c, np.where(e_cert > 0, np.inf, np.nan))
    fails = (e_cert > 0) & (e_cert > factor * c_cert)
    return [{"record": str(names[i]), "beats": int(n_all[i]), "certified": int(n_cert[i]),
             "errors_certified": int(e_cert[i]), "error_certified_%": 100 * float(rate[i]),
             "mean_ceiling_certified_%": 100 * float(mean_c[i]), "ratio": float(ratio[i]),
             "visibly_fails": bool(fails[i])} for i in range(k)]



# ---------------------------------------------------------------------------
# tables, figures, summary
# ---------------------------------------------------------------------------
def _as_inter(res: AdaptiveResult) -> Any:
    params = {"both": {"bandwidth": res.bandwidth, "rhythm_weight": res.rhythm_weight}}
    return InterResult(res.fits, res.y_true, res.records, res.samples, res.n_base, res.n_base_full, params, None)


def _overview(res: AdaptiveResult) -> list[dict[str, Any]]:
    extra = {"split": "adaptive", "local_minutes": res.minutes, "local_weight": res.local_weight,
             "n_neighbors": res.n_neighbors, "certificate_neighbors": res.certificate_neighbors,
             "bandwidth": res.bandwidth,
             "patient_distance": res.patient_distance, "L": _l_range(res), "n_local": res.n_local,
             "features": res.features, "morphology_weight": res.morphology_weight if res.features == "signal" else 1.0,
             "w_S": res.class_weights[0], "w_V": res.class_weights[1]}
    # Each record has its own L: L_seen (model units) as the same range, not the common L.
    seen = _l_range(res, scale=res.lipschitz_seen / res.lipschitz if res.lipschitz > 0 else 1.0)
    return [{**extra, **r, "L_seen": seen} for r in _inter_overview(_as_inter(res))]


def adaptive_ec57_rows(res: AdaptiveResult) -> list[dict[str, Any]]:
    """EC57 rows (gross and record-averaged per class) of the adaptive fits, split ``adaptive``."""
    return [{**r, "split": "adaptive"} for r in _ec57_rows(_as_inter(res))]


def _record_table(res: AdaptiveResult) -> list[dict[str, Any]]:
    """Per DS2 record (weighted rule; its certified beats are the argmax's): EC57 S/V, certificates, check."""
    f = next(f for f in res.fits if f.rule == HEADLINE_RULE)
    rep = f.report
    S, V = CLASS_NAMES.index("S"), CLASS_NAMES.index("V")
    per = {r["record"]: r for r in record_certificate_rows(res.y_true, f.y_pred, f.certified, f.error_upper,
                                                            res.records)}
    rows = []
    for i, rec in enumerate(rep.records):  # one row per record (22)
        rec = str(rec)
        n_s = int(np.sum((res.records == rec) & (res.y_true == S)))
        n_v = int(np.sum((res.records == rec) & (res.y_true == V)))
        c = per[rec]
        chk = res.checks.get(rec, {})
        rows.append({
            "record": rec, "beats": c["beats"], "S_beats": n_s, "V_beats": n_v,
            "accuracy_%": 100 * float(np.trace(rep.record_confusion[i]) / max(rep.record_confusion[i].sum(), 1)),
            "S_Se_%": 100 * float(rep.record_sensitivity[i, S]), "S_+P_%": 100 * float(rep.record_positive_predictivity[i, S]),
            "V_Se_%": 100 * float(rep.record_sensitivity[i, V]), "V_+P_%": 100 * float(rep.record_positive_predictivity[i, V]),
            "certified_%": 100 * c["certified"] / max(c["beats"], 1), "errors_certified": c["errors_certified"],
            "error_certified_%": c["error_certified_%"], "mean_ceiling_certified_%": c["mean_ceiling_certified_%"],
            "error_over_ceiling": c["ratio"], "visibly_fails": c["visibly_fails"],
            "check_p_value": chk.get("check_p_value", math.nan), "flagged": bool(chk.get("check_rejected", False)),
            "flagged_by": chk.get("check_rejected_by", ""), "L": chk.get("L", res.lipschitz),
            "assumption_rejected": bool(chk.get("assumption_rejected", False)),
        })
    return rows


def _other_rules_visible(res: Any) -> str:
    """One line: per rule other than the headline's, the records whose certified beats visibly fail."""
    parts = []
    for f in res.fits:
        if f.rule in (HEADLINE_RULE, "argmax"):  # the headline rule certifies the argmax's beats
            continue
        bad = [r for r in record_certificate_rows(res.y_true, f.y_pred, f.certified, f.error_upper, res.records)
               if r["visibly_fails"]]
        text = ", ".join(f"{r['record']} ({r['errors_certified']} of {r['certified']} certified beats wrong, "
                         f"mean ceiling {r['mean_ceiling_certified_%']:.0f} %)" for r in bad)
        parts.append(f"{f.rule}: {text or 'none'}")
    return ("Other rules, records whose certified beats err more than "
            f"{VISIBLE_FACTOR:g}× their mean ceiling: " + "; ".join(parts) + ".")


def _l_range(res: Any, scale: float = 1.0) -> str:
    """The per-record L of an adaptive run, as "a–b (median m)" (the common L where none was chosen),
    times ``scale`` (the model's units: ``lipschitz_seen / lipschitz``)."""
    chosen = [float(r["chosen_L"]) * scale for r in res.selection if "chosen_L" in r]
    if not chosen:
        return f"{res.lipschitz * scale:.4g}"
    lo, hi, mid = min(chosen), max(chosen), float(np.median(chosen))
    return f"{lo:.4g}" if lo == hi else f"{lo:.4g}–{hi:.4g} (median {mid:.4g})"


def _strip_records(rows: list[dict[str, Any]]) -> list[str]:
    """Records drawn: flagged or visibly failing; else the one with most certified errors."""
    bad = [r["record"] for r in rows if r["flagged"] or r["visibly_fails"]]
    if bad:
        return bad
    worst = max(rows, key=lambda r: (r["errors_certified"], r["record"]), default=None)
    return [worst["record"]] if worst is not None and worst["errors_certified"] > 0 else []


def _strips(res: AdaptiveResult, rows: list[dict[str, Any]], data_dir: Path | None, output: Path,
            formats: Sequence[str], seconds: float = 10.0) -> list[Path]:
    """One strip figure per drawn record, 10 s around its first certified error (else its first error)."""
    from ..datasets.mitbih import load_mitbih_signal
    from ..plots import ECGStripDisplay

    if data_dir is None:
        return []
    f = next(f for f in res.fits if f.rule == HEADLINE_RULE)
    wrong = f.y_pred != res.y_true
    files: list[Path] = []
    flagged = {r["record"]: r for r in rows}
    for rec in _strip_records(rows):
        sel = np.flatnonzero(res.records == rec)
        pick = sel[wrong[sel] & f.certified[sel]]
        pick = pick if pick.size else sel[wrong[sel]]
        if pick.size == 0:
            continue
        try:
            signal, fs, lead = load_mitbih_signal(data_dir, rec)
        except (OSError, ValueError):
            continue
        start = max(0.0, float(res.samples[pick[0]]) / fs - 3.0)
        r = flagged[rec]
        state = "flagged by the held-out test" if r["flagged"] else (
            "certified errors > 2× mean ceiling" if r["visibly_fails"] else "most certified errors")
        fig, axes = new_figure(1, 1, figsize=(14.0, 3.6))
        ECGStripDisplay(
            signal=signal, fs=fs, beat_sample=res.samples[sel], y_true=res.y_true[sel], y_pred=f.y_pred[sel],
            certified=f.certified[sel], error_upper=np.clip(f.error_upper[sel], 0.0, 1.0),
            class_names=CLASS_NAMES, start_s=start, duration_s=seconds,
            title=f"adaptive, DS2 record {rec} (lead {lead}) — {state}: certified beats err "
                  f"{r['error_certified_%']:.1f} % vs mean ceiling {r['mean_ceiling_certified_%']:.1f} %",
        ).plot(ax=axes[0, 0])
        files += save_figures(fig, output, f"fig_ecg_strip_adaptive_{rec}", formats=formats)
    return files


def _fmt(v: Any, digits: int = 1) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def _summary(res: AdaptiveResult, overview: list[dict[str, Any]], rows: list[dict[str, Any]],
             elapsed: float) -> str:
    feats = (f"morphology from the raw lead (0.25 s before to 0.45 s after each R peak at 90 Hz, baseline "
             f"removed, in units of the record's median R amplitude over its first {res.minutes:g} min; weight "
             f"{res.morphology_weight:g}) + rhythm" if res.features == "signal" else "Kaggle-style morphology + rhythm")
    ws, wv = res.class_weights
    lines = [
        f"## Patient-adaptive (DS1 + first {res.minutes:g} min of each DS2 record → the rest of DS2)\n",
        f"{res.n_base} DS1 beats" + (f" (stratified from {res.n_base_full})" if res.n_base < res.n_base_full else "")
        + f" and {res.n_local} local beats (each record's model holds DS1 and its own local beats only, at "
        f"weight {res.local_weight:g}); {res.y_true.shape[0]} evaluation beats. Features: {feats} "
        f"(rhythm weight {res.rhythm_weight:g}), MinMax on DS1, plus the patient column (0 on the patient's "
        f"beats, {res.patient_distance:g} on DS1's); localized NWC, k = {res.n_neighbors}, "
        f"λ = {res.bandwidth:g}, L per record (per unit of the raw features): {_l_range(res)}, each the "
        "smallest on the grid above every value the record's own check on its local beats rejects"
        + (" (**some record's check rejected every L on the grid: it uses the largest**)" if res.all_rejected
           else "") + " (first half of the local minutes in the kernel sums, second half held out; "
        "`adaptive_lipschitz`); the class-weight simulation on DS1 chooses each DS1 record's L the same way "
        f"(`adaptive_lipschitz_ds1`). Certificates: the boxes of a localized NWC with k = {res.certificate_neighbors} "
        f"(its argmax labels the certified beats; k = {res.n_neighbors} labels the rest). "
        "Rules: `argmax`; `weighted` (certified beats keep their certified argmax "
        f"label, the others get argmax of w·p̂ with w_S = {ws:g}, w_V = {wv:g}, "
        + ("chosen on DS1 by leave-one-record-out with a simulated adaptation, `adaptive_class_weights`" if
           res.class_weights_auto else "given by --class-weights") + "); `balanced` (Bayes rule, equal N/S/V "
        f"priors). **Measured time of this split: {elapsed:.0f} s** (class weights on DS1 {res.tune_s:.0f} s, "
        f"L {res.select_s:.0f} s, fits {res.fit_s:.1f} s, queries {res.query_s:.0f} s, per-record checks "
        f"{res.check_s:.0f} s).\n",
        "### S and V beside published patient-adapted classifiers (%; theirs as quoted in Table 4 of "
        "doi:10.1155/2017/4108720, not checked against the papers)\n",
    ]
    table = [{"method": a["method"], "S Se / +P": f"{_fmt(a['S Se %'])} / {_fmt(a['S +P %'])}",
              "V Se / +P": f"{_fmt(a['V Se %'])} / {_fmt(a['V +P %'])}", "accuracy %": "–",
              "certified %": "–", "error among certified %": "–"} for a in ADAPTIVE_ANCHORS]
    for r in overview:
        table.append({"method": f"ours: localized NWC, {r['rule']}",
                      "S Se / +P": f"{_fmt(r['S_Se_%'])} / {_fmt(r['S_+P_%'])}",
                      "V Se / +P": f"{_fmt(r['V_Se_%'])} / {_fmt(r['V_+P_%'])}",
                      "accuracy %": _fmt(r["accuracy_%"]), "certified %": _fmt(r["certified_%"]),
                      "error among certified %": _fmt(r["error_certified_%"], 2)})
    lines.append(format_markdown(table) + "\n")
    lines.append("The published rows use other local-training amounts and test records (de Chazal & Reilly: "
                 "the first 500 beats of each record; Kiranyaz et al. and Ince et al.: a common set of beats plus "
                 "each record's first 5 min); they are beside ours for scale, not as a like-for-like comparison.\n")
    if res.ds1:
        best = next(r for r in res.ds1 if r.get("chosen"))
        lines.append(f"DS1 simulation of the chosen weights (the tuning figures, not a test): S "
                     f"{best['S_Se_%']:.1f} / {best['S_+P_%']:.1f} %, V {best['V_Se_%']:.1f} / {best['V_+P_%']:.1f} %, "
                     f"accuracy {best['accuracy_%']:.2f} %, certified {best['certified_%']:.1f} % with "
                     f"{best['error_certified_%']:.2f} % error among them.\n")
    for head in overview:  # every row: the rules are fixed before the evaluation beats are seen
        met = {
            "S Se ≥ 80 % at +P ≥ 80 %": head["S_Se_%"] >= 80 and head["S_+P_%"] >= 80,
            "V Se ≥ 95 % at +P ≥ 95 %": head["V_Se_%"] >= 95 and head["V_+P_%"] >= 95,
            "≥ 85 % certified, ≤ 1 % error among certified":
                head["certified_%"] >= 85 and head["error_certified_%"] <= 1,
        }
        lines.append(f"Targets, {head['rule']} row: "
                     + "; ".join(f"{k}: {'met' if v else 'not met'}" for k, v in met.items()) + ".\n")
    flagged = [r["record"] for r in rows if r["flagged"]]
    visible = [r["record"] for r in rows if r["visibly_fails"]]
    contradicted = [r["record"] for r in rows if r["assumption_rejected"]]
    lines.append(f"### Certificates per patient ({HEADLINE_RULE} rule: the argmax's certified beats)\n")
    lines.append(f"Flagged by the held-out test (`check_lipschitz`, α = {CHECK_ALPHA}, on each record's "
                 f"evaluation beats): {', '.join(flagged) if flagged else 'none'}. Certified beats err more "
                 f"than {VISIBLE_FACTOR:g}× their mean ceiling: {', '.join(visible) if visible else 'none'}. "
                 "Evaluation beats that contradict the record's L (the same test with its contrasts: beats of "
                 "highest and lowest p̂ whose labels differ more often than L·d allows; the certificates of "
                 "such a record rest on an assumption its own beats reject): "
                 f"{', '.join(contradicted) if contradicted else 'none'}.\n")
    lines.append(_other_rules_visible(res) + "\n")
    keys = ("record", "beats", "S_beats", "V_beats", "accuracy_%", "S_Se_%", "S_+P_%", "V_Se_%", "V_+P_%",
            "certified_%", "errors_certified", "error_certified_%", "mean_ceiling_certified_%", "L",
            "check_p_value", "flagged", "visibly_fails", "assumption_rejected")
    lines.append(format_markdown([{k: (_fmt(r[k], 3 if k in ("check_p_value", "L") else 1) if isinstance(r[k], float)
                                       else r[k]) for k in keys} for r in rows]) + "\n")
    return "\n".join(lines)
