"""Tests of ``nwbound experiment ecg --split adaptive`` (a new patient in five minutes)."""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier
from nwbound.cli.main import main
from nwbound.datasets import BeatSet
from nwbound.datasets.mitbih import DS1, DS2
from nwbound.experiments.ecg import add_arguments
from nwbound.experiments.ecg_adaptive import (
    adaptive_split,
    local_beats,
    record_certificate_rows,
    record_check,
)

EXCERPT = Path(__file__).resolve().parent / "data" / "mitdb_excerpt"
FIVE_MIN = 5 * 60 * 360  # samples at 360 Hz


def _read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _synthetic_beats(seed: int = 0) -> BeatSet:
    """Two DS1 and three DS2 records, beats at random times over 30 min (shuffled order)."""
    rng = np.random.default_rng(seed)
    parts = []
    for rec in (DS1[0], DS1[1], DS2[0], DS2[1], DS2[2]):
        n = int(rng.integers(40, 80))
        sample = np.sort(rng.choice(650_000, size=n, replace=False))
        sample[0] = 0  # a beat at the very start
        sample[-1] = FIVE_MIN  # one exactly at 5 min: already outside the local stretch
        parts.append((np.full(n, rec), sample, rng.integers(0, 3, size=n)))
    record = np.concatenate([p[0] for p in parts])
    sample = np.concatenate([p[1] for p in parts])
    y = np.concatenate([p[2] for p in parts])
    order = rng.permutation(record.size)
    return BeatSet(rng.random((record.size, 6)), y[order], record[order], sample[order])


# --------------------------------------------------------------------------- the split
def test_local_beats_is_the_first_minutes_by_sample_time():
    s = np.array([0, 1, FIVE_MIN - 1, FIVE_MIN, FIVE_MIN + 1, 649_999])
    assert local_beats(s).tolist() == [True, True, True, False, False, False]
    assert local_beats(s, minutes=10).tolist() == [True] * 5 + [False]
    assert local_beats([0, 249, 250], minutes=1 / 60, fs=250.0).tolist() == [True, True, False]


@pytest.mark.parametrize("kwargs, match", [
    ({"minutes": 0}, "minutes"), ({"minutes": float("nan")}, "minutes"), ({"fs": -1.0}, "fs"),
])
def test_local_beats_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        local_beats([0, 10], **kwargs)


def test_local_beats_rejects_unknown_times():
    with pytest.raises(ValueError, match="beat times"):
        local_beats([-1, -1])


def test_adaptive_split_no_beat_on_both_sides():
    beats = _synthetic_beats()
    base, local, rest = adaptive_split(beats)
    # DS1 is the training base, DS2 is cut in two
    assert set(base.record.tolist()) == set(DS1[:2])
    assert set(local.record.tolist()) <= set(DS2[:3]) and set(rest.record.tolist()) == set(DS2[:3])
    # local: exactly the DS2 beats before 5 min of their record; rest: the others
    is_ds2 = np.isin(beats.record, DS2)
    want_local = {(r, s) for r, s in zip(beats.record[is_ds2], beats.sample[is_ds2]) if s < FIVE_MIN}
    want_rest = {(r, s) for r, s in zip(beats.record[is_ds2], beats.sample[is_ds2]) if s >= FIVE_MIN}
    got_local = set(zip(local.record.tolist(), local.sample.tolist()))
    got_rest = set(zip(rest.record.tolist(), rest.sample.tolist()))
    assert got_local == want_local and got_rest == want_rest
    assert not got_local & got_rest
    assert len(local) + len(rest) == int(is_ds2.sum())
    # every local beat of a record precedes every evaluated beat of that record
    for r in set(local.record.tolist()):
        assert local.sample[local.record == r].max() < rest.sample[rest.record == r].min()
    # labels travel with their beats
    key = {(r, s): y for r, s, y in zip(beats.record, beats.sample, beats.y)}
    assert all(key[(r, s)] == y for r, s, y in zip(rest.record, rest.sample, rest.y))


def test_adaptive_split_too_many_minutes_is_an_error():
    with pytest.raises(ValueError, match="local-minutes"):
        adaptive_split(_synthetic_beats(), minutes=31.0)


# --------------------------------------------------------------------------- per-record check
def test_record_certificate_rows_match_a_slow_formula():
    rng = np.random.default_rng(3)
    n = 300
    y = rng.integers(0, 3, n)
    pred = np.where(rng.random(n) < 0.8, y, rng.integers(0, 3, n))
    cert = rng.random(n) < 0.7
    ceil = rng.uniform(0.0, 0.4, n)
    recs = rng.choice(["a", "b", "c"], n)
    rows = record_certificate_rows(y, pred, cert, ceil, recs)
    for row in rows:
        idx = [i for i in range(n) if recs[i] == row["record"] and cert[i]]
        errors = sum(int(y[i] != pred[i]) for i in idx)
        ceiling = sum(float(ceil[i]) for i in idx)
        assert row["certified"] == len(idx) and row["errors_certified"] == errors
        assert row["error_certified_%"] == pytest.approx(100 * errors / len(idx))
        assert row["mean_ceiling_certified_%"] == pytest.approx(100 * ceiling / len(idx))
        assert row["visibly_fails"] == (errors > 2 * ceiling)


def test_record_certificate_rows_flags_and_passes_constructed_records():
    # "bad": 3 of 4 certified beats wrong against ceilings of 0.1 each -> 75 % > 2 x 10 %
    # "good": 1 of 10 certified wrong against ceilings of 0.1 -> 10 % <= 20 %
    y = [0] * 4 + [0] * 10
    pred = [1, 1, 1, 0] + [1] + [0] * 9
    rows = {r["record"]: r for r in record_certificate_rows(y, pred, [True] * 14, [0.1] * 14,
                                                            ["bad"] * 4 + ["good"] * 10)}
    assert rows["bad"]["visibly_fails"] and not rows["good"]["visibly_fails"]
    assert rows["bad"]["ratio"] == pytest.approx(7.5)


def _two_class_model(lipschitz: float = 0.2) -> NadarayaWatsonClassifier:
    rng = np.random.default_rng(0)
    X = rng.random((600, 1))
    y = (X[:, 0] > 0.5).astype(int)
    return NadarayaWatsonClassifier(metric=None, bandwidth=0.05, lipschitz=lipschitz, n_neighbors=30).fit(X, y)


def test_record_check_flags_a_patient_whose_labels_break_the_ceilings():
    model = _two_class_model()
    Xh = np.random.default_rng(1).random((200, 1))
    # A patient for whom the rule is reversed: certified beats are nearly all wrong.
    bad = record_check(model, Xh, (Xh[:, 0] <= 0.5).astype(int))
    assert bad["check_rejected"] and bad["check_p_value"] <= 0.05 and bad["check_rows"] == 200
    # The same beats labelled by the training rule: ceilings hold, not flagged.
    good = record_check(model, Xh, (Xh[:, 0] > 0.5).astype(int))
    assert not good["check_rejected"] and good["check_p_value"] > 0.05
    # But the step is steeper than L = 0.2: the contrasts reject the assumption. At L = 5 they do not
    # (they pair rows at least 0.4 apart here, where L·d ≥ 1 allows the step).
    assert good["assumption_rejected"]
    loose = _two_class_model(lipschitz=5.0)
    assert not record_check(loose, Xh, (Xh[:, 0] > 0.5).astype(int))["assumption_rejected"]
    # A label the model never saw cannot be certified and is left out.
    y3 = (Xh[:, 0] > 0.5).astype(int)
    y3[:10] = 7
    assert record_check(model, Xh, y3)["check_rows"] == 190


# --------------------------------------------------------------------------- each patient's L
def test_local_lipschitz_is_the_smallest_value_above_every_rejected_one():
    from nwbound.assumptions import check_lipschitz
    from nwbound.experiments.ecg_adaptive import LIPSCHITZ_GRID, _local_lipschitz

    rng = np.random.default_rng(0)
    X_other = rng.random((300, 1))
    y_other = (X_other[:, 0] > 0.5).astype(int)
    X_loc = rng.random((160, 1))
    y_loc = (X_loc[:, 0] > 0.3).astype(int)  # this patient's step sits elsewhere
    samples = rng.permutation(160) * 10  # the local beats out of time order
    grid = [0.25 * 2 ** (i / 2) for i in range(9)]
    args = argparse.Namespace(local_weight=5.0, adaptive_bandwidth=0.2, adaptive_neighbors=12, bound="chernoff")
    j, rejected, n_check, _ = _local_lipschitz(X_other, y_other, X_loc, y_loc, samples, grid, args)
    # slow formula: the earlier half by time in the kernel sums, each L tested on its own
    first, later = np.argsort(samples)[:80], np.argsort(samples)[80:]
    model = NadarayaWatsonClassifier(metric=None, kernel="epanechnikov", bandwidth=0.2, lipschitz=grid[0], delta=0.05,
                                     n_neighbors=12).fit(
        np.vstack([X_other, X_loc[first]]), np.concatenate([y_other, y_loc[first]]),
        sample_weight=np.concatenate([np.ones(300), np.full(80, 5.0)]))
    expected = [check_lipschitz(model, X_loc[later], y_loc[later], lipschitz=L, per_class=False).rejected
                for L in grid]
    assert rejected.tolist() == expected and n_check == 80
    assert any(expected) and not expected[-1]  # the case is not trivial
    assert j == max(i for i, r in enumerate(expected) if r) + 1
    # the run's grid: factors of √2 from 0.05 to 1.6
    np.testing.assert_allclose(LIPSCHITZ_GRID, [0.05 * 1.4142135623730951 ** i for i in range(11)])
    # no local beat to hold out: no choice
    assert _local_lipschitz(X_other, y_other, X_loc[:1], y_loc[:1], samples[:1], grid, args) is None



def test_two_models_certify_with_the_wider_neighbourhood():
    from nwbound.experiments.ecg_adaptive import _two_models

    rng = np.random.default_rng(2)
    X = rng.random((120, 2))
    y = (X[:, 0] > 0.5).astype(int)
    w = np.ones(120)
    Xq = rng.random((30, 2))
    args = argparse.Namespace(adaptive_bandwidth=0.5, adaptive_neighbors=5, certificate_neighbors=15,
                              bound="chernoff")
    decide, iv_d, cert, iv_c, fit_s = _two_models(0.5, args, X, y, w, Xq)
    assert (decide.n_neighbors, cert.n_neighbors) == (5, 15) and fit_s >= 0
    for k, iv in ((5, iv_d), (15, iv_c)):  # each interval is its own model's, expanded to the 5 classes
        ref = NadarayaWatsonClassifier(metric=None, kernel="epanechnikov", bandwidth=0.5, lipschitz=0.5, delta=0.05,
                                       n_neighbors=k).fit(X, y).predict_interval(Xq)
        np.testing.assert_allclose(iv.proba[:, :2], ref.proba)
        np.testing.assert_allclose(iv.lower[:, :2], ref.lower)
        assert iv.proba.shape == (30, 5) and np.all(iv.proba[:, 2:] == 0)
    # decision_bounds=False (the DS1 simulation): the decision model's p̂ only, bit for bit the same
    _, p_d, _, iv_c2, _ = _two_models(0.5, args, X, y, w, Xq, decision_bounds=False)
    assert isinstance(p_d, np.ndarray) and p_d.tobytes() == iv_d.proba.tobytes()
    for f in ("proba", "lower", "upper", "certified"):
        assert np.array_equal(getattr(iv_c2, f), getattr(iv_c, f))
    args.certificate_neighbors = 5  # the same k: one model
    decide, iv_d, cert, iv_c, _ = _two_models(0.5, args, X, y, w, Xq)
    assert cert is decide and iv_c is iv_d
    _, iv_d, _, iv_c, _ = _two_models(0.5, args, X, y, w, Xq, decision_bounds=False)  # one model: its bounds
    assert iv_c is iv_d and iv_d.lower.shape == (30, 5)
    # more k of the decision model (round 9's k choice): each p̂ that of a plain model at that k
    args.certificate_neighbors = 15
    extra = {3: np.empty(0), 8: np.empty(0)}
    _two_models(0.5, args, X, y, w, Xq, decision_bounds=False, extra=extra)
    for k, p in extra.items():
        ref = NadarayaWatsonClassifier(metric=None, kernel="epanechnikov", bandwidth=0.5, lipschitz=0.5,
                                       n_neighbors=k).fit(X, y).predict_proba(Xq)
        assert p.shape == (30, 5) and np.array_equal(p[:, :2], ref) and np.all(p[:, 2:] == 0)

# --------------------------------------------------------------------------- CLI wiring
def test_split_option_has_adaptive():
    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(["--split", "adaptive", "--local-minutes", "2", "--local-weight", "5"])
    assert (args.split, args.local_minutes, args.local_weight) == ("adaptive", 2.0, 5.0)
    assert p.parse_args([]).split == "both"


def test_too_many_local_minutes_is_a_one_line_error(tmp_path, capsys):
    code = main(["experiment", "ecg", "--data-dir", str(EXCERPT), "--split", "adaptive", "--quiet",
                 "--threads", "1", "--output", str(tmp_path / "o")])  # the excerpt holds 2 min per record
    err = capsys.readouterr().err
    assert code == 2 and "--local-minutes" in err and "Traceback" not in err


def test_tiny_adaptive_run_on_the_excerpt(tmp_path):
    out = tmp_path / "results"
    code = main(["experiment", "ecg", "--data-dir", str(EXCERPT), "--split", "adaptive", "--local-minutes", "0.5",
                 "--quick", "--threads", "1", "--output", str(out), "--quiet"])
    assert code == 0
    ec57 = _read_csv(out / "ec57.csv")
    assert ec57 and {r["split"] for r in ec57} == {"adaptive"}
    assert {r["rule"] for r in ec57} == {"argmax", "weighted", "balanced"}
    overview = _read_csv(out / "adaptive_overview.csv")
    assert {"certified_%", "error_certified_%", "S_Se_%", "V_+P_%"} <= set(overview[0])
    records = _read_csv(out / "adaptive_records.csv")
    # the excerpt's DS2 records: 100 and 232; evaluation beats are those after 30 s
    assert {r["record"] for r in records} == {"100", "232"}
    from nwbound.datasets import load_mitbih_beats

    beats = load_mitbih_beats(EXCERPT, progress=False)
    _, _, rest = adaptive_split(beats, minutes=0.5)
    assert sum(int(r["beats"]) for r in records) == len(rest)
    # gross N support of the EC57 rows is the evaluation beats' N count
    n_row = next(r for r in ec57 if r["class"] == "N" and r["rule"] == "argmax")
    assert int(n_row["support"]) == int(np.sum(rest.y == 0))
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "Patient-adaptive" in summary and "de Chazal & Reilly 2006" in summary
    # the DS1 simulation chose each DS1 record's L on its own local beats (the run's default weights)
    ds1 = _read_csv(out / "adaptive_lipschitz_ds1.csv")
    assert ds1 and {r["record"] for r in ds1} <= set(DS1)
    # the class weights were chosen by the default criterion, which says how for each class
    weights = _read_csv(out / "adaptive_class_weights.csv")
    assert {r["S_chosen_by"] for r in weights} <= {"lcb", "break-even"} | {f"lcb without record {r}" for r in DS1}
    assert {r["weight_criterion"] for r in overview} == {"se_at_ppv_lcb"}
    # look 2: the decision model's k chosen with the weights on DS1; the DS2 models use it
    chosen = [r for r in weights if r["chosen"] == "True"]
    assert len(chosen) == 1 and {int(r["k"]) for r in weights} == {8, 10, 12, 15}
    assert {int(r["n_neighbors"]) for r in overview} == {int(chosen[0]["k"])}
    assert (float(chosen[0]["w_S"]), float(chosen[0]["w_V"])) == (float(overview[0]["w_S"]), float(overview[0]["w_V"]))
