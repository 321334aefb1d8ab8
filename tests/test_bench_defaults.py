"""``benchmarks/bench_defaults.py --phases`` names functions that exist and run (issue 30, item 4)."""

import cProfile
import importlib.util
import os
import pstats
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    # The script holds every thread pool to one thread through os.environ when it is imported; the
    # test process's environment is restored, or numba later finds NUMBA_NUM_THREADS changed under
    # its running pool and refuses to compile.
    saved = dict(os.environ)
    try:
        spec = importlib.util.spec_from_file_location("bench_defaults", ROOT / "benchmarks" / "bench_defaults.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return module


def test_every_phase_names_a_function_defined_in_its_file():
    # The table once named estimators/_sums.py after the sums had moved to engine/host/: its
    # ranking and sums columns printed 0 without an error.
    for column, keys in _bench().PHASES:
        for path, name in keys:
            source = ROOT / "src" / "nwbound" / path
            assert source.is_file(), f"{column}: {path} does not exist"
            assert re.search(rf"^\s*def {name}\(", source.read_text(), re.MULTILINE), f"{column}: no {name} in {path}"


def test_phase_seconds_refuses_a_profile_without_a_named_function():
    profiler = cProfile.Profile()
    profiler.enable()
    sum(range(10))
    profiler.disable()
    with pytest.raises(RuntimeError, match="never ran in the profile"):
        _bench().phase_seconds(pstats.Stats(profiler))


def test_pairs_read_counts_every_dense_pass_and_restores_the_engine():
    from nwbound.engine.host import _sums

    bench = _bench()
    tasks_of = _sums._dense_tasks
    X, y, Q, _ = bench.dataset(400, 2)
    pairs = bench.pairs_read(X, y, Q)
    assert _sums._dense_tasks is tasks_of
    assert set(pairs) <= {"L check", "ranking", "sums"} and "sums" in pairs
    for read, total in pairs.values():
        assert 0 < read <= total
