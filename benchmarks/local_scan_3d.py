"""The local residual scan in three features: what it reads, against the true slope of p.

Fits the default ``NadarayaWatsonClassifier`` on known-p fields of ``known_p_suite.py``, with the
three-feature local scan (:func:`nwbound.assumptions.local_scans`, ``LOCAL_SCAN_3D``) as the code
has it or as the command line sets it, and prints, per fit of the learned space (two where the
estimator cross-fits):

* ``L_r`` before the scan of the residuals and after it (``metric_.residual_lipschitz_``);
* the slope the local scans read beyond their noise gate, before the safety factor 2
  (``scan_["local_lipschitz"] / 2``; 0: the gate did not pass, or no scan ran);
* the true p's steepest slope on the scanned rows, in the same standardised units: the norm of
  p's gradient in the standardised features (finite differences of the field's generator, class
  1); along a feature with at most 32 values, the difference between adjacent levels over their
  distance.

A read above p's steepest slope is a false alarm of the statistic: p itself obeys the
two-constant assumption with ``L_r`` at its own steepest slope, whatever the scores.
Also printed: the misses near the structure (``REGIONS``), the certified share, and CPU seconds of
fit + ``predict_interval`` (2 000 queries).

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/local_scan_3d.py --fields shell3,coarseflip3
--seeds 2``. ``--off``: no local scan in three features (the code before round 21); ``--degrees``,
``--sizes``, ``--cover``, ``--single``: ``LOCAL_SCAN_3D``'s settings; ``--with-levels``: run it
where a feature has few values too; ``--centroid``: each window pair's spread measured between
the two windows' mean rows instead of along the direction. Round 21 tried the last three, and
10° with three sizes; none was kept (user guide, "Bounds in a learned space").
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import known_p_suite as suite
from nwbound.assumptions import _local_scan
from nwbound.spaces._space import LearnedSpace


def steepest_slope(name: str, space: LearnedSpace, features: np.ndarray) -> float:
    """p's steepest slope (class 1) on the rows ``features`` (standardised as ``space`` scans them)."""
    fn = suite.FIELDS[name][0]
    d = features.shape[1]
    n_scores = space._mean.shape[0] - d
    step = space._scale[n_scores:] * space._units  # raw units per standardised unit
    X = (features * space._scale[n_scores:] + space._mean[n_scores:]) * space._units
    G = np.zeros_like(X)
    for j in range(d):
        levels = np.unique(X[:, j])
        if levels.shape[0] <= 32:  # adjacent levels: the difference over their distance
            at = np.searchsorted(levels, X[:, j])
            for move in (-1, 1):
                to = np.clip(at + move, 0, levels.shape[0] - 1)
                X2 = X.copy()
                X2[:, j] = levels[to]
                gap = np.abs(levels[to] - X[:, j]) / step[j]
                slope = np.abs(fn(X2)[:, 1] - fn(X)[:, 1]) / np.where(gap > 0, gap, np.inf)
                G[:, j] = np.maximum(G[:, j], slope)
        else:
            e = 1e-5 * step[j]
            hi, lo = X.copy(), X.copy()
            hi[:, j] += e
            lo[:, j] -= e
            G[:, j] = (fn(hi)[:, 1] - fn(lo)[:, 1]) / (2 * e) * step[j]
    return float(np.linalg.norm(G, axis=1).max())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fields", required=True, help="comma-separated field names, each with :n for its rows "
                                                    "(default: its first row in the suite's lists)")
    ap.add_argument("--seeds", type=int, default=2)
    degrees, sizes, cover, single = _local_scan.LOCAL_SCAN_3D
    ap.add_argument("--off", action="store_true", help="no local scan in three features")
    ap.add_argument("--degrees", type=float, default=degrees, help="the 3-D direction lattice")
    ap.add_argument("--sizes", default=",".join(map(str, sizes)), help="neighbourhood sizes")
    ap.add_argument("--cover", type=float, default=cover, help="centres per k rows")
    ap.add_argument("--single", type=int, default=single, help="the single-pair statistics' finest window")
    ap.add_argument("--with-levels", action="store_true", help="also where a feature has at most 32 values")
    ap.add_argument("--centroid", action="store_true", help="spread between the windows' mean rows")
    args = ap.parse_args()

    if args.off:
        _local_scan.LOCAL_SCAN_MAX_FEATURES = 2
    _local_scan.LOCAL_SCAN_3D = (args.degrees, tuple(int(k) for k in args.sizes.split(",")), args.cover, args.single)
    if args.with_levels:
        _local_scan.SCAN_PLANE_VALUES = 0
    if args.centroid:
        build = _local_scan.LocalResidualScan.__init__

        def centroid_spread(self, features, *a, **kw):
            build(self, features, *a, **kw)
            F = np.asarray(features, dtype=np.float64)
            D = np.stack([self._pair_difference(np.take(F[:, j], self._order)) for j in range(F.shape[1])])
            self._spread = np.sqrt(np.einsum("jcp,jcp->cp", D, D))
        _local_scan.LocalResidualScan.__init__ = centroid_spread

    fits: list = []
    scan_residuals = LearnedSpace._scan_residuals

    def recorded(self, features, y, offset, classes, rs, local_seed=None):
        before = self.residual_lipschitz_
        scan_residuals(self, features, y, offset, classes, rs, local_seed=local_seed)
        fits.append((before, self.residual_lipschitz_, self.scan_["local_lipschitz"] / 2,
                     steepest_slope(name, self, features)))
    LearnedSpace._scan_residuals = recorded

    lists = suite.UNSEEN + suite.CURVED + suite.CASES + suite.ADVERSARIAL + suite.ORDINAL
    print("| field | n | seed | missed near | certified | L_r before → after (per fit) | local read | "
          "p's steepest slope | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for spec in args.fields.split(","):
        name, _, rows = spec.partition(":")
        n = int(rows) if rows else next(size for field, size, _ in lists if field == name)
        for seed in range(args.seeds):
            fits.clear()
            t = time.process_time()
            row = suite.run(name, n, seed)
            cpu = time.process_time() - t
            near = f"{row['miss_region']:.1%}" if "miss_region" in row else "–"
            lr = ", ".join(f"{a:.2f} → {b:.2f}" for a, b, _, _ in fits)
            read = ", ".join(f"{r:.2f}" for _, _, r, _ in fits)
            true = ", ".join(f"{s:.2f}" for _, _, _, s in fits)
            print(f"| {name} | {n} | {seed} | {near} | {row['certified']:.1%} | {lr} | {read} | {true} | {cpu:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
