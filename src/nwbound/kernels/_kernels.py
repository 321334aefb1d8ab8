"""Smoothing kernels ``K(u)`` of the scaled distance ``u = ‖y − y_i‖ / λ``.

Every built-in kernel is scaled so that ``sup K = K(0) = 1`` (the paper's
Assumption 4 with ``c_k = 1``). Compact kernels are exactly 0 for ``u > 1``;
the Gaussian is either truncated at a radius ``r*`` (exactly 0 for ``u > r*``)
or untruncated (``radius = inf``), in which case the paper's infinite-support
bias lemma applies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = [
    "Kernel",
    "KERNEL_NAMES",
    "get_kernel",
    "gaussian_kernel",
]

ArrayFunc = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Kernel:
    """A radial kernel profile.

    Parameters
    ----------
    name : str
        Display name.
    of_distance : callable
        ``K(u)`` for an array of scaled distances ``u ≥ 0``.
    radius : float
        Support radius in units of the bandwidth: ``K(u) = 0`` for ``u > radius``
        (``inf`` for kernels with infinite support).
    sup : float
        ``sup_u K(u)``; 1 for every built-in kernel.
    of_squared : callable or None
        ``K`` as a function of ``u²`` when it has a closed form, which lets the
        estimators skip a square root on the distance matrix.
    polynomial : tuple of float or None
        Coefficients ``c_a`` with ``K(u) = Σ_a c_a u^{2a}`` on ``u ≤ radius`` (0 beyond),
        when the profile is such a polynomial (the built-in Epanechnikov, quartic,
        triweight and boxcar): ``bandwidth="auto"`` then ranks every bandwidth from one
        set of distance moments. It must describe ``of_distance`` exactly.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.kernels import Kernel, get_kernel
    >>> k = get_kernel("epanechnikov")
    >>> k.radius, k.compact, k(np.array([0.0, 0.5, 2.0])).tolist()
    (1.0, True, [1.0, 0.75, 0.0])
    >>> tri = Kernel("triangle", lambda u: np.clip(1.0 - u, 0.0, None))
    >>> tri(np.array([0.25, 1.5])).tolist()
    [0.75, 0.0]
    """

    name: str
    of_distance: ArrayFunc = field(repr=False)
    radius: float = 1.0
    sup: float = 1.0
    of_squared: ArrayFunc | None = field(default=None, repr=False)
    polynomial: tuple[float, ...] | None = field(default=None, repr=False)
    # How to rebuild this kernel when unpickling: the profiles are closures.
    rebuild: tuple = field(default=(), repr=False, compare=False)

    def __reduce__(self):
        if not self.rebuild:
            raise TypeError(f"Kernel {self.name!r} cannot be pickled: build it with get_kernel or gaussian_kernel.")
        return self.rebuild

    @property
    def compact(self) -> bool:
        """True when the kernel vanishes beyond a finite radius.

        Examples
        --------
        >>> from nwbound.kernels import get_kernel
        >>> get_kernel("gaussian").compact, get_kernel("gaussian_untruncated").compact
        (True, False)
        """
        return math.isfinite(self.radius)

    @property
    def nonincreasing(self) -> bool:
        """True when ``K(u)`` never increases with ``u`` (checked on a grid of ``u`` in [0, 20]).

        The histogram form of the band-Chernoff bound needs it: a point in a
        distance bin then has its kernel value between the values at the bin's edges.

        Examples
        --------
        >>> from nwbound.kernels import get_kernel
        >>> get_kernel("epanechnikov").nonincreasing
        True
        """
        with np.errstate(all="ignore"):
            values = np.asarray(self.of_distance(_CHECK_GRID.copy()), dtype=np.float64)
        return bool(np.all(np.diff(values) <= 0.0))

    def __call__(self, u: np.ndarray) -> np.ndarray:
        return self.of_distance(np.asarray(u))

    def from_squared(self, u2: np.ndarray) -> np.ndarray:
        """Evaluate ``K`` at ``sqrt(u2)`` without forming the square root if possible.

        Parameters
        ----------
        u2 : ndarray
            Squared scaled distances ``u²``.

        Returns
        -------
        ndarray
            ``K(sqrt(u2))``, same shape.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.kernels import get_kernel
        >>> get_kernel("epanechnikov").from_squared(np.array([0.0, 0.25, 4.0])).tolist()
        [1.0, 0.75, 0.0]
        """
        if self.of_squared is not None:
            return self.of_squared(u2)
        return self.of_distance(np.sqrt(u2))


def _polynomial_of_squared(power: int) -> ArrayFunc:
    # (1 − u²)^power on u ≤ 1, exactly 0 beyond: clip before the power so the
    # result is 0 (not a sign-flipped value) outside the support.
    def profile(u2: np.ndarray) -> np.ndarray:
        base = np.subtract(1.0, u2, dtype=u2.dtype if u2.dtype.kind == "f" else None)
        np.maximum(base, 0.0, out=base)
        if power == 2:
            np.multiply(base, base, out=base)
        elif power == 3:
            base = base * base * base
        return base

    return profile


def _boxcar_sq(u2: np.ndarray) -> np.ndarray:
    return (u2 <= 1.0).astype(u2.dtype if u2.dtype.kind == "f" else np.float64)


def _tricube(u: np.ndarray) -> np.ndarray:
    base = 1.0 - np.abs(u) ** 3
    np.maximum(base, 0.0, out=base)
    return base * base * base


def _cosine(u: np.ndarray) -> np.ndarray:
    inside = np.abs(u) <= 1.0
    return np.where(inside, np.cos(0.5 * np.pi * np.minimum(np.abs(u), 1.0)), 0.0).astype(
        u.dtype if u.dtype.kind == "f" else np.float64
    )


def _from_squared_profile(profile_sq: ArrayFunc) -> ArrayFunc:
    def of_distance(u: np.ndarray) -> np.ndarray:
        u = np.asarray(u, dtype=u.dtype if u.dtype.kind == "f" else np.float64)
        return profile_sq(u * u)

    return of_distance


def gaussian_kernel(radius: float | None = 3.0) -> Kernel:
    """Gaussian profile ``exp(−u²/2)``, truncated at ``radius`` (``None``: untruncated).

    Truncation at ``r*`` makes the kernel compact with support ``r*·λ``; the
    untruncated kernel needs the paper's bounded-input assumption (lemma 3) for
    the paper-form bias bound.

    Parameters
    ----------
    radius : float or None, default=3.0
        Truncation radius in units of the bandwidth, finite and > 0; None for
        the untruncated kernel (infinite support).

    Returns
    -------
    Kernel
        The (truncated) Gaussian kernel, with ``sup = 1``.

    Raises
    ------
    ValueError
        If ``radius`` is not a finite number > 0 (nor None).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.kernels import gaussian_kernel
    >>> k = gaussian_kernel(2.0)
    >>> k.radius, np.round(k(np.array([0.0, 1.0, 2.5])), 4).tolist()
    (2.0, [1.0, 0.6065, 0.0])
    >>> gaussian_kernel(None).compact
    False
    >>> gaussian_kernel(0)
    Traceback (most recent call last):
    ...
    ValueError: Gaussian truncation radius must be a finite number > 0, got 0.
    """
    if radius is None:

        def gauss_sq(u2: np.ndarray) -> np.ndarray:
            return np.exp(-0.5 * u2)

        return Kernel(
            "gaussian_untruncated",
            _from_squared_profile(gauss_sq),
            radius=math.inf,
            of_squared=gauss_sq,
            rebuild=(gaussian_kernel, (None,)),
        )
    if not (isinstance(radius, (int, float)) and radius > 0 and math.isfinite(radius)):
        raise ValueError(f"Gaussian truncation radius must be a finite number > 0, got {radius!r}.")
    r2 = float(radius) ** 2

    def truncated_sq(u2: np.ndarray) -> np.ndarray:
        k = np.exp(-0.5 * u2)
        k[u2 > r2] = 0.0
        return k

    return Kernel(
        "gaussian",
        _from_squared_profile(truncated_sq),
        radius=float(radius),
        of_squared=truncated_sq,
        rebuild=(gaussian_kernel, (float(radius),)),
    )


def _build_registry() -> dict[str, Kernel]:
    # (1 − u²)^power, expanded in powers of u² (binomial coefficients with alternating signs).
    polys = {"epanechnikov": 1, "quartic": 2, "triweight": 3}
    registry = {}
    for name, power in polys.items():
        f = _polynomial_of_squared(power)
        registry[name] = Kernel(
            name, _from_squared_profile(f), of_squared=f,
            polynomial=tuple(float((-1) ** a * math.comb(power, a)) for a in range(power + 1)),
            rebuild=(get_kernel, (name,)),
        )
    registry["boxcar"] = Kernel(
        "boxcar", _from_squared_profile(_boxcar_sq), of_squared=_boxcar_sq, polynomial=(1.0,),
        rebuild=(get_kernel, ("boxcar",)),
    )
    registry["tricube"] = Kernel("tricube", _tricube, rebuild=(get_kernel, ("tricube",)))
    registry["cosine"] = Kernel("cosine", _cosine, rebuild=(get_kernel, ("cosine",)))
    registry["gaussian"] = gaussian_kernel(3.0)
    registry["gaussian_untruncated"] = gaussian_kernel(None)
    return registry



# Grid on which a user-supplied kernel is checked (non-negative, bounded, support).
_CHECK_GRID = np.concatenate([np.linspace(0.0, 1.0, 1001), np.linspace(1.0, 20.0, 1901)[1:]])


def get_kernel(kernel: str | Kernel | Callable[[np.ndarray], np.ndarray]) -> Kernel:
    """Resolve a kernel name, :class:`~nwbound.kernels.Kernel` or callable into a checked :class:`~nwbound.kernels.Kernel`.

    A callable receives an array of scaled distances ``u ≥ 0`` and must return
    an array of the same shape with finite, non-negative values. It is checked
    on a grid of ``u`` in [0, 20]: its support radius is 1 if it is 0 for every
    grid point beyond 1, and infinite otherwise; ``sup`` is its grid maximum.

    Parameters
    ----------
    kernel : str, Kernel or callable
        A built-in name (see ``KERNEL_NAMES``; case-insensitive), a
        :class:`Kernel` (returned unchanged) or a callable ``K(u)``.

    Returns
    -------
    Kernel
        The resolved kernel.

    Raises
    ------
    ValueError
        Unknown name, or a callable that is negative, non-finite or zero everywhere.
    TypeError
        Anything else, or a callable returning the wrong shape.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.kernels import get_kernel
    >>> get_kernel("Quartic").name
    'quartic'
    >>> k = get_kernel(lambda u: np.where(u <= 1.0, 1.0 - u**2, 0.0))
    >>> k.radius, k.sup
    (1.0, 1.0)
    >>> get_kernel(3)
    Traceback (most recent call last):
    ...
    TypeError: kernel must be a name, a nwbound.kernels.Kernel or a callable, got int.
    """
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(kernel, str):
        key = _ALIASES.get(kernel.lower(), kernel.lower())
        if key not in _REGISTRY:
            raise ValueError(
                f"Unknown kernel {kernel!r}. Use one of {', '.join(KERNEL_NAMES)}, "
                "a nwbound.kernels.Kernel, or a callable K(u) of the scaled distance."
            )
        return _REGISTRY[key]
    if callable(kernel):
        return _check_callable(kernel)
    raise TypeError(
        f"kernel must be a name, a nwbound.kernels.Kernel or a callable, got {type(kernel).__name__}."
    )


def _check_callable(func: Callable[[np.ndarray], np.ndarray]) -> Kernel:
    name = getattr(func, "__name__", "callable")
    try:
        with np.errstate(all="ignore"):
            values = np.asarray(func(_CHECK_GRID.copy()), dtype=np.float64)
    except Exception as exc:  # the user's code failed: say so, keep the cause
        raise TypeError(
            f"kernel callable {name!r} failed on an array of scaled distances: {exc}"
        ) from exc
    if values.shape != _CHECK_GRID.shape:
        raise TypeError(
            f"kernel callable {name!r} must return an array of the same shape as its input "
            f"(got shape {values.shape} for input shape {_CHECK_GRID.shape})."
        )
    if not np.all(np.isfinite(values)):
        raise ValueError(f"kernel callable {name!r} must be bounded: it returned inf or NaN.")
    if np.any(values < 0):
        raise ValueError(
            f"kernel callable {name!r} must be non-negative: it returned {values.min():.3g} "
            f"at u = {_CHECK_GRID[np.argmin(values)]:.3g}."
        )
    sup = float(values.max())
    if sup <= 0:
        raise ValueError(f"kernel callable {name!r} is zero everywhere on [0, 20].")
    radius = 1.0 if np.all(values[_CHECK_GRID > 1.0] == 0) else math.inf
    return Kernel(name, _UserProfile(func), radius=radius, sup=sup, rebuild=(get_kernel, (func,)))


class _UserProfile:
    """A user's ``K(u)`` returning floats (picklable when ``func`` is)."""

    def __init__(self, func: Callable[[np.ndarray], np.ndarray]):
        self.func = func

    def __call__(self, u: np.ndarray) -> np.ndarray:
        return np.asarray(self.func(u), dtype=np.result_type(u, np.float32))


_REGISTRY = _build_registry()
_ALIASES = {"biweight": "quartic", "uniform": "boxcar", "tophat": "boxcar", "rbf": "gaussian"}
KERNEL_NAMES: tuple[str, ...] = tuple(sorted(_REGISTRY))
