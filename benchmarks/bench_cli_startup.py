"""Start-up of the command line: whole-process time of ``nwbound predict`` and of argument errors.

Fits a default model file (``nwbound fit``, the library's defaults: a learned
space, ``lipschitz="auto"``) on breast-cancer, then times fresh processes of

* ``nwbound predict`` on a 100-row file (target: ≤ 1.5 s warm);
* argument errors: an unknown option, a misspelled feature column, a
  misspelled ``--id-columns`` (target: ≤ 1 s);
* ``nwbound --help``;
* the floor: one process importing only what ``predict`` cannot do without
  (numpy, pandas, scikit-learn's base, the score models' modules, numba).

"Warm" means the second and later runs: numba's on-disk cache is filled by a
first, untimed run. Each command runs ``--runs`` times; the table gives the
median wall and CPU (user + system) seconds of the whole process, start-up
included, and the spread (min–max). Run it on a quiet machine: the figures
move with the load (``os.getloadavg`` is printed).

Usage::

    PYTHONPATH=src python benchmarks/bench_cli_startup.py [--runs 7] [--rows 100] [--keep FOLDER]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FLOOR = ("import numpy, pandas, sklearn.base, sklearn.ensemble, sklearn.linear_model, sklearn.pipeline, numba")


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system of the child) and exit code of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode


def measure(name: str, argv: list[str], cwd: Path, env: dict[str, str], runs: int) -> None:
    timed(argv, cwd, env)  # warm-up: numba's cache, the file-system cache
    rows = [timed(argv, cwd, env) for _ in range(runs)]
    walls, cpus, codes = zip(*rows)
    print(f"{name:<34} {statistics.median(walls):7.2f} {statistics.median(cpus):7.2f}   "
          f"{min(walls):.2f}–{max(walls):.2f}   exit {sorted(set(codes))}")


def breast_cancer_files(folder: Path | None, rows: int, prefix: str) -> tuple[Path, Any]:
    """``train.csv`` (breast-cancer with its ``target``) and ``query.csv`` (its first ``rows`` rows
    without it) in ``folder`` (a new temporary folder named ``prefix…`` if None); the folder and the
    frame."""
    from sklearn.datasets import load_breast_cancer

    folder = folder or Path(tempfile.mkdtemp(prefix=prefix))
    folder.mkdir(parents=True, exist_ok=True)
    frame = load_breast_cancer(as_frame=True).frame
    frame.to_csv(folder / "train.csv", index=False)
    frame.drop(columns="target").head(rows).to_csv(folder / "query.csv", index=False)
    return folder, frame


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per command (default 7)")
    parser.add_argument("--rows", type=int, default=100, help="rows of the file to predict (default 100)")
    parser.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    args = parser.parse_args(argv)

    folder, frame = breast_cancer_files(args.keep, args.rows, "nwbound-startup-")
    frame.drop(columns="target").head(args.rows).rename(columns={"mean radius": "mean radios"}).to_csv(
        folder / "typo.csv", index=False)

    env = dict(os.environ)
    cli = [sys.executable, "-m", "nwbound.cli.main"]
    fit = subprocess.run([*cli, "fit", "train.csv", "--target", "target", "-o", "model.npz", "--overwrite",
                          "--quiet"], cwd=folder, env=env, capture_output=True, text=True)
    if fit.returncode != 0:
        raise SystemExit(f"nwbound fit failed:\n{fit.stderr}")

    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores; {args.runs} runs each, "
          f"{len(frame)} training rows, {args.rows} rows predicted")
    print(f"{'command':<34} {'wall s':>7} {'cpu s':>7}   wall min–max")
    predict = [*cli, "predict", "model.npz", "query.csv", "-o", "out.csv", "--overwrite", "--quiet"]
    measure(f"predict, {args.rows} rows", predict, folder, env, args.runs)
    measure("argument error: unknown option", [*predict, "--bogus"], folder, env, args.runs)
    measure("argument error: feature column", [*cli, "predict", "model.npz", "typo.csv", "-o", "t.csv"],
            folder, env, args.runs)
    measure("argument error: --id-columns", [*predict, "--id-columns", "nope"], folder, env, args.runs)
    measure("--help", [*cli, "--help"], folder, env, args.runs)
    measure("floor: imports predict needs", [sys.executable, "-c", FLOOR], folder, env, args.runs)
    if args.keep is None:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()


if __name__ == "__main__":
    main()
