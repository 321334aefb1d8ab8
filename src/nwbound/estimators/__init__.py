"""The classifiers: regular/localized Nadaraya-Watson and the dyadic grid, and their public
kernel statistics (what a bound needs to know about each query)."""

from ._bandwidth import (
    SCALE_NEIGHBORS,
    bandwidth_grid_from_nearest,
    bandwidth_grid_pilot,
    default_bandwidth_grid,
    pilot_nearest_distances,
    resolve_ranking_fraction,
    scale_bandwidth,
    scale_bandwidth_from_nearest,
    scale_neighbor_rank,
)
from ._dyadic import DyadicClassifier
from ._nadaraya_watson import NadarayaWatsonClassifier
from ..engine import BandwidthRanking, KernelStatistics, merge_statistics

__all__ = [
    "SCALE_NEIGHBORS",
    "BandwidthRanking",
    "DyadicClassifier",
    "KernelStatistics",
    "NadarayaWatsonClassifier",
    "bandwidth_grid_from_nearest",
    "bandwidth_grid_pilot",
    "default_bandwidth_grid",
    "merge_statistics",
    "pilot_nearest_distances",
    "resolve_ranking_fraction",
    "scale_bandwidth",
    "scale_bandwidth_from_nearest",
    "scale_neighbor_rank",
]
