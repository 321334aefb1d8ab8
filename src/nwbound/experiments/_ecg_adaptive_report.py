"""The patient-adaptive split's tables, strip figures and summary section, and its per-record
certificate table.

Private to :mod:`nwbound.experiments`: :mod:`nwbound.experiments.ecg_adaptive` runs the split
and re-exports the public names (:func:`record_certificate_rows`, :func:`adaptive_ec57_rows`,
:data:`ADAPTIVE_ANCHORS`, :data:`CHECK_ALPHA`, :data:`VISIBLE_FACTOR`, :data:`HEADLINE_RULE`);
this module imports nothing from it at run time.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from ._common import new_figure, save_figures
from ._ecg_common import CLASS_NAMES
from ._ecg_inter import InterResult, _ec57_rows, _inter_overview
from ..lipschitz_check import poisson_binomial_sf
from ..utils import format_markdown

if TYPE_CHECKING:
    from .ecg_adaptive import AdaptiveResult

__all__ = [
    "ADAPTIVE_ANCHORS",
    "CHECK_ALPHA",
    "HEADLINE_RULE",
    "VISIBLE_FACTOR",
    "adaptive_ec57_rows",
    "certificate_checks",
    "locally_supported",
    "record_certificate_rows",
]

#: Level of the per-record certificate test.
CHECK_ALPHA = 0.05
#: A record "visibly fails" where certified beats err more than this many times their mean ceiling.
VISIBLE_FACTOR = 2.0
#: The rule of the headline row, the per-record table and the strip figures.
HEADLINE_RULE = "weighted"
#: Default of ``--local-support``: ``"require"`` drops the certificate of a beat whose predicted class
#: has no beat among its record's local beats (the decision stays); ``"report"`` keeps it and only counts it.
LOCAL_SUPPORT = "require"

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
    # P(PB ≥ errors) of each record's certified ceilings (a loop over the records, not the beats)
    p_value = [float(poisson_binomial_sf(np.clip(ceil[cert & (inv == i)], 0.0, 1.0), int(e_cert[i])))
               for i in range(k)]
    return [{"record": str(names[i]), "beats": int(n_all[i]), "certified": int(n_cert[i]),
             "errors_certified": int(e_cert[i]), "error_certified_%": 100 * float(rate[i]),
             "mean_ceiling_certified_%": 100 * float(mean_c[i]), "ratio": float(ratio[i]),
             "visibly_fails": bool(fails[i]), "p_value": p_value[i]} for i in range(k)]


def certificate_checks(
    y_true: Any, rules: Mapping[str, tuple[Any, Any, Any]], records: Any, *, alpha: float = CHECK_ALPHA,
    factor: float = VISIBLE_FACTOR,
) -> list[dict[str, Any]]:
    """Per decision rule and record: do the certified beats err more than their ceilings allow?

    For each rule and record, the errors ``S`` among the certified beats are compared with
    the Poisson-binomial of their error ceilings ``c_j``: under the null that every certified
    beat errs independently with probability at most its ceiling (the labels of held-out
    beats are independent given the training rows), ``P(PB(c) ≥ S)`` is a valid p-value
    (:func:`nwbound.lipschitz_check.poisson_binomial_sf`). The family is every (rule,
    record) test, counted once for rules with the same certificates (same certified beats,
    labels and ceilings: ``same_as``), and Bonferroni's correction runs over it
    (``α / T``). A test that could not reject even if all its certified beats erred
    (``Π c_j > α / T``) is left out of ``T``, repeatedly (Tarone's rule; it reads the
    ceilings only, never the labels). So under the null no (rule, record) pair is flagged
    with probability more than ``alpha``.

    Parameters
    ----------
    y_true : array-like of int, shape (n,)
    rules : mapping of str to (y_pred, certified, error_upper)
        Each rule's decisions, certificates and error ceilings, each of shape (n,).
    records : array-like, shape (n,)
        Record id of each beat.
    alpha : float, default 0.05
        Family-wise level.
    factor : float, default 2.0
        The "visibly fails" line of :func:`record_certificate_rows`.

    Returns
    -------
    list of dict
        One row per rule and record: ``rule`` and the columns of
        :func:`record_certificate_rows`, plus ``same_as`` (the earlier rule with the
        same certificates, or ""), ``tested`` (in the family), ``tests`` (``T``),
        ``p_adjusted`` (``min(1, T·p)``, NaN where not tested) and ``flagged``.

    Raises
    ------
    ValueError
        ``alpha`` outside (0, 1), no rule, or arrays whose shapes disagree.

    Examples
    --------
    >>> y = [0] * 10 + [0] * 10
    >>> rules = {"a": ([1] * 6 + [0] * 14, [True] * 20, [0.1] * 20),
    ...          "b": ([0] * 20, [True] * 20, [0.1] * 20)}
    >>> rows = certificate_checks(y, rules, ["r1"] * 10 + ["r2"] * 10)
    >>> [(r["rule"], r["record"], r["errors_certified"], r["flagged"]) for r in rows]
    [('a', 'r1', 6, True), ('a', 'r2', 0, False), ('b', 'r1', 0, False), ('b', 'r2', 0, False)]
    >>> rows[0]["tests"], round(rows[0]["p_adjusted"], 6)  # 4 tests; 4 · P(Bin(10, 0.1) ≥ 6)
    (4, 0.000588)
    """
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    if not rules:
        raise ValueError("rules must name at least one rule: {name: (y_pred, certified, error_upper)}")
    rows: list[dict[str, Any]] = []
    seen: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []
    for rule, (y_pred, certified, error_upper) in rules.items():
        pred, cert, ceil = np.asarray(y_pred), np.asarray(certified, dtype=bool), np.asarray(error_upper, float)
        same = next((name for name, p, c, e in seen if c.shape == cert.shape and np.array_equal(c, cert)
                     and np.array_equal(p[c], pred[cert]) and np.array_equal(e[c], ceil[cert])), "")
        if not same:
            seen.append((rule, pred, cert, ceil))
        for r in record_certificate_rows(y_true, pred, cert, ceil, records, factor=factor):
            rows.append({"rule": rule, **r, "same_as": same, "_floor": math.prod(
                float(min(max(c, 0.0), 1.0)) for c in ceil[cert & (np.asarray(records).astype(str) == r["record"])])})
    candidate = [i for i, r in enumerate(rows) if not r["same_as"] and r["certified"] > 0]
    tested = candidate
    while True:  # Tarone: drop the tests that cannot reach α / T, until T is stable
        kept = [i for i in tested if rows[i]["_floor"] <= alpha / max(len(tested), 1)]
        if len(kept) == len(tested):
            break
        tested = kept
    T = len(tested)
    by_key = {(rows[i]["rule"], rows[i]["record"]): i for i in tested}
    for r in rows:
        r.pop("_floor")
        src = by_key.get((r["same_as"] or r["rule"], r["record"]))
        r["tested"] = src is not None
        r["tests"] = T
        r["p_adjusted"] = min(1.0, T * rows[src]["p_value"]) if src is not None else math.nan
        r["flagged"] = bool(src is not None and rows[src]["p_value"] <= alpha / T)
    return rows


def locally_supported(y_pred: Any, records: Any, local_y: Any, local_records: Any) -> np.ndarray:
    """Whether each decision's class occurs among its record's local (first-minutes) beats.

    A patient whose local beats hold no beat of class ``c`` gives no local evidence about
    ``c``: a certificate that a beat is ``c`` rests on the other patients' beats alone.

    Parameters
    ----------
    y_pred : array-like of int, shape (n,)
        Decisions on the evaluation beats.
    records : array-like, shape (n,)
        Their record ids.
    local_y : array-like of int, shape (m,)
        Labels of the local beats.
    local_records : array-like, shape (m,)
        Their record ids.

    Returns
    -------
    ndarray of bool, shape (n,)
        True where record ``records[i]`` has a local beat labelled ``y_pred[i]``.

    Raises
    ------
    ValueError
        Shapes that disagree, or negative class indices.

    Examples
    --------
    >>> locally_supported([0, 1, 1, 2], ["a", "a", "b", "b"], [0, 1, 0], ["a", "b", "b"]).tolist()
    [True, False, True, False]
    """
    pred, lab = np.asarray(y_pred), np.asarray(local_y)
    recs, lrecs = np.asarray(records).astype(str), np.asarray(local_records).astype(str)
    if pred.ndim != 1 or recs.shape != pred.shape:
        raise ValueError(f"y_pred and records must be 1-D of the same length, got {pred.shape} and {recs.shape}")
    if lab.ndim != 1 or lrecs.shape != lab.shape:
        raise ValueError(f"local_y and local_records must be 1-D of the same length, got {lab.shape} and "
                         f"{lrecs.shape}")
    if pred.size == 0:
        return np.zeros(0, dtype=bool)
    if (pred.min() < 0) or (lab.size and lab.min() < 0):
        raise ValueError("y_pred and local_y must hold class indices ≥ 0")
    names, inv = np.unique(np.concatenate([recs, lrecs]), return_inverse=True)
    n_classes = int(max(pred.max(), lab.max() if lab.size else 0)) + 1
    present = np.zeros((names.size, n_classes), dtype=bool)
    present[inv[pred.size:], lab.astype(np.intp)] = True
    return present[inv[:pred.size], pred.astype(np.intp)]



def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """The adaptive split's option on its certificates: ``--local-support``.

    Examples
    --------
    >>> p = argparse.ArgumentParser(); add_report_arguments(p)
    >>> p.parse_args([]).local_support, p.parse_args(["--local-support", "report"]).local_support
    ('require', 'report')
    """
    parser.add_argument("--local-support", choices=("require", "report"), default=LOCAL_SUPPORT,
                        help="adaptive split: 'require' (default) drops the certificate of a beat whose "
                             "predicted class has no beat in its record's local minutes (the decision stays); "
                             "'report' keeps such certificates and only counts them")


@dataclass
class CertificateReport:
    """The per-rule, per-record certificate tests of an adaptive run, before and after the guard."""

    raw: list[dict[str, Any]]
    guarded: list[dict[str, Any]]
    supported: dict[str, np.ndarray]
    raw_certified: dict[str, np.ndarray]
    applied: bool


def _certificate_report(res: AdaptiveResult, local_y: Any, local_records: Any,
                        mode: str = LOCAL_SUPPORT) -> CertificateReport:
    """Test every rule's certificates per record; with ``mode="require"`` drop those without local support.

    Mutates ``res.fits`` (new fits whose ``certified`` is the guarded one) when the guard applies, so the
    overview, EC57 and per-record tables count the certificates the run stands behind.
    """
    if mode not in ("require", "report"):
        raise ValueError(f"--local-support must be 'require' or 'report', got {mode!r}")
    fits = sorted((f for f in res.fits if f.certified is not None), key=lambda f: f.rule != HEADLINE_RULE)
    raw_rules = {f.rule: (f.y_pred, f.certified, f.error_upper) for f in fits}
    supported = {f.rule: locally_supported(f.y_pred, res.records, local_y, local_records) for f in fits}
    raw = certificate_checks(res.y_true, raw_rules, res.records)
    guarded = certificate_checks(res.y_true, {r: (p, c & supported[r], e) for r, (p, c, e) in raw_rules.items()},
                                 res.records)
    recs = np.asarray(res.records).astype(str)
    names, inv = np.unique(recs, return_inverse=True)
    where = {str(n): i for i, n in enumerate(names)}
    for rule, (pred, cert, _) in raw_rules.items():
        lost = cert & ~supported[rule]
        n_lost = np.bincount(inv, weights=lost, minlength=names.size)
        e_lost = np.bincount(inv, weights=lost & (pred != res.y_true), minlength=names.size)
        for row in raw:
            if row["rule"] == rule:
                row["not_local"] = int(n_lost[where[row["record"]]])
                row["errors_not_local"] = int(e_lost[where[row["record"]]])
    if mode == "require":
        res.fits = [dataclasses.replace(f, certified=f.certified & supported[f.rule]) if f.rule in supported else f
                    for f in res.fits]
    return CertificateReport(raw, guarded, supported, {r: c for r, (_, c, _) in raw_rules.items()},
                             mode == "require")


def _flag_text(rows: list[dict[str, Any]]) -> str:
    """The flagged (rule, record) pairs of a :func:`certificate_checks` table, in words."""
    bad = [r for r in rows if r["flagged"]]
    if not bad:
        return "none"
    return "; ".join(f"{r['rule']}{' (= ' + r['same_as'] + ')' if r['same_as'] else ''}, record {r['record']}: "
                     f"{r['errors_certified']} of {r['certified']} certified beats wrong against summed ceilings "
                     f"{r['certified'] * r['mean_ceiling_certified_%'] / 100:.1f} (mean "
                     f"{r['mean_ceiling_certified_%']:.0f} %), adjusted p = {r['p_adjusted']:.2g}" for r in bad)


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
             "w_S": res.class_weights[0], "w_V": res.class_weights[1],
             "weight_criterion": res.weight_criterion or "given"}
    # Each record has its own L: L_seen (model units) as the same range, not the common L.
    seen = _l_range(res, scale=res.lipschitz_seen / res.lipschitz if res.lipschitz > 0 else 1.0)
    return [{**extra, **r, "L_seen": seen} for r in _inter_overview(_as_inter(res))]


def adaptive_ec57_rows(res: AdaptiveResult) -> list[dict[str, Any]]:
    """EC57 rows (gross and record-averaged per class) of the adaptive fits, split ``adaptive``."""
    return [{**r, "split": "adaptive"} for r in _ec57_rows(_as_inter(res))]


def _record_table(res: AdaptiveResult, certs: CertificateReport | None = None) -> list[dict[str, Any]]:
    """Per DS2 record (weighted rule; its certified beats are the argmax's): EC57 S/V, certificates, checks.

    With ``certs``, per rule: ``flagged_<rule>`` and ``p_adjusted_<rule>`` (the Poisson-binomial test of
    the rule's certificates as issued, :func:`certificate_checks`) and ``not_local_<rule>`` (its certified
    beats whose class the record's local beats never show)."""
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
    if certs is not None:
        per_rule = {(c["rule"], c["record"]): c for c in certs.raw}
        for row in rows:
            for rule in dict.fromkeys(c["rule"] for c in certs.raw):
                c = per_rule[rule, row["record"]]
                row[f"flagged_{rule}"] = c["flagged"]
                row[f"p_adjusted_{rule}"] = c["p_adjusted"]
                row[f"not_local_{rule}"] = c["not_local"]
    return rows


def _certificate_text(certs: CertificateReport) -> str:
    """The summary's paragraph on every rule's certificate test and the local-support guard."""
    raw, guarded = certs.raw, certs.guarded
    lost = {}
    for r in raw:
        n, e = lost.get(r["rule"], (0, 0))
        lost[r["rule"]] = (n + r["not_local"], e + r["errors_not_local"])
    words = "; ".join(f"{rule}: {n} ({e} wrong)" for rule, (n, e) in lost.items())
    return (
        "**Every rule's certificates, per record** (`certificate_checks`, `adaptive_certificate_checks.csv`): "
        "the errors among a rule's certified beats in a record against the Poisson-binomial of their error "
        "ceilings (the ceilings taken at face value: each certified beat errs with probability at most its "
        f"ceiling). One family over rules × records, rules with the same certificates counted once: "
        f"{raw[0]['tests'] if raw else 0} tests, Bonferroni at α = {CHECK_ALPHA} family-wise (tests that could "
        f"not reject even if every certified beat erred are left out, Tarone). Flagged, certificates as the rules "
        f"issue them: {_flag_text(raw)}.\n\n"
        "**Local support.** A certified beat whose predicted class has no beat among its record's local "
        "(first-minutes) beats rests on the other patients' beats alone. Such certified beats, per rule: "
        f"{words}. " + ("They are **not counted as certified** (`--local-support require`, the default; the "
                        "decisions stay): every certified figure above is after this guard. " if certs.applied else
                        "They are counted as certified (`--local-support report`). ")
        + f"After the guard, flagged ({guarded[0]['tests'] if guarded else 0} tests): {_flag_text(guarded)}."
    )


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


def _strip_pairs(rows: list[dict[str, Any]], certs: CertificateReport | None) -> list[tuple[str, str, str]]:
    """(rule, record, why) of each strip drawn.

    Every (rule, record) that :func:`certificate_checks` flags on the certificates as issued (once per
    distinct set of certificates), then the headline rule's records from :func:`_strip_records`.
    """
    pairs: dict[tuple[str, str], str] = {}
    for c in (certs.raw if certs is not None else []):
        if c["flagged"] and not c["same_as"]:
            pairs[c["rule"], c["record"]] = "flagged by the certificate test"
    by_record = {r["record"]: r for r in rows}
    for rec in _strip_records(rows):
        r = by_record[rec]
        pairs.setdefault((HEADLINE_RULE, rec), "flagged by the held-out test" if r["flagged"] else (
            f"certified errors > {VISIBLE_FACTOR:g}× mean ceiling" if r["visibly_fails"] else "most certified errors"))
    return [(rule, rec, why) for (rule, rec), why in pairs.items()]


def _strips(res: AdaptiveResult, rows: list[dict[str, Any]], data_dir: Path | None, output: Path,
            formats: Sequence[str], seconds: float = 10.0, certs: CertificateReport | None = None) -> list[Path]:
    """One strip figure per drawn (rule, record), 10 s around the rule's first certified error there (else
    its first error): the certificates as the rule issues them, ``(✓)`` where not locally supported."""
    from ..datasets.mitbih import load_mitbih_signal
    from ..plots import ECGStripDisplay

    if data_dir is None:
        return []
    files: list[Path] = []
    fits = {f.rule: f for f in res.fits}
    for rule, rec, why in _strip_pairs(rows, certs):
        f = fits[rule]
        cert = certs.raw_certified[rule] if certs is not None else f.certified
        support = certs.supported[rule] if certs is not None else np.ones_like(cert)
        wrong = f.y_pred != res.y_true
        sel = np.flatnonzero(res.records == rec)
        pick = sel[wrong[sel] & cert[sel]]
        pick = pick if pick.size else sel[wrong[sel]]
        if pick.size == 0:
            continue
        try:
            signal, fs, lead = load_mitbih_signal(data_dir, rec)
        except (OSError, ValueError):
            continue
        start = max(0.0, float(res.samples[pick[0]]) / fs - 3.0)
        c = record_certificate_rows(res.y_true[sel], f.y_pred[sel], cert[sel], f.error_upper[sel], res.records[sel])[0]
        fig, axes = new_figure(1, 1, figsize=(14.0, 3.6))
        ECGStripDisplay(
            signal=signal, fs=fs, beat_sample=res.samples[sel], y_true=res.y_true[sel], y_pred=f.y_pred[sel],
            certified=cert[sel], error_upper=np.clip(f.error_upper[sel], 0.0, 1.0), class_names=CLASS_NAMES,
            locally_supported=support[sel], start_s=start, duration_s=seconds,
            title=f"adaptive, {rule} rule, DS2 record {rec} (lead {lead}) — {why}: {c['errors_certified']} of "
                  f"{c['certified']} certified beats wrong ({c['error_certified_%']:.1f} %) vs mean ceiling "
                  f"{c['mean_ceiling_certified_%']:.1f} %",
        ).plot(ax=axes[0, 0])
        files += save_figures(fig, output, f"fig_ecg_strip_adaptive_{rule}_{rec}", formats=formats)
    return files


def _fmt(v: Any, digits: int = 1) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def _criterion_text(res: AdaptiveResult) -> str:
    """How the class weights were chosen on DS1, in the summary's words."""
    head = "chosen on DS1 by leave-one-record-out with a simulated adaptation, "
    if res.weight_criterion == "mean_min":
        return head + "the largest mean over S and V of min(Se, +P), `adaptive_class_weights`"
    if res.weight_criterion == "se_at_ppv":
        return (head + "each class's the largest DS1 Se at +P ≥ its target's (S 80 %, V 95 %; the other weight "
                "at 1), the break-even min(Se, +P) where DS1 reaches no such +P, `adaptive_class_weights`")
    how = k_text = ""
    if res.ds1:
        pick = next((r for r in res.ds1 if r.get("chosen")), res.ds1[0])
        how = " (S: " + str(pick.get("S_chosen_by", "?")) + "; V: " + str(pick.get("V_chosen_by", "?")) + ")"
        ks = sorted({int(r["k"]) for r in res.ds1 if "k" in r})
        if ks:
            k_text = (f"; the decision model's k = {res.n_neighbors} chosen with them on DS1 among "
                      f"{', '.join(map(str, ks))}: the largest mean over S and V of min(Se, lower end of +P) "
                      "at each k's chosen weights")
    return (head + "each class's the largest DS1 Se whose +P has a 95 % Clopper-Pearson lower end ≥ its "
            "target's (S 80 %, V 95 %; the other weight at 1); where none has, the same without DS1's most "
            "adverse record for that class (most false calls under argmax); then the break-even "
            f"min(Se, lower end){how}{k_text}, `adaptive_class_weights`")


def _summary(res: AdaptiveResult, overview: list[dict[str, Any]], rows: list[dict[str, Any]],
             elapsed: float, certs: CertificateReport | None = None) -> str:
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
        + (_criterion_text(res) if res.class_weights_auto else "given by --class-weights")
        + "); `balanced` (Bayes rule, equal N/S/V "
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
    if certs is not None:
        lines.append(_certificate_text(certs) + "\n")
    keys = ("record", "beats", "S_beats", "V_beats", "accuracy_%", "S_Se_%", "S_+P_%", "V_Se_%", "V_+P_%",
            "certified_%", "errors_certified", "error_certified_%", "mean_ceiling_certified_%", "L",
            "check_p_value", "flagged", "visibly_fails", "assumption_rejected")
    if certs is not None and rows:  # the certificate test's flag of each distinct rule
        keys += tuple(f"flagged_{c['rule']}" for c in certs.raw if not c["same_as"] and c["record"] == rows[0]["record"])
    lines.append(format_markdown([{k: (_fmt(r[k], 3 if k in ("check_p_value", "L") else 1) if isinstance(r[k], float)
                                       else r[k]) for k in keys} for r in rows]) + "\n")
    return "\n".join(lines)
