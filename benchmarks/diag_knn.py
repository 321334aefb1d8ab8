"""Issue 19, the localized classifier on a device: the exact k-NN's candidate search and the per-point
Chernoff search's host reads, variant by variant, at the ECG shapes (87 554 x 100 float32 training
points, 21 892 queries, k = 10).

Every variant lives in the library behind a private switch whose default is the current code:

* k-NN (``nwbound.gpu._neighbors``, ``NWBOUND_KNN_TOPK`` / the ``_topk`` keyword): ``""`` the
  baseline (``clamp`` then one ``topk`` of each block's ``(rows, 87 554)`` product), ``noclamp``,
  ``chunks=N`` (``topk`` per column chunk, then of the ``N·k′`` candidates), ``bf16`` (``topk`` of a
  bfloat16 copy of the product: 2 radix passes of 16 bits instead of 4 of 32), ``bf16+chunks=N``,
  ``onesync`` (one read per call for the rows to grow, instead of one per block);
* the per-point search (``nwbound.bounds._chernoff_device._CHECK_EVERY``, a module constant read at
  each call): probes between two host reads of the open pairs (4, the default; 8, 16: fewer reads,
  more probes on pairs already closed, whose ends do not move); ``NWBOUND_SEARCH_READS=lean`` (its
  0-d constants filled on the device instead of copied from the host, each copy a synchronisation,
  and the first round in place without a read).

Printed, after the bare fp32 product (TF32 off) in the same run:

* ``VARIANT knn[...]``: ``exact_kneighbors`` alone (median of ``--repeats`` after a warm-up, CUDA
  events), its ratio to the product, and CORRECT/WRONG: indices and float64 distances identical to
  the baseline's (the k-NN is exact under one rule: anything else is a bug);
* ``VARIANT predict[...]``: the whole ``predict_interval`` (``NadarayaWatsonClassifier(metric=None,
  lipschitz=1.0, n_neighbors=10, algorithm="brute", bandwidth=λ, dtype="float32", device=...)``, CUDA
  queries under ``array_api_dispatch`` as ``bench_device_bounds.py``), its ratio, the call's host
  reads (CUDA: ``torch.cuda.set_sync_debug_mode`` warnings; CPU: a counter on ``nonzero``/``item``/
  ``bool``/``int``/``float``/``tolist``), and CORRECT when every field of the interval equals the
  baseline's bit for bit (else the largest end difference and whether each interval contains the
  baseline's, i.e. stays on the safe side).

Each variant runs in its own ``try`` (a failure prints one FAILED line); ``--budget`` seconds in all
(parts past it are skipped)::

    SCIPY_ARRAY_API=1 PYTHONPATH=src python3 benchmarks/diag_knn.py                  # CUDA, ECG shapes, < 60 s
    SCIPY_ARRAY_API=1 PYTHONPATH=src TRITON_INTERPRET=1 python3 benchmarks/diag_knn.py --small --device cpu
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
import traceback
import warnings

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # array_api_dispatch (before scipy / sklearn are imported)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_gpu import bare_product, pick_bandwidth  # noqa: E402
from run import ECG_FULL, ecg_like  # noqa: E402

SMALL = (3_000, 600)
KNN_VARIANTS = ("", "noclamp", "chunks=4", "chunks=8", "chunks=16", "bf16", "bf16+chunks=4", "bf16+chunks=8",
                "bf16+chunks=16", "onesync", "bf16+onesync", "bf16+chunks=8+onesync")
# (NWBOUND_KNN_TOPK, _CHECK_EVERY, NWBOUND_SEARCH_READS) for the whole predict_interval
PREDICT_VARIANTS = (("", 4, ""), ("noclamp", 4, ""), ("chunks=8", 4, ""), ("bf16", 4, ""), ("bf16+chunks=8", 4, ""),
                    ("", 8, ""), ("", 16, ""), ("", 64, ""), ("", 4, "lean"), ("bf16", 4, "lean"),
                    ("bf16+chunks=8", 4, "lean"), ("bf16+onesync", 4, "lean"))


def _ms(fn, dev, repeats: int) -> float:
    """Median milliseconds of ``fn()`` over ``repeats`` runs (the caller has warmed it up)."""
    import torch

    times = []
    for _ in range(repeats):
        if dev.type == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
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


@contextlib.contextmanager
def _read_counter(dev):
    """Counts the host reads of the block: CUDA's sync debug mode (each synchronising call warns), or on
    the CPU a counter on the tensor methods that read a value (``nonzero`` included)."""
    import torch

    box = [0]
    if dev.type == "cuda":
        torch.cuda.synchronize()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                yield box
            finally:
                torch.cuda.set_sync_debug_mode(0)
        box[0] = sum("synchroniz" in str(w.message).lower() for w in caught)
        return
    saved = {}

    def counting(owner, name):
        orig = getattr(owner, name)
        saved[(owner, name)] = orig

        def wrapper(*a, **k):
            box[0] += 1
            return orig(*a, **k)

        setattr(owner, name, wrapper)

    for name in ("item", "__bool__", "__int__", "__float__", "tolist", "nonzero"):
        counting(torch.Tensor, name)
    counting(torch, "nonzero")
    try:
        yield box
    finally:
        for (owner, name), orig in saved.items():
            setattr(owner, name, orig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="tiny shapes (a dry run of the script)")
    ap.add_argument("--device", default=None, help="PyTorch device (default: cuda if visible, else cpu)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--budget", type=float, default=55.0, help="seconds for everything (parts past it are skipped)")
    ap.add_argument("--knn", default=",".join(v or "baseline" for v in KNN_VARIANTS),
                    help="comma-separated k-NN variants ('baseline' for the default)")
    ap.add_argument("--no-predict", action="store_true", help="time the k-NN alone")
    ap.add_argument("--predict-queries", type=int, default=None,
                    help="queries of the predict_interval part (default: all; --small: 40, the CPU's interpreted search)")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    deadline = start + args.budget
    warnings.simplefilter("ignore")  # UselessBoundWarning etc.: timings only
    import sklearn
    import torch

    import nwbound.bounds._chernoff_device as cdev
    from nwbound import NadarayaWatsonClassifier
    from nwbound.gpu import DeviceTrainingSet
    from nwbound.gpu._neighbors import exact_kneighbors

    dev = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    n_train, n_query = SMALL if args.small else ECG_FULL
    X, y, Q = ecg_like(n_train, n_query)
    lam, share = pick_bandwidth(Q, X, 0.05)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    print(f"== diag_knn: {n_train} x {X.shape[1]} float32 training, {n_query} queries, k = 10, lambda {lam:.4f} "
          f"({100 * share:.1f} % inside), device {dev} ({name}), torch {torch.__version__} ==")
    Xt, Qt = torch.from_numpy(X).to(dev), torch.from_numpy(Q).to(dev)
    train = DeviceTrainingSet.build(Xt, torch.ones((n_train, 1), dtype=torch.float32, device=dev))
    X64 = Xt.double()
    free = torch.cuda.mem_get_info(dev)[0] if dev.type == "cuda" else 8 << 30
    block = n_query if 4 * n_query * n_train < free / 4 else 4096
    Qc = (Qt.double() - train.center).float()
    bare_product(Qc, train.centred, False, block)  # warm-up
    prod = _ms(lambda: bare_product(Qc, train.centred, False, block), dev, args.repeats)
    print(f"bare fp32 product Q @ X^T (TF32 off): {prod:9.2f} ms")

    def over(label):
        if time.perf_counter() > deadline:
            print(f"VARIANT {label:44s} skipped (time budget spent)")
            return True
        return False

    # 1. The k-NN alone.
    base = exact_kneighbors(Qt, train, X64, 10, _topk="")
    for v in (w.strip() for w in args.knn.split(",") if w.strip()):
        v = "" if v == "baseline" else v
        label = f"knn[{v or 'baseline'}]"
        if over(label):
            continue
        try:
            d, i = exact_kneighbors(Qt, train, X64, 10, _topk=v)  # warm-up and the answer
            same = bool(torch.equal(i, base[1]) and torch.equal(d, base[0]))
            rows = int((i != base[1]).any(1).sum())
            ms = _ms(lambda v=v: exact_kneighbors(Qt, train, X64, 10, _topk=v), dev, args.repeats)
            verdict = ("CORRECT: indices and distances identical to the baseline's" if same else
                       f"WRONG: {rows} rows' neighbours differ from the baseline's (the k-NN must be exact)")
            print(f"VARIANT {label:44s} {ms:9.2f} ms  {ms / prod:6.2f}x product  {verdict}")
        except Exception as exc:  # noqa: BLE001 - one line, and the next variant
            print(f"VARIANT {label:44s} FAILED {type(exc).__name__}: {str(exc)[:300]}")
            traceback.print_exc(limit=3, file=sys.stdout)
    if args.no_predict:
        return 0

    # 2. The whole localized predict_interval (CUDA queries under array_api_dispatch).
    est = NadarayaWatsonClassifier(metric=None, bandwidth=lam, lipschitz=1.0, n_neighbors=10, algorithm="brute",
                                   bound="chernoff", dtype="float32", device=str(dev)).fit(X, y)
    if dev.type == "cpu":
        from nwbound.estimators import _device

        _device.BOUNDS_ON_CPU = True  # PyTorch's CPU device standing in for a GPU (the bounds there too)
        # CUDA's default per-point search is the eager one (the fused Triton form is off there); on the CPU
        # the interpreter would take the fused form: the eager one here too, as on the GPU.
        cdev._fused_for = lambda split, s: bool(split)
        print("-- cpu: the per-point search eager, as CUDA's default --")

    n_pred = args.predict_queries or (40 if args.small else n_query)
    Qp = Qt[:n_pred]
    print(f"-- predict_interval on {n_pred} queries --")

    def call():
        with sklearn.config_context(array_api_dispatch=True):
            return est.predict_interval(Qp)

    fields = ("proba", "lower", "upper", "epsilon", "kappa", "n_eff", "vacuous")
    ref = None
    default_every = cdev._CHECK_EVERY
    for v, every, reads_mode in PREDICT_VARIANTS:
        label = f"predict[{v or 'baseline'}, check_every={every}{', ' + reads_mode if reads_mode else ''}]"
        if over(label):
            continue
        try:
            os.environ["NWBOUND_KNN_TOPK"] = v
            os.environ["NWBOUND_SEARCH_READS"] = reads_mode
            cdev._CHECK_EVERY = every
            iv = call()  # warm-up and the answer
            if dev.type == "cuda":
                torch.cuda.synchronize()
            with _read_counter(dev) as reads:
                call()
            ms = _ms(call, dev, args.repeats)
            if ref is None:
                ref = iv
                verdict = "(the baseline)"
            else:
                same = all(torch.equal(getattr(iv, f), getattr(ref, f)) for f in fields)
                if same:
                    verdict = "CORRECT: every field identical to the baseline's"
                else:
                    diff = max(float((iv.lower - ref.lower).abs().max()), float((iv.upper - ref.upper).abs().max()))
                    wider = bool(((iv.lower <= ref.lower) & (iv.upper >= ref.upper)).all())
                    narrower = bool(((iv.lower >= ref.lower) & (iv.upper <= ref.upper)).all())
                    verdict = (f"DIFFERS: max |end diff| {diff:.2e}; contains the baseline's {wider}, inside it "
                               f"{narrower} (same statistics: both must be valid ends of the same search)")
            print(f"VARIANT {label:44s} {ms:9.2f} ms  {ms / prod:6.2f}x product  host reads {reads[0]:3d}  {verdict}")
        except Exception as exc:  # noqa: BLE001
            print(f"VARIANT {label:44s} FAILED {type(exc).__name__}: {str(exc)[:300]}")
            traceback.print_exc(limit=3, file=sys.stdout)
        finally:
            os.environ.pop("NWBOUND_KNN_TOPK", None)
            os.environ.pop("NWBOUND_SEARCH_READS", None)
            cdev._CHECK_EVERY = default_every
    print(f"== diag_knn done in {time.perf_counter() - start:.0f} s ==")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
