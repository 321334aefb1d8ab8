"""Default threads against one thread: the default model's fit + predict, quiet and under load.

Each timing runs in a fresh process (thread pools are sized when a library is first loaded), with
either the libraries' default thread counts (every core) or ``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` and ``NUMBA_NUM_THREADS`` set to 1. ``--busy N``
repeats the timings while N busy-looping processes compete for the cores, the situation of a
shared machine (user guide, "Threads")::

    PYTHONPATH=src python benchmarks/bench_threads.py --datasets breast-cancer digits --busy 0 16
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")

CHILD = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
from sklearn import datasets
from sklearn.model_selection import train_test_split
from nwbound import NadarayaWatsonClassifier
name = sys.argv[1]
X, y = getattr(datasets, "load_" + name.replace("-", "_"))(return_X_y=True)
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
NadarayaWatsonClassifier().fit(Xtr[:200], ytr[:200])  # compile once (numba), not timed
start = time.perf_counter()
clf = NadarayaWatsonClassifier().fit(Xtr, ytr)
iv = clf.predict_interval(Xte)
print(json.dumps({"seconds": time.perf_counter() - start, "certified": float(iv.certified.mean())}))
"""


def _busy() -> None:  # pragma: no cover - a load generator
    while True:
        pass


def _time_one(name: str, one_thread: bool, timeout: float) -> str:
    """Seconds of one fit + predict_interval in a fresh process, or why there is none."""
    env = dict(os.environ)
    for variable in THREAD_VARIABLES:
        if one_thread:
            env[variable] = "1"
        else:
            env.pop(variable, None)
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, name], env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"> {timeout:.0f} s"
    if proc.returncode:
        return "failed: " + proc.stderr.strip().splitlines()[-1]
    return f"{json.loads(proc.stdout)['seconds']:.1f} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["breast-cancer", "digits"],
                        help="scikit-learn bundled sets (default: breast-cancer digits)")
    parser.add_argument("--busy", nargs="+", type=int, default=[0], help="busy processes to run beside (default 0)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a timing is given up")
    args = parser.parse_args(argv)
    print(f"{os.cpu_count()} cores; fit + predict_interval of NadarayaWatsonClassifier(), 3/4 of the rows")
    print("| data set | busy processes | default threads | one thread |")
    print("|---|---|---|---|")
    for busy in args.busy:
        workers = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(busy)]
        for worker in workers:
            worker.start()
        time.sleep(1.0 if busy else 0.0)
        try:
            for name in args.datasets:
                default = _time_one(name, one_thread=False, timeout=args.timeout)
                single = _time_one(name, one_thread=True, timeout=args.timeout)
                print(f"| {name} | {busy} | {default} | {single} |", flush=True)
        finally:
            for worker in workers:
                worker.terminate()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
