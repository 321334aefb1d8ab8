"""The Triton statistics kernel's histogram epilogues (private switch ``epilogue=`` /
the config key ``hist_epilogue``) against today's per-bin loop and an independent float64 formula.

Under Triton's interpreter (CPU, tiny shapes), on data where one class lies far outside every
query's bandwidth (whole tiles with nothing in a bin: the ``skip`` branch's both sides run):

* ``"skip"`` equals ``"loop"`` bit for bit (a skipped tile adds exact zeros);
* ``"atomic"`` / ``"atomic_skip"``: every field but ``hist_mass`` / ``hist_dist`` equals
  ``"loop"`` bit for bit (the same code); those two are float64 sums of the same float32 terms in
  another order, so they may differ in the last bits: they must agree within the two forms'
  rounding bounds (``sum_error`` each), never bit for bit, and stay within the float64 reference;
* the default (no ``epilogue=``, config key ``hist_epilogue`` at its default) is ``"atomic_count"``.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nwbound

from test_gpu import reference

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_TRITON = importlib.util.find_spec("triton") is not None

_SCRIPT = """
import sys, numpy as np, torch
from nwbound.gpu import DeviceTrainingSet
from nwbound.engine.device._triton import triton_kernel_statistics
data = np.load(sys.argv[1])
out = {}
for case in sys.argv[3:]:
    name, bins, gemm, weights, epilogue = case.split(":")
    Q, X, onehot = (torch.from_numpy(data[k]) for k in ("Q", "X", "onehot_" + weights))
    st = triton_kernel_statistics(Q, DeviceTrainingSet.build(X, onehot), name, 0.6, histogram_bins=int(bins),
                                  gemm=gemm, epilogue=epilogue or None)
    for k in ("class_sums", "sq_sum", "dist_sum", "d2_error", "histogram", "hist_mass", "hist_dist", "hist_count"):
        out[case + "/" + k] = (getattr(st, k) if k == "d2_error" else getattr(st, k)[:, 0]).numpy()
    out[case + "/sum_error"] = np.array(st.sum_error)
np.savez(sys.argv[2], **out)
"""
# (kernel, bins, gemm, weights): unit weights take the packed counts (the atomic form has no bin
# loop left), sample weights the per-bin Σw loop (the atomic form keeps it for Σw only).
_CASES = [("epanechnikov", 16, "library", "unit"), ("quartic", 8, "fused", "sample"),
          ("epanechnikov", 5, "library", "sample")]
_EPILOGUES = ("loop", "skip", "atomic", "atomic_skip", "atomic_count", "atomic_packed", "")  # "": the default (None)
_SAME = ("class_sums", "sq_sum", "dist_sum", "d2_error", "histogram", "hist_count")


def _problem():
    rng = np.random.default_rng(19)
    n, nq, m = 260, 13, 4
    X = rng.random((n, m)).astype(np.float32)
    Q = rng.random((nq, m)).astype(np.float32)
    labels = rng.integers(0, 3, n)
    X[labels == 2] += 3.0  # class 2: outside every query's bandwidth (tiles with nothing in a bin)
    sample = np.zeros((n, 3), np.float32)
    sample[np.arange(n), labels] = rng.uniform(0.5, 2.0, n)
    unit = (sample > 0).astype(np.float32)
    return Q, X, {"unit": unit, "sample": sample}


@pytest.mark.slow  # about 13 s of interpreter on one core
@pytest.mark.skipif(not (HAS_TORCH and HAS_TRITON), reason="triton and torch are not both installed")
def test_histogram_epilogues_match_the_loop(tmp_path):
    Q, X, weighted = _problem()
    np.savez(tmp_path / "in.npz", Q=Q, X=X, **{"onehot_" + k: v for k, v in weighted.items()})
    env = dict(os.environ, TRITON_INTERPRET="1")
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    cases = [":".join(map(str, c + (e,))) for c in _CASES for e in _EPILOGUES]
    run = subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path / "in.npz"), str(tmp_path / "out.npz"), *cases],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    got = np.load(tmp_path / "out.npz")
    for name, bins, gemm, weights in _CASES:
        key = f"{name}:{bins}:{gemm}:{weights}:"
        base = {k: got[key + "loop/" + k] for k in _SAME + ("hist_mass", "hist_dist", "sum_error")}
        ref = reference(Q, X, weighted[weights], name, 0.6, bins)
        assert ref["hist_mass"][:, : bins].sum() > 0 and base["hist_mass"].sum() > 0  # something is binned
        for k in _SAME + ("hist_mass", "hist_dist", "sum_error"):  # the default is "atomic_count"
            np.testing.assert_array_equal(got[key + "/" + k], got[key + "atomic_count/" + k], err_msg=f"{key} {k}")
        for epi in _EPILOGUES[1:-1]:
            case = key + epi
            for k in _SAME:
                np.testing.assert_array_equal(got[case + "/" + k], base[k], err_msg=f"{case} {k}")
            rho = float(got[case + "/sum_error"])
            for k in ("hist_mass", "hist_dist"):
                a, b = got[case + "/" + k], base[k]
                if "atomic" not in epi:
                    np.testing.assert_array_equal(a, b, err_msg=f"{case} {k}")
                    continue
                # The same float32 terms summed in two orders: each within its sum_error of the exact
                # sum (hist_dist: the same covering factor on both), so within both of each other.
                bound = (rho + float(base["sum_error"])) * np.maximum(a, b) * (1 + 1e-9)
                assert np.all(np.abs(a - b) <= bound), (case, k, float(np.max(np.abs(a - b) - bound)))
                assert np.all((a > 0) == (b > 0)), (case, k)  # the same bins hold the terms
            # The independent float64 formula, per query over the bins (a point within float32
            # rounding of a bin edge may change bins, not the totals; float32 distances move K by
            # ~1e-5 relative here).
            mass, dist = got[case + "/hist_mass"].sum(1), got[case + "/hist_dist"].sum(1)
            np.testing.assert_allclose(mass, ref["hist_mass"].sum(1), rtol=1e-4, atol=1e-6, err_msg=case)
            d_ref = ref["hist_dist"].sum(1)  # d⁺ ≥ d: an upper bound, and a close one
            assert np.all(dist >= d_ref * (1 - 1e-5) - 1e-6) and np.all(dist <= d_ref * (1 + 1e-3) + 1e-6), case
            np.testing.assert_array_equal(got[case + "/hist_count"].sum(1), ref["hist_count"].sum(1), err_msg=case)
            if "atomic" in epi:
                assert rho >= float(base["sum_error"])  # carries γ_n of the float64 atomic sums


def test_unknown_epilogue_is_refused():
    from nwbound.engine.device._triton import _epilogue

    with pytest.raises(ValueError, match="'hist_epilogue'"):
        nwbound.set_config(hist_epilogue="atomics")
    with pytest.raises(ValueError, match="epilogue must be one of"):
        _epilogue("atomics")
    assert _epilogue(None) == (True, False, True, False)  # the default: "atomic_count"
    with nwbound.config_context(hist_epilogue="loop"):  # the deterministic per-bin loop stays reachable
        assert _epilogue(None) == (False, False, False, False)
    assert _epilogue(None) == _epilogue("atomic_count")


def test_atomic_sum_error_covers_any_order():
    """The atomic epilogue's γ_n (float64, n the padded rows): float32 terms summed in float64 in any
    order stay within it of the exact sum (exact: Python fractions), here for adversarial orders."""
    from fractions import Fraction

    from nwbound._numerics import summation_error

    rng = np.random.default_rng(7)
    terms = np.concatenate([rng.random(300), 2.0 ** -rng.integers(20, 60, 300)]).astype(np.float32)
    exact = sum(Fraction(float(t)) for t in terms)
    rho = summation_error(terms.size, "float64")
    for order in (np.argsort(terms), np.argsort(-terms), rng.permutation(terms.size)):
        acc = 0.0
        for t in terms[order].astype(np.float64):  # one float64 addition per term, as an atomic add
            acc += t
        assert abs(Fraction(acc) - exact) <= Fraction(rho) * exact
