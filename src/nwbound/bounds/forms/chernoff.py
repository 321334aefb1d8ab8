"""The band-Chernoff form ``"chernoff"``: per-class limits from a test, not ``p̂ ± ε``.

For each query and class the interval is the set of levels ``m`` that neither Chernoff tail test
rejects at ``δ′/2``, the label means in the band ``[m − β r_i, m + β r_i] ∩ [0, 1]``: with the
exact per-point moments (:func:`~nwbound.bounds.chernoff_interval`; the localized classifier), the
split form of a histogram with exact per-bin sums (:func:`~nwbound.bounds._chernoff_binned.
chernoff_interval_binned`; the regular and dyadic classifiers) or the grouped form of a plain
histogram. The tests, their searches and the proofs are in :mod:`.._chernoff`,
:mod:`.._chernoff_binned` and the user guide (``docs/source/user_guide/chernoff.md``); this file
turns kernel statistics into their inputs. Every search starts from the Hoeffding end on the same
points, so the limits are never wider than ``"hoeffding"``'s; the bias and sampling reported are
that Hoeffding account of the width.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._chernoff import chernoff_interval
from .._chernoff_binned import _prepared
from ._common import device_namespace, sum_error_of
from ._registry import BoundForm, _register_built_in
from .hoeffding import HoeffdingForm

__all__ = ["CHERNOFF_FALLBACK_START", "ChernoffForm", "histogram_bins"]

#: The start of the warning that bound="chernoff" falls back to Hoeffding for a kernel without compact support.
CHERNOFF_FALLBACK_START = "bound='chernoff' over all training points needs a kernel with compact support"
# Queries per block of the band-Chernoff solver (bounds its memory to a few MiB per class).
_CHERNOFF_BLOCK = 1024
# Relative slack on the kernel's value at a histogram edge (a float32 kernel
# evaluation can round a point's value just past the edge's float64 value).
_KERNEL_SLACK = 1e-6


class ChernoffForm(HoeffdingForm):
    """``"chernoff"`` (module docstring): its parts are the Hoeffding ones (the label-free ε that picks λ
    under ``bandwidth="auto"``), its limits the test's.

    Examples
    --------
    >>> from nwbound.bounds import get_bound_form
    >>> get_bound_form("chernoff").needs_histogram
    True
    """

    name = "chernoff"
    needs_histogram = True

    def check(self, kernel: Any, *, ck: float, localized: bool) -> tuple[str, str] | None:
        if localized:  # the exact per-point form: any non-negative kernel
            return None
        if not kernel.nonincreasing:
            raise ValueError(
                f"bound='chernoff' over all training points uses a distance histogram, which needs a kernel "
                f"that does not increase with distance; kernel {kernel.name!r} does. Use the exact per-point "
                "form (n_neighbors=k, the localized classifier) or bound='hoeffding'."
            )
        if not kernel.compact:
            # The band-Chernoff form over all training points bins distances on the kernel's
            # support; an infinite support has no finite histogram. Hoeffding stays valid.
            return "hoeffding", (
                f"{CHERNOFF_FALLBACK_START} for its "
                f"distance histogram; kernel {kernel.name!r} has none, so this model uses bound='hoeffding' "
                "instead (valid, usually wider). For the Chernoff bound use kernel='gaussian' (truncated at "
                "3λ) or the localized classifier (n_neighbors=k); pass bound='hoeffding' to keep this bound "
                "without this warning."
            )
        return None

    def limits(self, spec: Any, stats: Any, proba: np.ndarray, bias: np.ndarray, sampling: np.ndarray,
               vacuous: np.ndarray) -> tuple[np.ndarray, ...]:
        n_classes = stats.class_sums.shape[2]
        # In blocks of queries: the test's temporaries grow with queries × classes × bins.
        n = stats.class_sums.shape[0]
        parts = [_chernoff_limits(spec, stats.take_rows(slice(s, s + _CHERNOFF_BLOCK)))
                 for s in range(0, n, _CHERNOFF_BLOCK)] or [(np.zeros((0, n_classes)),) * 2]
        lower = np.concatenate([p[0] for p in parts])
        upper = np.concatenate([p[1] for p in parts])
        lower = np.where(vacuous[:, None], 0.0, lower)
        upper = np.where(vacuous[:, None], 1.0, upper)
        epsilon = np.where(vacuous[:, None], 1.0, np.maximum(proba - lower, upper - proba))
        # Where the width comes from: the two parts of the Hoeffding bound on the same points
        # (label-free; the test itself does not add two terms).
        bias_c = np.repeat(np.where(vacuous, 1.0, bias)[:, None], n_classes, axis=1)
        sampling_c = np.repeat(np.where(vacuous, 1.0, sampling)[:, None], n_classes, axis=1)
        return lower, upper, epsilon, bias_c, sampling_c

    def certified(self, spec: Any, stats: Any, proba: np.ndarray) -> np.ndarray | None:
        """The certified mask by searching only the ends the comparison needs, for per-bin sums (the
        regular and dyadic classifiers; :meth:`~nwbound.bounds._chernoff_binned._Pairs.certified`);
        None on the other routes."""
        if not _binned_route(stats):
            return None
        top = np.argmax(proba, axis=1)
        n = stats.class_sums.shape[0]
        parts = [_chernoff_limits(spec, stats.take_rows(slice(s, s + _CHERNOFF_BLOCK)), top[s : s + _CHERNOFF_BLOCK])
                 for s in range(0, n, _CHERNOFF_BLOCK)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)


def _chernoff_limits(spec: Any, stats: Any, top: np.ndarray | None = None) -> Any:
    """``(lower, upper)`` of the band-Chernoff test; with ``top`` (the per-bin route only, see
    :func:`_binned_route`) the certified mask of :meth:`ChernoffForm.certified` instead."""
    class_sums = stats.class_sums[:, 0, :]
    lam = stats.bandwidth_matrix()[:, 0].astype(np.float64)
    rho = sum_error_of(stats)
    # √u2_error·λ bounds the distance error: √(d̃² + e) ≤ d̃ + √e, kept in units of λ.
    u_err = np.sqrt(np.broadcast_to(np.asarray(stats.u2_error, np.float64), stats.class_sums.shape[:2])[:, 0])
    if stats.point_mass is not None:
        # Exact per-point form: every neighbour is its own group.
        mass = stats.point_mass[:, 0, :]
        count = (mass > 0).astype(np.float64)
        dist = np.asarray(stats.point_dist, np.float64) + (lam * u_err)[:, None]
        with np.errstate(over="ignore"):  # a neighbour beyond float64's range: band radius +inf
            band = spec.beta * dist
        return chernoff_interval(class_sums, count, mass, mass, band, spec.delta_prime, sum_error=rho)
    if stats.histogram is None:
        raise ValueError(
            "bound='chernoff' needs a distance histogram or per-point statistics; compute the "
            "statistics with the same bound settings (kernel_statistics(X, bounds=...))."
        )
    edges = np.asarray(stats.hist_edges, dtype=np.float64)
    k_edges = np.asarray(stats.kernel.from_squared(edges), dtype=np.float64) / spec.kernel_sup
    n = class_sums.shape[0]
    w_max = np.broadcast_to(np.asarray(stats.weight_max, np.float64), (n,))[:, None]
    hist_count = getattr(stats, "hist_count", None)
    counted = not getattr(stats, "uniform_weights", False) and hist_count is not None
    if getattr(stats, "uniform_weights", False):
        w_floor = w_max
    elif counted:
        w_floor = np.broadcast_to(np.asarray(stats.weight_min, np.float64), (n,))[:, None]
    else:  # without the counts the chord has no floor (a_lo = 0: only Σa enters)
        w_floor = np.zeros((n, 1))
    # A far query's dyadic cell may have λ = inf: its inner radius inf·0 is NaN, replaced below
    # (one bin); a NaN inner radius of any other histogram is refused by the split form's checks.
    with np.errstate(invalid="ignore"):
        mass_upper, mass_lower, a_lo, radius, inner = histogram_bins(
            edges, k_edges, spec.kernel_sup, lam[:, None], u_err, w_max, w_floor)
    count = stats.histogram[:, 0, :]
    hist_mass = getattr(stats, "hist_mass", None)
    hist_dist = getattr(stats, "hist_dist", None)
    dist_sum = stats.dist_sum[:, 0]
    if hist_mass is None and count.shape[1] == 1:
        # One bin (the dyadic cell): every point taken at the outer radius (the exact
        # exponent only grows with a point's distance), so A = κ and D = κ·radius exactly.
        # A band half-width β·r ≥ 1 already spans [0, 1] (p and p_i both lie in it): capping r
        # at 1/β changes no constraint, and keeps κ·r finite for a query beyond float64's
        # range of the cell (a far query clipped to a border cell: r = +inf).
        radius = np.minimum(radius, 1.0 / spec.beta)
        # κ at its largest where the sums carry an error: D = κ·r must stay an upper bound.
        kappa_up = stats.kappa[:, 0] / (1.0 - rho) * (1.0 + 2.0**-52) if rho > 0 else stats.kappa[:, 0]
        with np.errstate(over="ignore"):  # Σ a·min(d, 1/β) ≤ min(Σ a·d, κ/β)
            dist_sum = np.minimum(dist_sum, kappa_up / spec.beta)
        hist_mass = stats.kappa[:, :, None]
        hist_dist = (kappa_up * radius[:, 0])[:, None, None]
        inner = radius
    if hist_mass is not None and hist_dist is not None:
        # Split form: exact per-bin Σa and Σa·r (linear part), chord in a (remainder), which
        # needs the bin's point count (histogram_bins: the a_i's floor per bin).
        if counted:
            count = hist_count[:, 0, :]
        pairs = _prepared(
            class_sums, count, hist_mass[:, 0, :], hist_dist[:, 0, :], a_lo, mass_upper,
            spec.beta * radius, spec.beta, spec.delta_prime,
            sq_sum=stats.sq_sum[:, 0], dist_sum=dist_sum, band_radius_inner=spec.beta * inner,
            sum_error=rho,
        )  # chernoff_interval_binned's searches, set up once
        return pairs.interval() if top is None else pairs.certified(top)
    return chernoff_interval(
        class_sums, count, mass_upper, mass_lower, spec.beta * radius, spec.delta_prime, sum_error=rho
    )


def histogram_bins(edges: Any, k_edges: Any, kernel_sup: float, lam: Any, u_err: Any, weight_max: Any,
                   weight_floor: Any) -> tuple[Any, ...]:
    """Per-bin bounds of a histogram over ``u² = (d/λ)²`` with the given ``edges``, in the arrays' namespace
    (the host's NumPy, the device's PyTorch: one rule for both).

    The kernel is non-increasing in ``u²``, so a point of bin ``[e_b, e_b+1)`` has ``K(e_b+1) ≤ K ≤ K(e_b)``
    (``k_edges`` = ``K(edges)/sup K``; a relative slack covers a float32 kernel evaluation), and lies
    between ``λ·√(e_b − u2_error)`` and ``λ·√(e_b+1 + u2_error)`` of the query (``u_err = √u2_error``;
    formed without squaring a tiny or huge λ).

    Parameters
    ----------
    edges, k_edges : array of shape (B + 1,)
    kernel_sup : float
    lam : float or array of shape (n, 1)
        The bandwidth λ.
    u_err : array of shape (n,)
    weight_max : float or array of shape (n, 1)
        The largest sample weight.
    weight_floor : float or array of shape (n, 1)
        A weight every point's is at least, where the chord may use it: ``weight_max`` for uniform
        weights, the smallest weight where the bins' point counts are known, else 0.

    Returns
    -------
    mass_upper, mass_lower, mass_floor, radius, inner : arrays broadcasting to (n, B)
        ``w_max·K(e_b)`` and ``w_max·K(e_b+1)`` (the grouped form's bounds on each ``a_i``),
        ``weight_floor·K(e_b+1)`` (the split form's ``a_lo``), the outer and the inner radius.

    Examples
    --------
    >>> import numpy as np
    >>> up, lo, floor, r, r_in = histogram_bins(np.array([0.0, 0.25, 1.0]), np.array([1.0, 0.75, 0.0]), 1.0,
    ...                                         2.0, np.zeros(1), 1.0, 0.0)
    >>> r.tolist(), r_in.tolist(), floor.tolist()
    ([[1.0, 2.0]], [[0.0, 1.0]], [[0.0, 0.0]])
    """
    xp = device_namespace(edges, k_edges, u_err) or np
    mass_upper = weight_max * k_edges[None, :-1] * kernel_sup * (1.0 + _KERNEL_SLACK)
    mass_lower = weight_max * k_edges[None, 1:] * kernel_sup * (1.0 - _KERNEL_SLACK)
    mass_floor = weight_floor * k_edges[None, 1:] * kernel_sup * (1.0 - _KERNEL_SLACK)
    radius = lam * xp.hypot(xp.sqrt(edges[None, 1:]), u_err[:, None])
    inner = lam * xp.sqrt(xp.clip(edges[None, :-1] - (u_err * u_err)[:, None], 0.0, None))
    return mass_upper, mass_lower, mass_floor, radius, inner


def _binned_route(stats: Any) -> bool:
    """Whether :func:`_chernoff_limits` takes the per-bin split form for ``stats``: a
    histogram with exact per-bin sums, or one bin (the dyadic cell)."""
    if stats.point_mass is not None or stats.histogram is None:
        return False
    has_sums = getattr(stats, "hist_mass", None) is not None and getattr(stats, "hist_dist", None) is not None
    return has_sums or (getattr(stats, "hist_mass", None) is None and stats.histogram.shape[2] == 1)


_register_built_in(ChernoffForm())
