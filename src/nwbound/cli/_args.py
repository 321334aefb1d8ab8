"""argparse ``type=`` converters shared by every command (a clear usage error, exit 2)."""

from __future__ import annotations

import argparse
import math

__all__ = ["positive_int", "positive_float", "bandwidth_or_auto"]


def positive_int(text: str) -> int:
    """An integer ``>= 1``."""
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def positive_float(text: str) -> float:
    """A finite number ``> 0``."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number > 0")
    return value


def bandwidth_or_auto(text: str) -> float | str:
    """A bandwidth ``> 0`` or the word ``auto``."""
    return "auto" if text == "auto" else positive_float(text)
