"""Numbers the user guide states, recomputed (chernoff.md: ten agreeing neighbours)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier

pytestmark = pytest.mark.filterwarnings("ignore::nwbound.diagnostics.UselessBoundWarning")


def _ten_agreeing(n_classes: int, bound: str):
    """Ten class-0 points at the query, one point of every other class far away; boxcar, no bias."""
    X = np.vstack([np.zeros((10, 1)), 100.0 + 10.0 * np.arange(1, n_classes)[:, None]])
    y = np.r_[np.zeros(10, int), np.arange(1, n_classes)]
    clf = NadarayaWatsonClassifier(metric=None, kernel="boxcar", bandwidth=1.0, lipschitz=1e-9, bound=bound).fit(X, y)
    return clf.predict_interval([[0.0]])


@pytest.mark.parametrize("n_classes, hoeffding_lower, chernoff_lower",
                         [(2, 0.571, 0.692), (3, 0.511, 0.620), (4, 0.496, 0.602), (5, 0.485, 0.589)])
def test_ten_agreeing_neighbours(n_classes, hoeffding_lower, chernoff_lower):
    delta_prime = 0.05 / n_classes if n_classes >= 3 else 0.05
    formula = 1.0 - math.sqrt(10 * math.log(2 / delta_prime) / 2) / 10  # Hoeffding, κ = 10, Σa² = 10
    hoeffding = _ten_agreeing(n_classes, "hoeffding")
    assert hoeffding.lower[0, 0] == pytest.approx(formula, abs=1e-9)
    assert round(formula, 3) == hoeffding_lower  # the page's figure
    assert bool(hoeffding.certified[0]) == (n_classes < 4)  # "from 4 classes on Hoeffding cannot certify"
    chernoff = _ten_agreeing(n_classes, "chernoff")
    assert round(float(chernoff.lower[0, 0]), 3) == chernoff_lower
    assert chernoff.lower[0, 0] >= hoeffding.lower[0, 0] and chernoff.certified[0]
