"""``verbose=``: a long fit shows its steps on stderr (issue 30, item 4), and says nothing by default.

Before, ``NadarayaWatsonClassifier(verbose=1)`` was refused (no such parameter) and a fit of
tens of seconds printed nothing.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError

from nwbound import NadarayaWatsonClassifier


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(700, 3))
    y = (rng.random(700) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(int)
    return X, y


def _fit(capsys, X, y, **params):
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # bound advice: not what is tested here
        model = NadarayaWatsonClassifier(random_state=0, **params).fit(X, y)
    return model, capsys.readouterr()


def test_default_fit_prints_nothing(capsys, data):
    _, out = _fit(capsys, *data)
    assert out.err == "" and out.out == ""


def test_cross_fitted_default_names_each_model_and_its_steps(capsys, data):
    X, y = data
    model, out = _fit(capsys, X, y, verbose=1)
    lines = out.err.splitlines()
    assert out.out == ""
    assert lines[0].startswith("[NadarayaWatsonClassifier] cross_fit='auto': 2 models on 700 training rows")
    for i, m in enumerate(model.cross_fit_models_, start=1):
        mine = [line for line in lines if line.startswith(f"[NadarayaWatsonClassifier model {i}/2] ")]
        assert any("enter the kernel sums" in line for line in mine)
        assert any(f"L = {m.lipschitz_:.4g}" in line for line in mine)
    assert lines[-1].startswith("[NadarayaWatsonClassifier] fit done (") and lines[-1].endswith(" s)")


def test_level_two_adds_the_check_table(capsys, data):
    X, y = data
    model, out = _fit(capsys, X, y, verbose=2, cross_fit=False)
    assert "L chosen on held-out rows" in out.err
    assert str(model.lipschitz_report_.selection).splitlines()[-1].strip() in out.err
    _, quieter = _fit(capsys, X, y, verbose=1, cross_fit=False)
    assert "L chosen on held-out rows" not in quieter.err and "fit done" in quieter.err


def test_progress_changes_no_result(capsys, data):
    X, y = data
    quiet, _ = _fit(capsys, X, y)
    loud, _ = _fit(capsys, X, y, verbose=2)
    a, b = quiet.predict_interval(X[:50]), loud.predict_interval(X[:50])
    for field in ("proba", "lower", "upper", "epsilon"):
        assert np.array_equal(getattr(a, field), getattr(b, field))
    assert [m.lipschitz_ for m in quiet.cross_fit_models_] == [m.lipschitz_ for m in loud.cross_fit_models_]


def test_paper_classifier_says_it_keeps_every_row(capsys, data):
    X, y = data
    _, out = _fit(capsys, X, y, verbose=True, metric=None, lipschitz=1.0)
    assert out.err.splitlines()[0].startswith("[NadarayaWatsonClassifier] 700 training rows, all in the kernel sums")
    assert "fit done" in out.err


def test_verbose_may_change_after_fit_and_clones(capsys, data):
    X, y = data
    model, _ = _fit(capsys, X, y, metric=None, lipschitz=1.0)
    model.set_params(verbose=1)
    model.predict(X[:3])  # not a fit-time parameter: no "call fit again"
    assert clone(model).get_params()["verbose"] == 1


@pytest.mark.parametrize("bad", [-1, 0.5, "yes"])
def test_bad_verbose_is_refused_by_name(data, bad):
    with pytest.raises(InvalidParameterError, match="verbose"):
        NadarayaWatsonClassifier(verbose=bad).fit(*data)
