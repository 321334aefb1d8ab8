"""``nwbound experiment NAME``: reproduce the paper's tables and figures.

Each experiment is a module ``nwbound.experiments.<name>`` listed in
:data:`nwbound.experiments.EXPERIMENTS`, providing

* ``DESCRIPTION: str`` — one line for ``--help``;
* ``add_arguments(parser)`` — its own options (``--quick``, ``--output``,
  ``--overwrite`` and ``--seed`` are added here for all of them);
* ``run(args, output: Path) -> list[Path]`` — does the work, writes into the
  prepared results folder, returns the files written.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import math
import time
from pathlib import Path
from typing import Sequence

from ..utils import add_resume_argument


def description(name: str) -> str:
    """The ``DESCRIPTION`` of experiment ``name``, read from its source without importing it.

    Importing an experiment imports scikit-learn and more (seconds); listing them
    for ``nwbound experiment --help`` should not.

    Examples
    --------
    >>> description("synthetic").startswith("figure 2")
    True
    """
    spec = importlib.util.find_spec(f"nwbound.experiments.{name}")
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "DESCRIPTION" for t in node.targets):
            return ast.literal_eval(node.value)
    return importlib.import_module(f"nwbound.experiments.{name}").DESCRIPTION  # not a literal: import it


def add_parser(sub, argv: Sequence[str] | None = None) -> None:
    """The ``experiment`` sub-parser; only the experiment named in ``argv`` is imported (all when None)."""
    from ..experiments import EXPERIMENTS

    p = sub.add_parser("experiment", help="reproduce a table/figure of the paper into a results folder")
    exp_sub = p.add_subparsers(dest="experiment", metavar="NAME")
    exp_sub.required = True
    named = None if argv is None else [w for w in argv if w in EXPERIMENTS]
    for name in EXPERIMENTS:
        if named is not None and name not in named[:1]:  # listed in --help, not imported
            exp_sub.add_parser(name, help=description(name))
            continue
        module = importlib.import_module(f"nwbound.experiments.{name}")
        ep = exp_sub.add_parser(name, help=module.DESCRIPTION, description=module.DESCRIPTION)
        ep.add_argument("--output", type=Path, default=None, help=f"results folder (default: results/{name})")
        ep.add_argument("--overwrite", action="store_true", help="replace results of the same name")
        add_resume_argument(ep)
        ep.add_argument("--quick", action="store_true", help="reduced grid (about two minutes or less)")
        ep.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
        ep.add_argument("--quiet", action="store_true", help="no progress bars")
        module.add_arguments(ep)
        ep.set_defaults(func=run, experiment_module=module)


def run(args: argparse.Namespace) -> int:
    from ..utils import prepare_output_dir

    target = args.output or Path("results") / args.experiment
    created = not target.exists()
    output = prepare_output_dir(target, overwrite=args.overwrite, resumable=True)  # --resume sets overwrite too
    start = time.perf_counter()
    # Files older than this run (to the second: some file systems keep whole seconds) were reused
    # from an earlier one under --resume, not written now.
    since = math.floor(time.time()) - 1
    try:
        files = args.experiment_module.run(args, output)
    except BaseException:
        if created:  # leave no empty folder behind after a rejected option
            try:
                output.rmdir()  # only succeeds while it is still empty
            except OSError:
                pass
        raise
    reused = {str(f) for f in files if (Path(output) / f).is_file() and (Path(output) / f).stat().st_mtime < since}
    kept = f" ({len(reused)} of them reused from the earlier run, unchanged)" if reused else ""
    print(f"nwbound experiment {args.experiment}: {len(files)} files{kept} in {output}, "
          f"this run {time.perf_counter() - start:.1f} s")
    for f in files:
        print(f"  {f}" + ("  (reused)" if str(f) in reused else ""))
    return 0
