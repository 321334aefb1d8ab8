"""The default model's cost against gradient boosting, one thread each (issue 30, item 4).

``NadarayaWatsonClassifier(random_state=0)`` (every other parameter at its default) ``fit`` +
``predict_interval`` against a single-thread ``HistGradientBoostingClassifier(random_state=0)``
``fit`` + ``predict_proba``, on the same rows of ``make_classification`` (20 features, 10 of
them informative, ``random_state=0``; 2 and 10 classes; a 70/30 split), timed in the same run,
HGB first at each size. Every thread pool is held to one thread (the environment variables below
are set before numpy is imported, and ``threadpoolctl`` limits the pools at run time). A small fit
of each class count (both models) compiles numba's functions before any timing.

It prints one row per size and class count (both times, their ratio, both CPU times and their
ratio, accuracy of both and the certified share of the default model), then the fit time of the
default model on 1 000 rows, wall and CPU (goal: at most 1 s on one core; on a loaded machine the
wall time stretches, the CPU time much less). The goal of the issue is a ratio of
at most 2 at every size. Both models run one thread, so their CPU times (``time.process_time``) are
their work: on a shared machine, where other processes stretch the wall times unevenly, the CPU
ratio is the steadier one. ``--repeat k`` runs both models k times at each size, alternately, and
keeps each one's least time (wall and CPU): on a loaded machine one run's CPU time moves by up to
half (HGB's 0.6–1.25 s at 30 000 rows over four runs at load 3–4), the least of a few much less.

Usage::

    PYTHONPATH=src python benchmarks/bench_defaults.py            # 2 000, 10 000, 30 000, 100 000 rows
    PYTHONPATH=src python benchmarks/bench_defaults.py --quick    # 2 000 and 10 000 rows
    PYTHONPATH=src python benchmarks/bench_defaults.py --quick --classes 2 --profile
    PYTHONPATH=src python benchmarks/bench_defaults.py --repeat 3        # each time the least of 3 runs
    PYTHONPATH=src python benchmarks/bench_defaults.py --features 2 --classes 2   # low dimensions

``--profile`` runs each default fit + predict once more under cProfile (after the timed run, so
the table's times carry no profiling overhead) and prints its 15 most expensive calls by
cumulative time. ``--phases`` does the same and prints one line per size instead: the seconds
spent inside each part of the default model (:data:`PHASES`; the learned space and the L check are
parts of fit, L_r's pilot a part of the space, ``point`` the point model's judgement and fit at the
end of fit, the three passes are counted wherever they run, in fit or predict). A function of
:data:`PHASES` that never ran stops the run with an error naming it.
With ``--phases`` each size also gets a line of the share of (query, training row) pairs the host's
dense kernel-sum passes read (:func:`pairs_read`: the rest pruned, beyond the kernel's support), per
pass: the L check's, the ranking's and the other sums'.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy, numba or scikit-learn start their pools

import argparse  # noqa: E402
import cProfile  # noqa: E402
import io  # noqa: E402
import math  # noqa: E402
import pstats  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from nwbound import NadarayaWatsonClassifier  # noqa: E402
from nwbound.engine.host import _sums  # noqa: E402  (pairs_read counts its query blocks)

SIZES = (2_000, 10_000, 30_000, 100_000)
QUICK_SIZES = (2_000, 10_000)
N_FEATURES = 20
SMALL_FIT_ROWS = 1_000
GOAL_RATIO = 2.0
GOAL_SMALL_FIT_S = 1.0
#: ``--phases``: (column, functions whose cumulative time it adds up, as (path under
#: ``src/nwbound/``, name)). Every function must be seen in each profile (:func:`phase_seconds`
#: raises otherwise), so a moved or renamed function fails the run instead of printing 0.
PHASES = (
    ("space", (("spaces/_space.py", "_fit"),)),               # LearnedSpace._fit (every fit route): score model, L_r
    ("L_r pilot", (("assumptions/_lipschitz.py", "estimate_lipschitz"),)),  # inside space
    ("L check", (("spaces/_lipschitz.py", "choose_lipschitz"),)),
    ("point", (("estimators/_nadaraya_watson.py", "_fit_point_estimate"),)),  # point_estimate="auto"'s model
    ("predict", (("estimators/_nadaraya_watson.py", "predict_interval"),)),
    ("ranking", (("engine/host/_backend.py", "_route_ranking"),)),  # bandwidth="auto": the grid's moments
    ("sums", (("engine/host/_sums.py", "dense_kernel_sums"),)),      # the chosen bandwidth's kernel sums
    ("bounds", (("bounds/_spec.py", "limits"), ("bounds/_spec.py", "certified"))),  # Chernoff searches
)


def dataset(n_rows: int, n_classes: int, n_features: int = N_FEATURES) -> tuple[np.ndarray, ...]:
    """``make_classification`` rows split 70/30: ``X_train, y_train, X_test, y_test``.

    ``n_features`` below 20 (``--features``): min(10, n_features) informative features, the rest
    (at most 2) redundant; 20 gives the benchmark's rows (10 informative, 2 redundant).
    """
    informative = min(10, n_features)
    X, y = make_classification(n_samples=n_rows, n_features=n_features, n_informative=informative,
                               n_redundant=min(2, n_features - informative), n_classes=n_classes, random_state=0)
    cut = int(0.7 * n_rows)
    return X[:cut], y[:cut], X[cut:], y[cut:]


def run_hgb(X, y, Q, y_q) -> tuple[float, float, float]:
    """Wall and CPU seconds of HGB fit + predict_proba, and its accuracy on the test rows."""
    start, cpu = time.perf_counter(), time.process_time()
    proba = HistGradientBoostingClassifier(random_state=0).fit(X, y).predict_proba(Q)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return seconds, cpu, float(np.mean(np.argmax(proba, axis=1) == y_q))


def run_default(X, y, Q, y_q) -> tuple[float, float, float, float]:
    """Wall and CPU seconds of the default model's fit + predict_interval, its accuracy and certified share."""
    start, cpu = time.perf_counter(), time.process_time()
    iv = NadarayaWatsonClassifier(random_state=0).fit(X, y).predict_interval(Q)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return seconds, cpu, float(np.mean(np.argmax(iv.proba, axis=1) == y_q)), float(np.mean(iv.certified))


def _profiled(X, y, Q) -> pstats.Stats:
    """cProfile statistics of one default fit + predict_interval."""
    profiler = cProfile.Profile()
    profiler.enable()
    NadarayaWatsonClassifier(random_state=0).fit(X, y).predict_interval(Q)
    profiler.disable()
    return pstats.Stats(profiler, stream=io.StringIO())


def _pass_name() -> str:
    """Which pass the current dense kernel-sum call serves, from the calling functions' names."""
    names = set()
    frame = sys._getframe(2)
    while frame is not None:
        names.add(frame.f_code.co_name)
        frame = frame.f_back
    ranking = "dense_moment_sums" in names or "bounded_moment_sums" in names
    return "L check" if "choose_lipschitz" in names else "ranking" if ranking else "sums"


def pairs_read(X, y, Q) -> dict[str, tuple[float, float]]:
    """One default fit + predict_interval: per pass (L check, ranking, sums), the (query, training row)
    pairs the host's dense passes read and all their pairs (read + pruned), counted from the query
    blocks each pass cuts (``_sums._dense_tasks``: training rows per block, None for all)."""
    counts: dict[str, list[float]] = {}
    tasks_of = _sums._dense_tasks

    def counting(Xq, lay, *args, **kwargs):
        tasks = tasks_of(Xq, lay, *args, **kwargs)
        n = lay.augmented.shape[0]
        read = 0
        for rows, cols in tasks:
            n_rows = len(range(*rows.indices(Xq.shape[0]))) if isinstance(rows, slice) else len(rows)
            width = n if cols is None else cols.stop - cols.start if isinstance(cols, slice) else len(cols)
            read += n_rows * width
        entry = counts.setdefault(_pass_name(), [0.0, 0.0])
        entry[0] += read
        entry[1] += Xq.shape[0] * n
        return tasks

    _sums._dense_tasks = counting
    try:
        NadarayaWatsonClassifier(random_state=0).fit(X, y).predict_interval(Q)
    finally:
        _sums._dense_tasks = tasks_of
    return {name: (read, total) for name, (read, total) in counts.items()}


def profile_default(X, y, Q, top: int = 15) -> str:
    """cProfile of one default fit + predict_interval: the ``top`` calls by cumulative time."""
    stats = _profiled(X, y, Q)
    stats.sort_stats("cumulative").print_stats(top)
    return stats.stream.getvalue()


def phase_seconds(stats: pstats.Stats) -> dict[str, float]:
    """Cumulative seconds inside each part of :data:`PHASES`, and ``total`` (the whole profile).

    Raises
    ------
    RuntimeError
        If a function named in :data:`PHASES` is not in the profile (moved, renamed or no longer
        called): its column would otherwise print 0.
    """
    out = {name: 0.0 for name, _ in PHASES}
    seen = set()
    for (path, _, function), (_, _, _, cumulative, _) in stats.stats.items():
        path = path.replace(os.sep, "/")
        for name, keys in PHASES:
            for suffix, fn in keys:
                if path.endswith("nwbound/" + suffix) and function == fn:
                    out[name] += cumulative
                    seen.add((suffix, fn))
    missing = [f"{suffix}:{fn}" for _, keys in PHASES for suffix, fn in keys if (suffix, fn) not in seen]
    if missing:
        raise RuntimeError(f"--phases: {', '.join(missing)} never ran in the profile (moved or renamed?); "
                           "update PHASES in benchmarks/bench_defaults.py.")
    out["total"] = stats.total_tt
    return out


def warm_up(class_counts: tuple[int, ...]) -> None:
    """Compile numba's functions, import everything and start HGB's thread pool before any timing."""
    for n_classes in class_counts:
        X, y, Q, y_q = dataset(600, n_classes)
        NadarayaWatsonClassifier(random_state=0).fit(X, y).predict_interval(Q)
        run_hgb(X, y, Q, y_q)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(map(str, QUICK_SIZES))} rows")
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="row counts (overrides --quick)")
    parser.add_argument("--classes", type=int, nargs="+", default=[2, 10], help="class counts (default 2 10)")
    parser.add_argument("--profile", action="store_true", help="cProfile top 15 (cumulative) of each default fit")
    parser.add_argument("--phases", action="store_true", help="seconds inside each part of each default fit (cProfile)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of both models per size, the least time kept")
    parser.add_argument("--features", type=int, default=N_FEATURES,
                        help=f"features of the rows (default {N_FEATURES}; fewer: low dimensions, use --classes 2)")
    args = parser.parse_args(argv)
    sizes = tuple(args.sizes) if args.sizes else QUICK_SIZES if args.quick else SIZES
    if any(n < 100 for n in sizes) or any(c < 2 for c in args.classes):
        parser.error("--sizes must be at least 100 rows and --classes at least 2")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.features < 1 or any(c * 2 > 2 ** min(10, args.features) for c in args.classes):
        parser.error(f"--features {args.features} cannot separate {max(args.classes)} classes "
                     "(make_classification needs 2·classes <= 2**informative features): use fewer --classes")
    warnings.simplefilter("ignore")  # the bound advice warnings are not what is measured here

    with threadpool_limits(limits=1):
        warm_up(tuple(args.classes))
        print(f"default NadarayaWatsonClassifier fit+predict_interval vs single-thread HistGradientBoosting "
              f"fit+predict_proba; make_classification, {args.features} features, 70/30 split, one thread each")
        print(f"{'rows':>8} {'classes':>7} {'default s':>10} {'HGB s':>8} {'ratio':>7} {'default CPU':>11} "
              f"{'HGB CPU':>8} {'CPU ratio':>9} {'acc':>6} {'HGB acc':>7} {'certified':>9}")
        ratios, cpu_ratios, phases = [], [], []
        for n_rows in sizes:
            for n_classes in args.classes:
                X, y, Q, y_q = dataset(n_rows, n_classes, args.features)
                runs = [(run_hgb(X, y, Q, y_q), run_default(X, y, Q, y_q)) for _ in range(args.repeat)]
                hgb_s, hgb_cpu = (min(r[0][i] for r in runs) for i in (0, 1))
                nw_s, nw_cpu = (min(r[1][i] for r in runs) for i in (0, 1))
                hgb_acc, (nw_acc, certified) = runs[0][0][2], runs[0][1][2:]
                ratios.append(nw_s / hgb_s)
                cpu_ratios.append(nw_cpu / hgb_cpu)
                print(f"{n_rows:>8} {n_classes:>7} {nw_s:>10.2f} {hgb_s:>8.2f} {nw_s / hgb_s:>6.1f}× {nw_cpu:>11.2f} "
                      f"{hgb_cpu:>8.2f} {nw_cpu / hgb_cpu:>8.1f}× {nw_acc:>6.3f} {hgb_acc:>7.3f} {certified:>9.1%}",
                      flush=True)
                if args.profile:
                    print(profile_default(X, y, Q), flush=True)
                if args.phases:
                    phases.append((n_rows, n_classes, hgb_s, phase_seconds(_profiled(X, y, Q)), pairs_read(X, y, Q)))
        if phases:
            names = [name for name, _ in PHASES]
            print("seconds inside each part of one profiled default fit + predict_interval (cProfile, cumulative; "
                  "the last three wherever they run):")
            print(f"{'rows':>8} {'classes':>7} {'total':>7} " + " ".join(f"{n:>9}" for n in names) + f" {'HGB':>6}")
            for n_rows, n_classes, hgb_s, sec, _ in phases:
                print(f"{n_rows:>8} {n_classes:>7} {sec['total']:>7.2f} " + " ".join(f"{sec[n]:>9.2f}" for n in names)
                      + f" {hgb_s:>6.2f}")
            print("(query, training row) pairs the dense kernel-sum passes read, of all their pairs (the rest pruned):")
            for n_rows, n_classes, _, _, pairs in phases:
                print(f"{n_rows:>8} {n_classes:>7}  " + ", ".join(
                    f"{name} {read / total:.0%} of {total:.3g}" for name, (read, total) in sorted(pairs.items())))
        for n_classes in args.classes:
            X, y, _, _ = dataset(int(SMALL_FIT_ROWS / 0.7) + 1, n_classes, args.features)
            X, y = X[:SMALL_FIT_ROWS], y[:SMALL_FIT_ROWS]
            seconds = cpu = math.inf
            for _ in range(args.repeat):
                start, cpu_start = time.perf_counter(), time.process_time()
                NadarayaWatsonClassifier(random_state=0).fit(X, y)
                seconds = min(seconds, time.perf_counter() - start)
                cpu = min(cpu, time.process_time() - cpu_start)
            print(f"fit on {SMALL_FIT_ROWS} rows, {n_classes} classes: {seconds:.2f} s, CPU {cpu:.2f} s "
                  f"(goal <= {GOAL_SMALL_FIT_S:g} s)")
        print(f"largest ratio {max(ratios):.1f}×, of CPU times {max(cpu_ratios):.1f}× (goal <= {GOAL_RATIO:g}×)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
