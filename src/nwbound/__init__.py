"""nwbound: Nadaraya-Watson classifiers with frequentist bounds on class probabilities.

The public names load on first use (PEP 562), so ``import nwbound`` — and the
command line's ``--help`` / ``--version`` — do not import scikit-learn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_attributes

__version__ = "0.2.0"

# public name -> submodule that defines it
_LAZY = {
    "PredictionInterval": "._result",
    "config_context": "._config",
    "get_config": "._config",
    "set_config": "._config",
    "DyadicClassifier": ".estimators",
    "NadarayaWatsonClassifier": ".estimators",
    "restate_lipschitz": ".scaling",
    "restate_margin": ".scaling",
    "ContradictingModelsWarning": ".diagnostics",
    "UselessBoundWarning": ".diagnostics",
    "VacuousPredictionWarning": ".diagnostics",
}

__all__ = [
    "ContradictingModelsWarning",
    "DyadicClassifier",
    "NadarayaWatsonClassifier",
    "PredictionInterval",
    "UselessBoundWarning",
    "VacuousPredictionWarning",
    "config_context",
    "get_config",
    "restate_lipschitz",
    "restate_margin",
    "set_config",
    "__version__",
]

if TYPE_CHECKING:  # static analysers see the real names
    from ._config import config_context, get_config, set_config
    from ._result import PredictionInterval
    from .diagnostics import ContradictingModelsWarning, UselessBoundWarning, VacuousPredictionWarning
    from .estimators import DyadicClassifier, NadarayaWatsonClassifier
    from .scaling import restate_lipschitz, restate_margin


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())
