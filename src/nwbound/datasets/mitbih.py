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
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ._cache import atomic_savez, load_npz, settings_hash, sha256_file

if TYPE_CHECKING:  # pragma: no cover
    from sklearn.preprocessing import MinMaxScaler

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

CLASS_NAMES: tuple[str, ...] = ("N", "S", "V", "F", "Q")

#: AAMI EC57 heartbeat classes and the MIT-BIH annotation symbols they group.
AAMI_CLASSES: dict[str, tuple[str, ...]] = {
    "N": ("N", "L", "R", "e", "j"),
    "S": ("A", "a", "J", "S"),
    "V": ("V", "E"),
    "F": ("F",),
    "Q": ("/", "f", "Q"),
}
_SYMBOL_TO_LABEL: dict[str, int] = {
    sym: CLASS_NAMES.index(cls) for cls, syms in AAMI_CLASSES.items() for sym in syms
}

#: The 48 records of the MIT-BIH Arrhythmia Database.
MITDB_RECORDS: tuple[str, ...] = tuple(
    str(r)
    for r in (
        *range(100, 110), 111, 112, 113, 114, 115, 116, 117, 118, 119, 121, 122, 123, 124,
        200, 201, 202, 203, 205, 207, 208, 209, 210, 212, 213, 214, 215, 217, 219, 220,
        221, 222, 223, 228, 230, 231, 232, 233, 234,
    )
)  # fmt: skip
#: Records with paced rhythm (excluded from the inter-patient split).
PACED_RECORDS: tuple[str, ...] = ("102", "104", "107", "217")
#: de Chazal et al. (2004) inter-patient training records.
DS1: tuple[str, ...] = tuple(
    "101 106 108 109 112 114 115 116 118 119 122 124 201 203 205 207 208 209 215 "
    "220 223 230".split()
)
#: de Chazal et al. (2004) inter-patient test records.
DS2: tuple[str, ...] = tuple(
    "100 103 105 111 113 117 121 123 200 202 210 212 213 214 219 221 222 228 231 "
    "232 233 234".split()
)

_GET_DATA_HINT = (
    "Get the MIT-BIH Arrhythmia Database (PhysioNet mitdb 1.0.0, "
    "https://physionet.org/content/mitdb/1.0.0/) with "
    "`wfdb.dl_database('mitdb', '{dir}')`, or call load_mitbih_beats(..., download=True) "
    "to download it into that directory."
)
# Bytes per sample of the WFDB storage formats, to check a .dat size against its header.
_BYTES_PER_SAMPLE: dict[str, float] = {
    "8": 1.0, "16": 2.0, "24": 3.0, "32": 4.0, "61": 2.0, "80": 1.0, "160": 2.0,
    "212": 1.5, "310": 4.0 / 3.0, "311": 4.0 / 3.0,
}  # fmt: skip
_CACHE_VERSION = 3  # bump when the recipe changes, so old caches are not reused (3: rhythm)

#: Names of the columns of :attr:`BeatSet.rhythm` (RR values in seconds, ratios unitless).
RHYTHM_FEATURES: tuple[str, ...] = (
    "pre_rr", "post_rr", "local_rr", "avg_rr", "pre_rr_norm", "post_rr_norm", "local_rr_norm",
)  # fmt: skip
#: Feature sets of :func:`ecg_features`.
FEATURE_SETS: tuple[str, ...] = ("morphology", "rhythm", "both")
RR_MIN_S = 0.15  # physiologically implausible below (≈ 400 bpm)
RR_MAX_S = 2.0  # and above (≈ 30 bpm): a missed beat or a signal gap
LOCAL_RR_BEATS = 10


# --------------------------------------------------------------------------- BeatSet
@dataclass(frozen=True, eq=False)
class BeatSet:
    """Fixed-length heartbeats with AAMI labels and their origin.

    Attributes
    ----------
    X : ndarray of shape (n, length), float32
        The beats, one per row, each starting at its R peak.
    y : ndarray of shape (n,), int64
        Label index into ``class_names`` (0..4 for N, S, V, F, Q).
    record : ndarray of shape (n,), str
        Record id of each beat (``"-1"`` where unknown, e.g. Kaggle CSVs).
    sample : ndarray of shape (n,), int64
        Beat position in samples of the original recording (360 Hz for MIT-BIH;
        ``-1`` where unknown).
    class_names : tuple of str
        Class names in label order.
    rhythm : ndarray of shape (n, 7), float32, or None
        Rhythm features of each beat, columns :data:`RHYTHM_FEATURES`
        (see :func:`rhythm_features`); ``None`` where unknown (e.g. Kaggle CSVs).

    Examples
    --------
    >>> import numpy as np
    >>> b = BeatSet(np.zeros((3, 4)), [0, 1, 0], ["100"] * 3, [10, 300, 600])
    >>> b
    BeatSet(n=3, length=4, N=2, S=1, V=0, F=0, Q=0)
    >>> len(b.subset(b.y == 0))
    2
    """

    X: np.ndarray
    y: np.ndarray
    record: np.ndarray
    sample: np.ndarray
    class_names: tuple[str, ...] = CLASS_NAMES
    rhythm: np.ndarray | None = None

    def __post_init__(self) -> None:
        X = np.asarray(self.X, dtype=np.float32)
        y = np.asarray(self.y)
        record = np.asarray(self.record).astype(str)
        sample = np.asarray(self.sample)
        if X.ndim != 2:
            raise ValueError(f"BeatSet: X must be 2-D (n, length), got shape {X.shape}")
        n = X.shape[0]
        for name, arr in (("y", y), ("record", record), ("sample", sample)):
            if arr.shape != (n,):
                raise ValueError(
                    f"BeatSet: {name} must have shape ({n},) to match X, got {arr.shape}"
                )
        if n and not (np.issubdtype(y.dtype, np.integer) or np.all(y == np.round(y))):
            raise ValueError("BeatSet: y must hold integer class indices")
        y = y.astype(np.int64)
        if n and (y.min() < 0 or y.max() >= len(self.class_names)):
            raise ValueError(
                f"BeatSet: labels must lie in 0..{len(self.class_names) - 1} "
                f"(class_names={self.class_names}), got {y.min()}..{y.max()}"
            )
        if self.rhythm is not None:
            rhythm = np.asarray(self.rhythm, dtype=np.float32)
            if rhythm.shape != (n, len(RHYTHM_FEATURES)):
                raise ValueError(
                    f"BeatSet: rhythm must have shape ({n}, {len(RHYTHM_FEATURES)}) "
                    f"(columns {RHYTHM_FEATURES}), got {rhythm.shape}"
                )
            if not np.all(np.isfinite(rhythm)):
                raise ValueError("BeatSet: rhythm features must be finite")
            object.__setattr__(self, "rhythm", rhythm)
        # Frozen dataclass: store the normalised arrays through object.__setattr__.
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "y", y)
        object.__setattr__(self, "record", record)
        object.__setattr__(self, "sample", sample.astype(np.int64))
        object.__setattr__(self, "class_names", tuple(self.class_names))

    def __len__(self) -> int:
        return int(self.X.shape[0])

    def __repr__(self) -> str:
        counts = ", ".join(f"{c}={k}" for c, k in zip(self.class_names, self.class_counts()))
        return f"BeatSet(n={len(self)}, length={self.X.shape[1]}, {counts})"

    def subset(self, mask: np.ndarray | Sequence[int] | Sequence[bool]) -> BeatSet:
        """Return the beats selected by a boolean mask or an integer index array.

        Parameters
        ----------
        mask : array-like of bool of shape (n,) or array-like of int
            Rows to keep (integer indices keep their order, repeats allowed).

        Returns
        -------
        BeatSet

        Raises
        ------
        ValueError
            If a boolean mask does not have shape (n,).
        TypeError
            If ``mask`` is neither boolean nor integer.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.datasets import BeatSet
        >>> b = BeatSet(np.zeros((3, 4)), [0, 1, 0], ["100"] * 3, [10, 300, 600])
        >>> b.subset([2, 0]).sample.tolist()
        [600, 10]
        >>> b.subset(b.y == 1)
        BeatSet(n=1, length=4, N=0, S=1, V=0, F=0, Q=0)
        """
        m = np.asarray(mask)
        if m.dtype == bool:
            if m.shape != (len(self),):
                raise ValueError(
                    f"subset: boolean mask must have shape ({len(self)},), got {m.shape}"
                )
        elif m.size == 0:
            m = m.astype(np.int64)
        elif not np.issubdtype(m.dtype, np.integer):
            raise TypeError(f"subset: mask must be boolean or integer, got dtype {m.dtype}")
        return BeatSet(
            self.X[m], self.y[m], self.record[m], self.sample[m], self.class_names,
            None if self.rhythm is None else self.rhythm[m],
        )

    def class_counts(self) -> np.ndarray:
        """Return the number of beats of each class, in ``class_names`` order.

        Examples
        --------
        >>> BeatSet(np.zeros((3, 2)), [0, 2, 2], ["1"] * 3, [0, 1, 2]).class_counts().tolist()
        [1, 0, 2, 0, 0]
        """
        return np.bincount(self.y, minlength=len(self.class_names))


def aami_label(symbols: Iterable[str]) -> np.ndarray:
    """Map MIT-BIH annotation symbols to AAMI label indices (−1 for non-beats).

    Parameters
    ----------
    symbols : iterable of str
        Annotation symbols (``wfdb.Annotation.symbol``).

    Returns
    -------
    ndarray of int64
        0..4 for N, S, V, F, Q beats, −1 for every other symbol.

    Examples
    --------
    >>> aami_label(["N", "A", "V", "+", "/"]).tolist()
    [0, 1, 2, -1, 4]
    """
    sym = np.asarray(list(symbols), dtype=object)
    out = np.full(sym.shape, -1, dtype=np.int64)
    for s, lab in _SYMBOL_TO_LABEL.items():
        out[sym == s] = lab
    return out


# ------------------------------------------------------------------ record handling
def _wfdb() -> Any:
    try:
        import wfdb
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "reading MIT-BIH records needs the 'wfdb' package: pip install 'nwbound[ecg]'"
        ) from exc
    return wfdb


def _normalise_record_names(records: Any) -> list[str]:
    if isinstance(records, (str, int, np.integer)):
        records = [records]
    try:
        names = [str(r).strip() for r in records]
    except TypeError as exc:
        raise TypeError(
            f"records must be a record id or a sequence of record ids, got {records!r}"
        ) from exc
    if not names:
        raise ValueError("records is empty: give at least one record id (e.g. ['100'])")
    for r in names:
        if not r or os.sep in r or "/" in r or r.startswith("."):
            raise ValueError(f"records: {r!r} is not a record id (expected e.g. '100')")
    # Keep the first occurrence only: a repeated record would duplicate its beats.
    return list(dict.fromkeys(names))


def _list_records(data_dir: Path) -> list[str]:
    """Records of a directory: its RECORDS file if present, else every ``*.hea``."""
    listing = data_dir / "RECORDS"
    if listing.is_file():
        names = [ln.strip() for ln in listing.read_text().splitlines() if ln.strip()]
        if names:
            return names
    return sorted(p.stem for p in data_dir.glob("*.hea"))


def _missing_files(data_dir: Path, names: Sequence[str]) -> list[Path]:
    """Header, annotation and signal files of ``names`` that are not there."""
    missing = []
    for r in names:
        hea = data_dir / f"{r}.hea"
        wanted = [hea, data_dir / f"{r}.atr"]
        if hea.is_file():
            try:
                signal_files = _wfdb().rdheader(str(data_dir / r)).file_name or []
            except Exception:  # a broken header is reported by _read_header
                signal_files = []
            wanted += [data_dir / f for f in dict.fromkeys(signal_files)]
        else:
            wanted.append(data_dir / f"{r}.dat")  # the mitdb naming
        missing += [p for p in wanted if not p.is_file()]
    return missing


def _download(data_dir: Path, names: Sequence[str] | None) -> None:
    wfdb = _wfdb()
    data_dir.mkdir(parents=True, exist_ok=True)
    warnings.warn(
        f"downloading PhysioNet mitdb 1.0.0 into {data_dir} (about 100 MB)",
        UserWarning,
        stacklevel=3,
    )
    wfdb.dl_database(
        "mitdb", dl_dir=str(data_dir), records="all" if names is None else list(names),
        annotators=["atr"],
    )


def _resolve_records(data_dir: Path, records: Any, download: bool) -> list[str]:
    hint = _GET_DATA_HINT.format(dir=data_dir)
    if records is None:
        names = _list_records(data_dir) if data_dir.is_dir() else []
        if not names:
            if not download:
                what = "does not exist" if not data_dir.exists() else "holds no WFDB records"
                raise FileNotFoundError(f"MIT-BIH data directory {data_dir} {what}. {hint}")
            _download(data_dir, None)
            names = _list_records(data_dir)
    else:
        names = _normalise_record_names(records)
    missing = _missing_files(data_dir, names)
    if missing and download:
        _download(data_dir, sorted({p.stem for p in missing}))
        missing = _missing_files(data_dir, names)
    if missing:
        shown = ", ".join(str(p) for p in missing[:6]) + (" ..." if len(missing) > 6 else "")
        raise FileNotFoundError(
            f"MIT-BIH record file(s) not found: {shown}. Check the record ids "
            f"(mitdb has {MITDB_RECORDS[0]}..{MITDB_RECORDS[-1]}, 48 records). {hint}"
        )
    return names


def _read_header(data_dir: Path, name: str) -> Any:
    """Parse ``name.hea`` and check that its signal file(s) have the size it implies."""
    wfdb = _wfdb()
    hea = data_dir / f"{name}.hea"
    try:
        header = wfdb.rdheader(str(data_dir / name))
    except Exception as exc:  # wfdb raises many types on a malformed header
        raise ValueError(f"cannot parse WFDB header {hea}: {exc}") from exc
    n_sig, sig_len, fs = header.n_sig, header.sig_len, header.fs
    if not n_sig or not sig_len or not fs or fs <= 0:
        raise ValueError(
            f"WFDB header {hea} describes no usable signal "
            f"(n_sig={n_sig}, sig_len={sig_len}, fs={fs})"
        )
    # Group the signals by data file: mitdb stores both leads interleaved in one file.
    by_file: dict[str, list[int]] = {}
    for i, fname in enumerate(header.file_name):
        by_file.setdefault(fname, []).append(i)
    for fname, idx in by_file.items():
        dat = data_dir / fname
        if not dat.is_file():
            raise FileNotFoundError(
                f"signal file {dat} named in {hea} not found. "
                + _GET_DATA_HINT.format(dir=data_dir)
            )
        fmts = {header.fmt[i] for i in idx}
        offsets = {(header.byte_offset or [None] * n_sig)[i] or 0 for i in idx}
        if len(fmts) != 1 or len(offsets) != 1 or next(iter(fmts)) not in _BYTES_PER_SAMPLE:
            continue  # unusual layout: leave the checking to wfdb
        bps = _BYTES_PER_SAMPLE[next(iter(fmts))]
        expected = next(iter(offsets)) + math.ceil(len(idx) * sig_len * bps)
        actual = dat.stat().st_size
        if actual != expected:
            kind = "truncated" if actual < expected else "longer than its header says"
            raise ValueError(
                f"signal file {dat} is {kind}: {actual} bytes, but {hea} declares "
                f"{len(idx)} signal(s) x {sig_len} samples in format {next(iter(fmts))} "
                f"= {expected} bytes. Re-download the record (PhysioNet mitdb 1.0.0)."
            )
    return header


def _read_signal(
    data_dir: Path, name: str, header: Any, lead: str, missing_lead: str
) -> tuple[np.ndarray, str]:
    """Return the chosen lead in physical units (float64) and its name."""
    wfdb = _wfdb()
    try:
        rec = wfdb.rdrecord(str(data_dir / name), physical=False)
    except Exception as exc:
        raise ValueError(
            f"cannot read the signal of record {name} ({data_dir / header.file_name[0]}): {exc}"
        ) from exc
    d = np.asarray(rec.d_signal)
    if d.ndim != 2 or d.shape != (header.sig_len, header.n_sig):
        raise ValueError(
            f"record {name}: {data_dir / header.file_name[0]} decodes to shape {d.shape}, "
            f"header says ({header.sig_len}, {header.n_sig})"
        )
    # The header's 16-bit checksums catch corrupted bytes that keep the file size.
    if header.checksum is not None:
        # Compare modulo 2**16: writers store the 16-bit sum signed or unsigned.
        got = (d.astype(np.int64).sum(axis=0) + 32768) % 65536 - 32768
        want = (np.asarray(header.checksum, dtype=np.int64) + 32768) % 65536 - 32768
        bad = np.flatnonzero(got != want)
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"signal file {data_dir / header.file_name[i]} is corrupted: checksum of "
                f"signal {i} ({header.sig_name[i]}) is {got[i]}, its header says {want[i]}. "
                "Re-download the record (PhysioNet mitdb 1.0.0)."
            )
    names = list(header.sig_name or [])
    if lead in names:
        ch = names.index(lead)
    elif missing_lead == "first":
        ch = 0
    else:
        raise ValueError(
            f"record {name} has no lead {lead!r} (its leads: {names}); "
            "pass missing_lead='first' to use its first channel instead"
        )
    gain = float(header.adc_gain[ch]) or 200.0  # WFDB: gain 0 means the default 200
    x = (d[:, ch].astype(np.float64) - float(header.baseline[ch])) / gain
    return x, names[ch] if names else "?"


def _read_beats_annotation(
    data_dir: Path, name: str, sig_len: int
) -> tuple[np.ndarray, np.ndarray]:
    """Return (sample, label) of the AAMI beats of ``name.atr`` after sanity checks."""
    wfdb = _wfdb()
    atr = data_dir / f"{name}.atr"
    raw = atr.read_bytes()
    # A WFDB annotation file is a stream of 16-bit words ending with a 0x0000 word:
    # a missing end marker means the file was cut short.
    if len(raw) < 2 or len(raw) % 2 or raw[-2:] != b"\x00\x00":
        raise ValueError(
            f"annotation file {atr} is truncated or corrupted ({len(raw)} bytes, "
            "no end-of-file marker). Re-download the record (PhysioNet mitdb 1.0.0)."
        )
    try:
        with warnings.catch_warnings():
            # wfdb 4.3 trips a pandas deprecation internally; nothing a user can act on.
            warnings.filterwarnings("ignore", message=".*inplace keyword", category=Warning)
            ann = wfdb.rdann(str(data_dir / name), "atr")
    except Exception as exc:
        raise ValueError(f"cannot read annotation file {atr}: {exc}") from exc
    sample = np.asarray(ann.sample, dtype=np.int64)
    symbols = ann.symbol
    if any(not isinstance(s, str) for s in symbols):
        raise ValueError(f"annotation file {atr} is corrupted: it holds unknown annotation codes")
    if sample.size and (sample.min() < 0 or sample.max() >= sig_len):
        raise ValueError(
            f"annotation file {atr} is corrupted or belongs to another record: positions "
            f"{sample.min()}..{sample.max()} fall outside the {sig_len} signal samples"
        )
    if np.any(np.diff(sample) < 0):
        raise ValueError(f"annotation file {atr} is corrupted: positions are not in order")
    label = aami_label(symbols)
    keep = label >= 0
    return sample[keep], label[keep]


# -------------------------------------------------------------------- beat extraction
def _resample_ratio(fs: float, fs_target: int) -> tuple[int, int]:
    ratio = Fraction(fs_target) / Fraction(str(float(fs)))
    return ratio.numerator, ratio.denominator


def _extract_beats(
    x: np.ndarray,
    fs: float,
    beat_sample: np.ndarray,
    *,
    fs_target: int,
    window_s: float,
    length: int,
    segment_past_window: bool,
) -> np.ndarray:
    """Cut the beats of one record (vectorised: no loop over beats or windows).

    Parameters
    ----------
    x : ndarray of shape (n_samples,)
        The lead at ``fs`` Hz.
    fs : float
        Sampling rate of ``x``.
    beat_sample : ndarray of int, shape (n_beats,)
        Beat positions in samples of ``x``, sorted.
    fs_target, window_s, length, segment_past_window
        See :func:`load_mitbih_beats`.

    Returns
    -------
    ndarray of shape (n_beats, length), float32
    """
    from scipy.signal import resample_poly

    up, down = _resample_ratio(fs, fs_target)
    xr = resample_poly(x, up, down) if up != down else x.astype(np.float64)
    n = xr.size
    n_beats = beat_sample.size
    if n_beats == 0 or n == 0:
        return np.zeros((0, length), dtype=np.float32)
    # sample*up is an exact integer, so halves round the same way for every record.
    pos = np.clip(np.rint(beat_sample * up / down).astype(np.int64), 0, n - 1)

    # Per-window min-max normalisation (the last window may be shorter).
    win = max(int(round(window_s * fs_target)), 2)
    starts = np.arange(0, n, win)
    lo = np.minimum.reduceat(xr, starts)
    span = np.maximum.reduceat(xr, starts) - lo
    # A flat window (span 0) maps to zeros rather than dividing by zero.
    inv = np.divide(1.0, span, out=np.zeros_like(span), where=span > 0)
    w = pos // win

    # T = median RR over consecutive beats of the same window, by sorting (window, RR)
    # pairs and reading the middle of each group.
    rr = np.diff(pos)
    rec_median = float(np.median(rr)) if rr.size else length / 1.2
    T = np.full(starts.size, rec_median)
    same = w[1:] == w[:-1]
    if np.any(same):
        rr_w, rr_v = w[1:][same], rr[same]
        order = np.lexsort((rr_v, rr_w))
        rr_w, rr_v = rr_w[order], rr_v[order].astype(np.float64)
        uw, first, cnt = np.unique(rr_w, return_index=True, return_counts=True)
        T[uw] = 0.5 * (rr_v[first + (cnt - 1) // 2] + rr_v[first + cnt // 2])
    seg_len = np.rint(1.2 * T[w]).astype(np.int64)

    # Segment ends: the signal end (past-window mode) or the beat's window end.
    end = np.full(n_beats, n) if segment_past_window else np.minimum((w + 1) * win, n)
    j = np.arange(length)
    idx = pos[:, None] + j[None, :]
    valid = (j[None, :] < seg_len[:, None]) & (idx < end[:, None])
    # Each sample is scaled with the min/max of the window it lies in (normalise the
    # signal window by window, then cut), so values stay in [0, 1]. Scaling past-window
    # samples with the beat's own window let a few beats reach −1.1…1.8, which stretched
    # the training MinMax ranges ~1.4× and so inflated the effective bandwidth.
    src = np.minimum(idx, n - 1)
    vals = (xr[src] - lo[src // win]) * inv[src // win]
    return np.where(valid, vals, 0.0).astype(np.float32)


# ------------------------------------------------------------------ rhythm features
def rhythm_features(
    sample: np.ndarray | Sequence[int],
    fs: float,
    *,
    local_beats: int = LOCAL_RR_BEATS,
    rr_min: float = RR_MIN_S,
    rr_max: float = RR_MAX_S,
) -> np.ndarray:
    """Causal RR-interval features of the beats of one record.

    Parameters
    ----------
    sample : array-like of int, shape (n,)
        Beat positions of one record in samples, in time order (n ≥ 2).
    fs : float
        Sampling rate of ``sample`` (Hz).
    local_beats : int, default 10
        Number of previous RR intervals averaged into the local RR.
    rr_min, rr_max : float, default 0.15, 2.0
        Plausible RR range (s). Intervals outside are clipped into it for the beat's
        own pre/post-RR and left out of the local and running averages.

    Returns
    -------
    ndarray of shape (n, 7), float64
        Columns :data:`RHYTHM_FEATURES`: ``pre_rr``, ``post_rr``, ``local_rr``,
        ``avg_rr`` (s), then ``pre_rr``, ``post_rr`` and ``local_rr`` divided by
        ``avg_rr``. Every value is finite and positive.

    Raises
    ------
    ValueError
        Fewer than two beats (no RR interval), positions out of order, bad ``fs``.

    Notes
    -----
    Row ``i`` reads beats ``0..i+1`` only: ``post_rr`` needs the next beat (one
    beat of latency), every other column only beats ``0..i``. Fallbacks: beat 0
    takes its post-RR as pre-RR; the last beat takes its pre-RR as post-RR; the
    local and running averages average the plausible intervals available (the
    running average uses the beat's clipped pre-RR until a plausible one exists).

    Examples
    --------
    >>> f = rhythm_features([0, 360, 720, 900, 1260], fs=360.0)
    >>> f[:, :2].round(2).tolist()  # pre-RR, post-RR in s
    [[1.0, 1.0], [1.0, 1.0], [1.0, 0.5], [0.5, 1.0], [1.0, 1.0]]
    >>> round(float(f[3, 4]), 3)  # premature beat: pre-RR / running average (1+1+0.5)/3
    0.6
    """
    s = np.asarray(sample)
    if s.ndim != 1 or not (s.size == 0 or np.issubdtype(s.dtype, np.number)):
        raise ValueError(f"sample must be a 1-D array of beat positions, got shape {s.shape}")
    if isinstance(fs, bool) or not np.isfinite(fs) or fs <= 0:
        raise ValueError(f"fs must be a positive sampling rate in Hz, got {fs!r}")
    local_beats = _positive_int(local_beats, "local_beats")
    if not (0 < rr_min < rr_max):
        raise ValueError(f"need 0 < rr_min < rr_max, got rr_min={rr_min!r}, rr_max={rr_max!r}")
    if s.size < 2:
        raise ValueError(
            f"rhythm features need at least 2 beats in a record (an RR interval), got {s.size}; "
            "drop the record or load it with rhythm=False"
        )
    rr = np.diff(s.astype(np.float64)) / float(fs)
    if np.any(rr < 0):
        raise ValueError("sample: beat positions must be in time order")
    # pre[i] = RR ending at beat i (beat 0: its post-RR, the one-beat-latency fallback).
    pre_raw = np.concatenate([rr[:1], rr])
    post_raw = np.concatenate([rr, rr[-1:]])
    valid = (pre_raw >= rr_min) & (pre_raw <= rr_max)
    valid[0] = False  # beat 0's "pre-RR" is a copy of beat 1's, not a second interval
    pre = np.clip(pre_raw, rr_min, rr_max)
    post = np.clip(post_raw, rr_min, rr_max)
    # Cumulative sums over plausible intervals give running and windowed means without a loop.
    csum = np.concatenate([[0.0], np.cumsum(np.where(valid, pre_raw, 0.0))])
    ccnt = np.concatenate([[0], np.cumsum(valid)])
    i = np.arange(s.size)
    run_n = ccnt[i + 1]
    avg = np.where(run_n > 0, csum[i + 1] / np.maximum(run_n, 1), pre)
    lo = np.maximum(i + 1 - local_beats, 0)
    loc_n = ccnt[i + 1] - ccnt[lo]
    local = np.where(loc_n > 0, (csum[i + 1] - csum[lo]) / np.maximum(loc_n, 1), avg)
    return np.column_stack([pre, post, local, avg, pre / avg, post / avg, local / avg])


# ------------------------------------------------------------------------ public API
def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


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
        if cached is not None:
            return cached

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
    return {
        r: [
            sha256_file(data_dir / f)
            for f in (f"{r}.hea", *dict.fromkeys(headers[r].file_name), f"{r}.atr")
        ]
        for r in names
    }


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


def split_beats(
    beats: BeatSet,
    *,
    split: Literal["intra", "inter"] = "intra",
    test_size: float | int = 0.2,
    random_state: int | None = 0,
) -> tuple[BeatSet, BeatSet]:
    """Split beats into a training and a test set.

    Parameters
    ----------
    beats : BeatSet
        Beats to split.
    split : {"intra", "inter"}, default "intra"
        ``"intra"``: Kaggle-style beat-level stratified random split (the same
        patients on both sides; what the paper reports). ``"inter"``: de Chazal et al.
        (2004) records :data:`DS1` for training and :data:`DS2` for testing (paced
        records 102, 104, 107, 217 dropped).
    test_size : float or int, default 0.2
        Test fraction (or count) for ``"intra"``; ignored by ``"inter"``.
    random_state : int or None, default 0
        Seed of the ``"intra"`` shuffle.

    Returns
    -------
    train, test : BeatSet
        For ``"intra"`` in shuffled order; for ``"inter"`` in the input order.

    Raises
    ------
    ValueError
        Unknown ``split``, a class too small to stratify, or an empty side.

    Examples
    --------
    >>> import numpy as np
    >>> b = BeatSet(np.zeros((4, 3)), [0, 0, 1, 1], ["101", "101", "100", "100"], np.arange(4))
    >>> train, test = split_beats(b, split="inter")
    >>> sorted(set(train.record.tolist())), sorted(set(test.record.tolist()))
    (['101'], ['100'])
    """
    if not isinstance(beats, BeatSet):
        raise TypeError(f"beats must be a BeatSet, got {type(beats).__name__}")
    if split == "intra":
        from sklearn.model_selection import train_test_split

        try:
            tr, te = train_test_split(
                np.arange(len(beats)), test_size=test_size,
                random_state=random_state, stratify=beats.y,
            )  # fmt: skip
        except ValueError as exc:
            raise ValueError(
                f"cannot make a stratified split of {len(beats)} beats with "
                f"test_size={test_size!r} (class counts {beats.class_counts().tolist()}): {exc}"
            ) from exc
    elif split == "inter":
        if np.all(beats.record == "-1"):
            raise ValueError(
                "split='inter' needs record ids, but these beats have none "
                "(e.g. Kaggle CSVs): use split='intra'"
            )
        tr = np.flatnonzero(np.isin(beats.record, DS1))
        te = np.flatnonzero(np.isin(beats.record, DS2))
    else:
        raise ValueError(f"split must be 'intra' or 'inter', got {split!r}")
    for side, idx in (("training", tr), ("test", te)):
        if idx.size == 0:
            have = sorted(set(beats.record.tolist()))
            raise ValueError(
                f"split={split!r} gives an empty {side} set (records present: "
                f"{have[:10]}{' ...' if len(have) > 10 else ''})"
            )
    return beats.subset(tr), beats.subset(te)


def paper_features(
    train: BeatSet | np.ndarray,
    test: BeatSet | np.ndarray,
    n_features: int = 100,
) -> tuple[np.ndarray, np.ndarray, MinMaxScaler]:
    """Apply the paper's transform: first ``n_features`` samples, MinMax-scaled on train.

    Parameters
    ----------
    train, test : BeatSet or ndarray of shape (n, length)
        Training and test beats.
    n_features : int, default 100
        Number of leading samples to keep.

    Returns
    -------
    X_train, X_test : ndarray of shape (n, n_features)
        Scaled features (test values may leave [0, 1]).
    scaler : sklearn.preprocessing.MinMaxScaler
        The scaler fitted on the training features.

    Raises
    ------
    TypeError
        If ``n_features`` is not an int.
    ValueError
        If an input is not a non-empty (n, length) array or ``n_features`` is
        outside ``1 … length``.

    Examples
    --------
    >>> import numpy as np
    >>> Xtr, Xte, sc = paper_features(np.array([[0.0, 2.0], [1.0, 4.0]]), np.array([[0.5, 3.0]]), 2)
    >>> Xte.tolist()
    [[0.5, 0.5]]
    """
    from sklearn.preprocessing import MinMaxScaler

    Xtr = np.asarray(train.X if isinstance(train, BeatSet) else train)
    Xte = np.asarray(test.X if isinstance(test, BeatSet) else test)
    for name, X in (("train", Xtr), ("test", Xte)):
        if X.ndim != 2 or X.shape[0] == 0:
            raise ValueError(f"paper_features: {name} must be a non-empty (n, length) array")
    if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)):
        raise TypeError(f"n_features must be an int, got {n_features!r}")
    if not 1 <= n_features <= min(Xtr.shape[1], Xte.shape[1]):
        raise ValueError(
            f"n_features must lie in 1..{min(Xtr.shape[1], Xte.shape[1])}, got {n_features}"
        )
    scaler = MinMaxScaler().fit(Xtr[:, :n_features])
    return scaler.transform(Xtr[:, :n_features]), scaler.transform(Xte[:, :n_features]), scaler


def ecg_features(
    train: BeatSet,
    test: BeatSet,
    feature_set: Literal["morphology", "rhythm", "both"] = "morphology",
    *,
    n_samples: int = 100,
    rhythm_weight: float = 1.0,
) -> tuple[np.ndarray, np.ndarray, MinMaxScaler]:
    """Build one of the feature sets, MinMax-scaled on the training side only.

    Parameters
    ----------
    train, test : BeatSet
        Training and test beats; ``"rhythm"`` and ``"both"`` need ``rhythm``
        (:func:`load_mitbih_beats` with ``rhythm=True``).
    feature_set : {"morphology", "rhythm", "both"}, default "morphology"
        ``"morphology"``: the first ``n_samples`` samples of each beat (the paper's
        features); ``"rhythm"``: the 7 :data:`RHYTHM_FEATURES`; ``"both"``: the two
        side by side (morphology columns first).
    n_samples : int, default 100
        Leading samples kept by ``"morphology"`` and ``"both"``.
    rhythm_weight : float, default 1.0
        Multiplies the scaled rhythm columns, so that 7 rhythm columns are not
        drowned by 100 morphology columns in a Euclidean distance. It is folded into
        the returned scaler, so :func:`nwbound.restate_lipschitz` restates L in the
        units the classifier sees.

    Returns
    -------
    X_train, X_test : ndarray of shape (n, d), float64
        ``X_train`` lies in [0, 1] per column (times ``rhythm_weight`` for rhythm);
        test values may leave that range.
    scaler : sklearn.preprocessing.MinMaxScaler
        Fitted on the training columns, weight included: ``scaler.transform`` of the
        raw columns gives ``X_train`` / ``X_test``.

    Raises
    ------
    ValueError
        Unknown ``feature_set``, rhythm features missing, bad ``n_samples`` or
        ``rhythm_weight``, empty input.

    Examples
    --------
    >>> import numpy as np
    >>> rr = np.tile(rhythm_features([0, 300, 600, 1000], fs=360.0), (2, 1))
    >>> tr = BeatSet(np.random.default_rng(0).random((8, 5)), [0, 0, 1, 0] * 2, ["1"] * 8,
    ...              np.arange(8), rhythm=rr)
    >>> Xtr, Xte, sc = ecg_features(tr, tr, "both", n_samples=5, rhythm_weight=2.0)
    >>> Xtr.shape, float(Xtr[:, 5:].max())
    ((8, 12), 2.0)
    """
    from sklearn.preprocessing import MinMaxScaler

    if feature_set not in FEATURE_SETS:
        raise ValueError(f"feature_set must be one of {FEATURE_SETS}, got {feature_set!r}")
    for name, b in (("train", train), ("test", test)):
        if not isinstance(b, BeatSet):
            raise TypeError(f"ecg_features: {name} must be a BeatSet, got {type(b).__name__}")
        if len(b) == 0:
            raise ValueError(f"ecg_features: {name} holds no beats")
        if feature_set != "morphology" and b.rhythm is None:
            raise ValueError(
                f"feature_set={feature_set!r} needs rhythm features, but the {name} beats have "
                "none: load them with load_mitbih_beats(..., rhythm=True) (Kaggle CSVs have no "
                "beat times; use feature_set='morphology')"
            )
    if isinstance(rhythm_weight, bool) or not np.isfinite(rhythm_weight) or rhythm_weight <= 0:
        raise ValueError(f"rhythm_weight must be a positive number, got {rhythm_weight!r}")

    def columns(b: BeatSet) -> np.ndarray:
        parts = []
        if feature_set != "rhythm":
            parts.append(np.asarray(b.X[:, :n_samples], dtype=np.float64))
        if feature_set != "morphology":
            parts.append(np.asarray(b.rhythm, dtype=np.float64))
        return np.hstack(parts)

    if feature_set != "rhythm":
        n_samples = _positive_int(n_samples, "n_samples")
        if n_samples > min(train.X.shape[1], test.X.shape[1]):
            raise ValueError(
                f"n_samples must lie in 1..{min(train.X.shape[1], test.X.shape[1])}, got {n_samples}"
            )
    raw_tr, raw_te = columns(train), columns(test)
    scaler = MinMaxScaler().fit(raw_tr)
    if feature_set != "morphology" and rhythm_weight != 1.0:
        w = np.ones(raw_tr.shape[1])
        w[-len(RHYTHM_FEATURES):] = float(rhythm_weight)
        scaler.scale_ = scaler.scale_ * w
        scaler.min_ = scaler.min_ * w
    return scaler.transform(raw_tr), scaler.transform(raw_te), scaler
