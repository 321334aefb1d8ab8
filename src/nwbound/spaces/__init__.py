"""Learned spaces for the bounded classifiers (``metric=``): the split of the training set into a
metric share and an NW share, the map fitted on the metric share and standardised, and the
cross-fitted combination of several splits (user guide: "Bounds in a learned space")."""

from ._lipschitz import AUTO_CHECK_ROWS, AUTO_LIPSCHITZ_EXPONENTS, CrossFitReports, LipschitzAutoReport, check_subset, choose_lipschitz, chooses_lipschitz, lipschitz_units, pilot_lipschitz, two_constant_pilot
from ._auto import AUTO_CV_FOLDS, AUTO_CV_ROWS, MetricAutoReport, auto_candidates, choose_score_model, chosen_candidate, fit_score_model, resolution_sentence, scan_sentence, shared_raise_sentence
from ._frozen import FrozenScoreMap
from ._trees import model_proba
from ._crossfit import contradicting_rows, cross_fit_attributes, shared_residual_raise, divided_bounds, divided_delta, intersect_intervals, kappa_weighted_proba, move_into_box, project_into_box
from ._space import AUTO_RESIDUAL_ROWS, AUTO_RESOLUTION_GAIN, residual_rows, AUTO_BALANCE_LIMIT, AUTO_CROSS_FIT_MAX_ROWS, auto_cross_fits, check_cross_fit_metric, AUTO_MAX_ITER, AUTO_MAX_ROWS, INPUT_CLIP, LearnedSpace, column_units, in_column_units, metric_kind
from ._split import AUTO_CROSS_FIT_FOLDS, GroupsError, check_fraction, check_groups, check_map_classes, check_rows_split, cross_fit_layouts, fold_rows, nw_share_weights, split_rows, split_seed

__all__ = [
    "AUTO_CV_FOLDS",
    "AUTO_CV_ROWS",
    "MetricAutoReport",
    "auto_candidates",
    "choose_score_model",
    "chosen_candidate",
    "fit_score_model",
    "resolution_sentence",
    "scan_sentence",
    "shared_raise_sentence",
    "shared_residual_raise",
    "AUTO_CHECK_ROWS",
    "AUTO_LIPSCHITZ_EXPONENTS",
    "LipschitzAutoReport",
    "CrossFitReports",
    "check_subset",
    "choose_lipschitz",
    "chooses_lipschitz",
    "pilot_lipschitz",
    "lipschitz_units",
    "two_constant_pilot",
    "AUTO_BALANCE_LIMIT",
    "INPUT_CLIP",
    "column_units",
    "in_column_units",
    "AUTO_MAX_ITER",
    "AUTO_MAX_ROWS",
    "LearnedSpace",
    "FrozenScoreMap",
    "model_proba",
    "AUTO_RESIDUAL_ROWS",
    "AUTO_RESOLUTION_GAIN",
    "residual_rows",
    "AUTO_CROSS_FIT_FOLDS",
    "AUTO_CROSS_FIT_MAX_ROWS",
    "auto_cross_fits",
    "check_cross_fit_metric",
    "GroupsError",
    "check_fraction",
    "cross_fit_layouts",
    "fold_rows",
    "check_groups",
    "check_rows_split",
    "check_map_classes",
    "contradicting_rows",
    "cross_fit_attributes",
    "divided_bounds",
    "divided_delta",
    "intersect_intervals",
    "kappa_weighted_proba",
    "move_into_box",
    "project_into_box",
    "metric_kind",
    "split_rows",
    "split_seed",
    "nw_share_weights",
]
