#!/usr/bin/env bash
# One device check for nwbound (issues 13 and 19): run from the repository root on the GPU machine,
#   bash benchmarks/gpu_check.sh            # GPU tests, then the issue-19 benchmark (<= 8 minutes)
# with the machine's own python3 (torch, triton, numpy, scipy, scikit-learn, pytest): nwbound is not
# installed there, so PYTHONPATH=src. Everything goes to $OUT/gpu_log.txt (or ./gpu_log.txt).
# Modes:
#   all      (default) pytest -m '' tests/test_gpu*.py (210 s at most), then
#            benchmarks/bench_device_bounds.py at the ECG shapes (230 s at most): the bare fp32
#            product; predict_interval with the default bound, Hoeffding, localized k=10, each as a
#            ratio to the product; the 1M x 100 / 100k-query default bound if time and memory allow
#   bench    only the benchmark
#   profile  the GPU tests (140 s at most), then the benchmark at the ECG shapes without the 1M case,
#            with a torch.profiler summary (top device and host costs, host reads) of one call each
#            for Chernoff, Hoeffding and localized (150 s at most): about 5 minutes in all
#   final    every GPU test case that needs CUDA (150 s at most; the CPU-device and interpreter cases of
#            the same files run on PyTorch's CPU elsewhere), then the benchmark with the 1M case, the
#            host solver's route checked but not timed (130 s at most, its "RATIO" lines at the end),
#            diag_knn.py (48 s), diag_grouped_search.py --ecg (60 s: why the fused per-point search's ends are
#            refused on the device), then the host-overhead lines (25 s): about 7.5 minutes
#   explore  the GPU tests (120 s at most), then each diag_*.py of this round that exists (host
#            overhead 40 s; epilogue, search and k-NN variants 70 s each): about 6 minutes in all
#   round19  every GPU test case that needs CUDA, 8 workers (180 s at most), then
#            bench_device_bounds.py at the ECG shapes and 1M x 100 with profiles (100 s at most), then
#            bench_device_default.py: the default model with device="cuda" against the CPU engine and
#            HGB at 30 000 and 100 000 rows (100 s at most): about 6.5 minutes in all
#   retry    the CUDA cases of the search's tests (100 s at most), diag_launches.py (60 s), the bound ratios
#            (90 s) and the default model at 30 000 and 100 000 rows, 2 classes (80 s): about 5.5 minutes
#   dry-run  on any machine (CPU PyTorch): the device-bound tests and the benchmark at tiny shapes,
#            to check this script itself
#   legacy   the issue-13 estimator timing (statistics route, host solver)
set -u -o pipefail
set +x
MODE="${1:-all}"
LOG="${OUT:-.}/gpu_log.txt"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export SCIPY_ARRAY_API=1  # array_api_dispatch: CUDA queries in, CUDA results out
{
  echo "== $(date -u) mode $MODE =="
  nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader 2>/dev/null || echo "nvidia-smi: none"
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
from nwbound.engine.device._array_api import compat
print("nwbound imports; array_api_compat from", compat().__name__)
PY
  if [ "$MODE" = "all" ] || [ "$MODE" = "profile" ] || [ "$MODE" = "explore" ]; then
    TEST_LIMIT=210
    [ "$MODE" = "profile" ] && TEST_LIMIT=140
    [ "$MODE" = "explore" ] && TEST_LIMIT=120
    echo "== pytest -m '' tests/test_gpu*.py (${TEST_LIMIT} s at most) =="
    # test_gpu_bounds.py, test_gpu_auto.py: their CUDA cases only here (the CPU ones run in CI); the fused search where
    # Triton is installed, not the torch.compile'd one (nwbound's config key compile_bounds: False by default).
    timeout "$TEST_LIMIT" python3 -u -m pytest -q -m "" -p no:cacheprovider --maxfail=10 -rfE \
      --no-header -k "not (test_gpu_bounds or test_gpu_auto) or cuda" tests/test_gpu_bounds.py tests/test_gpu.py \
      tests/test_gpu_dispatch.py tests/test_gpu_neighbors.py tests/test_gpu_underflow.py tests/test_gpu_rounding.py \
      tests/test_gpu_auto.py \
      2>&1 | tail -n 25
    echo "pytest exit: ${PIPESTATUS[0]}"
  fi
  if [ "$MODE" = "all" ] || [ "$MODE" = "bench" ]; then
    echo "== bench_device_bounds.py (ECG shapes) =="
    timeout 230 python3 -u benchmarks/bench_device_bounds.py --budget 190
    echo "bench exit: $?"
  fi
  if [ "$MODE" = "profile" ]; then
    echo "== bench_device_bounds.py --profile (ECG shapes, no 1M case) =="
    timeout 150 python3 -u benchmarks/bench_device_bounds.py --budget 120 --no-big --profile
    echo "bench exit: $?"
  fi
  if [ "$MODE" = "explore" ]; then
    for diag in host_overhead:40 epilogue:70 search:70 knn:70; do
      name="${diag%%:*}"; limit="${diag##*:}"
      if [ -f "benchmarks/diag_${name}.py" ]; then
        echo "== diag_${name}.py (${limit} s at most) =="
        timeout "$limit" python3 -u "benchmarks/diag_${name}.py"
        echo "diag_${name} exit: $?"
      fi
    done
  fi
  if [ "$MODE" = "final" ]; then
    # The cases that need CUDA: the CPU-device and interpreter cases of the same files run on PyTorch's CPU.
    echo "== pytest: the GPU tests that need CUDA (150 s at most; interrupted, it still prints its summary) =="
    timeout -s INT 150 python3 -u -m pytest -q -m "" -p no:cacheprovider -p no:randomly --timeout 45 --durations 12 \
      -rfE --no-header --ignore=tests/test_gpu_compile.py \
      -k "not interpreter and not array_api_strict and not -cpu] and not [cpu] and not [cpu- and not -cpu-" \
      tests/test_gpu*.py 2>&1 | tail -n 40
    echo "pytest exit: ${PIPESTATUS[0]}"
    echo "== bench_device_bounds.py (ECG shapes, then 1M x 100 / 100k, each case's profile top 6; 130 s at most) =="
    timeout 130 python3 -u benchmarks/bench_device_bounds.py --budget 120 --no-host-timing --profile --profile-rows 6
    echo "bench exit: $?"
    echo "== diag_knn.py (48 s at most: the localized call's variants, the fused per-point search's refused ends) =="
    timeout 48 python3 -u benchmarks/diag_knn.py --budget 42
    echo "diag_knn exit: $?"
    echo "== diag_grouped_search.py --ecg (60 s at most: the fused per-point search's refused ends, EVAL vs SEARCH) =="
    timeout 60 python3 -u benchmarks/diag_grouped_search.py --ecg
    echo "diag_grouped_search exit: $?"
    echo "== diag_host_overhead.py (25 s at most) =="
    timeout 25 python3 -u benchmarks/diag_host_overhead.py --repeats 5 | grep -E "PRODUCT|HOST"
  fi
  if [ "$MODE" = "round19" ]; then
    echo "== pytest: the GPU tests that need CUDA, 8 workers (180 s at most; interrupted, it still prints its summary) =="
    PER_TEST=$(python3 -c "import pytest_timeout" 2>/dev/null && echo "--timeout 150")  # the device has it
    timeout -s INT 180 python3 -u -m pytest -q -m "" -p no:cacheprovider -p no:randomly -n 8 --dist loadfile \
      ${PER_TEST} --durations 10 -rfE --no-header --ignore=tests/test_gpu_compile.py \
      -k "not interpreter and not array_api_strict and not -cpu] and not [cpu] and not [cpu- and not -cpu-" \
      tests/test_gpu*.py 2>&1 | tail -n 60
    echo "pytest exit: ${PIPESTATUS[0]}"
    echo "== bench_device_bounds.py (ECG shapes, then 1M x 100 / 100k, profiles top 6; 100 s at most) =="
    timeout 100 python3 -u benchmarks/bench_device_bounds.py ${BOUNDS_ARGS:---budget 85} --no-host-timing --profile --profile-rows 6
    echo "bench exit: $?"
    echo "== bench_device_default.py (the default model on the device; 100 s at most) =="
    timeout 100 python3 -u benchmarks/bench_device_default.py --budget 70 --repeat 1 ${DEFAULT_ARGS:-}
    echo "bench_device_default exit: $?"
  fi
  if [ "$MODE" = "retry" ]; then
    echo "== pytest: the search's CUDA test cases, 8 workers (100 s at most) =="
    PER_TEST=$(python3 -c "import pytest_timeout" 2>/dev/null && echo "--timeout 90")
    timeout -s INT 100 python3 -u -m pytest -q -m "" -p no:cacheprovider -p no:randomly -n 8 --dist load \
      ${PER_TEST} -rfE --no-header \
      -k "not interpreter and not array_api_strict and not -cpu] and not [cpu] and not [cpu- and not -cpu-" \
      tests/test_gpu_search_speed.py tests/test_gpu_bounds.py tests/test_gpu_knn_variants.py 2>&1 | tail -n 15
    echo "pytest exit: ${PIPESTATUS[0]}"
    echo "== diag_launches.py (60 s at most) =="
    timeout 60 python3 -u benchmarks/diag_launches.py ${LAUNCH_ARGS:-}
    echo "diag_launches exit: $?"
    echo "== bench_device_bounds.py (90 s at most) =="
    timeout 90 python3 -u benchmarks/bench_device_bounds.py ${BOUNDS_ARGS:---budget 75} --no-host-timing
    echo "bench exit: $?"
    echo "== bench_device_default.py (2 classes; 80 s at most) =="
    timeout 80 python3 -u benchmarks/bench_device_default.py --classes 2 --budget 50 --repeat 1 ${DEFAULT_ARGS:-}
    echo "bench_device_default exit: $?"
  fi
  if [ "$MODE" = "dry-run" ]; then
    echo "== dry run: device-bound tests (CPU) and the benchmark at tiny shapes =="
    timeout 300 python3 -u -m pytest -q -m '' -p no:cacheprovider -x --no-header tests/test_gpu_bounds.py \
      -k "contains_the_host and not per_point" 2>&1 | tail -n 5
    echo "pytest exit: ${PIPESTATUS[0]}"
    TRITON_INTERPRET=1 timeout 200 python3 -u benchmarks/diag_grouped_search.py --rows 8 --cases 2 2>&1 \
      | grep -v "RuntimeWarning\|output = op"
    echo "diag exit: ${PIPESTATUS[0]}"
    timeout 300 python3 -u benchmarks/bench_device_bounds.py --small --device cpu --repeats 1 --budget 200 --profile \
      --no-host-timing
    echo "bench exit: $?"
  fi
  if [ "$MODE" = "legacy" ]; then
    echo "== estimator: NadarayaWatsonClassifier(device='cuda') vs the CPU engine, ECG shapes =="
    SCIPY_ARRAY_API=1 timeout 150 python3 -u - "${ESTIMATOR_SHAPES:-full}" <<'PY'
import sys, time, warnings
import numpy as np
sys.path.insert(0, "benchmarks")
from run import ECG_FULL, ECG_QUICK, ecg_like
from bench_gpu import pick_bandwidth
import torch
from nwbound import NadarayaWatsonClassifier

warnings.simplefilter("ignore")  # UselessBoundWarning etc.: timings only here
n_train, n_query = ECG_FULL if sys.argv[1] == "full" else ECG_QUICK
X, y, Q = ecg_like(n_train, n_query)
lam, share = pick_bandwidth(Q, X, 0.05)
dev = "cuda" if torch.cuda.is_available() else "cpu"
print(f"{n_train} x {X.shape[1]} training, {n_query} queries, lambda {lam:.4f} ({100 * share:.1f} % inside), device {dev}")

def timed(est, bound, repeats=3):
    t0 = time.perf_counter(); iv = est.predict_interval(Q); first = time.perf_counter() - t0
    best = first
    for _ in range(repeats):
        t0 = time.perf_counter(); est.predict_interval(Q)
        if dev == "cuda": torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return iv, first, best

# Sample weights: the split form with per-bin point counts (hist_count) from the Triton epilogue.
for bound, weighted in (("hoeffding", False), ("chernoff", False), ("chernoff", True)):
    params = dict(bandwidth=lam, lipschitz=1.0, bound=bound, dtype="float32")
    w = np.random.default_rng(0).uniform(0.5, 1.0, n_train) if weighted else None
    cpu = NadarayaWatsonClassifier(metric=None, n_jobs=-1, **params).fit(X, y, sample_weight=w)
    gpu = NadarayaWatsonClassifier(metric=None, device=dev, **params).fit(X, y, sample_weight=w)
    a, f_cpu, t_cpu = timed(cpu, bound, repeats=1)
    b, f_gpu, t_gpu = timed(gpu, bound)
    st = gpu.kernel_statistics(Q)
    form = "split (hist_mass)" if st.hist_mass is not None else "counts only (hist_mass missing: a bug)"
    bound = bound + ("+w" if weighted else "")
    print(f"{bound:10s} CPU engine {t_cpu:8.3f} s | device {t_gpu:8.4f} s (first call {f_gpu:.1f} s) "
          f"| speed-up {t_cpu / t_gpu:7.1f}x | histogram form {form if bound.startswith('chernoff') else '-'}")
    print(f"{'':10s} max |d proba| {np.abs(a.proba - b.proba).max():.2e}  max |d lower| "
          f"{np.abs(a.lower - b.lower).max():.2e}  max |d upper| {np.abs(a.upper - b.upper).max():.2e}  "
          f"mean width cpu {np.mean(a.upper - a.lower):.4f} device {np.mean(b.upper - b.lower):.4f}")
    if weighted:
        print(f"{'':10s} hist_count from the device: {st.hist_count is not None}, weight_min {st.weight_min}")
    if bound == "chernoff":
        # The same split-form sums from the array-API engine (PyTorch ops): the Triton path's gain.
        from nwbound.engine.device._sums import dense_kernel_sums_array_api
        run = lambda: dense_kernel_sums_array_api(Q, gpu._train, gpu.kernel_, gpu.bandwidths_, need_dist=True,
                                                  histogram_bins=32, engine="array_api", device=dev)
        t0 = time.perf_counter(); run(); first = time.perf_counter() - t0
        t0 = time.perf_counter(); run(); t_aa = time.perf_counter() - t0
        print(f"{'':10s} array-API engine with hist_mass/hist_dist (split form): {t_aa:.4f} s (first {first:.1f} s)")
        # array_api_dispatch: CUDA queries in, CUDA tensors out (the queries never cross to the host).
        import sklearn
        Qt = torch.from_numpy(Q).to(dev)
        with sklearn.config_context(array_api_dispatch=True):
            t0 = time.perf_counter(); iv = gpu.predict_interval(Qt); t_disp = time.perf_counter() - t0
        print(f"{'':10s} array_api_dispatch, {dev} queries: {t_disp:.4f} s, upper on {iv.upper.device}, "
              f"max |d upper| vs NumPy queries {np.abs(iv.upper.cpu().numpy() - b.upper).max():.1e}")
PY
    echo "estimator exit: $?"
  fi
  echo "== done $(date -u) =="
} 2>&1 | tee "$LOG"
