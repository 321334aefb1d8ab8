"""The regular classifier's fused band-Chernoff search (split form) alone, variant by variant (issue 19).

Round 7 on an H100 at the ECG shapes: ``search_kernel`` 21.6 ms against a bare fp32 product of
10.84 ms; round 9's run 1 (the launch variants): one pair per one-warp program 6.5 ms, now the default.
This script builds the real search inputs once (the estimator's own call: the statistics
on the device, then :func:`nwbound.bounds._chernoff_device._search`, whose arguments are captured
at :func:`nwbound.bounds._chernoff_triton.triton_search`), then times ONLY the search kernel for each
private launch variant (``_variant=``, the same keys as the config key ``search_variant``), the bare fp32
product (TF32 off) timed in the same run. Per variant one line::

    VARIANT <name> <ms> ms <ratio>x product  regs <n> spills <n>  CORRECTNESS <verdict>

The verdict compares the variant's left ends with the baseline's on the same inputs: ``exact`` where
every end is bitwise the baseline's; otherwise the largest difference, how many ends are narrower
than the baseline's (inside: the interval would be narrower) and whether the float64 re-check
(:func:`._chernoff_device.fused_ends_certified`: PyTorch's exponent at the kernel's θ) certifies every
moved end (``safe``: each end is a rejected level, so the interval still contains the exact one).

The ``baseline`` is round 9's previous default (16 pairs per 8-warp program, no low_first, no rounding
margin on φ); ``default`` the current one. A ``SEARCH`` line times the whole default search as the
library runs it (:func:`._chernoff_device._search`: the kernel, the float64 re-check of every moved
end and the one read of the refused count), a ``RECHECK`` line the re-check alone.

A ``COUNTS`` section (the default with ``count=1``): probes and θ evaluations per open pair, and the
share of a program's evaluations that its pairs needed (the divergence), with the same share
simulated for other orders and pairs per program from the per-pair counts.

    python benchmarks/diag_search.py                    # ECG shapes on CUDA, <= 45 s (--budget)
    python benchmarks/diag_search.py --variants baseline,default,bp1_w1_no_low   # a chosen few
    TRITON_INTERPRET=1 python benchmarks/diag_search.py --small --device cpu   # dry run (interpreter)
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import traceback
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_gpu import bare_product, ecg_case, timed_ms, torch_device  # noqa: E402
from run import ECG_FULL  # noqa: E402

SMALL = (400, 4)

# (name, variant): the baseline first (every other compares with it), then by expected value. Round 9's
# default became one pair per one-warp program with low_first and the rounding margin (run 1, H100: 6.5 ms
# vs 21.7 ms); "baseline" is the previous default exactly (16 pairs per 8-warp program, no low_first,
# no margin: run 1's "baseline", whose ends the float64 re-check refused 27 of), "default" the new one.
_PREV = dict(bp=16, warps=8, low_first=0)
VARIANTS = [
    ("baseline", {**_PREV, "margin": 0}),
    ("default", {}),
    ("default_count", {"count": 1}),
    ("previous_margin", dict(_PREV)),
    ("default_no_margin", {"margin": 0}),
    ("bp1_w1_no_low", {"low_first": 0}),
    ("bp1_w1_one_exp", {"one_exp": 1}),
    ("bp2_w1_low", {"bp": 2}),
    ("bp1_w2_low", {"warps": 2}),
    ("bp1_w1_compact", {"order": "compact"}),
]
SMALL_VARIANTS = ("baseline", "default", "default_count", "previous_margin")


def capture_search(X, y, Q, lam, dev):
    """Fit the estimator as a user does and run one ``predict_interval``; return the (largest) split-form
    call of ``triton_search`` it made: ``(args, kwargs)``."""
    import nwbound.bounds._chernoff_triton as ct
    from nwbound import NadarayaWatsonClassifier
    import nwbound

    # The dry run: PyTorch's CPU device stands in for a GPU.
    nwbound.set_config(device_bounds_on_cpu=True, regular_chernoff_on_device=True)
    calls = []
    original = ct.triton_search

    def spy(*args, **kwargs):
        if args[0]:  # split form
            calls.append((args, dict(kwargs)))
        return original(*args, **kwargs)

    ct.triton_search = spy
    try:
        est = NadarayaWatsonClassifier(metric=None, lipschitz=1.0, bandwidth=lam, bound="chernoff",
                                       dtype="float32", device=str(dev)).fit(X, y)
        est.predict_interval(Q)
    finally:
        ct.triton_search = original
    if not calls:
        raise RuntimeError("predict_interval made no fused split-form search call (is Triton applicable here?)")
    return max(calls, key=lambda c: c[0][2].numel())


def recheck_data(flat):
    """The kernel's (n, B) fields back in :func:`._chernoff_device._search`'s shapes (for the re-check)."""
    import torch

    A, bD, mcap, rho, rho_in, W0, W1, As0, As1 = flat
    four = tuple(x[:, None, None, :] for x in (A, bD, mcap, rho, rho_in))
    return four + (torch.stack([W0, W1], 1)[:, None], torch.stack([As0, As1], 1)[:, None])


def _once(fn):
    c0 = time.perf_counter()
    fn()
    return time.perf_counter() - c0


def divergence(counts, order, bp):
    """Share of the program's evaluations that its pairs needed, for pairs taken in ``order`` ``bp`` at a
    time (each program evaluates as long as its slowest pair: an estimate from per-pair counts)."""
    ev = counts[:, 1].astype(np.float64)[order]
    pad = (-ev.size) % bp
    ev = np.concatenate([ev, np.zeros(pad)]).reshape(-1, bp)
    spent = ev.max(1).sum() * bp
    return float(ev.sum() / spent) if spent else 1.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="tiny shapes (a dry run, e.g. under TRITON_INTERPRET=1)")
    ap.add_argument("--device", default=None, help="PyTorch device (default: cuda if visible, else cpu)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds for everything (variants past it are skipped; default 45, --small 170)")
    ap.add_argument("--queries", type=int, default=None, help="this many of the ECG queries (the full training set)")
    ap.add_argument("--variants", default=None, help="comma-separated names (default: all; --small: a few)")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    deadline = start + (args.budget if args.budget is not None else (170.0 if args.small else 45.0))
    warnings.simplefilter("ignore")
    import torch

    import nwbound.bounds._chernoff_device as cd
    import nwbound.bounds._chernoff_triton as ct
    from nwbound.gpu import DeviceTrainingSet

    dev, name = torch_device(args.device)
    n_train, n_query = SMALL if args.small else ECG_FULL
    X, y, Q, lam, share = ecg_case(n_train, n_query)
    if args.queries:  # the ECG bandwidth, fewer queries (e.g. counts under the interpreter)
        Q = Q[: args.queries]
        n_query = Q.shape[0]
    print(f"== diag_search: {n_train} x {X.shape[1]} float32 training, {n_query} queries, lambda {lam:.4f} "
          f"({100 * share:.1f} % inside), device {dev} ({name}), "
          f"interpreter {os.environ.get('TRITON_INTERPRET') == '1'} ==")
    # The bare product first (the ratio's base).
    onehot = np.ones((X.shape[0], 1), dtype=np.float32)
    train = DeviceTrainingSet.build(torch.from_numpy(X).to(dev), torch.from_numpy(onehot).to(dev))
    Qc = (torch.from_numpy(Q).to(dev).double() - train.center).float()
    prod = timed_ms(lambda: bare_product(Qc, train.centred, False, Q.shape[0]), dev, args.repeats)
    print(f"bare fp32 product Q @ X^T (TF32 off): {prod:9.2f} ms")
    del train, Qc
    t0 = time.perf_counter()
    call_args, call_kwargs = capture_search(X, y, Q, lam, dev)
    split, flat, s, a, b, m, theta, t_max, log_level, tol, open_ = call_args
    n, K = s.shape
    open_pairs = int((open_ & (b - a > tol)).expand(n, K).sum())
    print(f"search inputs: {n} queries x {K} ends ({open_pairs} open of {n * K}), {flat[0].shape[1]} bins; "
          f"fit + first predict_interval {time.perf_counter() - t0:.1f} s")
    data4 = recheck_data(flat)
    given = a.expand(n, K)

    def run(variant):
        return ct.triton_search(*call_args, **call_kwargs, _variant=variant)

    def whole_search(base_default):
        # The default search as the library runs it, and its float64 re-check alone (both forms by default).
        for label, fn in (("SEARCH default (kernel + float64 re-check + 1 read)",
                           lambda: cd._search(torch, True, data4, s, a, b, m, theta, t_max, log_level, tol, open_)),
                          ("RECHECK float64 re-check alone (one φ per pair)",
                           lambda: cd.fused_ends_certified(torch, True, data4, s, given, *base_default, log_level))):
            try:
                ms = timed_ms(fn, dev, args.repeats) if not args.small else 1e3 * _once(fn)
                print(f"{label}: {ms:8.2f} ms {ms / prod:6.2f}x product")
            except Exception as exc:  # noqa: BLE001 - one line
                print(f"{label}: FAILED {type(exc).__name__}: {str(exc)[:300]}")

    wanted = [v.strip() for v in args.variants.split(",")] if args.variants else (
        list(SMALL_VARIANTS) if args.small else [v[0] for v in VARIANTS])
    table = dict(VARIANTS)
    unknown = [w for w in wanted if w not in table]
    if unknown:
        ap.error(f"--variants: unknown {unknown}; choose among {', '.join(table)}")
    if "baseline" not in wanted:
        wanted.insert(0, "baseline")
    if "default" not in wanted:
        wanted.insert(1, "default")
    base = base_default = None
    for label in wanted:
        variant = table[label]
        if time.perf_counter() + (4.0 if args.small else 6.0) > deadline:
            print(f"VARIANT {label:22s} skipped (time budget spent)")
            continue
        try:
            c0 = time.perf_counter()
            ends, cert = run(variant)  # the warm-up (compiles)
            if dev.type == "cuda":
                torch.cuda.synchronize()
            first = time.perf_counter() - c0
            launch = dict(ct.LAST_LAUNCH)
            kern = launch.get("kernel")
            try:  # CUDA: the compiled kernel's registers and spills (ptxas' report); None under the interpreter
                if kern is not None and hasattr(kern, "_init_handles"):
                    kern._init_handles()
                regs, spills = getattr(kern, "n_regs", None), getattr(kern, "n_spills", None)
            except Exception:  # noqa: BLE001 - a report, not the timing
                regs = spills = None
            # (the interpreter: the warm-up call's time; a GPU: the median of the repeats after it)
            ms = 1e3 * first if args.small else timed_ms(lambda: run(variant), dev, args.repeats)
            if base is None:
                base = (ends, cert)
            if label == "default":
                base_default = (ends, cert)
            ok = cd.fused_ends_certified(torch, True, data4, s, given, ends, cert, log_level)
            refused = int((~ok).sum())
            if torch.equal(ends, base[0]):
                verdict = "exact"
            else:
                d = ends - base[0]
                narrower = d > 0  # a larger left end: the interval is narrower than the baseline's
                verdict = (f"differs: max|d| {float(d.abs().max()):.2e}, {int((d != 0).sum())} ends differ, "
                           f"{int(narrower.sum())} narrower (by <= {float(d.clamp(min=0).max()):.2e}; the search's "
                           f"tol {tol:g}), {int((d < 0).sum())} wider")
            verdict += f"; float64 re-check refused {refused} moved ends -> {'safe' if refused == 0 else 'UNSAFE'}"
            print(f"VARIANT {label:22s} {ms:8.2f} ms {ms / prod:6.2f}x product  regs {regs} spills {spills}  "
                  f"grid {launch.get('grid')} (first call {first:.1f} s)  CORRECTNESS {verdict}")
            if label == "default":
                whole_search(base_default)
            if "counts" in launch:
                counts = launch["counts"].cpu().numpy()
                live = counts[:, 0] > 0
                ev = counts[live, 1]
                print(f"COUNTS open pairs {int(live.sum())}: probes mean {counts[live, 0].mean():.1f} "
                      f"(p50 {np.median(counts[live, 0]):.0f}, p99 {np.percentile(counts[live, 0], 99):.0f}, "
                      f"max {counts[live, 0].max()}), θ evaluations mean {ev.mean():.1f} (max {ev.max()}); "
                      f"evaluations the programs ran / needed: {counts[:, 2].sum() / max(counts[:, 1].sum(), 1):.2f} "
                      f"(per pair slot)")
                natural = np.arange(counts.shape[0])
                closed_last = np.argsort(~live, kind="stable")
                width = (b - a).expand(n, K).reshape(-1).cpu().numpy()
                by_width = np.lexsort((-width, ~live))
                by_need = np.lexsort((-counts[:, 1], ~live))  # an oracle: the true counts
                for bp_ in (1, 2, 4, 8, 16, 32):
                    print(f"COUNTS bp {bp_:2d}: useful share natural {divergence(counts, natural, bp_):.2f}, "
                          f"compact {divergence(counts, closed_last, bp_):.2f}, "
                          f"width {divergence(counts, by_width, bp_):.2f}, "
                          f"oracle {divergence(counts, by_need, bp_):.2f}")
        except Exception as exc:  # noqa: BLE001 - one line, and the next variant
            print(f"VARIANT {label:22s} FAILED {type(exc).__name__}: {str(exc)[:300]}")
            traceback.print_exc(limit=2, file=sys.stdout)
    print(f"diag_search done in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
