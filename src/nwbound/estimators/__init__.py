"""The classifiers: regular/localized Nadaraya-Watson and the dyadic grid."""

from ._dyadic import DyadicClassifier
from ._nadaraya_watson import NadarayaWatsonClassifier, default_bandwidth_grid

__all__ = ["DyadicClassifier", "NadarayaWatsonClassifier", "default_bandwidth_grid"]
