"""Metrics for classifiers with bounds on their class probabilities.

Every function is pure and takes plain arrays (labels plus ``classes`` to map
them to probability columns, or integer column indices), so it scores any
model; functions about bounds also accept a :class:`nwbound.PredictionInterval`
(or any object with ``proba``, ``lower``, ``upper``, ``epsilon``, ``vacuous``).

Point predictions
    :func:`accuracy`, :func:`weighted_precision_recall`,
    :func:`per_class_precision_recall`
Calibration
    :func:`expected_calibration_error` (+ :class:`ReliabilityTable`)
Flagging uncertain predictions
    :func:`uncertainty_from_interval`, :func:`cumulative_recall_curve`,
    :func:`errors_caught_at`, :func:`risk_coverage_curve`, :func:`review_flags`
Bounds
    :func:`type_errors` (+ :class:`TypeErrorTable`), :func:`conservative_accuracy`,
    :func:`bound_width_by_confidence`, :func:`violation_rate`,
    :func:`clopper_pearson`, :func:`class_certificates` (+ :class:`ClassCertificateTable`: each
    class's rows certified as another class, against what the bound allows)
Review queues
    :func:`review_summary`, :func:`review_comparison` (the certificate against
    ranking scores, split-conformal sets and calibrated thresholds)
Heartbeat classification (ANSI/AAMI EC57)
    :func:`ec57_report` (+ :class:`EC57Report`), :func:`bayes_decision`
    (+ :class:`BayesDecision`), :data:`AAMI_CLASS_NAMES`
"""

from ._bounds import (
    BoundWidthTable,
    TypeErrorTable,
    bound_width_by_confidence,
    clopper_pearson,
    conservative_accuracy,
    cumulative_recall_curve,
    errors_caught_at,
    review_comparison,
    review_flags,
    review_summary,
    risk_coverage_curve,
    type_errors,
    uncertainty_from_interval,
    violation_rate,
)
from ._classes import ClassCertificateTable, class_certificates
from ._aami import AAMI_CLASS_NAMES, BayesDecision, EC57Report, bayes_decision, ec57_report
from ._calibration import ReliabilityTable, expected_calibration_error
from ._classification import accuracy, per_class_precision_recall, weighted_precision_recall

__all__ = [
    "AAMI_CLASS_NAMES",
    "BayesDecision",
    "BoundWidthTable",
    "ClassCertificateTable",
    "EC57Report",
    "ReliabilityTable",
    "TypeErrorTable",
    "accuracy",
    "bayes_decision",
    "bound_width_by_confidence",
    "class_certificates",
    "clopper_pearson",
    "conservative_accuracy",
    "cumulative_recall_curve",
    "ec57_report",
    "errors_caught_at",
    "expected_calibration_error",
    "per_class_precision_recall",
    "review_comparison",
    "review_flags",
    "review_summary",
    "risk_coverage_curve",
    "type_errors",
    "uncertainty_from_interval",
    "violation_rate",
    "weighted_precision_recall",
]
