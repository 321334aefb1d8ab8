"""``nwbound predict`` with the default model's file predicts without scikit-learn (issue 32: predict
warm in at most 1.5 s; scikit-learn's import alone took about a second), and writes what the full
classifier writes. No timing is asserted here (``benchmarks/bench_cli_predict.py`` measures it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")

SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """breast-cancer as CSV (the first 100 rows to predict), and the default model ``nwbound fit`` saves."""
    from sklearn.datasets import load_breast_cancer

    from nwbound.cli.main import main

    folder = tmp_path_factory.mktemp("predict_startup")
    frame = load_breast_cancer(as_frame=True).frame
    frame.to_csv(folder / "train.csv", index=False)
    frame.drop(columns="target").head(100).to_csv(folder / "query.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["fit", str(folder / "train.csv"), "--target", "target", "--scale", "standard",
                     "-o", str(folder / "model.npz"), "--quiet"]) == 0
    return folder


def _predict_in_a_fresh_process(folder: Path, output: str) -> list[str]:
    """Run ``nwbound predict`` through ``main`` in a fresh interpreter; the heavy modules it imported."""
    code = f"""
    import contextlib, io, json, sys
    from nwbound.cli.main import main
    with contextlib.redirect_stderr(io.StringIO()):
        rc = main(["predict", "model.npz", "query.csv", "-o", {output!r}, "--quiet", "--overwrite"])
    assert rc == 0, rc
    print(json.dumps(sorted(m for m in ("sklearn", "scipy", "skops") if m in sys.modules)))
    """
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=folder, env=dict(os.environ, PYTHONPATH=SRC), timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_predict_does_not_import_scikit_learn(folder):
    assert "sklearn" not in _predict_in_a_fresh_process(folder, "frozen.csv")


def test_predict_writes_what_the_full_classifier_writes(folder):
    """The same table as the classifier loaded whole (``load_model`` without ``frozen``), cell for cell."""
    import nwbound.io as io_module
    from nwbound.cli.main import main
    from nwbound.io import load_model

    assert "sklearn" not in _predict_in_a_fresh_process(folder, "frozen.csv")
    full = io_module.load_model  # predict imports it from nwbound.io when it runs: replaced there
    try:
        io_module.load_model = lambda path, frozen=False, **kw: full(path, **kw)  # the full classifier
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert main(["predict", str(folder / "model.npz"), str(folder / "query.csv"), "-o",
                         str(folder / "full.csv"), "--quiet", "--overwrite"]) == 0
    finally:
        io_module.load_model = full
    assert type(load_model(folder / "model.npz", frozen=True).estimator).__name__ == "FrozenNadarayaWatson"
    frozen, whole = pd.read_csv(folder / "frozen.csv"), pd.read_csv(folder / "full.csv")
    pd.testing.assert_frame_equal(frozen, whole, check_exact=True)
