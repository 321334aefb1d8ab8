"""Progress bars for long runs (tqdm when installed and wanted, else silent)."""

from __future__ import annotations

from typing import Iterable, TypeVar

T = TypeVar("T")


def progress(iterable: Iterable[T], *, desc: str = "", total: int | None = None, quiet: bool = False) -> Iterable[T]:
    """Wrap ``iterable`` in a tqdm bar with ETA unless ``quiet``, tqdm is missing,
    or stderr is not a terminal (logs stay free of half-cleared bars)."""
    if quiet:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:  # optional extra
        return iterable
    return tqdm(iterable, desc=desc, total=total, leave=False, dynamic_ncols=True, disable=None)
