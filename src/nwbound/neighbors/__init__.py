"""Nearest-neighbour indexes for the localized classifier."""

from ._hnsw import HNSWIndex, hnsw_factory
from ._index import ExactIndex, NeighborIndex, available_indexes, make_index, register_index

# Registered even without hnswlib installed: HNSWIndex.fit raises an
# ImportError that says how to install it.
register_index("hnsw", hnsw_factory)

__all__ = ["ExactIndex", "HNSWIndex", "NeighborIndex", "available_indexes", "make_index", "register_index"]
