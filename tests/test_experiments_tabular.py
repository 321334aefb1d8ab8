"""The tabular experiment (nwbound experiment tabular) on scikit-learn's bundled sets."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import nwbound.experiments.tabular as tabular
from nwbound.cli.main import main
from nwbound.experiments import EXPERIMENTS

ARGS = ["experiment", "tabular", "--quick", "--quiet", "--datasets", "iris"]


def _read(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _f(value: str) -> float:
    return float(value) if value not in ("", "nan") else math.nan


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("tabular") / "res"
    assert main([*ARGS, "--output", str(out)]) == 0
    return out


def _fold(name: str, fold: int):
    X, y = tabular.load_dataset(name)
    train, test = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))[fold]
    return X, y, train, test


def test_registered_and_bad_dataset(tmp_path, capsys):
    assert "tabular" in EXPERIMENTS
    with pytest.raises(SystemExit):
        main(["experiment", "tabular", "--datasets", "iris,titanic", "--output", str(tmp_path / "x")])
    assert "titanic" in capsys.readouterr().err
    with pytest.raises(ValueError, match="titanic"):
        tabular.load_dataset("titanic")


def test_quick_run_files_and_sane_values(quick_run):
    out = quick_run
    for name in ("folds/iris_fold0.csv", "tabular_summary.csv", "summary.md", "tabular_risk_coverage.png"):
        assert (out / name).is_file(), name
    assert not (out / "folds" / "iris_fold1.csv").exists()  # --quick: the first fold only
    rows = _read(out / "folds" / "iris_fold0.csv")
    assert tuple(rows[0]) == tabular.COLUMNS
    methods = [r["method"] for r in rows]
    for m in ("nw_standard", "nw_standard_k25", "nw_auto", "nw_auto_single", "nw_hgb_scores", "hgb", "knn15", "logistic",
              "conformal_lr", "conformal_hgb", "acceptance_lr", "acceptance_hgb"):
        assert m in methods
    for r in rows:
        assert r["dataset"] == "iris" and r["fold"] == "0" and r["n_test"] == "30"
        if r["note"]:  # a method that could not be fitted on this fold: said, and no number made up
            assert r["note"].startswith("not fitted:") and r["method"] in tabular.LEARNED_METHODS
            assert all(math.isnan(_f(r[k])) for k in ("accuracy", "n_selected", "lipschitz"))
            continue
        acc, n_err, n_test = _f(r["accuracy"]), int(r["n_errors"]), int(r["n_test"])
        assert 0.0 <= acc <= 1.0
        assert math.isclose(acc, 1 - n_err / n_test)
        if r["selection"]:
            n_sel, sel_err = int(_f(r["n_selected"])), int(_f(r["selected_errors"]))
            assert 0 <= sel_err <= n_sel <= n_test
            assert math.isclose(_f(r["selected_share"]), n_sel / n_test)
        if r["selection"] == "certified":
            assert _f(r["lipschitz"]) > 0
            if r["method"] in tabular.LEARNED_METHODS:  # lipschitz="auto": pilot × 2^k
                k = math.log2(_f(r["lipschitz"]) / _f(r["lipschitz_pilot"]))
                assert abs(k - round(k)) < 1e-9 and r["lipschitz_all_rejected"] in ("True", "False")
            ceiling = _f(r["sum_error_ceiling"])
            assert 0.0 <= ceiling <= int(r["n_selected"]) + 1e-9
            if int(r["n_selected"]):
                assert 0.0 <= _f(r["mean_error_ceiling"]) <= 1.0
    summary = _read(out / "tabular_summary.csv")
    pooled = {r["method"]: r for r in summary}
    assert pooled["logistic"]["n_folds"] == "1" and pooled["logistic"]["n_test"] == "30"
    best = max(_f(pooled[m]["accuracy"]) for m in ("hgb", "knn15", "logistic"))
    assert math.isclose(_f(pooled["nw_standard"]["accuracy_gap"]), _f(pooled["nw_standard"]["accuracy"]) - best,
                        abs_tol=1e-6)
    text = (out / "summary.md").read_text(encoding="utf-8")
    assert "## iris" in text and "targets" in text


def test_baselines_use_the_same_folds(quick_run):
    """LR, 15-NN, today's NW and the conformal singletons recomputed directly on fold 0 of iris."""
    from nwbound import NadarayaWatsonClassifier
    from nwbound.assumptions import estimate_lipschitz

    X, y, train, test = _fold("iris", 0)
    rows = {r["method"]: r for r in _read(quick_run / "folds" / "iris_fold0.csv")}
    lr = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000, random_state=0)).fit(X[train], y[train])
    assert math.isclose(_f(rows["logistic"]["accuracy"]), lr.score(X[test], y[test]))
    sc = StandardScaler().fit(X[train])
    knn = KNeighborsClassifier(n_neighbors=15).fit(sc.transform(X[train]), y[train])
    assert math.isclose(_f(rows["knn15"]["accuracy"]), knn.score(sc.transform(X[test]), y[test]))
    # Today's recipe: L from estimate_lipschitz on the standardized training fold.
    X_tr, X_te = sc.transform(X[train]), sc.transform(X[test])
    lip = estimate_lipschitz(X_tr, y[train], random_state=0).value
    assert math.isclose(_f(rows["nw_standard"]["lipschitz"]), lip, rel_tol=1e-9)
    iv = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=lip).fit(X_tr, y[train]).predict_interval(X_te)
    assert int(rows["nw_standard"]["n_selected"]) == int(iv.certified.sum())
    # Split conformal (LAC) by hand: LR on M, quantile of 1 − p̂_y on N, α = 0.05.
    # The learned spaces' split of fold 0 (seed 1000·seed + fold = 0), read from the classifier:
    # LR is fitted on the rows that fit the map, the sets are calibrated on the kernel sums' rows N.
    space = NadarayaWatsonClassifier(metric="auto", lipschitz="auto", bandwidth="auto", cross_fit=False,
                                     random_state=0).fit(X_tr, y[train])
    m = np.setdiff1d(space.metric_rows_, space.check_rows_)
    n = space.nw_rows_
    assert int(rows["conformal_lr"]["n_fit"]) == m.size and int(rows["nw_auto_single"]["n_fit"]) == n.size
    # The default metric="auto" is cross-fitted as the swapped pair: its kernel sums hold every
    # training row once.
    assert int(rows["nw_auto"]["n_fit"]) == train.size  # the swapped pair: each row in one model's sums
    assert rows["nw_auto"]["space"] and rows["nw_auto_single"]["space"] == space.metric_report_.chosen
    lr_m = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000, random_state=0))
    lr_m.fit(X_tr[m], y[train][m])
    scores = np.sort(1 - lr_m.predict_proba(X_tr[n])[np.arange(n.size), y[train][n]])
    k = math.ceil((n.size + 1) * 0.95)
    q = scores[k - 1]
    sets = (1 - lr_m.predict_proba(X_te)) <= q + 1e-8
    single = sets.sum(axis=1) == 1
    wrong = ~sets[np.arange(test.size), y[test]]
    assert int(rows["conformal_lr"]["n_selected"]) == int(single.sum())
    assert int(rows["conformal_lr"]["selected_errors"]) == int((single & wrong).sum())


def test_resume_skips_done_folds(quick_run, monkeypatch):
    fold_csv = quick_run / "folds" / "iris_fold0.csv"
    before = fold_csv.stat().st_mtime_ns

    def boom(*args, **kwargs):
        raise AssertionError("a finished fold was recomputed")

    monkeypatch.setattr(tabular, "run_fold", boom)
    assert main([*ARGS, "--output", str(quick_run), "--resume"]) == 0
    assert fold_csv.stat().st_mtime_ns == before
    assert (quick_run / "summary.md").is_file()


def test_summary_rows_pool_counts():
    nan = math.nan
    base = dict(dataset="d", setting="", selection="certified", n_fit=5, lipschitz=1.0, errors_caught_10=nan,
                fit_s=0.0, query_s=0.0)
    rows = [
        dict(base, fold=0, method="nw", n_test=10, accuracy=0.9, n_errors=1, n_selected=4, selected_errors=0,
             sum_error_ceiling=0.4),
        dict(base, fold=1, method="nw", n_test=20, accuracy=0.9, n_errors=2, n_selected=6, selected_errors=1,
             sum_error_ceiling=0.5),
        dict(base, fold=0, method="hgb", selection="", n_test=10, accuracy=1.0, n_errors=0, n_selected=nan,
             selected_errors=nan, sum_error_ceiling=nan),
    ]
    out = {r["method"]: r for r in tabular.summary_rows(rows)}
    nw = out["nw"]
    assert (nw["n_test"], nw["n_errors"], nw["n_selected"], nw["selected_errors"]) == (30, 3, 10, 1)
    assert math.isclose(nw["accuracy"], 0.9) and math.isclose(nw["selected_share"], 10 / 30)
    assert math.isclose(nw["mean_error_ceiling"], 0.09) and nw["errors_le_ceilings"] is False
    assert math.isclose(nw["accuracy_gap"], -0.1)
    assert math.isnan(out["hgb"]["selected_share"]) and out["hgb"]["errors_le_ceilings"] == ""
