r"""Synthetic classification data with a *known* Lipschitz constant or margin.

These generators reproduce the synthetic experiments of the paper (Sec. 5 and
Appendix C) and return the quantities the bounds need — the Lipschitz constant
``L`` of every true class probability, or the class margin ``γ`` — **in the units
of the returned features** (see ``shared/notes/bounds.md``, "Lipschitz units").

Units after scaling
-------------------
With per-feature min-max scaling ``s = (x - lo) / r`` (``r_j`` the range of
feature ``j``) the raw point is ``x = lo + diag(r) s``. Hence

* a Lipschitz constant transforms as ``L_s = L · ‖diag(r)‖₂ = L · max_j r_j``
  (chain rule: ``∇_s p = diag(r) ∇_x p``), e.g. the paper's ``L = 0.15`` on
  ``[-10, 10]²`` becomes ``L_s = 0.15 · 20 = 3.0``;
* a margin transforms as ``γ_s = γ · min_j (1 / r_j) = γ / max_j r_j``, because
  ``‖diag(r)⁻¹ v‖ ≥ ‖v‖ / max_j r_j`` for every difference vector ``v``.

Both restatements are valid (never optimistic) for every pair of points.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy.special import softmax

from ._common import check_choice, check_n_samples, check_positive, check_random_generator

__all__ = [
    "SyntheticData",
    "make_lipschitz_logistic",
    "make_margin_clusters",
    "make_softmax_field",
]

ScaleOption = Literal["minmax", "box"] | None


@dataclass(frozen=True, eq=False)
class SyntheticData:
    """A synthetic data set together with its true class probabilities.

    All arrays and constants are expressed in the units of ``X`` (the *returned*
    units, i.e. after scaling when the generator was asked to scale).

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features)
        Features, float64.
    y : ndarray of shape (n_samples,)
        Labels (int64), values in ``classes``.
    proba_true : ndarray of shape (n_samples, n_classes)
        True class probabilities ``p_c(X_i)``; columns in ``classes`` order.
    classes : ndarray of shape (n_classes,)
        The class labels ``0, …, C-1``.
    lipschitz : float or None
        A valid Lipschitz constant (Euclidean metric, units of ``X``) of every
        ``p_c``; ``None`` for margin data.
    margin : float or None
        A valid margin ``γ`` in the units of ``X``: points with different labels
        are at least ``γ`` apart; ``None`` for Lipschitz data.
    scale_min, scale_range : ndarray of shape (n_features,) or None
        Scaling used: ``raw = scale_min + scale_range * X``; ``None`` if unscaled.
    kind : {"logistic", "softmax", "margin"}
        Which generator made the data.
    weights, intercepts : ndarray or None
        Raw-unit softmax parameters: ``p = softmax(steepness · (X_raw @ weights.T + intercepts))``
        (``kind`` "logistic" and "softmax").
    steepness : float or None
        The factor ``k`` above.
    centers : ndarray of shape (n_classes, n_features) or None
        Raw-unit cluster centres (``kind="margin"``).
    cluster_radius : float or None
        Raw-unit cluster radius (``kind="margin"``).
    lipschitz_raw, margin_raw : float or None
        ``lipschitz`` / ``margin`` in the raw (unscaled) units.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.datasets import make_softmax_field
    >>> data = make_softmax_field(200, n_classes=3, random_state=0)
    >>> data.X.shape, data.proba_true.shape, data.n_classes, data.kind
    ((200, 2), (200, 3), 3, 'softmax')
    >>> bool(np.allclose(data.true_proba(data.X), data.proba_true))
    True
    """

    X: np.ndarray
    y: np.ndarray
    proba_true: np.ndarray
    classes: np.ndarray
    lipschitz: float | None
    margin: float | None
    scale_min: np.ndarray | None
    scale_range: np.ndarray | None
    kind: str
    weights: np.ndarray | None = None
    intercepts: np.ndarray | None = None
    steepness: float | None = None
    centers: np.ndarray | None = None
    cluster_radius: float | None = None
    lipschitz_raw: float | None = None
    margin_raw: float | None = None

    @property
    def n_classes(self) -> int:
        """Number of classes ``C``.

        Examples
        --------
        >>> from nwbound.datasets import make_margin_clusters
        >>> make_margin_clusters(10, n_classes=3, random_state=0).n_classes
        3
        """
        return int(self.classes.shape[0])

    @property
    def n_features(self) -> int:
        """Number of features ``d``.

        Examples
        --------
        >>> from nwbound.datasets import make_margin_clusters
        >>> make_margin_clusters(10, n_features=4, random_state=0).n_features
        4
        """
        return int(self.X.shape[1])

    def _check_points(self, X_new: Any, name: str) -> np.ndarray:
        X_new = np.asarray(X_new, dtype=np.float64)
        if X_new.ndim != 2 or X_new.shape[1] != self.n_features:
            raise ValueError(
                f"{name} must have shape (n_points, {self.n_features}), got shape {X_new.shape}; "
                "reshape a single point with X.reshape(1, -1)."
            )
        if not np.all(np.isfinite(X_new)):
            raise ValueError(f"{name} contains NaN or infinite values.")
        return X_new

    def to_raw(self, X_new: Any) -> np.ndarray:
        """Map points from the returned units back to the raw units.

        Parameters
        ----------
        X_new : array-like of shape (n_points, n_features)

        Returns
        -------
        ndarray of shape (n_points, n_features)

        Examples
        --------
        >>> from nwbound.datasets import make_softmax_field
        >>> data = make_softmax_field(200, random_state=0)  # box (-10, 10), scaled to [0, 1]
        >>> data.to_raw([[0.0, 0.0], [1.0, 1.0]]).round(1).tolist()  # the sample's min and max
        [[-9.9, -10.0], [9.9, 9.9]]
        """
        X_new = self._check_points(X_new, "X_new")
        if self.scale_min is None:
            return X_new
        return self.scale_min + self.scale_range * X_new

    def from_raw(self, X_raw: Any) -> np.ndarray:
        """Map raw-unit points into the returned units (the inverse of :meth:`to_raw`).

        Use this to scale a test set drawn separately with the same settings.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.datasets import make_softmax_field
        >>> data = make_softmax_field(200, random_state=0)
        >>> bool(np.allclose(data.from_raw(data.to_raw(data.X[:5])), data.X[:5]))
        True
        """
        X_raw = self._check_points(X_raw, "X_raw")
        if self.scale_min is None:
            return X_raw
        return (X_raw - self.scale_min) / self.scale_range

    def true_proba(self, X_new: Any) -> np.ndarray:
        """Evaluate the true class probabilities at new points.

        Parameters
        ----------
        X_new : array-like of shape (n_points, n_features)
            Points in the returned units (the units of ``X``).

        Returns
        -------
        ndarray of shape (n_points, n_classes)
            ``p_c(X_new)``. For margin data this is the one-hot vector of the
            nearest cluster centre, which equals the true conditional probability
            on the support (the balls); off the support it is an extension.

        Examples
        --------
        >>> from nwbound.datasets import make_margin_clusters
        >>> data = make_margin_clusters(20, random_state=0)
        >>> data.true_proba(data.X[:3]).tolist(), data.y[:3].tolist()  # one-hot of the cluster
        ([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]], [1, 1, 1])
        """
        raw = self.to_raw(X_new)
        if self.kind == "margin":
            return _nearest_center_onehot(raw, self.centers)
        return _softmax_field(raw, self.weights, self.intercepts, self.steepness)


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _softmax_field(X_raw: np.ndarray, weights: np.ndarray, intercepts: np.ndarray, k: float) -> np.ndarray:
    # scipy's softmax subtracts the row max, so large logits cannot overflow.
    return softmax(k * (X_raw @ weights.T + intercepts), axis=1)


def _nearest_center_onehot(X_raw: np.ndarray, centers: np.ndarray) -> np.ndarray:
    # ‖x − μ‖² = ‖x‖² − 2 x·μ + ‖μ‖²; the ‖x‖² term does not change the argmin.
    score = (centers**2).sum(axis=1) - 2.0 * (X_raw @ centers.T)
    nearest = np.argmin(score, axis=1)
    onehot = np.zeros((X_raw.shape[0], centers.shape[0]))
    onehot[np.arange(X_raw.shape[0]), nearest] = 1.0
    return onehot


def _sample_labels(proba: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw one label per row of ``proba`` by inverse-CDF sampling (vectorised)."""
    cdf = np.cumsum(proba, axis=1)
    u = rng.random(proba.shape[0])[:, None]
    # Count thresholds passed; only the first C-1 so rounding of cdf[-1] cannot yield C.
    return (u >= cdf[:, :-1]).sum(axis=1).astype(np.int64)


def _check_box(box: Any, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    try:
        low, high = box
    except (TypeError, ValueError):
        raise ValueError(f"box must be a pair (low, high) of numbers or length-{n_features} arrays, got {box!r}.") from None
    try:
        low = np.broadcast_to(np.asarray(low, dtype=np.float64), (n_features,)).copy()
        high = np.broadcast_to(np.asarray(high, dtype=np.float64), (n_features,)).copy()
    except (TypeError, ValueError):
        raise ValueError(
            f"box bounds must be numbers or arrays of length n_features={n_features}, got {box!r}."
        ) from None
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        raise ValueError(f"box bounds must be finite, got {box!r}.")
    if np.any(high <= low):
        raise ValueError(f"box must satisfy low < high in every feature, got low={low}, high={high}.")
    return low, high


def _check_int_param(value: Any, name: str, minimum: int) -> int:
    return check_n_samples(value, name, minimum=minimum)


def _minmax(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo = X.min(axis=0)
    rng = X.max(axis=0) - lo
    # A constant feature (e.g. n_samples=1) keeps its raw scale, as in sklearn's MinMaxScaler.
    rng[rng == 0.0] = 1.0
    return lo, rng


def _scale(
    X_raw: np.ndarray, scale: Any, box: tuple[np.ndarray, np.ndarray] | None
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Apply the requested scaling; return ``(X, scale_min, scale_range)``."""
    if scale is None:
        return X_raw, None, None
    if scale == "minmax":
        lo, rng = _minmax(X_raw)
    else:  # "box": the known domain, identical for every draw
        lo, rng = box[0], box[1] - box[0]
    return (X_raw - lo) / rng, lo, rng


def _uniform_in_box(rng: np.random.Generator, n: int, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    return low + (high - low) * rng.random((n, low.shape[0]))


# ---------------------------------------------------------------------------
# generators
# ---------------------------------------------------------------------------


def make_lipschitz_logistic(
    n_samples: int,
    *,
    lipschitz: float = 0.15,
    box: tuple[Any, Any] = (-10.0, 10.0),
    n_features: int = 2,
    direction: Any = None,
    offset: float = 0.0,
    scale: ScaleOption = "minmax",
    random_state: int | np.random.Generator | None = None,
) -> SyntheticData:
    r"""Binary data whose class-1 probability is a logistic ramp with Lipschitz constant ``L``.

    Points are uniform in ``box`` and

    .. math:: p_1(y) = \sigma\big(k\,(w \cdot (y - m) + b)\big),\qquad k = 4L,

    with ``‖w‖ = 1``, ``m`` the centre of the box and ``b = offset``. Since
    ``∇p_1 = k p_1 (1 - p_1) w`` peaks at ``p_1 = 1/2`` with norm ``k/4``, ``L`` is the
    exact Lipschitz constant of ``p_1`` and of ``p_0 = 1 - p_1`` in the raw units
    (paper, Appendix C). Labels are drawn from ``p``.

    Parameters
    ----------
    n_samples : int
        Number of points, ``>= 1``.
    lipschitz : float, default=0.15
        ``L`` in the raw units (the paper uses 0.15 on ``[-10, 10]²``).
    box : (low, high), default=(-10.0, 10.0)
        Sampling domain; each bound a number or a length-``n_features`` array.
    n_features : int, default=2
        Dimension ``d``.
    direction : array-like of shape (n_features,), optional
        Normal ``w`` of the decision hyperplane (normalised here). Default: a
        random unit vector drawn from ``random_state``.
    offset : float, default=0.0
        Signed shift ``b`` of the hyperplane from the box centre (raw units);
        ``p_1 = 1/2`` on ``{y : w·(y - m) = -b}``.
    scale : {"minmax", "box", None}, default="minmax"
        ``"minmax"``: map each feature to ``[0, 1]`` using the sample's min and
        range (as sklearn's ``MinMaxScaler`` fitted on ``X``, the paper's setup);
        ``"box"``: use the box bounds instead (same map for every draw);
        ``None``: raw units. ``lipschitz`` is restated in the returned units:
        ``L · max_j range_j``.
    random_state : int, numpy.random.Generator or None
        Seed for reproducibility.

    Returns
    -------
    SyntheticData
        ``kind="logistic"``, classes ``[0, 1]``, ``lipschitz`` in the units of ``X``.

    Raises
    ------
    ValueError
        If ``offset`` is not finite, or ``direction`` is zero, not finite or of
        the wrong shape (and for invalid sizes, ``box`` or ``scale``).

    Examples
    --------
    >>> data = make_lipschitz_logistic(1000, scale="box", random_state=0)
    >>> round(data.lipschitz, 6)  # 0.15 on [-10, 10]² is 3.0 on [0, 1]²
    3.0
    """
    n_samples = check_n_samples(n_samples)
    L = check_positive(lipschitz, "lipschitz")
    n_features = _check_int_param(n_features, "n_features", 1)
    low, high = _check_box(box, n_features)
    check_choice(scale, "scale", ("minmax", "box", None))
    if isinstance(offset, bool) or not isinstance(offset, numbers.Real) or not math.isfinite(offset):
        raise ValueError(f"offset must be a finite number, got {offset!r}.")
    rng = check_random_generator(random_state)

    if direction is None:
        w = rng.standard_normal(n_features)
    else:
        w = np.asarray(direction, dtype=np.float64)
        if w.shape != (n_features,):
            raise ValueError(f"direction must have shape ({n_features},), got {w.shape}.")
        if not np.all(np.isfinite(w)):
            raise ValueError("direction must be finite.")
    norm = float(np.linalg.norm(w))
    if norm == 0.0:
        raise ValueError("direction must be a non-zero vector.")
    w = w / norm

    k = 4.0 * L
    centre = 0.5 * (low + high)
    # Two-class softmax with rows ±w/2 reproduces σ(k(w·y + b0)) exactly, so the
    # logistic and C-class fields share one evaluation path.
    b0 = float(offset) - float(w @ centre)
    weights = np.vstack([-0.5 * w, 0.5 * w])
    intercepts = np.array([-0.5 * b0, 0.5 * b0])

    X_raw = _uniform_in_box(rng, n_samples, low, high)
    proba = _softmax_field(X_raw, weights, intercepts, k)
    y = _sample_labels(proba, rng)
    X, lo, rg = _scale(X_raw, scale, (low, high))
    L_out = L if rg is None else L * float(rg.max())
    return SyntheticData(
        X=X,
        y=y,
        proba_true=proba,
        classes=np.arange(2, dtype=np.int64),
        lipschitz=L_out,
        margin=None,
        scale_min=lo,
        scale_range=rg,
        kind="logistic",
        weights=weights,
        intercepts=intercepts,
        steepness=k,
        lipschitz_raw=L,
    )


def make_softmax_field(
    n_samples: int,
    *,
    n_classes: int = 5,
    lipschitz: float = 0.15,
    box: tuple[Any, Any] = (-10.0, 10.0),
    n_features: int = 2,
    centers: Any = None,
    scale: ScaleOption = "minmax",
    random_state: int | np.random.Generator | None = None,
) -> SyntheticData:
    r"""``C``-class data from a softmax field with a certified Lipschitz constant.

    Points are uniform in ``box``; with class prototypes ``μ_c`` (rows of
    ``centers``) and ``w_c = μ_c − m`` (``m`` the box centre),

    .. math:: p_c(y) = \operatorname{softmax}_c\big(k\,(w_c\cdot(y-m) - \tfrac12\|w_c\|^2)\big)
              = \operatorname{softmax}_c\big(-\tfrac{k}{2}\|y-\mu_c\|^2\big),

    a "soft nearest prototype" rule, so every class owns the region around its
    prototype. Labels are drawn from ``p``.

    Lipschitz bound. ``∇p_c = k p_c (w_c − \bar w)`` with ``\bar w = Σ_j p_j w_j``,
    and ``w_c − \bar w = Σ_{j≠c} p_j (w_c − w_j)`` has norm at most
    ``(1 − p_c) D`` with ``D = max_{c,j} ‖μ_c − μ_j‖``. Hence
    ``‖∇p_c‖ ≤ k D p_c (1 − p_c) ≤ k D / 4`` everywhere, and on the convex domain
    ``ℝ^d`` the mean-value theorem makes ``L = k D / 4`` a valid Lipschitz
    constant of every ``p_c``. The generator sets ``k = 4 L / D`` for the requested
    ``L``. For ``C = 2`` the bound is attained; for ``C ≥ 3`` it can be
    conservative (the steepest slope of the field may be below ``L``).

    Parameters
    ----------
    n_samples : int
        Number of points, ``>= 1``.
    n_classes : int, default=5
        Number of classes ``C >= 2``.
    lipschitz : float, default=0.15
        The certified constant ``L`` in raw units.
    box : (low, high), default=(-10.0, 10.0)
        Sampling domain.
    n_features : int, default=2
        Dimension ``d``.
    centers : array-like of shape (n_classes, n_features), optional
        Prototypes ``μ_c`` in raw units, not all equal. Default: uniform in the
        middle half of the box, drawn from ``random_state``.
    scale : {"minmax", "box", None}, default="minmax"
        As in :func:`make_lipschitz_logistic`; ``lipschitz`` is restated as
        ``L · max_j range_j``.
    random_state : int, numpy.random.Generator or None
        Seed.

    Returns
    -------
    SyntheticData
        ``kind="softmax"``, classes ``0..C-1``.

    Raises
    ------
    ValueError
        If ``centers`` has the wrong shape, is not finite or has all rows equal
        (and for invalid sizes, ``box`` or ``scale``).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.datasets import make_softmax_field
    >>> data = make_softmax_field(200, n_classes=3, random_state=0)
    >>> data.X.shape, data.y.shape, data.classes.tolist()
    ((200, 2), (200,), [0, 1, 2])
    >>> bool(np.allclose(data.proba_true.sum(axis=1), 1.0)), data.lipschitz > 0
    (True, True)
    """
    n_samples = check_n_samples(n_samples)
    n_classes = _check_int_param(n_classes, "n_classes", 2)
    L = check_positive(lipschitz, "lipschitz")
    n_features = _check_int_param(n_features, "n_features", 1)
    low, high = _check_box(box, n_features)
    check_choice(scale, "scale", ("minmax", "box", None))
    rng = check_random_generator(random_state)

    centre = 0.5 * (low + high)
    if centers is None:
        half = 0.25 * (high - low)
        mu = _uniform_in_box(rng, n_classes, centre - half, centre + half)
    else:
        mu = np.asarray(centers, dtype=np.float64)
        if mu.shape != (n_classes, n_features):
            raise ValueError(f"centers must have shape ({n_classes}, {n_features}), got {mu.shape}.")
        if not np.all(np.isfinite(mu)):
            raise ValueError("centers must be finite.")
    diff = mu[:, None, :] - mu[None, :, :]
    D = float(np.sqrt((diff**2).sum(axis=-1)).max())
    if D == 0.0:
        raise ValueError("centers must not all coincide (the field would be constant).")

    k = 4.0 * L / D
    weights = mu - centre
    # w_c·(y − m) − ½‖w_c‖² written as W y + b in raw coordinates.
    intercepts = -(weights @ centre) - 0.5 * (weights**2).sum(axis=1)

    X_raw = _uniform_in_box(rng, n_samples, low, high)
    proba = _softmax_field(X_raw, weights, intercepts, k)
    y = _sample_labels(proba, rng)
    X, lo, rg = _scale(X_raw, scale, (low, high))
    L_out = L if rg is None else L * float(rg.max())
    return SyntheticData(
        X=X,
        y=y,
        proba_true=proba,
        classes=np.arange(n_classes, dtype=np.int64),
        lipschitz=L_out,
        margin=None,
        scale_min=lo,
        scale_range=rg,
        kind="softmax",
        weights=weights,
        intercepts=intercepts,
        steepness=k,
        centers=mu,
        lipschitz_raw=L,
    )


def _regular_centers(n_classes: int, n_features: int, spacing: float) -> np.ndarray:
    """Centres with every pairwise distance ``>= spacing`` (adjacent ones exactly ``spacing``)."""
    centers = np.zeros((n_classes, n_features))
    if n_features == 1:
        centers[:, 0] = spacing * (np.arange(n_classes) - 0.5 * (n_classes - 1))
        return centers
    if n_classes == 2:
        centers[:, 0] = [-0.5 * spacing, 0.5 * spacing]
        return centers
    # Regular C-gon: the shortest chord (adjacent vertices) is 2R sin(π/C) = spacing.
    radius = spacing / (2.0 * math.sin(math.pi / n_classes))
    angles = 2.0 * math.pi * np.arange(n_classes) / n_classes
    centers[:, 0] = radius * np.cos(angles)
    centers[:, 1] = radius * np.sin(angles)
    return centers


def make_margin_clusters(
    n_samples: int,
    *,
    n_classes: int = 2,
    margin: float = 20.0 / 3.0,
    cluster_radius: float = 2.0,
    n_features: int = 2,
    scale: Literal["minmax"] | None = "minmax",
    random_state: int | np.random.Generator | None = None,
) -> SyntheticData:
    """Separable clusters: points of different classes are at least ``margin`` apart.

    Class centres are placed (deterministically) so that every two centres are
    at least ``margin + 2 * cluster_radius`` apart — on a line for
    ``n_features=1``, as a regular polygon in the first two coordinates otherwise.
    Each point is uniform in the ball of radius ``cluster_radius`` around the
    centre of its class (labels uniform over classes). By the triangle inequality
    ``‖y − y'‖ ≥ ‖μ_c − μ_c'‖ − 2 r ≥ margin`` for every pair with ``c ≠ c'``.
    The true probabilities are one-hot.

    Parameters
    ----------
    n_samples : int
        Number of points, ``>= 1``.
    n_classes : int, default=2
        Number of classes ``C >= 2``.
    margin : float, default=20/3
        The guaranteed margin ``γ`` in raw units (the paper's ``γ = 6.67``).
    cluster_radius : float, default=2.0
        Radius ``r > 0`` of each class ball (raw units).
    n_features : int, default=2
        Dimension ``d``.
    scale : {"minmax", None}, default="minmax"
        ``"minmax"`` maps each feature to ``[0, 1]`` with the sample min/range;
        the margin is then restated as ``γ / max_j range_j`` (valid because
        ``‖diag(range)⁻¹ v‖ ≥ ‖v‖ / max_j range_j``).
    random_state : int, numpy.random.Generator or None
        Seed.

    Returns
    -------
    SyntheticData
        ``kind="margin"``, ``margin`` in the units of ``X``, one-hot ``proba_true``.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.datasets import make_margin_clusters
    >>> data = make_margin_clusters(100, random_state=0)
    >>> data.X.shape, data.lipschitz, round(data.margin, 3)
    ((100, 2), None, 0.468)
    >>> a, b = data.X[data.y == 0], data.X[data.y == 1]
    >>> bool(np.linalg.norm(a[:, None] - b[None], axis=2).min() >= data.margin)
    True
    """
    n_samples = check_n_samples(n_samples)
    n_classes = _check_int_param(n_classes, "n_classes", 2)
    gamma = check_positive(margin, "margin")
    radius = check_positive(cluster_radius, "cluster_radius")
    n_features = _check_int_param(n_features, "n_features", 1)
    check_choice(scale, "scale", ("minmax", None))
    rng = check_random_generator(random_state)

    # A relative slack of 1e-9 in the spacing absorbs float rounding (sin/cos,
    # scaling), so the computed distances never fall below ``margin``.
    centers = _regular_centers(n_classes, n_features, (gamma + 2.0 * radius) * (1.0 + 1e-9))
    y = rng.integers(0, n_classes, size=n_samples).astype(np.int64)
    # Uniform in a d-ball: isotropic direction times r·U^(1/d).
    direction = rng.standard_normal((n_samples, n_features))
    norms = np.linalg.norm(direction, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0  # probability-zero event; keeps the point at the centre
    r = radius * rng.random((n_samples, 1)) ** (1.0 / n_features)
    X_raw = centers[y] + direction / norms * r

    proba = np.zeros((n_samples, n_classes))
    proba[np.arange(n_samples), y] = 1.0
    X, lo, rg = _scale(X_raw, scale, None)
    gamma_out = gamma if rg is None else gamma / float(rg.max())
    return SyntheticData(
        X=X,
        y=y,
        proba_true=proba,
        classes=np.arange(n_classes, dtype=np.int64),
        lipschitz=None,
        margin=gamma_out,
        scale_min=lo,
        scale_range=rg,
        kind="margin",
        centers=centers,
        cluster_radius=radius,
        margin_raw=gamma,
    )
