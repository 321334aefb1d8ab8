"""The default model with ``device=`` against the CPU engine and gradient boosting (device check).

``NadarayaWatsonClassifier(random_state=0)`` (the default learned space, bound, bandwidth
choice and L check) fitted and asked for ``predict_interval`` three ways on the same rows of
``make_classification`` (20 features, 10 informative, a 70/30 split):

* ``cpu``: ``device=None``, the CPU engine with every core;
* ``DEV``: ``device=DEV`` (``"cuda"`` on the device check), the same float64 arithmetic;
* ``DEV f32``: ``device=DEV, dtype="float32"``, the setting the ``device`` docstring advises;

and ``HistGradientBoostingClassifier`` (every core) on the same rows. Each line gives fit and
predict seconds (the least of ``--repeat`` runs after one warm-up fit at 2 000 rows), the
certified share, and, for the device lines, the largest difference of the interval ends from the
CPU engine's, whether the fitted L equals the CPU engine's and the share of queries whose chosen
bandwidth does: the device must give the same model, only faster (a query whose ε at two bandwidths
are equal but for rounding may choose either, which moves its interval, never its validity).

Usage::

    python benchmarks/bench_device_default.py                       # cuda, 30 000 and 100 000 rows
    python benchmarks/bench_device_default.py --device cpu --sizes 3000 --repeat 1   # dry run
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import make_classification
from sklearn.ensemble import HistGradientBoostingClassifier

from nwbound import NadarayaWatsonClassifier


def _rows(n: int, classes: int):
    X, y = make_classification(n_samples=int(n / 0.7), n_features=20, n_informative=10, n_classes=classes,
                               random_state=0)
    return X[:n], y[:n], X[n:]


def _timed(make, X, y, Q, repeat, sync):
    best_fit = best_pred = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        model = make().fit(X, y)
        sync()
        t1 = time.perf_counter()
        out = model.predict_interval(Q) if hasattr(model, "predict_interval") else model.predict_proba(Q)
        sync()
        t2 = time.perf_counter()
        best_fit, best_pred = min(best_fit, t1 - t0), min(best_pred, t2 - t1)
    return model, out, best_fit, best_pred


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--sizes", default="30000,100000")
    parser.add_argument("--classes", default="2,10")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--budget", type=float, default=110.0, help="seconds; later cases are skipped")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import torch

    dev = args.device
    sync = torch.cuda.synchronize if dev.startswith("cuda") else (lambda: None)
    start = time.perf_counter()
    Xw, yw, _ = _rows(2000, 2)
    for extra in ({}, {"device": dev}, {"device": dev, "dtype": "float32"}):  # warm-up: kernels compiled
        NadarayaWatsonClassifier(random_state=0, **extra).fit(Xw, yw).predict_interval(Xw[:100])
    print(f"== default model, device {dev} ({torch.cuda.get_device_name(0) if dev.startswith('cuda') else 'cpu'}), "
          f"warm-up {time.perf_counter() - start:.1f} s ==")
    for classes in map(int, args.classes.split(",")):
        for n in map(int, args.sizes.split(",")):
            if time.perf_counter() - start > args.budget:
                print(f"SKIP {n} rows x {classes} classes: past the {args.budget:.0f} s budget")
                continue
            X, y, Q = _rows(n, classes)
            _, _, hf, hp = _timed(lambda: HistGradientBoostingClassifier(random_state=0), X, y, Q, args.repeat,
                                  lambda: None)
            ref, ref_iv, cf, cp = _timed(lambda: NadarayaWatsonClassifier(random_state=0), X, y, Q, args.repeat,
                                         lambda: None)
            print(f"ROWS {n} x 20, {classes} classes, {len(Q)} queries: HGB fit {hf:.2f} s predict {hp:.3f} s")
            print(f"  {'cpu':8s} fit {cf:7.2f} s  predict {cp:7.3f} s  total {cf + cp:7.2f} s  "
                  f"({(cf + cp) / (hf + hp):5.1f}x HGB)  certified {100 * ref_iv.certified.mean():5.1f} %  "
                  f"mean width {np.mean(ref_iv.upper - ref_iv.lower):.3f}")
            for label, extra in ((dev, {}), (f"{dev} f32", {"dtype": "float32"})):
                model, iv, f, p = _timed(lambda: NadarayaWatsonClassifier(random_state=0, device=dev, **extra),
                                         X, y, Q, args.repeat, sync)
                same = np.array_equal(np.ravel(model.lipschitz_), np.ravel(ref.lipschitz_))
                gap = max(np.abs(iv.lower - ref_iv.lower).max(), np.abs(iv.upper - ref_iv.upper).max())
                # bandwidth="auto": a choice between ε equal to rounding may go either way (never validity)
                chose = np.mean(np.asarray(iv.bandwidth) == np.asarray(ref_iv.bandwidth))
                print(f"  {label:8s} fit {f:7.2f} s  predict {p:7.3f} s  total {f + p:7.2f} s  "
                      f"({(f + p) / (hf + hp):5.1f}x HGB, {(cf + cp) / (f + p):4.1f}x faster than cpu)  "
                      f"certified {100 * iv.certified.mean():5.1f} %  mean width {np.mean(iv.upper - iv.lower):.3f}  max |d end| {gap:.1e}  "
                      f"same L: {same}  same bandwidth: {100 * chose:.2f} %")
    print(f"== bench_device_default done in {time.perf_counter() - start:.0f} s ==")


if __name__ == "__main__":
    main()
