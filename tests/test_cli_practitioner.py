"""`nwbound fit / predict / evaluate` end to end, and the bad-input table (CLI and library)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from nwbound.cli.main import main  # noqa: E402
from nwbound.io import TableModel, load_model  # noqa: E402
from nwbound.io.tables import TableError, feature_matrix, iter_table_chunks, label_array, labels_like, read_columns  # noqa: E402

SRC = Path(__file__).resolve().parents[1] / "src"


def _make_frame(n: int, seed: int) -> "pd.DataFrame":
    """Two classes split at x1 = 5 with a gap (margin) around it, 6 % label noise."""
    rng = np.random.default_rng(seed)
    x1 = np.concatenate([rng.uniform(0.0, 4.0, n - n // 2), rng.uniform(6.0, 10.0, n // 2)])
    x2 = rng.uniform(0.0, 3.0, n)  # a feature on another scale
    label = np.where(x1 > 5, "sick", "well")
    flip = rng.uniform(size=n) < 0.06
    label[flip] = np.where(label[flip] == "sick", "well", "sick")
    order = rng.permutation(n)
    return pd.DataFrame(
        {"pid": [f"{i:05d}" for i in range(n)], "x1": x1[order], "x2": x2[order], "label": label[order]}
    )


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tables")
    train, test = _make_frame(600, 1), _make_frame(120, 2)
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    test.to_parquet(folder / "test.parquet", index=False)
    return folder, train, test


def _run(argv, capsys):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _parse_table(out: str) -> dict[str, str]:
    """The first Markdown table row printed by `evaluate`, as {column: text}."""
    header, _, values = out.strip().splitlines()[:3]
    return dict(zip([h.strip() for h in header.strip("|").split("|")], [v.strip() for v in values.strip("|").split("|")]))


def _fit(folder, capsys, *extra, output="model.npz"):
    rc, out, err = _run(
        ["fit", folder / "train.csv", "--target", "label", "--id-columns", "pid", "-o", folder / output,
         "--overwrite", "--quiet", *extra], capsys,
    )
    assert rc == 0, err
    return folder / output


# --------------------------------------------------------------------------------------------
# Two commands: CSV → reviewed prediction file
# --------------------------------------------------------------------------------------------
def test_fit_predict_end_to_end(tables, capsys):
    folder, train, test = tables
    model_path = _fit(folder, capsys, "--scale", "minmax", "--lipschitz", "0.05", "--bandwidth", "0.1")
    rc, out, err = _run(["predict", model_path, folder / "test.csv", "--id-columns", "pid", "-o",
                         folder / "pred.csv", "--overwrite", "--chunksize", "50"], capsys)
    assert rc == 0, err
    assert "certified" in out and "to review (not certified)" in out
    pred = pd.read_csv(folder / "pred.csv", dtype={"pid": str})
    classes = ["sick", "well"]
    expected_cols = ["pid", "predicted", *[f"{p}_{c}" for p in ("proba", "lower", "upper") for c in classes],
                     "epsilon_predicted", "error_upper", "kappa", "vacuous", "trivial", "certified", "review"]
    assert list(pred.columns) == expected_cols
    assert pred["pid"].tolist() == test["pid"].tolist()  # ids kept as given ("00007")

    # Same numbers as the library on the same rows.
    model = load_model(model_path)
    assert isinstance(model, TableModel) and model.features == ("x1", "x2")
    X = test[["x1", "x2"]].to_numpy()
    assert pred["predicted"].tolist() == model.predict(X).tolist()
    iv = model.predict_interval(X)
    proba = pred[[f"proba_{c}" for c in classes]].to_numpy()
    lower = pred[[f"lower_{c}" for c in classes]].to_numpy()
    upper = pred[[f"upper_{c}" for c in classes]].to_numpy()
    np.testing.assert_allclose(proba, iv.proba, rtol=0, atol=1e-15)
    assert np.all(lower <= proba) and np.all(proba <= upper)
    # The written limits are the model's, and epsilon_predicted is the predicted class's
    # half-width (the default band-Chernoff limits need not be symmetric around p̂).
    np.testing.assert_allclose(lower, iv.lower, rtol=0, atol=1e-15)
    np.testing.assert_allclose(upper, iv.upper, rtol=0, atol=1e-15)
    top_written = np.argmax(proba, axis=1)
    half = np.maximum(proba - lower, upper - proba)[np.arange(len(pred)), top_written]
    half[pred["vacuous"].to_numpy()] = 1.0
    np.testing.assert_allclose(pred["epsilon_predicted"].to_numpy(), half, atol=1e-12)

    # `certified` from its definition on the written columns: the lower bound of the
    # predicted class exceeds the other class's upper bound, and not vacuous;
    # review = not certified; error_upper = 1 − lower of the predicted class;
    # trivial = every interval is [0, 1].
    top = np.array([classes.index(c) for c in pred["predicted"]])
    rows = np.arange(len(pred))
    others_upper = upper[rows, 1 - top]
    expected_certified = (lower[rows, top] > others_upper) & ~pred["vacuous"].to_numpy()
    assert np.array_equal(pred["certified"].to_numpy(), expected_certified)
    assert np.array_equal(pred["review"].to_numpy(), ~expected_certified)
    assert 0 < expected_certified.sum() < len(pred)  # the example has both kinds of rows
    np.testing.assert_allclose(pred["error_upper"].to_numpy(), 1 - lower[rows, top], rtol=0, atol=1e-15)
    expected_trivial = np.all((lower <= 0) & (upper >= 1), axis=1)
    assert np.array_equal(pred["trivial"].to_numpy(), expected_trivial)


def test_scaling_restates_assumption_from_raw_units(tables, capsys):
    folder, train, _ = tables
    ranges = train[["x1", "x2"]].max() - train[["x1", "x2"]].min()
    model = load_model(_fit(folder, capsys, "--scale", "minmax", "--lipschitz", "0.01", output="mm.npz"))
    # min-max: x̃_j = x_j / range_j, so L̃ = L / min_j(1/range_j) = L·max_j range_j.
    assert model.estimator.lipschitz == pytest.approx(0.01 * ranges.max(), rel=1e-12)
    assert model.lipschitz == 0.01 and model.estimator.margin is None
    std = train[["x1", "x2"]].std(ddof=0)
    model = load_model(_fit(folder, capsys, "--scale", "standard", "--margin", "1.5", output="st.npz"))
    assert model.estimator.margin == pytest.approx(1.5 / std.max(), rel=1e-12)
    model = load_model(_fit(folder, capsys, "--lipschitz", "0.01", output="none.npz"))
    assert model.scaler is None and model.estimator.lipschitz == 0.01


def test_localized_and_dyadic_and_parquet(tables, capsys):
    folder, _, test = tables
    for extra, name in ((["--neighbors", "40"], "loc.npz"), (["--resolution", "3"], "dy.npz")):
        path = _fit(folder, capsys, "--scale", "standard", "--lipschitz", "0.05", *extra, output=name)
        rc, _, err = _run(["predict", path, folder / "test.parquet", "--id-columns", "pid", "-o",
                           folder / f"{name}.parquet", "--overwrite", "--quiet"], capsys)
        assert rc == 0, err
        pred = pd.read_parquet(folder / f"{name}.parquet")
        assert len(pred) == len(test) and pred["pid"].tolist() == test["pid"].tolist()
        model = load_model(path)
        assert pred["predicted"].tolist() == model.predict(test[["x1", "x2"]].to_numpy()).tolist()
    assert type(load_model(folder / "dy.npz").estimator).__name__ == "DyadicClassifier"


def test_evaluate_reports_review_queue(tables, capsys, tmp_path):
    folder, _, test = tables
    model_path = _fit(folder, capsys, "--scale", "minmax", "--lipschitz", "0.05", "--bandwidth", "0.1", output="ev.npz")
    rc, _, err = _run(["predict", model_path, folder / "test.csv", "-o", tmp_path / "p.csv", "--quiet"], capsys)
    assert rc == 0, err
    pred = pd.read_csv(tmp_path / "p.csv")
    wrong = pred["predicted"].to_numpy() != test["label"].to_numpy()
    review = pred["review"].to_numpy()
    assert wrong.sum() > 0
    rc, out, err = _run(["evaluate", model_path, folder / "test.csv", "--target", "label", "-o",
                         tmp_path / "eval", "--quiet"], capsys)
    assert rc == 0, err
    row = _parse_table(out)
    # Percentages, named as such (an "errors_caught 1" read as a count before).
    assert float(row["accuracy_pct"]) == pytest.approx(100 * (1 - wrong.mean()), abs=0.05)
    assert float(row["review_pct"]) == pytest.approx(100 * review.mean(), abs=0.05)
    assert float(row["certified_pct"]) == pytest.approx(100 * (1 - review.mean()), abs=0.05)
    assert int(row["errors"]) == wrong.sum()
    assert float(row["errors_caught_pct"]) == pytest.approx(100 * (wrong & review).sum() / wrong.sum(), abs=0.05)
    assert float(row["error_accepted_pct"]) == pytest.approx(100 * (wrong & ~review).sum() / (~review).sum(), abs=0.05)
    metrics = pd.read_csv(tmp_path / "eval" / "metrics.csv")
    assert metrics.loc[0, "errors"] == wrong.sum()
    # Per class: its rows certified as another class are the certified errors of that label.
    per_class = pd.read_csv(tmp_path / "eval" / "classes.csv")
    assert per_class["certified_as_another"].sum() == (wrong & ~review).sum()
    assert per_class["rows"].tolist() == test["label"].value_counts().sort_index().tolist()
    # The side-by-side comparison: one line per rule, each naming its guarantee.
    comparison = pd.read_csv(tmp_path / "eval" / "comparison.csv")
    prefixes = ("certificate", "1 - max p @", "error_upper @", "epsilon @", "conformal set size != 1",
                "calibrated threshold on 1 - max p")
    assert [r.startswith(p) for r, p in zip(comparison["rule"], prefixes)] == [True] * 6, comparison["rule"].tolist()
    assert comparison["guarantee"].str.len().gt(3).all()
    # The ranking queues review the certificate's review share of the held-out half.
    assert comparison["review_pct"].iloc[1] == pytest.approx(comparison["review_pct"].iloc[0], abs=100 / 60)
    for rule in prefixes:
        assert rule in out
    for stem in ("reliability", "errors_caught", "bound_width", "error_types"):
        png = tmp_path / "eval" / f"{stem}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_evaluate_unseen_label_is_a_clear_error(tables, capsys, tmp_path):
    folder, _, test = tables
    model_path = _fit(folder, capsys, "--lipschitz", "0.05", output="un.npz")
    bad = test.copy()
    bad.loc[17, "label"] = "recovering"
    bad.to_csv(tmp_path / "bad.csv", index=False)
    rc, out, err = _run(["evaluate", model_path, tmp_path / "bad.csv", "--target", "label", "--quiet"], capsys)
    assert rc == 2
    assert "never saw" in err and "recovering" in err and "row 18" in err
    assert len(err.strip().splitlines()) == 1


def test_existing_output_and_input_are_protected(tables, capsys, tmp_path):
    folder, _, _ = tables
    model_path = _fit(folder, capsys, "--lipschitz", "0.05", output="prot.npz")
    out = tmp_path / "out.csv"
    out.write_text("keep me\n")
    rc, _, err = _run(["predict", model_path, folder / "test.csv", "-o", out, "--quiet"], capsys)
    assert rc == 2 and "already exists" in err and out.read_text() == "keep me\n"
    rc, _, err = _run(["fit", folder / "train.csv", "--target", "label", "--id-columns", "pid",
                       "--lipschitz", "0.05", "-o", out, "--quiet"], capsys)
    assert rc == 2 and "already exists" in err and out.read_text() == "keep me\n"
    copy = tmp_path / "in.csv"
    copy.write_bytes((folder / "test.csv").read_bytes())
    rc, _, err = _run(["predict", model_path, copy, "-o", copy, "--overwrite", "--quiet"], capsys)
    assert rc == 2 and "input table" in err
    assert copy.read_bytes() == (folder / "test.csv").read_bytes()
    rc, _, err = _run(["predict", model_path, folder / "test.csv", "-o", out, "--overwrite", "--quiet"], capsys)
    assert rc == 0, err
    assert out.read_text().startswith("pid,predicted,")  # the model's id columns come first by default
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "out.csv"]  # no temp files left


def test_fit_and_predict_never_write_over_their_inputs(tables, capsys, tmp_path):
    """``fit -o TRAIN --overwrite`` used to replace the training table with the model file (exit 0,
    the data lost); an output that is an input, by name or through a link, is now refused."""
    folder, _, _ = tables
    model_path = _fit(folder, capsys, "--lipschitz", "0.05", "--bandwidth", "0.5", output="inputs.npz")
    train = tmp_path / "train.csv"
    train.write_bytes((folder / "train.csv").read_bytes())
    os.link(train, tmp_path / "hard.csv")
    (tmp_path / "soft.csv").symlink_to(train)
    for out in (train, tmp_path / "hard.csv", tmp_path / "soft.csv"):
        rc, _, err = _run(["fit", train, "--target", "label", "--id-columns", "pid", "--lipschitz", "0.05",
                           "--bandwidth", "0.5", "-o", out, "--overwrite", "--quiet"], capsys)
        assert rc == 2 and f"is the input table {train}" in err, err
        assert train.read_bytes() == (folder / "train.csv").read_bytes()
    model_copy = tmp_path / "model.npz"
    model_copy.write_bytes(model_path.read_bytes())
    os.link(model_copy, tmp_path / "model.parquet")  # a table name on the model's bytes
    rc, _, err = _run(["predict", model_copy, folder / "test.csv", "-o", tmp_path / "model.parquet", "--overwrite",
                       "--quiet"], capsys)
    assert rc == 2 and "is the input model" in err, err
    assert model_copy.read_bytes() == model_path.read_bytes()


def test_outputs_are_deterministic(tables, capsys, tmp_path):
    folder, _, _ = tables
    blobs = {}
    for run in (1, 2):
        model = tmp_path / f"m{run}.npz"
        rc, _, err = _run(["fit", folder / "train.csv", "--target", "label", "--id-columns", "pid", "--scale",
                           "minmax", "--lipschitz", "0.05", "--neighbors", "30", "-o", model, "--quiet"], capsys)
        assert rc == 0, err
        for suffix in ("csv", "parquet"):
            rc, _, err = _run(["predict", model, folder / "test.csv", "--id-columns", "pid", "--chunksize", "37",
                               "-o", tmp_path / f"p{run}.{suffix}", "--quiet"], capsys)
            assert rc == 0, err
        blobs[run] = [(tmp_path / f"{stem}{run}.{s}").read_bytes() for stem, s in (("m", "npz"), ("p", "csv"), ("p", "parquet"))]
    assert blobs[1] == blobs[2]


def test_quiet_prints_nothing(tables, capsys, tmp_path):
    folder, _, _ = tables
    model = _fit(folder, capsys, "--lipschitz", "0.05", output="q.npz")
    rc, out, err = _run(["predict", model, folder / "test.csv", "-o", tmp_path / "q.csv", "--quiet"], capsys)
    assert rc == 0 and out == "" and err == ""


def test_console_script(tables, capsys, tmp_path):
    script = Path(sys.executable).with_name("nwbound")
    if not script.exists():
        pytest.skip("console script not installed in this environment")
    folder, _, test = tables
    model = _fit(folder, capsys, "--lipschitz", "0.05", output="cs.npz")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.run(
        [str(script), "predict", str(model), str(folder / "test.csv"), "--id-columns", "pid",
         "-o", str(tmp_path / "cs.csv"), "--quiet"],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(pd.read_csv(tmp_path / "cs.csv")) == len(test)


# --------------------------------------------------------------------------------------------
# Bad input: the CLI answers with one line and exit code 2; the library with TableError
# --------------------------------------------------------------------------------------------
GOOD = "pid,x1,x2,label\n001,1.0,2.0,a\n002,3.0,4.0,b\n003,5.0,6.0,a\n004,7.5,1.0,b\n"
BAD_TABLES = {
    # name: (csv text, fragments the message must contain)
    "nan": (GOOD.replace("3.0,4.0", "3.0,"), ["'x2'", "missing value", "row 2"]),
    "nan-text": (GOOD.replace("5.0,6.0", "NaN,6.0"), ["'x1'", "missing value", "row 3"]),
    "inf": (GOOD.replace("7.5,1.0", "7.5,inf"), ["'x2'", "inf", "row 4"]),
    "string-in-numeric": (GOOD.replace("5.0,6.0", "5.0,six"), ["'x2'", "numeric", "row 3", "'six'"]),
    "missing-target": (GOOD.replace("label", "outcome"), ["target", "'label'"]),
    "zero-rows": ("pid,x1,x2,label\n", ["no data rows"]),
    "empty-file": ("", ["no header"]),
    "duplicated-columns": (GOOD.replace("x2", "x1"), ["duplicated", "'x1'"]),
    "ragged-row": (GOOD + "005,1.0,2.0,a,extra\n", ["cannot parse"]),
}


@pytest.mark.parametrize("case", sorted(BAD_TABLES))
def test_fit_bad_input(tmp_path, capsys, case):
    text, fragments = BAD_TABLES[case]
    path = tmp_path / "train.csv"
    path.write_text(text)
    rc, out, err = _run(["fit", path, "--target", "label", "--id-columns", "pid", "--lipschitz", "1",
                         "-o", tmp_path / "m.npz", "--quiet"], capsys)
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    assert not (tmp_path / "m.npz").exists()


def test_fit_one_row_and_one_class(tmp_path, capsys):
    path = tmp_path / "one.csv"
    path.write_text("x1,x2,label\n1.0,2.0,a\n")
    rc, _, err = _run(["fit", path, "--target", "label", "--lipschitz", "1", "-o", tmp_path / "m.npz"], capsys)
    assert rc == 2 and "single class ('a')" in err and "1 row" in err and "np.str_" not in err


def test_fit_summary_with_lipschitz_auto_reads_as_one_sentence(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    rows = "\n".join(f"{a:.6f},{b:.6f},{int(a + b > 0)}" for a, b in X)
    path = tmp_path / "train.csv"
    path.write_text("x1,x2,label\n" + rows + "\n")
    rc, out, _ = _run(["fit", path, "--target", "label", "--lipschitz", "auto", "-o", tmp_path / "m.npz"], capsys)
    assert rc == 0 and "Wrote" in out and ".. Wrote" not in out, out


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("small")
    (folder / "train.csv").write_text(GOOD)
    assert main(["fit", str(folder / "train.csv"), "--target", "label", "--id-columns", "pid", "--lipschitz", "1",
                 "--bandwidth", "5", "-o", str(folder / "m.npz"), "--quiet"]) == 0
    return folder / "m.npz"


@pytest.mark.parametrize("case", sorted(set(BAD_TABLES) - {"missing-target"}))
def test_predict_bad_input(tmp_path, capsys, small_model, case):
    text, fragments = BAD_TABLES[case]
    path = tmp_path / "data.csv"
    path.write_text(text)
    rc, _, err = _run(["predict", small_model, path, "--id-columns", "pid", "-o", tmp_path / "p.csv", "--quiet"], capsys)
    assert rc == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]  # no output, no temp file


def test_predict_one_row_and_missing_feature(tmp_path, capsys, small_model):
    one = tmp_path / "one.csv"
    one.write_text("pid,x1,x2\n009,2.0,3.0\n")
    rc, _, err = _run(["predict", small_model, one, "--id-columns", "pid", "-o", tmp_path / "p.csv", "--quiet"], capsys)
    assert rc == 0, err
    assert pd.read_csv(tmp_path / "p.csv", dtype={"pid": str})["pid"].tolist() == ["009"]
    nofeat = tmp_path / "nofeat.csv"
    nofeat.write_text("pid,x1\n009,2.0\n")
    rc, _, err = _run(["predict", small_model, nofeat, "-o", tmp_path / "q.csv"], capsys)
    assert rc == 2 and "feature" in err and "'x2'" in err


def test_model_file_errors_are_one_line(tmp_path, capsys):
    (tmp_path / "data.csv").write_text(GOOD)
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"PK\x03\x04 definitely not a model")
    rc, _, err = _run(["predict", broken, tmp_path / "data.csv", "-o", tmp_path / "p.csv"], capsys)
    assert rc == 2 and "broken.npz" in err and len(err.strip().splitlines()) == 1
    rc, _, err = _run(["predict", tmp_path / "nope.npz", tmp_path / "data.csv", "-o", tmp_path / "p.csv"], capsys)
    assert rc == 2 and "nope.npz" in err


@pytest.mark.parametrize("case", sorted(set(BAD_TABLES) - {"missing-target", "ragged-row", "empty-file"}))
def test_library_bad_input(tmp_path, case):
    text, fragments = BAD_TABLES[case]
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(TableError) as err:
        n = 0
        for chunk in iter_table_chunks(path, 2, text_columns=["label"], verbatim_columns=["pid"]):
            feature_matrix(chunk, ["x1", "x2"], path=path, first_row=n + 1)
            label_array(chunk, "label", path=path, first_row=n + 1)
            n += len(chunk)
        if n == 0:
            raise TableError(f"{path} has no data rows")
    for fragment in fragments:
        assert fragment in str(err.value), (fragment, str(err.value))
    assert str(path) in str(err.value)


def test_library_header_and_labels(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(GOOD)
    assert read_columns(path) == ["pid", "x1", "x2", "label"]
    chunks = list(iter_table_chunks(path, 3, verbatim_columns=["pid"], text_columns=["label"]))
    assert [len(c) for c in chunks] == [3, 1]
    assert chunks[0]["pid"].tolist() == ["001", "002", "003"]
    assert labels_like(np.array(["1", "0"]), np.array([0, 1]), column="y", path=path).tolist() == [1, 0]
    with pytest.raises(TableError, match=r"never saw.*\['c'\].*row 5"):
        labels_like(np.array(["a", "c"]), np.array(["a", "b"]), column="y", path=path, first_row=4)
    with pytest.raises(TableError, match=r"never saw.*\[2\]"):
        labels_like(np.array(["1", "2"]), np.array([0, 1]), column="y", path=path)
    with pytest.raises(TableError, match="unknown table format"):
        read_columns(tmp_path / "t.xlsx")
    with pytest.raises(FileNotFoundError, match="missing.csv"):
        read_columns(tmp_path / "missing.csv")


def test_predict_with_library_models(tmp_path, capsys):
    """Models saved from Python (bare estimators) work with the CLI too."""
    from nwbound import NadarayaWatsonClassifier
    from nwbound.io import save_model

    frame = _make_frame(200, 5)
    frame.to_parquet(tmp_path / "data.parquet", index=False)
    named = NadarayaWatsonClassifier(metric=None, bandwidth=1.0, lipschitz=0.05).fit(frame[["x2", "x1"]], frame["label"])
    save_model(named, tmp_path / "named.npz")
    rc, _, err = _run(["predict", tmp_path / "named.npz", tmp_path / "data.parquet", "-o", tmp_path / "a.csv", "--quiet"], capsys)
    assert rc == 0, err
    assert pd.read_csv(tmp_path / "a.csv")["predicted"].tolist() == named.predict(frame[["x2", "x1"]]).tolist()
    # Fitted on a plain array: every non-id column, in file order, is a feature.
    plain = NadarayaWatsonClassifier(metric=None, bandwidth=1.0, lipschitz=0.05).fit(frame[["x1", "x2"]].to_numpy(), frame["label"])
    save_model(plain, tmp_path / "plain.npz")
    frame[["pid", "x1", "x2"]].to_csv(tmp_path / "nolabel.csv", index=False)
    rc, _, err = _run(["predict", tmp_path / "plain.npz", tmp_path / "nolabel.csv", "--id-columns", "pid",
                       "-o", tmp_path / "b.csv", "--quiet"], capsys)
    assert rc == 0, err
    assert pd.read_csv(tmp_path / "b.csv")["predicted"].tolist() == plain.predict(frame[["x1", "x2"]].to_numpy()).tolist()
    rc, _, err = _run(["predict", tmp_path / "plain.npz", tmp_path / "nolabel.csv", "-o", tmp_path / "c.csv"], capsys)
    assert rc == 2 and "needs 2 features" in err and "--id-columns" in err


def test_integer_labels_from_csv_and_parquet(tmp_path, capsys):
    frame = _make_frame(200, 6)
    frame["label"] = (frame["label"] == "sick").astype(int)
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.assign(label=frame["label"].astype(float)).to_parquet(tmp_path / "t.parquet", index=False)
    rc, _, err = _run(["fit", tmp_path / "t.csv", "--target", "label", "--id-columns", "pid", "--lipschitz", "0.05",
                       "-o", tmp_path / "m.npz", "--quiet"], capsys)
    assert rc == 0, err
    assert load_model(tmp_path / "m.npz").classes_.tolist() == [0, 1]
    for data in ("t.csv", "t.parquet"):
        rc, out, err = _run(["evaluate", tmp_path / "m.npz", tmp_path / data, "--target", "label", "--quiet"], capsys)
        assert rc == 0, err
        row = _parse_table(out)
        model = load_model(tmp_path / "m.npz")
        acc = np.mean(model.predict(frame[["x1", "x2"]].to_numpy()) == frame["label"].to_numpy())
        assert int(row["rows"]) == 200 and float(row["accuracy_pct"]) == pytest.approx(100 * acc, abs=0.05)


def test_parquet_bad_values_name_column_and_row(tmp_path):
    frame = pd.DataFrame({"x1": [1.0, 2.0, np.nan, 4.0], "x2": [1.0, -np.inf, 3.0, 4.0]})
    path = tmp_path / "t.parquet"
    frame.to_parquet(path, index=False)
    chunks = list(iter_table_chunks(path, 10))
    with pytest.raises(TableError, match=r"t\.parquet.*'x1'.*missing value.*row 3"):
        feature_matrix(chunks[0], ["x1"], path=path)
    with pytest.raises(TableError, match=r"'x2'.*-inf.*row 2"):
        feature_matrix(chunks[0], ["x2"], path=path)
    pd.DataFrame({"x1": ["1", "two"]}).to_parquet(tmp_path / "s.parquet", index=False)
    with pytest.raises(TableError, match=r"'x1' must be numeric.*row 2.*'two'"):
        feature_matrix(next(iter_table_chunks(tmp_path / "s.parquet", 10)), ["x1"], path=tmp_path / "s.parquet")


def test_missing_tables_extra_is_explained(tmp_path, capsys, monkeypatch):
    (tmp_path / "t.csv").write_text(GOOD)
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if pandas were not installed
    with pytest.raises(ImportError, match=r'pip install -e "\.\[tables\]" in the nwbound checkout'):
        read_columns(tmp_path / "t.csv")
    rc, _, err = _run(["fit", tmp_path / "t.csv", "--target", "label", "--lipschitz", "1", "-o", tmp_path / "m.npz"], capsys)
    assert rc == 2 and '".[tables]"' in err


def test_no_message_says_to_install_nwbound_from_an_index():
    """nwbound is not on a package index: every hint installs the extra from the checkout, by one helper."""
    import re
    from pathlib import Path

    import nwbound
    from nwbound.utils import install_hint

    root = Path(nwbound.__file__).parent
    offenders = [f"{p.relative_to(root)}:{i}" for p in root.rglob("*.py")
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if re.search(r"pip install [\"']?nwbound\[", line) and "finds" not in line]
    assert offenders == []
    used = {m for p in root.rglob("*.py") for m in re.findall(r"install_hint\('(\w+)'\)", p.read_text(encoding="utf-8"))}
    assert used >= {"plots", "tables", "gpu", "dask", "fast"}
    import tomllib

    extras = tomllib.loads((root.parents[1] / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert used <= set(extras)  # every hint names an extra that exists
    assert install_hint("tables").startswith('pip install -e ".[tables]" in the nwbound checkout')
