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


def test_repeat_keeps_each_models_least_time(monkeypatch, capsys):
    """``--repeat k``: both models k times per size, each one's least wall and CPU time kept (a loaded
    machine moves one run's CPU time by up to half); both CPU times printed beside their ratio."""
    bench = _bench()
    hgb = iter([(2.0, 3.0, 0.9), (1.0, 1.5, 0.9), (4.0, 2.0, 0.9)])
    default = iter([(5.0, 6.0, 0.8, 0.1), (3.0, 4.5, 0.8, 0.1), (2.5, 9.0, 0.8, 0.1)])
    monkeypatch.setattr(bench, "warm_up", lambda classes: None)
    monkeypatch.setattr(bench, "run_hgb", lambda *a: next(hgb))
    monkeypatch.setattr(bench, "run_default", lambda *a: next(default))
    monkeypatch.setattr(bench, "NadarayaWatsonClassifier", lambda **kw: type("M", (), {"fit": lambda s, X, y: s})())
    assert bench.main(["--sizes", "100", "--classes", "2", "--repeat", "3"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.split()[:2] == ["100", "2"])
    # wall 2.5 / 1.0, CPU 4.5 / 1.5: the least of each model's three runs
    assert row.split()[2:8] == ["2.50", "1.00", "2.5×", "4.50", "1.50", "3.0×"]


def test_the_small_fit_prints_its_least_wall_and_cpu_time(monkeypatch, capsys):
    """The 1 000-row fit: the least wall and the least CPU time of ``--repeat`` fits (on a loaded
    machine its wall time stretches, its CPU time much less)."""
    from types import SimpleNamespace

    bench = _bench()
    walls, cpus = iter([0.0, 3.0, 10.0, 12.0]), iter([0.0, 1.5, 5.0, 5.25])  # fits of 3 and 2 s; 1.5 and 0.25 s
    monkeypatch.setattr(bench, "warm_up", lambda classes: None)
    monkeypatch.setattr(bench, "run_hgb", lambda *a: (1.0, 1.0, 0.9))
    monkeypatch.setattr(bench, "run_default", lambda *a: (1.0, 1.0, 0.9, 0.1))
    monkeypatch.setattr(bench, "time", SimpleNamespace(perf_counter=lambda: next(walls), process_time=lambda: next(cpus)))
    monkeypatch.setattr(bench, "NadarayaWatsonClassifier", lambda **kw: type("M", (), {"fit": lambda s, X, y: s})())
    assert bench.main(["--sizes", "100", "--classes", "2", "--repeat", "2"]) == 0
    assert "fit on 1000 rows, 2 classes: 2.00 s, CPU 0.25 s (goal <= 1 s)" in capsys.readouterr().out.splitlines()


def test_phases_time_the_point_model():
    """``--phases`` has a ``point`` column: the point model's judgement and fit at the end of the
    default fit, a part of its cost the other columns leave out (issue 30: one fit of gradient
    boosting on every training row)."""
    bench = _bench()
    X, y, Q, _ = bench.dataset(400, 2)
    seconds = bench.phase_seconds(bench._profiled(X, y, Q))
    assert 0 < seconds["point"] < seconds["total"]


def test_features_sets_the_rows_width_and_refuses_what_cannot_be_drawn(monkeypatch, capsys):
    """``--features 2``: low-dimensional rows (2 informative, none redundant); 10 classes cannot be
    drawn from 2 informative features, and the error says so instead of scikit-learn's."""
    bench = _bench()
    X, y, Q, _ = bench.dataset(200, 2, 2)
    assert X.shape == (140, 2) and Q.shape == (60, 2) and set(y) == {0, 1}
    assert bench.dataset(200, 2)[0].shape[1] == bench.N_FEATURES
    widths = []
    monkeypatch.setattr(bench, "warm_up", lambda classes: None)
    monkeypatch.setattr(bench, "run_hgb", lambda *a: (1.0, 1.0, 0.9))
    monkeypatch.setattr(bench, "run_default", lambda X, *a: widths.append(X.shape[1]) or (1.0, 1.0, 0.9, 0.1))
    monkeypatch.setattr(bench, "NadarayaWatsonClassifier", lambda **kw: type("M", (), {"fit": lambda s, X, y: s})())
    assert bench.main(["--sizes", "100", "--classes", "2", "--features", "2"]) == 0
    assert widths == [2] and "make_classification, 2 features" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        bench.main(["--sizes", "100", "--classes", "10", "--features", "2"])
    assert "--features 2 cannot separate 10 classes" in capsys.readouterr().err
