"""Transition alias: the result writers live in :mod:`nwbound.utils` (remove once nothing imports this)."""

from ..utils import UserError as OutputError  # noqa: F401  (one error class for the CLI)
from ..utils import atomic_write_text, format_markdown, prepare_output_dir, write_table  # noqa: F401

__all__ = ["OutputError", "prepare_output_dir", "atomic_write_text", "write_table", "format_markdown"]
