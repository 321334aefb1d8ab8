"""One fit of ``known_p_random.py``, and what let its misses through.

For field ``NUMBER`` of ``FAMILY`` on seed ``SEED`` (``--rows``: another number of rows), the
default model's misses overall, in the steepest tenth and in each rare class's region (mean p under
6 %, p ≥ 1/4; on 20 000 more queries); then, per cross-fitted model, the score model, ``L``,
``L_r`` (and the raise shared from another model), the held-out estimate's resolution, the scans'
reads and the true slope of what the scores miss, ``|∇(p − s)|`` per std of the features (by
central differences of 1e-4 std; ``s`` from the space's ``score_proba``), against ``L_r``.

``--budget B`` runs the fit with the local scans' budget (``LOCAL_SCAN_BUDGET``) at ``B`` instead,
by patching ``local_scans``' default: an experiment, never the library's behaviour.

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/diag_known_p_random.py rare 88 0
[--rows 30000] [--budget 1e9]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from nwbound import NadarayaWatsonClassifier

_SCRIPT = Path(__file__).resolve().parent / "known_p_random.py"
_spec = importlib.util.spec_from_file_location("known_p_random", _SCRIPT)
kpr = importlib.util.module_from_spec(_spec)
sys.modules["known_p_random"] = kpr  # its dataclass looks its module up there
_spec.loader.exec_module(kpr)


def residual_slope(fld, space, Q: np.ndarray, classes: np.ndarray, std: np.ndarray) -> np.ndarray:
    """``max_c |∇(p_c − s_c)|`` per query, per std of the features."""
    g2 = np.zeros((Q.shape[0], classes.size))
    for j in range(Q.shape[1]):  # one pass per feature, vectorised over the queries
        up, down = Q.copy(), Q.copy()
        up[:, j] += 1e-4 * std[j]
        down[:, j] -= 1e-4 * std[j]
        r_up = fld.proba(up)[:, classes] - space.score_proba(up, classes)
        r_down = fld.proba(down)[:, classes] - space.score_proba(down, classes)
        g2 += ((r_up - r_down) / 2e-4) ** 2
    return np.sqrt(g2.max(axis=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("family", choices=sorted(kpr.FAMILIES))
    ap.add_argument("number", type=int)
    ap.add_argument("seed", type=int)
    ap.add_argument("--rows", type=int, default=None)
    ap.add_argument("--budget", type=float, default=None)
    args = ap.parse_args()
    if args.budget is not None:
        from nwbound.assumptions import _local_scan
        _local_scan.local_scans.__kwdefaults__["budget"] = args.budget
    fld = kpr.draw_field(args.number, args.family)
    n = args.rows or fld.n_rows
    rng = np.random.default_rng(args.seed)
    X = fld.features(rng, n)
    y = (rng.random(n)[:, None] > np.cumsum(fld.proba(X), axis=1)).sum(axis=1)
    Q = fld.features(np.random.default_rng(args.seed + 50_000), 2000)
    P = fld.proba(Q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        clf = NadarayaWatsonClassifier(random_state=args.seed).fit(X, y)
        cpu = time.process_time() - t0
        iv = clf.predict_interval(Q)
    classes = clf.classes_
    miss = kpr._misses(clf, iv, P[:, classes], fld.n_classes)
    steep = kpr.steepness(fld, Q)
    top = steep >= np.quantile(steep, 0.9)
    print(f"{args.family} {args.number} seed {args.seed}: {fld.describe()}; {n} rows, {X.shape[1]} features, "
          f"class shares {np.round(np.bincount(y, minlength=fld.n_classes) / n, 3).tolist()}; fit {cpu:.1f} s CPU")
    print(f"miss {miss.mean():.1%}, steepest tenth {miss[top].mean():.1%}, certified "
          f"{np.mean(iv.certified):.1%}, mean width {np.mean(iv.upper - iv.lower):.3f}")
    Qr = fld.features(np.random.default_rng(args.seed + 60_000), 20_000)
    Pr = fld.proba(Qr)
    for c in np.flatnonzero(P.mean(axis=0) < 0.06):
        region = Pr[:, c] >= 0.25
        if region.any():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ivr = clf.predict_interval(Qr[region])
            missed = kpr._misses(clf, ivr, Pr[region][:, classes], fld.n_classes)
            print(f"rare class {c}: region {region.sum()} of 20 000 queries, {np.sum(fld.proba(X)[:, c] >= 0.25)} "
                  f"training rows ({np.sum((fld.proba(X)[:, c] >= 0.25) & (y == c))} of class {c}); p there median "
                  f"{np.median(Pr[region, c]):.2f}, upper median {np.median(ivr.upper[:, c]):.2f}; "
                  f"miss {missed.mean():.1%}")
    lr = clf.lipschitz_report_
    reports = clf.metric_report_ if isinstance(clf.metric_report_, tuple) else (clf.metric_report_,)
    print("score model:", [r.chosen for r in reports], "| L pilot:",
          [round(r.pilot, 3) for r in (lr if isinstance(lr, tuple) else (lr,))])
    std = np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
    for i, model in enumerate(getattr(clf, "cross_fit_models_", None) or [clf]):
        sp = model.metric_
        scan = sp.scan_ or {}
        print(f"model {i}: L {model.lipschitz_:.3g}, L_r {sp.residual_lipschitz_:.3g} "
              f"(held-out {sp.feature_weight_:.3g}, shared {sp.shared_residual_lipschitz_}), "
              f"resolution {sp.resolution_:.2f} std; scan read "
              f"{scan.get('lipschitz', float('nan')):.3g} (raised {scan.get('raised')}), local scans "
              f"{scan.get('local_rows')} read {scan.get('local_lipschitz', float('nan')):.3g}")
        if sp.score_proba(Q[:1], classes) is not None:
            slope = residual_slope(fld, sp, Q, classes, std)
            print(f"   true |∇(p − s)| per std: median {np.median(slope):.3g}, "
                  f"q99 {np.quantile(slope, 0.99):.3g}, max {slope.max():.3g}; at the misses, median "
                  f"{np.median(slope[miss]) if miss.any() else float('nan'):.3g}")


if __name__ == "__main__":
    main()
