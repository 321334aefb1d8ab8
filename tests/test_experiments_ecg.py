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
from nwbound.experiments.ecg import (
    ANCHORS,
    HEADLINE,
    bound_settings,
    expand_interval,
    is_symmetric_form,
    stratified_subsample,
)

EXCERPT = Path(__file__).resolve().parent / "data" / "mitdb_excerpt"
MITDB = Path(__file__).resolve().parents[2] / "shared" / "data" / "mitdb"


def _read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# --------------------------------------------------------------------------- helpers
def test_registered():
    assert "ecg" in EXPERIMENTS


def test_one_stratified_subsample():
    import nwbound.datasets

    # The ECG subsamples come from the one shared helper (tested with the datasets).
    assert stratified_subsample is nwbound.datasets.stratified_subsample


@pytest.mark.filterwarnings("ignore::nwbound.diagnostics.UselessBoundWarning")
@pytest.mark.parametrize("bound", ["hoeffding", "chernoff"])
@pytest.mark.parametrize("n_neighbors", [None, 15])
def test_bound_settings_match_separate_models(n_neighbors, bound):
    """One predict_interval(bounds=bound_settings(...)) call equals models fitted in each setting."""
    rng = np.random.default_rng(0)
    X = rng.random((400, 4))
    y = (X[:, 0] + 0.3 * rng.standard_normal(400) > 0.5).astype(int) + (X[:, 1] > 0.7)
    Xq = rng.random((60, 4)) * 1.2 - 0.1  # some queries outside the box / with κ = 0
    common = dict(bandwidth=0.3, lipschitz=0.5, n_neighbors=n_neighbors, delta=0.05)
    # The model that computes the settings has the default bound; each reference pins its own.
    default = NadarayaWatsonClassifier(metric=None, **common).fit(X, y)
    ours = NadarayaWatsonClassifier(metric=None, **common, bound=bound).fit(X, y)
    paper = NadarayaWatsonClassifier(metric=None, **common, bound="paper", sigma=0.25, ck=1.0, coverage="per_class").fit(X, y)
    got = default.predict_interval(Xq, bounds=bound_settings(bound))
    for key, model in (("ours", ours), ("paper", paper)):
        want = model.predict_interval(Xq)
        for field in ("proba", "epsilon", "lower", "upper", "kappa", "vacuous"):
            np.testing.assert_allclose(getattr(got[key], field), getattr(want, field), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got["paper"].proba, got["ours"].proba)
    assert not np.allclose(got["paper"].epsilon, got["ours"].epsilon)
    assert bound_settings()["ours"]["bound"] == default.bound == "chernoff"
    with pytest.raises(ValueError, match="bound must be one of"):
        bound_settings("paper")


def test_no_private_member_of_another_package():
    import re

    import nwbound.experiments.ecg as ecg

    src = Path(ecg.__file__).read_text(encoding="utf-8")
    hits = [m.group(0) for m in re.finditer(r"\w+\._[a-z]\w*", src)]
    # Only the fallback import of this project's own strip display (until nwbound.plots exports it).
    assert not hits, hits
    assert "_GAPS" not in src and "PAPER_APPENDIX" not in src


def test_expand_interval_places_columns():
    rng = np.random.default_rng(2)
    X, y = rng.random((200, 3)), rng.choice([0, 2, 3], size=200)
    Xq = rng.random((10, 3))
    model = NadarayaWatsonClassifier(metric=None, bandwidth=0.5, lipschitz=0.1, bound="hoeffding").fit(X, y)
    iv = model.predict_interval(Xq)
    full = expand_interval(iv, model.classes_, n_classes=5, symmetric=is_symmetric_form("hoeffding"))
    assert full.proba.shape == (10, 5)
    np.testing.assert_allclose(full.proba[:, [0, 2, 3]], iv.proba)
    np.testing.assert_allclose(full.proba[:, [1, 4]], 0.0)
    # The Hoeffding bound is the same for every class, absent ones included.
    np.testing.assert_allclose(full.epsilon, np.repeat(iv.epsilon[:, :1], 5, axis=1))
    np.testing.assert_allclose(full.upper[:, [1, 4]], np.repeat(iv.epsilon[:, :1], 2, axis=1))
    np.testing.assert_allclose(full.proba.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="present"):
        expand_interval(iv, np.array([0, 2]))


def test_expand_interval_keeps_chernoff_limits():
    """Asymmetric limits survive; an absent class gets [0, smallest present upper] (checked by loops)."""
    rng = np.random.default_rng(3)
    X, y = rng.random((300, 3)), rng.choice([0, 2, 3], size=300, p=[0.7, 0.2, 0.1])
    model = NadarayaWatsonClassifier(metric=None, bandwidth=0.5, lipschitz=0.1).fit(X, y)  # the default: chernoff
    assert model.bound == "chernoff" and not is_symmetric_form(model.bound)
    iv = model.predict_interval(rng.random((10, 3)))
    assert not np.allclose(iv.upper - iv.proba, iv.proba - iv.lower)  # really asymmetric
    full = expand_interval(iv, model.classes_, n_classes=5)
    for i in range(10):
        for j, c in enumerate((0, 2, 3)):
            assert (full.lower[i, c], full.upper[i, c], full.epsilon[i, c]) == (iv.lower[i, j], iv.upper[i, j],
                                                                                iv.epsilon[i, j])
        smallest = min(iv.upper[i, j] for j in range(3))
        for c in (1, 4):
            assert (full.proba[i, c], full.lower[i, c], full.upper[i, c], full.epsilon[i, c]) == (0, 0, smallest,
                                                                                                  smallest)
            # The Hoeffding parts (bias, sampling) are one per query.
            assert (full.bias[i, c], full.sampling[i, c]) == (iv.bias[i, 0], iv.sampling[i, 0])


def test_absent_class_chernoff_end_below_smallest_present_upper():
    """Why expand_interval may use the smallest present upper: the test's upper end grows with the class sum."""
    from nwbound.bounds import chernoff_interval

    rng = np.random.default_rng(4)
    checked = 0
    for _ in range(40):
        k = int(rng.integers(3, 40))
        mass = rng.random(k)
        labels = rng.integers(0, 3, size=k)
        sums = np.array([[0.0] + [mass[labels == c].sum() for c in range(3)]])  # class 0: no point
        if np.any(sums[0, 1:] == 0):
            continue
        _, upper = chernoff_interval(sums, np.ones((1, k)), mass, mass, 0.1 * rng.random(k), 0.05 / 3)
        assert upper[0, 0] <= upper[0, 1:].min() + 1e-9
        checked += 1
    assert checked >= 10


# --------------------------------------------------------------------------- CLI
@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ecg") / "results"
    # One thread: OpenMP/BLAS pools only spin on a tiny excerpt (and on a shared machine).
    code = main(["experiment", "ecg", "--data-dir", str(EXCERPT), "--quick", "--threads", "1",
                 "--output", str(out), "--quiet"])
    return code, out


def test_quick_run_on_excerpt_writes_everything(quick_run):
    code, out = quick_run
    assert code == 0
    for stem in ("table2", "results", "per_class", "errors_caught", "type_errors", "calibration"):
        assert (out / f"{stem}_intra.csv").is_file() and (out / f"{stem}_intra.md").is_file()
    for fig in ("fig3_intervals", "fig3_bound_width", "fig3_precision_recall", "fig3_cumulative_recall",
                "figE_waveforms", "figE_reliability", "figE_type_errors"):
        png = out / f"{fig}_intra.png"
        assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for stem in ("ec57", "inter_overview", "inter_confusion", "inter_records"):
        assert (out / f"{stem}.csv").is_file() and (out / f"{stem}.md").is_file()
    assert (out / "fig_ecg_strip_inter.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "Measured run time" in summary and "Inter-patient" in summary and "σ = 1/4" in summary
    assert "de Chazal et al. 2004" in summary and "Per patient" in summary


def test_resumed_run_time_says_what_it_left_out(quick_run):
    # A run that reused every split printed "Measured run time: 0 s (loading, all fits, tables and
    # figures)", as if the whole experiment had taken that long.
    _, out = quick_run
    first = (out / "summary.md").read_text(encoding="utf-8")
    assert "loading, all fits, tables and figures" in first and "reused" not in first
    code = main(["experiment", "ecg", "--data-dir", str(EXCERPT), "--quick", "--threads", "1",
                 "--output", str(out), "--quiet", "--resume"])
    assert code == 0
    again = (out / "summary.md").read_text(encoding="utf-8")
    assert "split(s) intra, inter, adaptive were reused from an earlier run" in again
    assert "loading, all fits" not in again


def test_why_we_differ_reads_the_largest_nw_size_of_a_quick_run():
    # --quick on the full database runs the NW classifiers at 1 000 and 10 000 and only the all-N
    # row at the full training side: the section compared that size ("no paper row at this size")
    # and printed "vacuous ... nan %" for the regular NWC it never ran there.
    from types import SimpleNamespace

    from nwbound.experiments.ecg import PAPER_TABLE2, _why_we_differ

    def row(method, n, acc):
        return {"method": method, "n_train": n, "accuracy": acc, "vacuous_share": 0.02, "mean_eps_paper": 0.46,
                "mean_eps_ours": 0.37, "query_s": 3.9}

    rows = [row(m, n, a) for n in (1000, 10000) for m, a in (("regular", 0.944), ("localized", 0.951))]
    rows.append({"method": "all_n", "n_train": 87595, "accuracy": 0.828})
    intra = SimpleNamespace(split="intra", n_train_full=87595, rows=rows)
    args = SimpleNamespace(bound="chernoff", n_neighbors=10)
    text = _why_we_differ([intra], {"intra": {}}, args)
    paper = PAPER_TABLE2[(10000, "regular")]
    assert "At n = 10000 this run measures: Regular NWC 94.4 % vs 93.4 %" in text and paper[0] == 93.4
    assert "nan" not in text and "2.0 % (regular NWC)" in text
    assert f"{paper[4]} s / {PAPER_TABLE2[(10000, 'localized')][4]} s" in text


def test_quick_run_intra_numbers_are_sane(quick_run):
    from nwbound.datasets import load_mitbih_beats, split_beats

    _, out = quick_run
    beats = load_mitbih_beats(EXCERPT, progress=False)
    train, test = split_beats(beats, split="intra", random_state=0)
    rows = _read_csv(out / "results_intra.csv")
    assert {r["method"] for r in rows} == {"regular", "localized", "logistic", "cme", "all_n"}
    # --quick asks for 1 000 and 10 000: both capped at the training side, so one size.
    assert {int(r["n_train"]) for r in rows} == {len(train)}
    for r in rows:
        assert int(r["n_test"]) == len(test)
        acc, rec = float(r["accuracy"]), float(r["recall_w"])
        assert 0.0 <= acc <= 1.0 and 0.0 <= float(r["precision_w"]) <= 1.0
        assert rec == pytest.approx(acc)  # support-weighted recall is accuracy
        if r["method"] in ("regular", "localized", "cme"):
            for key in ("mean_eps_paper", "mean_eps_ours"):
                assert 0.0 < float(r[key]) <= 1.0
    share_n = float(np.mean(test.y == 0))
    all_n = next(r for r in rows if r["method"] == "all_n")
    assert float(all_n["accuracy"]) == pytest.approx(share_n)
    assert float(all_n["precision_w"]) == pytest.approx(share_n**2)
    per_class = [r for r in _read_csv(out / "per_class_intra.csv") if r["method"] == "regular"]
    np.testing.assert_array_equal([int(r["support"]) for r in per_class], np.bincount(test.y, minlength=5))
    reg = next(r for r in rows if r["method"] == "regular")
    tot = next(r for r in _read_csv(out / "type_errors_intra.csv")
               if r["method"] == "regular" and r["bound"] == "paper" and r["class"] == "all")
    assert int(tot["type_I"]) == round((1 - float(reg["accuracy"])) * len(test))
    assert float(tot["conservative_accuracy"]) <= float(tot["accuracy"]) + 1e-12
    assert float(reg["accuracy"]) > 0.7  # well above chance on the excerpt (5 classes)
    # The "why we differ" text quotes this run's numbers, not fixed prose.
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert f"{100 * float(reg['vacuous_share']):.1f} % (regular NWC)" in summary
    assert f"ours {float(reg['mean_eps_ours']):.3f}" in summary


def test_quick_run_ec57_csv_recomputes(quick_run):
    """ec57.csv: one row per (feature set, classifier, rule, class), each checked against the
    confusion table written beside it, with the textbook definitions."""
    from nwbound.datasets import load_mitbih_beats, split_beats

    _, out = quick_run
    beats = load_mitbih_beats(EXCERPT, progress=False)
    _, test = split_beats(beats, split="inter")
    rows = _read_csv(out / "ec57.csv")
    conf = _read_csv(out / "inter_confusion.csv")
    configs = {(r["feature_set"], r["classifier"], r["rule"]) for r in rows}
    assert {c[0] for c in configs} == {"morphology", "rhythm", "both"}
    assert {c[1] for c in configs} == {"regular", "localized", "dyadic", "logistic", "boosting"}
    assert HEADLINE in configs
    names = ["N", "S", "V", "F", "Q"]
    for cfg in configs:
        table = np.array([[int(r[c]) for c in names] for r in conf
                          if (r["feature_set"], r["classifier"], r["rule"]) == cfg and r["reference"] in names])
        np.testing.assert_array_equal(table.sum(axis=1), np.bincount(test.y, minlength=5))
        mine = [r for r in rows if (r["feature_set"], r["classifier"], r["rule"]) == cfg]
        assert [r["class"] for r in mine] == names and all(r["split"] == "inter" for r in mine)
        for j, r in enumerate(mine):
            tp, ref, pred = table[j, j], table[j].sum(), table[:, j].sum()
            neg = table.sum() - ref
            for key, num, den in (("sensitivity", tp, ref), ("positive_predictivity", tp, pred),
                                  ("false_positive_rate", pred - tp, neg)):
                if den:
                    assert float(r[key]) == pytest.approx(num / den)
                else:
                    assert r[key] in ("", "nan")
            bounded = cfg[1] in ("regular", "localized", "dyadic")
            cs = r["certified_share"]
            assert (cs not in ("", "nan")) == (bounded and ref > 0)
            if cs not in ("", "nan"):
                assert 0.0 <= float(cs) <= 1.0
    # Review queue per patient: one row per DS2 record of the excerpt for each bounded config.
    recs = _read_csv(out / "inter_records.csv")
    head = [r for r in recs if (r["feature_set"], r["classifier"], r["rule"]) == HEADLINE]
    assert sorted(r["record"] for r in head) == sorted(set(test.record))
    for r in head:
        assert int(r["beats"]) == int(np.sum(test.record == r["record"]))
        assert 0.0 <= float(r["review_%"]) <= 100.0


def test_anchor_table_is_the_issue_s():
    assert ANCHORS[0]["S Se %"] == 75.9 and ANCHORS[0]["V +P %"] == 81.9
    assert ANCHORS[1]["accuracy %"] == 93.0 and ANCHORS[2]["accuracy %"] == 94.5


def test_bad_feature_sets_rejected(tmp_path, capsys):
    code = main(["experiment", "ecg", "--data-dir", str(EXCERPT), "--split", "inter", "--feature-sets",
                 "morphology,wavelets", "--output", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "--feature-sets" in err and "wavelets" in err


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
    ec57 = _read_csv(out / "ec57.csv")
    n_support = next(int(r["support"]) for r in ec57 if r["class"] == "N")
    s_support = next(int(r["support"]) for r in ec57 if r["class"] == "S")
    assert n_support == pytest.approx(44259, abs=5) and s_support == pytest.approx(1837, abs=5)  # DS2
    assert {int(r["n_train"]) for r in ec57} == {8000}  # --quick subsample of DS1
