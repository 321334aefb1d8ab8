"""``nwbound evaluate``: score a saved model on a labelled table, with the review queue.

Prints the accuracy, the review rate (share of rows whose bound does not
single out the predicted class, see ``nwbound predict``), the share of errors
caught by the review queue and the accuracy of the rows that pass without
review. With ``-o FOLDER`` it also writes ``metrics.csv``/``metrics.md`` and
figures (reliability, errors caught vs. rows flagged, bound width, error
types) via :mod:`nwbound.plots`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from .predict import DEFAULT_CHUNKSIZE, check_chunksize, friendly_errors, load_for_table, model_features, predict_chunks

__all__ = ["add_parser", "run", "summarize"]


def add_parser(sub) -> None:
    p = sub.add_parser(
        "evaluate",
        help="accuracy, review rate and errors caught by the review queue on a labelled table",
        description="Predict the labelled table DATA with MODEL and report accuracy, the review rate and "
        "the share of errors that the review queue catches; -o writes a metrics table and figures.",
    )
    p.add_argument("model", metavar="MODEL", help="model file (.npz)")
    p.add_argument("data", metavar="DATA", help="labelled table (.csv or .parquet)")
    p.add_argument("--target", required=True, metavar="COLUMN", help="column holding the true labels")
    p.add_argument("-o", "--output", metavar="FOLDER", help="write metrics and figures to this folder")
    p.add_argument("--overwrite", action="store_true", help="replace results of the same name in FOLDER")
    p.add_argument("--chunksize", type=int, default=DEFAULT_CHUNKSIZE, help=f"rows per chunk (default {DEFAULT_CHUNKSIZE})")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def summarize(correct: np.ndarray, review: np.ndarray) -> dict[str, Any]:
    """Review-queue metrics from per-row ``correct`` and ``review`` flags.

    Returns
    -------
    dict
        ``rows``, ``accuracy``, ``review_rate``, ``errors``,
        ``errors_caught`` (share of errors with ``review``; NaN without
        errors) and ``accuracy_accepted`` (accuracy of the rows without
        ``review``; NaN if every row is flagged).
    """
    correct = np.asarray(correct, dtype=bool)
    review = np.asarray(review, dtype=bool)
    wrong = ~correct
    n_err = int(wrong.sum())
    n_acc = int((~review).sum())
    return {
        "rows": int(correct.shape[0]),
        "accuracy": float(correct.mean()),
        "review_rate": float(review.mean()),
        "errors": n_err,
        "errors_caught": float((wrong & review).sum() / n_err) if n_err else float("nan"),
        "accuracy_accepted": float((correct & ~review).sum() / n_acc) if n_acc else float("nan"),
    }


def _figures(folder: Path, y_true: np.ndarray, interval: Any, classes: np.ndarray, review_rate: float, overwrite: bool) -> list[Path]:
    from .. import plots
    from ..plots import pyplot as _pyplot

    plt = _pyplot()
    files: list[Path] = []
    makers = {
        "reliability": lambda: plots.ReliabilityDisplay.from_interval(y_true, interval, classes=classes),
        "errors_caught": lambda: plots.CumulativeRecallDisplay.from_interval(
            y_true, interval, classes=classes, kind="width", label="bound width"
        ),
        "bound_width": lambda: plots.BoundWidthDisplay.from_interval(y_true, interval, classes=classes),
        "error_types": lambda: plots.TypeErrorDisplay.from_interval(y_true, interval, classes=classes),
    }
    for stem, make in makers.items():
        display = make()
        if stem == "errors_caught":
            display.ax_.axvline(review_rate, color="grey", linewidth=0.8, linestyle="--")
        try:
            files += plots.save_figure(display.figure_, folder / stem, formats=("png",), overwrite=overwrite)
        finally:
            plt.close(display.figure_)
    return files


@friendly_errors
def run(args: argparse.Namespace) -> int:
    from .._result import PredictionInterval
    from ..utils import format_markdown, prepare_output_dir, write_table
    from ..io.tables import check_columns, label_array, labels_like
    from ..metrics import review_flags
    from .main import CommandError

    check_chunksize(args.chunksize)
    model, data, columns = load_for_table(args.model, args.data)
    check_columns(columns, [args.target], data, "target")
    features = model_features(model, columns, [args.target], data)
    classes = np.asarray(model.classes_)
    folder = prepare_output_dir(args.output, overwrite=args.overwrite) if args.output else None

    correct, review, truth, parts = [], [], [], []
    for chunk, interval, first_row in predict_chunks(
        model, data, features, chunksize=args.chunksize, text_columns=[args.target], quiet=args.quiet, desc="evaluate"
    ):
        raw = label_array(chunk, args.target, path=data, first_row=first_row)
        y = labels_like(raw, classes, column=args.target, path=data, first_row=first_row)
        predicted = classes[np.argmax(interval.proba, axis=1)]
        correct.append(predicted == y)
        review.append(review_flags(interval))
        if folder is not None:  # figures need every row; plain metrics only the flags
            truth.append(y)
            parts.append(interval)
    if not correct:
        raise CommandError(f"{data} has no data rows; nothing to evaluate.")
    metrics = summarize(np.concatenate(correct), np.concatenate(review))
    row = {"model": Path(args.model).name, "data": data.name, **metrics}
    print(format_markdown([row]))
    if metrics["errors"]:
        print(
            f"\nThe review queue flags {metrics['review_rate']:.1%} of the rows and catches "
            f"{metrics['errors_caught']:.1%} of the {metrics['errors']} errors."
        )
    if folder is not None:
        y_all = np.concatenate(truth)
        interval = PredictionInterval(**{
            name: (None if getattr(parts[0], name) is None else np.concatenate([getattr(p, name) for p in parts]))
            for name in parts[0].as_dict()
        })
        files = list(write_table([row], folder / "metrics", title=f"Evaluation of {row['model']} on {row['data']}"))
        files += _figures(folder, y_all, interval, classes, metrics["review_rate"], args.overwrite)
        print("\nWrote: " + ", ".join(str(f) for f in files))
    return 0
