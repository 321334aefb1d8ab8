"""How the bounds, flags and accuracy move with the Lipschitz constant."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np


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
        The L values to try (each > 0), in the units of the features the model sees: with a
        ``metric`` other than None the mapped space's (with the default ``metric="auto"`` a
        numeric L warns at each fit); a ``metric=None`` model takes L on the features as given.
    X_train, y_train, sample_weight : array-like, optional
        Training data; default the fitted model's own. Required for a model whose
        ``metric`` is not None, the default ``"auto"`` included (a learned space keeps only its
        kernel rows, mapped).

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
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=2.0, lipschitz=0.25).fit(X, y)
    >>> rows = sensitivity_report(clf, X[:100], y[:100], [0.05, 0.25])
    >>> [row["lipschitz"] for row in rows]
    [0.05, 0.25]
    >>> bool(rows[0]["mean_epsilon"] < rows[1]["mean_epsilon"])
    True
    >>> bool(rows[0]["share_flagged"] <= rows[1]["share_flagged"])
    True
    """
    from sklearn.base import clone

    from ..metrics import review_flags

    values = np.atleast_1d(np.asarray(lipschitz_values, dtype=np.float64)) if lipschitz_values is not None else None
    if values is None or values.size == 0 or not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise ValueError(f"lipschitz_values must be a non-empty list of finite numbers > 0, got {lipschitz_values!r}.")
    if not hasattr(model, "get_params") or "lipschitz" not in model.get_params():
        raise TypeError(f"model must be an estimator with a `lipschitz` parameter, got {type(model).__name__}.")
    if X_train is None:
        if getattr(model, "metric", None) is not None and hasattr(model, "n_features_in_"):
            # A learned space keeps only its kernel rows, mapped (and a cross-fitted model one set
            # per model): refitting needs the rows given to fit.
            raise ValueError(
                f"sensitivity_report refits the model at each L; a model with metric={model.metric!r} keeps only "
                "its kernel sums' rows, mapped into its learned space, so pass X_train and y_train (the rows given "
                "to fit). Each L is then in the units of the learned space(s)."
            )
        from sklearn.exceptions import NotFittedError
        from sklearn.utils.validation import check_is_fitted

        try:
            check_is_fitted(model)
        except NotFittedError:
            raise ValueError("model is not fitted: fit it first, or pass X_train and y_train.") from None
        state = model.get_fitted_state()  # X in its documented feature_unit (float32 far from 1)
        if "X" not in state:
            raise ValueError(
                f"sensitivity_report refits the model at each L; a fitted {type(model).__name__} keeps per-cell "
                "sums, not its training rows: pass X_train and y_train (the rows given to fit)."
            )
        unit = float(state.get("feature_unit", 1.0))
        X_train = state["X"] if unit == 1.0 else state["X"].astype(np.float64) * unit
        y_train = np.asarray(model.classes_)[state["labels"]]
        sample_weight = state.get("weights") if sample_weight is None else sample_weight
    elif y_train is None:
        raise ValueError("Pass y_train together with X_train.")
    from .._validation import as_1d, check_label_pair

    y_test = as_1d(y_test, "y_test")  # a column (m, 1) would broadcast against the m predictions
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
        # Text labels against numeric classes (or the reverse) never compare equal: refused.
        truth, predicted = check_label_pair(y_test, np.asarray(m.classes_)[top], ("y_test", "the model's classes"))
        correct = predicted == truth
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
