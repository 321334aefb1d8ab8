"""A learned space ``z(x)``: the map fitted on the metric share, its output standardised."""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any

import numpy as np

from .._numerics import column_spread
from .._stack import caller_stacklevel
from ._split import check_fraction, split_rows
from ._auto import AUTO_MAX_ITER, _auto_scores, _choose_score_model, _score_block, model_proba
from ._residual import (_each_draw, _estimate_residual, _null_maxima, _null_maximum, _residual_scan,
                        _residual_values)

__all__ = ["residual_rows", "AUTO_RESIDUAL_ROWS", "AUTO_RESOLUTION_GAIN", "check_cross_fit_metric", "LearnedSpace", "metric_kind", "auto_cross_fits", "AUTO_CROSS_FIT_MAX_ROWS", "AUTO_BALANCE_LIMIT", "AUTO_MAX_ROWS", "AUTO_MAX_ITER", "column_units", "in_column_units"]

#: metric="auto": ``z = (s(x), c·L_r·x_std)`` states the two-constant assumption
#: ``|p(x) − p(x′)| ≤ ‖s(x) − s(x′)‖ + L_r‖x_std − x′_std‖`` (exact in s: p = s + (p − s)), and
#: ``‖a‖ + ‖b‖ ≤ √(1 + 1/c²)·‖(a, c·b)‖`` makes it a Lipschitz assumption in z; ``c`` balances the
#: two blocks at the neighbour scale, within ``[1/AUTO_BALANCE_LIMIT, AUTO_BALANCE_LIMIT]``.
AUTO_BALANCE_LIMIT = 64.0
#: Neighbours per row, and rows at most, that measure the two blocks' neighbour distances for ``c``.
_BALANCE_NEIGHBORS, _BALANCE_ROWS = 10, 2000
#: Inputs are clipped to this many times their column's unit (a power of two): the map's output,
#: and squared distances between mapped rows, then stay finite for any finite query.
INPUT_CLIP = 1e100
#: metric="auto" fits its gradient-boosting model on at most this many rows of the map share
#: (a fixed random subset), with at most ``AUTO_MAX_ITER`` boosting iterations.
AUTO_MAX_ROWS = 10_000
#: metric="auto"'s second, raise-only estimate of ``L_r`` uses at most this many of the rows the
#: score model never saw (:func:`residual_rows`; the pilot bandwidth shrinks with the rows: finer
#: variation resolved).
AUTO_RESIDUAL_ROWS = 8_000
#: ...run only where more rows can make its pilot bandwidth this many times finer (few features: the
#: bandwidth scales as ``m^(−1/(2d))``; at 4× the rows, up to 4 features).
AUTO_RESOLUTION_GAIN = 1.15
#: The directional scan's slope (beyond noise) is multiplied by the safety factor of
#: :func:`~nwbound.assumptions.estimate_lipschitz`: a window pair sees the slope averaged over its
#: windows, below the steepest one.
_SCAN_SAFETY = 2.0

_KINDS = ("standard", "transformer", "scores", "auto")


#: ``cross_fit="auto"`` cross-fits ``metric="auto"`` while its metric share holds at most this many
#: rows (5 000 training rows at ``metric_fraction=0.4``); one split beyond. Measured (known-p suite
#: fields, 2 seeds): at 5 000 rows the pair certified 0.2–1.5 points more than one split, at 20 000
#: the same share (75.5–78.8 %), and it costs 2–2.5× the fit + predict.
AUTO_CROSS_FIT_MAX_ROWS = 2_000


def auto_cross_fits(cross_fit: Any, metric: Any, metric_fraction: float, n_samples: int) -> bool:
    """Whether a fit on ``n_samples`` rows with these parameters cross-fits.

    ``True`` or a number of folds: always; ``"auto"``: with ``metric="auto"`` while the metric
    share (``metric_fraction × n_samples``) holds at most ``AUTO_CROSS_FIT_MAX_ROWS`` rows;
    ``False``: never. The one rule of :class:`~nwbound.NadarayaWatsonClassifier` and the sharded
    Dask estimator.

    Parameters
    ----------
    cross_fit : bool, int or "auto"
        The estimator's ``cross_fit``.
    metric : any
        The estimator's ``metric``.
    metric_fraction : float
        The estimator's ``metric_fraction``, in (0, 1).
    n_samples : int
        Training rows.

    Returns
    -------
    bool

    Examples
    --------
    >>> from nwbound.spaces import auto_cross_fits
    >>> auto_cross_fits("auto", "auto", 0.4, 5_000), auto_cross_fits("auto", "auto", 0.4, 20_000)
    (True, False)
    >>> auto_cross_fits("auto", None, 0.4, 500), auto_cross_fits(True, None, 0.4, 10**6)
    (False, True)
    """
    if isinstance(cross_fit, str):
        return (cross_fit == "auto" and metric_kind(metric) == "auto"
                and check_fraction(metric_fraction) * n_samples <= AUTO_CROSS_FIT_MAX_ROWS)
    return bool(cross_fit)


def residual_rows(check_rows: np.ndarray, nw_rows: np.ndarray, random_state: int | None) -> np.ndarray:
    """The rows of ``metric="auto"``'s second, raise-only estimate of ``L_r``: every row the score
    model never saw (the check rows and the kernel sums' rows), at most ``AUTO_RESIDUAL_ROWS`` of
    them (a random subset), sorted. The one rule of the in-memory and the sharded estimators.

    Parameters
    ----------
    check_rows, nw_rows : ndarray of int
        Row indices of the check rows and of the kernel sums' rows.
    random_state : int or None
        Seed of the subset.

    Returns
    -------
    ndarray of int

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import residual_rows
    >>> residual_rows(np.array([4, 0]), np.array([2, 3]), 0)
    array([0, 2, 3, 4])
    >>> residual_rows(np.arange(30_000), np.arange(30_000, 60_000), 0).shape
    (8000,)
    """
    rows = np.sort(np.concatenate([np.asarray(check_rows, np.intp), np.asarray(nw_rows, np.intp)]))
    if rows.shape[0] > AUTO_RESIDUAL_ROWS:
        rows = np.sort(np.random.RandomState(random_state).choice(rows, AUTO_RESIDUAL_ROWS, replace=False))
    return rows


def check_cross_fit_metric(cross_fit: Any, metric: Any) -> None:
    """Refuse cross-fitting with a ``metric`` that uses no labels (None or ``"standard"``).

    Cross-fitting swaps the roles of the metric and NW shares; without a map fitted on labels
    every row is in the kernel sums already, so there is nothing to swap.

    Parameters
    ----------
    cross_fit : bool, int or "auto"
        The estimator's ``cross_fit`` (one that cross-fits: :func:`auto_cross_fits`).
    metric : any
        The estimator's ``metric``.

    Raises
    ------
    ValueError
        Naming both parameters and the fix.

    Examples
    --------
    >>> from nwbound.spaces import check_cross_fit_metric
    >>> check_cross_fit_metric(True, "auto")
    >>> check_cross_fit_metric(True, None)
    Traceback (most recent call last):
    ...
    ValueError: cross_fit=True swaps the roles of the metric and NW shares, so it needs a map fitted on labels (metric='auto', a transformer or a classifier); metric=None uses no labels and already keeps every row in the kernel sums: pass cross_fit=False.
    """
    if metric_kind(metric) in (None, "standard"):
        raise ValueError(
            f"cross_fit={cross_fit!r} swaps the roles of the metric and NW shares, so it needs a map fitted "
            f"on labels (metric='auto', a transformer or a classifier); metric={metric!r} uses no labels and "
            "already keeps every row in the kernel sums: pass cross_fit=False."
        )


def metric_kind(metric: Any) -> str | None:
    """What ``metric=`` is: None, ``"standard"``, ``"transformer"``, ``"scores"`` or ``"auto"``.

    A string must be ``"standard"`` or ``"auto"``; an object with ``fit`` and ``transform`` is a
    transformer (LDA counts as one: its discriminant axes); an object with ``fit`` and
    ``decision_function`` or ``predict_proba`` is a classifier whose scores define the space.

    Raises
    ------
    TypeError, ValueError
        For anything else, naming what ``metric`` accepts.

    Examples
    --------
    >>> from sklearn.decomposition import PCA
    >>> from sklearn.linear_model import LogisticRegression
    >>> from nwbound.spaces import metric_kind
    >>> metric_kind(None), metric_kind("auto"), metric_kind(PCA(2)), metric_kind(LogisticRegression())
    (None, 'auto', 'transformer', 'scores')
    """
    accepted = ("None, 'standard', 'auto', a scikit-learn transformer (fit + transform: PCA, LDA, NCA, a "
                "Pipeline) or a classifier (fit + decision_function or predict_proba) whose scores define the space")
    if metric is None:
        return None
    if isinstance(metric, str):
        if metric in ("standard", "auto"):
            return metric
        raise ValueError(f"metric must be {accepted}; got the string {metric!r}.")
    if isinstance(metric, type):
        raise TypeError(f"metric must be an estimator instance, not the class {metric.__name__}: pass {metric.__name__}().")
    if not hasattr(metric, "fit"):
        raise TypeError(f"metric must be {accepted}; got {type(metric).__name__}, which has no fit method.")
    if hasattr(metric, "transform"):
        return "transformer"
    if hasattr(metric, "decision_function") or hasattr(metric, "predict_proba"):
        return "scores"
    raise TypeError(
        f"metric must be {accepted}; {type(metric).__name__} has neither transform, decision_function nor "
        "predict_proba."
    )


def _scores(model: Any, X: np.ndarray) -> np.ndarray:
    """A classifier's scores as a 2-D array: ``decision_function`` where it has one, else ``predict_proba``."""
    s = model.decision_function(X) if hasattr(model, "decision_function") else model.predict_proba(X)
    s = np.asarray(s, dtype=np.float64)
    return s[:, None] if s.ndim == 1 else s


class LearnedSpace:
    """The map ``z(x)`` of ``metric=``, fitted on the rows it is given, its output standardised.

    Kinds (:func:`metric_kind`):

    * ``"standard"``: ``z = (x − mean)/std`` (label-free).
    * ``"transformer"``: a clone of the transformer fitted on ``(X, y)``, then its output
      standardised per column.
    * ``"scores"``: a clone of the classifier fitted on ``(X, y)``; ``z`` is its standardised
      ``decision_function`` (else ``predict_proba``). A model fitted elsewhere enters as
      ``sklearn.frozen.FrozenEstimator(model)`` (cloning keeps it, ``fit`` does nothing): then
      it must never have seen the labels of the rows the kernel sums use.
    * ``"auto"``: ``z = (s(x), c·L_r·x_std)``: the class probabilities ``s`` (one column for two
      classes; centred, not rescaled) of a score model chosen on the rows it is given by
      out-of-fold log-loss (:func:`choose_score_model`: a ``HistGradientBoostingClassifier`` with
      ``AUTO_MAX_ITER`` iterations or a logistic regression; at most ``AUTO_MAX_ROWS`` rows; the
      choice and its reasons in ``report_``), next to the standardised features weighted by
      ``L_r``, the Lipschitz constant of what the scores miss, ``h = p − s``, estimated on rows
      the score model never saw (``held_out``; :func:`nwbound.assumptions.estimate_lipschitz`
      with ``offset=s``). Since ``p = s + h`` exactly,
      ``|p(x) − p(x′)| ≤ ‖Δs‖ + L_r‖Δx_std‖ ≤ √(1 + 1/c²)·‖Δz‖`` (Cauchy–Schwarz, any
      ``c > 0``): the space states the two-constant assumption of the learned-space note with
      ``L = √(1 + 1/c²)`` in z's units (``lipschitz_``), and the features' weight follows from the
      estimate. ``c`` (``balance_``) balances the blocks' neighbour distances on the held-out rows,
      so that a typical neighbour's bias is the two-constant sum itself rather than up to √2 times it. Where the scores carry p, ``h`` is flat
      and the features weigh little; where they miss part of it, the features weigh what that
      part needs (user guide, "Bounds in a learned space").

    ``"standard"`` and ``"auto"`` first divide each column by a power of two (its largest
    magnitude on the fitting rows, :func:`column_units`; exact) and clip to ``±INPUT_CLIP``
    units, so ``X`` and ``2^k·X`` give the same ``z`` bit for bit across the float range, and no
    standard deviation underflows or overflows. Standardised: ``"standard"`` and the features of
    ``"auto"`` per column; the output of a transformer or a classifier centred per column and
    divided by one common scale, the root mean variance of its columns, so that a map's own
    geometry (NCA's or a diagonal map's relative scales) is kept. Columns of zero spread are left
    unscaled. Sample weights reach the map's ``fit`` where it accepts them (they never affect
    validity: the map is any function of the metric share).

    Parameters
    ----------
    metric : str or estimator
    random_state : int, RandomState or None, default=None
        Seed of ``"auto"``'s row subset, model and estimate.
    residual_lipschitz_floor : float or None, default=None
        ``"auto"``: an ``L_r`` that ``residual_lipschitz_`` is raised to where it is smaller (raise-only,
        like the scans). A cross-fitted estimator passes the largest raise among its models to the
        others (:func:`~nwbound.spaces.shared_residual_raise`): each model's intervals must hold for
        the intersection to, so evidence one model's scan found is every model's.

    Attributes
    ----------
    kind : str
    map_ : estimator or None
        The fitted transformer or classifier (None for ``"standard"``).
    n_features_in_ : int
    n_components_ : int
        Dimension of ``z``.
    feature_weight_ : float
        ``L_r`` of ``"auto"`` (0 otherwise).
    balance_ : float
        ``c`` of ``"auto"``: the features enter at ``c·L_r`` (1 otherwise).
    lipschitz_ : float or None
        ``"auto"``: the Lipschitz constant in z's units that the two-constant assumption gives
        (``√(1 + ρ²/c²)``, ``ρ = residual_lipschitz_ / feature_weight_ ≥ 1``; ``ρ`` when no score
        model could be fitted); None for the other kinds.
    n_held_out_ : int
        ``"auto"``: rows that estimated ``L_r`` (0 otherwise).
    residual_lipschitz_ : float
        ``"auto"``: the ``L_r`` the bound assumes, the held-out estimate raised by the second one on
        ``unseen`` and by the directional scan of those rows where larger and above noise, and to
        ``residual_lipschitz_floor`` where that is larger (0 otherwise).
    shared_residual_lipschitz_ : float or None
        ``"auto"``: ``residual_lipschitz_floor`` where it raised ``residual_lipschitz_``, else None.
    resolution_ : float
        ``"auto"``: the pilot bandwidth of the finest estimate of ``L_r``, in standard deviations
        of the features: variation of ``p − s`` at finer scales is assumed absent (NaN otherwise).
    n_resolution_rows_ : int
        ``"auto"``: rows of that estimate.
    scan_ : dict or None
        ``"auto"`` with ``unseen`` rows: what the directional scan of the residuals looked at and
        found (:func:`~nwbound.spaces.scan_sentence`: directions and whether they took the
        coordinate planes, finest window, its slope beyond noise and whether it raised
        ``residual_lipschitz_``); None otherwise.
    fit_rows_ : ndarray of int
        The rows of ``fit``'s ``X`` that fitted the map (all of them, except ``"auto"`` without
        ``held_out``, which keeps the others for ``L_r``).
    report_ : MetricAutoReport or None
        ``"auto"``: which score model was chosen, and why (None otherwise).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    >>> from nwbound.spaces import LearnedSpace
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 5)); y = (X[:, 0] > 0).astype(int)
    >>> space = LearnedSpace(LinearDiscriminantAnalysis()).fit(X, y)
    >>> Z = space.transform(X)
    >>> Z.shape, bool(np.allclose(Z.mean(axis=0), 0) and np.allclose(Z.std(axis=0), 1))  # one column
    ((200, 1), True)
    >>> auto = LearnedSpace("auto", random_state=0).fit(X, y)
    >>> auto.n_components_, bool(np.isclose(auto.lipschitz_, (1 + auto.balance_**-2) ** 0.5)), auto.feature_weight_ > 0
    (6, True, True)
    """

    def __init__(self, metric: Any, *, random_state: Any = None, residual_lipschitz_floor: float | None = None):
        self.metric = metric
        self.random_state = random_state
        self.residual_lipschitz_floor = residual_lipschitz_floor

    def fit(self, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None,
            groups: np.ndarray | None = None, *, held_out: tuple | None = None,
            unseen: tuple | None = None) -> "LearnedSpace":
        """Fit the map on ``(X, y)`` and the standardisation of its output.

        ``groups`` (one label per row, or None) keeps each group within one fold of
        ``"auto"``'s cross-validation, so that rows of one patient do not judge a model fitted on
        that patient's other rows. ``held_out = (X_h, y_h)``: ``"auto"``'s rows for the estimate
        of ``L_r``, which must be rows the map may not see (labels in ``y``'s coding); without
        them, ``"auto"`` splits ``(X, y)`` in two (stratified, groups kept whole), fits the map
        on one half and estimates ``L_r`` on the other. ``unseen = (X_u, y_u)``: ``"auto"``'s rows
        for a second, raise-only estimate of ``L_r`` (every row the map never sees, the kernel
        sums' rows included; more rows resolve finer variation) and for the directional scan
        (``scan_``): where either exceeds the held-out one, ``lipschitz_`` is raised to
        ``√(1 + ρ²/c²)``, ``ρ`` their ratio, the space itself unchanged (user guide, "The
        two-constant space").

        Returns
        -------
        self

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.spaces import LearnedSpace
        >>> LearnedSpace("standard").fit(np.array([[0.0], [2.0]]), np.array([0, 1])).transform([[1.0]])
        array([[0.]])
        """
        self._fit(X, y, sample_weight, groups, held_out, unseen)
        return self

    def fit_transform_held_out(self, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None,
                               groups: np.ndarray | None = None, *, held_out: tuple,
                               unseen: tuple | None = None, kernel: tuple | None = None) -> Any:
        """``fit(X, y, ..., held_out=held_out, unseen=unseen)`` then ``transform(held_out[0])``, with the
        score model's predictions on the held-out rows computed once (``"auto"`` validates its
        candidates on them): the same array, bit for bit where the score model predicts each row alone.

        ``kernel = (X_k, from_held, at)``: also ``transform(X_k)``, returned second, and where each
        ``unseen`` row is: row ``at`` of the held-out rows where ``from_held``, else of ``X_k``; so
        that the raise-only estimate reads their predictions instead of predicting those rows again.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.spaces import LearnedSpace
        >>> rng = np.random.default_rng(0); X = rng.normal(size=(400, 2)); y = (X[:, 0] > 0).astype(int)
        >>> space = LearnedSpace("auto", random_state=0)
        >>> Z = space.fit_transform_held_out(X[:200], y[:200], held_out=(X[200:], y[200:]))
        >>> bool(np.array_equal(Z, space.transform(X[200:])))
        True
        """
        _, held_proba, kernel_proba = self._fit(X, y, sample_weight, groups, held_out, unseen, kernel)
        X_h = np.asarray(held_out[0])
        mapped = (self.transform(X_h) if held_proba is None or self.kind != "auto" else
                  self._standardised(self._raw(X_h, _score_block(held_proba)), X_h.shape[1]))
        if kernel is None:
            return mapped
        X_k = np.asarray(kernel[0])
        return mapped, (self.transform(X_k) if kernel_proba is None else
                        self._standardised(self._raw(X_k, _score_block(kernel_proba)), X_k.shape[1]))

    def fit_transform(self, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None,
                      groups: np.ndarray | None = None, *, held_out: tuple | None = None) -> np.ndarray:
        """``fit(X, y, ...)`` then ``transform(X)``, the map's output on ``X`` computed once.

        The same array as ``fit(X, y, ...).transform(X)``, bit for bit: the map's output on the
        rows it was fitted on is computed while fitting (for the standardisation) and reused.

        Returns
        -------
        Z : ndarray of shape (n_samples, n_out)
            The mapped rows; ``n_out`` is the fitted ``n_components_``.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.spaces import LearnedSpace
        >>> X = np.array([[0.0], [2.0], [4.0]]); y = np.array([0, 1, 1])
        >>> LearnedSpace("standard").fit_transform(X, y).ravel().round(4)
        array([-1.2247,  0.    ,  1.2247])
        """
        raw, _, _ = self._fit(X, y, sample_weight, groups, held_out)
        if raw.shape[0] != np.asarray(X).shape[0]:  # "auto" fitted its map on a part of X
            return self.transform(X)
        return self._standardised(raw, self.n_features_in_)

    def _fit(self, X: Any, y: np.ndarray, sample_weight: np.ndarray | None, groups: np.ndarray | None,
             held_out: tuple | None = None, unseen: tuple | None = None,
             kernel: tuple | None = None) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """:meth:`fit`; returns the map's output on the rows it was fitted on, before standardisation,
        the score model's ``predict_proba`` on the held-out rows where its choice computed it, and on
        ``kernel``'s rows where the raise-only estimate needed them (:meth:`fit_transform_held_out`;
        else None)."""
        kind = metric_kind(self.metric)
        if kind is None:
            raise ValueError("LearnedSpace needs a metric; metric=None means the features as they are.")
        X = np.asarray(X)
        y = np.asarray(y)
        self.kind, self.n_features_in_ = kind, X.shape[1]
        self.map_, self.feature_weight_, self.report_, self.balance_ = None, 0.0, None, 1.0
        self.lipschitz_, self.n_held_out_ = None, 0
        self.residual_lipschitz_, self.resolution_, self.n_resolution_rows_ = 0.0, float("nan"), 0
        self.scan_, self.shared_residual_lipschitz_ = None, None
        if self.residual_lipschitz_floor is not None:
            _checked_floor(self.residual_lipschitz_floor, "residual_lipschitz_floor")
        self._units = column_units(X) if kind in ("standard", "auto") else None
        from sklearn.utils import check_random_state  # here: transform needs no scikit-learn (nwbound predict)

        rng = check_random_state(self.random_state)
        scores, held_proba, kernel_proba = None, None, None
        given_held_out = held_out is not None  # the caller's held-out rows also validate the candidates
        self.fit_rows_ = np.arange(X.shape[0])
        if kind == "auto" and held_out is None:  # rows for the estimate of L_r, kept from the map
            map_rows, held_rows = split_rows(y, 0.5, groups=groups, random_state=rng.randint(2**31))
            self.fit_rows_ = map_rows
            held_out = (X[held_rows], y[held_rows])
            X, y = X[map_rows], y[map_rows]
            sample_weight = None if sample_weight is None else np.asarray(sample_weight)[map_rows]
            groups = None if groups is None else np.asarray(groups)[map_rows]
        if kind == "transformer" or kind == "scores":
            from sklearn.base import clone

            self.map_ = clone(self.metric)
            self._fit_map(self.map_, X, y, sample_weight)
        elif kind == "auto":
            U = self._in_units(X)
            rows = np.arange(X.shape[0])
            if X.shape[0] > AUTO_MAX_ROWS:
                rows = np.sort(rng.choice(X.shape[0], size=AUTO_MAX_ROWS, replace=False))
            self.map_, self.report_, scores, held_proba = _choose_score_model(
                U[rows], y[rows], None if sample_weight is None else sample_weight[rows],
                random_state=rng.randint(2**31), groups=None if groups is None else np.asarray(groups)[rows],
                validation=None if not given_held_out else (self._in_units(held_out[0]), held_out[1]))
            if rows.shape[0] != X.shape[0] and scores is not None:  # the sample's scores kept, the rest predicted
                sample, scores = scores, np.empty((X.shape[0], scores.shape[1]))
                rest = np.setdiff1d(np.arange(X.shape[0]), rows, assume_unique=True)
                scores[rows], scores[rest] = sample, _auto_scores(self.map_, U[rest])
        raw = self._raw(X, scores)
        n_map = raw.shape[1] - (X.shape[1] if kind == "auto" else 0)
        if kind in ("transformer", "scores") and X.shape[0] > 1 and not np.any(np.ptp(raw[:, :n_map], axis=0) > 0):
            raise ValueError(
                f"metric={self.metric!r} maps all {X.shape[0]} rows it was fitted on to one point: it learned "
                "nothing from them (e.g. a gradient-boosting model with min_samples_leaf=20 on a few dozen "
                "rows), so every distance in the space would be 0. Give a map that can learn from that many "
                "rows, more rows or a larger metric_fraction, or metric='auto'."
            )
        self._mean, self._scale = _location_scale(raw)
        if kind == "auto":  # scores in probability units (their constant is 1), centred only
            self._scale[:n_map] = 1.0
        elif kind != "standard":  # the map's own geometry: one common scale (its columns' relative scales kept)
            self._scale[:n_map] = _common_scale(raw[:, :n_map])
        if kind == "auto":
            kernel_proba = self._fit_feature_weight(held_out, n_map, rng, unseen, held_proba, kernel)
        self.n_components_ = raw.shape[1]
        return raw, held_proba, kernel_proba

    def _fit_feature_weight(self, held_out: tuple, n_scores: int, rng: Any, unseen: tuple | None = None,
                            held_proba: np.ndarray | None = None, kernel: tuple | None = None) -> np.ndarray | None:
        """``"auto"``: ``L_r``, the estimated Lipschitz constant of ``p − s`` in the standardised
        features, on the held-out rows (the score model never saw them); then, on ``unseen`` (more
        rows the score model never saw), a second estimate that can only raise ``lipschitz_``.
        ``held_proba``: the score model's ``predict_proba`` on the held-out rows, where its choice
        already computed it. Returns the score model's ``predict_proba`` on ``kernel``'s rows where
        the raise-only estimate read them (:meth:`fit_transform_held_out`), else None."""
        X_h, y_h = np.asarray(held_out[0]), np.asarray(held_out[1])
        if X_h.ndim != 2 or X_h.shape[1] != self.n_features_in_ or X_h.shape[0] != y_h.shape[0]:
            raise ValueError(f"held_out must be (X, y) with {self.n_features_in_} features and one label per row; "
                             f"got shapes {X_h.shape} and {y_h.shape}.")
        # one prediction of the held-out rows: their scores and the estimate's offset
        proba = self._proba(X_h) if held_proba is None else held_proba
        raw = self._raw(X_h, None if proba is None else _score_block(proba))
        features = (raw[:, n_scores:] - self._mean[n_scores:]) / self._scale[n_scores:]
        try:
            classes = np.unique(y_h)
            est = _estimate_residual(features, y_h, self._offset(proba, X_h.shape[0], classes), classes,
                                     rng.randint(2**31))
            weight = float(est.value)
        except ValueError as exc:
            # Too few or degenerate held-out rows: weight the features so that two training rows at
            # the least distance apart may differ by anything (|Δh| ≤ 2), which leaves the bounds
            # nearly trivial instead of resting on a weight picked blind.
            est, weight = None, _uninformative_weight(features)
            warnings.warn(
                f"metric='auto' could not estimate the features' weight L_r (the Lipschitz constant of what the "
                f"score model misses) on {X_h.shape[0]} held-out rows ({exc}); it uses L_r = {weight:.4g}, under "
                "which any two distinct rows may differ by anything, so few bounds will be useful. Give more rows "
                "or a larger metric_fraction.", UserWarning, stacklevel=caller_stacklevel())
        self.feature_weight_ = weight
        self.n_held_out_ = int(X_h.shape[0])
        self.balance_ = _balance(raw[:, :n_scores] - self._mean[:n_scores], weight * features) if n_scores else 1.0
        self.residual_lipschitz_ = weight
        if est is not None:
            self.resolution_, self.n_resolution_rows_ = float(est.details["bandwidth"]), int(est.details["n_used"])
        kernel_proba = known = None
        if unseen is not None and est is not None:
            if kernel is not None and proba is not None and len(kernel[0]):  # each row predicted once
                kernel_proba, (_, from_held, at) = self._proba(np.asarray(kernel[0])), kernel
                known = np.empty((from_held.shape[0], proba.shape[1]))
                known[from_held], known[~from_held] = proba[at[from_held]], kernel_proba[at[~from_held]]
            self._raise_residual_lipschitz(unseen, n_scores, rng.randint(2**31),
                                           _finer(len(unseen[1]), est.details["n_used"], features.shape[1]), known)
        self._n_scores = n_scores
        self._state_lipschitz(self.residual_lipschitz_floor)
        return kernel_proba

    def _state_lipschitz(self, floor: float | None) -> None:
        """``residual_lipschitz_`` raised to ``floor`` where smaller (another cross-fitted model's raise),
        then the pilot ``lipschitz_`` the two-constant assumption states with it, and the report."""
        if floor is not None and float(floor) > self.residual_lipschitz_:
            self.residual_lipschitz_ = self.shared_residual_lipschitz_ = float(floor)
        # |Δp| ≤ ‖Δs‖ + L_r′‖Δx‖ ≤ √(1 + ρ²/c²)·‖Δz‖ with ρ = L_r′/L_r ≥ 1 (Cauchy–Schwarz; the space
        # keeps the features at c·L_r); no scores: |Δp| ≤ L_r′‖Δx‖ = ρ‖Δz‖
        rho = self.residual_lipschitz_ / self.feature_weight_
        self.lipschitz_ = float(np.sqrt(1.0 + rho**2 / self.balance_**2)) if self._n_scores else float(rho)
        self.report_ = replace(self.report_, feature_weight=self.feature_weight_, n_held_out=self.n_held_out_,
                               residual_lipschitz=self.residual_lipschitz_, resolution=self.resolution_,
                               n_resolution_rows=self.n_resolution_rows_, scan=self.scan_,
                               shared_lipschitz=self.shared_residual_lipschitz_)

    def share_residual_raise(self, value: float) -> "LearnedSpace":
        """Raise a fitted ``"auto"`` space's ``residual_lipschitz_`` to ``value`` (positive, finite) where
        smaller, as ``residual_lipschitz_floor=value`` at fit does (the same attributes, bit for bit),
        without fitting again; returns self. A cross-fitted estimator calls it on each model below
        the largest raise among its models (:func:`~nwbound.spaces.shared_residual_raise`).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.spaces import LearnedSpace
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(600, 2)); y = (rng.random(600) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(int)
        >>> space = LearnedSpace("auto", random_state=0).fit(X[:400], y[:400], held_out=(X[400:], y[400:]))
        >>> before = space.lipschitz_
        >>> space.share_residual_raise(5.0).residual_lipschitz_, space.lipschitz_ > before
        (5.0, True)
        """
        if getattr(self, "kind", None) != "auto" or getattr(self, "report_", None) is None or not self.n_held_out_:
            raise ValueError("share_residual_raise needs a LearnedSpace('auto') fitted with held-out rows "
                             "(its L_r); fit it first.")
        self._state_lipschitz(_checked_floor(value, "value"))
        return self

    def _offset(self, proba: np.ndarray | None, n: int, classes: np.ndarray) -> np.ndarray:
        """The score model's probabilities of ``classes`` on ``n`` rows from its ``predict_proba``
        output ``proba`` on them (:meth:`_proba`; 0 for a class it never saw, all 0 where None)."""
        return np.zeros((n, classes.shape[0])) if proba is None else self._class_columns(proba, classes)

    def _raise_residual_lipschitz(self, unseen: tuple, n_scores: int, seed: int, finer: bool,
                                  proba: np.ndarray | None = None) -> None:
        """Raise ``residual_lipschitz_`` on ``unseen`` (at most ``AUTO_RESIDUAL_ROWS`` of them): where
        ``finer``, the second estimate of ``L_r``, kept where larger than the held-out one and than the
        same estimate on each of ``_NULL_DRAWS`` label draws from the scores (``h ≡ 0``, noise alone;
        its resolution replaces the held-out one's where finer); then the directional scan
        (:meth:`_scan_residuals`).

        Raise-only, so any rows and any rule may feed it, the kernel sums' rows included: a larger L
        in a fixed space widens every interval (user guide, "The two-constant space"). The noise
        gate only keeps it from raising L where the finer scale shows nothing beyond noise. ``proba``:
        the score model's ``predict_proba`` on ``unseen``'s rows, where already computed."""
        X_u, y_u = np.asarray(unseen[0]), np.asarray(unseen[1])
        if X_u.ndim != 2 or X_u.shape[1] != self.n_features_in_ or X_u.shape[0] != y_u.shape[0]:
            raise ValueError(f"unseen must be (X, y) with {self.n_features_in_} features and one label per row; "
                             f"got shapes {X_u.shape} and {y_u.shape}.")
        rs = np.random.RandomState(seed)
        if X_u.shape[0] > AUTO_RESIDUAL_ROWS:
            keep = np.sort(rs.choice(X_u.shape[0], size=AUTO_RESIDUAL_ROWS, replace=False))
            X_u, y_u, proba = X_u[keep], y_u[keep], None if proba is None else proba[keep]
        features = (self._in_units(X_u) - self._mean[n_scores:]) / self._scale[n_scores:]
        classes = np.unique(y_u)
        offset = self._offset(self._proba(X_u) if proba is None else proba, X_u.shape[0], classes)
        if finer:
            self._second_estimate(features, y_u, offset, classes, rs)
        self._scan_residuals(features, y_u, offset, classes, np.random.RandomState([seed, 1]),
                             local_seed=np.random.RandomState([seed, 2]))

    def _second_estimate(self, features: np.ndarray, y: np.ndarray, offset: np.ndarray, classes: np.ndarray,
                         rs: np.random.RandomState) -> None:
        """The isotropic second estimate of ``L_r`` (:meth:`_raise_residual_lipschitz`)."""
        estimate_seed = rs.randint(2**31)
        try:
            est = _estimate_residual(features, y, offset, classes, estimate_seed)
        except ValueError:
            return  # no second estimate: the held-out one stands
        if est.value > self.residual_lipschitz_ and _null_maximum(
                _residual_values(features, offset, classes, estimate_seed), est.value, offset, classes, rs) is not None:
            self.residual_lipschitz_ = float(est.value)
        if est.details["bandwidth"] < self.resolution_:
            self.resolution_, self.n_resolution_rows_ = float(est.details["bandwidth"]), int(est.details["n_used"])

    def _scan_residuals(self, features: np.ndarray, y: np.ndarray, offset: np.ndarray, classes: np.ndarray,
                        rs: np.random.RandomState, local_seed: np.random.RandomState | None = None) -> None:
        """The directional scan of the residuals ``1{y = c} − s_c`` (:class:`~nwbound.assumptions.ResidualScan`,
        built by :func:`_residual_scan`) of every row, of the rows of each level of the features
        with 2–8 values (:func:`~nwbound.assumptions.level_subsets`, in the other features), and of
        the levels of those with 9–31 together (:func:`~nwbound.assumptions.pooled_level_features`): where the
        largest z-score of any of these scans (windows of at least ``SCAN_MIN_WINDOW`` rows) exceeds
        the same largest z of each of ``_NULL_DRAWS`` label draws from the scores (noise alone), the
        slope beyond the largest of them; where their largest aggregated z (a sum of many pairs' z²,
        one window size along one direction: :meth:`~nwbound.assumptions.ResidualScan.aggregated_z`)
        exceeds theirs, the root-mean-square slope beyond it; the larger, times the estimate's safety
        factor, raises ``residual_lipschitz_`` (raise-only: see :meth:`_raise_residual_lipschitz`).

        In two and three features, the local scans (:func:`~nwbound.assumptions.local_scans`: the same
        scan inside neighbourhoods of 64, 128 and 256 rows; of 64 in three features, none where one has
        few values; their centres and their own ``_NULL_DRAWS``
        label draws from ``local_seed``) have their own gates, their largest z and aggregated z
        against the draws' largest, and raise it the same way: a structure thin in every direction,
        which every projection of every row blurs."""
        from ..assumptions import level_subsets, local_scan_rows, local_scans, pooled_level_features

        # two classes: one column says it all (the residuals of the other are its negative)
        cols = np.arange(1, 2) if classes.shape[0] == 2 else np.arange(classes.shape[0])
        S = offset[:, cols]
        n, d = features.shape
        every = np.arange(n)
        first, planes, _ = _residual_scan(features, S, rs)
        scans = [(every, first, None)]
        for j, rows, planes_fit in level_subsets(features, cols.shape[0]) if d > 1 else []:
            scan, _, top = _residual_scan(features[rows][:, np.arange(d) != j], S[rows], rs, planes_fit, of_levels=True)
            scans.append((rows, scan, top))
        for j, planes_fit in pooled_level_features(features, cols.shape[0]) if d > 1 else []:
            scan, _, top = _residual_scan(features, S, rs, planes_fit, pooled=j)
            scans.append((every, scan, top))
        indicators = lambda labels: labels[:, None] == classes[cols][None, :]  # noqa: E731
        observed = indicators(y) - S

        def read(family: list, draws_rs: np.random.RandomState) -> tuple[float, float]:
            """The family's single-pair and aggregated slopes beyond its own noise gate: the largest z
            and aggregated z of its scans against those of label draws from the scores."""
            def statistics(labels: np.ndarray) -> tuple[float, float]:
                found = indicators(labels)
                each = [scan.label_statistics(found[rows]) for rows, scan, _ in family]
                return max(e[0] for e in each), max(e[1] for e in each)

            noise, noise_sum = _null_maxima(_each_draw(statistics), statistics(y), offset, classes, draws_rs)
            one = 0.0 if noise is None else max(scan.slope(observed[rows], threshold=max(noise, 0.0), max_spread=top)
                                                for rows, scan, top in family)
            many = 0.0 if noise_sum is None else max(
                scan.aggregated_slope(observed[rows], threshold=max(noise_sum, 0.0), max_spread=top)
                for rows, scan, top in family)
            return one, many

        one, many = read(scans, rs)
        # the local scans: their own centres and their own draws (the scans above are as without them)
        local_rs = np.random.RandomState(0) if local_seed is None else local_seed
        sub = local_scan_rows(n, d, random_state=local_rs)  # every row, or as many as the budget allows
        local = local_scans(features[sub], (S * (1.0 - S))[sub], S[sub], random_state=local_rs)
        local_value = _SCAN_SAFETY * max(read([(sub, scan, None) for scan in local], local_rs)) if local else 0.0
        value = max(_SCAN_SAFETY * max(one, many), local_value)
        raised = value > self.residual_lipschitz_
        if raised:
            self.residual_lipschitz_ = value
        finest = first.spread[first.pair_window == first.windows[0]] if first.windows.shape[0] else first.spread[:0]
        self.scan_ = dict(
            n_directions=first.n_directions, n_features=int(d), n_rows=int(n), planes=planes,
            window=int(first.windows[0]) if first.windows.shape[0] else 0,
            width=float(np.median(finest)) if finest.size else float("nan"), lipschitz=value, raised=raised,
            aggregated=bool(many > one), n_levels=len(scans) - 1,
            local_rows=[scan.rows for scan in local], local_lipschitz=local_value, local_n_rows=int(sub.shape[0]))

    @staticmethod
    def _fit_map(model: Any, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None) -> None:
        from sklearn.utils.validation import has_fit_parameter

        if sample_weight is not None and has_fit_parameter(model, "sample_weight"):
            model.fit(X, y, sample_weight=sample_weight)
        else:
            model.fit(X, y)

    def _in_units(self, X: np.ndarray) -> np.ndarray:
        """``X`` in its columns' power-of-two units (float64), clipped to ``±INPUT_CLIP``."""
        return in_column_units(X, self._units)

    def _raw(self, X: np.ndarray, scores: np.ndarray | None = None) -> np.ndarray:
        """The map's output before standardisation (for "auto": scores, then the features);
        ``scores``: "auto"'s scores on ``X`` when already computed."""
        if self.kind == "standard":
            return self._in_units(X)
        if self.kind == "transformer":
            out = self.map_.transform(X)
            if hasattr(out, "toarray"):
                out = out.toarray()
            out = np.asarray(out, dtype=np.float64)
            if out.ndim != 2 or out.shape[0] != X.shape[0]:
                raise ValueError(
                    f"metric {type(self.map_).__name__}.transform returned shape {out.shape} for {X.shape[0]} rows; "
                    "it must return one row of coordinates per input row."
                )
        elif self.map_ is None:  # "auto" without a score model that could be fitted
            out = np.zeros((X.shape[0], 0))
        elif self.kind == "auto":
            out = _auto_scores(self.map_, self._in_units(X)) if scores is None else scores
        else:
            out = _scores(self.map_, X)
        if self.kind == "auto":
            out = np.hstack([out, self._in_units(X)])
        if not np.all(np.isfinite(out)):
            raise ValueError(
                f"metric {type(self.map_).__name__} returned non-finite coordinates (NaN or inf) for some rows; "
                "the space needs finite coordinates (check the map, or use metric='standard')."
            )
        return out

    def transform(self, X: Any) -> np.ndarray:
        """``z(X)``: the map's standardised output, float64 of shape ``(n, n_components_)``.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.spaces import LearnedSpace
        >>> LearnedSpace("standard").fit(np.array([[0.0], [4.0]]), np.array([0, 1])).transform([[4.0]])
        array([[1.]])
        """
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"LearnedSpace expects {self.n_features_in_} features, got shape {X.shape}.")
        return self._standardised(self._raw(X), X.shape[1])

    def score_proba(self, X: Any, classes: Any) -> np.ndarray | None:
        """The score model's probabilities of ``classes`` on rows ``X`` (0 for a class it never saw),
        reading ``X`` as the space does; None where the map gives none (``"standard"``, a
        transformer, a classifier without ``predict_proba``, ``"auto"`` without a score model).

        The score model saw the map rows only: on any other rows this is a held-out prediction.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.spaces import LearnedSpace
        >>> X = np.linspace(0, 1, 60)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> space = LearnedSpace("auto").fit(X, y)
        >>> space.score_proba(np.array([[0.0], [1.0]]), np.array([0, 1, 2])).round(1).tolist()
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
        >>> LearnedSpace("standard").fit(X, y).score_proba(X, np.array([0, 1])) is None
        True
        """
        proba = self._proba(np.asarray(X))
        return None if proba is None else self._class_columns(proba, np.asarray(classes))

    def _proba(self, X: np.ndarray) -> np.ndarray | None:
        """The score model's ``predict_proba`` on rows ``X`` read as the space does (float64; its
        own columns), None where the map gives none (:meth:`score_proba`)."""
        if self.kind not in ("auto", "scores") or self.map_ is None or not hasattr(self.map_, "predict_proba"):
            return None
        return np.asarray(model_proba(self.map_, self._in_units(X) if self.kind == "auto" else X), dtype=np.float64)

    def _class_columns(self, proba: np.ndarray, classes: np.ndarray) -> np.ndarray:
        """The columns of ``classes`` of the score model's ``predict_proba`` output ``proba`` (0 for a
        class it never saw)."""
        # a frozen map (FrozenScoreMap) has no classes_: its columns are the classes in order
        seen = np.asarray(getattr(self.map_, "classes_", np.arange(proba.shape[1])))
        known = np.isin(classes, seen)
        out = np.zeros((proba.shape[0], classes.shape[0]))
        out[:, known] = proba[:, np.searchsorted(seen, classes[known])]
        return out

    def _standardised(self, raw: np.ndarray, n_features: int) -> np.ndarray:
        """The map's output ``raw`` centred and scaled (for "auto", the features at their weight)."""
        z = (raw - self._mean) / self._scale
        if self.kind == "auto":
            z[:, -n_features:] *= self.feature_weight_ * self.balance_
        return z

    def frozen_arrays(self) -> tuple[str, dict[str, np.ndarray]]:
        """What :meth:`transform` reads, as plain arrays: ``(map kind, arrays)`` for :meth:`from_frozen`.

        The score model of ``"auto"`` as a :class:`~nwbound.spaces.FrozenScoreMap` (its arrays
        prefixed ``map_``; map kind ``"none"`` without one, and for ``"standard"``), the columns'
        units, the standardisation (``mean``, ``scale``) and the features' ``feature_weight`` and
        ``balance``. A model file stores them beside the space itself, so that ``nwbound predict``
        maps queries without scikit-learn.

        Raises
        ------
        TypeError
            A transformer or classifier given as ``metric`` (its arithmetic is its own).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.spaces import LearnedSpace
        >>> space = LearnedSpace("standard").fit(np.array([[0.0], [4.0]]), np.array([0, 1]))
        >>> kind, arrays = space.frozen_arrays()
        >>> kind, sorted(arrays)
        ('none', ['balance', 'feature_weight', 'mean', 'scale', 'units'])
        """
        from ._frozen import FrozenScoreMap

        if self.kind not in ("standard", "auto"):
            raise TypeError(f"Only metric='standard' and 'auto' spaces have frozen arrays, not {self.kind!r}.")
        arrays = {"units": self._units, "mean": self._mean, "scale": self._scale,
                  "feature_weight": np.float64(self.feature_weight_), "balance": np.float64(self.balance_)}
        if self.map_ is None:
            return "none", {k: np.asarray(v, dtype=np.float64) for k, v in arrays.items()}
        frozen = self.map_ if isinstance(self.map_, FrozenScoreMap) else FrozenScoreMap.from_estimator(self.map_)
        arrays.update({f"map_{k}": v for k, v in frozen.to_arrays().items()})
        return frozen.kind, {k: np.asarray(v) for k, v in arrays.items()}

    @classmethod
    def from_frozen(cls, kind: str, map_kind: str, arrays: dict[str, np.ndarray], n_features: int, *,
                    prefix: str = "") -> "LearnedSpace":
        """The space of :meth:`frozen_arrays`, its score model a :class:`~nwbound.spaces.FrozenScoreMap`.

        Its :meth:`transform` is the space's own (the same method, on the same arrays); fitting
        attributes (reports, estimates) are not restored. Every array is checked as untrusted input.

        Parameters
        ----------
        kind : {"standard", "auto"}
        map_kind : {"none", "gradient_boosting", "logistic"}
        arrays : dict of str to ndarray
        n_features : int
        prefix : str, default=""
            Put before each array's name in error messages (the member a model file stores it in).

        Returns
        -------
        LearnedSpace

        Raises
        ------
        ValueError
            A missing, malformed or non-finite array, naming it; or a space that maps a query to
            non-finite coordinates.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.spaces import LearnedSpace
        >>> space = LearnedSpace("standard").fit(np.array([[0.0], [4.0]]), np.array([0, 1]))
        >>> frozen = LearnedSpace.from_frozen("standard", *space.frozen_arrays(), n_features=1)
        >>> frozen.transform([[4.0]])
        array([[1.]])
        """
        from ._frozen import FrozenScoreMap

        if kind not in ("standard", "auto") or map_kind not in ("none", "gradient_boosting", "logistic") or (
                kind == "standard" and map_kind != "none"):
            raise ValueError(f"frozen space of kind {kind!r} with a score map of kind {map_kind!r}.")
        space = cls(kind)
        space.kind, space.n_features_in_ = kind, int(n_features)
        space.map_ = None if map_kind == "none" else FrozenScoreMap.from_arrays(
            map_kind, {k[4:]: v for k, v in arrays.items() if k.startswith("map_")}, n_features, prefix=prefix + "map_")
        n_scores = 0 if space.map_ is None else (1 if space.map_.n_classes_ == 2 else space.map_.n_classes_)
        width = n_scores + int(n_features)
        expected = {"units": (n_features,), "mean": (width,), "scale": (width,), "feature_weight": (), "balance": ()}
        unexpected = sorted(k for k in arrays if not k.startswith("map_") and k not in expected)
        if unexpected:
            raise ValueError(f"frozen space arrays {[prefix + k for k in unexpected]} are not the space's.")
        low = {"units": 0.0, "scale": 0.0, "balance": 0.0}  # > 0; feature_weight >= 0, mean any
        for name, shape in expected.items():
            value = np.asarray(arrays.get(name, np.zeros(0, dtype=np.int8)))
            if value.dtype.kind != "f" or value.shape != shape or not np.all(np.isfinite(value)):
                raise ValueError(f"frozen space array {prefix + name!r} must be finite floats of shape {shape}.")
            if (name in low and not np.all(value > 0)) or (name == "feature_weight" and not value >= 0):
                raise ValueError(f"frozen space array {prefix + name!r} must be {'> 0' if name in low else '>= 0'}.")
        if np.any(np.frexp(arrays["units"])[0] != 0.5):
            raise ValueError(f"frozen space array {prefix + 'units'!r} must hold powers of two.")
        space._units = np.asarray(arrays["units"], dtype=np.float64)
        space._mean, space._scale = (np.asarray(arrays[k], dtype=np.float64) for k in ("mean", "scale"))
        space.feature_weight_, space.balance_ = float(arrays["feature_weight"]), float(arrays["balance"])
        space.n_components_ = width
        return space

    def __repr__(self) -> str:
        return f"LearnedSpace({self.metric!r})"


def _common_scale(A: np.ndarray) -> float:
    """The root mean variance of the columns (1 where every column is constant: all values equal)."""
    if not A.shape[1] or not np.any(np.ptp(A, axis=0) > 0):
        return 1.0
    scale = float(np.sqrt(np.mean(A.var(axis=0))))
    return scale if scale > 0 else 1.0


def _location_scale(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means and standard deviations (1 where a column is constant: all its values equal).

    Not ``std > 0``: the standard deviation of equal floats comes out near 1e-17
    (:func:`nwbound._numerics.column_spread`), and a query with another value there would land
    ~1e17 away from every training row.
    """
    return A.mean(axis=0), column_spread(A.std(axis=0), A)


def column_units(X: np.ndarray) -> np.ndarray:
    """Per column, the power of two ``2^e`` with ``max|x_j| ∈ [2^e, 2^(e+1))`` (1 for a column of zeros).

    Dividing by it is exact, so ``X`` and ``2^k·X`` give the same quotient, and the quotient's
    largest magnitude lies in ``[1, 2)``: no standard deviation of it underflows or overflows.

    Raises
    ------
    ValueError
        A non-finite value, naming the column.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import column_units
    >>> units = column_units(np.array([[3e-200, 0.0], [-1e-201, 0.0]]))
    >>> round(float(3e-200 / units[0]), 3), float(units[1])
    (1.148, 1.0)
    """
    A = np.asarray(X, dtype=np.float64)
    largest = np.max(np.abs(A), axis=0, initial=0.0)
    if not np.all(np.isfinite(largest)):
        j = int(np.flatnonzero(~np.isfinite(largest))[0])
        raise ValueError(f"Feature {j} holds a non-finite value; the space needs finite features.")
    exponent = np.frexp(largest)[1] - 1
    return np.where(largest > 0, np.ldexp(1.0, exponent), 1.0)


def in_column_units(X: np.ndarray, units: np.ndarray) -> np.ndarray:
    """``X`` divided by its columns' power-of-two ``units`` (:func:`column_units`; exact), as float64,
    clipped to ``±INPUT_CLIP``: what ``metric="auto"``'s score model reads.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import column_units, in_column_units
    >>> X = np.array([[3e-200], [-1e-201]])
    >>> in_column_units(X, column_units(X)).round(3).ravel().tolist()
    [1.148, -0.038]
    """
    U = np.asarray(X, dtype=np.float64) / units  # exact: powers of two
    return np.clip(U, -INPUT_CLIP, INPUT_CLIP, out=U)


def _finer(n_more: int, n_held: int, n_features: int) -> bool:
    """Whether an estimate on ``n_more`` rows (at most ``AUTO_RESIDUAL_ROWS``) can resolve at least
    ``AUTO_RESOLUTION_GAIN`` times finer than one on ``n_held``: the pilot bandwidth, the distance
    to the ⌈√m⌉-th neighbour, scales as ``m^(−1/(2d))`` in d dimensions, so with many features
    more rows hardly sharpen it, and the second estimate would cost time for nothing."""
    ratio = min(n_more, AUTO_RESIDUAL_ROWS) / max(n_held, 1)
    return ratio > 1 and ratio ** (1.0 / (2 * max(n_features, 1))) >= AUTO_RESOLUTION_GAIN


def _uninformative_weight(features: np.ndarray) -> float:
    """``2 / d_min``: the weight at which any two distinct rows ``d_min`` apart or more may differ by 2
    (anything), ``d_min`` the least nonzero distance between the given rows (1 when all coincide)."""
    F = np.unique(np.asarray(features, dtype=np.float64), axis=0)[:2000]  # bounded memory
    if F.shape[0] < 2:
        return 1.0
    sq = np.einsum("ij,ij->i", F, F)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * F @ F.T, 0.0)
    d2[np.diag_indices_from(d2)] = np.inf
    least = float(np.sqrt(np.min(d2)))
    return 2.0 / least if least > 0 else 1.0


def _balance(scores: np.ndarray, features: np.ndarray) -> float:
    """``c`` of ``metric="auto"``: ``√(a/b)``, with ``a`` and ``b`` the median score-block and
    feature-block distances from each row to its nearest rows (``_BALANCE_NEIGHBORS``, in the space
    at ``c = 1``), clipped to ``[1/AUTO_BALANCE_LIMIT, AUTO_BALANCE_LIMIT]``; 1 where either is 0.

    At ``c = √(a/b)``, ``√(1 + 1/c²)·√(a² + c²b²) = a + b``: the bias of a typical neighbour is the
    two-constant sum itself, not up to √2 times it. Any ``c > 0`` keeps the assumption exact; this
    one is a function of the rows it is given (held out of the kernel sums), never of theirs.
    """
    from sklearn.neighbors import NearestNeighbors

    rows = min(scores.shape[0], _BALANCE_ROWS)
    k = min(_BALANCE_NEIGHBORS, rows - 1)
    if k < 1:
        return 1.0
    S, F = scores[:rows], features[:rows]
    _, idx = NearestNeighbors(n_neighbors=k).fit(np.hstack([S, F])).kneighbors()  # each row's k others
    a = float(np.median(np.linalg.norm(S[:, None, :] - S[idx[:, :k]], axis=2)))
    b = float(np.median(np.linalg.norm(F[:, None, :] - F[idx[:, :k]], axis=2)))
    if not (a > 0 and b > 0):
        return 1.0
    return float(np.clip(np.sqrt(a / b), 1.0 / AUTO_BALANCE_LIMIT, AUTO_BALANCE_LIMIT))


def _checked_floor(value: Any, name: str) -> float:
    """``value`` as a positive finite float, else a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) or not value > 0 \
            or not np.isfinite(value):
        raise ValueError(f"{name} must be a positive finite number or None; got {value!r}.")
    return float(value)
