"""What every device engine shares: the prepared training set and the error bounds.

The statistics type (:class:`~nwbound.engine.KernelStatistics`, the one every engine returns) and
the array-namespace helpers (``compat``, ``array_namespace_of``, ``to_host``) live in
:mod:`nwbound.engine` and are re-exported here.

:mod:`nwbound.engine.device._array_api` (the array-API engine) and :mod:`nwbound.engine.device._triton` (the fused
kernel) both build on this module and never on each other's internals, so neither imports the
other at module level (the array-API entry point loads the Triton engine on use). The distance
and summation bounds used here are derived in :mod:`nwbound.engine.device._array_api`'s docstring.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ..._numerics import square_underflow, summation_error
from ..._validation import check_choice
from .._statistics import KernelStatistics
from ..._namespace import array_namespace_of, compat, to_host
from ...kernels import get_kernel

__all__ = [
    "HISTOGRAM_KERNELS",
    "SUPPORTED_KERNELS",
    "DeviceTrainingSet",
    "KernelStatistics",
    "array_namespace_of",
    "compat",
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
    >>> from nwbound.engine.device._common import device_statistics
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
