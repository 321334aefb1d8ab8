"""The classifiers: regular/localized Nadaraya-Watson and the dyadic grid, and their public
kernel statistics (what a bound needs to know about each query).

The public names load on first use (PEP 562), as in :mod:`nwbound`: the classifiers import
scikit-learn, and ``nwbound predict`` reads a model file's frozen arrays through this package's
scikit-learn-free modules (:mod:`nwbound.estimators._frozen`) without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

_LAZY = {
    "SCALE_NEIGHBORS": "._bandwidth",
    "bandwidth_grid_from_nearest": "._bandwidth",
    "bandwidth_grid_pilot": "._bandwidth",
    "default_bandwidth_grid": "._bandwidth",
    "pilot_nearest_distances": "._bandwidth",
    "resolve_ranking_fraction": "._bandwidth",
    "scale_bandwidth": "._bandwidth",
    "scale_bandwidth_from_nearest": "._bandwidth",
    "scale_neighbor_rank": "._bandwidth",
    "DyadicClassifier": "._dyadic",
    "NadarayaWatsonClassifier": "._nadaraya_watson",
    "POINT_ESTIMATES": "._point",
    "BandwidthRanking": "..engine",
    "KernelStatistics": "..engine",
    "merge_statistics": "..engine",
}

__all__ = [
    "SCALE_NEIGHBORS",
    "BandwidthRanking",
    "DyadicClassifier",
    "KernelStatistics",
    "NadarayaWatsonClassifier",
    "POINT_ESTIMATES",
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

if TYPE_CHECKING:  # static analysers see the real names
    from ..engine import BandwidthRanking, KernelStatistics, merge_statistics
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
    from ._point import POINT_ESTIMATES


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())
