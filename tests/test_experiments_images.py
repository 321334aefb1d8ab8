"""The mnist, gtsrb and ablation experiments through the command line (``--quick``).

The real-data runs read /work/shared/data (``<clone>/../shared/data`` in CI) and
are skipped cleanly when it is absent; the bad-input tests build their own files.
"""

from __future__ import annotations

import csv
import gzip
import struct
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from nwbound.cli.main import main  # noqa: E402
from nwbound.experiments import EXPERIMENTS  # noqa: E402
from nwbound.experiments.ablation import objective, tune_bandwidth  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
MNIST = DATA / "mnist"
GTSRB = DATA / "gtsrb"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

needs_mnist = pytest.mark.skipif(not (MNIST / "t10k-labels-idx1-ubyte.gz").is_file()
                                 and not (MNIST / "t10k-labels-idx1-ubyte").is_file(),
                                 reason=f"MNIST not found in {MNIST}")
needs_gtsrb = pytest.mark.skipif(not GTSRB.is_dir(), reason=f"GTSRB not found in {GTSRB}")


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _assert_png(path: Path) -> None:
    assert path.is_file() and path.read_bytes()[:8] == PNG_MAGIC


def test_registered():
    for name in ("mnist", "gtsrb", "ablation"):
        assert name in EXPERIMENTS


# ---------------------------------------------------------------------------
# quick runs on the real data
# ---------------------------------------------------------------------------


@pytest.mark.data
@needs_mnist
def test_mnist_quick(tmp_path):
    out = tmp_path / "mnist"
    assert main(["experiment", "mnist", "--data-dir", str(MNIST), "--quick", "--output", str(out), "--quiet"]) == 0
    for stem in ("mnist_vs_n", "mnist_table", "choosing_L", "sensitivity_L"):
        assert (out / f"{stem}.csv").is_file() and (out / f"{stem}.md").is_file()
    _assert_png(out / "mnist_vs_n.png")
    _assert_png(out / "mnist_digits.png")
    assert "MNIST" in (out / "summary.md").read_text(encoding="utf-8")

    vs_n = _rows(out / "mnist_vs_n.csv")
    assert {(r["setting"], int(r["n_train"])) for r in vs_n} == {(s, n) for s in ("paper", "ours") for n in (1000, 2000)}
    by = {(r["setting"], int(r["n_train"])): r for r in vs_n}
    for n in (1000, 2000):
        paper, ours = by[("paper", n)], by[("ours", n)]
        assert int(paper["n_test"]) == 1000
        # Same λ and kernel: the two settings share p̂, only ε differs.
        assert float(paper["accuracy"]) == float(ours["accuracy"])
        assert 0.7 < float(ours["accuracy"]) < 1.0  # 1-NN-like methods reach 0.8–0.9 at this size
        for r in (paper, ours):
            assert 0.0 < float(r["mean_bound"]) <= 1.0
    table = _rows(out / "mnist_table.csv")
    assert table[0]["reference"].startswith("> 0.92")
    assert len(table) == 5 and all(0.0 < float(r["accuracy"]) <= 1.0 for r in table[1:])
    sens = _rows(out / "sensitivity_L.csv")
    Ls = [float(r["lipschitz"]) for r in sens]
    eps = [float(r["mean_epsilon"]) for r in sens]
    assert Ls == sorted(Ls) and 0.03 in Ls
    assert eps == sorted(eps)  # a larger L can only widen the bias term
    choosing = {r["quantity"].split(" (")[0]: r for r in _rows(out / "choosing_L.csv")}
    assert choosing["overlap test"]["value"] == "overlapping"  # the paper's own finding for MNIST


@pytest.mark.data
@needs_gtsrb
def test_gtsrb_quick(tmp_path):
    out = tmp_path / "gtsrb"
    assert main(["experiment", "gtsrb", "--data-dir", str(GTSRB), "--quick", "--output", str(out), "--quiet"]) == 0
    _assert_png(out / "gtsrb_confusion.png")
    _assert_png(out / "gtsrb_examples.png")
    rows = {r["method"]: r for r in _rows(out / "gtsrb_results.csv")}
    assert set(rows) == {"regular (paper)", "regular (ours)", "localized (paper)", "localized (ours)",
                         "regular_auto (ours)"}
    for r in rows.values():
        assert int(r["n_test"]) == 420  # 150 + 270 test images of classes 6 and 14 (MANIFEST)
        # Better than always answering "stop" (270 / 420).
        assert 270 / 420 < float(r["accuracy"]) <= 1.0
        assert 0.0 < float(r["mean_bound"]) <= 1.0
    assert rows["regular (paper)"]["accuracy"] == rows["regular (ours)"]["accuracy"]
    assert rows["localized (paper)"]["accuracy"] == rows["localized (ours)"]["accuracy"]


@pytest.mark.data
@needs_mnist
def test_ablation_quick_unconverged_is_reported(tmp_path):
    out = tmp_path / "ablation"
    argv = ["experiment", "ablation", "--data-dir", str(MNIST), "--quick", "--output", str(out), "--quiet",
            "--kernels", "epanechnikov,gaussian_untruncated", "--maxiter", "1"]
    assert main(argv) == 0
    _assert_png(out / "ablation_kernels.png")
    _assert_png(out / "ablation_kernel_matrix.png")
    rows = {r["kernel"]: r for r in _rows(out / "ablation_kernels.csv")}
    assert set(rows) == {"epanechnikov", "gaussian_untruncated"}
    trace = _rows(out / "ablation_trace.csv")
    for kernel, r in rows.items():
        assert r["converged"] == "False" and "iterations" in r["optimiser_message"]
        J = [float(t["J"]) for t in trace if t["kernel"] == kernel]
        # The best evaluated point is kept, and it is at least the baseline.
        assert float(r["J_powell"]) == pytest.approx(max(J))
        assert float(r["J_powell"]) >= float(r["J_baseline"])
        assert float(r["J_powell"]) == pytest.approx(objective(float(r["A_powell"]), float(r["B_powell"]), 0.95))
        assert 1.0 <= float(r["λ_powell"]) <= 50.0
    assert "Not converged" in (out / "summary.md").read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.data
@needs_mnist
def test_ablation_quick_all_kernels(tmp_path):
    out = tmp_path / "ablation"
    assert main(["experiment", "ablation", "--data-dir", str(MNIST), "--quick", "--output", str(out), "--quiet"]) == 0
    rows = _rows(out / "ablation_kernels.csv")
    assert [r["kernel"] for r in rows] == ["boxcar", "gaussian_untruncated", "epanechnikov", "quartic",
                                           "triweight", "tricube", "cosine"]
    for r in rows:
        assert float(r["J_powell"]) >= float(r["J_baseline"])
        assert float(r["J_auto"]) <= 0.95  # J ≤ r·A ≤ r


# ---------------------------------------------------------------------------
# the tuner without data files
# ---------------------------------------------------------------------------


def test_tune_bandwidth_unconverged_keeps_best_point():
    from nwbound.datasets import make_lipschitz_logistic

    d = make_lipschitz_logistic(600, random_state=0)
    X, y, Xv, yv = d.X[:400], d.y[:400], d.X[400:], d.y[400:]
    res = tune_bandwidth("epanechnikov", X, y, Xv, yv, lipschitz=d.lipschitz, x0=0.2, bounds=(0.02, 2.0),
                         maxiter=1)
    assert not res.converged and res.message
    assert res.J == max(t["J"] for t in res.trace)
    assert res.n_evaluations == len(res.trace) >= 2
    assert any(t["bandwidth"] == pytest.approx(0.2) for t in res.trace)  # the baseline is evaluated
    assert 0.02 <= res.bandwidth <= 2.0
    assert res.J == pytest.approx(objective(res.accuracy, res.mean_bound))
    capped = tune_bandwidth("epanechnikov", X, y, Xv, yv, lipschitz=d.lipschitz, x0=0.2, bounds=(0.02, 2.0),
                            maxiter=50, maxfev=3)
    assert capped.n_evaluations <= 4 and not capped.converged  # the cap ends the search
    with pytest.raises(ValueError, match="x0"):
        tune_bandwidth("epanechnikov", X, y, Xv, yv, x0=5.0, bounds=(0.02, 2.0))
    with pytest.raises(ValueError, match="maxiter"):
        tune_bandwidth("epanechnikov", X, y, Xv, yv, x0=0.2, bounds=(0.02, 2.0), maxiter=0)


# ---------------------------------------------------------------------------
# bad input → one-line error, exit code 2
# ---------------------------------------------------------------------------


def _write_idx(folder: Path, n_images: int, n_labels: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for prefix in ("train", "t10k"):
        images = struct.pack(">iiii", 2051, n_images, 28, 28) + bytes(n_images * 784)
        labels = struct.pack(">ii", 2049, n_labels) + bytes(i % 10 for i in range(n_labels))
        (folder / f"{prefix}-images-idx3-ubyte.gz").write_bytes(gzip.compress(images))
        (folder / f"{prefix}-labels-idx1-ubyte.gz").write_bytes(gzip.compress(labels))


def _one_line_error(capsys, needle: str) -> None:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert err.startswith("nwbound experiment: error:")
    assert needle in err


@pytest.mark.parametrize("name", ["mnist", "ablation"])
def test_missing_mnist_files(tmp_path, capsys, name):
    (tmp_path / "empty").mkdir()
    code = main(["experiment", name, "--data-dir", str(tmp_path / "empty"), "--quick",
                 "--output", str(tmp_path / "out"), "--quiet"])
    assert code == 2
    _one_line_error(capsys, "MNIST")


def test_mismatched_mnist_files(tmp_path, capsys):
    _write_idx(tmp_path / "idx", n_images=30, n_labels=29)
    code = main(["experiment", "mnist", "--data-dir", str(tmp_path / "idx"), "--quick",
                 "--output", str(tmp_path / "out"), "--quiet"])
    assert code == 2
    _one_line_error(capsys, "mismatch")


def test_data_dir_is_a_file(tmp_path, capsys):
    f = tmp_path / "file.txt"
    f.write_text("not a folder")
    assert main(["experiment", "gtsrb", "--data-dir", str(f), "--output", str(tmp_path / "out"), "--quiet"]) == 2
    _one_line_error(capsys, "GTSRB")


def test_missing_gtsrb(tmp_path, capsys):
    assert main(["experiment", "gtsrb", "--data-dir", str(tmp_path / "nope"), "--output",
                 str(tmp_path / "out"), "--quiet"]) == 2
    _one_line_error(capsys, "GTSRB")


def test_bad_options(tmp_path, capsys):
    assert main(["experiment", "ablation", "--data-dir", str(tmp_path), "--kernels", "gauss",
                 "--output", str(tmp_path / "out"), "--quiet"]) == 2
    _one_line_error(capsys, "--kernels")
    assert main(["experiment", "mnist", "--data-dir", str(tmp_path), "--sizes", "1000,70000",
                 "--output", str(tmp_path / "out2"), "--quiet"]) == 2
    _one_line_error(capsys, "60 000")


# ---------------------------------------------------------------------------
# steps recorded as they finish, --resume, summary last
# ---------------------------------------------------------------------------


@pytest.mark.data
@needs_mnist
def test_mnist_killed_run_resumes_without_recomputing(tmp_path, monkeypatch):
    import json
    import stat

    from nwbound.experiments import mnist

    out = tmp_path / "mnist"
    argv = ["experiment", "mnist", "--data-dir", str(MNIST), "--quick", "--sizes", "100,200", "--n-test", "100",
            "--output", str(out), "--quiet"]

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(mnist, "_choosing_lipschitz", killed)  # killed during the last step
        assert main(argv) == 130
    assert not (out / "summary.md").exists()  # no summary for a run that did not finish
    record = json.loads((out / "steps.json").read_text())
    assert list(record["steps"]) == ["n=100", "n=200", "tables and curves"]
    assert (out / "mnist_vs_n.csv").is_file() and not (out / "choosing_L.csv").exists()
    assert main(argv) == 2  # a folder with results needs --resume or --overwrite

    calls = []
    real = mnist.fit_and_query
    monkeypatch.setattr(mnist, "fit_and_query", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert main(argv + ["--resume"]) == 0
    assert calls == []  # every fitted size was reused
    assert (out / "choosing_L.csv").is_file() and "Choosing L" in (out / "summary.md").read_text()
    for f in out.iterdir():  # tables, figures, record and summary alike
        assert stat.S_IMODE(f.stat().st_mode) == 0o644, f
    rows = _rows(out / "mnist_table.csv")
    ours = next(r for r in rows if r["setting"].startswith("ours: band-Chernoff"))  # the default form
    # The certificate and the review queues are reported per setting.
    assert 0.0 <= float(ours["certified_share"]) <= 1.0
    for score in ("1-max p", "error_upper", "ε"):
        assert 0.0 <= float(ours[f"caught@10% {score}"]) <= 1.0
    review = _rows(out / "mnist_review.csv")
    assert {r["queue"] for r in review} >= {"certificate", "1 - max p @ 10%", "error_upper @ 10%", "epsilon @ 10%"}

    assert main(argv + ["--resume", "--lipschitz", "0.05"]) == 0  # other parameters: everything reruns
    assert len(calls) == 2 * 2 + 2
