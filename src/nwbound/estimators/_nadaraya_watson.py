"""The Nadaraya-Watson classifier with frequentist bounds (regular and localized).

Here: fitting, and a query's way into ``predict_interval``, top-down, as far as the one call that
hands it to the fitted backend (its route: :mod:`nwbound.engine`). Beside it, all
private to :mod:`nwbound.estimators`: the label-free bandwidth grid and ``"scale"`` rule
(``_bandwidth``), the fitted state as plain arrays (``_nw_fitted_state``) and the public pieces a
sharded fit runs one at a time (``_nw_rounds``); the classifier inherits the last two.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numbers import Integral, Real

from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from sklearn.utils.validation import check_is_fitted

from .._stack import caller_stacklevel
from .._threads import blas_limited
from .._validation import check_dtype, check_int_range, check_n_jobs
from ..spaces import metric_kind, split_seed
from ._dispatch import validate_queries
from ..bounds import BoundSpec
from ..engine import BandwidthRanking, FittedInputs, KernelStatistics, choose_bandwidths, select_backend, to_host
from ..kernels import Kernel
from ..neighbors import make_index
# The grid functions lived here: still importable from this module (nwbound.estimators exports them).
from ._bandwidth import SCALE_NEIGHBORS, SCALE_QUANTILE, _power_of_two_scale, default_bandwidth_grid  # noqa: F401
from ._bandwidth import bandwidth_grid_from_nearest, bandwidth_grid_pilot, pilot_nearest_distances  # noqa: F401
from ._bandwidth import _RANKING_ROWS, resolve_ranking_fraction, scale_bandwidth, scale_bandwidth_from_nearest  # noqa: F401
from ._base import BoundedClassifierBase, _feature_names_said
from ._rules import _NWParams
from ..engine.host._backend import bandwidth_ranking, query_statistics, scaled
from ._certified import CertifiedRows
from ..engine.host._neighbor_sums import search_queries
from ._nw_fitted_state import _FittedState
from ._point import POINT_CHECK_ROWS, POINT_CHECK_SHARE, POINT_ESTIMATES, fit_point_model, judge_point_model, judge_rows_proba, point_proba, with_point_estimate
from ._nw_rounds import _Rounds
from ..engine.host._sums import TrainingSet, neighbor_distances

__all__ = ["NadarayaWatsonClassifier"]


def _on_host(out: Any) -> Any:
    """An interval (or a dict of them) with NumPy fields: the device path's stay where they were computed."""
    import dataclasses

    if isinstance(out, dict):
        return {name: _on_host(iv) for name, iv in out.items()}
    return dataclasses.replace(out, **{f.name: to_host(getattr(out, f.name)) for f in dataclasses.fields(out)
                                       if getattr(out, f.name) is not None and not isinstance(getattr(out, f.name), np.ndarray)})


class NadarayaWatsonClassifier(_FittedState, _Rounds, _NWParams, BoundedClassifierBase):
    """Nadaraya-Watson classifier with per-query frequentist bounds.

    ``p̂_c(y) = Σ_i w_i K(‖y − y_i‖/λ) 1{c_i = c} / κ(y)``, with ``κ(y) = Σ_i w_i K(‖y − y_i‖/λ)``,
    over all training points (*regular*, ``n_neighbors=None``) or the ``k``
    nearest ones (*localized*). :meth:`predict_interval` returns, for every
    query, ``ε`` such that ``|p_c(y) − p̂_c(y)| ≤ ε`` with probability at least
    ``1 − δ`` over the training labels (for all classes at once; with
    ``coverage="per_class"``, for each class on its own), given the training inputs — under the
    stated assumption (Lipschitz class probabilities with constant ``L``, or
    classes separated by a margin ``γ``) and i.i.d. sampling.

    The defaults (``metric="auto"``, ``lipschitz="auto"``, ``bandwidth="auto"``) state the bound in
    a space learned on a share of the training rows, with L chosen on held-out rows and λ per
    query (user guide, "Defaults"); they need a few dozen training rows per class or more, and
    ``fit`` raises a ValueError that names the fix on fewer. **The paper's classifier: pass
    ``metric=None`` and a numeric ``lipschitz``** (or a ``margin``), in the units of the features
    as given; nothing is split.

    Parameters
    ----------
    kernel : str, Kernel or callable, default="epanechnikov"
        ``"epanechnikov"``, ``"boxcar"``, ``"quartic"``, ``"triweight"``,
        ``"tricube"``, ``"cosine"``, ``"gaussian"`` (truncated at 3λ) or
        ``"gaussian_untruncated"``; or a callable ``K(u)`` of the scaled distance.
    bandwidth : float, "scale" or "auto", default="auto"
        λ, in the units of the features (of the learned space with ``metric``). ``"scale"``: one λ set
        by the training inputs' own neighbour distances at fit
        (:func:`scale_bandwidth`: the 0.9 quantile of a training row's distance
        to its 10th nearest other row, or to its k-th for the localized
        classifier with a larger k), recorded in ``bandwidth_``; it reads the
        inputs only, never the labels, so every bound at it stays valid, and it
        follows the features' units (a fixed number such as 1.0 reaches no
        training point once the features are spread wider than it).
        ``"auto"`` (the default) picks, for each query, the
        λ of ``bandwidth_grid`` that minimises ε; this stays valid because ε
        depends on the inputs only, never on the labels. Needs ``lipschitz`` or
        ``margin``. The regular classifier with a polynomial kernel ranks the
        whole grid from one pass of distance moments, then computes the chosen
        λ's statistics exactly (user guide: "Choosing λ per query"). λ is chosen
        at the δ in force, so intervals at two values of δ are **not nested**:
        at a smaller δ a query may get another λ and a narrower interval. Each
        is valid at its own level; for intervals nested in δ fix ``bandwidth``
        (a number or ``"scale"``), at which every bound widens as δ falls.
    n_neighbors : int or None, default=None
        None: the regular classifier over all training points. An int k: the
        localized classifier over the k nearest neighbours; among training rows
        at exactly the k-th distance the lower row number wins
        (:data:`nwbound.neighbors.TIE_RULE`), so every exact ``algorithm`` and
        the sharded Dask classifier give identical results.
    algorithm : str, default="auto"
        Neighbour search for the localized classifier: ``"brute"``,
        ``"kd_tree"``, ``"ball_tree"`` (exact), a registered index such as
        ``"hnsw"`` (approximate; see :func:`nwbound.neighbors.available_indexes`),
        or ``"auto"``: exact below ``nwbound.neighbors.AUTO_HNSW_RULE``
        (100 000 training rows or fewer than 16 features, where the index does
        not pay for its build), HNSW above it with ``ef`` tuned to a recall
        target. The bound stays valid with approximate neighbours: they are
        chosen from the inputs only.
    index_params : dict or None, default=None
        Extra options for the neighbour index (e.g. ``{"leaf_size": 40}``, or
        ``{"recall": 0.999}`` / ``{"M": 16, "ef": 64}`` for HNSW).
    lipschitz : float, "auto" or None, default="auto"
        Lipschitz constant L of every class probability, **in the units of the
        features this classifier sees** (rescale it with
        :func:`nwbound.restate_lipschitz` after scaling the features; with
        ``metric``, the learned space's units, and ``metric="auto"`` with a
        number warns at fit). ``"auto"`` (the default): the smallest L of a
        grid around a pilot estimate that rows held out of the kernel sums do
        not reject (``lipschitz_``, ``lipschitz_report_``; user guide,
        "Checking L on held-out data"); not used when ``margin`` is given.
        None: no assumption (no bounds; ``predict`` and ``predict_proba`` only).
    margin : float or None, default=None
        Margin γ between classes (same units). Give ``lipschitz`` or ``margin``.
    delta : float, default=0.05
        Failure probability δ of each query's bound. ``lipschitz="auto"``
        chooses L at fit, on check rows tested at the δ then in force;
        ``set_params(delta=...)`` after fit changes every interval's level but
        keeps that L (it is never below the pilot, whatever δ): refit to test it
        at the new δ.
    bound : {"chernoff", "hoeffding", "paper", "selfnormalized"}, default="chernoff"
        Form of the bound (see :mod:`nwbound.bounds`). ``"chernoff"``: the
        band-Chernoff test with the exact Bernoulli moment-generating function
        (per point for the localized classifier, over a distance histogram of
        ``histogram_bins`` bins for the regular one; never wider than
        ``"hoeffding"`` in its exact form; the regular classifier with
        ``kernel="gaussian_untruncated"``, whose support has no finite
        histogram, falls back to ``"hoeffding"`` with a warning). ``"paper"`` with ``sigma=0.25``,
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
        :func:`~nwbound.estimators.default_bandwidth_grid`.
    ranking_fraction : float in (0, 1] or "auto", default="auto"
        ``bandwidth="auto"`` with the regular classifier ranks the grid on this share
        of the training rows (a fixed sample, by row number: :meth:`bandwidth_ranking`),
        then computes exact statistics at each query's chosen bandwidth over every
        row. The choice depends on the inputs only, so every bound stays valid; a
        smaller share is faster and may choose a bandwidth of slightly larger ε.
        ``"auto"``: every row up to 4 096, beyond ``max(4096/n, 1/16)``; 1: the
        bandwidth of least label-free ε exactly (a kernel that is not a polynomial
        in u² then takes the exhaustive pass, see :meth:`ranks_first`).
    dtype : {"float64", "float32"}, default="float64"
        Working precision of the distance computations. float64: distances and kernel values in
        float64; where a kernel's support holds few training rows, the dense passes compute the
        distance product in float32 only to rule pairs out, and every pair it keeps gets its
        distance from the float64 coordinates (faster, and no less exact: :mod:`nwbound.engine.host._sums`).
        float32: the features are stored in float32 and kernel values come from the float32
        product, within its error bound. float32 data far from
        1 (beyond 2^±100, e.g. 1e-46 or 1e160) are stored in a power-of-two
        unit (``feature_unit`` in :meth:`get_fitted_state`), so they neither
        underflow nor overflow; queries float32 cannot hold in that unit are
        refused with a ValueError.
    working_memory : float or None, default=None
        MiB allowed for one block of the distance matrix (None: scikit-learn's
        ``working_memory`` setting).
    n_jobs : int or None, default=None
        Threads over query blocks (each with one BLAS thread); -1 for all cores.
    random_state : int or None, default=None
        Seed of a randomised neighbour index (e.g. HNSW; exact search ignores it) and of the
        split and map of ``metric`` (None there: 0, so that a fit repeats).
    histogram_bins : int, default=32
        Bins of the distance histogram behind ``bound="chernoff"`` for the
        regular classifier (more bins: tighter, slightly slower).
    device : str or None, default=None
        None: the CPU engine. A PyTorch device (``"cuda"``, ``"cuda:1"``, or
        ``"cpu"`` for PyTorch's CPU backend): the regular classifier's kernel
        statistics are computed there by :mod:`nwbound.gpu` (the fused Triton
        kernel on CUDA where it applies), with the training set copied once;
        results come back as NumPy arrays — under scikit-learn's
        ``array_api_dispatch`` (``sklearn.config_context(array_api_dispatch=True)``)
        those of ``predict``, ``predict_proba`` and ``predict_interval`` come
        back in the queries' namespace and on their device (PyTorch, CuPy,
        ``array_api_strict``; string class labels stay NumPy), with or without
        ``device``; with ``device`` those queries are checked and used where
        they live, never copied to the host. With one bandwidth and
        ``bound="chernoff"`` or ``"hoeffding"`` the bounds are computed there
        too (only the final per-query results cross, and only for NumPy
        queries). Needs the ``gpu`` extra;
        computes in ``dtype`` (use ``"float32"`` on a GPU); kernels
        ``epanechnikov``, ``quartic``, ``triweight``, ``boxcar``, ``gaussian``
        and ``gaussian_untruncated`` (with ``bound="chernoff"``: the first four);
        with ``n_neighbors`` an exact search (``algorithm`` ``"auto"``,
        ``"brute"``, ``"kd_tree"``, ``"ball_tree"``) runs on the device too
        (a blocked product, top-k and a float64 re-rank: the exact
        neighbours, ties to the lower row), an HNSW index on the host; the
        neighbours' distances (float64, whatever ``dtype``), kernel weights
        and sums are computed on the device.
    metric : None, "standard", "auto", transformer or classifier, default="auto"
        The space the kernel and the bound work in (user guide: "Bounds in a learned space").
        None: the features as given (the paper's classifier, without a split). ``"standard"``: each
        feature standardised (label-free: fitted on every training row, no split). A
        scikit-learn transformer (PCA, LDA, NCA, a Pipeline) or a classifier (its
        ``decision_function``, else ``predict_proba``, as coordinates) is cloned and fitted on
        the metric share of the training rows (``metric_fraction``, stratified by class, or by
        ``groups``); the kernel sums then use only the other rows, mapped, so that given the map
        their labels are as independent as before. A model fitted elsewhere enters as
        ``sklearn.frozen.FrozenEstimator(model)`` (it must not have seen those rows' labels).
        ``"auto"`` (the default): the class probabilities of a score model chosen by cross-validation on the
        map rows (gradient boosting or logistic regression, ``metric_report_``) next to the
        standardised features scaled down (:class:`nwbound.spaces.LearnedSpace`). The map's output is centred and scaled. Queries
        are always given in the original features. **``lipschitz``, ``margin`` and
        ``bandwidth`` are then in the units of the mapped space** (``metric_.transform(X)``).
    metric_fraction : float in (0, 1), default=0.4
        Share of the training rows that fit the map (the rest enter the kernel sums).
    cross_fit : bool, int or "auto", default="auto"
        Fit several models on splits whose roles differ; intervals are the intersection of all of
        theirs, each at level δ/(number of models), ``p̂`` the κ-weighted mean (with
        ``point_estimate="nw"``; ``"auto"`` moves the point model's into the box instead)
        (``cross_fit_models_``; :func:`nwbound.spaces.cross_fit_layouts`). ``True``: two models,
        the shares at ``metric_fraction`` and the same with the roles swapped. An int ``K ≥ 2``:
        ``K`` stratified folds (whole groups with ``groups``), each model's kernel sums on one fold
        and its map on the other ``K − 1``. ``"auto"``: with ``metric="auto"``, while the metric
        share (``metric_fraction`` of the training rows) holds at most
        ``nwbound.spaces.AUTO_CROSS_FIT_MAX_ROWS`` (2 000) rows, the swapped pair (2 models at δ/2; folds beside it
        measured 2.5–5× the cost for no more certificates); otherwise one split (user guide,
        "Cross-fitting").
    point_estimate : {"auto", "nw"}, default="auto"
        The probabilities reported inside the bound's box (``proba`` of :meth:`predict_interval`,
        :meth:`predict_proba`, :meth:`predict`). ``"nw"``: the NW estimate (cross-fitted: the
        models' κ-weighted mean moved into their intersected box). ``"auto"``: where the space
        has a score model (``metric="auto"``, or a classifier with ``predict_proba`` given as
        ``metric``), a fresh copy of the score model the space chose (the same candidate and
        hyper-parameters; the most chosen when cross-fitted) is fitted on every training row
        (``point_model_``; above the cross-fitting cap, every row but the at most 512 check rows
        that judge it, below), and its probabilities are moved into the box
        (:func:`nwbound.spaces.move_into_box`: the Euclidean projection onto the distributions
        in the box; the NW estimate where the box holds none), ``epsilon`` recomputed from them.
        This is sound because the guarantee is the box, which is unchanged: any point moved into
        it is as valid, and a class the box certifies is the argmax of every distribution in it,
        so ``lower``, ``upper``, ``certified`` and the certified class are those of ``"nw"``; the
        score model of the space sees only the map rows (they must stay apart from the kernel
        rows), the point model every row, which makes it as accurate as gradient boosting on the
        unseen tabular sets (user guide, tabular page, "Round 16"). Without a score model
        (``metric=None``, ``"standard"``, a transformer) and for the localized classifier
        (``n_neighbors``) ``"auto"`` means ``"nw"``; so it does without a bound (neither
        ``lipschitz`` nor ``margin``: no box). Where the fit holds check rows out
        (``lipschitz="auto"``), the first model's check rows (at most 512, and at most a tenth of
        the rows) judge it against that model's kernel estimate, which stays where it is more
        accurate there beyond noise (``point_report_``: a score model chosen on the map rows can be
        much worse than the kernel estimate, which reads the features too). First the space's own
        score model, which never saw them: where it passes, the point model is fitted on every
        row; where it fails, a copy fitted on every other row is judged, and kept if it passes.
        The fit costs one more fit of the score model.
    verbose : int, default=0
        Progress of ``fit`` on stderr, one line per step with the seconds since it began (the
        split, the learned space, the held-out check of ``lipschitz="auto"``, each cross-fitted
        model). 0: silent; 1: the steps; 2: also the score model's choice and every L checked.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    class_prior_ : ndarray of shape (n_classes,)
        Weighted class frequencies of the training set.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features,)
        Only when X has string feature names.
    kernel_ : Kernel
    bandwidth_ : float or None
        The one bandwidth used (the number given, or the one ``"scale"`` chose);
        None for ``bandwidth="auto"``, which chooses per query.
    bandwidths_ : ndarray
        The bandwidth (one value) or the grid searched by ``bandwidth="auto"``.
    ranking_fraction_ : float
        The share of training rows the grid is ranked on (:func:`~nwbound.estimators.resolve_ranking_fraction`).
    beta_ : float or None
        L or 1/γ.
    delta_prime_ : float
        Per-class failure probability used in ε.
    n_samples_fit_ : int
        Training rows in the kernel sums (the NW share with ``metric``).
    metric_ : LearnedSpace or None
        The fitted map (``metric_.map_`` the fitted scikit-learn object); None without ``metric``
        or with ``cross_fit`` (see ``cross_fit_models_``).
    metric_report_ : MetricAutoReport, tuple, or None
        With ``metric="auto"``: which score model was chosen and why
        (:class:`nwbound.spaces.MetricAutoReport`; one per model when cross-fitted).
    metric_rows_, check_rows_, nw_rows_ : ndarray of int
        Row numbers of the metric share, of the held-out check rows within it (``lipschitz="auto"``)
        and of the rows in the kernel sums.
    cross_fit_models_ : list of estimators
        When cross-fitted: the models, each at level δ/(number of models) (``n_samples_fit_``
        then adds up their kernel sums' rows: a row counts once per model that sums it). Every
        ``predict*`` sets this estimator's current bound and predict-time parameters on each of
        them (``delta`` divided by the number of models; ``lipschitz="auto"`` keeps each model's
        own chosen L), so they show the settings they predict with (user guide, "Cross-fitting").
    point_model_ : estimator or None
        ``point_estimate="auto"``: the score model fitted on every training row (a
        ``HistGradientBoostingClassifier``, at 63 bins per feature above 4 000 rows, the space's
        keeping 255; a ``Pipeline(StandardScaler, LogisticRegression)`` or a
        clone of a classifier given as ``metric``; ``metric="auto"``'s reads the features in their
        columns' power-of-two units, :func:`nwbound.spaces.in_column_units`, as the space's score
        model does), on the estimator's class indices. None with ``"nw"``, without a score model,
        for the localized classifier, and where the kernel estimate was more accurate on the check
        rows (``point_report_``).
    point_report_ : dict or None
        ``point_estimate="auto"`` with check rows: ``n_rows`` (the first model's check rows that
        judged, at most ``POINT_CHECK_ROWS`` = 512 and ``POINT_CHECK_SHARE`` = a tenth of the
        rows), ``judged`` (``"map rows"``: the space's own score model, which passed, so the point
        model was fitted on every row; ``"all but the check rows"``: it failed, and a copy fitted
        on every row but the judging ones was judged, and kept if ``used``), ``point_accuracy``
        (the judged model's), ``nw_accuracy`` (that model's kernel estimate) and ``used``. None
        otherwise, and after ``set_fitted_state`` (the point model is restored, not its judgement).
    backend_ : nwbound.engine.Backend
        What computes the kernel sums (and, with ``device``, the bounds where the device's serve the
        settings): the host engines, or the device's with ``device`` given. Picked at fit; a later
        ``set_params(device=...)`` picks it again at the next prediction.

    Notes
    -----
    The bound parameters (``lipschitz``, ``margin``, ``delta``, ``bound``,
    ``coverage``, ``sigma``, ``ck``) and ``empty_neighborhood``, ``n_jobs``,
    ``working_memory``, ``histogram_bins`` and ``device`` are read when
    predicting: ``set_params`` on a fitted estimator changes the next
    ``predict_interval`` without a refit (``beta_``, ``delta_prime_`` follow;
    a cross-fitted model passes them on to ``cross_fit_models_``).
    ``verbose`` only shapes what ``fit`` prints, and may change too.
    Every other parameter shapes the fitted state; predicting after
    ``set_params`` changed one raises a ``ValueError`` that names it (call
    ``fit`` again).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((400, 2)); y = (X[:, 0] + 0.2 * rng.standard_normal(400) > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
    >>> Q = np.array([[0.1, 0.5], [0.9, 0.5]])
    >>> clf.predict(Q).tolist()
    [0, 1]
    >>> iv = clf.predict_interval(Q)
    >>> np.round(iv.lower, 2).tolist(), np.round(iv.upper, 2).tolist()
    ([[0.73, 0.0], [0.0, 0.69]], [[1.0, 0.27], [0.31, 1.0]])

    The localized classifier uses the 50 nearest training points of each query:

    >>> NadarayaWatsonClassifier(metric=None, bandwidth=0.2, n_neighbors=50, lipschitz=1.0).fit(X, y).predict(Q).tolist()
    [0, 1]
    """

    _parameter_constraints: dict = {
        **BoundedClassifierBase._parameter_constraints,
        "kernel": [str, Kernel, callable],
        "bandwidth": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto", "scale"})],
        "n_neighbors": [Interval(Integral, 1, None, closed="left"), None],
        "algorithm": [str],
        "index_params": [dict, None],
        "ck": [Interval(Real, 0, None, closed="neither"), None],
        "bandwidth_grid": ["array-like", None],
        "ranking_fraction": [Interval(Real, 0, 1, closed="right"), StrOptions({"auto"})],
        "dtype": "no_validation",  # float64/float32 as a name or a numpy type: check_dtype says which
        "working_memory": [Interval(Real, 0, None, closed="neither"), None],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
        "histogram_bins": [Interval(Integral, 1, 4096, closed="both")],
        "device": [str, None],
        "verbose": ["verbose"],
        "point_estimate": [StrOptions(set(POINT_ESTIMATES))],
    }

    # Read when predicting (set_params takes effect without a refit), with BOUND_PARAMETERS.
    _predict_time_parameters = ("empty_neighborhood", "n_jobs", "working_memory", "histogram_bins", "device",
                                "verbose")

    def __init__(
        self,
        *,
        kernel="epanechnikov",
        bandwidth="auto",
        n_neighbors=None,
        algorithm="auto",
        index_params=None,
        lipschitz="auto",
        margin=None,
        delta=0.05,
        bound="chernoff",
        coverage="simultaneous",
        sigma=0.5,
        ck=None,
        empty_neighborhood="prior",
        bandwidth_grid=None,
        ranking_fraction="auto",
        dtype="float64",
        working_memory=None,
        n_jobs=None,
        random_state=None,
        histogram_bins=32,
        device=None,
        metric="auto",
        metric_fraction=0.4,
        cross_fit="auto",
        point_estimate="auto",
        verbose=0,
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
        self.ranking_fraction = ranking_fraction
        self.dtype = dtype
        self.working_memory = working_memory
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.histogram_bins = histogram_bins
        self.device = device
        self.metric = metric
        self.metric_fraction = metric_fraction
        self.cross_fit = cross_fit
        self.point_estimate = point_estimate
        self.verbose = verbose

    # ------------------------------------------------------------------------------------------
    @blas_limited
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None, groups=None) -> "NadarayaWatsonClassifier":
        """Store the training set (and build the neighbour index when localized).

        With ``metric``, the rows are split first: the map is fitted on the metric share and
        the kernel sums use the other rows, mapped (``nw_rows_``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights ``w_i`` (a weight multiplies one observation's
            kernel value; it does not count as several independent samples).
            Only relative weights matter: they are divided by the largest, so
            ``kappa`` is reported in units of the largest weight. **The bounds
            assume weights that depend on the inputs only** (conditional on the
            inputs, the labels stay independent draws from ``p``); weights that
            depend on the labels change the target to ``w_c p_c / Σ_k w_k p_k``.
            Weights constant within each class and different between classes
            (``compute_sample_weight("balanced", y)``) are refused with a bound;
            apply class priors at decision time instead
            (:func:`nwbound.metrics.bayes_decision`).
        groups : array-like of shape (n_samples,), default=None
            Group labels (patients, say): when the rows are split (``metric``), each group
            stays on one side. Without groups the split is stratified by class.

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
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.2).fit(X, y).n_samples_fit_
        40
        >>> NadarayaWatsonClassifier(bandwidth=0.5, metric="auto", lipschitz=None, cross_fit=False).fit(X, y).n_samples_fit_
        24
        """
        dtype, _, auto = self._check_params()
        self.point_model_, self._point_units = None, None  # fitted last (_fit_point_estimate)
        if self._uses_cross_fit(X):
            return self._fit_cross(X, y, sample_weight, groups)
        X, labels, weights = self._validate_training_data(X, y, sample_weight, dtype)
        every_row = (X, labels, weights)
        X, labels, weights = self._fit_space(X, labels, weights, groups, dtype)
        if auto:
            # X is in the fit's feature unit (float32 far from 1); the grid is in the input's units.
            grid = default_bandwidth_grid(X) * self._unit() if self.bandwidth_grid is None else self._checked_grid()
        elif self.bandwidth == "scale":
            grid = np.array([scale_bandwidth(X, self.n_neighbors) * self._unit()])
        else:
            grid = np.array([float(self.bandwidth)])
        unit = self._unit()  # X is in this power-of-two unit (float32 far from 1); the box is not
        box = (X.min(axis=0).astype(np.float64) * unit, X.max(axis=0).astype(np.float64) * unit)
        return self._install(X, labels, weights, grid, box)._finish_fit()._fit_point_estimate(*every_row)

    # Each cross-fitted model reports its own NW estimate; the point model is fitted once, by the whole.
    _cross_model_params = {"point_estimate": "nw"}

    def _fit_point_estimate(self, X: np.ndarray, labels: np.ndarray,
                            weights: np.ndarray | None) -> "NadarayaWatsonClassifier":
        """``point_estimate="auto"``: the space's score model fitted on the validated training rows
        (:func:`~._point.fit_point_model`), once per fit; the last step of ``fit``.

        Where the fit has check rows (``lipschitz="auto"``), the first model's (at most
        ``POINT_CHECK_ROWS`` of them) judge the score model against that model's own kernel
        estimate (:func:`~._point.judge_point_model`). First the space's own score model, which saw
        only the map rows: where the kernel estimate does not beat it beyond noise, the same model
        fitted on every row (a superset of its rows) is fitted once, on every row. Otherwise a copy
        fitted without the judging rows (at most ``POINT_CHECK_SHARE`` of the rows) is judged in
        turn and kept if it passes; where the kernel estimate still wins, it stays (``point_model_``
        None, ``point_report_`` says why)."""
        self.point_model_, self._point_units, self.point_report_ = None, None, None
        if getattr(self, "_forced_split", None) is not None:
            return self  # one model of a cross-fitted whole: the whole judges, on its first model's check rows
        judge = self.cross_fit_models_[0] if self._is_cross_fitted() else self
        checked = judge.__dict__.pop("_check_proba", None)  # the L check's p̂ of its rows (_keep_check_proba)
        if not self._fits_point_model():
            return self
        seed, n_classes = split_seed(getattr(self, "random_state", None)), self.classes_.shape[0]
        rs = np.random.RandomState(seed)

        def fitted(rows: np.ndarray) -> tuple[Any, np.ndarray | None]:
            model, units = fit_point_model(metric_kind(self.metric), self.metric, getattr(self, "metric_report_", None),
                                           X[rows], labels[rows], None if weights is None else weights[rows], seed)
            if model is None or not np.array_equal(getattr(model, "classes_", None), np.arange(n_classes)):
                return None, None  # no score model, or one that never saw a class: the kernel estimate stays
            return model, units

        every = np.arange(X.shape[0])
        held = np.asarray(getattr(judge, "check_rows_", np.zeros(0, np.intp)), dtype=np.intp)
        n_judges = min(POINT_CHECK_ROWS, int(POINT_CHECK_SHARE * X.shape[0]))
        if held.size > n_judges:
            held = np.sort(rs.choice(held, n_judges, replace=False))
        if not held.size:
            self.point_model_, self._point_units = fitted(every)
            return self._said_point(X.shape[0])
        nw = judge_rows_proba(judge, checked, X, held)
        space = getattr(judge, "metric_", None)
        probe = None if space is None else space.score_proba(X[held], np.arange(n_classes))
        if probe is not None:
            self.point_report_ = {**judge_point_model(probe, nw, labels[held]), "judged": "map rows"}
            if self.point_report_["used"]:
                self._say_judged("the space's score model (map rows only)")
                self.point_model_, self._point_units = fitted(every)
                return self._said_point(X.shape[0])
        model, units = fitted(np.setdiff1d(every, held))
        if model is None:
            return self
        self.point_report_ = {**judge_point_model(point_proba(model, units, X[held], n_classes), nw, labels[held]),
                              "judged": "all but the check rows"}
        self._say_judged("the score model fitted without them")
        if self.point_report_["used"]:  # kept as judged: the check rows are at most a tenth of the rows
            self.point_model_, self._point_units = model, units
        return self._said_point(X.shape[0] - held.size)

    def _judges_point_model(self) -> bool:
        """Whether a point model is judged on this model's check rows: its own (:meth:`_fits_point_model`),
        or, one model of a cross-fitted whole, the whole's (its first model's rows)."""
        if getattr(self, "_forced_split", None) is not None:
            return bool(getattr(self, "_judges_for_whole", False))
        return self._fits_point_model()

    def _say_judged(self, which: str) -> None:
        report = self.point_report_
        self._say(f"point_estimate='auto': on {report['n_rows']} check rows {which} is "
                  f"{100 * report['point_accuracy']:.1f} % accurate, the kernel estimate "
                  f"{100 * report['nw_accuracy']:.1f} %" + ("" if report["used"] else ": not used"))

    def _said_point(self, n_rows: int) -> "NadarayaWatsonClassifier":
        if self.point_model_ is not None:
            self._say(f"point_estimate='auto': {type(self.point_model_).__name__} fitted on {n_rows} rows")
        return self

    def _fits_point_model(self) -> bool:
        """Whether ``fit`` fits a point model where the space has a score model: ``point_estimate="auto"``
        and the regular classifier (the localized one keeps its kernel estimate)."""
        return self.point_estimate == "auto" and self.n_neighbors is None

    def _point_estimate(self, X: Any, out: Any) -> Any:
        """``out`` (an interval, or a dict of them) with the point model's probabilities of the queries
        ``X`` moved into each box (:func:`~._point.with_point_estimate`); ``out`` itself without a point
        model. The one place where both the single and the cross-fitted routes get their point estimate."""
        model = getattr(self, "point_model_", None)
        if model is None:
            return out
        with _feature_names_said(True):  # said once per call, by the intervals' own validation
            host = validate_queries(self, X, self._fit_dtype)  # as the space reads them (_validate_queries)
        proba = point_proba(model, getattr(self, "_point_units", None), host, self.classes_.shape[0])
        return with_point_estimate(_on_host(out), proba)

    def _check_fitted(self) -> None:
        super()._check_fitted()
        check_n_jobs(self.n_jobs)
        self._check_device()

    def __nwbound_fitted_inputs__(self) -> FittedInputs:
        """What the fitted backend reads beside the public attributes (:class:`~nwbound.engine.FittedInputs`):
        handed over at each call, so that ``nwbound.engine`` reads no private member of the estimator."""
        return FittedInputs(train=self._train, feature_unit=self._unit(), box=getattr(self, "_box", None),
                            index_kneighbors=self._index_kneighbors, fallback_rows=self._fallback_rows,
                            check_device=self._check_device, interval=self._interval)

    def _check_device(self) -> None:
        """``device`` needs a kernel with an array-API form (fit time, and predict time after set_params)."""
        if getattr(self, "device", None) is not None:  # older pickles lack it
            from ..engine.device._array_api import supported_kernel_name

            supported_kernel_name(self.kernel)  # ValueError naming the kernels the device path has

    def _neighbors_hint(self, n_samples: int) -> str:
        """What ``n_neighbors`` counts, and how many rows the split kept out of the kernel sums."""
        held = getattr(self, "metric_rows_", np.zeros(0)).shape[0]
        if not held:
            return f"It counts neighbours among the {n_samples} training samples (None: use all)."
        forced = getattr(self, "_forced_split", None) is not None
        why = ("this cross-fitted model's split (each model keeps another share of the rows in its kernel sums: "
               "the smallest share bounds n_neighbors)" if forced
               else f"the split of metric={self.metric!r}" + (", lipschitz='auto'" if self.lipschitz == "auto" else "")
               + f" (metric_fraction={self.metric_fraction:g})")
        return (f"It counts neighbours among the {n_samples} rows in the kernel sums: {why} kept {held} of the "
                f"{held + n_samples} training rows out of them, to fit the space and check L. Give a smaller "
                "n_neighbors or None (all)" + (", or cross_fit=False (one split)" if forced else "")
                + ", or keep every row in the kernel sums: metric=None with a numeric lipschitz.")

    def _install(self, X, labels, weights, grid, box) -> "NadarayaWatsonClassifier":
        """The one place a fitted state is set up, from ``fit`` or :meth:`set_fitted_state`."""
        _, kernel, auto = self._check_params()
        n_samples = X.shape[0]
        if self.n_neighbors is not None:
            check_int_range(self.n_neighbors, "n_neighbors", 1, n_samples, hint=self._neighbors_hint(n_samples))
        self._validate_bound_params(kernel, bound_required=auto, localized=self.n_neighbors is not None)
        unit = self._unit()
        if unit != 1.0 and not np.all(grid / unit >= np.finfo(np.float64).tiny):
            raise ValueError(
                f"bandwidth {grid.min():g} is too small for dtype=\"float32\" next to features up to "
                f"{2 * unit:.3g} (their ratio leaves float64's range): use dtype=\"float64\" or rescale the features."
            )
        self.kernel_ = kernel
        self.bandwidths_ = grid
        self.bandwidth_ = None if auto else float(grid[0])
        self.ranking_fraction_ = resolve_ranking_fraction(self.ranking_fraction, n_samples)
        self._train = TrainingSet.build(X, labels, self.classes_.shape[0], weights)
        if (auto and self.n_neighbors is None and self.ranking_fraction_ < 1.0
                and self._train.sample(self.ranking_fraction_).X.shape[0] == 0):
            warnings.warn(  # the fallback is the widest λ for every query; said here, not blamed on L later
                f"ranking_fraction={self.ranking_fraction!r} of {n_samples} training rows ranks the bandwidth grid on "
                "no row: every query takes the grid's widest bandwidth. Fix: ranking_fraction='auto' (every row up "
                f"to {_RANKING_ROWS} rows), or at least {1.0 / n_samples:.3g} (one row).",
                UserWarning, stacklevel=caller_stacklevel(),
            )
        self._box = box
        self.n_samples_fit_ = n_samples
        self.index_ = None
        if self.n_neighbors is not None:
            self._index_scale = _power_of_two_scale(X)
            # The index tunes its search (e.g. HNSW's ef for a recall target) for this k.
            self.index_ = make_index(
                self.algorithm, n_jobs=self.n_jobs, random_state=self.random_state,
                **{"n_neighbors": self.n_neighbors, **(self.index_params or {})},
            ).fit(X / self._index_scale)
        self._snapshot_fit_params()
        self.backend_ = select_backend(self)  # decided once (re-decided only as _engine says)
        self._fit_complete = True
        return self

    def _checked_grid(self) -> np.ndarray:
        grid = np.asarray(self.bandwidth_grid, dtype=np.float64).ravel()
        if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid <= 0):
            raise ValueError("bandwidth_grid must be a non-empty list of finite bandwidths > 0.")
        return np.unique(grid)

    # ------------------------------------------------------------------------------------------
    # predict_interval, top-down: each step below the one that calls it. The public pieces a sharded
    # fit runs one at a time (kernel_statistics, bandwidth_ranking, ranks_first, choose_bandwidths) are
    # in _nw_rounds, get_fitted_state and set_fitted_state in _nw_fitted_state.
    @blas_limited
    def predict_interval(self, X, bounds=None):
        """Class probabilities with per-query bounds ``lower ≤ p_c(y) ≤ upper``.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        bounds : None, mapping or list, default=None
            None: this estimator's own bound setting. A mapping
            ``{name: {setting: value}}`` — settings among ``lipschitz``,
            ``margin``, ``delta``, ``bound``, ``coverage``, ``sigma``, ``ck`` —
            or a list of bound forms (e.g. ``["hoeffding", "chernoff"]``): one
            interval per entry, all from **one** pass of kernel sums.

        Returns
        -------
        PredictionInterval
            Or a dict of name to PredictionInterval when ``bounds`` is given.

        Raises
        ------
        ValueError
            If neither ``lipschitz`` nor ``margin`` is given (here or in a setting).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.random((500, 1)); y = (rng.random(500) < X[:, 0]).astype(int)
        >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
        >>> iv = clf.predict_interval([[0.1], [0.9]])
        >>> bool(np.all(iv.lower <= iv.proba) and np.all(iv.proba <= iv.upper))
        True
        >>> both = clf.predict_interval([[0.5]], bounds=["hoeffding", "chernoff"])
        >>> sorted(both)
        ['chernoff', 'hoeffding']
        """
        X, restore = self._dispatched_queries(X)  # array_api_dispatch: results go back to X's namespace
        if self._is_cross_fitted():
            return restore(self._point_estimate(X, self._cross_interval(X, bounds)))
        specs = self._resolve_bounds(bounds)
        return restore(self._point_estimate(X, self._report(self._intervals(X, specs), specs, bounds)))

    def _engine(self) -> Any:
        """The fitted backend (:mod:`nwbound.engine`), picked once at fit (``backend_``).

        Re-picked only where its rule no longer holds: ``device`` is a predict-time parameter, so a
        ``set_params(device=...)`` after fit (or a model pickled before ``backend_`` existed) gets the
        backend :func:`~nwbound.engine.select_backend` picks now. The queries' array type never changes
        the backend: the device backend itself takes its statistics to the host's bounds where its
        own bounds cannot serve the queries (:meth:`~nwbound.engine.device._backend.DeviceBackend.intervals`).
        """
        backend = getattr(self, "backend_", None)
        if backend is None or not backend.serves(self):
            backend = self.backend_ = select_backend(self)
        return backend

    def _keeps_device_queries(self) -> bool:
        return self._engine().keeps_queries  # the device backend reads them where they live

    def _intervals(self, X, specs: dict, certified_only: frozenset = frozenset()) -> dict:
        """Intervals of queries from :meth:`_dispatched_queries` for every setting in ``specs``
        (:class:`~._certified.CertifiedRows` for the names in ``certified_only``).

        One call to the backend, whose route it is: the device's ranking, choice, statistics and
        bounds where they serve, else the host's bounds on the backend's statistics
        (:func:`~nwbound.engine.host._backend.host_intervals`)."""
        # every caller resolved ``specs`` on this estimator just before (_resolve_bounds: _check_fitted ran)
        engine = self._engine()
        X = self._validate_queries(X, keep_namespace=engine.keeps_queries, checked=True)
        out = engine.intervals(X, specs, certified_only)
        # in place: the device's result carries its packed usefulness read (the host's are already CertifiedRows)
        for name in certified_only & out.keys():
            out[name] = CertifiedRows.of(out[name])
        return out

    @property
    def ranks_from_moments_(self) -> bool:
        """True when :meth:`bandwidth_ranking` comes from one pass of distance moments.

        The regular classifier on the host with a compact kernel that is a polynomial in ``u²``
        (``kernel_.polynomial``): then ``bandwidth="auto"`` ranks the grid first and computes
        exact statistics at each query's chosen bandwidth only; otherwise one exhaustive pass
        computes every statistic of every grid bandwidth.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> NadarayaWatsonClassifier(metric=None, bandwidth="auto", lipschitz=1.0).fit(X, y).ranks_from_moments_
        True
        >>> NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale", kernel="tricube").fit(X, y).ranks_from_moments_
        False
        """
        check_is_fitted(self)
        return self._engine().ranks_from_moments()

    def _ranking(self, X: np.ndarray, fraction: float, row_offset: int = 0) -> BandwidthRanking:
        """:meth:`bandwidth_ranking` of validated queries (:func:`~nwbound.engine.host._backend.bandwidth_ranking`)."""
        return bandwidth_ranking(self._engine(), self, X, fraction, row_offset)

    @staticmethod
    def _choices(ranking: BandwidthRanking, specs: dict) -> dict:
        """Per setting, each query's column of least label-free ε (:func:`~nwbound.engine.choose_bandwidths`)."""
        return choose_bandwidths(ranking, specs)

    def _statistics(self, X: np.ndarray, specs: list[BoundSpec], *, need_bounds: bool,
                    bandwidths: np.ndarray | None = None) -> KernelStatistics:
        """Kernel statistics of validated queries with what ``specs`` need (class sums only when not
        ``need_bounds``), at ``bandwidths`` (default: every bandwidth of the fit), in the input's units
        (:func:`~nwbound.engine.host._backend.query_statistics`)."""
        return query_statistics(self._engine(), self, X, specs, need_bounds=need_bounds, bandwidths=bandwidths)

    def _is_localized(self) -> bool:
        return self.n_neighbors is not None

    def _index_kneighbors(self, X: Any, n_neighbors: int) -> tuple[np.ndarray, np.ndarray]:
        """``(distances, indices)`` of the fitted index (on the host): it searches in coordinates scaled by
        a power of two (exact), so that magnitudes like 1e160 cannot overflow its squared distances."""
        return self.index_.kneighbors(search_queries(to_host(X) / self._index_scale), int(n_neighbors))

    # ------------------------------------------------------------------------------------------
    # predict_proba, and the localized classifier's neighbours
    @blas_limited
    def predict_proba(self, X) -> np.ndarray:
        """Estimated class probabilities ``p̂_c(y)``.

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)

        Returns
        -------
        ndarray of shape (n_queries, n_classes)
            Columns in ``classes_`` order; queries without training mass
            (κ = 0, *vacuous*) get the ``empty_neighborhood`` fallback. When most
            queries are vacuous it warns (:class:`~nwbound.VacuousPredictionWarning`,
            with the cause and the fix); it never warns about bounds (use
            :meth:`predict_interval`). A cross-fitted model (the default
            ``metric="auto"`` up to ``AUTO_CROSS_FIT_MAX_ROWS`` map rows) returns
            ``predict_interval(X).proba``: the models' κ-weighted mean moved into
            their intersected box (:func:`~nwbound.spaces.intersect_intervals`), so
            it computes the models' bounds (with ``bandwidth="auto"`` it does so
            anyway, to choose each query's bandwidth; with a fixed bandwidth this
            costs what :meth:`predict_interval` costs). With a point model
            (``point_estimate="auto"``, the default, where the space has a score model)
            it is ``predict_interval(X).proba`` too: the point model's probabilities
            moved into the box.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.2).fit(X, y).predict_proba([[0.1]])
        array([[1., 0.]])
        """
        X, restore = self._dispatched_queries(X)  # array_api_dispatch: the result goes back to X's namespace
        return restore(self._proba(X))

    def _proba_kappa(self, X) -> tuple[np.ndarray, np.ndarray]:
        """``(p̂, κ)`` of queries as NumPy (a cross-fitted model's models' share of :meth:`predict_proba`
        where they have no bound)."""
        point = getattr(self, "point_model_", None) is not None and self._own_spec() is not None
        if self.bandwidth == "auto" or point:  # λ comes from the bound, per query; the point estimate, its box
            iv = self._point_estimate(X, self._intervals(X, self._resolve_bounds(None))[None])
            return iv.proba, iv.kappa
        X = self._validate_queries(X, keep_namespace=self._keeps_device_queries())
        stats = self._statistics(X, [], need_bounds=False)
        class_sums = stats.class_sums[:, 0]
        kappa = class_sums.sum(axis=1)
        return self._fallback_proba(class_sums, kappa)[0], kappa

    @blas_limited
    def kneighbors(self, X, n_neighbors: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Each query's nearest training rows (localized classifier), as its kernel sums use them.

        The index searches in coordinates scaled by a power of two (exact); the distances
        returned are recomputed directly from the original coordinates (float64). With ``device=``
        and an exact index the search runs on the device, as the statistics' own (exact k-NN: a
        blocked product, top-k and a float64 re-rank; ties to the lower row).

        Parameters
        ----------
        X : array-like of shape (n_queries, n_features)
        n_neighbors : int or None, default=None
            How many (None: ``n_neighbors``); at most the number of training rows.

        Returns
        -------
        distances : ndarray of shape (n_queries, n_neighbors)
        indices : ndarray of shape (n_queries, n_neighbors)
            Row numbers of the training set.

        Raises
        ------
        ValueError
            For the regular classifier (``n_neighbors=None``), or ``n_neighbors`` out of range.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.array([[0.0], [10.0], [30.0]]); y = np.array([0, 1, 1])
        >>> clf = NadarayaWatsonClassifier(metric=None, lipschitz=None, n_neighbors=2, bandwidth=50.0).fit(X, y)
        >>> dist, idx = clf.kneighbors([[12.0]])
        >>> dist.tolist(), idx.tolist()
        ([[2.0, 12.0]], [[1, 0]])
        """
        check_is_fitted(self)
        self._no_cross_fit("kneighbors")
        if self.index_ is None:
            raise ValueError("kneighbors needs the localized classifier: fit with n_neighbors=k.")
        X = self._validate_queries(X)
        k = self.n_neighbors if n_neighbors is None else n_neighbors
        check_int_range(k, "n_neighbors", 1, self.n_samples_fit_,
                        hint=f"It counts neighbours among the {self.n_samples_fit_} training samples.")
        idx = to_host(self._engine().kneighbors(X, int(k))[1])  # where the statistics' search runs
        dist = neighbor_distances(X, self._train.X, idx, working_memory=self.working_memory)
        return scaled(dist, self._unit()), idx
