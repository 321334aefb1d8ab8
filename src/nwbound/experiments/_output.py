"""Results folders: refuse to clobber, write atomically, never delete a user's files."""

from __future__ import annotations

import csv
import os
import tempfile
from pathlib import Path
from typing import Iterable, Mapping, Sequence

__all__ = ["OutputError", "prepare_output_dir", "atomic_write_text", "write_table"]


class OutputError(Exception):
    """A results folder that cannot be used; the message says why and what to do."""


def prepare_output_dir(path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Create ``path`` (or accept it empty); refuse one that holds files unless ``overwrite``.

    With ``overwrite=True`` existing files are replaced only when a result of
    the same name is written; nothing is deleted.
    """
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise OutputError(f"Output path {out} exists and is not a folder; choose another --output.")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise OutputError(
            f"Output folder {out} already holds files; choose an empty or new folder, or pass "
            "--overwrite to replace results of the same name (other files are left alone)."
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-", delete=True)
        probe.close()
    except OSError as exc:
        raise OutputError(f"Cannot write to output folder {out}: {exc.strerror or exc}.") from exc
    return out


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file and an atomic rename."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
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


def write_table(rows: Sequence[Mapping[str, object]], stem: str | os.PathLike, *, title: str | None = None) -> tuple[Path, Path]:
    """Write ``rows`` as ``stem.csv`` and ``stem.md`` (a Markdown table); return both paths."""
    stem = Path(stem)
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    csv_path = atomic_write_text(stem.with_suffix(".csv"), buf.getvalue())
    md = [f"# {title}\n"] if title else []
    md.append("| " + " | ".join(columns) + " |")
    md.append("|" + "|".join("---" for _ in columns) + "|")
    md += ["| " + " | ".join(_format(row.get(c, "")) for c in columns) + " |" for row in rows]
    md_path = atomic_write_text(stem.with_suffix(".md"), "\n".join(md) + "\n")
    return csv_path, md_path


def format_markdown(rows: Iterable[Mapping[str, object]]) -> str:
    """A Markdown table of ``rows`` (for printing)."""
    rows = list(rows)
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(_format(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines)
