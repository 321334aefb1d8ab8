"""The fused Triton search's per-point (grouped) form against the eager search and the host solver.

On an H100 (Triton 3.6) the grouped form's fused ends once lay inside the host's (k = 5, 4 classes,
β = 0, concentrated labels: classes with S = 0), while Triton's interpreter matches the eager search.
The kernel now raises φ by a bound on its rounding before it rejects, and every end it moves is
re-checked by the eager float64 exponent at the θ it reports (``NWBOUND_FUSED_VERIFY``); an end that
fails falls back to the given certified end. This script runs each test batch three ways on the
device — the raw kernel (``NWBOUND_FUSED_VERIFY=0``), the checked kernel (the default) and the eager
search (``NWBOUND_FUSED_GROUPED=0``) — and prints, per case:

* ``refused``: how many of the raw kernel's moved ends the float64 re-check refused (0 expected);
* ``worst inside host``: the largest amount by which an end lies inside the host solver's
  (``<= 1e-7`` expected: the host's own tolerance), raw and checked;
* for β = 0, the classes with S = 0: the exact upper end ``1 − (δ′/2)^(1/N₊)`` in closed form, and
  how far the raw kernel's end lies inside it (``<= 0`` expected);
* the raw kernel's ends that the re-check refuses (``NWBOUND_FUSED_DEBUG=1`` keeps the kernel's last
  outputs): the worst one's end, θ, eager exponent and ``s − Σ N·M`` (the cause, where there is one);
* the worst pair's inputs when the raw kernel is off by more than 1e-9 from the eager search.

    python benchmarks/diag_grouped_search.py            # CUDA if visible, else CPU
    TRITON_INTERPRET=1 python benchmarks/diag_grouped_search.py --rows 8 --cases 2   # a dry run on a CPU
Ends with ``DIAG VERDICT: ok`` or ``DIAG VERDICT: FAIL`` (a checked end inside the host's by > 1e-7).
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))


def _explain_refused(torch, cd, last) -> None:
    """The raw kernel's ends that the float64 re-check refuses: how many, and the worst one's numbers
    (its end, the θ the kernel reported, the eager exponent there, s against the row's Σ N·M)."""
    ok = cd.fused_ends_certified(torch, last["split"], last["data"], last["s"], last["given"], last["ends"],
                                 last["cert"], last["log_level"])
    bad = ~ok
    n_bad = int(bad.sum())
    print(f"  raw kernel: {n_bad} of {bad.numel()} moved ends refused by the float64 re-check")
    if not n_bad or last["split"]:
        return
    gap = torch.where(bad, last["ends"] - last["given"], -1.0)
    flat = int(torch.argmax(gap.reshape(-1)))
    row, col = divmod(flat, gap.shape[1])
    N, M, R = (x[row, 0].cpu().numpy() for x in last["data"])
    s = float(last["s"][row, col])
    end, theta = float(last["ends"][row, col]), float(last["cert"][row, col])
    sel = lambda x: x[row : row + 1]  # noqa: E731
    phi, d1, _, _, amass = cd._eval_grouped(torch, tuple(sel(x) for x in last["data"]), sel(last["s"])[:, col : col + 1],
                                            torch.tensor([[end]], dtype=torch.float64, device=last["s"].device),
                                            torch.tensor([[theta]], dtype=torch.float64, device=last["s"].device))
    print(f"  worst refused: row {row} pair {col}: end {end!r} (given {float(last['given'][row, col])!r}), kernel θ "
          f"{theta!r} (t_max {float(last['t_max'][row, col])!r}); eager φ there {float(phi[0, 0])!r} vs level "
          f"{last['log_level']!r}, d1 {float(d1[0, 0])!r}, mass above the band {float(amass[0, 0])!r}")
    print(f"  s {s!r}, Σ N·M of the row {float((N * M).sum())!r} (s − Σ N·M = {s - float((N * M).sum())!r})")
    print(f"  N {N}\n  M {M}\n  R {R}")


def main(argv: list[str] | None = None) -> int:
    import argparse

    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200, help="queries per case (the interpreter: a few)")
    ap.add_argument("--cases", type=int, default=8, help="how many of the cases to run")
    opts = ap.parse_args(argv)

    from test_gpu_bounds import _per_point_batch  # the tests' batches

    import nwbound.bounds._chernoff_device as chernoff_device
    from nwbound.bounds._chernoff import chernoff_interval
    from nwbound.bounds._chernoff_device import chernoff_interval_device

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    np.set_printoptions(precision=6, linewidth=160)
    print(f"device {dev}; fused kernel applies: "
          f"{__import__('nwbound.bounds._chernoff_triton', fromlist=['x']).triton_search_applies(torch.zeros(1, device=dev))}")
    ok = True
    saved = {k: os.environ.get(k) for k in ("NWBOUND_TRITON_SEARCH", "NWBOUND_FUSED_GROUPED", "NWBOUND_FUSED_VERIFY",
                                            "NWBOUND_FUSED_DEBUG")}
    cases = [(10, 2, 0.5, 0.05, False), (5, 4, 0.0, 0.01, True), (5, 4, 0.5, 0.01, True), (5, 4, 0.0, 0.01, False),
             (10, 5, 1.0, 0.05, False), (30, 3, 0.1, 1e-3, True), (60, 5, 3.0, 0.2, False), (12, 3, 0.0, 0.05, True)]
    for k, n_classes, beta, dp, conc in cases[: opts.cases]:
        S, count, mass, rho = _per_point_batch(k, opts.rows, k, n_classes, beta, concentrated=conc)
        args = [torch.as_tensor(x, dtype=torch.float64, device=dev) for x in (S, count, mass, rho)]
        ends, refused = {}, None
        for name, env in (("raw", ("1", "1", "0")), ("checked", ("1", "1", "1")), ("eager", ("0", "0", "1"))):
            for key, val in zip(("NWBOUND_TRITON_SEARCH", "NWBOUND_FUSED_GROUPED", "NWBOUND_FUSED_VERIFY"), env):
                os.environ[key] = val
            chernoff_device._TRITON_SEARCH.pop("unverified", None)
            chernoff_device._TRITON_SEARCH.pop("last", None)
            os.environ["NWBOUND_FUSED_DEBUG"] = "1" if name == "raw" else "0"
            lo, up = chernoff_interval_device(*args, dp)
            if name == "raw" and "last" in chernoff_device._TRITON_SEARCH:
                _explain_refused(torch, chernoff_device, chernoff_device._TRITON_SEARCH["last"])
            ends[name] = np.stack([lo.cpu().numpy(), up.cpu().numpy()])
            if name == "checked" and "unverified" in chernoff_device._TRITON_SEARCH:
                refused = int(chernoff_device._TRITON_SEARCH["unverified"])
        host = np.stack(chernoff_interval(S, count, mass, mass, rho, dp, engine="numpy"))
        inside = {name: max(float(np.max(e[0] - host[0])), float(np.max(host[1] - e[1]))) for name, e in ends.items()}
        d_fe = np.abs(ends["raw"] - ends["eager"])
        print(f"k={k} C={n_classes} beta={beta} dp={dp} concentrated={conc}: refused {refused}, worst inside host: "
              f"raw {inside['raw']:.2e} checked {inside['checked']:.2e} eager {inside['eager']:.2e}; "
              f"max |raw - eager| {d_fe.max():.2e}, max |checked - host| {np.abs(ends['checked'] - host).max():.2e}")
        if beta == 0:
            zero = S == 0
            exact = 1.0 - np.exp(np.log(dp / 2) / np.maximum((mass > 0).sum(1), 1))[:, None] * np.ones_like(S)
            if zero.any():
                print(f"  S = 0 classes ({int(zero.sum())}): raw upper inside the exact end by at most "
                      f"{float(np.max(exact[zero] - ends['raw'][1][zero])):.2e}, checked "
                      f"{float(np.max(exact[zero] - ends['checked'][1][zero])):.2e}, host "
                      f"{float(np.max(exact[zero] - host[1][zero])):.2e} (<= 0: outside, valid)")
        if inside["checked"] > 1e-7:
            ok = False
        if d_fe.max() > 1e-9:
            side, row, col = np.unravel_index(np.argmax(d_fe), d_fe.shape)
            print(f"  worst: {'lower' if side == 0 else 'upper'} row {row} class {col}: raw {ends['raw'][side, row, col]!r} "
                  f"eager {ends['eager'][side, row, col]!r} host {host[side, row, col]!r}")
            print(f"  S {S[row]}\n  count {count[row]}\n  mass {mass[row]}\n  rho {rho[row]}")
            print(f"  pairs off by > 1e-9: {int((d_fe > 1e-9).sum())} of {d_fe.size}")
    for key, val in saved.items():
        if val is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = val
    print(f"DIAG VERDICT: {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
