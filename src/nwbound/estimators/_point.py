"""``point_estimate="auto"``: the score model the learned space chose, fitted on every training row,
its probabilities reported inside the bound's box.

The bound's box ``[lower, upper]`` is valid whatever point is reported inside it. The space's score
model sees only the map rows (they must stay apart from the kernel rows for the guarantee); the
point estimate may see every row, because it moves nothing but the reported point: its
probabilities are projected into the box (:func:`~nwbound.spaces.move_into_box`), so ``lower``,
``upper`` and the certified rows and class are those of ``point_estimate="nw"``.

Private to :mod:`nwbound.estimators`: the classifier and a model file's frozen route
(:mod:`._frozen`) share these functions (one copy of each rule).
"""

from __future__ import annotations

from typing import Any

import warnings

import numpy as np

__all__ = ["POINT_CHECK_ROWS", "POINT_CHECK_SHARE", "POINT_COARSE_ROWS", "POINT_ESTIMATES", "POINT_MAX_BINS", "fit_point_model", "judge_point_model", "judge_rows_proba",
           "point_proba", "with_point_estimate"]

#: The values of ``point_estimate``.
POINT_ESTIMATES = ("auto", "nw")
#: At most this many check rows (a fixed random subset) judge the point model against the kernel estimate.
POINT_CHECK_ROWS = 512
#: ... and at most this share of the training rows: a copy fitted without them is kept as judged.
POINT_CHECK_SHARE = 0.1
#: Above this many rows, ``metric="auto"``'s gradient-boosting point model bins each feature into at
#: most ``POINT_MAX_BINS`` values instead of 255: a third less fit time at 7 000 rows, a quarter at
#: 20 000, accuracy within 0.2 point or better (bench_defaults' rows, MIT-BIH beats, MNIST; user guide,
#: "Defaults": "Cost", round 21). The space's score model keeps 255: coarser bins there blurred fine
#: structure along a feature and moved known-p fields' certificates and misses. The point model moves
#: only the reported point inside the box. At most 4 000 rows (every unseen and bundled set) nothing changes.
POINT_COARSE_ROWS = 4_000
POINT_MAX_BINS = 63


def judge_point_model(point: np.ndarray, nw: np.ndarray, labels: np.ndarray) -> dict:
    """Whether the point model replaces the kernel estimate, judged on held-out rows (a model's check
    rows, which neither its map, its kernel sums nor the judged point model saw).

    The kernel estimate stays only where it is more accurate there beyond noise: of the rows where
    exactly one of the two is right (argmax of ``point``, argmax of ``nw``), the kernel estimate
    must win ``b`` and the point model ``c`` with ``b − c > 2·√(b + c)`` (twice the standard error
    of the paired difference, McNemar's). A score model chosen on the map rows can be much worse
    than the kernel estimate, which reads the features too (a linear model of a non-linear
    field); a few check rows' noise alone does not reject it.

    Parameters
    ----------
    point, nw : ndarray of shape (n_rows, n_classes)
        The two estimates on the held-out rows, columns in class-index order.
    labels : ndarray of shape (n_rows,)
        Their class indices.

    Returns
    -------
    dict
        ``n_rows``, ``point_accuracy``, ``nw_accuracy`` and ``used``.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.estimators._point import judge_point_model
    >>> labels = np.arange(40) % 2
    >>> right, wrong = np.eye(2)[labels], np.eye(2)[1 - labels]
    >>> judge_point_model(np.vstack([wrong[:3], right[3:]]), right, labels)["used"]  # 3 of 40: noise
    True
    >>> judge_point_model(np.vstack([wrong[:20], right[20:]]), right, labels)
    {'n_rows': 40, 'point_accuracy': 0.5, 'nw_accuracy': 1.0, 'used': False}
    """
    point_right = np.argmax(point, axis=1) == labels
    nw_right = np.argmax(nw, axis=1) == labels
    b, c = int(np.sum(nw_right & ~point_right)), int(np.sum(point_right & ~nw_right))
    return {"n_rows": int(labels.shape[0]), "point_accuracy": float(np.mean(point_right)),
            "nw_accuracy": float(np.mean(nw_right)), "used": bool(b - c <= 2.0 * np.sqrt(b + c))}


def judge_rows_proba(model: Any, checked: tuple[np.ndarray, np.ndarray] | None, X: np.ndarray,
                     rows: np.ndarray) -> np.ndarray:
    """The kernel estimate of ``model`` (fitted) on its training rows ``X[rows]``, as
    ``model.predict_proba`` gives it: taken from ``checked`` where it holds them, the others computed.

    ``checked`` is ``(training rows, p̂)``: the estimate that the held-out check of L computed on
    its rows (``lipschitz="auto"``), or None. The same numbers as ``predict_proba``: every setting of
    the check chooses its bandwidths at the pilot L, as the model does, and a query's kernel sums do
    not depend on the other queries; so the judge reads them instead of a second pass.

    Parameters
    ----------
    model : fitted NadarayaWatsonClassifier
    checked : tuple of (ndarray of int, ndarray of shape (n_checked, n_classes)) or None
    X : ndarray of shape (n_samples, n_features)
        The validated training rows.
    rows : ndarray of int
        The rows wanted.

    Returns
    -------
    ndarray of shape (len(rows), n_classes)

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.estimators._point import judge_rows_proba
    >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.2).fit(X, y)
    >>> checked = (np.array([3]), np.array([[0.25, 0.75]]))
    >>> judge_rows_proba(clf, checked, X, np.array([3, 0])).round(2).tolist()  # row 3 read, row 0 computed
    [[0.25, 0.75], [1.0, 0.0]]
    """
    out = np.empty((rows.shape[0], model.classes_.shape[0]))
    missing = np.ones(rows.shape[0], dtype=bool)
    if checked is not None and checked[0].shape[0]:
        known, proba = checked
        order = np.argsort(known, kind="stable")
        at = order[np.minimum(np.searchsorted(known, rows, sorter=order), known.shape[0] - 1)]
        missing = known[at] != rows
        out[~missing] = proba[at[~missing]]
    if missing.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the check rows' vacuous share is the check's business
            out[missing] = model.predict_proba(X[rows[missing]])
    return out


def fit_point_model(kind: str | None, metric: Any, reports: Any, X: np.ndarray, labels: np.ndarray,
                    weights: np.ndarray | None, random_state: int) -> tuple[Any, np.ndarray | None]:
    """``(model, units)`` of ``point_estimate="auto"``, or ``(None, None)`` where there is no score model.

    ``metric="auto"`` (``kind`` ``"auto"``): a fresh copy of the candidate its space chose
    (:func:`~nwbound.spaces.chosen_candidate` of the models' ``reports``) fitted on the rows given,
    in their columns' power-of-two ``units`` (:func:`~nwbound.spaces.column_units`), as the space's
    score model reads its rows. A classifier given as ``metric`` (``kind`` ``"scores"``) with
    ``predict_proba``: a clone fitted on the rows as given (``units`` None). Anything else (no
    metric, ``"standard"``, a transformer, a classifier without probabilities, no candidate
    chosen): none. The labels are class indices, the weights the fit's (relative) weights. Above
    ``POINT_COARSE_ROWS`` rows the gradient-boosting candidate bins its features into at most
    ``POINT_MAX_BINS`` values (the cost of the fit; the box does not depend on the point model).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.estimators._point import fit_point_model
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([0, 0, 1, 1])
    >>> fit_point_model(None, None, None, X, y, None, 0)
    (None, None)
    """
    from ..spaces import auto_candidates, chosen_candidate, column_units, fit_score_model, in_column_units

    if kind == "auto":
        name = chosen_candidate([] if reports is None else reports)
        if name is None:
            return None, None
        units = column_units(X)
        model = auto_candidates(random_state).get(name, name)  # not a candidate: fit_score_model names them
        if X.shape[0] > POINT_COARSE_ROWS and "max_bins" in getattr(model, "get_params", dict)():
            model.set_params(max_bins=POINT_MAX_BINS)
        return fit_score_model(model, in_column_units(X, units), labels, _float64(weights),
                               random_state=random_state), units
    if kind == "scores" and hasattr(metric, "predict_proba"):
        return fit_score_model(metric, np.asarray(X, dtype=np.float64), labels, _float64(weights)), None
    return None, None


def _float64(weights: np.ndarray | None) -> np.ndarray | None:
    return None if weights is None else np.asarray(weights, dtype=np.float64)


def point_proba(model: Any, units: np.ndarray | None, X: np.ndarray, n_classes: int) -> np.ndarray:
    """The point model's probabilities of queries ``X`` (in the features the space reads), one column
    per class of the estimator (class indices; 0 for a class the model never saw).

    A model fitted elsewhere (``FrozenEstimator``) may know the estimator's class labels instead of
    its indices: its columns then go to no class and the row is that of a model that saw none
    (the NW estimate stays where the box holds no such row).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from nwbound.estimators._point import point_proba
    >>> model = LogisticRegression().fit([[0.0], [1.0], [2.0], [3.0]], [0, 0, 2, 2])
    >>> point_proba(model, None, np.array([[0.0]]), 3)[:, 1].tolist()  # class 1 never seen
    [0.0]
    """
    from ..spaces import in_column_units, model_proba

    U = np.asarray(X, dtype=np.float64) if units is None else in_column_units(X, units)
    P = np.asarray(model_proba(model, U), dtype=np.float64)
    known = getattr(model, "classes_", None)
    if known is None:  # a FrozenScoreMap: every class, in order (a point model knows them all)
        return P
    known = np.asarray(known)
    out = np.zeros((P.shape[0], n_classes))
    usable = np.flatnonzero(np.isin(known, np.arange(n_classes)))
    out[:, known[usable].astype(np.intp)] = P[:, usable]
    return out


def with_point_estimate(out: Any, proba: np.ndarray) -> Any:
    """``out`` (a :class:`~nwbound.PredictionInterval`, or a dict of them from ``bounds=``) with
    ``proba`` moved into each box (:func:`~nwbound.spaces.move_into_box`).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> from nwbound.estimators._point import with_point_estimate
    >>> iv = PredictionInterval.from_parts(proba=np.array([[0.6, 0.4]]), bias=np.zeros((1, 2)),
    ...     sampling=np.full((1, 2), 0.1), kappa=np.ones(1), n_eff=np.ones(1),
    ...     vacuous=np.array([False]), bandwidth=np.ones(1))
    >>> with_point_estimate({"a": iv}, np.array([[0.9, 0.1]]))["a"].proba.round(2).tolist()
    [[0.7, 0.3]]
    """
    from ..spaces import move_into_box

    if isinstance(out, dict):
        return {name: move_into_box(iv, proba) for name, iv in out.items()}
    return move_into_box(out, proba)
