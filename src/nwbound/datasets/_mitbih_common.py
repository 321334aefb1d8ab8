"""MIT-BIH constants (AAMI classes, record lists, the DS1/DS2 split), :class:`BeatSet` and
:func:`aami_label`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


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


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)
