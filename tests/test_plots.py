"""Tests for nwbound.plots: the artists hold the numbers computed by nwbound.metrics."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from nwbound import metrics as M  # noqa: E402
from nwbound import plots as P  # noqa: E402
from nwbound._result import PredictionInterval  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    n, c = 120, 3
    proba = rng.dirichlet(np.full(c, 0.6), size=n)
    eps = rng.uniform(0.0, 0.5, size=(n, c))
    vac = rng.random(n) < 0.05
    iv = PredictionInterval.from_parts(
        proba=proba,
        bias=eps,
        sampling=np.zeros_like(eps),
        kappa=np.where(vac, 0.0, 1.0),
        n_eff=np.ones(n),
        vacuous=vac,
        bandwidth=np.ones(n),
    )
    classes = np.array(["N", "S", "V"])
    y_idx = np.where(rng.random(n) < 0.7, np.argmax(proba, axis=1), rng.integers(0, c, n))
    return classes, iv, classes[y_idx]


def test_reliability_display_bars_equal_table(data):
    classes, iv, y = data
    disp = P.ReliabilityDisplay.from_interval(y, iv, classes=classes, n_bins=8)
    ece, table = M.expected_calibration_error(y, iv.proba, classes, n_bins=8)
    keep = table.count > 0
    heights = [r.get_height() for r in disp.bars_.patches]
    xs = [r.get_x() + r.get_width() / 2 for r in disp.bars_.patches]
    np.testing.assert_allclose(heights, table.accuracy[keep])
    np.testing.assert_allclose(xs, ((table.bin_lower + table.bin_upper) / 2)[keep])
    assert disp.ece == pytest.approx(ece)
    assert f"{100 * ece:.1f}" in disp.text_.get_text()
    assert disp.figure_ is disp.ax_.figure


def test_reliability_display_replot_on_given_ax(data):
    classes, iv, y = data
    disp = P.ReliabilityDisplay.from_arrays(y, iv.proba, classes=classes)
    fig, ax = plt.subplots()
    assert disp.plot(ax=ax) is disp
    assert disp.ax_ is ax and disp.figure_ is fig
    with pytest.raises(TypeError, match="ax"):
        disp.plot(ax="not an axes")


def test_cumulative_recall_display_several_curves(data):
    classes, iv, y = data
    disp = P.CumulativeRecallDisplay.from_interval(
        y, {"width": iv, "same again": iv}, classes=classes
    )
    frac, rec = M.cumulative_recall_curve(
        y, classes[np.argmax(iv.proba, axis=1)], M.uncertainty_from_interval(iv)
    )
    assert len(disp.lines_) == 2
    for line in disp.lines_:
        np.testing.assert_allclose(line.get_xdata(), frac)
        np.testing.assert_allclose(line.get_ydata(), rec)
    assert [line.get_label() for line in disp.lines_] == ["width", "same again"]
    assert disp.random_line_ is not None


def test_cumulative_recall_display_from_arrays_lists(data):
    classes, iv, y = data
    pred = classes[np.argmax(iv.proba, axis=1)]
    u1 = M.uncertainty_from_interval(iv, "width")
    u2 = M.uncertainty_from_interval(iv, "max_proba")
    disp = P.CumulativeRecallDisplay.from_arrays(y, pred, [u1, u2], label=["2ε", "1 − max p̂"])
    np.testing.assert_allclose(
        disp.lines_[1].get_ydata(), M.cumulative_recall_curve(y, pred, u2)[1]
    )
    with pytest.raises(ValueError, match="label"):
        P.CumulativeRecallDisplay.from_arrays(y, pred, [u1, u2], label="one")
    with pytest.raises(ValueError, match="y_pred"):
        P.CumulativeRecallDisplay.from_arrays(y, [pred, pred, pred], [u1, u2])


def test_interval_display_errorbars_and_marks(data):
    classes, iv, y = data
    idx = [3, 10, 42]
    disp = P.IntervalDisplay.from_interval(iv, y, classes=classes, indices=idx)
    assert len(disp.errorbars_) == 3 and len(disp.axes_) == 3
    for k, i in enumerate(idx):
        line = disp.errorbars_[k].lines[0]
        np.testing.assert_allclose(line.get_ydata(), iv.proba[i])
        # the vertical error segments span lower .. upper of each class
        segs = disp.errorbars_[k].lines[2][0].get_segments()
        np.testing.assert_allclose([s[0][1] for s in segs], iv.lower[i])
        np.testing.assert_allclose([s[1][1] for s in segs], iv.upper[i])
        texts = {t.get_text(): t.get_position()[0] for t in disp.marks_[k]}
        true_col = int(np.flatnonzero(classes == y[i])[0])
        pred_col = int(np.argmax(iv.proba[i]))
        if true_col == pred_col:
            assert texts == {"TP": true_col}
        else:
            assert texts == {"T": true_col, "P": pred_col}
    with pytest.raises(ValueError, match="indices"):
        P.IntervalDisplay.from_interval(iv, y, classes=classes, indices=[500])
    # max_queries=0 failed deep in the layout with a ZeroDivisionError.
    for bad in (0, -2):
        with pytest.raises(ValueError, match="max_queries"):
            P.IntervalDisplay.from_interval(iv, y, classes=classes, max_queries=bad)


def test_interval_display_on_given_axes(data):
    classes, iv, _ = data
    fig, axes = plt.subplots(1, 2)
    disp = P.IntervalDisplay.from_interval(iv, indices=[0, 1], ax=axes)
    assert disp.figure_ is fig
    assert all(t.get_text() == "P" for marks in disp.marks_ for t in marks)  # no y_true
    with pytest.raises(ValueError, match="Axes"):
        disp.plot(ax=axes[:1])


def test_bound_width_display_lines_equal_table(data):
    classes, iv, y = data
    disp = P.BoundWidthDisplay.from_interval(y, iv, classes=classes, n_bins=5)
    table = M.bound_width_by_confidence(y, iv, classes, n_bins=5)
    for key, cnt, width in (
        ("correct", table.count_correct, table.width_correct),
        ("incorrect", table.count_incorrect, table.width_incorrect),
    ):
        keep = cnt > 0
        np.testing.assert_allclose(disp.lines_[key].get_xdata(), table.bin_center[keep])
        np.testing.assert_allclose(disp.lines_[key].get_ydata(), width[keep])


def test_bound_width_display_from_arrays(data):
    classes, iv, y = data
    nonvac = ~iv.vacuous
    disp = P.BoundWidthDisplay.from_arrays(
        y[nonvac], iv.proba[nonvac], iv.epsilon[nonvac], classes=classes, n_bins=5
    )
    ref = P.BoundWidthDisplay.from_interval(
        y[nonvac],
        PredictionInterval(
            **{k: v[nonvac] for k, v in iv.as_dict().items() if v is not None}
        ),
        classes=classes,
        n_bins=5,
    )
    np.testing.assert_allclose(
        disp.lines_["correct"].get_ydata(), ref.lines_["correct"].get_ydata()
    )
    with pytest.raises(ValueError, match="epsilon"):
        P.BoundWidthDisplay.from_arrays(y, iv.proba, iv.epsilon[:, :2], classes=classes)


def test_type_error_display_bars_and_percentages(data):
    classes, iv, y = data
    disp = P.TypeErrorDisplay.from_interval(y, iv, classes=classes)
    t = M.type_errors(y, iv, classes)
    np.testing.assert_array_equal([r.get_height() for r in disp.bars_["type_i"]], t.type_i)
    np.testing.assert_array_equal([r.get_height() for r in disp.bars_["type_ii"]], t.type_ii)
    expected = [f"{100 * c / len(y):.1f}%" for c in t.type_ii]
    assert [tx.get_text() for tx in disp.texts_["type_ii"]] == expected
    assert [tick.get_text() for tick in disp.ax_.get_xticklabels()] == list(classes)


def test_confusion_matrix_display_is_sklearns():
    from sklearn.metrics import ConfusionMatrixDisplay

    assert P.ConfusionMatrixDisplay is ConfusionMatrixDisplay
    disp = P.ConfusionMatrixDisplay.from_predictions([0, 1, 1], [0, 1, 0])
    np.testing.assert_array_equal(disp.confusion_matrix, [[1, 0], [1, 1]])


# --------------------------------------------------------------------------
# save_figure
# --------------------------------------------------------------------------
def test_save_figure_writes_png_and_pdf_and_refuses_overwrite(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    base = tmp_path / "sub" / "fig"
    paths = P.save_figure(fig, base)
    assert paths == [tmp_path / "sub" / "fig.png", tmp_path / "sub" / "fig.pdf"]
    assert paths[0].read_bytes().startswith(b"\x89PNG")
    assert paths[1].read_bytes().startswith(b"%PDF")
    before = [p.read_bytes() for p in paths]
    with pytest.raises(FileExistsError, match="overwrite"):
        P.save_figure(fig, base)
    assert [p.read_bytes() for p in paths] == before
    # no temporary files left behind
    assert sorted(os.listdir(base.parent)) == ["fig.pdf", "fig.png"]
    ax.plot([0, 1], [1, 0])
    P.save_figure(fig, base, overwrite=True)
    assert paths[0].read_bytes() != before[0]


def test_save_figure_checks_all_targets_first(tmp_path):
    fig, _ = plt.subplots()
    (tmp_path / "fig.pdf").write_bytes(b"user data")
    with pytest.raises(FileExistsError):
        P.save_figure(fig, tmp_path / "fig")
    assert not (tmp_path / "fig.png").exists()  # nothing written
    assert (tmp_path / "fig.pdf").read_bytes() == b"user data"


def test_save_figure_bad_arguments(tmp_path):
    fig, _ = plt.subplots()
    with pytest.raises(ValueError, match="without"):
        P.save_figure(fig, tmp_path / "fig.png")
    with pytest.raises(ValueError, match="formats"):
        P.save_figure(fig, tmp_path / "fig", formats=())
    with pytest.raises(TypeError, match="fig"):
        P.save_figure("nope", tmp_path / "fig")
    assert P.save_figure(fig, tmp_path / "one", formats="svg") == [tmp_path / "one.svg"]


def test_missing_matplotlib_gives_install_hint(monkeypatch, data):
    classes, iv, y = data
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install -e \"\.\[plots\]\""):
        P.ReliabilityDisplay.from_interval(y, iv, classes=classes)


def test_import_does_not_load_matplotlib():
    src = Path(__file__).resolve().parents[1] / "src"
    code = "import sys, nwbound.plots; sys.exit('matplotlib' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(src)}
    assert subprocess.run([sys.executable, "-c", code], env=env).returncode == 0


def test_public_pyplot_accessor_and_old_alias():
    from nwbound.plots import _base

    assert P.pyplot() is plt
    assert _base._pyplot is P.pyplot  # kept until every caller uses the public name
    assert "pyplot" in P.__all__
