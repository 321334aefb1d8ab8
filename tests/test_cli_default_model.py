"""`nwbound fit` fits the library's default model (issue 32, item 1): the same certified share as
``NadarayaWatsonClassifier()`` on breast-cancer, and ``--metric none`` for the paper's classifier."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from nwbound import NadarayaWatsonClassifier  # noqa: E402
from nwbound.cli.main import main  # noqa: E402
from nwbound.io import TableModel, load_model  # noqa: E402


@pytest.fixture(scope="module")
def breast_cancer(tmp_path_factory):
    """scikit-learn's bundled breast-cancer set as CSV, split 70/30 (stratified, random_state=0)."""
    folder = tmp_path_factory.mktemp("breast_cancer")
    frame = load_breast_cancer(as_frame=True).frame
    train, test = train_test_split(frame, test_size=0.3, stratify=frame["target"], random_state=0)
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    return folder, train, test


def _run(argv, capsys):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_default_model_certifies_as_the_python_default(breast_cancer, capsys):
    folder, train, test = breast_cancer
    model_path, predictions = folder / "model.npz", folder / "predictions.csv"
    rc, _, err = _run(["fit", folder / "train.csv", "--target", "target", "--scale", "standard", "--quiet",
                       "-o", model_path], capsys)
    assert rc == 0, err
    model = load_model(model_path)
    assert isinstance(model, TableModel)
    est = model.estimator
    assert (est.metric, est.lipschitz, est.cross_fit) == ("auto", "auto", "auto") and est._is_cross_fitted()
    rc, _, err = _run(["predict", model_path, folder / "test.csv", "--quiet", "-o", predictions], capsys)
    assert rc == 0, err
    cli_share = pd.read_csv(predictions)["certified"].mean()

    features = [c for c in train.columns if c != "target"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        python = NadarayaWatsonClassifier().fit(train[features].to_numpy(), train["target"].to_numpy())
        python_share = python.predict_interval(test[features].to_numpy()).certified.mean()
    assert python_share > 0.5  # the default model certifies most rows here (the CLI's used to certify none)
    assert abs(cli_share - python_share) <= 0.01, (cli_share, python_share)


def test_cli_metric_none_is_the_papers_classifier(breast_cancer, capsys):
    folder, _, _ = breast_cancer
    for extra, path in ((["--metric", "none"], "none.npz"), (["--lipschitz", "0.05"], "numeric.npz")):
        rc, out, err = _run(["fit", folder / "train.csv", "--target", "target", "--scale", "minmax", *extra,
                             "-o", folder / path], capsys)
        assert rc == 0, err
        assert "the features as given (--metric none)" in out
        assert load_model(folder / path).estimator.metric is None


def test_cli_refuses_raw_units_in_a_learned_space(breast_cancer, capsys):
    folder, _, _ = breast_cancer
    rc, _, err = _run(["fit", folder / "train.csv", "--target", "target", "--metric", "auto", "--lipschitz", "0.2",
                       "-o", folder / "never.npz"], capsys)
    assert rc != 0 and "--lipschitz is in raw feature units" in err and "--metric none" in err
    assert not (folder / "never.npz").exists()


def test_cli_point_estimate_reaches_the_estimator_and_its_predictions(breast_cancer, capsys):
    folder, _, test = breast_cancer
    probas = {}
    for value in ("auto", "nw"):
        path, out = folder / f"point_{value}.npz", folder / f"point_{value}.csv"
        rc, _, err = _run(["fit", folder / "train.csv", "--target", "target", "--point-estimate", value, "--quiet",
                           "-o", path], capsys)
        assert rc == 0, err
        est = load_model(path).estimator
        assert est.point_estimate == value
        assert (est.point_model_ is None) == (value == "nw")
        rc, _, err = _run(["predict", path, folder / "test.csv", "--quiet", "-o", out], capsys)
        assert rc == 0, err
        probas[value] = pd.read_csv(out)
    # the box and the certified rows are the same; only the reported point moves
    assert probas["auto"]["certified"].tolist() == probas["nw"]["certified"].tolist()
    lower = [c for c in probas["nw"].columns if c.startswith("lower")]
    assert lower and np.array_equal(probas["auto"][lower].to_numpy(), probas["nw"][lower].to_numpy())


def test_cli_point_estimate_is_refused_for_the_dyadic_classifier(breast_cancer, capsys):
    folder, _, _ = breast_cancer
    rc, _, err = _run(["fit", folder / "train.csv", "--target", "target", "--resolution", "3", "--point-estimate",
                       "nw", "-o", folder / "never_dyadic.npz"], capsys)
    assert rc != 0 and "--point-estimate" in err and "dyadic" in err
    assert not (folder / "never_dyadic.npz").exists()
