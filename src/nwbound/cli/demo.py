"""``nwbound demo``: the main job on embedded synthetic data (no download)."""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    p = sub.add_parser(
        "demo",
        help="fit on synthetic data with known probabilities; print intervals and coverage; write a figure",
        description="Fit the NW classifier on the paper's synthetic logistic data (known p, "
        "L = 3.0 in [0,1]² units), print sample predictions with intervals, the empirical "
        "violation rate of the bounds (ours vs the paper's setting) and write a figure.",
    )
    p.add_argument("--output", default="results/demo", help="results folder (default: results/demo)")
    p.add_argument("--overwrite", action="store_true", help="replace demo results of the same name")
    p.add_argument("--n-train", type=int, default=20_000, help="training points (default 20000)")
    p.add_argument("--n-queries", type=int, default=2_000, help="query points (default 2000)")
    p.add_argument("--delta", type=float, default=0.05, help="failure probability δ (default 0.05)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--no-figure", action="store_true", help="skip the figure (no matplotlib needed)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..utils import format_markdown
    from ..experiments.demo import run_demo
    from .main import CommandError

    if args.n_train < 2 or args.n_queries < 1:
        raise CommandError("--n-train must be >= 2 and --n-queries >= 1.")
    result = run_demo(
        args.output,
        n_train=args.n_train,
        n_queries=args.n_queries,
        delta=args.delta,
        random_state=args.seed,
        overwrite=args.overwrite,
        make_figure=not args.no_figure,
    )
    print("Sample predictions, class-1 probability with its bound (bandwidth='auto'):\n")
    print(format_markdown(result.table))
    print(f"\nEmpirical coverage on {args.n_queries} fresh queries with known p (δ = {args.delta}):\n")
    print(format_markdown(result.coverage))
    print("\nWrote: " + ", ".join(str(f) for f in result.files))
    return 0
