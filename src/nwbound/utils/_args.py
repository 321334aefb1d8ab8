"""argparse ``type=`` converters shared by every command (a usage error, exit 2).

They reuse the library's checks in :mod:`nwbound._validation` so one rule has
one wording; argparse prefixes the option name.
"""

from __future__ import annotations

import argparse

from .._validation import check_positive

__all__ = ["positive_int", "positive_float", "bandwidth_or_auto", "nonnegative_int"]


def _integer(text: str) -> int:
    try:
        return int(str(text).replace("_", ""))
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def positive_int(text: str) -> int:
    """Convert ``text`` to an integer ``>= 1``.

    Parameters
    ----------
    text : str
        The option's value as typed.

    Returns
    -------
    int

    Raises
    ------
    argparse.ArgumentTypeError
        For a non-integer or a value below 1 (argparse shows it as a usage error).

    Examples
    --------
    >>> from nwbound.utils import positive_int
    >>> positive_int("10_000")
    10000
    """
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def nonnegative_int(text: str) -> int:
    """Convert ``text`` to an integer ``>= 0`` (e.g. a random seed).

    Examples
    --------
    >>> from nwbound.utils import nonnegative_int
    >>> nonnegative_int("0")
    0
    """
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 0")
    return value


def positive_float(text: str) -> float:
    """Convert ``text`` to a finite number ``> 0``.

    Examples
    --------
    >>> from nwbound.utils import positive_float
    >>> positive_float("1e-3")
    0.001
    """
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    try:
        return float(check_positive(value, "the value"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number > 0") from None


def bandwidth_or_auto(text: str) -> float | str:
    """A bandwidth ``> 0`` or one of the words ``scale`` and ``auto``.

    Examples
    --------
    >>> from nwbound.utils import bandwidth_or_auto
    >>> bandwidth_or_auto("auto"), bandwidth_or_auto("scale"), bandwidth_or_auto("0.2")
    ('auto', 'scale', 0.2)
    """
    return text if text in ("auto", "scale") else positive_float(text)
