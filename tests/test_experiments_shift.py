"""The covariate-shift experiment (nwbound experiment shift)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from nwbound.cli.main import main
from nwbound.experiments import EXPERIMENTS
from nwbound.experiments.shift import (
    REGIONS,
    TRAIN_EDGE,
    ShiftConfig,
    make_shift_data,
    run_field,
    summary_rows,
    supported_bounds,
)

SMALL = ShiftConfig(n_train=600, n_cal=300, n_query=600, repeats=2, quiet=True)
ARGS = ["--n-train", "600", "--n-cal", "300", "--n-query", "600", "--repeats", "1", "--quiet"]


def _read(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_registered_and_bounds():
    assert "shift" in EXPERIMENTS
    assert "hoeffding" in supported_bounds()


@pytest.mark.parametrize("field", ["logistic", "softmax"])
def test_data_regions_and_shared_p(field):
    d = make_shift_data(field, SMALL, 0)
    raw = -10.0 + 20.0 * d.X_query
    # Regions from the raw x₁ by hand: the control block first, then in / near / far.
    want = np.array(
        [0] * SMALL.n_query
        + [1 if x <= TRAIN_EDGE else 2 if (x - TRAIN_EDGE) / 20.0 <= SMALL.bandwidth else 3 for x in raw[SMALL.n_query :, 0]]
    )
    assert np.array_equal(d.region, want)
    assert d.X_train[:, 0].max() <= (TRAIN_EDGE + 10) / 20 and d.X_cal[:, 0].max() <= (TRAIN_EDGE + 10) / 20
    assert np.allclose(d.proba_query.sum(axis=1), 1.0)
    assert d.lipschitz == pytest.approx(0.15 * 20.0)
    again = make_shift_data(field, SMALL, 0)
    assert np.array_equal(again.y_train, d.y_train)
    # Labels follow p: the class-1 share of the training labels matches the mean p (logistic).
    if field == "logistic":
        from nwbound.experiments.shift import _field

        p1 = _field("logistic", SMALL.seed).true_proba(-10.0 + 20.0 * d.X_train)[:, 1]
        assert abs(d.y_train.mean() - p1.mean()) < 4 * math.sqrt(p1.mean() / SMALL.n_train) + 0.01


@pytest.fixture(scope="module")
def logistic_rows():
    return run_field("logistic", SMALL)


@pytest.mark.parametrize("bound", ["hoeffding", "chernoff"])
def test_row_numbers_against_slow_restatement(logistic_rows, bound):
    """Re-fit one model and recompute one region's row with per-query loops."""
    from nwbound import NadarayaWatsonClassifier

    assert SMALL.bounds == ("hoeffding", "chernoff")  # both forms are reported by default
    d = make_shift_data("logistic", SMALL, 1)
    model = NadarayaWatsonClassifier(metric=None, kernel="epanechnikov", bandwidth=SMALL.bandwidth, lipschitz=d.lipschitz,
                                     delta=SMALL.delta, bound=bound)
    iv = model.fit(d.X_train, d.y_train).predict_interval(d.X_query)
    if bound == "hoeffding":  # p̂ ± ε: restated from the closed form, one ε per query
        def outside(i, c):
            return abs(d.proba_query[i, c] - iv.proba[i, c]) > iv.epsilon[i, c]
    else:  # asymmetric limits: |p − p̂| ≤ ε does not mean inside, so test the limits themselves
        assert any(iv.upper[i, 0] - iv.proba[i, 0] != iv.proba[i, 0] - iv.lower[i, 0] for i in range(50))

        def outside(i, c):
            return not iv.lower[i, c] <= d.proba_query[i, c] <= iv.upper[i, c]
    for r, region in enumerate(REGIONS):
        idx = [i for i in range(len(d.region)) if d.region[i] == r]
        viol = sum(any(outside(i, c) for c in range(2)) for i in idx)
        cert = [i for i in idx if iv.lower[i].max() > iv.upper[i].min() and not iv.vacuous[i]]
        err = [1 - d.proba_query[i, int(np.argmax(iv.proba[i]))] for i in idx]
        row = next(
            x for x in logistic_rows
            if x["repeat"] == 1 and x["model"] == "regular" and x["region"] == region and x["bound"] == bound
        )
        assert row["n_queries"] == len(idx)
        assert row["n_violated"] == viol
        assert row["certified_share"] == pytest.approx(len(cert) / len(idx))
        assert row["error"] == pytest.approx(np.mean(err))


def test_summary_pools_counts(logistic_rows):
    summary = summary_rows(logistic_rows)
    assert {r["region"] for r in summary} == set(REGIONS)
    for s in summary:
        grp = [r for r in logistic_rows if (r["bound"], r["model"], r["region"]) == (s["bound"], s["model"], s["region"])]
        assert s["n_queries"] == sum(r["n_queries"] for r in grp)
        assert s["violation_rate"] == pytest.approx(sum(r["n_violated"] for r in grp) / s["n_queries"])
        assert s["violation_rate"] <= s["violation_ci_high"] <= 1
        assert s["error"] == pytest.approx(sum(r["error"] * r["n_queries"] for r in grp) / s["n_queries"])


def test_what_the_experiment_is_about(logistic_rows):
    """The per-query bound keeps δ in every region; the exchangeable guarantees hold only without shift."""
    summary = {(r["model"], r["region"]): r for r in summary_rows(logistic_rows) if r["bound"] == "hoeffding"}
    n_cal_sd = 3 * math.sqrt(0.1 * 0.9 / (SMALL.n_cal * SMALL.repeats))
    for model in ("regular", "localized"):
        for region in REGIONS:
            row = summary[(model, region)]
            tol = SMALL.delta + 3 * math.sqrt(SMALL.delta / row["n_queries"])
            assert row["violation_rate"] <= tol and row["false_certificate_rate"] <= tol
        assert summary[(model, "no shift")]["conformal_coverage"] >= 0.9 - n_cal_sd
        # Far from the training data the prior is predicted with a small 1 − max p̂:
        # conformal sets miss and the confidence threshold accepts large errors.
        far = summary[(model, "far")]
        assert far["vacuous_share"] > 0.9 and far["certified_share"] == 0.0
        assert far["conformal_coverage"] < 0.8
        assert far["threshold_max_p_accepted_error"] > 0.1


def test_cli_writes_tables_and_figure(tmp_path):
    out = tmp_path / "shift"
    assert main(["experiment", "shift", "--fields", "logistic", "--output", str(out), *ARGS]) == 0
    for name in ("shift_rows.csv", "shift_rows.md", "shift_summary.csv", "shift_summary.md", "summary.md", "shift.png", "shift.pdf"):
        assert (out / name).stat().st_size > 0, name
    rows = _read(out / "shift_summary.csv")
    assert {r["region"] for r in rows} == set(REGIONS)
    assert "violations" in (out / "summary.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--fields", "spiral"], "--fields"),
        (["--bounds", "magic"], "--bounds"),
        (["--models", "forest"], "--models"),
        (["--n-cal", "20"], "--n-cal"),
        (["--alpha", "1.5"], "--alpha"),
        (["--n-neighbors", "5000"], "--n-neighbors"),
    ],
)
def test_bad_options_one_line_error(tmp_path, capsys, extra, needle):
    rc = main(["experiment", "shift", "--output", str(tmp_path / "o"), *ARGS, *extra])
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()
