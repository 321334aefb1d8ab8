"""``nwbound fit``: train a bounded classifier on a CSV/Parquet table and save it.

From a CSV to a reviewed prediction file in two commands::

    # 1. fit: target column "label", id column "patient" kept out of the
    #    features; features scaled to [0, 1]; L = 0.2 per unit of the raw features
    nwbound fit train.csv --target label --id-columns patient \\
        --scale minmax --lipschitz 0.2 -o model.npz

    # 2. predict: one row per input row with the predicted class, per-class
    #    probability and bounds, and a `review` flag for rows whose bound does
    #    not single out the predicted class
    nwbound predict model.npz new.csv --id-columns patient -o predictions.csv

    # optional: score a labelled table (accuracy, review rate, errors caught)
    nwbound evaluate model.npz test.csv --target label -o evaluation/

The model file (:mod:`nwbound.io.model_file`) holds the classifier, the
feature columns and the feature scaling; loading it never runs code.

Units: ``--lipschitz`` (L) and ``--margin`` (γ) are given in the units of
the raw features in the table and restated for the scaled features with
:func:`nwbound.restate_lipschitz` / :func:`nwbound.restate_margin`.
``--bandwidth`` is a kernel width in the units the classifier sees, i.e.
*after* ``--scale`` (e.g. within [0, 1] for minmax); ``auto`` (the default)
picks it per query from the bound.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ..utils import bandwidth_or_auto, positive_float
from .predict import DEFAULT_CHUNKSIZE, check_chunksize, friendly_errors

__all__ = ["add_parser", "run", "build_estimator"]


def add_parser(sub) -> None:
    from ..bounds import BOUND_NAMES, COVERAGE_NAMES
    from ..io.model_file import SCALE_METHODS
    from ..kernels import KERNEL_NAMES

    p = sub.add_parser(
        "fit",
        help="fit a classifier with probability bounds on a CSV/Parquet table; save a model file",
        description="Fit the Nadaraya-Watson classifier (or the dyadic one with --resolution) on TRAIN "
        "and save it, with its feature columns and scaling, to a safe model file. L (--lipschitz) or "
        "γ (--margin) are in the units of the raw features. Put TRAIN before options that take lists.",
    )
    p.add_argument("train", metavar="TRAIN", help="training table (.csv or .parquet)")
    p.add_argument("--target", required=True, metavar="COLUMN", help="column holding the class labels")
    p.add_argument("--features", nargs="+", metavar="COL", help="feature columns (default: all but target and ids)")
    p.add_argument("--id-columns", nargs="+", default=[], metavar="COL", help="columns that are not features")
    p.add_argument("--kernel", default="epanechnikov", choices=KERNEL_NAMES, help="kernel (default epanechnikov)")
    p.add_argument("--bandwidth", type=bandwidth_or_auto, default="auto", help="kernel width after scaling, or 'auto' (default)")
    p.add_argument("--neighbors", type=int, metavar="K", help="localized classifier over the K nearest neighbours")
    p.add_argument("--resolution", type=int, metavar="M", help="dyadic classifier with 2^M cells per feature instead")
    assumption = p.add_mutually_exclusive_group(required=True)
    assumption.add_argument("--lipschitz", type=positive_float, metavar="L", help="Lipschitz constant of p, raw feature units")
    assumption.add_argument("--margin", type=positive_float, metavar="G", help="margin γ between classes, raw feature units")
    p.add_argument("--delta", type=float, default=0.05, help="failure probability δ of each bound (default 0.05)")
    p.add_argument("--bound", default="hoeffding", choices=BOUND_NAMES, help="form of the bound (default hoeffding)")
    p.add_argument("--coverage", default="simultaneous", choices=COVERAGE_NAMES, help="default simultaneous")
    p.add_argument("--scale", default="none", choices=SCALE_METHODS, help="feature scaling stored in the model (default none)")
    p.add_argument("-o", "--output", required=True, metavar="MODEL", help="model file to write (.npz)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing model file")
    p.add_argument("--chunksize", type=int, default=DEFAULT_CHUNKSIZE, help="rows per chunk while reading")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p.set_defaults(func=run)


def build_estimator(args: argparse.Namespace):
    """The unfitted estimator the options describe (L/γ are set later, restated)."""
    from ..estimators import DyadicClassifier, NadarayaWatsonClassifier
    from .main import CommandError

    common = dict(delta=args.delta, bound=args.bound, coverage=args.coverage)
    if args.resolution is not None:
        if args.neighbors is not None:
            raise CommandError("--resolution (dyadic classifier) and --neighbors cannot be combined.")
        return DyadicClassifier(resolution=args.resolution, **common)
    return NadarayaWatsonClassifier(
        kernel=args.kernel, bandwidth=args.bandwidth, n_neighbors=args.neighbors, **common
    )


def _read_training(args: argparse.Namespace, path: Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    from ..utils import progress
    from ..io.tables import (
        TableError,
        check_columns,
        feature_matrix,
        iter_table_chunks,
        label_array,
        normalize_labels,
        read_columns,
    )
    from .main import CommandError

    columns = read_columns(path)
    check_columns(columns, [args.target], path, "target")
    ids = list(args.id_columns)
    check_columns(columns, ids, path, "id")
    if args.target in ids:
        raise CommandError(f"--target {args.target!r} is also listed in --id-columns.")
    if args.features:
        features = list(dict.fromkeys(args.features))
        check_columns(columns, features, path, "feature")
        bad = sorted(set(features) & ({args.target} | set(ids)))
        if bad:
            raise CommandError(f"Columns {bad} cannot be features and target/id columns at once.")
    else:
        features = [c for c in columns if c != args.target and c not in set(ids)]
        if not features:
            raise CommandError(f"{path} has no feature columns besides the target and id columns.")
    blocks, labels = [], []
    first_row = 1
    chunks = iter_table_chunks(path, args.chunksize, columns=[*features, args.target], text_columns=[args.target])
    for chunk in progress(chunks, desc="read", quiet=args.quiet):
        blocks.append(feature_matrix(chunk, features, path=path, first_row=first_row))
        labels.append(label_array(chunk, args.target, path=path, first_row=first_row))
        first_row += len(chunk)
    n = first_row - 1
    if n == 0:
        raise TableError(f"{path} has no data rows; a classifier needs training data.")
    X = np.concatenate(blocks) if len(blocks) > 1 else blocks[0]
    y = normalize_labels(np.concatenate(labels))
    return X, y, features


@friendly_errors
def run(args: argparse.Namespace) -> int:
    from ..io import TableModel, save_model
    from ..io.tables import TableError
    from .main import CommandError

    check_chunksize(args.chunksize)
    output = Path(args.output)
    if output.exists() and not args.overwrite:
        raise CommandError(f"Model file {output} already exists; pass --overwrite or choose another name.")
    train = Path(args.train)
    estimator = build_estimator(args)
    X, y, features = _read_training(args, train)
    if np.unique(y).shape[0] < 2:
        raise TableError(
            f"{train}: target column {args.target!r} has a single class ({y[0]!r}) in {y.shape[0]} row(s); "
            "a classifier needs at least 2 classes."
        )
    try:
        model = TableModel.fit(
            estimator, X, y, features=features, scale=args.scale,
            lipschitz=args.lipschitz, margin=args.margin, target=args.target,
        )
    except (ValueError, TypeError) as exc:
        raise CommandError(f"cannot fit on {train}: {exc}") from None
    save_model(model, output, overwrite=args.overwrite)
    if not args.quiet:
        est = model.estimator
        name, given, used = (
            ("L", args.lipschitz, est.lipschitz) if args.lipschitz is not None else ("γ", args.margin, est.margin)
        )
        units = "" if model.scaler is None else f" (raw units; {used:.6g} after {args.scale} scaling)"
        print(
            f"Fitted {type(est).__name__} on {X.shape[0]} rows of {train}: {len(features)} features, "
            f"classes {[str(c) for c in est.classes_]}, {name} = {given:g}{units}. Wrote {output}."
        )
    return 0
