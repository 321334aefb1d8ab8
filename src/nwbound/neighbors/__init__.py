"""Nearest-neighbour indexes for the localized classifier."""

from ._index import ExactIndex, NeighborIndex, available_indexes, make_index, register_index

__all__ = ["ExactIndex", "NeighborIndex", "available_indexes", "make_index", "register_index"]
