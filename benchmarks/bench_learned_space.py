"""``metric=`` and ``lipschitz="auto"``: what a learned space costs and what it buys.

Sections (all by default; pick with ``--sections``):

* ``speed``: fit + ``predict_interval`` at the ECG shapes of ``run.py`` (87 554 × 100 training
  rows, 21 892 queries; ``--quick``: 20 000 × 4 000), ``bandwidth="auto"``, float32, a fixed L:
  today's classifier (``metric=None``) against ``metric="auto"`` with one split and cross-fitted, interleaved, median of
  ``--repeats``; prints both and their ratio (the target: at most 1.5×).
* ``candidates``: on known-p fields (p a function of 2 of 12 features, a 3-class field of
  3 directions in 20, and p a function of 3 of 60 features), over ``--draws`` independent draws,
  each candidate space with ``lipschitz="auto"`` and ``bandwidth="auto"``:
  certified share, error among the certified, accuracy, and the share of queries whose interval
  misses the true p (δ = 0.05). Candidates: Euclidean, LDA, logistic-regression scores,
  gradient-boosting scores alone, and ``"auto"`` (scores + r·features) for several r.
* ``grid``: coverage and certified share at pilot × 2^k, k = −6 … 2, to show where the held-out
  check's choice is safe (why the grid of ``lipschitz="auto"`` starts at pilot/2).
* ``crossfit``: single split against ``cross_fit=True`` (the swapped pair) and ``cross_fit="auto"``
  (the pair and three folds, 5 models at δ/5) on the same fields.
* ``fraction``: ``metric_fraction`` 0.25 / 0.4 / 0.55 on the same fields.

Run: ``PYTHONPATH=src python benchmarks/bench_learned_space.py [--quick] [--sections speed,grid]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import ECG_FULL, ECG_QUICK, ecg_like  # noqa: E402

from nwbound import NadarayaWatsonClassifier  # noqa: E402
from nwbound import spaces  # noqa: E402


def field(kind: str, n: int, seed: int):
    """Known-p fields: ``(X, y, P)`` with P the true class probabilities."""
    rng = np.random.default_rng(seed)
    if kind == "logistic":  # 12-D, p = σ(4(x0 + x1))
        X = rng.uniform(-1, 1, (n, 12))
        p = 1 / (1 + np.exp(-4 * (X[:, 0] + X[:, 1])))
        P = np.stack([1 - p, p], 1)
    elif kind == "sine":  # 12-D, p = 0.5 + 0.45 sin(2x0) cos(2x1): not monotone in any score
        X = rng.uniform(-1, 1, (n, 12))
        p = 0.5 + 0.45 * np.sin(2 * X[:, 0]) * np.cos(2 * X[:, 1])
        P = np.stack([1 - p, p], 1)
    elif kind == "sine60":  # 60-D, p = 0.5 + 0.45 sin(2x0) cos(1.5(x1 + x2)): 3 of 60 features
        X = rng.uniform(-1, 1, (n, 60))
        p = 0.5 + 0.45 * np.sin(2 * X[:, 0]) * np.cos(1.5 * (X[:, 1] + X[:, 2]))
        P = np.stack([1 - p, p], 1)
    else:  # "softmax3": 20-D, 3 classes, softmax of 3 directions
        X = rng.normal(size=(n, 20))
        W = np.random.default_rng(99).normal(size=(20, 3)) * np.array([1.5] * 3 + [0.0] * 17)[:, None]
        logits = X @ W
        P = np.exp(logits - logits.max(1, keepdims=True))
        P /= P.sum(1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(P, 1)).sum(1)
    return X, y, P


def evaluate(clf, Q, P):
    iv = clf.predict_interval(Q)
    miss = np.any((P < iv.lower - 1e-12) | (P > iv.upper + 1e-12), axis=1)
    cert = iv.certified
    truth = np.argmax(P, 1)
    pred = iv.predicted_index
    bayes_err = 1 - P[np.arange(len(P)), pred]  # expected error of each prediction
    return dict(cert=cert.mean(), err_cert=bayes_err[cert].mean() if cert.any() else float("nan"),
                acc_bayes=np.mean(pred == truth), miss=miss.mean())


def candidates(quick: bool, draws: int = 1) -> None:
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression

    n = 3000 if quick else 8000
    spaces_ = {
        "euclidean": None,
        "lda": LinearDiscriminantAnalysis(),
        "logistic scores": LogisticRegression(max_iter=1000),
        "hgb scores": HistGradientBoostingClassifier(max_iter=100, random_state=0),
    }
    weights = (0.1, 0.25, 0.5, 1.0)
    print(f"\ncandidates: n = {n}, lipschitz='auto', bandwidth='auto', delta = 0.05; "
          "error = mean true error probability of the certified predictions")
    print(f"  {'field':<9} {'draw':>4} {'space':<16} {'L':>8} {'certified':>9} {'err|cert':>8} {'agree w/ Bayes':>14} "
          f"{'miss p':>7}")
    for kind, draw in [(k, s) for k in ("logistic", "sine", "softmax3", "sine60") for s in range(draws)]:
        X, y, _ = field(kind, n, 10 * draw + 1)
        Q, _, P = field(kind, 2000, 10 * draw + 2)
        rows = list(spaces_.items()) + [(f"auto r={w}", ("auto", w)) for w in weights]
        for name, metric in rows:
            old = spaces.AUTO_FEATURE_WEIGHT
            if isinstance(metric, tuple):
                spaces._space.AUTO_FEATURE_WEIGHT = metric[1]
                metric = "auto"
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    clf = NadarayaWatsonClassifier(bandwidth="auto", lipschitz="auto", metric=metric).fit(X, y)
                    r = evaluate(clf, Q, P)
            finally:
                spaces._space.AUTO_FEATURE_WEIGHT = old
            print(f"  {kind:<9} {draw:>4} {name:<16} {clf.lipschitz_:>8.3g} {r['cert']:>9.3f} {r['err_cert']:>8.3f} "
                  f"{r['acc_bayes']:>14.3f} {r['miss']:>7.3f}", flush=True)


def grid(quick: bool) -> None:
    n = 3000 if quick else 6000
    print(f"\ngrid: coverage at pilot × 2^k (n = {n}, bandwidth='auto'): certified share / share of queries missing p")
    for kind in ("logistic", "sine", "sine60"):
        X, y, _ = field(kind, n, 0)
        Q, _, P = field(kind, 1500, 1)
        for metric in (None, "auto"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clf = NadarayaWatsonClassifier(bandwidth="auto", lipschitz="auto", metric=metric).fit(X, y)
                pilot = clf.lipschitz_report_.pilot
                # What the check alone would pick on the wide grid (k = -6 .. 2).
                from nwbound.assumptions import select_lipschitz

                held = clf.check_rows_
                wide = select_lipschitz(clf, X[held], y[held], [pilot * 2.0**k for k in range(-6, 3)])
                cells = []
                for k in range(-6, 3):
                    iv = clf.predict_interval(Q, bounds={"a": {"lipschitz": pilot * 2.0**k}})["a"]
                    miss = np.any((P < iv.lower) | (P > iv.upper), axis=1).mean()
                    cells.append(f"{k:+d}: {iv.certified.mean():.2f}/{miss:.3f}")
            print(f"  {kind:<8} {str(metric):<5} pilot {pilot:.3g}; check on k=-6..2 picks k = "
                  f"{np.log2(wide.chosen / pilot):+.0f}; auto's grid picks k = {np.log2(clf.lipschitz_ / pilot):+.0f}\n    "
                  + "  ".join(cells), flush=True)


def crossfit(quick: bool) -> None:
    n = 3000 if quick else 8000
    print(f"\ncross-fitting vs one split (n = {n}, metric='auto', lipschitz='auto', bandwidth='auto')")
    for kind in ("logistic", "sine", "softmax3"):
        X, y, _ = field(kind, n, 3)
        Q, _, P = field(kind, 2000, 4)
        for cf in (False, True, "auto"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = time.perf_counter()
                clf = NadarayaWatsonClassifier(bandwidth="auto", lipschitz="auto", metric="auto", cross_fit=cf).fit(X, y)
                r = evaluate(clf, Q, P)
                t = time.perf_counter() - t
            print(f"  {kind:<9} cross_fit={cf!s:<6} certified {r['cert']:.3f}, err|cert {r['err_cert']:.3f}, "
                  f"agree w/ Bayes {r['acc_bayes']:.3f}, miss p {r['miss']:.3f}, {t:.1f} s", flush=True)


def fraction(quick: bool) -> None:
    n = 3000 if quick else 8000
    print(f"\nmetric_fraction (n = {n}, metric='auto', lipschitz='auto', bandwidth='auto')")
    for kind in ("logistic", "sine", "softmax3"):
        X, y, _ = field(kind, n, 5)
        Q, _, P = field(kind, 2000, 6)
        for f in (0.25, 0.4, 0.55):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clf = NadarayaWatsonClassifier(bandwidth="auto", lipschitz="auto", metric="auto", metric_fraction=f).fit(X, y)
                r = evaluate(clf, Q, P)
            print(f"  {kind:<9} metric_fraction={f:<5} certified {r['cert']:.3f}, err|cert {r['err_cert']:.3f}, "
                  f"agree w/ Bayes {r['acc_bayes']:.3f}, miss p {r['miss']:.3f}", flush=True)


def speed(quick: bool, repeats: int) -> None:
    n_train, n_query = ECG_QUICK if quick else ECG_FULL
    X, y, Q = ecg_like(n_train, n_query)
    print(f"\nspeed: ECG shapes {n_train} × {X.shape[1]} train, {n_query} queries, bandwidth='auto', float32, "
          f"n_jobs=-1; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    def run(metric, lipschitz, cross_fit):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = NadarayaWatsonClassifier(bandwidth="auto", lipschitz=lipschitz, dtype="float32", n_jobs=-1,
                                           metric=metric, cross_fit=cross_fit).fit(X, y)
            t1 = time.perf_counter()
            iv = clf.predict_interval(Q)
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1, iv.certified.mean()

    settings = (("none", None, 0.05, False), ("auto", "auto", 0.5, False), ("auto+cross_fit", "auto", 0.5, True))
    for _, metric, L, cf in settings:  # warm-up (JIT) of every path, on a slice
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            NadarayaWatsonClassifier(bandwidth="auto", lipschitz=L, dtype="float32", n_jobs=-1, metric=metric,
                                     cross_fit=cf).fit(X[:3000], y[:3000]).predict_interval(Q[:500])
    times = {name: [] for name, *_ in settings}
    for r in range(repeats):
        for name, metric, L, cf in settings[:: 1 if r % 2 == 0 else -1]:
            times[name].append(run(metric, L, cf))
        print("  repeat %d: " % (r + 1) + ", ".join(
            f"{k}: fit {v[-1][0]:.2f} s + predict {v[-1][1]:.2f} s (certified {v[-1][2]:.3f})" for k, v in times.items()),
            flush=True)
    med = {k: statistics.median(a + b for a, b, _ in v) for k, v in times.items()}
    print("  median fit + predict: " + ", ".join(f"{k} {v:.2f} s ({v / med['none']:.2f}×)" for k, v in med.items())
          + " (target: metric='auto' ≤ 1.5× metric=None)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller shapes")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--draws", type=int, default=3, help="independent draws of each field (candidates)")
    parser.add_argument("--sections", default="speed,candidates,grid,crossfit")
    args = parser.parse_args(argv)
    for section in args.sections.split(","):
        {"speed": lambda: speed(args.quick, args.repeats), "candidates": lambda: candidates(args.quick, args.draws),
         "grid": lambda: grid(args.quick), "crossfit": lambda: crossfit(args.quick),
         "fraction": lambda: fraction(args.quick)}[section]()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
