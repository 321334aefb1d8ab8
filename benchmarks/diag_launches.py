"""Where the default (band-Chernoff) device call's kernel launches come from, and what refusals cost.

At the ECG shapes with CUDA queries under ``array_api_dispatch``, the regular classifier's default
bound: the call's time as a ratio to the bare fp32 product, the fused search's ends refused by the
float64 re-check (first launch, and after the kernel's second launch at a stricter level), whether
the eager search ran, and every PyTorch call of one ``predict_interval`` counted by the nwbound
source line that made it (a ``TorchFunctionMode``: each such call is one or more kernel launches on
a GPU), top lines first. Each configuration of ``--variants`` (config key ``search_variant``) is
run the same way.

    python benchmarks/diag_launches.py                       # CUDA, ECG shapes (< 60 s)
    python benchmarks/diag_launches.py --small --device cpu  # a dry run of the script
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_gpu import ecg_device_case, timed_ms  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--device", default=None)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--variants", default=";margin=1", help="';'-separated search_variant values ('' the default)")
    ap.add_argument("--top", type=int, default=8)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    import sklearn
    import torch
    from torch.overrides import TorchFunctionMode

    import nwbound
    import nwbound.bounds._chernoff_device as cd
    from nwbound import NadarayaWatsonClassifier

    dev, X, y, Q, Qt, lam, product = ecg_device_case(args.device, args.small, args.repeats)
    est = NadarayaWatsonClassifier(metric=None, bandwidth=lam, lipschitz=1.0, bound="chernoff", dtype="float32",
                                   device=str(dev)).fit(X, y)
    eager_runs = {"n": 0}
    probe_for = cd._probe_for

    def counting_probe_for(*a, **k):
        eager_runs["n"] += 1
        return probe_for(*a, **k)

    cd._probe_for = counting_probe_for

    class Count(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.lines: collections.Counter = collections.Counter()

        def __torch_function__(self, func, types, a=(), kwargs=None):
            frame = sys._getframe(1)
            while frame is not None and "nwbound" not in frame.f_code.co_filename:
                frame = frame.f_back
            where = "?" if frame is None else (
                f"{frame.f_code.co_filename.split('src/')[-1]}:{frame.f_lineno} {frame.f_code.co_name}")
            self.lines[where] += 1
            return func(*a, **(kwargs or {}))

    def call():
        with sklearn.config_context(array_api_dispatch=True):
            return est.predict_interval(Qt)

    for variant in args.variants.split(";"):
        with nwbound.config_context(search_variant=variant):
            call()  # warm-up (compiles this launch)
            ms = timed_ms(call, dev, args.repeats)
            cd._TRITON_SEARCH.pop("unverified", None)
            cd._TRITON_SEARCH.pop("unverified_after_retry", None)
            eager_runs["n"] = 0
            with Count() as counted:
                call()
            first = cd._TRITON_SEARCH.get("unverified")
            after = cd._TRITON_SEARCH.get("unverified_after_retry")
        print(f"VARIANT {variant or 'default':12s} {ms:8.2f} ms  {ms / product:6.2f}x product  "
              f"torch calls {sum(counted.lines.values()):6d}  refused {'-' if first is None else int(first)}  "
              f"after the kernel's retry {'-' if after is None else int(after)}  eager search runs {eager_runs['n']}")
        for where, n in counted.lines.most_common(args.top):
            print(f"    {n:6d}  {where}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
