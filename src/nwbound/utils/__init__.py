"""Utilities shared by the command line and the experiments, each defined once.

* :class:`UserError` — the error shown to a user as one line (exit status 2);
  :func:`install_hint`, how every message says to install an optional extra.
* argparse converters: :func:`positive_int`, :func:`nonnegative_int`,
  :func:`positive_float`, :func:`bandwidth_or_auto`.
* results: :func:`prepare_output_dir`, :func:`atomic_write_text`,
  :func:`write_table`, :func:`format_markdown` (files are 0644, written
  atomically, never clobbered without consent); :func:`spreadsheet_safe`, the
  one CSV-injection rule of every CSV writer.
* long runs: :func:`progress`, :func:`report`, :class:`StepLog` and
  :func:`add_resume_argument` (record each finished step, resume with ``--resume``).

Dependencies point one way: ``nwbound.cli`` → ``nwbound.experiments`` →
the library, and all of them may import this package, which imports
nothing of nwbound but :mod:`nwbound._validation`.
"""

from ._args import bandwidth_or_auto, nonnegative_int, positive_float, positive_int
from ._errors import UserError, as_user_error, install_hint
from ._output import (
    FILE_MODE, FORMULA_START_PATTERN, PLAIN_NUMBER_PATTERN, atomic_write_text, format_markdown, prepare_output_dir,
    spreadsheet_safe, write_table,
)
from ._progress import progress, report
from ._steps import MANIFEST_NAME, SUMMARY_NAME, StepLog, add_resume_argument

__all__ = [
    "FILE_MODE",
    "FORMULA_START_PATTERN",
    "PLAIN_NUMBER_PATTERN",
    "MANIFEST_NAME",
    "SUMMARY_NAME",
    "StepLog",
    "UserError",
    "add_resume_argument",
    "as_user_error",
    "atomic_write_text",
    "bandwidth_or_auto",
    "format_markdown",
    "install_hint",
    "nonnegative_int",
    "positive_float",
    "positive_int",
    "prepare_output_dir",
    "progress",
    "report",
    "spreadsheet_safe",
    "write_table",
]
