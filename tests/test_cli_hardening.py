"""Regression tests for the CLI and table-I/O hardening (issue 14, issue 10 CLI items).

Each test pins one finding: labels merged by the integer parse, formula
injection in prediction CSVs, temporary files left by a failed write, slow
``--help``, id columns dropped, argparse swallowing TRAIN, CLI/Python default
drift, ``--lipschitz auto``, one usefulness warning per run, flat figures.
"""

from __future__ import annotations

import re

import argparse
import csv
import errno
import os
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from nwbound import NadarayaWatsonClassifier  # noqa: E402
from nwbound.cli import fit as fit_cli  # noqa: E402
from nwbound.cli.main import COMMANDS, build_parser, main  # noqa: E402
from nwbound.cli.predict import resolve_id_columns  # noqa: E402
from nwbound.io import load_model  # noqa: E402
from nwbound.io.tables import (  # noqa: E402
    TableError,
    TableWriter,
    escape_spreadsheet_cells,
    labels_like,
    normalize_labels,
    stale_temporaries,
)

ROOT = Path(__file__).resolve().parents[1]


def _run(argv, capsys):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _frame(n: int, seed: int, labels=("a", "b")) -> "pd.DataFrame":
    rng = np.random.default_rng(seed)
    x1 = rng.uniform(0, 1, n)
    x2 = rng.uniform(0, 1, n)
    y = np.where(x1 > 0.5, labels[1], labels[0]).astype(object)
    return pd.DataFrame({"pid": [f"{i:04d}" for i in range(n)], "x1": x1, "x2": x2, "label": y})


# ----------------------------------------------------------------------------------------------
# Labels kept exactly as given unless every value round-trips through the integer parse
# ----------------------------------------------------------------------------------------------
def _slow_normalize(values: list[str]) -> list:
    """Reference: ints only if str(int(v)) == v for every v, else the text unchanged."""
    def round_trips(v: str) -> bool:
        try:
            return str(int(v)) == v
        except ValueError:
            return False
    return [int(v) for v in values] if all(round_trips(v) for v in values) else list(values)


@pytest.mark.parametrize("values", [
    ["01", "1", "2"], ["0", "1", "2"], ["+1", "1"], ["-0", "0"], ["-3", "4"], ["1.0", "2"], ["a", "1"], ["007"],
])
def test_labels_round_trip_rule(values):
    assert normalize_labels(np.array(values)).tolist() == _slow_normalize(values)


def test_fit_keeps_01_1_2_as_three_classes(tmp_path, capsys):
    frame = _frame(300, 0)
    frame["label"] = np.array(["01", "1", "2"])[np.minimum((frame["x1"] * 3).astype(int), 2)]
    frame.to_csv(tmp_path / "t.csv", index=False)
    rc, _, err = _run(["fit", tmp_path / "t.csv", "--target", "label", "--id-columns", "pid", "--lipschitz", "1",
                       "--bandwidth", "0.1", "-o", tmp_path / "m.npz", "--quiet"], capsys)
    assert rc == 0, err
    assert load_model(tmp_path / "m.npz").classes_.tolist() == ["01", "1", "2"]


def test_int_model_refuses_non_round_trip_label(tmp_path):
    with pytest.raises(TableError, match=r"never saw.*'01'"):
        labels_like(np.array(["1", "01"]), np.array([0, 1, 2]), column="y", path=tmp_path / "t.csv")
    assert labels_like(np.array(["1", "2"]), np.array([0, 1, 2]), column="y", path="t.csv").tolist() == [1, 2]


# ----------------------------------------------------------------------------------------------
# Spreadsheet-safe CSV
# ----------------------------------------------------------------------------------------------
DANGEROUS = ["=1+1", "+SUM(A1)", "-2+3", "@cmd", "\tx", "\rx", "=HYPERLINK(\"http://x\")"]
HARMLESS = ["-2.5", "+3", "-1e-3", "plain", "", "a=b", "0-1"]


def _plain_number(cell: str) -> bool:
    """Reference, scanned by hand: [sign] digits [. digits] | [sign] . digits, then [e [sign] digits]."""
    i, n = 0, len(cell)
    if i < n and cell[i] in "+-":
        i += 1
    digits = 0
    while i < n and cell[i] in "0123456789":
        i, digits = i + 1, digits + 1
    if i < n and cell[i] == ".":
        i += 1
        while i < n and cell[i] in "0123456789":
            i, digits = i + 1, digits + 1
    if digits == 0:
        return False
    if i < n and cell[i] in "eE":
        i += 1
        if i < n and cell[i] in "+-":
            i += 1
        exp = 0
        while i < n and cell[i] in "0123456789":
            i, exp = i + 1, exp + 1
        if exp == 0:
            return False
    return i == n


def _slow_escape(cell: str) -> str:
    """Reference rule: quote cells starting with = + - @ tab CR unless they are a plain number."""
    if cell[:1] in ("=", "+", "-", "@", "\t", "\r") and not _plain_number(cell):
        return "'" + cell
    return cell


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.text(alphabet=list("=+-@\t\r0123456789.eE_a "), max_size=8), min_size=1, max_size=20))
def test_escape_property(cells):
    out = escape_spreadsheet_cells(pd.DataFrame({"id": cells}))
    assert out["id"].tolist() == [_slow_escape(c) for c in cells]


def test_escape_matches_reference_and_leaves_numbers_alone():
    frame = pd.DataFrame({"id": DANGEROUS + HARMLESS, "x": -np.arange(len(DANGEROUS + HARMLESS), dtype=float)})
    out = escape_spreadsheet_cells(frame)
    assert out["id"].tolist() == [_slow_escape(c) for c in DANGEROUS + HARMLESS]
    assert out["x"].tolist() == frame["x"].tolist()  # numeric column: negative numbers untouched
    assert frame["id"].tolist() == DANGEROUS + HARMLESS  # input not modified
    renamed = escape_spreadsheet_cells(pd.DataFrame({"=evil": [1], "ok": [2]}))
    assert list(renamed.columns) == ["'=evil", "ok"]


def test_predict_csv_is_escaped_by_default_and_verbatim_on_request(tmp_path, capsys):
    train = _frame(200, 1, labels=("=bad", "ok"))
    train.to_csv(tmp_path / "train.csv", index=False)
    new = _frame(len(DANGEROUS + HARMLESS), 2)
    new["pid"] = DANGEROUS + HARMLESS
    # quoted, so that the bare CR of one id survives Python < 3.12's csv writer
    new.drop(columns="label").to_csv(tmp_path / "new.csv", index=False, quoting=csv.QUOTE_NONNUMERIC)
    rc, _, err = _run(["fit", tmp_path / "train.csv", "--target", "label", "--id-columns", "pid", "--lipschitz", "1",
                       "--bandwidth", "0.2", "-o", tmp_path / "m.npz", "--quiet"], capsys)
    assert rc == 0, err
    for flag, expect in (([], _slow_escape), (["--no-csv-escape"], lambda c: c)):
        out = tmp_path / f"p{len(flag)}.csv"
        rc, _, err = _run(["predict", tmp_path / "m.npz", tmp_path / "new.csv", "--id-columns", "pid", "-o", out,
                           "--quiet", *flag], capsys)
        assert rc == 0, err
        written = pd.read_csv(out, dtype=str, keep_default_na=False)
        assert written["pid"].tolist() == [expect(c) for c in DANGEROUS + HARMLESS]
        assert set(written["predicted"]) <= {expect("=bad"), "ok"}
        assert "proba_=bad" in written.columns  # header cells that do not start with a trigger stay as they are
        assert len(written) == len(DANGEROUS + HARMLESS)  # the CR inside an id did not split a row


# ----------------------------------------------------------------------------------------------
# Atomic writes always remove their temporary file
# ----------------------------------------------------------------------------------------------
class _FullDisk:
    """A file object whose close() fails like a full disk (flush → ENOSPC), every time."""

    def __init__(self, fh):
        self._fh = fh

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def close(self):
        self._fh.close()
        raise OSError(errno.ENOSPC, "No space left on device")


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".nwbound-" in p.name)


def test_disk_full_on_close_removes_temporary(tmp_path):
    target = tmp_path / "out.csv"
    writer = TableWriter(target)
    writer.write(pd.DataFrame({"a": [1, 2]}))
    writer._fh = _FullDisk(writer._fh)
    with pytest.raises(OSError, match="No space"):
        writer.close()
    assert _leftovers(tmp_path) == [] and not target.exists()


def test_error_while_writing_removes_temporary_even_if_close_fails(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    with pytest.raises(RuntimeError, match="boom"):
        with TableWriter(target, overwrite=True) as writer:
            writer.write(pd.DataFrame({"a": [1]}))
            writer._fh = _FullDisk(writer._fh)
            raise RuntimeError("boom")
    assert _leftovers(tmp_path) == [] and target.read_text() == "old\n"


def test_stale_temporaries_are_reported_not_deleted(tmp_path):
    target = tmp_path / "out.csv"
    stale = tmp_path / ".out.csv.nwbound-abc123.tmp"
    stale.write_text("partial")
    other = tmp_path / ".other.csv.nwbound-x.tmp"
    other.write_text("not ours")
    assert stale_temporaries(target) == [stale]
    with pytest.warns(UserWarning, match=r"interrupted write.*\.out\.csv\.nwbound-abc123\.tmp"):
        with TableWriter(target) as writer:
            writer.write(pd.DataFrame({"a": [1]}))
    assert stale.read_text() == "partial" and other.exists() and target.exists()
    assert _leftovers(tmp_path) == sorted([stale.name, other.name])


# ----------------------------------------------------------------------------------------------
# --help / --version import no command module
# ----------------------------------------------------------------------------------------------
def test_help_and_version_import_no_command_module():
    # What the CLI itself adds on top of `import nwbound` (the package's own imports are not the CLI's).
    code = (
        "import sys\n"
        "import nwbound.cli.main as cli\n"
        "before = set(sys.modules)\n"
        "for argv in (['--version'], ['--help']):\n"
        "    try:\n"
        "        cli.main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('ADDED', sorted(m for m in set(sys.modules) - before if m.startswith(('nwbound', 'matplotlib', 'pandas', 'sklearn', 'scipy'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert proc.returncode == 0, proc.stderr
    assert "ADDED []" in proc.stdout
    for name in COMMANDS:  # every command is still listed
        assert name in proc.stdout


def test_lazy_parser_still_parses_each_command():
    args = build_parser("predict").parse_args(["predict", "m.npz", "d.csv", "-o", "p.csv"])
    assert args.func.__module__ == "nwbound.cli.predict"


# ----------------------------------------------------------------------------------------------
# Column lists: one value per flag, repeatable, comma-separated; TRAIN never swallowed
# ----------------------------------------------------------------------------------------------
def _fit_args(argv):
    return build_parser("fit").parse_args(["fit", *argv])


def test_id_columns_before_train_is_accepted():
    args = _fit_args(["--id-columns", "patient", "train.csv", "--target", "y", "--lipschitz", "1", "-o", "m.npz"])
    assert args.train == "train.csv" and args.id_columns == ["patient"]
    args = _fit_args(["train.csv", "--id-columns", "a,b", "--id-columns", "c", "--features", "x1, x2",
                      "--target", "y", "--lipschitz", "1", "-o", "m.npz"])
    assert args.id_columns == ["a", "b", "c"] and args.features == ["x1", "x2"]


def test_empty_column_name_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        _fit_args(["t.csv", "--id-columns", "a,,b", "--target", "y", "--lipschitz", "1", "-o", "m.npz"])
    assert exc.value.code == 2 and "empty column name" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------
# predict keeps the model's id columns by default
# ----------------------------------------------------------------------------------------------
def test_default_id_columns_come_from_the_model(capsys, tmp_path):
    model = SimpleNamespace(id_columns=("pid", "visit"))
    assert resolve_id_columns(None, model, ["pid", "x1", "visit"], tmp_path / "t.csv", quiet=True) == ["pid", "visit"]
    assert resolve_id_columns(None, model, ["pid", "x1"], tmp_path / "t.csv", quiet=False) == ["pid"]
    assert "'visit'" in capsys.readouterr().err  # a missing id column is named, not silently dropped
    assert resolve_id_columns(["x1"], model, ["pid", "x1"], tmp_path / "t.csv", quiet=True) == ["x1"]
    with pytest.raises(TableError, match="no id column"):
        resolve_id_columns(["nope"], model, ["pid", "x1"], tmp_path / "t.csv", quiet=True)


def test_predict_end_to_end_keeps_fitted_id_columns(tmp_path, capsys):
    import inspect

    from nwbound.io import TableModel

    if "id_columns" not in inspect.signature(TableModel.fit).parameters:
        pytest.skip("TableModel does not record id columns yet (io/pipeline.py)")
    _frame(200, 3).to_csv(tmp_path / "t.csv", index=False)
    rc, _, err = _run(["fit", tmp_path / "t.csv", "--target", "label", "--id-columns", "pid", "--lipschitz", "1",
                       "--bandwidth", "0.2", "-o", tmp_path / "m.npz", "--quiet"], capsys)
    assert rc == 0, err
    rc, _, err = _run(["predict", tmp_path / "m.npz", tmp_path / "t.csv", "-o", tmp_path / "p.csv", "--quiet"], capsys)
    assert rc == 0, err
    assert pd.read_csv(tmp_path / "p.csv", dtype=str)["pid"].tolist() == [f"{i:04d}" for i in range(200)]


# ----------------------------------------------------------------------------------------------
# CLI defaults are the estimator's defaults; --lipschitz auto
# ----------------------------------------------------------------------------------------------
def test_cli_defaults_equal_python_defaults():
    args = _fit_args(["t.csv", "--target", "y", "--lipschitz", "1", "-o", "m.npz"])
    built = fit_cli.build_estimator(args).get_params()
    default = NadarayaWatsonClassifier().get_params()  # the library's defaults (bandwidth="auto")
    for name in ("kernel", "bandwidth", "delta", "bound", "coverage"):
        assert built[name] == default[name], name
    assert built["metric"] is None  # a numeric L is in raw feature units: the features as given
    default_space = fit_cli.build_estimator(_fit_args(["t.csv", "--target", "y", "-o", "m.npz"])).get_params()
    assert default_space["metric"] == default["metric"] == "auto"  # the space too (issue 32)
    args = _fit_args(["t.csv", "--target", "y", "--lipschitz", "1", "--bandwidth", "0.3", "--kernel", "boxcar", "-o", "m"])
    assert fit_cli.build_estimator(args).get_params()["bandwidth"] == 0.3


def test_lipschitz_auto_follows_the_estimator(tmp_path, capsys):
    from nwbound.io import FeatureScaler

    frame = _frame(400, 4)
    frame["x1"] *= 50.0  # raw units differ from the scaled ones
    frame.to_csv(tmp_path / "t.csv", index=False)
    rc, out, err = _run(["fit", tmp_path / "t.csv", "--target", "label", "--id-columns", "pid", "--scale", "minmax",
                         "--metric", "none", "--lipschitz", "auto", "--bandwidth", "0.2", "-o", tmp_path / "m.npz"], capsys)
    assert rc == 0, err
    X = frame[["x1", "x2"]].to_numpy()
    y = normalize_labels(frame["label"].to_numpy().astype(str))
    # The Python estimator's lipschitz="auto" on the scaled features: L from held-out rows only.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz="auto").fit(FeatureScaler.fit(X, "minmax").transform(X), y)
    model = load_model(tmp_path / "m.npz")
    # The file keeps lipschitz="auto" with the chosen L and its report.
    assert model.estimator.lipschitz == "auto" and model.estimator.lipschitz_ == pytest.approx(ref.lipschitz_, rel=1e-12)
    assert str(model.estimator.lipschitz_report_) == str(ref.lipschitz_report_)
    assert model.estimator.n_samples_fit_ == ref.n_samples_fit_ == 240  # 40 % held out of the kernel sums
    assert f"L = {ref.lipschitz_:.4g} chosen by --lipschitz auto" in out and "after minmax scaling" in out
    assert "not a certified fact" in out and "held-out rows" in out
    with pytest.raises(SystemExit):
        _fit_args(["t.csv", "--target", "y", "--lipschitz", "-1", "-o", "m"])


# ----------------------------------------------------------------------------------------------
# One usefulness report per run; no flat figure
# ----------------------------------------------------------------------------------------------
def test_useless_bounds_reported_once_with_cause(tmp_path, capsys):
    frame = _frame(300, 5)
    frame.to_csv(tmp_path / "t.csv", index=False)
    rc, _, err = _run(["fit", tmp_path / "t.csv", "--target", "label", "--id-columns", "pid", "--lipschitz", "500",
                       "--bandwidth", "0.3", "-o", tmp_path / "m.npz"], capsys)
    assert rc == 0 and "previewed out of sample" in err and "Cause:" in err
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no per-chunk library warning leaks out
        rc, out, err = _run(["predict", tmp_path / "m.npz", tmp_path / "t.csv", "-o", tmp_path / "p.csv",
                             "--chunksize", "25"], capsys)
    assert rc == 0, err
    assert err.count("warning: the bounds cannot help here") == 1
    share = re.search(r"([\d.]+)% of the rows have a trivial bound", err)
    assert share is not None and float(share.group(1)) >= 90.0 and "bias term" in err


def test_no_flat_errors_caught_figure_when_every_bound_is_trivial(tmp_path, capsys):
    _frame(300, 6).to_csv(tmp_path / "t.csv", index=False)
    rc, _, err = _run(["fit", tmp_path / "t.csv", "--target", "label", "--id-columns", "pid", "--lipschitz", "1e6",
                       "--bandwidth", "0.3", "-o", tmp_path / "m.npz", "--quiet"], capsys)
    assert rc == 0, err
    rc, out, err = _run(["evaluate", tmp_path / "m.npz", tmp_path / "t.csv", "--target", "label", "-o",
                         tmp_path / "ev", "--quiet"], capsys)
    assert rc == 0, err
    assert "errors_caught.png not drawn" in out and not (tmp_path / "ev" / "errors_caught.png").exists()
    assert (tmp_path / "ev" / "error_types.png").exists()


def test_evaluate_alpha_is_checked(tmp_path, capsys):
    _frame(100, 7).to_csv(tmp_path / "t.csv", index=False)
    rc, _, err = _run(["fit", tmp_path / "t.csv", "--target", "label", "--lipschitz", "1", "--bandwidth", "0.3",
                       "-o", tmp_path / "m.npz", "--quiet"], capsys)
    assert rc == 0, err
    rc, _, err = _run(["evaluate", tmp_path / "m.npz", tmp_path / "t.csv", "--target", "label", "--alpha", "1.5"], capsys)
    assert rc == 2 and "--alpha" in err and len(err.strip().splitlines()) == 1


# ----------------------------------------------------------------------------------------------
# make demo says what it does while building the environment
# ----------------------------------------------------------------------------------------------
def test_make_demo_announces_environment_build(tmp_path):
    if not (ROOT / "Makefile").exists() or subprocess.run(["make", "--version"], capture_output=True).returncode:
        pytest.skip("make not available")
    proc = subprocess.run(["make", "-n", "demo", f"VENV={tmp_path / 'venv'}"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "building a local virtual environment" in proc.stdout and "running the demo" in proc.stdout


def test_column_list_type_rejects_only_empty_names():
    from nwbound.cli.predict import column_list

    assert column_list("a") == ["a"]
    with pytest.raises(argparse.ArgumentTypeError):
        column_list(",")


def test_carriage_return_inside_a_cell_round_trips(tmp_path):
    frame = pd.DataFrame({"id": ["a\rb", "c"], "x": [1.5, -2.0]})
    for escape in (True, False):
        target = tmp_path / f"cr{escape}.csv"
        with TableWriter(target, csv_escape=escape) as writer:
            writer.write(frame)
            writer.write(frame.iloc[[1]])  # a later chunk without CR keeps minimal quoting
        back = pd.read_csv(target, dtype={"id": str})
        assert back["id"].tolist() == ["a\rb", "c", "c"] and back["x"].tolist() == [1.5, -2.0, -2.0]


def test_compare_rules_against_a_slow_recount():
    import math

    from nwbound import PredictionInterval
    from nwbound.cli.evaluate import compare_rules

    rng = np.random.default_rng(11)
    n = 600
    p1 = rng.uniform(size=n)
    proba = np.c_[1 - p1, p1]
    y = (rng.uniform(size=n) < p1).astype(int)
    eps = rng.uniform(0.05, 0.6, size=(n, 1)).repeat(2, axis=1)
    iv = PredictionInterval.from_parts(proba, eps * 0.5, eps * 0.5, np.ones(n), np.ones(n), np.zeros(n, bool), np.ones(n))
    rows, n_cal, n_test = compare_rules(y, iv, alpha=0.2, delta=0.1, seed=3)
    perm = np.random.default_rng(3).permutation(n)
    cal, test = sorted(perm[: n // 2]), sorted(perm[n // 2:])
    assert (n_cal, n_test) == (len(cal), len(test))

    def recount(review: dict) -> tuple[float, float, float]:
        wrong = {i for i in test if int(proba[i, 1] > proba[i, 0]) != y[i]}
        flagged = {i for i in test if review[i]}
        accepted = [i for i in test if not review[i]]
        return (100 * len(flagged) / len(test), 100 * len(wrong & flagged) / len(wrong),
                100 * sum(i in wrong for i in accepted) / len(accepted) if accepted else math.nan)

    # certificate: lower of the top class above the other's upper bound
    cert = {}
    for i in test:
        top = int(proba[i, 1] > proba[i, 0])
        lo = max(proba[i, top] - eps[i, top], 0.0)
        hi = min(proba[i, 1 - top] + eps[i, 1 - top], 1.0)
        cert[i] = not lo > hi
    by_rule = {r["rule"].split(" @")[0]: r for r in rows}
    got = by_rule["certificate"]
    np.testing.assert_allclose([got["review_pct"], got["errors_caught_pct"], got["error_accepted_pct"]], recount(cert))

    # split-conformal (LAC) by hand on the calibration half
    scores = sorted(1 - proba[i, y[i]] for i in cal)
    k = math.ceil((len(cal) + 1) * (1 - 0.2))
    q = scores[k - 1]
    conf = {i: sum(1 - proba[i, c] <= q for c in (0, 1)) != 1 for i in test}
    got = by_rule["conformal set size != 1"]
    np.testing.assert_allclose([got["review_pct"], got["errors_caught_pct"], got["error_accepted_pct"]], recount(conf))
    assert "calibrated threshold on 1 - max p" in by_rule
