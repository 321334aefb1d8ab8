"""Issue 19: the default bound's statistics pass (32-bin histogram, Chernoff split form) per
histogram epilogue of the Triton statistics kernel, against the bare float32 product.

Each variant calls the entry the estimator's Chernoff path reaches
(``triton_kernel_statistics(Q, train, "epanechnikov", λ, need_dist=True, histogram_bins=32)``,
``gemm="library"``: cuBLAS writes ``q'·x'``, the kernel's epilogue reads it) with a fixed tile
config (no tuning: each compile counts against the budget) and the private switch ``epilogue=``:

* ``loop`` (a): the kernel before issue 19 (``nwbound.config_context(hist_epilogue="loop")``, the baseline of every
  verdict), two masked row reductions per bin per tile;
* ``atomic`` (b): per-bin ``Σ wK`` and ``Σ wK·d⁺`` by float64 atomic adds (``red.global.add.f64``)
  of the terms inside the bandwidth; the counts still from the packed per-word reductions;
* ``atomic_count`` (b'): also the counts (unit weights: the histogram) by float32 atomic adds of 1.0
  (the default since issue 19; ``default tuned``: no ``epilogue=``, no ``config=``, the autotuner's
  pick among ``CONFIGS["library_histogram_atomic"]``, its tuning in the first call);
* ``skip`` (c), ``atomic_skip`` (c + b): bin work only in tiles with a point inside the bandwidth;
* ``atomic_packed`` (e): ``atomic_count`` with a (query, bin)'s mass, distance sum and count in one
  32-byte sector (4 float64): a point's three atomics hit one sector instead of three arrays;
* other tile shapes (d); and the pass without the histogram (Hoeffding's: the floor).

Per variant one line ``VARIANT``: median milliseconds (>= 5 repeats after a warm-up that compiles),
the ratio to the bare product (TF32 off) timed in the same run, and the correctness verdict against
the baseline's statistics on the same inputs: counts must be equal; float sums ``exact`` or within
the two forms' stated rounding bounds (``sum_error`` each, plus the ``d⁺`` factor's ``BN·u`` where
the tile widths differ): each form's own bound covers the exact sum, so a difference inside them
keeps both on the safe side; ``OUTSIDE BOUND`` otherwise.

    python benchmarks/diag_epilogue.py                          # CUDA, ECG shapes, <= 45 s
    TRITON_INTERPRET=1 python benchmarks/diag_epilogue.py --small --device cpu   # dry run (interpreter)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_gpu import bare_product, ecg_case, timed_ms, torch_device  # noqa: E402
from run import ECG_FULL  # noqa: E402

SMALL = (250, 16)  # one block of queries, 20 tiles of 32: the interpreter runs each variant in seconds
BINS = 32
# (label, epilogue, config (BM, BN, warps, stages), histogram bins), in the order they are worth
# the budget: the baseline first (every verdict needs it).
VARIANTS = [
    ("a  loop        16x32 w4", "loop", (16, 32, 4, 2), BINS),
    ("*  default tuned", None, None, BINS),
    ("b  atomic      16x32 w4", "atomic", (16, 32, 4, 2), BINS),
    ("b' atomic_count 16x32 w4", "atomic_count", (16, 32, 4, 2), BINS),
    ("e  atomic_packed 16x32 w4", "atomic_packed", (16, 32, 4, 2), BINS),
    ("cb atomic_skip 16x32 w4", "atomic_skip", (16, 32, 4, 2), BINS),
    ("-  no histogram 16x128 w4 (floor)", "loop", (16, 128, 4, 2), 0),
    # The floor at the histogram's tile shape: how much of the gap to 16x128 is the tile, not the bins.
    ("-  no histogram 16x32 w4 (floor at 16x32)", "loop", (16, 32, 4, 2), 0),
    ("d  atomic_count 16x64 w4", "atomic_count", (16, 64, 4, 2), BINS),
    ("d  atomic_count 32x32 w8", "atomic_count", (32, 32, 8, 2), BINS),
    ("d  atomic      16x64 w4", "atomic", (16, 64, 4, 2), BINS),
    ("c  skip        16x32 w4", "skip", (16, 32, 4, 2), BINS),
    ("d  loop        32x32 w8", "loop", (32, 32, 8, 2), BINS),
]
_COUNTS = ("histogram", "hist_count")  # unit weights: the histogram is a count
_FLOATS = ("class_sums", "sq_sum", "dist_sum", "hist_mass", "hist_dist")


def verdict(st, base, cfg, base_cfg) -> str:
    """Counts equal; float sums exact or within both forms' rounding bounds (see the docstring)."""
    import torch

    if base is None:
        return "baseline"
    parts, worst = [], 0.0
    for name in _COUNTS:
        a, b = getattr(st, name), getattr(base, name)
        if a is None and b is None:
            continue
        if a is None or b is None or a.shape != b.shape:
            return f"DIFFERENT ({name}: one is missing or shapes differ)"
        if not torch.equal(a, b):
            return f"DIFFERENT ({name}: {int((a != b).sum())} counts differ)"
    u = 2.0**-24
    rel = float(st.sum_error) + float(base.sum_error) + (abs(cfg[1] - base_cfg[1]) + 2) * u
    exact = True
    for name in _FLOATS:
        a, b = getattr(st, name), getattr(base, name)
        if a is None and b is None:
            continue
        if a is None or b is None or a.shape != b.shape:
            return f"DIFFERENT ({name}: one is missing or shapes differ)"
        if torch.equal(a, b):
            continue
        exact = False
        diff = (a - b).abs()
        scale = torch.maximum(a.abs(), b.abs())
        ratio = float((diff / (rel * scale + 1e-300)).max())
        worst = max(worst, ratio)
        parts.append(f"{name} max|d| {float(diff.max()):.2e} ({ratio:.3f} of bound)")
    if exact:
        return "exact (counts and every sum bit for bit)"
    head = "within rounding bound (both on the safe side)" if worst <= 1.0 else "OUTSIDE BOUND"
    return f"{head}; counts equal; " + "; ".join(parts)


def tile_occupancy(train_lay, Qc, lam: float, n_rows: int, bm: int, bn: int) -> float:
    """Share of BM×BN tiles (first ``n_rows`` queries, the class-sorted layout) with a point inside."""
    import torch

    q = Qc[: n_rows - n_rows % bm].to(torch.float64)
    x = train_lay.x[:, : q.shape[1]].to(torch.float64)
    d2 = (q * q).sum(1)[:, None] + train_lay.xn.to(torch.float64)[None, :] - 2.0 * q @ x.T
    inside = (d2 <= lam * lam) & (train_lay.w[None, :] > 0)
    t = inside.reshape(q.shape[0] // bm, bm, -1, bn).any(dim=3).any(dim=1)
    return float(t.double().mean())


def tuned_pick(bins: int) -> tuple[int, int, int, int]:
    """The config the default call ran with: the autotuner's pick for the default epilogue's flags
    (``(atomic, skip, atomic counts, packed)`` end its key), the interpreter's fixed config on the CPU."""
    from nwbound.engine.device._triton import _INTERPRET_CONFIG, _TUNED, _epilogue

    picks = [cfg for key, cfg in _TUNED.items() if key[4] == bins and key[-4:] == _epilogue(None)]
    return picks[-1] if picks else _INTERPRET_CONFIG


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="tiny shapes (dry run; with TRITON_INTERPRET=1 on the CPU)")
    ap.add_argument("--device", default=None, help="PyTorch device (default: cuda if visible, else cpu)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--budget", type=float, default=45.0, help="seconds for everything (variants past it are skipped)")
    ap.add_argument("--variants", default="", help="comma-separated indices into VARIANTS (default: all, in order)")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    deadline = start + args.budget
    import torch

    from nwbound.gpu import DeviceTrainingSet
    from nwbound.engine.device._triton import _layout, triton_kernel_statistics

    dev, name = torch_device(args.device)
    if dev.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        print("the CPU needs TRITON_INTERPRET=1 (Triton's interpreter)")
        return 2
    n_train, n_query = SMALL if args.small else ECG_FULL
    X, y, Q, lam, share = ecg_case(n_train, n_query)
    onehot = np.zeros((n_train, 5), dtype=np.float32)
    onehot[np.arange(n_train), y] = 1.0  # unit weights, as the estimator's fit without sample weights
    Xt, Qt, Ot = (torch.from_numpy(a).to(dev) for a in (X, Q, onehot))
    train = DeviceTrainingSet.build(Xt, Ot)
    name = name if dev.type == "cuda" else "cpu (Triton interpreter)"
    print(f"== {n_train} x {X.shape[1]} float32 training, {n_query} queries, 5 classes, epanechnikov, "
          f"lambda {lam:.4f} ({100 * share:.1f} % inside), {BINS} bins, device {dev} ({name}) ==")
    Qc = (Qt.double() - train.center).float()
    free = torch.cuda.mem_get_info(dev)[0] if dev.type == "cuda" else 8 << 30
    block = n_query if 4 * n_query * n_train < free / 4 else 4096
    repeats = max(1, args.repeats if not args.small else 1)
    product_ms = timed_ms(lambda: bare_product(Qc, train.centred, False, block), dev, repeats)
    print(f"PRODUCT bare fp32 Q @ X^T (TF32 off): {product_ms:.2f} ms")
    try:  # how often the skip (c) can fire: tiles of the class-sorted layout with a point inside
        lay = _layout(train)
        n_rows = min(n_query, 1024)
        occ = {(bm, bn): tile_occupancy(lay, Qc, lam, n_rows, bm, bn)
               for bm, bn in ((16, 32), (16, 64), (32, 32)) if n_rows >= bm}
        print("TILES with a point inside the bandwidth (first %d queries): " % n_rows
              + ", ".join(f"{bm}x{bn} {100 * v:.1f} %" for (bm, bn), v in occ.items()))
    except Exception as exc:  # noqa: BLE001 - a read-out only
        print(f"TILES: FAILED {type(exc).__name__}: {str(exc)[:200]}")
    chosen = [VARIANTS[int(i)] for i in args.variants.split(",")] if args.variants else VARIANTS
    base, base_cfg = None, None
    for label, epilogue, cfg, bins in chosen:
        left = deadline - time.perf_counter()
        # The per-bin loop's kernel takes the longest to compile (about ten times the atomic one's PTX).
        need = (12.0 if epilogue in ("loop", "skip") and bins else 4.0) if dev.type == "cuda" else 0.0
        need += 4.0 if cfg is None and dev.type == "cuda" else 0.0  # the tuner compiles three configs
        if left < need:
            print(f"VARIANT {label}: skipped (budget: {left:.0f} s left)")
            continue
        try:
            def call(epilogue=epilogue, cfg=cfg, bins=bins):
                return triton_kernel_statistics(Qt, train, "epanechnikov", lam, need_dist=True, histogram_bins=bins,
                                                gemm="library", config=cfg, epilogue=epilogue)

            t0 = time.perf_counter()
            st = call()  # compiles
            if dev.type == "cuda":
                torch.cuda.synchronize()
            first = time.perf_counter() - t0
            ms = timed_ms(call, dev, repeats)
            if cfg is None:
                cfg = tuned_pick(bins)
                label = f"{label} {cfg[0]}x{cfg[1]} w{cfg[2]}"
            if bins and base is None and epilogue == "loop":
                base, base_cfg = st, cfg
                verdict_text = "baseline"
            elif bins:
                verdict_text = verdict(st, base, cfg, base_cfg) if base is not None else "no baseline to compare"
            else:
                verdict_text = "no histogram (not compared)"
            print(f"VARIANT {label}: {ms:8.2f} ms  {ms / product_ms:5.2f}x product  (first call {first:.1f} s)  "
                  f"| {verdict_text}", flush=True)
        except Exception as exc:  # noqa: BLE001 - one shot on the machine: report and go on
            print(f"VARIANT {label}: FAILED {type(exc).__name__}: {str(exc)[:300]}", flush=True)
            traceback.print_exc(limit=2, file=sys.stdout)
    print(f"== done in {time.perf_counter() - start:.1f} s ==")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
