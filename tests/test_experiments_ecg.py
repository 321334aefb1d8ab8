"""Tests of ``nwbound experiment ecg`` (MIT-BIH table 2, figure 3, appendix E)."""

from __future__ import annotations

import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier
from nwbound.cli.main import main
from nwbound.experiments import EXPERIMENTS
from nwbound.experiments.ecg import bound_specs, expand_interval, nw_intervals, stratified_subsample

EXCERPT = Path(__file__).resolve().parent / "data" / "mitdb_excerpt"
MITDB = Path(__file__).resolve().parents[2] / "shared" / "data" / "mitdb"


def _read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# --------------------------------------------------------------------------- helpers
def test_registered():
    assert "ecg" in EXPERIMENTS


@pytest.mark.parametrize("n", [7, 100, 333])
def test_stratified_subsample_sizes_and_shares(n):
    rng = np.random.default_rng(1)
    y = rng.choice(5, size=1000, p=[0.8, 0.03, 0.1, 0.02, 0.05])
    idx = stratified_subsample(y, n, seed=3)
    assert idx.shape == (n,) and np.unique(idx).shape == (n,)
    assert np.all(np.diff(idx) > 0) and idx.min() >= 0 and idx.max() < y.shape[0]
    counts, sub = np.bincount(y, minlength=5), np.bincount(y[idx], minlength=5)
    # Largest remainders (plus one row per class): every class within 1 of its quota…
    assert np.all(np.abs(sub - counts * n / y.shape[0]) <= 1 + 1e-9) or n < 10
    assert np.all(sub >= 1)  # …and no class dropped
    np.testing.assert_array_equal(idx, stratified_subsample(y, n, seed=3))  # seeded
    assert not np.array_equal(idx, stratified_subsample(y, n, seed=4))


def test_stratified_subsample_all_when_large():
    y = np.array([0, 1, 1, 2])
    np.testing.assert_array_equal(stratified_subsample(y, 10, seed=0), np.arange(4))


@pytest.mark.parametrize("n_neighbors", [None, 15])
def test_nw_intervals_match_separate_models(n_neighbors):
    """One kernel-sum pass gives exactly what models fitted in each setting return."""
    rng = np.random.default_rng(0)
    X = rng.random((400, 4))
    y = (X[:, 0] + 0.3 * rng.standard_normal(400) > 0.5).astype(int) + (X[:, 1] > 0.7)
    Xq = rng.random((60, 4)) * 1.2 - 0.1  # some queries outside the box / with κ = 0
    common = dict(bandwidth=0.3, lipschitz=0.5, n_neighbors=n_neighbors, delta=0.05)
    ours = NadarayaWatsonClassifier(**common).fit(X, y)
    paper = NadarayaWatsonClassifier(**common, bound="paper", sigma=0.25, ck=1.0, coverage="per_class").fit(X, y)
    got = nw_intervals(ours, Xq, bound_specs(ours))
    for key, model in (("ours", ours), ("paper", paper)):
        want = model.predict_interval(Xq)
        for field in ("proba", "epsilon", "lower", "upper", "kappa", "vacuous"):
            np.testing.assert_allclose(getattr(got[key], field), getattr(want, field), rtol=1e-12, atol=1e-12)
    # Same p̂, different ε.
    np.testing.assert_array_equal(got["paper"].proba, got["ours"].proba)
    assert not np.allclose(got["paper"].epsilon, got["ours"].epsilon)


def test_expand_interval_places_columns():
    rng = np.random.default_rng(2)
    X, y = rng.random((200, 3)), rng.choice([0, 2, 3], size=200)
    model = NadarayaWatsonClassifier(bandwidth=0.5, lipschitz=0.1).fit(X, y)
    iv = model.predict_interval(rng.random((10, 3)))
    full = expand_interval(iv, model.classes_, n_classes=5)
    assert full.proba.shape == (10, 5)
    np.testing.assert_allclose(full.proba[:, [0, 2, 3]], iv.proba)
    np.testing.assert_allclose(full.proba[:, [1, 4]], 0.0)
    # The NW bound is the same for every class, absent ones included.
    np.testing.assert_allclose(full.epsilon, np.repeat(iv.epsilon[:, :1], 5, axis=1))
    np.testing.assert_allclose(full.proba.sum(axis=1), 1.0)


# --------------------------------------------------------------------------- CLI
@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ecg") / "results"
    code = main(["experiment", "ecg", "--data-dir", str(EXCERPT), "--quick", "--output", str(out), "--quiet"])
    return code, out


def test_quick_run_on_excerpt_writes_everything(quick_run):
    code, out = quick_run
    assert code == 0
    for split in ("intra", "inter"):
        for stem in ("table2", "results", "per_class", "errors_caught", "type_errors", "calibration"):
            assert (out / f"{stem}_{split}.csv").is_file() and (out / f"{stem}_{split}.md").is_file()
        for fig in ("fig3_intervals", "fig3_bound_width", "fig3_precision_recall", "fig3_cumulative_recall",
                    "figE_waveforms", "figE_reliability", "figE_type_errors"):
            png = out / f"{fig}_{split}.png"
            assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "Measured run time" in summary and "Inter-patient" in summary and "σ = 1/4" in summary


def test_quick_run_numbers_are_sane(quick_run):
    from nwbound.datasets import load_mitbih_beats, split_beats

    _, out = quick_run
    beats = load_mitbih_beats(EXCERPT, progress=False)
    for split in ("intra", "inter"):
        train, test = split_beats(beats, split=split, random_state=0)
        rows = _read_csv(out / f"results_{split}.csv")
        methods = {r["method"] for r in rows}
        assert methods == {"regular", "localized", "logistic", "cme", "all_n"}
        # --quick asks for 1 000 and 10 000: both capped at the training side, so one size.
        assert {int(r["n_train"]) for r in rows} == {len(train)}
        for r in rows:
            assert int(r["n_test"]) == len(test)
            acc, rec = float(r["accuracy"]), float(r["recall_w"])
            assert 0.0 <= acc <= 1.0 and 0.0 <= float(r["precision_w"]) <= 1.0
            assert rec == pytest.approx(acc)  # support-weighted recall is accuracy
            assert float(r["query_s"]) >= 0 and float(r["fit_s"]) >= 0
            if r["method"] in ("regular", "localized", "cme"):
                for key in ("mean_eps_paper", "mean_eps_ours"):
                    assert 0.0 < float(r[key]) <= 1.0
        share_n = float(np.mean(test.y == 0))
        all_n = next(r for r in rows if r["method"] == "all_n")
        assert float(all_n["accuracy"]) == pytest.approx(share_n)
        assert float(all_n["precision_w"]) == pytest.approx(share_n**2)
        # Per-class support adds up to the test set; Type I errors are the wrong predictions.
        per_class = [r for r in _read_csv(out / f"per_class_{split}.csv") if r["method"] == "regular"]
        assert sum(int(r["support"]) for r in per_class) == len(test)
        np.testing.assert_array_equal([int(r["support"]) for r in per_class], np.bincount(test.y, minlength=5))
        reg = next(r for r in rows if r["method"] == "regular")
        tot = next(r for r in _read_csv(out / f"type_errors_{split}.csv")
                   if r["method"] == "regular" and r["bound"] == "paper" and r["class"] == "all")
        assert int(tot["type_I"]) == round((1 - float(reg["accuracy"])) * len(test))
        assert float(tot["conservative_accuracy"]) <= float(tot["accuracy"]) + 1e-12
    intra = _read_csv(out / "results_intra.csv")
    reg = next(r for r in intra if r["method"] == "regular")
    assert float(reg["accuracy"]) > 0.7  # well above chance on the excerpt (5 classes)


def test_missing_data_dir_is_a_one_line_error(tmp_path, capsys):
    empty = tmp_path / "no_records_here"
    empty.mkdir()
    code = main(["experiment", "ecg", "--data-dir", str(empty), "--output", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert str(empty) in err and "\n" not in err and "physionet" in err.lower()


def test_no_data_dir_option_says_where_to_get_the_data(tmp_path, capsys):
    code = main(["experiment", "ecg", "--output", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--data-dir" in err and "physionet.org" in err.lower()


def test_bad_sizes_rejected(tmp_path, capsys):
    code = main(["experiment", "ecg", "--data-dir", str(EXCERPT), "--sizes", "1000,abc",
                 "--output", str(tmp_path / "o"), "--quiet"])
    assert code == 2 and "--sizes" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.data
@pytest.mark.skipif(not (MITDB / "RECORDS").is_file(), reason="full MIT-BIH database not available")
def test_quick_run_on_full_database(tmp_path):
    out = tmp_path / "results"
    code = main(["experiment", "ecg", "--data-dir", str(MITDB), "--quick", "--threads", "1",
                 "--output", str(out), "--quiet"])
    assert code == 0
    rows = _read_csv(out / "results_intra.csv")
    assert {int(r["n_train"]) for r in rows if r["method"] != "all_n"} == {1000, 10000}
    assert {int(r["n_train"]) for r in rows if r["method"] == "cme"} == {1000}
    acc = {(r["method"], int(r["n_train"])): float(r["accuracy"]) for r in rows}
    # The notes' reference levels for rebuilt beats: ≈ 90 % at 1 000, ≈ 94 % at 10 000.
    assert 0.86 < acc[("regular", 1000)] < 0.95 and 0.90 < acc[("localized", 10000)] < 0.98
    inter = _read_csv(out / "results_inter.csv")
    all_n = next(float(r["accuracy"]) for r in inter if r["method"] == "all_n")
    assert all_n == pytest.approx(44259 / 49712, abs=1e-3)  # de Chazal DS2: 89.0 % N beats
