"""The estimator's default model on a cluster: the rows' split, the learned space and L at the client.

:class:`~nwbound.NadarayaWatsonClassifier` with ``metric="auto"`` and ``lipschitz="auto"`` (the
defaults) splits its training rows by their labels alone (:func:`~nwbound.spaces.split_rows`,
:func:`~nwbound.spaces.cross_fit_layouts`): the metric share fits the map (and, split again, holds
the check rows of L), the NW share is mapped and goes into the kernel sums. The labels are n
values, so the client splits exactly as the estimator does; the metric share's rows are gathered
at the client (``metric_fraction`` of the rows), where the map is fitted on the very rows, in the
very order, the in-memory fit uses. The NW share is mapped on the workers, chunk by chunk.

Only public pieces of :mod:`nwbound.spaces` are used: the seed of the split
(:func:`~nwbound.spaces.split_seed`), when ``fit`` cross-fits (:func:`~nwbound.spaces.auto_cross_fits`,
read from a parameter mapping by :func:`uses_cross_fit`) and the NW share's weights
(:func:`~nwbound.spaces.nw_share_weights`) are the estimator's own rules.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..spaces import auto_cross_fits, check_cross_fit_metric, check_fraction, chooses_lipschitz, cross_fit_layouts, metric_kind, split_rows, split_seed

__all__ = ["uses_cross_fit", "row_layouts"]


def uses_cross_fit(params: Mapping[str, Any], n_samples: int) -> bool:
    """Whether the in-memory ``fit`` of these parameters on ``n_samples`` rows cross-fits
    (:func:`nwbound.spaces.auto_cross_fits`, the estimator's rule).

    Parameters
    ----------
    params : mapping
        NadarayaWatsonClassifier parameters (``get_params()``: every name, no default restated here).
    n_samples : int
        Training rows.

    Returns
    -------
    bool

    Examples
    --------
    >>> from nwbound.dask._space import uses_cross_fit
    >>> auto = {"cross_fit": "auto", "metric": "auto", "metric_fraction": 0.4}
    >>> uses_cross_fit(auto, 2_000), uses_cross_fit(auto, 1_000_000)
    (True, False)
    """
    return auto_cross_fits(params["cross_fit"], params["metric"], params["metric_fraction"], n_samples)


def row_layouts(params: Mapping[str, Any], labels: np.ndarray, groups: np.ndarray | None,
                random_state: Any) -> tuple[list[tuple[np.ndarray, np.ndarray] | None], int | None]:
    """The ``(metric_rows, nw_rows)`` of each model the in-memory fit makes; ``[None]`` when it
    splits nothing (``metric=None`` with a numeric ``lipschitz`` or a ``margin``).

    Parameters
    ----------
    params : mapping
        NadarayaWatsonClassifier parameters (``metric`` None or ``"auto"``).
    labels : ndarray of int
        Class indices of the training rows.
    groups : ndarray or None
        Group labels, kept whole on one side of every split.
    random_state : None, int or numpy.random.RandomState
        The estimator's ``random_state``: the split's seed is drawn from it
        (:func:`~nwbound.spaces.split_seed`) only where the rows are split, as in memory.

    Returns
    -------
    layouts : list
        One layout per model: several when cross-fitting (:func:`uses_cross_fit`).
    seed : int or None
        The seed the layouts were drawn with (None: nothing split, nothing drawn).

    Raises
    ------
    ValueError
        ``cross_fit`` set with ``metric=None`` (nothing to cross-fit), naming the fix.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.dask._space import row_layouts
    >>> labels = np.repeat([0, 1], 50)
    >>> params = {"metric": "auto", "lipschitz": "auto", "margin": None, "cross_fit": "auto", "metric_fraction": 0.4}
    >>> layouts, seed = row_layouts(params, labels, None, 0)
    >>> [(m.size, n.size) for m, n in layouts], seed
    ([(40, 60), (60, 40)], 0)
    >>> row_layouts({**params, "metric": None, "lipschitz": 1.0, "cross_fit": False}, labels, None, 0)
    ([None], None)
    """
    kind = metric_kind(params["metric"])
    fraction = check_fraction(params["metric_fraction"])
    if uses_cross_fit(params, labels.shape[0]):
        check_cross_fit_metric(params["cross_fit"], params["metric"])
        seed = split_seed(random_state)
        return cross_fit_layouts(labels, params["cross_fit"], fraction, groups=groups, random_state=seed), seed
    if kind is None and not chooses_lipschitz(params["lipschitz"], params["margin"]):
        return [None], None
    seed = split_seed(random_state)
    return [split_rows(labels, fraction, groups=groups, random_state=seed)], seed
