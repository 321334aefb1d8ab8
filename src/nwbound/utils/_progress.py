"""Progress reporting for long runs: tqdm bars on a terminal, one line per finished step in logs."""

from __future__ import annotations

import sys
from typing import Iterable, TypeVar

__all__ = ["progress", "report"]

T = TypeVar("T")


def progress(iterable: Iterable[T], *, desc: str = "", total: int | None = None, quiet: bool = False) -> Iterable[T]:
    """Wrap ``iterable`` in a progress bar with an ETA.

    The bar appears only when tqdm is installed, ``quiet`` is false and stderr
    is a terminal, so logs stay free of half-cleared bars (use :func:`report`
    for lines that belong in a log).

    Parameters
    ----------
    iterable : iterable
    desc : str, default=""
        Label in front of the bar.
    total : int, optional
        Length, when ``iterable`` has none.
    quiet : bool, default=False
        Never show a bar.

    Returns
    -------
    iterable
        Yields the same items as ``iterable``.

    Examples
    --------
    >>> from nwbound.utils import progress
    >>> list(progress(range(3), desc="sizes", quiet=True))
    [0, 1, 2]
    """
    if quiet:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:  # optional extra
        return iterable
    return tqdm(iterable, desc=desc, total=total, leave=False, dynamic_ncols=True, disable=None)


def report(message: str, *, quiet: bool = False) -> None:
    """Print one progress line to stderr (flushed at once), unless ``quiet``.

    Examples
    --------
    >>> from nwbound.utils import report
    >>> report("mnist: step n=1000 done in 3.2 s", quiet=True)
    """
    if not quiet:
        print(message, file=sys.stderr, flush=True)
