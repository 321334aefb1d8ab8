"""Issue 19, the localized classifier on a device: the exact k-NN's candidate search and the per-point
Chernoff search's host reads, variant by variant, at the ECG shapes (87 554 x 100 float32 training
points, 21 892 queries, k = 10).

Every variant lives in the library behind a private switch (after issue 19's run 1 the defaults are
``bf16+onesync`` and the lean reads; the baseline is the previous default, ``full``):

* k-NN (``nwbound.engine.device._neighbors``, the config key ``knn_topk`` / the ``_topk`` keyword): ``full`` the
  previous default (``clamp`` then one ``topk`` of each block's ``(rows, 87 554)`` product, the growth
  rounds per block), ``""`` the default (``bf16+onesync``: ``topk`` of a bfloat16 copy of the product,
  2 radix passes of 16 bits instead of 4 of 32, and one read per call for the rows to grow), and the
  other forms of the module's docstring (``noclamp``, ``chunks=N``, ``bf16``, ``onesync``);
* the per-point search (``nwbound.bounds._chernoff_device``): the config key ``search_reads="full"`` the
  previous reads (0-d constants copied from the host, each copy a synchronisation, the first round's open
  pairs read), ``"lean"`` the default; ``_CHECK_EVERY`` probes between two host reads (4); the key
  ``fused_grouped="bp1"``: the fused Triton search for the per-point form with one pair per
  program and one warp (True: the kernel's own launch, 32 pairs per program, 8 warps), every moved end
  re-checked by the float64 exponent, the refused ones searched again eagerly (their count printed).
  The predict part's neighbour statistics skip their five input checks (``check_input=False``, no switch).

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
  baseline's, i.e. stays on the safe side); with the fused per-point search, the ends the float64
  re-check refused (each searched again by the eager search: valid either way, but time lost).

Each variant runs in its own ``try`` (a failure prints one FAILED line); ``--budget`` seconds in all
(parts past it are skipped)::

    SCIPY_ARRAY_API=1 PYTHONPATH=src python3 benchmarks/diag_knn.py                  # CUDA, ECG shapes, < 45 s
    SCIPY_ARRAY_API=1 PYTHONPATH=src TRITON_INTERPRET=1 python3 benchmarks/diag_knn.py --small --device cpu
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import traceback
import warnings

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # array_api_dispatch (before scipy / sklearn are imported)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_gpu import bare_product, ecg_case, timed_ms, torch_device  # noqa: E402
from run import ECG_FULL  # noqa: E402

SMALL = (3_000, 600)
KNN_VARIANTS = ("full", "", "noclamp+onesync")
# (knn_topk, _CHECK_EVERY, search_reads, fused_grouped: nwbound config keys but _CHECK_EVERY) for the whole
# predict_interval; the first is the baseline (the defaults before issue 19's run 1)
PREDICT_VARIANTS = (("full", 4, "full", False), ("", 4, "lean", False), ("", 4, "lean", "bp1"), ("", 4, "lean", True))
_FUSED_LABEL = {False: "", "bp1": ", fused grouped bp=1 w1", True: ", fused grouped bp=32 w8"}


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
    ap.add_argument("--budget", type=float, default=42.0, help="seconds for everything (parts past it are skipped)")
    ap.add_argument("--knn", default=",".join(v or "default" for v in KNN_VARIANTS),
                    help="comma-separated k-NN variants ('default' for the default, 'full' the baseline)")
    ap.add_argument("--no-predict", action="store_true", help="time the k-NN alone")
    ap.add_argument("--predict-queries", type=int, default=None,
                    help="queries of the predict_interval part (default: all; --small: 8, the interpreted search)")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    deadline = start + args.budget
    warnings.simplefilter("ignore")  # UselessBoundWarning etc.: timings only
    import sklearn
    import torch

    import nwbound
    import nwbound.bounds._chernoff_device as cdev
    from nwbound import NadarayaWatsonClassifier
    from nwbound.gpu import DeviceTrainingSet
    from nwbound.engine.device._neighbors import exact_kneighbors

    dev, name = torch_device(args.device)
    n_train, n_query = SMALL if args.small else ECG_FULL
    X, y, Q, lam, share = ecg_case(n_train, n_query)
    print(f"== diag_knn: {n_train} x {X.shape[1]} float32 training, {n_query} queries, k = 10, lambda {lam:.4f} "
          f"({100 * share:.1f} % inside), device {dev} ({name}), torch {torch.__version__} ==")
    Xt, Qt = torch.from_numpy(X).to(dev), torch.from_numpy(Q).to(dev)
    train = DeviceTrainingSet.build(Xt, torch.ones((n_train, 1), dtype=torch.float32, device=dev))
    X64 = Xt.double()
    free = torch.cuda.mem_get_info(dev)[0] if dev.type == "cuda" else 8 << 30
    block = n_query if 4 * n_query * n_train < free / 4 else 4096
    Qc = (Qt.double() - train.center).float()
    bare_product(Qc, train.centred, False, block)  # warm-up
    prod = timed_ms(lambda: bare_product(Qc, train.centred, False, block), dev, args.repeats, warm_up=False)
    print(f"bare fp32 product Q @ X^T (TF32 off): {prod:9.2f} ms")

    def over(label):
        if time.perf_counter() > deadline:
            print(f"VARIANT {label:58s} skipped (time budget spent)")
            return True
        return False

    # 1. The k-NN alone.
    base = exact_kneighbors(Qt, train, X64, 10, _topk="full")
    for v in (w.strip() for w in args.knn.split(",") if w.strip()):
        v = "" if v == "default" else v
        label = f"knn[{'full (baseline)' if v == 'full' else v or 'default bf16+onesync'}]"
        if over(label):
            continue
        try:
            d, i = exact_kneighbors(Qt, train, X64, 10, _topk=v)  # warm-up and the answer
            same = bool(torch.equal(i, base[1]) and torch.equal(d, base[0]))
            rows = int((i != base[1]).any(1).sum())
            ms = timed_ms(lambda v=v: exact_kneighbors(Qt, train, X64, 10, _topk=v), dev, args.repeats, warm_up=False)
            verdict = ("CORRECT: indices and distances identical to the baseline's" if same else
                       f"WRONG: {rows} rows' neighbours differ from the baseline's (the k-NN must be exact)")
            print(f"VARIANT {label:58s} {ms:9.2f} ms  {ms / prod:6.2f}x product  {verdict}")
        except Exception as exc:  # noqa: BLE001 - one line, and the next variant
            print(f"VARIANT {label:58s} FAILED {type(exc).__name__}: {str(exc)[:300]}")
            traceback.print_exc(limit=3, file=sys.stdout)
    if args.no_predict:
        return 0

    # 2. The whole localized predict_interval (CUDA queries under array_api_dispatch).
    est = NadarayaWatsonClassifier(metric=None, bandwidth=lam, lipschitz=1.0, n_neighbors=10, algorithm="brute",
                                   bound="chernoff", dtype="float32", device=str(dev)).fit(X, y)
    if dev.type == "cpu":
        nwbound.set_config(device_bounds_on_cpu=True)  # PyTorch's CPU device standing in for a GPU (the bounds there too)
        # CUDA's default per-point search is the eager one (the fused Triton form is off there); on the CPU
        # the interpreter would take the fused form: the eager one here too, as on the GPU, but where a
        # variant asks for the fused one.
        fused_for = cdev._fused_for
        cdev._fused_for = lambda split, s: bool(split) or nwbound.get_config()["fused_grouped"] is not False \
            and fused_for(split, s)
        print("-- cpu: the per-point search eager, as CUDA's default --")

    n_pred = args.predict_queries or (8 if args.small else n_query)
    Qp = Qt[:n_pred]
    print(f"-- predict_interval on {n_pred} queries --")

    def call():
        with sklearn.config_context(array_api_dispatch=True):
            return est.predict_interval(Qp)

    fields = ("proba", "lower", "upper", "epsilon", "kappa", "n_eff", "vacuous")
    ref = None
    default_every = cdev._CHECK_EVERY
    # The fused per-point search's float64 re-check: the ends it refused, summed over the calls (no read).
    refused: list = []
    certify = cdev.fused_ends_certified

    def counting_certify(*a, **k):
        ok = certify(*a, **k)
        refused.append((~ok).sum())
        return ok

    cdev.fused_ends_certified = counting_certify
    for v, every, reads_mode, fused in PREDICT_VARIANTS:
        knn = "full" if v == "full" else v or "bf16+onesync"
        reads_label = "full reads" if reads_mode == "full" else "lean"
        label = f"predict[{knn}, {reads_label}{_FUSED_LABEL[fused]}]" + (" (baseline)" if ref is None else "")
        if over(label):
            continue
        try:
            nwbound.set_config(knn_topk=v, search_reads=reads_mode, fused_grouped=fused)
            cdev._CHECK_EVERY = every
            refused.clear()
            interpreted = dev.type == "cpu" and fused is not False  # Triton's interpreter: one call, timed and counted
            if interpreted:
                t0 = time.perf_counter()
                with _read_counter(dev) as reads:
                    iv = call()
                ms = 1e3 * (time.perf_counter() - t0)
            else:
                iv = call()  # warm-up (the fused kernel's compile) and the answer
            if dev.type == "cuda":
                torch.cuda.synchronize()
            n_refused = int(sum(int(r) for r in refused)) if refused else None
            if not interpreted:
                with _read_counter(dev) as reads:
                    call()
                ms = timed_ms(call, dev, args.repeats, warm_up=False)
            refused_note = "" if n_refused is None else (
                f"  fused search: {len(refused)} launch(es), float64 re-check refused {n_refused} moved ends"
                + (" (re-searched eagerly)" if n_refused else " (all certified)"))
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
                    others = all(torch.equal(getattr(iv, f), getattr(ref, f)) for f in ("proba", "kappa", "n_eff",
                                                                                         "vacuous"))
                    n_in = int(((iv.lower > ref.lower) | (iv.upper < ref.upper)).sum())
                    verdict = (f"DIFFERS: max |end diff| {diff:.2e} (search tol 1e-07); contains the baseline's "
                               f"{wider}, inside it {narrower}, {n_in} ends inside the baseline's; proba/kappa/"
                               f"n_eff/vacuous identical {others} (both valid: every reported end certified)")
            print(f"VARIANT {label:58s} {ms:9.2f} ms  {ms / prod:6.2f}x product  host reads {reads[0]:3d}  {verdict}"
                  f"{refused_note}")
        except Exception as exc:  # noqa: BLE001
            print(f"VARIANT {label:58s} FAILED {type(exc).__name__}: {str(exc)[:300]}")
            traceback.print_exc(limit=3, file=sys.stdout)
        finally:
            nwbound.set_config(knn_topk="", search_reads="lean", fused_grouped=False)
            cdev._CHECK_EVERY = default_every
    cdev.fused_ends_certified = certify
    print(f"== diag_knn done in {time.perf_counter() - start:.0f} s ==")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
