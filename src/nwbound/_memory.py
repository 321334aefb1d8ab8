"""Sizing blocks of work to a memory budget (one rule for the CPU engine and the GPU path)."""

from __future__ import annotations

__all__ = ["block_rows"]


def block_rows(row_bytes: int, n_rows: int, working_memory: float | None = None) -> int:
    """Rows per block so one block's temporaries fit in ``working_memory`` MiB.

    ``working_memory=None`` uses scikit-learn's global ``working_memory``
    setting; the result is at least 1 and at most ``n_rows``.

    Examples
    --------
    >>> from nwbound._memory import block_rows
    >>> block_rows(row_bytes=2**20, n_rows=1000, working_memory=64)
    64
    """
    if working_memory is None:
        from sklearn import get_config

        working_memory = get_config()["working_memory"]
    return int(max(1, min(n_rows, (working_memory * 2**20) // max(1, row_bytes))))
