"""The separable (margin) synthetic experiment: the paper's figure 2 on margin clusters.

Two classes in balls of radius 2 whose centres are ``γ + 4`` apart (γ = 20/3 in
the raw units, ``make_margin_clusters``), min-max scaled to [0, 1]² with the
training sample, so the true margin in the scaled units is ``γ / max range``
(≈ 0.45). The paper's setting takes γ = 6.67 in the scaled units (bias term
λ/γ with λ = 0.2) with its σ = 1/4 bound; ours uses the true scaled margin
and each valid bound form of ``--bounds`` (Hoeffding, and the band-Chernoff
form where the estimators have it). Same models, grid, options and outputs as
``nwbound experiment synthetic`` restricted to the separable data (see
:mod:`nwbound.experiments.synthetic`), with the figure ``margin_figure``
(time, bound and accuracy panels).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import synthetic
from ._common import experiment_steps

__all__ = ["DESCRIPTION", "PANELS", "add_arguments", "run"]

DESCRIPTION = "figure 2 on separable data (margin γ): time, bound, accuracy and measured coverage vs n"

PANELS = ("total_time", "query_time", "fit_time", "mean_bound", "accuracy_separable")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of :func:`nwbound.experiments.synthetic.add_arguments` (no ``--datasets``)."""
    synthetic.add_arguments(parser, datasets=False)


def run(args: argparse.Namespace, output: Path) -> list[Path]:
    """Entry point of ``nwbound experiment margin`` (steps recorded, ``--resume``, summary last)."""
    config = synthetic.config_from_args(args, datasets=("separable",))
    log = experiment_steps(output, args, synthetic.run_params(config), name="margin")
    rows = synthetic.run_dataset("separable", config, log)
    return synthetic.write_results(rows, Path(output), config, panels=PANELS, stem="margin_figure", log=log)
