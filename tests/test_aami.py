"""Tests of the AAMI EC57 statistics and the Bayes decision rule (nwbound.metrics._aami)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from nwbound.metrics._aami import AAMI_CLASS_NAMES, bayes_decision, ec57_report

# A hand-made EC57 table (rows reference N, S, V, F, Q; columns algorithm), two records.
TABLE_A = np.array([
    [50, 3, 1, 0, 0],
    [4, 6, 0, 0, 0],
    [1, 0, 9, 1, 0],
    [0, 0, 2, 1, 0],
    [0, 0, 0, 0, 2],
])
TABLE_B = np.array([
    [30, 0, 2, 0, 0],
    [0, 0, 0, 0, 0],  # record B has no S beat: its S sensitivity is undefined
    [0, 1, 5, 0, 0],
    [0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0],
])


def _beats(table: np.ndarray, record: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ref, alg = np.nonzero(table)
    counts = table[ref, alg]
    return np.repeat(ref, counts), np.repeat(alg, counts), np.full(counts.sum(), record)


def _slow_stats(table: np.ndarray) -> tuple[list, list, list]:
    """Se, +P, FPR one class at a time from the textbook definitions (NaN if undefined)."""
    se, pp, fpr = [], [], []
    total = table.sum()
    for c in range(table.shape[0]):
        tp = table[c, c]
        fn = table[c].sum() - tp
        fp = table[:, c].sum() - tp
        tn = total - tp - fn - fp
        se.append(tp / (tp + fn) if tp + fn else np.nan)
        pp.append(tp / (tp + fp) if tp + fp else np.nan)
        fpr.append(fp / (fp + tn) if fp + tn else np.nan)
    return se, pp, fpr


@pytest.fixture(scope="module")
def report():
    ya, pa, ra = _beats(TABLE_A, "A")
    yb, pb, rb = _beats(TABLE_B, "B")
    order = np.random.default_rng(0).permutation(len(ya) + len(yb))  # order must not matter
    y = np.concatenate([ya, yb])[order]
    p = np.concatenate([pa, pb])[order]
    r = np.concatenate([ra, rb])[order]
    return ec57_report(y, p, records=r)


def test_confusion_table_layout(report) -> None:
    np.testing.assert_array_equal(report.confusion, TABLE_A + TABLE_B)
    rows = report.confusion_table()
    assert [r["reference"] for r in rows] == [*AAMI_CLASS_NAMES, "total"]
    assert list(rows[0])[1:6] == list(AAMI_CLASS_NAMES)
    assert rows[1]["N"] == 4 and rows[2]["F"] == 1  # reference S → algorithm N; V → F
    assert rows[-1]["total"] == int((TABLE_A + TABLE_B).sum())
    np.testing.assert_array_equal(report.record_confusion, np.stack([TABLE_A, TABLE_B]))
    assert report.records.tolist() == ["A", "B"]


def test_gross_statistics_match_textbook(report) -> None:
    se, pp, fpr = _slow_stats(TABLE_A + TABLE_B)
    np.testing.assert_allclose(report.sensitivity, se)
    np.testing.assert_allclose(report.positive_predictivity, pp)
    np.testing.assert_allclose(report.false_positive_rate, fpr)
    assert report.sensitivity[1] == pytest.approx(6 / 10)  # S: 6 of 10 found
    assert report.positive_predictivity[1] == pytest.approx(6 / 10)  # 3 N + 1 V labelled S
    assert report.accuracy == pytest.approx(np.trace(TABLE_A + TABLE_B) / (TABLE_A + TABLE_B).sum())


def test_record_averages_skip_undefined(report) -> None:
    sa, pa_, fa = _slow_stats(TABLE_A)
    sb, pb_, fb = _slow_stats(TABLE_B)
    for got, a, b in ((report.average_sensitivity, sa, sb),
                      (report.average_positive_predictivity, pa_, pb_),
                      (report.average_false_positive_rate, fa, fb)):
        want = [np.nanmean([x, y]) if not (np.isnan(x) and np.isnan(y)) else np.nan for x, y in zip(a, b)]
        np.testing.assert_allclose(got, want)
    assert np.isnan(report.record_sensitivity[1, 1])  # record B has no S beat
    assert report.average_sensitivity[1] == pytest.approx(0.6)  # record A only
    assert report.records_defined[0].tolist() == [2, 1, 2, 1, 1]
    table = report.table()
    assert table[2]["class"] == "V" and table[2]["support"] == 17


def test_label_forms_and_errors() -> None:
    by_name = ec57_report(["N", "S", "V"], ["N", "N", "V"], classes=list(AAMI_CLASS_NAMES))
    by_index = ec57_report([0, 1, 2], [0, 0, 2])
    np.testing.assert_array_equal(by_name.confusion, by_index.confusion)
    assert by_name.class_names == AAMI_CLASS_NAMES and by_index.records.tolist() == ["all"]
    binary = ec57_report([0, 1], [1, 1], classes=[0, 1], class_names=("neg", "pos"))
    assert binary.confusion.shape == (2, 2)
    with pytest.raises(ValueError, match="y_pred"):
        ec57_report([0, 1, 2], [0, 1])
    with pytest.raises(ValueError, match="records"):
        ec57_report([0, 1], [0, 1], records=["a"])
    with pytest.raises(ValueError, match="not in `classes`"):
        ec57_report(["N", "X"], ["N", "N"], classes=list(AAMI_CLASS_NAMES))
    with pytest.raises(ValueError, match="class_names"):
        ec57_report([0, 1], [0, 1], class_names=("a", "b"))
    with pytest.raises(ValueError, match="column indices|integer"):
        ec57_report(["N"], ["N"])
    with pytest.raises(ValueError, match="empty"):
        ec57_report([], [])
    with pytest.raises(ValueError, match="NaN"):
        ec57_report([0.0, np.nan], [0, 1])


# --------------------------------------------------------------------------- decisions
def _random_bounded(n: int, c: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(c, 0.6), size=n)
    eps = rng.uniform(0.0, 0.3, size=(n, 1))
    return p, np.clip(p - eps, 0, 1), np.clip(p + eps, 0, 1)


def test_decision_matches_bayes_rule() -> None:
    p, _, _ = _random_bounded(300, 5, 0)
    prior = np.array([0.8, 0.03, 0.1, 0.02, 0.05])
    target = np.full(5, 0.2)
    cost = np.ones((5, 5)) - np.eye(5)
    cost[0, 1] = 5.0  # calling an S beat N costs five times more
    d = bayes_decision(p, train_prior=prior, target_prior=target, cost=cost)
    for i in range(p.shape[0]):  # slow reference, one query at a time
        q = p[i] * target / prior
        q /= q.sum()
        risks = [sum(cost[k, j] * q[j] for j in range(5)) for k in range(5)]
        assert d.y_pred[i] == int(np.argmin(risks))
        np.testing.assert_allclose(d.proba[i], q)
    plain = bayes_decision(p)
    np.testing.assert_array_equal(plain.y_pred, np.argmax(p, axis=1))
    assert plain.certified is None and plain.lower is None


def test_certification_is_the_exact_linear_program() -> None:
    p, lo, up = _random_bounded(120, 4, 1)
    prior = np.array([0.7, 0.1, 0.15, 0.05])
    target = np.array([0.25, 0.25, 0.25, 0.25])
    d = bayes_decision(p, train_prior=prior, target_prior=target, lower=lo, upper=up)
    w = target / prior
    c = 1.0 - np.eye(4)
    for i in range(p.shape[0]):
        k_star = d.y_pred[i]
        worst = -np.inf
        for k in range(4):
            if k == k_star:
                continue
            a = (c[k_star] - c[k]) * w
            res = linprog(-a, A_eq=np.ones((1, 4)), b_eq=[1.0], bounds=list(zip(lo[i], up[i])), method="highs")
            assert res.status == 0
            worst = max(worst, -res.fun)
        assert d.certified[i] == (worst < -1e-12) or abs(worst) < 1e-9
    # Bounds on the re-weighted probabilities contain them, and the error ceiling is 1 − lower.
    assert np.all(d.lower <= d.proba + 1e-12) and np.all(d.proba <= d.upper + 1e-12)
    np.testing.assert_allclose(d.error_upper, 1 - d.lower[np.arange(120), d.y_pred])
    # A certified decision's lower bound beats every rival's upper bound under 0-1 loss.
    rows = np.flatnonzero(d.certified)
    assert rows.size > 0 and rows.size < 120
    # Vacuous bounds certify nothing.
    vac = bayes_decision(p, train_prior=prior, target_prior=target, lower=np.zeros_like(p), upper=np.ones_like(p))
    assert not vac.certified.any()
    np.testing.assert_allclose(vac.error_upper, 1.0)


def test_equal_priors_without_target_is_argmax_certification() -> None:
    p, lo, up = _random_bounded(200, 3, 2)
    d = bayes_decision(p, lower=lo, upper=up)
    rows = np.arange(200)
    top = np.argmax(p, axis=1)
    others = up.copy()
    others[rows, top] = -np.inf
    pairwise = lo[rows, top] > others.max(axis=1)
    assert np.all(d.certified[pairwise])  # the simplex-aware test certifies at least as much


def test_bounds_that_hold_no_probability_vector_certify_nothing() -> None:
    # proba [0.35, 0.25] (not normalised) inside [0.3, 0.4] x [0.2, 0.3]: no p with Σ p = 1 lies in
    # that box, yet the decision was "certified" (the greedy program ran on the empty set).
    with pytest.raises(ValueError, match=r"hold no probability vector.*Σ upper = 0\.7"):
        bayes_decision([[0.35, 0.25]], lower=[[0.3, 0.2]], upper=[[0.4, 0.3]])
    with pytest.raises(ValueError, match="hold no probability vector"):
        bayes_decision([[0.6, 0.7]], lower=[[0.55, 0.65]], upper=[[0.7, 0.8]])
    # The box of a normalised proba always meets the simplex.
    p, lo, up = _random_bounded(50, 3, 4)
    assert bayes_decision(p, lower=lo, upper=up).certified.shape == (50,)


def test_decision_bad_input() -> None:
    p = np.array([[0.7, 0.3]])
    with pytest.raises(ValueError, match="train_prior"):
        bayes_decision(p, target_prior=[0.5, 0.5])
    with pytest.raises(ValueError, match="target_prior"):
        bayes_decision(p, train_prior=[0.5, 0.5], target_prior=[1.0, 0.0])
    with pytest.raises(ValueError, match="cost"):
        bayes_decision(p, cost=[[0, -1], [1, 0]])
    with pytest.raises(ValueError, match="both"):
        bayes_decision(p, lower=p)
    with pytest.raises(ValueError, match="lower"):
        bayes_decision(p, lower=p + 0.1, upper=p + 0.2)
    with pytest.raises(ValueError, match=r"1 of 2 entries lie outside their bounds \(by up to 0\.1\).*iv\.proba"):
        bayes_decision(p, lower=np.array([[0.8, 0.3]]), upper=np.array([[0.9, 0.4]]))
    with pytest.raises(ValueError, match="proba"):
        bayes_decision(np.array([[0.5, np.nan]]))
