"""Time the band-Chernoff interval (numpy and numba routes) at the ECG benchmark shapes.

Shapes: n = 21 892 queries, C = 5 classes, and either B = 32 distance bins per query
(the regular classifier's histogram form) or k = 10 per-point groups (localized).
The data are synthetic but shaped like the real ones: Epanechnikov weights of points
spread over a ball, class probabilities concentrated on one class for most queries.
Prints the time of each route, their largest difference, and the mean width ratio
against the Hoeffding interval on the same groups.

``--widths`` adds the width measurement on a known-p field (3 classes on the unit square,
softmax of linear logits, L from the field's largest gradient ×1.05, Epanechnikov kernel):
mean width ratio Chernoff/Hoeffding overall and where the true max class probability is
≥ 0.95, for the exact per-point form and the 32-bin histogram form, at several bandwidths
(the bias share of the Hoeffding ε is printed), and the violation rate of the Chernoff interval.

``--classifier`` measures the regular classifier end to end: on the same known-p field,
``bound="chernoff"`` (split histogram form, exact per-bin sums) against ``"hoeffding"``, the
earlier histogram form (counts only) and the exact per-point form on the same points —
width ratios overall and where max p ≥ 0.95, share of queries with a class interval wider
than Hoeffding's, certified share, violations — then times ``predict_interval`` with each
bound at the ECG shapes (``--quick``: 20 000 × 100, 4 000 queries), interleaved in chunks.

Run: ``python benchmarks/bench_chernoff.py [--queries N] [--repeat R] [--widths] [--classifier [--quick]]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from nwbound.bounds._chernoff import chernoff_interval, group_hoeffding_interval


def histogram_case(rng: np.random.Generator, n: int, n_classes: int, n_bins: int, lipschitz: float,
                   bandwidth: float = 1.0, mean_points: float = 400.0):
    """Counts, kernel-value bounds and band radii per distance bin; class sums from
    multinomial labels with per-bin kernel values inside the bin's bounds."""
    edges = np.linspace(0.0, bandwidth, n_bins + 1)
    k_upper = 1.0 - (edges[:-1] / bandwidth) ** 2
    k_lower = 1.0 - (edges[1:] / bandwidth) ** 2
    shell = np.diff(edges**3)  # points per bin grow like the shell volume (3-dim)
    lam = rng.gamma(2.0, mean_points / 2.0, size=(n, 1)) * shell / shell.sum()
    count = rng.poisson(lam).astype(np.float64)
    proba = rng.dirichlet(np.full(n_classes, 0.3), size=n)
    k_mid = rng.uniform(k_lower, k_upper, size=(n, n_bins))
    sums = np.zeros((n, n_classes))
    left = count.copy()
    rest = np.ones(n)
    for c in range(n_classes - 1):  # multinomial per bin, vectorised over queries
        share = np.clip(proba[:, c] / np.maximum(rest, 1e-12), 0.0, 1.0)
        take = rng.binomial(left.astype(np.int64), share[:, None]).astype(np.float64)
        sums[:, c] = (take * k_mid).sum(axis=1)
        left -= take
        rest -= proba[:, c]
    sums[:, -1] = (left * k_mid).sum(axis=1)
    return sums, count, k_upper, k_lower, lipschitz * edges[1:]


def neighbour_case(rng: np.random.Generator, n: int, n_classes: int, k: int, lipschitz: float):
    """k per-point groups: kernel values of the k nearest neighbours, their labels."""
    r = np.sort(rng.uniform(0.2, 0.9, size=(n, k)), axis=1)
    a = 1.0 - r**2
    proba = rng.dirichlet(np.full(n_classes, 0.3), size=n)
    labels = (rng.random((n, k, 1)) > np.cumsum(proba, axis=1)[:, None, :]).sum(axis=2)
    labels = np.minimum(labels, n_classes - 1)
    sums = np.stack([(a * (labels == c)).sum(axis=1) for c in range(n_classes)], axis=1)
    return sums, np.ones((n, k)), a, a, lipschitz * r


def _field(x: np.ndarray, scale: float = 6.0) -> np.ndarray:
    logits = scale * (x @ np.array([[1.0, 0.0, -1.0], [0.0, 1.0, -1.0]]) + np.array([0.0, 0.0, 1.0]))
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _field_lipschitz(step: float = 1e-5) -> float:
    g = np.linspace(0.0, 1.0, 401)
    x = np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)
    p = _field(x)
    gx, gy = (_field(x + [step, 0.0]) - p) / step, (_field(x + [0.0, step]) - p) / step
    return float(np.sqrt(gx**2 + gy**2).max())


def width_study(delta: float, n_train: int = 20_000, n_query: int = 2_000, n_bins: int = 32) -> None:
    rng = np.random.default_rng(0)
    n_classes = 3
    lipschitz = 1.05 * _field_lipschitz()
    x = rng.random((n_train, 2))
    labels = (rng.random((n_train, 1)) > np.cumsum(_field(x), axis=1)).sum(axis=1).clip(0, n_classes - 1)
    q = rng.random((n_query, 2))
    p_true = _field(q)
    dist = np.sqrt(((q[:, None, :] - x[None, :, :]) ** 2).sum(-1))
    d_prime = delta / n_classes
    print(f"\nwidths on a known-p field: {n_train} training points, {n_query} queries, L = {lipschitz:.2f}, "
          f"δ = {delta} over {n_classes} classes")
    for lam in (0.03, 0.05, 0.08, 0.12):
        k = np.maximum(1.0 - (dist / lam) ** 2, 0.0)
        width = int((k > 0).sum(axis=1).max())
        order = np.argsort(-k, axis=1)[:, :width]
        a, r, lab = np.take_along_axis(k, order, 1), np.take_along_axis(dist, order, 1), labels[order]
        sums = np.stack([(a * (lab == c)).sum(axis=1) for c in range(n_classes)], axis=1)
        kappa = sums.sum(axis=1)
        ok = kappa > 0
        count = (a > 0).astype(np.float64)  # padding entries are empty groups
        bias = lipschitz * (a * r).sum(axis=1)[ok] / kappa[ok]
        sampling = np.sqrt(np.log(2 / d_prime) * (a * a).sum(axis=1)[ok] / 2) / kappa[ok]
        lo, up = chernoff_interval(sums, count, a, a, lipschitz * r, d_prime)
        h_lo, h_up = group_hoeffding_interval(sums, count, a, a, lipschitz * r, d_prime)
        edges = np.linspace(0.0, lam, n_bins + 1)
        bins = np.clip(np.searchsorted(edges, r, side="right") - 1, 0, n_bins - 1)
        hist = np.stack([((bins == g) & (a > 0)).sum(axis=1) for g in range(n_bins)], axis=1).astype(float)
        g_lo, g_up = chernoff_interval(sums, hist, 1.0 - (edges[:-1] / lam) ** 2,
                                       np.maximum(1.0 - (edges[1:] / lam) ** 2, 0.0), lipschitz * edges[1:], d_prime)
        w_h = (h_up - h_lo)[ok]
        sure = (p_true.max(axis=1) >= 0.95)[ok]
        exact, binned = (up - lo)[ok], (g_up - g_lo)[ok]
        viol = ((p_true < lo) | (p_true > up)).any(axis=1)[ok].mean()
        print(f"λ = {lam:4.2f}: bias share {np.mean(bias / (bias + sampling)):.2f}, mean k {count.sum(1).mean():4.0f} | "
              f"chernoff/hoeffding exact {exact.mean() / w_h.mean():.3f} (max p ≥ 0.95: "
              f"{exact[sure].mean() / w_h[sure].mean():.3f}), histogram B={n_bins} {binned.mean() / w_h.mean():.3f} "
              f"({binned[sure].mean() / w_h[sure].mean():.3f}) | violations {viol:.4f}")


def classifier_study(delta: float, n_train: int = 20_000, n_query: int = 1_500) -> None:
    """Regular classifier, known-p field: split histogram form vs Hoeffding, counts-only and exact."""
    import dataclasses

    from nwbound import NadarayaWatsonClassifier

    rng = np.random.default_rng(0)
    n_classes = 3
    lipschitz = 1.05 * _field_lipschitz()
    x = rng.random((n_train, 2))
    labels = (rng.random((n_train, 1)) > np.cumsum(_field(x), axis=1)).sum(axis=1).clip(0, n_classes - 1)
    q = rng.random((n_query, 2))
    p_true = _field(q)
    dist = np.sqrt(((q[:, None, :] - x[None, :, :]) ** 2).sum(-1))
    print(f"\nregular classifier on the known-p field: {n_train} training points, {n_query} queries, "
          f"L = {lipschitz:.2f}, δ = {delta}; ratios to Hoeffding's mean width (max p ≥ 0.95 in brackets)")
    for lam in (0.03, 0.05, 0.08):
        out = {}
        for bound in ("hoeffding", "chernoff"):
            clf = NadarayaWatsonClassifier(metric=None, bandwidth=lam, lipschitz=lipschitz, bound=bound, delta=delta).fit(x, labels)
            stats = clf.kernel_statistics(q)
            out[bound] = clf.interval_from_statistics(stats)
        counts_only = dataclasses.replace(stats, hist_mass=None, hist_dist=None)
        out["counts-only"] = clf.interval_from_statistics(counts_only)
        k = np.maximum(1.0 - (dist / lam) ** 2, 0.0)
        width = int((k > 0).sum(axis=1).max())
        order = np.argsort(-k, axis=1)[:, :width]
        a, r, lab = np.take_along_axis(k, order, 1), np.take_along_axis(dist, order, 1), labels[order]
        sums = np.stack([(a * (lab == c)).sum(axis=1) for c in range(n_classes)], axis=1)
        ok = sums.sum(axis=1) > 0
        sure = (p_true.max(axis=1) >= 0.95) & ok
        exact = chernoff_interval(sums, (a > 0).astype(np.float64), a, a, lipschitz * r, clf.delta_prime_)
        w_h = out["hoeffding"].upper - out["hoeffding"].lower
        line = f"λ = {lam:4.2f}:"
        for name, (lo, up) in (("split", (out["chernoff"].lower, out["chernoff"].upper)),
                               ("counts-only", (out["counts-only"].lower, out["counts-only"].upper)),
                               ("exact", exact)):
            w = up - lo
            wider = np.mean((w > w_h + 1e-9).any(axis=1)[ok])
            viol = np.mean(((p_true < lo) | (p_true > up)).any(axis=1)[ok])
            line += (f" {name} {w[ok].mean() / w_h[ok].mean():.3f} ({w[sure].mean() / w_h[sure].mean():.3f})"
                     f" wider {wider:.3f} viol {viol:.4f} |")
        cert = {name: out[name].certified[ok].mean() for name in ("hoeffding", "chernoff", "counts-only")}
        print(line + " certified " + ", ".join(f"{n} {v:.3f}" for n, v in cert.items()))
        if lam == 0.05:  # how close the split form comes to the exact one, by bin count
            w_e = (exact[1] - exact[0])[ok]
            parts = []
            for bins in (1, 4, 8, 16, 32, 64):
                iv = NadarayaWatsonClassifier(metric=None, bandwidth=lam, lipschitz=lipschitz, bound="chernoff", delta=delta,
                                              histogram_bins=bins).fit(x, labels).predict_interval(q)
                w_s = (iv.upper - iv.lower)[ok]
                parts.append(f"B={bins}: {w_s.mean() / w_e.mean():.3f} (max {np.max(w_s / np.maximum(w_e, 1e-12)):.2f})")
            print("    split / exact width by bins: " + ", ".join(parts))


def classifier_timing(quick: bool, repeats: int, chunk: int = 2048) -> None:
    """``predict_interval`` at the ECG shapes with "hoeffding" and "chernoff", interleaved by chunk."""
    import os
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import ECG_BANDWIDTH, ECG_FULL, ECG_QUICK, ecg_like

    from nwbound import NadarayaWatsonClassifier

    n_train, n_query = ECG_QUICK if quick else ECG_FULL
    X, y, Q = ecg_like(n_train, n_query)
    models = {b: NadarayaWatsonClassifier(metric=None, bandwidth=ECG_BANDWIDTH, lipschitz=0.05, dtype="float32", n_jobs=-1,
                                          bound=b).fit(X, y) for b in ("hoeffding", "chernoff")}
    for m in models.values():
        m.predict_interval(Q[:256])  # layout cache, JIT
    totals = {b: [] for b in models}
    for rep in range(repeats):
        t = dict.fromkeys(models, 0.0)
        for i, s in enumerate(range(0, n_query, chunk)):
            names = list(models)[(i + rep) % 2:] + list(models)[:(i + rep) % 2]
            for b in names:
                t0 = time.perf_counter()
                models[b].predict_interval(Q[s:s + chunk])
                t[b] += time.perf_counter() - t0
        for b in models:
            totals[b].append(t[b])
    med = {b: float(np.median(v)) for b, v in totals.items()}
    print(f"\npredict_interval at {n_train} × {X.shape[1]} train, {n_query} queries, λ = {ECG_BANDWIDTH}, "
          f"{os.cpu_count()} cores: hoeffding {med['hoeffding']:.2f} s, chernoff {med['chernoff']:.2f} s, "
          f"ratio {med['chernoff'] / med['hoeffding']:.2f} (median of {repeats})")


def timed(fn, repeat: int):
    """Best wall time of ``repeat`` runs (CPU time is printed too: the machine may be shared)."""
    best = np.inf
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    timed.cpu = time.process_time() - c0
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=21_892)
    parser.add_argument("--classes", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--lipschitz", type=float, default=0.05)
    parser.add_argument("--delta", type=float, default=0.05)
    parser.add_argument("--widths", action="store_true", help="also run the width study")
    parser.add_argument("--classifier", action="store_true",
                        help="only the regular classifier: width study and predict_interval timing")
    parser.add_argument("--quick", action="store_true", help="--classifier timing at 20 000 × 100, 4 000 queries")
    args = parser.parse_args()
    if args.classifier:
        classifier_study(args.delta)
        classifier_timing(args.quick, max(args.repeat, 1))
        return
    rng = np.random.default_rng(0)
    d_prime = args.delta / args.classes
    cases = {
        "histogram B=32": histogram_case(rng, args.queries, args.classes, 32, args.lipschitz),
        "per-point k=10": neighbour_case(rng, args.queries, args.classes, 10, args.lipschitz),
    }
    # compile once outside the timing (numba caches the machine code on disk)
    small = tuple(np.asarray(x)[:2] if np.ndim(x) == 2 else x for x in cases["per-point k=10"])
    chernoff_interval(*small, d_prime, engine="auto")
    print(f"n = {args.queries}, C = {args.classes}, δ′ = {d_prime:g}, L = {args.lipschitz}")
    for name, case in cases.items():
        t_h, (hl, hu) = timed(lambda: group_hoeffding_interval(*case, d_prime), args.repeat)
        t_np, (nl, nu) = timed(lambda: chernoff_interval(*case, d_prime, engine="numpy"), args.repeat)
        cpu_np = timed.cpu
        try:
            t_nb, (bl, bu) = timed(lambda: chernoff_interval(*case, d_prime, engine="numba"), args.repeat)
            diff = max(np.abs(bl - nl).max(), np.abs(bu - nu).max())
            numba_txt = f"numba {t_nb:6.2f} s (cpu {timed.cpu:5.2f} s)   max |numba − numpy| = {diff:.1e}"
        except ValueError as exc:  # numba not installed
            numba_txt = f"numba: {exc}"
        ratio = (nu - nl).mean() / (hu - hl).mean()
        print(f"{name}: hoeffding {t_h:6.3f} s   numpy {t_np:6.2f} s (cpu {cpu_np:5.2f} s)   {numba_txt}   "
              f"mean width chernoff/hoeffding = {ratio:.3f}")
    if args.widths:
        width_study(args.delta)


if __name__ == "__main__":
    main()
