"""GTSRB two-class subset (paper, appendix E): stop sign (14) vs end of speed limit 80 (6).

Regular and localized (k = 20) NWC with the paper's ``L = 0.05``, ``λ = 7.5``
on RGB pixels / 255 (32 × 32 × 3 = 3072 features, Euclidean distance), in the
paper's exact setting and in our valid default: confusion matrices, accuracy,
mean bounds, review flags; plus the evidence on the assumption
(:mod:`nwbound.assumptions`). The images are the 32 × 32 copies described in
``shared/data/MANIFEST.md`` (not the original sizes).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import numpy as np

from ..utils import add_resume_argument, format_markdown, positive_float, positive_int, progress, write_table
from ._common import (
    experiment_steps,
    fit_and_query,
    load_or_command_error,
    make_model,
    new_figure,
    quiet_bound_warnings,
    result_row,
    save_figures,
)

__all__ = ["DESCRIPTION", "add_arguments", "run", "load_gtsrb_checked"]

DESCRIPTION = "GTSRB stop (14) vs end of speed limit (6): regular and localized NWC, confusion matrices, bounds"

PAPER_LIPSCHITZ = 0.05
PAPER_BANDWIDTH = 7.5
PAPER_K = 20
CLASSES = (6, 14)
CLASS_NAMES = {6: "end of 80 limit", 14: "stop"}
DTYPE = "float32"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``nwbound experiment gtsrb``."""
    parser.add_argument("--data-dir", type=Path, default=Path("data") / "gtsrb",
                        help="folder holding GTSRB/ or gtsrb/GTSRB/ (default: data/gtsrb)")
    parser.add_argument("--lipschitz", type=positive_float, default=PAPER_LIPSCHITZ,
                        help=f"L in pixel/255 units (default the paper's {PAPER_LIPSCHITZ})")
    parser.add_argument("--bandwidth", type=positive_float, default=PAPER_BANDWIDTH,
                        help=f"λ (default the paper's {PAPER_BANDWIDTH})")
    parser.add_argument("--n-neighbors", type=positive_int, default=PAPER_K,
                        help=f"k of the localized NWC (default {PAPER_K})")
    add_resume_argument(parser)


def load_gtsrb_checked(data_dir: Path, **kwargs: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`nwbound.datasets.load_gtsrb_pair` with data problems as one-line CLI errors."""
    from ..datasets import load_gtsrb_pair

    return load_or_command_error("GTSRB data", load_gtsrb_pair, data_dir, **kwargs)


def run(args: argparse.Namespace, output: Path) -> list[Path]:
    """Run the GTSRB experiment; write tables, figures and ``summary.md`` into ``output``.

    Each model is one step of a :class:`~nwbound.utils.StepLog` (recorded as
    it finishes, skipped on ``--resume``); ``summary.md`` is written last.
    """
    from ..metrics import review_flags

    seed = int(getattr(args, "seed", 0))
    quiet = bool(getattr(args, "quiet", False))
    quick = bool(getattr(args, "quick", False))
    X, y, _ = load_gtsrb_checked(args.data_dir, subset="train", classes=CLASSES)
    X_test, y_test, _ = load_gtsrb_checked(args.data_dir, subset="test", classes=CLASSES)
    if args.n_neighbors > X.shape[0]:
        raise ValueError(f"--n-neighbors {args.n_neighbors} exceeds the {X.shape[0]} training images.")
    params = {"data_dir": str(Path(args.data_dir).resolve()), "seed": seed, "lipschitz": args.lipschitz,
              "bandwidth": args.bandwidth, "n_neighbors": args.n_neighbors, "dtype": DTYPE,
              "n_train": int(X.shape[0]), "n_test": int(X_test.shape[0])}
    log = experiment_steps(output, args, params, name="gtsrb")
    formats = ("png",) if quick else ("png", "pdf")  # PDF export is slow

    def model_step(name: str, setting: str) -> tuple[dict[str, Any], list[Path]]:
        model = make_model(name, setting=setting, lipschitz=args.lipschitz, bandwidth=args.bandwidth,
                           n_neighbors=args.n_neighbors).set_params(dtype=DTYPE)
        fq = fit_and_query(model, X, y, X_test, name=f"{name} ({setting})")
        row = result_row(fq, y_test, setting=setting, n_train=int(X.shape[0]))
        flagged = review_flags(fq.interval)
        correct = fq.y_pred == y_test
        row.update(
            share_flagged=float(flagged.mean()),
            acc_unflagged=float(correct[~flagged].mean()) if (~flagged).any() else math.nan,
            acc_flagged=float(correct[flagged].mean()) if flagged.any() else math.nan,
        )
        # The predictions are kept so the confusion figure can be drawn after a resume.
        return {"row": row, "y_pred": fq.y_pred}, []

    specs = [
        ("regular", "paper"), ("regular", "ours"), ("localized", "paper"), ("localized", "ours"),
        ("regular_auto", "ours"),
    ]
    fits = {}
    for name, setting in progress(specs, desc="gtsrb models", quiet=quiet):
        fits[(name, setting)] = log.run(f"{name} ({setting})", lambda n=name, s=setting: model_step(n, s))
    rows = [fits[key]["row"] for key in specs]

    def tables_step() -> tuple[list[dict[str, Any]], list[Path]]:
        files = list(write_table(rows, output / "gtsrb_results",
                                 title=f"GTSRB 6 vs 14, L = {args.lipschitz:g}, λ = {args.bandwidth:g}, "
                                       f"k = {args.n_neighbors}, {X.shape[0]} train / {X_test.shape[0]} test"))
        with quiet_bound_warnings():  # the Strongin pilot's bounds are not the result
            evidence = _evidence(X, y, seed)
        files += write_table(evidence, output / "choosing_assumption",
                             title="Evidence on the assumption (pixel/255 units)")
        files += _confusion_figure(fits, y_test, output, args, formats)
        files += _examples_figure(X, y, output, seed, formats)
        return evidence, files

    evidence = log.run("tables and figures", tables_step, params={"formats": formats})
    keys = ("method", "accuracy", "mean_bound", "vacuous_share", "share_flagged", "acc_unflagged", "total_s")
    log.write_summary(
        f"# GTSRB, classes {CLASSES[0]} ({CLASS_NAMES[6]}) vs {CLASSES[1]} ({CLASS_NAMES[14]})\n\n"
        f"{X.shape[0]} training / {X_test.shape[0]} test images (32 × 32 RGB), L = {args.lipschitz:g}, "
        f"λ = {args.bandwidth:g}, localized k = {args.n_neighbors}, dtype {DTYPE}.\n\n"
        f"{format_markdown([{k: r[k] for k in keys} for r in rows])}\n\n"
        f"## Evidence on the assumption\n\n{format_markdown(evidence)}\n"
    )
    return log.files


def _evidence(X: np.ndarray, y: np.ndarray, seed: int) -> list[dict[str, Any]]:
    from ..assumptions import empirical_margin, lipschitz_lower_bound, overlap_test, strongin_lipschitz

    overlap = overlap_test(X, y, n_samples=min(1000, X.shape[0]), random_state=seed)
    margin = empirical_margin(X, y)
    lower = lipschitz_lower_bound(X, y, 0.5)
    strongin = strongin_lipschitz(X, y, random_state=seed)
    return [
        {"quantity": "overlap test (appendix D)", "value": overlap.decision,
         "detail": f"ratio {overlap.ratio:.3f} (within-class {overlap.within_class_max:.3g}, "
                   f"all {overlap.global_max:.3g})"},
        {"quantity": "empirical margin", "value": f"{margin.value:.4g}",
         "detail": "upper limit of any valid margin"},
        {"quantity": "L lower bound, P_t = 0.5", "value": f"{lower.value:.4g}",
         "detail": f"diameter {lower.details['diameter']:.3g}; a lower bound only"},
        {"quantity": f"Strongin × r = {strongin.safety_factor:g}", "value": f"{strongin.value:.4g}",
         "detail": f"raw {strongin.raw_value:.4g}, pilot λ {strongin.details['bandwidth']:.3g}"},
    ]


def _confusion_figure(fits: dict, y_test: np.ndarray, output: Path, args: argparse.Namespace,
                      formats: tuple[str, ...]) -> list[Path]:
    from ..plots import ConfusionMatrixDisplay

    variants = [("regular", "ours"), ("localized", "ours")]
    fig, axes = new_figure(1, len(variants), figsize=(4.4 * len(variants), 3.8))
    labels = [f"{c}\n{CLASS_NAMES[c]}" for c in CLASSES]
    for ax, key in zip(axes[0], variants):
        disp = ConfusionMatrixDisplay.from_predictions(y_test, np.asarray(fits[key]["y_pred"]), labels=list(CLASSES),
                                                       display_labels=labels, ax=ax, colorbar=False)
        disp.ax_.set_title(f"{key[0]} (k = {args.n_neighbors})" if key[0] == "localized" else key[0], fontsize=10)
    return save_figures(fig, output, "gtsrb_confusion", formats=formats)


def _examples_figure(X: np.ndarray, y: np.ndarray, output: Path, seed: int, formats: tuple[str, ...]) -> list[Path]:
    rng = np.random.default_rng(seed)
    fig, axes = new_figure(2, 4, figsize=(6.4, 3.4))
    for r, c in enumerate(CLASSES):
        picks = rng.choice(np.flatnonzero(y == c), size=4, replace=False)
        for ax, i in zip(axes[r], picks):
            ax.imshow(X[i].reshape(32, 32, 3))
            ax.set_axis_off()
        axes[r, 0].set_title(f"class {c}: {CLASS_NAMES[c]}", fontsize=9, loc="left")
    return save_figures(fig, output, "gtsrb_examples", formats=formats)
