"""``nwbound predict``: stream a table through a saved model into a reviewed prediction file.

The output holds, per input row: the id columns exactly as given (by
default those the model was fitted with, when the table has them),
``predicted``, and for every class ``c`` the columns ``proba_<c>``,
``lower_<c>``, ``upper_<c>``; then ``epsilon_predicted`` (ε of the predicted
class: the half-width ``max(p̂ − lower, upper − p̂)`` of its interval, 1 where
vacuous; the glossary's ε), ``error_upper`` (1 − lower bound of the predicted class: a
guaranteed ceiling on the probability that the predicted label is wrong),
``kappa`` (kernel mass), ``vacuous`` (no training data near the row: κ = 0),
``trivial`` (every class's interval is [0, 1]: the bound says nothing;
vacuous rows included),
``certified`` (the predicted class's lower bound is above every other class's
upper bound) and ``review`` = not ``certified``: the rows a human should look at.

Column lists (``--id-columns``, ``--features``) take one value per flag;
repeat the flag or separate names by commas (``--id-columns patient,visit``),
so that an option never swallows a positional file name.

CSV output is spreadsheet-safe by default (a text cell starting with ``=``,
``+``, ``-``, ``@``, tab or CR gets a leading ``'``; see
:func:`nwbound.io.tables.escape_spreadsheet_cells`); ``--no-csv-escape``
writes cells verbatim.

A model file written by this nwbound (format 4 or 5) predicts without importing
scikit-learn: its learned spaces are stored as plain arrays too, and the
intervals are the same (:func:`nwbound.io.load_model` with ``frozen=True``).
Localized (``n_neighbors``), device, float32 and dyadic models and older files
load the full classifier (slower to start).

DATA is read in chunks of ``--chunksize`` rows and the output is written
chunk by chunk to a temporary file that is renamed into place at the end, so
memory stays bounded and an interrupted run leaves no partial output.
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from ._usefulness import UsefulnessTally, quiet_predict_interval

__all__ = ["add_parser", "run", "model_features", "predict_chunks", "prediction_frame", "column_list"]

DEFAULT_CHUNKSIZE = 100_000


def column_list(text: str) -> list[str]:
    """argparse ``type=`` for one ``--id-columns``/``--features`` value: comma-separated names.

    Examples
    --------
    >>> column_list("patient, visit")
    ['patient', 'visit']
    """
    names = [t.strip() for t in str(text).split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"{text!r} holds an empty column name; separate names by single commas")
    return names


def add_column_list(parser: argparse.ArgumentParser, flag: str, help: str) -> None:
    """A repeatable, comma-separated column-list option (never swallows a positional)."""
    parser.add_argument(
        flag, action="extend", type=column_list, default=None, metavar="COL[,COL…]",
        help=help + " (repeat the option or separate names by commas)",
    )


def add_csv_escape(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-csv-escape", dest="csv_escape", action="store_false",
        help="write CSV cells verbatim (default: a leading ' on text cells starting with = + - @ tab CR, "
        "so that spreadsheets do not run them as formulas)",
    )


def add_parser(sub) -> None:
    p = sub.add_parser(
        "predict",
        help="predict a CSV/Parquet table with a saved model: classes, probability bounds, review flags",
        description="Stream DATA through MODEL (written by `nwbound fit` or nwbound.io.save_model) and "
        "write predicted, proba_<c>, lower_<c>, upper_<c>, epsilon_predicted, error_upper, kappa, vacuous, trivial, "
        "certified and review columns (review = not certified: the bound does not separate the predicted "
        "class from the others).",
    )
    p.add_argument("model", metavar="MODEL", help="model file (.npz)")
    p.add_argument("data", metavar="DATA", help="table to predict (.csv or .parquet)")
    p.add_argument("-o", "--output", required=True, help="output table (.csv or .parquet)")
    add_column_list(
        p, "--id-columns",
        "columns copied to the output as given (default: the model's id columns found in DATA)",
    )
    p.add_argument("--chunksize", type=int, default=DEFAULT_CHUNKSIZE, help=f"rows per chunk (default {DEFAULT_CHUNKSIZE})")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    add_csv_escape(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p.set_defaults(func=run)


# ----------------------------------------------------------------------------------------------
# Shared with `nwbound evaluate`
# ----------------------------------------------------------------------------------------------
def model_features(model: Any, columns: Sequence[str], exclude: Sequence[str], path: Path) -> list[str]:
    """The feature columns ``model`` needs, checked against a table's ``columns``."""
    from ..io import TableModel
    from ..io.tables import check_columns
    from .main import CommandError

    if isinstance(model, TableModel):
        features = list(model.features)
    elif getattr(model, "feature_names_in_", None) is not None:
        features = [str(f) for f in model.feature_names_in_]
    else:
        # A model fitted on a plain array: every other column, in file order.
        features = [c for c in columns if c not in set(exclude)]
        if len(features) != model.n_features_in_:
            raise CommandError(
                f"The model has no feature names and needs {model.n_features_in_} features, but {path} has "
                f"{len(features)} non-id columns; list the other columns with --id-columns."
            )
        return features
    check_columns(columns, features, path, "feature")
    overlap = sorted(set(features) & set(exclude))
    if overlap:
        raise CommandError(f"Columns {overlap} are model features and cannot also be id/target columns.")
    return features


def check_chunksize(chunksize: int) -> None:
    from .main import CommandError

    if chunksize < 1:
        raise CommandError(f"--chunksize must be >= 1, got {chunksize}.")


def check_not_an_input(output: Path, inputs: dict[str, str | os.PathLike]) -> None:
    """Refuse an output file that is one of the command's input files, also through a link.

    Writing it would replace the input, ``--overwrite`` or not: that option replaces earlier
    results, never the data or the model a command reads. ``inputs`` maps a name for each
    input (``"table"``, ``"model"``) to its path.
    """
    from .main import CommandError

    for role, given in inputs.items():
        path = Path(given)
        same = output.resolve() == path.resolve()
        if not same and output.exists() and path.exists():
            same = os.path.samefile(output, path)  # a hard link
        if same:
            raise CommandError(f"Output {output} is the input {role} {path}; choose another output file.")


def chunk_total(path: Path, chunksize: int) -> int | None:
    """Number of chunks when cheap to know (Parquet metadata), else None."""
    from ..io.tables import table_format

    if table_format(path) != "parquet":
        return None
    import pyarrow.parquet as pq

    return max(1, math.ceil(pq.ParquetFile(path).metadata.num_rows / chunksize))


def predict_chunks(
    model: Any,
    path: Path,
    features: Sequence[str],
    *,
    chunksize: int,
    text_columns: Sequence[str] = (),
    id_columns: Sequence[str] = (),
    quiet: bool = True,
    desc: str = "predict",
) -> Iterator[tuple[Any, Any, int]]:
    """Yield ``(chunk, interval, first_row)`` for each chunk of the table at ``path``."""
    from ..utils import progress
    from ..io.tables import feature_matrix, iter_table_chunks

    columns = list(dict.fromkeys([*id_columns, *features, *text_columns]))
    chunks = iter_table_chunks(
        path, chunksize, columns=columns, text_columns=text_columns, verbatim_columns=id_columns
    )
    named = getattr(model, "feature_names_in_", None) is not None
    first_row = 1
    for chunk in progress(chunks, desc=desc, total=chunk_total(path, chunksize), quiet=quiet):
        if len(chunk) == 0:
            continue
        X = feature_matrix(chunk, features, path=path, first_row=first_row)
        if named:  # an estimator fitted on a DataFrame checks the names it gets
            import pandas as pd

            X = pd.DataFrame(X, columns=list(features), copy=False)
        yield chunk, quiet_predict_interval(model, X), first_row  # one usefulness report per run, not per chunk
        first_row += len(chunk)


def prediction_frame(chunk: Any, interval: Any, classes: np.ndarray, id_columns: Sequence[str]) -> Any:
    """The output columns for one chunk (see the module docs)."""
    import pandas as pd

    top = interval.predicted_index
    out: dict[str, Any] = {c: chunk[c].to_numpy() for c in id_columns}
    out["predicted"] = classes[top]
    for prefix, arr in (("proba", interval.proba), ("lower", interval.lower), ("upper", interval.upper)):
        for j, c in enumerate(classes):
            out[f"{prefix}_{c}"] = arr[:, j]
    out["epsilon_predicted"] = interval.epsilon[np.arange(top.shape[0]), top]
    out["error_upper"] = interval.error_upper
    out["kappa"] = interval.kappa
    out["vacuous"] = np.asarray(interval.vacuous, dtype=bool)
    out["trivial"] = interval.trivial
    certified = interval.certified
    out["certified"] = certified
    out["review"] = ~certified
    return pd.DataFrame(out)


def output_columns(classes: np.ndarray) -> list[str]:
    names = ["predicted"]
    for prefix in ("proba", "lower", "upper"):
        names += [f"{prefix}_{c}" for c in classes]
    return names + ["epsilon_predicted", "error_upper", "kappa", "vacuous", "trivial", "certified", "review"]


def model_id_columns(model: Any) -> list[str]:
    """The id columns the model was fitted with (empty when it does not record them)."""
    return [str(c) for c in (getattr(model, "id_columns", None) or ())]


def resolve_id_columns(given: Sequence[str] | None, model: Any, columns: Sequence[str], path: Path, quiet: bool) -> list[str]:
    """``--id-columns`` as given (checked), or by default the model's id columns present in the table."""
    import sys

    from ..io.tables import check_columns

    if given is not None:
        ids = list(dict.fromkeys(given))
        check_columns(columns, ids, path, "id")
        return ids
    fitted = model_id_columns(model)
    ids = [c for c in fitted if c in set(columns)]
    missing = [c for c in fitted if c not in set(columns)]
    if missing and not quiet:
        print(f"note: the model's id column(s) {missing} are not in {path}; not copied.", file=sys.stderr)
    return ids


def load_for_table(model_path: str, data_path: str, target: str | None = None,
                   id_columns: Sequence[str] | None = None, *, frozen: bool = False) -> tuple[Any, Path, list[str]]:
    """Read the data file's header, check it has the ``target``, the ``id_columns`` given and the model's
    feature columns, load the model (``frozen``: where the file allows it, the model that predicts
    intervals without scikit-learn, :func:`nwbound.io.load_model`'s ``frozen=True``).

    The columns are checked against the names the model file stores before the
    model is built: a misspelled column is reported without importing the
    estimators (scikit-learn, numba) or running the model.
    """
    from ..io import load_model
    from ..io.model_file import stored_features
    from ..io.tables import check_columns, read_columns

    data = Path(data_path)
    columns = read_columns(data)
    if target is not None:
        check_columns(columns, [target], data, "target")
    if id_columns:
        check_columns(columns, list(dict.fromkeys(id_columns)), data, "id")
    check_columns(columns, stored_features(model_path) or [], data, "feature")
    return load_model(model_path, frozen=frozen), data, columns


def friendly_errors(func):
    """Turn file-system and missing-extra errors into one-line CLI errors."""
    import functools

    @functools.wraps(func)
    def wrapper(args: argparse.Namespace) -> int:
        from .main import CommandError

        try:
            return func(args)
        except (FileExistsError, IsADirectoryError, NotADirectoryError, ImportError) as exc:
            raise CommandError(str(exc)) from None

    return wrapper


# ----------------------------------------------------------------------------------------------
@friendly_errors
def run(args: argparse.Namespace) -> int:
    from ..io.tables import TableWriter, table_format
    from .main import CommandError

    check_chunksize(args.chunksize)
    output = Path(args.output)
    table_format(output)
    if output.exists() and not args.overwrite:
        raise CommandError(f"Output file {output} already exists; pass --overwrite or choose another name.")
    # The default model's file holds its learned spaces as plain arrays: intervals without scikit-learn.
    model, data, columns = load_for_table(args.model, args.data, id_columns=args.id_columns, frozen=True)
    check_not_an_input(output, {"table": data, "model": args.model})
    ids = resolve_id_columns(args.id_columns, model, columns, data, args.quiet)
    features = model_features(model, columns, ids, data)
    classes = np.asarray(model.classes_)
    clash = sorted(set(ids) & set(output_columns(classes)))
    if clash:
        raise CommandError(f"Id columns {clash} clash with output column names; rename them in {data}.")
    n_rows = n_review = n_trivial = 0
    usefulness = UsefulnessTally()
    with TableWriter(output, overwrite=args.overwrite, csv_escape=args.csv_escape) as writer:
        for chunk, interval, _ in predict_chunks(
            model, data, features, chunksize=args.chunksize, id_columns=ids, quiet=args.quiet
        ):
            frame = prediction_frame(chunk, interval, classes, ids)
            writer.write(frame)
            n_rows += len(frame)
            n_review += int(frame["review"].sum())
            n_trivial += int(frame["trivial"].sum())
            usefulness.add(interval)
        if n_rows == 0:
            raise CommandError(f"{data} has no data rows; nothing to predict.")
    if not args.quiet:
        print(
            f"Predicted {n_rows} rows of {data}: {n_rows - n_review} ({1 - n_review / n_rows:.1%}) certified, "
            f"{n_review} ({n_review / n_rows:.1%}) to review (not certified), {n_trivial} "
            f"({n_trivial / n_rows:.1%}) with a trivial bound. Wrote {output}."
        )
        usefulness.report(model)
    return 0
