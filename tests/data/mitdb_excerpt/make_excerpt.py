"""Regenerate this excerpt from the full PhysioNet mitdb 1.0.0 records.

Usage (from the repository root)::

    python tests/data/mitdb_excerpt/make_excerpt.py /path/to/mitdb

Cuts the first ``MINUTES`` minutes of each record in ``RECORDS_KEPT`` and writes them
back in WFDB format 212 with the original gains, baselines and signal names, plus the
``atr`` annotations that fall inside the cut.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import wfdb

RECORDS_KEPT = ("100", "104", "114", "208", "232")
MINUTES = 2


def main(src: str) -> None:
    out = Path(__file__).resolve().parent
    for name in RECORDS_KEPT:
        n = int(MINUTES * 60 * 360)
        # Read the cut as digital samples and write it back through the Record object, so
        # every header field (gain, baseline, ADC resolution/zero, names) is kept; only
        # the length, the checksums and the first values change with the cut.
        rec = wfdb.rdrecord(str(Path(src) / name), physical=False, sampto=n)
        ann = wfdb.rdann(str(Path(src) / name), "atr", sampto=n)
        d = rec.d_signal.astype(np.int64)
        rec.checksum = [int(v) for v in (d.sum(axis=0) + 32768) % 65536 - 32768]
        rec.init_value = [int(v) for v in d[0]]
        rec.comments = rec.comments + [
            f"excerpt: first {MINUTES} min of PhysioNet mitdb 1.0.0 record {name}"
        ]
        rec.wrsamp(write_dir=str(out))
        keep = np.arange(ann.sample.size)
        aux = [ann.aux_note[i].rstrip("\x00") for i in keep]
        wfdb.wrann(
            name, "atr", ann.sample[keep], symbol=[ann.symbol[i] for i in keep],
            subtype=ann.subtype[keep], chan=ann.chan[keep], num=ann.num[keep],
            aux_note=aux, fs=rec.fs, write_dir=str(out),
        )  # fmt: skip
    (out / "RECORDS").write_text("\n".join(RECORDS_KEPT) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/mitdb")
