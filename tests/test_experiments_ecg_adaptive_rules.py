"""Tests of the adaptive split's new pieces: raw-signal morphology, the weighted rule, its choice on DS1."""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from nwbound.cli.main import main
from nwbound.metrics import bayes_decision
from nwbound.experiments.ecg_adaptive import (
    _neighbors_grid_arg,
    choose_class_weights,
    choose_decision_neighbors,
    class_weights_arg,
    weighted_decision,
)
from nwbound.experiments.ecg_signal_features import beat_windows, remove_baseline

EXCERPT = Path(__file__).resolve().parent / "data" / "mitdb_excerpt"


# --------------------------------------------------------------------------- signal morphology
def test_beat_windows_match_a_slow_formula():
    rng = np.random.default_rng(0)
    sig = rng.normal(size=2_000)
    pos = np.array([3, 500, 1_000, 1_990])
    ref = np.array([False, True, True, False])
    w = beat_windows(sig, pos, 360.0, reference=ref)
    unit = np.median(np.abs(sig[[500, 1_000]]))
    before, after, step = 90, 162, 4  # 0.25 s, 0.45 s, 360/90
    for i, p in enumerate(pos):
        expected = [sig[min(max(p + o, 0), sig.size - 1)] / unit for o in range(-before, after, step)]
        np.testing.assert_allclose(w[i], expected)


def test_remove_baseline_matches_a_slow_median_in_the_interior():
    rng = np.random.default_rng(1)
    fs = 50.0  # 200 ms -> 11 samples, 600 ms -> 31 samples
    sig = rng.normal(size=400) + np.linspace(0, 3, 400)
    first = np.array([np.median(sig[max(i - 5, 0):i + 6]) if 5 <= i < 395 else np.nan for i in range(400)])
    i = np.arange(40, 360)
    second = np.array([np.median(first[j - 15:j + 16]) for j in i])
    np.testing.assert_allclose(remove_baseline(sig, fs)[i], sig[i] - second)


@pytest.mark.parametrize("kwargs, match", [
    ({"sample": [0, 5_000]}, "outside the signal"),
    ({"sample": [10, 20], "reference": [False, False]}, "no beat"),
    ({"sample": [10.0, 20.0]}, "integer"),
    ({"sample": [10, 20], "rate": 0}, "rate"),
])
def test_beat_windows_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        beat_windows(np.ones(100), fs=360.0, **kwargs)


def test_beat_windows_rejects_a_flat_reference():
    with pytest.raises(ValueError, match="zero R amplitude"):
        beat_windows(np.zeros(100), [10, 20], 360.0)


# --------------------------------------------------------------------------- the weighted rule
def _random_intervals(seed: int, n: int = 400, width: float = 0.2):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(5, 0.4), size=n)
    half = rng.uniform(0.0, width, size=(n, 1))
    return p, np.clip(p - half, 0, 1), np.clip(p + half, 0, 1)


def test_weighted_decision_matches_a_slow_formula():
    p, lo, up = _random_intervals(0)
    w = np.array([1.0, 4.0, 2.0, 1.0, 1.0])
    d = weighted_decision(p, lo, up, w)
    a = bayes_decision(p, lower=lo, upper=up)
    assert 0 < a.certified.sum() < p.shape[0]  # both kinds of rows present
    for i in range(p.shape[0]):
        if a.certified[i]:
            assert d.y_pred[i] == int(np.argmax(p[i])) and d.certified[i]
        else:
            assert d.y_pred[i] == max(range(5), key=lambda c: w[c] * p[i, c]) and not d.certified[i]
        assert d.error_upper[i] == pytest.approx(1.0 - lo[i, d.y_pred[i]])


def test_weighted_decision_review_queue_from_another_estimate():
    # the box and p̂ of a wide neighbourhood certify; another p̂ labels the review queue
    p, lo, up = _random_intervals(5)
    q = np.random.default_rng(6).dirichlet(np.full(5, 0.4), size=p.shape[0])
    w = np.array([1.0, 3.0, 2.0, 1.0, 1.0])
    d = weighted_decision(p, lo, up, w, review_proba=q)
    for i in range(p.shape[0]):
        box_certifies = [c for c in range(5) if all(lo[i, c] > up[i, o] for o in range(5) if o != c)]
        if box_certifies:  # certified: the class the box puts above every other, whatever q says
            assert d.certified[i] and d.y_pred[i] == box_certifies[0]
        else:
            assert not d.certified[i] and d.y_pred[i] == max(range(5), key=lambda c: w[c] * q[i, c])
        assert d.error_upper[i] == pytest.approx(1.0 - lo[i, d.y_pred[i]])
    assert 0 < d.certified.sum() < p.shape[0]
    assert np.any(d.y_pred[~d.certified] != weighted_decision(p, lo, up, w).y_pred[~d.certified])
    with pytest.raises(ValueError, match="review_proba"):
        weighted_decision(p, lo, up, w, review_proba=q[:, :4])


def test_weighted_decision_with_unit_weights_is_argmax():
    p, lo, up = _random_intervals(1)
    d = weighted_decision(p, lo, up, np.ones(5))
    np.testing.assert_array_equal(d.y_pred, np.argmax(p, axis=1))


@pytest.mark.parametrize("weights", [[1, 2, 3], [1, 0, 1, 1, 1], [1, np.nan, 1, 1, 1]])
def test_weighted_decision_rejects_bad_weights(weights):
    p, lo, up = _random_intervals(2, n=5)
    with pytest.raises(ValueError, match="weights"):
        weighted_decision(p, lo, up, weights)


def test_choose_class_weights_matches_a_slow_search():
    p, lo, up = _random_intervals(3, width=0.3)
    y = np.array([np.random.default_rng(4).choice(5, p=row) for row in p])
    grid_s, grid_v = (1.0, 2.0, 5.0), (1.0, 3.0)
    (ws, wv), rows = choose_class_weights(y, p, lo, up, grid_s=grid_s, grid_v=grid_v, criterion="mean_min")
    assert len(rows) == 6

    def score(a, b):
        pred = weighted_decision(p, lo, up, [1, a, b, 1, 1]).y_pred
        parts = []
        for c in (1, 2):
            tp = sum(1 for t, q in zip(y, pred) if t == c and q == c)
            parts.append(min(100 * tp / max(sum(1 for t in y if t == c), 1),
                             100 * tp / max(sum(1 for q in pred if q == c), 1)))
        return sum(parts) / 2

    scores = {(a, b): score(a, b) for a in grid_s for b in grid_v}
    best = max(scores.values())
    assert scores[(ws, wv)] == pytest.approx(best)
    assert (ws, wv) == next(k for k in ((a, b) for a in grid_s for b in grid_v) if scores[k] >= best - 1e-12)
    for r in rows:
        assert r["objective_%"] == pytest.approx(scores[(r["w_S"], r["w_V"])])


def _slow_se_ppv(y, p, lo, up, ws, wv):
    """S and V Se / +P (%) of the weighted rule, beat by beat (certified: argmax; else argmax of w·p̂)."""
    cert = bayes_decision(p, lower=lo, upper=up).certified
    w = [1.0, ws, wv, 1.0, 1.0]
    pred = [int(np.argmax(p[i])) if cert[i] else max(range(5), key=lambda c: (w[c] * p[i, c], -c))
            for i in range(len(y))]
    out = {}
    for c in (1, 2):
        tp = sum(1 for t, q in zip(y, pred) if t == c and q == c)
        out[c] = (100 * tp / max(sum(1 for t in y if t == c), 1), 100 * tp / max(sum(1 for q in pred if q == c), 1))
    return out


def test_choose_class_weights_se_at_ppv_matches_a_slow_rule():
    p, lo, up = _random_intervals(5, width=0.3)
    y = np.array([np.random.default_rng(6).choice(5, p=row) for row in p])
    grid_s, grid_v = (1.0, 2.0, 4.0, 8.0), (1.0, 1.5, 3.0)
    fig_s = {a: _slow_se_ppv(y, p, lo, up, a, 1.0)[1] for a in grid_s}  # S with V's weight at 1
    fig_v = {b: _slow_se_ppv(y, p, lo, up, 1.0, b)[2] for b in grid_v}  # V with S's weight at 1
    # a V target some weights reach and others do not; an S target no weight reaches (break-even fallback)
    ppv_v = sorted(f[1] for f in fig_v.values())
    assert ppv_v[0] < ppv_v[-1]
    target_v = (ppv_v[0] + ppv_v[-1]) / 2
    target_s = max(f[1] for f in fig_s.values()) + 1.0
    (ws, wv), rows = choose_class_weights(y, p, lo, up, grid_s=grid_s, grid_v=grid_v,
                                          target_ppv=(target_s, target_v), criterion="se_at_ppv")
    best_v = None
    for b in grid_v:  # the largest Se among +P ≥ target, the smaller weight on ties
        se, ppv = fig_v[b]
        if ppv >= target_v and (best_v is None or se > fig_v[best_v][0]):
            best_v = b
    best_s = grid_s[0]
    for a in grid_s:  # none feasible: the largest min(Se, +P)
        if min(fig_s[a]) > min(fig_s[best_s]):
            best_s = a
    assert (ws, wv) == (best_s, best_v)
    assert len(rows) == len(grid_s) * len(grid_v)  # 1 is on both grids: no extra pair
    for r in rows:
        slow = _slow_se_ppv(y, p, lo, up, r["w_S"], r["w_V"])
        assert (r["S_Se_%"], r["S_+P_%"], r["V_Se_%"], r["V_+P_%"]) == pytest.approx((*slow[1], *slow[2]))
    # a grid without 1: the pairs with the other weight at 1 are added and used
    (ws2, _), rows2 = choose_class_weights(y, p, lo, up, grid_s=(2.0, 4.0), grid_v=(1.5, 3.0),
                                           target_ppv=(target_s, target_v), criterion="se_at_ppv")
    assert len(rows2) == 4 + 4 and {(2.0, 1.0), (1.0, 3.0)} <= {(r["w_S"], r["w_V"]) for r in rows2}
    assert ws2 == max((2.0, 4.0), key=lambda a: (min(fig_s[a]), -a))


@pytest.mark.parametrize("kwargs, match", [({"criterion": "best"}, "criterion"),
                                           ({"target_ppv": (80.0,)}, "target_ppv"),
                                           ({"target_ppv": (80.0, 150.0)}, "target_ppv"),
                                           ({"grid_s": ()}, "grid_s")])
def test_choose_class_weights_rejects_bad_settings(kwargs, match):
    p, lo, up = _random_intervals(7, n=20)
    with pytest.raises(ValueError, match=match):
        choose_class_weights(np.zeros(20, dtype=int), p, lo, up, **kwargs)


def test_class_weights_arg():
    assert class_weights_arg("auto") == "auto" and class_weights_arg("3,1.5") == (3.0, 1.5)
    for bad in ("3", "a,b", "0,1", "1,2,3", "-1,2"):
        with pytest.raises(argparse.ArgumentTypeError, match="--class-weights"):
            class_weights_arg(bad)


# --------------------------------------------------------------------------- CLI
@pytest.mark.slow
def test_tiny_adaptive_run_with_fixed_weights_and_kaggle_features(tmp_path):
    out = tmp_path / "o"
    code = main(["experiment", "ecg", "--data-dir", str(EXCERPT), "--split", "adaptive", "--local-minutes", "0.5",
                 "--quick", "--threads", "1", "--output", str(out), "--quiet", "--class-weights", "3,2",
                 "--adaptive-features", "kaggle", "--certificate-neighbors", "20"])
    assert code == 0
    with open(out / "adaptive_overview.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["rule"] for r in rows} == {"argmax", "weighted", "balanced"}
    assert {(r["features"], float(r["w_S"]), float(r["w_V"])) for r in rows} == {("kaggle", 3.0, 2.0)}
    assert {int(r["certificate_neighbors"]) for r in rows} == {20}
    assert not (out / "adaptive_class_weights.csv").exists()  # no DS1 search with fixed weights
    weighted = next(r for r in rows if r["rule"] == "weighted")
    argmax = next(r for r in rows if r["rule"] == "argmax")
    assert weighted["certified_%"] == argmax["certified_%"]  # the same certified beats and labels


# --------------------------------------------------------------------------- round 9: +P by its lower confidence end
def _slow_lcb_choice(y, p, lo, up, rec, grid, c, target, confidence):
    """Independent slow rule of ``se_at_ppv_lcb`` for class ``c`` (the other class's weight at 1)."""
    from scipy.stats import beta

    cert = bayes_decision(p, lower=lo, upper=up).certified

    def pred(w):
        ws = [1.0] * 5
        ws[c] = w
        return [int(np.argmax(p[i])) if cert[i] else max(range(5), key=lambda k: (ws[k] * p[i, k], -k))
                for i in range(len(y))]

    def figures(w, keep):
        pr = pred(w)
        tp = sum(1 for i in range(len(y)) if keep[i] and pr[i] == c and y[i] == c)
        calls = sum(1 for i in range(len(y)) if keep[i] and pr[i] == c)
        pos = sum(1 for i in range(len(y)) if keep[i] and y[i] == c)
        low = 100 * beta.ppf((1 - confidence) / 2, tp, calls - tp + 1) if tp > 0 else 0.0
        return 100 * tp / max(pos, 1), low

    def best(keep):
        feasible = [(figures(w, keep)[0], -i) for i, w in enumerate(grid) if figures(w, keep)[1] >= target]
        return None if not feasible else grid[-max(feasible)[1]]

    everyone = [True] * len(y)
    got = best(everyone)
    if got is not None:
        return got, "lcb"
    first = pred(grid[0])
    false = {}
    for i in range(len(y)):
        if first[i] == c and y[i] != c:
            false[rec[i]] = false.get(rec[i], 0) + 1
    worst = sorted(false, key=lambda r: (-false[r], r))[0]
    got = best([r != worst for r in rec])
    if got is not None:
        return got, f"lcb without record {worst}"
    scores = [min(*figures(w, everyone)) for w in grid]
    return grid[scores.index(max(scores))], "break-even"


def _adverse_record_data():
    """Random beats of records a, b, c plus record z, whose beats look S (p̂_S = 0.6) but are N."""
    p, lo, up = _random_intervals(11, n=150, width=0.3)
    y = np.array([np.random.default_rng(12).choice(5, p=row) for row in p])
    pz = np.tile([0.4, 0.6, 0.0, 0.0, 0.0], (25, 1))
    rec = np.array(["a", "b", "c"] * 50 + ["z"] * 25)
    return (np.concatenate([y, np.zeros(25, dtype=int)]), np.vstack([p, pz]), np.vstack([lo, pz - 0.5]),
            np.vstack([up, pz + 0.5]), rec)


@pytest.mark.parametrize("target_s", [20.0, 45.0, 60.0, 80.0, 90.0])
def test_choose_class_weights_lcb_matches_a_slow_rule(target_s):
    y, p, lo, up, rec = _adverse_record_data()
    grid_s, grid_v = (1.0, 2.0, 4.0), (1.0, 3.0)
    (ws, wv), rows = choose_class_weights(y, p, lo, up, grid_s=grid_s, grid_v=grid_v, records=rec,
                                          target_ppv=(target_s, 40.0), confidence=0.9)
    slow_s = _slow_lcb_choice(y, p, lo, up, rec, grid_s, 1, target_s, 0.9)
    slow_v = _slow_lcb_choice(y, p, lo, up, rec, grid_v, 2, 40.0, 0.9)
    assert (ws, rows[0]["S_chosen_by"]) == slow_s
    assert (wv, rows[0]["V_chosen_by"]) == slow_v


def test_choose_class_weights_lcb_reaches_each_step():
    # the targets above were picked to walk the three steps; this keeps them honest
    y, p, lo, up, rec = _adverse_record_data()
    steps = {choose_class_weights(y, p, lo, up, grid_s=(1.0, 2.0, 4.0), grid_v=(1.0,), records=rec,
                                  target_ppv=(t, 0.0), confidence=0.9)[1][0]["S_chosen_by"] for t in (45, 60, 90)}
    assert steps == {"lcb", "lcb without record z", "break-even"}
    # without records there is no one-record step
    (_, _), rows = choose_class_weights(y, p, lo, up, grid_s=(1.0, 2.0, 4.0), grid_v=(1.0,), target_ppv=(60, 0.0),
                                        confidence=0.9)
    assert rows[0]["S_chosen_by"] == "break-even" and "S_left_out" not in rows[0]


def test_choose_class_weights_lcb_rows_hold_the_clopper_pearson_lower_end():
    from scipy.stats import beta

    y, p, lo, up, rec = _adverse_record_data()
    _, rows = choose_class_weights(y, p, lo, up, grid_s=(1.0, 2.0), grid_v=(1.0, 3.0), records=rec)
    for r in rows:
        slow = _slow_se_ppv(y, p, lo, up, r["w_S"], r["w_V"])
        pred = weighted_decision(p, lo, up, [1, r["w_S"], r["w_V"], 1, 1]).y_pred
        for c, name in ((1, "S"), (2, "V")):
            se, ppv = slow[c]
            calls = sum(1 for q in pred if q == c)
            tp = round(ppv * calls / 100)
            expected = 100 * beta.ppf(0.025, tp, calls - tp + 1) if tp else 0.0
            assert r[f"{name}_+P_lcb_%"] == pytest.approx(expected)


@pytest.mark.parametrize("kwargs, match", [({"confidence": 1.0}, "confidence"), ({"confidence": True}, "confidence"),
                                           ({"records": ["a"]}, "records")])
def test_choose_class_weights_lcb_rejects_bad_settings(kwargs, match):
    p, lo, up = _random_intervals(7, n=20)
    with pytest.raises(ValueError, match=match):
        choose_class_weights(np.zeros(20, dtype=int), p, lo, up, **kwargs)


# --------------------------------------------------------------------------- round 9, look 2: k chosen with the weights
def test_choose_decision_neighbors_matches_a_slow_rule():
    y, p, lo, up, rec = _adverse_record_data()
    rng = np.random.default_rng(13)
    review = {k: rng.dirichlet(np.full(5, 0.5), size=len(y)) for k in (6, 9, 14)}
    review[9] = p  # one k whose p̂ is the certificate model's
    grids = {"grid_s": (1.0, 2.0, 4.0), "grid_v": (1.0, 3.0), "target_ppv": (60.0, 40.0)}
    k, w, rows = choose_decision_neighbors(y, p, lo, up, review, records=rec, confidence=0.9, **grids)
    scores = {}
    for kk, q in review.items():  # slow: each k's own weight choice, then its score at the chosen pair
        ws = _slow_lcb_choice_review(y, p, lo, up, rec, q, grids["grid_s"], 1, 60.0)
        wv = _slow_lcb_choice_review(y, p, lo, up, rec, q, grids["grid_v"], 2, 40.0)
        pair = [1.0, ws[0], wv[0], 1.0, 1.0]
        parts = []
        for c, (_, how, worst) in ((1, ws), (2, wv)):
            keep = [r != worst for r in rec] if how == "without" else [True] * len(y)
            se, low, _ = _slow_figures(y, p, lo, up, q, pair, c, keep)
            parts.append(min(se, low))
        scores[kk] = (sum(parts) / 2, (ws[0], wv[0]))
    best = max(sorted(scores), key=lambda kk: (scores[kk][0], -kk))
    assert k == best and w == scores[best][1]
    assert {r["k"] for r in rows} == set(review) and sum(r["chosen"] for r in rows) == 1
    for r in rows:
        assert r["k_score_%"] == pytest.approx(scores[r["k"]][0])


def _slow_figures(y, p, lo, up, q, ws, c, keep, confidence=0.9):
    """Slow Se (%), +P lower end (%) and labels of class ``c`` under weights ``ws``, ``q`` on the review queue."""
    from scipy.stats import beta

    cert = bayes_decision(p, lower=lo, upper=up).certified
    pr = [int(np.argmax(p[i])) if cert[i] else max(range(5), key=lambda k: (ws[k] * q[i, k], -k))
          for i in range(len(y))]
    tp = sum(1 for i in range(len(y)) if keep[i] and pr[i] == c and y[i] == c)
    calls = sum(1 for i in range(len(y)) if keep[i] and pr[i] == c)
    pos = sum(1 for i in range(len(y)) if keep[i] and y[i] == c)
    low = 100 * beta.ppf((1 - confidence) / 2, tp, calls - tp + 1) if tp > 0 else 0.0
    return 100 * tp / max(pos, 1), low, pr


def _slow_lcb_choice_review(y, p, lo, up, rec, q, grid, c, target):
    """Slow ``se_at_ppv_lcb`` for class ``c`` with ``q`` deciding the review queue: (w, how, left-out record)."""

    def figures(w, keep):
        ws = [1.0] * 5
        ws[c] = w
        return _slow_figures(y, p, lo, up, q, ws, c, keep)

    everyone = [True] * len(y)
    fig = {w: figures(w, everyone) for w in grid}
    ok = [w for w in grid if fig[w][1] >= target]
    if ok:
        return max(ok, key=lambda v: (fig[v][0], -v)), "lcb", None
    false = {}
    for i, pred in enumerate(fig[grid[0]][2]):
        if pred == c and y[i] != c:
            false[rec[i]] = false.get(rec[i], 0) + 1
    if false:
        worst = sorted(false, key=lambda r: (-false[r], r))[0]
        keep = [r != worst for r in rec]
        fig_w = {w: figures(w, keep) for w in grid}
        ok = [w for w in grid if fig_w[w][1] >= target]
        if ok:
            return max(ok, key=lambda v: (fig_w[v][0], -v)), "without", worst
    return max(grid, key=lambda v: (min(fig[v][0], fig[v][1]), -v)), "break-even", None


@pytest.mark.parametrize("review, match", [({}, "at least one k"), ({0: None}, "positive integers"),
                                           ({True: None}, "positive integers")])
def test_choose_decision_neighbors_rejects_bad_input(review, match):
    y, p, lo, up, rec = _adverse_record_data()
    with pytest.raises(ValueError, match=match):
        choose_decision_neighbors(y, p, lo, up, review)


def test_neighbors_grid_arg():
    assert _neighbors_grid_arg("none") == () and _neighbors_grid_arg("12,8,8") == (8, 12)
    for bad in ("0,4", "a", "", "4,-1"):
        with pytest.raises(argparse.ArgumentTypeError, match="--neighbors-grid"):
            _neighbors_grid_arg(bad)
