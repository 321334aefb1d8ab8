"""A learned space ``z(x)``: the map fitted on the metric share, its output standardised."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import has_fit_parameter

from .._numerics import column_spread
from ._auto import AUTO_MAX_ITER, _auto_scores, _choose_score_model

__all__ = ["LearnedSpace", "metric_kind", "AUTO_FEATURE_WEIGHT", "AUTO_MAX_ROWS", "AUTO_MAX_ITER"]

#: metric="auto": the standardised features enter z scaled by r = AUTO_FEATURE_WEIGHT·sqrt(C_s/d)
#: (C_s score columns, d features), so that they carry about AUTO_FEATURE_WEIGHT² of the squared
#: distance between two random rows. Measured (benchmarks/bench_learned_space.py, candidates) on
#: three known-p fields: r = 0.1 / 0.25 / 0.5 missed p on ≤ 1.3 / 1.1 / 0 % of queries and
#: certified 0–50 / 0–49 / 0–6 %; the scores alone missed p on 2.5–35 %. On a 60-D field (p a
#: function of 3 features, 6 draws) 0.25 missed p on up to 8.8 %, 0.1 on up to 30 %, 0.5 on ≤ 0.2 %
#: when lipschitz="auto" could keep pilot/2 without evidence. Since it keeps its pilot unless certified
#: check rows support going lower (spaces.certified_evidence), the defaults (0.25, cross-fitted or one
#: split) miss p on 0–0.2 % of that field's queries over the same 6 draws, at the pilot L every time
#: (tests/test_learned_space.py::test_auto_defaults_cover_the_60d_field; user guide, "The feature weight").
AUTO_FEATURE_WEIGHT = 0.25
#: metric="auto" fits its gradient-boosting model on at most this many rows of the map share
#: (a fixed random subset), with at most ``AUTO_MAX_ITER`` boosting iterations.
AUTO_MAX_ROWS = 10_000

_KINDS = ("standard", "transformer", "scores", "auto")


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
    * ``"auto"``: ``z = (s(x), r·x_std)``: the standardised class probabilities ``s`` (one
      column for two classes) of a score model chosen on the rows it is given by out-of-fold
      log-loss (:func:`choose_score_model`: a ``HistGradientBoostingClassifier`` with
      ``AUTO_MAX_ITER`` iterations or a logistic regression; at most ``AUTO_MAX_ROWS`` rows; the
      choice and its reasons in ``report_``), next to the standardised features scaled by
      ``r = AUTO_FEATURE_WEIGHT·sqrt(C_s/d)``.
      The map has full rank, so the Lipschitz assumption in ``z`` holds with a finite
      constant whenever ``p`` is Lipschitz in ``x`` (user guide, "Bounds in a learned space").

    Standardised: ``"standard"`` and the features of ``"auto"`` per column; the output of a
    transformer or a classifier (and the scores of ``"auto"``) centred per column and divided
    by one common scale, the root mean variance of its columns, so that a map's own geometry
    (NCA's or a diagonal map's relative scales) is kept. Columns of zero spread are left unscaled. Sample weights reach the map's ``fit`` where it
    accepts them (they never affect validity: the map is any function of the metric share).

    Parameters
    ----------
    metric : str or estimator
    random_state : int, RandomState or None, default=None
        Seed of ``"auto"``'s row subset and model.

    Attributes
    ----------
    kind : str
    map_ : estimator or None
        The fitted transformer or classifier (None for ``"standard"``).
    n_features_in_ : int
    n_components_ : int
        Dimension of ``z``.
    feature_weight_ : float
        ``r`` of ``"auto"`` (0 otherwise).
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
    """

    def __init__(self, metric: Any, *, random_state: Any = None):
        self.metric = metric
        self.random_state = random_state

    def fit(self, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None,
            groups: np.ndarray | None = None) -> "LearnedSpace":
        """Fit the map on ``(X, y)`` and the standardisation of its output.

        ``groups`` (one label per row, or None) keeps each group within one fold of
        ``"auto"``'s cross-validation, so that rows of one patient do not judge a model fitted on
        that patient's other rows.

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
        self._fit(X, y, sample_weight, groups)
        return self

    def fit_transform(self, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None,
                      groups: np.ndarray | None = None) -> np.ndarray:
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
        return self._standardised(self._fit(X, y, sample_weight, groups), self.n_features_in_)

    def _fit(self, X: Any, y: np.ndarray, sample_weight: np.ndarray | None, groups: np.ndarray | None) -> np.ndarray:
        """:meth:`fit`; returns the map's output on ``X`` before standardisation."""
        kind = metric_kind(self.metric)
        if kind is None:
            raise ValueError("LearnedSpace needs a metric; metric=None means the features as they are.")
        X = np.asarray(X)
        self.kind, self.n_features_in_ = kind, X.shape[1]
        self.map_, self.feature_weight_, self.report_ = None, 0.0, None
        scores = None
        if kind == "transformer" or kind == "scores":
            self.map_ = clone(self.metric)
            self._fit_map(self.map_, X, y, sample_weight)
        elif kind == "auto":
            rng = check_random_state(self.random_state)
            rows = np.arange(X.shape[0])
            if X.shape[0] > AUTO_MAX_ROWS:
                rows = np.sort(rng.choice(X.shape[0], size=AUTO_MAX_ROWS, replace=False))
            self.map_, self.report_, scores = _choose_score_model(
                X[rows], y[rows], None if sample_weight is None else sample_weight[rows],
                random_state=rng.randint(2**31), groups=None if groups is None else np.asarray(groups)[rows])
            if rows.shape[0] != X.shape[0] or X.dtype != np.float64 or not X.flags.c_contiguous:
                scores = None  # computed on other rows or another array: computed on X below
        raw = self._raw(X, scores)
        if kind == "standard":
            self._mean, self._scale = _location_scale(raw)
        else:  # the map's own geometry: centred, one common scale (its columns' relative scales kept)
            n_map = raw.shape[1] - (X.shape[1] if kind == "auto" else 0)
            if kind != "auto" and X.shape[0] > 1 and not np.any(np.ptp(raw[:, :n_map], axis=0) > 0):
                raise ValueError(
                    f"metric={self.metric!r} maps all {X.shape[0]} rows it was fitted on to one point: it learned "
                    "nothing from them (e.g. a gradient-boosting model with min_samples_leaf=20 on a few dozen "
                    "rows), so every distance in the space would be 0. Give a map that can learn from that many "
                    "rows, more rows or a larger metric_fraction, or metric='auto'."
                )
            self._mean, self._scale = _location_scale(raw)
            self._scale[:n_map] = _common_scale(raw[:, :n_map])
        if kind == "auto":
            n_scores = raw.shape[1] - X.shape[1]
            # No score model (report_.chosen is None): the standardised features alone, at weight 1.
            self.feature_weight_ = float(AUTO_FEATURE_WEIGHT * np.sqrt(n_scores / X.shape[1])) if n_scores else 1.0
            self.report_ = replace(self.report_, feature_weight=self.feature_weight_)
        self.n_components_ = raw.shape[1]
        return raw

    @staticmethod
    def _fit_map(model: Any, X: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None) -> None:
        if sample_weight is not None and has_fit_parameter(model, "sample_weight"):
            model.fit(X, y, sample_weight=sample_weight)
        else:
            model.fit(X, y)

    def _raw(self, X: np.ndarray, scores: np.ndarray | None = None) -> np.ndarray:
        """The map's output before standardisation (for "auto": scores, then the features);
        ``scores``: "auto"'s scores on ``X`` when already computed."""
        if self.kind == "standard":
            return np.asarray(X, dtype=np.float64)
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
            out = _auto_scores(self.map_, X) if scores is None else scores
        else:
            out = _scores(self.map_, X)
        if self.kind == "auto":
            out = np.hstack([out, np.asarray(X, dtype=np.float64)])
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

    def _standardised(self, raw: np.ndarray, n_features: int) -> np.ndarray:
        """The map's output ``raw`` centred and scaled (for "auto", the features at their weight)."""
        z = (raw - self._mean) / self._scale
        if self.kind == "auto":
            z[:, -n_features:] *= self.feature_weight_
        return z

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
