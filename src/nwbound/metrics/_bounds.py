"""Metrics that use the bounds: error flagging, Type I/II errors, coverage.

Ranking by uncertainty follows the paper's figure 3e (cumulative recall);
Type I/II errors follow its appendix E (after Nnyaba et al., 2024).

This module gathers them from private modules, one a topic: ``_ranking``
(ranking by uncertainty), ``_intervals`` (interval-based scores), ``_review``
(review queues side by side) and ``_coverage`` (coverage where the true
probabilities are known).
"""

from __future__ import annotations

from ._coverage import clopper_pearson, violation_rate
from ._intervals import (
    BoundWidthTable,
    TypeErrorTable,
    bound_width_by_confidence,
    conservative_accuracy,
    review_flags,
    type_errors,
    uncertainty_from_interval,
)
from ._ranking import cumulative_recall_curve, errors_caught_at, risk_coverage_curve
from ._review import review_comparison, review_summary

__all__ = [
    "BoundWidthTable",
    "TypeErrorTable",
    "bound_width_by_confidence",
    "clopper_pearson",
    "conservative_accuracy",
    "cumulative_recall_curve",
    "errors_caught_at",
    "review_comparison",
    "review_flags",
    "review_summary",
    "risk_coverage_curve",
    "type_errors",
    "uncertainty_from_interval",
    "violation_rate",
]
