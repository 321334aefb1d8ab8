"""One object that turns kernel statistics into per-class limits for a chosen bound form.

The statistics (:class:`nwbound.estimators.KernelStatistics`) are read by
attribute only, so this package does not depend on the estimators.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .forms import BoundForm, get_bound_form, sum_error_margin
from .forms._common import device_namespace, sum_error_of
from .forms.paper import TAIL_RADIUS

__all__ = ["BoundSpec", "TAIL_RADIUS"]


@dataclass(frozen=True)
class BoundSpec:
    """Everything a bound form needs besides the per-query kernel statistics.

    Parameters
    ----------
    form : str
        A registered bound form (:func:`~nwbound.bounds.bound_form_names`: ``"chernoff"``,
        ``"hoeffding"``, ``"paper"``, ``"selfnormalized"`` and any added with
        :func:`~nwbound.bounds.register_bound_form`); its object is :attr:`bound_form`.
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

    def __post_init__(self) -> None:
        get_bound_form(self.form)  # an unknown name fails here, naming the registered ones

    @property
    def bound_form(self) -> BoundForm:
        """The registered :class:`~nwbound.bounds.BoundForm` named :attr:`form`."""
        return get_bound_form(self.form)

    @property
    def is_chernoff(self) -> bool:
        """The limits come from a test on the histogram or per-point statistics (the band-Chernoff
        form), not ``p̂ ± ε``."""
        return self.bound_form.needs_histogram

    @property
    def needs_distance_sum(self) -> bool:
        """The data-dependent bias ``β·D/κ`` needs ``D = Σ w K ‖y − y_i‖``."""
        return self.bound_form.needs_distance_sum

    @property
    def needs_tail_mass(self) -> bool:
        """The paper's infinite-support lemma needs the kernel mass beyond λ*."""
        return self.bound_form.needs_tail_mass(self)

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

        The registered form's :meth:`~nwbound.bounds.BoundForm.parts`. For ``"chernoff"`` these are the
        parts of the Hoeffding bound on the same points (the label-free ε that picks λ under
        ``bandwidth="auto"``; the Chernoff limits are never wider than it for the exact form).
        """
        return self.bound_form.parts(self, kappa, sq_sum, dist_sum, bandwidth, tail_mass)

    @staticmethod
    def least_epsilon(bias: np.ndarray, sampling: np.ndarray) -> np.ndarray:
        """Per query, the column (bandwidth) of least ``ε = bias + sampling``; exact ties go to the first.

        The rule of ``bandwidth="auto"``, fed with the label-free parts of :meth:`parts` (any
        label-free choice keeps every bound valid). A query whose ε is infinite at every column (no
        training mass seen at any bandwidth, e.g. in a ranking sample) takes the last column: the
        widest bandwidth of a grid sorted by λ is the likeliest to reach training points. Written
        against the parts' namespace (NumPy, or the device's tensors, which stay there).

        **Ties are exact, on purpose.** Equal ε in exact arithmetic are common (a query that sees
        one training point at several λ has ``ε = β·d + √(ln(2/δ′)/2)`` at each), and there the
        rounding of the sums picks the λ, so sums added in another order (shards, another engine)
        may pick another. A tolerance ("the smallest λ within a relative 1e-9 of the least") would
        not make the intervals route-independent: where the grid is ranked on a sample of rows
        (``ranking_fraction < 1``), a tie of the sample's ε is no tie of the exact statistics at
        those λ, so the choice still moves ``proba``, ``kappa`` and ``bandwidth`` (never validity).
        Measured: 1 query of 160 on 600 rows (``ranking_fraction=0.3``) moved its p̂ from 0.61 to
        0.83. The choice among ε equal to rounding stays with the rounding.

        Examples
        --------
        >>> import numpy as np
        >>> bias = np.array([[0.1, 0.2], [0.1, 0.2], [np.inf, np.inf], [0.2 + 1e-15, 0.2]])
        >>> BoundSpec.least_epsilon(bias, np.array([[0.3, 0.1], [0.1, 0.0], [np.inf, np.inf], [0.0, 0.0]]))
        array([1, 0, 1, 1])
        """
        xp = device_namespace(bias, sampling) or np  # one rule where the parts live (device ranking too)
        eps = bias + sampling if xp is not np else np.asarray(bias) + np.asarray(sampling)
        best = xp.argmin(eps, axis=1)
        return xp.where(xp.all(xp.isinf(eps), axis=1), xp.full_like(best, eps.shape[1] - 1), best)

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
        kappa = stats.kappa[:, 0]
        vacuous = ~(kappa > 0)
        rho = sum_error_of(stats)
        # κ rounded down where the sums carry an error: every part is non-increasing in κ (and
        # non-decreasing in the tail mass, a sum of the same terms: rounded up).
        bias, sampling = self.statistics_parts(replace(
            stats, class_sums=stats.class_sums / (1.0 + rho),
            tail_mass=None if stats.tail_mass is None else stats.tail_mass / (1.0 - rho)) if rho > 0 else stats)
        bias, sampling = bias[:, 0], sampling[:, 0]
        if rho > 0:  # p̂ moved by at most ρ/(2(1 − ρ)) (sum_error_margin)
            sampling = sampling + sum_error_margin(rho)
        return self.bound_form.limits(self, stats, proba, bias, sampling, vacuous)

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
        return self.bound_form.certified(self, _bound_form_on_host(stats), proba)


def _bound_form_on_host(stats: Any) -> Any:
    """The statistics the bounds here read: bound-form :class:`~nwbound.engine.KernelStatistics`
    in NumPy. A bound form in another namespace or on a device (the same quantities) comes back as a
    NumPy copy; the device form (histogram in other units, ``d2_error`` instead of ``u2_error``) is
    refused, naming the fix. Other objects with the fields pass as they are."""
    move = getattr(stats, "on_host_bound_form", None)
    return stats if move is None else move()
