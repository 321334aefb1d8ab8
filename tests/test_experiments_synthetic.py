"""The synthetic / margin experiments (paper figure 2) and the shared experiment helpers."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from nwbound._result import PredictionInterval
from nwbound.cli.main import main
from nwbound.experiments import EXPERIMENTS
from nwbound.experiments._common import (
    MODEL_NAMES,
    FitQuery,
    SizeCurveDisplay,
    fit_and_query,
    make_model,
    model_zoo,
    parse_sizes,
    result_row,
)
from nwbound.experiments.shift import supported_bounds
from nwbound.experiments.synthetic import bound_rows, make_test_set

BOUNDS = supported_bounds()  # hoeffding, and chernoff where the estimators have it

DELTA = 0.05
NW_FAMILY = ("regular", "regular_auto", "localized", "dyadic")  # our bounded classifiers


def _read(path: Path) -> list[dict]:
    rows = []
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            for key, value in row.items():
                try:
                    row[key] = float(value)
                except (TypeError, ValueError):
                    pass
            rows.append(row)
    return rows


def _tolerance(n: float) -> float:
    # δ plus three binomial standard deviations of a rate measured on n queries.
    return DELTA + 3.0 * math.sqrt(DELTA * (1 - DELTA) / n)


# ---------------------------------------------------------------------------
# end to end (one quick run of each experiment, shared by the checks below)
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("synthetic") / "results"
    # The CME only at n = 100 keeps this fixture fast (its own tests are in test_baselines).
    rc = main(["experiment", "synthetic", "--quick", "--output", str(out), "--quiet",
               "--models", "regular,regular_auto,localized,dyadic,logistic,cme", "--cme-max", "100"])
    return rc, out


@pytest.fixture(scope="module")
def margin_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("margin") / "results"
    rc = main(["experiment", "margin", "--quick", "--sizes", "50,400", "--output", str(out), "--quiet"])
    return rc, out


def test_registered():
    assert "synthetic" in EXPERIMENTS and "margin" in EXPERIMENTS


def test_synthetic_quick_writes_all_files(synthetic_run):
    rc, out = synthetic_run
    assert rc == 0
    for stem in ("overlapping_results", "separable_results", "coverage", "scaling"):
        assert (out / f"{stem}.csv").stat().st_size > 0
        assert (out / f"{stem}.md").read_text(encoding="utf-8").startswith("# ")
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "Coverage" in summary
    # The rate counted is p outside [lower, upper] (metrics.violation_rate), not |p − p̂| > ε:
    # the band-Chernoff limits are not symmetric about p̂, so the two differ.
    assert "p_c outside [lower_c, upper_c]" in summary and "> ε_c" not in summary
    from PIL import Image

    for stem in ("figure2", "overlapping_coverage", "separable_coverage"):
        assert (out / f"{stem}.pdf").read_bytes()[:4] == b"%PDF"
        with Image.open(out / f"{stem}.png") as img:
            assert img.size[0] > 300 and img.size[1] > 200
    # atomic writes leave no temporary files behind
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_synthetic_quick_rows_and_ranges(synthetic_run):
    _, out = synthetic_run
    rows = _read(out / "overlapping_results.csv") + _read(out / "separable_results.csv")
    sizes = {100.0, 1000.0, 10000.0}
    assert {r["n_train"] for r in rows} == sizes
    # per size and data set: regular/localized/dyadic × (paper + each bound form), regular_auto
    # per bound form, logistic, and the CME (ours + paper) only at n = 100
    b = len(BOUNDS)
    for dataset in ("overlapping", "separable"):
        for n in sizes:
            count = sum(1 for r in rows if r["dataset"] == dataset and r["n_train"] == n)
            assert count == 3 * (1 + b) + b + 1 + (2 if n <= 100 else 0)
    for r in rows:
        assert 0.0 <= r["accuracy"] <= 1.0
        assert 0.0 <= r["precision_w"] <= 1.0
        assert r["recall_w"] == pytest.approx(r["accuracy"])  # weighted recall is accuracy
        assert r["fit_s"] >= 0 and r["query_s"] >= 0
        assert r["total_s"] == pytest.approx(r["fit_s"] + r["query_s"])
        assert r["n_test"] == 500
        if r["method"] == "logistic":
            assert math.isnan(r["mean_bound"]) and math.isnan(r["violation_rate"])
        else:
            assert 0.0 < r["mean_bound"] <= 1.0
            assert 0.0 <= r["violation_rate"] <= r["violation_any"] + 1e-12 <= 1.0 + 1e-12


def test_accuracy_below_bayes_rate(synthetic_run):
    """No classifier beats the Bayes classifier on the test set (beyond noise)."""
    _, out = synthetic_run
    test = make_test_set("overlapping", 500, seed=0)
    bayes = float(np.mean(test.proba_true.max(axis=1)))
    slack = 3.0 * math.sqrt(0.25 / 500)
    for r in _read(out / "overlapping_results.csv"):
        assert r["accuracy"] <= bayes + slack
    # the NWC at n = 10 000 with λ = 0.2 is close to it
    best = max(r["accuracy"] for r in _read(out / "overlapping_results.csv") if r["n_train"] == 10000)
    assert best >= bayes - 0.06


def test_constants_in_scaled_units(synthetic_run):
    _, out = synthetic_run
    for r in _read(out / "overlapping_results.csv"):
        if r["method"] in NW_FAMILY and r["setting"] == "ours":
            L = float(r["assumption"].split("=")[1])
            # 0.15 · (sample range of a uniform on [-10, 10]) ≤ 0.15 · 20
            assert 2.7 < L <= 3.0 + 1e-9
        if r["method"] in NW_FAMILY and r["setting"] == "paper":
            assert r["assumption"] == "L=0.15"
    for r in _read(out / "separable_results.csv"):
        if r["method"] in NW_FAMILY and r["setting"] == "ours":
            gamma = float(r["assumption"].split("=")[1])
            # γ / (γ + 4 r) with γ = 20/3, r = 2 is the smallest possible restated margin
            assert (20 / 3) / (20 / 3 + 8) - 1e-3 <= gamma < 0.5


def test_ours_holds_and_paper_violates(synthetic_run):
    _, out = synthetic_run
    rows = _read(out / "overlapping_results.csv") + _read(out / "separable_results.csv")
    ours = [r for r in rows if r["setting"] == "ours" and r["method"] in NW_FAMILY]
    assert ours
    for r in ours:
        assert r["violation_rate"] <= _tolerance(r["n_test"]), r
    paper = [r for r in rows if r["setting"] == "paper" and r["dataset"] == "overlapping"]
    assert max(r["violation_rate"] for r in paper) > max(r["violation_rate"] for r in ours)
    # like for like: the regular NWC at the largest n
    def at(setting):
        return next(
            r["violation_rate"] for r in rows
            if r["dataset"] == "overlapping" and r["method"] == "regular"
            and r["setting"] == setting and r["n_train"] == 10000
        )
    assert at("paper") > at("ours")
    # separable data, λ = 0.2 below the true margin: the NW estimate is exact, so accurate
    for r in rows:
        if r["dataset"] == "separable" and r["method"] in ("regular", "regular_auto") and r["n_train"] >= 1000:
            assert r["accuracy"] == 1.0 and r["violation_rate"] == 0.0


def test_paper_bound_is_narrower_than_ours(synthetic_run):
    """σ = 1/4 and L in the wrong units make the paper's ε smaller at every n."""
    _, out = synthetic_run
    rows = _read(out / "overlapping_results.csv")
    for n in (100.0, 1000.0, 10000.0):
        eps = {r["bound"]: r["mean_bound"] for r in rows if r["method"] == "regular" and r["n_train"] == n}
        assert all(eps["paper"] < eps[b] for b in BOUNDS)


def test_coverage_table_consistent(synthetic_run):
    _, out = synthetic_run
    cov = _read(out / "coverage.csv")
    rows = _read(out / "overlapping_results.csv") + _read(out / "separable_results.csv")
    assert {(c["dataset"], c["setting"]) for c in cov} == {
        (d, s) for d in ("overlapping", "separable") for s in ("paper", "ours")
    }
    assert {c["bound"] for c in cov if c["setting"] == "ours" and c["method"] in NW_FAMILY} == set(BOUNDS)
    key = ("dataset", "setting", "bound", "method")
    for c in cov:
        group = [r for r in rows if all(r[k] == c[k] for k in key)]
        assert c["worst_violation_rate"] == pytest.approx(max(r["violation_rate"] for r in group))
        assert c["status"] == ("violated" if c["worst_violation_rate"] > DELTA else "holds")
        if c["setting"] == "ours" and c["method"] in NW_FAMILY:
            assert c["status"] == "holds"


def test_dyadic_lookup_beats_linear_scan(synthetic_run):
    _, out = synthetic_run
    rows = _read(out / "overlapping_results.csv")
    q = {r["method"]: r["query_s"] for r in rows if r["n_train"] == 10000 and r["setting"] != "paper"}
    assert q["dyadic"] < q["regular"]


def test_margin_quick(margin_run):
    rc, out = margin_run
    assert rc == 0
    for name in ("separable_results.csv", "coverage.csv", "summary.md", "margin_figure.png",
                 "margin_figure.pdf", "separable_coverage.png"):
        assert (out / name).stat().st_size > 0
    assert not (out / "overlapping_results.csv").exists()
    rows = _read(out / "separable_results.csv")
    assert {r["dataset"] for r in rows} == {"separable"}
    assert {r["n_train"] for r in rows} == {50.0, 400.0}
    for r in rows:
        assert 0.0 <= r["accuracy"] <= 1.0
        if r["method"] in NW_FAMILY and r["setting"] == "ours":
            assert r["violation_rate"] <= _tolerance(r["n_test"])
        if r["method"] in NW_FAMILY and r["setting"] == "paper":
            assert r["assumption"] == "γ=6.67"


# ---------------------------------------------------------------------------
# bad input and output folders
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--sizes", "0,-5"], "--sizes"),
        (["--sizes", "abc,100"], "--sizes"),
        (["--sizes", "1.5"], "--sizes"),
        (["--sizes", ""], "--sizes"),
        (["--cme-max", "ten"], "--cme-max"),
        (["--models", "regular,forest"], "--models"),
        (["--datasets", "spiral"], "--datasets"),
        (["--sizes", "20", "--n-neighbors", "50"], "--n-neighbors"),
    ],
)
def test_bad_grid_values_one_line_error(tmp_path, capsys, extra, needle):
    rc = main(["experiment", "synthetic", "--quick", "--quiet", "--output", str(tmp_path / "o"), *extra])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err and "Traceback" not in err


def test_bad_number_option_rejected(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["experiment", "margin", "--quick", "--n-test", "0", "--output", str(tmp_path / "o")])
    assert exc.value.code == 2
    assert "--n-test" in capsys.readouterr().err


_TINY = ["--datasets", "separable", "--sizes", "30,60", "--models", "regular,dyadic", "--n-test", "100", "--quiet"]


def test_existing_folder_refused_and_user_files_kept(tmp_path, capsys, monkeypatch):
    from nwbound.experiments import synthetic

    # figures are checked end to end above; here only the folder handling matters
    monkeypatch.setattr(synthetic, "figure2", lambda *a, **k: [])
    monkeypatch.setattr(synthetic, "coverage_figure", lambda *a, **k: [])
    out = tmp_path / "results"
    out.mkdir()
    mine = out / "my_notes.txt"
    mine.write_text("keep me", encoding="utf-8")
    clash = out / "coverage.md"
    clash.write_text("old", encoding="utf-8")

    rc = main(["experiment", "synthetic", "--output", str(out), *_TINY])
    assert rc == 2
    assert "--overwrite" in capsys.readouterr().err
    assert mine.read_text(encoding="utf-8") == "keep me" and clash.read_text(encoding="utf-8") == "old"

    rc = main(["experiment", "synthetic", "--output", str(out), "--overwrite", *_TINY])
    assert rc == 0
    assert mine.read_text(encoding="utf-8") == "keep me"  # never deleted nor touched
    assert clash.read_text(encoding="utf-8") != "old"  # a result of the same name is replaced
    rows = _read(out / "separable_results.csv")
    assert {r["method"] for r in rows} == {"regular", "dyadic"}


def test_output_path_that_is_a_file(tmp_path):
    target = tmp_path / "file.txt"
    target.write_text("x", encoding="utf-8")
    assert main(["experiment", "margin", "--output", str(target), *_TINY[2:]]) == 2
    assert target.read_text(encoding="utf-8") == "x"


# ---------------------------------------------------------------------------
# the shared helpers (_common)
# ---------------------------------------------------------------------------


def test_parse_sizes():
    assert parse_sizes("100,1e3, 10_000,100") == [100, 1000, 10000]
    for bad in ("0,-5", "x", "1e3.5", "2.5", "", "10,,20", "inf", "nan"):
        with pytest.raises(ValueError, match="--sizes"):
            parse_sizes(bad)
    with pytest.raises(ValueError, match="minimum of 20"):
        parse_sizes("10", minimum=20)


def test_make_model_zoo():
    zoo = model_zoo(setting="paper", lipschitz=0.15)
    assert "regular_auto" not in zoo and "localized_auto" not in zoo
    assert set(zoo) == set(MODEL_NAMES) - {"regular_auto", "localized_auto"}
    reg = zoo["regular"]
    assert (reg.bound, reg.sigma, reg.ck, reg.coverage, reg.bandwidth) == ("paper", 0.25, 1.0, "per_class", 0.2)
    assert zoo["cme"].noise_constant == 0.25
    ours = model_zoo(["regular_auto", "localized", "cme"], lipschitz=3.0, n_neighbors=7)
    assert ours["regular_auto"].bandwidth == "auto" and ours["regular_auto"].bound == "chernoff"  # the default
    assert make_model("regular", lipschitz=1.0, bound="hoeffding").bound == "hoeffding"
    with pytest.raises(ValueError, match="ours. setting only"):
        make_model("regular", lipschitz=1.0, setting="paper", bound="hoeffding")
    assert ours["localized"].n_neighbors == 7 and ours["cme"].noise_constant == 0.5
    with pytest.raises(ValueError, match="Unknown model"):
        make_model("forest")
    with pytest.raises(ValueError, match="lipschitz"):
        make_model("regular")
    with pytest.raises(ValueError, match="setting"):
        make_model("regular", lipschitz=1.0, setting="mine")


def test_fit_and_query_and_row():
    rng = np.random.default_rng(0)
    X = rng.random((200, 2))
    y = (X[:, 0] > 0.5).astype(int)
    fq = fit_and_query(make_model("regular", lipschitz=2.0, bandwidth=0.3), X, y, X[:20], name="r")
    assert fq.interval is not None and fq.fit_time >= 0 and fq.query_time >= 0
    assert np.array_equal(fq.y_pred, fq.model.predict(X[:20]))
    lr = fit_and_query(make_model("logistic"), X, y, X[:20])
    assert lr.interval is None and lr.proba.shape == (20, 2)


class _Fitted:
    classes_ = np.array([0, 1])


def test_result_row_hand_computed():
    # 4 queries: p̂₁ = 0.5 everywhere with ε = 0.1; true p₁ = 0.5, 0.65, 0.3, 0.55
    proba = np.array([[0.5, 0.5]] * 4)
    eps = np.full((4, 2), 0.1)
    iv = PredictionInterval.from_parts(
        proba=proba, bias=eps / 2, sampling=eps / 2, kappa=np.ones(4), n_eff=np.ones(4),
        vacuous=np.array([False, False, False, True]), bandwidth=np.ones(4),
    )
    fq = FitQuery("m", _Fitted(), 1.0, 2.0, np.array([0, 0, 1, 1]), proba, iv)
    p1 = np.array([0.5, 0.65, 0.3, 0.55])
    row = result_row(fq, np.array([0, 1, 1, 1]), proba_true=np.c_[1 - p1, p1], n_train=10)
    assert list(row)[:2] == ["n_train", "method"]
    assert row["total_s"] == 3.0 and row["accuracy"] == 0.75
    # |p − p̂| = 0, 0.15, 0.2, 0.05; the vacuous last query has ε = 1: queries 1 and 2 miss
    assert row["mean_bound"] == pytest.approx((3 * 0.1 + 1.0) / 4)
    assert row["vacuous_share"] == 0.25
    assert row["violation_rate"] == 0.5 and row["violation_any"] == 0.5
    # precision: class 0 predicted twice, right once (0.5); class 1 predicted twice, right twice (1.0);
    # weights = supports 1 and 3
    assert row["precision_w"] == pytest.approx((1 * 0.5 + 3 * 1.0) / 4)


def test_size_curve_display_averages_and_skips_nan():
    rows = [
        {"method": "a", "n_train": 10, "v": 1.0},
        {"method": "a", "n_train": 10, "v": 3.0},
        {"method": "a", "n_train": 100, "v": float("nan")},
        {"method": "a", "n_train": 1000, "v": 5.0},
        {"method": "b", "n_train": 10, "v": 0.5, "s": "x"},
    ]
    disp = SizeCurveDisplay.from_rows(rows, y="v", where={"method": "a"}, hline=0.05)
    xs, ys = disp.curves["a"]
    assert list(xs) == [10, 1000] and list(ys) == [2.0, 5.0]
    assert disp.ax_.get_xscale() == "log" and disp.figure_ is disp.ax_.figure
    assert len(disp.ax_.get_lines()) == 2  # the curve and the δ line


# ---------------------------------------------------------------------------
# certificate, review columns and bound forms (issue 10)
# ---------------------------------------------------------------------------


def test_review_columns_against_slow_restatement(synthetic_run):
    """Refit one row's model and recompute its certificate and review columns with loops."""
    from nwbound.experiments.synthetic import make_split

    _, out = synthetic_run
    rows = _read(out / "overlapping_results.csv")
    row = next(r for r in rows if r["method"] == "localized" and r["bound"] == "hoeffding" and r["n_train"] == 1000)
    test = make_test_set("overlapping", 500, seed=0)
    split = make_split("overlapping", 1000, test, seed=0)
    # The row checked is the Hoeffding one: pin that form (the default is "chernoff").
    model = make_model("localized", bound="hoeffding", lipschitz=split.lipschitz, bandwidth=0.2, n_neighbors=10,
                       delta=DELTA)
    iv = model.fit(split.X_train, split.y_train).predict_interval(split.X_test)
    n = len(split.y_test)
    pred = [int(np.argmax(iv.proba[i])) for i in range(n)]
    wrong = [model.classes_[pred[i]] != split.y_test[i] for i in range(n)]
    cert = [iv.lower[i, pred[i]] > iv.upper[i, 1 - pred[i]] and not iv.vacuous[i] for i in range(n)]
    assert row["certified_share"] == pytest.approx(sum(cert) / n)
    if sum(cert):
        assert row["error_among_certified"] == pytest.approx(sum(w for w, c in zip(wrong, cert) if c) / sum(cert))
    k = math.ceil(0.1 * n)
    for col, score in (("caught_10_max_p", [1 - iv.proba[i].max() for i in range(n)]),
                       ("caught_10_error_upper", [1 - iv.lower[i, pred[i]] for i in range(n)])):
        top = sorted(range(n), key=lambda i: -score[i])[:k]
        assert row[col] == pytest.approx(sum(wrong[i] for i in top) / sum(wrong)), col
    confident = test.proba_true.max(axis=1) >= 0.95
    assert row["mean_bound_confident"] == pytest.approx(iv.epsilon[confident].mean())


@pytest.mark.skipif("chernoff" not in BOUNDS, reason="the estimators have no bound='chernoff' yet")
def test_bound_forms_side_by_side(synthetic_run):
    _, out = synthetic_run
    rows = _read(out / "overlapping_results.csv") + _read(out / "separable_results.csv")
    table = _read(out / "bounds.csv")
    assert table and {r["bound"] for r in table} == {"chernoff"}
    for t in table:
        pick = lambda b: [r for r in rows if (r["dataset"], r["method"], r["n_train"], r["bound"]) == (t["dataset"], t["method"], t["n_train"], b)]  # noqa: E731
        assert t["mean_bound"] == pytest.approx(np.mean([r["mean_bound"] for r in pick("chernoff")]))
        assert t["mean_bound_hoeffding"] == pytest.approx(np.mean([r["mean_bound"] for r in pick("hoeffding")]))
        assert t["width_ratio"] == pytest.approx(t["mean_bound"] / t["mean_bound_hoeffding"])
        # The exact per-point form (localized, dyadic) is never wider than Hoeffding.
        if t["method"] in ("localized", "dyadic"):
            assert t["mean_bound"] <= t["mean_bound_hoeffding"] + 1e-12
    assert bound_rows([r for r in rows if r["bound"] != "chernoff"]) == []
