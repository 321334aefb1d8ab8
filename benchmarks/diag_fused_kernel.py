"""Where the fused per-point (grouped) Chernoff kernel goes wrong on CUDA: one batch of the tests,
the kernel's inputs captured, then the worst pair re-run in isolation with variations.

    python benchmarks/diag_fused_kernel.py      # on a CUDA machine (Triton compiled)
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from nwbound.bounds._chernoff_search_kernel import _eval_grouped  # noqa: E402


@triton.jit
def eval_kernel(N_ptr, M_ptr, R_ptr, s_ptr, m_ptr, th_ptr, out_ptr, B, BB: tl.constexpr, LIB: tl.constexpr):
    i = tl.program_id(0)
    bins = tl.arange(0, BB)
    msk = bins < B
    N = tl.load(N_ptr + i * B + bins, mask=msk, other=0.0)[None, :]
    M = tl.load(M_ptr + i * B + bins, mask=msk, other=0.0)[None, :]
    R = tl.load(R_ptr + i * B + bins, mask=msk, other=0.0)[None, :]
    s = tl.load(s_ptr + i + tl.arange(0, 1))
    m = tl.load(m_ptr + i + tl.arange(0, 1))
    th = tl.load(th_ptr + i + tl.arange(0, 1))
    phi, d1, d2, dm, am, err = _eval_grouped(N, M, R, s, m, th, LIB)
    o = tl.arange(0, 1)
    tl.store(out_ptr + i * 6 + 0 + o, phi)
    tl.store(out_ptr + i * 6 + 1 + o, d1)
    tl.store(out_ptr + i * 6 + 2 + o, d2)
    tl.store(out_ptr + i * 6 + 3 + o, dm)
    tl.store(out_ptr + i * 6 + 4 + o, am)
    tl.store(out_ptr + i * 6 + 5 + o, err)



def main() -> int:
    import torch

    import nwbound.bounds._chernoff_device as cd
    import nwbound.bounds._chernoff_triton as ct
    from nwbound.bounds._chernoff_search_kernel import search_kernel
    from test_gpu_bounds import _per_point_batch

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    os.environ.update(NWBOUND_TRITON_SEARCH="1", NWBOUND_FUSED_GROUPED="1", NWBOUND_FUSED_VERIFY="0")
    captured = []
    real = ct.triton_search

    def spy(split, data, s, a, b, m, theta, t_max, log_level, tol, open_, **kw):
        out = real(split, data, s, a, b, m, theta, t_max, log_level, tol, open_, **kw)
        if not split:
            captured.append(dict(data=data, s=s, a=a, b=b, m=m, theta=theta, t_max=t_max, log_level=log_level,
                                 tol=tol, open_=open_, kw=kw, out=out))
        return out

    ct.triton_search = spy
    S, count, mass, rho = _per_point_batch(5, 200, 5, 4, 0.0, concentrated=True)
    args = [torch.as_tensor(x, dtype=torch.float64, device=dev) for x in (S, count, mass, rho)]
    cd.chernoff_interval_device(*args, 0.01)
    ct.triton_search = real
    print(f"captured {len(captured)} grouped calls")

    for ci, c in enumerate(captured):
        ends, cert = c["out"]
        given = c["a"].expand(ends.shape)
        data3 = tuple(x[:, None, :] for x in c["data"])
        ok = cd.fused_ends_certified(torch, False, data3, c["s"], given, ends, cert, c["log_level"])
        bad = ~ok
        print(f"call {ci}: pairs {ends.numel()}, refused {int(bad.sum())}; shapes s {tuple(c['s'].shape)} "
              f"a {tuple(c['a'].shape)} b {tuple(c['b'].shape)} m {tuple(c['m'].shape)} theta {tuple(c['theta'].shape)} "
              f"t_max {tuple(c['t_max'].shape)} open {tuple(c['open_'].shape)} data {[tuple(x.shape) for x in c['data']]}")
        if not int(bad.sum()) and dev == "cuda":
            continue
        gap = torch.where(bad, ends - given, -1.0) if int(bad.sum()) else (ends - given)  # dry run: any moved end
        flat = int(torch.argmax(gap.reshape(-1)))
        row, col = divmod(flat, gap.shape[1])
        N, M, R = (x[row] for x in c["data"])
        print(f"  worst row {row} col {col}: end {float(ends[row, col])!r} given {float(given[row, col])!r} "
              f"theta {float(cert[row, col])!r}")
        # 1. the evaluation alone at (end, theta) and at a few thetas, Triton vs torch
        B = int(N.numel())
        BB = max(2, 1 << max(0, (B - 1).bit_length()))
        thetas = torch.tensor([float(cert[row, col]), 1.0, 10.0, 50.0, 200.0], dtype=torch.float64, device=dev)
        k = thetas.numel()
        rep = lambda x: x[None, :].expand(k, B).contiguous()  # noqa: E731
        s_ = c["s"][row, col].expand(k).contiguous()
        m_ = ends[row, col].expand(k).contiguous()
        for lib in ((True, False) if dev == "cuda" else (False,)):
            out = torch.empty(k * 6, dtype=torch.float64, device=dev)
            eval_kernel[(k,)](rep(N), rep(M), rep(R), s_, m_, thetas, out, B, BB=BB, LIB=lib)
            out = out.reshape(k, 6)
            ref = cd._eval_grouped(torch, (rep(N)[:, None, :], rep(M)[:, None, :], rep(R)[:, None, :]),
                                   s_[:, None], m_[:, None], thetas[:, None])
            print(f"  eval libdevice={lib}: triton phi {out[:, 0].tolist()}\n      torch phi {ref[0][:, 0].tolist()}"
                  f"\n      triton amass {out[:, 4].tolist()} torch {ref[4][:, 0].tolist()}")
        # 2. the whole search again: all pairs (as before), the one row only, BP=1
        def rerun(rows, bp, warps, lib=True):
            sel = lambda x: x[rows] if x.shape[0] > 1 else x  # noqa: E731
            s = sel(c["s"]); n, K = s.shape
            flatv = [sel(x).expand(n, K).to(torch.float64).contiguous().reshape(-1)
                     for x in (c["s"], c["a"], c["b"], c["m"], c["theta"], c["t_max"])]
            act = (sel(c["open_"]) & (sel(c["b"]) - sel(c["a"]) > c["tol"])).expand(n, K).to(torch.int8).contiguous().reshape(-1)
            fields = [sel(x).to(torch.float64).contiguous() for x in c["data"]]
            fields += [fields[0]] * (9 - len(fields))
            o = torch.empty_like(flatv[0]); ce = torch.empty_like(flatv[0])
            kw = c["kw"]
            search_kernel[((n * K + bp - 1) // bp,)](
                *flatv, act, o, ce, *fields, n * K, K, B,
                torch.tensor([float(c["log_level"]), float(c["tol"])], dtype=torch.float64, device=dev),
                SPLIT=False, BP=bp, BB=BB, THETA_STEPS=kw["theta_steps"], MAX_PROBES=kw["max_probes"],
                NEWTON_M_STEPS=kw["newton_m_steps"], DECREMENT=float(kw["decrement"]), MARGIN=float(kw["margin"]),
                SERIES_X=float(kw["series_x"]), INF=math.inf, LIBDEVICE=lib, ROUNDING=float((BB + 16) * 2.0**-52),
                num_warps=warps)
            return o.reshape(n, K), ce.reshape(n, K)
        full = torch.arange(c["s"].shape[0], device=dev)
        one = torch.tensor([row], device=dev)
        lib = dev == "cuda"  # the interpreter has no libdevice
        for label, rows, bp, w, lib in (("all rows BP32 w8", full, 32, 8, lib), ("one row BP32 w8", one, 32, 8, lib),
                                        ("one row BP8 w1", one, 8, 1, lib), ("one row BP32 w8 tl.exp", one, 32, 8, False),
                                        ("all rows BP32 w8 tl.exp", full, 32, 8, False)):
            o, ce = rerun(rows, bp, w, lib)
            r = row if rows.numel() > 1 else 0
            print(f"  rerun {label}: end {float(o[r, col])!r} theta {float(ce[r, col])!r}")
        break
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
