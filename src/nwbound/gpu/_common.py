"""What every device engine shares: the statistics type, the prepared training set, the error bounds.

:mod:`nwbound.gpu._array_api` (the array-API engine) and :mod:`nwbound.gpu._triton` (the fused
kernel) both build on this module and never on each other's internals, so neither imports the
other at module level (the array-API entry point loads the Triton engine on use). The distance
and summation bounds used here are derived in :mod:`nwbound.gpu._array_api`'s docstring.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, fields
from typing import Any, Iterator

import numpy as np

from .._numerics import square_underflow, summation_error
from .._validation import check_choice

__all__ = [
    "HISTOGRAM_KERNELS",
    "SUPPORTED_KERNELS",
    "DeviceTrainingSet",
    "KernelStatistics",
    "array_namespace_of",
    "compat",
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
def compat() -> Any:
    """The ``array_api_compat`` module: the installed one, else scikit-learn's vendored copy.

    Raises
    ------
    ImportError
        When neither is available.

    Examples
    --------
    >>> from nwbound.gpu._array_api import compat
    >>> callable(compat().array_namespace)
    True
    """
    try:
        import array_api_compat
    except ImportError:
        try:  # scikit-learn ≥ 1.4 ships a copy: no extra install on a machine that has it
            from sklearn.externals import array_api_compat
        except ImportError as exc:
            raise ImportError(
                "nwbound.gpu needs array_api_compat: pip install 'nwbound[arrayapi]' (or array-api-compat)."
            ) from exc
    return array_api_compat


def array_namespace_of(*arrays: Any) -> Any:
    """The array-API namespace shared by ``arrays`` (via :mod:`array_api_compat`).

    Raises
    ------
    ImportError
        When ``array_api_compat`` is not installed (the ``arrayapi`` extra).
    TypeError
        When the arrays come from different libraries.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.gpu import array_namespace_of
    >>> array_namespace_of(np.zeros(2)).__name__.endswith("array_api_compat.numpy")
    True
    """
    array_api_compat = compat()
    try:
        return array_api_compat.array_namespace(*arrays)
    except TypeError as exc:
        raise TypeError(
            "Xq, X_train and onehot must be arrays of one library (all NumPy, all PyTorch, all CuPy, ...): "
            f"{exc}"
        ) from exc


@dataclass(frozen=True)
class KernelStatistics:
    """Per-query kernel statistics of the regular classifier, in the inputs' namespace and device.

    Every sum is float64 (the products and kernel values are in the compute dtype).

    Attributes
    ----------
    class_sums : array of shape (n_queries, n_classes)
        ``Σ_i K_i·onehot[i, c]`` (with a weighted one-hot, ``Σ w_i K_i 1{c_i = c}``).
    sq_sum : array of shape (n_queries,)
        ``Σ_i (w_i K_i)²`` with ``w_i`` the row sums of ``onehot``, rounded up: squares that
        underflow (weights far below the largest) and the compute dtype's roundings are covered
        (:func:`square_sum_bound`), so the sampling term is never 0 or too small where ``κ > 0``.
    dist_sum : array of shape (n_queries,) or None
        ``Σ_i w_i K_i d⁺_i``, ``d⁺_i ≥ ‖y − y_i‖`` (see the module's distance bound); float64.
    histogram : array of shape (n_queries, n_bins) or None
        ``Σ_i w_i`` over the training points with ``u² = d̃²/λ²`` in bin ``b`` of ``n_bins`` equal bins
        of [0, 1] (``u² = 1`` in the last); points outside the support are not counted.
    d2_error : array of shape (n_queries,)
        The bound ``E`` on the rounding error of every computed squared distance of the query.
    hist_mass : array of shape (n_queries, n_bins) or None
        ``Σ_i w_i K_i`` per bin of ``histogram`` (every engine, whenever ``histogram`` is given).
    hist_dist : array of shape (n_queries, n_bins) or None
        ``Σ_i w_i K_i d⁺_i`` per bin (same bound ``d⁺`` as ``dist_sum``).
    hist_count : array of shape (n_queries, n_bins) or None
        The training points of positive weight in each bin of ``histogram`` (every engine,
        whenever ``histogram`` is given): with sample weights, each such point's mass is at least
        the smallest positive weight times ``K`` at the bin's outer edge (the split Chernoff form).
    point_mass : array of shape (n_queries, k) or None
        :func:`neighbor_kernel_statistics` with ``keep_points``: ``w_i K_i`` of each neighbour.
    point_dist : array of shape (n_queries, k) or None
        Its directly computed float64 distances (relative error ≤ ``(m + 6)·2⁻⁵³``, not rounded up).
    sum_error : float
        ``ρ``: ``class_sums`` and ``hist_mass`` lie within a factor ``1 ± ρ`` of the exact sums of
        the weights ``a_i = w_i K_i`` (``nwbound._numerics.summation_error`` of the engine's
        accumulation); ``sq_sum``, ``dist_sum`` and ``hist_dist`` are upper bounds already.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.gpu import kernel_statistics
    >>> st = kernel_statistics(np.zeros((1, 1)), np.array([[0.0], [0.5]]), np.eye(2), bandwidth=1.0)
    >>> st.kappa.tolist(), st.to_numpy().class_sums.dtype
    ([1.75], dtype('float64'))
    """

    class_sums: Any
    sq_sum: Any
    dist_sum: Any | None
    histogram: Any | None
    d2_error: Any
    hist_mass: Any | None = None
    hist_dist: Any | None = None
    point_mass: Any | None = None
    point_dist: Any | None = None
    hist_count: Any | None = None
    sum_error: float = 0.0

    @property
    def kappa(self) -> Any:
        """``κ = Σ_c class_sums[:, c]``."""
        xp = array_namespace_of(self.class_sums)
        return xp.sum(self.class_sums, axis=1)

    def to_numpy(self) -> "KernelStatistics":
        """The same statistics as NumPy float64 arrays (one host copy each)."""
        return KernelStatistics(**{f.name: getattr(self, f.name) if f.name == "sum_error" or getattr(self, f.name) is None
                                   else _to_numpy(getattr(self, f.name)) for f in fields(self)})


def to_host(a: Any) -> np.ndarray:
    """A NumPy copy of an array of any namespace and device, in its own dtype (one host copy).

    As scikit-learn's ``_convert_to_numpy``: the library's own call where DLPack cannot cross
    devices (CuPy ``.get()``, PyTorch ``.cpu()``, ``array_api_strict``'s CPU device).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.gpu._array_api import to_host
    >>> to_host(np.arange(3, dtype=np.float32)).dtype
    dtype('float32')
    """
    if isinstance(a, np.ndarray):
        return a
    module = type(a).__module__
    if module.startswith("cupy"):
        return a.get()
    if hasattr(a, "detach"):  # torch
        return a.detach().cpu().numpy()
    if module.startswith("array_api_strict"):
        xp = a.__array_namespace__()
        return np.asarray(xp.asarray(a, device=xp.Device("CPU_DEVICE")))
    return np.from_dlpack(a) if hasattr(a, "__dlpack__") else np.asarray(a)


def _to_numpy(a: Any) -> np.ndarray:
    return np.asarray(to_host(a), dtype=np.float64)


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
    >>> from nwbound.gpu._array_api import array_namespace_of, full_precision_matmul
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
    >>> from nwbound.gpu._array_api import array_namespace_of, unit_roundoff
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
    >>> from nwbound.gpu._array_api import array_namespace_of, distance_error_bounds
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
    >>> from nwbound.gpu._array_api import square_sum_bound
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
