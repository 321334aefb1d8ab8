"""Small floating-point helpers that hold at any scale."""

from __future__ import annotations

import numpy as np

from ._memory import block_rows

__all__ = [
    "direct_d2_error_factor", "direct_distances", "direct_distance_error", "euclidean_norm", "square_underflow", "summation_error",
    "square_sum_upper", "compose_errors", "feature_unit", "to_feature_unit", "column_spread",
]

# float32 stores features as ``x/unit`` when ``max|x|`` lies outside [2⁻¹⁰⁰, 2¹⁰⁰] (see feature_unit).
_FLOAT32_SAFE_EXPONENT = 100


def column_spread(spread: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``spread`` (a per-column scale of ``X``), with 1 where the column of ``X`` is constant.

    A column is constant when all its values are equal (``ptp == 0``), not when its computed
    standard deviation is 0: the mean of n equal floats is rounded, so their standard deviation
    comes out near 1e-17 (``np.full(7, 0.1).std()``), and dividing by it sends any other value
    in that column to ~1e17. That is what a pixel or a category met only outside the rows a
    scale was fitted on used to do.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound._numerics import column_spread
    >>> X = np.column_stack([np.full(7, 0.1), np.arange(7.0)])
    >>> bool(X[:, 0].std() > 0), column_spread(X.std(axis=0), X).tolist()
    (True, [1.0, 2.0])
    """
    spread = np.asarray(spread, dtype=np.float64)
    varies = np.ptp(X, axis=0) > 0 if X.shape[0] else np.zeros(X.shape[1], dtype=bool)
    return np.where(varies & (spread > 0), spread, 1.0)


def euclidean_norm(a: np.ndarray, axis: int | None = -1) -> np.ndarray:
    """``‖a‖₂`` along ``axis`` without overflow or underflow of the squares.

    Each vector is divided by a power of two near its largest entry (exact),
    so magnitudes from 1e-300 to 1e300 keep their value.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound._numerics import euclidean_norm
    >>> print(f"{float(euclidean_norm(np.array([3e200, 4e200]))):.6g}")
    5e+200
    >>> print(np.array2string(euclidean_norm(np.array([[3e-200, 4e-200], [0.0, 0.0]]), axis=1), precision=6))
    [5.e-200 0.e+000]
    """
    a = np.asarray(a, dtype=np.float64)
    largest = np.max(np.abs(a), axis=axis, keepdims=True, initial=0.0)
    # at most 2¹⁰²³ (2¹⁰²⁴ overflows): every |a|/scale < 2; a norm beyond float64's range is +inf
    scale = np.where(largest > 0, np.ldexp(1.0, np.minimum(np.frexp(largest)[1], 1023)), 1.0)
    scale = np.where(np.isfinite(scale), scale, 1.0)  # inf or NaN entries: their own result
    with np.errstate(over="ignore"):
        norm = np.sqrt(np.sum((a / scale) ** 2, axis=axis, keepdims=True)) * scale
    return np.squeeze(norm, axis=axis) if axis is not None else norm.reshape(())


def direct_distance_error(n_features: int) -> float:
    """Relative error bound of a distance computed directly in float64, ``√Σ_j (y_j − x_j)²``.

    ``(d + 6)·2⁻⁵³`` (the differences, squares, a ``d``-term sum in any order, the square root
    and an exact power-of-two rescaling), times 1.01 for the second-order terms. The one copy
    of this rule for the CPU engine and the array-API path.

    Examples
    --------
    >>> from nwbound._numerics import direct_distance_error
    >>> direct_distance_error(2) == 8 * 2.0**-53 * 1.01
    True
    """
    return (int(n_features) + 6) * 2.0**-53 * 1.01


def direct_d2_error_factor(n_features: int) -> float:
    """``c`` with ``|d̃² − d²| ≤ c·d_far²`` for direct distances ``d̃ ≤ d_far``: ``(2r + r²)(1 + r)²``.

    ``r`` is :func:`direct_distance_error`; ``d_far`` the largest distance of the row.

    Examples
    --------
    >>> from nwbound._numerics import direct_d2_error_factor, direct_distance_error
    >>> r = direct_distance_error(3)
    >>> direct_d2_error_factor(3) == (2 * r + r * r) * (1 + r) ** 2
    True
    """
    rel = direct_distance_error(n_features)
    return (2.0 * rel + rel * rel) * (1.0 + rel) ** 2


def square_underflow(n_terms: int, dtype: str | np.dtype = "float64") -> float:
    """Bound on what ``n_terms`` squares computed in ``dtype`` lose to underflow: ``n·`` its smallest subnormal.

    A product that lands below the smallest normal number keeps only an absolute accuracy: it is
    off by at most half the smallest subnormal (0 where it flushes), and the square of a rounded
    subnormal factor adds far less. Added to a computed ``Σ (wK)²`` (factors in [0, 1], e.g.
    weights in units of the largest) so that it stays an upper bound: with weights far below the
    largest one the squares flush to 0, and ``Σ (wK)² = 0`` with ``κ > 0`` would make the
    sampling term 0. The one copy of this rule: the CPU engine's float64 squares (``2⁻¹⁰⁷⁴``
    each), the device paths' float32 squares (``2⁻¹⁴⁹`` each: the Triton kernel, the array-API
    engine in float32) and float64 ones. Relative rounding is the caller's to cover.

    Examples
    --------
    >>> from nwbound._numerics import square_underflow
    >>> square_underflow(3) == 3 * 2.0**-1074, square_underflow(2, "float32") == 2 * 2.0**-149
    (True, True)
    """
    return int(n_terms) * float(np.finfo(np.dtype(dtype)).smallest_subnormal)


def summation_error(n_roundings: int, dtype: str | np.dtype = "float64") -> float:
    """``γ_k = k·u/(1 − k·u)``: relative error of a sum of non-negative terms with ``k`` roundings per term.

    A sum of ``n`` non-negative numbers in ``dtype`` (``u`` its unit roundoff, 2⁻²⁴ or 2⁻⁵³),
    added in any order (a tree, a BLAS kernel, a scatter-add), passes each term through at most
    ``n − 1`` roundings, so the computed sum lies within a factor ``1 ± γ_{n−1}`` of the exact one
    (Higham, *Accuracy and Stability of Numerical Algorithms*, §4.2); a product rounded before the
    sum counts one more. Additions never lose relative accuracy to underflow (their results in
    the subnormal range are exact). The one copy of this rule: the device paths carry it into
    the bound (:attr:`nwbound.estimators.KernelStatistics.sum_error`); ``inf`` where ``k·u ≥ 1/2``.

    Examples
    --------
    >>> from nwbound._numerics import summation_error
    >>> 3 * 2.0**-24 / (1 - 3 * 2.0**-24) <= summation_error(3, "float32") < 3.0001 * 2.0**-24
    True
    >>> summation_error(0)
    0.0
    """
    ku = int(n_roundings) * float(np.finfo(np.dtype(dtype)).eps) / 2.0
    return ku / (1.0 - ku) * (1.0 + 2.0**-50) if ku < 0.5 else float("inf")


def square_sum_upper(sq_sum, n_terms: int, dtype: str | np.dtype = "float64"):
    """A computed ``Σ fl(a_i²)`` (``n_terms`` squares formed and added in ``dtype``) made an upper bound of ``Σ a_i²``.

    Each square rounds by at most a factor ``1 − u`` or, below the smallest normal number, by an
    absolute :func:`square_underflow`; ``n`` non-negative terms added in any order lose at most a
    factor ``1 − γ_{n−1}`` (:func:`summation_error`). So ``Σ a² ≤ (S̃ + n·ε_sub)/(1 − γ_n)``, and
    ``1/(1 − γ_n) ≤ 1 + γ_{2n}``; four more roundings (the addition, ``1 + γ``, the product, and one
    to spare) give the factor ``1 + γ_{2n+4}``. The sampling term reads ``Σ a²``: it must never be
    below the exact one. The one copy of this rule for the CPU engine's float64 squares (dense,
    localized and dyadic sums); ``sq_sum`` may be an array.

    Examples
    --------
    >>> from nwbound._numerics import square_sum_upper, summation_error
    >>> square_sum_upper(0.0, 3) == 3 * 2.0**-1074 * (1 + summation_error(10))
    True
    >>> 1.0 < square_sum_upper(1.0, 10**6) < 1.0 + 3e-10
    True
    """
    n = int(n_terms)
    with np.errstate(over="ignore"):
        return (sq_sum + square_underflow(n, dtype)) * (1.0 + summation_error(2 * n + 4, dtype))


def compose_errors(*errors: float) -> float:
    """The relative error of successive stages with relative errors ``errors``: ``Π(1 + ρ) − 1``, rounded up.

    Examples
    --------
    >>> from nwbound._numerics import compose_errors
    >>> compose_errors(0.5, 0.5) >= 1.25, compose_errors(0.0, 0.0)
    (True, 0.0)
    """
    total = 0.0
    for rho in errors:  # (1 + t)(1 + ρ) − 1 = t + ρ + tρ: no cancellation against 1
        total = (total + float(rho) + total * float(rho)) * (1.0 + 2.0**-50)
    return total


def direct_distances(queries: np.ndarray, X: np.ndarray, idx: np.ndarray,
                     working_memory: float | None = None) -> np.ndarray:
    """Distances ``‖queries[i] − X[idx[i, j]]‖`` computed directly in float64, chunked.

    Index searches (scikit-learn's brute force, HNSW) use the expanded formula, which
    cancels when the neighbours are close next to the features' magnitudes; this recomputes
    the k chosen distances from the coordinates (the one copy of the rule, used by the
    neighbour indexes' tie rule and by the localized kernel sums). A power-of-two
    scaling of both arrays scales the result exactly. Each row is scaled by a power of two near
    its largest coordinate difference first (per pair), so nothing overflows or underflows.
    Relative error ≤ (d + 6)·2⁻⁵³.

    Parameters
    ----------
    queries : ndarray of shape (n_queries, n_features)
    X : ndarray of shape (n_train, n_features)
    idx : int ndarray of shape (n_queries, k)
    working_memory : float or None, default=None
        MiB for the temporaries (None: scikit-learn's setting).

    Returns
    -------
    ndarray of shape (n_queries, k), float64

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound._numerics import direct_distances
    >>> direct_distances(np.array([[0.0, 0.0]]), np.array([[3.0, 4.0], [1e200, 0.0]]), np.array([[0, 1]]))
    array([[5.e+000, 1.e+200]])
    """
    n_q, k = idx.shape
    d = X.shape[1]
    out = np.empty((n_q, k))
    step = block_rows(max(1, 3 * k * d * 8), n_q, working_memory)
    for s in range(0, n_q, step):
        q = np.asarray(queries[s : s + step], dtype=np.float64)
        diff = q[:, None, :] - X[idx[s : s + step]].astype(np.float64)
        # per pair; at most 2¹⁰²³ (2¹⁰²⁴ overflows): each |diff|/scale < 2, and a distance
        # beyond float64's range comes out as +inf, never NaN
        scale = np.minimum(_pow2_above(np.max(np.abs(diff), axis=2, initial=0.0)), 2.0**1023)
        diff /= scale[:, :, None]  # exact: powers of two
        with np.errstate(over="ignore"):
            out[s : s + step] = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff)) * scale
    return out


def _pow2_above(x: np.ndarray) -> np.ndarray:
    """Elementwise smallest power of two ≥ x (1 where x is 0)."""
    mant, exp = np.frexp(x)
    exp = np.where(mant == 0.5, exp - 1, exp)
    with np.errstate(over="ignore"):
        return np.where(x > 0, np.ldexp(1.0, exp), 1.0)


def feature_unit(X: np.ndarray, dtype: str | np.dtype) -> float:
    """The power of two a fit in ``dtype`` divides the features by before the cast (1: none).

    float64 and float32 data with ``max|x|`` in ``[2⁻¹⁰⁰, 2¹⁰⁰]`` keep their units (1). Other
    float32 data are stored as ``x/unit`` with ``max|x|/unit ∈ [1, 2)``: dividing by a power of two
    is exact, nothing overflows, and what underflows is below ``2⁻¹⁴⁹·unit``, far under the float32
    rounding of the largest coordinate. So a float32 fit at 1e-200 or 1e160 gives what it gives at
    1, up to float32 rounding; the estimator divides queries and bandwidths by the same unit.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound._numerics import feature_unit
    >>> feature_unit(np.array([[1e-46, 3e-46]]), "float32") == 2.0**-152, feature_unit(np.array([[1e-46]]), "float64")
    (True, 1.0)
    >>> feature_unit(np.array([[0.0, 5.0]]), "float32")
    1.0
    """
    if np.dtype(dtype) != np.float32:
        return 1.0
    largest = float(np.max(np.abs(X), initial=0.0))
    if largest == 0.0 or not np.isfinite(largest):
        return 1.0
    exponent = int(np.frexp(largest)[1]) - 1  # largest ∈ [2^exponent, 2^(exponent+1))
    if abs(exponent) <= _FLOAT32_SAFE_EXPONENT:
        return 1.0
    return float(np.ldexp(1.0, exponent))


def to_feature_unit(X: np.ndarray, unit: float, dtype: str | np.dtype, what: str = "X") -> np.ndarray:
    """``X/unit`` cast to ``dtype`` (C-contiguous), refusing values ``dtype`` cannot hold.

    Raises
    ------
    ValueError
        When ``X/unit`` overflows ``dtype`` (a float32 model queried far beyond its training
        data's scale): the message names ``dtype="float32"`` and the fixes.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound._numerics import to_feature_unit
    >>> to_feature_unit(np.array([[3e-46]]), 2.0**-152, "float32").dtype
    dtype('float32')
    >>> to_feature_unit(np.array([[1e39]]), 1.0, "float32")
    Traceback (most recent call last):
    ...
    ValueError: X holds values up to 1e+39, which dtype="float32" cannot hold at this model's scale (training features in units of 1): use dtype="float64", or rescale the features so that they stay within about 1e38 of the training data's magnitude.
    """
    dtype = np.dtype(dtype)
    given = np.asarray(X)
    with np.errstate(over="ignore"):
        X = given if unit == 1.0 else given.astype(np.float64) / unit  # exact: a power of two
        out = np.ascontiguousarray(X, dtype=dtype)
    if dtype == np.float32 and out.size and not np.all(np.isfinite(out)):
        largest = float(np.max(np.abs(given.astype(np.float64))))
        raise ValueError(
            f"{what} holds values up to {largest:.3g}, which dtype=\"float32\" cannot hold at this model's "
            f"scale (training features in units of {unit:.6g}): use dtype=\"float64\", or rescale the features "
            "so that they stay within about 1e38 of the training data's magnitude."
        )
    return out
