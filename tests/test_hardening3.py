"""Issue 22 (hardening 3): float32 at extreme scales, the array API properties, the untruncated
Gaussian with the Chernoff bound, far queries, model-file consistency and CSV formula injection."""

from __future__ import annotations

import numpy as np
import pytest

from nwbound import DyadicClassifier, NadarayaWatsonClassifier

# -- 1. float32 features far below (or above) float32's range ---------------------------------------


def _two_sided_field():
    """p₁ = 0 on [0, 0.4], p₁ = 1 on [0.6, 1]: the queries 0.2 and 0.8 have p₁ = 0 and 1."""
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.uniform(0.0, 0.4, 200), rng.uniform(0.6, 1.0, 200)])[:, None]
    return X, (X[:, 0] > 0.5).astype(int), np.array([[0.2], [0.8]]), np.array([0.0, 1.0])


_MAKERS = {
    "regular": lambda s, dtype: NadarayaWatsonClassifier(metric=None, bandwidth=0.1 * s, lipschitz=1.0 / s, dtype=dtype),
    "localized": lambda s, dtype: NadarayaWatsonClassifier(metric=None, bandwidth=0.1 * s, lipschitz=1.0 / s, n_neighbors=30,
                                                           dtype=dtype),
    "dyadic": lambda s, dtype: DyadicClassifier(metric=None, resolution=3, lipschitz=1.0 / s),  # float64 only
}


@pytest.mark.parametrize("kind", sorted(_MAKERS))
@pytest.mark.parametrize("scale", [1e-46, 1e-200, 1e-44, 1e39, 1e160])
def test_float32_scaled_features_give_the_unscaled_intervals(kind, scale):
    X, y, Q, p1 = _two_sided_field()
    reference = _MAKERS[kind](1.0, "float32").fit(X, y).predict_interval(Q)
    scaled = _MAKERS[kind](scale, "float32").fit(X * scale, y).predict_interval(Q * scale)
    # X·s is rounded to float32 differently from X: the intervals agree up to that rounding.
    np.testing.assert_allclose(scaled.lower, reference.lower, atol=1e-4)
    np.testing.assert_allclose(scaled.upper, reference.upper, atol=1e-4)
    np.testing.assert_allclose(scaled.proba, reference.proba, atol=1e-4)
    assert np.all(scaled.lower[:, 1] <= p1) and np.all(p1 <= scaled.upper[:, 1])
    # the field is separable at these queries: both must still be told apart (no collapse to ½)
    assert scaled.upper[0, 1] < 0.5 < scaled.lower[1, 1]


@pytest.mark.parametrize("scale", [1e-46, 1e160])
@pytest.mark.parametrize("n_neighbors", [None, 30])
def test_float32_unit_survives_state_model_file_and_auto_grid(tmp_path, scale, n_neighbors):
    from nwbound.io import load_model, save_model

    X, y, Q, _ = _two_sided_field()
    ref = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=1.0, n_neighbors=n_neighbors, dtype="float32").fit(X, y)
    clf = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=1.0 / scale, n_neighbors=n_neighbors,
                                   dtype="float32").fit(X * scale, y)
    np.testing.assert_allclose(clf.bandwidths_ / scale, ref.bandwidths_, rtol=1e-3)  # grid in input units
    state = clf.get_fitted_state()
    assert state["X"].dtype == np.float32 and np.all(np.isfinite(state["X"])) and np.any(state["X"] != 0)
    np.testing.assert_allclose(state["X"].astype(np.float64) * state["feature_unit"], X * scale, rtol=1e-6)
    loaded = load_model(save_model(clf, tmp_path / "m.npz"))
    np.testing.assert_array_equal(loaded.predict_interval(Q * scale).lower, clf.predict_interval(Q * scale).lower)
    if n_neighbors:
        dist, _ = clf.kneighbors(Q * scale, 2)  # distances in the input's units
        np.testing.assert_allclose(dist / scale, ref.kneighbors(Q, 2)[0], atol=1e-6)  # float32 rounding of X


def test_float32_refuses_what_it_cannot_hold_naming_the_dtype():
    X, y, Q, _ = _two_sided_field()
    clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.1, lipschitz=1.0, dtype="float32").fit(X, y)
    for far in (1e39, 1.7e308):
        with pytest.raises(ValueError, match='dtype="float32".*dtype="float64"'):
            clf.predict_interval([[far]])
    tiny = NadarayaWatsonClassifier(metric=None, bandwidth=0.1, lipschitz=1.0, dtype="float32").fit(X * 1e-46, y)
    with pytest.raises(ValueError, match='dtype="float32"'):
        tiny.predict_interval([[1.0]])  # 1e46 units of the training data: beyond float32
    # a state whose unit is not a power of two is refused
    state = tiny.get_fitted_state()
    state["feature_unit"] = 3.0
    with pytest.raises(ValueError, match="feature_unit"):
        NadarayaWatsonClassifier(metric=None, bandwidth=0.1e-46, lipschitz=1.0, dtype="float32").set_fitted_state(state)


# -- 4. far finite queries (1.7e308) in every classifier -------------------------------------------

_FAR = np.array([[1.7e308, 0.0], [-1.7e308, 1.7e308], [1e300, 1.0]])


@pytest.mark.parametrize("make", [
    lambda: NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0),
    lambda: NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0, n_neighbors=20),
    lambda: NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0, n_neighbors=20, bound="hoeffding"),
    lambda: NadarayaWatsonClassifier(metric=None, bandwidth="auto", margin=0.1, n_neighbors=20),
    lambda: NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0, n_neighbors=20, kernel="gaussian_untruncated",
                                     bound="hoeffding"),
    lambda: DyadicClassifier(metric=None, resolution=3, lipschitz=1.0),
    lambda: DyadicClassifier(metric=None, resolution=3, lipschitz=1.0, bound="hoeffding"),
    lambda: DyadicClassifier(metric=None, resolution=3, margin=0.1),
], ids=["regular", "localized", "localized-hoeffding", "localized-auto-margin", "localized-gauss",
        "dyadic", "dyadic-hoeffding", "dyadic-margin"])
def test_far_finite_queries_get_valid_vacuous_or_trivial_intervals(make):
    rng = np.random.default_rng(0)
    X = rng.random((300, 2))
    y = (X[:, 0] > 0.5).astype(int)
    near = np.array([[0.5, 0.5], [0.1, 0.9]])
    clf = make().fit(X, y)
    alone = clf.predict_interval(near)
    iv = clf.predict_interval(np.vstack([near, _FAR]))
    for a in (iv.lower, iv.upper, iv.proba, iv.epsilon):
        assert np.all(np.isfinite(a))
    assert np.all((0 <= iv.lower) & (iv.lower <= iv.proba) & (iv.proba <= iv.upper) & (iv.upper <= 1))
    # nothing is known that far away: every class's interval is [0, 1], nothing certified
    assert iv.trivial[2:].all() and not iv.certified[2:].any()
    # the far rows do not disturb the others (the regular classifier's block then recomputes its
    # distances directly: equal up to float64 rounding)
    np.testing.assert_allclose(iv.lower[:2], alone.lower, rtol=0, atol=1e-9)
    np.testing.assert_allclose(iv.upper[:2], alone.upper, rtol=0, atol=1e-9)
    assert clf.predict(_FAR).shape == (3,)
    if getattr(clf, "n_neighbors", None):
        dist, idx = clf.kneighbors(_FAR)
        assert all(len(set(row)) == row.size for row in idx)  # k distinct training rows
        assert np.all(dist >= 1e300) and not np.isnan(dist).any()
        assert np.isinf(dist[1]).all()  # ‖(−1.7e308, 1.7e308) − x‖ > float64's largest number


# -- 8. model files: consistency between arrays; CSV cells from user strings -------------------------


def _dyadic_state(weights=None):
    rng = np.random.default_rng(1)
    X = rng.random((200, 2))
    y = (rng.random(200) < X[:, 0]).astype(int)
    clf = DyadicClassifier(metric=None, resolution=2, lipschitz=1.0).fit(X, y, sample_weight=weights)
    return clf, {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in clf.get_fitted_state().items()}


def _slow_cell_sums(weights, X, resolution=2):
    """Independent per-cell Σw, Σw², max w and count from the rows (dictionary by cell)."""
    low, high = X.min(axis=0), X.max(axis=0)
    cells = np.minimum(((X - low) / (high - low) * 2**resolution).astype(int), 2**resolution - 1)
    out = {}
    for c, w in zip(map(tuple, cells), weights):
        s = out.setdefault(c, [0.0, 0.0, 0.0, 0])
        s[0] += w; s[1] += w * w; s[2] = max(s[2], w); s[3] += 1
    return sorted(out.values())


def test_dyadic_state_holds_counts_matching_the_rows():
    rng = np.random.default_rng(1)
    X = rng.random((200, 2))
    w = rng.random(200)
    clf, state = _dyadic_state(w)
    got = sorted([float(k), float(s), float(m), int(n)] for k, s, m, n in zip(
        state["cell_class_sums_"].sum(axis=1), state["cell_sq_sums_"], state["cell_weight_max_"], state["cell_counts_"]))
    want = _slow_cell_sums(w / w.max(), X)  # weights relative to the largest
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-12)
    DyadicClassifier(metric=None, resolution=2, lipschitz=1.0).set_fitted_state(state)  # a fitted state loads


@pytest.mark.parametrize("tamper, message", [
    (lambda s: s.__setitem__("cell_sq_sums_", np.zeros_like(s["cell_sq_sums_"])), "cell_sq_sums_"),
    (lambda s: s.__setitem__("cell_sq_sums_", s["cell_sq_sums_"] * 0.5), "cell_sq_sums_"),  # below κ²/count
    (lambda s: s.__setitem__("cell_counts_", s["cell_counts_"] * 0 + 1), "cell_counts_|cell_sq_sums_"),
    (lambda s: s.__setitem__("cell_weight_max_", s["cell_weight_max_"] * 3.0), "cell_weight_max_"),
    (lambda s: s.__setitem__("cell_class_sums_", s["cell_class_sums_"] * np.array([1.0, 2.0])), "class_prior_|cell_"),
])
def test_crafted_dyadic_states_are_refused(tamper, message):
    _, state = _dyadic_state()
    tamper(state)
    with pytest.raises(ValueError, match=message):
        DyadicClassifier(metric=None, resolution=2, lipschitz=1.0).set_fitted_state(state)


def test_crafted_model_file_with_zero_square_sums_is_refused(tmp_path):
    from nwbound.io import ModelFileError, load_model, save_model

    clf, _ = _dyadic_state()
    path = save_model(clf, tmp_path / "m.npz")
    # rewrite the file as an attacker would: sq sums 0, a fresh checksum (older files lack counts)
    from nwbound.io import model_file

    arrays = dict(np.load(path, allow_pickle=False))
    arrays["state__cell_sq_sums_"] = np.zeros_like(arrays["state__cell_sq_sums_"])
    import json

    meta = json.loads(bytes(arrays["__metadata__"]).decode())
    for drop in ("state__cell_counts_",):
        arrays.pop(drop, None)
        meta["state"].pop(drop.removeprefix("state__"), None)
        meta["arrays"].pop(drop, None)
    meta.pop("sha256")
    meta["sha256"] = model_file._digest({k: v for k, v in arrays.items() if k != "__metadata__"}, meta)
    arrays["__metadata__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    crafted = tmp_path / "crafted.npz"
    with open(crafted, "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(ModelFileError, match="cell_sq_sums_"):
        load_model(crafted)


def test_csv_cells_from_user_strings_cannot_run_as_formulas(tmp_path):
    from nwbound.utils import spreadsheet_safe, write_table

    rows = [{"data": "=1+1.csv", "n": -3, "text": "-2", "note": "@SUM(A1)", "=head": "+cmd"}]
    csv_path, md_path = write_table(rows, tmp_path / "metrics")
    import csv

    with open(csv_path, newline="") as fh:
        header, row = list(csv.reader(fh))
    assert header == ["data", "n", "text", "note", "'=head"]
    assert row == ["'=1+1.csv", "-3", "-2", "'@SUM(A1)", "'+cmd"]
    assert "=1+1.csv" in md_path.read_text()  # Markdown is not a spreadsheet: verbatim
    for value in ("=x", "+x", "-x", "@x", "\tx", "\rx"):
        assert spreadsheet_safe(value) == "'" + value
    for value in ("x", "-1.5", "+2e3", 5, -1.0, None):
        assert spreadsheet_safe(value) == value


def test_evaluate_writes_a_formula_like_file_name_quoted(tmp_path, monkeypatch, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    import csv

    from nwbound.cli import evaluate
    from nwbound.cli.main import main

    monkeypatch.setattr(evaluate, "_figures", lambda *args: ([], []))  # the tables are under test, not the figures
    rng = np.random.default_rng(0)
    x = rng.random(200)
    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"x1": x, "label": np.where(x > 0.5, "b", "a")}).to_csv("=1+1.csv", index=False)
    assert main(["fit", "=1+1.csv", "--target", "label", "--lipschitz", "1", "--bandwidth", "0.2",
                 "-o", "m.npz", "--quiet"]) == 0
    assert main(["evaluate", "m.npz", "=1+1.csv", "--target", "label", "-o", "ev", "--quiet"]) == 0
    with open(tmp_path / "ev" / "metrics.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[0]["data"] == "'=1+1.csv"
    assert not any(str(v).startswith(("=", "+", "@")) for row in rows for v in row.values())


# -- 3. gaussian_untruncated with the default bound="chernoff" -------------------------------------


def test_untruncated_gaussian_chernoff_falls_back_to_hoeffding_loudly(tmp_path):
    from nwbound.io import load_model, save_model

    rng = np.random.default_rng(0)
    X = rng.random((300, 2))
    y = (X[:, 0] > 0.5).astype(int)
    with pytest.warns(UserWarning, match="uses bound='hoeffding'.*kernel='gaussian'") as record:
        clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.1, lipschitz=1.0, kernel="gaussian_untruncated").fit(X, y)
    assert record[0].filename == __file__  # points at the caller's line
    assert clf.bound_spec_.form == "hoeffding"
    hoeff = NadarayaWatsonClassifier(metric=None, bandwidth=0.1, lipschitz=1.0, kernel="gaussian_untruncated",
                                     bound="hoeffding").fit(X, y)
    Q = rng.random((20, 2))
    np.testing.assert_array_equal(clf.predict_interval(Q).lower, hoeff.predict_interval(Q).lower)
    with pytest.warns(UserWarning, match="uses bound='hoeffding'"):
        both = clf.predict_interval(Q, bounds=["chernoff", "hoeffding"])
    np.testing.assert_array_equal(both["chernoff"].upper, both["hoeffding"].upper)
    with pytest.warns(UserWarning, match="uses bound='hoeffding'"):
        loaded = load_model(save_model(clf, tmp_path / "g.npz"))
    np.testing.assert_array_equal(loaded.predict_interval(Q).lower, hoeff.predict_interval(Q).lower)
    # no warning where nothing falls back: the localized classifier's per-point Chernoff form
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        NadarayaWatsonClassifier(metric=None, bandwidth=0.1, lipschitz=1.0, kernel="gaussian_untruncated", n_neighbors=20).fit(X, y)
        NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.1, kernel="gaussian_untruncated").fit(X, y).predict_proba(Q)


def test_untruncated_gaussian_default_bound_covers_a_known_field():
    """p₁(x) = x₁ (Lipschitz 1): the intervals of the fallback hold at rate ≥ 1 − δ per query."""
    rng = np.random.default_rng(5)
    Q = np.linspace(0.05, 0.95, 10)[:, None]
    misses = np.zeros(len(Q))
    repeats = 40
    for _ in range(repeats):
        X = rng.random((200, 1))
        y = (rng.random(200) < X[:, 0]).astype(int)
        with pytest.warns(UserWarning):
            iv = NadarayaWatsonClassifier(metric=None, bandwidth=0.08, lipschitz=1.0, kernel="gaussian_untruncated",
                                          delta=0.1).fit(X, y).predict_interval(Q)
        misses += (Q[:, 0] < iv.lower[:, 1]) | (Q[:, 0] > iv.upper[:, 1])
    assert misses.max() / repeats <= 0.1 + 3 * np.sqrt(0.1 * 0.9 / repeats)


def test_cli_fit_with_untruncated_gaussian_writes_a_model_predict_accepts(tmp_path, monkeypatch, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from nwbound.cli.main import main

    rng = np.random.default_rng(0)
    x = rng.random(200)
    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"x1": x, "label": np.where(x > 0.5, "b", "a")}).to_csv("t.csv", index=False)
    with pytest.warns(UserWarning, match="hoeffding"):
        assert main(["fit", "t.csv", "--target", "label", "--lipschitz", "1", "--bandwidth", "0.2",
                     "--kernel", "gaussian_untruncated", "-o", "m.npz", "--quiet"]) == 0
    with pytest.warns(UserWarning, match="hoeffding"):
        assert main(["predict", "m.npz", "t.csv", "-o", "p.csv"]) == 0
    assert len(pd.read_csv("p.csv")) == 200


@pytest.mark.parametrize("scale", [1e-35, 1e35])
def test_float32_sharded_fit_at_extreme_scale_equals_in_memory(scale):
    """Shards hold their rows in the input's units (the template's feature unit is not theirs)."""
    da = pytest.importorskip("dask.array")
    from nwbound import dask as nwdask

    X, y, Q, _ = _two_sided_field()
    Xs, Qs = (X * scale).astype(np.float32), (Q * scale).astype(np.float32)
    for k in (None, 20):
        params = dict(bandwidth=0.1 * scale, lipschitz=1.0 / scale, dtype="float32", n_neighbors=k)
        want = NadarayaWatsonClassifier(metric=None, **params).fit(Xs, y).predict_interval(Qs)
        got = nwdask.ShardedNadarayaWatson(metric=None, **params).fit(da.from_array(Xs, chunks=(150, -1)), y)
        got = got.predict_interval(da.from_array(Qs))
        got = {name: np.asarray(getattr(got, name, None) if not isinstance(got, dict) else got[name])
               for name in ("lower", "upper")}
        # each shard's float32 layout rounds its own way: equal up to float32 rounding
        np.testing.assert_allclose(got["lower"], want.lower, rtol=0, atol=1e-4)
        np.testing.assert_allclose(got["upper"], want.upper, rtol=0, atol=1e-4)
        assert got["upper"][0, 1] < 0.5 < got["lower"][1, 1]
