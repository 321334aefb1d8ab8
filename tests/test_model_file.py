"""Safe model files: exact round trips and the refusals (nwbound.io.save_model/load_model)."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from nwbound import DyadicClassifier, NadarayaWatsonClassifier
from nwbound.io import FORMAT_VERSION, FeatureScaler, ModelFileError, TableModel, load_model, save_model

# The models here are small on purpose; their bounds' usefulness is not what is tested.
pytestmark = pytest.mark.filterwarnings("ignore::nwbound.diagnostics.UselessBoundWarning")

RNG = np.random.default_rng(7)
X_TRAIN = RNG.uniform(-2.0, 2.0, size=(120, 3))
Y_INT = (X_TRAIN[:, 0] + 0.3 * RNG.normal(size=120) > 0).astype(int) + (X_TRAIN[:, 1] > 1.2)
# Queries inside and far outside the training box (vacuous / outside_box rows).
X_QUERY = np.vstack([RNG.uniform(-2.5, 2.5, size=(40, 3)), [[50.0, 50.0, 50.0], [-9.0, 0.0, 3.0]]])
INTERVAL_FIELDS = ("proba", "lower", "upper", "epsilon", "bias", "sampling", "kappa", "n_eff", "vacuous", "bandwidth", "outside_box")


def _assert_identical(a, b, X):
    """Predictions, probabilities and every interval array byte-identical."""
    pa, pb = a.predict(X), b.predict(X)
    assert pa.dtype == pb.dtype and np.array_equal(pa, pb)
    qa, qb = a.predict_proba(X), b.predict_proba(X)
    assert qa.dtype == qb.dtype and qa.tobytes() == qb.tobytes()
    ia, ib = a.predict_interval(X), b.predict_interval(X)
    for name in INTERVAL_FIELDS:
        u, v = getattr(ia, name), getattr(ib, name)
        if u is None:
            assert v is None
            continue
        assert u.dtype == v.dtype and u.shape == v.shape and u.tobytes() == v.tobytes(), name


def _read_npz(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """Members of a model file with plain numpy (no pickle), metadata parsed."""
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays.pop("__metadata__").tobytes().decode("utf-8"))
    return meta, arrays


def _documented_sha256(arrays: dict[str, np.ndarray], meta: dict) -> str:
    """The checksum recipe as written in the module docs, re-implemented here."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        arr = np.asarray(arrays[name])  # 0-d scalars keep shape ()
        h.update(name.encode() + b"\0" + arr.dtype.str.encode() + b"\0")
        h.update(repr(tuple(arr.shape)).encode() + b"\0")
        h.update(arr.tobytes())
    rest = {k: v for k, v in meta.items() if k != "sha256"}
    h.update(json.dumps(rest, sort_keys=True, separators=(",", ":")).encode())
    return h.hexdigest()


def _write_npz(path: Path, meta: dict, arrays: dict[str, np.ndarray], *, resign: bool) -> None:
    """Rewrite a model file with np.savez (optionally with a fresh, valid checksum)."""
    meta = dict(meta)
    if resign:
        meta["sha256"] = _documented_sha256(arrays, meta)
    payload = dict(arrays)
    payload["__metadata__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, **payload)


@pytest.fixture
def nw_model():
    return NadarayaWatsonClassifier(metric=None, bandwidth=0.9, lipschitz=0.5).fit(X_TRAIN, Y_INT)


# --------------------------------------------------------------------------------------------
# Round trips
# --------------------------------------------------------------------------------------------
ROUND_TRIPS = {
    "regular": lambda: NadarayaWatsonClassifier(metric=None, bandwidth=0.9, lipschitz=0.5),
    "regular-auto": lambda: NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=0.5),
    "regular-grid-float32": lambda: NadarayaWatsonClassifier(metric=None, 
        bandwidth="auto", bandwidth_grid=np.array([0.3, 0.6, 1.2], dtype=np.float32), margin=0.4, dtype="float32"
    ),
    "regular-paper-gaussian": lambda: NadarayaWatsonClassifier(metric=None, 
        kernel="gaussian_untruncated", bandwidth=0.5, lipschitz=0.5, bound="paper", sigma=0.25, ck=1.0, coverage="per_class"
    ),
    "localized": lambda: NadarayaWatsonClassifier(metric=None, bandwidth=1.0, n_neighbors=15, lipschitz=0.5),
    "localized-auto-kdtree": lambda: NadarayaWatsonClassifier(metric=None, 
        bandwidth="auto", n_neighbors=20, algorithm="kd_tree", index_params={"leaf_size": 10}, lipschitz=0.5
    ),
    "dyadic": lambda: DyadicClassifier(metric=None, resolution=3, lipschitz=0.5),
    "dyadic-margin-uniform": lambda: DyadicClassifier(metric=None, resolution=5, margin=0.2, empty_neighborhood="uniform"),
}


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
def test_round_trip_is_exact(tmp_path, name):
    est = ROUND_TRIPS[name]().fit(X_TRAIN, Y_INT)
    path = save_model(est, tmp_path / "model.npz")
    loaded = load_model(path)
    assert type(loaded) is type(est)
    _assert_identical(est, loaded, X_QUERY)
    p0, p1 = est.get_params(), loaded.get_params()
    assert p0.keys() == p1.keys()
    for k in p0:
        if isinstance(p0[k], np.ndarray):
            assert np.array_equal(p0[k], p1[k])
        else:
            assert p0[k] == p1[k], k
    if getattr(est, "n_neighbors", None) is not None:
        assert loaded.index_ is not None and loaded.index_ is not est.index_  # rebuilt, not copied


def test_round_trip_sample_weight_and_feature_names(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X_TRAIN, columns=["age", "dose", "score"])
    w = RNG.uniform(0.2, 3.0, size=X_TRAIN.shape[0])
    est = NadarayaWatsonClassifier(metric=None, bandwidth=0.8, lipschitz=0.5).fit(frame, Y_INT, sample_weight=w)
    loaded = load_model(save_model(est, tmp_path / "m.npz"))
    assert list(loaded.feature_names_in_) == ["age", "dose", "score"]
    _assert_identical(est, loaded, pd.DataFrame(X_QUERY, columns=["age", "dose", "score"]))


@pytest.mark.parametrize("kind", ["object", "unicode"])
def test_round_trip_string_classes(tmp_path, kind):
    names = np.array(["cat", "dog", "ferret"])[Y_INT]
    y = names.astype(object) if kind == "object" else names
    for est in (NadarayaWatsonClassifier(metric=None, bandwidth=0.9, lipschitz=0.5), DyadicClassifier(metric=None, resolution=3, lipschitz=0.5)):
        est.fit(X_TRAIN, y)
        loaded = load_model(save_model(est, tmp_path / f"{kind}-{type(est).__name__}.npz"))
        assert loaded.classes_.tolist() == ["cat", "dog", "ferret"]
        if kind == "unicode":
            assert loaded.classes_.dtype == est.classes_.dtype
            _assert_identical(est, loaded, X_QUERY)
        else:  # object labels come back as text (set_fitted_state takes unicode classes)
            assert loaded.predict(X_QUERY).tolist() == est.predict(X_QUERY).tolist()
            assert loaded.predict_proba(X_QUERY).tobytes() == est.predict_proba(X_QUERY).tobytes()


@pytest.mark.parametrize("scale", ["minmax", "standard"])
def test_round_trip_scaled_pipeline(tmp_path, scale):
    raw = X_TRAIN * np.array([1.0, 100.0, 0.01]) + np.array([0.0, 5.0, -3.0])
    model = TableModel.fit(
        NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="auto", n_neighbors=25),
        raw, Y_INT, features=["a", "b", "c"], scale=scale, lipschitz=0.2, target="label",
    )
    loaded = load_model(save_model(model, tmp_path / "pipe.npz"))
    assert isinstance(loaded, TableModel)
    assert loaded.features == ("a", "b", "c") and loaded.target == "label" and loaded.lipschitz == 0.2
    assert loaded.scaler.method == scale
    assert loaded.scaler.shift.tobytes() == model.scaler.shift.tobytes()
    assert loaded.scaler.scale.tobytes() == model.scaler.scale.tobytes()
    queries = X_QUERY * np.array([1.0, 100.0, 0.01]) + np.array([0.0, 5.0, -3.0])
    _assert_identical(model, loaded, queries)


def test_table_model_reads_a_data_frame_by_column_name(tmp_path):
    """A TableModel fed a data frame with its columns in another order (or misnamed) used to read
    them by position: predictions for swapped features, silently. Frames are now read by name."""
    pd = pytest.importorskip("pandas")
    raw = X_TRAIN * np.array([1.0, 100.0, 0.01])
    frame = pd.DataFrame(raw, columns=["a", "b", "c"])
    by_name = TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale"),
                             frame[["c", "a", "b"]], Y_INT, features=["a", "b", "c"], scale="minmax", lipschitz=0.2)
    by_position = TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale"),
                                 raw, Y_INT, features=["a", "b", "c"], scale="minmax", lipschitz=0.2)
    loaded = load_model(save_model(by_name, tmp_path / "frame.npz"))
    queries = X_QUERY * np.array([1.0, 100.0, 0.01])
    expected = by_position.predict_interval(queries)
    shuffled = pd.DataFrame(queries, columns=["a", "b", "c"])[["b", "c", "a"]].assign(patient="p")
    for model in (by_name, loaded):
        for method in ("predict_interval", "predict_proba", "predict"):
            got = getattr(model, method)(shuffled)
            want = getattr(by_position, method)(queries)
            if method == "predict_interval":
                got, want = got.upper, expected.upper
            np.testing.assert_array_equal(got, want)
    assert not np.array_equal(by_position.predict_proba(shuffled[["b", "c", "a"]].to_numpy()),
                              by_position.predict_proba(queries))  # by position the order matters
    with pytest.raises(ValueError, match=r"X has no feature column\(s\) \['a'\]; its columns are 'b', 'c', 'x'"):
        loaded.predict(shuffled[["b", "c"]].assign(x=1.0))


def test_scaled_pipeline_restates_assumption_in_scaled_units():
    raw = X_TRAIN * np.array([1.0, 100.0, 0.01])
    ranges = raw.max(axis=0) - raw.min(axis=0)
    stds = raw.std(axis=0)
    mm = TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale"), raw, Y_INT, features=["a", "b", "c"], scale="minmax", lipschitz=0.2)
    # x̃ = x / range: ‖x − x′‖ ≤ max(range)·‖x̃ − x̃′‖, so L̃ = L·max(range); γ̃ = γ / max(range).
    assert mm.estimator.lipschitz == pytest.approx(0.2 * ranges.max(), rel=1e-12)
    assert np.allclose(mm.transform(raw).min(axis=0), 0.0) and np.allclose(mm.transform(raw).max(axis=0), 1.0)
    st = TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale"), raw, Y_INT, features=["a", "b", "c"], scale="standard", margin=3.0)
    assert st.estimator.margin == pytest.approx(3.0 / stds.max(), rel=1e-12)
    plain = TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale"), raw, Y_INT, features=["a", "b", "c"], lipschitz=0.2)
    assert plain.scaler is None and plain.estimator.lipschitz == 0.2


def test_file_is_plain_npz_with_documented_metadata(tmp_path, nw_model):
    path = save_model(nw_model, tmp_path / "m.npz")
    with zipfile.ZipFile(path) as zf:
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())
    meta, arrays = _read_npz(path)  # np.load with allow_pickle=False reads every member
    # Without learned pieces a file keeps format 2, which nwbound before format 3 reads too.
    assert meta["format"] == "nwbound-model" and meta["format_version"] == 2 < FORMAT_VERSION
    assert meta["estimator"] == "NadarayaWatsonClassifier"
    assert meta["params"]["kernel"] == "epanechnikov" and meta["params"]["lipschitz"] == 0.5
    assert meta["n_features_in"] == 3
    state = nw_model.get_fitted_state()
    # One member per entry of the documented fitted state, nothing else.
    assert set(meta["state"]) == set(state)
    assert set(arrays) == {f"state__{k}" for k, v in state.items() if v is not None}
    assert meta["state"]["X"] == "array" and meta["state"]["n_features_in_"] == "int"
    assert np.array_equal(arrays["state__classes_"], nw_model.classes_)
    assert np.array_equal(arrays["state__X"], X_TRAIN)
    assert arrays["state__n_features_in_"].shape == () and int(arrays["state__n_features_in_"]) == 3
    assert meta["sha256"] == _documented_sha256(arrays, meta)
    assert not any(a.dtype.hasobject for a in arrays.values())


def test_same_model_gives_same_bytes(tmp_path, nw_model):
    a = save_model(nw_model, tmp_path / "a.npz")
    b = save_model(NadarayaWatsonClassifier(metric=None, bandwidth=0.9, lipschitz=0.5).fit(X_TRAIN, Y_INT), tmp_path / "b.npz")
    assert a.read_bytes() == b.read_bytes()


# --------------------------------------------------------------------------------------------
# Refusals
# --------------------------------------------------------------------------------------------
def test_tampered_array_is_refused(tmp_path, nw_model):
    path = save_model(nw_model, tmp_path / "m.npz")
    meta, arrays = _read_npz(path)
    arrays["state__X"] = arrays["state__X"].copy()
    arrays["state__X"][3, 1] += 1e-9  # a tiny edit, valid zip and CRC
    _write_npz(path, meta, arrays, resign=False)
    with pytest.raises(ModelFileError, match=r"SHA-256.*corrupted or edited") as err:
        load_model(path)
    assert str(path) in str(err.value)


def test_tampered_metadata_is_refused(tmp_path, nw_model):
    path = save_model(nw_model, tmp_path / "m.npz")
    meta, arrays = _read_npz(path)
    meta["params"]["lipschitz"] = 0.001  # would silently narrow every bound
    _write_npz(path, meta, arrays, resign=False)
    with pytest.raises(ModelFileError, match="SHA-256"):
        load_model(path)


@pytest.mark.parametrize("keep", [0.0, 0.1, 0.5, 0.9, 0.999])
def test_truncated_file_is_refused(tmp_path, nw_model, keep):
    path = save_model(nw_model, tmp_path / "m.npz")
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(ModelFileError, match="m.npz"):
        load_model(path)


def test_newer_format_version_is_refused(tmp_path, nw_model):
    path = save_model(nw_model, tmp_path / "m.npz")
    meta, arrays = _read_npz(path)
    meta["format_version"] = FORMAT_VERSION + 1
    _write_npz(path, meta, arrays, resign=True)
    with pytest.raises(ModelFileError, match=rf"format version {FORMAT_VERSION + 1}.*[Uu]pgrade nwbound") as err:
        load_model(path)
    assert str(path) in str(err.value)


def test_wrong_estimator_class_is_refused(tmp_path, nw_model):
    path = save_model(nw_model, tmp_path / "m.npz")
    meta, arrays = _read_npz(path)
    meta["estimator"] = "LogisticRegression"
    _write_npz(path, meta, arrays, resign=True)
    with pytest.raises(ModelFileError, match="LogisticRegression"):
        load_model(path)


def test_unknown_parameter_is_refused(tmp_path, nw_model):
    path = save_model(nw_model, tmp_path / "m.npz")
    meta, arrays = _read_npz(path)
    meta["params"]["exec_on_load"] = "import os"
    _write_npz(path, meta, arrays, resign=True)
    with pytest.raises(ModelFileError, match="exec_on_load"):
        load_model(path)


_CANARY: list[str] = []


def _canary() -> list:
    _CANARY.append("unpickled")
    return []


class _Payload:
    def __reduce__(self):
        return (_canary, ())


def test_pickled_member_is_never_unpickled(tmp_path, nw_model):
    path = save_model(nw_model, tmp_path / "m.npz")
    meta, arrays = _read_npz(path)
    arrays["state__classes_"] = np.array([_Payload(), _Payload()], dtype=object)
    payload = {**arrays, "__metadata__": np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)}
    with open(path, "wb") as fh:
        np.savez(fh, **payload)  # object arrays are pickled by np.savez
    with pytest.raises(ModelFileError, match="pickle"):
        load_model(path)
    assert _CANARY == []


def test_not_a_model_file(tmp_path):
    junk = tmp_path / "notes.npz"
    junk.write_text("just some text\n")
    with pytest.raises(ModelFileError, match="notes.npz"):
        load_model(junk)
    other = tmp_path / "other.npz"
    np.savez(other, a=np.arange(3))
    with pytest.raises(ModelFileError, match="no nwbound metadata"):
        load_model(other)
    with pytest.raises(FileNotFoundError, match="missing.npz"):
        load_model(tmp_path / "missing.npz")


def test_expected_features(tmp_path):
    pd = pytest.importorskip("pandas")
    est = NadarayaWatsonClassifier(metric=None, bandwidth=0.9, lipschitz=0.5).fit(pd.DataFrame(X_TRAIN, columns=list("abc")), Y_INT)
    path = save_model(est, tmp_path / "named.npz")
    assert load_model(path, expected_features=["a", "b", "c"]) is not None
    assert load_model(path, expected_features=3) is not None
    with pytest.raises(ModelFileError, match=r"named\.npz.*missing in the model: \['d'\]"):
        load_model(path, expected_features=["a", "b", "d"])
    with pytest.raises(ModelFileError, match="different order"):
        load_model(path, expected_features=["c", "b", "a"])
    with pytest.raises(ModelFileError, match="3 features"):
        load_model(path, expected_features=4)
    plain = save_model(NadarayaWatsonClassifier(metric=None, bandwidth="scale", lipschitz=0.5).fit(X_TRAIN, Y_INT), tmp_path / "plain.npz")
    with pytest.raises(ModelFileError, match="no feature names"):
        load_model(plain, expected_features=["a", "b", "c"])
    model = TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale"), X_TRAIN, Y_INT, features=["u", "v", "w"], lipschitz=0.5)
    tpath = save_model(model, tmp_path / "table.npz")
    with pytest.raises(ModelFileError, match="table.npz"):
        load_model(tpath, expected_features=["u", "v"])


def test_callable_kernel_is_refused(tmp_path):
    est = NadarayaWatsonClassifier(metric=None, kernel=lambda u: np.maximum(1.0 - u, 0.0), bandwidth=1.0, lipschitz=0.5).fit(X_TRAIN, Y_INT)
    with pytest.raises(TypeError, match="kernel.*by name"):
        save_model(est, tmp_path / "m.npz")
    assert list(tmp_path.iterdir()) == []  # nothing written, no temp file left


def test_named_kernel_object_is_stored_by_name(tmp_path):
    from nwbound.kernels import get_kernel

    est = NadarayaWatsonClassifier(metric=None, kernel=get_kernel("triweight"), bandwidth=1.0, lipschitz=0.5).fit(X_TRAIN, Y_INT)
    loaded = load_model(save_model(est, tmp_path / "m.npz"))
    assert loaded.kernel == "triweight"
    _assert_identical(est, loaded, X_QUERY)


def test_existing_file_is_not_overwritten(tmp_path, nw_model):
    path = tmp_path / "m.npz"
    path.write_bytes(b"precious")
    with pytest.raises(FileExistsError, match="overwrite"):
        save_model(nw_model, path)
    assert path.read_bytes() == b"precious"
    save_model(nw_model, path, overwrite=True)
    _assert_identical(nw_model, load_model(path), X_QUERY)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz"]  # no temp files left behind


def test_unfitted_and_unsupported_models_are_refused(tmp_path):
    from sklearn.linear_model import LogisticRegression

    with pytest.raises(ValueError, match="not fitted"):
        save_model(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale"), tmp_path / "m.npz")
    with pytest.raises(TypeError, match="LogisticRegression"):
        save_model(LogisticRegression().fit(X_TRAIN, Y_INT), tmp_path / "m.npz")
    assert not (tmp_path / "m.npz").exists()


def test_feature_scaler_checks():
    with pytest.raises(ValueError, match="scale"):
        FeatureScaler("minmax", np.zeros(2), np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="method"):
        FeatureScaler("log", np.zeros(2), np.ones(2))
    const = np.column_stack([np.arange(5.0), np.full(5, 3.0)])
    sc = FeatureScaler.fit(const, "minmax")
    assert np.array_equal(sc.scale, [0.25, 1.0])  # constant feature left unscaled
    with pytest.raises(ValueError, match="expects 2 features"):
        sc.transform(np.zeros((3, 3)))


# --------------------------------------------------------------------------------------------
# Format bump, new options, what the loader decides for this machine
# --------------------------------------------------------------------------------------------
V1_DIR = Path(__file__).parent / "data" / "model_files_v1"


def _v1_data():
    """The data tests/data/model_files_v1/generate_v1.py fitted the format-1 files on."""
    rng = np.random.default_rng(20261126)
    X = rng.uniform(-2.0, 2.0, size=(60, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=60) > 0).astype(int) + (X[:, 1] > 1.0)
    w = rng.uniform(0.5, 2.0, size=60)
    return X, y, w


def _assert_close(a, b, X, *, kappa_up_to_scale=False):
    """Same predictions; probabilities and bounds equal to rounding (κ, optionally, up to one
    factor: scaling all sample weights changes κ but not p̂ or ε)."""
    assert a.predict(X).tolist() == b.predict(X).tolist()
    ia, ib = a.predict_interval(X), b.predict_interval(X)
    for name in ("proba", "lower", "upper", "epsilon", "bandwidth"):
        np.testing.assert_allclose(getattr(ia, name), getattr(ib, name), rtol=1e-12, atol=1e-12, err_msg=name)
    ka, kb = ia.kappa, ib.kappa
    if kappa_up_to_scale:
        assert np.array_equal(ka > 0, kb > 0)
        ka, kb = ka / ka.max(), kb / kb.max()
    np.testing.assert_allclose(ka, kb, rtol=1e-12, atol=1e-12, err_msg="kappa")


def test_format_1_files_still_load():
    X, y, w = _v1_data()
    Q = np.random.default_rng(3).uniform(-2.5, 2.5, size=(50, 3))
    for name in ("regular", "localized_auto", "dyadic", "table_minmax"):
        meta, _ = _read_npz(V1_DIR / f"{name}.npz")
        assert meta["format_version"] == 1  # the fixtures really are the old format
    # Format-1 files were written when bound="hoeffding" was the default, before point_estimate: they keep both.
    fresh = {
        "regular": NadarayaWatsonClassifier(metric=None, bandwidth=0.9, lipschitz=0.5, bound="hoeffding",
                                            point_estimate="nw").fit(X, y, sample_weight=w),
        "localized_auto": NadarayaWatsonClassifier(metric=None, bandwidth="auto", n_neighbors=7, lipschitz=0.5, algorithm="kd_tree",
                                                   bound="hoeffding", point_estimate="nw").fit(X, y),
    }
    for name, est in fresh.items():
        loaded = load_model(V1_DIR / f"{name}.npz")
        assert type(loaded) is NadarayaWatsonClassifier and loaded.get_params() == est.get_params()
        _assert_close(est, loaded, Q)
    # The format-1 dyadic file has no per-cell weight maximum: √(Σw²) stands in (≥ the max),
    # which changes nothing for the Hoeffding bound. Its cell sums are in the raw weight units
    # (fit now divides weights by the largest one), so κ agrees up to that one factor.
    dyadic = DyadicClassifier(metric=None, resolution=3, lipschitz=0.5, bound="hoeffding").fit(
        X, np.array(["a", "b", "c"])[y], sample_weight=w)
    loaded = load_model(V1_DIR / "dyadic.npz")
    _assert_close(dyadic, loaded, Q, kappa_up_to_scale=True)
    state = loaded.get_fitted_state()
    assert np.all(state["cell_weight_max_"] >= np.sqrt(state["cell_sq_sums_"]) * (1 - 1e-12))
    table = load_model(V1_DIR / "table_minmax.npz", expected_features=["f0", "f1", "f2"])
    ref = TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.3, bound="hoeffding"), X, y, features=["f0", "f1", "f2"],
                         scale="minmax", lipschitz=0.5, target="label")
    assert isinstance(table, TableModel) and table.lipschitz == 0.5 and table.target == "label"
    _assert_close(ref, table, Q)


def test_format_1_file_resaved_in_the_current_format(tmp_path):
    loaded = load_model(V1_DIR / "regular.npz")
    path = save_model(loaded, tmp_path / "v2.npz")
    meta, _ = _read_npz(path)
    assert meta["format_version"] == 2 and FORMAT_VERSION == 5  # plain arrays only: format 2
    _assert_identical(loaded, load_model(path), X_QUERY)


@pytest.mark.parametrize("n_neighbors", [None, 12])
def test_chernoff_bound_round_trips(tmp_path, n_neighbors):
    est = NadarayaWatsonClassifier(metric=None, bandwidth="auto", n_neighbors=n_neighbors, lipschitz=0.5, bound="chernoff",
                                   histogram_bins=16).fit(X_TRAIN, Y_INT)
    loaded = load_model(save_model(est, tmp_path / "chernoff.npz"))
    assert loaded.bound == "chernoff" and loaded.histogram_bins == 16
    _assert_identical(est, loaded, X_QUERY)
    dyadic = DyadicClassifier(metric=None, resolution=3, lipschitz=0.5, bound="chernoff").fit(X_TRAIN, Y_INT)
    _assert_identical(dyadic, load_model(save_model(dyadic, tmp_path / "dyadic.npz")), X_QUERY)


@pytest.mark.parametrize("n_jobs", [10**6, 3, -1, None])
def test_n_jobs_from_a_file_is_capped_to_this_machine(tmp_path, nw_model, n_jobs):
    import os

    path = save_model(nw_model, tmp_path / "m.npz")
    meta, arrays = _read_npz(path)
    meta["params"]["n_jobs"] = n_jobs
    _write_npz(path, meta, arrays, resign=True)
    loaded = load_model(path)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if n_jobs is None or n_jobs == -1:
        assert loaded.n_jobs == n_jobs
    else:
        assert 1 <= loaded.n_jobs <= min(n_jobs, cores)
    _assert_identical(nw_model, loaded, X_QUERY)


def test_docs_say_what_the_checksum_promises():
    from nwbound.io import model_file

    doc = " ".join(model_file.__doc__.replace("**", "").split())
    assert "unkeyed SHA-256" in doc and "does not prove where a file came from" in doc
    assert "set_fitted_state" in doc and "capped" in doc


# --------------------------------------------------------------------------------------------
# The default model (format 3): a learned space, the L chosen on held-out rows, cross-fitted models
# --------------------------------------------------------------------------------------------
_LRNG = np.random.default_rng(3)
X_XOR = _LRNG.uniform(-1.0, 1.0, size=(500, 4))  # an interaction: metric="auto" picks gradient boosting
Y_XOR = ((X_XOR[:, 0] * X_XOR[:, 1] > 0) ^ (_LRNG.random(500) < 0.1)).astype(int)
X_LINEAR = _LRNG.uniform(-1.0, 1.0, size=(450, 3))  # a linear log-odds: it picks the logistic regression
Y_LINEAR = np.digitize(X_LINEAR[:, 0] + 0.3 * _LRNG.normal(size=450), [-0.33, 0.33])
LEARNED_SETS = {2: (X_XOR, Y_XOR, "HistGradientBoostingClassifier"), 3: (X_LINEAR, Y_LINEAR, "Pipeline")}


def _quietly(func):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func()


@pytest.fixture(scope="module")
def default_models():
    """``NadarayaWatsonClassifier()`` (the defaults but ``cross_fit``) on a 2- and a 3-class set."""
    return {(c, cf): _quietly(lambda: NadarayaWatsonClassifier(cross_fit=cf).fit(X, y))
            for c, (X, y, _) in LEARNED_SETS.items() for cf in (False, "auto")}


def _models(est):
    return est.cross_fit_models_ if est._is_cross_fitted() else [est]


def _same_value(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    return type(a) is type(b) and (a == b or str(a) == str(b))  # a report: the same text


@pytest.mark.parametrize("cross_fit", [False, "auto"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_default_model_round_trips_exactly(tmp_path, default_models, n_classes, cross_fit):
    est = default_models[n_classes, cross_fit]
    X, _, map_name = LEARNED_SETS[n_classes]
    path = save_model(est, tmp_path / "default.npz")
    meta, arrays = _read_npz(path)
    assert FORMAT_VERSION == 5 and "__learned__" in arrays  # 4: their frozen arrays; 5: and a point model
    assert meta["format_version"] == (5 if est.point_model_ is not None else 4)
    loaded = _quietly(lambda: load_model(path))
    queries = np.vstack([X[:60] + 0.05, X.max(axis=0) + 3.0])  # near the data, and outside its box
    _quietly(lambda: _assert_identical(est, loaded, queries))  # every interval field, byte for byte
    assert loaded.get_params() == est.get_params() and loaded.lipschitz_ == est.lipschitz_
    assert len(_models(loaded)) == len(_models(est)) and (len(_models(est)) >= 2) == bool(cross_fit)
    for a, b in zip(_models(est), _models(loaded)):
        assert type(a.metric_.map_).__name__ == type(b.metric_.map_).__name__ == map_name
        # The space is stored as a whole (its __dict__), whatever its attributes are.
        assert vars(a.metric_).keys() == vars(b.metric_).keys()
        for name, value in vars(a.metric_).items():
            if name != "map_":
                assert _same_value(value, vars(b.metric_)[name]), name
        assert (a.lipschitz_, a._choice_beta) == (b.lipschitz_, b._choice_beta)
        assert str(a.lipschitz_report_) == str(b.lipschitz_report_)
        assert str(a.metric_report_) == str(b.metric_report_)


def test_default_model_in_a_table_model_round_trips(tmp_path):
    raw = X_LINEAR * np.array([1.0, 100.0, 0.01])
    model = _quietly(lambda: TableModel.fit(NadarayaWatsonClassifier(cross_fit=False), raw, Y_LINEAR,
                                            features=["a", "b", "c"], scale="standard", target="y"))
    loaded = _quietly(lambda: load_model(save_model(model, tmp_path / "table.npz"), expected_features=["a", "b", "c"]))
    _quietly(lambda: _assert_identical(model, loaded, raw[:50]))


def _relearned(path: Path, edit) -> None:
    """Rewrite a format-3 file with its learned pieces edited (``edit(objects)``), with a valid checksum."""
    import skops.io

    from nwbound.io._learned import load_objects

    meta, arrays = _read_npz(path)
    objects = load_objects(arrays["__learned__"])
    edit(objects)
    arrays["__learned__"] = np.frombuffer(skops.io.dumps(objects), dtype=np.uint8)
    _write_npz(path, meta, arrays, resign=True)


@pytest.fixture
def default_file(tmp_path, default_models):
    return save_model(default_models[2, False], tmp_path / "default.npz")


@pytest.mark.parametrize("intruder", ["function", "estimator"])
def test_learned_pieces_of_untrusted_types_are_never_built(default_file, monkeypatch, intruder):
    import os

    import skops.io
    from sklearn.decomposition import PCA

    value = os.system if intruder == "function" else PCA()
    _relearned(default_file, lambda objects: objects.__setitem__("state__metric_", value))
    built = []
    monkeypatch.setattr(skops.io, "loads", lambda *a, **k: built.append(1))
    with pytest.raises(ModelFileError, match="may not hold: .*(system|PCA)") as err:
        load_model(default_file)
    assert not built and str(default_file) in str(err.value)


def test_learned_pieces_of_trusted_types_in_the_wrong_place_are_refused(default_file, default_models):
    report = default_models[2, False].metric_report_  # a trusted type, but not a space
    _relearned(default_file, lambda objects: objects.__setitem__("state__metric_", report))
    with pytest.raises(ModelFileError, match="'metric_' must be the LearnedSpace"):
        load_model(default_file)


def test_gradient_boosting_trees_that_point_outside_are_refused(default_file):
    def edit(objects):
        tree = objects["state__metric_"].map_._predictors[0][0]
        split = int(np.flatnonzero(tree.nodes["is_leaf"] == 0)[0])
        tree.nodes["left"][split] = tree.nodes.shape[0] + 1000  # compiled code would read past the tree

    _relearned(default_file, edit)
    with pytest.raises(ModelFileError, match="gradient-boosting model has a tree whose nodes point outside"):
        load_model(default_file)


def test_learned_state_needs_its_pieces(tmp_path, default_models, default_file):
    meta, arrays = _read_npz(default_file)
    del arrays["__learned__"]
    _write_npz(default_file, meta, arrays, resign=True)
    with pytest.raises(ModelFileError, match=r"state (metric_|lipschitz_report_): state__\w+ is not among the learned pieces"):
        load_model(default_file)
    state = default_models[2, False].get_fitted_state()
    with pytest.raises(ValueError, match="'metric_', but this estimator has metric=None"):
        NadarayaWatsonClassifier(metric=None, lipschitz="auto").set_fitted_state(state)
    with pytest.raises(ValueError, match="cross_fit=True, but the fitted state holds one model"):
        NadarayaWatsonClassifier(cross_fit=True).set_fitted_state(state)


def _table_file(tmp_path) -> Path:
    model = TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.9), X_TRAIN, Y_INT,
                           features=["a", "b", "c"], target="y", lipschitz=0.5)
    return save_model(model, tmp_path / "table.npz")


@pytest.mark.parametrize("features, field", [(["a", "b", "a"], r"pipeline\.features names the column\(s\) \['a'\] more"),
                                             (["a", "y", "c"], r"pipeline\.target 'y' is also one of the pipeline\.features")])
def test_tampered_pipeline_columns_are_refused(tmp_path, features, field):
    """Issue 32, finding 4: a feature named twice, or the target as a feature, loaded and predicted."""
    path = _table_file(tmp_path)
    meta, arrays = _read_npz(path)
    meta["pipeline"]["features"] = features
    _write_npz(path, meta, arrays, resign=True)
    with pytest.raises(ModelFileError, match=field):
        load_model(path)
    with pytest.raises(ValueError, match=field.replace("pipeline\\.", "")):
        TableModel(estimator=None, features=tuple(features), target="y")


LEARNED_OTHERS = {
    "dyadic-default": lambda: DyadicClassifier(resolution=2),  # cross-fitted, in learned spaces
    "standard": lambda: NadarayaWatsonClassifier(metric="standard", lipschitz=1.0),
    "none-lipschitz-auto": lambda: NadarayaWatsonClassifier(metric=None, lipschitz="auto", bandwidth=0.5),
}


@pytest.mark.parametrize("name", sorted(LEARNED_OTHERS))
def test_other_learned_states_round_trip(tmp_path, name):
    est = _quietly(lambda: LEARNED_OTHERS[name]().fit(X_LINEAR, Y_LINEAR))
    path = save_model(est, tmp_path / f"{name}.npz")
    # a space or an L report: learned pieces; a Nadaraya-Watson space also as frozen arrays (format 4)
    frozen = name == "standard"
    assert _read_npz(path)[0]["format_version"] == (4 if frozen else 3)
    _quietly(lambda: _assert_identical(est, load_model(path), X_LINEAR[:80] * 1.1))


def _edited_dump(objects: dict, edit) -> np.ndarray:
    """A skops dump of ``objects`` whose schema ``edit(schema)`` changed (members kept, stored uncompressed)."""
    import io

    import skops.io

    src = zipfile.ZipFile(io.BytesIO(skops.io.dumps(objects)))
    schema = json.loads(src.read("schema.json"))
    edit(schema)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as dst:
        for name in src.namelist():
            dst.writestr(name, json.dumps(schema) if name == "schema.json" else src.read(name))
    return np.frombuffer(out.getvalue(), dtype=np.uint8)


def test_learned_pieces_are_built_without_skops_and_as_skops_builds_them():
    """Loading rebuilds the dump itself (skops' import costs ``nwbound predict`` a second): same objects."""
    import skops.io

    from nwbound.io._learned import dump_objects, load_objects, trusted_types

    objects = {"g": np.random.default_rng(3), "a": np.arange(4.0), "t": (1, "x", [2.5, None]), "s": np.float64(2.0)}
    blob = dump_objects(objects)
    ours, theirs = load_objects(blob), skops.io.loads(blob.tobytes(), trusted=list(trusted_types()))
    assert ours["g"].random() == theirs["g"].random() == np.random.default_rng(3).random()
    assert ours["t"] == theirs["t"] == (1, "x", [2.5, None]) and type(ours["s"]) is np.float64
    assert np.array_equal(ours["a"], objects["a"])


def test_a_random_generator_naming_another_callable_is_refused():
    """A bit generator's name is a plain string in the dump: a crafted one must not call numpy.random.seed."""
    from nwbound.io._learned import load_objects

    def rename(node):
        if isinstance(node, dict):
            if node.get("content") == '"PCG64"':
                node["content"] = '"seed"'
            for value in node.values():
                rename(value)
        elif isinstance(node, list):
            for value in node:
                rename(value)

    with pytest.raises(ValueError, match="'seed' is not a numpy bit generator"):
        load_objects(_edited_dump({"g": np.random.default_rng(0)}, rename))


@pytest.mark.parametrize("loader", ["LossNode", "NdArrayNode"])
def test_a_trusted_class_is_never_called_through_another_node_kind(loader):
    """Loss and array nodes call their class with the file's values: only losses and numpy types may be."""
    from nwbound.io._learned import load_objects

    def swap(schema):
        node = schema["content"]["s"]
        if loader == "LossNode":  # a space's class called with the file's arguments
            node.update({"__loader__": "LossNode", "__reduce__": {"args": node["content"]}})
        else:  # an array handed to a trusted class
            node.update({"__class__": "LearnedSpace", "__module__": "nwbound.spaces._space"})

    with pytest.raises(ValueError, match="cannot be rebuilt .*(a loss node|an array node) of class LearnedSpace"):
        load_objects(_edited_dump({"s": _space_or_array(loader)}, swap))


def _space_or_array(loader):
    from nwbound.spaces import LearnedSpace

    return LearnedSpace.__new__(LearnedSpace) if loader == "LossNode" else np.arange(3.0)
