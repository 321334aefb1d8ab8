"""Figures of the paper as sklearn-style Display objects.

matplotlib is an optional dependency (the ``plots`` extra, :func:`nwbound.utils.install_hint`); it is
imported only when something is drawn or saved, so importing this module is
cheap and works without it.

Displays: :class:`ReliabilityDisplay` (ECE), :class:`CumulativeRecallDisplay`,
:class:`RiskCoverageDisplay`,
:class:`IntervalDisplay`, :class:`BoundWidthDisplay`, :class:`TypeErrorDisplay`
and sklearn's :class:`ConfusionMatrixDisplay`. Each has ``from_arrays`` and/or
``from_interval`` constructors that compute and draw, and ``plot(ax=None)``
returning ``self`` with ``figure_`` and ``ax_``. :func:`save_figure` writes a
figure in several formats atomically, never overwriting by default;
:func:`pyplot` returns ``matplotlib.pyplot`` (imported on first use).
"""

from sklearn.metrics import ConfusionMatrixDisplay

from ._base import pyplot, save_figure
from ._ecg_strip import ECGStripDisplay
from ._displays import (
    BoundWidthDisplay,
    CumulativeRecallDisplay,
    IntervalDisplay,
    ReliabilityDisplay,
    RiskCoverageDisplay,
    TypeErrorDisplay,
)

__all__ = [
    "ECGStripDisplay",
    "BoundWidthDisplay",
    "ConfusionMatrixDisplay",
    "CumulativeRecallDisplay",
    "IntervalDisplay",
    "ReliabilityDisplay",
    "RiskCoverageDisplay",
    "TypeErrorDisplay",
    "pyplot",
    "save_figure",
]
