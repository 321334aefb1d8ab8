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
    assert float(rows[0]["violation rate"]) <= 0.05  # our bound with the true L
    assert float(rows[0]["mean ε"]) > float(rows[2]["mean ε"])  # the paper's (invalid) one is narrower
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
