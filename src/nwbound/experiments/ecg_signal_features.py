"""Beat morphology read from the raw MIT-BIH signal, for the patient-adaptive split.

The Kaggle-style morphology of :func:`nwbound.datasets.load_mitbih_beats` starts
*at* the R peak and is normalised to [0, 1] per 10 s window: it has no P wave
(the mark of a supraventricular beat) and its amplitudes move with every window.
:func:`beat_windows` cuts a fixed window around each R peak instead, from 250 ms
before it (P wave and PR segment) to 450 ms after it (QRS and T wave), from the
lead with the baseline wander removed by two median filters of 200 ms and 600 ms
(de Chazal, O'Dwyer & Reilly 2004), resampled to 90 Hz (every 4th sample at
360 Hz), and divides it by the record's own median R-peak amplitude over a
reference stretch (the patient's first minutes: the labelled local beats of the
adaptive protocol, so nothing after them is used for the scale).

:func:`signal_morphology` does this for every record of a
:class:`~nwbound.datasets.BeatSet`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["BEFORE_S", "AFTER_S", "RATE_HZ", "beat_windows", "remove_baseline", "signal_morphology"]

#: Seconds of signal kept before each R peak (P wave, PR segment).
BEFORE_S = 0.25
#: Seconds of signal kept after each R peak (QRS, ST segment, T wave).
AFTER_S = 0.45
#: Sampling rate of the kept window (Hz); 90 Hz is every 4th sample at 360 Hz.
RATE_HZ = 90.0


def _positive(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(value)) or value <= 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def remove_baseline(signal: Any, fs: float) -> np.ndarray:
    """The signal minus its baseline wander (median filters of 200 ms, then 600 ms).

    Parameters
    ----------
    signal : array-like of float, shape (n,)
        One lead, in physical units.
    fs : float
        Sampling rate (Hz).

    Returns
    -------
    ndarray of shape (n,), float64

    Raises
    ------
    ValueError
        ``signal`` not 1-D, empty or not finite; ``fs`` not positive.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.arange(3600) / 360.0
    >>> remove_baseline(0.5 + 0.1 * t, 360.0)[1000:1003].round(6).tolist()  # slow drift removed
    [0.0, 0.0, 0.0]
    """
    from scipy.ndimage import median_filter

    fs = _positive(fs, "fs")
    s = np.asarray(signal, dtype=np.float64)
    if s.ndim != 1 or s.size == 0 or not np.all(np.isfinite(s)):
        raise ValueError(f"signal must be a non-empty finite 1-D array, got shape {s.shape}")
    odd = lambda seconds: max(1, int(round(seconds * fs)) // 2 * 2 + 1)  # noqa: E731
    base = median_filter(median_filter(s, odd(0.2), mode="nearest"), odd(0.6), mode="nearest")
    return s - base


def beat_windows(signal: Any, sample: Any, fs: float, *, reference: Any = None, before: float = BEFORE_S,
                 after: float = AFTER_S, rate: float = RATE_HZ) -> np.ndarray:
    """Windows of one record's (baseline-free) signal around its beats, in units of its R amplitude.

    Parameters
    ----------
    signal : array-like of float, shape (n_samples,)
        One lead with the baseline removed (:func:`remove_baseline`).
    sample : array-like of int, shape (n,)
        R-peak positions in samples.
    fs : float
        Sampling rate of ``signal`` (Hz).
    reference : array-like of bool, shape (n,), optional
        The beats whose median ``|signal|`` at the R peak is the amplitude unit
        (the patient's local beats); default every beat.
    before, after : float, default 0.25, 0.45
        Seconds kept before and after the R peak. Positions outside the
        signal repeat its first or last value.
    rate : float, default 90.0
        Sampling rate of the window (Hz): every ``round(fs / rate)``-th sample.

    Returns
    -------
    ndarray of shape (n, n_window), float64
        ``signal`` around each beat divided by the amplitude unit.

    Raises
    ------
    ValueError
        Bad shapes, positions outside the signal, an empty reference, a flat
        reference (amplitude unit 0) or non-positive ``before``/``after``/``rate``.

    Examples
    --------
    >>> import numpy as np
    >>> sig = np.zeros(100); sig[[20, 60]] = [2.0, 4.0]
    >>> w = beat_windows(sig, [20, 60], 10.0, before=0.2, after=0.3, rate=10.0)
    >>> w.tolist()  # unit: median R amplitude (3.0)
    [[0.0, 0.0, 0.6666666666666666, 0.0, 0.0], [0.0, 0.0, 1.3333333333333333, 0.0, 0.0]]
    >>> float(beat_windows(sig, [20, 60], 10.0, reference=[True, False], before=0.2, after=0.3, rate=10.0)[1, 2])
    2.0
    """
    fs = _positive(fs, "fs")
    before, after, rate = _positive(before, "before"), _positive(after, "after"), _positive(rate, "rate")
    s = np.asarray(signal, dtype=np.float64)
    pos = np.asarray(sample)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"signal must be a non-empty 1-D array, got shape {s.shape}")
    if pos.ndim != 1 or not np.issubdtype(pos.dtype, np.integer):
        raise ValueError(f"sample must be a 1-D array of integer positions, got shape {pos.shape}")
    if pos.size and (pos.min() < 0 or pos.max() >= s.size):
        raise ValueError(f"sample holds positions outside the signal (0..{s.size - 1})")
    ref = np.ones(pos.shape, dtype=bool) if reference is None else np.asarray(reference, dtype=bool)
    if ref.shape != pos.shape:
        raise ValueError(f"reference must have shape {pos.shape} like sample, got {ref.shape}")
    if pos.size and not ref.any():
        raise ValueError("reference selects no beat: the amplitude unit needs at least one")
    step = max(1, int(round(fs / rate)))
    offsets = np.arange(-int(round(before * fs)), int(round(after * fs)), step)
    if pos.size == 0:
        return np.zeros((0, offsets.size))
    unit = float(np.median(np.abs(s[pos[ref]])))
    if not unit > 0:
        raise ValueError("the reference beats have zero R amplitude: no amplitude unit")
    idx = np.clip(pos[:, None] + offsets[None, :], 0, s.size - 1)
    return s[idx] / unit


def signal_morphology(beats: Any, data_dir: str | Path, *, reference: Any = None, before: float = BEFORE_S,
                      after: float = AFTER_S, rate: float = RATE_HZ) -> np.ndarray:
    """:func:`beat_windows` of every beat of a BeatSet, record by record, from the raw records.

    Parameters
    ----------
    beats : BeatSet
        Beats with record ids and sample positions (any order).
    data_dir : path-like
        The MIT-BIH records (lead MLII, else the first channel, as
        :func:`nwbound.datasets.mitbih.load_mitbih_signal` reads them).
    reference : array-like of bool, shape (n,), optional
        Beats whose R amplitude sets each record's unit (the adaptive split passes
        every record's first minutes); default every beat of the record.
    before, after, rate : float
        See :func:`beat_windows`.

    Returns
    -------
    ndarray of shape (n, n_window), float32
        Rows in the order of ``beats``.

    Raises
    ------
    ValueError
        A record of ``beats`` whose reference selects no beat, or what
        :func:`beat_windows` / the reader raise.
    OSError
        A record file missing from ``data_dir``.

    Examples
    --------
    >>> from pathlib import Path
    >>> from nwbound.datasets import load_mitbih_beats
    >>> d = Path("tests/data/mitdb_excerpt")
    >>> b = load_mitbih_beats(d, records=["100"], progress=False)
    >>> signal_morphology(b, d).shape[1]  # 0.7 s at 90 Hz
    63
    """
    from ..datasets.mitbih import load_mitbih_signal

    ref = np.ones(len(beats), dtype=bool) if reference is None else np.asarray(reference, dtype=bool)
    if ref.shape != (len(beats),):
        raise ValueError(f"reference must have shape ({len(beats)},) like the beats, got {ref.shape}")
    out: np.ndarray | None = None
    for rec in np.unique(beats.record):  # one pass per record (≤ 48), not per beat
        idx = np.flatnonzero(beats.record == rec)
        if not ref[idx].any():
            raise ValueError(f"record {rec}: no reference beat to set its amplitude unit")
        signal, fs, _ = load_mitbih_signal(data_dir, str(rec))
        w = beat_windows(remove_baseline(signal, fs), beats.sample[idx], fs, reference=ref[idx], before=before,
                         after=after, rate=rate)
        if out is None:
            out = np.zeros((len(beats), w.shape[1]), dtype=np.float32)
        out[idx] = w
    return np.zeros((0, 0), dtype=np.float32) if out is None else out
