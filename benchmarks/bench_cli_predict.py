"""``nwbound predict`` warm on a 100-row file with the default model (issue 32's target: at most 1.5 s).

Fits the default model on breast-cancer with ``nwbound fit`` (the library's defaults: a learned
space, ``lipschitz="auto"``, cross-fitted), writes the first ``--rows`` rows without the target,
then times fresh ``nwbound predict`` processes (start-up included) after one untimed warm-up run
(numba's on-disk cache, the file-system cache, Python's bytecode), and an argument error (an
unknown option; target at most 1 s). With ``--baseline SRC`` the same is timed with the package
at ``SRC`` (e.g. another checkout's ``src``), on a model file that code fits itself, in
alternation with this checkout's runs so that both see the same load.

Prints, per command, the minimum and median wall and CPU (user + system of the process)
seconds over ``--runs`` runs; the machine's load average is printed too (the figures move with
it). Python's bytecode must be writable (``PYTHONDONTWRITEBYTECODE`` unset), or every run
compiles the modules again (about 0.2 s).

Usage::

    PYTHONPATH=src python benchmarks/bench_cli_predict.py [--runs 7] [--rows 100] [--baseline ../main/src]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from bench_cli_startup import breast_cancer_files, timed  # this folder: one process's wall and CPU seconds

SRC = Path(__file__).resolve().parents[1] / "src"


def run(argv: list[str], cwd: Path, src: Path) -> tuple[float, float, int]:
    """:func:`bench_cli_startup.timed` with the package at ``src`` and Python's bytecode writable."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return timed(argv, cwd, dict(env, PYTHONPATH=str(src)))


def fit(folder: Path, src: Path, model: str) -> None:
    cli = [sys.executable, "-m", "nwbound.cli.main"]
    env = dict(os.environ, PYTHONPATH=str(src))
    proc = subprocess.run([*cli, "fit", "train.csv", "--target", "target", "-o", model, "--overwrite", "--quiet"],
                          cwd=folder, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"nwbound fit ({src}) failed:\n{proc.stderr}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per command (default 7)")
    parser.add_argument("--rows", type=int, default=100, help="rows of the file to predict (default 100)")
    parser.add_argument("--baseline", type=Path, default=None, help="another nwbound's src folder to compare")
    parser.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    args = parser.parse_args(argv)

    folder, frame = breast_cancer_files(args.keep, args.rows, "nwbound-predict-")
    sources = {"this checkout": (SRC, "model.npz")}
    if args.baseline is not None:
        sources["baseline"] = (args.baseline.resolve(), "baseline.npz")
    for src, model in sources.values():
        fit(folder, src, model)

    cli = [sys.executable, "-m", "nwbound.cli.main"]
    commands = {}
    for name, (src, model) in sources.items():
        predict = [*cli, "predict", model, "query.csv", "-o", f"out-{model}.csv", "--overwrite", "--quiet"]
        commands[f"predict, {args.rows} rows ({name})"] = (predict, src)
        commands[f"argument error ({name})"] = ([*predict, "--bogus"], src)
    for argv_, src in commands.values():
        run(argv_, folder, src)  # warm-up: numba's cache, bytecode, the file-system cache
    results: dict[str, list] = {name: [] for name in commands}
    for _ in range(args.runs):  # alternate the commands: each sees the same load
        for name, (argv_, src) in commands.items():
            results[name].append(run(argv_, folder, src))

    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores; {args.runs} runs each, "
          f"{len(frame)} training rows, {args.rows} rows predicted")
    print(f"{'command':<40} {'wall min':>8} {'median':>7} {'cpu min':>8} {'median':>7}  exit")
    for name, rows in results.items():
        walls, cpus, codes = zip(*rows)
        print(f"{name:<40} {min(walls):8.2f} {statistics.median(walls):7.2f} {min(cpus):8.2f} "
              f"{statistics.median(cpus):7.2f}  {sorted(set(codes))}")
    if args.keep is None:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()


if __name__ == "__main__":
    main()
