"""The defaults' guarantee on known-p fields built to break it (``known_p_suite.py --adversarial``).

A *miss* is a query whose true ``p_c`` lies outside ``[lower_c, upper_c]`` for some class; the
guarantee is a miss rate ≤ δ = 5 %. Each test fits a default classifier on one field of
``benchmarks/known_p_suite.py`` (imported, so that the fields and the scoring have one copy) and
scores 2 000 fresh queries.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SUITE = Path(__file__).resolve().parents[1] / "benchmarks" / "known_p_suite.py"
if not _SUITE.exists():  # an installed package without the repository's benchmarks
    pytest.skip("benchmarks/known_p_suite.py is not here", allow_module_level=True)
_spec = importlib.util.spec_from_file_location("known_p_suite", _SUITE)
known_p_suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(known_p_suite)

DELTA = 0.05


@pytest.mark.parametrize(
    ("name", "n", "kw"),
    [
        ("steep2", 3000, {}),  # a ramp of logit slope 20: most queries certified
        ("lattice3", 3000, {}),  # integer features, every row duplicated many times
        ("radial3", 3000, {}),  # p depends on the norm only
        ("logistic2", 150, {}),  # the fewest rows the defaults fit
        ("logistic2", 3000, {"weights": "p1"}),  # weights 1 + 5·p_1(x): a function of x only
        ("badscale5", 3000, {}),  # a constant column and one a million times the others
    ],
)
def test_adversarial_fields_that_hold(name, n, kw):
    # Fields where the default misses none today (most certify some queries, so a miss could show).
    row = known_p_suite.run(name, n, 0, **kw)
    assert "refused" not in row, row
    assert row["miss"] <= DELTA, row


def test_ripple_at_the_second_estimates_resolution_holds():
    # A ripple of period 0.3 std: the held-out rows' estimate of L_r (bandwidth ~0.5 std) missed p
    # on 6.8 % of queries here; the second estimate on every row the score model never saw
    # (bandwidth ~0.35 std) raises L_r above the noise of labels drawn from the scores: 2.8 %.
    row = known_p_suite.run("ripple2wide", 3000, 2)
    assert row["miss"] <= DELTA, row


@pytest.mark.parametrize(("name", "n", "model"), [("ripple2", 3000, "nw"), ("ripple2", 3000, "local"),
                                                ("ripple2fine", 20000, "nw")])
def test_ripple_below_the_isotropic_resolution_holds(name, n, model):
    # p = expit(12(x0 - 0.5) + 5 sin(2π x1 / T)) on [0, 1]², T = 0.05 or 0.02 (0.17 or 0.07 std):
    # a ramp the score model gets and a ripple finer than any isotropic estimate of L_r resolves
    # (bandwidth 0.34-0.5 std). Until the directional scan these missed 8-12 % and 23-30 % (strict
    # xfails): along x1 a window of 32-80 rows is narrower than half a period, so the scan sees the
    # ripple beyond noise and raises L_r from ~0.7 to 5-14 (the true slope along x1 is ~45).
    row = known_p_suite.run(name, n, 0, model=model)
    assert row["miss"] <= DELTA, row


def test_ripple_in_a_coordinate_plane_of_three_features_holds():
    # ripple_diag3: a ramp along x0, a ripple of period 0.05 along (x1 + x2)/√2 in 3 features. With
    # the axes and 16 random directions the scan came within 2° of it by chance only and the default
    # missed p on 9-13 % of queries; every coordinate plane 2° apart (267 directions) raises L_r.
    row = known_p_suite.run("ripple_diag3", 3000, 0)
    assert row["miss"] <= DELTA, row


# Unseen shapes (``known_p_suite.py --unseen``), added by a red team after the fields above and not
# tuned on. Those that hold and certify some queries, so that a miss could show:

@pytest.mark.parametrize(
    ("name", "n", "kw"),
    [
        ("extreme4", 3000, {}),  # p_1 = 0.02 everywhere: 41 % certified
        ("rarevary3", 5000, {}),  # a rare class at 0.2-3.8 %: every query certified
        ("ripple2small", 1000, {}),  # ripple2 at amplitude 1 in the logit, 1 000 rows: 55 % certified
        ("lognormal3", 3000, {}),  # log-normal features, p along their logs: 8 % certified
        ("coarseflip3", 3000, {}),  # a coarse sine whose sign a binary feature flips: 14 % certified
    ],
)
def test_unseen_fields_that_hold(name, n, kw):
    row = known_p_suite.run(name, n, 0, **kw)
    assert "refused" not in row, row
    assert row["certified"] > 0, row  # a miss could show
    assert row["miss"] <= DELTA, row


def test_chirp_holds():
    # chirp2: a ramp along x1, a chirp along x0 whose period falls to 0.05 at x0 = 1. It held and
    # certified 3 % (seed 0); since round 20 the local scan sees the chirp's fine end (a structure
    # thin along x0) beyond noise on this seed and raises L_r: none certified, none missed.
    row = known_p_suite.run("chirp2", 3000, 0)
    assert row["miss"] <= DELTA and row["miss_region"] <= DELTA, row


@pytest.mark.parametrize(("name", "n", "model"), [("flipcat3", 3000, "nw"), ("flipcat3", 3000, "local"),
                                                ("onehot_ripple6", 5000, "nw"), ("ordinal_ripple3", 3000, "nw")])
def test_ripple_switched_by_a_feature_with_few_values(name, n, model):
    # flipcat3: p = expit(12(x0 - 0.5) + 5(2·x2 - 1)·sin(2π x1 / 0.05)), x2 binary; onehot_ripple6: the
    # ripple's phase turns by 90° per level of a 4-category one-hot; ordinal_ripple3 by 72° per level
    # of an ordinal x2 in {0, ..., 4}. The default misses p on 29-40 % of queries (3 seeds, nw and
    # local; 9-43 % at 20 000 rows; 12-17 % on ordinal_ripple3), certifying 11-31 %. With the binary feature irrelevant the
    # same ripple raises L_r to 6-11 and nothing is missed; with a continuous switch (flipcont3,
    # tanh((x2 - 0.5)/0.05)) the scan's (x1, x2) plane raises L_r to 9. A feature with few values
    # has no plane (plane_features), and along x1 the rows of both levels are pooled: the mean
    # residual of a window is the average of +sin and -sin, about 0, so L_r stays at 0.3-0.7 where
    # the ripple's slope is about 45 per std. metric=None at the true L (160) misses none; Hoeffding
    # at the default's L misses as much (25 %): the constant, not the bound. Round 18: the scan also
    # takes the rows of each level of such a feature (level_subsets) under the same noise gate.
    row = known_p_suite.run(name, n, 0, model=model)
    assert row["miss"] <= DELTA, row


def test_ripple_switched_by_an_ordinal_feature_of_twelve_levels_holds():
    # ordinal12_flip3: flipcat3's ripple with its sign alternating over an ordinal x2 in {0, ..., 11}.
    # Before the pooled level scan the default missed p on 8.5-16 % of queries at 3 000 rows (3 seeds):
    # each level holds about 190 rows, too few to scan alone; pooled (pooled_levels), 0.0-2.4 %.
    row = known_p_suite.run("ordinal12_flip3", 3000, 0)
    assert row["miss"] <= DELTA, row


def test_ripple_switched_by_an_ordinal_feature_of_twenty_four_levels_holds():
    # ordinal24_flip3 at 5 000 rows: 14-21 % missed before the pooled scan, 0.7-15 % with it (seeds
    # 0-7; 15.0 % on this seed). The pooled scan's finest windows hold 4 rows, where the noise floor
    # (one label's variance, 1/4) is a sixth of a pair's noise: the aggregated sums, centred on N,
    # sat ~7 below 0 under noise alone, and the slope was read beyond noise plus that floor, which
    # took most of the ripple's share of d². Centred on E[z²] and read beyond the labels' own
    # variance in the level scans' windows below 8 rows, L_r rises to 1.3-3.0: 0.0-0.5 % missed (seeds 0-7).
    row = known_p_suite.run("ordinal24_flip3", 5000, 1)
    assert row["miss"] <= DELTA, row


def test_oblique_ripple_beside_a_rounded_feature_holds():
    # diag_rounded3 is ripple_diag3 (a ripple of period 0.05 along (x1 + x2)/√2, which holds: the
    # (x1, x2) plane raises L_r to ~6) with x2 recorded to 2 decimals, as measurements often are. It
    # has 101 distinct values where plane_features asks for 2·2280/17 = 268, so the scan takes only
    # the (x0, x1) plane (91 directions) and raises nothing: the default misses p on 10.5-16.5 % of
    # queries (3 seeds). The same scan with the (x1, x2) plane sees it far beyond noise (aggregated
    # z 67-101 against the draws' 10-12). Round 18: a feature with at least 32 values takes planes,
    # without the directions within 30° of its axis where its ties are long (tied_features).
    row = known_p_suite.run("diag_rounded3", 3000, 0)
    assert row["miss"] <= DELTA, row


@pytest.mark.parametrize(("name", "n", "seed"), [("ring2", 3000, 2), ("ring2thin", 3000, 0), ("parab2", 3000, 1),
                                               ("tworings2", 3000, 0), ("ringoff2", 2000, 1)])
def test_thin_curved_structure_in_two_features_holds_near_it(name, n, seed):
    # p = 0.1 + 0.8·exp(-(dist/w)²), dist the distance to a ring of radius 1 on [-1.5, 1.5]² (ring2,
    # w = 0.06; ring2thin, w = 0.03), to the parabola x1 = x0² (parab2, w = 0.05), to two rings of
    # radius 0.5 (tworings2, w = 0.05) or to a ring of radius 0.8 off centre (ringoff2, w = 0.08; the
    # last two round 20's own variants). The guarantee is per query; over all queries the default
    # missed p on 0.2-6.2 % (3 seeds), but on the 7-15 % of queries near the structure on 2-60 %,
    # certifying 93-99.6 % of all queries: every projection of every row blurs a curved structure,
    # and the isotropic estimates (0.34-0.5 std) are coarser than it, so L_r stayed at 0.4-3 where
    # the true slope is 10-20 per std. Round 20: the scan inside neighbourhoods of 64-256 rows
    # (LocalResidualScan), where the structure is nearly straight, raises L_r to 2-10.
    row = known_p_suite.run(name, n, seed)
    assert row["miss"] <= DELTA, row
    assert row["miss_region"] <= DELTA, row


@pytest.mark.parametrize(("name", "n", "seed"), [("shell3wide", 20000, 0), ("shell3wide", 20000, 1),
                                               ("twoshells3", 5000, 0)])
def test_thin_shell_in_three_features_holds_near_it(name, n, seed):
    # round 21's own three-feature variants: p = 0.9 on a shell of width 0.1 around a sphere of
    # radius 0.7 (shell3wide), or of width 0.06 around two spheres of radius 0.5 (twoshells3), 0.1
    # away from it. With no local scan in three features the default missed p on 15-58 % of the
    # queries near the shell, certifying 73-87 %; L_r stayed at 0.4-0.6 where p's steepest slope is
    # 6-10 per std. Round 21: the local scan in three features (LOCAL_SCAN_3D) raises it to 1.5-5.
    row = known_p_suite.run(name, n, seed)
    assert row["miss"] <= DELTA, row
    assert row["miss_region"] <= DELTA, row


@pytest.mark.slow
@pytest.mark.parametrize(("name", "seed"), [("ring3c2", 0), ("shell3c3", 0)])
def test_thin_structure_beside_a_third_class_holds_near_it(name, seed):
    # round 22's variants: ring2small's ring (ring3c2) or shell3wide's shell (shell3c3) beside a third
    # class at 15 %, 20 000 rows. Three residual columns on 8 000 scanned rows exceeded the local
    # scans' budget and none ran: 31.9 / 40.9 % (ring) and 31.1 / 24.8 % (shell) of the queries near
    # the structure missed on seeds 0 / 1. Now the budget is per residual column: 0.0 % on both seeds
    # but shell3c3's seed 1, 15.0 % (one centre per 64 rows in three features: whether one lands on
    # the shell is near chance at this size, as for two classes).
    row = known_p_suite.run(name, 20000, seed)
    assert row["miss"] <= DELTA, row
    assert row["miss_region"] <= DELTA, row


@pytest.mark.xfail(strict=True, reason="at 3 000 rows a neighbourhood of 64 rows is 0.65 std wide in three features, "
                   "where a sphere of radius 1.15 std bends by 3 times the shell's width: on seeds 1-3 the local scan reads 0-1 per "
                   "std in both cross-fitted models, where the true slope is 10")
def test_thin_shell_in_three_features_at_3000_rows_holds_near_it():
    # shell3: ring2's band around the unit sphere in 3 features. The default misses p on 3.4-3.6 %
    # of all queries and 36-41 % of those near the shell (seeds 1-3), certifying 5-21 %; round 21's
    # local scan in three features holds it from about 20 000 rows on some seeds only (5.5 % on seed
    # 0), and at 3 000 rows on seed 0, where one model's scan raised L_r and the other took it.
    row = known_p_suite.run("shell3", 3000, 1)
    assert row["miss"] <= DELTA, row
    assert row["miss_region"] <= DELTA, row


@pytest.mark.parametrize(("name", "n", "seed"), [("ring2small", 2000, 1), ("sineband2", 3000, 0), ("shell3wide", 3000, 1),
                                                ("shell3", 3000, 0)])
def test_a_raise_in_one_cross_fitted_model_holds_near_the_structure(name, n, seed):
    # One cross-fitted model's scans raised L_r, the other's did not, and the intersection kept the
    # narrower intervals: 44 %, 30 %, 31 % and 42 % of the queries near the structure missed until
    # round 21 (the other model now takes the raise: 0.0 %, 2.3 %, 0.0 %, 0.0 %).
    row = known_p_suite.run(name, n, seed)
    assert row["miss"] <= DELTA and row["miss_region"] <= DELTA, row


@pytest.mark.parametrize("seed", [0, 1])
def test_scores_slightly_off_outside_the_box_keep_their_certificates(seed):
    # bend2: p rises then falls along x0 and the queries spread 1.6 times beyond the training box;
    # what the scores miss varies by 0.24-0.41 per std. Single pairs of 4-row windows inside
    # neighbourhoods read 1.7 and 3.1 there (labels near p = 0 or 1 vary more than the scores say),
    # and once one model's raise became every model's the fit certified 0-14 %; from 16 rows, 16-45 %.
    row = known_p_suite.run("bend2", 3000, seed, query_spread=1.6)
    assert row["miss"] <= DELTA, row
    assert row["certified"] > 0.1, row
