"""Transition alias: progress reporting lives in :mod:`nwbound.utils` (remove once nothing imports this)."""

from ..utils import progress  # noqa: F401

__all__ = ["progress"]
