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
