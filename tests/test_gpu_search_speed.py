"""The fused band-Chernoff search's private launch variants (``_chernoff_triton.triton_search(_variant=)``).

Each variant (pairs per program, warps, the open pairs' order, lazy field loads, one exp per bin side,
the probe counts) runs the same search: under Triton's interpreter (its own process, as
``test_gpu_bounds``) its ends equal the default launch's bit for bit (``one_exp``, ``low_first=1`` and
``margin=1``: within the search's tolerance, each moved end certified by the float64 re-check), and
contain the host solver's interval. The split form with the kernel's rounding margin carries it on every
moved end, and a planted borderline end is refused by the re-check and re-searched.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch)")

from nwbound._config import parse_search_variant as parse_variant  # noqa: E402

TOL = 1e-7


def _interpreted(script: str, tmp_path: Path) -> Any:
    """Run ``script`` under Triton's interpreter in its own process (``argv``: this folder, the output
    path) and load the arrays it saved."""
    env = dict(os.environ, TRITON_INTERPRET="1")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src") + os.pathsep + env.get("PYTHONPATH", "")
    out = tmp_path / "o.npz"
    run = subprocess.run([sys.executable, "-c", script, str(Path(__file__).resolve().parent), str(out)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return np.load(out)

_RUN = r'''
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import torch
import nwbound
import nwbound.bounds._chernoff_triton as ct
import nwbound.bounds._chernoff_device as cd
from test_gpu_bounds import _binned_batch, _per_point_batch, _t, _both
from nwbound.bounds._chernoff import chernoff_interval

calls = []
original = ct.triton_search
def spy(*args, **kwargs):
    calls.append((args, kwargs))
    return original(*args, **kwargs)
ct.triton_search = spy
out = {}
args = _binned_batch(7, 2, 2, 8, 0.5, weighted=True)
args[0][0, 1] = 0.0  # a class without mass: its lower end closed from the start
(h_lo, h_up), (b_lo, b_up) = _both(args, 0.5, 0.05, "cpu")
out["split/host"], out["split/env_base"] = np.stack([h_lo, h_up]), np.stack([b_lo, b_up])
S, count, mass, rho = _per_point_batch(5, 2, 6, 2, 0.5)
S[0], count[0], mass[0] = 0.0, 0.0, 0.0  # a row without mass
chernoff_interval_device = cd.chernoff_interval_device
chernoff_interval_device(*(_t(x, "cpu") for x in (S, count, mass, rho)), 0.05)
out["grouped/host"] = np.stack(chernoff_interval(S, count, mass, mass, rho, 0.05, engine="numpy"))
ct.triton_search = original
variants = {"split": [{}, {"bp": 2, "warps": 1}, {"order": "compact"},
                      {"order": "width", "bp": 4}, {"lazy": 1}, {"one_exp": 1}, {"count": 1, "bp": 4},
                      {"low_first": 1, "count": 1}, {"bp": 16, "warps": 8},
                      {"margin": 1}],
            "grouped": [{}, {"bp": 2, "warps": 1, "order": "width", "lazy": 1}]}
for form, (cargs, ckw) in zip(("split", "grouped"), calls[:2]):
    assert bool(cargs[0]) == (form == "split")
    n, K = cargs[2].shape
    out[f"{form}/open"] = (cargs[10] & (cargs[4] - cargs[3] > cargs[9])).expand(n, K).numpy()
    out[f"{form}/given"] = cargs[3].expand(n, K).numpy()
    out[f"{form}/tol"] = np.array(cargs[9])
    for i, v in enumerate(variants[form]):
        ends, cert = original(*cargs, **ckw, _variant=v)
        out[f"{form}/{i}/ends"], out[f"{form}/{i}/cert"] = ends.numpy(), cert.numpy()
        if form == "split":
            A, bD, mcap, rho_, rho_in, W0, W1, As0, As1 = cargs[1]
            data = tuple(x[:, None, None, :] for x in (A, bD, mcap, rho_, rho_in)) + (
                torch.stack([W0, W1], 1)[:, None], torch.stack([As0, As1], 1)[:, None])
            ok = cd.fused_ends_certified(torch, True, data, cargs[2], cargs[3].expand(n, K), ends, cert, cargs[8])
            out[f"{form}/{i}/certified"] = ok.numpy()
        if v.get("count"):
            out[f"{form}/{i}/counts"] = ct.LAST_LAUNCH["counts"].numpy()
    # the whole interval through the config key (the estimators' route)
    if form == "split":
        with nwbound.config_context(search_variant="bp=2,warps=1,order=width,low_first=1"):
            (_, _), (d_lo, d_up) = _both(args, 0.5, 0.05, "cpu")
        out["split/env"] = np.stack([d_lo, d_up])
np.savez(sys.argv[2], **out)
'''


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_search_variants_give_the_default_ends(tmp_path):
    got = _interpreted(_RUN, tmp_path)
    for form, n_variants in (("split", 10), ("grouped", 2)):
        base, base_cert = got[f"{form}/0/ends"], got[f"{form}/0/cert"]
        opened = got[f"{form}/open"]
        assert opened.any() and (~opened).any(), form  # both kinds of pair are exercised
        # closed pairs keep the given end (never moved)
        np.testing.assert_array_equal(base[~opened], got[f"{form}/given"][~opened])
        for i in range(1, n_variants):
            ends, cert = got[f"{form}/{i}/ends"], got[f"{form}/{i}/cert"]
            if form == "split" and i in (5, 7, 9):  # one_exp: e^{−x} as 1/e^x; low_first (7): other
                # probes; margin=1 (9): other rejections. Ends within the search's tol of the default's,
                # each still certified (below).
                assert np.all(np.abs(ends - base) <= float(got[f"{form}/tol"])), form
            else:
                np.testing.assert_array_equal(ends, base, err_msg=f"{form} variant {i}")
                np.testing.assert_array_equal(cert, base_cert, err_msg=f"{form} variant {i}")
            if form == "split":
                assert got[f"{form}/{i}/certified"].all(), f"variant {i}: an end the float64 exponent does not reject"
    # every variant's ends lie outside the host's interval (the lower ends; the upper ends through the env route)
    host = got["split/host"]
    env_iv, base_iv = got["split/env"], got["split/env_base"]
    assert np.all(np.abs(env_iv - base_iv) <= TOL)
    assert np.all(env_iv[0] <= host[0] + TOL) and np.all(env_iv[1] >= host[1] - TOL)
    # the counts, against the search's own rules: a closed pair is never probed; an open pair's θ
    # evaluations are at least its probes (one per probe); a program evaluates at least as often as
    # any of its pairs, the same number for its 4 pairs.
    counts = got["split/6/counts"]
    probes, evals, program = counts[:, 0], counts[:, 1], counts[:, 2]
    flat_open = got["split/open"].reshape(-1)
    assert np.all(probes[~flat_open] == 0) and np.all(evals[~flat_open] == 0)
    assert np.all(probes[flat_open] >= 1) and np.all(evals >= probes) and np.all(program >= evals)
    assert np.all(probes <= 64)
    prog = program.reshape(-1)[: (program.size // 4) * 4].reshape(-1, 4)
    assert np.all(prog == prog[:, :1])
    # low_first on these statistics: at most one probe more than the search without it (the default) for
    # any pair, fewer in all
    low = got["split/7/counts"][:, 0]
    assert np.all(low[~flat_open] == 0) and np.all(low <= probes + 1) and low.sum() < probes.sum()


def test_parse_variant_names_the_bad_item():
    assert parse_variant("bp=4, warps=2, order=compact, lazy=1") == {"bp": 4, "warps": 2, "order": "compact", "lazy": 1}
    with pytest.raises(ValueError, match="unknown or empty item 'nope=1'"):
        parse_variant("nope=1")
    with pytest.raises(ValueError, match="order must be"):
        parse_variant("order=random")
    with pytest.raises(ValueError, match="power of two"):
        parse_variant("bp=3")


# ------------------------------------------------- the split form's ends: margin, re-check, re-search
_PLANT = r'''
import sys, warnings
import numpy as np
sys.path.insert(0, sys.argv[1])
import torch
import nwbound
import nwbound.bounds._chernoff_triton as ct
import nwbound.bounds._chernoff_device as cd

nwbound.set_config(search_variant="margin=1")  # the margin form (off by default: the re-check certifies)
from test_gpu_bounds import _binned_batch, _both

original = ct.triton_search
state = {"plant": None}
def spy(*args, **kwargs):
    ends, cert = original(*args, **kwargs)
    state.update(args=args, ends=ends.clone(), cert=cert.clone())
    if state["plant"] is not None:
        (i, k), level = state["plant"]
        ends = ends.clone()
        ends[i, k] = level
    return ends, cert
ct.triton_search = spy
args = _binned_batch(7, 6, 2, 8, 0.5, weighted=True)
out = {}
(_, _), (lo1, up1) = _both(args, 0.5, 0.05, "cpu")
out["fused"] = np.stack([lo1, up1])
out["unverified"] = np.array(int(cd._TRITON_SEARCH["unverified"]))
cargs = state["args"]
ends, cert = state["ends"], state["cert"]
n, K = cargs[2].shape
given = cargs[3].expand(n, K)
for name, x in zip("A bD mcap rho rho_in W0 W1 As0 As1".split(), cargs[1]):
    out["f/" + name] = x.numpy()
out["s"], out["ends"], out["cert"], out["given"] = cargs[2].numpy(), ends.numpy(), cert.numpy(), given.numpy()
out["level"] = np.array(cargs[8])
# a borderline end: the first moved pair's end raised to the smallest level that the re-check's own
# float64 exponent (at the kernel's θ) does not reject — a level certified only "by rounding luck" away
A, bD, mcap, rho, rho_in, W0, W1, As0, As1 = cargs[1]
data = tuple(x[:, None, None, :] for x in (A, bD, mcap, rho, rho_in)) + (
    torch.stack([W0, W1], 1)[:, None], torch.stack([As0, As1], 1)[:, None])
moved = (ends != given) & (cert > 0)
i, k = (int(v) for v in torch.nonzero(moved)[0])
def phi(level):
    m = ends.clone()
    m[i, k] = level
    return float(cd._split_phi(torch, data, cargs[2], m, torch.where(cert > 0, cert, 1.0))[0][i, k])
L = float(cargs[8])
good, bad = float(ends[i, k]), float(ends[i, k])
step = 1e-9
while phi(bad) <= L:
    good, bad = bad, bad + step
    step *= 2
while np.nextafter(good, 1.0) < bad:
    mid = 0.5 * (good + bad)
    good, bad = (mid, bad) if phi(mid) <= L else (good, mid)
state["plant"] = ((i, k), bad)
out["plant"] = np.array([i, k, bad, good])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    (_, _), (lo2, up2) = _both(args, 0.5, 0.05, "cpu")
out["planted"] = np.stack([lo2, up2])
out["warned"] = np.array(any("re-check does not certify" in str(w.message) for w in caught))
out["planted_unverified"] = np.array(int(cd._TRITON_SEARCH["unverified"]))
nwbound.set_config(triton_search=False)
(_, _), (lo3, up3) = _both(args, 0.5, 0.05, "cpu")
out["eager"] = np.stack([lo3, up3])
np.savez(sys.argv[2], **out)
'''


def _split_phi_and_error(f, s, m, theta):
    """The split form's exponent φ and the kernel's bound on its rounding, written out in NumPy per pair
    (n, K) from the per-bin fields (n, B): ``φ = θ·(lin − s) + Σ_sides Σ W·(log den + (1 − p)·x)`` and
    ``err = θ·(s + lin) + Σ_sides Σ W·(x + |log den| + 4)``."""
    mm = m[..., None]
    A, bD, mcap = f["A"][:, None], f["bD"][:, None], f["mcap"][:, None]
    lin = np.where((mm < mcap) & (A > 0), A * mm + bD, A).sum(-1)
    lo, hi = np.minimum(mm + f["rho_in"][:, None], 1.0), np.minimum(mm + f["rho"][:, None], 1.0)
    phi, err = theta * (lin - s), theta * (s + np.abs(lin))
    for W, As in ((f["W0"], f["As0"]), (f["W1"], f["As1"])):
        x = theta[..., None] * As[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            pst = np.where(x > 1e-3, 1.0 / x - 1.0 / np.expm1(x), 0.5 - x / 12.0 + x**3 / 720.0)
        p = np.minimum(np.maximum(pst, lo), hi)
        lg = np.log(p + (1.0 - p) * np.exp(-x))
        phi = phi + (W[:, None] * (lg + (1.0 - p) * x)).sum(-1)
        err = err + (W[:, None] * (x + np.abs(lg) + 4.0)).sum(-1)
    return phi, err


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_split_ends_carry_the_rounding_margin_and_a_borderline_end_is_re_searched(tmp_path):
    """The split-form search with its rounding margin (interpreter): every moved end is rejected with φ's
    rounding margin to spare (NumPy formula above), the float64 re-check refuses none; a planted end just past the
    re-check's own boundary (at the kernel's θ) is refused and searched again, quietly, by the eager
    search: that pair gets the eager search's end, every other pair keeps the kernel's."""
    got = _interpreted(_PLANT, tmp_path)
    f = {k[2:]: got[k] for k in got.files if k.startswith("f/")}
    ends, cert, given, s, level = got["ends"], got["cert"], got["given"], got["s"], float(got["level"])
    moved = ends != given
    assert moved.sum() >= 3 and np.all(cert[moved] > 0)
    phi, err = _split_phi_and_error(f, s, ends, np.where(cert > 0, cert, 1.0))
    bb = 8  # the kernel's bins (a power of two ≥ B = 8)
    margin = err * (bb + 16) * 2.0**-52
    assert np.all(phi[moved] + 0.5 * margin[moved] <= level), "an end rejected without the rounding margin"
    assert int(got["unverified"]) == 0
    # the planted end: refused (once), the pair re-searched eagerly, the others untouched
    i, k = int(got["plant"][0]), int(got["plant"][1])
    assert got["plant"][2] > got["plant"][3] >= ends[i, k]  # beyond the re-check's boundary, above the kernel's end
    # one refused end of several moved: searched again without a warning (a rounding disagreement)
    assert not bool(got["warned"]) and int(got["planted_unverified"]) == 1
    C = ends.shape[1] // 2
    side, col = (0, k) if k < C else (1, k - C)
    mask = np.zeros_like(got["fused"], dtype=bool)
    mask[side, i, col] = True
    np.testing.assert_array_equal(got["planted"][~mask], got["fused"][~mask])
    assert got["planted"][mask] == got["eager"][mask]
    if side == 0:  # the reported lower end is the certified one, not the planted level
        assert got["planted"][mask] < got["plant"][2]


def test_chernoff_limits_copy_no_host_array_after_the_first_call(monkeypatch):
    """The split-form limits from device statistics: the histogram's edges and kernel values are copied to
    the device once (cached per value and device), the scalar constants filled there: a second call makes
    no copy from the host (on a GPU each such copy waits for the statistics pass). The search itself is
    left out of the count: on the CPU it is the eager search (its level and flags are 0-d tensors from the
    host under search_reads="full"); a GPU's default, the fused kernel, fills them on the device
    (_chernoff_triton._level_tol)."""
    import nwbound.bounds._chernoff_device as cd
    from test_gpu_bounds import _device_form

    from nwbound.bounds import BoundSpec
    from nwbound.bounds._chernoff_device import device_limits
    from nwbound.engine.device._array_api import device_bound_statistics

    st, train, _ = _device_form("regular", False, True)
    spec = BoundSpec(form="chernoff", beta=0.5, delta_prime=0.05)
    stats = device_bound_statistics(st, train)
    first = device_limits(spec, stats)
    copies, searching = [], []
    search = cd._search

    def uncounted(*a, **kw):
        searching.append(1)
        try:
            return search(*a, **kw)
        finally:
            searching.pop()

    monkeypatch.setattr(cd, "_search", uncounted)
    for name in ("as_tensor", "tensor", "from_numpy"):
        real = getattr(torch, name)

        def counting(data, *a, _real=real, _name=name, **kw):
            if not isinstance(data, torch.Tensor) and not searching:
                copies.append((_name, type(data).__name__))
            return _real(data, *a, **kw)

        monkeypatch.setattr(torch, name, counting)
    second = device_limits(spec, stats)
    assert copies == []
    for key in ("lower", "upper"):
        assert torch.equal(first[key], second[key])


_EVALUATE = r'''
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import torch
import nwbound.bounds._chernoff_triton as ct
from test_gpu_bounds import _binned_batch, _both, _per_point_batch, _t
from nwbound.bounds._chernoff_device import chernoff_interval_device

captured = []
original = ct.triton_search
def spy(*args, **kwargs):
    captured.append(args)
    return original(*args, **kwargs)
ct.triton_search = spy
_both(_binned_batch(7, 5, 2, 8, 0.5, weighted=True), 0.5, 0.05, "cpu")
S, count, mass, rho = _per_point_batch(3, 6, 9, 3, 0.5)
chernoff_interval_device(*(_t(x, "cpu") for x in (S, count, mass, rho)), 0.05)
ct.triton_search = original
captured = [next(a for a in captured if a[0]), next(a for a in captured if not a[0])]  # one call of each form
rng = np.random.default_rng(0)
out = {}
for form, args in zip(("split", "grouped"), captured):
    split, fields, s = args[0], args[1], args[2]
    n, K = s.shape
    m = torch.as_tensor(rng.uniform(0.0, 1.0, (n, K)))
    theta = torch.as_tensor(np.exp(rng.uniform(-3.0, 4.0, (n, K))))
    phi, err, amass = ct.triton_evaluate(split, fields, s, m, theta, series_x=1e-3, bp=2, warps=1)
    for name, x in (("phi", phi), ("err", err), ("amass", amass), ("s", s), ("m", m), ("theta", theta)):
        out[f"{form}/{name}"] = x.numpy()
    for i, x in enumerate(fields):
        out[f"{form}/f{i}"] = x.numpy()
np.savez(sys.argv[2], **out)
'''


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_kernel_exponent_at_a_point_is_the_numpy_formula(tmp_path):
    """``triton_evaluate`` (the search kernel's exponent at given (m, θ), for the device diagnostics) under
    the interpreter: φ equal to the NumPy formulas written out here to within the kernel's own rounding
    factor times its bound ``err`` (for both forms, at random levels and θ over three decades), ``err``
    itself the bound's formula, and the mass above the band ``s − Σ N·M·min(m + R, 1)``."""
    got = _interpreted(_EVALUATE, tmp_path)
    from nwbound.bounds._chernoff_triton import block_bins, rounding_factor

    # split form: the formula of _split_phi_and_error (above)
    g = {k.split("/")[1]: got[k] for k in got.files if k.startswith("split/")}
    f = dict(zip("A bD mcap rho rho_in W0 W1 As0 As1".split(), (g[f"f{i}"] for i in range(9))))
    phi, err = _split_phi_and_error(f, g["s"], g["m"], g["theta"])
    mm = g["m"][..., None]
    lin = np.where((mm < f["mcap"][:, None]) & (f["A"][:, None] > 0), f["A"][:, None] * mm + f["bD"][:, None],
                   f["A"][:, None]).sum(-1)
    tol = err * rounding_factor(block_bins(f["A"].shape[1]))
    assert np.all(np.abs(g["phi"] - phi) <= tol), np.max(np.abs(g["phi"] - phi) / tol)
    np.testing.assert_allclose(g["err"], err, rtol=1e-12)
    np.testing.assert_allclose(g["amass"], g["s"] - lin, rtol=1e-12, atol=1e-12 * np.abs(lin).max())
    # grouped (per-point) form: φ = −θ·s + Σ N·(θM + log den), den = hi + (1 − hi)·e^{−θM}, hi = min(m + R, 1);
    # err = θ·s + Σ N·(θM + |log den| + 4); the mass above the band s − Σ N·M·hi
    g = {k.split("/")[1]: got[k] for k in got.files if k.startswith("grouped/")}
    N, M, R = (g[f"f{i}"][:, None, :] for i in range(3))
    th, m, s = g["theta"][..., None], g["m"][..., None], g["s"]
    hi = np.minimum(m + R, 1.0)
    x = th * M
    lg = np.log(hi + (1.0 - hi) * np.exp(-x))
    phi = -g["theta"] * s + (N * (x + lg)).sum(-1)
    err = g["theta"] * s + (N * (x + np.abs(lg) + 4.0)).sum(-1)
    tol = err * rounding_factor(block_bins(N.shape[-1]))
    assert np.all(np.abs(g["phi"] - phi) <= tol), np.max(np.abs(g["phi"] - phi) / tol)
    np.testing.assert_allclose(g["err"], err, rtol=1e-12)
    np.testing.assert_allclose(g["amass"], s - (N * M * hi).sum(-1), rtol=1e-12, atol=1e-12 * s.max())


_RETRY = r'''
import sys, warnings
import numpy as np
sys.path.insert(0, sys.argv[1])
import torch
import nwbound.bounds._chernoff_triton as ct
import nwbound.bounds._chernoff_device as cd
from test_gpu_bounds import _binned_batch, _both

original, original_probe = ct.triton_search, cd._probe_for
state = {"calls": 0, "levels": [], "plant": None, "eager": 0}
def spy(*args, **kwargs):
    state["calls"] += 1
    state["levels"].append(float(args[8]))
    ends, cert = original(*args, **kwargs)
    if state["plant"] is not None and state["calls"] == 1:  # the first launch only: a refused end
        moved = (ends != args[3].expand(ends.shape)) & (cert > 0)
        i, k = (int(v) for v in torch.nonzero(moved)[0])
        ends = ends.clone()
        ends[i, k] = args[4].expand(ends.shape)[i, k]  # the bracket's top, p-hat: far past the level
        state["plant"] = (i, k)
    return ends, cert
def probe_spy(*args, **kwargs):
    state["eager"] += 1
    return original_probe(*args, **kwargs)
ct.triton_search, cd._probe_for = spy, probe_spy
args = _binned_batch(11, 6, 2, 8, 0.5, weighted=True)
out = {}
(h_lo, h_up), (lo1, up1) = _both(args, 0.5, 0.05, "cpu")
out["host"], out["fused"], out["calls_plain"] = np.stack([h_lo, h_up]), np.stack([lo1, up1]), np.array(state["calls"])
state.update(calls=0, levels=[], plant=True, eager=0)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    (_, _), (lo2, up2) = _both(args, 0.5, 0.05, "cpu")
out["planted"], out["plant"] = np.stack([lo2, up2]), np.array(state["plant"])
out["calls"], out["levels"], out["eager"] = np.array(state["calls"]), np.array(state["levels"]), np.array(state["eager"])
out["unverified"] = np.array(int(cd._TRITON_SEARCH["unverified"]))
out["after_retry"] = np.array(int(cd._TRITON_SEARCH["unverified_after_retry"]))
out["warned"] = np.array(any("re-check does not certify" in str(w.message) for w in caught))
np.savez(sys.argv[2], **out)
'''


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_a_refused_end_is_searched_again_by_the_kernel_not_the_eager_search(tmp_path):
    """A moved end the float64 re-check refuses (planted: the first launch reports p-hat for one pair) is
    searched once more by the kernel alone, at a level stricter by ``_RETRY_LEVEL_GAP`` with its rounding
    margin: certified there, so the eager search (thousands of launches on a GPU) never runs; that pair's end
    is within the search's tolerance of the unplanted launch's, every other pair's is the first launch's, and
    the interval still contains the host solver's (interpreter, its own process)."""
    got = _interpreted(_RETRY, tmp_path)
    assert int(got["unverified"]) == 1 and int(got["after_retry"]) == 0
    assert int(got["eager"]) == 0 and not bool(got["warned"])  # one refusal of several moved: quiet
    # each side's search: one launch unplanted; planted, the second launch at the stricter level
    assert int(got["calls"]) == int(got["calls_plain"]) + 1
    levels = got["levels"]
    retry = levels[1]
    assert retry < levels[0] and np.isclose(levels[0] - retry, 1e-9 * max(1.0, abs(levels[0])), rtol=1e-6)
    fused, planted, host = got["fused"], got["planted"], got["host"]
    assert np.all(planted[0] <= host[0] + TOL) and np.all(planted[1] >= host[1] - TOL)
    np.testing.assert_allclose(planted, fused, atol=TOL)
    differs = planted != fused
    assert differs.sum() <= 1  # only the planted pair may move (within the tolerance)
