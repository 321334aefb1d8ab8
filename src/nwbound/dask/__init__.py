"""Dask support: predictions over chunked query arrays, and a sharded training set.

Needs the ``dask`` extra (``dask[array]`` and ``distributed``).

* :func:`predict`, :func:`predict_proba`, :func:`predict_interval` run a fitted
  classifier over a :class:`dask.array.Array` of queries chunked along rows.
  The model is sent to each worker once. ``predict_interval`` returns the
  estimator's :class:`~nwbound.PredictionInterval`, its fields lazy Dask arrays;
  ``.compute()`` computes them all in one pass.
* :class:`ShardedNadarayaWatson` / :func:`sharded_predict_interval`: the
  Nadaraya-Watson classifier over a training set split into row shards, for
  training sets too large for one worker; its parameters and defaults are the
  estimator's, so ``ShardedNadarayaWatson().fit(X_dask, y)`` is the library's
  default model (learned space, L chosen on held-out rows, cross-fitting), the
  map and L fitted at the client on the metric share. Built on the estimators' public
  API only: each shard is a :class:`~nwbound.NadarayaWatsonClassifier`
  restored with ``set_fitted_state`` (its rows, the global classes, prior,
  box and bandwidths); its ``kernel_statistics`` are merged over shards
  (:func:`~nwbound.estimators.merge_statistics`) and turned into intervals by
  ``interval_from_statistics``; localized neighbour lists are merged exactly.
  Results equal the single-machine ones up to rounding.

Each task limits BLAS/OpenMP threads with threadpoolctl (``threads_per_task``,
default 1) so that concurrent tasks do not oversubscribe a worker's cores. The
limit is process-wide: with several threads per worker, set it with the
worker's environment (``OMP_NUM_THREADS``) as well. A task that raises makes
``compute()`` raise; rows are never dropped silently.

Examples
--------
>>> import dask.array as da
>>> from nwbound import NadarayaWatsonClassifier
>>> from nwbound import dask as nwdask
>>> model = NadarayaWatsonClassifier(metric=None, bandwidth=0.5, lipschitz=1.0).fit(X, y)  # doctest: +SKIP
>>> result = nwdask.predict_interval(model, da.from_array(X_big, chunks=(10_000, -1)))  # doctest: +SKIP
>>> iv = result.compute()  # every field at once: iv.lower, iv.certified, ...  # doctest: +SKIP
"""

from ._predict import predict, predict_interval, predict_proba
from ._sharded import ShardedNadarayaWatson, sharded_predict_interval

__all__ = ["predict", "predict_proba", "predict_interval", "ShardedNadarayaWatson", "sharded_predict_interval"]
