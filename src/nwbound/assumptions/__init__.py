"""Choosing the assumption behind the bounds from data: overlap test, margin, Lipschitz constant.

The bounds of :class:`~nwbound.NadarayaWatsonClassifier` hold under one of two
assumptions, stated **in the metric the classifier computes distances in**
(the units of the features it sees):

* overlapping classes whose probabilities ``p_c`` are ``L``-Lipschitz, or
* classes separated by a margin ``γ``.

Neither can be certified from a finite sample: ``p_c`` is never observed, only
labels drawn from it. The helpers here give the evidence one can get, each as
a small result object that states the estimate, what it assumes and that it is
in the units of the features (restate it with :func:`nwbound.restate_lipschitz`
/ :func:`nwbound.restate_margin` after rescaling). Such a number is for a classifier
on those features, ``metric=None``: the default ``metric="auto"`` would read it in the
units of the space it learns (and warns at fit that it does):

* :func:`overlap_test` — the paper's test (appendix D): within-class vs global
  largest pairwise distance on a stratified sample;
* :func:`empirical_margin` — the smallest distance between differently
  labelled points (an *upper* limit on any valid margin);
* :func:`lipschitz_lower_bound` — appendix D's ``L ≥ P_t / sup‖y − y′‖``, a
  lower bound only;
* :func:`strongin_lipschitz` — Strongin's largest slope, on a pilot NW estimate
  (never on raw labels), times a safety factor;
* :func:`estimate_lipschitz` — pilot-Strongin in the units the classifier sees, on a bounded
  subsample: the pilot of ``lipschitz="auto"`` / ``--lipschitz auto``, whose held-out check then
  keeps the smallest L of a grid around it that other held-out rows do not reject;
* :func:`estimate_lipschitz_draws`, :class:`LipschitzDraws` — its value for many labellings of the same rows, the
  label-free work done once (the noise gate of ``metric="auto"``'s raise-only ``L_r``);
* :class:`ResidualScan`, :func:`scan_directions`, :func:`plane_features` and
  :func:`plane_directions_fit` — how fast the mean residual of a score
  model moves along label-free directions, in windows of many rows at several scales: the
  raise-only scan of ``metric="auto"``'s ``L_r`` (variation finer than any isotropic estimate sees);
  :class:`LocalResidualScan` and :func:`local_directions` — the same inside small neighbourhoods, in
  at most three features (a thin curved structure, blurred along every global direction);
* :func:`sensitivity_report` — how the bounds, the review flags and the
  accuracy of flagged and unflagged predictions move with ``L``.

The code lives in private modules, in the order above: ``_common`` (the result
objects and input checks), ``_overlap`` (overlap test, margin), ``_lipschitz``
and ``_sensitivity``; the checks of a chosen ``L`` come from
:mod:`nwbound.lipschitz_check`.
"""

from __future__ import annotations

from ..lipschitz_check import LipschitzCheck, LipschitzSelection, check_lipschitz, select_lipschitz
from ._common import UNITS_NOTE, LipschitzEstimate, MarginEstimate, OverlapReport
from ._local_scan import LOCAL_SCAN_MAX_FEATURES, LocalResidualScan, local_directions, local_scan_rows, local_scans
from ._lipschitz import LipschitzDraws, estimate_lipschitz, estimate_lipschitz_draws, lipschitz_lower_bound, strongin_lipschitz
from ._overlap import empirical_margin, overlap_test
from ._scan import SCAN_MIN_WINDOW, ResidualScan, level_subsets, plane_directions_fit, plane_features, pooled_level_features, pooled_levels, scan_directions, scan_min_window, tied_features
from ._sensitivity import sensitivity_report

__all__ = [
    "UNITS_NOTE",
    "LipschitzCheck",
    "LipschitzEstimate",
    "LipschitzSelection",
    "MarginEstimate",
    "OverlapReport",
    "ResidualScan",
    "LocalResidualScan",
    "LOCAL_SCAN_MAX_FEATURES",
    "local_directions",
    "local_scan_rows",
    "local_scans",
    "empirical_margin",
    "check_lipschitz",
    "estimate_lipschitz",
    "estimate_lipschitz_draws",
    "LipschitzDraws",
    "lipschitz_lower_bound",
    "overlap_test",
    "select_lipschitz",
    "plane_directions_fit",
    "plane_features",
    "tied_features",
    "level_subsets",
    "pooled_level_features",
    "pooled_levels",
    "scan_directions",
    "scan_min_window",
    "SCAN_MIN_WINDOW",
    "sensitivity_report",
    "strongin_lipschitz",
]
