"""Results folders: refuse to clobber, write atomically (mode 0644), never delete a user's files."""

from __future__ import annotations

import csv
import io
import os
import re
import tempfile
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ._errors import UserError

# A cell starting like this runs as a formula in a spreadsheet (OWASP's CSV injection list) ...
FORMULA_START_PATTERN = r"^[=+\-@\t\r]"
# ... unless it is a plain number ("-1.5"), which is left as it is.
PLAIN_NUMBER_PATTERN = r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$"


def spreadsheet_safe(value: object) -> object:
    """``value`` made safe for a CSV cell: text that a spreadsheet would run as a formula gets a ``'``.

    Text starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return, and not a plain
    number, is prefixed with ``'`` (OWASP's advice against CSV injection); anything else (numbers,
    ``"-1.5"``, other text) is returned unchanged. The one rule every CSV writer of nwbound applies.

    Examples
    --------
    >>> from nwbound.utils import spreadsheet_safe
    >>> spreadsheet_safe("=1+1.csv"), spreadsheet_safe("-2"), spreadsheet_safe(-2.0), spreadsheet_safe("a")
    ("'=1+1.csv", '-2', -2.0, 'a')
    """
    if isinstance(value, str) and re.match(FORMULA_START_PATTERN, value) and not re.fullmatch(PLAIN_NUMBER_PATTERN, value):
        return "'" + value
    return value

__all__ = ["prepare_output_dir", "atomic_write_text", "write_table", "format_markdown", "FILE_MODE"]

FILE_MODE = 0o644
"""Permissions of every result file (``mkstemp`` alone would leave 0600)."""


def prepare_output_dir(path: str | os.PathLike, *, overwrite: bool = False, resumable: bool = False) -> Path:
    """Create ``path`` (or accept it empty); refuse one that holds files unless ``overwrite``.

    With ``overwrite=True`` existing files are replaced only when a result of
    the same name is written; nothing is deleted.

    Parameters
    ----------
    path : str or path-like
        The results folder (parents are created).
    overwrite : bool, default=False
        Accept a folder that already holds files.
    resumable : bool, default=False
        Whether the command has ``--resume`` (the experiments): only then does the
        message for a folder that holds files offer it.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    UserError
        The path is a file, the folder holds files and ``overwrite`` is false,
        or the folder is not writable; the message says what to do.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from nwbound.utils import prepare_output_dir
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     prepare_output_dir(pathlib.Path(tmp) / "run").is_dir()
    True
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (pathlib.Path(tmp) / "old.csv").write_text("x")
    ...     prepare_output_dir(tmp)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    nwbound.utils._errors.UserError: Output folder ... already holds files; choose an empty or new folder, or pass --overwrite to replace results of the same name (other files are left alone).
    """
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UserError(f"Output path {out} exists and is not a folder; choose another --output.")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        resume = "pass --resume to continue an interrupted run, " if resumable else ""
        raise UserError(
            f"Output folder {out} already holds files; choose an empty or new folder, {resume}or pass "
            "--overwrite to replace results of the same name (other files are left alone)."
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-", delete=True)
        probe.close()
    except OSError as exc:
        raise UserError(f"Cannot write to output folder {out}: {exc.strerror or exc}.") from exc
    return out


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` (mode 0644) through a temporary file and an atomic rename.

    A crash leaves either the old file or the new one, and the temporary file
    is removed on any error.

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from nwbound.utils import atomic_write_text
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     atomic_write_text(pathlib.Path(tmp) / "a.txt", "hi\\n").read_text()
    'hi\\n'
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _format(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _columns(rows: Sequence[Mapping[str, object]]) -> list[str]:
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    return list(columns)


def format_markdown(rows: Iterable[Mapping[str, object]]) -> str:
    """A Markdown table of ``rows`` (columns in order of first appearance; floats to 4 digits).

    Examples
    --------
    >>> from nwbound.utils import format_markdown
    >>> print(format_markdown([{"n": 10, "accuracy": 0.912345}]))
    | n | accuracy |
    |---|---|
    | 10 | 0.9123 |
    """
    rows = list(rows)
    columns = _columns(rows)
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(_format(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def write_table(rows: Sequence[Mapping[str, object]], stem: str | os.PathLike, *, title: str | None = None) -> tuple[Path, Path]:
    """Write ``rows`` as ``stem.csv`` and ``stem.md`` (a Markdown table), atomically.

    CSV cells and column names pass through :func:`spreadsheet_safe` (a file name like
    ``=1+1.csv`` cannot run as a formula); the Markdown keeps them verbatim.

    Parameters
    ----------
    rows : sequence of dict
        One dict per row; a key missing from a row is an empty cell.
    stem : str or path-like
        Target path without suffix.
    title : str, optional
        Heading of the Markdown file.

    Returns
    -------
    (csv_path, md_path)

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from nwbound.utils import write_table
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     csv_path, md_path = write_table([{"n": 1, "acc": 0.5}], pathlib.Path(tmp) / "t")
    ...     csv_path.read_text()
    'n,acc\\n1,0.5\\n'
    """
    stem = Path(stem)
    columns = _columns(rows)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([spreadsheet_safe(str(c)) for c in columns])
    writer.writerows([spreadsheet_safe(row.get(c, "")) for c in columns] for row in rows)
    csv_path = atomic_write_text(stem.with_name(stem.name + ".csv"), buf.getvalue())
    md = ([f"# {title}\n"] if title else []) + [format_markdown(rows)]
    md_path = atomic_write_text(stem.with_name(stem.name + ".md"), "\n".join(md) + "\n")
    return csv_path, md_path
