"""The dyadic (hash-grid) classifier, with a valid bound the paper did not give.

Cells of side ``2^-m`` (relative to each feature's range) tile the training
data's bounding box. ``fit`` counts weighted labels per occupied cell in O(n);
a query looks up its cell in O(d + log(#cells)). A cell is a boxcar window:
every training point in it lies within the cell diameter
``diam = 2^-m·‖range‖`` of the query, so the Lipschitz bias is at most
``β·diam`` and the Hoeffding term uses the cell's weight sums. A query outside
the box is clipped to the border cell and flagged; its bias adds its distance
to the box, which keeps the bound valid.
"""

from __future__ import annotations

from typing import Any, Mapping

from numbers import Integral

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from .._numerics import direct_distance_error, euclidean_norm, square_sum_upper, summation_error
from .._threads import blas_limited
from .._validation import check_int_range
from ..kernels import Kernel, get_kernel
from ..spaces import metric_kind
from ._base import BoundedClassifierBase
from ._dispatch import queries_on_host
from ._state import state_array, state_classes, state_scalar
from ..engine import KernelStatistics

__all__ = ["DyadicClassifier"]


class DyadicClassifier(BoundedClassifierBase):
    """Hash-grid classifier: the class frequencies of the query's dyadic cell.

    Parameters
    ----------
    resolution : int, default=4
        m: each feature's range is cut into ``2^m`` cells.
    lipschitz : float, "auto" or None, default="auto"
        The assumption behind the bound (see :class:`NadarayaWatsonClassifier`); ``"auto"``: the
        held-out check chooses L in the space the cells tile.
    margin : float or None, default=None
    delta : float, default=0.05
    bound : {"chernoff", "hoeffding", "paper", "selfnormalized"}, default="chernoff"
        ``"chernoff"``: the band-Chernoff test on the cell's weights (every
        cell point lies within the cell reach of the query).
    coverage : {"simultaneous", "per_class"}, default="simultaneous"
    sigma : float, default=0.5
    empty_neighborhood : {"prior", "uniform", "raise"}, default="prior"
        Prediction for an empty cell (flagged vacuous, ε = 1).
    metric : None, "standard", "auto", transformer or classifier, default="auto"
        The space the cells tile (see :class:`NadarayaWatsonClassifier`); the cells then tile
        ``metric_.transform(X)``, and ``lipschitz``/``margin`` are in its units. The paper's
        dyadic classifier: ``metric=None`` with a numeric ``lipschitz``.
    metric_fraction : float in (0, 1), default=0.4
        Share of the training rows that fit the map (see :class:`NadarayaWatsonClassifier`).
    cross_fit : bool, int or "auto", default="auto"
        Several models on splits whose roles differ (see :class:`NadarayaWatsonClassifier`).
    random_state : int, RandomState or None, default=None
        Seed of the split (None: 0, so that a fit repeats).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_prior_ : ndarray of shape (n_classes,)
        Weighted class frequencies of the training set.
    n_features_in_ : int
    cell_weight_max_ : ndarray of shape (n_cells,)
        Largest sample weight in each occupied cell (1 without weights).
    cell_counts_ : ndarray of int, shape (n_cells,), or None
        Training rows in each occupied cell (None for a model restored from an older file).
    cell_diameter_ : float
        ``2^-m·‖range‖``, the largest distance between two points of a cell.
    n_cells_ : int
        Occupied cells.
    cross_fit_models_ : list of estimators
        When cross-fitted: the models, each at level δ/(number of models); every ``predict*``
        sets this estimator's current bound parameters and ``empty_neighborhood`` on each
        (see :class:`NadarayaWatsonClassifier`).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import DyadicClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((400, 2)); y = (X[:, 0] + 0.2 * rng.standard_normal(400) > 0.5).astype(int)
    >>> clf = DyadicClassifier(metric=None, resolution=2, lipschitz=1.0).fit(X, y)
    >>> clf.n_cells_
    16
    >>> iv = clf.predict_interval(np.array([[0.1, 0.5], [0.9, 0.5]]))
    >>> np.round(iv.proba, 2).tolist(), np.round(iv.epsilon[:, 0], 2).tolist()
    ([[1.0, 0.0], [0.08, 0.92]], [0.48, 0.58])
    """

    _parameter_constraints: dict = {
        **BoundedClassifierBase._parameter_constraints,
        "resolution": [Interval(Integral, 1, 30, closed="both")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        resolution=4,
        lipschitz="auto",
        margin=None,
        delta=0.05,
        bound="chernoff",
        coverage="simultaneous",
        sigma=0.5,
        empty_neighborhood="prior",
        metric="auto",
        metric_fraction=0.4,
        cross_fit="auto",
        random_state=None,
    ):
        self.resolution = resolution
        self.metric = metric
        self.metric_fraction = metric_fraction
        self.cross_fit = cross_fit
        self.random_state = random_state
        self.lipschitz = lipschitz
        self.margin = margin
        self.delta = delta
        self.bound = bound
        self.coverage = coverage
        self.sigma = sigma
        self.empty_neighborhood = empty_neighborhood

    # A dyadic cell is a boxcar window: sup K = 1, weights 0/1.
    ck = None

    @blas_limited
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, groups=None) -> "DyadicClassifier":
        """Count the weighted labels of each occupied cell.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
        groups : array-like of shape (n_samples,), default=None
            Group labels kept on one side of the split (``metric``); see
            :meth:`NadarayaWatsonClassifier.fit`.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            For fewer than 2 classes, or implausibly many
            (:func:`nwbound._validation.check_class_count`): above 20 classes,
            fewer than 2 rows per class on average (e.g. an id column as ``y``),
            or more than 2²⁸ entries in the rows × classes table.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import DyadicClassifier
        >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> DyadicClassifier(metric=None, lipschitz=None, resolution=2).fit(X, y).n_cells_
        4
        """
        m = self._check_resolution()
        if self._uses_cross_fit(X):
            return self._fit_cross(X, y, sample_weight, groups)
        X, labels, weights = self._validate_training_data(X, y, sample_weight, np.float64)
        X, labels, weights = self._fit_space(X, labels, weights, groups, np.float64)
        low, high = X.min(axis=0), X.max(axis=0)
        span = np.where(high > low, high - low, 1.0)
        self._set_grid(low, span, m)
        keys = self._keys(self._cells(X)[0])
        keys, inverse = np.unique(keys, return_inverse=True)
        w = np.ones(X.shape[0]) if weights is None else weights.astype(np.float64)
        n_classes = self.classes_.shape[0]
        n_cells = keys.shape[0]
        flat = inverse * n_classes + labels
        weight_max = np.zeros(n_cells)
        np.maximum.at(weight_max, inverse, w)
        return self._install(
            keys,
            np.bincount(flat, weights=w, minlength=n_cells * n_classes).reshape(n_cells, n_classes),
            np.bincount(inverse, weights=w * w, minlength=n_cells),
            weight_max,
            np.bincount(inverse, minlength=n_cells).astype(np.int64),
        )._finish_fit()

    def _check_resolution(self) -> int:
        return check_int_range(self.resolution, "resolution", 1, 30, hint="Cells have side 2^-resolution of each feature's range.")

    def _set_grid(self, low: np.ndarray, span: np.ndarray, m: int) -> None:
        self._low, self._span, self._n_side = low, span, 2**m
        self.cell_diameter_ = float(euclidean_norm(span) / 2**m)

    def _install(self, keys, class_sums, sq_sums, weight_max, counts=None) -> "DyadicClassifier":
        """The one place a fitted state is set up, from ``fit`` or :meth:`set_fitted_state`."""
        self._validate_bound_params(get_kernel("boxcar"), bound_required=False)
        self.cell_keys_ = keys
        self.cell_class_sums_ = class_sums
        self.cell_sq_sums_ = sq_sums
        self.cell_weight_max_ = weight_max
        self.cell_counts_ = counts  # None: restored from an older state without it
        self.n_cells_ = keys.shape[0]
        self._snapshot_fit_params()
        self._fit_complete = True
        return self

    def get_fitted_state(self) -> dict[str, Any]:
        """Everything ``fit`` computed: plain arrays and scalars, and the learned space and L report if any.

        Returns
        -------
        dict
            ``classes_``, ``class_prior_``, ``n_features_in_``, ``grid_low`` and
            ``grid_span`` (the box the cells tile), ``cell_keys_``,
            ``cell_class_sums_``, ``cell_sq_sums_``, ``cell_weight_max_``,
            ``cell_counts_`` (training rows per cell) and, when fitted on named
            features, ``feature_names_in_``. With a learned space, after ``lipschitz="auto"`` or cross-fitted, the entries
            :meth:`~nwbound.NadarayaWatsonClassifier.get_fitted_state` lists too.

        Raises
        ------
        ValueError
            A ``metric`` given as an estimator, as :meth:`~nwbound.NadarayaWatsonClassifier.get_fitted_state` says.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import DyadicClassifier
        >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> state = DyadicClassifier(metric=None, lipschitz=None, resolution=2).fit(X, y).get_fitted_state()
        >>> DyadicClassifier(metric=None, lipschitz=None, resolution=2).set_fitted_state(state).predict([[0.9]])
        array([1])
        """
        check_is_fitted(self)
        if self._is_cross_fitted():
            return self._cross_state()
        state = {
            "classes_": self.classes_,
            "class_prior_": self.class_prior_,
            "n_features_in_": int(self.n_features_in_),
            "grid_low": self._low,
            "grid_span": self._span,
            "cell_keys_": self.cell_keys_,
            "cell_class_sums_": self.cell_class_sums_,
            "cell_sq_sums_": self.cell_sq_sums_,
            "cell_weight_max_": self.cell_weight_max_,
        }
        if getattr(self, "cell_counts_", None) is not None:
            state["cell_counts_"] = self.cell_counts_
        if hasattr(self, "feature_names_in_"):
            state["feature_names_in_"] = self.feature_names_in_
        state.update(self._learned_state())
        return state

    def set_fitted_state(self, state: Mapping[str, Any]) -> "DyadicClassifier":
        """Restore a state from :meth:`get_fitted_state`, checking every array as untrusted input.

        A state without ``cell_weight_max_`` (older model files) uses
        ``√(Σ w²)`` per cell, which is at least the largest weight: valid, a
        little looser for weighted cells. The arrays must describe weights some
        data could have: per cell ``w_max² ≤ Σw² ≤ w_max·Σw`` and, with
        ``cell_counts_`` (absent from older files), ``Σw² ≥ (Σw)²/count`` and
        ``Σw ≤ count·w_max``; ``Σw²`` and ``w_max`` are positive exactly where
        ``Σw`` is; the relative weights are at most 1; ``class_prior_`` is the
        class sums' share.

        Parameters
        ----------
        state : mapping

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Naming the first field that is missing, malformed or inconsistent.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import DyadicClassifier
        >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> state = DyadicClassifier(metric=None, lipschitz=None, resolution=2).fit(X, y).get_fitted_state()
        >>> state["cell_sq_sums_"] = -state["cell_sq_sums_"]
        >>> DyadicClassifier(metric=None, lipschitz=None, resolution=2).set_fitted_state(state)
        Traceback (most recent call last):
        ...
        ValueError: Fitted state 'cell_sq_sums_' must be >= 0, holds -10.
        """
        self._fit_complete = False
        self._validate_params()
        m = self._check_resolution()
        if "cross_fit_models_" in state:
            return self._restore_cross(state, np.float64)
        classes, prior = state_classes(state)
        n_features = state_scalar(state, "n_features_in_", low=1)
        width = self._restore_learned(state, n_features)  # the learned space's, or n_features
        low = state_array(state, "grid_low", ndim=1, shape=(width,))
        span = state_array(state, "grid_span", ndim=1, shape=(width,), low=np.finfo(np.float64).tiny)
        keys = state_array(state, "cell_keys_", ndim=1, kind="S")
        n_cells = keys.shape[0]
        if n_cells < 1 or keys.dtype.itemsize != 8 * width + 1:
            raise ValueError(
                f"Fitted state 'cell_keys_' must hold at least one key of {8 * width + 1} bytes, "
                f"got {n_cells} keys of dtype {keys.dtype}."
            )
        if n_cells > 1 and not np.all(keys[:-1] < keys[1:]):
            raise ValueError("Fitted state 'cell_keys_' must be sorted and unique.")
        raw = np.frombuffer(keys.tobytes(), dtype=np.uint8).reshape(n_cells, 8 * width + 1)
        coords = raw[:, :-1].copy().view(">u8")
        if np.any(raw[:, -1] != 1) or np.any(coords >= 2**m):
            raise ValueError(f"Fitted state 'cell_keys_' holds keys that are not cells of resolution {m}.")
        sums = state_array(state, "cell_class_sums_", ndim=2, shape=(n_cells, classes.shape[0]), low=0.0)
        sq = state_array(state, "cell_sq_sums_", ndim=1, shape=(n_cells,), low=0.0)
        weight_max = state_array(state, "cell_weight_max_", ndim=1, shape=(n_cells,), low=0.0, optional=True)
        derived_max = weight_max is None
        if derived_max:
            weight_max = np.sqrt(sq)
        counts = state_array(state, "cell_counts_", ndim=1, kind="i", shape=(n_cells,), low=1, optional=True)
        # The prior counts every training row; rows held out of the cells (a split) are not in their sums.
        held_out = self.lipschitz_report_ is not None or metric_kind(self.metric) not in (None, "standard")
        _check_cell_consistency(sums.astype(np.float64), sq.astype(np.float64), weight_max.astype(np.float64),
                                None if counts is None else counts.astype(np.float64), None if held_out else prior,
                                derived_max=derived_max)
        self._restore_inputs(state, classes, prior, n_features, np.float64)
        self._set_grid(low.astype(np.float64), span.astype(np.float64), m)
        return self._install(keys, sums.astype(np.float64), sq.astype(np.float64), weight_max.astype(np.float64),
                             None if counts is None else counts.astype(np.int64))

    def _cells(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Integer cell coordinates (clipped into the box) and each row's distance to the box."""
        scaled = (X - self._low) / self._span
        clipped = np.clip(scaled, 0.0, 1.0)
        outside = euclidean_norm((scaled - clipped) * self._span, axis=1)
        coords = np.minimum((clipped * self._n_side).astype(np.int64), self._n_side - 1)
        return coords, outside

    def _keys(self, coords: np.ndarray) -> np.ndarray:
        # Big-endian bytes sort like the coordinate tuples; a trailing 0x01 keeps
        # numpy's fixed-width bytes from dropping trailing zero bytes.
        n, d = coords.shape
        raw = np.empty((n, 8 * d + 1), dtype=np.uint8)
        raw[:, :-1] = coords.astype(">u8").view(np.uint8).reshape(n, 8 * d)
        raw[:, -1] = 1
        return raw.view(f"S{8 * d + 1}").ravel()

    def _bound_kernel(self) -> Kernel:
        return get_kernel("boxcar")

    def _lookup(self, X) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        X = self._validate_queries(X)
        coords, outside = self._cells(X)
        keys = self._keys(coords)
        pos = np.searchsorted(self.cell_keys_, keys)
        pos = np.minimum(pos, self.cell_keys_.shape[0] - 1)
        found = self.cell_keys_[pos] == keys
        n_classes = self.classes_.shape[0]
        class_sums = np.where(found[:, None], self.cell_class_sums_[pos], 0.0).reshape(-1, n_classes)
        sq_sums = np.where(found, self.cell_sq_sums_[pos], 0.0)
        weight_max = np.where(found, self.cell_weight_max_[pos], 1.0)
        return class_sums, sq_sums, weight_max, outside

    @blas_limited
    def kernel_statistics(self, X, bounds=None) -> KernelStatistics:
        """Each query's cell as kernel statistics (a boxcar window of reach ``diam + distance outside``, rounded up).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        bounds : ignored
            Accepted for the common estimator interface: a cell's statistics
            serve every bound setting.

        Returns
        -------
        KernelStatistics
            With one bandwidth per query (the reach) and a one-bin histogram.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import DyadicClassifier
        >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> clf = DyadicClassifier(metric=None, resolution=2, lipschitz=1.0).fit(X, y)
        >>> clf.kernel_statistics([[0.1]]).class_sums
        array([[[10.,  0.]]])
        """
        check_is_fitted(self)
        self._no_cross_fit("kernel_statistics")
        class_sums, sq_sums, weight_max, outside = self._lookup(X)
        kappa = class_sums.sum(axis=1)
        # Every cell point is this close to the query: a coordinate's cell comes from a rounded
        # (x − low)/span (within 2.0001·u₆₄ of the exact ratio, both points), and the diameter and the
        # distance outside are rounded norms (user guide, "Rounding of the sums is inside the bound").
        with np.errstate(over="ignore"):
            reach = (self.cell_diameter_ * (1.0 + 8.0 * 2.0**-53 * self._n_side) + outside) * (
                1.0 + 3.0 * direct_distance_error(self.n_features_in_))
        # The fit's float64 sums: at most the largest cell's rows each (2³² for a state without counts).
        counts = getattr(self, "cell_counts_", None)
        n_terms = int(counts.max()) if counts is not None and counts.size else 2**32
        rho = summation_error(n_terms)
        safe_max = np.where(weight_max > 0, weight_max, 1.0)
        with np.errstate(over="ignore"):  # a query beyond float64's range of its cell: +inf (a trivial bound)
            dist_sum = kappa * reach / (1.0 - rho) * (1.0 + 2.0**-52)  # κ at its largest: an upper bound
        return KernelStatistics(
            class_sums=class_sums[:, None, :],
            sq_sum=square_sum_upper(sq_sums, n_terms)[:, None],
            dist_sum=dist_sum[:, None],
            bandwidth=reach[:, None],
            kernel=get_kernel("boxcar"),
            outside_box=outside > 0,
            histogram=(kappa / safe_max)[:, None, None],
            hist_edges=np.array([0.0, 1.0]),
            weight_max=safe_max,
            sum_error=rho,
        )

    @blas_limited
    def predict_proba(self, X) -> np.ndarray:
        """Weighted class frequencies of each query's cell (fallback for empty cells).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        ndarray of shape (n_queries, n_classes)
            In the queries' namespace and device under scikit-learn's ``array_api_dispatch``
            (the cell lookup itself runs on the host). A cross-fitted model returns
            ``predict_interval(X).proba`` (:func:`~nwbound.spaces.intersect_intervals`),
            without a bound warning.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import DyadicClassifier
        >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> DyadicClassifier(metric=None, lipschitz=None, resolution=2).fit(X, y).predict_proba([[0.1]])
        array([[1., 0.]])
        """
        X, restore = queries_on_host(X)  # array_api_dispatch: the result goes back to X's namespace
        return restore(self._proba(X))

    def _proba_kappa(self, X) -> tuple[np.ndarray, np.ndarray]:
        """``(p̂, κ)`` of queries (a cross-fitted model's models' share of :meth:`predict_proba` where
        they have no bound)."""
        class_sums = self._lookup(X)[0]
        kappa = class_sums.sum(axis=1)
        return self._fallback_proba(class_sums, kappa)[0], kappa

    @blas_limited
    def predict_interval(self, X, bounds=None):
        """Cell frequencies with valid bounds (every cell point lies within ``diam + distance outside the box``).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        bounds : None, mapping or list, default=None
            As in :meth:`~nwbound.NadarayaWatsonClassifier.predict_interval`.

        Returns
        -------
        PredictionInterval or dict of name to PredictionInterval
            Its ``outside_box`` flags the queries that were clipped to a border cell. Under
            ``array_api_dispatch``, arrays in the queries' namespace and device.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import DyadicClassifier
        >>> X = np.linspace(0, 1, 400)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> clf = DyadicClassifier(metric=None, resolution=3, lipschitz=0.5, bound="chernoff").fit(X, y)
        >>> bool(clf.predict_interval([[0.1]]).certified[0])
        True
        """
        X, restore = queries_on_host(X)  # array_api_dispatch: results go back to X's namespace
        if self._is_cross_fitted():
            return restore(self._cross_interval(X, bounds))
        specs = self._resolve_bounds(bounds)
        return restore(self._report(self._intervals(X, specs), specs, bounds))

    def _intervals(self, X, specs: dict, certified_only: frozenset = frozenset()) -> dict:
        """Intervals of host queries for every setting in ``specs`` (:class:`~._certified.CertifiedRows`
        for the names in ``certified_only``)."""
        stats = self.kernel_statistics(X)
        return {name: self._interval(stats, spec, name in certified_only) for name, spec in specs.items()}


# Relative slack of the consistency checks on a restored state (sums of up to millions of terms).
_STATE_RTOL = 1e-9


def _check_cell_consistency(sums: np.ndarray, sq: np.ndarray, weight_max: np.ndarray,
                            counts: np.ndarray | None, prior: np.ndarray | None, *, derived_max: bool = False) -> None:
    """Refuse cell arrays that no weights ``w_i ∈ [0, 1]`` (relative to the largest) can produce.

    Per cell with ``κ = Σw``, ``S = Σw²``, ``m = max w`` and ``n`` rows: ``m ≤ 1``, ``m ≤ κ``,
    ``m² ≤ S ≤ m·κ`` (so ``S ≤ κ²``; ``derived_max``: ``m = √S`` stands in, and ``m ≤ 1`` is not asked), ``S > 0`` and ``m > 0`` exactly where ``κ > 0``; with
    counts, ``S ≥ κ²/n`` (Cauchy–Schwarz) and ``κ ≤ n·m``. ``class_prior_`` (None: rows were held out of
    the cells, so it is not checked against them) must be the share of each class in the cell sums. Each check allows a relative rounding slack of ``_STATE_RTOL``.

    Examples
    --------
    >>> import numpy as np
    >>> _check_cell_consistency(np.array([[3.0, 1.0]]), np.array([0.0]), np.array([1.0]), np.array([4.0]),
    ...                         np.array([0.75, 0.25]))
    Traceback (most recent call last):
    ...
    ValueError: Fitted state 'cell_sq_sums_' must be > 0 in every cell with weight (Σw > 0); cell 0 has Σw = 4 and Σw² = 0: no weights produce that.
    """
    tol = _STATE_RTOL
    kappa = sums.sum(axis=1)
    has = kappa > 0

    def refuse(bad: np.ndarray, message: str) -> None:
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(message.format(i=i, k=kappa[i], s=sq[i], m=weight_max[i],
                                            n=np.nan if counts is None else counts[i]))

    refuse(has & ~(sq > 0), "Fitted state 'cell_sq_sums_' must be > 0 in every cell with weight (Σw > 0); "
                            "cell {i} has Σw = {k:g} and Σw² = {s:g}: no weights produce that.")
    refuse(has & ~(weight_max > 0), "Fitted state 'cell_weight_max_' must be > 0 in every cell with weight; "
                                    "cell {i} has Σw = {k:g} and max w = {m:g}.")
    refuse(~has & ((sq > 0) | (weight_max > 0)), "Fitted state: cell {i} has Σw = 0 but Σw² = {s:g}, max w = {m:g}.")
    refuse(~derived_max & (weight_max > 1.0 + tol), "Fitted state 'cell_weight_max_' must be <= 1 (weights relative to the "
                                   "largest); cell {i} has {m:g}.")
    refuse(weight_max > kappa * (1 + tol), "Fitted state 'cell_weight_max_' exceeds the cell's Σw: cell {i} has "
                                           "max w = {m:g} > Σw = {k:g}.")
    refuse(sq < weight_max**2 * (1 - tol), "Fitted state 'cell_sq_sums_' is below max w² in cell {i} "
                                           "(Σw² = {s:g}, max w = {m:g}): no weights produce that.")
    refuse(sq > weight_max * kappa * (1 + tol) + 1e-300, "Fitted state 'cell_sq_sums_' exceeds max w·Σw in cell {i} "
                                                         "(Σw² = {s:g}, max w = {m:g}, Σw = {k:g}).")
    if counts is not None:
        refuse(sq < kappa**2 / counts * (1 - tol), "Fitted state 'cell_sq_sums_' is below (Σw)²/count in cell {i} "
                                                   "(Σw² = {s:g}, Σw = {k:g}, {n:g} rows): no weights produce that.")
        refuse(kappa > counts * weight_max * (1 + tol), "Fitted state 'cell_counts_' is too small for cell {i}: "
                                                        "Σw = {k:g} > {n:g} rows × max w = {m:g}.")
    total = sums.sum(axis=0)
    if prior is not None and total.sum() > 0 and not np.allclose(prior, total / total.sum(), rtol=1e-6, atol=1e-12):
        raise ValueError("Fitted state 'class_prior_' must be each class's share of 'cell_class_sums_'.")
