"""The inter-patient learned-space attempt: records never straddle a split (tiny synthetic records)."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from nwbound import NadarayaWatsonClassifier
from nwbound.datasets.mitbih import BeatSet
from nwbound.experiments import _ecg_inter_learned as learned


def _records(n_records: int = 12, per: int = 40, seed: int = 0):
    """Rows of ``n_records`` records; the label depends on x₀, each record shifted a little."""
    rng = np.random.default_rng(seed)
    rec = np.repeat([f"r{i:02d}" for i in range(n_records)], per)
    shift = np.repeat(rng.normal(scale=0.3, size=n_records), per)
    X = rng.normal(size=(rec.size, 3))
    X[:, 0] += shift
    y = np.where(X[:, 0] > 0.6, 2, np.where(X[:, 0] > -0.2, 1, 0))
    return X, y, rec


def _disjoint(*sets):
    return all(not (a & b) for i, a in enumerate(sets) for b in sets[i + 1:])


def test_record_folds_keep_each_record_whole():
    X, y, rec = _records()
    folds = learned.record_folds(y, rec, 3, seed=1)
    assert sorted(np.concatenate(folds).tolist()) == list(range(y.size))
    assert _disjoint(*(set(rec[f].tolist()) for f in folds))
    # and the slow re-statement: every record's rows all in one fold
    where = {r: {i for i, f in enumerate(folds) if np.any(rec[f] == r)} for r in np.unique(rec)}
    assert all(len(v) == 1 for v in where.values())


def test_record_folds_refuses_too_few_records():
    X, y, rec = _records(n_records=2)
    with pytest.raises(ValueError, match="at least 3 groups"):
        learned.record_folds(y, rec, 3)


def test_learned_fit_splits_by_record_in_every_cross_fitted_model():
    """Map rows, held-out L-check rows and kernel-sum rows of every model: no record in two of them."""
    X, y, rec = _records()
    model = learned.learned_model("hoeffding", 0).fit(X, y, groups=rec)
    models = model.cross_fit_models_
    assert len(models) == 2  # the swapped pair (cross_fit="auto")
    for m in models:
        check = set(m.check_rows_.tolist())
        map_rows = [i for i in m.metric_rows_.tolist() if i not in check]
        sides = (set(rec[map_rows].tolist()), set(rec[m.check_rows_].tolist()), set(rec[m.nw_rows_].tolist()))
        assert all(sides) and _disjoint(*sides)
        assert sorted(map_rows + sorted(check) + m.nw_rows_.tolist()) == list(range(y.size))
        assert m.metric_report_.grouped  # the score model's comparison folds are by record too


class _Spy(NadarayaWatsonClassifier):
    """A fast numeric NWC that remembers the records (column 0) it was fitted on and queried with."""

    log: list = []

    def fit(self, X, y, sample_weight=None, groups=None):
        _Spy.log.append(("fit", set(np.asarray(X)[:, 0].tolist()), set(np.asarray(groups).tolist())))
        return super().fit(X, y, sample_weight=sample_weight, groups=groups)

    def predict_interval(self, X, **kw):
        _Spy.log.append(("query", set(np.asarray(X)[:, 0].tolist()), None))
        return super().predict_interval(X, **kw)


def test_out_of_fold_never_queries_a_record_it_was_fitted_on(monkeypatch):
    X, y, _ = _records()
    rec = np.repeat(np.arange(12), 40)
    X = np.column_stack([rec.astype(float), X])  # column 0 names the record
    _Spy.log = []
    monkeypatch.setattr(learned, "learned_model", lambda bound, seed: _Spy(
        metric=None, lipschitz=0.5, bandwidth=2.0, bound=bound, cross_fit=False))
    out = learned.out_of_fold(X, y, rec, bound="hoeffding", seed=0)
    fits = [e for e in _Spy.log if e[0] == "fit"]
    queries = [e for e in _Spy.log if e[0] == "query"]
    assert len(fits) == len(queries) == learned.LEARNED_FOLDS
    for (_, fitted, groups), (_, asked, _) in zip(fits, queries):
        assert fitted == {float(g) for g in groups}  # groups are the records of the fitted rows
        assert not fitted & asked
    assert set().union(*(q[1] for q in queries)) == set(map(float, range(12)))  # every row queried once
    assert out["proba"].shape == (y.size, 5) and np.allclose(out["proba"].sum(axis=1), 1.0)
    assert np.all(out["lower"] <= out["proba"] + 1e-12) and np.all(out["proba"] <= out["upper"] + 1e-12)


def _beats(n_records: int, per: int, seed: int) -> BeatSet:
    X, y, rec = _records(n_records, per, seed)
    rng = np.random.default_rng(seed + 1)
    morph = np.column_stack([X, rng.normal(size=(y.size, 97))]).astype(np.float32)
    rhythm = rng.normal(size=(y.size, 7)).astype(np.float32)
    rhythm[:, 0] += y  # the rhythm carries the class too
    return BeatSet(morph, y, rec, np.arange(y.size), rhythm=rhythm)


@pytest.mark.slow
def test_run_learned_end_to_end_on_synthetic_records():
    train, test = _beats(9, 30, 0), _beats(3, 30, 5)
    args = argparse.Namespace(seed=0, bound="hoeffding", learned_train=None)
    run = learned.run_learned(train, test, args, rhythm_weight=2.0)
    assert run.weights[0] in learned.LEARNED_GRID_S and run.weights[1] in learned.LEARNED_GRID_V
    assert [f.rule.split(" ")[0] for f in run.fits] == ["weighted", "argmax", "balanced"]
    for f in run.fits:
        assert f.y_pred.shape == test.y.shape and f.certified.dtype == bool
        assert f.report.accuracy == pytest.approx(np.mean(f.y_pred == test.y))
    w, a = run.fits[0], run.fits[1]
    # the weighted rule keeps every certified argmax label
    assert np.array_equal(w.certified, a.certified)
    assert np.array_equal(w.y_pred[a.certified], a.y_pred[a.certified])
    assert run.n_train == train.y.size and "by record" in run.map_report
    assert learned.learned_text(run)[0].startswith("### Learned space")


def test_add_learned_refuses_a_result_of_other_test_beats():
    beats = _beats(6, 10, 0)
    beats = BeatSet(beats.X, beats.y, np.repeat(["101", "106", "108", "100", "103", "105"], 10),
                    beats.sample, rhythm=beats.rhythm)  # three DS1 and three DS2 records
    res = argparse.Namespace(y_test=np.zeros(30, dtype=int), records=np.repeat(["100", "103", "105"], 10),
                             params={"both": {"rhythm_weight": 2.0}}, fits=[], learned=None)
    with pytest.raises(RuntimeError, match="DS2 beats of the result"):
        learned.add_learned(res, beats, argparse.Namespace(seed=0, bound="hoeffding", learned_train=None))
