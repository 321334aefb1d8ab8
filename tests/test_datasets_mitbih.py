"""Tests of the MIT-BIH heartbeat pipeline (nwbound.datasets.mitbih).

Fast tests use the 2-minute excerpt of five real records in tests/data/mitdb_excerpt;
tests marked ``slow`` read the full database from ../shared/data/mitdb.
"""

from __future__ import annotations

import shutil
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

wfdb = pytest.importorskip("wfdb")
from scipy.signal import resample_poly  # noqa: E402

from nwbound.datasets import mitbih  # noqa: E402
from nwbound.datasets.mitbih import (  # noqa: E402
    DS1,
    DS2,
    RHYTHM_FEATURES,
    BeatSet,
    ecg_features,
    load_kaggle_csv,
    load_mitbih_beats,
    load_mitbih_signal,
    paper_features,
    rhythm_features,
    split_beats,
)

# wfdb 4.3's rdann trips a pandas deprecation warning of no concern here.
pytestmark = pytest.mark.filterwarnings("ignore:.*inplace keyword")

EXCERPT = Path(__file__).resolve().parent / "data" / "mitdb_excerpt"
EXCERPT_RECORDS = ["100", "104", "114", "208", "232"]
FULL = Path(__file__).resolve().parents[2] / "shared" / "data" / "mitdb"

# AAMI EC57 grouping written out independently of the module under test.
AAMI = {
    "N": 0, "L": 0, "R": 0, "e": 0, "j": 0,
    "A": 1, "a": 1, "J": 1, "S": 1,
    "V": 2, "E": 2,
    "F": 3,
    "/": 4, "f": 4, "Q": 4,
}  # fmt: skip


@pytest.fixture(scope="module")
def beats() -> BeatSet:
    return load_mitbih_beats(EXCERPT, progress=False)


@pytest.fixture
def data_copy(tmp_path: Path) -> Path:
    """A writable copy of the excerpt (bad-input tests damage it)."""
    dst = tmp_path / "mitdb"
    shutil.copytree(EXCERPT, dst)
    return dst


def _annotations(name: str, root: Path = EXCERPT) -> tuple[np.ndarray, list[str]]:
    ann = wfdb.rdann(str(root / name), "atr")
    return np.asarray(ann.sample), list(ann.symbol)


# ----------------------------------------------------------------- shapes & labels
def test_shapes_dtypes_and_order(beats: BeatSet) -> None:
    n_expected = sum(
        sum(s in AAMI for s in _annotations(r)[1]) for r in EXCERPT_RECORDS
    )
    assert len(beats) == n_expected
    assert beats.X.shape == (n_expected, 187) and beats.X.dtype == np.float32
    assert beats.y.dtype == np.int64 and beats.sample.dtype == np.int64
    assert beats.class_names == ("N", "S", "V", "F", "Q")
    # Records in RECORDS order, beats in time order within each record.
    seen = list(dict.fromkeys(beats.record.tolist()))
    assert seen == EXCERPT_RECORDS
    for r in EXCERPT_RECORDS:
        assert np.all(np.diff(beats.sample[beats.record == r]) >= 0)
    assert np.isfinite(beats.X).all()


def test_class_counts_match_annotation_symbols(beats: BeatSet) -> None:
    expected = np.zeros(5, dtype=int)
    for r in EXCERPT_RECORDS:
        for sym, k in Counter(_annotations(r)[1]).items():
            if sym in AAMI:
                expected[AAMI[sym]] += k
    np.testing.assert_array_equal(beats.class_counts(), expected)
    assert (expected > 0).all()  # the excerpt holds every class


def test_labels_and_positions_follow_the_annotations(beats: BeatSet) -> None:
    for r in EXCERPT_RECORDS:
        sample, symbols = _annotations(r)
        is_beat = np.array([s in AAMI for s in symbols])
        m = beats.record == r
        np.testing.assert_array_equal(beats.sample[m], sample[is_beat])
        np.testing.assert_array_equal(
            beats.y[m], [AAMI[s] for s, b in zip(symbols, is_beat) if b]
        )


def test_rows_start_at_the_r_peak(beats: BeatSet) -> None:
    # Records with an upright QRS in MLII: the window maximum is an R peak, so a row
    # that starts at its annotated R peak starts close to 1.
    for r in ("100", "114"):
        x0 = beats.X[beats.record == r, 0]
        assert np.median(x0) > 0.8
    # Everywhere, the first value is above the rest of the beat for most rows.
    assert np.mean(beats.X[:, 0] > beats.X[:, 1:].mean(axis=1)) > 0.8


# ------------------------------------------------ recipe against a naive reference
def _reference_rows(name: str, past: bool) -> np.ndarray:
    """Beat-by-beat transcription of the Kachuee recipe (slow, obviously correct)."""
    rec = wfdb.rdrecord(str(EXCERPT / name))
    ch = rec.sig_name.index("MLII") if "MLII" in rec.sig_name else 0
    x = resample_poly(rec.p_signal[:, ch], 125, 360)
    sample, symbols = _annotations(name)
    pos = [round(int(s) * 125 / 360) for s, sym in zip(sample, symbols) if sym in AAMI]
    record_median = float(np.median(np.diff(pos)))
    rows = []
    for p in pos:
        lo = (p // 1250) * 1250
        hi = min(lo + 1250, len(x))
        rr = np.diff([q for q in pos if lo <= q < hi])
        T = float(np.median(rr)) if len(rr) else record_median
        stop = min(p + int(round(1.2 * T)), p + 187, len(x) if past else hi)
        row = np.zeros(187)
        for i in range(p, stop):  # each sample scaled by the window it lies in
            wlo = (i // 1250) * 1250
            wmn, wmx = x[wlo : wlo + 1250].min(), x[wlo : wlo + 1250].max()
            row[i - p] = (x[i] - wmn) / (wmx - wmn)
        rows.append(row)
    return np.array(rows)


@pytest.mark.parametrize("past", [True, False])
@pytest.mark.parametrize("name", ["100", "104", "114"])
def test_matches_naive_reference(name: str, past: bool) -> None:
    # 114 has MLII as its second channel, 104 has none (first channel is used).
    got = load_mitbih_beats(
        EXCERPT, records=[name], segment_past_window=past, progress=False
    )
    np.testing.assert_allclose(got.X, _reference_rows(name, past), atol=2e-6)


def test_every_value_lies_in_the_unit_interval(beats: BeatSet) -> None:
    # Segments running past their window are scaled by the window they fall in:
    # no value may leave [0, 1] (outliers would stretch the training MinMax
    # ranges and silently widen the effective bandwidth).
    assert beats.X.min() >= 0.0 and beats.X.max() <= 1.0


def test_clipping_at_the_window_end(beats: BeatSet) -> None:
    clipped = load_mitbih_beats(EXCERPT, segment_past_window=False, progress=False)
    assert clipped.X.min() >= 0.0 and clipped.X.max() <= 1.0 + 1e-6
    # A beat close to its window end is zero from the window end on when clipped.
    pos125 = np.rint(clipped.sample * 125 / 360).astype(int)
    room = 1250 - pos125 % 1250
    near = np.flatnonzero(room < 40)
    assert near.size > 0
    for i in near:
        assert np.all(clipped.X[i, room[i]:] == 0)
        assert np.any(beats.X[i, room[i]:] != 0)  # the default runs past it


# ------------------------------------------------------------------------ options
def test_record_selection_forms() -> None:
    a = load_mitbih_beats(EXCERPT, records=[208, "100"], progress=False)
    assert list(dict.fromkeys(a.record.tolist())) == ["208", "100"]
    b = load_mitbih_beats(EXCERPT, records="100", progress=False)
    np.testing.assert_array_equal(b.X, a.subset(a.record == "100").X)


def test_missing_lead_error_mode() -> None:
    with pytest.raises(ValueError, match="104.*MLII"):
        load_mitbih_beats(EXCERPT, records=["104"], missing_lead="error", progress=False)


def test_unexpected_lead_fallback_warns() -> None:
    with pytest.warns(UserWarning, match="first channel"):
        load_mitbih_beats(EXCERPT, records=["100"], lead="V1", progress=False)


@pytest.mark.parametrize(
    "kwargs",
    [{"length": 0}, {"fs_target": 0}, {"fs_target": 125.0}, {"window_s": 0.0},
     {"window_s": "10"}, {"records": []}, {"missing_lead": "drop"}],
)  # fmt: skip
def test_bad_parameters(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        load_mitbih_beats(EXCERPT, progress=False, **kwargs)


def test_progress_bar_does_not_change_result(beats: BeatSet, capsys) -> None:
    pytest.importorskip("tqdm")
    again = load_mitbih_beats(EXCERPT, progress=True)
    np.testing.assert_array_equal(again.X, beats.X)


# ------------------------------------------------------------------------- cache
def test_cache_round_trip_and_corruption(tmp_path: Path, beats: BeatSet, monkeypatch) -> None:
    cache = tmp_path / "cache"
    first = load_mitbih_beats(EXCERPT, cache_dir=cache, progress=False)
    files = list(cache.iterdir())
    assert len(files) == 1 and files[0].suffix == ".npz"  # no temp file left behind
    np.testing.assert_array_equal(first.X, beats.X)

    # Second call: must come from the cache (beat extraction is disabled).
    def boom(*a, **k):
        raise AssertionError("cache was not used")

    with monkeypatch.context() as mp:
        mp.setattr(mitbih, "_extract_beats", boom)
        second = load_mitbih_beats(EXCERPT, cache_dir=cache, progress=False)
    for f in ("X", "y", "record", "sample", "rhythm"):
        np.testing.assert_array_equal(getattr(second, f), getattr(first, f))

    # A damaged cache file is ignored with a warning and rebuilt.
    files[0].write_bytes(files[0].read_bytes()[:200])
    with pytest.warns(UserWarning, match="cache"):
        third = load_mitbih_beats(EXCERPT, cache_dir=cache, progress=False)
    np.testing.assert_array_equal(third.X, first.X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rebuilt file loads cleanly
        with monkeypatch.context() as mp:
            mp.setattr(mitbih, "_extract_beats", boom)
            load_mitbih_beats(EXCERPT, cache_dir=cache, progress=False)


def test_cache_key_depends_on_settings_and_data(tmp_path: Path, data_copy: Path) -> None:
    cache = tmp_path / "cache"
    load_mitbih_beats(data_copy, records=["100"], cache_dir=cache, progress=False)
    load_mitbih_beats(
        data_copy, records=["100"], cache_dir=cache, progress=False, segment_past_window=False
    )
    assert len(list(cache.glob("*.npz"))) == 2
    # Edit the header comment: same beats, but a changed file must not hit the old key.
    hea = data_copy / "100.hea"
    hea.write_text(hea.read_text() + "# edited\n")
    load_mitbih_beats(data_copy, records=["100"], cache_dir=cache, progress=False)
    assert len(list(cache.glob("*.npz"))) == 3


# ------------------------------------------------------------------- bad inputs
def test_missing_directory_says_how_to_get_the_data(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"dl_database\('mitdb'.*download=True"):
        load_mitbih_beats(tmp_path / "nowhere", progress=False)


def test_download_only_when_asked_and_into_the_given_dir(tmp_path: Path, monkeypatch) -> None:
    # No network here: a stand-in for wfdb.dl_database copies the excerpt instead.
    calls = []

    def fake_dl_database(db_dir, dl_dir, records="all", annotators="all", **kw):
        calls.append((db_dir, Path(dl_dir), records))
        for r in EXCERPT_RECORDS if records == "all" else records:
            for f in EXCERPT.glob(f"{r}.*"):
                shutil.copy(f, Path(dl_dir) / f.name)

    monkeypatch.setattr(wfdb, "dl_database", fake_dl_database)
    target = tmp_path / "new"
    with pytest.raises(FileNotFoundError):
        load_mitbih_beats(target, records=["100"], progress=False)
    assert calls == [] and not target.exists()
    with pytest.warns(UserWarning, match="downloading"):
        got = load_mitbih_beats(target, records=["100"], progress=False, download=True)
    assert calls == [("mitdb", target, ["100"])]
    assert len(got) == len(load_mitbih_beats(EXCERPT, records=["100"], progress=False))
    load_mitbih_beats(target, records=["100"], progress=False, download=True)
    assert len(calls) == 1  # present files are not fetched again


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="holds no WFDB records"):
        load_mitbih_beats(tmp_path, progress=False)


def test_unknown_record_id(data_copy: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"999\.hea"):
        load_mitbih_beats(data_copy, records=["100", "999"], progress=False)


def test_missing_annotation_file(data_copy: Path) -> None:
    (data_copy / "208.atr").unlink()
    with pytest.raises(FileNotFoundError, match=r"208\.atr"):
        load_mitbih_beats(data_copy, progress=False)


def test_missing_signal_file(data_copy: Path) -> None:
    (data_copy / "208.dat").unlink()
    with pytest.raises(FileNotFoundError, match=r"208\.dat"):
        load_mitbih_beats(data_copy, progress=False)


def test_truncated_dat(data_copy: Path) -> None:
    dat = data_copy / "100.dat"
    dat.write_bytes(dat.read_bytes()[:-3000])
    with pytest.raises(ValueError, match=r"100\.dat is truncated"):
        load_mitbih_beats(data_copy, progress=False)


def test_corrupted_dat_same_size(data_copy: Path) -> None:
    dat = data_copy / "114.dat"
    raw = bytearray(dat.read_bytes())
    raw[5000:5300] = bytes(np.random.default_rng(1).integers(0, 256, 300, dtype=np.uint8))
    dat.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"114\.dat is corrupted: checksum"):
        load_mitbih_beats(data_copy, progress=False)


def test_header_length_disagrees_with_dat(data_copy: Path) -> None:
    hea = data_copy / "232.hea"
    hea.write_text(hea.read_text().replace("232 2 360 43200", "232 2 360 650000", 1))
    with pytest.raises(ValueError, match=r"232\.dat is truncated.*232\.hea"):
        load_mitbih_beats(data_copy, progress=False)


def test_unparsable_header(data_copy: Path) -> None:
    (data_copy / "100.hea").write_text("this is not a header\n")
    with pytest.raises(ValueError, match=r"100\.hea"):
        load_mitbih_beats(data_copy, progress=False)


def test_truncated_atr(data_copy: Path) -> None:
    atr = data_copy / "208.atr"
    atr.write_bytes(atr.read_bytes()[:300])
    with pytest.raises(ValueError, match=r"208\.atr is truncated"):
        load_mitbih_beats(data_copy, progress=False)


def test_corrupted_atr(data_copy: Path) -> None:
    atr = data_copy / "100.atr"
    n = atr.stat().st_size
    junk = np.random.default_rng(0).integers(0, 256, n - 2, dtype=np.uint8).tobytes()
    atr.write_bytes(junk + b"\x00\x00")  # keeps the end marker: only the content is bad
    with pytest.raises(ValueError, match=r"100\.atr"):
        load_mitbih_beats(data_copy, progress=False)


def test_annotation_of_another_record(data_copy: Path) -> None:
    # A full-length record's annotations next to the 2-minute signal.
    if not FULL.is_dir():
        pytest.skip("full mitdb not available")
    shutil.copy(FULL / "100.atr", data_copy / "100.atr")
    with pytest.raises(ValueError, match=r"100\.atr.*outside"):
        load_mitbih_beats(data_copy, records=["100"], progress=False)


# ---------------------------------------------------------------- rhythm features
def _slow_rhythm(sample: np.ndarray, fs: float, k: int = 10, lo: float = 0.15, hi: float = 2.0) -> np.ndarray:
    """The documented recipe, one beat at a time (independent of the vectorised code)."""
    n = len(sample)
    rr = [(sample[i + 1] - sample[i]) / fs for i in range(n - 1)]
    out = []
    for i in range(n):
        pre = rr[0] if i == 0 else rr[i - 1]
        post = rr[i] if i < n - 1 else rr[i - 1]
        # Plausible RR intervals ending at beats 1..i (beat 0 has no interval of its own).
        seen = [rr[j - 1] for j in range(1, i + 1) if lo <= rr[j - 1] <= hi]
        pre_c, post_c = min(max(pre, lo), hi), min(max(post, lo), hi)
        avg = sum(seen) / len(seen) if seen else pre_c
        recent = [rr[j - 1] for j in range(max(1, i + 1 - k), i + 1) if lo <= rr[j - 1] <= hi]
        local = sum(recent) / len(recent) if recent else avg
        out.append([pre_c, post_c, local, avg, pre_c / avg, post_c / avg, local / avg])
    return np.array(out)


@pytest.mark.parametrize("name", ["100", "232", "208"])
def test_rhythm_features_match_hand_computation(beats: BeatSet, name: str) -> None:
    sample, symbols = _annotations(name)
    keep = np.array([s in AAMI for s in symbols])
    want = _slow_rhythm(sample[keep], 360.0)
    got = beats.rhythm[beats.record == name]
    assert got.shape == (keep.sum(), len(RHYTHM_FEATURES))
    np.testing.assert_allclose(got, want, rtol=1e-5)  # float32 storage
    # Record 232's A beats come early: pre-RR below the running average.
    if name == "232":
        lab = beats.y[beats.record == name]
        assert np.median(got[lab == 1, 4]) < np.median(got[lab == 0, 4])


def test_rhythm_features_are_causal() -> None:
    sample, symbols = _annotations("232")
    s = sample[np.array([x in AAMI for x in symbols])]
    full = rhythm_features(s, 360.0)
    for k in (2, 5, 11, 40, len(s) - 1):
        part = rhythm_features(s[:k], 360.0)
        # Beats 0..k-2 never see beat k or later; beat k-1 lacks only its post-RR.
        np.testing.assert_array_equal(part[: k - 1], full[: k - 1])
        post = [RHYTHM_FEATURES.index(c) for c in ("post_rr", "post_rr_norm")]
        other = [j for j in range(len(RHYTHM_FEATURES)) if j not in post]
        np.testing.assert_array_equal(part[k - 1, other], full[k - 1, other])


def test_implausible_rr_is_clipped_and_left_out_of_averages() -> None:
    fs = 100.0
    s = np.array([0, 80, 160, 240, 560, 565, 645, 725])  # a 3.2 s gap and a 50 ms double mark
    f = rhythm_features(s, fs)
    np.testing.assert_allclose(f, _slow_rhythm(s, fs))
    assert f[4, 0] == pytest.approx(2.0) and f[5, 0] == pytest.approx(0.15)  # clipped
    assert f[6, 3] == pytest.approx(0.8)  # the running average ignores both
    assert np.all(np.isfinite(f)) and np.all(f > 0)


def test_rhythm_features_bad_input() -> None:
    with pytest.raises(ValueError, match="at least 2 beats"):
        rhythm_features([100], 360.0)
    with pytest.raises(ValueError, match="time order"):
        rhythm_features([0, 400, 300], 360.0)
    with pytest.raises(ValueError, match="fs"):
        rhythm_features([0, 300], 0.0)
    with pytest.raises(ValueError, match="rr_min"):
        rhythm_features([0, 300], 360.0, rr_min=2.0, rr_max=1.0)
    with pytest.raises(ValueError, match="local_beats"):
        rhythm_features([0, 300], 360.0, local_beats=0)


def _rewrite_atr(root: Path, name: str, keep: np.ndarray | None = None, symbol: str | None = None) -> None:
    sample, symbols = _annotations(name, root)
    keep = np.ones(len(sample), bool) if keep is None else keep
    syms = [symbol or s for s in np.asarray(symbols)[keep]]
    wfdb.wrann(name, "atr", sample[keep], symbol=syms, write_dir=str(root))


def test_record_with_one_beat(data_copy: Path) -> None:
    sample, symbols = _annotations("100", data_copy)
    first = next(i for i, s in enumerate(symbols) if s in AAMI)
    _rewrite_atr(data_copy, "100", np.arange(len(sample)) == first)
    with pytest.raises(ValueError, match=r"record 100 holds a single annotated beat.*rhythm=False"):
        load_mitbih_beats(data_copy, records=["100"], progress=False)
    one = load_mitbih_beats(data_copy, records=["100"], progress=False, rhythm=False)
    assert len(one) == 1 and one.rhythm is None


def test_annotations_with_non_beat_symbols_only(data_copy: Path) -> None:
    _rewrite_atr(data_copy, "100", symbol="+")
    with pytest.raises(ValueError, match=r"no beat annotations"):
        load_mitbih_beats(data_copy, records=["100"], progress=False)
    with pytest.warns(UserWarning, match=r"\['100'\] hold no beat annotations"):
        b = load_mitbih_beats(data_copy, records=["100", "114"], progress=False)
    assert set(b.record) == {"114"}


def test_signal_reader(tmp_path: Path) -> None:
    x, fs, lead = load_mitbih_signal(EXCERPT, "114")
    assert x.shape == (43_200,) and fs == 360.0 and lead == "MLII"
    _, _, lead = load_mitbih_signal(EXCERPT, 104)
    assert lead != "MLII"  # 104 has no MLII: first channel
    with pytest.raises(ValueError, match="no lead 'MLII'"):
        load_mitbih_signal(EXCERPT, "104", missing_lead="error")
    with pytest.raises(FileNotFoundError, match="999"):
        load_mitbih_signal(EXCERPT, "999")


# ------------------------------------------------------------------ feature sets
def test_feature_sets_scale_on_the_training_side(beats: BeatSet) -> None:
    from sklearn.preprocessing import MinMaxScaler

    from nwbound import restate_lipschitz

    train, test = beats.subset(beats.record != "232"), beats.subset(beats.record == "232")
    for fs, width in (("morphology", 100), ("rhythm", 7), ("both", 107)):
        Xtr, Xte, sc = ecg_features(train, test, fs, rhythm_weight=2.5)
        assert Xtr.shape == (len(train), width) and Xte.shape == (len(test), width)
        raw_tr = {"morphology": train.X[:, :100], "rhythm": train.rhythm,
                  "both": np.hstack([train.X[:, :100], train.rhythm])}[fs].astype(float)
        raw_te = {"morphology": test.X[:, :100], "rhythm": test.rhythm,
                  "both": np.hstack([test.X[:, :100], test.rhythm])}[fs].astype(float)
        lo, hi = raw_tr.min(axis=0), raw_tr.max(axis=0)
        w = np.ones(width)
        if fs != "morphology":
            w[-7:] = 2.5
        span = np.where(hi > lo, hi - lo, 1.0)
        np.testing.assert_allclose(Xte, (raw_te - lo) / span * w, atol=1e-9)  # train min/max only
        np.testing.assert_allclose(Xtr.max(axis=0)[hi > lo], w[hi > lo])
        # L restated in the units the classifier sees: L / smallest per-feature scale.
        assert restate_lipschitz(0.1, sc) == pytest.approx(0.1 / np.min(w / span))
    plain = ecg_features(train, test, "morphology")[0]
    np.testing.assert_allclose(plain, MinMaxScaler().fit_transform(train.X[:, :100].astype(float)))
    np.testing.assert_allclose(plain, paper_features(train, test)[0], atol=1e-6)  # float32 there


def test_feature_sets_bad_input(beats: BeatSet) -> None:
    no_rr = BeatSet(beats.X, beats.y, beats.record, beats.sample)
    with pytest.raises(ValueError, match="rhythm=True"):
        ecg_features(no_rr, no_rr, "both")
    with pytest.raises(ValueError, match="feature_set must be one of"):
        ecg_features(beats, beats, "wavelets")
    with pytest.raises(ValueError, match="rhythm_weight"):
        ecg_features(beats, beats, "both", rhythm_weight=0)
    with pytest.raises(ValueError, match="n_samples"):
        ecg_features(beats, beats, "morphology", n_samples=500)
    with pytest.raises(ValueError, match="no beats"):
        ecg_features(beats.subset(np.zeros(len(beats), bool)), beats, "rhythm")
    with pytest.raises(ValueError, match="rhythm must have shape"):
        BeatSet(beats.X, beats.y, beats.record, beats.sample, rhythm=beats.rhythm[:, :3])
    bad = beats.rhythm.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        BeatSet(beats.X, beats.y, beats.record, beats.sample, rhythm=bad)


# -------------------------------------------------------------------- Kaggle CSV
def _write_csv(path: Path, rows: np.ndarray) -> Path:
    np.savetxt(path, rows, delimiter=",", fmt="%.18e")
    return path


def test_kaggle_csv_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    X = rng.random((12, 187))
    y = np.arange(12) % 5
    got = load_kaggle_csv(_write_csv(tmp_path / "k.csv", np.column_stack([X, y])))
    np.testing.assert_allclose(got.X, X.astype(np.float32))
    np.testing.assert_array_equal(got.y, y)
    assert (got.record == "-1").all() and (got.sample == -1).all()


def test_kaggle_csv_errors(tmp_path: Path) -> None:
    good = np.column_stack([np.zeros((3, 187)), [0, 1, 2]])
    with pytest.raises(ValueError, match="186 columns, expected 188"):
        load_kaggle_csv(_write_csv(tmp_path / "a.csv", good[:, 2:]))
    bad_label = good.copy()
    bad_label[1, -1] = 5
    with pytest.raises(ValueError, match="label 5.0 at row 2"):
        load_kaggle_csv(_write_csv(tmp_path / "b.csv", bad_label))
    bad_label[1, -1] = 1.5
    with pytest.raises(ValueError, match="row 2"):
        load_kaggle_csv(_write_csv(tmp_path / "c.csv", bad_label))
    text = (tmp_path / "d.csv")
    _write_csv(text, good)
    lines = text.read_text().splitlines()
    lines[1] = "abc," + lines[1].split(",", 1)[1]
    text.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"d\.csv is not a numeric CSV"):
        load_kaggle_csv(text)
    lines[1] = lines[0] + ",0.0"  # ragged row
    text.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"d\.csv"):
        load_kaggle_csv(text)
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(ValueError, match="no rows"):
        load_kaggle_csv(tmp_path / "e.csv")
    with pytest.raises(FileNotFoundError):
        load_kaggle_csv(tmp_path / "missing.csv")


# ------------------------------------------------------------------------ splits
def test_intra_split_is_stratified_and_disjoint(beats: BeatSet) -> None:
    tr, te = split_beats(beats, split="intra", test_size=0.2, random_state=0)
    assert len(tr) + len(te) == len(beats)
    assert len(te) == int(np.ceil(0.2 * len(beats)))  # sklearn rounds the test size up
    key = lambda b: set(zip(b.record.tolist(), b.sample.tolist()))  # noqa: E731
    assert key(tr).isdisjoint(key(te)) and key(tr) | key(te) == key(beats)
    # Each class is split 80/20 up to rounding.
    np.testing.assert_allclose(te.class_counts(), 0.2 * beats.class_counts(), atol=1.0)
    tr2, _ = split_beats(beats, split="intra", random_state=0)
    np.testing.assert_array_equal(tr.X, tr2.X)


def test_inter_split_uses_de_chazal_records(beats: BeatSet) -> None:
    tr, te = split_beats(beats, split="inter")
    assert set(tr.record) == {"114", "208"} <= set(DS1)
    assert set(te.record) == {"100", "232"} <= set(DS2)
    assert "104" not in set(tr.record) | set(te.record)  # paced record dropped
    assert len(tr) == np.isin(beats.record, ["114", "208"]).sum()


def test_split_errors(beats: BeatSet, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="empty training set"):
        split_beats(beats.subset(beats.record == "100"), split="inter")
    kaggle = load_kaggle_csv(
        _write_csv(tmp_path / "k.csv", np.column_stack([np.zeros((10, 187)), np.arange(10) % 5]))
    )
    with pytest.raises(ValueError, match="record ids"):
        split_beats(kaggle, split="inter")
    with pytest.raises(ValueError, match="'intra' or 'inter'"):
        split_beats(beats, split="random")
    with pytest.raises(ValueError, match="stratified"):
        # A class with a single beat cannot be stratified.
        one_s = np.r_[np.flatnonzero(beats.y == 0)[:5], np.flatnonzero(beats.y == 1)[:1]]
        split_beats(beats.subset(one_s), test_size=0.5)


# ------------------------------------------------------------- features, BeatSet
def test_paper_features(beats: BeatSet) -> None:
    tr, te = split_beats(beats, random_state=1)
    Xtr, Xte, scaler = paper_features(tr, te)
    assert Xtr.shape == (len(tr), 100) and Xte.shape == (len(te), 100)
    lo, hi = tr.X[:, :100].min(0), tr.X[:, :100].max(0)
    np.testing.assert_allclose(Xte, (te.X[:, :100] - lo) / (hi - lo), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(Xtr.min(0), 0, atol=1e-6)
    np.testing.assert_allclose(Xtr.max(0), 1, atol=1e-6)
    with pytest.raises(ValueError, match="n_features"):
        paper_features(tr, te, n_features=200)


def test_beatset_subset_and_validation(beats: BeatSet) -> None:
    idx = np.array([3, 1, 1])
    sub = beats.subset(idx)
    np.testing.assert_array_equal(sub.X, beats.X[idx])
    np.testing.assert_array_equal(sub.sample, beats.sample[idx])
    assert len(beats.subset(beats.y == 2)) == beats.class_counts()[2]
    with pytest.raises(ValueError, match="mask"):
        beats.subset(np.ones(3, dtype=bool))
    with pytest.raises(ValueError, match="y must have shape"):
        BeatSet(np.zeros((3, 187)), np.zeros(2, int), np.zeros(3, str), np.zeros(3, int))
    with pytest.raises(ValueError, match="labels"):
        BeatSet(np.zeros((1, 187)), [7], ["1"], [0])
    with pytest.raises(AttributeError):
        beats.X = beats.X  # frozen


# --------------------------------------------------------------- full database
full_db = pytest.mark.skipif(
    not (FULL / "RECORDS").is_file(), reason="../shared/data/mitdb absent"
)


@pytest.fixture(scope="module")
def full_beats() -> BeatSet:
    t0 = time.perf_counter()
    b = load_mitbih_beats(FULL, progress=False)
    print(f"\nfull MIT-BIH build: {time.perf_counter() - t0:.1f} s, {len(b)} beats")
    return b


@pytest.mark.slow
@pytest.mark.data
@full_db
def test_full_database_counts(full_beats: BeatSet) -> None:
    # Published AAMI counts of the 48 records (notes/ecg-and-baselines.md, MANIFEST).
    assert abs(len(full_beats) - 109_494) <= 5
    np.testing.assert_allclose(
        full_beats.class_counts(), [90_631, 2_781, 7_236, 803, 8_043], atol=5
    )
    assert len(set(full_beats.record)) == 48


@pytest.mark.slow
@pytest.mark.data
@full_db
def test_full_database_splits(full_beats: BeatSet) -> None:
    tr, te = split_beats(full_beats, split="intra")
    assert 87_500 <= len(tr) <= 87_600 and 21_800 <= len(te) <= 21_900
    tr, te = split_beats(full_beats, split="inter")
    assert abs(len(tr) - 51_021) <= 5 and abs(len(te) - 49_712) <= 5


@pytest.mark.slow
@pytest.mark.data
@full_db
def test_full_database_rows_start_high(full_beats: BeatSet) -> None:
    # Most rows start at an R peak near the window maximum (some records, e.g. 117
    # and 207, have a negative QRS in MLII, which pulls the mean down).
    assert np.median(full_beats.X[:, 0]) > 0.85
