"""Public kernel statistics: merging shards, and the ranking of ``bandwidth="auto"``.

:class:`~nwbound.estimators.KernelStatistics` (defined once, in :mod:`nwbound.engine`, and
re-exported here and as ``nwbound.gpu.KernelStatistics``) is what
:meth:`~nwbound.NadarayaWatsonClassifier.kernel_statistics` returns, what shards of a training set
add up with :meth:`~nwbound.estimators.KernelStatistics.merge` (:func:`merge_statistics`), and what
:meth:`~nwbound.NadarayaWatsonClassifier.interval_from_statistics` turns into a
:class:`~nwbound.PredictionInterval` for one or several bound settings. :class:`BandwidthRanking`
holds what ranks the grid of ``bandwidth="auto"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ._statistics import KernelStatistics

__all__ = ["BandwidthRanking", "KernelStatistics", "merge_statistics"]


def merge_statistics(parts: Sequence[KernelStatistics]) -> KernelStatistics:
    """Merge the statistics of the same queries over disjoint training shards.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.estimators import merge_statistics
    >>> X = np.array([[0.0], [0.1], [0.2], [1.0]]); y = np.array([0, 0, 1, 1])
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.5, lipschitz=1.0).fit(X, y)
    >>> s = clf.kernel_statistics([[0.05]])
    >>> merge_statistics([s, s, s]).kappa.round(2)
    array([[8.67]])
    """
    parts = list(parts)
    if not parts:
        raise ValueError("merge_statistics needs at least one KernelStatistics.")
    out = parts[0]
    for part in parts[1:]:
        out = out.merge(part)
    return out


@dataclass(frozen=True)
class BandwidthRanking:
    """What ranks the grid of ``bandwidth="auto"``: κ, ``Σ a_i²`` and ``Σ a_i d_i`` per query and bandwidth.

    From :meth:`~nwbound.NadarayaWatsonClassifier.bandwidth_ranking` (for polynomial kernels one pass of
    distance moments, whatever the grid's size); shards of a training set add up with
    :meth:`merge`, and :meth:`~nwbound.NadarayaWatsonClassifier.choose_bandwidths` turns it into each
    query's bandwidth. Only for choosing: the bounds are then computed from exact statistics at
    the chosen bandwidth (``kernel_statistics(X, bandwidth_index=...)``).

    Parameters
    ----------
    kappa, sq_sum, dist_sum : ndarray of shape (n, G)
    bandwidth : ndarray of shape (1, G)

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> X = np.linspace(0, 1, 50)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth="auto", bandwidth_grid=[0.1, 0.3], lipschitz=1.0).fit(X, y)
    >>> ranking = clf.bandwidth_ranking([[0.2]])
    >>> ranking.kappa.round(2).tolist(), ranking.merge(ranking).kappa.round(2).tolist()
    ([[6.53, 18.42]], [[13.05, 36.85]])
    """

    kappa: np.ndarray
    sq_sum: np.ndarray
    dist_sum: np.ndarray
    bandwidth: np.ndarray

    @property
    def n_queries(self) -> int:
        """Number of queries ``n``."""
        return self.kappa.shape[0]

    def merge(self, other: "BandwidthRanking") -> "BandwidthRanking":
        """The ranking of the same queries over the union of two disjoint training sets (sums add).

        Raises
        ------
        ValueError
            If the parts describe different queries or bandwidths.
        """
        if self.kappa.shape != other.kappa.shape or not np.array_equal(self.bandwidth, other.bandwidth):
            raise ValueError("Cannot merge bandwidth rankings of different queries or bandwidth grids.")
        return BandwidthRanking(self.kappa + other.kappa, self.sq_sum + other.sq_sum,
                                self.dist_sum + other.dist_sum, self.bandwidth)
