"""CSV and Parquet tables in chunks: validated reading, atomic writing.

Reading never holds more than one chunk of the table (pandas
``read_csv(chunksize=…)`` / pyarrow ``ParquetFile.iter_batches``). Each chunk
is checked before use: numeric, finite feature columns (a text entry, a
missing value, NaN or ±inf is reported with its column and row), present
target and id columns, unique column names, at least one row. Output tables
are appended chunk by chunk to a temporary file in the target folder, which is
renamed into place only when complete; an existing file is never replaced
unless asked.

CSV output is spreadsheet-safe by default: a text cell (or column name) that
starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is written
with a leading ``'`` so that a spreadsheet shows it as text instead of running
it as a formula (CSV/formula injection). Numeric columns are never changed and
neither is a text cell that is a plain number (``-1.5`` stays ``-1.5``).
``TableWriter(..., csv_escape=False)`` (``--no-csv-escape``) writes every cell
verbatim. Parquet output is never escaped.

Temporary files are named ``.<target name>.nwbound-<random>.tmp`` and always
removed when a write fails (even when closing the half-written file fails,
e.g. on a full disk). A process that is killed outright cannot remove its
temporary file; such leftovers are reported (never deleted: another run may
still be writing them).

pandas and pyarrow are optional (the ``tables`` extra) and imported
on first use.

Row numbers in messages count data rows from 1 (the CSV header is not a row).
"""

from __future__ import annotations

import csv
import glob
import os
import re
import tempfile
import warnings
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from ..utils import FORMULA_START_PATTERN, PLAIN_NUMBER_PATTERN, spreadsheet_safe

__all__ = [
    "TableError",
    "TableWriter",
    "check_columns",
    "escape_spreadsheet_cells",
    "feature_matrix",
    "iter_table_chunks",
    "label_array",
    "labels_like",
    "normalize_labels",
    "read_columns",
    "stale_temporaries",
    "table_format",
]



def _install_hint() -> str:
    from ..utils import install_hint

    return f"Reading and writing tables needs pandas and pyarrow: {install_hint('tables')}"

# pandas' default missing-value markers, applied only to feature/target columns
# so that id columns are kept exactly as given.
_NA_VALUES = [
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
]
_INT_TEXT = re.compile(r"^[+-]?\d+$")
# Cells a spreadsheet would evaluate; a plain number is harmless and kept.
# The CSV-injection rule of nwbound.utils.spreadsheet_safe, vectorised here for frames.
_FORMULA_START = FORMULA_START_PATTERN
_PLAIN_NUMBER = PLAIN_NUMBER_PATTERN
_TMP_TAG = ".nwbound-"


class TableError(ValueError):
    """A table that cannot be used as given; the message names the file, column and row.

    A subclass of :class:`ValueError`, so callers that catch bad input in
    general also catch it.

    Examples
    --------
    >>> from nwbound.io.tables import TableError, table_format
    >>> try:
    ...     table_format("data.xlsx")
    ... except TableError as exc:
    ...     print(isinstance(exc, ValueError), exc)
    True data.xlsx: unknown table format '.xlsx'; use a .csv or .parquet file.
    """


def _pandas() -> Any:
    try:
        import pandas as pd
    except ImportError as exc:  # optional extra
        raise ImportError(_install_hint()) from exc
    return pd


def _parquet() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # optional extra
        raise ImportError(_install_hint()) from exc
    return pq


def table_format(path: str | os.PathLike) -> str:
    """``"csv"`` or ``"parquet"`` from the file suffix (``.csv``, ``.parquet``, ``.pq``).

    Parameters
    ----------
    path : str or path-like
        The table's file name (it need not exist).

    Returns
    -------
    {"csv", "parquet"}

    Raises
    ------
    TableError
        Any other suffix.

    Examples
    --------
    >>> from nwbound.io.tables import table_format
    >>> table_format("train.CSV"), table_format("test.pq")
    ('csv', 'parquet')
    """
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return "csv"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    raise TableError(f"{path}: unknown table format {suffix or '(no suffix)'!r}; use a .csv or .parquet file.")


def read_columns(path: str | os.PathLike) -> list[str]:
    """Column names of a table, refusing duplicates and files without a header.

    Parameters
    ----------
    path : str or path-like
        A ``.csv`` (UTF-8, header row first) or ``.parquet`` file.

    Returns
    -------
    list of str
        The column names, in file order.

    Raises
    ------
    FileNotFoundError
        No such file.
    TableError
        Unreadable header, no columns, or duplicated column names.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from nwbound.io.tables import read_columns
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     good, bad = Path(tmp, "good.csv"), Path(tmp, "bad.csv")
    ...     _ = good.write_text("x1,x2,label\\n0.5,1.0,a\\n")
    ...     _ = bad.write_text("x,x\\n1,2\\n")
    ...     print(read_columns(good))
    ...     try:
    ...         read_columns(bad)
    ...     except ValueError as exc:
    ...         print(str(exc).replace(str(bad), "bad.csv"))
    ['x1', 'x2', 'label']
    bad.csv has duplicated column names ['x']; every column needs a unique name.
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
    """Refuse a table that lacks any of the ``required`` columns (``role``: what they are for).

    Parameters
    ----------
    columns : sequence of str
        The table's columns (as from :func:`read_columns`).
    required : sequence of str
        The columns that must be present.
    path : str or path-like
        The table's file, for the message.
    role : str
        What the columns are for (``"feature"``, ``"target"``, …), for the message.

    Raises
    ------
    TableError
        If any required column is missing; the message lists them and the
        table's columns.

    Examples
    --------
    >>> from nwbound.io.tables import check_columns
    >>> check_columns(["x1", "x2", "y"], ["x1", "y"], "train.csv", "feature")
    >>> check_columns(["x1", "x2"], ["y"], "train.csv", "target")
    Traceback (most recent call last):
    ...
    nwbound.io.tables.TableError: train.csv has no target column(s) ['y']; its columns are 'x1', 'x2'.
    """
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
    ValueError
        If ``chunksize`` is not a positive integer.

    Yields
    ------
    pandas.DataFrame
        The next at most ``chunksize`` rows, with the ``columns`` requested.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from nwbound.io.tables import iter_table_chunks
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp, "t.csv")
    ...     _ = path.write_text("id,x,label\\n007,0.5,a\\n008,1.5,b\\n009,2.5,a\\n")
    ...     chunks = list(iter_table_chunks(path, 2, columns=["x", "id"], verbatim_columns=["id"]))
    >>> [len(c) for c in chunks], chunks[0]["id"].tolist(), chunks[1]["x"].tolist()
    ([2, 1], ['007', '008'], [2.5])
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

    Returns
    -------
    ndarray of shape (len(frame), len(columns)), dtype float64

    Examples
    --------
    >>> import pandas as pd
    >>> from nwbound.io.tables import feature_matrix
    >>> frame = pd.DataFrame({"a": [1, 2], "b": ["0.5", "1e3"], "c": [1.0, None]})
    >>> feature_matrix(frame, ["b", "a"], path="t.csv").tolist()
    [[0.5, 1.0], [1000.0, 2.0]]
    >>> feature_matrix(frame, ["c"], path="t.csv", first_row=10)
    Traceback (most recent call last):
    ...
    nwbound.io.tables.TableError: t.csv: feature column 'c' has a missing value at row 11; every feature value must be a finite number (drop or impute such rows first).
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
            what = "a missing value" if np.isnan(values[i]) else f"{float(values[i])!r}"
            raise TableError(
                f"{path}: feature column {name!r} has {what} at row {first_row + i}; every feature value "
                "must be a finite number (drop or impute such rows first)."
            )
        out[:, j] = values
    return out


def label_array(frame: Any, column: str, *, path: str | os.PathLike, first_row: int = 1) -> np.ndarray:
    """The target column of one chunk, checked for missing values (values as read).

    Parameters
    ----------
    frame : pandas.DataFrame
        One chunk.
    column : str
        The target column.
    path : str or path-like
        For messages.
    first_row : int, default=1
        Row number of the chunk's first row in the file (1-based).

    Returns
    -------
    ndarray of shape (len(frame),)
        The labels as read (see :func:`normalize_labels` to convert them).

    Raises
    ------
    TableError
        A missing label, naming its row.

    Examples
    --------
    >>> import pandas as pd
    >>> from nwbound.io.tables import label_array
    >>> label_array(pd.DataFrame({"y": ["a", "b"]}), "y", path="t.csv").tolist()
    ['a', 'b']
    >>> label_array(pd.DataFrame({"y": ["a", None]}), "y", path="t.csv", first_row=5)
    Traceback (most recent call last):
    ...
    nwbound.io.tables.TableError: t.csv: target column 'y' is missing a value at row 6.
    """
    col = frame[column]
    missing = col.isna().to_numpy()
    if missing.any():
        raise TableError(f"{path}: target column {column!r} is missing a value at row {first_row + _first_bad(missing)}.")
    return col.to_numpy()


def _int_round_trip(text: np.ndarray) -> bool:
    """True when every string is exactly ``str(int(s))`` (so ``"01"``, ``"+1"``, ``"-0"`` are not)."""
    unique = np.unique(text)
    return bool(unique.size) and all(_INT_TEXT.match(t) and str(int(t)) == t for t in unique)


def normalize_labels(values: np.ndarray) -> np.ndarray:
    """Class labels read from a table → integers only when that loses nothing, else the text as given.

    Text labels become int64 only when *every* label round-trips through the
    integer parse (``str(int(s)) == s``: ``"0"``, ``"12"``, ``"-3"``); one
    label such as ``"01"`` or ``"+1"`` keeps them all as text, so ``"01"``,
    ``"1"`` and ``"2"`` stay three classes. The result does not depend on the
    chunking (call it on all labels at once).

    Parameters
    ----------
    values : ndarray of shape (n_samples,)
        Labels as read from a table (text, integer, float or bool).

    Returns
    -------
    ndarray of shape (n_samples,)
        int64 labels, or the values unchanged (text as ``str``).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.io.tables import normalize_labels
    >>> normalize_labels(np.array(["0", "1", "12"])).tolist()
    [0, 1, 12]
    >>> normalize_labels(np.array(["01", "1", "2"])).tolist()
    ['01', '1', '2']
    """
    values = np.asarray(values)
    if values.dtype.kind in "biu":
        return values.astype(np.int64) if values.dtype.kind != "b" else values
    if values.dtype.kind == "f":
        if np.all(np.isfinite(values)) and np.all(values == np.round(values)):
            return values.astype(np.int64)
        return values
    text = values.astype(str)
    if _int_round_trip(text):
        return text.astype(np.int64)
    return text


def labels_like(values: np.ndarray, classes: np.ndarray, *, column: str, path: str | os.PathLike, first_row: int = 1) -> np.ndarray:
    """Labels read from a table, converted to the type of a model's ``classes``.

    Integer classes accept integer, integral float and integer-text labels
    (by the rule of :func:`normalize_labels`: ``"01"`` is not 1); other
    classes are matched by their text.

    Parameters
    ----------
    values : ndarray of shape (n_samples,)
        Labels as read from a table.
    classes : ndarray of shape (n_classes,)
        The model's ``classes_``.
    column : str
        The target column, for messages.
    path : str or path-like
        For messages.
    first_row : int, default=1
        Row number of the first label in the file (1-based).

    Returns
    -------
    ndarray of shape (n_samples,)
        The labels as elements of ``classes``.

    Raises
    ------
    TableError
        A label that is not one of ``classes`` (named, with its row).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.io.tables import labels_like
    >>> labels_like(np.array(["1", "0"]), np.array([0, 1]), column="y", path="t.csv").tolist()
    [1, 0]
    >>> labels_like(np.array(["01"]), np.array([0, 1]), column="y", path="t.csv")
    Traceback (most recent call last):
    ...
    nwbound.io.tables.TableError: t.csv: target column 'y' holds labels the model never saw in training: ['01'] (first at row 1); the model knows ['0', '1'].
    """
    values = np.asarray(values)
    classes = np.asarray(classes)
    if values.dtype.kind == "f" and np.all(np.isfinite(values)) and np.all(values == np.round(values)):
        values = values.astype(np.int64)  # 1.0 → 1, as normalize_labels does at fit time
    if classes.dtype.kind in "iu":
        if values.dtype.kind in "iu":
            converted = values.astype(np.int64)
        else:  # the same rule as at fit time: "01" is not the integer 1
            text = values.astype(str)
            converted = text.astype(np.int64) if _int_round_trip(text) else None
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


def escape_spreadsheet_cells(frame: Any) -> Any:
    """A copy of ``frame`` whose text cells cannot run as spreadsheet formulas.

    Text cells (and column names) starting with ``=``, ``+``, ``-``, ``@``,
    a tab or a carriage return get a leading ``'``; numeric and boolean
    columns, and text cells that are plain numbers (``"-1.5"``), are left as
    they are.

    Parameters
    ----------
    frame : pandas.DataFrame

    Returns
    -------
    pandas.DataFrame
        ``frame`` itself when nothing needed escaping, else an escaped copy.

    Examples
    --------
    >>> import pandas as pd
    >>> from nwbound.io.tables import escape_spreadsheet_cells
    >>> out = escape_spreadsheet_cells(pd.DataFrame({"id": ["=1+1", "-2", "a"], "x": [-1.0, 2.0, 3.0]}))
    >>> out["id"].tolist(), out["x"].tolist()
    (["'=1+1", '-2', 'a'], [-1.0, 2.0, 3.0])
    """
    pd = _pandas()
    out = frame
    for name in frame.columns:
        col = frame[name]
        if pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype):
            continue
        text = col.astype("string")  # vectorised .str ops on any object/category column
        risky = (text.str.contains(_FORMULA_START, regex=True) & ~text.str.fullmatch(_PLAIN_NUMBER)).fillna(False)
        if risky.any():
            if out is frame:
                out = frame.copy()
            escaped = col.astype(object).copy()
            escaped[risky.to_numpy()] = "'" + text[risky].astype(str)
            out[name] = escaped
    names = [str(c) for c in out.columns]
    safe = [spreadsheet_safe(c) for c in names]
    if safe != names:
        out = out.set_axis(safe, axis=1) if out is not frame else frame.set_axis(safe, axis=1)
    return out


def _has_carriage_return(frame: Any) -> bool:
    """True when a column name or a text cell of ``frame`` contains ``\\r``."""
    pd = _pandas()
    if any("\r" in str(c) for c in frame.columns):
        return True
    for name in frame.columns:
        col = frame[name]
        if not (pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype)):
            if col.astype("string").str.contains("\r", regex=False).fillna(False).any():
                return True
    return False


def stale_temporaries(path: str | os.PathLike) -> list[Path]:
    """Temporary files that an interrupted :class:`TableWriter` left next to ``path``.

    They are only listed, never deleted: another process may still be
    writing one of them.

    Examples
    --------
    >>> from nwbound.io.tables import stale_temporaries
    >>> stale_temporaries("no-such-folder/out.csv")
    []
    """
    path = Path(path)
    if not path.parent.is_dir():
        return []
    return sorted(path.parent.glob(f".{glob.escape(path.name)}{_TMP_TAG}*.tmp"))


class TableWriter:
    """Write a CSV or Parquet table chunk by chunk, atomically.

    Chunks go to a temporary file ``.<name>.nwbound-<random>.tmp`` in the
    target folder; :meth:`close` (or the end of a ``with`` block without
    error) renames it into place. On any error — including one raised while
    closing, e.g. a full disk — the temporary file is removed and the target
    is left untouched.

    Parameters
    ----------
    path : str or path-like
        ``.csv`` or ``.parquet``.
    overwrite : bool, default=False
        Replace an existing file; otherwise an existing file is refused up front.
    csv_escape : bool, default=True
        Make CSV output spreadsheet-safe (see :func:`escape_spreadsheet_cells`);
        ``False`` writes every cell verbatim. Ignored for Parquet.

    Warns
    -----
    UserWarning
        When temporary files of an earlier, interrupted write to the same
        target are found (they are named, not deleted).

    Examples
    --------
    >>> import pandas as pd, tempfile, pathlib
    >>> from nwbound.io.tables import TableWriter
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> with TableWriter(folder / "out.csv") as writer:
    ...     writer.write(pd.DataFrame({"id": ["=A1", "b"], "x": [-1.0, 2.0]}))
    >>> print((folder / "out.csv").read_text(), end="")
    id,x
    '=A1,-1.0
    b,2.0
    """

    def __init__(self, path: str | os.PathLike, *, overwrite: bool = False, csv_escape: bool = True) -> None:
        self.path = Path(path)
        self.format = table_format(self.path)
        self.overwrite = overwrite
        self.csv_escape = bool(csv_escape)
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
        stale = stale_temporaries(self.path)
        if stale:
            warnings.warn(
                f"{len(stale)} temporary file(s) of an interrupted write to {self.path} remain: "
                f"{', '.join(str(f) for f in stale[:5])}; delete them once no other nwbound run is writing there.",
                UserWarning,
                stacklevel=2,
            )
        fd, self._tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}{_TMP_TAG}", suffix=".tmp")
        os.close(fd)
        os.chmod(self._tmp, 0o644)
        self._fh = open(self._tmp, "w", encoding="utf-8", newline="") if self.format == "csv" else None
        self._pq_writer = None
        self._schema = None
        self.n_rows = 0
        self._columns: list[str] | None = None

    def write(self, frame: Any) -> None:
        """Append one chunk (a pandas DataFrame; the same columns every time).

        Parameters
        ----------
        frame : pandas.DataFrame
            The rows to append; the header is written with the first chunk.

        Raises
        ------
        ValueError
            If ``frame`` has other columns than the first chunk.

        Examples
        --------
        >>> import pandas as pd, tempfile, pathlib
        >>> from nwbound.io.tables import TableWriter
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     with TableWriter(pathlib.Path(tmp, "out.parquet")) as writer:
        ...         writer.write(pd.DataFrame({"x": [1.0, 2.0]}))
        ...         writer.write(pd.DataFrame({"x": [3.0]}))
        ...     print(writer.n_rows, pd.read_parquet(pathlib.Path(tmp, "out.parquet"))["x"].tolist())
        3 [1.0, 2.0, 3.0]
        """
        if self._columns is None:
            self._columns = list(frame.columns)
        elif list(frame.columns) != self._columns:
            raise ValueError("Every chunk written to a table must have the same columns.")
        if self.format == "csv":
            if self.csv_escape:
                frame = escape_spreadsheet_cells(frame)
            frame.to_csv(
                self._fh, header=self.n_rows == 0 and self._fh.tell() == 0, index=False, lineterminator="\n",
                # Python < 3.12's csv writer leaves a field with a bare CR unquoted, which readers take for
                # a line break: quote every text field of such a chunk (valid CSV, same values read back).
                quoting=csv.QUOTE_NONNUMERIC if _has_carriage_return(frame) else csv.QUOTE_MINIMAL,
            )
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
        """Finish the file and move it into place (on failure: remove it and re-raise).

        Returns
        -------
        pathlib.Path
            The target file.

        Raises
        ------
        FileExistsError
            If the target appeared while writing and ``overwrite`` is False.

        Examples
        --------
        >>> import pandas as pd, tempfile, pathlib
        >>> from nwbound.io.tables import TableWriter
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     writer = TableWriter(pathlib.Path(tmp, "out.csv"))
        ...     writer.write(pd.DataFrame({"x": [1, 2]}))
        ...     print(writer.close().name, sorted(p.name for p in pathlib.Path(tmp).iterdir()))
        out.csv ['out.csv']
        """
        try:
            if self.format == "csv":
                self._fh.close()  # flushes: this is where a full disk shows up
            elif self._pq_writer is not None:
                self._pq_writer.close()
        except BaseException:
            self.abort()
            raise
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
                try:  # no hard links here (some network/FAT file systems)
                    os.replace(self._tmp, self.path)
                except BaseException:
                    self.abort()
                    raise
        return self.path

    def abort(self) -> None:
        """Drop the temporary file; the target is untouched. Never raises for a failed close.

        Examples
        --------
        >>> import pandas as pd, tempfile, pathlib
        >>> from nwbound.io.tables import TableWriter
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     writer = TableWriter(pathlib.Path(tmp, "out.csv"))
        ...     writer.write(pd.DataFrame({"x": [1, 2]}))
        ...     writer.abort()
        ...     print(list(pathlib.Path(tmp).iterdir()))
        []
        """
        # Unlink first (POSIX allows it on an open file): a close that fails
        # again on a full disk must not keep the space allocated.
        try:
            Path(self._tmp).unlink(missing_ok=True)
        except OSError:  # e.g. Windows refuses to delete an open file; retried below
            pass
        for closer in (getattr(self._fh, "close", None), getattr(self._pq_writer, "close", None)):
            if closer is None:
                continue
            try:
                closer()
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
