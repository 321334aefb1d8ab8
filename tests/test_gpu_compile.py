"""The Triton kernel compiles for an H100/H200 (sm_90) without a GPU, its tile configs do not spill,
and its arithmetic keeps subnormals (no flush-to-zero ``mul``/``add``/``fma``).

Triton compiles to PTX and runs its bundled ``ptxas`` without a driver, so this checks, on any
machine with Triton's NVIDIA backend, what only a GPU run showed before: that every
configuration of :data:`nwbound.engine.device._triton.CONFIGS` compiles (front end, layouts, registers) and
keeps register spills small — a spilling config compiles and is correct, but slow. It runs in a
subprocess (importing Triton's compiler must not touch an interpreted run's state).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HAS_TRITON = importlib.util.find_spec("triton") is not None and importlib.util.find_spec("torch") is not None

_COMPILE = r'''
import json, os, re, subprocess, sys, tempfile
import triton
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.compiler import get_ptxas
from triton.compiler import ASTSource
from nwbound.engine.device._triton import _BK, _KERNEL_CODES, CONFIGS, _kernel

kernel = _kernel()
pointer_types = {"q_ptr": "*fp32", "qn_ptr": "*fp32", "qerr_ptr": "*fp32", "qeta_ptr": "*fp32", "x_ptr": "*fp32",
                 "xn_ptr": "*fp32", "w_ptr": "*fp32", "tcls_ptr": "*i32", "tw_ptr": "*fp32", "cs_ptr": "*fp64",
                 "sq_ptr": "*fp64", "ds_ptr": "*fp64", "h_ptr": "*fp32", "hm_ptr": "*fp64", "hd_ptr": "*fp64", "hc_ptr": "*fp32",
                 "p_ptr": "*fp32", "n_q": "i32", "tiles_per_split": "i32", "n_tiles": "i32", "inv_lam2": "fp32",
                 "r2": "fp32", "p_stride": "i32"}
ptxas = get_ptxas(90).path
out = []
for family, bins, words, precision, from_product, uniform, count, atomic, atomic_count, bin_loop in json.loads(
        sys.argv[1]):
    for bm, bn, warps, stages in CONFIGS[family]:
        const = dict(M_PAD=112, C_PAD=8, BINS=bins, B_PAD=max(2, bins), KERNEL=_KERNEL_CODES["epanechnikov"],
                     NEED_DIST=True, PRECISION=precision, FROM_PRODUCT=from_product, BM=bm, BN=bn, BK=_BK,
                     STEPS=0, HIST_WORDS=words, FIELDS=4 if bn <= 64 else 3, BITS=8 if bn <= 64 else 10,
                     UNIFORM=uniform, COUNT=count, ATOMIC=atomic, SKIP=False, BIN_LOOP=bin_loop,
                     ATOMIC_COUNT=atomic_count, PACKED_ATOMIC=False)
        unknown = set(kernel.arg_names) - set(pointer_types) - set(const)
        assert not unknown, f"kernel arguments this check does not know: {unknown}"
        signature = {name: pointer_types.get(name, "constexpr") for name in kernel.arg_names}
        src = ASTSource(fn=kernel, signature=signature,
                        constexprs={(kernel.arg_names.index(k),): v for k, v in const.items()})
        compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                                  options=dict(num_warps=warps, num_stages=stages))
        with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
            f.write(compiled.asm["ptx"])
        report = subprocess.run([ptxas, "-v", "--gpu-name=sm_90a", f.name, "-o", os.devnull],
                                capture_output=True, text=True, check=True).stderr
        os.unlink(f.name)
        spills = int(re.search(r"(\d+) bytes spill stores", report).group(1))
        # Arithmetic that flushes subnormals to zero (the approximate sqrt/exp may: they make K, d⁺).
        ftz = sorted(set(re.findall(r"\b(?:add|sub|mul|fma|mad)\.[a-z0-9.]*ftz[a-z0-9.]*", compiled.asm["ptx"])))
        out.append([family, bins, [words, uniform, count, atomic], [bm, bn, warps, stages], spills, ftz])
print(json.dumps(out))
'''

# (CONFIGS family, bins, packed words, precision, gemm="library", UNIFORM, COUNT, ATOMIC, ATOMIC_COUNT,
# BIN_LOOP): the exact (ieee) forms _launch picks, with the estimator's 32 bins, under the default
# epilogue "atomic_count" (per-bin sums by float64 atomics): unweighted (the counts by atomics too, no
# bin loop), sample weights (per-bin Σw loop, packed point counts) and per-class weights (packed
# counts, no bin loop); and the per-bin loop epilogue ("loop", the diag's baseline) unweighted.
# gemm="library" tunes sample weights among "library_histogram" (16×64 spills with the Σw loop).
# tf32x3 and 16 bins (no spills either when measured) are left out to keep this near a minute.
_UNIT, _SAMPLE, _CLASS = (0, True, False, True, False), (8, False, True, False, True), (8, True, True, False, False)
_FORMS = [("ieee", 0, 0, "ieee", False, False, False, False, False, False),
          ("library", 0, 0, "ieee", True, False, False, False, False, False)] + [
    (family, 32, words, "ieee", family != "histogram", uniform, count, True, atomic_count, bin_loop)
    for family, forms in (("histogram", (_UNIT, _SAMPLE, _CLASS)), ("library_histogram_atomic", (_UNIT, _CLASS)),
                          ("library_histogram", (_SAMPLE,)))
    for words, uniform, count, atomic_count, bin_loop in forms] + [
    ("library_histogram", 32, 8, "ieee", True, True, False, False, False, True)]
# Bytes of spill stores tolerated per config (a few stray words); the histogram configs were
# chosen at ≤ 16 (one at 32 with per-bin counts).
_MAX_SPILL = 64


def _check_statistics_kernel(results: list) -> None:
    """Every config of the statistics kernel compiled, none spills, none flushes subnormals."""
    from nwbound.engine.device._triton import CONFIGS

    assert len(results) == sum(len(CONFIGS[form[0]]) for form in _FORMS)
    spilling = [r[:5] for r in results if r[4] > _MAX_SPILL]
    assert not spilling, f"configs that spill more than {_MAX_SPILL} bytes (family, bins, words, config, bytes): {spilling}"
    # Σ(wK)²'s underflow allowance (square_sum_bound: n·2⁻¹⁴⁹) assumes IEEE subnormals in the products
    # and sums; a flush-to-zero multiply would lose up to 2⁻¹²⁶ per square.
    flushing = [r[:4] + [r[5]] for r in results if r[5]]
    assert not flushing, f"configs whose arithmetic flushes subnormals to zero: {flushing}"


_COMPILE_SEARCH = r'''
import json, math, os, re, subprocess, sys, tempfile
import triton
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.compiler import get_ptxas
from triton.compiler import ASTSource
from nwbound.bounds._chernoff_search_kernel import search_kernel as kernel
from nwbound.bounds._chernoff_triton import _DEFAULT

types = {n: "*fp64" for n in ("s_ptr", "a_ptr", "b_ptr", "m_ptr", "th_ptr", "tmax_ptr", "out_ptr", "cert_ptr", "f0",
                              "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "level_ptr")}
types.update(act_ptr="*i8", n_pairs="i32", K="i32", B="i32", idx_ptr="*i32", cnt_ptr="*i32")
out = []
for split, bb in ((True, 32), (False, 16)):  # the split form (32 bins), the grouped one (k ≤ 16 neighbours)
    launch = _DEFAULT["split" if split else "grouped"]  # the default launch of each form
    const = dict(SPLIT=split, BP=launch["bp"], BB=bb, THETA_STEPS=6, MAX_PROBES=64,
                 NEWTON_M_STEPS=12, DECREMENT=1e-12, MARGIN=0.1, SERIES_X=1e-3, INF=math.inf, LIBDEVICE=True,
                 ROUNDING=(bb + 16) * 2.0**-52, INDEXED=False, LAZY=False, ONE_EXP=False, COUNT=False,
                 LOW_FIRST=bool(launch["low_first"]))
    unknown = set(kernel.arg_names) - set(types) - set(const)
    assert not unknown, f"kernel arguments this check does not know: {unknown}"
    src = ASTSource(fn=kernel, signature={n: types.get(n, "constexpr") for n in kernel.arg_names},
                    constexprs={(kernel.arg_names.index(k),): v for k, v in const.items()})
    compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                              options=dict(num_warps=launch["warps"], num_stages=1))
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(compiled.asm["ptx"])
    report = subprocess.run([get_ptxas(90).path, "-v", "--gpu-name=sm_90a", f.name, "-o", os.devnull],
                            capture_output=True, text=True, check=True).stderr
    os.unlink(f.name)
    ptx = compiled.asm["ptx"]
    out.append([int(re.search(r"(\d+) bytes spill stores", report).group(1)),
                sorted(set(re.findall(r"\b(?:ex2|lg2|div|sqrt)\.approx[a-z0-9.]*|\b(?:add|sub|mul|fma|div)[a-z.]*\.ftz\.f64", ptx)))])
print(json.dumps(out))
'''


def _check_search_kernel(results: list) -> None:
    """The fused band-Chernoff search (its split and its grouped form) does not spill, and its float64
    exp/log are libdevice's (no float32 ex2/lg2 approximations, no approximate division)."""
    for form, (spills, approx) in zip(("split", "grouped"), results):
        assert spills <= _MAX_SPILL, f"the search kernel's {form} form spills {spills} bytes"
        assert not approx, f"approximations in the float64 search's {form} form: {approx}"


@pytest.mark.slow
@pytest.mark.skipif(not HAS_TRITON, reason="triton and torch are not both installed (pip install torch triton)")
@pytest.mark.parametrize("script,args,timeout,check", [
    (_COMPILE, [json.dumps(_FORMS)], 300, _check_statistics_kernel),
    (_COMPILE_SEARCH, [], 400, _check_search_kernel),
], ids=["statistics_kernel_every_config", "fused_chernoff_search"])
# Compiling every configuration takes minutes: the mark overrides a run's `--timeout 45` (pytest-timeout),
# which cut the statistics kernel's compile short on the last device check; the subprocess keeps its own limit.
@pytest.mark.timeout(500)
def test_kernel_compiles_for_sm90(script, args, timeout, check):
    """Each Triton kernel compiles for sm_90 (in a subprocess, without a GPU) and passes its check."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas

        if not os.path.exists(get_ptxas(90).path):
            pytest.skip("Triton's NVIDIA backend ships no ptxas here")
    except (ImportError, AttributeError, RuntimeError) as exc:
        pytest.skip(f"Triton's NVIDIA backend is not usable here: {exc}")
    env = dict(os.environ, TRITON_DEFAULT_FP_FUSION="1")
    env.pop("TRITON_INTERPRET", None)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "src") + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True,
                         timeout=timeout)
    assert run.returncode == 0, run.stderr[-3000:]
    check(json.loads(run.stdout.strip().splitlines()[-1]))
