"""Tests for nwbound.metrics against hand-worked examples, slow loop formulas and sklearn."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import precision_recall_fscore_support

from nwbound import metrics as M
from nwbound._result import PredictionInterval


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------
def make_interval(proba, eps, vacuous=None) -> PredictionInterval:
    proba = np.asarray(proba, dtype=float)
    eps = np.asarray(eps, dtype=float)
    if eps.ndim == 1:  # one ε per row
        eps = eps[:, None]
    eps = np.broadcast_to(eps, proba.shape).copy()
    n = proba.shape[0]
    vac = np.zeros(n, bool) if vacuous is None else np.asarray(vacuous, bool)
    return PredictionInterval.from_parts(
        proba=proba,
        bias=eps,
        sampling=np.zeros_like(eps),
        kappa=np.where(vac, 0.0, 1.0),
        n_eff=np.where(vac, 0.0, 1.0),
        vacuous=vac,
        bandwidth=np.ones(n),
    )


def random_interval(rng, n=200, c=4, vacuous_share=0.05):
    proba = rng.dirichlet(np.full(c, 0.5), size=n)
    eps = rng.uniform(0, 0.6, size=(n, c))
    vac = rng.random(n) < vacuous_share
    return make_interval(proba, eps, vac)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


# --------------------------------------------------------------------------
# accuracy / precision / recall
# --------------------------------------------------------------------------
def test_accuracy_matches_mean(rng):
    y = rng.integers(0, 3, 100)
    p = np.where(rng.random(100) < 0.7, y, rng.integers(0, 3, 100))
    assert M.accuracy(y, p) == pytest.approx(sum(a == b for a, b in zip(y, p)) / 100)
    assert M.accuracy(["a", "b", "c"], ["a", "b", "b"]) == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    "y_true, y_pred, match",
    [
        ([], [], "y_true"),
        ([0, 1], [0], "y_pred"),
        ([0.0, np.nan], [0, 1], "y_true"),
        (["a", "b"], [0, 1], "label types"),
        ([[0, 1], [1, 0]], [0, 1], "1-D"),
    ],
)
def test_accuracy_bad_input(y_true, y_pred, match):
    with pytest.raises(ValueError, match=match):
        M.accuracy(y_true, y_pred)


def test_weighted_precision_recall_matches_sklearn(rng):
    y = rng.integers(0, 5, 300)
    p = np.where(rng.random(300) < 0.6, y, rng.integers(0, 4, 300))  # class 4 never predicted
    prec, rec = M.weighted_precision_recall(y, p)
    sk_p, sk_r, _, _ = precision_recall_fscore_support(y, p, average="weighted", zero_division=0)
    assert prec == pytest.approx(sk_p, abs=1e-12)
    assert rec == pytest.approx(sk_r, abs=1e-12)
    assert rec == pytest.approx(M.accuracy(y, p))  # weighted recall is accuracy


def test_weighted_precision_all_n_predictor():
    # The note's check of the paper's CME row: all-N on 46 N of 50 beats gives
    # precision 0.92² ≈ 0.846 and recall 0.92.
    y = np.array(["N"] * 46 + ["S", "V", "F", "Q"])
    p = np.array(["N"] * 50)
    prec, rec = M.weighted_precision_recall(y, p)
    assert prec == pytest.approx(0.92**2)
    assert rec == pytest.approx(0.92)


def test_per_class_matches_sklearn_with_custom_order(rng):
    classes = np.array(["V", "N", "S", "F"])
    y = rng.choice(classes, 200)
    p = np.where(rng.random(200) < 0.5, y, rng.choice(classes[:3], 200))
    res = M.per_class_precision_recall(y, p, classes=classes)
    sk_p, sk_r, sk_f, sk_s = precision_recall_fscore_support(
        y, p, labels=classes, average=None, zero_division=0
    )
    np.testing.assert_array_equal(res["classes"], classes)
    np.testing.assert_allclose(res["precision"], sk_p, atol=1e-12)
    np.testing.assert_allclose(res["recall"], sk_r, atol=1e-12)
    np.testing.assert_allclose(res["f1"], sk_f, atol=1e-12)
    np.testing.assert_array_equal(res["support"], sk_s)


def test_labels_not_in_classes_name_argument():
    with pytest.raises(ValueError, match="y_pred.*not in `classes`"):
        M.per_class_precision_recall([0, 1], [0, 7], classes=[0, 1])
    with pytest.raises(ValueError, match="y_true.*not in `classes`"):
        M.weighted_precision_recall([0, 9], [0, 1], classes=[0, 1])
    with pytest.raises(ValueError, match="duplicates"):
        M.weighted_precision_recall([0, 1], [0, 1], classes=[0, 1, 1])


# --------------------------------------------------------------------------
# expected calibration error
# --------------------------------------------------------------------------
def slow_ece(y_idx, proba, n_bins):
    """Guo et al. (2017) with a plain Python loop over bins and samples."""
    n = len(y_idx)
    total = 0.0
    for b in range(n_bins):
        lo, hi = b / n_bins, (b + 1) / n_bins
        members = []
        for i in range(n):
            conf = max(proba[i])
            in_bin = (lo < conf <= hi) or (b == 0 and conf == 0)
            if in_bin:
                members.append(i)
        if members:
            acc = sum(int(np.argmax(proba[i]) == y_idx[i]) for i in members) / len(members)
            conf = sum(max(proba[i]) for i in members) / len(members)
            total += len(members) / n * abs(acc - conf)
    return total


def test_ece_hand_worked_four_points():
    proba = np.array([[0.9, 0.1], [0.8, 0.2], [0.35, 0.65], [0.45, 0.55]])
    y = np.array([0, 1, 1, 0])
    # bins of width 0.2, right-closed: .55 -> (.4,.6]; .8, .65 -> (.6,.8]; .9 -> (.8,1]
    # gaps: |0 - .55| = .55 (1 pt), |.5 - .725| = .225 (2 pts), |1 - .9| = .1 (1 pt)
    ece, table = M.expected_calibration_error(y, proba, n_bins=5)
    assert ece == pytest.approx((0.55 + 2 * 0.225 + 0.1) / 4)
    np.testing.assert_array_equal(table.count, [0, 0, 1, 2, 1])
    np.testing.assert_allclose(table.accuracy[2:], [0.0, 0.5, 1.0])
    np.testing.assert_allclose(table.mean_confidence[2:], [0.55, 0.725, 0.9])
    assert np.all(np.isnan(table.accuracy[:2]))
    np.testing.assert_allclose(table.edges, np.linspace(0, 1, 6))


def test_ece_matches_slow_formula_with_string_classes(rng):
    classes = np.array(["N", "S", "V"])
    proba = rng.dirichlet([1, 1, 1], size=150)
    y_idx = rng.integers(0, 3, 150)
    ece, table = M.expected_calibration_error(classes[y_idx], proba, classes=classes, n_bins=7)
    assert ece == pytest.approx(slow_ece(y_idx, proba, 7), abs=1e-12)
    assert table.count.sum() == 150


def test_ece_small_when_labels_drawn_from_proba(rng):
    n = 20_000
    proba = rng.dirichlet([0.7, 0.7, 0.7], size=n)
    y = (rng.random(n)[:, None] > np.cumsum(proba, axis=1)).sum(axis=1)
    ece, _ = M.expected_calibration_error(y, proba)
    assert ece < 0.02


def test_ece_accepts_interval(rng):
    iv = random_interval(rng, n=50, c=3)
    y = rng.integers(0, 3, 50)
    assert M.expected_calibration_error(y, iv)[0] == pytest.approx(
        M.expected_calibration_error(y, iv.proba)[0]
    )


def test_ece_bad_input():
    proba = np.array([[0.6, 0.4], [0.3, 0.7]])
    with pytest.raises(ValueError, match="proba"):
        M.expected_calibration_error([0, 1], np.array([[np.nan, 1.0], [0.3, 0.7]]))
    with pytest.raises(ValueError, match="classes"):
        M.expected_calibration_error(["a", "b"], proba, classes=["a", "b", "c"])
    with pytest.raises(ValueError, match="y_true.*not in `classes`"):
        M.expected_calibration_error(["a", "z"], proba, classes=["a", "b"])
    with pytest.raises(ValueError, match="pass `classes`"):
        M.expected_calibration_error(["a", "b"], proba)
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        M.expected_calibration_error([0, 2], proba)
    with pytest.raises(ValueError, match="n_bins"):
        M.expected_calibration_error([0, 1], proba, n_bins=0)
    with pytest.raises(ValueError, match="samples"):
        M.expected_calibration_error([0, 1, 1], proba)
    with pytest.raises(ValueError, match="empty"):
        M.expected_calibration_error([], np.zeros((0, 2)))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        M.expected_calibration_error([0, 1], proba * 2)


# --------------------------------------------------------------------------
# cumulative recall, errors caught, risk-coverage
# --------------------------------------------------------------------------
def slow_curve(y, p, u):
    order = sorted(range(len(u)), key=lambda i: -u[i])  # Python's sort is stable
    errors = sum(a != b for a, b in zip(y, p))
    caught, out = 0, [0.0]
    for i in order:
        caught += y[i] != p[i]
        out.append(caught / errors)
    return np.array(out)


def test_cumulative_recall_matches_slow_formula(rng):
    y = rng.integers(0, 3, 60)
    p = np.where(rng.random(60) < 0.7, y, (y + 1) % 3)
    u = np.round(rng.random(60), 1)  # many ties
    frac, rec = M.cumulative_recall_curve(y, p, u)
    np.testing.assert_allclose(frac, np.arange(61) / 60)
    np.testing.assert_allclose(rec, slow_curve(list(y), list(p), list(u)))
    assert rec[0] == 0 and rec[-1] == 1
    assert np.all(np.diff(rec) >= 0)


def test_cumulative_recall_random_uncertainty_is_diagonal_in_expectation(rng):
    n = 40
    y = np.zeros(n, int)
    p = np.where(rng.random(n) < 0.3, 1, 0)
    curves = [M.cumulative_recall_curve(y, p, rng.random(n))[1] for _ in range(2000)]
    np.testing.assert_allclose(np.mean(curves, axis=0), np.arange(n + 1) / n, atol=0.03)


def test_cumulative_recall_perfect_ranking():
    y = np.array([0, 0, 0, 0, 0, 0])
    p = np.array([0, 1, 0, 1, 0, 0])
    u = np.array([0.1, 0.9, 0.2, 0.8, 0.3, 0.0])
    _, rec = M.cumulative_recall_curve(y, p, u)
    np.testing.assert_allclose(rec, [0, 0.5, 1, 1, 1, 1, 1])


def test_cumulative_recall_ties_keep_input_order():
    y = np.zeros(4, int)
    p = np.array([0, 1, 0, 1])
    _, rec = M.cumulative_recall_curve(y, p, np.ones(4))
    np.testing.assert_allclose(rec, [0, 0, 0.5, 0.5, 1])


def test_cumulative_recall_no_errors_defined():
    frac, rec = M.cumulative_recall_curve([1, 2, 3], [1, 2, 3], [0.3, 0.1, 0.2])
    np.testing.assert_allclose(frac, [0, 1 / 3, 2 / 3, 1])
    np.testing.assert_array_equal(rec, np.zeros(4))
    _, rec1 = M.cumulative_recall_curve([1, 2], [1, 2], [0.3, 0.1], zero_division=1.0)
    np.testing.assert_array_equal(rec1, np.ones(3))
    assert M.errors_caught_at(0.5, [1, 2], [1, 2], [0.3, 0.1]) == 0.0


def test_cumulative_recall_bad_input():
    with pytest.raises(ValueError, match="empty"):
        M.cumulative_recall_curve([], [], [])
    with pytest.raises(ValueError, match="uncertainty"):
        M.cumulative_recall_curve([0, 1], [0, 1], [0.1, np.nan])
    with pytest.raises(ValueError, match="uncertainty"):
        M.cumulative_recall_curve([0, 1], [0, 1], [0.1])


def test_errors_caught_at(rng):
    y = np.zeros(30, int)
    p = (rng.random(30) < 0.4).astype(int)
    p[0] = 1
    u = rng.random(30)
    _, rec = M.cumulative_recall_curve(y, p, u)
    # 10 % of 30 is 3 samples, despite 0.1 * 30 = 3.0000000000000004
    assert M.errors_caught_at(0.1, y, p, u) == pytest.approx(rec[3])
    got = M.errors_caught_at([0.0, 0.5, 1.0], y, p, u)
    np.testing.assert_allclose(got, [0.0, rec[15], 1.0])
    with pytest.raises(ValueError, match="fraction"):
        M.errors_caught_at(1.5, y, p, u)


def test_risk_coverage_matches_slow_formula(rng):
    y = rng.integers(0, 2, 50)
    p = np.where(rng.random(50) < 0.75, y, 1 - y)
    u = rng.random(50)
    cov, risk = M.risk_coverage_curve(y, p, u)
    order = np.argsort(u)  # most certain first (no ties)
    for k in range(1, 51):
        kept = order[:k]
        assert risk[k - 1] == pytest.approx(np.mean(y[kept] != p[kept]))
        assert cov[k - 1] == pytest.approx(k / 50)
    assert risk[-1] == pytest.approx(1 - M.accuracy(y, p))


# --------------------------------------------------------------------------
# interval-based scores
# --------------------------------------------------------------------------
def test_uncertainty_from_interval():
    iv = make_interval([[0.7, 0.3], [0.2, 0.8], [0.5, 0.5]], [[0.1, 0.2], [0.3, 0.05], [0.1, 0.1]], [0, 0, 1])
    np.testing.assert_allclose(M.uncertainty_from_interval(iv, "width"), [0.2, 0.1, 2.0])
    np.testing.assert_allclose(M.uncertainty_from_interval(iv, "max_proba"), [0.3, 0.2, 0.5])
    with pytest.raises(ValueError, match="kind"):
        M.uncertainty_from_interval(iv, "entropy")
    with pytest.raises(TypeError, match="interval"):
        M.uncertainty_from_interval(np.zeros((3, 2)))


def type_example():
    classes = np.array(["N", "S", "V"])
    proba = [
        [0.8, 0.1, 0.1],  # N correct, lower .7
        [0.6, 0.3, 0.1],  # N correct, lower .4 -> Type II
        [0.2, 0.7, 0.1],  # true V, predicted S -> Type I
        [1 / 3, 1 / 3, 1 / 3],  # vacuous, predicted N (first), true N -> Type II
        [0.1, 0.75, 0.15],  # S correct, lower exactly .5 -> not Type II
    ]
    eps = [0.1, 0.2, 0.1, 1.0, 0.25]
    iv = make_interval(proba, eps, [0, 0, 0, 1, 0])
    y = np.array(["N", "N", "V", "N", "S"])
    return classes, iv, y


def test_type_errors_hand_worked():
    classes, iv, y = type_example()
    t = M.type_errors(y, iv, classes)
    np.testing.assert_array_equal(t.classes, classes)
    np.testing.assert_array_equal(t.support, [3, 1, 1])
    np.testing.assert_array_equal(t.type_i, [0, 0, 1])
    np.testing.assert_array_equal(t.type_ii, [2, 0, 0])
    np.testing.assert_allclose(t.type_ii_share, [0.4, 0, 0])
    assert t.accuracy == pytest.approx(0.8)
    assert t.conservative_accuracy == pytest.approx(0.4)
    assert M.conservative_accuracy(y, iv, classes) == pytest.approx(0.4)


def test_type_errors_with_y_pred_override():
    classes, iv, y = type_example()
    # A fallback predicts V for query 2: now correct; its lower bound (V: 0) -> Type II.
    y_pred = np.array(["N", "N", "V", "N", "S"])
    t = M.type_errors(y, iv, classes, y_pred=y_pred)
    np.testing.assert_array_equal(t.type_i, [0, 0, 0])
    np.testing.assert_array_equal(t.type_ii, [2, 0, 1])


def test_type_errors_match_slow_loop(rng):
    iv = random_interval(rng, n=120, c=4)
    y = rng.integers(0, 4, 120)
    t = M.type_errors(y, iv, threshold=0.4)
    ti, tii = np.zeros(4, int), np.zeros(4, int)
    for i in range(120):
        pred = int(np.argmax(iv.proba[i]))
        if pred != y[i]:
            ti[y[i]] += 1
        elif iv.lower[i, pred] < 0.4 or iv.vacuous[i]:
            tii[y[i]] += 1
    np.testing.assert_array_equal(t.type_i, ti)
    np.testing.assert_array_equal(t.type_ii, tii)
    assert M.conservative_accuracy(y, iv, threshold=0.4) == pytest.approx(1 - (ti.sum() + tii.sum()) / 120)


def test_type_errors_bad_input():
    classes, iv, y = type_example()
    with pytest.raises(ValueError, match="y_true"):
        M.type_errors(y[:3], iv, classes)
    with pytest.raises(ValueError, match="classes"):
        M.type_errors(y, iv, classes[:2])
    with pytest.raises(ValueError, match="threshold"):
        M.type_errors(y, iv, classes, threshold=1.5)
    with pytest.raises(ValueError, match="y_true.*not in `classes`"):
        M.type_errors(np.array(["N", "N", "X", "N", "S"]), iv, classes)


def test_review_flags_hand_worked():
    proba = [[0.8, 0.1, 0.1], [0.5, 0.4, 0.1], [0.5, 0.25, 0.25], [0.4, 0.3, 0.3]]
    eps = [0.1, 0.1, 0.125, 0.1]
    # row 0: lower .7 > max other upper .2 -> ok; row 1: .4 <= .5 -> flag;
    # row 2: lower .375 == other upper .375 -> flag (not separated); row 3 vacuous
    iv = make_interval(proba, eps, [0, 0, 0, 1])
    np.testing.assert_array_equal(M.review_flags(iv), [False, True, True, True])


def test_crossed_intervals_are_refused_not_certified():
    # A look-alike interval (another model's bounds) with lower > upper was read as a certificate:
    # the top class's lower bound 0.9 lies above the other's upper bound 0.5.
    from types import SimpleNamespace

    iv = SimpleNamespace(proba=np.array([[0.6, 0.4]]), lower=np.array([[0.9, 0.0]]),
                         upper=np.array([[0.1, 0.5]]), epsilon=np.array([[0.3, 0.4]]), vacuous=np.array([False]))
    for score in (M.review_flags, M.uncertainty_from_interval, lambda i: M.type_errors([0], i),
                  lambda i: M.review_comparison([0], i)):
        with pytest.raises(ValueError, match=r"lower` exceeds .*upper.*row 0, column 0: 0\.9 > 0\.1"):
            score(iv)


def test_review_flags_match_slow_loop(rng):
    iv = random_interval(rng, n=100, c=3)
    flags = M.review_flags(iv)
    for i in range(100):
        top = int(np.argmax(iv.proba[i]))
        other = max(iv.upper[i, j] for j in range(3) if j != top)
        assert flags[i] == (iv.lower[i, top] <= other or iv.vacuous[i])


def test_bound_width_by_confidence_matches_loop(rng):
    iv = random_interval(rng, n=150, c=3)
    y = rng.integers(0, 3, 150)
    t = M.bound_width_by_confidence(y, iv, n_bins=4)
    for b in range(4):
        lo, hi = b / 4, (b + 1) / 4
        for correct, cnt, w in ((True, t.count_correct, t.width_correct), (False, t.count_incorrect, t.width_incorrect)):
            widths = [
                2 * iv.epsilon[i, np.argmax(iv.proba[i])]
                for i in range(150)
                if lo < iv.proba[i].max() <= hi and (np.argmax(iv.proba[i]) == y[i]) == correct
            ]
            assert cnt[b] == len(widths)
            if widths:
                assert w[b] == pytest.approx(np.mean(widths))
            else:
                assert np.isnan(w[b])


# --------------------------------------------------------------------------
# violation rate and Clopper-Pearson
# --------------------------------------------------------------------------
def test_clopper_pearson_matches_binomtest():
    for k, n in [(0, 10), (3, 10), (10, 10), (17, 400)]:
        lo, hi = M.clopper_pearson(k, n, 0.9)
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
        assert lo == pytest.approx(ci.low, abs=1e-10)
        assert hi == pytest.approx(ci.high, abs=1e-10)


def test_clopper_pearson_refuses_counts_that_are_not_whole_numbers():
    # NaN slipped past the range check (NaN output) and 2.5 successes got an interval.
    for bad in (np.nan, 2.5, [1, np.inf]):
        with pytest.raises(ValueError, match="whole numbers"):
            M.clopper_pearson(bad, 10)
    lo, hi = M.clopper_pearson(np.array([3.0]), 10, 0.9)  # whole floats are counts
    ci = stats.binomtest(3, 10).proportion_ci(confidence_level=0.9, method="exact")
    assert lo[0] == pytest.approx(ci.low, abs=1e-10) and hi[0] == pytest.approx(ci.high, abs=1e-10)


def test_violation_rate_hand_worked():
    p_hat = np.array([[0.6, 0.4], [0.5, 0.5], [0.9, 0.1], [0.3, 0.7]])
    iv = make_interval(p_hat, [0.1, 0.1, 0.05, 0.5])
    p_true = np.array([[0.55, 0.45], [0.75, 0.25], [0.9, 0.1], [0.2, 0.8]])
    # violations |p - p̂| > ε: row 1 both classes (.25 > .1)
    res = M.violation_rate(p_true, iv, confidence=0.95)
    np.testing.assert_array_equal(res["count"], [1, 1])
    np.testing.assert_allclose(res["rate"], [0.25, 0.25])
    assert res["simultaneous_count"] == 1
    ci = stats.binomtest(1, 4).proportion_ci(confidence_level=0.95, method="exact")
    assert res["simultaneous_ci"] == pytest.approx((ci.low, ci.high))
    assert "simultaneous_rate" not in M.violation_rate(p_true, iv, simultaneous=False)


def test_violation_rate_simultaneous_counts_any_class():
    p_hat = np.array([[0.5, 0.3, 0.2], [0.5, 0.3, 0.2]])
    iv = make_interval(p_hat, [[0.1, 0.1, 0.01], [0.1, 0.01, 0.1]])
    p_true = np.array([[0.5, 0.3, 0.2 + 0.05], [0.5, 0.3 - 0.05, 0.2]])
    res = M.violation_rate(p_true, iv)
    np.testing.assert_array_equal(res["count"], [0, 1, 1])
    assert res["simultaneous_count"] == 2


def test_violation_rate_gaussian_noise_near_nominal(rng):
    # p̂ = p + N(0, σ²) noise with ε = 1.96σ violates with probability 5 %.
    n, sigma = 4000, 0.01
    p = np.full((n, 2), 0.5)
    p_hat = p + rng.normal(0, sigma, size=(n, 1)) * np.array([1, -1])
    iv = make_interval(p_hat, 1.959964 * sigma)
    res = M.violation_rate(p, iv, confidence=0.999)
    assert np.all(res["ci_low"] < 0.05) and np.all(res["ci_high"] > 0.05)


def test_violation_rate_bad_input(rng):
    iv = random_interval(rng, n=10, c=3)
    with pytest.raises(ValueError, match="proba_true"):
        M.violation_rate(np.full((10, 2), 0.5), iv)
    with pytest.raises(ValueError, match="proba_true"):
        M.violation_rate(np.full((10, 3), np.nan), iv)
    with pytest.raises(ValueError, match="confidence"):
        M.violation_rate(iv.proba, iv, confidence=1.0)


def test_object_and_str_labels_mix():
    # pandas hands out object arrays of str; they must match numpy str labels.
    y = np.array(["N", "S", "N"], dtype=object)
    assert M.accuracy(y, np.array(["N", "S", "S"])) == pytest.approx(2 / 3)
    prec, rec = M.weighted_precision_recall(y, np.array(["N", "S", "S"]), classes=["N", "S"])
    assert rec == pytest.approx(2 / 3)


# --------------------------------------------------------------------------- review queues side by side
from nwbound.metrics._bounds import review_comparison, review_summary  # noqa: E402


def _slow_queue(t, p, review):
    """Row of review_summary restated with a loop."""
    n_err = sum(1 for i in range(len(t)) if t[i] != p[i])
    caught = sum(1 for i in range(len(t)) if t[i] != p[i] and review[i])
    acc = [i for i in range(len(t)) if not review[i]]
    return {
        "review_share": sum(review) / len(t),
        "errors_caught": caught / n_err,
        "error_among_accepted": sum(t[i] != p[i] for i in acc) / len(acc),
    }


def _random_interval(rng, n=300, c=3):
    proba = rng.dirichlet(np.ones(c) * 0.7, size=n)
    bias = np.repeat(rng.uniform(0, 0.3, size=(n, 1)), c, axis=1)
    samp = np.repeat(rng.uniform(0, 0.3, size=(n, 1)), c, axis=1)
    vac = rng.uniform(size=n) < 0.05
    iv = PredictionInterval.from_parts(proba, bias, samp, np.ones(n), np.ones(n), vac, np.ones(n))
    y = np.array([rng.choice(c, p=row) for row in proba])
    return iv, y


def test_review_comparison_against_slow_restatement(rng):
    iv, y = _random_interval(rng)
    classes = np.array(["a", "b", "c"])
    labels = classes[y]
    sets = iv.proba >= 0.3
    rows = review_comparison(labels, iv, classes, review_share=0.1, conformal_sets=sets)
    pred = np.argmax(iv.proba, axis=1)
    n = len(y)
    k = int(np.ceil(0.1 * n - 1e-9))

    def top(score):
        flag = np.zeros(n, bool)
        flag[sorted(range(n), key=lambda i: -score[i])[:k]] = True
        return flag

    eu = [1.0 if iv.vacuous[i] else 1 - iv.lower[i, pred[i]] for i in range(n)]
    ep = [1.0 if iv.vacuous[i] else iv.epsilon[i, pred[i]] for i in range(n)]
    mp = [1 - iv.proba[i].max() for i in range(n)]
    cert = []
    for i in range(n):
        others = max(iv.upper[i, j] for j in range(3) if j != pred[i])
        cert.append(iv.lower[i, pred[i]] > others and not iv.vacuous[i])
    want = {
        "certificate": [not c for c in cert],
        "1 - max p @ 10%": top(mp),
        "error_upper @ 10%": top(eu),
        "epsilon @ 10%": top(ep),
        "conformal set size != 1": [sets[i].sum() != 1 for i in range(n)],
    }
    assert [r["queue"] for r in rows] == list(want)
    for row in rows:
        slow = _slow_queue(y, pred, want[row["queue"]])
        for key, value in slow.items():
            assert row[key] == pytest.approx(value), (row["queue"], key)
        assert row["guarantee"]
    assert rows[0]["accepted_share"] == pytest.approx(np.mean(iv.certified))


def test_review_comparison_with_calibrated_rule(rng):
    from nwbound.baselines import CalibratedAcceptance

    iv_cal, y_cal = _random_interval(rng, n=600)
    rule = CalibratedAcceptance(alpha=0.3, delta=0.1).fit(
        iv_cal.error_upper, y_cal, np.argmax(iv_cal.proba, axis=1)
    )
    iv, y = _random_interval(rng, n=400)
    row = review_comparison(y, iv, calibrated=rule)[-1]
    assert row["queue"] == "calibrated threshold" and "exchangeable" in row["guarantee"]
    slow = _slow_queue(y, np.argmax(iv.proba, axis=1), iv.error_upper > rule.threshold_)
    assert row["review_share"] == pytest.approx(slow["review_share"])
    assert row["error_among_accepted"] == pytest.approx(slow["error_among_accepted"])


def test_review_summary_no_errors_and_nothing_accepted():
    row = review_summary("q", [0, 1], [0, 1], [True, True])
    assert np.isnan(row["errors_caught"]) and np.isnan(row["error_among_accepted"])
    assert row["n_accepted"] == 0 and row["review_share"] == 1.0


def test_review_bad_input(rng):
    iv, y = _random_interval(rng, n=20)
    with pytest.raises(ValueError, match="review_share"):
        review_comparison(y, iv, review_share=1.0)
    with pytest.raises(ValueError, match="conformal_sets"):
        review_comparison(y, iv, conformal_sets=np.ones((20, 2), bool))
    with pytest.raises(TypeError, match="CalibratedAcceptance"):
        review_comparison(y, iv, calibrated=object())
    with pytest.raises(TypeError, match="boolean"):
        review_summary("q", [0, 1], [0, 1], [0, 1])
    with pytest.raises(ValueError, match="same samples"):
        review_summary("q", [0, 1], [0, 1], [True])


def test_review_comparison_refuses_a_label_list_of_another_length(rng):
    # Three labels for a two-column interval mapped 'c' to a column that does not exist and
    # scored every 'c' row as an error, without a word.
    iv, _ = _random_interval(rng, n=20, c=2)
    y = np.array(["a", "b", "c"] * 6 + ["a", "b"])
    with pytest.raises(ValueError, match="3 labels but there are 2 columns"):
        review_comparison(y, iv, classes=["a", "b", "c"])
    with pytest.raises(ValueError, match="3 labels but there are 2 columns"):
        M.type_errors(y, iv, classes=["a", "b", "c"])
    with pytest.raises(ValueError, match="3 labels but there are 2 columns"):
        M.expected_calibration_error(y, iv.proba, classes=["a", "b", "c"])


def test_review_comparison_certificate_is_that_of_the_given_y_pred(rng):
    # With y_pred other than argmax p̂, the certificate queue accepted a label on rows whose
    # bound singles out another class, under the guarantee "the accepted label is the most
    # probable class".
    iv, y = _random_interval(rng, n=200, c=3)
    y_pred = rng.integers(0, 3, size=200)
    row = review_comparison(y, iv, y_pred=y_pred)[0]
    cert = []
    for i in range(200):
        others = max(iv.upper[i, j] for j in range(3) if j != y_pred[i])
        cert.append(iv.lower[i, y_pred[i]] > others and not iv.vacuous[i])
    assert any(cert) and not all(cert)
    slow = _slow_queue(y, y_pred, [not c for c in cert])
    for key, value in slow.items():
        assert row[key] == pytest.approx(value), key
