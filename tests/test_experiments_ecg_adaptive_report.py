"""Per-rule, per-record certificate checks of the adaptive split, the local-support guard and the strips."""

from __future__ import annotations

import itertools
import math

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from nwbound.experiments.ecg_adaptive import certificate_checks, locally_supported, record_certificate_rows
from nwbound.plots import ECGStripDisplay


def _slow_tail(ceilings: list[float], k: int) -> float:
    """P(Σ Bernoulli(c_j) ≥ k) by enumerating every outcome (independent of the FFT code)."""
    total = 0.0
    for outcome in itertools.product((0, 1), repeat=len(ceilings)):
        if sum(outcome) >= k:
            total += math.prod(c if o else 1.0 - c for c, o in zip(ceilings, outcome))
    return total


def _random_rules(seed: int, n: int = 36):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    recs = rng.choice(["a", "b", "c"], n)
    rules = {}
    for name in ("argmax", "balanced"):
        pred = np.where(rng.random(n) < 0.6, y, rng.integers(0, 3, n))
        cert = rng.random(n) < 0.35
        rules[name] = (pred, cert, rng.uniform(0.0, 0.5, n))
    # a rule with argmax's certificates and other decisions elsewhere (like the weighted rule)
    pred, cert, ceil = rules["argmax"]
    rules["weighted"] = (np.where(cert, pred, (pred + 1) % 3), cert.copy(), ceil.copy())
    return y, recs, rules


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_certificate_checks_match_a_slow_formula(seed):
    y, recs, rules = _random_rules(seed)
    alpha = 0.05
    rows = certificate_checks(y, rules, recs, alpha=alpha)
    assert len(rows) == 3 * 3
    # slow: every (rule, record) p-value by enumeration; the family = distinct certificates with
    # ≥ 1 certified beat, then Tarone's repeated drop of tests whose floor Π c exceeds α / T
    slow = {}
    for rule, (pred, cert, ceil) in rules.items():
        for r in ("a", "b", "c"):
            idx = [i for i in range(len(y)) if recs[i] == r and cert[i]]
            errors = sum(int(pred[i] != y[i]) for i in idx)
            slow[rule, r] = (_slow_tail([float(ceil[i]) for i in idx], errors),
                             math.prod(float(ceil[i]) for i in idx), len(idx))
    family = [(rule, r) for (rule, r), (_, _, n) in slow.items() if rule != "weighted" and n > 0]
    while True:
        kept = [key for key in family if slow[key][1] <= alpha / len(family)]
        if len(kept) == len(family):
            break
        family = kept
    for row in rows:
        src = "argmax" if row["rule"] == "weighted" else row["rule"]
        p, _, _ = slow[src, row["record"]]
        assert row["same_as"] == ("argmax" if row["rule"] == "weighted" else "")
        assert row["p_value"] == pytest.approx(p, abs=1e-12)
        assert row["tests"] == len(family)
        assert row["tested"] == ((src, row["record"]) in family)
        if row["tested"]:
            assert row["p_adjusted"] == pytest.approx(min(1.0, len(family) * p), abs=1e-12)
            assert row["flagged"] == (p <= alpha / len(family))
        else:
            assert math.isnan(row["p_adjusted"]) and not row["flagged"]


def test_the_test_flags_a_record_the_twice_the_ceiling_line_misses():
    # record 222 under the balanced rule: 29 certified beats, mean ceiling 43 %, 24 wrong (83 % < 2 × 43 %)
    ceil = np.full(29, 0.43)
    y = np.zeros(29, dtype=int)
    pred = np.r_[np.ones(24, dtype=int), np.zeros(5, dtype=int)]
    good_y = np.zeros(40, dtype=int)  # another record: 6 of 40 wrong against ceilings of 0.3
    good_pred = np.r_[np.ones(6, dtype=int), np.zeros(34, dtype=int)]
    rows = certificate_checks(np.r_[y, good_y], {"balanced": (np.r_[pred, good_pred], np.ones(69, bool),
                                                              np.r_[ceil, np.full(40, 0.3)])},
                              ["222"] * 29 + ["100"] * 40)
    by = {r["record"]: r for r in rows}
    assert not by["222"]["visibly_fails"] and by["222"]["flagged"]
    assert not by["100"]["flagged"]
    # Bin(29, 0.43) ≥ 24, as a direct binomial sum, times the 2 tests
    p = sum(math.comb(29, k) * 0.43 ** k * 0.57 ** (29 - k) for k in range(24, 30))
    assert by["222"]["p_adjusted"] == pytest.approx(2 * p, rel=1e-9)


def test_tests_that_cannot_reject_leave_the_family():
    # record "x" has one certified beat with ceiling 0.9: even an error gives p = 0.9, so it is not counted
    y = np.zeros(12, dtype=int)
    pred = np.r_[1, np.ones(8, dtype=int), np.zeros(3, dtype=int)]
    ceil = np.r_[0.9, np.full(11, 0.05)]
    rows = certificate_checks(y, {"r": (pred, np.ones(12, bool), ceil)}, ["x"] + ["y"] * 11)
    by = {r["record"]: r for r in rows}
    assert not by["x"]["tested"] and not by["x"]["flagged"] and by["x"]["p_value"] == pytest.approx(0.9)
    assert by["y"]["tested"] and by["y"]["tests"] == 1 and by["y"]["flagged"]


def test_record_certificate_rows_p_value_is_the_poisson_binomial_tail():
    y = np.array([0, 0, 0, 1, 1])
    pred = np.array([1, 1, 0, 1, 0])
    ceil = np.array([0.2, 0.3, 0.4, 0.1, 0.6])
    row = record_certificate_rows(y, pred, [True, True, True, True, False], ceil, ["a"] * 5)[0]
    assert row["p_value"] == pytest.approx(_slow_tail([0.2, 0.3, 0.4, 0.1], 2), abs=1e-12)


@pytest.mark.parametrize("alpha", [0, 1, 1.5, float("nan")])
def test_certificate_checks_rejects_a_bad_alpha(alpha):
    with pytest.raises(ValueError, match="alpha"):
        certificate_checks([0], {"r": ([0], [True], [0.1])}, ["a"], alpha=alpha)


def test_certificate_checks_needs_a_rule_and_matching_shapes():
    with pytest.raises(ValueError, match="rules"):
        certificate_checks([0], {}, ["a"])
    with pytest.raises(ValueError, match="certified"):
        certificate_checks([0, 1], {"r": ([0, 1], [True], [0.1, 0.1])}, ["a", "a"])


def test_locally_supported_matches_a_slow_loop():
    rng = np.random.default_rng(5)
    pred = rng.integers(0, 4, 200)
    recs = rng.choice(["100", "200", "300"], 200)
    local_y = rng.integers(0, 3, 15)
    local_r = rng.choice(["100", "200", "400"], 15)
    slow = [any(local_r[j] == recs[i] and local_y[j] == pred[i] for j in range(15)) for i in range(200)]
    assert locally_supported(pred, recs, local_y, local_r).tolist() == slow


def test_locally_supported_rejects_bad_input():
    with pytest.raises(ValueError, match="records"):
        locally_supported([0, 1], ["a"], [0], ["a"])
    with pytest.raises(ValueError, match="local_records"):
        locally_supported([0], ["a"], [0, 1], ["a"])
    with pytest.raises(ValueError, match="class indices"):
        locally_supported([-1], ["a"], [0], ["a"])


def test_strip_marks_certificates_without_local_support():
    fs = 100.0
    beats = np.array([50, 150, 250])
    disp = ECGStripDisplay(signal=np.sin(np.arange(300) / 5), fs=fs, beat_sample=beats, y_true=[0, 1, 1],
                           y_pred=[0, 0, 1], certified=[True, True, False], error_upper=[0.1, 0.4, 0.6],
                           locally_supported=[True, True, False], duration_s=3.0).plot()
    signs = [m.get_text().split("\n")[0] for m in disp.marks_[2::3]]
    assert signs == ["✓", "✓", "?"]  # an uncertified beat stays "?" whatever its support
    disp2 = ECGStripDisplay(signal=np.sin(np.arange(300) / 5), fs=fs, beat_sample=beats, y_true=[0, 1, 1],
                            y_pred=[0, 1, 1], certified=[True, True, True], error_upper=[0.1, 0.4, 0.6],
                            locally_supported=[True, False, True], duration_s=3.0).plot()
    assert [m.get_text().split("\n")[0] for m in disp2.marks_[2::3]] == ["✓", "(✓)", "✓"]
    with pytest.raises(ValueError, match="locally_supported"):
        ECGStripDisplay(signal=np.zeros(300), fs=fs, beat_sample=beats, y_true=[0, 1, 1], y_pred=[0, 1, 1],
                        certified=[True] * 3, error_upper=[0.1] * 3, locally_supported=[1, 0, 1])
    import matplotlib.pyplot as plt

    plt.close("all")


# --------------------------------------------------------------------------- wiring into the report
def _fake_result():
    """An AdaptiveResult-like object: two records, three rules; record "222" has no local S beat."""
    from types import SimpleNamespace

    from nwbound.experiments._ecg_inter import InterFit
    from nwbound.metrics import ec57_report

    recs = np.array(["100"] * 20 + ["222"] * 20)
    y = np.r_[np.zeros(18, int), np.ones(2, int), np.zeros(20, int)]
    argmax = y.copy()
    cert = np.ones(40, bool)
    ceil = np.full(40, 0.05)
    bal = np.r_[y[:20], np.ones(12, int), np.zeros(8, int)]  # 12 certified S decisions in 222, all wrong
    bal_ceil = np.r_[np.full(20, 0.05), np.full(20, 0.3)]
    weighted = np.where(cert, argmax, 1)
    fits = [InterFit("both", "localized", rule, 100, 0.0, 0.0, p, c, e, ec57_report(y, p, records=recs))
            for rule, p, c, e in (("argmax", argmax, cert, ceil), ("weighted", weighted, cert.copy(), ceil),
                                  ("balanced", bal, cert.copy(), bal_ceil))]
    res = SimpleNamespace(fits=fits, y_true=y, records=recs, samples=np.arange(40) * 300, checks={},
                          lipschitz=0.05)
    return res, np.array([0, 1, 0]), np.array(["100", "100", "222"])


@pytest.mark.parametrize("mode", ["require", "report"])
def test_certificate_report_tests_every_rule_and_guards_local_support(mode):
    from nwbound.experiments._ecg_adaptive_report import _certificate_report, _record_table, _strip_pairs

    res, local_y, local_r = _fake_result()
    before = {f.rule: f.certified.copy() for f in res.fits}
    certs = _certificate_report(res, local_y, local_r, mode)
    raw = {(r["rule"], r["record"]): r for r in certs.raw}
    # the headline rule comes first; argmax has the same certificates and is counted once
    assert certs.raw[0]["rule"] == "weighted" and raw["argmax", "222"]["same_as"] == "weighted"
    assert raw["balanced", "222"]["flagged"] and not raw["weighted", "222"]["flagged"]
    assert raw["balanced", "222"]["not_local"] == 12 and raw["balanced", "222"]["errors_not_local"] == 12
    assert raw["weighted", "100"]["not_local"] == 0
    guarded = {(r["rule"], r["record"]): r for r in certs.guarded}
    assert guarded["balanced", "222"]["certified"] == 8 and not guarded["balanced", "222"]["flagged"]
    after = {f.rule: f.certified for f in res.fits}
    expected = before["balanced"].copy()
    if mode == "require":
        expected[20:32] = False
    np.testing.assert_array_equal(after["balanced"], expected)
    np.testing.assert_array_equal(certs.raw_certified["balanced"], before["balanced"])
    rows = _record_table(res, certs)
    by = {r["record"]: r for r in rows}
    assert by["222"]["flagged_balanced"] and not by["222"]["flagged_weighted"] and by["222"]["not_local_balanced"] == 12
    assert ("balanced", "222", "flagged by the certificate test") in _strip_pairs(rows, certs)


def test_local_support_option():
    import argparse

    from nwbound.experiments.ecg_adaptive import add_adaptive_arguments

    p = argparse.ArgumentParser()
    add_adaptive_arguments(p)
    assert p.parse_args([]).local_support == "require"
    with pytest.raises(SystemExit):
        p.parse_args(["--local-support", "maybe"])


def test_certificate_report_rejects_an_unknown_mode():
    from nwbound.experiments._ecg_adaptive_report import _certificate_report

    res, local_y, local_r = _fake_result()
    with pytest.raises(ValueError, match="local-support"):
        _certificate_report(res, local_y, local_r, "sometimes")
