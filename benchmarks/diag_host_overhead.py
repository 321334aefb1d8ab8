"""Where ``predict_interval``'s wall time goes beyond the device's (issue 19: the host's share).

At the ECG shapes with CUDA queries under ``array_api_dispatch``, for the Hoeffding and the default
(Chernoff) bound: the wall time of one call, the device time of the same call (CUDA events around
it), the host time before the statistics pass is launched (call entry to the first product
launch), and the host time after the call's one device read (its end to the return). Then a
``cProfile`` of a few calls (cumulative, top 25): which host functions those milliseconds are.

    python benchmarks/diag_host_overhead.py                 # CUDA, ECG shapes (< 40 s)
    python benchmarks/diag_host_overhead.py --small --device cpu   # a dry run of the script
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_gpu import ecg_device_case, timed_ms  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--device", default=None)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--bounds", default="hoeffding,chernoff")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    import sklearn
    import torch

    import nwbound.engine.device._triton as tri
    from nwbound import NadarayaWatsonClassifier
    import nwbound

    dev, X, y, Q, Qt, lam, product = ecg_device_case(args.device, args.small, args.repeats)
    cuda = dev.type == "cuda"
    marks: dict[str, float] = {}
    launch, tolist = tri._launch, torch.Tensor.tolist

    def first_launch(*a, **kw):
        marks.setdefault("launch", time.perf_counter())
        return launch(*a, **kw)

    def read(self, *a, **kw):
        out = tolist(self, *a, **kw)
        marks["read"] = time.perf_counter()  # the last read of the call wins
        return out

    tri._launch = first_launch
    torch.Tensor.tolist = read
    for bound in [b for b in args.bounds.split(",") if b]:
        est = NadarayaWatsonClassifier(metric=None, lipschitz=1.0, bandwidth=lam, bound=bound, dtype="float32",
                                       device=str(dev)).fit(X, y)

        def call():
            with sklearn.config_context(array_api_dispatch=True):
                return est.predict_interval(Qt)

        for _ in range(2):
            call()
        rows = []
        for _ in range(args.repeats):
            marks.clear()
            if cuda:
                torch.cuda.synchronize()
                ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                ev0.record()
            t0 = time.perf_counter()
            call()
            t1 = time.perf_counter()
            if cuda:
                ev1.record()
                torch.cuda.synchronize()
                span = ev0.elapsed_time(ev1)
            else:
                span = float("nan")
            rows.append(((t1 - t0) * 1e3, span, (marks.get("launch", t1) - t0) * 1e3, (t1 - marks.get("read", t1)) * 1e3))
        wall, span, pre, post = np.median(np.array(rows), axis=0)
        print(f"HOST {bound:10s} wall {wall:8.2f} ms ({wall / product:.2f}x product) | events around the call {span:8.2f} ms | entry -> first "
              f"launch {pre:6.2f} ms | last read -> return {post:6.2f} ms")
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(5):
            call()
        pr.disable()
        print(f"-- cProfile, {bound}, 5 calls (cumulative) --")
        pstats.Stats(pr, stream=sys.stdout).sort_stats("cumulative").print_stats(25)
    tri._launch, torch.Tensor.tolist = launch, tolist
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
