"""Reading MIT-BIH records (WFDB), cutting them into beats and their rhythm features."""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from ._mitbih_common import (
    LOCAL_RR_BEATS,
    MITDB_RECORDS,
    RR_MAX_S,
    RR_MIN_S,
    _BYTES_PER_SAMPLE,
    _GET_DATA_HINT,
    _positive_int,
    aami_label,
)


# ------------------------------------------------------------------ record handling
def _wfdb() -> Any:
    try:
        import wfdb
    except ImportError as exc:  # pragma: no cover - depends on the environment
        from ..utils import install_hint

        raise ImportError(
            f"reading MIT-BIH records needs the 'wfdb' package: {install_hint('ecg')}"
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
