"""Baselines the NW classifier is compared with.

- :class:`CMEClassifier`: conditional-mean-embedding classifier with
  frequentist bounds (Baumann & Schön 2024), the paper's bounded baseline.
- :func:`make_logistic_regression`: standardised logistic regression, no bounds.
- :class:`SplitConformalSets`: split-conformal prediction sets (marginal
  coverage) for any fitted probabilistic classifier.
"""

from .cme import CMEClassifier
from .conformal import SplitConformalSets
from .logistic import make_logistic_regression

__all__ = ["CMEClassifier", "SplitConformalSets", "make_logistic_regression"]
