"""The result objects of :mod:`nwbound.assumptions` and the input checks its functions share."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.utils.validation import check_X_y


UNITS_NOTE = (
    "in the units of the features as given (Euclidean distance between rows of X); after "
    "rescaling the features restate it with nwbound.restate_lipschitz / restate_margin"
)


# ---------------------------------------------------------------------------
# result objects
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class OverlapReport:
    """Outcome of :func:`~nwbound.assumptions.overlap_test`.

    Attributes
    ----------
    decision : {"overlapping", "separable"}
        ``"overlapping"`` when ``ratio >= threshold`` or
        ``mixed_neighbour_share > mixed_threshold``.
    within_class_max : float
        Largest distance between two sample points of the same class.
    global_max : float
        Largest distance between any two sample points.
    ratio : float
        ``within_class_max / global_max``.
    threshold : float
        The ratio from which the two numbers count as comparable.
    per_class_max : dict
        Class label → largest within-class distance in the sample.
    sample_margin : float
        Smallest distance between differently labelled sample points (0 when
        such points coincide).
    n_used : int
        Sample size.
    class_counts : dict
        Class label → points of that class in the sample.
    mixed_neighbour_share : float
        Share of sample points whose nearest other sample point has another label.
    mixed_threshold : float
        The share above which the classes count as overlapping.
    assumptions : tuple of str
    units : str

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.assumptions import overlap_test
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [3.0, 0.0], [3.0, 1.0]])
    >>> y = np.array([0, 0, 1, 1])
    >>> report = overlap_test(X, y)
    >>> report.decision, report.n_used, report.class_counts
    ('separable', 4, {0: 2, 1: 2})
    >>> round(report.ratio, 4), report.sample_margin
    (0.3162, 3.0)
    """

    decision: str
    within_class_max: float
    global_max: float
    ratio: float
    threshold: float
    per_class_max: dict
    sample_margin: float
    n_used: int
    class_counts: dict
    assumptions: tuple[str, ...]
    units: str = UNITS_NOTE
    mixed_neighbour_share: float = 0.0
    mixed_threshold: float = 0.01

    def __str__(self) -> str:
        return (
            f"{self.decision}: largest within-class distance {self.within_class_max:.4g} vs largest "
            f"distance {self.global_max:.4g} (ratio {self.ratio:.3f}, threshold {self.threshold:g}; "
            f"{100 * self.mixed_neighbour_share:.1f} % of points have a nearest neighbour of another class; "
            f"smallest between-class distance {self.sample_margin:.4g}) on {self.n_used} points; "
            f"distances {self.units}."
        )


@dataclass(frozen=True)
class MarginEstimate:
    """Outcome of :func:`~nwbound.assumptions.empirical_margin`.

    Attributes
    ----------
    value : float
        Smallest distance between two differently labelled points.
    pair : tuple of int
        Row indices ``(i, j)`` of such a closest pair.
    pair_classes : tuple
        Their labels.
    n_samples : int
    certified : bool
        Always False: a sample cannot certify a margin.
    assumptions : tuple of str
    units : str

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.assumptions import empirical_margin
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [3.0, 0.0], [3.0, 1.0]])
    >>> y = np.array([0, 0, 1, 1])
    >>> est = empirical_margin(X, y)
    >>> est.value, est.pair, est.pair_classes, est.certified
    (3.0, (0, 2), (0, 1), False)
    """

    value: float
    pair: tuple[int, int]
    pair_classes: tuple[Any, Any]
    n_samples: int
    certified: bool = False
    assumptions: tuple[str, ...] = ()
    units: str = UNITS_NOTE

    def __str__(self) -> str:
        return (
            f"empirical margin {self.value:.4g} (rows {self.pair[0]} and {self.pair[1]}, classes "
            f"{self.pair_classes[0]!r}/{self.pair_classes[1]!r}, {self.n_samples} points); an upper "
            f"limit on any valid margin, not a certificate; {self.units}."
        )


@dataclass(frozen=True)
class LipschitzEstimate:
    """Outcome of :func:`~nwbound.assumptions.lipschitz_lower_bound` and :func:`~nwbound.assumptions.strongin_lipschitz`.

    Attributes
    ----------
    value : float
        The estimate to use (for Strongin: ``safety_factor · raw_value``).
    method : {"lower_bound", "strongin"}
    raw_value : float
        Before the safety factor (the lower bound itself for ``"lower_bound"``).
    safety_factor : float
        ``r`` (1 for the lower bound).
    certified : bool
        Always False.
    lower_bound_only : bool
        True for :func:`lipschitz_lower_bound`: ``value`` only says L cannot be
        smaller (under its premise); it is not a usable L for the bounds.
    details : dict
        Method-specific numbers (bandwidth, pair distance, diameter, ...).
    assumptions : tuple of str
    units : str

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.assumptions import lipschitz_lower_bound
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [3.0, 0.0], [3.0, 1.0]])
    >>> y = np.array([0, 0, 1, 1])
    >>> est = lipschitz_lower_bound(X, y, threshold_probability=0.5)
    >>> est.method, round(est.value, 4), est.lower_bound_only, est.certified
    ('lower_bound', 0.1581, True, False)
    """

    value: float
    method: str
    raw_value: float
    safety_factor: float
    certified: bool = False
    lower_bound_only: bool = False
    details: dict = field(default_factory=dict)
    assumptions: tuple[str, ...] = ()
    units: str = UNITS_NOTE

    def __str__(self) -> str:
        kind = "lower bound on L" if self.lower_bound_only else f"L estimate (safety factor {self.safety_factor:g})"
        return f"{self.method}: {kind} = {self.value:.4g} (raw {self.raw_value:.4g}); not certified; {self.units}."


# ---------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------


def _check_data(X: Any, y: Any, *, min_classes: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Finite 2-D ``X``, matching ``y``; returns ``X, y, classes, codes``."""
    X, y = check_X_y(X, y, dtype=[np.float64, np.float32], ensure_min_samples=2, y_numeric=False)
    classes, codes = np.unique(y, return_inverse=True)
    if classes.shape[0] < min_classes:
        raise ValueError(
            f"y has {classes.shape[0]} class(es) ({classes.tolist()}); this needs at least {min_classes} "
            "differently labelled classes."
        )
    return X, y, classes, codes


def _check_int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}.")
    return int(value)


def _label(value: Any) -> Any:
    """A numpy scalar label as a plain Python value (for dict keys and printing)."""
    return value.item() if isinstance(value, np.generic) else value


def _rng(random_state: Any) -> np.random.Generator:
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is not None and (isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral)):
        raise TypeError(f"random_state must be None, an int or a numpy Generator, got {random_state!r}.")
    return np.random.default_rng(random_state)
