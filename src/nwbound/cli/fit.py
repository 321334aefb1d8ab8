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

The space: ``--metric auto`` (the default, as the estimator's ``metric="auto"``)
learns a space from part of the training rows (a score model chosen by
cross-validation next to the standardised features, cross-fitted below the
row cap) and the kernel sums use the other rows; ``--metric none`` is the
paper's classifier on the features as given (after ``--scale``; ``--scale
standard --metric none`` standardises each feature, as ``metric="standard"`` does). Options left out (space, kernel,
bandwidth, δ, bound form, coverage, and the assumption: ``--lipschitz auto``)
take the Python estimator's defaults, so ``nwbound fit`` and
``NadarayaWatsonClassifier()`` fit the same model. The model file stores the
learned space and the chosen L safely (:mod:`nwbound.io.model_file`, format 3):
loading runs no code from it.

Units: a numeric ``--lipschitz`` (L) or ``--margin`` (γ) is given in the units of
the raw features in the table and restated for the scaled features with
:func:`nwbound.restate_lipschitz` / :func:`nwbound.restate_margin`; raw units
mean nothing in a learned space, so a number selects ``--metric none`` (and
``--metric auto`` with a number is refused).
``--bandwidth`` is a kernel width in the units the classifier sees, i.e.
*after* ``--scale`` (and in the learned space with ``--metric auto``); ``scale``
sets it from the training rows' own neighbour distances
(:func:`nwbound.estimators.scale_bandwidth`, label-free); ``auto`` (the
estimator's default) picks it per query from the bound.

``--lipschitz auto`` (the default when neither ``--lipschitz`` nor ``--margin``
is given) is the estimator's ``lipschitz="auto"``: part of the rows that do not
enter the kernel sums give a pilot L
(:func:`nwbound.assumptions.estimate_lipschitz`), and the others test a grid
around it with :func:`nwbound.assumptions.select_lipschitz`, in the units the
classifier sees (the learned space, or the features after ``--scale``). The
smallest L the held-out rows do not reject is used (one per cross-fitted
model) and printed: an assumption consistent with held-out data, not a
certified fact. The model file stores it with the check's report.

Column lists (``--id-columns``, ``--features``) take one value per flag:
repeat the flag or separate names by commas, e.g. ``--id-columns
patient,visit``; so ``nwbound fit --id-columns patient train.csv …`` works.
The id columns are stored in the model, and ``nwbound predict`` copies them
to its output by default.
"""

from __future__ import annotations

import argparse
import inspect
from pathlib import Path

import numpy as np

from .._validation import check_class_count
from ..utils import bandwidth_or_auto, positive_float
from .predict import DEFAULT_CHUNKSIZE, add_column_list, check_chunksize, check_not_an_input, friendly_errors

__all__ = ["add_parser", "run", "build_estimator", "lipschitz_or_auto", "METRIC_CHOICES"]

METRIC_CHOICES = ("auto", "none")
"""``--metric``: the estimator's ``metric=`` ("none" is ``metric=None``)."""



def lipschitz_or_auto(text: str) -> float | str:
    """argparse ``type=`` for ``--lipschitz``: a finite number > 0 or the word ``auto``.

    Examples
    --------
    >>> lipschitz_or_auto("auto"), lipschitz_or_auto("0.2")
    ('auto', 0.2)
    """
    return "auto" if text == "auto" else positive_float(text)


def add_parser(sub) -> None:
    from ..bounds import BOUND_NAMES, COVERAGE_NAMES
    from ..io.model_file import SCALE_METHODS
    from ..estimators import POINT_ESTIMATES
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
    add_column_list(p, "--features", "feature columns (default: all but target and ids)")
    add_column_list(p, "--id-columns", "columns that are not features; stored in the model, copied by predict")
    p.add_argument("--kernel", default=None, choices=KERNEL_NAMES, help="kernel (default: the estimator's)")
    p.add_argument(
        "--bandwidth", type=bandwidth_or_auto, default=None,
        help="kernel width after scaling, 'scale' (from the training rows' neighbour distances, "
        "label-free) or 'auto' (the default, as the estimator's: per query, from the bound)",
    )
    p.add_argument("--neighbors", type=int, metavar="K", help="localized classifier over the K nearest neighbours")
    p.add_argument("--resolution", type=int, metavar="M", help="dyadic classifier with 2^M cells per feature instead")
    p.add_argument(
        "--metric", default=None, choices=METRIC_CHOICES,
        help="the space the kernel works in: 'auto' (the default, as the estimator's: a space learned on part "
        "of the rows) or 'none' (the paper's classifier on the features as given, after --scale; the default "
        "with a numeric --lipschitz or --margin)",
    )
    p.add_argument(
        "--point-estimate", default=None, choices=POINT_ESTIMATES,
        help="the probabilities reported inside the bound's box: 'auto' (the default, as the estimator's: the "
        "space's score model refitted on every row, moved into the box) or 'nw' (the kernel estimate)",
    )
    assumption = p.add_mutually_exclusive_group()
    assumption.add_argument(
        "--lipschitz", type=lipschitz_or_auto, metavar="L",
        help="Lipschitz constant of p in raw feature units, or 'auto' (the default, as the estimator's "
        "lipschitz='auto': the smallest L of a grid that rows held out of the kernel sums do not reject; "
        "printed with the check)",
    )
    assumption.add_argument("--margin", type=positive_float, metavar="G", help="margin γ between classes, raw feature units")
    p.add_argument("--delta", type=float, default=None, help="failure probability δ of each bound (default: the estimator's)")
    p.add_argument("--bound", default=None, choices=BOUND_NAMES, help="form of the bound (default: the estimator's)")
    p.add_argument("--coverage", default=None, choices=COVERAGE_NAMES, help="default: the estimator's")
    p.add_argument("--scale", default="none", choices=SCALE_METHODS, help="feature scaling stored in the model (default none)")
    p.add_argument("-o", "--output", required=True, metavar="MODEL", help="model file to write (.npz)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing model file")
    p.add_argument("--chunksize", type=int, default=DEFAULT_CHUNKSIZE, help="rows per chunk while reading")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    p.set_defaults(func=run)


def resolve_metric(args: argparse.Namespace) -> str | None:
    """``metric=`` of ``--metric``: the estimator's default ``"auto"``, or None where a numeric
    ``--lipschitz``/``--margin`` (raw feature units) asks for the features as given.

    Examples
    --------
    >>> import argparse
    >>> resolve_metric(argparse.Namespace(metric=None, lipschitz="auto", margin=None))
    'auto'
    >>> resolve_metric(argparse.Namespace(metric=None, lipschitz=0.2, margin=None)) is None
    True
    """
    from .main import CommandError

    numeric = args.margin is not None or (args.lipschitz is not None and args.lipschitz != "auto")
    if args.metric is None:
        return None if numeric else "auto"
    if numeric and args.metric != "none":
        given = "--margin" if args.margin is not None else "--lipschitz"
        raise CommandError(
            f"{given} is in raw feature units, which mean nothing in the space --metric {args.metric} uses. "
            f"Pass --metric none for an assumption in raw units, or leave {given} out (--lipschitz auto chooses "
            "L in the learned space)."
        )
    return None if args.metric == "none" else args.metric


def build_estimator(args: argparse.Namespace):
    """The unfitted estimator the options describe (L/γ are set later, restated).

    ``metric`` from :func:`resolve_metric`: the estimator's default ``"auto"`` unless the options
    say otherwise (module docstring).
    """
    from ..estimators import DyadicClassifier, NadarayaWatsonClassifier
    from .main import CommandError

    # Only what the user gave: everything else keeps the estimator's default.
    common = {k: getattr(args, k) for k in ("delta", "bound", "coverage") if getattr(args, k) is not None}
    common["metric"] = resolve_metric(args)
    if args.resolution is not None:
        if args.neighbors is not None:
            raise CommandError("--resolution (dyadic classifier) and --neighbors cannot be combined.")
        if args.kernel is not None or args.bandwidth is not None or args.point_estimate is not None:
            raise CommandError("--kernel, --bandwidth and --point-estimate do not apply to the dyadic classifier "
                               "(--resolution).")
        return DyadicClassifier(resolution=args.resolution, lipschitz=None, **common)
    nw = {k: getattr(args, k) for k in ("kernel", "bandwidth", "point_estimate") if getattr(args, k) is not None}
    return NadarayaWatsonClassifier(n_neighbors=args.neighbors, lipschitz=None, **nw, **common)


def _training_features(args: argparse.Namespace, path: Path) -> list[str]:
    """The feature columns of the training table, its target and id columns checked (reads the header only)."""
    from ..io.tables import check_columns, read_columns
    from .main import CommandError

    columns = read_columns(path)
    check_columns(columns, [args.target], path, "target")
    ids = list(dict.fromkeys(args.id_columns or []))
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
    return features


def _read_training(args: argparse.Namespace, path: Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    from ..utils import progress
    from ..io.tables import TableError, feature_matrix, iter_table_chunks, label_array, normalize_labels

    features = _training_features(args, path)
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


SHOWN_CLASSES = 10
"""Class names printed after a fit; more are counted, not listed."""


def class_summary(classes, limit: int = SHOWN_CLASSES) -> str:
    """``classes [...]`` for the fit message: at most ``limit`` names, then how many more.

    Examples
    --------
    >>> class_summary(["a", "b"])
    "classes ['a', 'b']"
    >>> class_summary([str(i) for i in range(10_000)], limit=3)
    "10000 classes ['0', '1', '2', … and 9997 more]"
    """
    names = [str(c) for c in classes]
    if len(names) <= limit:
        return f"classes {names}"
    shown = ", ".join(repr(n) for n in names[:limit])
    return f"{len(names)} classes [{shown}, … and {len(names) - limit} more]"


@friendly_errors
def run(args: argparse.Namespace) -> int:
    from ..io import TableModel, save_model
    from ..io.tables import TableError
    from .main import CommandError

    check_chunksize(args.chunksize)
    output = Path(args.output)
    train = Path(args.train)
    check_not_an_input(output, {"table": train})
    if output.exists() and not args.overwrite:
        raise CommandError(f"Model file {output} already exists; pass --overwrite or choose another name.")
    _training_features(args, train)  # a misspelled column is reported before the estimators are imported
    estimator = build_estimator(args)
    if args.lipschitz is None and args.margin is None:
        args.lipschitz = "auto"  # the estimator's default assumption
    X, y, features = _read_training(args, train)
    if np.unique(y).shape[0] < 2:
        raise TableError(
            f"{train}: target column {args.target!r} has a single class ({y[0].item() if isinstance(y[0], np.generic) else y[0]!r}) in {y.shape[0]} row(s); "
            "a classifier needs at least 2 classes."
        )
    try:  # before any fitting: an id column as the target is refused at once
        check_class_count(np.unique(y).shape[0], y.shape[0], name=f"{train}: target column {args.target!r}")
    except ValueError as exc:
        raise TableError(str(exc)) from None
    lipschitz, auto_note = args.lipschitz, None
    if lipschitz == "auto":  # the estimator's lipschitz="auto", in the units it sees (after --scale)
        estimator.set_params(lipschitz="auto")
        lipschitz = None
    extra = {}
    ids = list(dict.fromkeys(args.id_columns or []))
    if ids and "id_columns" in inspect.signature(TableModel.fit).parameters:
        extra["id_columns"] = ids  # recorded so that `nwbound predict` copies them by default
    try:
        model = TableModel.fit(
            estimator, X, y, features=features, scale=args.scale,
            lipschitz=lipschitz, margin=args.margin, target=args.target, **extra,
        )
    except (ValueError, TypeError) as exc:
        raise CommandError(f"cannot fit on {train}: {exc}") from None
    if args.lipschitz == "auto":
        auto_note = _auto_lipschitz(model.estimator, args.scale)
    save_model(model, output, overwrite=args.overwrite)
    if not args.quiet:
        est = model.estimator
        if auto_note is not None:
            summary = auto_note
        else:
            name, given, used = (
                ("L", lipschitz, est.lipschitz) if lipschitz is not None else ("γ", args.margin, est.margin)
            )
            units = "" if model.scaler is None else f" (raw units; {used:.6g} after {args.scale} scaling)"
            summary = f"{name} = {given:g}{units}"
        print(
            f"Fitted {type(est).__name__} on {X.shape[0]} rows of {train}: {len(features)} features, "
            f"{class_summary(est.classes_)}, {_space_summary(est)}, {summary.rstrip('.')}. Wrote {output}."  # a note may end a sentence
        )
        _held_out_usefulness(model, X, y, lipschitz_auto=args.lipschitz == "auto")
    return 0


def _space_summary(estimator) -> str:
    """The space of the fit message: the features as given, or the learned space (and its models).

    Examples
    --------
    >>> from nwbound import NadarayaWatsonClassifier
    >>> _space_summary(NadarayaWatsonClassifier(metric=None))
    'the features as given (--metric none)'
    """
    if estimator.metric is None:
        return "the features as given (--metric none)"
    models = getattr(estimator, "cross_fit_models_", None)
    cross = f", {len(models)} cross-fitted models" if getattr(estimator, "_cross_fitted", False) and models else ""
    return f"a learned space (--metric {estimator.metric}{cross})"


def _auto_lipschitz(estimator, scale: str) -> str:
    """Describe the L that ``lipschitz="auto"`` chose (the model file stores it with its report): with
    the held-out check's table for one model, one value per model when cross-fitted."""
    report = estimator.lipschitz_report_
    if getattr(estimator, "metric_", None) is not None or isinstance(report, tuple):
        units = "units of the learned space"
    elif scale == "none":
        units = "raw feature units"
    else:
        units = f"units after {scale} scaling, the units the classifier sees"
    rows = getattr(estimator, "n_samples_fit_", None)
    sums = "" if rows is None else f"; kernel sums over {rows} rows"
    if isinstance(report, tuple):  # cross-fitted (CrossFitReports): each model chose L in its own space
        values = ", ".join(f"{r.value:.4g}" for r in report)
        return (
            f"L chosen by --lipschitz auto for each of the {len(report)} cross-fitted models ({units}): {values}"
            f"{sums} (a row counts once per model that sums it).\n{report}"
        )
    return (
        f"L = {report.value:.4g} chosen by --lipschitz auto ({units}): the smallest L on the grid "
        f"{report.pilot:.4g} × 2^k that {report.n_check} held-out rows (not in the kernel sums) do not reject"
        f"{sums}. L is an assumption consistent with held-out data, not a certified fact.\n{report.selection}"
    )


def _held_out_usefulness(model, X: np.ndarray, y: np.ndarray, n_probe: int = 500, *,
                         lipschitz_auto: bool = False) -> None:
    """Warn when the bounds will be trivial: an out-of-sample preview.

    Up to ``n_probe`` evenly spread training rows (at most a fifth of them) are held out; the
    same settings are fitted on the other rows (feature scaling and L as in the saved model) and
    predict the held-out ones, so no row sees itself (an in-sample preview would find every row's
    own training point within reach and report far fewer vacuous and trivial bounds than new
    data will get). Said when the preview cannot run (too few rows or classes left). A class with
    too many of its held-out rows certified as another class for the assumption gets a warning
    (:func:`nwbound.metrics.class_certificates`).
    """
    import dataclasses

    from sklearn.base import clone

    from ..diagnostics import AdviceContext
    from ._usefulness import UsefulnessTally, quiet_predict_interval, warn_class_certificates

    n = X.shape[0]
    m = min(n_probe, n // 5)
    held = np.unique(np.linspace(0, n - 1, m).round().astype(np.intp)) if m > 0 else np.zeros(0, np.intp)
    rest = np.setdiff1d(np.arange(n), held)
    if held.size == 0 or np.unique(y[rest]).shape[0] < 2:
        print(f"note: no out-of-sample preview of the bounds ({n} training rows are too few to hold some out).")
        return
    try:
        estimator = clone(model.estimator).fit(model.transform(X[rest]), y[rest])
        interval = quiet_predict_interval(estimator, model.transform(X[held]))
    except ValueError as exc:  # e.g. --neighbors larger than the rows left
        print(f"note: no out-of-sample preview of the bounds ({exc}).")
        return
    tally = UsefulnessTally()
    tally.add(interval)
    context = AdviceContext.from_estimator(model.estimator, interface="cli")
    if lipschitz_auto:
        context = dataclasses.replace(context, lipschitz_auto=True)
    tally.report(model, what=f"previewed out of sample: {held.size} evenly spread training rows held out, "
                 f"predicted by the same settings fitted on the other {rest.size}", context=context)
    # Per class: the held-out rows certified as another class, which the summed figures cannot show.
    from ..metrics import class_certificates

    classes = np.asarray(estimator.classes_)
    known = np.isin(y[held], classes)
    if known.any():
        table = class_certificates(np.searchsorted(classes, y[held][known]), interval.take(np.flatnonzero(known)))
        warn_class_certificates(table, classes, float(getattr(estimator, "delta", 0.05)))
