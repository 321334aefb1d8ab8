"""The Nadaraya-Watson classifier with frequentist bounds (regular and localized)."""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np
from sklearn.neighbors import NearestNeighbors

from .._result import PredictionInterval
from .._validation import check_dtype, check_int_range, check_positive
from ..bounds import TAIL_RADIUS
from ..kernels import get_kernel
from ..neighbors import make_index
from ._base import BoundedClassifierBase
from ._sums import KernelSums, TrainingSet, dense_kernel_sums, neighbor_kernel_sums

__all__ = ["NadarayaWatsonClassifier", "default_bandwidth_grid"]

_AUTO_GRID_SIZE = 16
_AUTO_PILOT_SIZE = 256


def default_bandwidth_grid(X: np.ndarray, n_bandwidths: int = _AUTO_GRID_SIZE) -> np.ndarray:
    """The grid searched by ``bandwidth="auto"``.

    ``n_bandwidths`` geometrically spaced values from the median distance of
    (up to 256, evenly spaced) training points to their nearest other training
    point, up to the diagonal of the training data's bounding box. Depends on
    the training inputs only, never on labels.
    """
    X = np.asarray(X, dtype=np.float64)
    diagonal = float(np.linalg.norm(X.max(axis=0) - X.min(axis=0)))
    if diagonal == 0.0:
        raise ValueError(
            "All training points coincide, so bandwidth='auto' cannot derive a scale from them; "
            "pass bandwidth_grid=[...] explicitly or a fixed bandwidth."
        )
    pilot = np.unique(np.linspace(0, X.shape[0] - 1, min(_AUTO_PILOT_SIZE, X.shape[0])).astype(int))
    n_nb = min(2, X.shape[0])
    dist, _ = NearestNeighbors(n_neighbors=n_nb, algorithm="brute").fit(X).kneighbors(X[pilot])
    nearest = dist[:, -1]
    low = float(np.median(nearest[nearest > 0])) if np.any(nearest > 0) else diagonal * 1e-3
    low = min(low, diagonal)
    return np.geomspace(low, diagonal, n_bandwidths) if low < diagonal else np.array([diagonal])


class NadarayaWatsonClassifier(BoundedClassifierBase):
    """Nadaraya-Watson classifier with per-query frequentist bounds.

    ``p̂_c(y) = Σ_i w_i K(‖y − y_i‖/λ) 1{c_i = c} / κ(y)``, with ``κ(y) = Σ_i w_i K(‖y − y_i‖/λ)``,
    over all training points (*regular*, ``n_neighbors=None``) or the ``k``
    nearest ones (*localized*). :meth:`predict_interval` returns, for every
    query, ``ε`` such that ``|p_c(y) − p̂_c(y)| ≤ ε`` with probability at least
    ``1 − δ`` over the training labels, given the training inputs — under the
    stated assumption (Lipschitz class probabilities with constant ``L``, or
    classes separated by a margin ``γ``) and i.i.d. sampling.

    Parameters
    ----------
    kernel : str, Kernel or callable, default="epanechnikov"
        ``"epanechnikov"``, ``"boxcar"``, ``"quartic"``, ``"triweight"``,
        ``"tricube"``, ``"cosine"``, ``"gaussian"`` (truncated at 3λ) or
        ``"gaussian_untruncated"``; or a callable ``K(u)`` of the scaled distance.
    bandwidth : float or "auto", default=1.0
        λ, in the units of the features. ``"auto"`` picks, for each query, the
        λ of ``bandwidth_grid`` that minimises ε; this stays valid because ε
        depends on the inputs only, never on the labels. Needs ``lipschitz`` or
        ``margin``.
    n_neighbors : int or None, default=None
        None: the regular classifier over all training points. An int k: the
        localized classifier over the k nearest neighbours.
    algorithm : str, default="auto"
        Neighbour search for the localized classifier: ``"auto"``, ``"brute"``,
        ``"kd_tree"``, ``"ball_tree"`` (exact) or a registered index such as
        ``"hnsw"`` (approximate; see :func:`nwbound.neighbors.available_indexes`).
    index_params : dict or None, default=None
        Extra options for the neighbour index (e.g. ``{"leaf_size": 40}`` or
        ``{"M": 16, "ef": 64}`` for HNSW).
    lipschitz : float or None, default=None
        Lipschitz constant L of every class probability, **in the units of the
        features this classifier sees** (rescale it with
        :func:`nwbound.restate_lipschitz` after scaling the features).
    margin : float or None, default=None
        Margin γ between classes (same units). Give ``lipschitz`` or ``margin``.
    delta : float, default=0.05
        Failure probability δ of each query's bound.
    bound : {"hoeffding", "paper", "selfnormalized"}, default="hoeffding"
        Form of ε (see :mod:`nwbound.bounds`). ``"paper"`` with ``sigma=0.25``,
        ``ck=1`` and ``coverage="per_class"`` reproduces the paper's numbers
        (not a valid bound: its σ = 1/4 is wrong).
    coverage : {"simultaneous", "per_class"}, default="simultaneous"
        Simultaneous coverage of all classes uses δ/C for C ≥ 3 classes.
    sigma : float, default=0.5
        Sub-Gaussian constant of the paper and self-normalised forms.
    ck : float or None, default=None
        Kernel normaliser c_k of the paper form; must be ≥ sup K (None: sup K).
    empty_neighborhood : {"prior", "uniform", "raise"}, default="prior"
        What to predict where no training mass reaches a query (κ = 0); such
        predictions are flagged ``vacuous`` with ε = 1.
    bandwidth_grid : array-like or None, default=None
        Candidate bandwidths for ``bandwidth="auto"``; None uses
        :func:`default_bandwidth_grid`.
    dtype : {"float64", "float32"}, default="float64"
        Working precision of the distance computations.
    working_memory : float or None, default=None
        MiB allowed for one block of the distance matrix (None: scikit-learn's
        ``working_memory`` setting).
    n_jobs : int or None, default=None
        Threads over query blocks (each with one BLAS thread); -1 for all cores.
    random_state : int or None, default=None
        Seed of a randomised neighbour index (e.g. HNSW); exact search ignores it.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_prior_ : ndarray of shape (n_classes,)
        Weighted class frequencies of the training set.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when X has string feature names.
    kernel_ : Kernel
    bandwidths_ : ndarray
        The bandwidth (one value) or the grid searched by ``bandwidth="auto"``.
    beta_ : float or None
        L or 1/γ.
    delta_prime_ : float
        Per-class failure probability used in ε.
    n_samples_fit_ : int
    """

    def __init__(
        self,
        *,
        kernel="epanechnikov",
        bandwidth=1.0,
        n_neighbors=None,
        algorithm="auto",
        index_params=None,
        lipschitz=None,
        margin=None,
        delta=0.05,
        bound="hoeffding",
        coverage="simultaneous",
        sigma=0.5,
        ck=None,
        empty_neighborhood="prior",
        bandwidth_grid=None,
        dtype="float64",
        working_memory=None,
        n_jobs=None,
        random_state=None,
    ):
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.n_neighbors = n_neighbors
        self.algorithm = algorithm
        self.index_params = index_params
        self.lipschitz = lipschitz
        self.margin = margin
        self.delta = delta
        self.bound = bound
        self.coverage = coverage
        self.sigma = sigma
        self.ck = ck
        self.empty_neighborhood = empty_neighborhood
        self.bandwidth_grid = bandwidth_grid
        self.dtype = dtype
        self.working_memory = working_memory
        self.n_jobs = n_jobs
        self.random_state = random_state

    # ------------------------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None) -> "NadarayaWatsonClassifier":
        """Store the training set (and build the neighbour index when localized).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights ``w_i`` (a weight multiplies one observation's
            kernel value; it does not count as several independent samples).
        """
        dtype = check_dtype(self.dtype)
        kernel = get_kernel(self.kernel)
        auto = isinstance(self.bandwidth, str)
        if auto and self.bandwidth != "auto":
            raise ValueError(f"bandwidth must be a number > 0 or 'auto', got {self.bandwidth!r}.")
        if not auto:
            check_positive(self.bandwidth, "bandwidth")
        if self.working_memory is not None:
            check_positive(self.working_memory, "working_memory")
        if self.n_jobs is not None and (
            isinstance(self.n_jobs, bool) or not isinstance(self.n_jobs, numbers.Integral) or self.n_jobs == 0
        ):
            raise ValueError(f"n_jobs must be None, a positive int or -1, got {self.n_jobs!r}.")

        X, labels, weights = self._validate_training_data(X, y, sample_weight, dtype)
        n_samples = X.shape[0]
        if self.n_neighbors is not None:
            check_int_range(
                self.n_neighbors, "n_neighbors", 1, n_samples,
                hint=f"It counts neighbours among the {n_samples} training samples (None: use all).",
            )
        self._validate_bound_params(bound_required=auto, kernel_sup=kernel.sup, kernel_radius=kernel.radius)
        self.kernel_ = kernel
        if auto:
            grid = default_bandwidth_grid(X) if self.bandwidth_grid is None else self._checked_grid()
        else:
            grid = np.array([float(self.bandwidth)])
        self.bandwidths_ = grid
        self._train = TrainingSet.build(X, labels, self.classes_.shape[0], weights)
        self._box = (X.min(axis=0).astype(np.float64), X.max(axis=0).astype(np.float64))
        self.n_samples_fit_ = n_samples
        self.index_ = None
        if self.n_neighbors is not None:
            if self.index_params is not None and not isinstance(self.index_params, dict):
                raise TypeError(f"index_params must be a dict or None, got {type(self.index_params).__name__}.")
            self.index_ = make_index(
                self.algorithm, n_jobs=self.n_jobs, random_state=self.random_state, **(self.index_params or {})
            ).fit(X)
        self._fit_complete = True
        return self

    def _checked_grid(self) -> np.ndarray:
        grid = np.asarray(self.bandwidth_grid, dtype=np.float64).ravel()
        if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid <= 0):
            raise ValueError("bandwidth_grid must be a non-empty list of finite bandwidths > 0.")
        return np.unique(grid)

    # ------------------------------------------------------------------------------------------
    def _kernel_sums(self, X: np.ndarray, bandwidths: np.ndarray, need_dist: bool, need_tail: bool) -> KernelSums:
        tail = TAIL_RADIUS if need_tail else None
        if self.index_ is None:
            return dense_kernel_sums(
                X, self._train, self.kernel_, bandwidths, need_dist=need_dist, tail_radius=tail,
                working_memory=self.working_memory, n_jobs=self.n_jobs,
            )
        dist, idx = self.index_.kneighbors(X, self.n_neighbors)
        return neighbor_kernel_sums(dist, idx, self._train, self.kernel_, bandwidths, need_dist=need_dist, tail_radius=tail)

    def _diameter(self, X: np.ndarray) -> np.ndarray:
        # Φ(y): distance from y to the farthest corner of the training box, so
        # ‖y − y_i‖ ≤ Φ(y) for every training point (the paper's assumption 5).
        low, high = self._box
        far = np.maximum(np.abs(X - low), np.abs(X - high))
        return np.linalg.norm(far, axis=1)

    def predict_interval(self, X) -> PredictionInterval:
        """Class probabilities with per-query bounds ``|p_c − p̂_c| ≤ ε``.

        Raises
        ------
        ValueError
            If neither ``lipschitz`` nor ``margin`` was given.
        """
        spec = self._require_bounds()
        X = self._validate_queries(X)
        if spec.needs_tail_mass:
            spec = dataclasses.replace(spec, diameter=self._diameter(X)[:, None])
        sums = self._kernel_sums(X, self.bandwidths_, spec.needs_distance_sum, spec.needs_tail_mass)
        kappa = sums.kappa
        bias, sampling = spec.parts(kappa, sums.sq_sum, sums.dist_sum, self.bandwidths_[None, :], sums.tail_mass)
        eps = bias + sampling  # (n, G); inf where κ = 0
        best = np.argmin(eps, axis=1)
        rows = np.arange(X.shape[0])
        return self._assemble(
            sums.class_sums[rows, best],
            sums.sq_sum[rows, best],
            bias[rows, best],
            sampling[rows, best],
            self.bandwidths_[best],
            outside_box=np.any((X < self._box[0]) | (X > self._box[1]), axis=1),
        )

    def predict_proba(self, X) -> np.ndarray:
        """Estimated class probabilities, columns in ``classes_`` order."""
        if isinstance(self.bandwidth, str):  # "auto": λ comes from the bound
            return self.predict_interval(X).proba
        X = self._validate_queries(X)
        sums = self._kernel_sums(X, self.bandwidths_, need_dist=False, need_tail=False)
        class_sums = sums.class_sums[:, 0]
        proba, _ = self._fallback_proba(class_sums, class_sums.sum(axis=1))
        return proba
