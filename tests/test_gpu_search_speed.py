"""The fused band-Chernoff search's private launch variants (``_chernoff_triton.triton_search(_variant=)``).

Each variant (pairs per program, warps, the open pairs' order, lazy field loads, one exp per bin side,
the probe counts) runs the same search: under Triton's interpreter (its own process, as
``test_gpu_bounds``) its ends equal the default launch's bit for bit (``one_exp``: within the search's
tolerance, each moved end certified by the float64 re-check), and contain the host solver's interval.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch)")

from nwbound.bounds._chernoff_triton import parse_variant  # noqa: E402

TOL = 1e-7

_RUN = r'''
import os, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import torch
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
                      {"low_first": 1, "count": 1}],
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
    # the whole interval through the environment switch (the estimators' route)
    if form == "split":
        os.environ["NWBOUND_SEARCH_VARIANT"] = "bp=2,warps=1,order=width,low_first=1"
        (_, _), (d_lo, d_up) = _both(args, 0.5, 0.05, "cpu")
        del os.environ["NWBOUND_SEARCH_VARIANT"]
        out["split/env"] = np.stack([d_lo, d_up])
np.savez(sys.argv[2], **out)
'''


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_search_variants_give_the_default_ends(tmp_path):
    env = dict(os.environ, TRITON_INTERPRET="1")
    env.pop("NWBOUND_SEARCH_VARIANT", None)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src") + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run([sys.executable, "-c", _RUN, str(Path(__file__).resolve().parent), str(tmp_path / "o.npz")],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    got = np.load(tmp_path / "o.npz")
    for form, n_variants in (("split", 8), ("grouped", 2)):
        base, base_cert = got[f"{form}/0/ends"], got[f"{form}/0/cert"]
        opened = got[f"{form}/open"]
        assert opened.any() and (~opened).any(), form  # both kinds of pair are exercised
        # closed pairs keep the given end (never moved)
        np.testing.assert_array_equal(base[~opened], got[f"{form}/given"][~opened])
        for i in range(1, n_variants):
            ends, cert = got[f"{form}/{i}/ends"], got[f"{form}/{i}/cert"]
            if form == "split" and i in (5, 7):  # one_exp: e^{−x} as 1/e^x; low_first: other probes.
                # Ends within the search's tol of the default's, each still certified (below).
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
    # low_first on these statistics: at most one probe more than the default search for any pair, fewer in all
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
