"""The regular classifier's kernel statistics in the input's own array namespace.

One pass per query block, on the device the arrays live on (NumPy, PyTorch CPU/CUDA, CuPy,
``array_api_strict``; anything :mod:`array_api_compat` wraps):

* ``d̃² = ‖q'‖² + ‖x'‖² − 2 q'·x'`` with ``q' = q − c``, ``x' = x − c`` and ``c`` the training
  set's bounding-box midpoint (as the CPU engine, :mod:`nwbound.engine.host._sums`: centring shrinks
  the norms and so the cancellation error of the expanded formula), as one product of the
  augmented rows ``[−2q', 1, ‖q'‖²]`` and ``[x', ‖x'‖², 1]``;
* ``K = K(d̃²/λ²)``, ``class_sums = K @ onehot``, ``sq_sum = Σ (w K)²``,
  ``dist_sum = Σ w K d⁺`` with ``d⁺`` an upper bound of the exact distance (below), and an
  optional histogram of ``u² = d̃²/λ²`` over equal bins of [0, 1] (weights ``w``).

**Precision.** The distance product runs in float32 (default) or float64 with full-precision
accumulation. TF32 and bfloat16 are never used: their rounding (2⁻¹¹ and 2⁻⁸ per operand) is
three to five orders above float32's and this module does not add it to ε. PyTorch's
``float32_matmul_precision`` is set to ``"highest"`` for the duration of the call and restored.

**The distance bound** (``u`` the unit roundoff of the compute dtype, ``m`` the number of
features, ``γ_k = k·u/(1 − k·u)``). Centring is done in float64 and rounded once to the compute
dtype, which moves every point by at most ``u·‖x'‖`` (plus float64 rounding), so the distance
between the rounded points differs from the exact one by at most
``η = (u + 2⁻⁵⁰)(‖q'‖ + R)`` with ``R = max ‖x'‖``. The dot product and the norms, summed in any
order, err by at most ``γ_{m+2}`` times the sum of the terms' magnitudes, at most
``(‖q'‖ + ‖x'‖)²`` (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1, with
Cauchy-Schwarz); the squared norms, computed in float64 and rounded once, add one more rounding,
so ``|d̃² − d²_rounded| ≤ E = γ_{m+3}(‖q'‖ + R)²`` (the Triton kernel's
``‖q'‖² + ‖x'‖² − 2q'·x'`` has the same bound). Hence

    d ≤ d⁺ = (1 + 8u)·(sqrt(max(d̃², 0) + E) + η),

the factor covering the square root and the last two operations. ``dist_sum`` is summed in
float64.

**The sums.** ``class_sums`` and the bins' ``hist_mass`` add the exact products ``w·K`` (a float32
``K`` times a float32 weight is exact in float64) in float64, so each lies within a factor
``1 ± γ_n`` (``n`` training points, ``u = 2⁻⁵³``: ``nwbound._numerics.summation_error``) of
the exact sum; ``sum_error`` reports it and the bound carries it
(:attr:`nwbound.estimators.KernelStatistics.sum_error`). Kernel values are evaluated at ``d̃²``: any deterministic weights in [0, 1] that depend on
the inputs only keep the bound valid, as long as the distances in ``D`` are upper bounds.

This module is the device statistics pass on any array namespace: the prepared training set
(:class:`DeviceTrainingSet`), the input checks, the unit roundoff and the distance error bounds,
the kernel of ``u²``, the binned sums, the statistics' device form and their bound form
(:func:`device_bound_statistics`, what the device bounds read). The fused Triton kernel
(:mod:`nwbound.engine.device._triton`) builds on it, and its entry point
(:func:`~nwbound.engine.device._sums.kernel_statistics`) chooses between the two. The statistics type
(:class:`~nwbound.engine.KernelStatistics`) and the array-namespace helpers (``compat``,
``array_namespace_of``, ``to_host``) live in :mod:`nwbound.engine` and are re-exported here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ..._numerics import (
    compose_errors,
    direct_d2_error_factor,
    direct_distance_error,
    square_sum_upper,
    square_underflow,
    summation_error,
)
from ..._validation import check_choice, check_int_range, check_positive
from .._statistics import KernelStatistics
from ..host._sums import TrainingSet
from ..._namespace import array_namespace_of, compat, to_host
from ...kernels import Kernel, get_kernel


__all__ = [
    "neighbor_kernel_statistics",
    "neighbor_sums",
    "kernel_of_u2",
    "supported_kernel_name",
    "HISTOGRAM_KERNELS",
    "SUPPORTED_KERNELS",
    "DeviceTrainingSet",
    "KernelStatistics",
    "array_namespace_of",
    "compat",
    "device_bound_statistics",
    "device_statistics",
    "distance_error_bounds",
    "full_precision_matmul",
    "square_sum_bound",
    "to_host",
    "unit_roundoff",
]

# Kernels evaluated in closed form from u² (name → truncation radius², inf: none).
SUPPORTED_KERNELS: dict[str, float] = {
    "epanechnikov": 1.0,
    "quartic": 1.0,
    "triweight": 1.0,
    "boxcar": 1.0,
    "gaussian": 9.0,
    "gaussian_untruncated": math.inf,
}
# Kernels whose support is the unit ball: the histogram's bins cover it exactly.
HISTOGRAM_KERNELS: tuple[str, ...] = ("epanechnikov", "quartic", "triweight", "boxcar")


def device_statistics(kernel: str, bandwidth: float, *, class_sums: Any, sq_sum: Any, dist_sum: Any | None,
                      d2_error: Any, sum_error: float = 0.0, **per_bin: Any) -> KernelStatistics:
    """The device form of :class:`~nwbound.engine.KernelStatistics` from one bandwidth's arrays.

    Every engine here computes one bandwidth: ``class_sums`` (n, C), ``sq_sum`` and ``dist_sum``
    (n,), and in ``per_bin`` the (n, B) histogram arrays or the (n, k) ``point_mass``; they get the
    bandwidth axis of length 1 (``expand_dims``: views, nothing copied). ``point_dist`` (n, k) and
    ``d2_error`` (n,) keep their shapes. ``weight_max`` is None: the histogram is in the one-hot's
    weight units.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.engine.device._array_api import device_statistics
    >>> st = device_statistics("epanechnikov", 0.5, class_sums=np.ones((3, 2)), sq_sum=np.ones(3), dist_sum=None,
    ...                        d2_error=np.zeros(3))
    >>> st.class_sums.shape, st.sq_sum.shape, st.bandwidth.tolist(), st.weight_max is None
    ((3, 1, 2), (3, 1), [[0.5]], True)
    """
    xp = array_namespace_of(class_sums)

    def column(a: Any) -> Any:
        return None if a is None else xp.expand_dims(a, axis=1)

    keep = {"point_dist"}
    return KernelStatistics(
        class_sums=column(class_sums),
        sq_sum=column(sq_sum),
        dist_sum=column(dist_sum),
        bandwidth=np.full((1, 1), float(bandwidth)),
        kernel=get_kernel(kernel),
        weight_max=None,
        d2_error=d2_error,
        sum_error=sum_error,
        **{name: a if name in keep else column(a) for name, a in per_bin.items()},
    )


def device_bound_statistics(st: KernelStatistics, train: TrainingSet, *,
                            n_neighbors: int | None = None) -> KernelStatistics:
    """The bound form of one bandwidth's device-form statistics, where they live (nothing crosses).

    What :func:`nwbound.bounds._chernoff_device.device_limits` (and, after a copy, the host's
    :meth:`~nwbound.bounds.BoundSpec.limits`) reads, from :func:`nwbound.gpu.kernel_statistics`
    (``n_neighbors`` None) or :func:`nwbound.gpu.neighbor_kernel_statistics` (``n_neighbors`` the
    ``k`` of the neighbour lists) computed on ``train``'s device copy, in its weight units:

    * ``sum_error``: the engine's ``ρ`` composed with the host's (``κ = Σ_c class_sums``: ``C + 1``
      float64 additions; the localized sums: ``k`` float64 terms), as the host's statistics route;
    * the regular classifier: ``u2_error`` (n, 1) from ``d2_error`` (the rounding of ``d̃²/λ²`` and
      of its bin index included, as the host route's :func:`~._sums_data.u2_error_rows`); the histogram in units of
      ``weight_max`` (the training set's largest weight) with its edges, ``uniform_weights`` and,
      with sample weights, ``hist_count`` and ``weight_min``;
    * the localized classifier: ``point_dist`` rounded up by its error bound (directly computed
      distances, as the host's), ``u2_error`` 0.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.engine.host._sums import TrainingSet
    >>> from nwbound.gpu import kernel_statistics
    >>> from nwbound.engine.device._array_api import device_bound_statistics
    >>> train = TrainingSet.build(np.array([[0.0], [0.5]]), np.array([0, 1]), 2, None)
    >>> st = kernel_statistics(np.zeros((1, 1)), train.X, np.eye(2), bandwidth=1.0, histogram_bins=4)
    >>> b = device_bound_statistics(st, train)
    >>> st.weight_max is None, b.weight_max, b.d2_error is None, b.hist_edges.tolist()
    (True, 1.0, True, [0.0, 0.25, 0.5, 0.75, 1.0])
    """
    unit = train.weight_unit
    C, m = train.n_classes, int(train.X.shape[1])
    w_max = train.weight_max / unit
    form = dict(d2_error=None, weight_max=w_max, uniform_weights=train.weights is None, hist_count=None,
                weight_min=0.0)
    if n_neighbors is None:
        lam = float(np.asarray(st.bandwidth).reshape(-1)[0])
        u2_err = (st.d2_error * (1.0 + 4.0 / (m + 3)) / lam) / lam  # as the host route's u2_error_rows
        if getattr(u2_err, "ndim", 0) == 1:
            u2_err = array_namespace_of(u2_err).expand_dims(u2_err, axis=1)
        form.update(sum_error=compose_errors(st.sum_error, summation_error(C + 1)), u2_error=u2_err)
        if st.histogram is not None:
            B = int(st.histogram.shape[2])
            form.update(histogram=st.histogram / w_max if w_max > 0 else st.histogram * 0.0,
                        hist_edges=np.linspace(0.0, 1.0, B + 1))
            if train.weights is not None:
                dtype = "float32" if train.X.dtype == np.float32 else "float64"
                form.update(hist_count=st.hist_count,
                            weight_min=_smallest_positive(train.weights, unit, dtype) / unit)
    else:
        # Float64 sums of k terms: within 1 ± γ_k, as the host's localized sums.
        form.update(sum_error=compose_errors(st.sum_error, summation_error(int(n_neighbors), "float64")),
                    u2_error=0.0)
        if st.point_dist is not None:  # directly computed distances, rounded up by their error bound (as the host)
            form.update(point_dist=st.point_dist * (1.0 + (m + 8) * 2.0**-53))
    return dataclasses.replace(st, **form)


def _smallest_positive(weights: np.ndarray, unit: float, dtype: str) -> float:
    """The smallest positive weight as the device sees it (``w/unit`` rounded to ``dtype``, times ``unit``).

    The device paths count the points of positive weight only: a point of weight 0 carries no
    mass and enters no sum, so the bound may leave it out (the CPU engine counts it and takes
    ``weight_min = 0``: the same interval or a wider one). 0 without a positive weight.
    """
    seen = (weights.astype(np.float64) / unit).astype(dtype).astype(np.float64) * unit
    positive = seen[seen > 0]
    return float(positive.min()) if positive.size else 0.0


@dataclass(frozen=True)
class DeviceTrainingSet:
    """Training points centred and rounded once, on their device (reusable across calls).

    Build it with :meth:`build`; pass it as ``X_train`` to :func:`kernel_statistics` (with
    ``onehot=None``) to skip the per-call preparation.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.gpu import DeviceTrainingSet
    >>> X = np.array([[0.0, 0.0], [1.0, 2.0]])
    >>> train = DeviceTrainingSet.build(X, np.eye(2))
    >>> train.center.tolist(), train.centred.dtype
    ([0.5, 1.0], dtype('float32'))
    """

    centred: Any  # (n, m) x − c, compute dtype
    sqnorm: Any  # (n,) ‖x'‖², compute dtype
    augmented: Any  # (n, m + 2) [x', ‖x'‖², 1]: one product gives d̃²
    onehot: Any  # (n, C) compute dtype
    weights: Any  # (n,) row sums of onehot, compute dtype
    center: Any  # (m,) float64
    max_norm: float  # R = max ‖x'‖ (float64 from the rounded points, rounded up)
    dtype: Any  # the namespace's dtype object
    dtype_name: str = "float32"
    onehot64: Any = None  # (n, C) float64 copy of onehot: class sums accumulate in float64
    weights64: Any = None  # (n,) float64 copy of weights (exact: a float32 value is a float64 one)

    @classmethod
    def build(cls, X_train: Any, onehot: Any, *, dtype: str = "float32") -> "DeviceTrainingSet":
        """Centre ``X_train`` at its bounding-box midpoint and round it to ``dtype``.

        Parameters
        ----------
        X_train : array of shape (n_train, n_features)
            Finite training points.
        onehot : array of shape (n_train, n_classes)
            Non-negative (weighted) one-hot class membership: row ``i`` is ``w_i·e_{c_i}``.
        dtype : {"float32", "float64"}, default="float32"
            Compute dtype of the distance product.
        """
        xp = array_namespace_of(X_train, onehot)
        check_choice(dtype, "dtype", ("float32", "float64"))
        X_train = _check_matrix(xp, X_train, "X_train")
        onehot = _check_matrix(xp, onehot, "onehot")
        if onehot.shape[0] != X_train.shape[0]:
            raise ValueError(
                f"onehot must have one row per training point: got {onehot.shape[0]} rows for "
                f"{X_train.shape[0]} training points."
            )
        if X_train.shape[0] == 0:
            raise ValueError("X_train is empty: fit on at least one training point.")
        if not bool(xp.all(onehot >= 0)):
            raise ValueError("onehot must be non-negative (a weighted one-hot: w_i ≥ 0 in column c_i).")
        cdt = getattr(xp, dtype)
        X64 = xp.astype(X_train, xp.float64)
        center = 0.5 * (xp.min(X64, axis=0) + xp.max(X64, axis=0))
        centred = xp.astype(X64 - center, cdt)
        c64 = xp.astype(centred, xp.float64)
        sq64 = xp.sum(c64 * c64, axis=1)
        sqnorm = xp.astype(sq64, cdt)  # float64 norms rounded once: one rounding in the bound
        max_norm = float(xp.max(xp.sqrt(sq64)))
        ones = xp.ones((centred.shape[0], 1), dtype=cdt, device=compat().device(centred))
        oh = xp.astype(onehot, cdt)
        return cls(
            centred=centred,
            sqnorm=sqnorm,
            augmented=xp.concat([centred, sqnorm[:, None], ones], axis=1),
            onehot=oh,
            weights=xp.sum(oh, axis=1),
            center=center,
            max_norm=max_norm * (1.0 + 1e-12),
            dtype=cdt,
            dtype_name=dtype,
            onehot64=xp.astype(oh, xp.float64),
            weights64=xp.astype(xp.sum(oh, axis=1), xp.float64),
        )

    @property
    def n_features(self) -> int:
        return int(self.centred.shape[1])


def _check_matrix(xp: Any, a: Any, name: str, finite: bool = True) -> Any:
    if getattr(a, "ndim", None) != 2:
        raise ValueError(f"{name} must be a 2-D array (rows = points), got shape {getattr(a, 'shape', None)}.")
    if not xp.isdtype(a.dtype, ("real floating", "integral")) or xp.isdtype(a.dtype, "bool"):
        raise TypeError(f"{name} must hold real numbers, got dtype {a.dtype}.")
    if finite and xp.isdtype(a.dtype, "real floating") and not bool(xp.all(xp.isfinite(a))):
        raise ValueError(f"{name} contains NaN or inf: remove or impute those values first.")
    return a


@contextlib.contextmanager
def full_precision_matmul(xp: Any) -> Iterator[None]:
    """PyTorch: float32 products in full precision (no TF32) for the block, restored after.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.engine.device._array_api import array_namespace_of, full_precision_matmul
    >>> with full_precision_matmul(array_namespace_of(np.zeros(1))):  # NumPy: nothing to switch
    ...     pass
    """
    if not compat().is_torch_namespace(xp):
        yield
        return
    import torch

    previous = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(previous)


def unit_roundoff(xp: Any, dtype: Any) -> float:
    """Half the machine epsilon of ``dtype``: a dtype object of ``xp``, or a name ("float32", "float64").

    A name is namespace-free: the Triton path computes in torch on a training set built from CuPy
    arrays, whose dtype object (NumPy's) ``torch.finfo`` rejects.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.engine.device._array_api import array_namespace_of, unit_roundoff
    >>> xp = array_namespace_of(np.zeros(1))
    >>> unit_roundoff(xp, xp.float32) == 2.0**-24 == unit_roundoff(xp, "float32")
    True
    """
    if isinstance(dtype, str):
        return float(np.finfo(check_choice(dtype, "dtype", ("float32", "float64"))).eps) / 2.0
    return float(xp.finfo(dtype).eps) / 2.0


def distance_error_bounds(xp: Any, q_sqnorm64: Any, train: DeviceTrainingSet) -> tuple[Any, Any]:
    """Per-query bounds ``(E, η)`` of the module docstring, from float64 ``‖q'‖²``.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.gpu import DeviceTrainingSet
    >>> from nwbound.engine.device._array_api import array_namespace_of, distance_error_bounds
    >>> train = DeviceTrainingSet.build(np.array([[-1.0], [1.0]]), np.eye(2))
    >>> E, eta = distance_error_bounds(array_namespace_of(np.zeros(1)), np.array([0.0]), train)
    >>> bool(np.isclose(E[0], 4 * 2.0**-24 / (1 - 4 * 2.0**-24)))  # γ_4 (‖q'‖ + R)², R = 1
    True
    """
    u = unit_roundoff(xp, train.dtype_name)  # by name: xp may differ from the set's (CuPy set, torch xp)
    k = train.n_features + 3
    gamma = k * u / (1.0 - k * u)
    reach = xp.sqrt(q_sqnorm64) + train.max_norm
    return gamma * reach * reach, (u + 2.0**-50) * reach


def square_sum_bound(sq_sum: Any, n_terms: int, dtype: str, roundings: int) -> Any:
    """A computed ``Σ (wK)²`` made an upper bound of the exact sum of its factors' squares.

    ``n_terms`` squares formed in ``dtype`` (``"float32"`` or ``"float64"``) lose at most
    :func:`~nwbound._numerics.square_underflow` to underflow (the rule the CPU engine adds too), and
    ``roundings`` relative roundings in ``dtype`` per term (the product ``w·K``, its square, a
    float32 tile sum's additions) at most a factor ``1 + (roundings + 1)·u``; the float64
    accumulation of the ``n_terms`` terms at most ``1/(1 − γ_n) ≤ 1 + γ_{2n}`` (``+ 4``: the
    factors' own roundings), as the CPU engine's :func:`~nwbound._numerics.square_sum_upper`.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.engine.device._array_api import square_sum_bound
    >>> from nwbound._numerics import summation_error
    >>> bound = float(square_sum_bound(np.array([0.0]), 3, "float32", 2)[0])
    >>> bound == 3 * 2.0**-149 * (1 + 3 * 2.0**-24) * (1 + summation_error(10))
    True
    """
    u = unit_roundoff(None, dtype)
    accumulation = 1.0 + summation_error(2 * int(n_terms) + 4, "float64")
    return (sq_sum + square_underflow(n_terms, dtype)) * (1.0 + (roundings + 1) * u) * accumulation


def _device(a: Any) -> Any:
    return compat().device(a)


# d̃², K, d⁺ and one product, in the compute dtype.
_TEMPORARIES = 4
# Plus K in float64 (the class sums' and bin masses' exact products w·K, summed in float64).
_FLOAT64_TEMPORARY_BYTES = 8
# Extra bytes per tile element with a histogram: the int64 bin index, one float64 value and the
# compute-dtype flag of the points counted.
_HIST_TEMPORARY_BYTES = 24


def supported_kernel_name(kernel: str | Kernel) -> str:
    """The name of ``kernel`` if it has an array-API form here (``nwbound.gpu.SUPPORTED_KERNELS``).

    Raises
    ------
    ValueError
        Naming the supported kernels, for any other kernel (or a Gaussian not truncated at 3).

    Examples
    --------
    >>> from nwbound.engine.device._array_api import supported_kernel_name
    >>> supported_kernel_name("quartic")
    'quartic'
    """
    k = get_kernel(kernel)
    if k.name not in SUPPORTED_KERNELS or (k.name == "gaussian" and k.radius != 3.0):
        raise ValueError(
            f"kernel {k.name!r} has no array-API implementation here; use one of "
            f"{', '.join(SUPPORTED_KERNELS)} (the Gaussian truncated at 3), or the CPU estimator."
        )
    return k.name


def kernel_of_u2(xp: Any, u2: Any, name: str) -> Any:
    """``K`` of the squared scaled distance ``u²`` (≥ 0) for a kernel of ``nwbound.gpu.SUPPORTED_KERNELS``.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.engine.device._array_api import array_namespace_of, kernel_of_u2
    >>> xp = array_namespace_of(np.zeros(1))
    >>> kernel_of_u2(xp, np.array([0.0, 0.25, 1.5]), "epanechnikov").tolist()
    [1.0, 0.75, 0.0]
    """
    if name == "boxcar":
        return xp.astype(u2 <= 1.0, u2.dtype)
    if name in ("gaussian", "gaussian_untruncated"):
        k = xp.exp(-0.5 * u2)
        return k if name == "gaussian_untruncated" else xp.where(u2 <= SUPPORTED_KERNELS[name], k, 0.0)
    base = xp.clip(1.0 - u2, 0.0, None) if hasattr(xp, "clip") else xp.where(u2 < 1.0, 1.0 - u2, 0.0)
    if name == "quartic":
        return base * base
    if name == "triweight":
        return base * base * base
    return base


def _array_api_statistics(
    xp: Any, Xq: Any, train: DeviceTrainingSet, name: str, lam: float, need_dist: bool, bins: int,
    block_rows: int | None, working_memory: float | None,
) -> KernelStatistics:
    from ..._memory import block_rows as rows_for_memory

    n_q, n_train = int(Xq.shape[0]), int(train.centred.shape[0])
    cdt = train.dtype
    itemsize = 4 if cdt == xp.float32 else 8
    if block_rows is None:
        per_pair = _TEMPORARIES * itemsize + _FLOAT64_TEMPORARY_BYTES + (_HIST_TEMPORARY_BYTES if bins else 0)
        block_rows = rows_for_memory(per_pair * n_train, max(n_q, 1), working_memory)
    inv_lam2 = 1.0 / (lam * lam)
    u = unit_roundoff(xp, cdt)
    # Upper bounds of the distance-weighted sums: each term's roundings in the compute dtype (8u)
    # and the float64 accumulation of n_train terms (γ_{n+2}; below 8u in float32, not in float64).
    dist_cover = (1.0 + 8.0 * u) * (1.0 + summation_error(n_train + 2, "float64"))
    q64 = xp.astype(Xq, xp.float64) - train.center
    qc = xp.astype(q64, cdt)
    qc64 = xp.astype(qc, xp.float64)
    q_sq64 = xp.sum(qc64 * qc64, axis=1)
    d2_err, eta = distance_error_bounds(xp, q_sq64, train)
    parts: dict[str, list] = {"cs": [], "sq": [], "ds": [], "h": [], "hm": [], "hd": [], "hc": []}
    with full_precision_matmul(xp):
        for s in range(0, n_q, block_rows):  # blocks of queries: bounded memory
            e = min(s + block_rows, n_q)
            # [−2q', 1, ‖q'‖²]·[x', ‖x'‖², 1] = d̃² in one product (no broadcast temporaries).
            ones = xp.ones((e - s, 1), dtype=cdt, device=_device(qc))
            A = xp.concat([qc[s:e, :] * -2.0, ones, xp.astype(q_sq64[s:e], cdt)[:, None]], axis=1)
            d2 = xp.matmul(A, xp.matrix_transpose(train.augmented))
            d2 = xp.where(d2 > 0.0, d2, 0.0)
            u2 = d2 * inv_lam2
            k = kernel_of_u2(xp, u2, name)
            # Class sums of the exact products w·K (a float32 K times a float32 weight is exact in
            # float64) summed in float64: a float32 product over n terms could lose up to n·2⁻²⁴ of
            # each sum (sum_error below), far more than the bound may carry.
            k64 = xp.astype(k, xp.float64)
            parts["cs"].append(xp.matmul(k64, train.onehot64))
            wk = k * train.weights[None, :]
            parts["sq"].append(xp.sum(wk * wk, axis=1, dtype=xp.float64))
            dplus = None
            if need_dist:
                err_b = xp.astype(d2_err[s:e], cdt)[:, None]
                dplus = xp.sqrt(d2 + err_b) + xp.astype(eta[s:e], cdt)[:, None]
                kd = (k * train.weights[None, :]) * dplus
                parts["ds"].append(xp.sum(kd, axis=1, dtype=xp.float64) * dist_cover)
            if bins:
                # Far points clipped first: a huge u² would overflow the integer cast.
                index = xp.astype(xp.floor(xp.where(u2 < 2.0, u2, 2.0) * float(bins)), xp.int64)
                index = xp.where(u2 == 1.0, bins - 1, index)  # u² = 1 belongs to the last bin
                index = xp.where(index < bins, index, bins)  # bucket `bins`: outside the support
                w_row = xp.broadcast_to(train.weights[None, :], k.shape)
                kw = k * w_row
                kw64 = k64 * train.weights64[None, :]  # the exact w·K, as in the class sums
                if dplus is None:
                    err_b = xp.astype(d2_err[s:e], cdt)[:, None]
                    dplus = xp.sqrt(d2 + err_b) + xp.astype(eta[s:e], cdt)[:, None]
                counted = xp.astype(w_row > 0.0, cdt)  # points of positive weight (the split form's count)
                h, hm, hd, hc = _binned_sums(xp, index, (w_row, kw64, kw * dplus, counted), bins)
                parts["h"].append(h)
                parts["hm"].append(hm)
                parts["hd"].append(hd * dist_cover)
                parts["hc"].append(hc)
    if n_q:  # the blocks' sums
        sums = dict(
            class_sums=xp.concat(parts["cs"], axis=0),
            sq_sum=square_sum_bound(xp.concat(parts["sq"], axis=0), n_train, train.dtype_name, 2),
            dist_sum=xp.concat(parts["ds"], axis=0) if need_dist else None,
            histogram=xp.concat(parts["h"], axis=0) if bins else None,
            hist_mass=xp.concat(parts["hm"], axis=0) if bins else None,
            hist_dist=xp.concat(parts["hd"], axis=0) if bins else None,
            hist_count=xp.concat(parts["hc"], axis=0) if bins else None,
            # float64 sums of n exact products (float64 compute: one rounding more, the product's).
            sum_error=summation_error(n_train + (1 if train.dtype_name == "float64" else 0), "float64"),
        )
    else:  # no query: empty statistics
        n_cls = int(train.onehot.shape[1])
        empty = xp.zeros((0,), dtype=xp.float64, device=_device(Xq))
        sums = dict(
            class_sums=xp.zeros((0, n_cls), dtype=xp.float64, device=_device(Xq)),
            sq_sum=empty, dist_sum=empty if need_dist else None,
            histogram=xp.zeros((0, bins), dtype=xp.float64, device=_device(Xq)) if bins else None,
            hist_mass=xp.zeros((0, bins), dtype=xp.float64, device=_device(Xq)) if bins else None,
            hist_dist=xp.zeros((0, bins), dtype=xp.float64, device=_device(Xq)) if bins else None,
            hist_count=xp.zeros((0, bins), dtype=xp.float64, device=_device(Xq)) if bins else None,
        )
    return device_statistics(name, lam, d2_error=d2_err, **sums)


def neighbor_kernel_statistics(
    Xq: Any,
    X_train: Any,
    onehot: Any,
    neighbors: Any,
    *,
    kernel: str | Kernel = "epanechnikov",
    bandwidth: float,
    need_dist: bool = True,
    keep_points: bool = False,
    working_memory: float | None = None,
    check_input: bool = True,
) -> KernelStatistics:
    """Kernel statistics over each query's given neighbours (the localized classifier), on the inputs' device.

    The distances to the ``k`` neighbours are computed directly in float64 from the coordinates
    (``‖q − x‖``, each pair scaled by a power of two near its largest coordinate difference first,
    so nothing overflows or underflows; relative error ≤ ``direct_distance_error``), as the
    CPU engine does after its neighbour search; ``dist_sum`` uses them rounded up by that bound.

    Parameters
    ----------
    Xq : array of shape (n_queries, n_features)
        Queries (any array-API namespace; results come back in it, on the same device).
    X_train : array of shape (n_train, n_features)
        Training points, same namespace and device.
    onehot : array of shape (n_train, n_classes)
        Weighted one-hot class membership (``w_i`` in column ``c_i``).
    neighbors : integer array of shape (n_queries, k)
        Row indices into ``X_train`` of each query's neighbours (from any search).
    kernel : str or Kernel, default="epanechnikov"
        One of ``nwbound.gpu.SUPPORTED_KERNELS``.
    bandwidth : float
        ``λ > 0``.
    need_dist : bool, default=True
        Compute ``dist_sum = Σ w_i K_i d⁺_i`` (``d⁺ = d·(1 + rel)``, summation covered).
    keep_points : bool, default=False
        Also return ``point_mass`` (``w_i K_i``) and ``point_dist`` (the float64 distances).
    working_memory : float or None, default=None
        MiB for the block temporaries (None: scikit-learn's ``working_memory``).
    check_input : bool, default=True
        Check that ``Xq``, ``X_train`` and ``onehot`` are finite, ``neighbors`` in range and ``onehot``
        non-negative: five device-to-host reads (each a synchronisation on a GPU). False for inputs
        already checked (an estimator's validated queries, its fitted training set and its own
        neighbour search); the shapes and dtypes are checked either way.

    Returns
    -------
    KernelStatistics
        The device form (``G = 1``, as :func:`kernel_statistics`):
        ``class_sums``, ``sq_sum``, ``dist_sum``, ``d2_error`` (``|d̃² − d²|`` bound at the row's
        farthest neighbour: ``direct_d2_error_factor`` times its square, which underflows to
        0 below ~1e-154; divide the distances first for a relative bound) and, with
        ``keep_points``, ``point_mass`` and ``point_dist``; float64.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.gpu import neighbor_kernel_statistics
    >>> X = np.array([[0.0], [0.5], [3.0]]); onehot = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    >>> st = neighbor_kernel_statistics(np.array([[0.0]]), X, onehot, np.array([[0, 1]]), bandwidth=1.0,
    ...                                 keep_points=True)
    >>> st.class_sums.tolist(), st.point_dist.tolist()
    ([[[1.0, 0.75]]], [[0.0, 0.5]])
    """
    lam = check_positive(bandwidth, "bandwidth")
    name = supported_kernel_name(kernel)
    for flag, label in ((need_dist, "need_dist"), (keep_points, "keep_points")):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{label} must be True or False, got {flag!r}.")
    if not isinstance(check_input, (bool, np.bool_)):
        raise TypeError(f"check_input must be True or False, got {check_input!r}.")
    xp = array_namespace_of(Xq, X_train, onehot, neighbors)
    Xq, X_train, onehot = (_check_matrix(xp, a, n, finite=bool(check_input))
                           for a, n in ((Xq, "Xq"), (X_train, "X_train"), (onehot, "onehot")))
    if getattr(neighbors, "ndim", None) != 2 or not xp.isdtype(neighbors.dtype, "integral"):
        raise TypeError("neighbors must be a 2-D integer array (n_queries, k) of row indices into X_train.")
    n_q, k = int(neighbors.shape[0]), int(neighbors.shape[1])
    n_train, m = int(X_train.shape[0]), int(X_train.shape[1])
    if neighbors.shape[0] != Xq.shape[0] or Xq.shape[1] != m or onehot.shape[0] != n_train:
        raise ValueError(
            f"Shapes do not match: Xq {tuple(Xq.shape)}, X_train {tuple(X_train.shape)}, onehot "
            f"{tuple(onehot.shape)}, neighbors {tuple(neighbors.shape)} (one row of neighbors per query, "
            "one onehot row per training point, the same features)."
        )
    if check_input and n_q and k and not bool(xp.all((neighbors >= 0) & (neighbors < n_train))):
        raise ValueError(f"neighbors must index rows of X_train: every entry in [0, {n_train}).")
    if check_input and not bool(xp.all(onehot >= 0)):
        raise ValueError("onehot must be non-negative (a weighted one-hot: w_i ≥ 0 in column c_i).")
    return neighbor_sums(xp, Xq, X_train, onehot, neighbors, name, lam, bool(need_dist), bool(keep_points),
                         working_memory)


def neighbor_sums(xp: Any, Xq: Any, X_train: Any, onehot: Any, neighbors: Any, name: str, lam: float,
                  need_dist: bool, keep_points: bool, working_memory: float | None) -> KernelStatistics:
    """:func:`neighbor_kernel_statistics` of checked inputs in the namespace ``xp`` (the engine's
    own arrays: the validated queries, the fitted rows, its search's neighbours), kernel ``name``
    (:func:`supported_kernel_name`) at bandwidth ``lam > 0``.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.gpu import array_namespace_of
    >>> X = np.array([[0.0], [0.5], [3.0]]); onehot = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    >>> st = neighbor_sums(array_namespace_of(X), np.zeros((1, 1)), X, onehot, np.array([[0, 1]]), "epanechnikov",
    ...                    1.0, True, False, None)
    >>> st.class_sums.tolist()
    [[[1.0, 0.75]]]
    """
    from ..._memory import block_rows as rows_for_memory

    n_q, k = int(neighbors.shape[0]), int(neighbors.shape[1])
    m = int(X_train.shape[1])
    f64 = xp.float64
    dev = _device(Xq)
    X64, oh64 = xp.astype(X_train, f64), xp.astype(onehot, f64)
    weights = xp.sum(oh64, axis=1)
    rel = direct_distance_error(m)
    n_cls = int(onehot.shape[1])
    rows = rows_for_memory(max(1, (3 * m + 2 * n_cls + 8) * k * 8), max(n_q, 1), working_memory)
    parts: dict[str, list] = {"cs": [], "sq": [], "ds": [], "pm": [], "pd": [], "far": []}
    for s in range(0, n_q, rows):  # blocks of queries: the gathered (rows, k, m) neighbours fit
        e = min(s + rows, n_q)
        flat = xp.reshape(neighbors[s:e, :], (-1,))
        nb = xp.reshape(xp.take(X64, flat, axis=0), (e - s, k, m))
        diff = xp.astype(Xq[s:e, :], f64)[:, None, :] - nb
        top = xp.max(xp.abs(diff), axis=2) if m else xp.zeros((e - s, k), dtype=f64, device=dev)
        # A power of two near the largest difference (exponent clamped to float64's range).
        expo = xp.clip(xp.ceil(xp.log2(xp.where(top > 0.0, top, 1.0))), -1022.0, 1023.0)
        scale = xp.pow(xp.asarray(2.0, dtype=f64, device=dev), expo)
        scaled = diff / scale[:, :, None]
        d = xp.sqrt(xp.sum(scaled * scaled, axis=2)) * scale
        kv = kernel_of_u2(xp, (d / lam) * (d / lam), name)
        w = xp.reshape(xp.take(weights, flat, axis=0), (e - s, k))
        wk = kv * w
        oh = xp.reshape(xp.take(oh64, flat, axis=0), (e - s, k, n_cls))
        parts["cs"].append(xp.sum(kv[:, :, None] * oh, axis=1))
        parts["sq"].append(xp.sum(wk * wk, axis=1))
        parts["far"].append(xp.max(d, axis=1) if k else xp.zeros((e - s,), dtype=f64, device=dev))
        if need_dist:  # only where K > 0: a far pair's distance never enters
            parts["ds"].append(xp.sum(xp.where(wk > 0.0, wk * (d * (1.0 + rel)), 0.0), axis=1))
        if keep_points:
            parts["pm"].append(wk)
            parts["pd"].append(d)

    def cat(key: str, shape: tuple[int, ...]) -> Any:
        return xp.concat(parts[key], axis=0) if parts[key] else xp.zeros(shape, dtype=f64, device=dev)

    far = cat("far", (0,))
    summation = 1.0 + (k + 4) * 2.0**-53  # the sums' rounding: dist_sum stays an upper bound
    return device_statistics(
        name, lam,
        class_sums=cat("cs", (0, n_cls)),
        sq_sum=square_sum_upper(cat("sq", (0,)), k),  # float64 squares, as the CPU engine's
        dist_sum=cat("ds", (0,)) * summation if need_dist else None,
        histogram=None,
        d2_error=direct_d2_error_factor(m) * far * far,
        point_mass=cat("pm", (0, k)) if keep_points else None,
        point_dist=cat("pd", (0, k)) if keep_points else None,
    )


def _binned_sums(xp: Any, index: Any, values: tuple[Any, ...], bins: int) -> tuple[Any, ...]:
    """Per-row float64 sums of each of ``values`` over the bins ``index`` (bucket ``bins`` dropped).

    One scatter-add (PyTorch) or one ``bincount`` (NumPy, CuPy) per value; any other namespace
    takes one masked sum per bin.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.engine.device._array_api import array_namespace_of, _binned_sums
    >>> xp = array_namespace_of(np.zeros(1))
    >>> (h,) = _binned_sums(xp, np.array([[0, 1, 2, 1]]), (np.array([[1.0, 2.0, 4.0, 8.0]]),), 2)
    >>> h.tolist()
    [[1.0, 10.0]]
    """
    aac = compat()
    rows = int(index.shape[0])
    if aac.is_torch_namespace(xp):
        import torch

        out = []
        for v in values:
            acc = torch.zeros((rows, bins + 1), dtype=torch.float64, device=v.device)
            out.append(acc.scatter_add_(1, index, v.to(torch.float64))[:, :bins])
        return tuple(out)
    if aac.is_numpy_namespace(xp) or aac.is_cupy_namespace(xp):
        lib = np if aac.is_numpy_namespace(xp) else __import__("cupy")
        keys = (index + lib.arange(rows, dtype=index.dtype)[:, None] * (bins + 1)).ravel()
        return tuple(
            lib.bincount(keys, weights=lib.asarray(v, dtype=lib.float64).ravel(), minlength=rows * (bins + 1))
            .reshape(rows, bins + 1)[:, :bins]
            for v in values
        )
    return tuple(
        xp.stack([xp.sum(xp.where(index == b, v, 0.0), axis=1, dtype=xp.float64) for b in range(bins)], axis=1)
        for v in values
    )
