"""What a caller that only counts certified rows needs of a setting's intervals (the held-out check
of :mod:`nwbound.lipschitz_check` at the model's own δ): ``p̂`` and the certified mask."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CertifiedRows"]


@dataclass(frozen=True)
class CertifiedRows:
    """``proba`` and ``certified`` of a :class:`~nwbound.PredictionInterval`, without its ends.

    Produced by the estimators' ``_interval_settings`` for the settings named ``certified_only``:
    the same two arrays as the full intervals give, bit for bit, at a fraction of the cost of
    the band-Chernoff ends (:meth:`nwbound.bounds.BoundSpec.certified`).

    Attributes
    ----------
    proba : ndarray of shape (n, C)
        ``p̂``; its argmax is the predicted class.
    certified : ndarray of bool, shape (n,)
        The predicted class's lower end lies above every other class's upper end, and κ > 0.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.estimators._certified import CertifiedRows
    >>> rows = CertifiedRows(proba=np.array([[0.9, 0.1], [0.4, 0.6]]), certified=np.array([True, False]))
    >>> CertifiedRows.concatenate([rows, rows]).take(np.array([3, 0])).certified.tolist()
    [False, True]
    """

    proba: np.ndarray
    certified: np.ndarray

    @classmethod
    def of(cls, interval: Any) -> "CertifiedRows":
        """The two arrays of a :class:`~nwbound.PredictionInterval` (NumPy)."""
        return cls(proba=np.asarray(interval.proba), certified=np.asarray(interval.certified, dtype=bool))

    @classmethod
    def concatenate(cls, parts: "list[CertifiedRows]") -> "CertifiedRows":
        """Consecutive blocks of queries, as one."""
        return cls(proba=np.concatenate([p.proba for p in parts]),
                   certified=np.concatenate([p.certified for p in parts]))

    def take(self, rows: np.ndarray) -> "CertifiedRows":
        """The queries ``rows``, in that order."""
        return CertifiedRows(proba=self.proba[rows], certified=self.certified[rows])

    def __len__(self) -> int:
        return int(self.certified.shape[0])
