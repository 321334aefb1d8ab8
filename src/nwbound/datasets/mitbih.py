"""MIT-BIH Arrhythmia heartbeats, prepared as in Kachuee, Fazeli & Sarrafzadeh (2018).

The paper evaluates on the Kaggle "ECG Heartbeat Categorization" CSVs
(``mitbih_train.csv`` / ``mitbih_test.csv``), which are Kachuee et al.'s beats cut from
the MIT-BIH Arrhythmia Database. :func:`load_mitbih_beats` rebuilds the same kind of
beats from the raw PhysioNet records (WFDB format), :func:`load_kaggle_csv` reads the
CSVs where a user has them, :func:`split_beats` makes the intra-patient (Kaggle-style
stratified 80/20) or inter-patient (de Chazal DS1 → DS2) split and
:func:`paper_features` applies the paper's feature transform.

Data
----
PhysioNet ``mitdb`` 1.0.0 (https://physionet.org/content/mitdb/1.0.0/, DOI
10.13026/C2F305), Open Data Commons Attribution License v1.0. Cite Moody GB, Mark RG,
"The impact of the MIT-BIH Arrhythmia Database", IEEE Eng Med Biol 20(3):45-50 (2001)
and Goldberger AL et al., "PhysioBank, PhysioToolkit, and PhysioNet", Circulation
101(23):e215-e220 (2000).

Recipe (per record)
-------------------
1. Lead ``MLII`` picked by name (record 114 has it as its second channel); records
   without it (102 and 104 in ``mitdb``) use their first channel.
2. Resample 360 → 125 Hz with :func:`scipy.signal.resample_poly` (25/72).
3. Cut into consecutive 10 s windows (the last, shorter window included) and min-max
   normalise each window to [0, 1].
4. One beat per annotated beat (AAMI classes below; non-beat annotations are skipped),
   starting at the annotation position converted to the 125 Hz grid.
5. ``T`` = median RR interval between consecutive beats of the same window (windows
   with fewer than two beats use the record's median RR); the beat keeps
   ``round(1.2·T)`` samples and is zero-padded or truncated to 187.

AAMI EC57 classes, label order N, S, V, F, Q → 0..4:
N = N, L, R, e, j · S = A, a, J, S · V = V, E · F = F · Q = /, f, Q.

Rhythm features (:func:`rhythm_features`, stored in :attr:`BeatSet.rhythm`)
--------------------------------------------------------------------------
Per record, from the annotated beat positions, causal up to one beat of latency
(a live monitor knows a beat's post-RR when the next beat arrives): pre-RR,
post-RR, local RR (mean of the last ``local_beats`` = 10 RR intervals up to the
beat's pre-RR), the running record average RR (mean of every RR interval so far),
and pre-, post- and local RR divided by that running average (the per-patient
normalisation of the inter-patient literature). Implausible intervals (< 150 ms or
> 2 s: missed or spurious annotations, signal gaps) are clipped into [0.15, 2] s for
the beat's own pre/post value and left out of the local and running averages.
Fallbacks, all documented and finite: the first beat's pre-RR is its post-RR, the
last beat's post-RR is its pre-RR, averages use what is available before
``local_beats`` intervals exist; a record with a single beat has no RR interval
and is an error.

Feature sets (:func:`ecg_features`): ``"morphology"`` (the paper's first 100
samples), ``"rhythm"`` (the 7 rhythm features) or ``"both"``, MinMax-scaled on the
training side only.

Code layout: this module holds the loaders (:func:`load_mitbih_beats` with its
cache, :func:`load_mitbih_signal`, :func:`load_kaggle_csv`) and re-exports the
rest from private modules: ``_mitbih_common`` (constants, :class:`BeatSet`,
:func:`aami_label`), ``_mitbih_records`` (reading records, cutting beats, rhythm
features) and ``_mitbih_features`` (splits and feature transforms).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ._cache import atomic_savez, load_npz, settings_hash, sha256_file, verify_checksums
from ._mitbih_common import (
    AAMI_CLASSES,
    CLASS_NAMES,
    DS1,
    DS2,
    FEATURE_SETS,
    MITDB_RECORDS,
    PACED_RECORDS,
    RHYTHM_FEATURES,
    BeatSet,
    _CACHE_VERSION,
    _SYMBOL_TO_LABEL,
    _positive_int,
    aami_label,
)
from ._mitbih_features import ecg_features, paper_features, split_beats
from ._mitbih_records import (
    _extract_beats,
    _read_beats_annotation,
    _read_header,
    _read_signal,
    _resolve_records,
    rhythm_features,
)

__all__ = [
    "AAMI_CLASSES",
    "CLASS_NAMES",
    "DS1",
    "DS2",
    "MITDB_RECORDS",
    "FEATURE_SETS",
    "PACED_RECORDS",
    "RHYTHM_FEATURES",
    "BeatSet",
    "aami_label",
    "ecg_features",
    "load_kaggle_csv",
    "load_mitbih_beats",
    "load_mitbih_signal",
    "paper_features",
    "rhythm_features",
    "split_beats",
]


# ------------------------------------------------------------------------ public API
def load_mitbih_beats(
    data_dir: str | os.PathLike[str],
    *,
    records: Sequence[str | int] | str | int | None = None,
    lead: str = "MLII",
    fs_target: int = 125,
    window_s: float = 10.0,
    length: int = 187,
    segment_past_window: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    download: bool = False,
    missing_lead: Literal["first", "error"] = "first",
    rhythm: bool = True,
) -> BeatSet:
    """Build Kachuee-style heartbeats from raw MIT-BIH Arrhythmia records.

    Parameters
    ----------
    data_dir : path-like
        Directory with the WFDB files ``NNN.hea``, ``NNN.dat`` and ``NNN.atr``.
    records : sequence of str or int, str, int or None, default None
        Record ids to read; ``None`` reads every record listed in ``data_dir/RECORDS``
        (or every ``*.hea`` file when there is no ``RECORDS`` file).
    lead : str, default "MLII"
        Signal name of the lead to use, matched against the header.
    fs_target : int, default 125
        Sampling rate after resampling (Hz).
    window_s : float, default 10.0
        Length of the normalisation windows (seconds).
    length : int, default 187
        Samples per beat after zero-padding / truncation.
    segment_past_window : bool, default True
        Let a beat's ``1.2·T`` segment run past the end of its window into the
        following samples (each normalised with the window it falls in, so all values
        stay in [0, 1]); ``False`` zero-pads at the window end instead. ``True`` is
        worth about +0.6 points of accuracy and is closest to the paper.
    cache_dir : path-like or None, default None
        If given, the beats are stored in a compressed ``.npz`` there, keyed by a hash
        of the settings and of the SHA-256 of every record file, and reused when
        nothing changed. Written atomically; an unreadable cache file is rebuilt.
    progress : bool, default True
        Show a ``tqdm`` progress bar over the records (silently off without tqdm).
    download : bool, default False
        If the directory or a record is missing, download PhysioNet ``mitdb`` 1.0.0
        into ``data_dir`` with ``wfdb.dl_database`` (needs internet) instead of
        raising.
    missing_lead : {"first", "error"}, default "first"
        What to do with a record that has no ``lead``: use its first channel (the
        recipe for mitdb records 102 and 104, which have no MLII), or raise.
    rhythm : bool, default True
        Also compute the causal RR-interval features of every beat
        (:func:`rhythm_features`, per record) into ``BeatSet.rhythm``. A record with
        exactly one annotated beat then raises (it has no RR interval). A record
        whose annotations hold no beat symbol contributes no beats, with a warning;
        if no record has a beat, that is an error.

    Returns
    -------
    BeatSet
        ``X`` (n, length) float32, ``y`` labels N, S, V, F, Q → 0..4, ``record`` ids and
        ``sample`` beat positions at the original 360 Hz; records in the given order,
        beats in time order.

    Raises
    ------
    FileNotFoundError
        ``data_dir`` or a record file is missing (the message says how to get the data).
    ValueError
        A record file is truncated or corrupted, a parameter is invalid, or (with
        ``rhythm=True``) a record holds a single beat.

    Notes
    -----
    ``T`` is the median RR interval between consecutive beats of the beat's window;
    a window with fewer than two beats uses the record's median RR.

    Examples
    --------
    Skipped in the doctests: the record excerpts live in the source tree's
    ``tests/data``, not in the installed package (``tests/`` uses them).

    >>> from pathlib import Path
    >>> beats = load_mitbih_beats(Path("tests/data/mitdb_excerpt"), records=["100"],
    ...                           progress=False)  # doctest: +SKIP
    >>> beats.X.shape, beats.rhythm.shape  # doctest: +SKIP
    ((148, 187), (148, 7))
    """
    fs_target, length = _check_beat_params(fs_target, length, window_s, missing_lead, lead, rhythm)
    data_dir = Path(data_dir).expanduser()
    names = _resolve_records(data_dir, records, download)
    headers = {r: _read_header(data_dir, r) for r in names}

    cache_path = key = None
    if cache_dir is not None:
        settings = {
            "version": _CACHE_VERSION,
            "lead": lead,
            "fs_target": int(fs_target),
            "window_s": float(window_s),
            "length": int(length),
            "segment_past_window": bool(segment_past_window),
            "missing_lead": missing_lead,
            "rhythm": bool(rhythm),
            "records": names,
            "files": _record_file_hashes(data_dir, names, headers),
        }
        key = settings_hash(settings)
        cache_path = Path(cache_dir).expanduser() / f"mitbih_beats_{key[:24]}.npz"
        cached = _load_cached_beats(cache_path, key, rhythm)
        if cached is not None:  # built from files verified then, with these digests (the key)
            return cached
    # Building the beats: the record files against the folder's SHA256SUMS.txt, where it has one.
    files = [data_dir / f for r in names for f in _record_file_names(r, headers[r])]
    verify_checksums(data_dir, files, None if key is None else
                     [d for r in names for d in settings["files"][r]])

    parts: list[tuple[np.ndarray, ...]] = []
    fallback = []
    for r in _record_iterator(names, progress):
        x, used = _read_signal(data_dir, r, headers[r], lead, missing_lead)
        if used != lead:
            fallback.append(r)
        parts.append(
            _record_beats(data_dir, r, headers[r], x, fs_target=int(fs_target),
                          window_s=float(window_s), length=int(length),
                          segment_past_window=bool(segment_past_window), rhythm=rhythm)
        )  # fmt: skip
    _warn_empty_and_fallback(names, [p[1] for p in parts], fallback, lead)
    beats = _concatenate_beats(parts, length, rhythm)
    if cache_path is not None:
        atomic_savez(
            cache_path,
            {"X": beats.X, "y": beats.y, "record": beats.record, "sample": beats.sample,
             "rhythm": beats.rhythm if rhythm else np.zeros((len(beats), 0), np.float32),
             "key": np.array(key)},
        )  # fmt: skip
    return beats


def _check_beat_params(
    fs_target: Any, length: Any, window_s: Any, missing_lead: Any, lead: Any, rhythm: Any
) -> tuple[int, int]:
    """Validate :func:`load_mitbih_beats`' scalar settings; return ``fs_target``, ``length``.

    Done before any file is touched so a bad setting fails fast with a clear message.
    """
    fs_target = _positive_int(fs_target, "fs_target")
    length = _positive_int(length, "length")
    if (
        isinstance(window_s, bool)
        or not isinstance(window_s, (int, float, np.integer, np.floating))
        or not np.isfinite(window_s)
        or window_s * fs_target < 2
    ):
        raise ValueError(
            f"window_s must be finite and hold at least 2 samples at {fs_target} Hz, "
            f"got {window_s!r}"
        )
    if missing_lead not in ("first", "error"):
        raise ValueError(f"missing_lead must be 'first' or 'error', got {missing_lead!r}")
    if not isinstance(lead, str) or not lead:
        raise TypeError(f"lead must be a signal name such as 'MLII', got {lead!r}")
    if not isinstance(rhythm, (bool, np.bool_)):
        raise TypeError(f"rhythm must be True or False, got {rhythm!r}")
    return fs_target, length


def _record_file_hashes(data_dir: Path, names: Sequence[str], headers: dict[str, Any]) -> dict:
    """SHA-256 of every file of each record (header, signal files, annotations).

    Part of the cache key, so an edited or replaced record file invalidates the cache.
    """
    return {r: [sha256_file(data_dir / f) for f in _record_file_names(r, headers[r])] for r in names}


def _record_file_names(record: str, header: Any) -> list[str]:
    """The files of a record: header, signal files, annotations."""
    return [f"{record}.hea", *dict.fromkeys(header.file_name), f"{record}.atr"]


def _load_cached_beats(cache_path: Path, key: str, rhythm: bool) -> BeatSet | None:
    """Return the beats cached at ``cache_path`` if built from ``key``, else ``None``.

    A cache from other settings or an inconsistent one is ignored with a warning
    (``stacklevel=3`` points at the caller of :func:`load_mitbih_beats`).
    """
    cached = load_npz(cache_path, required=("X", "y", "record", "sample", "rhythm", "key"))
    if cached is None:
        return None
    if str(cached["key"]) == key:
        try:
            return BeatSet(
                cached["X"], cached["y"], cached["record"], cached["sample"],
                rhythm=cached["rhythm"] if rhythm else None,
            )
        except (ValueError, TypeError) as exc:
            warnings.warn(
                f"ignoring inconsistent cache file {cache_path} ({exc}); rebuilding",
                UserWarning,
                stacklevel=3,
            )
    else:
        warnings.warn(
            f"ignoring cache file {cache_path}: it was built from other settings; "
            "rebuilding",
            UserWarning,
            stacklevel=3,
        )
    return None


def _record_iterator(names: Sequence[str], progress: bool) -> Iterable[str]:
    """``names``, wrapped in a ``tqdm`` bar when ``progress`` and tqdm is installed."""
    if progress:
        try:
            from tqdm.auto import tqdm

            return tqdm(names, desc="MIT-BIH records", unit="record")
        except ImportError:
            pass
    return names


def _record_beats(
    data_dir: Path, r: str, header: Any, x: np.ndarray, *, fs_target: int, window_s: float,
    length: int, segment_past_window: bool, rhythm: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Beats of one record: ``(X, y, record, sample, rhythm or None)``.

    ``x`` is the record's lead already read; the annotations give beat positions and labels.
    """
    s, lab = _read_beats_annotation(data_dir, r, header.sig_len)
    X = _extract_beats(
        x, header.fs, s, fs_target=fs_target, window_s=window_s,
        length=length, segment_past_window=segment_past_window,
    )
    rr = None
    if rhythm:
        if s.size == 1:
            raise ValueError(
                f"record {r} holds a single annotated beat: its rhythm features (RR "
                "intervals) are undefined. Leave the record out or pass rhythm=False."
            )
        rr = rhythm_features(s, header.fs) if s.size else np.zeros((0, len(RHYTHM_FEATURES)))
    return X, lab, np.full(s.size, r), s, rr


def _warn_empty_and_fallback(
    names: Sequence[str], labels: Sequence[np.ndarray], fallback: Sequence[str], lead: str
) -> None:
    """Raise if no record has a beat; warn about beatless records and unexpected lead fallbacks.

    ``stacklevel=3`` points the warnings at the caller of :func:`load_mitbih_beats`.
    """
    empty = [r for r, lab in zip(names, labels) if lab.size == 0]
    if empty and len(empty) == len(names):
        raise ValueError(
            f"the annotation files of records {empty} hold no beat annotations (only non-beat "
            f"symbols such as + ~ |); beats need the AAMI symbols {sorted(_SYMBOL_TO_LABEL)}"
        )
    if empty:
        warnings.warn(
            f"records {empty} hold no beat annotations (only non-beat symbols): they add no beats",
            UserWarning,
            stacklevel=3,
        )
    # 102 and 104 lacking MLII is part of the recipe; anything else deserves a warning.
    unexpected = [r for r in fallback if not (lead == "MLII" and r in ("102", "104"))]
    if unexpected:
        warnings.warn(
            f"records {unexpected} have no lead {lead!r}: their first channel was used",
            UserWarning,
            stacklevel=3,
        )


def _concatenate_beats(parts: Sequence[tuple[np.ndarray, ...]], length: int, rhythm: bool) -> BeatSet:
    """One :class:`BeatSet` from the per-record ``(X, y, record, sample, rr)`` tuples.

    Empty inputs give correctly shaped empty arrays so the result is always valid.
    """
    def cat(i: int, empty: np.ndarray) -> np.ndarray:
        return np.concatenate([p[i] for p in parts]) if parts else empty

    return BeatSet(
        cat(0, np.zeros((0, length), np.float32)),
        cat(1, np.zeros(0, np.int64)),
        cat(2, np.zeros(0, str)),
        cat(3, np.zeros(0, np.int64)),
        rhythm=cat(4, np.zeros((0, len(RHYTHM_FEATURES)))) if rhythm else None,
    )


def load_mitbih_signal(
    data_dir: str | os.PathLike[str],
    record: str | int,
    *,
    lead: str = "MLII",
    missing_lead: Literal["first", "error"] = "first",
) -> tuple[np.ndarray, float, str]:
    """Read one lead of one MIT-BIH record in physical units (mV), with the same checks.

    Parameters
    ----------
    data_dir : path-like
        Directory with the WFDB files.
    record : str or int
        Record id, e.g. ``"232"``.
    lead : str, default "MLII"
        Signal name of the lead.
    missing_lead : {"first", "error"}, default "first"
        Use the first channel where ``lead`` is missing, or raise.

    Returns
    -------
    signal : ndarray of shape (n_samples,), float64
    fs : float
        Sampling rate (Hz).
    lead_used : str
        The signal name actually read.

    Raises
    ------
    FileNotFoundError, ValueError
        As :func:`load_mitbih_beats`.

    Examples
    --------
    Skipped in the doctests, as for :func:`load_mitbih_beats` (data in ``tests/data``):

    >>> x, fs, used = load_mitbih_signal("tests/data/mitdb_excerpt", "114")  # doctest: +SKIP
    >>> x.shape, fs, used  # doctest: +SKIP
    ((43200,), 360.0, 'MLII')
    """
    if missing_lead not in ("first", "error"):
        raise ValueError(f"missing_lead must be 'first' or 'error', got {missing_lead!r}")
    if not isinstance(lead, str) or not lead:
        raise TypeError(f"lead must be a signal name such as 'MLII', got {lead!r}")
    data_dir = Path(data_dir).expanduser()
    (name,) = _resolve_records(data_dir, [record], download=False)
    header = _read_header(data_dir, name)
    x, used = _read_signal(data_dir, name, header, lead, missing_lead)
    return x, float(header.fs), used


def load_kaggle_csv(path: str | os.PathLike[str], *, length: int = 187) -> BeatSet:
    """Read a Kaggle ``mitbih_train.csv`` / ``mitbih_test.csv`` file.

    Parameters
    ----------
    path : path-like
        CSV without header: ``length`` sample values then the label (0.0..4.0).
    length : int, default 187
        Expected number of samples per row.

    Returns
    -------
    BeatSet
        ``record`` is ``"-1"`` and ``sample`` is ``-1`` (unknown) for every row.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        Wrong column count, non-numeric or non-finite values, labels outside 0..4.

    Examples
    --------
    A two-row file with 3 samples per beat (the Kaggle files have 187):

    >>> import os, tempfile
    >>> from nwbound.datasets import load_kaggle_csv
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "beats.csv")
    ...     with open(path, "w") as fh:
    ...         _ = fh.write("0.1,0.5,0.2,0.0\\n0.3,0.9,0.1,2.0\\n")
    ...     beats = load_kaggle_csv(path, length=3)
    >>> beats.X.shape, beats.y.tolist()
    ((2, 3), [0, 2])

    The real training file (not shipped with the package, so skipped here):

    >>> beats = load_kaggle_csv("mitbih_train.csv")  # doctest: +SKIP
    >>> beats.X.shape  # doctest: +SKIP
    (87554, 187)
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(
            f"Kaggle CSV {path} not found (Kaggle dataset 'shayanfazeli/heartbeat')"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # numpy's "input contained no data"
        try:
            data = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
        except ValueError as exc:
            raise ValueError(
                f"{path} is not a numeric CSV of {length} samples + label per row: {exc}"
            ) from exc
    if data.shape[0] == 0:
        raise ValueError(f"{path} holds no rows")
    if data.shape[1] != length + 1:
        raise ValueError(
            f"{path} has {data.shape[1]} columns, expected {length + 1} "
            f"({length} samples + the label)"
        )
    bad = ~np.isfinite(data)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(f"{path}: non-finite value at row {row + 1}, column {col + 1}")
    labels = data[:, -1]
    bad_lab = (labels != np.round(labels)) | (labels < 0) | (labels > len(CLASS_NAMES) - 1)
    if bad_lab.any():
        row = int(np.flatnonzero(bad_lab)[0])
        raise ValueError(
            f"{path}: label {float(labels[row])} at row {row + 1} is not one of 0..4 "
            f"({', '.join(CLASS_NAMES)})"
        )
    n = data.shape[0]
    return BeatSet(
        data[:, :-1].astype(np.float32),
        labels.astype(np.int64),
        np.full(n, "-1"),
        np.full(n, -1, dtype=np.int64),
    )
