"""``nwbound experiment tabular --datasets ...`` on sets the defaults were not tuned to."""

from __future__ import annotations

import argparse
import math

import numpy as np
import pytest

import nwbound.experiments.tabular as tabular
from nwbound.experiments._tabular_unseen import UNSEEN_DATASETS, load_unseen


def test_synthetic_stress_sets_have_the_shapes_they_claim():
    X, y, groups = load_unseen("rare_class", seed=3)
    assert groups is None and sorted(np.bincount(y).tolist()) == [10, 900, 1000]
    X, y, _ = load_unseen("const_dup", seed=3)
    assert int((X.std(axis=0) == 0).sum()) == 5
    assert np.array_equal(X[:, 15:20], X[:, :5]) and np.array_equal(X[:, 20:25], X[:, :5])
    X, y, _ = load_unseen("wide", seed=3)
    assert X.shape[1] > X.shape[0]
    X, y, _ = load_unseen("many_classes", seed=3)
    assert np.unique(y).shape[0] == 15
    X, y, _ = load_unseen("heavy_tail", seed=3)
    # sinh(2x) and Cauchy columns: the largest |value| is far beyond a Gaussian's few σ.
    assert np.max(np.abs(X - np.median(X, axis=0)) / np.std(X, axis=0)) > 10
    again = load_unseen("heavy_tail", seed=3)[0]
    assert np.array_equal(X, again)  # reproducible from the seed


def test_dataset_names_and_real_sets_need_a_folder():
    assert tabular._dataset_list("unseen") == tuple(UNSEEN_DATASETS)
    assert tabular._dataset_list("iris,rare-class") == ("iris", "rare_class")
    with pytest.raises(argparse.ArgumentTypeError, match="rare_class"):
        tabular._dataset_list("titanic")
    with pytest.raises(ValueError, match="--data-dir"):
        load_unseen("mnist")
    config = tabular.TabularConfig(datasets=("mnist",), data_dir="/nonexistent/folder")
    with pytest.raises(Exception, match="mnist data"):
        tabular.load_any("mnist", config)


@pytest.mark.slow  # five cross-fitted models with their score-model choice: ~10 s on a loaded 2-core machine
def test_run_fold_with_groups_and_only_some_methods():
    rng = np.random.default_rng(0)
    n = 240
    groups = np.repeat(np.arange(12), n // 12)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    from sklearn.model_selection import StratifiedGroupKFold

    train, test = next(StratifiedGroupKFold(3, shuffle=True, random_state=0).split(X, y, groups))
    config = tabular.TabularConfig(datasets=("x",), folds=(0,), n_folds=3, hgb_max_iter=10,
                                   nw_methods=("nw_auto",))
    rows, queries = tabular.run_fold("x", X, y, train, test, 0, config, groups=groups)
    methods = [r["method"] for r in rows]
    assert methods == ["nw_auto", "hgb", "knn15", "logistic"]  # no single split asked: no marginal peers
    nw = rows[0]
    assert not nw["note"] and 0.5 < nw["accuracy"] <= 1.0
    assert 0 <= nw["selected_errors"] <= nw["n_selected"] <= test.shape[0]
    assert math.isfinite(nw["fit_s"]) and math.isfinite(nw["query_s"])
    assert len(queries["nw_auto"]["pred"]) == test.shape[0]
