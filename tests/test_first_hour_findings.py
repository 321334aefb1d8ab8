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


# ----------------------------------------------------------------------------------------------
# Finding 9: the data loaders check the data folder's checksum file
# ----------------------------------------------------------------------------------------------
def _listing(folder, files, prefix="./"):
    from nwbound.datasets._cache import sha256_file

    return "".join(f"{sha256_file(folder / f)}  {prefix}{f}\n" for f in files)


def _tiny_mnist(folder):
    import struct

    (folder / "train-labels-idx1-ubyte").write_bytes(struct.pack(">ii", 2049, 3) + bytes([7, 0, 7]))
    (folder / "train-images-idx3-ubyte").write_bytes(struct.pack(">iiii", 2051, 3, 28, 28) + bytes(3 * 28 * 28))
    return ["train-labels-idx1-ubyte", "train-images-idx3-ubyte"]


def test_mnist_loader_refuses_a_file_that_does_not_match_checksums(tmp_path):
    from nwbound.datasets import load_mnist

    names = _tiny_mnist(tmp_path)
    (tmp_path / "CHECKSUMS.sha256").write_text(_listing(tmp_path, names))
    assert load_mnist(tmp_path)[1].tolist() == [7, 0, 7]  # intact
    (tmp_path / names[0]).write_bytes((tmp_path / names[0]).read_bytes()[:-1] + bytes([1]))  # one label changed
    with pytest.raises(ValueError, match=r"train-labels-idx1-ubyte does not match its SHA-256 in .*CHECKSUMS\.sha256"):
        load_mnist(tmp_path)


def test_gtsrb_loader_checks_the_checksum_file_of_the_parent_folder(tmp_path):
    """The shared layout: gtsrb/CHECKSUMS.sha256 lists ./gtsrb/GTSRB/…; the loader may get either folder."""
    Image = pytest.importorskip("PIL.Image")
    from nwbound.datasets import load_gtsrb_pair

    base = tmp_path / "gtsrb"
    names = []
    for c in (6, 14):
        folder = base / "GTSRB" / "Final_Training" / "Images" / f"{c:05d}"
        folder.mkdir(parents=True)
        for i in range(2):
            Image.new("RGB", (32, 32), (40 * i, c, 0)).save(folder / f"{i:05d}.ppm")
            names.append(f"gtsrb/GTSRB/Final_Training/Images/{c:05d}/{i:05d}.ppm")
    (tmp_path / "CHECKSUMS.sha256").write_text(_listing(tmp_path, names))
    for given in (tmp_path, base):
        assert load_gtsrb_pair(given)[0].shape == (4, 3072)
    bad = tmp_path / names[3]
    Image.new("RGB", (32, 32), (1, 2, 3)).save(bad)
    for given in (tmp_path, base):
        with pytest.raises(ValueError, match="00001.ppm does not match its SHA-256"):
            load_gtsrb_pair(given)


@pytest.mark.parametrize("cache", [False, True])
def test_mitbih_loader_checks_physionet_sha256sums(tmp_path, cache):
    """PhysioNet's SHA256SUMS.txt (one space, bare names), checked when the beats are built."""
    import shutil
    from pathlib import Path

    pytest.importorskip("wfdb")
    from nwbound.datasets import load_mitbih_beats

    source = Path(__file__).parent / "data" / "mitdb_excerpt"
    data = tmp_path / "mitdb"
    data.mkdir()
    names = ["100.atr", "100.dat", "100.hea"]
    for name in names:
        shutil.copy(source / name, data / name)
    (data / "SHA256SUMS.txt").write_text(_listing(data, names, prefix="").replace("  ", " "))
    kwargs = dict(records=["100"], progress=False, cache_dir=tmp_path / "cache" if cache else None)
    assert len(load_mitbih_beats(data, **kwargs)) > 0
    atr = bytearray((data / "100.atr").read_bytes())
    atr[-4] ^= 1
    (data / "100.atr").write_bytes(bytes(atr))
    with pytest.raises(ValueError, match=r"100\.atr does not match its SHA-256 in .*SHA256SUMS\.txt"):
        load_mitbih_beats(data, **kwargs)


# ----------------------------------------------------------------------------------------------
# Finding 9: review_comparison's "1 - max p" queue ranks by the model's max p̂
# ----------------------------------------------------------------------------------------------
def test_one_minus_max_p_queue_uses_the_models_max_p_with_a_given_y_pred():
    from nwbound import PredictionInterval
    from nwbound.metrics import review_comparison

    proba = np.array([[0.9, 0.1], [0.6, 0.4], [0.55, 0.45]])
    iv = PredictionInterval.from_parts(proba, np.full((3, 2), 0.05), np.full((3, 2), 0.05),
                                       np.ones(3), np.ones(3), np.zeros(3, bool), np.ones(3))
    # Another rule accepted class 1 on row 0, where the model is surest (p̂ = 0.9 for class 0):
    # the queue of the model's doubt reviews row 2 (max p̂ = 0.55), not row 0.
    y_pred, y_true = np.array([1, 0, 0]), np.array([1, 0, 1])  # the one error is row 2
    rows = {r["queue"]: r for r in review_comparison(y_true, iv, review_share=0.3, y_pred=y_pred)}
    queue = rows["1 - max p @ 30%"]  # ceil(0.3 · 3) = 1 row reviewed
    assert queue["review_share"] == pytest.approx(1 / 3)
    assert queue["errors_caught"] == 1.0


# ----------------------------------------------------------------------------------------------
# Every warning's advice fits the settings in use (issue 32, "One L report")
# ----------------------------------------------------------------------------------------------
def _default_contexts():
    """The AdviceContext of each default: Python's two classifiers, and `nwbound fit`'s."""
    import argparse

    from nwbound import DyadicClassifier
    from nwbound.cli.fit import build_estimator
    from nwbound.cli.main import build_parser
    from nwbound.diagnostics import AdviceContext

    args = build_parser("fit").parse_args(["fit", "train.csv", "--target", "y", "-o", "m.npz"])
    assert isinstance(args, argparse.Namespace) and args.lipschitz is None and args.margin is None
    cli = build_estimator(args).set_params(lipschitz="auto")  # what `nwbound fit` runs by default
    return {
        "python NadarayaWatsonClassifier()": AdviceContext.from_estimator(NadarayaWatsonClassifier()),
        "python DyadicClassifier()": AdviceContext.from_estimator(DyadicClassifier()),
        "nwbound fit": AdviceContext.from_estimator(cli, interface="cli"),
    }


def _every_advice(ctx):
    """The text of every warning that gives advice, for each of its causes, under ``ctx``."""
    import warnings

    from nwbound.diagnostics import BoundUsefulness, vacuous_advice, warn_if_contradicting

    texts = {
        "useless, bias": BoundUsefulness.from_summary(100, 0.9, 0.0, 0.0, 0.9, 0.9, 0.3, 0.9, beta=1.0,
                                                      context=ctx).explanation,
        "useless, sampling": BoundUsefulness.from_summary(100, 0.9, 0.0, 0.0, 0.1, 0.1, 3.0, 0.9, beta=1.0,
                                                          context=ctx).explanation,
        "useless, vacuous": BoundUsefulness.from_summary(100, 0.9, 0.8, 0.0, 0.5, 0.5, 1.0, 1.0, beta=1.0,
                                                         context=ctx).explanation,
        "vacuous predictions": vacuous_advice(0.9, ctx),
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_if_contradicting(np.ones(10, bool), delta=0.05, context=ctx)
    texts["contradicting models"] = str(caught[0].message)
    return texts


def _already_set(ctx):
    """Patterns of advice to set what ``ctx`` says is in use (a mention of how it chose is not advice)."""
    import re

    rules = []
    if ctx.lipschitz_auto:
        rules += [r"lipschitz='auto'(?! chose)", r"--lipschitz auto(?! chose)", r"estimate_lipschitz"]
    if ctx.bandwidth == "auto":
        rules += [r"bandwidth='auto'", r"--bandwidth auto", r"bandwidth λ"]
    if ctx.bound == "chernoff":
        rules += [r"bound='chernoff'", r"--bound chernoff"]
    if ctx.learned_space:
        rules += [r"metric='auto'"]
    return [re.compile(r) for r in rules]


def test_no_warning_advises_a_setting_that_is_already_in_use():
    contexts = _default_contexts()
    assert contexts["nwbound fit"].lipschitz_auto and contexts["nwbound fit"].bandwidth == "auto"
    for name, ctx in contexts.items():
        rules = _already_set(ctx)
        assert rules, name
        for warning, text in _every_advice(ctx).items():
            fix = text[text.index("Fix:"):]
            for rule in rules:
                assert not rule.search(fix), f"{name}, {warning}: advises {rule.pattern!r} already in use: {fix}"


def test_predict_report_does_not_advise_lipschitz_auto_as_if_it_were_not_used(tmp_path):
    """A model file stores the L that `--lipschitz auto` chose as a number: `nwbound predict` cannot tell
    it from one given by hand, so the advice to use auto is a condition, not a command."""
    from nwbound.cli._usefulness import UsefulnessTally, quiet_predict_interval
    from nwbound.io import load_model, save_model

    X, y = _data(60)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.05).fit(X, y)  # lipschitz='auto'
    clf.set_params(lipschitz=float(clf.lipschitz_))  # as `nwbound fit` saves it
    model = load_model(save_model(clf, tmp_path / "m.npz"))
    tally = UsefulnessTally()
    tally.add(quiet_predict_interval(model, X + 0.01))
    text = tally.message(model)
    assert text is not None and "Fix:" in text
    assert " `--lipschitz auto` estimates L from the training table." not in text
    if "--lipschitz auto" in text:
        assert "If this model's L was given by hand" in text


# ----------------------------------------------------------------------------------------------
# Finding 9 (b): on contradicting rows the account (bias, sampling) came from the narrowest model
# ----------------------------------------------------------------------------------------------
def _one_row(p: float, e: float):
    from nwbound import PredictionInterval

    return PredictionInterval.from_parts(
        proba=np.array([[p, 1 - p]]), bias=np.zeros((1, 2)), sampling=np.full((1, 2), e),
        kappa=np.array([1.0]), n_eff=np.array([1.0]), vacuous=np.array([False]), bandwidth=np.array([1.0]))


def test_cross_fitted_account_comes_from_the_model_of_the_reported_end():
    from nwbound.spaces import contradicting_rows, intersect_intervals

    parts = [_one_row(0.8, 0.05), _one_row(0.6, 0.1)]  # [0.75, 0.85] and [0.5, 0.7]: they contradict
    assert contradicting_rows(parts).tolist() == [True]
    out = intersect_intervals(*parts)
    # The hull [0.5, 0.85] around p̂ = 0.7: ε = 0.2 is set by the lower end 0.5, the second model's.
    assert out.lower[0, 0] == pytest.approx(0.5) and out.epsilon[0, 0] == pytest.approx(0.2)
    assert out.sampling[0].tolist() == [0.1, 0.1]  # not the first model's 0.05 (the smallest ε)
    # The account explains the reported end: that model's p̂ minus its bias + sampling.
    assert parts[1].proba[0, 0] - (out.bias[0, 0] + out.sampling[0, 0]) == pytest.approx(out.lower[0, 0])
    # Where the models agree, the end is the intersection's, and so is its model.
    agree = intersect_intervals(_one_row(0.7, 0.3), _one_row(0.6, 0.05))  # [0.4, 1] ∩ [0.55, 0.65]
    assert agree.sampling[0].tolist() == [0.05, 0.05]


# ----------------------------------------------------------------------------------------------
# Finding 9 (a): a rare class's rows certified as another class, unseen by the summed check
# ----------------------------------------------------------------------------------------------
def _certified_as_a(n: int):
    """n rows certified as class "a" of ("a", "b", "r"): upper_b = 0.2, upper_r = 0.001 on each."""
    from nwbound import PredictionInterval

    proba = np.tile([0.85, 0.15, 0.0], (n, 1))
    lower, upper = np.tile([0.8, 0.0, 0.0], (n, 1)), np.tile([0.9, 0.2, 0.001], (n, 1))
    return PredictionInterval(proba=proba, lower=lower, upper=upper, epsilon=np.maximum(upper - proba, proba - lower),
                              bias=np.zeros((n, 3)), sampling=upper - lower, kappa=np.ones(n), n_eff=np.ones(n),
                              vacuous=np.zeros(n, dtype=bool), bandwidth=np.ones(n))


def test_a_rare_class_certified_as_another_is_flagged_though_the_summed_check_passes(capsys):
    from nwbound.cli.evaluate import report_class_certificates
    from nwbound.metrics import class_certificates

    iv = _certified_as_a(1000)
    y = np.zeros(1000, dtype=int)
    y[:7] = 2  # 7 of the class "r" (10 rows in all: 3 more are not certified anywhere here)
    errors, ceilings = int(np.sum(y != 0)), float(iv.error_upper.sum())
    assert iv.certified.all() and errors <= ceilings  # the summed check: 7 errors against 200 of ceilings
    table = class_certificates(y, iv)
    assert table.certified_other.tolist() == [0, 0, 7] and table.allowance[2] == pytest.approx(1.0)
    assert table.flagged(0.05).tolist() == [2]  # class r: 7 where about 1 is allowed
    rows = report_class_certificates(y, iv, np.array(["a", "b", "r"]), delta=0.05)
    out, err = capsys.readouterr()
    assert [r["certified_as_another"] for r in rows] == [0, 0, 7] and "Per class" in out
    assert "class 'r': 7 of its 7 rows are certified as another class" in err
    # The same rows labelled as the bound allows: class b at its ceiling's rate is not flagged.
    y_ok = np.where(np.arange(1000) % 5 == 0, 1, 0)
    assert class_certificates(y_ok, iv).flagged(0.05).tolist() == []
    report_class_certificates(y_ok, iv, np.array(["a", "b", "r"]), delta=0.05)
    assert "warning" not in capsys.readouterr().err


def test_fit_preview_warns_of_a_class_certified_as_another(tmp_path, monkeypatch, capsys):
    """The held-out preview of ``nwbound fit`` says it too, per class, from the rows it holds out."""
    import pandas as pd

    from nwbound.cli import _usefulness
    from nwbound.cli.main import main

    n = 500
    held = np.unique(np.linspace(0, n - 1, n // 5).round().astype(int))  # the preview's held-out rows
    label = np.array(["a"] * n, dtype=object)
    label[1::7] = "b"
    label[3::50] = "r"
    label[held[:7]] = "r"  # held-out rows of the rare class, which the stub below certifies as "a"
    rng = np.random.default_rng(0)
    pd.DataFrame({"x": rng.normal(size=n), "label": label}).to_csv(tmp_path / "t.csv", index=False)
    monkeypatch.setattr(_usefulness, "quiet_predict_interval", lambda model, X: _certified_as_a(len(X)))
    rc = main(["fit", str(tmp_path / "t.csv"), "--target", "label", "--metric", "none", "--lipschitz", "1",
               "--bandwidth", "0.5", "-o", str(tmp_path / "m.npz")])
    err = capsys.readouterr().err
    rare = int(np.sum(label[held] == "r"))  # 7, and those of the every-50th rows that are held out
    assert rc == 0 and f"warning: class 'r': {rare} of its {rare} rows are certified as another class" in err
