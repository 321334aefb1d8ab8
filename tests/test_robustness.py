"""Robustness: a 10⁶-row table streamed in bounded memory, and fuzzed model/CSV readers."""

from __future__ import annotations

import io
import tempfile
import tracemalloc
import zipfile
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nwbound import DyadicClassifier, NadarayaWatsonClassifier
from nwbound.cli.main import main
from nwbound.io import ModelFileError, TableModel, load_model, save_model
from nwbound.io.tables import TableError, feature_matrix, iter_table_chunks, read_columns

pd = pytest.importorskip("pandas")
pq = pytest.importorskip("pyarrow.parquet")

FUZZ = settings(
    max_examples=60,
    deadline=timedelta(seconds=10),  # a hang would fail the example, not stall the suite
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,  # reproducible in CI
)


# --------------------------------------------------------------------------------------------
# A 10⁶-row CSV, streamed in chunks
# --------------------------------------------------------------------------------------------
@pytest.mark.slow  # 10⁶ rows under tracemalloc: minutes; chunked predict order is also tested on small tables
def test_million_row_csv_streams_in_bounded_memory(tmp_path):
    n = 1_000_000
    rng = np.random.default_rng(0)
    big = tmp_path / "big.csv"
    pd.DataFrame(
        {"id": np.arange(n), "x1": rng.uniform(size=n).round(4), "x2": rng.uniform(size=n).round(4)}
    ).to_csv(big, index=False)
    Xt = rng.uniform(size=(200, 2))
    model = TableModel.fit(
        NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.2), Xt, (Xt[:, 0] > 0.5).astype(int),
        features=["x1", "x2"], scale="minmax", lipschitz=1.0,
    )
    model_path = save_model(model, tmp_path / "m.npz")
    out = tmp_path / "out.parquet"
    # Warm-up on a tiny table: imports and caches are not part of the streaming cost.
    pd.read_csv(big, nrows=10).to_csv(tmp_path / "tiny.csv", index=False)
    assert main(["predict", str(model_path), str(tmp_path / "tiny.csv"), "-o", str(tmp_path / "tiny.parquet"), "--quiet"]) == 0

    tracemalloc.start()
    try:
        rc = main(["predict", str(model_path), str(big), "-o", str(out), "--chunksize", "25000", "--quiet"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert rc == 0
    # The whole table as float64: 3 input + 11 output columns.
    full_table = n * (3 + 11) * 8
    assert 0 < peak < full_table / 4, (peak, full_table)

    assert pq.ParquetFile(out).metadata.num_rows == n
    got = pq.read_table(out, columns=["predicted"]).column("predicted").to_numpy()
    # Rows come out in input order: compare both ends with direct predictions.
    head = pd.read_csv(big, nrows=3000)
    tail = pd.read_csv(big, skiprows=range(1, n - 3000 + 1))
    assert tail["id"].iloc[-1] == n - 1
    assert got[:3000].tolist() == model.predict(head[["x1", "x2"]].to_numpy()).tolist()
    assert got[-3000:].tolist() == model.predict(tail[["x1", "x2"]].to_numpy()).tolist()


# --------------------------------------------------------------------------------------------
# Fuzzing the model-file reader
# --------------------------------------------------------------------------------------------
_RNG = np.random.default_rng(3)
_X = _RNG.uniform(size=(30, 2))
_Y = np.where(_X[:, 0] > 0.5, "hi", "lo")
_Q = _RNG.uniform(-0.2, 1.2, size=(10, 2))


def _model_bytes(est) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        return save_model(est, Path(d) / "m.npz").read_bytes()


_MODELS = {
    "nw": NadarayaWatsonClassifier(metric=None, bandwidth=0.3, n_neighbors=10, lipschitz=1.0).fit(_X, _Y),
    "dyadic": DyadicClassifier(metric=None, resolution=2, lipschitz=1.0).fit(_X, _Y),
}
_BLOBS = {k: _model_bytes(m) for k, m in _MODELS.items()}


def _load_bytes(blob: bytes, name: str):
    """Load ``blob``; return the model or None after the library's own error."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "fuzzed.npz"
        path.write_bytes(blob)
        try:
            loaded = load_model(path)
        except ModelFileError as exc:
            assert "fuzzed.npz" in str(exc)
            return None
    # Whatever loads must be the saved model, exactly.
    ref = _MODELS[name]
    a, b = ref.predict_interval(_Q), loaded.predict_interval(_Q)
    assert a.proba.tobytes() == b.proba.tobytes() and a.epsilon.tobytes() == b.epsilon.tobytes()
    return loaded


@FUZZ
@given(
    name=st.sampled_from(sorted(_BLOBS)),
    edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=6),
    cut=st.one_of(st.none(), st.floats(0, 1)),
)
def test_fuzz_model_bytes(name, edits, cut):
    blob = bytearray(_BLOBS[name])
    for where, value in edits:
        blob[int(where * len(blob))] = value
    if cut is not None:
        blob = blob[: int(cut * len(blob))]
    _load_bytes(bytes(blob), name)


def _members(blob: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for k, v in members.items():
            zf.writestr(k, v)
    return buf.getvalue()


@FUZZ
@given(
    name=st.sampled_from(sorted(_BLOBS)),
    member=st.integers(0, 20),
    edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=4),
    cut=st.one_of(st.none(), st.floats(0, 1)),
)
def test_fuzz_model_members_behind_valid_zip(name, member, edits, cut):
    """Corrupt one .npy member (header, metadata JSON or data) and re-zip it with valid CRCs."""
    members = _members(_BLOBS[name])
    key = sorted(members)[member % len(members)]
    data = bytearray(members[key])
    for where, value in edits:
        data[int(where * len(data))] = value
    if cut is not None:
        data = data[: int(cut * len(data))]
    members[key] = bytes(data)
    _load_bytes(_zip(members), name)


@FUZZ
@given(blob=st.binary(max_size=2000))
def test_fuzz_model_random_bytes(blob):
    assert _load_bytes(blob, "nw") is None or len(blob) > 0


# --------------------------------------------------------------------------------------------
# Fuzzing the CSV reader
# --------------------------------------------------------------------------------------------
_CSV = "".join(
    ["id,x1,x2,label\n"] + [f"{i:03d},{v:.3f},{w:.2e},{'ab'[i % 2]}\n" for i, (v, w) in enumerate(_RNG.normal(size=(25, 2)))]
).encode()


def _consume_csv(blob: bytes) -> None:
    """Read a CSV the way fit/predict do; only TableError may come out."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "fuzzed.csv"
        path.write_bytes(blob)
        try:
            columns = read_columns(path)
            features = [c for c in columns if c not in ("id", "label")]
            first = 1
            for chunk in iter_table_chunks(path, 4, verbatim_columns=[c for c in ("id",) if c in columns],
                                           text_columns=[c for c in ("label",) if c in columns]):
                X = feature_matrix(chunk, features, path=path, first_row=first)
                assert X.dtype == np.float64 and np.all(np.isfinite(X))
                first += len(chunk)
        except TableError as exc:
            assert "fuzzed.csv" in str(exc)


@FUZZ
@given(
    edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.sampled_from(list(b',\n"\x00\xff.-eE ;ab9\r'))),
                   min_size=1, max_size=8),
    cut=st.one_of(st.none(), st.floats(0, 1)),
)
def test_fuzz_csv_edits(edits, cut):
    blob = bytearray(_CSV)
    for where, value in edits:
        blob[int(where * len(blob))] = value
    if cut is not None:
        blob = blob[: int(cut * len(blob))]
    _consume_csv(bytes(blob))


@FUZZ
@given(blob=st.binary(max_size=500))
def test_fuzz_csv_random_bytes(blob):
    _consume_csv(blob)


@FUZZ
@given(text=st.text(alphabet=st.sampled_from(list('ab,1.5e-\n"x ')), max_size=300))
def test_fuzz_csv_random_text(text):
    _consume_csv(text.encode())
