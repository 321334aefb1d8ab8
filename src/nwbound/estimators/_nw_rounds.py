"""The pieces of ``predict_interval`` that a sharded fit runs one at a time, as public methods.

:meth:`kernel_statistics` (statistics that add up over training shards), :meth:`bandwidth_ranking`,
:meth:`ranks_first` and :meth:`choose_bandwidths` (``bandwidth="auto"``'s ranking rounds). Private to
:mod:`nwbound.estimators`: :class:`~nwbound.NadarayaWatsonClassifier` inherits them; each checks its
input and calls the step of the classifier's own route (``_statistics``, ``_ranking``, ``_choices``).
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._threads import blas_limited
from .._validation import check_int_range
from ..engine.host._backend import rows_by_bandwidth
from ._bandwidth import resolve_ranking_fraction
from ..engine import BandwidthRanking, KernelStatistics


class _Rounds:
    """Public statistics and ranking rounds of :class:`~nwbound.NadarayaWatsonClassifier`."""


    @blas_limited
    def kernel_statistics(self, X, bounds=None, bandwidth_index=None) -> KernelStatistics:
        """Per-query kernel statistics (κ, ΣK², ΣK·d, class sums, …) for every candidate bandwidth.

        One pass over the training set (or the k nearest neighbours) computes
        everything the bound settings in ``bounds`` need; statistics of the same
        queries over disjoint training shards add up with
        :meth:`~nwbound.estimators.KernelStatistics.merge`, and :meth:`interval_from_statistics`
        turns them into intervals.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        bounds : None, mapping or list, default=None
            The bound settings the statistics are for (see :meth:`predict_interval`).
        bandwidth_index : array-like of int, shape (n_queries,), default=None
            None: every bandwidth of ``bandwidths_``. Otherwise the one column of
            ``bandwidths_`` each query uses (e.g. from :meth:`choose_bandwidths`): one
            exact pass per distinct bandwidth, ``G = 1``.

        Returns
        -------
        KernelStatistics

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
        >>> clf.kernel_statistics([[0.1], [0.9]]).class_sums.shape  # (queries, bandwidths, classes)
        (2, 1, 2)
        """
        check_is_fitted(self)
        self._no_cross_fit("kernel_statistics")
        X = self._validate_queries(X)
        specs = [s for s in self._resolve_bounds(bounds).values()] if (bounds is not None or self._own_spec() is not None) else []
        if bandwidth_index is None:
            return self._statistics(X, specs, need_bounds=True)
        choice = self._checked_bandwidth_index(bandwidth_index, X.shape[0])
        rows, used = rows_by_bandwidth(choice)
        parts = [self._statistics(X[r], specs, need_bounds=True, bandwidths=self.bandwidths_[g : g + 1])
                 for g, r in zip(used, rows)]
        if not parts:
            return self._statistics(X, specs, need_bounds=True, bandwidths=self.bandwidths_[:1])
        return KernelStatistics.concatenate(parts).take_rows(np.argsort(np.concatenate(rows), kind="stable"))

    def _checked_bandwidth_index(self, bandwidth_index, n_queries: int) -> np.ndarray:
        index = np.asarray(bandwidth_index)
        n_grid = self.bandwidths_.shape[0]
        if (index.shape != (n_queries,) or index.dtype.kind not in "iu"
                or (index.size and (index.min() < 0 or index.max() >= n_grid))):
            raise ValueError(
                f"bandwidth_index must hold one integer in [0, {n_grid - 1}] per query ({n_queries}), "
                f"got shape {index.shape} and dtype {index.dtype}: pass choose_bandwidths(...)'s output."
            )
        return index.astype(np.intp)

    @blas_limited
    def bandwidth_ranking(self, X, *, fraction: float | None = None, row_offset: int = 0) -> BandwidthRanking:
        """What ranks ``bandwidths_`` for each query: κ, ``Σ a_i²`` and ``Σ a_i d_i`` (label-free).

        The regular classifier with a polynomial kernel (Epanechnikov, quartic, triweight,
        boxcar) gets them from one pass of distance moments whatever the grid's size, over the
        training rows ``ranking_sample_rows`` keeps (each with
        probability ``fraction``, by row number), each sum divided by ``fraction`` (an unbiased
        estimate of the whole set's). Other kernels on the host rank from every grid bandwidth's
        statistics over the same sample when ``fraction < 1``; otherwise (and for the localized
        classifier and ``device=``) the ranking is the exhaustive statistics of every row. Shards
        add up with :meth:`~nwbound.estimators.BandwidthRanking.merge`; :meth:`choose_bandwidths` turns a ranking into
        each query's bandwidth.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        fraction : float in (0, 1] or None, default=None
            None: ``ranking_fraction_``. A shard passes the whole training set's.
        row_offset : int, default=0
            Number of this model's first training row in the whole training set (a shard's
            offset), so that shards sample the rows the whole set samples.

        Returns
        -------
        BandwidthRanking

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.random((300, 1)); y = (rng.random(300) < X[:, 0]).astype(int)
        >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=1.0).fit(X, y)
        >>> clf.bandwidth_ranking([[0.5]]).kappa.shape  # (queries, grid bandwidths)
        (1, 16)
        """
        check_is_fitted(self)
        self._no_cross_fit("bandwidth_ranking")
        fraction = self.ranking_fraction_ if fraction is None else resolve_ranking_fraction(fraction, self.n_samples_fit_)
        check_int_range(row_offset, "row_offset", 0, None, hint="A shard's first row number in the whole training set.")
        return self._ranking(self._validate_queries(X), fraction, int(row_offset))

    def ranks_first(self, bounds=None, fraction: float | None = None) -> bool:
        """Whether ``bandwidth="auto"`` ranks the grid before computing exact statistics.

        True for the regular classifier on the host with a grid of several bandwidths and
        settings that need no kernel tail mass, when the ranking is cheaper than the
        statistics of every bandwidth: a polynomial kernel (:attr:`ranks_from_moments_`) or a
        ranking sample (``fraction < 1``). :meth:`predict_interval` then runs
        :meth:`bandwidth_ranking`, :meth:`choose_bandwidths` and the exact statistics at each
        query's chosen bandwidth (the sharded Dask estimator runs these rounds too); otherwise one
        exhaustive pass computes every statistic of every bandwidth.

        Parameters
        ----------
        bounds : None, mapping or list, default=None
            As in :meth:`predict_interval`.
        fraction : float or None, default=None
            The ranking sample's fraction (None: ``ranking_fraction_``).

        Returns
        -------
        bool

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth="auto", kernel="tricube", lipschitz=1.0).fit(X, y)
        >>> clf.ranks_first(), clf.ranks_first(fraction=0.5)
        (False, True)
        """
        check_is_fitted(self)
        self._no_cross_fit("ranks_first")
        return self._engine().ranks_first(self._resolve_bounds(bounds),
                                          self.ranking_fraction_ if fraction is None else fraction)

    def choose_bandwidths(self, ranking: BandwidthRanking, bounds=None):
        """Each query's bandwidth (a column of ``bandwidths_``): the one of least label-free ε.

        Parameters
        ----------
        ranking : BandwidthRanking
            From :meth:`bandwidth_ranking` (possibly merged over training shards).
        bounds : None, mapping or list, default=None
            None: this estimator's own bound setting; otherwise as in :meth:`predict_interval`.

        Returns
        -------
        ndarray of shape (n_queries,)
            Or a dict of name to such arrays when ``bounds`` is given.

        Raises
        ------
        ValueError
            If a setting needs the kernel's tail mass (``bound="paper"`` with an infinite-support
            kernel), which a ranking does not hold: use :meth:`kernel_statistics` instead.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.linspace(0, 1, 200)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth="auto", bandwidth_grid=[0.02, 0.1, 0.4], lipschitz=0.2).fit(X, y)
        >>> clf.bandwidths_[clf.choose_bandwidths(clf.bandwidth_ranking([[0.5]]))]
        array([0.4])
        """
        check_is_fitted(self)
        self._no_cross_fit("choose_bandwidths")
        specs = self._resolve_bounds(bounds)
        if not np.array_equal(np.asarray(ranking.bandwidth).ravel(), self.bandwidths_):
            raise ValueError("The ranking was computed for another bandwidth grid than this estimator's bandwidths_.")
        out = self._choices(ranking, specs)
        return out[None] if bounds is None else out
