"""Issue 22 (hardening 3), items 5-7: resumable experiments, one tie rule for the k-th neighbour,
and a refusal of implausibly many classes."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from nwbound.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
EXCERPT = Path(__file__).resolve().parent / "data" / "mitdb_excerpt"


# ---------------------------------------------------------------------------
# item 5: every experiment records its steps, resumes, and writes summary.md last
# ---------------------------------------------------------------------------

_KILLER = """
import os, signal, sys
from nwbound.utils import StepLog

real, done = StepLog.run, []

def run(self, step, compute, **kwargs):
    out = real(self, step, compute, **kwargs)
    done.append(step)
    if len(done) == int(os.environ["KILL_AFTER"]):
        os.kill(os.getpid(), signal.SIGKILL)  # a hard kill right after the record is written
    return out

StepLog.run = run
from nwbound.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _without_times(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    # Timings differ between any two runs; every other column must be identical.
    return [{k: v for k, v in r.items() if "time" not in k and not k.endswith("_s")} for r in rows]


def _steps(out: Path) -> dict:
    return json.loads((out / "steps.json").read_text(encoding="utf-8"))["steps"]


def _summary_is_last(out: Path) -> None:
    summary = (out / "summary.md").stat().st_mtime_ns
    assert all(f.stat().st_mtime_ns <= summary for f in out.iterdir()), "summary.md is not the last file written"


@pytest.mark.slow
def test_synthetic_killed_by_sigkill_resumes_without_recomputing(tmp_path, monkeypatch):
    from nwbound.experiments import synthetic

    argv = ["experiment", "synthetic", "--quick", "--datasets", "overlapping", "--sizes", "40,60,80",
            "--models", "regular,localized", "--bounds", "hoeffding", "--n-test", "60", "--quiet"]
    killed = tmp_path / "killed"
    env = dict(os.environ, KILL_AFTER="2", PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", _KILLER, *argv, "--output", str(killed)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    first = _steps(killed)
    assert list(first) == ["overlapping repeat=0 n=40", "overlapping repeat=0 n=60"]
    assert first["overlapping repeat=0 n=40"]["params"]["n"] == 40  # each record carries its parameters
    assert not (killed / "summary.md").exists()
    assert not (killed / "steps.json.tmp").exists() and not list(killed.glob(".*tmp*"))

    calls: list[int] = []
    real = synthetic.fit_and_query
    monkeypatch.setattr(synthetic, "fit_and_query",
                        lambda model, X, *a, **k: calls.append(X.shape[0]) or real(model, X, *a, **k))
    assert main(argv + ["--output", str(killed), "--resume"]) == 0
    assert sorted(set(calls)) == [80]  # the two recorded sizes were not recomputed
    after = _steps(killed)
    for step in first:  # their records are kept as they were
        assert after[step] == first[step]
    assert list(after) == [*first, "overlapping repeat=0 n=80", "tables and figures"]
    _summary_is_last(killed)
    assert (killed / "figure2.png").is_file() and (killed / "overlapping_coverage.png").is_file()

    calls.clear()
    clean = tmp_path / "clean"
    assert main(argv + ["--output", str(clean)]) == 0
    assert sorted(set(calls)) == [40, 60, 80]
    for name in ("overlapping_results.csv", "coverage.csv"):
        assert _without_times(_rows(killed / name)) == _without_times(_rows(clean / name)), name
    text = lambda p: p.read_text(encoding="utf-8").split("## Time scaling")[0]  # noqa: E731  (then timings)
    assert text(killed / "summary.md") == text(clean / "summary.md")


@pytest.mark.slow
def test_margin_resume_reuses_every_step(tmp_path, monkeypatch):
    from nwbound.experiments import synthetic

    out = tmp_path / "margin"
    argv = ["experiment", "margin", "--quick", "--sizes", "40", "--models", "regular", "--bounds", "hoeffding",
            "--n-test", "40", "--output", str(out), "--quiet"]
    assert main(argv) == 0
    assert list(_steps(out)) == ["separable repeat=0 n=40", "tables and figures"]
    _summary_is_last(out)
    calls: list[int] = []
    real = synthetic.fit_and_query
    monkeypatch.setattr(synthetic, "fit_and_query", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert main(argv + ["--resume"]) == 0
    assert calls == []
    assert (out / "summary.md").is_file() and (out / "margin_figure.png").is_file()


def test_shift_interrupted_resumes_and_matches_a_clean_run(tmp_path, monkeypatch):
    from nwbound.experiments import shift

    argv = ["experiment", "shift", "--fields", "logistic", "--models", "regular", "--bounds", "hoeffding",
            "--n-train", "150", "--n-cal", "100", "--n-query", "100", "--repeats", "2", "--quiet"]
    out, clean = tmp_path / "shift", tmp_path / "clean"
    real = shift._run_task
    calls: list[tuple] = []

    def interrupted(field, config, task, cache):
        if calls:
            raise KeyboardInterrupt  # the run is stopped inside its second step
        calls.append(task)
        return real(field, config, task, cache)

    with monkeypatch.context() as m:
        m.setattr(shift, "_run_task", interrupted)
        assert main(argv + ["--output", str(out)]) == 130
    assert list(_steps(out)) == ["logistic repeat=0 hoeffding regular"]
    assert not (out / "summary.md").exists() and not (out / "shift.png").exists()

    calls.clear()
    monkeypatch.setattr(shift, "_run_task", lambda f, c, task, cache: calls.append(task) or real(f, c, task, cache))
    assert main(argv + ["--output", str(out), "--resume"]) == 0
    assert calls == [(1, "hoeffding", "regular")]  # only the unfinished repeat
    _summary_is_last(out)
    assert main(argv + ["--output", str(clean)]) == 0
    for name in ("shift_rows.csv", "shift_summary.csv", "summary.md"):
        assert (out / name).read_bytes() == (clean / name).read_bytes(), name

    calls.clear()  # other parameters: every step is recomputed, none reused
    assert main(argv + ["--output", str(out), "--resume", "--bandwidth", "0.2"]) == 0
    assert sorted(calls) == [(0, "hoeffding", "regular"), (1, "hoeffding", "regular")]


@pytest.mark.slow
def test_ecg_resume_skips_the_finished_split(tmp_path, monkeypatch):
    from nwbound.experiments import ecg

    out = tmp_path / "ecg"
    argv = ["experiment", "ecg", "--data-dir", str(EXCERPT), "--quick", "--sizes", "300", "--threads", "1",
            "--feature-sets", "rhythm", "--output", str(out), "--quiet"]

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(ecg, "_run_inter", killed)
        assert main(argv) == 130
    assert list(_steps(out)) == ["intra"] and not (out / "summary.md").exists()
    assert (out / "table2_intra.csv").is_file()

    calls: list[str] = []
    real = ecg._run_split
    monkeypatch.setattr(ecg, "_run_split", lambda split, *a, **k: calls.append(split) or real(split, *a, **k))
    assert main(argv + ["--resume"]) == 0
    assert calls == []  # the intra split was reused
    assert list(_steps(out)) == ["intra", "inter", "adaptive"]  # "both" runs every split
    text = (out / "summary.md").read_text(encoding="utf-8")
    assert "## Intra-patient" in text and "Why our numbers differ" in text
    _summary_is_last(out)


# ---------------------------------------------------------------------------
# item 6: one tie rule for the k-th neighbour in every index and in Dask
# ---------------------------------------------------------------------------

FIELDS = ("proba", "lower", "upper", "epsilon", "kappa", "n_eff")


def _tied_data(seed: int = 0):
    """Integer grid features (many equal distances) with duplicated rows, weights and 3 classes."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, size=(300, 2)).astype(float)
    X = np.vstack([X, X[:80], np.repeat(X[:1], 30, axis=0)])  # duplicated rows, one of them 31 times
    y = rng.integers(0, 3, size=X.shape[0])
    w = rng.choice([0.5, 1.0, 2.0], size=X.shape[0])
    # Queries on the grid, half-way between grid points, and one on the 31-fold row.
    Q = np.vstack([rng.integers(0, 5, size=(40, 2)) + rng.choice([0.0, 0.5], size=(40, 2)), X[:1]])
    return X, y, w, Q


def _rule_neighbors(X: np.ndarray, Q: np.ndarray, k: int) -> np.ndarray:
    """The rule from its definition: k smallest direct float64 distances, ties to the lower row."""
    out = []
    for q in Q:  # slow on purpose: one query at a time
        d = np.sqrt(((X - q) ** 2).sum(axis=1))
        out.append(np.lexsort((np.arange(X.shape[0]), d))[:k])
    return np.array(out)


def _fields(iv) -> dict:
    get = iv.get if isinstance(iv, dict) else (lambda name: getattr(iv, name))
    return {name: np.asarray(get(name)) for name in FIELDS}


@pytest.mark.parametrize("bound", ["hoeffding", "chernoff"])
def test_exact_indexes_agree_exactly_on_ties(bound):
    from nwbound import NadarayaWatsonClassifier

    X, y, w, Q = _tied_data()
    k = 10
    expected = _rule_neighbors(X, Q, k)
    results = {}
    for algorithm in ("brute", "kd_tree", "ball_tree", "auto"):
        model = NadarayaWatsonClassifier(metric=None, n_neighbors=k, bandwidth=2.0, lipschitz=0.3, algorithm=algorithm,
                                         bound=bound).fit(X, y, sample_weight=w)
        dist, idx = model.kneighbors(Q)
        np.testing.assert_array_equal(idx, expected, err_msg=algorithm)
        np.testing.assert_array_equal(dist, np.sqrt(((X[expected] - Q[:, None, :]) ** 2).sum(axis=2)))
        with _no_check():  # the usefulness warning is not what this test is about
            results[algorithm] = _fields(model.predict_interval(Q))
    for algorithm, fields in results.items():
        for name, value in fields.items():
            np.testing.assert_array_equal(value, results["brute"][name], err_msg=f"{algorithm}: {name}")
    # On a row present many times the 10 neighbours are its 10 lowest copies.
    copies = np.flatnonzero((X == X[0]).all(axis=1))
    assert copies.size > k and expected[-1].tolist() == copies[:k].tolist()


class _no_check:
    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


@pytest.mark.parametrize("leaf_size", [1, 30])
def test_index_rule_with_small_leaves_and_many_duplicates(leaf_size):
    from nwbound.neighbors import ExactIndex

    rng = np.random.default_rng(3)
    X = np.repeat(rng.integers(0, 3, size=(12, 3)).astype(float), 9, axis=0)[rng.permutation(108)]
    Q = rng.integers(0, 3, size=(25, 3)).astype(float)
    for k in (1, 5, 9, 10, 30, 107, 108):
        expected = _rule_neighbors(X, Q, k)
        for algorithm in ("brute", "kd_tree", "ball_tree"):
            dist, idx = ExactIndex(algorithm, leaf_size=leaf_size).fit(X).kneighbors(Q, k)
            np.testing.assert_array_equal(idx, expected, err_msg=f"{algorithm}, k={k}")
            assert np.all(np.diff(dist, axis=1) >= 0)


def test_no_tie_results_unchanged():
    from sklearn.neighbors import NearestNeighbors

    from nwbound.neighbors import ExactIndex

    rng = np.random.default_rng(4)
    X, Q = rng.normal(size=(500, 4)), rng.normal(size=(60, 4))
    ref_d, ref_i = NearestNeighbors(algorithm="brute").fit(X).kneighbors(Q, 7)
    for algorithm in ("brute", "kd_tree", "ball_tree"):
        dist, idx = ExactIndex(algorithm).fit(X).kneighbors(Q, 7)
        np.testing.assert_array_equal(idx, ref_i)
        np.testing.assert_allclose(dist, ref_d, rtol=1e-12)


def test_dask_paths_equal_the_in_memory_estimator_on_ties():
    import dask
    import dask.array as da

    import nwbound.dask as nwdask
    from nwbound import NadarayaWatsonClassifier

    X, y, w, Q = _tied_data(1)
    params = dict(n_neighbors=10, bandwidth=2.0, lipschitz=0.3)
    with _no_check():
        reference = _fields(NadarayaWatsonClassifier(metric=None, **params).fit(X, y, sample_weight=w).predict_interval(Q))
        for chunks in ((5, 200, 205),):  # uneven shards, one smaller than k
            model = nwdask.ShardedNadarayaWatson(metric=None, **params).fit(da.from_array(X, chunks=(chunks, -1)), y,
                                                              sample_weight=w)
            (out,) = dask.compute(model.predict_interval(da.from_array(Q, chunks=(13, -1))), scheduler="sync")
            for name, value in _fields(out).items():
                np.testing.assert_array_equal(value, reference[name], err_msg=f"{chunks}: {name}")
        in_memory = NadarayaWatsonClassifier(metric=None, algorithm="kd_tree", **params).fit(X, y, sample_weight=w)
        (out,) = dask.compute(nwdask.predict_interval(in_memory, da.from_array(Q, chunks=(7, -1))), scheduler="sync")
    for name, value in _fields(out).items():
        np.testing.assert_array_equal(value, reference[name], err_msg=name)


def test_hnsw_applies_the_rule_among_its_candidates():
    pytest.importorskip("hnswlib")
    from nwbound.neighbors import HNSWIndex

    # Rows 0 and 1 are both at distance 0.5 from the query; row 0 must win for k = 1.
    X = np.array([[1.0], [0.0], [5.0], [6.0], [7.0], [9.0]])
    for order in (X, X[[1, 0, 2, 3, 4, 5]]):
        index = HNSWIndex(ef=6, random_state=0).fit(order)
        dist, idx = index.kneighbors(np.array([[0.5]]), 1)
        assert idx.tolist() == [[0]] and dist.tolist() == [[0.5]]
    X, _, _, Q = _tied_data(2)
    dist, idx = HNSWIndex(ef=400, random_state=0).fit(X).kneighbors(Q, 10)
    same = dist[:, 1:] == dist[:, :-1]
    assert np.all(np.diff(dist, axis=1) >= 0) and np.all(idx[:, 1:][same] > idx[:, :-1][same])


# ---------------------------------------------------------------------------
# item 7: implausibly many classes are refused in fit (and so in the CLI); class names truncated
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n_classes, n_rows", [(2, 3), (20, 20), (21, 41), (21, 42), (50, 99), (50, 100), (300, 300)])
def test_class_count_rule_against_its_statement(n_classes, n_rows):
    from nwbound import NadarayaWatsonClassifier

    X = np.arange(n_rows, dtype=float)[:, None]
    y = np.arange(n_rows) % n_classes
    refused = n_classes > 20 and n_rows < 2 * n_classes  # the documented rule, restated
    if refused:
        with pytest.raises(ValueError, match=rf"^y has {n_classes} classes among {n_rows} rows.*class labels"):
            NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=1.0).fit(X, y)
    else:
        assert NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=1.0).fit(X, y).classes_.shape == (n_classes,)


def test_id_target_refused_by_every_estimator():
    import dask.array as da

    import nwbound.dask as nwdask
    from nwbound import DyadicClassifier, NadarayaWatsonClassifier

    X = np.random.default_rng(0).random((200, 2))
    ids = np.array([f"row{i}" for i in range(200)])
    for est in (NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.2), NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.2, n_neighbors=5),
                DyadicClassifier(metric=None, lipschitz=None, resolution=2)):
        with pytest.raises(ValueError, match="y has 200 classes among 200 rows"):
            est.fit(X, ids)
    with pytest.raises(ValueError, match="y has 200 classes among 200 rows"):
        nwdask.ShardedNadarayaWatson(metric=None, lipschitz=None, bandwidth=0.2).fit(da.from_array(X, chunks=(50, -1)), ids)
    # 25 classes with 4 rows each: a plausible labelling, fitted (the Dask template too).
    y = np.arange(200) % 25
    model = nwdask.ShardedNadarayaWatson(metric=None, lipschitz=None, bandwidth=0.2).fit(da.from_array(X, chunks=(50, -1)), y)
    assert model.classes_.shape == (25,)


def test_class_table_memory_cap(monkeypatch):
    import nwbound._validation as validation
    from nwbound import NadarayaWatsonClassifier

    monkeypatch.setattr(validation, "MAX_CLASS_TABLE", 1000)
    X = np.random.default_rng(1).random((200, 2))
    with pytest.raises(ValueError, match=r"y has 10 classes for 200 rows: .*2,000 entries.*limit of 1,000"):
        NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.2).fit(X, np.arange(200) % 10)
    NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.2).fit(X[:100], np.arange(100) % 10)  # 1000 entries: at the cap


def _write_csv(path: Path, n_rows: int, n_classes: int) -> None:
    rng = np.random.default_rng(0)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["a", "b", "id", "label"])
        for i in range(n_rows):
            w.writerow([rng.random(), rng.random(), f"patient-{i}", f"class-{i % n_classes}"])


def test_cli_refuses_an_id_column_as_target(tmp_path, capsys):
    data = tmp_path / "train.csv"
    _write_csv(data, 300, 3)
    out = tmp_path / "model.npz"
    rc = main(["fit", str(data), "--target", "id", "--features", "a,b", "--lipschitz", "1", "--bandwidth", "0.2",
               "-o", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and not out.exists()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "target column 'id' has 300 classes among 300 rows" in err and "class labels" in err
    assert "patient-1" not in err  # no class names in the refusal


def test_cli_prints_a_bounded_list_of_class_names(tmp_path, capsys):
    data = tmp_path / "train.csv"
    _write_csv(data, 240, 60)  # 60 classes, 4 rows each: accepted
    rc = main(["fit", str(data), "--target", "label", "--features", "a,b", "--lipschitz", "1",
               "--bandwidth", "0.3", "-o", str(tmp_path / "model.npz")])
    text = capsys.readouterr().out
    assert rc == 0
    assert "60 classes ['class-0', " in text and "… and 50 more]" in text
    shown = [f"'class-{i}'" for i in range(60) if f"'class-{i}'" in text]
    assert len(shown) == 10


def test_float32_localized_follows_the_rule():
    from nwbound import NadarayaWatsonClassifier

    X, y, _, Q = _tied_data(5)
    expected = _rule_neighbors(X, Q, 7)
    for algorithm in ("brute", "kd_tree"):
        model = NadarayaWatsonClassifier(metric=None, lipschitz=None, n_neighbors=7, bandwidth=2.0, algorithm=algorithm, dtype="float32").fit(X, y)
        np.testing.assert_array_equal(model.kneighbors(Q)[1], expected, err_msg=algorithm)


def test_experiment_says_which_files_a_resumed_run_reused(tmp_path, capsys):
    """The closing line of `nwbound experiment` counted reused files as written by this run."""
    import argparse
    import os
    import time

    from nwbound.cli.experiment import run

    out = tmp_path / "results"
    out.mkdir()
    old = out / "table.csv"
    old.write_text("a\n1\n")
    past = time.time() - 3600
    os.utime(old, (past, past))  # written by an earlier, interrupted run

    class Module:
        @staticmethod
        def run(args, output):
            (output / "summary.md").write_text("done\n")
            return ["table.csv", "summary.md"]

    args = argparse.Namespace(output=out, overwrite=True, experiment="fake", experiment_module=Module)
    assert run(args) == 0
    text = capsys.readouterr().out
    assert "2 files (1 of them reused from the earlier run, unchanged)" in text
    assert "  table.csv  (reused)" in text and "  summary.md\n" in text
