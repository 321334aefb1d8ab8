"""Restating L / γ after scaling, and the demo command end to end."""

import csv

import numpy as np
import pytest
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from nwbound import restate_lipschitz, restate_margin
from nwbound.cli.main import main


def test_restated_lipschitz_bounds_slopes_in_scaled_units():
    rng = np.random.default_rng(0)
    X = rng.uniform([-10, 0], [10, 2], size=(500, 2))
    w = np.array([0.6, 0.8])
    L = 0.15
    p = lambda Z: 1 / (1 + np.exp(-4 * L * (Z @ w)))  # noqa: E731  L-Lipschitz in raw units
    for scaler in (MinMaxScaler().fit(X), StandardScaler().fit(X)):
        L_scaled = restate_lipschitz(L, scaler)
        A, B = rng.uniform([-10, 0], [10, 2], size=(2, 4000, 2))
        slopes = np.abs(p(A) - p(B)) / np.linalg.norm(scaler.transform(A) - scaler.transform(B), axis=1)
        assert slopes.max() <= L_scaled + 1e-12
    assert restate_lipschitz(0.15, MinMaxScaler().fit([[-10, -10], [10, 10]])) == pytest.approx(3.0)


def test_restated_margin_is_valid_in_scaled_units():
    rng = np.random.default_rng(1)
    X = rng.uniform([-5, -50], [5, 50], size=(400, 2))
    scaler = MinMaxScaler().fit(X)
    gamma = 3.0
    A, B = X[:200], X[200:]
    raw = np.linalg.norm(A - B, axis=1)
    keep = raw >= gamma  # pairs that satisfy the raw margin
    scaled = np.linalg.norm(scaler.transform(A) - scaler.transform(B), axis=1)
    assert np.all(scaled[keep] >= restate_margin(gamma, scaler) - 1e-12)


def test_restate_rejects_unusable_scales():
    class Opaque:
        def transform(self, X):
            return X

    with pytest.raises(ValueError, match="finite and > 0"):
        restate_lipschitz(1.0, np.array([1.0, 0.0]))
    with pytest.raises(TypeError, match="Cannot read per-feature scales from Opaque"):
        restate_lipschitz(1.0, Opaque())
    with pytest.raises(ValueError, match="lipschitz must be"):
        restate_lipschitz(-1.0, MinMaxScaler().fit([[0.0], [1.0]]))


def test_demo_runs_prints_coverage_and_refuses_to_clobber(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--output", str(out), "--n-train", "3000", "--n-queries", "300"]) == 0
    printed = capsys.readouterr().out
    assert "violation rate" in printed and "p̂1" in printed
    for name in ("predictions.csv", "predictions.md", "coverage.csv", "summary.md", "demo_intervals.png"):
        assert (out / name).is_file()
    with open(out / "coverage.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    by = {(r["setting"].split(",")[0], r["bound"]): r for r in rows}
    ours, paper = by[("ours", "hoeffding")], by[("paper: σ = 1/4", "paper")]
    assert float(ours["violation rate"]) <= 0.05  # our bound with the true L
    assert float(by[("ours", "chernoff")]["violation rate"]) <= 0.05
    assert float(ours["mean ε"]) > float(paper["mean ε"])  # the paper's (invalid) one is narrower
    assert "certified share" in printed and "chernoff" in printed
    user_file = out / "my-notes.txt"
    user_file.write_text("keep me")
    assert main(["demo", "--output", str(out), "--n-train", "3000", "--n-queries", "300"]) == 2
    assert "already holds files" in capsys.readouterr().err
    assert main(["demo", "--output", str(out), "--overwrite", "--n-train", "3000", "--n-queries", "300", "--no-figure"]) == 0
    assert user_file.read_text() == "keep me"


def test_demo_bad_arguments_exit_nonzero(tmp_path, capsys):
    assert main(["demo", "--output", str(tmp_path / "x"), "--n-train", "1"]) == 2
    assert "--n-train" in capsys.readouterr().err
    target = tmp_path / "file"
    target.write_text("not a folder")
    assert main(["demo", "--output", str(target)]) == 2


def test_demo_numbers_match_a_restatement(tmp_path):
    """Coverage columns recomputed query by query from the returned intervals and the true p."""
    import math

    from nwbound.datasets import make_lipschitz_logistic
    from nwbound.experiments.demo import run_demo

    res = run_demo(tmp_path / "d", n_train=1500, n_queries=120, delta=0.1, random_state=3, make_figure=False)
    train = make_lipschitz_logistic(1500, lipschitz=0.15, scale="box", random_state=3)
    rng = np.random.default_rng(4)
    X = rng.random((120, 2))
    p1 = train.true_proba(X)[:, 1]
    assert len(res.coverage) == len(res.intervals) == 4
    for row, (name, iv) in zip(res.coverage, res.intervals.items()):
        assert name.startswith(row["setting"])
        outside = certified = error_upper = width = 0.0
        for i in range(120):
            lo, hi = iv.lower[i], iv.upper[i]
            outside += not (lo[1] <= p1[i] <= hi[1])
            top = int(np.argmax(iv.proba[i]))
            certified += bool(lo[top] > hi[1 - top]) and not iv.vacuous[i]
            error_upper += 1.0 - lo[top]
            width += hi[1] - lo[1]
        assert math.isclose(row["violation rate"], outside / 120)
        assert math.isclose(row["certified share"], certified / 120)
        assert math.isclose(row["mean error_upper"], error_upper / 120, rel_tol=1e-9)
        assert math.isclose(row["mean width"], width / 120, rel_tol=1e-9)
    assert res.files[-1].name == "summary.md"
    sample = res.table[0]
    assert sample["certified"] in (True, False) and 0.0 <= sample["error_upper"] <= 1.0


def test_demo_summary_never_outlives_a_failed_run(tmp_path, monkeypatch):
    from nwbound.experiments import demo

    out = tmp_path / "d"
    demo.run_demo(out, n_train=300, n_queries=20, make_figure=False)
    assert (out / "summary.md").is_file()

    def broken(*args, **kwargs):
        raise RuntimeError("figure failed")

    monkeypatch.setattr(demo, "_figure", broken)
    with pytest.raises(RuntimeError):
        demo.run_demo(out, n_train=300, n_queries=20, overwrite=True)
    assert not (out / "summary.md").exists()  # the old summary is gone, no new one was written
