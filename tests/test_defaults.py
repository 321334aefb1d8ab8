"""Defaults that never fail silently: the label-free default bandwidth, the vacuous-prediction
warning, advice that fits the settings, one meaning of ε / vacuous / trivial, and the CLI's
out-of-sample preview and ``epsilon_predicted`` column (issues 21 item 3, 22 items 9-11)."""

import dataclasses
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

from nwbound import DyadicClassifier, NadarayaWatsonClassifier, UselessBoundWarning, VacuousPredictionWarning
from nwbound.assumptions import sensitivity_report
from nwbound.diagnostics import AdviceContext, bound_usefulness


def _slow_scale(X, k):
    """λ of bandwidth='scale' from its definition, by sorting every distance (no index)."""
    n = X.shape[0]
    pilot = np.unique(np.linspace(0, n - 1, min(256, n)).astype(int))
    kth = []
    for i in pilot:
        d = np.sort(np.sqrt(((X - X[i]) ** 2).sum(axis=1)))
        kth.append(d[min(k, n - 1)])  # d[0] = 0 is the row itself
    return float(np.quantile(kth, 0.9))


def _field(n=400, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    p = 1 / (1 + np.exp(-8 * (X[:, 0] - 0.5)))
    return X, (rng.uniform(size=n) < p).astype(int)


# ---------------------------------------------------------------------------------------------
# a. the default bandwidth
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n, d, k", [(400, 2, None), (1000, 5, None), (300, 3, 40), (12, 2, None)])
def test_scale_bandwidth_is_its_definition(n, d, k):
    X, y = _field(n, d)
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale", n_neighbors=k).fit(X, y)
    assert clf.get_params()["bandwidth"] == "scale"
    expected = _slow_scale(X, max(10, k or 0))
    assert clf.bandwidth_ == pytest.approx(expected, rel=1e-12)
    np.testing.assert_array_equal(clf.bandwidths_, [clf.bandwidth_])
    # Label-free: other labels, same λ (so every bound at it stays valid).
    other = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale", n_neighbors=k).fit(X, np.random.default_rng(1).integers(0, 3, n))
    assert other.bandwidth_ == clf.bandwidth_


def test_scale_bandwidth_follows_the_units():
    X, y = _field(300, 3)
    lam = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale").fit(X, y).bandwidth_
    for s in (1e-150, 2.0**-40, 1e6, 1e150):
        assert NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale").fit(X * s, y).bandwidth_ == pytest.approx(lam * s, rel=1e-12)


def test_scale_bandwidth_on_repeated_and_coincident_rows():
    # Three points repeated 50 times: the 10th nearest is the row's own copy (0): fall back to
    # the largest k-th distance, then the box diagonal; never λ = 0.
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]]), 50, axis=0)
    y = np.tile([0, 1], 75)
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale").fit(X, y)
    assert clf.bandwidth_ == pytest.approx(np.sqrt(5.0))
    same = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale").fit(np.ones((20, 2)), np.tile([0, 1], 10))
    assert same.bandwidth_ == 1.0
    assert NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale").fit([[0.0], [3.0]], [0, 1]).bandwidth_ == 3.0  # one other row: its distance


def test_default_bandwidth_on_standardized_breast_cancer():
    """Was 0.627 with bandwidth=1.0 (no training point in reach, the prior, silently)."""
    X, y = load_breast_cancer(return_X_y=True)
    acc = []
    for tr, te in StratifiedKFold(5, shuffle=True, random_state=0).split(X, y):
        sc = StandardScaler().fit(X[tr])
        clf = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale").fit(sc.transform(X[tr]), y[tr])
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # neither a vacuous nor a bound warning
            acc.append(clf.score(sc.transform(X[te]), y[te]))
    assert np.mean(acc) >= 0.90
    # The old default is now loud about the same failure.
    sc = StandardScaler().fit(X)
    old = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=1.0).fit(sc.transform(X[::2]), y[::2])
    with pytest.warns(VacuousPredictionWarning, match=r"bandwidth='scale'"):
        old.predict(sc.transform(X[1::2]))


def test_scale_survives_a_model_file(tmp_path):
    from nwbound.io import load_model, save_model

    X, y = _field(200, 2)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth="scale", lipschitz=1.0).fit(X, y)
    back = load_model(save_model(clf, tmp_path / "m.npz"))
    assert back.get_params()["bandwidth"] == "scale" and back.bandwidth_ == clf.bandwidth_
    np.testing.assert_array_equal(back.predict_proba(X[:20]), clf.predict_proba(X[:20]))
    state = clf.get_fitted_state()
    state["bandwidths_"] = np.array([0.1, 0.2])
    with pytest.raises(ValueError, match="bandwidths_"):
        NadarayaWatsonClassifier(metric=None, bandwidth="scale", lipschitz=1.0).set_fitted_state(state)


def test_sharded_scale_equals_in_memory():
    da = pytest.importorskip("dask.array")
    from nwbound.dask import ShardedNadarayaWatson

    X, y = _field(500, 3)
    for k in (None, 30):
        ref = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale", n_neighbors=k).fit(X, y)
        model = ShardedNadarayaWatson(metric=None, lipschitz=None, bandwidth="scale", n_neighbors=k).fit(da.from_array(X, chunks=(120, -1)), y)
        np.testing.assert_array_equal(model.bandwidths_, ref.bandwidths_)


# ---------------------------------------------------------------------------------------------
# b. predict / predict_proba / score: warn about vacuous queries, never about bounds
# ---------------------------------------------------------------------------------------------
def test_no_bound_warning_where_no_bound_was_asked():
    X, y = _field(300, 2)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=500.0).fit(X, y)  # useless bounds
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.predict(X[:50]), clf.predict_proba(X[:50]), clf.score(X[:50], y[:50])
    with pytest.warns(UselessBoundWarning):
        clf.predict_interval(X[:50])


@pytest.mark.parametrize("method", ["predict", "predict_proba", "score"])
def test_vacuous_warning_points_at_the_user(method):
    X, y = _field(200, 2)
    clf = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.01).fit(X, y)
    far = X[:10] + 5.0
    args = (far, y[:10]) if method == "score" else (far,)
    with pytest.warns(VacuousPredictionWarning, match=r"100 % of the queries .* bandwidth=") as caught:
        getattr(clf, method)(*args)
    assert caught[0].filename == __file__
    # A minority of vacuous queries is no warning (the per-row flag says it).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(clf, method)(*((np.vstack([X[:20], far]), np.r_[y[:20], y[:10]]) if method == "score"
                               else (np.vstack([X[:20], far]),)))


def test_vacuous_warning_of_the_dyadic_classifier():
    X, y = _field(200, 2)
    clf = DyadicClassifier(metric=None, lipschitz=None, resolution=3).fit(np.vstack([0.3 * X, [[1.0, 1.0]]]), np.r_[y, 0])
    with pytest.warns(VacuousPredictionWarning, match="resolution=") as caught:
        clf.predict(np.array([[0.9, 0.2]] * 3))  # an empty cell of the grid
    assert "bandwidth" not in str(caught[0].message)


# ---------------------------------------------------------------------------------------------
# c. advice that fits the settings
# ---------------------------------------------------------------------------------------------
def _report(clf, X, **context):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        iv = clf.predict_interval(X)
    ctx = dataclasses.replace(AdviceContext.from_estimator(clf), **context)
    return bound_usefulness(iv, beta=clf.lipschitz, context=ctx)


def test_advice_does_not_suggest_what_is_in_use():
    X, y = _field(300, 2)
    Q = X[:60]
    # sampling-bound with few points: chernoff (in use) not suggested, hoeffding gets it.
    few = X[:40], y[:40]
    r = _report(NadarayaWatsonClassifier(metric=None, bandwidth=0.05, lipschitz=0.01).fit(*few), Q)
    assert r.cause == "sampling" and "chernoff" not in r.explanation
    r = _report(NadarayaWatsonClassifier(metric=None, bandwidth=0.05, lipschitz=0.01, bound="hoeffding").fit(*few), Q)
    assert "bound='chernoff'" in r.explanation
    # bandwidth="auto" chose λ: no λ advice; L given as "auto": no advice to estimate it.
    auto = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=50.0).fit(X, y)
    r = _report(auto, Q, lipschitz_auto=True)
    assert r.useless and "bandwidth" not in r.explanation and "estimate_lipschitz" not in r.explanation
    r = _report(NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=50.0).fit(X, y), Q)
    assert "a smaller bandwidth λ (bandwidth=)" in r.explanation and "estimate_lipschitz" in r.explanation


def test_cli_users_get_flags():
    X, y = _field(300, 2)
    r = _report(NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=50.0, n_neighbors=50).fit(X, y), X[:60],
                interface="cli")
    assert "--bandwidth" in r.explanation and "--neighbors" in r.explanation
    assert "bandwidth=" not in r.explanation and "sensitivity_report" not in r.explanation
    assert "(ε = 1)" not in str(r) and "trivial (every class interval [0, 1])" in str(r)


# ---------------------------------------------------------------------------------------------
# d. one meaning of ε, vacuous and trivial
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bound", ["hoeffding", "chernoff", "selfnormalized"])
@pytest.mark.parametrize("k", [None, 20])
def test_epsilon_is_the_half_width_of_the_reported_interval(bound, k):
    X, y = _field(300, 2)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.15, lipschitz=3.0, bound=bound, n_neighbors=k).fit(X, y)
    Q = np.vstack([X[:80], [[9.0, 9.0]]])  # the last query is vacuous
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        iv = clf.predict_interval(Q)
    half = np.maximum(iv.proba - iv.lower, iv.upper - iv.proba)
    half[iv.vacuous] = 1.0
    np.testing.assert_allclose(iv.epsilon, half, rtol=0, atol=1e-15)
    if bound == "hoeffding":  # the p̂ ± (bias + sampling) form, clipped
        width = np.minimum(1.0, iv.bias + iv.sampling)
        np.testing.assert_allclose(iv.lower, np.clip(iv.proba - width, 0, 1), atol=1e-15)
        np.testing.assert_allclose(iv.upper, np.clip(iv.proba + width, 0, 1), atol=1e-15)
    # vacuous = κ = 0; trivial = every interval [0, 1], vacuous rows included.
    np.testing.assert_array_equal(iv.vacuous, ~(iv.kappa > 0))
    np.testing.assert_array_equal(iv.trivial, np.all((iv.lower <= 0) & (iv.upper >= 1), axis=1))
    assert iv.vacuous[-1] and iv.trivial[-1] and not iv.vacuous[:-1].any()


def test_bias_is_not_capped():
    X, y = _field(300, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        iv = NadarayaWatsonClassifier(metric=None, bandwidth=0.3, lipschitz=50.0).fit(X, y).predict_interval(X[:20])
    assert np.all(iv.bias > 1.0) and np.all(iv.epsilon <= 1.0)


def test_sensitivity_report_shares_follow_the_glossary():
    X, y = _field(300, 2)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.1, lipschitz=1.0).fit(X[:200], y[:200])
    Q = np.vstack([X[200:], X[200:220] + 3.0])  # 20 vacuous queries of 120
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = sensitivity_report(clf, Q, np.r_[y[200:], y[200:220]], [0.5, 30.0])
        ivs = [NadarayaWatsonClassifier(metric=None, bandwidth=0.1, lipschitz=L).fit(X[:200], y[:200]).predict_interval(Q)
               for L in (0.5, 30.0)]
    for row, iv in zip(rows, ivs):
        assert row["share_vacuous"] == pytest.approx(np.mean(~(iv.kappa > 0))) and row["share_vacuous"] >= 20 / 120
        assert row["share_trivial"] == pytest.approx(np.mean(np.all((iv.lower <= 0) & (iv.upper >= 1), axis=1)))
    assert rows[1]["share_trivial"] > rows[1]["share_vacuous"]  # trivial with κ > 0 too, at a large L


# ---------------------------------------------------------------------------------------------
# e, f. the CLI: out-of-sample preview, epsilon_predicted
# ---------------------------------------------------------------------------------------------
def test_cli_preview_is_out_of_sample_and_epsilon_is_the_predicted_class(tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    from nwbound.cli.main import main

    X, y = _field(400, 2)
    # λ so small that every row reaches only itself: in sample 0 % vacuous, out of sample most.
    train = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "label": np.where(y == 1, "yes", "no")})
    train.to_csv(tmp_path / "train.csv", index=False)
    rc = main(["fit", str(tmp_path / "train.csv"), "--target", "label", "--lipschitz", "1", "--bandwidth", "1e-6",
               "-o", str(tmp_path / "m.npz")])
    out, err = capsys.readouterr()
    assert rc == 0
    assert "previewed out of sample: 80 evenly spread training rows held out" in err
    assert "100.0% are vacuous" in err and "--bandwidth" in err and "bandwidth=" not in err
    rc = main(["predict", str(tmp_path / "m.npz"), str(tmp_path / "train.csv"), "-o", str(tmp_path / "p.csv")])
    assert rc == 0
    capsys.readouterr()
    pred = pd.read_csv(tmp_path / "p.csv")
    assert "epsilon" not in pred.columns
    lower, upper, proba = (pred[[f"{p}_{c}" for c in ("no", "yes")]].to_numpy() for p in ("lower", "upper", "proba"))
    top = np.argmax(proba, axis=1)
    half = np.maximum(proba - lower, upper - proba)[np.arange(len(pred)), top]
    half[pred["vacuous"].to_numpy()] = 1.0
    np.testing.assert_allclose(pred["epsilon_predicted"].to_numpy(), half, atol=1e-12)
