#!/usr/bin/env bash
# One device check for nwbound.gpu (issue 13): run from the repository root on the GPU machine,
#   bash benchmarks/gpu_check.sh
# with the machine's own python3 (torch, triton, cupy, numpy, scipy, scikit-learn, pytest):
# nwbound is not installed there, so PYTHONPATH=src. Everything goes to $OUT/gpu_log.txt
# (or ./gpu_log.txt without $OUT). Bounded to 5 minutes (pytest 100 s, benchmark 170 s).
set -u -o pipefail
LOG="${OUT:-.}/gpu_log.txt"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
{
  echo "== $(date -u) =="
  nvidia-smi || echo "nvidia-smi failed"
  python3 - <<'PY'
import importlib
for name in ["numpy", "scipy", "sklearn", "threadpoolctl", "torch", "triton", "cupy", "array_api_compat",
             "array_api_strict", "numba", "pytest", "hypothesis"]:
    try:
        mod = importlib.import_module(name)
        print(f"{name:18s} {getattr(mod, '__version__', '?')}")
    except Exception as exc:
        print(f"{name:18s} MISSING ({type(exc).__name__}: {exc})")
import torch
print("cuda available:", torch.cuda.is_available(), torch.version.cuda,
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
import nwbound, nwbound.gpu
from nwbound.gpu._array_api import compat
print("nwbound imports; array_api_compat from", compat().__name__)
PY
  echo "== pytest tests/test_gpu.py =="
  timeout 100 python3 -u -m pytest -q -p no:cacheprovider -rs tests/test_gpu.py
  echo "pytest exit: $?"
  echo "== bench_gpu.py =="
  timeout 170 python3 -u benchmarks/bench_gpu.py --repeats 5
  echo "bench exit: $?"
  echo "== done $(date -u) =="
} 2>&1 | tee "$LOG"
