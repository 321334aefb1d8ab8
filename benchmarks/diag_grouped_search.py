"""The fused Triton search's per-point (grouped) form against the eager search and the host solver.

On an H100 (Triton 3.6) the grouped form's fused ends differed from the host's in one test case
(k = 5, 4 classes, β = 0, concentrated labels) and in the localized benchmark, while Triton's
interpreter matches the eager search; the grouped form therefore runs eagerly on CUDA. This script
forces the fused grouped form (``NWBOUND_FUSED_GROUPED=1``) on the test batches and prints, per
case, the largest differences and the worst pair's inputs, to find the cause on a GPU.

    python benchmarks/diag_grouped_search.py            # CUDA if visible, else CPU
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))


def main() -> int:
    import torch

    from test_gpu_bounds import _per_point_batch  # the tests' batches

    from nwbound.bounds._chernoff import chernoff_interval
    from nwbound.bounds._chernoff_device import chernoff_interval_device

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    np.set_printoptions(precision=6, linewidth=160)
    for k, n_classes, beta, dp, conc in [(10, 2, 0.5, 0.05, False), (5, 4, 0.0, 0.01, True), (5, 4, 0.5, 0.01, True),
                                         (5, 4, 0.0, 0.01, False), (10, 5, 1.0, 0.05, False)]:
        S, count, mass, rho = _per_point_batch(k, 50, k, n_classes, beta, concentrated=conc)
        args = [torch.as_tensor(x, dtype=torch.float64, device=dev) for x in (S, count, mass, rho)]
        ends = {}
        for name, env in (("fused", "1"), ("eager", "0")):
            os.environ["NWBOUND_TRITON_SEARCH"] = env
            os.environ["NWBOUND_FUSED_GROUPED"] = env
            lo, up = chernoff_interval_device(*args, dp)
            ends[name] = np.stack([lo.cpu().numpy(), up.cpu().numpy()])
        ends["host"] = np.stack(chernoff_interval(S, count, mass, mass, rho, dp, engine="numpy"))
        d_fe = np.abs(ends["fused"] - ends["eager"])
        inside = np.all(ends["fused"][0] <= ends["host"][0] + 1e-7) and np.all(ends["fused"][1] >= ends["host"][1] - 1e-7)
        print(f"k={k} C={n_classes} beta={beta} dp={dp} concentrated={conc}: max |fused - eager| {d_fe.max():.2e}, "
              f"max |eager - host| {np.abs(ends['eager'] - ends['host']).max():.2e}, fused contains host {inside}")
        if d_fe.max() > 1e-9:
            side, row, col = np.unravel_index(np.argmax(d_fe), d_fe.shape)
            print(f"  worst: {'lower' if side == 0 else 'upper'} row {row} class {col}: fused {ends['fused'][side, row, col]!r} "
                  f"eager {ends['eager'][side, row, col]!r} host {ends['host'][side, row, col]!r}")
            print(f"  S {S[row]}\n  count {count[row]}\n  mass {mass[row]}\n  rho {rho[row]}")
            print(f"  pairs off by > 1e-9: {int((d_fe > 1e-9).sum())} of {d_fe.size}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
