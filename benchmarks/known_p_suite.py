"""The default model on known-p fields built to break it: misses and certified shares.

Each field draws features and labels from known class probabilities ``p(x)``; the default
``NadarayaWatsonClassifier()`` is fitted on ``n`` rows and queried on 2 000 fresh ones. A *miss*
is a query whose true ``p_c`` lies outside ``[lower_c, upper_c]`` for some class ``c``; the
guarantee is a miss rate ≤ δ = 5 % (per query, in expectation). The fields: p along directions
a score model misses (a sine of a projection, an interaction), a rare class, five classes,
input-dependent weights, and extreme feature scales.

Run: ``OMP_NUM_THREADS=1 python benchmarks/known_p_suite.py [--quick] [--seeds N]``; prints a
markdown table (the user guide's "Known-p suite" table comes from it).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy.special import expit, softmax

from nwbound import NadarayaWatsonClassifier

_W = np.random.default_rng(999)
_A12 = _W.normal(size=(12, 2))
_V12 = _W.normal(size=12) / np.sqrt(12)


def _binary(p1):
    return np.column_stack([1 - p1, p1])


def sine12(X):  # the field: p along a sine of a direction a linear score misses
    return _binary(expit(X @ (_A12[:, 1] - _A12[:, 0]) - 2.5 * np.sin(4 * X @ _V12)))


def logistic2(X):  # the paper's field, [0, 1]² units, L = 3
    return _binary(expit(6.0 * (X[:, 0] - 0.5) * 2))


def interaction3(X):  # an interaction: no linear score sees it
    return _binary(expit(4.0 * X[:, 0] * X[:, 1]))


def sine_missed6(X):  # a linear trend plus a sine along another feature
    return _binary(expit(2.0 * X[:, 0] + 2.0 * np.sin(3.0 * X[:, 1])))


def rare3(X):  # three classes, one of them at a few per cent
    logits = np.column_stack([np.zeros(len(X)), 1.5 * X[:, 0], 2.0 * X[:, 1] - 3.5])
    return softmax(logits, axis=1)


def five4(X):  # five classes, nonlinear logits
    logits = np.column_stack([np.sin(2 * X[:, 0]), X[:, 1], X[:, 0] * X[:, 2], -X[:, 3], np.cos(2 * X[:, 1])])
    return softmax(2.0 * logits, axis=1)


FIELDS = {
    "sine12": (sine12, 12, "uniform"),
    "logistic2": (logistic2, 2, "unit"),
    "interaction3": (interaction3, 3, "uniform"),
    "sine_missed6": (sine_missed6, 6, "uniform"),
    "rare3": (rare3, 5, "normal"),
    "five4": (five4, 4, "uniform"),
}


def draw(name: str, n: int, seed: int):
    """``X, y, P`` of field ``name``: n rows, labels drawn from the true probabilities ``P``."""
    fn, d, law = FIELDS[name]
    rng = np.random.default_rng(seed)
    X = {"uniform": lambda: rng.uniform(-1, 1, (n, d)), "unit": lambda: rng.uniform(0, 1, (n, d)),
         "normal": lambda: rng.normal(size=(n, d))}[law]()
    P = fn(X)
    y = (rng.random(n)[:, None] > np.cumsum(P, axis=1)).sum(axis=1)
    return X, y, P


def run(name: str, n: int, seed: int, *, scale: float = 1.0, weights: str | None = None, **params) -> dict:
    """Fit the default on ``n`` rows of ``name`` and score 2 000 fresh queries; one table row."""
    X, y, _ = draw(name, n, seed)
    Q, _, P = draw(name, 2000, seed + 10_000)
    sw = None
    if weights == "x":  # depends on the inputs only: the guarantee holds
        sw = 1.0 + X[:, 0] ** 2
    elif weights == "balanced":
        from sklearn.utils.class_weight import compute_sample_weight
        sw = compute_sample_weight("balanced", y)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            clf = NadarayaWatsonClassifier(random_state=seed, **params).fit(X * scale, y, sample_weight=sw)
        except ValueError as exc:
            return dict(field=name, n=n, seed=seed, scale=scale, weights=weights, refused=str(exc).split(".")[0])
        iv = clf.predict_interval(Q * scale)
    seconds = time.perf_counter() - t0
    cols = np.searchsorted(np.arange(P.shape[1]), clf.classes_)
    Pc = P[:, cols]
    miss = np.any((Pc < iv.lower - 1e-12) | (Pc > iv.upper + 1e-12), axis=1)
    best = np.argmax(Pc, axis=1)
    pred = np.argmax(iv.proba, axis=1)
    cert = np.asarray(iv.certified)
    return dict(field=name, n=n, seed=seed, scale=scale, weights=weights, miss=float(miss.mean()),
                certified=float(cert.mean()), wrong_certified=float(np.mean(cert & (pred != best))),
                seconds=seconds)


CASES = [
    ("sine12", 2000, {}), ("sine12", 20000, {}), ("sine12", 2000, {"scale": 1e-200}),
    ("sine12", 2000, {"scale": 1e170}), ("logistic2", 500, {}), ("logistic2", 5000, {}),
    ("logistic2", 5000, {"weights": "x"}), ("interaction3", 3000, {}), ("sine_missed6", 3000, {}),
    ("rare3", 4000, {}), ("five4", 5000, {}), ("five4", 20000, {}),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only fields with n ≤ 5 000")
    ap.add_argument("--seeds", type=int, default=1)
    args = ap.parse_args()
    print("| field | n | setting | miss (≤ 5 %) | certified | certified, not the most probable class | fit+predict s |")
    print("|---|---|---|---|---|---|---|")
    for name, n, kw in CASES:
        if args.quick and n > 5000:
            continue
        rows = [run(name, n, seed, **kw) for seed in range(args.seeds)]
        setting = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in kw.items()) or "default"
        if "refused" in rows[0]:
            print(f"| {name} | {n} | {setting} | refused: {rows[0]['refused']} | | | |")
            continue
        agg = {k: (min(r[k] for r in rows), max(r[k] for r in rows)) for k in ("miss", "certified", "wrong_certified", "seconds")}
        fmt = lambda k, pct=True: (f"{agg[k][0]:.1%}" if agg[k][0] == agg[k][1] else f"{agg[k][0]:.1%}–{agg[k][1]:.1%}") if pct else f"{np.mean(agg[k]):.1f}"
        print(f"| {name} | {n} | {setting} | {fmt('miss')} | {fmt('certified')} | {fmt('wrong_certified')} | {fmt('seconds', False)} |", flush=True)


if __name__ == "__main__":
    main()
