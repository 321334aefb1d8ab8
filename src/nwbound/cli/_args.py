"""Transition alias: the argparse converters live in :mod:`nwbound.utils` (remove once nothing imports this)."""

from ..utils import bandwidth_or_auto, positive_float, positive_int  # noqa: F401

__all__ = ["positive_int", "positive_float", "bandwidth_or_auto"]
