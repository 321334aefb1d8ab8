"""nwbound benchmark suite: everything measured in one run, on one machine.

Sections (each prints a table; medians over repeats, ratios against baselines
measured in the same run, interleaved so machine load hits both alike):

a. Regular NWC ``predict`` (float64 and float32, ``n_jobs=-1``) on "ECG
   shapes" against the bare distance GEMM ``Q @ Xᵀ`` of the same shapes and
   dtype, and against the paper's per-query loop (timed on a few hundred
   queries, extrapolated linearly); peak memory of ``predict``. Each dtype is
   timed with the compiled tile reduction (numba, when installed) and with the
   numpy reduction, side by side.
b. Localized NWC (k = 10) with each exact/registered index in
   ``LOCALIZED_INDEXES`` that :func:`nwbound.neighbors.available_indexes`
   knows, against scikit-learn's ``KNeighborsClassifier``.
c. Dyadic classifier: build (``fit``) and lookup (``predict_proba``).
d. Regular NWC time and peak memory against the training size n, in 2 and
   100 dimensions, with the fitted log-log slope.

The "ECG shapes" data is a synthetic stand-in: points near a 5-dim manifold
in 100 dimensions (tanh of a random linear map of a 5-class latent mixture
with heavy-tailed spread, plus noise), min-max scaled on the training part,
with the paper's Epanechnikov λ = 0.75. It is calibrated to the real MIT-BIH
beats' empty-neighbourhood shares (≈ 25 % of queries with κ = 0 at n = 1000,
≈ 9 % at 10⁴, ≈ 2 % at full size; the real beats: 28 / 8 / 2.4 %).

Usage::

    PYTHONPATH=src python benchmarks/run.py [--quick] [--output DIR] [--overwrite]

Results: ``results.csv``, ``results.json`` and ``scaling.png`` in ``--output``
(default ``benchmarks/results/``); existing result files are never replaced
without ``--overwrite``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import numpy as np
import threadpoolctl
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paper_reference import paper_predict  # noqa: E402

from nwbound import DyadicClassifier, NadarayaWatsonClassifier  # noqa: E402
from nwbound.engine.host import _sums  # noqa: E402
from nwbound.neighbors import available_indexes  # noqa: E402

# Indexes tried for the localized classifier; those not registered are skipped
# (an approximate index such as "hnsw" registers itself when installed).
LOCALIZED_INDEXES = ["auto", "hnsw"]
RESULT_FILES = ("results.csv", "results.json", "scaling.png")
ECG_BANDWIDTH = 0.75
ECG_FULL = (87_554, 21_892)
ECG_QUICK = (20_000, 4_000)


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------
def ecg_like(n_train: int, n_query: int, seed: int = 0, dtype=np.float32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Synthetic stand-in for the MIT-BIH beats (see the module docstring)."""
    latent, spread, noise, tail = 5, 0.5, 0.02, 0.6
    basis = np.random.default_rng(12345)
    W = basis.normal(size=(100, latent)) / math.sqrt(latent)
    b = basis.normal(size=100) * 0.5
    centres = basis.normal(size=(5, latent))
    share = np.array([0.83, 0.025, 0.066, 0.007, 0.072])  # AAMI N, S, V, F, Q shares
    rng = np.random.default_rng(seed)
    n = n_train + n_query
    y = rng.choice(5, size=n, p=share)
    z = centres[y] + rng.normal(size=(n, latent)) * spread * np.exp(rng.normal(size=(n, 1)) * tail)
    X = np.tanh(z @ W.T + b) + rng.normal(size=(n, 100)) * noise
    low, high = X[:n_train].min(axis=0), X[:n_train].max(axis=0)
    X = ((X - low) / (high - low)).astype(dtype)
    return X[:n_train], y[:n_train], X[n_train:]


def uniform_2d(n_train: int, n_query: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two noisy classes in the unit square (P(c=1|x) = logistic of a smooth score)."""
    rng = np.random.default_rng(seed)
    X = rng.random((n_train + n_query, 2))
    p = 1.0 / (1.0 + np.exp(-6.0 * (np.sin(6.0 * X[:, 0]) + X[:, 1] - 0.5)))
    y = (rng.random(X.shape[0]) < p).astype(int)
    X = X.astype(np.float32)
    return X[:n_train], y[:n_train], X[n_train:]


# ---------------------------------------------------------------------------------------------
# Measurement helpers
# ---------------------------------------------------------------------------------------------
def timed(func: Callable[[], object]) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def peak_memory_mib(func: Callable[[], object]) -> float:
    """Peak of the memory allocated (numpy included) while ``func`` runs, in MiB."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        func()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return (peak - base) / 2**20


def bare_gemm(X: np.ndarray, Q: np.ndarray) -> float:
    """Fastest of two ways to compute every ``q·x`` (results discarded): BLAS
    threads on row blocks, or 2 threads × 1 BLAS thread on cache-sized tiles."""

    def blas_threads() -> None:
        out = np.empty((min(1024, Q.shape[0]), X.shape[0]), dtype=X.dtype)
        for s in range(0, Q.shape[0], 1024):
            q = Q[s : s + 1024]
            np.matmul(q, X.T, out=out[: q.shape[0]])

    def tiles() -> None:
        def block(s: int) -> None:
            out = np.empty((128, 4096), dtype=X.dtype)
            q = Q[s : s + 128]
            for j in range(0, X.shape[0], 4096):
                B = X[j : j + 4096]
                np.matmul(q, B.T, out=out[: q.shape[0], : B.shape[0]])

        with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            list(pool.map(block, range(0, Q.shape[0], 128)))

    return min(timed(blas_threads), timed(tiles))


def reductions() -> list[tuple[str, bool]]:
    """The tile reductions to time: (name, ``_sums.USE_NUMBA``); numba only when installed."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return [("numpy", False)]
    return [("numba", True), ("numpy", False)]


def with_reduction(use_numba: bool, func: Callable[[], object]) -> Callable[[], object]:
    """``func`` run with the compiled (True) or numpy (False) tile reduction."""

    def run() -> object:
        _sums.USE_NUMBA = use_numba
        try:
            return func()
        finally:
            _sums.USE_NUMBA = True

    return run


def loglog_slope(n: list[float], t: list[float]) -> float:
    if len(n) < 2:
        return float("nan")
    return float(np.polyfit(np.log(n), np.log(t), 1)[0])


def machine() -> dict:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    blas = [
        {k: info.get(k) for k in ("internal_api", "version", "architecture", "num_threads", "filepath")}
        for info in threadpoolctl.threadpool_info()
        if info.get("user_api") == "blas"
    ]
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "cores_usable": affinity,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": blas,
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
        "OPENBLAS_L2_SIZE": os.environ.get("OPENBLAS_L2_SIZE"),
        "load_average_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }


# ---------------------------------------------------------------------------------------------
# Sections
# ---------------------------------------------------------------------------------------------
def section_regular(quick: bool, repeats: int) -> list[dict]:
    n_train, n_query = ECG_QUICK if quick else ECG_FULL
    n_paper = 50 if quick else 300
    rows = []
    X32, y, Q32 = ecg_like(n_train, n_query)
    paper_s = timed(lambda: paper_predict(X32.astype(np.float64), y, Q32[:n_paper].astype(np.float64),
                                          bandwidth=ECG_BANDWIDTH, lipschitz=0.05))
    paper_total = paper_s * n_query / n_paper
    for dtype in ("float64", "float32"):
        X, Q = X32.astype(dtype), Q32.astype(dtype)
        model = NadarayaWatsonClassifier(metric=None, bandwidth=ECG_BANDWIDTH, lipschitz=0.05, dtype=dtype, n_jobs=-1).fit(X, y)
        routes = reductions()
        # Builds the engine's cached layout (and compiles or loads the numba reduction).
        first = {name: timed(with_reduction(flag, lambda: model.predict(Q[:256]))) for name, flag in routes}
        gemm, pred = [], {name: [] for name, _ in routes}
        for _ in range(repeats):  # interleaved: load changes hit all alike
            gemm.append(bare_gemm(X, Q))
            for name, flag in routes:
                pred[name].append(timed(with_reduction(flag, lambda: model.predict(Q))))
        kappa0 = float(np.mean(model.predict_interval(Q[:2000]).kappa == 0))
        g = statistics.median(gemm)
        for name, flag in routes:
            mem = peak_memory_mib(with_reduction(flag, lambda: model.predict(Q[:4096])))
            p = statistics.median(pred[name])
            rows.append({
                "section": "a_regular", "case": f"regular predict {dtype}, {name} reduction", "n_train": n_train,
                "n_query": n_query, "n_features": X.shape[1], "dtype": dtype, "reduction": name, "seconds": p,
                "gemm_seconds": g, "ratio_vs_gemm": p / g, "paper_seconds_extrapolated": paper_total,
                "speedup_vs_paper": paper_total / p, "first_call_seconds_256_queries": first[name],
                "peak_mib_4096_queries": mem, "kappa0_share": kappa0, "repeats": repeats,
            })
    rows.append({
        "section": "a_regular", "case": f"paper per-query loop ({n_paper} queries, extrapolated)",
        "n_train": n_train, "n_query": n_query, "n_features": X32.shape[1], "dtype": "float64",
        "seconds": paper_total, "repeats": 1,
    })
    return rows


def section_localized(quick: bool, repeats: int) -> list[dict]:
    from sklearn.neighbors import KNeighborsClassifier

    n_train, n_query = (20_000, 2_000) if quick else (87_554, 5_000)
    X, y, Q = ecg_like(n_train, n_query, seed=1)
    rows = []
    sk = KNeighborsClassifier(n_neighbors=10, n_jobs=-1)
    sk_fit = timed(lambda: sk.fit(X, y))
    sk_pred = statistics.median(timed(lambda: sk.predict(Q)) for _ in range(repeats))
    rows.append({"section": "b_localized", "case": "sklearn KNeighborsClassifier k=10", "n_train": n_train,
                 "n_query": n_query, "fit_seconds": sk_fit, "seconds": sk_pred, "repeats": repeats})
    known = set(available_indexes())
    for name in LOCALIZED_INDEXES:
        if name not in known:
            print(f"  (index {name!r} not registered: skipped)")
            continue
        model = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=ECG_BANDWIDTH, n_neighbors=10, algorithm=name, n_jobs=-1)
        fit = timed(lambda: model.fit(X, y))
        pred = statistics.median(timed(lambda: model.predict(Q)) for _ in range(repeats))
        agree = float(np.mean(model.predict(Q[:1000]) == sk.predict(Q[:1000])))
        rows.append({"section": "b_localized", "case": f"localized NWC k=10 algorithm={name}", "n_train": n_train,
                     "n_query": n_query, "fit_seconds": fit, "seconds": pred, "ratio_vs_sklearn": pred / sk_pred,
                     "agreement_with_knn": agree, "repeats": repeats})
    return rows


def section_dyadic(quick: bool, repeats: int) -> list[dict]:
    rows = []
    n_train, n_query = (100_000, 20_000) if quick else (1_000_000, 100_000)
    cases = [("2-dim uniform, m=8", uniform_2d(n_train, n_query), 8),
             ("ECG-like 100-dim, m=4", ecg_like(min(n_train, ECG_FULL[0]), n_query, seed=2), 4)]
    for label, (X, y, Q), m in cases:
        model = DyadicClassifier(metric=None, resolution=m, lipschitz=1.0)
        build = statistics.median(timed(lambda: model.fit(X, y)) for _ in range(repeats))
        look = statistics.median(timed(lambda: model.predict_proba(Q)) for _ in range(repeats))
        rows.append({"section": "c_dyadic", "case": f"dyadic {label}", "n_train": X.shape[0], "n_query": Q.shape[0],
                     "n_features": X.shape[1], "fit_seconds": build, "seconds": look,
                     "us_per_query": 1e6 * look / Q.shape[0], "n_cells": model.n_cells_, "repeats": repeats})
    return rows


def section_scaling(quick: bool, repeats: int) -> list[dict]:
    sizes = [10**3, 10**4, 10**5] if quick else [10**3, 10**4, 10**5, 10**6]
    n_query = 1000 if quick else 2000
    rows = []
    for dim, make, lam in ((2, uniform_2d, 0.02), (100, lambda n, m: ecg_like(n, m, seed=3), ECG_BANDWIDTH)):
        times = []
        for n in sizes:
            X, y, Q = make(n, n_query)
            model = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=lam, dtype="float32", n_jobs=-1).fit(X, y)
            first = timed(lambda: model.predict(Q[:64]))
            t = statistics.median(timed(lambda: model.predict(Q)) for _ in range(repeats))
            mem = peak_memory_mib(lambda: model.predict(Q))
            times.append(t)
            rows.append({"section": "d_scaling", "case": f"regular predict float32, {dim}-dim", "n_train": n,
                         "n_query": n_query, "n_features": dim, "seconds": t, "first_call_seconds_64_queries": first,
                         "peak_mib": mem, "train_mib": X.nbytes / 2**20, "repeats": repeats})
            print(f"  {dim:>3}-dim n={n:>8}: {t:8.3f} s  peak {mem:7.1f} MiB")
        slope = loglog_slope([float(n) for n in sizes], times)
        for row in rows[-len(sizes):]:
            row["loglog_slope"] = slope
    return rows


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------
def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _csv(rows: list[dict]) -> str:
    keys: list[str] = []
    for row in rows:
        keys += [k for k in row if k not in keys]

    def cell(v: object) -> str:
        text = f"{v:.6g}" if isinstance(v, float) else ("" if v is None else str(v))
        return f'"{text}"' if ("," in text or '"' in text) else text

    lines = [",".join(keys)] + [",".join(cell(row.get(k)) for k in keys) for row in rows]
    return "\n".join(lines) + "\n"


def _plot(rows: list[dict]) -> bytes:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    for dim in (2, 100):
        pts = [r for r in rows if r["section"] == "d_scaling" and r["n_features"] == dim]
        if not pts:
            continue
        n = [r["n_train"] for r in pts]
        label = f"{dim}-dim (slope {pts[0]['loglog_slope']:.2f})"
        ax_t.loglog(n, [r["seconds"] for r in pts], "o-", label=label)
        ax_m.semilogx(n, [r["peak_mib"] for r in pts], "o-", label=f"{dim}-dim")
    ax_t.set(xlabel="training points n", ylabel="predict time [s]", title="Regular NWC predict (float32)")
    ax_m.set(xlabel="training points n", ylabel="peak memory of predict [MiB]", title="Peak memory")
    ax_t.legend()
    ax_m.legend()
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def _print_table(rows: list[dict], title: str, columns: list[str]) -> None:
    print(f"\n{title}")
    shown = [[c for c in columns]] + [
        [f"{r[c]:.4g}" if isinstance(r.get(c), float) else str(r.get(c, "")) for c in columns] for r in rows
    ]
    widths = [max(len(line[i]) for line in shown) for i in range(len(columns))]
    for k, line in enumerate(shown):
        print("  " + "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(line, widths))))
        if k == 0:
            print("  " + "  ".join("-" * w for w in widths))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, one repeat: under 2 minutes")
    parser.add_argument("--output", type=Path, default=Path(__file__).resolve().parent / "results",
                        help="folder for results.csv/.json and scaling.png (default: benchmarks/results/)")
    parser.add_argument("--overwrite", action="store_true", help="replace existing result files in --output")
    parser.add_argument("--repeats", type=int, default=None, help="repeats per timing (default 1 quick, 3 full)")
    parser.add_argument("--sections", default="abcd", help="which sections to run, e.g. 'ad' (default: abcd)")
    args = parser.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 3)
    if repeats < 1:
        parser.error("--repeats must be at least 1")
    out = args.output
    if out.exists() and not out.is_dir():
        parser.error(f"--output {out} exists and is not a folder")
    clash = [name for name in RESULT_FILES if (out / name).exists()]
    if clash and not args.overwrite:
        parser.error(f"{out} already holds {', '.join(clash)}; pass --overwrite or choose another --output")
    out.mkdir(parents=True, exist_ok=True)

    info = machine()
    blas = "; ".join(f"{Path(b['filepath']).parent.parent.name}/{b['internal_api']} {b['version']} "
                     f"kernel={b['architecture']} threads={b['num_threads']}"
                     for b in info["blas"]) or "none found"
    print(f"CPU: {info['cpu']} | cores: {info['cores']} (usable {info['cores_usable']}) | numpy {info['numpy']}")
    print(f"BLAS: {blas} | OPENBLAS_CORETYPE={info['OPENBLAS_CORETYPE']} OPENBLAS_L2_SIZE={info['OPENBLAS_L2_SIZE']}")
    print(f"load average at start: {info['load_average_start']}  (other processes slow every timing alike)")

    start = time.perf_counter()
    rows: list[dict] = []
    sections = {"a": section_regular, "b": section_localized, "c": section_dyadic, "d": section_scaling}
    for key in args.sections:
        if key not in sections:
            parser.error(f"unknown section {key!r}; use letters from 'abcd'")
        print(f"\n[{key}] running ...", flush=True)
        rows += sections[key](args.quick, repeats)

    def pick(sec: str) -> list[dict]:
        return [r for r in rows if r["section"] == sec]

    _print_table(pick("a_regular"), "(a) regular NWC predict vs bare GEMM and the paper's loop",
                 ["case", "seconds", "gemm_seconds", "ratio_vs_gemm", "speedup_vs_paper", "peak_mib_4096_queries",
                  "kappa0_share"])
    _print_table(pick("b_localized"), "(b) localized NWC vs scikit-learn k-NN",
                 ["case", "fit_seconds", "seconds", "ratio_vs_sklearn", "agreement_with_knn"])
    _print_table(pick("c_dyadic"), "(c) dyadic classifier", ["case", "n_train", "fit_seconds", "seconds",
                                                                 "us_per_query", "n_cells"])
    _print_table(pick("d_scaling"), "(d) time and peak memory vs n", ["case", "n_train", "seconds", "peak_mib",
                                                                         "loglog_slope"])
    print(f"\ntotal wall time {time.perf_counter() - start:.1f} s")

    payload = {"machine": info, "quick": args.quick, "repeats": repeats, "rows": rows}
    _write_atomic(out / "results.csv", _csv(rows).encode())
    _write_atomic(out / "results.json", json.dumps(payload, indent=2, default=str).encode())
    if pick("d_scaling"):
        _write_atomic(out / "scaling.png", _plot(rows))
    print(f"results written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
