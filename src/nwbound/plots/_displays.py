"""Display objects for the paper's figures, in the style of sklearn's Displays.

Each class is built from computed arrays (``from_arrays`` / ``from_interval``
compute them with :mod:`nwbound.metrics` and draw at once); ``plot(ax=None)``
draws again on any Axes and returns ``self`` with ``figure_`` and ``ax_`` set
and the created artists stored in attributes ending in ``_``.

This module gathers them from private modules, one a figure: ``_reliability``,
``_curves`` (cumulative recall, risk-coverage), ``_intervals`` and ``_tables``
(bound widths, Type I/II errors).
"""

from __future__ import annotations

from ._curves import CumulativeRecallDisplay, RiskCoverageDisplay
from ._intervals import IntervalDisplay
from ._reliability import ReliabilityDisplay
from ._tables import BoundWidthDisplay, TypeErrorDisplay

__all__ = [
    "BoundWidthDisplay",
    "CumulativeRecallDisplay",
    "IntervalDisplay",
    "ReliabilityDisplay",
    "RiskCoverageDisplay",
    "TypeErrorDisplay",
]
