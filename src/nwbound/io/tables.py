"""CSV and Parquet tables in chunks: validated reading, atomic writing.

Reading never holds more than one chunk of the table (pandas
``read_csv(chunksize=…)`` / pyarrow ``ParquetFile.iter_batches``). Each chunk
is checked before use: numeric, finite feature columns (a text entry, a
missing value, NaN or ±inf is reported with its column and row), present
target and id columns, unique column names, at least one row. Output tables
are appended chunk by chunk to a temporary file in the target folder, which is
renamed into place only when complete; an existing file is never replaced
unless asked.

pandas and pyarrow are optional (``pip install nwbound[tables]``) and imported
on first use.

Row numbers in messages count data rows from 1 (the CSV header is not a row).
"""

from __future__ import annotations

import csv
import os
import re
import tempfile
import warnings
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

__all__ = [
    "TableError",
    "TableWriter",
    "check_columns",
    "feature_matrix",
    "iter_table_chunks",
    "label_array",
    "labels_like",
    "normalize_labels",
    "read_columns",
    "table_format",
]

_INSTALL_HINT = "Reading and writing tables needs pandas and pyarrow: pip install nwbound[tables]"
# pandas' default missing-value markers, applied only to feature/target columns
# so that id columns are kept exactly as given.
_NA_VALUES = [
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
]
_INT_TEXT = re.compile(r"^[+-]?\d+$")


class TableError(ValueError):
    """A table that cannot be used as given; the message names the file, column and row."""


def _pandas() -> Any:
    try:
        import pandas as pd
    except ImportError as exc:  # optional extra
        raise ImportError(_INSTALL_HINT) from exc
    return pd


def _parquet() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # optional extra
        raise ImportError(_INSTALL_HINT) from exc
    return pq


def table_format(path: str | os.PathLike) -> str:
    """``"csv"`` or ``"parquet"`` from the file suffix (``.csv``, ``.parquet``, ``.pq``)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    raise TableError(f"{path}: unknown table format {suffix or '(no suffix)'!r}; use a .csv or .parquet file.")


def read_columns(path: str | os.PathLike) -> list[str]:
    """Column names of a table, refusing duplicates and files without a header.

    Raises
    ------
    FileNotFoundError
        No such file.
    TableError
        Unreadable header, no columns, or duplicated column names.
    """
    path = Path(path)
    fmt = table_format(path)
    if not path.is_file():
        raise FileNotFoundError(f"Table {path} does not exist (or is not a file).")
    if fmt == "csv":
        # Parse the header row as data (header=None): pandas would otherwise
        # silently rename duplicates ("a.1") and unnamed columns ("Unnamed: 0").
        pd = _pandas()
        try:
            first = pd.read_csv(
                path, header=None, nrows=1, dtype=str, keep_default_na=False, index_col=False, encoding="utf-8-sig"
            )
        except pd.errors.EmptyDataError:
            raise TableError(f"{path} has no header row (it is empty); the first line must name the columns.") from None
        except (ValueError, UnicodeDecodeError, csv.Error, OverflowError) as exc:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise TableError(f"{path}: cannot read the CSV header ({message}); is it a UTF-8 CSV file?") from None
        names = [str(v) for v in first.iloc[0].tolist()] if len(first) else []
        if not names or all(not n.strip() for n in names):
            raise TableError(f"{path} has no header row (it is empty); the first line must name the columns.")
        unnamed = [i + 1 for i, n in enumerate(names) if not n.strip()]
        if unnamed:
            raise TableError(f"{path}: column(s) {unnamed} of the header have no name; every column needs one.")
    else:
        pq = _parquet()
        try:
            names = list(pq.ParquetFile(path).schema_arrow.names)
        except Exception as exc:  # pyarrow raises its own ArrowInvalid/OSError family
            raise TableError(f"{path} is not a readable Parquet file ({exc}).") from None
        if not names:
            raise TableError(f"{path} has no columns.")
    seen: set[str] = set()
    dupes = sorted({n for n in names if n in seen or seen.add(n)})
    if dupes:
        raise TableError(f"{path} has duplicated column names {dupes}; every column needs a unique name.")
    return names


def check_columns(columns: Sequence[str], required: Sequence[str], path: str | os.PathLike, role: str) -> None:
    """Refuse a table that lacks any of the ``required`` columns (``role``: what they are for)."""
    missing = [c for c in required if c not in columns]
    if missing:
        shown = ", ".join(repr(c) for c in columns[:20]) + (" …" if len(columns) > 20 else "")
        raise TableError(f"{path} has no {role} column(s) {missing}; its columns are {shown}.")


def iter_table_chunks(
    path: str | os.PathLike,
    chunksize: int = 100_000,
    *,
    columns: Sequence[str] | None = None,
    text_columns: Sequence[str] = (),
    verbatim_columns: Sequence[str] = (),
) -> Iterator[Any]:
    """Yield the table as pandas DataFrames of at most ``chunksize`` rows.

    Parameters
    ----------
    path : str or path-like
        A ``.csv`` or ``.parquet`` file.
    chunksize : int, default=100_000
    columns : sequence of str, optional
        Read only these columns (in this order); all by default.
    text_columns : sequence of str
        CSV columns to read as text (e.g. labels, so "007" stays "007").
    verbatim_columns : sequence of str
        CSV columns read as text with no missing-value markers (id columns:
        written back exactly as given).

    Raises
    ------
    TableError
        Unreadable file, duplicated or missing columns, or a malformed CSV
        line (e.g. a row with too many fields).
    """
    pd = _pandas()
    if isinstance(chunksize, bool) or not isinstance(chunksize, (int, np.integer)) or chunksize < 1:
        raise ValueError(f"chunksize must be a positive integer, got {chunksize!r}.")
    path = Path(path)
    names = read_columns(path)
    wanted = list(names if columns is None else columns)
    check_columns(names, wanted, path, "requested")
    if table_format(path) == "parquet":
        pq = _parquet()
        try:
            for batch in pq.ParquetFile(path).iter_batches(batch_size=int(chunksize), columns=wanted):
                yield batch.to_pandas()[wanted]
        except (OSError, ValueError, TypeError) as exc:  # pyarrow.ArrowInvalid is a ValueError
            raise TableError(f"{path} is not a readable Parquet file ({exc}).") from None
        return
    text = set(text_columns) | set(verbatim_columns)
    na_values = {c: _NA_VALUES for c in wanted if c not in set(verbatim_columns)}
    reader = None
    try:
        reader = pd.read_csv(
            path,
            chunksize=int(chunksize),
            # No usecols: with it pandas silently accepts rows with extra
            # fields; index_col=False stops it from turning such a first row's
            # extra field into an index.
            index_col=False,
            dtype={c: str for c in wanted if c in text},
            keep_default_na=False,
            na_values=na_values,
            encoding="utf-8-sig",
        )
        while True:
            # A first data row with extra fields only warns (and loses data):
            # make that an error like any other ragged row.
            with warnings.catch_warnings():
                warnings.simplefilter("error", pd.errors.ParserWarning)
                try:
                    chunk = next(reader)
                except StopIteration:
                    break
            if list(chunk.columns) != names:
                raise TableError(f"{path}: the CSV header could not be parsed consistently; check its quoting.")
            yield chunk[wanted]
    except (ValueError, UnicodeDecodeError, csv.Error, pd.errors.ParserError, pd.errors.ParserWarning, pd.errors.EmptyDataError,
            OverflowError) as exc:
        if isinstance(exc, TableError):
            raise
        if isinstance(exc, pd.errors.ParserWarning):
            message = "a data row has more fields than the header"
        else:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TableError(f"{path}: cannot parse the CSV file ({message}).") from None
    finally:
        if reader is not None:
            reader.close()


def _first_bad(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def feature_matrix(frame: Any, columns: Sequence[str], *, path: str | os.PathLike, first_row: int = 1) -> np.ndarray:
    """The feature columns of one chunk as a float64 (n, d) array, checked.

    Parameters
    ----------
    frame : pandas.DataFrame
        One chunk.
    columns : sequence of str
        Feature columns, in order.
    path : str or path-like
        For messages.
    first_row : int, default=1
        Row number of the chunk's first row in the file (1-based).

    Raises
    ------
    TableError
        Text in a numeric column, a missing value, NaN or ±inf — naming the
        column and the first offending row.
    """
    pd = _pandas()
    out = np.empty((len(frame), len(columns)), dtype=np.float64)
    for j, name in enumerate(columns):
        col = frame[name]
        if not pd.api.types.is_numeric_dtype(col.dtype):
            as_num = pd.to_numeric(col, errors="coerce")
            bad = as_num.isna().to_numpy() & col.notna().to_numpy()
            if bad.any():
                i = _first_bad(bad)
                raise TableError(
                    f"{path}: feature column {name!r} must be numeric, but row {first_row + i} holds "
                    f"{col.iloc[i]!r}. Fix the value, or list the column with --id-columns (or leave it out of --features)."
                )
            values = as_num.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            values = col.to_numpy(dtype=np.float64, na_value=np.nan)
        finite = np.isfinite(values)
        if not finite.all():
            i = _first_bad(~finite)
            what = "a missing value" if np.isnan(values[i]) else f"{values[i]!r}"
            raise TableError(
                f"{path}: feature column {name!r} has {what} at row {first_row + i}; every feature value "
                "must be a finite number (drop or impute such rows first)."
            )
        out[:, j] = values
    return out


def label_array(frame: Any, column: str, *, path: str | os.PathLike, first_row: int = 1) -> np.ndarray:
    """The target column of one chunk, checked for missing values (values as read)."""
    col = frame[column]
    missing = col.isna().to_numpy()
    if missing.any():
        raise TableError(f"{path}: target column {column!r} is missing a value at row {first_row + _first_bad(missing)}.")
    return col.to_numpy()


def normalize_labels(values: np.ndarray) -> np.ndarray:
    """Class labels read from a table → integers when every label is an integer, else strings.

    Text labels that all look like integers (``"0"``, ``"1"``) become int64,
    so a CSV target gives the same classes whatever the chunking.
    """
    values = np.asarray(values)
    if values.dtype.kind in "biu":
        return values.astype(np.int64) if values.dtype.kind != "b" else values
    if values.dtype.kind == "f":
        if np.all(np.isfinite(values)) and np.all(values == np.round(values)):
            return values.astype(np.int64)
        return values
    text = values.astype(str)
    if text.size and all(_INT_TEXT.match(t) for t in np.unique(text)):
        return text.astype(np.int64)
    return text


def labels_like(values: np.ndarray, classes: np.ndarray, *, column: str, path: str | os.PathLike, first_row: int = 1) -> np.ndarray:
    """Labels read from a table, converted to the type of a model's ``classes``.

    Raises
    ------
    TableError
        A label that is not one of ``classes`` (named, with its row).
    """
    values = np.asarray(values)
    classes = np.asarray(classes)
    if values.dtype.kind == "f" and np.all(np.isfinite(values)) and np.all(values == np.round(values)):
        values = values.astype(np.int64)  # 1.0 → 1, as normalize_labels does at fit time
    if classes.dtype.kind in "iu":
        text = values.astype(str)
        ok = np.array([bool(_INT_TEXT.match(t)) for t in np.unique(text)])
        if ok.all():
            converted = text.astype(np.int64) if values.dtype.kind not in "iu" else values.astype(np.int64)
        else:
            converted = None
    else:
        converted = None
    if converted is None:
        # Compare as text: str(label) matches how the classes print.
        lookup = np.asarray([str(c) for c in classes])
        order = np.argsort(lookup)
        sorted_lookup = lookup[order]
        text = values.astype(str)
        pos = np.minimum(np.searchsorted(sorted_lookup, text), sorted_lookup.shape[0] - 1)
        found = sorted_lookup[pos] == text
        if not found.all():
            raise _unseen_labels(path, column, text, ~found, first_row, [str(c) for c in classes])
        return classes[order[pos]]
    known = np.isin(converted, classes)
    if not known.all():
        raise _unseen_labels(path, column, converted, ~known, first_row, classes.tolist())
    return converted


def _unseen_labels(path, column: str, labels: np.ndarray, unseen_mask: np.ndarray, first_row: int, known: list) -> TableError:
    """The error for target labels a model never saw (up to 10 named, first row given)."""
    i = _first_bad(unseen_mask)
    unseen = sorted(set(labels[unseen_mask].tolist()))
    return TableError(
        f"{path}: target column {column!r} holds labels the model never saw in training: "
        f"{unseen[:10]}{' …' if len(unseen) > 10 else ''} (first at row {first_row + i}); the model "
        f"knows {known}."
    )


class TableWriter:
    """Write a CSV or Parquet table chunk by chunk, atomically.

    Chunks go to a temporary file in the target folder; :meth:`close` (or the
    end of a ``with`` block without error) renames it into place. On error
    the temporary file is removed and the target is left untouched.

    Parameters
    ----------
    path : str or path-like
        ``.csv`` or ``.parquet``.
    overwrite : bool, default=False
        Replace an existing file; otherwise an existing file is refused up front.
    """

    def __init__(self, path: str | os.PathLike, *, overwrite: bool = False) -> None:
        self.path = Path(path)
        self.format = table_format(self.path)
        self.overwrite = overwrite
        if self.path.is_dir():
            raise TableError(f"Output {self.path} is a folder; give a file name.")
        if self.path.exists() and not overwrite:
            raise FileExistsError(f"Output file {self.path} already exists; pass --overwrite (overwrite=True) or choose another name.")
        if not self.path.parent.is_dir():
            raise FileNotFoundError(f"Folder {self.path.parent} for the output file does not exist.")
        if self.format == "parquet":
            _parquet()
        else:
            _pandas()
        fd, self._tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        os.close(fd)
        os.chmod(self._tmp, 0o644)
        self._fh = open(self._tmp, "w", encoding="utf-8", newline="") if self.format == "csv" else None
        self._pq_writer = None
        self._schema = None
        self.n_rows = 0
        self._columns: list[str] | None = None

    def write(self, frame: Any) -> None:
        """Append one chunk (a pandas DataFrame; the same columns every time)."""
        if self._columns is None:
            self._columns = list(frame.columns)
        elif list(frame.columns) != self._columns:
            raise ValueError("Every chunk written to a table must have the same columns.")
        if self.format == "csv":
            frame.to_csv(self._fh, header=self.n_rows == 0 and self._fh.tell() == 0, index=False, lineterminator="\n")
        else:
            import pyarrow as pa

            pq = _parquet()
            table = pa.Table.from_pandas(frame, schema=self._schema, preserve_index=False)
            if self._pq_writer is None:
                self._schema = table.schema
                self._pq_writer = pq.ParquetWriter(self._tmp, self._schema)
            self._pq_writer.write_table(table)
        self.n_rows += len(frame)

    def close(self) -> Path:
        """Finish the file and move it into place."""
        if self.format == "csv":
            self._fh.close()
        elif self._pq_writer is not None:
            self._pq_writer.close()
        if self.overwrite:
            os.replace(self._tmp, self.path)
        else:
            try:  # no clobbering if the target appeared meanwhile
                os.link(self._tmp, self.path)
                os.unlink(self._tmp)
            except FileExistsError:
                self.abort()
                raise FileExistsError(f"Output file {self.path} appeared while writing; not replaced.") from None
            except OSError:
                os.replace(self._tmp, self.path)
        return self.path

    def abort(self) -> None:
        """Drop the temporary file; the target is untouched."""
        if self._fh is not None and not self._fh.closed:
            self._fh.close()
        if self._pq_writer is not None:
            try:
                self._pq_writer.close()
            except Exception:  # closing a half-written file may fail; it is deleted anyway
                pass
        Path(self._tmp).unlink(missing_ok=True)

    def __enter__(self) -> "TableWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
