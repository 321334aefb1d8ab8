"""One object that turns kernel statistics into per-class limits for a chosen bound form.

The statistics (:class:`nwbound.estimators.KernelStatistics`) are read by
attribute only, so this package does not depend on the estimators.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ._forms import (
    device_namespace,
    hoeffding_sampling,
    lipschitz_bias,
    paper_sampling,
    radius_bias,
    selfnormalized_sampling,
    tail_bias,
)

__all__ = ["BoundSpec", "TAIL_RADIUS"]

# λ* = TAIL_RADIUS·λ for the paper's infinite-support lemma (3 standard
# deviations hold 99.7 % of a Gaussian's mass, as the paper suggests).
TAIL_RADIUS = 3.0


@dataclass(frozen=True)
class BoundSpec:
    """Everything a bound form needs besides the per-query kernel statistics.

    Parameters
    ----------
    form : {"chernoff", "hoeffding", "paper", "selfnormalized"}
    beta : float
        ``L`` (Lipschitz constant, in the units of the distances) or ``1/γ``.
    delta_prime : float
        Per-class failure probability (see :func:`effective_delta`).
    sigma : float
        Sub-Gaussian constant for the paper and self-normalised forms.
    ck : float
        Kernel normaliser ``c_k`` of the paper form (``K_λ = K/c_k``).
    kernel_sup : float
        ``sup K``.
    kernel_radius : float
        Support radius of the kernel in units of λ (``inf`` if unbounded).
    diameter : float, ndarray or None
        Input-space diameter Φ (paper form with an infinite-support kernel);
        may be per query, shaped to broadcast against the kernel sums.
    choice_beta : float or None
        The β that chooses each query's bandwidth under ``bandwidth="auto"``
        (:meth:`for_choice`; None: ``beta``). ``lipschitz="auto"`` sets it to its
        pilot estimate, so the chosen bandwidths do not depend on the L selected
        with the labels: at fixed bandwidths the intervals are nested in L.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.bounds import BoundSpec
    >>> spec = BoundSpec(form="hoeffding", beta=1.0, delta_prime=0.05)
    >>> bias, sampling = spec.parts(kappa=np.array([4.0]), sq_sum=np.array([4.0]),
    ...                             dist_sum=np.array([0.4]), bandwidth=0.5)
    >>> bias.round(3), sampling.round(3)
    (array([0.1]), array([0.679]))
    """

    form: str
    beta: float
    delta_prime: float
    sigma: float = 0.5
    ck: float = 1.0
    kernel_sup: float = 1.0
    kernel_radius: float = 1.0
    diameter: float | np.ndarray | None = None
    choice_beta: float | None = None

    def for_choice(self) -> "BoundSpec":
        """The setting whose label-free ε chooses the bandwidths (``beta`` = ``choice_beta`` if set).

        Examples
        --------
        >>> from nwbound.bounds import BoundSpec
        >>> BoundSpec(form="hoeffding", beta=1.0, delta_prime=0.05, choice_beta=2.0).for_choice().beta
        2.0
        """
        return self if self.choice_beta is None else replace(self, beta=self.choice_beta, choice_beta=None)

    @property
    def is_chernoff(self) -> bool:
        """The band-Chernoff form: per-class limits from a test, not ``p̂ ± ε``."""
        return self.form == "chernoff"

    @property
    def needs_distance_sum(self) -> bool:
        """The data-dependent bias ``β·D/κ`` needs ``D = Σ w K ‖y − y_i‖``."""
        return self.form != "paper"

    @property
    def needs_tail_mass(self) -> bool:
        """The paper's infinite-support lemma needs the kernel mass beyond λ*."""
        return self.form == "paper" and not math.isfinite(self.kernel_radius)

    def tail_radius(self, bandwidth: np.ndarray | float) -> np.ndarray | float:
        """``λ*`` for the infinite-support lemma."""
        return TAIL_RADIUS * np.asarray(bandwidth, dtype=np.float64)

    def parts(
        self,
        kappa: np.ndarray,
        sq_sum: np.ndarray,
        dist_sum: np.ndarray | None,
        bandwidth: np.ndarray | float,
        tail_mass: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(bias, sampling)``, each shaped like ``kappa`` (inf where κ = 0).

        For ``"chernoff"`` these are the parts of the Hoeffding bound on the
        same points (the label-free ε that picks λ under ``bandwidth="auto"``;
        the Chernoff limits are never wider than it for the exact form).
        """
        if self.form in ("hoeffding", "chernoff"):
            return (
                lipschitz_bias(self.beta, dist_sum, kappa),
                hoeffding_sampling(kappa, sq_sum, self.delta_prime),
            )
        if self.form == "selfnormalized":
            return (
                lipschitz_bias(self.beta, dist_sum, kappa),
                selfnormalized_sampling(kappa, sq_sum, self.delta_prime, self.sigma, self.kernel_sup),
            )
        if self.form == "paper":
            if math.isfinite(self.kernel_radius):
                bias = radius_bias(self.beta, self.kernel_radius * np.asarray(bandwidth, np.float64), kappa)
            else:
                if self.diameter is None:
                    raise ValueError("The paper's infinite-support bias needs the input diameter Φ.")
                bias = tail_bias(
                    self.beta, self.tail_radius(bandwidth), self.diameter, tail_mass, kappa
                )
            return bias, paper_sampling(np.asarray(kappa, np.float64) / self.ck, self.delta_prime, self.sigma)
        raise ValueError(f"Unknown bound form {self.form!r}.")

    @staticmethod
    def least_epsilon(bias: np.ndarray, sampling: np.ndarray) -> np.ndarray:
        """Per query, the column (bandwidth) of least ``bias + sampling``; ties go to the first.

        The rule of ``bandwidth="auto"``, fed with the label-free parts of :meth:`parts`. A query
        whose ε is infinite at every column (no training mass seen at any bandwidth, e.g. in a
        ranking sample) takes the last column: the widest bandwidth of a grid sorted by λ is the
        likeliest to reach training points.

        Examples
        --------
        >>> import numpy as np
        >>> bias = np.array([[0.1, 0.2], [0.1, 0.2], [np.inf, np.inf]])
        >>> BoundSpec.least_epsilon(bias, np.array([[0.3, 0.1], [0.1, 0.0], [np.inf, np.inf]]))
        array([1, 0, 1])
        """
        xp = device_namespace(bias, sampling)
        if xp is not None:  # where the parts live (the device ranking of bandwidth="auto"), the same rule
            eps = bias + sampling
            best = xp.argmin(eps, axis=1)
            return xp.where(xp.all(xp.isinf(eps), axis=1), xp.full_like(best, eps.shape[1] - 1), best)
        eps = np.asarray(bias) + np.asarray(sampling)
        return np.where(np.isinf(eps).all(axis=1), eps.shape[1] - 1, np.argmin(eps, axis=1))

    def statistics_parts(self, stats: Any) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`parts` from kernel statistics: ``(bias, sampling)`` of shape (n, G)."""
        stats = _bound_form_on_host(stats)
        spec = self
        if self.needs_tail_mass:
            if stats.diameter is None:
                raise ValueError("The paper's infinite-support bias needs the input diameter Φ.")
            spec = replace(self, diameter=np.asarray(stats.diameter, np.float64)[:, None])
        return spec.parts(stats.kappa, stats.sq_sum, stats.dist_sum, stats.bandwidth_matrix(), stats.tail_mass)

    def limits(self, stats: Any, proba: np.ndarray) -> tuple[np.ndarray, ...]:
        """Per-class ``(lower, upper, epsilon, bias, sampling)``, each (n, C), for statistics with ``G = 1``.

        Rows with κ = 0 (*vacuous*) come back as ``[0, 1]`` with ε = bias = sampling = 1.
        Everywhere else ``ε`` is the half-width of the reported interval, ``max(p̂ − lower,
        upper − p̂)`` (user guide, glossary). For the ``p̂ ± ε`` forms the limits are
        ``clip(p̂ ∓ (bias + sampling), 0, 1)``, so there ``ε = min(bias + sampling, max(p̂, 1 − p̂))``
        (the two agree unless the interval is all of [0, 1]). Statistics with a summation
        error ``ρ = stats.sum_error > 0`` (every engine's: the CPU's float64 sums, the device
        paths) get limits that contain those of the exact sums: the parts at ``κ/(1 + ρ)`` and the
        tail mass at ``/(1 − ρ)`` (each part only grows as κ shrinks and the tail mass grows) and
        ``p̂`` moved by at most ``ρ/(2(1 − ρ))`` (counted in ``sampling``); ``sq_sum`` and
        ``dist_sum`` are upper bounds already. The Chernoff tests take ``ρ`` itself
        (:func:`~nwbound.bounds._chernoff_binned.chernoff_interval_binned`,
        :func:`~nwbound.bounds._chernoff.chernoff_interval`). For
        ``"chernoff"`` the limits come from a test, not from ``p̂ ∓ ε``; ``bias`` (the Lipschitz
        drift ``β·D/κ``, not capped: it exceeds 1 where the drift alone leaves nothing) and
        ``sampling`` are then the Hoeffding account of the same points — an account of where
        the width comes from, not parts of the Chernoff ε.

        ``stats`` is the bound form: NumPy, or the same quantities in another namespace or on a
        device (a NumPy copy is taken: :meth:`~nwbound.engine.KernelStatistics.on_host_bound_form`);
        the engines' device form is refused, naming the fix.
        """
        stats = _bound_form_on_host(stats)
        n_classes = stats.class_sums.shape[2]
        kappa = stats.kappa[:, 0]
        vacuous = ~(kappa > 0)
        rho = _sum_error(stats)
        # κ rounded down where the sums carry an error: every part is non-increasing in κ (and
        # non-decreasing in the tail mass, a sum of the same terms: rounded up).
        bias, sampling = self.statistics_parts(replace(
            stats, class_sums=stats.class_sums / (1.0 + rho),
            tail_mass=None if stats.tail_mass is None else stats.tail_mass / (1.0 - rho)) if rho > 0 else stats)
        bias, sampling = bias[:, 0], sampling[:, 0]
        if rho > 0:  # |p̂ − S/κ| ≤ 2ρ·p(1 − p)/(1 − ρ) ≤ ρ/(2(1 − ρ)) for sums within 1 ± ρ
            sampling = sampling + rho / (2.0 * (1.0 - rho)) * (1.0 + 2.0**-50)
        if self.is_chernoff:
            # In blocks of queries: the test's temporaries grow with queries × classes × bins.
            n = stats.class_sums.shape[0]
            parts = [self._chernoff_limits(stats.take_rows(slice(s, s + _CHERNOFF_BLOCK)))
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
        bias = np.where(vacuous, 1.0, bias)
        sampling = np.where(vacuous, 1.0, sampling)
        eps = np.minimum(1.0, bias + sampling)[:, None]
        lower = np.clip(proba - eps, 0.0, 1.0)
        upper = np.clip(proba + eps, 0.0, 1.0)
        # One meaning of ε for every form: the reported interval's half-width (1 where vacuous).
        epsilon = np.where(vacuous[:, None], 1.0, np.maximum(proba - lower, upper - proba))
        return (lower, upper, epsilon, np.repeat(bias[:, None], n_classes, axis=1),
                np.repeat(sampling[:, None], n_classes, axis=1))

    def certified(self, stats: Any, proba: np.ndarray) -> np.ndarray | None:
        """Per query, whether :meth:`limits` certify the prediction, or None where no shortcut applies.

        The answer is the one of ``PredictionInterval.certified`` on the intervals of :meth:`limits`
        (the predicted class's lower end above every other class's upper end, and κ > 0), bit for
        bit, at a fraction of the cost: for the band-Chernoff form with per-bin sums (the regular
        and dyadic classifiers) only the ends the comparison needs are searched, and those only as
        far as it needs (:meth:`~nwbound.bounds._chernoff_binned._Pairs.certified`). Other forms
        and routes give None: take :meth:`limits` there.

        Parameters
        ----------
        stats : KernelStatistics
            As for :meth:`limits` (``G = 1``).
        proba : ndarray of shape (n, C)
            ``p̂``, as passed to :meth:`limits`: the predicted class is its argmax.

        Returns
        -------
        ndarray of bool, shape (n,), or None

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.random((400, 1)); y = (rng.random(400) < X[:, 0]).astype(int)
        >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
        >>> stats = clf.kernel_statistics(X[:50])
        >>> proba = clf.interval_from_statistics(stats).proba
        >>> bool(np.array_equal(clf.bound_spec_.certified(stats, proba), clf.interval_from_statistics(stats).certified))
        True
        """
        stats = _bound_form_on_host(stats)
        if not self.is_chernoff or not _binned_route(stats):
            return None
        top = np.argmax(proba, axis=1)
        n = stats.class_sums.shape[0]
        parts = [self._chernoff_limits(stats.take_rows(slice(s, s + _CHERNOFF_BLOCK)), top[s : s + _CHERNOFF_BLOCK])
                 for s in range(0, n, _CHERNOFF_BLOCK)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)

    def _chernoff_limits(self, stats: Any, top: np.ndarray | None = None) -> Any:
        """``(lower, upper)`` of the band-Chernoff test; with ``top`` (the per-bin route only, see
        :func:`_binned_route`) the certified mask of :meth:`certified` instead."""
        from ._chernoff import chernoff_interval

        class_sums = stats.class_sums[:, 0, :]
        lam = stats.bandwidth_matrix()[:, 0].astype(np.float64)
        rho = _sum_error(stats)
        # √u2_error·λ bounds the distance error: √(d̃² + e) ≤ d̃ + √e, kept in units of λ.
        u_err = np.sqrt(np.broadcast_to(np.asarray(stats.u2_error, np.float64), stats.class_sums.shape[:2])[:, 0])
        if stats.point_mass is not None:
            # Exact per-point form: every neighbour is its own group.
            mass = stats.point_mass[:, 0, :]
            count = (mass > 0).astype(np.float64)
            dist = np.asarray(stats.point_dist, np.float64) + (lam * u_err)[:, None]
            with np.errstate(over="ignore"):  # a neighbour beyond float64's range: band radius +inf
                band = self.beta * dist
            return chernoff_interval(class_sums, count, mass, mass, band, self.delta_prime, sum_error=rho)
        if stats.histogram is None:
            raise ValueError(
                "bound='chernoff' needs a distance histogram or per-point statistics; compute the "
                "statistics with the same bound settings (kernel_statistics(X, bounds=...))."
            )
        edges = np.asarray(stats.hist_edges, dtype=np.float64)
        k_edges = np.asarray(stats.kernel.from_squared(edges), dtype=np.float64) / self.kernel_sup
        w_max = np.broadcast_to(np.asarray(stats.weight_max, np.float64), (class_sums.shape[0],))[:, None]
        # The kernel is non-increasing in u²: a point of bin [e_b, e_b+1) has
        # K(e_b+1) ≤ K ≤ K(e_b); the slack covers a float32 kernel evaluation.
        mass_upper = w_max * k_edges[None, :-1] * self.kernel_sup * (1.0 + _KERNEL_SLACK)
        mass_lower = w_max * k_edges[None, 1:] * self.kernel_sup * (1.0 - _KERNEL_SLACK)
        # Each point of bin b is at most λ·√(e_b+1 + u2_error) away (true distance),
        # formed without squaring a tiny or huge λ.
        radius = lam[:, None] * np.hypot(np.sqrt(edges[None, 1:]), u_err[:, None])
        count = stats.histogram[:, 0, :]
        hist_mass = getattr(stats, "hist_mass", None)
        hist_dist = getattr(stats, "hist_dist", None)
        inner = None
        dist_sum = stats.dist_sum[:, 0]
        if hist_mass is None and count.shape[1] == 1:
            # One bin (the dyadic cell): every point taken at the outer radius (the exact
            # exponent only grows with a point's distance), so A = κ and D = κ·radius exactly.
            # A band half-width β·r ≥ 1 already spans [0, 1] (p and p_i both lie in it): capping r
            # at 1/β changes no constraint, and keeps κ·r finite for a query beyond float64's
            # range of the cell (a far query clipped to a border cell: r = +inf).
            radius = np.minimum(radius, 1.0 / self.beta)
            # κ at its largest where the sums carry an error: D = κ·r must stay an upper bound.
            kappa_up = stats.kappa[:, 0] / (1.0 - rho) * (1.0 + 2.0**-52) if rho > 0 else stats.kappa[:, 0]
            with np.errstate(over="ignore"):  # Σ a·min(d, 1/β) ≤ min(Σ a·d, κ/β)
                dist_sum = np.minimum(dist_sum, kappa_up / self.beta)
            hist_mass = stats.kappa[:, :, None]
            hist_dist = (kappa_up * radius[:, 0])[:, None, None]
            inner = radius
        if hist_mass is not None and hist_dist is not None:
            from ._chernoff_binned import _prepared

            # Split form: exact per-bin Σa and Σa·r (linear part), chord in a (remainder).
            # With sample weights a_i = w_i·K_i ∈ [w_min·K(e_b+1), w_max·K(e_b)], and the chord needs
            # the bin's point count (without it: a_lo = 0, where only Σa enters).
            hist_count = getattr(stats, "hist_count", None)
            if getattr(stats, "uniform_weights", False):
                a_lo = mass_lower
            elif hist_count is not None:
                w_min = np.broadcast_to(np.asarray(stats.weight_min, np.float64), (class_sums.shape[0],))[:, None]
                a_lo = w_min * k_edges[None, 1:] * self.kernel_sup * (1.0 - _KERNEL_SLACK)
                count = hist_count[:, 0, :]
            else:
                a_lo = np.zeros_like(mass_lower)
            if inner is None:  # each point of bin b is at least λ·√(e_b − u2_error) away
                inner = lam[:, None] * np.sqrt(np.maximum(edges[None, :-1] - (u_err * u_err)[:, None], 0.0))
            pairs = _prepared(
                class_sums, count, hist_mass[:, 0, :], hist_dist[:, 0, :], a_lo, mass_upper,
                self.beta * radius, self.beta, self.delta_prime,
                sq_sum=stats.sq_sum[:, 0], dist_sum=dist_sum, band_radius_inner=self.beta * inner,
                sum_error=rho,
            )  # chernoff_interval_binned's searches, set up once
            return pairs.interval() if top is None else pairs.certified(top)
        return chernoff_interval(
            class_sums, count, mass_upper, mass_lower, self.beta * radius, self.delta_prime, sum_error=rho
        )


def _binned_route(stats: Any) -> bool:
    """Whether :meth:`BoundSpec._chernoff_limits` takes the per-bin split form for ``stats``: a
    histogram with exact per-bin sums, or one bin (the dyadic cell)."""
    if stats.point_mass is not None or stats.histogram is None:
        return False
    has_sums = getattr(stats, "hist_mass", None) is not None and getattr(stats, "hist_dist", None) is not None
    return has_sums or (getattr(stats, "hist_mass", None) is None and stats.histogram.shape[2] == 1)


def _bound_form_on_host(stats: Any) -> Any:
    """The statistics the bounds here read: bound-form :class:`~nwbound.engine.KernelStatistics`
    in NumPy. A bound form in another namespace or on a device (the same quantities) comes back as a
    NumPy copy; the device form (histogram in other units, ``d2_error`` instead of ``u2_error``) is
    refused, naming the fix. Other objects with the fields pass as they are."""
    move = getattr(stats, "on_host_bound_form", None)
    return stats if move is None else move()


def _sum_error(stats: Any) -> float:
    """``ρ`` of statistics (0 for objects without it), checked: the bound needs ``0 ≤ ρ < 1/2``."""
    rho = float(getattr(stats, "sum_error", 0.0))
    if not 0.0 <= rho < 0.5:
        raise ValueError(f"sum_error must be in [0, 0.5) (a relative error bound of the sums), got {rho!r}.")
    return rho


# Queries per block of the band-Chernoff solver (bounds its memory to a few MiB per class).
_CHERNOFF_BLOCK = 1024
# Relative slack on the kernel's value at a histogram edge (a float32 kernel
# evaluation can round a point's value just past the edge's float64 value).
_KERNEL_SLACK = 1e-6
