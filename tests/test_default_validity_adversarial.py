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


@pytest.mark.parametrize(("name", "n", "model"), [("ripple2", 3000, "nw"), ("ripple2", 3000, "local"),
                                                ("ripple2fine", 20000, "nw")])
@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="lipschitz='auto' estimates L_r (what the scores miss) on the held-out rows (600-900 at 3 000 training "
    "rows, 4 000 at 20 000), whose pilot bandwidth (0.3-0.5 std) cannot "
    "resolve a ripple of period 0.17 std (0.07 std at 20 000 rows); L_r comes out 0.7-0.9 where p's slope "
    "along it is ~45 (~110), the check does not raise L, and 14-30 % of queries miss. Needs a change in src/ "
    "(not this helper's).",
)
def test_ripple_below_the_check_rows_resolution(name, n, model):
    # p = expit(12(x0 - 0.5) + 5 sin(2π x1 / T)) on [0, 1]², T = 0.05 or 0.02: Lipschitz (L ≈ 157
    # or 393), a ramp the score model gets and a ripple finer than the held-out rows see. With
    # metric=None and the true L nothing misses (and nothing is certified); bound="hoeffding" and
    # bandwidth="scale" miss too; L_r forced to 5 (7× its estimate) misses 0.1 %.
    row = known_p_suite.run(name, n, 0, model=model)
    assert row["miss"] <= DELTA, row
