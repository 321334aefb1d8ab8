"""The one kernel-statistics type: what a bound needs to know about a block of queries.

Every classifier here reduces the training set, for each query ``y`` and each candidate
bandwidth ``λ``, to a few sums over the training points it weighs (``a_i = w_i K(‖y − y_i‖/λ)``):

* ``class_sums[c] = Σ a_i 1{c_i = c}`` (so ``κ = Σ_c class_sums[c]``),
* ``sq_sum = Σ a_i²``, ``dist_sum ≥ Σ a_i ‖y − y_i‖`` (an upper bound that
  carries the floating-point error of the distances),
* optionally ``tail_mass`` (infinite-support kernels), a **distance histogram**
  (the band-Chernoff bound of the regular classifier) or the **per-point**
  weights and distances (the exact band-Chernoff form of the localized one).

:class:`KernelStatistics` holds them for one block of queries, shaped ``(n, G, …)`` for ``G``
bandwidths, in any array namespace and on any device (:attr:`KernelStatistics.xp`). Every engine
returns it: the CPU engine through
:meth:`~nwbound.NadarayaWatsonClassifier.kernel_statistics` (NumPy, ready for the bounds), the
device engines through :func:`nwbound.gpu.kernel_statistics` and
:func:`nwbound.gpu.neighbor_kernel_statistics` (``G = 1``, the inputs' namespace and device, the
raw *device form*: ``d2_error`` set, ``weight_max`` None). The bounds take the object itself, in
the bound form: :meth:`nwbound.bounds.BoundSpec.limits` on the host, ``device_limits`` of
:mod:`nwbound.bounds._chernoff_device` where it lives. It is the same class under both names,
``nwbound.estimators.KernelStatistics`` and ``nwbound.gpu.KernelStatistics``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .._numerics import compose_errors, summation_error
from ..kernels import Kernel
from .._namespace import array_namespace_of, compat, to_host

__all__ = ["KernelStatistics"]


# Fields whose first axis is the query (when not broadcast); hist_edges and kernel are per bin / global.
_PER_QUERY_FIELDS = (
    "class_sums", "sq_sum", "dist_sum", "bandwidth", "outside_box", "tail_mass", "diameter", "histogram",
    "hist_mass", "hist_dist", "u2_error", "weight_max", "point_mass", "point_dist", "hist_count", "weight_min",
    "d2_error",
)
# The per-query arrays an engine fills (what moves between namespaces and devices).
_ARRAY_FIELDS = (
    "class_sums", "sq_sum", "dist_sum", "outside_box", "tail_mass", "diameter", "histogram", "hist_mass",
    "hist_dist", "hist_count", "point_mass", "point_dist", "d2_error",
)


def _add(a: np.ndarray | None, b: np.ndarray | None, name: str, upper: bool = False) -> np.ndarray | None:
    """``a + b``; with ``upper`` rounded up (one ulp past the rounded sum), so that the sum of two
    upper bounds stays one."""
    if (a is None) != (b is None):
        raise ValueError(f"Cannot merge kernel statistics: {name} is present in one part only.")
    if a is None:
        return None
    return np.nextafter(a + b, np.inf) if upper else a + b


@dataclass(frozen=True)
class KernelStatistics:
    """Per-query kernel statistics of a block of queries, for ``G`` candidate bandwidths.

    One type for every engine and device: the arrays live in any array namespace (NumPy,
    PyTorch, CuPy, any array-API library) on any device, read from :attr:`xp` and :attr:`device`.
    Two forms fill it:

    * **bound form**: every field the bounds read, ``u2_error`` and ``weight_max`` included. The
      estimators' :meth:`~nwbound.NadarayaWatsonClassifier.kernel_statistics` give it in NumPy
      float64, and :meth:`~nwbound.NadarayaWatsonClassifier.interval_from_statistics` turns it
      into intervals; the estimators' device path builds it where the statistics live and bounds
      it there (``nwbound.bounds._chernoff_device.device_limits``). The host bounds read a bound
      form in any namespace through a NumPy copy (:meth:`on_host_bound_form`).
    * **device form** (:func:`nwbound.gpu.kernel_statistics`,
      :func:`nwbound.gpu.neighbor_kernel_statistics`): ``G = 1``, the inputs' namespace and
      device, ``d2_error`` set and ``weight_max`` None (``histogram`` then counts ``Σ w_i`` in the
      one-hot's weight units, not ``Σ w_i/weight_max``). The estimators' device path turns it into
      the bound form (with the training set's weights); the bounds refuse it
      (:meth:`check_bound_form`) rather than read a histogram in other units.

    Parameters
    ----------
    class_sums : ndarray of shape (n, G, C)
        ``Σ a_i 1{c_i = c}`` with ``a_i = w_i K(‖y − y_i‖/λ)``.
    sq_sum : ndarray of shape (n, G)
        ``Σ a_i²``.
    dist_sum : ndarray of shape (n, G) or None
        An upper bound of ``Σ a_i ‖y − y_i‖`` (rounding error included).
    bandwidth : ndarray of shape (n, G) or (1, G)
        ``λ`` of each column (the dyadic classifier: each query's cell reach).
    kernel : Kernel
        The kernel profile ``K`` (needed to bound ``K`` inside a histogram bin).
    outside_box : ndarray of bool, shape (n,) or None
        The query lies outside the training inputs' bounding box (None: not known, the device form).
    tail_mass : ndarray of shape (n, G) or None
        ``Σ a_i 1{‖y − y_i‖ > r_t λ}`` (the paper's infinite-support lemma).
    diameter : ndarray of shape (n,) or None
        ``Φ(y)``: an upper bound of the distance from ``y`` to any training point.
    histogram : ndarray of shape (n, G, B) or None
        ``Σ w_i / weight_max`` over the points whose computed ``u² = d²/λ²``
        lies in bin ``b`` of ``hist_edges``.
    hist_edges : ndarray of shape (B + 1,) or None
        Bin edges in ``u²`` (increasing, from 0 to the kernel's squared radius).
    u2_error : float or ndarray of shape (n, G)
        Upper bound of ``|ũ² − u²|`` (``u = d/λ``) for every squared distance
        the statistics were computed from (scale-free: it never overflows).
    weight_max : float or ndarray of shape (n,) or None
        The largest sample weight among the points the histogram counts (None: the device form,
        whose histogram is in the one-hot's weight units).
    hist_mass : ndarray of shape (n, G, B) or None
        ``Σ w_i K_i`` over the points of each histogram bin.
    hist_dist : ndarray of shape (n, G, B) or None
        An upper bound of ``Σ w_i K_i ‖y − y_i‖`` over the points of each bin.
    uniform_weights : bool
        No sample weights (every ``a_i = weight_max·K_i``): the histogram form may
        then bound ``a_i`` from below by the kernel at the bin's outer edge.
    hist_count : ndarray of shape (n, G, B) or None
        With sample weights: the number of points in each histogram bin.
    weight_min : float or ndarray of shape (n,)
        With ``hist_count``: the smallest sample weight (0 when unknown), so that every
        ``a_i ≥ weight_min·K`` at its bin's outer edge.
    sum_error : float
        ``ρ ≥ 0``: ``class_sums`` (hence ``κ``), ``hist_mass`` and ``tail_mass`` lie within a factor
        ``1 ± ρ`` of the exact sums of the ``a_i`` (``γ_n`` of ``nwbound._numerics.summation_error``:
        the CPU engine's float64 sums of ``n`` terms, the device paths' float32/float64
        accumulation, one more addition per merge); the bounds widen to cover it. 0: exact sums.
        ``sq_sum``, ``dist_sum`` and ``hist_dist`` are upper bounds in their own right.
    point_mass : ndarray of shape (n, G, k) or None
        ``a_i`` of each of the ``k`` neighbours (localized classifier).
    point_dist : ndarray of shape (n, k) or None
        Their distances (computed directly, in float64).
    d2_error : array of shape (n,) or None
        The device form's bound on the rounding error of every computed squared distance of the
        query, in the input's squared units (the bound form carries ``u2_error`` instead).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> X = np.array([[0.0], [0.1], [0.2], [1.0]]); y = np.array([0, 0, 1, 1])
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.5, lipschitz=1.0).fit(X, y)
    >>> stats = clf.kernel_statistics([[0.05]])
    >>> stats.kappa.round(3)
    array([[2.89]])
    >>> both = stats.merge(stats)  # e.g. two shards of a training set
    >>> both.kappa.round(3)
    array([[5.78]])

    The device engines fill the same class (here on NumPy; PyTorch or CuPy arrays stay where they are):

    >>> from nwbound import estimators, gpu
    >>> gpu.KernelStatistics is estimators.KernelStatistics
    True
    >>> st = gpu.kernel_statistics(np.array([[0.05]]), X, np.eye(2)[y], bandwidth=0.5)
    >>> st.class_sums.shape, st.xp.__name__.endswith("numpy"), st.weight_max is None
    ((1, 1, 2), True, True)
    """

    class_sums: np.ndarray
    sq_sum: np.ndarray
    dist_sum: np.ndarray | None
    bandwidth: np.ndarray
    kernel: Kernel
    outside_box: np.ndarray | None = None
    tail_mass: np.ndarray | None = None
    diameter: np.ndarray | None = None
    histogram: np.ndarray | None = None
    hist_edges: np.ndarray | None = None
    u2_error: float | np.ndarray = 0.0
    weight_max: float | np.ndarray | None = 1.0
    point_mass: np.ndarray | None = None
    point_dist: np.ndarray | None = None
    hist_mass: np.ndarray | None = None
    hist_dist: np.ndarray | None = None
    uniform_weights: bool = False
    hist_count: np.ndarray | None = None
    weight_min: float | np.ndarray = 0.0
    sum_error: float = 0.0
    d2_error: Any = None

    @property
    def xp(self) -> Any:
        """The array namespace of the statistics (``array_api_compat``'s wrapper; NumPy's for NumPy)."""
        return array_namespace_of(self.class_sums)

    @property
    def device(self) -> Any:
        """The device the arrays live on (``"cpu"`` for NumPy)."""
        return compat().device(self.class_sums)

    @property
    def on_host(self) -> bool:
        """Whether the arrays are NumPy arrays (what the host bounds and the block methods read)."""
        return isinstance(self.class_sums, np.ndarray)

    @property
    def kappa(self) -> Any:
        """Kernel mass ``κ = Σ a_i``, shape (n, G), in the statistics' namespace."""
        if self.on_host:
            return self.class_sums.sum(axis=2)
        return self.xp.sum(self.class_sums, axis=2)

    def map_arrays(self, fn: Callable[[Any], Any]) -> "KernelStatistics":
        """The same statistics with ``fn`` applied to every per-query array that is present
        (e.g. a move to another namespace or device).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.gpu import kernel_statistics
        >>> st = kernel_statistics(np.zeros((1, 1)), np.array([[0.0], [0.5]]), np.eye(2), bandwidth=1.0)
        >>> st.map_arrays(lambda a: a * 2).class_sums.tolist()
        [[[2.0, 1.5]]]
        """
        return dataclasses.replace(self, **{name: fn(getattr(self, name)) for name in _ARRAY_FIELDS
                                            if getattr(self, name) is not None})

    def to_numpy(self) -> "KernelStatistics":
        """The same statistics with every array a NumPy copy (one host copy each; float64 sums).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.gpu import kernel_statistics
        >>> st = kernel_statistics(np.zeros((1, 1)), np.array([[0.0], [0.5]]), np.eye(2), bandwidth=1.0)
        >>> st.kappa.tolist(), st.to_numpy().class_sums.dtype
        ([[1.75]], dtype('float64'))
        """
        def host(a: Any) -> np.ndarray:
            out = to_host(a)
            return out if out.dtype == bool else np.asarray(out, dtype=np.float64)

        moved = self.map_arrays(host)
        # The per-query errors and weights of a bound form on a device (e.g. u2_error (n, 1)) come too.
        scalars = {name: host(getattr(self, name)) for name in ("u2_error", "weight_max", "weight_min")
                   if hasattr(getattr(self, name), "shape") and not isinstance(getattr(self, name), np.ndarray)}
        return dataclasses.replace(moved, **scalars) if scalars else moved

    def on_host_bound_form(self) -> "KernelStatistics":
        """These statistics as the host bounds read them: NumPy arrays in the bound form.

        Bound-form statistics (``weight_max`` set, the distance error as ``u2_error``) in another
        namespace or on a device, such as the estimators' device path builds for its bounds, are
        the same quantities: they come back as a NumPy copy (:meth:`to_numpy`). NumPy bound-form
        statistics come back as they are.

        Raises
        ------
        ValueError
            For device-form statistics (:meth:`check_bound_form`).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.array([[0.0], [0.1], [0.2], [1.0]]); y = np.array([0, 0, 1, 1])
        >>> stats = NadarayaWatsonClassifier(metric=None, bandwidth=0.5, lipschitz=1.0).fit(X, y).kernel_statistics([[0.05]])
        >>> stats.on_host_bound_form() is stats
        True
        """
        if self.weight_max is not None and not self.on_host:
            return self.to_numpy()
        self.check_bound_form()
        return self

    def check_bound_form(self) -> None:
        """Raise unless these statistics are in the bound form: NumPy arrays and a ``weight_max``.

        Raises
        ------
        ValueError
            For device-form statistics (:func:`nwbound.gpu.kernel_statistics`): their histogram
            is in the one-hot's weight units and their distance error in ``d2_error``, which the
            host bounds do not read.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.gpu import kernel_statistics
        >>> st = kernel_statistics(np.zeros((1, 1)), np.array([[0.0], [0.5]]), np.eye(2), bandwidth=1.0)
        >>> st.check_bound_form()
        Traceback (most recent call last):
        ...
        ValueError: These kernel statistics are in the device form (nwbound.gpu.kernel_statistics: weight_max None, d2_error set); the host bounds read the bound form. Use the estimator's kernel_statistics (device= for a GPU), or its predict_interval.
        """
        if self.weight_max is not None and not self.on_host:
            raise ValueError(
                "These bound-form kernel statistics live outside NumPy; the host methods read NumPy arrays: "
                "call .to_numpy() (or .on_host_bound_form()) first."
            )
        if self.weight_max is None or not self.on_host:
            raise ValueError(
                "These kernel statistics are in the device form (nwbound.gpu.kernel_statistics: weight_max None, "
                "d2_error set); the host bounds read the bound form. Use the estimator's kernel_statistics "
                "(device= for a GPU), or its predict_interval."
            )

    @property
    def n_queries(self) -> int:
        """Number of queries ``n``."""
        return self.class_sums.shape[0]

    @property
    def n_bandwidths(self) -> int:
        """Number of candidate bandwidths ``G``."""
        return self.class_sums.shape[1]

    def bandwidth_matrix(self) -> np.ndarray:
        """``λ`` broadcast to shape (n, G)."""
        return np.broadcast_to(self.bandwidth, self.class_sums.shape[:2])

    def select(self, column: np.ndarray) -> "KernelStatistics":
        """The statistics of one bandwidth per query (``column``: (n,) indices), with ``G = 1``.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.array([[0.0], [0.1], [0.2], [1.0]]); y = np.array([0, 0, 1, 1])
        >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth="auto", bandwidth_grid=[0.3, 0.6], lipschitz=1.0).fit(X, y)
        >>> clf.kernel_statistics([[0.05]]).select(np.array([1])).bandwidth
        array([[0.6]])
        """
        self._require_host("select")
        column = np.asarray(column, dtype=np.intp).reshape(-1)
        rows = np.arange(self.n_queries)

        def pick(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[rows, column][:, None]

        return dataclasses.replace(
            self,
            class_sums=self.class_sums[rows, column][:, None, :],
            sq_sum=pick(self.sq_sum),
            dist_sum=pick(self.dist_sum),
            tail_mass=pick(self.tail_mass),
            bandwidth=self.bandwidth_matrix()[rows, column][:, None],
            histogram=None if self.histogram is None else self.histogram[rows, column][:, None, :],
            hist_mass=None if self.hist_mass is None else self.hist_mass[rows, column][:, None, :],
            hist_dist=None if self.hist_dist is None else self.hist_dist[rows, column][:, None, :],
            hist_count=None if self.hist_count is None else self.hist_count[rows, column][:, None, :],
            point_mass=None if self.point_mass is None else self.point_mass[rows, column][:, None, :],
            u2_error=np.broadcast_to(np.asarray(self.u2_error, np.float64), self.class_sums.shape[:2])[rows, column][:, None],
        )

    def take_rows(self, rows: slice | np.ndarray) -> "KernelStatistics":
        """The statistics of a subset of the queries (e.g. a block, to bound memory).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.array([[0.0], [0.1], [0.2], [1.0]]); y = np.array([0, 0, 1, 1])
        >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.5, lipschitz=1.0).fit(X, y)
        >>> clf.kernel_statistics([[0.0], [0.05], [0.9]]).take_rows(slice(1, 3)).n_queries
        2
        """
        self._require_host("take_rows")
        n = self.n_queries
        changes = {}
        for name in _PER_QUERY_FIELDS:
            value = getattr(self, name)
            # Broadcast fields ((1, G) bandwidths, scalar errors) apply to every query as they are.
            if isinstance(value, np.ndarray) and value.ndim >= 1 and value.shape[0] == n and (n == 1 or value.shape[0] != 1):
                changes[name] = value[rows]
        return dataclasses.replace(self, **changes)

    @classmethod
    def concatenate(cls, parts: Sequence["KernelStatistics"]) -> "KernelStatistics":
        """The statistics of consecutive blocks of queries, as one (each with its own bandwidths).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.array([[0.0], [0.1], [0.2], [1.0]]); y = np.array([0, 0, 1, 1])
        >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth="auto", bandwidth_grid=[0.3, 0.6], lipschitz=1.0).fit(X, y)
        >>> a = clf.kernel_statistics([[0.05]], bandwidth_index=[0])
        >>> b = clf.kernel_statistics([[0.9]], bandwidth_index=[1])
        >>> KernelStatistics.concatenate([a, b]).bandwidth.ravel().tolist()
        [0.3, 0.6]
        """
        parts = list(parts)
        if not parts:
            raise ValueError("KernelStatistics.concatenate needs at least one part.")
        if len(parts) == 1:
            return parts[0]
        first = parts[0]
        for part in parts:
            part._require_host("concatenate")
        for part in parts[1:]:
            if part.class_sums.shape[1:] != first.class_sums.shape[1:] or part.kernel != first.kernel:
                raise ValueError("Cannot concatenate kernel statistics with different bandwidth or class counts.")
            if (part.hist_edges is None) != (first.hist_edges is None) or (
                    part.hist_edges is not None and not np.array_equal(part.hist_edges, first.hist_edges)):
                raise ValueError("Cannot concatenate distance histograms with different bin edges.")
        changes = {}
        for name in _PER_QUERY_FIELDS:
            values = [getattr(p, name) for p in parts]
            if all(v is None for v in values):
                continue
            if any(v is None for v in values):
                raise ValueError(f"Cannot concatenate kernel statistics: {name} is present in some parts only.")
            shape = {"bandwidth": (2,), "u2_error": (2,), "weight_max": (1,), "weight_min": (1,)}.get(name)
            if shape is not None:  # broadcast fields (a (1, G) grid, a scalar error) spelled out per query
                values = [np.broadcast_to(np.asarray(v, np.float64), p.class_sums.shape[: shape[0]])
                          for v, p in zip(values, parts)]
            changes[name] = np.concatenate(values)
        changes["uniform_weights"] = all(p.uniform_weights for p in parts)
        changes["sum_error"] = max(float(p.sum_error) for p in parts)
        return dataclasses.replace(first, **changes)

    def merge(self, other: "KernelStatistics") -> "KernelStatistics":
        """Statistics of the same queries over the union of two disjoint training sets.

        Sums add (the upper bounds ``sq_sum``, ``dist_sum``, ``hist_dist`` rounded up; the others
        within ``sum_error``, which grows by one addition); the distance-error bound is the larger of the two; histogram
        counts are restated in units of the larger ``weight_max`` (exact:
        ``Σ w_i/w_M = (w_a/w_M)·Σ w_i/w_a``). Per-point (localized) statistics
        cannot be merged: the k nearest neighbours of a union are not the union
        of the parts' neighbours.

        Raises
        ------
        ValueError
            If the two parts describe different queries, bandwidths or kernels, or hold
            per-point statistics.
        """
        self.check_bound_form()
        other.check_bound_form()
        if self.class_sums.shape != other.class_sums.shape:
            raise ValueError(
                f"Cannot merge kernel statistics of shapes {self.class_sums.shape} and "
                f"{other.class_sums.shape}: both parts must cover the same queries, bandwidths and classes."
            )
        if not np.array_equal(self.bandwidth_matrix(), other.bandwidth_matrix()):
            raise ValueError("Cannot merge kernel statistics computed with different bandwidths.")
        if self.kernel != other.kernel:  # sums of two kernels add up to neither model's
            raise ValueError(
                f"Cannot merge kernel statistics computed with different kernels ({self.kernel.name!r} and "
                f"{other.kernel.name!r}): compute every shard's statistics with one kernel."
            )
        if self.point_mass is not None or other.point_mass is not None:
            raise ValueError(
                "Per-point (localized) statistics cannot be merged across training shards; merge the "
                "shards' neighbour lists first, then compute the statistics of the merged neighbours."
            )
        w_max = np.maximum(self.weight_max, other.weight_max)
        histogram = None
        if self.histogram is not None or other.histogram is not None:
            if self.histogram is None or other.histogram is None:
                raise ValueError("Cannot merge kernel statistics: histogram is present in one part only.")
            if not np.array_equal(self.hist_edges, other.hist_edges):
                raise ValueError("Cannot merge distance histograms with different bin edges.")

            def rescale(part: "KernelStatistics") -> np.ndarray:
                factor = np.asarray(part.weight_max / w_max, dtype=np.float64)
                return part.histogram * (factor[:, None, None] if factor.ndim == 1 else factor)

            histogram = rescale(self) + rescale(other)
        # Per-bin masses and distance sums are in data units: they add.
        hist_mass = hist_dist = hist_count = None
        if self.hist_mass is not None and other.hist_mass is not None:
            hist_mass = self.hist_mass + other.hist_mass
            hist_dist = _add(self.hist_dist, other.hist_dist, "hist_dist", upper=True)
        if self.hist_count is not None and other.hist_count is not None:
            hist_count = self.hist_count + other.hist_count
        return dataclasses.replace(
            self,
            class_sums=self.class_sums + other.class_sums,
            sq_sum=_add(self.sq_sum, other.sq_sum, "sq_sum", upper=True),
            dist_sum=_add(self.dist_sum, other.dist_sum, "dist_sum", upper=True),
            tail_mass=_add(self.tail_mass, other.tail_mass, "tail_mass"),
            histogram=histogram,
            hist_mass=hist_mass,
            hist_dist=hist_dist,
            # a_i = w_max·K_i in both parts only if their w_max agree.
            uniform_weights=bool(self.uniform_weights and other.uniform_weights
                                 and np.array_equal(self.weight_max, other.weight_max)),
            u2_error=np.maximum(self.u2_error, other.u2_error),
            weight_max=w_max,
            hist_count=hist_count,
            weight_min=np.minimum(self.weight_min, other.weight_min) if hist_count is not None else 0.0,
            # Each part within 1 ± ρ, then one float64 addition.
            sum_error=compose_errors(max(float(self.sum_error), float(other.sum_error)), summation_error(1)),
        )

    def _require_host(self, what: str) -> None:
        if not self.on_host:
            raise TypeError(f"KernelStatistics.{what} works on NumPy statistics: call .to_numpy() first.")
