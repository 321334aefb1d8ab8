"""``nwbound evaluate``: score a saved model on a labelled table, with the review queue.

Prints, on every row: the accuracy, the certified share (the bound separates
the predicted class from every other: see ``nwbound predict``), the review
share (= not certified), ``errors_caught_pct`` (the share of all errors that
are in the review queue, in percent) and the error rate among the certified
rows. The review queue is ranked by ``error_upper`` (the guaranteed ceiling on
the probability that the predicted label is wrong), most doubtful first.

Then, per true class, its rows certified as another class against the number the bound
allows (:func:`nwbound.metrics.class_certificates`), with a warning on a class whose count is
unlikely under the assumption: the summed check over all rows cannot see a rare class.

Then a side-by-side comparison of review rules on a held-out half of the rows
(the other half, drawn at random with ``--seed``, calibrates the rules that
need calibration): the certificate; ``error_upper ≤ α`` (per-query ceiling);
``1 − max p̂`` reviewing the same share as the certificate (no guarantee);
split-conformal sets (review where the set is not a single class); and a
calibrated acceptance threshold on ``1 − max p̂``
(:class:`nwbound.baselines.CalibratedAcceptance`: error among accepted ≤ α
with probability ≥ 1 − δ). Each line names the guarantee the rule carries.

With ``-o FOLDER`` it also writes ``metrics.csv``/``.md``, ``classes.csv``/``.md``,
``comparison.csv``/``.md`` and figures (reliability, errors caught vs. share reviewed ranked by
``error_upper``, bound width, error types with Type I/II defined on the
figure) via :mod:`nwbound.plots`. A figure that would be a flat line (every
bound trivial) is not drawn; the command says so.

Unlike ``nwbound predict``, which streams, ``evaluate`` keeps every row's
interval in memory (the calibration split and the comparison need all rows):
about ``8 · (6·C + 6)`` bytes per row for ``C`` classes.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from ._usefulness import UsefulnessTally, warn_class_certificates
from .predict import DEFAULT_CHUNKSIZE, check_chunksize, friendly_errors, load_for_table, model_features, predict_chunks

__all__ = ["add_parser", "run", "summarize", "compare_rules"]


def add_parser(sub) -> None:
    p = sub.add_parser(
        "evaluate",
        help="accuracy, certified share and the review queue against other rules on a labelled table",
        description="Predict the labelled table DATA with MODEL and report accuracy, the certified share, the "
        "review share (not certified) and the share of errors the review queue catches; compare, on a held-out "
        "half, the certificate with 1 - max p, error_upper, split-conformal sets and a calibrated acceptance "
        "threshold, each with the guarantee it carries; -o writes tables and figures.",
    )
    p.add_argument("model", metavar="MODEL", help="model file (.npz)")
    p.add_argument("data", metavar="DATA", help="labelled table (.csv or .parquet)")
    p.add_argument("--target", required=True, metavar="COLUMN", help="column holding the true labels")
    p.add_argument("-o", "--output", metavar="FOLDER", help="write metrics and figures to this folder")
    p.add_argument("--overwrite", action="store_true", help="replace results of the same name in FOLDER")
    p.add_argument("--chunksize", type=int, default=DEFAULT_CHUNKSIZE, help=f"rows per chunk (default {DEFAULT_CHUNKSIZE})")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="level of the two calibrated rules of the comparison: split-conformal sets (contain the true "
                   "label with probability >= 1 - alpha) and the calibrated threshold on 1 - max p (error among accepted "
                   "rows <= alpha, with probability >= 1 - the model's delta); the certificate and the error_upper "
                   "and epsilon rankings do not use it; default 0.05")
    p.add_argument("--seed", type=int, default=0, help="seed of the calibration/held-out split (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def summarize(y_true: np.ndarray, y_pred: np.ndarray, review: np.ndarray) -> dict[str, Any]:
    """Review-queue metrics in percent (:func:`nwbound.metrics.review_summary`, renamed for a table).

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
    review : array-like of bool, shape (n,)
        True where the row goes to review.

    Returns
    -------
    dict
        ``rows``, ``accuracy_pct``, ``review_pct`` (rows sent to review),
        ``errors`` (a count), ``errors_caught_pct`` (share of the errors that
        are in review; NaN without errors) and ``error_accepted_pct`` (error
        rate among the rows not in review; NaN if every row is in review).

    Examples
    --------
    >>> import numpy as np
    >>> m = summarize(np.array([0, 1, 1, 0]), np.array([0, 1, 0, 1]), np.array([False, True, True, False]))
    >>> m["review_pct"], m["errors_caught_pct"], m["error_accepted_pct"]
    (50.0, 50.0, 50.0)
    """
    from ..metrics import review_summary

    r = review_summary("review queue", y_true, y_pred, np.asarray(review, dtype=bool))
    n = int(np.asarray(y_true).shape[0])
    return {
        "rows": n,
        "accuracy_pct": 100.0 * (1.0 - r["n_errors"] / n) if n else float("nan"),
        "review_pct": 100.0 * r["review_share"],
        "errors": r["n_errors"],
        "errors_caught_pct": 100.0 * r["errors_caught"],
        "error_accepted_pct": 100.0 * r["error_among_accepted"],
    }


def _stored_proba(proba: np.ndarray, classes: np.ndarray) -> Any:
    """A fitted "classifier" whose predict_proba looks rows up by index (feeds SplitConformalSets)."""
    from sklearn.base import BaseEstimator, ClassifierMixin

    class StoredProba(ClassifierMixin, BaseEstimator):
        def fit(self, X: Any = None, y: Any = None) -> "StoredProba":
            return self

        def predict_proba(self, X: Any) -> np.ndarray:
            return self.proba_[np.asarray(X, dtype=np.intp).ravel()]

    model = StoredProba()
    model.proba_, model.classes_ = proba, classes
    return model


def compare_rules(
    y_index: np.ndarray,
    interval: Any,
    *,
    alpha: float = 0.05,
    delta: float = 0.05,
    seed: int = 0,
) -> tuple[list[dict[str, Any]], int, int]:
    """Review rules side by side on a held-out half; the other half calibrates.

    A random half (``seed``) calibrates split-conformal sets
    (:class:`nwbound.baselines.SplitConformalSets`, level ``alpha``) and a
    calibrated acceptance threshold on ``1 − max p̂``
    (:class:`nwbound.baselines.CalibratedAcceptance`, ``alpha``, ``delta``);
    :func:`nwbound.metrics.review_comparison` then scores every rule on the
    other half: the certificate, the ranking scores (``1 − max p̂``,
    ``error_upper``, ε) reviewing the certificate's review share, the
    conformal sets and the calibrated threshold.

    Parameters
    ----------
    y_index : ndarray of int, shape (n,)
        Column of the true class of each row.
    interval : PredictionInterval
        The rows' intervals.
    alpha, delta : float in (0, 1)
    seed : int

    Returns
    -------
    rows : list of dict
        One per rule: ``rule``, ``review_pct``, ``errors_caught_pct``,
        ``error_accepted_pct``, ``guarantee``.
    n_calibration, n_heldout : int

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> rng = np.random.default_rng(0)
    >>> p1 = rng.uniform(size=400); proba = np.c_[1 - p1, p1]
    >>> y = (rng.uniform(size=400) < p1).astype(int)
    >>> iv = PredictionInterval.from_parts(proba, np.full((400, 2), 0.2), np.full((400, 2), 0.1),
    ...     np.ones(400), np.ones(400), np.zeros(400, bool), np.ones(400))
    >>> rows, n_cal, n_test = compare_rules(y, iv, alpha=0.1)
    >>> [r["rule"] for r in rows][0], n_cal + n_test
    ('certificate', 400)
    """
    from ..baselines import CalibratedAcceptance, SplitConformalSets
    from ..metrics import review_comparison

    n = y_index.shape[0]
    perm = np.random.default_rng(seed).permutation(n)
    cal, test = np.sort(perm[: n // 2]), np.sort(perm[n // 2:])
    proba = np.asarray(interval.proba)
    doubt = 1.0 - proba.max(axis=1)
    held = interval.take(test)
    share = float(np.mean(~held.certified)) if test.size else 0.0
    share = share if 0.0 < share < 1.0 else 0.1  # ranking queues need a share strictly inside (0, 1)
    extra: dict[str, Any] = {}
    skipped: list[dict[str, Any]] = []
    if np.unique(y_index[cal]).shape[0] >= 2:
        try:
            conformal = SplitConformalSets(_stored_proba(proba, np.arange(proba.shape[1])), alpha=alpha, backend="numpy")
            extra["conformal_sets"] = conformal.fit(cal[:, None], y_index[cal]).predict_set(test[:, None])
        except ValueError as exc:
            skipped.append({"queue": "conformal set size != 1", "guarantee": f"not computed: {exc}"})
        try:
            extra["calibrated"] = CalibratedAcceptance(alpha=alpha, delta=delta).fit(
                doubt[cal], y_index[cal], np.argmax(proba[cal], axis=1)
            )
            extra["calibrated_scores"] = doubt[test]
        except ValueError as exc:
            skipped.append({"queue": "calibrated threshold", "guarantee": f"not computed: {exc}"})
    else:
        skipped.append({"queue": "conformal / calibrated threshold",
                        "guarantee": "not computed: the calibration half holds a single class"})
    rows = review_comparison(y_index[test], held, review_share=share, **extra)
    out = []
    for r in [*rows, *skipped]:
        name = r["queue"] + (" on 1 - max p" if r["queue"] == "calibrated threshold" and "n_errors" in r else "")
        pct = (lambda key: 100.0 * r[key] if key in r else float("nan"))
        out.append({
            "rule": name,
            "review_pct": pct("review_share"),
            "errors_caught_pct": pct("errors_caught"),
            "error_accepted_pct": pct("error_among_accepted"),
            "guarantee": r["guarantee"],
        })
    return out, int(cal.shape[0]), int(test.shape[0])


def _figures(
    folder: Path, y_true: np.ndarray, interval: Any, classes: np.ndarray, review_share: float, overwrite: bool
) -> tuple[list[Path], list[str]]:
    """Write the figures; return the files and a note for each figure skipped."""
    from .. import plots
    from ..plots import pyplot as _pyplot

    plt = _pyplot()
    files: list[Path] = []
    notes: list[str] = []
    y_pred = classes[interval.predicted_index]
    error_upper = interval.error_upper
    flat = bool(np.ptp(error_upper) == 0) if error_upper.size else True

    def errors_caught():
        display = plots.CumulativeRecallDisplay.from_arrays(
            y_true, y_pred, [error_upper, 1.0 - interval.proba.max(axis=1)],
            label=["error_upper (the review queue's order)", r"$1 - \max_c \hat p_c$ (for comparison)"],
        )
        display.ax_.axvline(review_share, color="grey", linewidth=0.8, linestyle="--",
                            label=f"review share of the certificate ({review_share:.0%})")
        display.ax_.set_title("Errors caught when reviewing the most doubtful rows first")
        display.ax_.legend(loc="lower right", fontsize=8)
        return display

    def error_types():
        display = plots.TypeErrorDisplay.from_interval(y_true, interval, classes=classes)
        display.ax_.set_title("Type I and Type II errors per true class")
        display.figure_.text(
            0.5, 0.01, "Type I: wrong prediction (argmax p̂ ≠ true class).\nType II: correct prediction whose bound "
            "cannot exclude p < 0.5 (its lower bound < 0.5, or κ = 0).", fontsize=8, ha="center", va="bottom",
        )
        display.figure_.subplots_adjust(bottom=0.22)
        return display

    def reliability():
        display = plots.ReliabilityDisplay.from_interval(y_true, interval, classes=classes)
        display.ax_.set_title("Reliability of the predicted probabilities")
        return display

    def bound_width():
        display = plots.BoundWidthDisplay.from_interval(y_true, interval, classes=classes)
        display.ax_.set_title("Bound width by confidence, correct vs. wrong predictions")
        return display

    makers = {"reliability": reliability, "errors_caught": errors_caught, "bound_width": bound_width, "error_types": error_types}
    if flat:
        makers.pop("errors_caught")
        notes.append(
            f"errors_caught.png not drawn: error_upper is {error_upper[0] if error_upper.size else 1:.3g} on every "
            "row (every bound trivial), so it ranks nothing."
        )
    epsilon = interval.epsilon.max(axis=1)
    if epsilon.size == 0 or np.ptp(epsilon) == 0:
        makers.pop("bound_width")
        notes.append(
            f"bound_width.png not drawn: ε is {epsilon[0] if epsilon.size else 1:.3g} on every row, a flat line."
        )
    for stem, make in makers.items():
        display = make()
        try:
            files += plots.save_figure(display.figure_, folder / stem, formats=("png",), overwrite=overwrite)
        finally:
            plt.close(display.figure_)
    return files, notes


def report_class_certificates(y_index: np.ndarray, interval: Any, classes: np.ndarray,
                              delta: float) -> list[dict[str, Any]]:
    """Print, per true class, its rows certified as another class against what the bound allows; warn on a
    class whose count is unlikely under the assumption (:func:`nwbound.metrics.class_certificates`).

    The summed check (errors among the certified against their summed ceilings) cannot see a rare
    class: its few rows weigh nothing in the sum. Returns the table's rows.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> from nwbound.cli.evaluate import report_class_certificates
    >>> iv = PredictionInterval.from_parts(
    ...     proba=np.array([[0.9, 0.1], [0.2, 0.8]]), bias=np.zeros((2, 2)), sampling=np.full((2, 2), 0.05),
    ...     kappa=np.ones(2), n_eff=np.ones(2), vacuous=np.zeros(2, dtype=bool), bandwidth=np.ones(2))
    >>> rows = report_class_certificates(np.array([0, 1]), iv, np.array(["a", "b"]), delta=0.05)
    <BLANKLINE>
    No row is certified as a class other than its label.
    >>> [r["rows"] for r in rows]
    [1, 1]
    """
    from ..metrics import class_certificates
    from ..utils import format_markdown

    table = class_certificates(y_index, interval)
    rows = [{**r, "class": str(c)} for r, c in zip(table.rows(), classes)]
    if not table.certified_other.any():
        print("\nNo row is certified as a class other than its label.")
        return rows
    print("\nPer class: its rows certified as another class, against the number of the rows certified as "
          "another class that the bound allows to carry its label (Σ upper_c), and the chance of as many:\n")
    print(format_markdown(rows))
    warn_class_certificates(table, classes, delta)
    return rows


@friendly_errors
def run(args: argparse.Namespace) -> int:
    from .._result import PredictionInterval
    from .._validation import check_open_unit
    from ..utils import format_markdown, prepare_output_dir, write_table
    from ..io.tables import label_array, labels_like
    from .main import CommandError

    check_chunksize(args.chunksize)
    try:
        alpha = check_open_unit(args.alpha, "--alpha")
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    model, data, columns = load_for_table(args.model, args.data, target=args.target)
    if args.output:  # before predicting or writing anything: the figures need matplotlib
        from ..plots import pyplot

        pyplot()
    features = model_features(model, columns, [args.target], data)
    classes = np.asarray(model.classes_)
    order = np.argsort(classes, kind="stable")
    folder = prepare_output_dir(args.output, overwrite=args.overwrite) if args.output else None

    y_index, parts = [], []
    usefulness = UsefulnessTally()
    for chunk, interval, first_row in predict_chunks(
        model, data, features, chunksize=args.chunksize, text_columns=[args.target], quiet=args.quiet, desc="evaluate"
    ):
        raw = label_array(chunk, args.target, path=data, first_row=first_row)
        y = labels_like(raw, classes, column=args.target, path=data, first_row=first_row)
        y_index.append(order[np.searchsorted(classes[order], y)])
        usefulness.add(interval)
        parts.append(interval)  # the comparison and the figures need every row
    if not y_index:
        raise CommandError(f"{data} has no data rows; nothing to evaluate.")
    y_index = np.concatenate(y_index)
    interval = PredictionInterval.concatenate(parts)
    del parts
    certified, trivial = interval.certified, interval.trivial
    metrics = summarize(y_index, interval.predicted_index, ~certified)
    metrics["certified_pct"] = 100.0 * float(certified.mean())
    metrics["trivial_pct"] = 100.0 * float(trivial.mean())
    row = {"model": Path(args.model).name, "data": data.name, **metrics}
    print(format_markdown([row]))
    if metrics["errors"]:
        among = (
            "no row is certified" if not certified.any()
            else f"the error among certified rows is {metrics['error_accepted_pct']:.2f}%"
        )
        print(
            f"\nThe review queue (rows not certified, ranked by error_upper) holds {metrics['review_pct']:.1f}% of "
            f"the rows and {metrics['errors_caught_pct']:.1f}% of the {metrics['errors']} errors; {among}."
        )
    delta = float(getattr(getattr(model, "estimator", model), "delta", 0.05))
    per_class = report_class_certificates(y_index, interval, classes, delta)
    rules, n_cal, n_test = compare_rules(y_index, interval, alpha=alpha, delta=delta, seed=args.seed)
    print(f"\nReview rules side by side on {n_test} held-out rows ({n_cal} other rows calibrate the marginal rules; "
          f"δ = {delta:g}):\n")
    print(format_markdown(rules))
    usefulness.report(model)
    if folder is not None:
        files = list(write_table([row], folder / "metrics", title=f"Evaluation of {row['model']} on {row['data']}"))
        files += list(write_table(per_class, folder / "classes",
                                  title=f"Rows certified as another class, per class, on {row['data']}"))
        files += list(write_table(rules, folder / "comparison", title=f"Review rules on {n_test} held-out rows of {row['data']}"))
        figures, notes = _figures(folder, classes[y_index], interval, classes, float(np.mean(~certified)), args.overwrite)
        files += figures
        for note in notes:
            print(f"note: {note}")
        print("\nWrote: " + ", ".join(str(f) for f in files))
    return 0
