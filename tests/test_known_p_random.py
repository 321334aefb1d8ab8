"""The default model on randomly drawn known-p fields (``benchmarks/known_p_random.py``).

The fields are drawn from their numbers, so a test names the field it runs; the script is imported
(one copy of the fields and of the scoring). The guarantee is per query: a miss rate ≤ δ = 5 %
over the queries, and no region of them where misses gather (here: the tenth where p is steepest).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

_SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "known_p_random.py"
if not _SCRIPT.exists():  # an installed package without the repository's benchmarks
    pytest.skip("benchmarks/known_p_random.py is not here", allow_module_level=True)
_spec = importlib.util.spec_from_file_location("known_p_random", _SCRIPT)
known_p_random = importlib.util.module_from_spec(_spec)
sys.modules["known_p_random"] = known_p_random  # its dataclass looks its module up there
_spec.loader.exec_module(known_p_random)

DELTA = 0.05


@pytest.mark.parametrize("family", sorted(known_p_random.FAMILIES))
def test_a_field_is_drawn_from_its_number(family):
    first, again = known_p_random.draw_field(7, family), known_p_random.draw_field(7, family)
    X = first.features(np.random.default_rng(0), 500)
    P = first.proba(X)
    assert np.array_equal(P, again.proba(X))
    assert P.shape == (500, first.n_classes)
    assert np.all(P >= 0) and np.allclose(P.sum(axis=1), 1.0)


@pytest.mark.parametrize(("family", "number", "n_rows", "laws", "p_last"), [
    ("wide", 7, 10000, ["normal", "uniform"], [0.18088844, 0.10757096, 0.35843459, 0.15701508, 0.05849649]),
    ("wide", 42, 3000, ["uniform", "ordinal", "normal", "normal", "ordinal"],
     [0.98248751, 0.950107, 0.96024671, 0.96841333, 0.96839057]),
    ("certifying", 7, 3000, ["uniform", "uniform", "t3"], [0.96589264, 0.62220548, 0.428321, 0.15154641, 0.98742104]),
    ("certifying", 42, 1000, ["uniform", "uniform"], [0.99581039, 0.15715463, 0.13113085, 0.00904912, 0.99909943])])
def test_the_first_two_families_draw_as_in_round_21(family, number, n_rows, laws, p_last):
    # round 22's families came in beside them: a field number still names round 21's field
    fld = known_p_random.draw_field(number, family)
    assert (fld.n_rows, list(fld.laws)) == (n_rows, laws)
    np.testing.assert_allclose(fld.proba(fld.features(np.random.default_rng(0), 5))[:, -1], p_last, atol=1e-8)


@pytest.mark.parametrize("number", [0, 2, 9])
def test_a_scales_field_is_its_wide_field_in_robust_units(number):
    wide, scaled = known_p_random.draw_field(number, "wide"), known_p_random.draw_field(number, "scales")
    assert np.any(np.abs(np.log10(scaled.mult)) > 20)
    X, Xs = (f.features(np.random.default_rng(1), 1000) for f in (wide, scaled))
    np.testing.assert_allclose(Xs, X * scaled.mult + scaled.shift)
    np.testing.assert_allclose(scaled.proba(Xs), wide.proba(X), atol=1e-7)
    np.testing.assert_allclose(known_p_random.steepness(scaled, Xs), known_p_random.steepness(wide, X), rtol=1e-3,
                               atol=1e-6)


@pytest.mark.parametrize("number", range(5))
def test_a_rare_field_has_rare_classes_of_1_to_5_percent(number):
    fld = known_p_random.draw_field(number, "rare")
    share = fld.proba(fld.features(np.random.default_rng(number), 20_000)).mean(axis=0)
    assert 3 <= fld.n_classes <= 5
    assert 0.009 <= share.min() <= 0.051


@pytest.mark.parametrize("number", range(5))
def test_a_mixed_field_switches_continuous_ridges_with_binary_features(number):
    fld = known_p_random.draw_field(number, "mixed")
    gated = [t for terms in fld.terms for t in terms if t[0] == "gated"]
    continuous = np.isin(fld.laws, ["normal", "uniform", "lognormal"])
    assert gated and all(fld.laws[t[1]] == "binary" and not np.any(t[3][~continuous]) for t in gated)


def test_a_gated_ridge_is_off_where_its_binary_feature_is_0():
    u = np.array([1.0, 0.0])
    fld = known_p_random.Field(0, 100, 2, ["normal", "binary"], np.zeros(2), np.ones(2),
                               [[("gated", 1, "sin", u, 2.0, 0.0, 1.5), ("levels", 1, np.array([0.0, 0.25]))]])
    X = np.array([[0.3, 0.0], [0.3, 1.0]])
    np.testing.assert_allclose(fld.proba(X)[:, 1], 1 / (1 + np.exp(-np.array([0.0, 1.5 * np.sin(0.6) + 0.25]))))


def test_steepness_matches_the_gradient_of_a_linear_logit():
    # one feature, p1 = expit(a·z): |dp1/dz| = a·p1·(1 − p1), and dz = dx/scale
    fld = known_p_random.Field(0, 100, 2, ["normal"], np.zeros(1), np.full(1, 2.0),
                               [[("linear", np.array([3.0]), 0.0)]])
    Q = np.array([[-1.0], [0.0], [0.5]])
    p1 = 1.0 / (1.0 + np.exp(-3.0 * Q[:, 0] / 2.0))
    np.testing.assert_allclose(known_p_random.steepness(fld, Q), 3.0 * p1 * (1 - p1), rtol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize(("number", "family"), [(42, "certifying"), (45, "certifying"), (52, "certifying"),
                                                (54, "certifying"), (57, "certifying"), (7, "wide")])
def test_random_fields_where_the_default_certifies_hold(number, family):
    # Fields where the default certifies 58-76 % of the queries, so that a miss could show.
    row = known_p_random.run(number, 0, family)
    assert "refused" not in row, row
    assert row["certified"] > 0.2, row
    assert row["miss"] <= DELTA, row
    assert row["miss_steep"] <= 2 * DELTA, row


@pytest.mark.slow
def test_a_field_at_extreme_scales_gives_its_wide_fields_result():
    # field 3: columns at 10^6 and 10^-23 and a binary one at 10^4 + {0, 0.01}. The space reads
    # robust units, so the scaled field is certified and missed exactly where its wide field is
    # (so did all 80 fits of fields 0-39, seeds 0-1, to the printed digit).
    scaled, wide = known_p_random.run(3, 0, "scales"), known_p_random.run(3, 0, "wide")
    assert scaled["certified"] > 0.15, scaled
    for key in ("miss", "miss_steep", "certified", "wrong"):
        assert scaled[key] == wide[key], (key, scaled, wide)


@pytest.mark.slow
def test_a_rare_class_in_a_small_region_holds():
    # rare field 88 (10 000 rows, 3 features, 4 classes): a class of 4 % whose p rises to 0.55-0.94 in
    # a radial region of 1.3 % of the mass (123 training rows, 65 of them that class). The score model
    # is logistic regression (s ~ 0.04 there), so p - s climbs up to 7.4 per std where L_r = 1.17.
    # Until round 22 the local scan did not run (7 600 scan rows x 4 classes x 92 directions exceeded
    # its budget) and 22 % of the region's queries missed; it now reads as many rows as fit
    # (local_scan_rows) and raises L_r to about 4.
    row = known_p_random.run(88, 0, "rare")
    assert row["n_rare_region"] >= 100, row
    assert row["miss_rare_region"] <= 2 * DELTA, row


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "rare field 60 at 30 000 rows: a class of 3 % whose p rises to 0.6-0.99 in a 3-D radial region of "
    "width 0.11 robust std (0.06 % of the mass; 24 training rows there, 18 of them that class, where "
    "its rate elsewhere is 3 %). The score model stays logistic regression (s ~ 0.02 there), so p - s "
    "climbs 13.9 per std where L_r = 1.42. The directional scan reads nothing; the local scan (on every "
    "scanned row since round 22) reads 0 (about 6 of its rows in the region, under one 64-row neighbourhood). 42 % of the region's "
    "queries miss (50 % at 3 000 and 10 000 rows): seeable in the labels, not seen."))
def test_a_rare_class_in_a_tiny_region_holds_where_its_rows_show_it():
    row = known_p_random.run(60, 0, "rare", n_rows=30_000)
    assert row["n_rare_region"] >= 10, row
    assert row["miss_rare_region"] <= 2 * DELTA, row
