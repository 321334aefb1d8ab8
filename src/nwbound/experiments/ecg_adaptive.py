"""MIT-BIH for a new patient in five minutes: patient-adaptive classification with certificates.

``nwbound experiment ecg --split adaptive`` (issue "A new patient in five minutes"):
the training set is de Chazal's DS1 plus, for each DS2 record, the labelled
beats of its first :data:`LOCAL_MINUTES` minutes (by sample time, AAMI EC57's
allowance for local training); the rest of the record is classified. The
Nadaraya-Watson classifier is not retrained: one model per DS2 record holds DS1
and that record's local beats, the local beats at weight :data:`LOCAL_WEIGHT`,
and the *localized* classifier (``k`` nearest neighbours) lets the patient's own
beats become the neighbours. The morphology is read from the raw lead around each
R peak (:mod:`nwbound.experiments.ecg_signal_features`, P wave included, in units
of the patient's own R amplitude over the local minutes).

Two localized models per record on the same rows: the *certificate model*
(``k`` = :data:`CERTIFICATE_NEIGHBORS`, chosen on DS1: the largest certified share
with ≤ 1 % error among the certified beats) whose boxes certify beats, and the
*decision model* whose ``p̂`` labels the uncertified beats (fewer neighbours find the
patient's few S beats better; its ``k`` is chosen on DS1 with the class weights from
:data:`NEIGHBORS_GRID`, :func:`choose_decision_neighbors`, or fixed at
:data:`ADAPTIVE_NEIGHBORS`).

Three rules: ``argmax`` (certified label where the certificate model's box
certifies one, else the decision model's argmax); ``weighted``
(:func:`weighted_decision`: the same certified labels, the review queue decided
with class weights for S and V, chosen on DS1 alone by leave-one-record-out with
a simulated first-minutes adaptation, :func:`choose_class_weights`: each class's
largest DS1 sensitivity whose +P has a lower confidence end at its target); ``balanced``
(Bayes rule, equal N/S/V priors, on the decision model).

Certificates per patient: the error ceilings of certified beats are tested on
each record's evaluation beats with :func:`nwbound.assumptions.check_lipschitz`
(errors among certified rows against the upper quantile of the Poisson-binomial
of their ceilings, with a Markov allowance for shared labels); a record is
*flagged* where the test rejects, and *visibly fails* where its certified beats
err more than twice their mean ceiling; the same test with its contrasts (labels of
the beats of highest and lowest p̂ against what L allows) says where the beats
contradict the record's L even though its certificates hold (``assumption_rejected``). Each record's ``L`` is chosen on its own
local beats only (``_select_lipschitz_on_local``): the first half of its local
minutes goes into the kernel sums, the second half are the held-out check rows,
and the smallest L on the grid (factors of √2) above every value this check rejects is that
patient's; the DS1 simulation chooses each DS1 record's L the same way.
Selecting L is harmless to validity (the intervals are nested in L), so one L per
patient costs nothing in the guarantee, and a patient whose beats contradict a
small L no longer forces a large one on every other patient.

Writes ``ec57`` rows with split ``adaptive`` (``n_train``: the DS1 rows every
record's model holds; ``--inter-train`` / ``--quick`` subsample them),
``adaptive_overview`` (the inter-patient overview format, plus ``n_local``, the
local beats of all records), ``adaptive_records`` (per DS2 record),
``adaptive_class_weights`` (the DS1 search of the weighted rule's weights), the
``adaptive_certificate_checks`` (every rule's certificates tested per record), the
strip figure ``fig_ecg_strip_adaptive_<rule>_<record>`` of each flagged record, and a
section of ``summary.md`` with published patient-adapted figures beside ours.

The tables, strip figures and summary section are built in ``_ecg_adaptive_report``; this
module re-exports its public names.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ._common import positive_float, positive_int
from ._ecg_adaptive_report import ADAPTIVE_ANCHORS, CHECK_ALPHA, HEADLINE_RULE, VISIBLE_FACTOR  # noqa: F401
from ._ecg_adaptive_report import _overview, _record_table, _strips, _summary, adaptive_ec57_rows
from ._ecg_adaptive_report import _certificate_report, add_report_arguments
from ._ecg_adaptive_report import certificate_checks, locally_supported, record_certificate_rows  # noqa: F401
from ._ecg_common import CLASS_NAMES, DELTA, _command_error, _expand_proba, _quiet_bounds, expand_interval
from ._ecg_common import is_symmetric_form
from ._ecg_adaptive_rules import (  # noqa: F401 (re-exported)
    _weighted_decisions,
    choose_class_weights,
    choose_decision_neighbors,
    weighted_decision,
    NEIGHBORS_GRID,
    WEIGHT_CRITERIA,
    WEIGHT_CRITERION,
)
from ._ecg_inter import InterFit, _decide
from ._ecg_neighbors import SHARED_ALGORITHM, SharedSearch
from ..utils import progress, write_table

__all__ = [
    "ADAPTIVE_ANCHORS",
    "LOCAL_MINUTES",
    "LOCAL_WEIGHT",
    "AdaptiveResult",
    "add_adaptive_arguments",
    "adaptive_split",
    "choose_class_weights",
    "choose_decision_neighbors",
    "certificate_checks",
    "class_weights_arg",
    "weighted_decision",
    "local_beats",
    "locally_supported",
    "record_certificate_rows",
    "record_check",
    "run_adaptive",
]

#: Minutes of each DS2 record whose labelled beats join the training set (AAMI EC57 local training).
LOCAL_MINUTES = 5.0
#: Sampling rate of the MIT-BIH ``sample`` positions (Hz).
MITBIH_FS = 360.0
#: Weight of a local beat relative to a DS1 beat (chosen on DS1, see the docs).
LOCAL_WEIGHT = 20.0
#: k of the decision model where it is not chosen on DS1 (``--neighbors-grid none`` or fixed
#: ``--class-weights``; rounds 6–8's choice, see the docs).
ADAPTIVE_NEIGHBORS = 12
#: k of the localized NWC whose boxes certify beats (and whose L each record's check chooses): the
#: labels of the review queue come from the decision model (chosen on DS1: the largest
#: certified share with ≤ 1 % error among the certified beats, see the docs).
CERTIFICATE_NEIGHBORS = 18
#: λ of the localized classifier on the adaptive split (scaled morphology + rhythm units; chosen on DS1).
ADAPTIVE_BANDWIDTH = 10.0
#: Distance added (in quadrature) between the patient and every other patient's beats: an extra
#: feature column, 0 on the patient's own beats and queries, this value on DS1's beats.
PATIENT_DISTANCE = 0.5
#: Morphology of the adaptive split: ``"signal"`` (windows of the raw lead around each R peak, P wave
#: included, :mod:`nwbound.experiments.ecg_signal_features`) or ``"kaggle"`` (the first 100 samples of
#: the Kaggle-style beats, as on the other splits).
ADAPTIVE_FEATURES = "signal"
#: Weight of the (MinMax-scaled) signal-morphology columns against the rhythm columns (chosen on DS1).
MORPHOLOGY_WEIGHT = 7.0
#: Grid of L (per unit of the raw features) tried on the local beats, smallest first: factors of √2
#: from 0.05 to 1.6, so a patient whose check rejects one value moves up by 41 %, not by a factor 2.
LIPSCHITZ_GRID = tuple(0.05 * 2.0 ** (i / 2) for i in range(11))
#: --quick: stratified DS1 subsample.
ADAPTIVE_QUICK_TRAIN = 8_000


# ---------------------------------------------------------------------------
# options
# ---------------------------------------------------------------------------
def add_adaptive_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``nwbound experiment ecg`` for ``--split adaptive``.

    Examples
    --------
    >>> p = argparse.ArgumentParser(); add_adaptive_arguments(p)
    >>> a = p.parse_args(["--local-minutes", "2.5"])
    >>> a.local_minutes, a.local_weight
    (2.5, 20.0)
    """
    parser.add_argument("--local-minutes", type=positive_float, default=LOCAL_MINUTES,
                        help=f"adaptive split: minutes of each DS2 record whose labelled beats are "
                             f"trained on (default {LOCAL_MINUTES:g}, AAMI EC57's local training)")
    parser.add_argument("--local-weight", type=positive_float, default=LOCAL_WEIGHT,
                        help=f"adaptive split: weight of a local beat relative to a DS1 beat "
                             f"(default {LOCAL_WEIGHT:g})")
    parser.add_argument("--adaptive-neighbors", type=positive_int, default=ADAPTIVE_NEIGHBORS,
                        help=f"adaptive split: k of the decision model (the localized NWC that labels the "
                             f"uncertified beats) where --neighbors-grid is none or --class-weights is given "
                             f"(default {ADAPTIVE_NEIGHBORS}); with --class-weights auto the DS1 simulation "
                             f"chooses it from --neighbors-grid")
    parser.add_argument("--certificate-neighbors", type=positive_int, default=CERTIFICATE_NEIGHBORS,
                        help=f"adaptive split: k of the localized NWC whose boxes certify beats; the uncertified "
                             f"beats are labelled by the --adaptive-neighbors one (default {CERTIFICATE_NEIGHBORS})")
    parser.add_argument("--adaptive-bandwidth", type=positive_float, default=ADAPTIVE_BANDWIDTH,
                        help=f"adaptive split: λ of the localized NWC (default {ADAPTIVE_BANDWIDTH:g})")
    parser.add_argument("--patient-distance", type=float, default=PATIENT_DISTANCE,
                        help=f"adaptive split: distance between the patient's beats and other patients' "
                             f"(an extra feature column; default {PATIENT_DISTANCE:g}, 0 turns it off)")
    parser.add_argument("--adaptive-features", choices=("signal", "kaggle"), default=ADAPTIVE_FEATURES,
                        help="adaptive split: morphology read from the raw lead around each R peak (signal, "
                             "the default; P wave included) or the Kaggle-style beats (kaggle)")
    parser.add_argument("--morphology-weight", type=positive_float, default=MORPHOLOGY_WEIGHT,
                        help=f"adaptive split, signal features: weight of the morphology columns "
                             f"(default {MORPHOLOGY_WEIGHT:g})")
    parser.add_argument("--class-weights", type=class_weights_arg, default="auto",
                        help="adaptive split: S and V weights of the weighted rule on uncertified beats, "
                             "'S,V' (e.g. '4,2'), or 'auto' (the default: chosen on DS1 by leave-one-record-out "
                             "with a simulated first-minutes adaptation)")
    parser.add_argument("--neighbors-grid", type=_neighbors_grid_arg, default=NEIGHBORS_GRID,
                        help="adaptive split, --class-weights auto: k of the decision model tried on DS1, "
                             f"comma-separated, or 'none' for --adaptive-neighbors (default "
                             f"{','.join(map(str, NEIGHBORS_GRID))}; the DS1 simulation chooses among them)")
    parser.add_argument("--weight-criterion", choices=WEIGHT_CRITERIA, default=WEIGHT_CRITERION,
                        help="adaptive split, --class-weights auto: how DS1 chooses them; se_at_ppv_lcb (the "
                             "default): each class's largest DS1 Se whose +P has a 95 %% lower confidence end "
                             "≥ its target (then without DS1's most adverse record for it, then the break-even); "
                             "se_at_ppv: the same on point estimates (round 8); mean_min: round 7's")
    add_report_arguments(parser)  # --local-support


def _neighbors_grid_arg(text: str) -> tuple[int, ...]:
    """Parse ``--neighbors-grid``: ``"none"`` (empty: keep ``--adaptive-neighbors``) or positive integers."""
    if text.strip() == "none":
        return ()
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        values = (0,)
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"--neighbors-grid must be 'none' or positive integers 'k1,k2,...', "
                                         f"got {text!r}")
    return tuple(sorted(set(values)))


def class_weights_arg(text: str) -> str | tuple[float, float]:
    """Parse ``--class-weights``: ``"auto"`` or two positive numbers ``"S,V"``.

    Examples
    --------
    >>> class_weights_arg("auto"), class_weights_arg("4, 2")
    ('auto', (4.0, 2.0))
    """
    if text.strip() == "auto":
        return "auto"
    parts = text.split(",")
    try:
        values = tuple(float(v) for v in parts)
    except ValueError:
        values = ()
    if len(values) != 2 or not all(math.isfinite(v) and v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"--class-weights must be 'auto' or two positive numbers 'S,V', "
                                         f"got {text!r}")
    return values[0], values[1]


# ---------------------------------------------------------------------------
# the split
# ---------------------------------------------------------------------------
def local_beats(sample: Any, *, minutes: float = LOCAL_MINUTES, fs: float = MITBIH_FS) -> np.ndarray:
    """Which beats lie in the first ``minutes`` of their record, by sample time.

    Parameters
    ----------
    sample : array-like of int, shape (n,)
        Beat positions in samples from the start of each beat's own record
        (:attr:`nwbound.datasets.BeatSet.sample`).
    minutes : float, default 5.0
        Length of the local-training stretch at the start of each record.
    fs : float, default 360.0
        Sampling rate of ``sample`` (MIT-BIH: 360 Hz).

    Returns
    -------
    ndarray of bool, shape (n,)
        True where ``sample < minutes · 60 · fs``.

    Raises
    ------
    ValueError
        ``minutes`` or ``fs`` not a positive finite number, ``sample`` not 1-D
        or holding negative positions (unknown beat times, e.g. Kaggle CSVs).

    Examples
    --------
    >>> local_beats([0, 107_999, 108_000, 200_000]).tolist()
    [True, True, False, False]
    >>> local_beats([0, 400, 800], minutes=1 / 60, fs=500.0).tolist()
    [True, True, False]
    """
    for name, v in (("minutes", minutes), ("fs", fs)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or not math.isfinite(float(v)) or v <= 0:
            raise ValueError(f"{name} must be a positive number, got {v!r}")
    s = np.asarray(sample)
    if s.ndim != 1 or not (s.size == 0 or np.issubdtype(s.dtype, np.number)):
        raise ValueError(f"sample must be a 1-D array of beat positions, got shape {s.shape}")
    if s.size and np.min(s) < 0:
        raise ValueError("sample holds negative positions (unknown beat times, e.g. Kaggle CSVs); "
                         "the adaptive split needs the beat times of the raw records")
    return s < float(minutes) * 60.0 * float(fs)


def adaptive_split(beats: Any, *, minutes: float = LOCAL_MINUTES, fs: float = MITBIH_FS) -> tuple[Any, Any, Any]:
    """De Chazal's DS1, each DS2 record's first ``minutes`` and the rest of DS2.

    Parameters
    ----------
    beats : BeatSet
        Beats with record ids and sample positions (:func:`nwbound.datasets.load_mitbih_beats`).
    minutes : float, default 5.0
        Local-training stretch at the start of each DS2 record.
    fs : float, default 360.0
        Sampling rate of ``beats.sample``.

    Returns
    -------
    base, local, rest : BeatSet
        DS1 (paced records excluded), the DS2 beats with ``sample < minutes·60·fs``
        and the other DS2 beats; every DS2 beat is in exactly one of ``local``
        and ``rest``, in the input order.

    Raises
    ------
    ValueError
        No record ids, an empty DS1 or DS2, or a DS2 record with no beat left
        to evaluate; bad ``minutes`` / ``fs`` (see :func:`local_beats`).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.datasets import BeatSet
    >>> b = BeatSet(np.zeros((4, 3)), [0, 0, 1, 0], ["101", "100", "100", "100"], [5, 10, 200_000, 300_000])
    >>> base, local, rest = adaptive_split(b)
    >>> base.record.tolist(), local.sample.tolist(), rest.sample.tolist()
    (['101'], [10], [200000, 300000])
    """
    from ..datasets.mitbih import split_beats

    base, target = split_beats(beats, split="inter")
    is_local = local_beats(target.sample, minutes=minutes, fs=fs)
    rest_records = set(target.record[~is_local].tolist())
    empty = sorted(set(target.record.tolist()) - rest_records)
    if empty:
        raise ValueError(f"--local-minutes {minutes:g} leaves no beat to evaluate in DS2 record(s) "
                         f"{', '.join(empty)}; use fewer minutes (records are 30 min long)")
    return base, target.subset(is_local), target.subset(~is_local)


# ---------------------------------------------------------------------------
# one model per record
# ---------------------------------------------------------------------------
@dataclass
class AdaptiveResult:
    """Predictions on the evaluation beats of every DS2 record (argmax and balanced rule)."""

    y_true: np.ndarray
    records: np.ndarray
    samples: np.ndarray
    fits: list[Any]
    n_base: int
    n_base_full: int
    n_local: int
    lipschitz: float
    lipschitz_seen: float
    local_weight: float
    n_neighbors: int
    bandwidth: float
    rhythm_weight: float
    minutes: float
    patient_distance: float = 0.0
    all_rejected: bool = False
    selection: list[dict[str, Any]] = field(default_factory=list)
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    fit_s: float = 0.0
    query_s: float = 0.0
    check_s: float = 0.0
    select_s: float = 0.0
    features: str = ADAPTIVE_FEATURES
    morphology_weight: float = MORPHOLOGY_WEIGHT
    class_weights: tuple[float, float] = (1.0, 1.0)
    class_weights_auto: bool = False
    ds1: list[dict[str, Any]] = field(default_factory=list)
    tune_s: float = 0.0
    ds1_lipschitz: list[dict[str, Any]] = field(default_factory=list)
    certificate_neighbors: int = CERTIFICATE_NEIGHBORS
    weight_criterion: str = ""


def _model(L: float, args: argparse.Namespace, n_rows: int, *, certificate: bool = False,
           shared: SharedSearch | None = None, k: int | None = None) -> Any:
    """The localized NWC of the adaptive split: ``k`` = ``--adaptive-neighbors``, or with ``certificate``
    the certificate model's ``--certificate-neighbors``; with ``shared``, the models of one record on
    the same rows share one exact search (:mod:`._ecg_neighbors`: the same neighbours, found once)."""
    from .. import NadarayaWatsonClassifier

    if k is None:
        k = getattr(args, "certificate_neighbors", CERTIFICATE_NEIGHBORS) if certificate else args.adaptive_neighbors
    search = {} if shared is None else {"algorithm": SHARED_ALGORITHM, "index_params": {"shared": shared}}
    return NadarayaWatsonClassifier(
        metric=None, kernel="epanechnikov", bandwidth=float(args.adaptive_bandwidth), lipschitz=L, delta=DELTA,
        bound=args.bound, n_neighbors=min(int(k), n_rows), **search)


def _two_models(L: float, args: argparse.Namespace, X: np.ndarray, y: np.ndarray, w: np.ndarray,
                X_query: np.ndarray, *, decision_bounds: bool = True,
                extra: dict[int, np.ndarray] | None = None) -> tuple[Any, Any, Any, Any, float]:
    """The decision model and the certificate model at ``L``, their expanded intervals on ``X_query``,
    and the seconds spent fitting (the rest is the queries).

    One model when ``--certificate-neighbors`` equals ``--adaptive-neighbors`` (both returned items are it).
    ``decision_bounds=False``: the decision model's item is its expanded ``p̂`` only (an array: its
    bounds are not computed; the DS1 simulation reads nothing else of it), unless it is also the
    certificate model. ``extra``: a dict whose keys are more ``k`` of the decision model; each gets
    that model's expanded ``p̂`` on ``X_query`` (from the same neighbour search).
    """
    sym = is_symmetric_form(args.bound)
    out: list[Any] = []
    fit_s = 0.0
    # one exact search serves both models and the per-record check (the same rows, the same queries)
    shared = SharedSearch(max(int(getattr(args, "certificate_neighbors", CERTIFICATE_NEIGHBORS)),
                              int(args.adaptive_neighbors), *(extra or {})))
    same = int(getattr(args, "certificate_neighbors", CERTIFICATE_NEIGHBORS)) == int(args.adaptive_neighbors)
    for cert in (False, True):
        if cert and same:
            out += out[:2]
            break
        t = time.perf_counter()
        model = _model(L, args, X.shape[0], certificate=cert, shared=shared).fit(X, y, sample_weight=w)
        fit_s += time.perf_counter() - t
        present = model.classes_.astype(np.intp)
        if not (cert or decision_bounds or same):  # p̂ only: after the certificate model's queries (below)
            out += [model, None]
            continue
        with _quiet_bounds():
            iv = model.predict_interval(X_query)
        out += [model, expand_interval(iv, present, len(CLASS_NAMES), symmetric=sym)]
    if out[1] is None:
        # p̂ from the same kernel sums without the bound search; its neighbours are the certificate
        # model's searches (made in the blocks its intervals query in), stacked by the shared search
        out[1] = _expand_proba(out[0].predict_proba(X_query), out[0].classes_.astype(np.intp), len(CLASS_NAMES))
    for k in extra or {}:  # a few k (≤ 4), each answered from the certificate model's search
        t = time.perf_counter()
        m = _model(L, args, X.shape[0], shared=shared, k=int(k)).fit(X, y, sample_weight=w)
        fit_s += time.perf_counter() - t
        extra[k] = _expand_proba(m.predict_proba(X_query), m.classes_.astype(np.intp), len(CLASS_NAMES))
    return out[0], out[1], out[2], out[3], fit_s


def _with_patient(X: np.ndarray, value: float) -> np.ndarray:
    """``X`` with the patient column appended: ``value`` on every row.

    DS1 rows get ``--patient-distance`` ``c``, the patient's local beats and queries 0, so a
    DS1 beat at feature distance ``d`` from a query sits at ``√(d² + c²)``: the localized
    classifier's ``k`` neighbours come from the patient's own beats unless DS1 has beats
    closer by more than that margin.
    """
    return np.hstack([X, np.full((X.shape[0], 1), float(value))])


def _stack(X_base: np.ndarray, y_base: np.ndarray, X_loc: np.ndarray, y_loc: np.ndarray,
           weight: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Training rows of one record's model: DS1 (weight 1) then its local beats (``weight``).

    The last column of ``X_base`` / ``X_loc`` is the patient column (see :func:`_with_patient`).
    """
    X = np.vstack([X_base, X_loc])
    y = np.concatenate([y_base, y_loc])
    w = np.concatenate([np.ones(y_base.shape[0]), np.full(y_loc.shape[0], float(weight))])
    return X, y, w


def _local_lipschitz(X_other: np.ndarray, y_other: np.ndarray, X_loc: np.ndarray, y_loc: np.ndarray,
                     samples_loc: np.ndarray, grid_seen: Sequence[float],
                     args: argparse.Namespace) -> tuple[int, np.ndarray, int, float] | None:
    """One patient's L from its own local beats: ``(index into the grid, rejected per L, check rows, p-value
    at the smallest L)``, or None where the local beats give no check row.

    The first half of the patient's local beats (by time) at the local weight joins ``X_other`` (the
    other patients' beats) in the kernel sums; the second half are the held-out rows of
    :func:`nwbound.assumptions.select_lipschitz` (every L of the grid from one pass, each tested at
    level :data:`CHECK_ALPHA`): the chosen L is the smallest grid value above every rejected one, the
    largest where every one is rejected (``all_rejected`` in the returned flags).
    """
    import warnings

    from ..assumptions import select_lipschitz

    order = np.argsort(samples_loc, kind="stable")
    half = order.shape[0] // 2
    fit_idx, check_idx = order[:half], order[half:]
    if fit_idx.size == 0 or check_idx.size == 0:
        return None
    X, y, w = _stack(X_other, y_other, X_loc[fit_idx], y_loc[fit_idx], args.local_weight)
    model = _model(grid_seen[0], args, X.shape[0], certificate=True).fit(X, y, sample_weight=w)
    seen = np.isin(y_loc[check_idx], model.classes_)
    if not np.any(seen):
        return None
    with _quiet_bounds(), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # every L rejected: reported through the flags
        sel = select_lipschitz(model, X_loc[check_idx][seen], y_loc[check_idx][seen], list(grid_seen),
                               alpha=CHECK_ALPHA, per_class=False)
    rej = np.array([c.rejected for c in sel.checks])
    j = len(grid_seen) - 1 if sel.all_rejected else int(np.searchsorted(np.asarray(sel.grid), sel.chosen))
    return j, rej, int(seen.sum()), float(sel.checks[0].p_value)


def _select_lipschitz_on_local(
    X_base: np.ndarray, y_base: np.ndarray, X_loc: np.ndarray, y_loc: np.ndarray, rec_loc: np.ndarray,
    samples_loc: np.ndarray, grid: Sequence[float], grid_seen: Sequence[float], args: argparse.Namespace,
) -> tuple[dict[str, int], int, list[dict[str, Any]], bool]:
    """Per DS2 record, the index into ``grid`` of its L chosen on its local beats (:func:`_local_lipschitz`).

    Returns those indices, the index of the smallest L that no record's check rejects (for
    records without check rows), one row per record and whether some record rejected every
    L (it then uses the largest, and the summary says so). Only local (training) beats are
    used: nothing of the evaluation beats.
    """
    rows: list[dict[str, Any]] = []
    per_record: dict[str, int] = {}
    every_rejected = False
    rejected_any = np.zeros(len(grid_seen), dtype=bool)
    for r in np.unique(rec_loc):  # one check per record (22), not a hot path
        mine = np.flatnonzero(rec_loc == r)
        got = _local_lipschitz(X_base, y_base, X_loc[mine], y_loc[mine], samples_loc[mine], grid_seen, args)
        if got is None:
            continue
        j, rej, n_check, p_value = got
        rejected_any |= rej
        every_rejected |= bool(rej[-1])
        per_record[str(r)] = j
        rows.append({"record": str(r), "fit_rows": int(mine.size // 2), "check_rows": n_check,
                     **{f"rejected_L={grid[i]:.3g}": bool(rej[i]) for i in range(len(grid))},
                     "p_value_smallest_L": p_value, "chosen_L": grid[j]})
    ok = np.flatnonzero(~rejected_any)
    return per_record, (int(ok[0]) if ok.size else len(grid) - 1), rows, every_rejected


def _features(base: Any, others: Sequence[Any], args: argparse.Namespace) -> tuple[np.ndarray, list[np.ndarray], float]:
    """DS1-scaled features of ``base`` and ``others``; the morphology block weighted (signal features)."""
    from ..datasets.mitbih import ecg_features
    from ..scaling import restate_lipschitz

    rw = float(args.rhythm_weight)
    signal = getattr(args, "adaptive_features", ADAPTIVE_FEATURES) == "signal"
    n_morph = base.X.shape[1] if signal else 100
    mw = float(getattr(args, "morphology_weight", MORPHOLOGY_WEIGHT)) if signal else 1.0
    outs = []
    scaler = X_base = None
    for other in others:  # the scaler is fitted on DS1 alone (the same fit every time)
        X_base, X_other, scaler = ecg_features(base, other, "both", n_samples=n_morph, rhythm_weight=rw)
        outs.append(X_other)
    if mw != 1.0:
        for X in [X_base, *outs]:
            X[:, :n_morph] *= mw
        scaler.scale_[:n_morph] *= mw
        scaler.min_[:n_morph] *= mw
    return X_base, outs, restate_lipschitz(1.0, scaler)  # L per unit of the raw features → model units


def _simulate_ds1(X_base: np.ndarray, base: Any, grid: Sequence[float], grid_seen: Sequence[float], c: float,
                  args: argparse.Namespace, quiet: bool,
                  neighbors: Sequence[int] = ()) -> tuple[dict[str, np.ndarray], list[dict[str, Any]]]:
    """DS1 leave-one-record-out with a simulated adaptation: p̂ and bounds on each record's later beats.

    Each DS1 record in turn is the new patient, treated as a DS2 record is: its first
    ``--local-minutes`` join the other DS1 records at the local weight (the patient column 0 on
    its beats), its L is chosen on those local beats alone (:func:`_local_lipschitz`; the
    smallest grid L where they give no check row), and the rest of it is queried. Only DS1 is
    used. Returns the pooled ``y``, the certificate model's ``proba``, ``lower``, ``upper``, the
    decision model's ``review`` (its ``p̂``), each beat's ``record``, for each ``k`` in ``neighbors``
    the decision model's ``p̂`` at that ``k`` (``review@k``), and one row per record (its L and check).
    """
    is_local = local_beats(base.sample, minutes=args.local_minutes)
    keys = ("y", "proba", "lower", "upper", "review", "record") + tuple(f"review@{k}" for k in neighbors)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in keys}
    rows: list[dict[str, Any]] = []
    records = np.unique(base.record)
    for r in progress(records, desc="ecg adaptive (DS1 simulation)", total=records.size, quiet=quiet):
        mine = base.record == r
        loc, ev = mine & is_local, mine & ~is_local
        if not ev.any():
            continue
        X_other, X_mine = _with_patient(X_base[~mine], c), _with_patient(X_base[loc], 0.0)
        got = _local_lipschitz(X_other, base.y[~mine], X_mine, base.y[loc], base.sample[loc], grid_seen, args)
        j = 0 if got is None else got[0]
        X, y, w = _stack(X_other, base.y[~mine], X_mine, base.y[loc], args.local_weight)
        extra: dict[int, np.ndarray] = {int(k): np.empty(0) for k in neighbors}
        _, review, _, iv, _ = _two_models(grid_seen[j], args, X, y, w, _with_patient(X_base[ev], 0.0),
                                          decision_bounds=False, extra=extra)  # the decision model's p̂ only
        for k, v in extra.items():
            parts[f"review@{k}"].append(v)
        for k, v in (("y", base.y[ev]), ("proba", iv.proba), ("lower", iv.lower), ("upper", iv.upper),
                     ("review", getattr(review, "proba", review)), ("record", base.record[ev])):
            parts[k].append(v)
        rows.append({"record": str(r), "check_rows": 0 if got is None else got[2], "chosen_L": grid[j],
                     "all_rejected": bool(got is not None and got[1][-1]), "beats": int(ev.sum()),
                     "certified_%": 100 * float(iv.certified.mean())})
    if not parts["y"]:
        raise ValueError("no DS1 record has beats after its local minutes to simulate the adaptation on")
    return {k: np.concatenate(v) for k, v in parts.items()}, rows


def _fit_records(base: Any, local: Any, rest: Any, args: argparse.Namespace, quick: bool) -> AdaptiveResult:
    """Scale on DS1, choose L on the local beats and the class weights on DS1, then one model per DS2 record."""
    from ..datasets import stratified_subsample
    from ..metrics import ec57_report

    n_full = len(base)
    cap = getattr(args, "inter_train", None) or (ADAPTIVE_QUICK_TRAIN if quick else None)
    if cap is not None and cap < n_full:
        base = base.subset(stratified_subsample(base.y, cap, int(args.seed)))
    rw = float(args.rhythm_weight)
    try:
        X_base, (X_loc, X_rest), ratio = _features(base, [local, rest], args)
    except ValueError as exc:
        raise _command_error(f"--split adaptive: {exc}") from exc
    c = float(args.patient_distance)
    if not math.isfinite(c) or c < 0:
        raise _command_error(f"--patient-distance must be a number ≥ 0, got {c!r}.")
    X_base_raw = X_base
    X_base, X_loc, X_rest = _with_patient(X_base, c), _with_patient(X_loc, 0.0), _with_patient(X_rest, 0.0)
    grid = [float(args.lipschitz)] + [g for g in LIPSCHITZ_GRID if g > float(args.lipschitz)]
    grid_seen = [g * ratio for g in grid]
    start = time.perf_counter()
    per_record, chosen, selection, all_rejected = _select_lipschitz_on_local(
        X_base, base.y, X_loc, local.y, local.record, local.sample, grid, grid_seen, args)
    select_s = time.perf_counter() - start
    L, L_seen = grid[chosen], grid_seen[chosen]

    start = time.perf_counter()
    weights_arg = getattr(args, "class_weights", "auto")
    criterion = str(getattr(args, "weight_criterion", WEIGHT_CRITERION))
    ds1_rows: list[dict[str, Any]] = []
    ds1_lipschitz: list[dict[str, Any]] = []
    if weights_arg == "auto":
        ks = tuple(int(k) for k in getattr(args, "neighbors_grid", ()) or ())
        if ks and criterion != "se_at_ppv_lcb":
            raise _command_error(f"--neighbors-grid chooses k with --weight-criterion se_at_ppv_lcb; with "
                                 f"{criterion} give --neighbors-grid none")
        try:
            sim, ds1_lipschitz = _simulate_ds1(X_base_raw, base, grid, grid_seen, c, args, quiet=args.quiet,
                                               neighbors=ks)
        except ValueError as exc:
            raise _command_error(f"--split adaptive, --class-weights auto: {exc}; give --class-weights S,V") from exc
        if ks:
            k_chosen, (w_s, w_v), ds1_rows = choose_decision_neighbors(
                sim["y"], sim["proba"], sim["lower"], sim["upper"], {k: sim[f"review@{k}"] for k in ks},
                records=sim["record"])
            args = argparse.Namespace(**{**vars(args), "adaptive_neighbors": k_chosen})  # the DS2 models' k
        else:
            (w_s, w_v), ds1_rows = choose_class_weights(sim["y"], sim["proba"], sim["lower"], sim["upper"],
                                                        review_proba=sim["review"], records=sim["record"],
                                                        criterion=criterion)
            for row in ds1_rows:
                row["chosen"] = (row["w_S"], row["w_V"]) == (w_s, w_v)
        a = weighted_decision(sim["proba"], sim["lower"], sim["upper"], np.ones(len(CLASS_NAMES)),
                              review_proba=sim["review"])
        for row in ds1_rows:  # the certificates are the argmax's whatever the weights and k
            row["certified_%"] = 100 * float(a.certified.mean())
            row["error_certified_%"] = 100 * float(np.mean(a.y_pred[a.certified] != sim["y"][a.certified])) \
                if a.certified.any() else math.nan
    else:
        w_s, w_v = weights_arg
    tune_s = time.perf_counter() - start
    class_weights = np.array([1.0, w_s, w_v, 1.0, 1.0])

    n = len(rest)
    out = {k: np.zeros(n, dtype=np.intp) for k in ("argmax", "weighted", "balanced")}
    cert = {k: np.zeros(n, dtype=bool) for k in out}
    err = {k: np.ones(n) for k in out}
    vacuous = np.zeros(n, dtype=bool)
    checks: dict[str, dict[str, Any]] = {}
    fit_s = query_s = check_s = 0.0
    records = np.unique(rest.record)
    for r in progress(records, desc="ecg adaptive (records)", total=records.size, quiet=args.quiet):
        loc_idx = np.flatnonzero(local.record == r)
        ev = np.flatnonzero(rest.record == r)
        X, y, w = _stack(X_base, base.y, X_loc[loc_idx], local.y[loc_idx], args.local_weight)
        j = per_record.get(str(r), chosen)  # this patient's L (the common one without local check rows)
        t = time.perf_counter()
        _, decide, model, iv, fitted = _two_models(grid_seen[j], args, X, y, w, X_rest[ev])
        fit_s += fitted
        query_s += time.perf_counter() - t - fitted
        # certified beats: the certificate model's box; the review queue: the decision model's p̂
        both = _weighted_decisions(iv.proba, iv.lower, iv.upper, [np.ones(len(CLASS_NAMES)), class_weights],
                                   review_proba=decide.proba)
        for rule, wd in zip(("argmax", "weighted"), both):
            out[rule][ev], cert[rule][ev], err[rule][ev] = wd.y_pred, wd.certified, wd.error_upper
        prior = np.bincount(y, weights=w, minlength=len(CLASS_NAMES)) / w.sum()
        d = _decide(decide.proba, decide.lower, decide.upper, prior, "balanced")
        out["balanced"][ev], cert["balanced"][ev], err["balanced"][ev] = d.y_pred, d.certified, d.error_upper
        vacuous[ev] = decide.vacuous
        t = time.perf_counter()
        checks[str(r)] = {**record_check(model, X_rest[ev], rest.y[ev]), "L": grid[j]}
        check_s += time.perf_counter() - t
    fits = []
    n_train = len(base)  # DS1 rows of every record's model; each adds its own local beats (n_local)
    for rule in ("argmax", "weighted", "balanced"):
        fits.append(InterFit("both", "localized", rule, n_train, fit_s, query_s, out[rule], cert[rule], err[rule],
                             ec57_report(rest.y, out[rule], records=rest.record), L_seen,
                             float(vacuous.mean())))
    return AdaptiveResult(
        y_true=rest.y, records=rest.record, samples=rest.sample, fits=fits, n_base=len(base), n_base_full=n_full,
        n_local=len(local), lipschitz=L, lipschitz_seen=L_seen, local_weight=float(args.local_weight),
        n_neighbors=int(args.adaptive_neighbors), bandwidth=float(args.adaptive_bandwidth), rhythm_weight=rw,
        minutes=float(args.local_minutes), patient_distance=c, all_rejected=all_rejected, selection=selection,
        checks=checks, fit_s=fit_s, query_s=query_s, check_s=check_s, select_s=select_s,
        features=str(getattr(args, "adaptive_features", ADAPTIVE_FEATURES)),
        morphology_weight=float(getattr(args, "morphology_weight", MORPHOLOGY_WEIGHT)),
        class_weights=(float(w_s), float(w_v)), class_weights_auto=weights_arg == "auto", ds1=ds1_rows,
        tune_s=tune_s, ds1_lipschitz=ds1_lipschitz, weight_criterion=criterion if weights_arg == "auto" else "",
        certificate_neighbors=int(getattr(args, "certificate_neighbors", CERTIFICATE_NEIGHBORS)))


def record_check(model: Any, X: Any, y: Any, *, alpha: float = CHECK_ALPHA) -> dict[str, Any]:
    """The held-out tests on one record's evaluation beats: its certificates, and its L.

    Two tests of :func:`nwbound.assumptions.check_lipschitz` (``per_class=False``, one call:
    ``contrast=(False, True)``, so both from one set of intervals), each at
    level ``alpha``:

    * the certificate test (``contrast=False``), which *flags* the record: the errors among
      the beats certified at the model's ``δ`` against the upper quantile of the
      Poisson-binomial of their error ceilings, with a Markov allowance for the labels the
      beats share through the kernel sums;
    * the assumption test (the same with the contrasts): it also pairs the beats of highest
      and lowest ``p̂`` and rejects an L under which their labels differ more often than
      ``L·d`` allows, whether or not a certified beat errs (``assumption_rejected``).

    Beats of a class the model never saw are left out (they cannot be certified).

    Parameters
    ----------
    model : NadarayaWatsonClassifier
        Fitted; its kernel sums must not contain the rows of ``X``.
    X : array-like of shape (n, n_features)
        The record's evaluation beats, in the units the model takes.
    y : array-like of shape (n,)
        Their labels.
    alpha : float, default 0.05
        Level of each test: a record whose ceilings hold is flagged with probability ≤ ``alpha``.

    Returns
    -------
    dict
        ``check_rows``, ``check_p_value``, ``check_rejected`` (the record is flagged),
        ``check_rejected_by`` and ``assumption_rejected``.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> X = np.linspace(0, 1, 200)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> model = NadarayaWatsonClassifier(metric=None, bandwidth=0.1, lipschitz=0.1).fit(X, y)
    >>> Xh = np.linspace(0.01, 0.99, 100)[:, None]
    >>> row = record_check(model, Xh, (Xh[:, 0] > 0.5).astype(int))
    >>> row["check_rejected"], row["assumption_rejected"]  # the ceilings hold; the step is steeper than L
    (False, True)
    >>> record_check(model, Xh, (Xh[:, 0] <= 0.5).astype(int))["check_rejected"]  # labels flipped
    True
    """
    from ..assumptions import check_lipschitz

    y = np.asarray(y)
    X = np.asarray(X)
    seen = np.isin(y, model.classes_)
    row: dict[str, Any] = {"check_rows": int(seen.sum()), "check_p_value": math.nan, "check_rejected": False,
                           "check_rejected_by": "", "assumption_rejected": False}
    if np.any(seen):
        with _quiet_bounds():
            # both tests from one set of intervals (they differ only in the tests run on them)
            c, full = check_lipschitz(model, X[seen], y[seen], alpha=alpha, per_class=False, contrast=(False, True))
        row.update({"check_p_value": float(c.p_value), "check_rejected": bool(c.rejected),
                    "check_rejected_by": ",".join(c.rejected_by), "assumption_rejected": bool(full.rejected)})
    return row


def _with_signal_morphology(beats: Any, args: argparse.Namespace) -> Any:
    """``beats`` with the raw-signal morphology as ``X`` (amplitude unit: each record's first minutes)."""
    from ..datasets import BeatSet
    from .ecg_signal_features import signal_morphology

    data_dir = getattr(args, "data_dir", None)
    if data_dir is None:
        raise _command_error("--adaptive-features signal reads the raw records: give --data-dir "
                             "(or --adaptive-features kaggle)")
    try:
        X = signal_morphology(beats, data_dir, reference=local_beats(beats.sample, minutes=args.local_minutes))
    except (OSError, ValueError) as exc:
        raise _command_error(f"--adaptive-features signal: {exc}") from exc
    return BeatSet(X, beats.y, beats.record, beats.sample, rhythm=beats.rhythm)


@dataclass
class AdaptiveOutputs:
    """What ``run_adaptive`` wrote and returns for the shared tables."""

    files: list[Path]
    ec57_rows: list[dict[str, Any]]
    summary: str
    result: AdaptiveResult | None


def run_adaptive(beats: Any, args: argparse.Namespace, output: Path, formats: Sequence[str], *,
                 quick: bool = False, required: bool = True) -> AdaptiveOutputs:
    """Run the adaptive split; write its tables and strip figures into ``output``.

    The caller (``nwbound experiment ecg``) writes the returned EC57 rows into
    ``ec57`` beside the inter-patient ones and appends the summary section.
    With ``required=False`` (``--split both``) records too short for the local
    minutes skip the split with a warning and a line in the summary instead of
    an error (``--split adaptive`` raises it).

    Examples
    --------
    From the command line::

        nwbound experiment ecg --data-dir ../shared/data/mitdb --split adaptive --output results/ecg
    """
    start = time.perf_counter()
    if getattr(args, "adaptive_features", ADAPTIVE_FEATURES) == "signal":
        beats = _with_signal_morphology(beats, args)
    try:
        base, local, rest = adaptive_split(beats, minutes=args.local_minutes)
    except ValueError as exc:
        if required:
            raise _command_error(f"--split adaptive: {exc}") from exc
        import warnings

        warnings.warn(f"adaptive split skipped: {exc}", UserWarning, stacklevel=2)
        return AdaptiveOutputs([], [], "## Patient-adaptive\n\nSkipped: " + " ".join(str(exc).split()) + ".\n",
                               None)
    if np.unique(base.y).shape[0] < 2:
        raise _command_error("--split adaptive: the DS1 records hold a single class.")
    res = _fit_records(base, local, rest, args, quick)
    certs = _certificate_report(res, local.y, local.record, getattr(args, "local_support", "require"))
    overview = _overview(res)
    rows = _record_table(res, certs)
    files: list[Path] = []
    files += write_table(overview, output / "adaptive_overview",
                         title="Patient-adaptive (DS1 + local minutes → rest of DS2): accuracy, S/V Se and +P, bounds")
    files += write_table(rows, output / "adaptive_records",
                         title="Per DS2 record (adaptive, argmax): EC57, certificates and the held-out check")
    if res.ds1:
        files += write_table(res.ds1, output / "adaptive_class_weights",
                             title="Class weights of the weighted rule: DS1 leave-one-record-out, simulated adaptation")
    if res.selection:
        files += write_table(res.selection, output / "adaptive_lipschitz",
                             title="Choice of L on the local beats: rejected per record and L index")
    if res.ds1_lipschitz:
        files += write_table(res.ds1_lipschitz, output / "adaptive_lipschitz_ds1",
                             title="DS1 simulation: each DS1 record's L, chosen on its own local beats")
    files += write_table(certs.raw, output / "adaptive_certificate_checks",
                         title="Every rule's certificates per record: Poisson-binomial test, local support")
    files += _strips(res, rows, getattr(args, "data_dir", None), output, formats, certs=certs)
    return AdaptiveOutputs(files, adaptive_ec57_rows(res), _summary(res, overview, rows,
                                                                     time.perf_counter() - start, certs), res)
