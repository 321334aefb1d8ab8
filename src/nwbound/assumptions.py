"""Choosing the assumption behind the bounds from data: overlap test, margin, Lipschitz constant.

The bounds of :class:`~nwbound.NadarayaWatsonClassifier` hold under one of two
assumptions, stated **in the metric the classifier computes distances in**
(the units of the features it sees):

* overlapping classes whose probabilities ``p_c`` are ``L``-Lipschitz, or
* classes separated by a margin ``γ``.

Neither can be certified from a finite sample: ``p_c`` is never observed, only
labels drawn from it. The helpers here give the evidence one can get, each as
a small result object that states the estimate, what it assumes and that it is
in the units of the features (restate it with :func:`nwbound.restate_lipschitz`
/ :func:`nwbound.restate_margin` after rescaling):

* :func:`overlap_test` — the paper's test (appendix D): within-class vs global
  largest pairwise distance on a stratified sample;
* :func:`empirical_margin` — the smallest distance between differently
  labelled points (an *upper* limit on any valid margin);
* :func:`lipschitz_lower_bound` — appendix D's ``L ≥ P_t / sup‖y − y′‖``, a
  lower bound only;
* :func:`strongin_lipschitz` — Strongin's largest slope, on a pilot NW estimate
  (never on raw labels), times a safety factor;
* :func:`estimate_lipschitz` — the documented default for ``--lipschitz auto``:
  pilot-Strongin in the units the classifier sees, on a bounded subsample;
* :func:`sensitivity_report` — how the bounds, the review flags and the
  accuracy of flagged and unflagged predictions move with ``L``.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from sklearn.metrics import pairwise_distances_chunked
from sklearn.utils.validation import check_X_y

from ._validation import check_positive
from .datasets import stratified_subsample
from .lipschitz_check import LipschitzCheck, LipschitzSelection, check_lipschitz, select_lipschitz

__all__ = [
    "UNITS_NOTE",
    "LipschitzCheck",
    "LipschitzEstimate",
    "LipschitzSelection",
    "MarginEstimate",
    "OverlapReport",
    "empirical_margin",
    "check_lipschitz",
    "estimate_lipschitz",
    "lipschitz_lower_bound",
    "overlap_test",
    "select_lipschitz",
    "sensitivity_report",
    "strongin_lipschitz",
]

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


# ---------------------------------------------------------------------------
# overlap test
# ---------------------------------------------------------------------------


def overlap_test(
    X: Any,
    y: Any,
    *,
    n_samples: int = 1000,
    threshold: float = 0.8,
    mixed_threshold: float = 0.01,
    random_state: Any = None,
    working_memory: float | None = None,
) -> OverlapReport:
    """The paper's test (appendix D): are the classes overlapping or separated?

    On a stratified random sample of ``n_samples`` points, compare the largest
    distance between two points of the same class with the largest distance
    between any two points. If they are comparable (``ratio ≥ threshold``) a
    class spreads over the whole data cloud, so classes must overlap:
    ``"overlapping"`` (use the Lipschitz assumption). The ratio alone misses
    two classes that touch while a third lies far away (iris: setosa is apart,
    versicolor and virginica interleave, ratio 0.64), so classes also count as
    overlapping when more than ``mixed_threshold`` of the sample points have
    their nearest neighbour in another class. Otherwise every class is
    confined to a part of the space with no mixed neighbours: ``"separable"``
    (a margin may hold; check :func:`empirical_margin`).

    This is a heuristic screen, not a test with an error rate: classes that are
    separated but elongated (interleaved half-moons) also have a large
    within-class diameter. The sample's smallest between-class distance is
    reported beside it for that reason.

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
    n_samples : int, default=1000
        Size of the stratified sample (all points when ``n_samples >= n``).
    threshold : float, default=0.8
        Ratio in ``(0, 1]`` from which the within-class maximum counts as
        comparable to the global one.
    mixed_threshold : float, default=0.01
        Share in ``[0, 1)`` of sample points whose nearest neighbour has
        another label above which the classes count as overlapping.
    random_state : int, Generator or None
        Seed of the sample.
    working_memory : float, optional
        MiB for one block of the distance matrix (scikit-learn's setting when None).

    Returns
    -------
    OverlapReport

    Raises
    ------
    ValueError
        Fewer than 2 classes, a sample too small to hold 2 points of every
        class, a ``threshold`` outside ``(0, 1]``, or all points identical.

    Examples
    --------
    Overlapping classes (a smooth logistic probability along the first feature):

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-10, 10, size=(400, 2))
    >>> y = (rng.uniform(size=400) < 1 / (1 + np.exp(-0.5 * X[:, 0]))).astype(int)
    >>> overlap_test(X, y, n_samples=200, random_state=0).decision
    'overlapping'

    Two well separated pairs of points:

    >>> overlap_test([[0.0], [0.1], [5.0], [5.1]], [0, 0, 1, 1]).decision
    'separable'
    """
    X, y, classes, codes = _check_data(X, y)
    n_samples = _check_int(n_samples, "n_samples", 2)
    threshold = check_positive(threshold, "threshold")
    if threshold > 1.0:
        raise ValueError(f"threshold must lie in (0, 1], got {threshold!r}.")
    if isinstance(mixed_threshold, bool) or not isinstance(mixed_threshold, numbers.Real) or not (
        0.0 <= mixed_threshold < 1.0
    ):
        raise ValueError(f"mixed_threshold must be a number in [0, 1), got {mixed_threshold!r}.")
    mixed_threshold = float(mixed_threshold)
    idx = np.arange(codes.shape[0])
    if n_samples < codes.shape[0]:
        idx = np.sort(stratified_subsample(codes, n_samples, random_state=_rng(random_state)))
    S, c = X[idx].astype(np.float64), codes[idx]
    counts = np.bincount(c, minlength=classes.shape[0])
    if np.any(counts < 2):
        small = [f"{classes[k]!r} ({counts[k]})" for k in np.flatnonzero(counts < 2)]
        raise ValueError(
            f"The sample of {idx.shape[0]} points is too small: class(es) {', '.join(small)} have fewer than "
            "2 points, so no within-class distance exists. Increase n_samples (or give more data)."
        )
    n_classes = classes.shape[0]

    def reduce(D: np.ndarray, start: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        # Per-row summaries (sklearn requires one entry per row); reduced below.
        rows = np.arange(D.shape[0])
        same = c[start : start + D.shape[0], None] == c[None, :]
        within = np.where(same, D, -np.inf).max(axis=1)
        between = np.where(same, np.inf, D).min(axis=1)
        # Nearest other sample point (self excluded) of another class?
        nn = np.where(rows[:, None] + start == np.arange(D.shape[1])[None, :], np.inf, D).argmin(axis=1)
        return D.max(axis=1), within, between, c[nn] != c[start + rows]

    row_max, row_within, row_between, row_mixed = (
        np.concatenate(parts)
        for parts in zip(*pairwise_distances_chunked(S, reduce_func=reduce, working_memory=working_memory))
    )
    global_max = float(row_max.max())
    per_class = np.full(n_classes, -np.inf)
    np.maximum.at(per_class, c, row_within)
    margin = float(row_between.min())
    if global_max == 0.0:
        raise ValueError("All sampled points coincide: the overlap test needs points at positive distances.")
    within = float(per_class.max())
    ratio = within / global_max
    mixed = float(row_mixed.mean())
    return OverlapReport(
        decision="overlapping" if ratio >= threshold or mixed > mixed_threshold else "separable",
        within_class_max=within,
        global_max=global_max,
        ratio=ratio,
        threshold=threshold,
        per_class_max={_label(classes[k]): float(per_class[k]) for k in range(n_classes)},
        sample_margin=float(margin),
        n_used=int(idx.shape[0]),
        class_counts={_label(classes[k]): int(counts[k]) for k in range(n_classes)},
        mixed_neighbour_share=mixed,
        mixed_threshold=mixed_threshold,
        assumptions=(
            "Heuristic of the paper's appendix D: a class whose diameter is comparable to the whole "
            "data cloud's cannot be separated from the others by a margin.",
            "Classes also count as overlapping when more than mixed_threshold of the sample points have "
            "their nearest neighbour in another class (two touching classes, as iris's versicolor and "
            "virginica, even if a third class is far away).",
            "Separated but elongated classes can still read 'overlapping'; look at sample_margin too.",
            "Computed on a stratified random sample, so both maxima are lower estimates of the full data's.",
        ),
    )


# ---------------------------------------------------------------------------
# margin
# ---------------------------------------------------------------------------


def empirical_margin(
    X: Any,
    y: Any,
    *,
    algorithm: str = "auto",
    n_jobs: int | None = None,
) -> MarginEstimate:
    """Smallest distance between two differently labelled points.

    For each class ``c`` (but the last) a nearest-neighbour index over its
    points answers the points of the later classes, so every between-class
    pair is looked at once and no ``n × n`` matrix is formed (scikit-learn's
    brute-force search works in blocks within its ``working_memory``).

    Any margin ``γ`` that holds for the distribution must satisfy
    ``γ ≤`` this value, so it is an **upper** limit of the margins consistent
    with the data — not a certificate: more data can only shrink it. A value of
    0 means differently labelled points coincide, i.e. the classes overlap.

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
    algorithm : str, default="auto"
        ``sklearn.neighbors.NearestNeighbors`` algorithm.
    n_jobs : int, optional
        Threads of the neighbour search.

    Returns
    -------
    MarginEstimate
        ``value`` is recomputed exactly (``‖x_i − x_j‖``) for the closest pair found.

    Raises
    ------
    ValueError
        Fewer than 2 classes or non-finite ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [4.0], [6.0]])
    >>> est = empirical_margin(X, ["a", "a", "b", "b"])
    >>> est.value, est.pair, est.pair_classes
    (3.0, (1, 2), ('a', 'b'))
    """
    from sklearn.neighbors import NearestNeighbors

    X, y, classes, codes = _check_data(X, y)
    best = (math.inf, -1, -1)
    n_classes = classes.shape[0]
    # One index per class (few classes), queried by all later classes at once.
    for k in range(n_classes - 1):
        members = np.flatnonzero(codes == k)
        others = np.flatnonzero(codes > k)
        nn = NearestNeighbors(n_neighbors=1, algorithm=algorithm, n_jobs=n_jobs).fit(X[members])
        dist, ind = nn.kneighbors(X[others])
        j = int(np.argmin(dist[:, 0]))
        if dist[j, 0] < best[0]:
            best = (float(dist[j, 0]), int(members[ind[j, 0]]), int(others[j]))
    _, i, j = best
    # The blockwise ‖a‖² + ‖b‖² − 2a·b loses digits; restate the winner exactly.
    value = float(np.linalg.norm(X[i].astype(np.float64) - X[j].astype(np.float64)))
    return MarginEstimate(
        value=value,
        pair=(i, j),
        pair_classes=(_label(y[i]), _label(y[j])),
        n_samples=int(X.shape[0]),
        assumptions=(
            "A valid margin for the distribution can be at most this value; more data can only lower it.",
            "Labels are taken as noise-free: one mislabelled point can set the value.",
            "0 means differently labelled points coincide: use the Lipschitz assumption instead.",
        ),
    )


# ---------------------------------------------------------------------------
# Lipschitz constant
# ---------------------------------------------------------------------------

_EXACT_DIAMETER_LIMIT = 20_000


def _diameter(X: np.ndarray, method: str, working_memory: float | None) -> float:
    if method == "box":
        # The bounding-box diagonal is ≥ the diameter, so P_t / diagonal stays a lower bound.
        return float(np.linalg.norm(X.max(axis=0).astype(np.float64) - X.min(axis=0)))

    def reduce(D: np.ndarray, start: int) -> np.ndarray:
        return D.max(axis=1)

    return float(max(r.max() for r in pairwise_distances_chunked(X, reduce_func=reduce, working_memory=working_memory)))


def lipschitz_lower_bound(
    X: Any,
    y: Any,
    threshold_probability: float,
    *,
    diameter: str = "auto",
    working_memory: float | None = None,
) -> LipschitzEstimate:
    r"""Appendix D's ``L ≥ P_t / sup‖y − y′‖`` — a lower bound, never a usable L.

    Premise: somewhere in the data the class probabilities of two points
    differ by at least ``P_t`` (``threshold_probability``). Then
    ``L ≥ P_t / ‖y − y′‖ ≥ P_t / diam(X)``. This only says how small ``L``
    cannot be; the bounds need an *upper* bound on ``L``, which no sample can
    certify (on the paper's synthetic data this gives 0.07–0.71 against a true
    L of 3.0). Use it as a sanity floor for :func:`strongin_lipschitz`.

    Parameters
    ----------
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
        Labels; at least two classes must occur, else nothing in the data
        suggests that the probabilities change at all.
    threshold_probability : float
        ``P_t`` in ``(0, 1]``.
    diameter : {"auto", "exact", "box"}, default="auto"
        ``"exact"``: the largest pairwise distance (blockwise, O(n²) time);
        ``"box"``: the bounding-box diagonal (≥ the diameter, so the result
        is still a lower bound, only a weaker one); ``"auto"``: exact up to
        20 000 points, box beyond.
    working_memory : float, optional
        MiB for one block of the distance matrix.

    Returns
    -------
    LipschitzEstimate
        ``lower_bound_only=True``; ``details`` holds the diameter and ``P_t``.

    Raises
    ------
    ValueError
        Fewer than 2 classes, ``threshold_probability`` outside ``(0, 1]``,
        an unknown ``diameter`` or all points identical.

    Examples
    --------
    The diameter of these points is 5, so ``L ≥ 0.5 / 5``:

    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0], [3.0, 3.0]])
    >>> est = lipschitz_lower_bound(X, [0, 1, 0, 1], threshold_probability=0.5)
    >>> round(est.value, 6), est.details["diameter"], est.lower_bound_only
    (0.1, 5.0, True)
    """
    X, y, classes, codes = _check_data(X, y)
    p_t = check_positive(threshold_probability, "threshold_probability")
    if p_t > 1.0:
        raise ValueError(f"threshold_probability is a probability difference in (0, 1], got {p_t!r}.")
    if diameter not in ("auto", "exact", "box"):
        raise ValueError(f"diameter must be 'auto', 'exact' or 'box', got {diameter!r}.")
    method = diameter if diameter != "auto" else ("exact" if X.shape[0] <= _EXACT_DIAMETER_LIMIT else "box")
    diam = _diameter(X, method, working_memory)
    if diam == 0.0:
        raise ValueError("All points of X coincide: the diameter is 0 and no Lipschitz bound follows.")
    value = p_t / diam
    return LipschitzEstimate(
        value=value,
        method="lower_bound",
        raw_value=value,
        safety_factor=1.0,
        lower_bound_only=True,
        details={"threshold_probability": p_t, "diameter": diam, "diameter_method": method},
        assumptions=(
            f"Some two points' class probabilities differ by at least P_t = {p_t:g}.",
            "A LOWER bound only: the true L may be much larger; it cannot certify the Lipschitz assumption.",
        ),
    )


def _pilot_bandwidth(X: np.ndarray, rng: np.random.Generator) -> float:
    """Median distance to the ⌈√m⌉-th neighbour (label-free rule for the pilot)."""
    from sklearn.neighbors import NearestNeighbors

    m = X.shape[0]
    k = min(m - 1, max(1, math.ceil(math.sqrt(m))))
    probe = rng.choice(m, size=min(256, m), replace=False)
    dist, _ = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X[probe])
    lam = float(np.median(dist[:, -1]))
    if not lam > 0:
        raise ValueError("Cannot pick a pilot bandwidth: the points' neighbours coincide; pass bandwidth=.")
    return lam


def _pilot_estimate(
    X: np.ndarray,
    y: np.ndarray,
    codes: np.ndarray,
    rng: np.random.Generator,
    bandwidth: float | str,
    kernel: str,
    n_eval: int,
    working_memory: float | None,
) -> tuple[float, int, np.ndarray, np.ndarray]:
    """Pilot NW fit on one random half; ``p̂`` at up to ``n_eval`` points of the other.

    Returns the pilot bandwidth, the pilot size, the evaluation rows of ``X``
    (those with training mass in reach) and their ``p̂`` (rows × classes).
    """
    # The pilot's kernel sums are computed here, not by the classifier: nwbound.estimators calls
    # this module for lipschitz="auto", so this module must not import it (no import cycle).
    from .kernels import get_kernel

    perm = rng.permutation(X.shape[0])
    half = X.shape[0] // 2
    pilot_idx, eval_idx = perm[:half], perm[half:]
    if np.unique(codes[pilot_idx]).shape[0] < 2:
        raise ValueError("The pilot half holds a single class; give more data or another random_state.")
    X_pilot = X[pilot_idx]
    lam = _pilot_bandwidth(X_pilot, rng) if isinstance(bandwidth, str) else float(bandwidth)
    if eval_idx.shape[0] > n_eval:
        eval_idx = np.sort(rng.choice(eval_idx, size=n_eval, replace=False))
    K = get_kernel(kernel)
    _, pilot_codes = np.unique(y[pilot_idx], return_inverse=True)
    onehot = np.eye(int(pilot_codes.max()) + 1)[pilot_codes]
    # Only κ and p̂ are needed: the Nadaraya-Watson class sums Σ K(‖x − x_i‖/λ)·1{y_i = c}.
    class_sums = np.vstack(list(pairwise_distances_chunked(
        X[eval_idx], X_pilot, reduce_func=lambda D, start: np.asarray(K(D / lam), dtype=np.float64) @ onehot,
        working_memory=working_memory,
    )))
    kappa = class_sums.sum(axis=1)
    keep = kappa > 0
    if keep.sum() < 2:
        raise ValueError(
            f"Fewer than 2 evaluation points have training mass within the pilot bandwidth {lam:.4g}; "
            "pass a larger bandwidth."
        )
    return lam, half, eval_idx[keep], class_sums[keep] / kappa[keep, None]


def _default_pair_distance(E: np.ndarray, lam: float) -> float:
    """3λ in low dimension; capped at the median pair distance (distances concentrate in high dimension)."""
    probe = E[: min(500, E.shape[0])].astype(np.float64)
    sq = np.einsum("ij,ij->i", probe, probe)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * probe @ probe.T, 0.0)
    median = float(np.median(np.sqrt(d2[np.triu_indices(probe.shape[0], 1)])))
    return min(3.0 * lam, median) if median > 0 else 3.0 * lam


def _steepest_slopes(
    E: np.ndarray, P: np.ndarray, h: float, working_memory: float | None
) -> tuple[np.ndarray, np.ndarray, int]:
    """Per evaluation point: the steepest slope of ``p̂`` to a point ≥ h away, that point, and the pair count."""

    def reduce(D: np.ndarray, start: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows = slice(start, start + D.shape[0])
        diff = np.zeros_like(D)
        for c in range(P.shape[1]):  # few classes; each step is a full block operation
            np.maximum(diff, np.abs(P[rows, c, None] - P[None, :, c]), out=diff)
        far = D >= h
        slope = np.where(far, diff / np.where(far, D, 1.0), -np.inf)
        arg = slope.argmax(axis=1)
        return slope[np.arange(D.shape[0]), arg], arg, far.sum(axis=1)

    best, partner, n_far = (
        np.concatenate(parts)
        for parts in zip(*pairwise_distances_chunked(E, reduce_func=reduce, working_memory=working_memory))
    )
    n_pairs = int(n_far.sum()) // 2
    if n_pairs == 0:
        raise ValueError(
            f"No two evaluation points are at least min_pair_distance={h:.4g} apart; lower min_pair_distance."
        )
    return best, partner, n_pairs


def strongin_lipschitz(
    X: Any,
    y: Any,
    *,
    safety_factor: float = 2.0,
    min_pair_distance: float | None = None,
    random_state: Any = None,
    bandwidth: float | str = "auto",
    kernel: str = "epanechnikov",
    n_eval: int = 2000,
    working_memory: float | None = None,
) -> LipschitzEstimate:
    r"""Strongin's estimate of ``L``: the largest slope of a pilot estimate, times ``r``.

    Strongin (1973) estimates a Lipschitz constant by the largest observed
    slope ``max |f(y) − f(y′)| / ‖y − y′‖``. Applied to **raw labels** this is
    meaningless: labels are 0/1 draws from ``p_c``, so two nearby points with
    different labels give a slope ``1/‖y − y′‖`` whatever ``p_c`` is; the
    maximum measures the sampling density, not the smoothness, and grows
    without bound with ``n`` (values of 10⁴ and more on data with L = 3).

    Here the slopes are taken of a pilot Nadaraya-Watson estimate ``p̂`` fitted
    on one random half of the data and evaluated on (up to ``n_eval``) points
    of the other half, over pairs at least ``h = min_pair_distance`` apart:

    .. math:: \hat L = r \cdot \max_{\|y-y'\| \ge h} \frac{\max_c |\hat p_c(y) - \hat p_c(y')|}{\|y - y'\|}.

    Smoothing flattens ``p̂`` (slopes too small) while its noise adds spurious
    slope (too large), most for close pairs — hence ``h``. On the paper's
    logistic data the maximum lands at 1–2 times the true L; it can undershoot,
    hence the safety factor ``r`` (≥ 1.5–2), which is an assumption to report
    along with the results (show how they move with L:
    :func:`sensitivity_report`).

    Parameters
    ----------
    X : array-like of shape (n, d)
        At least 4 points (two halves of two).
    y : array-like of shape (n,)
    safety_factor : float, default=2.0
        ``r ≥ 1``.
    min_pair_distance : float, optional
        ``h``; default three pilot bandwidths (closer pairs mostly measure
        noise), capped at the median distance between evaluation points (in
        high dimension 3λ can exceed every pairwise distance).
    random_state : int, Generator or None
        Seed of the split, the evaluation subsample and the bandwidth probe.
    bandwidth : float or "auto", default="auto"
        Pilot λ. ``"auto"``: the median distance (over up to 256 pilot points)
        to the ``⌈√m⌉``-th nearest neighbour in the pilot half of size ``m`` —
        label-free.
    kernel : str, default="epanechnikov"
        Kernel of the pilot.
    n_eval : int, default=2000
        Held-out points at which ``p̂`` is compared (``n_eval²/2`` pairs).
    working_memory : float, optional
        MiB for one block of pairwise distances (and of the pilot's sums).

    Returns
    -------
    LipschitzEstimate
        ``details``: bandwidth, min_pair_distance, n_pilot, n_eval, n_pairs,
        the steepest pair (row indices of X) and its distance.

    Raises
    ------
    ValueError
        Bad parameters, fewer than 2 classes in the pilot half, or no pair of
        evaluation points at least ``h`` apart.

    Examples
    --------
    Class probability ``1/(1 + exp(−x₀/2))``, whose Lipschitz constant is 1/8:

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-10, 10, size=(400, 2))
    >>> y = (rng.uniform(size=400) < 1 / (1 + np.exp(-0.5 * X[:, 0]))).astype(int)
    >>> est = strongin_lipschitz(X, y, random_state=0)
    >>> est.method, est.safety_factor, est.value == 2.0 * est.raw_value
    ('strongin', 2.0, True)
    >>> bool(0.05 < est.value < 1.0), est.details["n_pilot"]
    (True, 200)
    """
    X, y, classes, codes = _check_data(X, y)
    r = check_positive(safety_factor, "safety_factor")
    if r < 1.0:
        raise ValueError(f"safety_factor must be >= 1 (it inflates the estimate), got {r!r}.")
    n_eval = _check_int(n_eval, "n_eval", 2)
    if X.shape[0] < 4:
        raise ValueError(f"strongin_lipschitz needs at least 4 points (two halves of two), got {X.shape[0]}.")
    if not (isinstance(bandwidth, str) and bandwidth == "auto"):
        if isinstance(bandwidth, str):
            raise ValueError(f"bandwidth must be a number > 0 or 'auto', got {bandwidth!r}.")
        bandwidth = check_positive(bandwidth, "bandwidth")
    h = None if min_pair_distance is None else check_positive(min_pair_distance, "min_pair_distance")
    rng = _rng(random_state)
    lam, half, eval_idx, P = _pilot_estimate(X, y, codes, rng, bandwidth, kernel, n_eval, working_memory)
    E = X[eval_idx]
    if h is None:
        h = _default_pair_distance(E, lam)
    best, partner, n_pairs = _steepest_slopes(E, P, h, working_memory)
    i = int(np.argmax(best))
    j = int(partner[i])
    raw = float(best[i])
    return LipschitzEstimate(
        value=r * raw,
        method="strongin",
        raw_value=raw,
        safety_factor=r,
        details={
            "bandwidth": lam,
            "min_pair_distance": h,
            "kernel": kernel,
            "n_pilot": int(half),
            "n_eval": int(eval_idx.shape[0]),
            "n_pairs": n_pairs,
            "pair": (int(eval_idx[i]), int(eval_idx[j])),
            "pair_distance": float(np.linalg.norm(E[i].astype(np.float64) - E[j])),
        },
        assumptions=(
            "Heuristic: the largest slope of a smoothed pilot estimate over pairs at least "
            f"h = {h:.4g} apart, inflated by the safety factor r = {r:g}; it can undershoot the true L.",
            "Labels are i.i.d. draws from Lipschitz class probabilities (overlapping classes).",
            "Report r as an assumption and show how the results move with L (sensitivity_report).",
        ),
    )


def estimate_lipschitz(
    X: Any,
    y: Any,
    *,
    scaler: Any = None,
    safety_factor: float = 2.0,
    max_samples: int = 20_000,
    random_state: Any = 0,
    working_memory: float | None = None,
) -> LipschitzEstimate:
    """The documented default ``L`` for ``lipschitz="auto"`` / ``nwbound fit --lipschitz auto``.

    The pilot-Strongin estimate of :func:`strongin_lipschitz` (largest slope of
    a pilot Nadaraya-Watson estimate fitted on one half of the data, over
    pairs at least three pilot bandwidths apart, times the safety factor
    ``r``), computed **in the units the classifier sees**: on
    ``scaler.transform(X)`` when a fitted ``scaler`` is given, else on ``X``.
    Pass ``value`` as ``lipschitz=`` to a classifier fitted on the same
    features, unchanged. At most ``max_samples`` rows (drawn at random) are
    used, so the cost stays bounded on large tables.

    The estimate is a heuristic, not a certificate: it can undershoot (hence
    ``r``; the notes measured 1–2× the true L on the paper's logistic field)
    and, on real data where classes change abruptly, it can be so large that
    most bounds are trivial — :func:`nwbound.diagnostics.bound_usefulness`
    says so and what L would be needed; :func:`sensitivity_report` shows how
    the results move with L.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Training features, raw (with ``scaler``) or as the classifier sees them.
    y : array-like of shape (n,)
    scaler : fitted transformer, optional
        E.g. the ``MinMaxScaler`` the classifier's inputs go through.
    safety_factor : float, default=2.0
        ``r ≥ 1``.
    max_samples : int, default=20000
        Rows used (a random subset when ``n`` is larger).
    random_state : int, Generator or None, default=0
        Seed of the subset, the split and the evaluation points (fixed by
        default so that ``--lipschitz auto`` is reproducible).
    working_memory : float, optional
        MiB per block of pairwise distances.

    Returns
    -------
    LipschitzEstimate
        ``value`` (the L to use), ``raw_value`` (before ``r``), ``units``
        (which features it is stated in) and ``details``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-10, 10, size=(2000, 2))
    >>> y = (rng.uniform(size=2000) < 1 / (1 + np.exp(-0.5 * X[:, 0]))).astype(int)
    >>> est = estimate_lipschitz(X, y, scaler=MinMaxScaler().fit(X))
    >>> bool(1.0 < est.value < 50.0), est.safety_factor
    (True, 2.0)
    >>> "scaled" in est.units
    True
    """
    max_samples = _check_int(max_samples, "max_samples", 4)
    X_arr, y_arr, _, _ = _check_data(X, y)
    units = UNITS_NOTE
    if scaler is not None:
        if not hasattr(scaler, "transform"):
            raise TypeError(f"scaler must be a fitted transformer with .transform, got {type(scaler).__name__}.")
        X_arr = np.asarray(scaler.transform(X_arr), dtype=np.float64)
        units = (
            f"in the units of the scaled features ({type(scaler).__name__}.transform(X)), the units the "
            "classifier sees: pass it as lipschitz= unchanged"
        )
    rng = _rng(random_state)
    if X_arr.shape[0] > max_samples:
        keep = np.sort(rng.choice(X_arr.shape[0], size=max_samples, replace=False))
        X_arr, y_arr = X_arr[keep], y_arr[keep]
    est = strongin_lipschitz(
        X_arr, y_arr, safety_factor=safety_factor, random_state=rng, working_memory=working_memory
    )
    details = dict(est.details, n_used=int(X_arr.shape[0]))
    return dataclasses.replace(est, units=units, details=details)


# ---------------------------------------------------------------------------
# sensitivity of the results to L
# ---------------------------------------------------------------------------


def sensitivity_report(
    model: Any,
    X_test: Any,
    y_test: Any,
    lipschitz_values: Sequence[float],
    *,
    X_train: Any = None,
    y_train: Any = None,
    sample_weight: Any = None,
) -> list[dict[str, Any]]:
    """How bounds, flags and the accuracy of flagged predictions move with ``L``.

    For each ``L`` the model is cloned with ``lipschitz=L`` (and ``margin=None``)
    and refitted — cheap for the Nadaraya-Watson classifier, whose fit only
    stores the data — then queried on ``X_test``.

    Parameters
    ----------
    model : estimator
        A fitted :class:`~nwbound.NadarayaWatsonClassifier` (its stored
        training set is reused), or any estimator with a ``lipschitz``
        parameter and ``predict_interval`` together with ``X_train``/``y_train``.
    X_test : array-like of shape (m, d)
    y_test : array-like of shape (m,)
    lipschitz_values : sequence of float
        The L values to try (each > 0, in the units of the features).
    X_train, y_train, sample_weight : array-like, optional
        Training data; default the fitted model's own.

    Returns
    -------
    list of dict
        One row per L: ``lipschitz``, ``accuracy``, ``mean_epsilon`` (ε of the
        predicted class: the half-width of its interval), ``share_vacuous`` (no
        training mass reached the query, κ = 0: :attr:`~nwbound.PredictionInterval.vacuous`),
        ``share_trivial`` (every class interval is [0, 1], vacuous rows included:
        :attr:`~nwbound.PredictionInterval.trivial`),
        ``share_flagged`` (bounds do not single out one class, see
        :func:`nwbound.metrics.review_flags`), ``accuracy_flagged`` and
        ``accuracy_unflagged`` (NaN for an empty group).

    Raises
    ------
    ValueError
        Empty or non-positive ``lipschitz_values``, an unfitted ``model``
        without ``X_train``, ``X_train`` without ``y_train``, or ``y_test``
        of the wrong length.
    TypeError
        ``model`` has no ``lipschitz`` parameter.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-10, 10, size=(400, 2))
    >>> y = (rng.uniform(size=400) < 1 / (1 + np.exp(-0.5 * X[:, 0]))).astype(int)
    >>> from nwbound import NadarayaWatsonClassifier
    >>> clf = NadarayaWatsonClassifier(bandwidth=2.0, lipschitz=0.25).fit(X, y)
    >>> rows = sensitivity_report(clf, X[:100], y[:100], [0.05, 0.25])
    >>> [row["lipschitz"] for row in rows]
    [0.05, 0.25]
    >>> bool(rows[0]["mean_epsilon"] < rows[1]["mean_epsilon"])
    True
    >>> bool(rows[0]["share_flagged"] <= rows[1]["share_flagged"])
    True
    """
    from sklearn.base import clone

    from .metrics import review_flags

    values = np.atleast_1d(np.asarray(lipschitz_values, dtype=np.float64)) if lipschitz_values is not None else None
    if values is None or values.size == 0 or not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise ValueError(f"lipschitz_values must be a non-empty list of finite numbers > 0, got {lipschitz_values!r}.")
    if not hasattr(model, "get_params") or "lipschitz" not in model.get_params():
        raise TypeError(f"model must be an estimator with a `lipschitz` parameter, got {type(model).__name__}.")
    if X_train is None:
        train = getattr(model, "_train", None)
        if train is None:
            raise ValueError(
                "model is not a fitted NadarayaWatsonClassifier: fit it first or pass X_train and y_train."
            )
        state = model.get_fitted_state()  # X in its documented feature_unit (float32 far from 1)
        unit = float(state.get("feature_unit", 1.0))
        X_train = state["X"] if unit == 1.0 else state["X"].astype(np.float64) * unit
        y_train = np.asarray(model.classes_)[state["labels"]]
        sample_weight = state.get("weights") if sample_weight is None else sample_weight
    elif y_train is None:
        raise ValueError("Pass y_train together with X_train.")
    y_test = np.asarray(y_test)
    rows: list[dict[str, Any]] = []
    for L in values:
        params = {"lipschitz": float(L)}
        if "margin" in model.get_params():
            params["margin"] = None  # the two assumptions are exclusive
        m = clone(model).set_params(**params)
        m.fit(X_train, y_train, sample_weight=sample_weight)
        iv = m.predict_interval(X_test)
        if y_test.shape[0] != iv.proba.shape[0]:
            raise ValueError(f"y_test has {y_test.shape[0]} labels for {iv.proba.shape[0]} rows of X_test.")
        top = np.argmax(iv.proba, axis=1)
        correct = np.asarray(m.classes_)[top] == y_test
        eps = iv.epsilon[np.arange(top.shape[0]), top]
        flagged = review_flags(iv)
        rows.append(
            {
                "lipschitz": float(L),
                "accuracy": float(correct.mean()),
                "mean_epsilon": float(eps.mean()),
                "share_vacuous": float(np.mean(iv.vacuous)),
                "share_trivial": float(np.mean(iv.trivial)),
                "share_flagged": float(flagged.mean()),
                "accuracy_flagged": float(correct[flagged].mean()) if flagged.any() else math.nan,
                "accuracy_unflagged": float(correct[~flagged].mean()) if (~flagged).any() else math.nan,
            }
        )
    return rows
