"""The regular classifier's kernel statistics on a GPU (or the CPU) against the bare distance product.

On whatever device it finds (CUDA through PyTorch, else the CPU), at the ECG shapes of
``run.py`` (87 554 × 100 training points, 21 892 queries, 5 classes, float32, Epanechnikov):

* the bare float32 product ``Q @ Xᵀ`` with TF32 off (and, for reference, with TF32 on),
* :func:`nwbound.gpu.kernel_statistics` through the array-API engine (PyTorch),
* the fused Triton kernel, ``precision="ieee"`` (no TF32) and ``"tf32x3"`` (opt-in),
* cuBLAS's float32 product per query block + the same Triton epilogue (``gemm="library"``, the
  default of ``engine="auto"``/``"triton"`` on CUDA since run 1),
* that default and the fused ``ieee`` kernel with a 16-bin histogram (unit weights: the packed
  counts of :mod:`nwbound.engine.device._triton`, plus the per-bin ``hist_mass``/``hist_dist`` of the split
  Chernoff form, compared with the CPU engine's), and the default with the estimator's 32 bins,

each the median of ``--repeats`` runs after a warm-up (CUDA events on a GPU), their ratio to
the product, the first call's cost (compile + tuning), and the largest differences against the
CPU engine (``predict_proba``, κ, ``dist_sum`` which must only grow: it is an upper bound). Then
the 1 000 000 × 100 / 100 000-query case (product, tf32x3 and the default with and without the
histogram: the array-API engine and the fused ``ieee`` kernel, 10× and 3.4× there in run 1, are
left out to keep ``gpu_check.sh`` short). λ is the ``--quantile`` quantile of
query–training distances (printed, with the share of training points inside the support).

The two numbers (ECG shapes): ``2·21 892·87 554·100 = 3.8e11`` FLOP; at the datasheet's
67 TFLOP/s of plain float32 FMA (H100/H200 SXM) a 5.7 ms floor, and the issue measured the cuBLAS
product at 10.9 ms (35 TFLOP/s) on an H200; the inputs are 44 MB, so the pass is bound by
arithmetic, not memory. ``tf32x3`` does three TF32 tensor-core products (≈ 495 TFLOP/s dense):
a ≈ 2.3 ms floor. Predictions before the first GPU run: Triton ``ieee`` 14–18 ms (Triton's FMA
dot below cuBLAS, plus ≈ 12 epilogue operations per 112 FMAs), ``tf32x3`` 4–6 ms, array-API
60–70 ms (the issue's straightforward pass).

Usage::

    PYTHONPATH=src python benchmarks/bench_gpu.py [--quick] [--repeats 5] [--no-large]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import ECG_FULL, ECG_QUICK, ecg_like  # noqa: E402

from nwbound import NadarayaWatsonClassifier  # noqa: E402
from nwbound.engine.host._sums import TrainingSet, dense_kernel_sums  # noqa: E402
from nwbound.gpu import DeviceTrainingSet, kernel_statistics  # noqa: E402
from nwbound.kernels import get_kernel  # noqa: E402

PAPER_LOOP_S = 480.0  # the paper's per-query loop at the ECG shapes, 2-core CPU (issue 13)


def _sync(dev) -> None:
    import torch

    if dev.type == "cuda":
        torch.cuda.synchronize()


def timed_ms(fn, dev, repeats: int, *, warm_up: bool = True) -> float:
    """Median milliseconds of ``fn()`` over ``repeats`` runs after one warm-up (``warm_up=False``: the
    caller has warmed it up; each run then starts on an idle device)."""
    import torch

    if warm_up:
        fn()
    _sync(dev)
    times = []
    for _ in range(repeats):
        if dev.type == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if not warm_up:
                torch.cuda.synchronize()
            a.record()
            fn()
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b))
        else:
            t0 = time.perf_counter()
            fn()
            times.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(times)


def bare_product(Qc, Xc, tf32: bool, block: int):
    import torch

    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    try:
        for s in range(0, Qc.shape[0], block):
            torch.matmul(Qc[s : s + block], Xc.T)
    finally:
        torch.set_float32_matmul_precision(previous)


def queries_product_ms(X: np.ndarray, Qt, dev, repeats: int) -> float:
    """Median milliseconds of the bare fp32 product of the queries ``Qt`` (a tensor on ``dev``) with the
    training rows ``X``, both centred as the device's training set centres them (TF32 off): the
    denominator of every device ratio."""
    import torch

    train = DeviceTrainingSet.build(torch.from_numpy(X).to(dev), torch.ones((X.shape[0], 1), device=dev))
    Qc = (Qt.double() - train.center).float()
    return timed_ms(lambda: bare_product(Qc, train.centred, False, Qc.shape[0]), dev, repeats)


def pick_bandwidth(Q: np.ndarray, X: np.ndarray, quantile: float) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    qs = Q[rng.choice(Q.shape[0], min(256, Q.shape[0]), replace=False)].astype(np.float64)
    xs = X[rng.choice(X.shape[0], min(20000, X.shape[0]), replace=False)].astype(np.float64)
    d = np.sqrt(np.maximum((qs * qs).sum(1)[:, None] + (xs * xs).sum(1)[None] - 2 * qs @ xs.T, 0))
    lam = float(np.quantile(d, quantile))
    return lam, float(np.mean(d <= lam))


def ecg_case(n_train: int, n_query: int, quantile: float = 0.05, seed: int = 0) -> tuple:
    """ECG-shaped float32 data (:func:`run.ecg_like`) and the bandwidth that holds ``quantile`` of the
    query–point distances: ``(X, y, Q, λ, share inside)``; the device benchmarks' common case."""
    X, y, Q = ecg_like(n_train, n_query, seed=seed)
    lam, share = pick_bandwidth(Q, X, quantile)
    return X, y, Q, lam, share


def ecg_device_case(asked: str | None, small: bool, repeats: int) -> tuple:
    """The diagnostics' common start: the device (PyTorch's CPU standing in for the route where there is
    no CUDA: ``device_bounds_on_cpu``), the ECG case at its full shapes (400 × 32 with ``small``), the
    queries as a tensor there and the bare product's median milliseconds, printed:
    ``(dev, X, y, Q, Qt, λ, product ms)``."""
    import torch

    import nwbound

    dev, _ = torch_device(asked)
    if dev.type != "cuda":
        nwbound.set_config(device_bounds_on_cpu=True)  # PyTorch's CPU standing in (the route, not its timing)
    X, y, Q, lam, _ = ecg_case(*((400, 32) if small else ECG_FULL))
    Qt = torch.from_numpy(Q).to(dev)
    product = queries_product_ms(X, Qt, dev, repeats)
    print(f"PRODUCT bare fp32 Q @ X^T (TF32 off): {product:.2f} ms")
    return dev, X, y, Q, Qt, lam, product


def torch_device(asked: str | None) -> tuple:
    """``(torch.device, name)``: ``asked``, else CUDA where PyTorch sees it, else the CPU."""
    import torch

    dev = torch.device(asked or ("cuda" if torch.cuda.is_available() else "cpu"))
    return dev, torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"


def one_case(n_train: int, n_query: int, dev, repeats: int, quantile: float, compare: bool, engines) -> None:
    import torch

    t0 = time.perf_counter()
    X, y, Q, lam, share = ecg_case(n_train, n_query, quantile)
    print(f"\n== {n_train} x {X.shape[1]} training, {n_query} queries, 5 classes, float32, epanechnikov on {dev} ==")
    print(f"lambda = {lam:.4f} (the {quantile:.2f} quantile of query-training distances; "
          f"{100 * share:.1f} % of training points inside the support); data {time.perf_counter() - t0:.1f} s")
    onehot = np.zeros((n_train, 5), dtype=np.float32)
    onehot[np.arange(n_train), y] = 1.0
    Xt, Qt, Ot = (torch.from_numpy(a).to(dev) for a in (X, Q, onehot))
    train = DeviceTrainingSet.build(Xt, Ot)
    Qc = (Qt.double() - train.center).float()
    # Full product when it fits in a quarter of the device's memory, else 4096-query blocks.
    free = torch.cuda.mem_get_info(dev)[0] if dev.type == "cuda" else 8 << 30
    block = n_query if 4 * n_query * n_train < free / 4 else 4096
    rows = []
    t_prod = timed_ms(lambda: bare_product(Qc, train.centred, False, block), dev, repeats)
    rows.append(("bare product Q @ X^T, float32, TF32 off", t_prod))
    if dev.type == "cuda":
        rows.append(("bare product, TF32 on (reference only)", timed_ms(lambda: bare_product(Qc, train.centred, True, block), dev, repeats)))
    results = {}
    for label, kw in engines:
        try:
            t_first = time.perf_counter()
            st = kernel_statistics(Qt, train, bandwidth=lam, **kw)
            _sync(dev)
            first = time.perf_counter() - t_first
            ms = timed_ms(lambda kw=kw: kernel_statistics(Qt, train, bandwidth=lam, **kw), dev, repeats)
        except Exception as exc:  # report and go on: one failing engine must not hide the others
            cause = f" (cause: {type(exc.__cause__).__name__}: {str(exc.__cause__)[:400]})" if exc.__cause__ else ""
            print(f"  {label}: FAILED {type(exc).__name__}: {str(exc)[:400]}{cause}")
            continue
        results[label] = st
        rows.append((f"{label} (first call {first:.2f} s)", ms))
    print(f"{'':52s} {'median ms':>10s} {'x product':>10s}")
    for label, ms in rows:
        print(f"{label:52s} {ms:10.2f} {ms / t_prod:10.2f}")
    if results:
        best = min(ms for label, ms in rows[1:] if not label.startswith("bare"))
        print(f"fastest ours vs the paper's per-query loop (~{PAPER_LOOP_S:.0f} s on 2 CPU cores): "
              f"{PAPER_LOOP_S * 1e3 / best:,.0f}x")
    try:
        from nwbound.engine.device._triton import TUNING_LOG

        for key, log in TUNING_LOG.items():
            if log:
                print(f"  Triton tuning {key[0]}, gemm={key[1]}, bins={key[4]}, {key[6]}: " +
                      ", ".join(f"{c[0]}x{c[1]}/w{c[2]}/s{c[3]} {ms:.2f} ms" for c, ms in log))
        TUNING_LOG.clear()
    except ImportError:
        pass
    if not compare or not results:
        return
    t0 = time.perf_counter()
    cpu = dense_kernel_sums(Q, TrainingSet.build(X, y, 5, None), get_kernel("epanechnikov"), np.array([lam]),
                            need_dist=True, n_jobs=-1, histogram_bins=16)
    proba_cpu = NadarayaWatsonClassifier(metric=None, bandwidth=lam, lipschitz=1.0, dtype="float32", n_jobs=-1).fit(X, y).predict_proba(Q)
    print(f"CPU engine reference: {time.perf_counter() - t0:.1f} s")
    kappa_cpu = cpu.class_sums[:, 0].sum(axis=1)
    big = kappa_cpu > 1e-3 * kappa_cpu.max()
    for label, st in results.items():
        s = st.to_numpy()  # the device form: one bandwidth (G = 1)
        class_sums, dist_sum = s.class_sums[:, 0], s.dist_sum[:, 0]
        kappa = class_sums.sum(axis=1)
        proba = class_sums / np.where(kappa > 0, kappa, 1.0)[:, None]
        ok = kappa > 0
        d_ratio = dist_sum[big] / cpu.dist_sum[big, 0]
        print(f"  {label}: max|proba - CPU| {np.abs(proba[ok] - proba_cpu[ok]).max():.2e}; "
              f"kappa rel. diff max {np.max(np.abs(kappa[big] / kappa_cpu[big] - 1)):.2e}; "
              f"dist_sum / CPU in [{d_ratio.min():.6f}, {d_ratio.max():.6f}] (d+ >= d; kernel values round differently); "
              f"sqrt(E) median {np.median(np.sqrt(s.d2_error)):.2e}")
        if s.hist_mass is not None and s.hist_mass.shape[2] == 16:
            # Per bin Σ wK and Σ wK·d⁺ (the split Chernoff form) against the CPU engine's: cumulative
            # (a point within rounding of a bin edge may change bins), relative to κ and dist_sum.
            hist_mass, hist_dist = s.hist_mass[:, 0], s.hist_dist[:, 0]
            dm = np.abs(np.cumsum(hist_mass, 1) - np.cumsum(cpu.hist_mass[:, 0], 1)).max(1)
            dd = np.abs(np.cumsum(hist_dist, 1) - np.cumsum(cpu.hist_dist[:, 0], 1)).max(1)
            print(f"    16 bins vs CPU: max cumulative |d hist_mass| / kappa {np.max(dm[big] / kappa_cpu[big]):.2e}, "
                  f"|d hist_dist| / dist_sum {np.max(dd[big] / cpu.dist_sum[big, 0]):.2e}; "
                  f"sum(hist_mass) / kappa - 1 max {np.max(np.abs(hist_mass.sum(1)[big] / kappa[big] - 1)):.2e}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small ECG-like shapes (the default without a GPU)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quantile", type=float, default=0.1)
    parser.add_argument("--no-large", action="store_true", help="skip the 1 000 000 x 100 case")
    args = parser.parse_args(argv)
    import torch

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(f"torch {torch.__version__}, device {torch.cuda.get_device_name(dev) if dev.type == 'cuda' else 'CPU'}")
    engines = [("ours, array-API (torch)", dict(engine="array_api", working_memory=8192 if dev.type == "cuda" else 512))]
    if dev.type == "cuda":
        try:
            import triton

            print(f"triton {triton.__version__}")
            engines += [("ours, Triton fused, ieee (no TF32)", dict(engine="triton", gemm="fused")),
                        ("ours, Triton fused, tf32x3 (opt-in)", dict(engine="triton", precision="tf32x3")),
                        ("ours, default: cuBLAS product + Triton epilogue", dict(engine="auto")),
                        ("ours, default + 16-bin histogram", dict(engine="auto", histogram_bins=16)),
                        ("ours, default + 32-bin histogram (estimator)", dict(engine="auto", histogram_bins=32)),
                        ("ours, Triton fused ieee + 16-bin histogram", dict(engine="triton", gemm="fused", histogram_bins=16))]
        except ImportError:
            print("triton not installed: Triton rows skipped")
    quick = args.quick or dev.type != "cuda"
    n_train, n_query = ECG_QUICK if quick else ECG_FULL
    one_case(n_train, n_query, dev, args.repeats, args.quantile, True, engines)
    if not quick and not args.no_large:
        big = [e for e in engines if "array-API" not in e[0] and "fused, ieee" not in e[0] and "fused ieee" not in e[0]
               and "32-bin" not in e[0]]
        one_case(1_000_000, 100_000, dev, max(3, args.repeats // 2), args.quantile, False, big)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
