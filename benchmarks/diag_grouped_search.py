"""The fused Triton search's per-point (grouped) form against the eager search and the host solver.

On an H100 (Triton 3.6) the grouped form's fused ends once lay inside the host's (k = 5, 4 classes,
β = 0, concentrated labels: classes with S = 0), while Triton's interpreter matches the eager search.
The kernel now raises φ by a bound on its rounding before it rejects, and every end it moves is
re-checked by the eager float64 exponent at the θ it reports (the config key ``fused_verify``); an end
that fails falls back to the given certified end. This script runs each test batch three ways on the
device — the raw kernel (``fused_verify=False``), the checked kernel (the default) and the eager
search (``triton_search=False``), the per-point form forced onto the kernel (``fused_grouped=True``) for
the first two — and prints, per case:

* ``refused``: how many of the raw kernel's moved ends the float64 re-check refused (0 expected);
* ``worst inside host``: the largest amount by which an end lies inside the host solver's
  (``<= 1e-7`` expected: the host's own tolerance), raw and checked;
* for β = 0, the classes with S = 0: the exact upper end ``1 − (δ′/2)^(1/N₊)`` in closed form, and
  how far the raw kernel's end lies inside it (``<= 0`` expected);
* the raw kernel's ends that the re-check refuses (a list in ``_chernoff_device._RECORD`` keeps the
  kernel's outputs): the worst one's end, θ, eager exponent and ``s − Σ N·M`` (the cause, where there is one);
* the worst pair's inputs when the raw kernel is off by more than 1e-9 from the eager search.

``--ecg``: the case where an H100 refused thousands of ends (issue 19, round 9: 7 827 of the localized
classifier's, k = 10, at the ECG shapes; none under the interpreter): one localized ``predict_interval`` with
the fused per-point search forced (``fused_grouped`` ``"bp1"`` and True), then for every end the kernel
moved, the kernel's own exponent at its reported (end, θ) (``triton_evaluate``: the same jitted pieces, one
evaluation) against the eager float64 one. It tells the two possible causes apart:

* ``EVAL``: the kernel's φ there rejects (φ + its rounding margin ≤ the level) but the eager φ does not —
  the kernel's arithmetic differs on the device (libm, contraction, a lowering); printed: the ratio
  (φ_kernel − φ_eager) / margin, and the worst pair's inputs and per-bin terms from both;
* ``SEARCH``: the kernel's own φ at its reported (end, θ) does not reject either — the search reported an
  (end, θ) pair it did not reject at (a control-flow or loop-carried-value difference on the device).

    python benchmarks/diag_grouped_search.py            # CUDA if visible, else CPU
    python benchmarks/diag_grouped_search.py --ecg --ecg-queries 21892   # CUDA: the round-9 case
    TRITON_INTERPRET=1 python benchmarks/diag_grouped_search.py --ecg --ecg-queries 40 --ecg-train 3000  # dry run
    TRITON_INTERPRET=1 python benchmarks/diag_grouped_search.py --rows 8 --cases 2   # a dry run on a CPU
Ends with ``DIAG VERDICT: ok`` or ``DIAG VERDICT: FAIL`` (a checked end inside the host's by > 1e-7).
"""

from __future__ import annotations

import os
import sys
import warnings

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


def _ecg(opts) -> int:
    """The localized ECG case with the fused per-point search forced: EVAL vs SEARCH refusals (docstring)."""
    import sklearn
    import torch

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_gpu import ecg_case, torch_device

    import nwbound.bounds._chernoff_device as cd
    import nwbound.bounds._chernoff_triton as ct
    from nwbound import NadarayaWatsonClassifier
    import nwbound

    dev, name = torch_device(None)
    X, y, Q, lam, share = ecg_case(opts.ecg_train, opts.ecg_queries)
    print(f"== --ecg: {X.shape[0]} x {X.shape[1]} float32 training, {Q.shape[0]} queries, k = 10, lambda {lam:.4f} "
          f"({100 * share:.1f} % inside), device {dev} ({name}), interpreter {os.environ.get('TRITON_INTERPRET') == '1'} ==")
    if dev.type == "cpu":
        nwbound.set_config(device_bounds_on_cpu=True)  # PyTorch's CPU standing in for a GPU (the interpreter runs the kernel)
    est = NadarayaWatsonClassifier(metric=None, bandwidth=lam, lipschitz=1.0, n_neighbors=10, algorithm="brute",
                                   bound="chernoff", dtype="float32", device=str(dev)).fit(X, y)
    Qd = torch.from_numpy(Q).to(dev)
    verdict = "ok"
    # (fused_grouped, search_variant, pairs per program, warps): one pair per one-warp program,
    # the kernel's own launch, and both with the per-group fields re-loaded at every evaluation (lazy): a
    # SEARCH refusal that the lazy form does not show points at the fields held in registers across the loop.
    launches = (("bp1", "", 1, 1), (True, "", 32, 8), (True, "bp=1,warps=1,lazy=1", 1, 1), (True, "lazy=1", 32, 8))
    for launch, variant, bp, warps in launches:
        cd._RECORD = []  # every fused search call's inputs and outputs
        with sklearn.config_context(array_api_dispatch=True), warnings.catch_warnings(), \
                nwbound.config_context(fused_grouped=launch, search_variant=variant):
            warnings.simplefilter("ignore")
            est.predict_interval(Qd)
        calls = [c for c in cd._RECORD if not c["split"]]
        print(f"-- fused_grouped={launch!r} search_variant={variant!r}: {len(calls)} fused per-point "
              "search call(s) --")
        for j, c in enumerate(calls):
            ok = cd.fused_ends_certified(torch, False, c["data"], c["s"], c["given"], c["ends"], c["cert"], c["log_level"])
            moved = c["ends"] != c["given"]
            theta = torch.where(c["cert"] > 0, c["cert"], 1.0)
            phi_e, _, _, _, am_e = cd._eval_grouped(torch, c["data"], c["s"], c["ends"], theta)
            flat = tuple(x[:, 0, :] for x in c["data"])
            bb = ct.block_bins(int(flat[0].shape[1]))
            # the kernel's exponent at its own reported (end, θ), at the search launch's shape
            phi_k, err_k, am_k = ct.triton_evaluate(False, flat, c["s"], c["ends"], theta, series_x=cd._SERIES_X,
                                                    bp=bp, warps=warps)
            margin = err_k * ct.rounding_factor(bb)
            refused = moved & ~ok
            kernel_rejects = (phi_k + margin <= c["log_level"]) & (am_k > 0)
            n_ref = int(refused.sum())
            n_eval = int((refused & kernel_rejects).sum())
            n_search = n_ref - n_eval
            ratio = ((phi_k - phi_e) / torch.where(margin > 0, margin, 1.0))[moved]
            q = torch.quantile(ratio.double().cpu(), torch.tensor([0.0, 0.01, 0.5, 0.99, 1.0], dtype=torch.float64)) \
                if ratio.numel() else torch.zeros(5)
            print(f"call {j}: {int(moved.sum())} moved ends, {n_ref} refused: EVAL {n_eval}, SEARCH {n_search}; "
                  f"(phi_kernel - phi_eager)/margin over the moved ends: min {q[0]:.3g} p1 {q[1]:.3g} median {q[2]:.3g} "
                  f"p99 {q[3]:.3g} max {q[4]:.3g}; mass above the band kernel vs eager, max |d| "
                  f"{float((am_k - am_e)[moved].abs().max()) if moved.any() else 0.0:.3g}")
            if n_ref:
                verdict = "FAIL"
                score = torch.where(refused, phi_e - c["log_level"], -torch.inf)  # the eager φ farthest above the level
                row, col = divmod(int(torch.argmax(score.reshape(-1))), score.shape[1])
                N, M, R = (x[row, 0].double().cpu().numpy() for x in c["data"])
                end, th = float(c["ends"][row, col]), float(theta[row, col])
                print(f"  worst refused: row {row} pair {col}: end {end!r} (given {float(c['given'][row, col])!r}), "
                      f"theta {th!r} (t_max {float(c['t_max'][row, col])!r}), s {float(c['s'][row, col])!r}, level "
                      f"{c['log_level']!r}")
                print(f"  phi kernel {float(phi_k[row, col])!r} (+margin {float(margin[row, col])!r}), eager "
                      f"{float(phi_e[row, col])!r}; amass kernel {float(am_k[row, col])!r} eager {float(am_e[row, col])!r}")
                hi = np.minimum(end + R, 1.0)
                x = th * M
                lg = np.log(hi + (1.0 - hi) * np.exp(-x))
                print(f"  N {N}\n  M {M}\n  R {R}\n  NumPy per-bin N*(x + log den) {N * (x + lg)}\n"
                      f"  NumPy phi {-th * float(c['s'][row, col]) + float((N * (x + lg)).sum())!r}")
    cd._RECORD = None
    print(f"DIAG VERDICT: {verdict} (EVAL: the kernel's arithmetic on this device; SEARCH: its search logic)")
    return 0 if verdict == "ok" else 1


def main(argv: list[str] | None = None) -> int:
    import argparse

    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200, help="queries per case (the interpreter: a few)")
    ap.add_argument("--cases", type=int, default=8, help="how many of the cases to run")
    ap.add_argument("--ecg", action="store_true", help="the localized ECG case instead (EVAL vs SEARCH refusals)")
    ap.add_argument("--ecg-train", type=int, default=87_554, help="--ecg: training rows")
    ap.add_argument("--ecg-queries", type=int, default=21_892, help="--ecg: queries")
    opts = ap.parse_args(argv)
    if opts.ecg:
        return _ecg(opts)

    from test_gpu_bounds import _per_point_batch  # the tests' batches

    import nwbound
    import nwbound.bounds._chernoff_device as chernoff_device
    from nwbound.bounds._chernoff import chernoff_interval
    from nwbound.bounds._chernoff_device import chernoff_interval_device

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    np.set_printoptions(precision=6, linewidth=160)
    print(f"device {dev}; fused kernel applies: "
          f"{__import__('nwbound.bounds._chernoff_triton', fromlist=['x']).triton_search_applies(torch.zeros(1, device=dev))}")
    ok = True
    cases = [(10, 2, 0.5, 0.05, False), (5, 4, 0.0, 0.01, True), (5, 4, 0.5, 0.01, True), (5, 4, 0.0, 0.01, False),
             (10, 5, 1.0, 0.05, False), (30, 3, 0.1, 1e-3, True), (60, 5, 3.0, 0.2, False), (12, 3, 0.0, 0.05, True)]
    for k, n_classes, beta, dp, conc in cases[: opts.cases]:
        S, count, mass, rho = _per_point_batch(k, opts.rows, k, n_classes, beta, concentrated=conc)
        args = [torch.as_tensor(x, dtype=torch.float64, device=dev) for x in (S, count, mass, rho)]
        ends, refused = {}, None
        for name, (fused, verify) in (("raw", (True, False)), ("checked", (True, True)), ("eager", (False, True))):
            chernoff_device._TRITON_SEARCH.pop("unverified", None)
            chernoff_device._RECORD = [] if name == "raw" else None
            with nwbound.config_context(triton_search=fused, fused_grouped=fused, fused_verify=verify):
                lo, up = chernoff_interval_device(*args, dp)
            if name == "raw" and chernoff_device._RECORD:
                _explain_refused(torch, chernoff_device, chernoff_device._RECORD[-1])
            chernoff_device._RECORD = None
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
    print(f"DIAG VERDICT: {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
