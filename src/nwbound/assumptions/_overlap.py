"""The overlap test (appendix D) and the empirical margin."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from sklearn.metrics import pairwise_distances_chunked

from .._validation import check_positive
from ..datasets import stratified_subsample
from ._common import MarginEstimate, OverlapReport, _check_data, _check_int, _label, _rng


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
