"""Nearest-neighbour indexes for the localized classifier."""

from ._hnsw import HNSWIndex, hnsw_factory
from ._index import (
    AUTO_HNSW_RULE,
    AutoIndex,
    AutoRule,
    ExactIndex,
    NeighborIndex,
    TIE_RULE,
    available_indexes,
    make_index,
    register_index,
    tie_ordered,
)

# Registered even without hnswlib installed: HNSWIndex.fit raises an
# ImportError that says how to install it.
register_index("hnsw", hnsw_factory)

__all__ = [
    "AUTO_HNSW_RULE",
    "AutoIndex",
    "AutoRule",
    "ExactIndex",
    "HNSWIndex",
    "NeighborIndex",
    "TIE_RULE",
    "available_indexes",
    "hnsw_factory",
    "make_index",
    "register_index",
    "tie_ordered",
]
