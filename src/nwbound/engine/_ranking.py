"""Public kernel statistics: merging shards, and the ranking of ``bandwidth="auto"``.

:class:`~nwbound.estimators.KernelStatistics` (defined once, in :mod:`nwbound.engine`, and
re-exported here and as ``nwbound.gpu.KernelStatistics``) is what
:meth:`~nwbound.NadarayaWatsonClassifier.kernel_statistics` returns, what shards of a training set
add up with :meth:`~nwbound.estimators.KernelStatistics.merge` (:func:`merge_statistics`), and what
:meth:`~nwbound.NadarayaWatsonClassifier.interval_from_statistics` turns into a
:class:`~nwbound.PredictionInterval` for one or several bound settings. :class:`BandwidthRanking`
holds what ranks the grid of ``bandwidth="auto"``.

The ranked choice, one copy for every backend (written against the arrays' namespace, so the
device's tensors stay where they are): a backend computes the sums of the grid on its ranking rows
(:meth:`BandwidthRanking.from_sums` restates them per training row, in the input's units); then
:func:`choose_bandwidths` takes each query's λ of least label-free ε (``BoundSpec.least_epsilon``
of the setting's parts), :func:`choice_groups` one choice per choosing setting, and
:func:`rows_by_choice` the queries of each chosen λ.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .._namespace import array_namespace_of, compat
from ._statistics import KernelStatistics

__all__ = ["BandwidthRanking", "KernelStatistics", "choice_groups", "choose_bandwidths", "merge_statistics",
           "rows_by_choice"]


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
    distance moments, whatever the grid's size: the host's
    :func:`~nwbound.engine.host._sums.dense_moment_sums` returns one in the engine's units, which
    :meth:`from_sums` restates in the input's); shards of a training set add up with
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

    @classmethod
    def from_sums(cls, kappa: Any, sq_sum: Any, dist_sum: Any, bandwidth: np.ndarray, *, fraction: float = 1.0,
                  weight_unit: float = 1.0, feature_unit: float = 1.0) -> "BandwidthRanking":
        """The ranking from a backend's sums over its ranking rows (NumPy or device arrays, kept there).

        The sums are restated in the input's units (weights from ``weight_unit``, distances from the
        ``feature_unit``) and per training row (divided by the sample's ``fraction``): ε's parts are
        ratios of them, so this scaling changes no choice beyond rounding. Factors of 1 are exact.

        Parameters
        ----------
        kappa, sq_sum, dist_sum : array of shape (n, G)
            κ, ``Σ a_i²`` and ``Σ a_i d_i`` of each query at each bandwidth, on the ranking rows.
        bandwidth : ndarray of shape (1, G)
            The grid, in the input's units.
        fraction : float, default=1.0
            The share of training rows summed (:meth:`~nwbound.engine.host._sums.TrainingSet.sample`).
        weight_unit, feature_unit : float, default=1.0
            The units the sums were computed in.

        Examples
        --------
        >>> import numpy as np
        >>> r = BandwidthRanking.from_sums(np.array([[2.0]]), np.array([[1.0]]), np.array([[0.5]]),
        ...                                np.array([[0.4]]), fraction=0.5, feature_unit=2.0)
        >>> r.kappa.tolist(), r.sq_sum.tolist(), r.dist_sum.tolist()
        ([[4.0]], [[2.0]], [[2.0]])
        """
        return cls(kappa * weight_unit / fraction, sq_sum * weight_unit * weight_unit / fraction,
                   dist_sum * (weight_unit * feature_unit) / fraction, bandwidth)

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


def choose_bandwidths(ranking: BandwidthRanking, specs: dict) -> dict:
    """Per setting, each query's column of least label-free ε: the rule of ``bandwidth="auto"``.

    The setting's choosing parts (``spec.for_choice().parts``) of the ranking's sums, then
    ``least_epsilon`` (ties and all-infinite rows by its documented rule), in the ranking's
    namespace: device rankings give device choices, with no read.

    Parameters
    ----------
    ranking : BandwidthRanking
    specs : dict of name to BoundSpec

    Returns
    -------
    dict of name to int array of shape (n,)

    Raises
    ------
    ValueError
        For a setting that needs the kernel's tail mass (a ranking does not hold it).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.bounds import BoundSpec
    >>> r = BandwidthRanking(np.array([[1.0, 40.0]]), np.array([[1.0, 40.0]]), np.array([[0.1, 20.0]]),
    ...                      np.array([[0.1, 0.5]]))
    >>> choose_bandwidths(r, {None: BoundSpec(form="hoeffding", beta=1.0, delta_prime=0.05)})
    {None: array([1])}
    """
    out = {}
    for name, spec in specs.items():
        if spec.needs_tail_mass:
            raise ValueError(
                "This bound setting needs the kernel's tail mass, which a BandwidthRanking does not hold; "
                "use interval_from_statistics(kernel_statistics(X)) for it."
            )
        choice = spec.for_choice()
        out[name] = choice.least_epsilon(*choice.parts(ranking.kappa, ranking.sq_sum, ranking.dist_sum,
                                                       ranking.bandwidth))
    return out


def _choosing_key(spec: Any) -> tuple:
    """What a setting's choice depends on: its form's ``parts`` rule and the choosing setting's fields
    (``hoeffding`` and ``chernoff`` share their parts, so they choose alike)."""
    choice = spec.for_choice()
    fields = tuple((f.name, getattr(choice, f.name)) for f in dataclasses.fields(choice) if f.name != "form")
    fields = tuple((k, ("array", v.shape, v.tobytes()) if isinstance(v, np.ndarray) else v) for k, v in fields)
    return (type(choice.bound_form).parts,) + fields


def choice_groups(specs: dict, ranking: BandwidthRanking) -> list[tuple[Any, list]]:
    """The settings grouped by equal choices: ``[(choice, names), …]``, one exact pass per group.

    One choice (:func:`choose_bandwidths`) per choosing setting (its form's parts rule and its
    fields), in the ranking's namespace. Where comparing choices costs no device read (NumPy),
    settings whose choices agree share a group too. Groups come in the order of their first name in
    ``specs``, names in ``specs``' order.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.bounds import BoundSpec
    >>> r = BandwidthRanking(np.ones((2, 2)), np.ones((2, 2)), np.array([[0.1, 0.9], [0.9, 0.1]]),
    ...                      np.array([[0.1, 0.5]]))
    >>> specs = {"h": BoundSpec(form="hoeffding", beta=1.0, delta_prime=0.05),
    ...          "c": BoundSpec(form="chernoff", beta=1.0, delta_prime=0.05)}
    >>> [(choice.tolist(), names) for choice, names in choice_groups(specs, r)]
    [([0, 1], ['h', 'c'])]
    """
    keyed: dict = {}
    for name, spec in specs.items():
        keyed.setdefault(_choosing_key(spec), []).append(name)
    groups = [(choose_bandwidths(ranking, {names[0]: specs[names[0]]})[names[0]], names) for names in keyed.values()]
    if not all(isinstance(choice, np.ndarray) for choice, _ in groups):
        return groups
    merged: list[tuple[Any, list]] = []
    for choice, names in groups:
        same = next((g for g in merged if np.array_equal(g[0], choice)), None)
        if same is None:
            merged.append((choice, list(names)))
        else:
            same[1].extend(names)
    order = {name: i for i, name in enumerate(specs)}
    return [(choice, sorted(names, key=order.__getitem__)) for choice, names in merged]


def rows_by_choice(choice: Any, n_bandwidths: int) -> tuple[list[Any], list[int], Any]:
    """The queries of each chosen bandwidth, where ``choice`` lives: ``(rows, used, inverse)``.

    ``rows[j]`` are the query indices that chose ``used[j]`` (increasing), ``inverse`` puts the
    concatenated groups back in the queries' order. One read: the ``G`` group sizes.

    Examples
    --------
    >>> import numpy as np
    >>> rows, used, inverse = rows_by_choice(np.array([2, 0, 2, 2]), 3)
    >>> [r.tolist() for r in rows], used, inverse.tolist()
    ([[1], [0, 2, 3]], [0, 2], [1, 0, 2, 3])
    """
    xp = array_namespace_of(choice)
    order = xp.argsort(choice, stable=True)
    if isinstance(choice, np.ndarray):
        counts = np.bincount(choice.astype(np.intp, copy=False), minlength=n_bandwidths)  # any int dtype
    elif compat().is_torch_array(choice):
        counts = xp.zeros((n_bandwidths,), dtype=choice.dtype, device=compat().device(choice))
        counts = counts.index_add(0, choice, xp.ones_like(choice))
    else:  # any other namespace: one comparison per bandwidth
        counts = xp.stack([xp.sum(xp.astype(choice == g, choice.dtype)) for g in range(n_bandwidths)])
    sizes = [int(v) for v in (counts.tolist() if hasattr(counts, "tolist") else np.asarray(counts))]  # the read
    rows, used, start = [], [], 0
    for g, size in enumerate(sizes):
        if size:
            rows.append(order[start : start + size])
            used.append(g)
            start += size
    inverse = xp.argsort(order, stable=True)
    return rows, used, inverse
