"""``benchmarks/centred_estimate.py``: the residual-centred intervals against slow formulas written here.

The prototype is vectorised and chunked; each check below recomputes one piece with explicit
loops over queries and kernel rows (the Hoeffding form, the label-free choice of λ, the cross-fitted
intersection) or with an exact θ-minimisation (the per-point band-Chernoff ends).
"""

import importlib.util
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from nwbound import NadarayaWatsonClassifier
from nwbound.kernels import get_kernel

ROOT = Path(__file__).resolve().parents[1]


def _prototype():
    spec = importlib.util.spec_from_file_location("centred_estimate", ROOT / "benchmarks" / "centred_estimate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("centred_estimate", module)  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


CE = _prototype()


def _data(n=240, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * np.array([1.0, 10.0, 0.1])  # unequal scales: the space standardises
    logits = np.column_stack([np.zeros(n), 1.5 * X[:, 0] + np.sin(3 * X[:, 2] * 10)])
    if classes == 3:
        logits = np.column_stack([logits, X[:, 1] / 10 - 0.5])
    P = np.exp(logits - logits.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(P, axis=1)).sum(axis=1)
    return X, y


@pytest.fixture(scope="module", params=[(2, False), (3, True)], ids=["binary-one-split", "three-classes-crossfit"])
def fitted(request):
    classes, cross_fit = request.param
    X, y = _data(classes=classes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = NadarayaWatsonClassifier(cross_fit=cross_fit, random_state=0).fit(X, y)
    Q = _data(n=12, seed=1, classes=classes)[0]
    return clf, X, y, Q


def _slow_model(model, X, y, Q, classes, delta_prime, space, grid, kernel):
    """Per query, by loops: the least-ε λ of the grid, then p̃ and the Hoeffding limits."""
    sp = model.metric_
    ns = sp.n_components_ - sp.n_features_in_
    weight = sp.feature_weight_ * sp.balance_
    rows = model.nw_rows_
    Zr, Zq = sp.transform(X[rows]), sp.transform(Q)
    xr, xq = Zr[:, ns:] / weight, Zq[:, ns:] / weight
    # s up to a constant per class, from the score block (binary: the second class's column)
    def scores(Z):
        S = np.zeros((Z.shape[0], classes.shape[0]))
        if ns == 1:
            S[:, 1], S[:, 0] = Z[:, 0], -Z[:, 0]
        else:
            S[:, :] = Z[:, :ns]
        return S
    sr, sq = scores(Zr), scores(Zq)
    # L = √(1 + (L_r / feature_weight)² / c²): at the space's own L, its L_r; above it (raised by
    # the held-out check), the L_r that L stands for
    if model.lipschitz_ == pytest.approx(sp.lipschitz_):
        Lr = sp.residual_lipschitz_
    else:
        Lr = sp.feature_weight_ * sp.balance_ * math.sqrt(model.lipschitz_**2 - 1)
    t = math.sqrt(math.log(2 / delta_prime) / 2)

    def sums(j, lam):  # κ, Σ K², Σ K d_x and Σ K (1{y_i = c} − s_c(x_i)) of query j, row by row
        kap = s2 = dsum = 0.0
        num = np.zeros(classes.shape[0])
        for i in range(rows.shape[0]):
            dk = np.linalg.norm((xq[j] - xr[i]) if space == "x" else (Zq[j] - Zr[i]))
            w = float(kernel(np.array([dk / lam]))[0])
            kap += w
            s2 += w * w
            dsum += w * np.linalg.norm(xq[j] - xr[i])
            num += w * ((y[rows[i]] == classes).astype(float) - sr[i])
        return kap, s2, dsum, num

    out = []
    for j in range(Q.shape[0]):
        best = None
        for lam in grid:
            kap, s2, dsum, _ = sums(j, lam)
            if kap > 0:  # λ by the least ε at the held-out L_r (feature_weight_), which reads no kernel-row label
                eps = (sp.feature_weight_ * dsum + t * math.sqrt(s2)) / kap
                if best is None or eps < best[0]:
                    best = (eps, lam)
        if best is None:
            out.append(None)
            continue
        lam = best[1]
        kap, s2, dsum, num = sums(j, lam)
        eps = (Lr * dsum + t * math.sqrt(s2)) / kap  # the bound at the model's own L_r
        p_tilde = sq[j] + num / kap
        out.append((lam, p_tilde, np.clip(p_tilde - eps, 0, 1), np.clip(p_tilde + eps, 0, 1), kap))
    return out


@pytest.mark.parametrize("space", ["x", "z"])
def test_hoeffding_intervals_equal_the_loops(fitted, space):
    clf, X, y, Q = fitted
    models = getattr(clf, "cross_fit_models_", None) or [clf]
    K, C = len(models), clf.classes_.shape[0]
    dp = clf.delta / K if C == 2 else clf.delta / K / C
    kernel = get_kernel(clf.kernel)
    lower, upper = np.zeros((Q.shape[0], C)), np.ones((Q.shape[0], C))
    lams = []
    for model in models:
        p = CE.model_pieces(model, X, y, Q, clf.classes_, clf.delta, K, clf.coverage)
        grid = CE.bandwidth_grid(p.x_rows) if space == "x" else np.atleast_1d(model.bandwidths_)
        slow = _slow_model(model, X, y, Q, clf.classes_, dp, space, grid, kernel)
        lams.append([np.nan if s is None else s[0] for s in slow])
        for j, s in enumerate(slow):
            if s is not None:
                lower[j] = np.maximum(lower[j], s[2])
                upper[j] = np.minimum(upper[j], s[3])
    crossed = lower > upper
    lower, upper = np.where(crossed, np.minimum(lower, upper), lower), np.where(crossed, np.maximum(lower, upper), upper)
    # a small working memory: many blocks of a few queries each
    iv = CE.centred_intervals(clf, X, y, Q, space=space, bound="hoeffding", working_memory_mb=0.05)
    np.testing.assert_allclose(iv.bandwidth, np.array(lams).T, rtol=1e-12)
    np.testing.assert_allclose(iv.lower, lower, atol=1e-10)
    np.testing.assert_allclose(iv.upper, upper, atol=1e-10)
    assert np.all(iv.lower <= iv.upper)


def test_point_estimate_is_the_kappa_weighted_mean_of_each_models_p_tilde(fitted):
    clf, X, y, Q = fitted
    models = getattr(clf, "cross_fit_models_", None) or [clf]
    kernel = get_kernel(clf.kernel)
    num, den = np.zeros((Q.shape[0], clf.classes_.shape[0])), np.zeros(Q.shape[0])
    for model in models:
        p = CE.model_pieces(model, X, y, Q, clf.classes_, clf.delta, len(models), clf.coverage)
        for j, s in enumerate(_slow_model(model, X, y, Q, clf.classes_, p.delta_prime, "x",
                                          CE.bandwidth_grid(p.x_rows), kernel)):
            if s is not None:  # p̃ = s(x) + Σ a_i (1{y_i = c} − s(x_i)), clipped, weighted by κ
                num[j] += s[4] * np.clip(s[1], 0, 1)
                den[j] += s[4]
    assert np.all(den > 0)
    iv = CE.centred_intervals(clf, X, y, Q)
    np.testing.assert_allclose(iv.proba, num / den[:, None], atol=1e-12)


def _exact_min(S, Kw, means, sign):
    """min over θ ≥ 0 of ∓θS + Σ log(1 + μ_i(e^{±θK_i} − 1)), by a bounded scalar search."""
    cap = 700.0 / Kw.max()
    # log(1 − μ + μ e^{±θK}) in log space: log1p(μ·expm1(−θK)) rounds to log(0) = −inf for μ = 1
    # and θK near 700, a rejection that no θ gives
    with np.errstate(divide="ignore"):
        log_rest, log_mu = np.log1p(-means), np.log(means)
    f = lambda th: -sign * th * S + np.logaddexp(log_rest, log_mu + sign * th * Kw).sum()  # noqa: E731
    res = minimize_scalar(f, bounds=(0.0, cap), method="bounded", options={"xatol": 1e-10})
    return min(res.fun, f(0.0), f(cap))


def _slow_chernoff(S, Kw, ds, rad, level):
    """Lower and upper ends of the centred band-Chernoff set for one (query, class), by bisection
    on the exact test: upper tail with means min(1, m + Δs_i + ρ_i), lower tail with
    max(0, m + Δs_i − ρ_i), each tail at level δ′/2."""
    def rejected_low(m):
        return _exact_min(S, Kw, np.clip(m + ds + rad, 0, 1), +1) <= level

    def rejected_high(m):
        return _exact_min(S, Kw, np.clip(m + ds - rad, 0, 1), -1) <= level

    a, b = 0.0, 1.0
    for _ in range(40):
        mid = (a + b) / 2
        a, b = (mid, b) if rejected_low(mid) else (a, mid)
    lo = a
    a, b = 0.0, 1.0
    for _ in range(40):
        mid = (a + b) / 2
        a, b = (a, mid) if rejected_high(mid) else (mid, b)
    return lo, b


def test_chernoff_ends_match_the_exact_test_and_sit_inside_hoeffding(fitted):
    clf, X, y, Q = fitted
    models = getattr(clf, "cross_fit_models_", None) or [clf]
    model, K, C = models[0], len(models), clf.classes_.shape[0]
    p = CE.model_pieces(model, X, y, Q, clf.classes_, clf.delta, K, clf.coverage)
    kernel = get_kernel(clf.kernel)
    grid = CE.bandwidth_grid(p.x_rows)
    slow = _slow_model(model, X, y, Q, clf.classes_, p.delta_prime, "x", grid, kernel)
    level = math.log(p.delta_prime / 2)
    q = slice(0, 6)
    out = CE._model_block(p, q, kernel, "x", grid, "chernoff", 64.0)
    hoeff = CE._model_block(p, q, kernel, "x", grid, "hoeffding", 64.0)
    assert np.all(out["lower"] >= hoeff["lower"] - 1e-12) and np.all(out["upper"] <= hoeff["upper"] + 1e-12)
    checked = 0
    for j in range(6):
        if slow[j] is None:
            continue
        lam = slow[j][0]
        d = np.linalg.norm(p.x_query[j] - p.x_rows, axis=1)
        w = kernel(d / lam)
        keep = w > 0
        for c in range(C):
            S = float((w * p.onehot[:, c]).sum())
            ds = p.s_rows[keep, c] - p.s_query[j, c]
            lo, up = _slow_chernoff(S, w[keep], ds, p.residual_lipschitz * d[keep], level)
            lo, up = max(lo, hoeff["lower"][j, c]), min(up, hoeff["upper"][j, c])
            # never beyond the exact set (validity), and within the search's precision of it
            assert out["lower"][j, c] <= lo + 1e-6 and out["upper"][j, c] >= up - 1e-6
            assert out["lower"][j, c] >= lo - 2e-3 and out["upper"][j, c] <= up + 2e-3
            checked += 1
    assert checked >= 6


def test_chernoff_end_of_unbiased_equal_weights_is_the_binomial_one():
    # ten rows of weight 1 all of class c, no band: P(S ≥ 10) = m^10, so the end solves m^10 = δ′/2
    end = CE.centred_chernoff_ends(np.array([10.0]), np.ones((1, 10)), np.zeros((1, 10)), np.array([0.0]),
                                   np.array([1.0]), math.log(0.025), steps=50)
    assert end[0] == pytest.approx(0.025 ** 0.1, abs=1e-6)


def test_refuses_unknown_space_and_bound(fitted):
    clf, X, y, Q = fitted
    with pytest.raises(ValueError, match="space must be"):
        CE.centred_intervals(clf, X, y, Q, space="w")
    with pytest.raises(ValueError, match="bound must be"):
        CE.centred_intervals(clf, X, y, Q, bound="paper")
