"""Baselines the NW classifier is compared with.

- :class:`CMEClassifier`: conditional-mean-embedding classifier with
  frequentist bounds (Baumann & Schön 2024), the paper's bounded baseline.
- :func:`make_logistic_regression`: standardised logistic regression, no bounds.
- :class:`SplitConformalSets`: split-conformal prediction sets (marginal
  coverage) for any fitted probabilistic classifier.
- :class:`CalibratedAcceptance`: a calibrated accept/review threshold on any
  doubt score (error among accepted ≤ α with probability ≥ 1 − δ; Learn-then-Test).
"""

from .cme import CMEClassifier
from .conformal import SplitConformalSets
from .logistic import make_logistic_regression
from .selective import CalibratedAcceptance, binomial_tail_pvalue, min_calibration_size

__all__ = [
    "CMEClassifier",
    "CalibratedAcceptance",
    "SplitConformalSets",
    "binomial_tail_pvalue",
    "make_logistic_regression",
    "min_calibration_size",
]
