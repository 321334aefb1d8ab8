"""nwbound: Nadaraya-Watson classifiers with frequentist bounds on class probabilities."""

from ._result import PredictionInterval
from .estimators import DyadicClassifier, NadarayaWatsonClassifier
from .scaling import restate_lipschitz, restate_margin

__version__ = "0.1.0"

__all__ = [
    "DyadicClassifier",
    "NadarayaWatsonClassifier",
    "PredictionInterval",
    "restate_lipschitz",
    "restate_margin",
    "__version__",
]
