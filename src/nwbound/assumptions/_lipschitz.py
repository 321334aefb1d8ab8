"""Estimates of the Lipschitz constant: the lower bound of appendix D, pilot-Strongin and the
pilot L of ``lipschitz="auto"`` / ``--lipschitz auto``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from sklearn.metrics import pairwise_distances, pairwise_distances_chunked

from .._validation import check_positive
from ._common import LipschitzEstimate, UNITS_NOTE, _check_data, _check_int, _rng


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


def _pilot_neighbours(m: int) -> int:
    """The ``k = ⌈√m⌉`` of the pilot bandwidth rule, for a pilot half of ``m`` rows (at least 1)."""
    return max(1, math.ceil(math.sqrt(m)))


def _pilot_bandwidth(X: np.ndarray, rng: np.random.Generator) -> float:
    """Median distance to the ⌈√m⌉-th neighbour (label-free rule for the pilot)."""
    from sklearn.neighbors import NearestNeighbors

    m = X.shape[0]
    k = min(m - 1, _pilot_neighbours(m))  # a pilot row is its own 0th neighbour
    probe = rng.choice(m, size=min(256, m), replace=False)
    dist, _ = NearestNeighbors(n_neighbors=k + 1).fit(X).kneighbors(X[probe])
    reach = dist[:, -1]
    if np.any(reach == 0):
        # Repeated rows (discrete or one-hot features): ≥ k rows coincide with a probe, so its k-th
        # neighbour distance is 0 and no kernel has that width. Such a probe takes the distance to
        # its nearest row at a positive distance instead: the next distinct value, the smallest
        # width over which p̂ can change at all. Rows without repeats keep the rule as it is.
        tied = np.flatnonzero(reach == 0)
        D = pairwise_distances(X[probe[tied]], X)
        reach[tied] = np.where(D > 0, D, np.inf).min(axis=1)
    lam = float(np.median(reach))
    if not (lam > 0 and np.isfinite(lam)):
        raise ValueError("Cannot pick a pilot bandwidth: every row is the same point; pass bandwidth=.")
    return lam


def _reach_bandwidth(E: np.ndarray, X_pilot: np.ndarray) -> float:
    """Median distance from the rows ``E`` to their ⌈√m⌉-th nearest pilot row, nudged past it.

    A compact kernel is 0 at distance λ itself, so the value is the next float above the median:
    then at least half the rows of ``E`` have ⌈√m⌉ pilot rows inside the kernel's support.
    """
    from sklearn.neighbors import NearestNeighbors

    k = min(X_pilot.shape[0], _pilot_neighbours(X_pilot.shape[0]))
    dist, _ = NearestNeighbors(n_neighbors=k).fit(X_pilot).kneighbors(E)
    return float(np.nextafter(np.median(dist[:, -1]), np.inf))


def _kernel_values(kernel: Any, D: np.ndarray, lam: float) -> np.ndarray:
    """``K(D/λ)`` in float64: the engine's compiled pass where it runs (numba there and not switched
    off) and evaluates the kernel bit for bit as numpy does, else numpy (the pilot's cost, issue 30)."""
    from ..engine.host._sums import compiled_module

    module = compiled_module()
    values = None if module is None else module.distance_kernel_values(D, lam, kernel)
    return np.asarray(kernel(D / lam), dtype=np.float64) if values is None else values


def _pilot_estimate(
    X: np.ndarray,
    y: np.ndarray,
    codes: np.ndarray,
    rng: np.random.Generator,
    bandwidth: float | str,
    kernel: str,
    n_eval: int,
    working_memory: float | None,
    offset: np.ndarray | None = None,
) -> tuple[float, int, np.ndarray, np.ndarray]:
    """Pilot NW fit on one random half; ``p̂`` at up to ``n_eval`` points of the other.

    Returns the pilot bandwidth, the pilot size, the evaluation rows of ``X``
    (those with training mass in reach) and their ``p̂`` (rows × classes); with ``offset``
    (rows × classes) the NW estimate of ``1{y = c} − offset_c`` instead.
    """
    geometry = _PilotGeometry(X, rng, bandwidth, kernel, n_eval, working_memory, codes=codes)
    (estimate,) = geometry.estimates([(codes, offset)])
    if estimate is None:
        raise ValueError("The pilot half holds a single class; give more data or another random_state.")
    return geometry.bandwidth, geometry.n_pilot, geometry.rows, estimate


#: Up to this many features the pilot's kernel sums take the pairs within reach from a k-d tree
#: (a few dozen per row) instead of every pair's distance (the cost of the raise-only L_r in few features).
_TREE_MAX_FEATURES = 8

#: With more features, the pairs within reach of a compact kernel are picked from every pair's
#: distance, in blocks, and kept (sparse) while they number at most this many; beyond it (a wide
#: bandwidth reaching most pairs) each estimate takes every pair's distance again, keeping nothing.
_KEPT_PAIRS_MAX = 1 << 22


class _PilotGeometry:
    """What a pilot estimate computes before any label: the random half that fits the pilot, λ and
    the evaluation rows. Every labelling of the rows with two classes in the pilot half then gets
    its ``p̂`` from it (:meth:`estimates`), as it alone would.

    With a compact kernel the kernel values of the pairs within reach (a few dozen pilot rows for
    each evaluation row) are computed once and kept (sparse): from a k-d tree in few features
    (``_TREE_MAX_FEATURES``), else picked from every pair's distance in blocks. Otherwise, or where
    more than ``_KEPT_PAIRS_MAX`` pairs are within reach, each call of :meth:`estimates` takes every
    pair's distance in blocks and keeps nothing (a dense block of every pair would not fit in
    bounded memory).

    ``codes`` (the labelling of a single estimate): where its pilot half holds a single class, the
    rows are dealt class by class instead (another split, for that labelling alone)."""

    def __init__(self, X: np.ndarray, rng: np.random.Generator, bandwidth: float | str, kernel: str, n_eval: int,
                 working_memory: float | None, codes: np.ndarray | None = None):
        # The pilot's kernel sums are computed here, not by the classifier: nwbound.estimators calls
        # this module for lipschitz="auto", so this module must not import it (no import cycle).
        from ..kernels import get_kernel

        perm = rng.permutation(X.shape[0])
        half = X.shape[0] // 2
        pilot_idx, eval_idx = perm[:half], perm[half:]
        if codes is not None and np.unique(codes[pilot_idx]).shape[0] < 2:
            # A few dozen rows: a random half can miss a class. Then, and only then, the rows are dealt
            # class by class in the same random order (the first of each class to the pilot half), so
            # that every class with two rows or more is on both sides.
            dealt = perm[np.argsort(codes[perm], kind="stable")]
            rank = np.arange(X.shape[0]) - np.searchsorted(codes[dealt], codes[dealt])  # place within its class
            to_pilot = rank % 2 == 0
            pilot_idx, eval_idx = dealt[to_pilot], dealt[~to_pilot]
            half = pilot_idx.shape[0]
        self._X_pilot = X[pilot_idx]
        self.bandwidth = _pilot_bandwidth(self._X_pilot, rng) if isinstance(bandwidth, str) else float(bandwidth)
        if eval_idx.shape[0] > n_eval:
            eval_idx = np.sort(rng.choice(eval_idx, size=n_eval, replace=False))
        self.n_pilot, self.pilot_rows, self._eval = int(half), pilot_idx, eval_idx
        self._rule, self._working_memory = isinstance(bandwidth, str), working_memory
        self._profile = get_kernel(kernel)
        compact = all(float(np.asarray(self._profile(np.array([u])))[0]) == 0.0 for u in (1.0, 2.0))
        self._K: Any = None
        self.rows: np.ndarray | None = None
        K = self._reached_values(X[eval_idx]) if compact else None
        if K is not None:
            kappa = np.asarray(K.sum(axis=1)).ravel()
            if np.count_nonzero(kappa > 0) < 2 and self._rule:
                self.bandwidth = max(self.bandwidth, _reach_bandwidth(X[eval_idx], self._X_pilot))  # as below
                K = self._reached_values(X[eval_idx])
                kappa = None if K is None else np.asarray(K.sum(axis=1)).ravel()
            if K is not None:
                self._keep(kappa)
                self._K, self._kappa = K[kappa > 0], kappa[kappa > 0]
        self._E_all = X[eval_idx]

    def _reached_values(self, E: np.ndarray) -> Any:
        """The CSR matrix of ``K(‖e − x‖/λ)`` over the pairs within ``λ`` (a compact kernel's only
        nonzero values): from a k-d tree in few features, else from every pair's distance in blocks
        (:meth:`_block_values`); None where those pairs are too many to keep."""
        return self._tree_values(E) if E.shape[1] <= _TREE_MAX_FEATURES else self._block_values(E)

    def _block_values(self, E: np.ndarray) -> Any:
        """:meth:`_reached_values` from every pair's distance, in blocks: the distances and kernel
        values of the dense route (:meth:`_dense_sums`) at the pairs within reach, the rest (0) not
        stored; None once more than ``_KEPT_PAIRS_MAX`` pairs are within reach."""
        from scipy import sparse

        lam, parts, kept = self.bandwidth, [], [0]

        def reduce(D: np.ndarray, start: int) -> np.ndarray:
            r, c = np.nonzero(D < lam)
            kept[0] += r.shape[0]
            if kept[0] <= _KEPT_PAIRS_MAX:
                parts.append((r + start, c, _kernel_values(self._profile, D[r, c][None, :], lam)[0]))
            return np.zeros(D.shape[0])  # one entry per row, as pairwise_distances_chunked asks

        for _ in pairwise_distances_chunked(E, self._X_pilot, reduce_func=reduce, working_memory=self._working_memory):
            if kept[0] > _KEPT_PAIRS_MAX:
                return None
        rows, cols, values = (np.concatenate([p[i] for p in parts]) if parts else np.zeros(0) for i in range(3))
        return sparse.csr_matrix((values, (rows.astype(np.intp), cols.astype(np.intp))),
                                 shape=(E.shape[0], self._X_pilot.shape[0]))

    def _tree_values(self, E: np.ndarray) -> Any:
        """The CSR matrix of ``K(‖e − x‖/λ)`` over the pairs within ``λ`` (a k-d tree's)."""
        from scipy import sparse
        from sklearn.neighbors import KDTree

        ind, dist = KDTree(self._X_pilot).query_radius(E, r=self.bandwidth, return_distance=True)
        counts = np.fromiter((i.shape[0] for i in ind), dtype=np.intp, count=E.shape[0])
        indptr = np.zeros(E.shape[0] + 1, dtype=np.intp)
        np.cumsum(counts, out=indptr[1:])
        cols = np.concatenate(ind).astype(np.intp) if counts.sum() else np.zeros(0, np.intp)
        D = np.concatenate(dist) if counts.sum() else np.zeros(0)
        values = _kernel_values(self._profile, D[None, :], self.bandwidth)[0]
        return sparse.csr_matrix((values, cols, indptr), shape=(E.shape[0], self._X_pilot.shape[0]))

    def _keep(self, kappa: np.ndarray) -> None:
        if np.count_nonzero(kappa > 0) < 2:
            raise ValueError(
                f"Fewer than 2 evaluation points have training mass within the pilot bandwidth {self.bandwidth:.4g}; "
                "pass a larger bandwidth."
            )
        self.rows = self._eval[kappa > 0]

    def estimates(self, labellings: list[tuple[np.ndarray, np.ndarray | None]]) -> list[np.ndarray | None]:
        """``p̂`` of each labelling ``(codes, offset or None)`` at :attr:`rows` (rows × classes; with an
        offset, the estimate of ``1{y = c} − offset_c``); None where its pilot half holds a single class."""
        out: list[np.ndarray | None] = [None] * len(labellings)
        live, targets = [], []
        for i, (codes, offset) in enumerate(labellings):
            if np.unique(codes[self.pilot_rows]).shape[0] < 2:
                continue
            # Only κ and p̂ are needed: the Nadaraya-Watson class sums Σ K(‖x − x_i‖/λ)·1{y_i = c}.
            onehot = np.eye(int(codes.max()) + 1)[codes[self.pilot_rows]]
            if offset is not None:  # residuals of a score: the estimate of p_c − offset_c
                onehot = onehot - offset[self.pilot_rows]
            live.append(i)
            targets.append(onehot)
        if not live:
            return out
        if self._K is not None:
            for i, t in zip(live, targets):
                out[i] = np.asarray(self._K @ t) / self._kappa[:, None]
            return out
        full = [np.hstack([t, np.ones((t.shape[0], 1))]) for t in targets]  # the last column sums κ
        sums = self._dense_sums(full)
        if self.rows is None and np.count_nonzero(sums[0][:, -1] > 0) < 2 and self._rule:
            # In high dimension distances concentrate (n_features > n_samples, or a score block with
            # many standardised features beside it): the pilot half's own ⌈√m⌉-th neighbour distances
            # can fall just short of every evaluation point's distance to the pilot half, and a compact
            # kernel then reaches none of them. The same label-free rule, measured from the evaluation
            # points (the median distance to their ⌈√m⌉-th nearest pilot point, the boundary included),
            # reaches at least half of them.
            self.bandwidth = max(self.bandwidth, _reach_bandwidth(self._E_all, self._X_pilot))
            sums = self._dense_sums(full)
        kappa = sums[0][:, -1]  # a sum of kernel values: the same for every labelling
        self._keep(kappa)
        keep = kappa > 0
        for i, S in zip(live, sums):
            out[i] = S[keep, :-1] / S[keep, -1][:, None]
        return out

    def _dense_sums(self, targets: list[np.ndarray]) -> list[np.ndarray]:
        """Each target block's kernel sums at every evaluation row, from every pair's distance in blocks."""
        def reduce(D: np.ndarray, start: int) -> tuple[np.ndarray, ...]:
            values = _kernel_values(self._profile, D, self.bandwidth)
            return tuple(values @ t for t in targets)  # a tuple of row blocks (pairwise_distances_chunked)

        blocks = list(pairwise_distances_chunked(self._E_all, self._X_pilot, reduce_func=reduce,
                                                 working_memory=self._working_memory))
        return [np.vstack([b[j] for b in blocks]) for j in range(len(targets))]


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
    (best, partner), n_pairs = _steepest_slopes_of(E, [P], h, working_memory)
    return best[0], partner[0], n_pairs


def _steepest_slopes_of(
    E: np.ndarray, estimates: list[np.ndarray], h: float, working_memory: float | None
) -> tuple[tuple[list[np.ndarray], list[np.ndarray]], int]:
    """:func:`_steepest_slopes` of several estimates ``p̂`` at the same points: one pass of the
    distances, each estimate's slopes computed from them as it alone would get them."""

    from ..engine.host._sums import compiled_module

    module = compiled_module()

    def one(D: np.ndarray, rows: slice, P: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        done = None if module is None else module.steepest_slopes(D, P[rows], P, h)  # the same bits, one pass
        if done is not None:
            return done
        diff = np.zeros_like(D)
        for c in range(P.shape[1]):  # few classes; each step is a full block operation
            np.maximum(diff, np.abs(P[rows, c, None] - P[None, :, c]), out=diff)
        far = D >= h
        slope = np.where(far, diff / np.where(far, D, 1.0), -np.inf)
        arg = slope.argmax(axis=1)
        return slope[np.arange(D.shape[0]), arg], arg, far.sum(axis=1)

    def reduce(D: np.ndarray, start: int) -> tuple[np.ndarray, ...]:
        rows = slice(start, start + D.shape[0])
        return tuple(part for P in estimates for part in one(D, rows, P))  # flat: row blocks only

    blocks = list(pairwise_distances_chunked(E, reduce_func=reduce, working_memory=working_memory))
    best = [np.concatenate([b[3 * j] for b in blocks]) for j in range(len(estimates))]
    partner = [np.concatenate([b[3 * j + 1] for b in blocks]) for j in range(len(estimates))]
    n_pairs = int(np.concatenate([b[2] for b in blocks]).sum()) // 2
    if n_pairs == 0:
        raise ValueError(
            f"No two evaluation points are at least min_pair_distance={h:.4g} apart; lower min_pair_distance."
        )
    return (best, partner), n_pairs


def _check_offset(offset: Any, n: int, n_classes: int) -> np.ndarray | None:
    """``offset`` as a finite float64 array of shape (n, n_classes), or None."""
    if offset is None:
        return None
    arr = np.asarray(offset, dtype=np.float64)
    if arr.shape != (n, n_classes) or not np.all(np.isfinite(arr)):
        raise ValueError(f"offset must be a finite array of one score per row and class, shape ({n}, {n_classes}); "
                         f"got shape {arr.shape}{'' if np.all(np.isfinite(arr)) else ' with non-finite values'}.")
    return arr


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
    offset: Any = None,
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
        label-free; a point repeated at least ``⌈√m⌉`` times counts the distance to its
        nearest distinct point instead (discrete features). Where that λ reaches fewer than 2 evaluation points (distances
        concentrate in high dimension), the median distance from the evaluation
        points to their ``⌈√m⌉``-th nearest pilot point is used instead (also
        label-free; it reaches at least half of them).
    kernel : str, default="epanechnikov"
        Kernel of the pilot.
    n_eval : int, default=2000
        Held-out points at which ``p̂`` is compared (``n_eval²/2`` pairs).
    working_memory : float, optional
        MiB for one block of pairwise distances (and of the pilot's sums).
    offset : array-like of shape (n, n_classes), optional
        A score per row and class (columns in sorted class order), e.g. a model's class
        probabilities. The slopes are then those of the pilot estimate of
        ``h_c = p_c − offset_c`` (the labels' residuals ``1{y = c} − offset_c`` smoothed): the
        Lipschitz constant of what the score misses. ``metric="auto"`` weights the features by
        it (:class:`nwbound.spaces.LearnedSpace`).

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
    offset = _check_offset(offset, X.shape[0], classes.shape[0])
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
    lam, half, eval_idx, P = _pilot_estimate(X, y, codes, rng, bandwidth, kernel, n_eval, working_memory, offset)
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
    offset: Any = None,
) -> LipschitzEstimate:
    """A pilot-Strongin ``L`` in the classifier's units: the pilot of ``lipschitz="auto"`` / ``--lipschitz auto``.

    ``lipschitz="auto"`` (the estimators' default, and ``nwbound fit --lipschitz auto``) computes
    this estimate on held-out pilot rows, then keeps the smallest L of a grid around it that
    other held-out rows do not reject (:func:`nwbound.spaces.choose_lipschitz`); the L it uses
    is that one, not this estimate.

    The pilot-Strongin estimate of :func:`strongin_lipschitz` (largest slope of
    a pilot Nadaraya-Watson estimate fitted on one half of the data, over
    pairs at least three pilot bandwidths apart, times the safety factor
    ``r``), computed **in the units the classifier sees**: on
    ``scaler.transform(X)`` when a fitted ``scaler`` is given, else on ``X``.
    Pass ``value`` as ``lipschitz=`` to a classifier with ``metric=None`` fitted on the same
    features, unchanged (with the default ``metric="auto"`` the classifier sees a learned
    space, whose units differ, and a numeric L warns at fit). At most ``max_samples`` rows (drawn at random) are
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
    offset : array-like of shape (n, n_classes), optional
        Scores whose residuals' smoothness is estimated instead of p's
        (:func:`strongin_lipschitz`).

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
            "classifier sees: pass it as lipschitz= unchanged, with metric=None"
        )
    rng = _rng(random_state)
    if offset is not None:
        offset = _check_offset(offset, X_arr.shape[0], np.unique(y_arr).shape[0])
    keep = _row_subset(X_arr.shape[0], max_samples, rng)
    if keep is not None:
        X_arr, y_arr = X_arr[keep], y_arr[keep]
        offset = None if offset is None else offset[keep]
    est = strongin_lipschitz(
        X_arr, y_arr, safety_factor=safety_factor, random_state=rng, working_memory=working_memory, offset=offset
    )
    details = dict(est.details, n_used=int(X_arr.shape[0]))
    return dataclasses.replace(est, units=units, details=details)


def _row_subset(n: int, max_samples: int, rng: np.random.Generator) -> np.ndarray | None:
    """The rows :func:`estimate_lipschitz` keeps of ``n``: a sorted random subset of ``max_samples``
    where ``n`` is larger (drawn from ``rng`` only then), else None (every row)."""
    return None if n <= max_samples else np.sort(rng.choice(n, size=max_samples, replace=False))


class LipschitzDraws:
    """:func:`estimate_lipschitz`'s ``value`` for many labellings of the same rows ``X``, with the
    work that depends on no label done once, at construction.

    ``LipschitzDraws(X, random_state=s).values(labels, offsets)[i]`` is
    ``estimate_lipschitz(X, labels[i], offset=offsets[i], random_state=s).value``, bit for bit,
    or None where that call raises ``ValueError`` (a labelling with one class, a pilot half
    without two classes, no pair far enough apart). The subset of rows, the split, the pilot
    bandwidth, the evaluation rows and their kernel values depend on ``X`` and the seed alone: a
    noise gate that draws labels many times on one set of rows (``metric="auto"``'s raise-only
    estimate of ``L_r``) pays for them once, and for each labelling only its own sums and slopes.

    Parameters
    ----------
    X : array-like of shape (n, d)
    safety_factor, max_samples, working_memory
        As in :func:`estimate_lipschitz`.
    random_state : int, default=0
        The one seed of every labelling's estimate (an int, so that each is the call it replaces).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.assumptions import LipschitzDraws, estimate_lipschitz
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(600, 2))
    >>> draws = [(rng.random(600) < 1 / (1 + np.exp(-k * X[:, 0]))).astype(int) for k in (1, 4)]
    >>> values = LipschitzDraws(X, random_state=3).values(draws + [np.zeros(600)])
    >>> values[:2] == [estimate_lipschitz(X, y, random_state=3).value for y in draws], values[2]
    (True, None)
    """

    def __init__(self, X: Any, *, safety_factor: float = 2.0, max_samples: int = 20_000, random_state: int = 0,
                 working_memory: float | None = None):
        if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)):
            raise TypeError(f"random_state must be an int (every labelling's seed), got {random_state!r}.")
        self.max_samples = _check_int(max_samples, "max_samples", 4)
        self.safety_factor = check_positive(safety_factor, "safety_factor")
        if self.safety_factor < 1.0:
            raise ValueError(f"safety_factor must be >= 1 (it inflates the estimate), got {safety_factor!r}.")
        self.X, self.random_state, self.working_memory = X, int(random_state), working_memory
        self._shared: tuple | None = None  # (rows' subset, geometry, its rng state) once built

    def _alone(self, y: Any, offset: Any) -> float | None:
        try:
            return estimate_lipschitz(self.X, y, offset=offset, safety_factor=self.safety_factor,
                                      max_samples=self.max_samples, random_state=self.random_state,
                                      working_memory=self.working_memory).value
        except ValueError:
            return None

    def values(self, labels: Any, offsets: Any = None) -> list[float | None]:
        """The value of each labelling (with its offset: columns of the classes present in it, or None).

        Parameters
        ----------
        labels : sequence of array-like of shape (n,)
        offsets : sequence of (array-like of shape (n, n_classes) or None), optional

        Returns
        -------
        list of float or None
        """
        labels = list(labels)
        offsets = [None] * len(labels) if offsets is None else list(offsets)
        if len(offsets) != len(labels):
            raise ValueError(f"offsets must hold one entry per labelling ({len(labels)}), got {len(offsets)}.")
        out: list[float | None] = [None] * len(labels)
        scored = []  # (labelling, its estimate p̂)
        for i, (y, offset) in enumerate(zip(labels, offsets)):
            checked = self._checked(y, offset)
            if checked is None:
                continue
            shared = self._geometry(checked[0])
            if isinstance(shared, ValueError):
                out[i] = self._alone(y, offset)  # a single labelling may deal its rows: it is its own call
                continue
            scored.append((i, (checked[1], checked[2])))
        if scored:
            try:
                estimates = self._shared[1].estimates([labelling for _, labelling in scored])
            except ValueError:  # no two evaluation rows with mass in reach, whatever the labels
                return out
            alone = [i for (i, _), P in zip(scored, estimates) if P is None]
            for i in alone:  # its pilot half held one class: alone, its rows are dealt class by class
                out[i] = self._alone(labels[i], offsets[i])
            scored = [(i, P) for (i, _), P in zip(scored, estimates) if P is not None]
        if scored:
            geometry = self._shared[1]
            E = self._shared[0][geometry.rows]
            try:
                (best, _), _ = _steepest_slopes_of(E, [P for _, P in scored], _default_pair_distance(E, geometry.bandwidth),
                                                   self.working_memory)
            except ValueError:
                return out
            for (i, _), b in zip(scored, best):
                out[i] = self.safety_factor * float(b[int(np.argmax(b))])
        return out

    def _checked(self, y: Any, offset: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
        """``(X used, codes, offset)`` as :func:`estimate_lipschitz` then :func:`strongin_lipschitz`
        check them (the subset of rows drawn first), or None where they refuse them."""
        try:
            X_i, y_i, classes, codes = _check_data(self.X, y)
            off = None if offset is None else _check_offset(offset, X_i.shape[0], classes.shape[0])
            subset = self._subset(X_i.shape[0])
            if subset is not None:
                X_i, y_i, off = X_i[subset], y_i[subset], None if off is None else off[subset]
                _, _, classes, codes = _check_data(X_i, y_i)
                off = None if off is None else _check_offset(off, X_i.shape[0], classes.shape[0])
        except ValueError:
            return None
        return (X_i, codes, off) if X_i.shape[0] >= 4 else None

    def _subset(self, n: int) -> np.ndarray | None:
        return _row_subset(n, self.max_samples, _rng(self.random_state))  # drawn first, from no label

    def _geometry(self, X_used: np.ndarray) -> "_PilotGeometry | ValueError":
        if self._shared is None:
            rng = _rng(self.random_state)
            _row_subset(np.asarray(self.X).shape[0], self.max_samples, rng)  # the generator past the subset's draw
            try:
                geometry: Any = _PilotGeometry(X_used, rng, "auto", "epanechnikov", 2000, self.working_memory)
            except ValueError as exc:
                geometry = exc
            self._shared = (X_used, geometry)
        return self._shared[1]


def estimate_lipschitz_draws(
    X: Any,
    labels: Any,
    *,
    offsets: Any = None,
    safety_factor: float = 2.0,
    max_samples: int = 20_000,
    random_state: int = 0,
    working_memory: float | None = None,
) -> list[float | None]:
    """:func:`estimate_lipschitz`'s ``value`` for each of several labellings of the same rows, bit
    for bit, the work that depends on no label done once: ``LipschitzDraws(X, ...).values(labels,
    offsets)`` (:class:`LipschitzDraws`).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.assumptions import estimate_lipschitz, estimate_lipschitz_draws
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(600, 2))
    >>> y = (rng.random(600) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(int)
    >>> estimate_lipschitz_draws(X, [y], random_state=3) == [estimate_lipschitz(X, y, random_state=3).value]
    True
    """
    return LipschitzDraws(X, safety_factor=safety_factor, max_samples=max_samples, random_state=random_state,
                          working_memory=working_memory).values(labels, offsets)
