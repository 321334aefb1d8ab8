"""Regression tests for the tester's findings of issue 32 ("The first hour, again").

Each test pins one finding: messages that name the real cause and an applicable fix
(groups, n_neighbors after the split), ``evaluate -o`` without matplotlib, the
feature-names warning of a cross-fitted model, ``PredictionInterval.concatenate``,
the data checksums, the "1 − max p" review queue and the warnings' advice.
"""

from __future__ import annotations

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


# ----------------------------------------------------------------------------------------------
# Finding 1: too few groups
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n_groups", [1, 2, 3])
def test_too_few_groups_names_the_groups_and_more_groups(n_groups):
    X, y = _data(300)
    with pytest.raises(ValueError) as info:
        NadarayaWatsonClassifier().fit(X, y, groups=np.arange(300) % n_groups)
    message = str(info.value)
    assert f"in {n_groups} group" in message and "Give more groups" in message
    # Not the causes that do not apply: the rows are plenty, and the user never set a cross_fit number.
    assert "fewest rows in a class" not in message and "Give more rows" not in message
    assert "Give a smaller cross_fit" not in message
    assert "holds every training row" not in message


@pytest.mark.filterwarnings("ignore:The assumption")
def test_too_few_groups_offers_only_settings_that_are_not_already_set():
    X, y = _data(300)
    with pytest.raises(ValueError) as info:
        NadarayaWatsonClassifier(lipschitz=1.0, cross_fit=False).fit(X, y, groups=np.zeros(300))
    message = str(info.value)
    assert "a numeric lipschitz (no check split)" not in message  # already numeric
    assert "cross_fit=False" not in message  # already set
    assert "metric=None with a numeric lipschitz" in message


def test_an_explicit_cross_fit_number_still_suggests_a_smaller_one():
    X, y = _data(300)
    with pytest.raises(ValueError, match="Give a smaller cross_fit"):
        NadarayaWatsonClassifier(cross_fit=4).fit(X, y, groups=np.arange(300) % 3)


# ----------------------------------------------------------------------------------------------
# Finding 2: n_neighbors larger than the kernel sums' rows after the split
# ----------------------------------------------------------------------------------------------
def test_n_neighbors_error_says_the_split_kept_rows_out_of_the_kernel_sums():
    X, y = _data(300)
    with pytest.raises(ValueError) as info:
        NadarayaWatsonClassifier(n_neighbors=250, cross_fit=False).fit(X, y)
    message = str(info.value)
    kept = int(message.split("<= ")[1].split(",")[0])
    assert f"kept {300 - kept} of the 300 training rows out of them" in message
    assert "metric=None with a numeric lipschitz" in message and "metric_fraction=0.4" in message


def test_n_neighbors_error_without_a_split_is_unchanged():
    X, y = _data(50)
    with pytest.raises(ValueError, match="among the 50 training samples"):
        NadarayaWatsonClassifier(metric=None, lipschitz=1.0, n_neighbors=60).fit(X, y)


# ----------------------------------------------------------------------------------------------
# Finding 5: `nwbound evaluate -o DIR` without matplotlib
# ----------------------------------------------------------------------------------------------
def test_evaluate_output_without_matplotlib_writes_nothing(tmp_path):
    """matplotlib is checked before any table is written, not after."""
    import json
    import os
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    pd = pytest.importorskip("pandas")
    from nwbound.io import save_model

    X, y = _data(120)
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(label=y)
    frame.to_csv(tmp_path / "test.csv", index=False)
    save_model(NadarayaWatsonClassifier(metric=None, lipschitz=1.0).fit(frame[["a", "b", "c"]], y),
               tmp_path / "model.npz")
    code = textwrap.dedent("""
        import contextlib, io, json, sys
        sys.modules["matplotlib"] = None  # not installed
        from nwbound.cli.main import main
        err, out = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            rc = main(["evaluate", "model.npz", "test.csv", "--target", "label", "-o", "report"])
        print(json.dumps([rc, err.getvalue(), out.getvalue()]))
    """)
    src = str(Path(__file__).resolve().parents[1] / "src")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=src), timeout=600)
    assert proc.returncode == 0, proc.stderr
    rc, err, out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert rc == 2 and "matplotlib" in err
    assert out == ""  # no table printed either: nothing was computed
    assert not (tmp_path / "report").exists()


# ----------------------------------------------------------------------------------------------
# Finding 8: scikit-learn's feature-names warning, once per call on a cross-fitted model
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["predict", "predict_proba", "predict_interval"])
def test_feature_names_warning_is_said_once_for_a_cross_fitted_model(method):
    import warnings

    pd = pytest.importorskip("pandas")
    X, y = _data(240)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    clf = NadarayaWatsonClassifier(random_state=0).fit(frame, y)
    assert len(clf.cross_fit_models_) > 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        getattr(clf, method)(X[:5])
    names = [w for w in caught if "feature names" in str(w.message)]
    assert len(names) == 1, [str(w.message) for w in caught]


# ----------------------------------------------------------------------------------------------
# Finding 9: PredictionInterval.concatenate keeps outside_box
# ----------------------------------------------------------------------------------------------
def test_concatenate_keeps_outside_box_when_a_part_did_not_record_it():
    import dataclasses

    from nwbound import PredictionInterval

    X, y = _data(100)
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=1.0).fit(X, y)
    inside, far = clf.predict_interval(X[:3]), clf.predict_interval(X[:2] * 100)
    assert far.outside_box.all() and not inside.outside_box.any()
    unrecorded = dataclasses.replace(inside, outside_box=None)  # as PredictionInterval.from_parts leaves it
    joined = PredictionInterval.concatenate([unrecorded, far])
    assert joined.outside_box.tolist() == [False, False, False, True, True]
    assert PredictionInterval.concatenate([far, inside]).outside_box.tolist() == [True, True, False, False, False]


def test_usefulness_sample_keeps_outside_box():
    """The CLI's usefulness report samples rows through PredictionInterval.take/.concatenate."""
    from nwbound.cli._usefulness import UsefulnessTally

    X, y = _data(100)
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=1.0).fit(X, y)
    tally = UsefulnessTally()
    tally.add(clf.predict_interval(X[:3]))
    tally.add(clf.predict_interval(X[:2] * 100))
    assert tally.sample().outside_box.tolist() == [False, False, False, True, True]
