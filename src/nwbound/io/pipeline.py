"""The table pipeline of the command line: feature scaling and a classifier fitted behind it.

:class:`FeatureScaler` is the per-feature affine scaling that ``nwbound fit
--scale`` learns; :class:`TableModel` bundles a fitted classifier with its
feature columns, the scaling and the assumption as the user gave it (in raw
units). Both are saved by :func:`nwbound.io.save_model`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .._numerics import column_spread

__all__ = ["SCALE_METHODS", "FeatureScaler", "TableModel", "check_table_columns"]

SCALE_METHODS = ("none", "minmax", "standard")


@dataclass(frozen=True, eq=False)
class FeatureScaler:
    """Per-feature affine scaling ``x_scaled = (x − shift)·scale``.

    Parameters
    ----------
    method : {"minmax", "standard"}
        ``"minmax"``: ``shift = min``, ``scale = 1/range`` (maps the training
        data to [0, 1]); ``"standard"``: ``shift = mean``, ``scale = 1/std``
        (population std). A constant feature gets ``scale = 1``.
    shift, scale : ndarray of shape (n_features,)
        Finite; ``scale > 0``.

    Raises
    ------
    ValueError
        An unknown method, arrays of different lengths, a non-finite value or
        a scale that is not positive.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.io import FeatureScaler
    >>> scaler = FeatureScaler.fit(np.array([[0.0, 10.0], [2.0, 30.0]]), "minmax")
    >>> scaler.transform(np.array([[1.0, 20.0]])).tolist()
    [[0.5, 0.5]]
    """

    method: str
    shift: np.ndarray
    scale: np.ndarray

    def __post_init__(self) -> None:
        if self.method not in ("minmax", "standard"):
            raise ValueError(f"FeatureScaler method must be 'minmax' or 'standard', got {self.method!r}.")
        shift = np.asarray(self.shift, dtype=np.float64)
        scale = np.asarray(self.scale, dtype=np.float64)
        if shift.ndim != 1 or scale.shape != shift.shape:
            raise ValueError("FeatureScaler shift and scale must be 1-D arrays of the same length.")
        if not (np.all(np.isfinite(shift)) and np.all(np.isfinite(scale)) and np.all(scale > 0)):
            raise ValueError("FeatureScaler shift must be finite and scale finite and > 0.")
        object.__setattr__(self, "shift", shift)
        object.__setattr__(self, "scale", scale)

    @classmethod
    def fit(cls, X: np.ndarray, method: str) -> "FeatureScaler":
        """Learn the scaling of the training features.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Raw training features.
        method : {"minmax", "standard"}

        Returns
        -------
        FeatureScaler

        Examples
        --------
        >>> import numpy as np
        >>> FeatureScaler.fit(np.array([[1.0], [3.0]]), "standard").scale.tolist()
        [1.0]
        """
        X = np.asarray(X, dtype=np.float64)
        if method == "minmax":
            shift = X.min(axis=0)
            spread = X.max(axis=0) - shift
        elif method == "standard":
            shift = X.mean(axis=0)
            spread = X.std(axis=0)
        else:
            raise ValueError(f"scale must be one of {', '.join(SCALE_METHODS)}, got {method!r}.")
        # A constant feature carries no scale; leave it unscaled (s_j = 1 keeps
        # the restated L and γ valid, see nwbound.scaling).
        scale = 1.0 / column_spread(spread, X)
        return cls(method=method, shift=shift, scale=scale)

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Scale ``X`` elementwise (so the result never depends on chunking).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features), float64

        Examples
        --------
        >>> import numpy as np
        >>> FeatureScaler("minmax", np.array([1.0]), np.array([0.5])).transform(np.array([[3.0]])).tolist()
        [[1.0]]
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.shift.shape[0]:
            raise ValueError(f"FeatureScaler expects {self.shift.shape[0]} features, got shape {X.shape}.")
        return (X - self.shift) * self.scale


def _feature_frame(X: Any, features: Sequence[str]) -> Any:
    """The ``features`` columns of a data frame, by name and in that order; other input unchanged.

    A frame (anything with ``columns``, e.g. pandas or polars) is read by column name, so that
    columns in another order, or beside id columns, give the features the model was fitted on;
    a missing feature is refused. An array is read by position, as it is.

    Parameters
    ----------
    X : data frame or array-like
    features : sequence of str
        The model's feature columns, in order.

    Returns
    -------
    data frame or array-like
        The frame's feature columns in the order of ``features``, or ``X`` itself.

    Raises
    ------
    nwbound.io.tables.TableError
        A frame without one of the ``features`` (a ``ValueError``).

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"id": ["a"], "b": [2.0], "a": [1.0]})
    >>> _feature_frame(frame, ["a", "b"]).to_numpy().tolist()
    [[1.0, 2.0]]
    >>> _feature_frame(frame[["id", "b"]], ["a", "b"])
    Traceback (most recent call last):
    ...
    nwbound.io.tables.TableError: X has no feature column(s) ['a']; its columns are 'id', 'b'.
    """
    columns = getattr(X, "columns", None)
    if columns is None or isinstance(X, np.ndarray):
        return X
    from .tables import check_columns

    labels = list(columns)
    names = [str(c) for c in labels]
    check_columns(names, [str(f) for f in features], "X", "feature")
    return X[[labels[names.index(str(f))] for f in features]]


def check_table_columns(features: Sequence[str], target: str | None, id_columns: Sequence[str], *,
                        field: str = "") -> None:
    """Refuse column roles no table can have: a feature named twice, the target as a feature or an
    id column, an id column that is also a feature (``field`` prefixes the names in the message).

    Parameters
    ----------
    features : sequence of str
    target : str or None
    id_columns : sequence of str
    field : str, default=""
        Where the names come from, e.g. ``"pipeline."`` for a model file.

    Raises
    ------
    ValueError
        Naming the field and the column.

    Examples
    --------
    >>> check_table_columns(["a", "b"], "y", ["id"])
    >>> check_table_columns(["a", "b", "a"], "y", [], field="pipeline.")
    Traceback (most recent call last):
    ...
    ValueError: pipeline.features names the column(s) ['a'] more than once; each feature is one column.
    >>> check_table_columns(["a", "y"], "y", [])
    Traceback (most recent call last):
    ...
    ValueError: target 'y' is also one of the features; the class labels cannot be a feature.
    """
    features = list(features)
    repeated = sorted({f for f in features if features.count(f) > 1})
    if repeated:
        raise ValueError(f"{field}features names the column(s) {repeated} more than once; each feature is one column.")
    if target is not None and target in features:
        raise ValueError(f"{field}target {target!r} is also one of the {field}features; the class labels cannot be a feature.")
    if target is not None and target in id_columns:
        raise ValueError(f"{field}target {target!r} is also one of the {field}id_columns.")
    shared = sorted(set(id_columns) & set(features))
    if shared:
        raise ValueError(f"{field}id_columns {shared} are also {field}features; an id column is not a feature.")


@dataclass(eq=False)
class TableModel:
    """A fitted classifier together with how to build its inputs from a table.

    Parameters
    ----------
    estimator : NadarayaWatsonClassifier or DyadicClassifier
        Fitted on the *scaled* features.
    features : tuple of str
        Feature columns, in order.
    scaler : FeatureScaler or None
        Applied to the raw features before the estimator.
    target : str or None
        Name of the target column in the training table.
    lipschitz, margin : float or None
        The assumption as the user gave it, in raw feature units (the
        estimator holds the restated value in scaled units).
    id_columns : tuple of str
        Identifier columns of the training table (not features), which
        ``nwbound predict`` copies into its output by default.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.io import TableModel
    >>> X = np.array([[0.0, 100.0], [1.0, 300.0], [0.2, 120.0], [0.9, 280.0]])
    >>> model = TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.6), X, [0, 1, 0, 1],
    ...                        features=["a", "b"], scale="minmax", lipschitz=0.5)
    >>> model.predict(np.array([[0.1, 110.0]])).tolist()
    [0]
    """

    estimator: Any
    features: tuple[str, ...]
    scaler: FeatureScaler | None = None
    target: str | None = None
    lipschitz: float | None = None
    margin: float | None = None
    id_columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_table_columns(self.features, self.target, self.id_columns)

    @classmethod
    def fit(
        cls,
        estimator: Any,
        X: np.ndarray,
        y: np.ndarray,
        *,
        features: Sequence[str],
        scale: str = "none",
        lipschitz: float | None = None,
        margin: float | None = None,
        target: str | None = None,
        sample_weight: np.ndarray | None = None,
        id_columns: Sequence[str] = (),
    ) -> "TableModel":
        """Scale the raw features, restate L/γ in scaled units and fit a copy of ``estimator``.

        Parameters
        ----------
        estimator : unfitted NadarayaWatsonClassifier or DyadicClassifier
            With ``lipschitz``/``margin`` given here, its own are replaced by the restated values,
            which needs ``metric=None`` (raw units mean nothing in a learned space). Without them
            any estimator the model file stores fits as it is (the default ``metric="auto"``,
            ``lipschitz="auto"`` included, as ``nwbound fit`` does by default).
        X : ndarray or data frame of shape (n_samples, n_features)
            Raw features; a data frame is read by the names in ``features`` (other columns ignored).
        y : ndarray of shape (n_samples,)
        features : sequence of str
            Column names of ``X``.
        scale : {"none", "minmax", "standard"}
        lipschitz, margin : float or None
            The assumption in the units of the raw features (at most one).
            When both are None the estimator's own ``lipschitz``/``margin``
            are kept as they are (i.e. they must already be in scaled units).
        target : str or None
            Name of the target column (kept for the record).
        sample_weight : ndarray of shape (n_samples,), optional
        id_columns : sequence of str, default=()
            Identifier columns of the table, recorded for ``nwbound predict``.

        Returns
        -------
        TableModel

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.array([[0.0], [10.0], [1.0], [9.0]])
        >>> m = TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale"), X, [0, 1, 0, 1], features=["x"],
        ...                    scale="minmax", lipschitz=0.1)
        >>> m.estimator.lipschitz  # 0.1 per raw unit = 1.0 per unit of the [0, 1] range
        1.0
        """
        from sklearn.base import clone

        from ..scaling import restate_lipschitz, restate_margin

        features = tuple(str(f) for f in features)
        X = np.asarray(_feature_frame(X, features), dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(features):
            raise ValueError(f"X has shape {X.shape} but {len(features)} feature names were given.")
        if lipschitz is not None and margin is not None:
            raise ValueError("Give lipschitz or margin, not both.")
        if (lipschitz is not None or margin is not None) and getattr(estimator, "metric", None) is not None:
            raise ValueError(
                f"lipschitz/margin are in raw feature units, which mean nothing in the space metric="
                f"{estimator.metric!r} learns: pass an estimator with metric=None, or leave them None (the "
                "estimator's lipschitz='auto' chooses L in its space)."
            )
        if scale not in SCALE_METHODS:
            raise ValueError(f"scale must be one of {', '.join(SCALE_METHODS)}, got {scale!r}.")
        scaler = None if scale == "none" else FeatureScaler.fit(X, scale)
        est = clone(estimator)
        if lipschitz is not None or margin is not None:
            # L, γ are properties of p in a metric: restate them for the scaled space.
            scales = None if scaler is None else scaler.scale
            est.set_params(
                lipschitz=None if lipschitz is None else (lipschitz if scales is None else restate_lipschitz(lipschitz, scales)),
                margin=None if margin is None else (margin if scales is None else restate_margin(margin, scales)),
            )
        est.fit(X if scaler is None else scaler.transform(X), y, sample_weight=sample_weight)
        return cls(
            estimator=est,
            features=features,
            scaler=scaler,
            target=target,
            lipschitz=None if lipschitz is None else float(lipschitz),
            margin=None if margin is None else float(margin),
            id_columns=tuple(str(c) for c in id_columns),
        )

    @property
    def classes_(self) -> np.ndarray:
        """The estimator's ``classes_``.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> from nwbound.io import TableModel
        >>> X = np.array([[0.0, 100.0], [1.0, 300.0], [0.2, 120.0], [0.9, 280.0]])
        >>> model = TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.6), X, ["no", "yes", "no", "yes"],
        ...                        features=["a", "b"], scale="minmax", lipschitz=0.5)
        >>> model.classes_.tolist()
        ['no', 'yes']
        """
        return self.estimator.classes_

    @property
    def n_features_in_(self) -> int:
        """Number of raw feature columns.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> from nwbound.io import TableModel
        >>> X = np.array([[0.0, 100.0], [1.0, 300.0], [0.2, 120.0], [0.9, 280.0]])
        >>> model = TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.6), X, ["no", "yes", "no", "yes"],
        ...                        features=["a", "b"], scale="minmax", lipschitz=0.5)
        >>> model.n_features_in_
        2
        """
        return len(self.features)

    def transform(self, X: Any) -> np.ndarray:
        """Raw features (n, d) → the estimator's inputs (scaled when a scaler is set).

        Parameters
        ----------
        X : array-like or data frame of shape (n_samples, n_features)
            Raw features: an array's columns in the order of ``features``; a data frame's are
            read by name (other columns ignored, a missing one refused).

        Returns
        -------
        ndarray of shape (n_samples, n_features), float64

        Raises
        ------
        ValueError
            If ``X`` is not 2-D with one column per feature.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> from nwbound.io import TableModel
        >>> X = np.array([[0.0, 100.0], [1.0, 300.0], [0.2, 120.0], [0.9, 280.0]])
        >>> model = TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.6), X, ["no", "yes", "no", "yes"],
        ...                        features=["a", "b"], scale="minmax", lipschitz=0.5)
        >>> np.round(model.transform([[0.5, 200.0]]), 3).tolist()
        [[0.5, 0.5]]
        >>> model.transform([[0.5]])
        Traceback (most recent call last):
        ...
        ValueError: Expected 2 features (a, b), got shape (1, 1).
        """
        X = np.asarray(_feature_frame(X, self.features), dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(self.features):
            raise ValueError(f"Expected {len(self.features)} features ({', '.join(self.features)}), got shape {X.shape}.")
        return X if self.scaler is None else self.scaler.transform(X)

    def predict_interval(self, X: Any, **kwargs: Any) -> Any:
        """The estimator's ``predict_interval`` on the scaled features (keywords passed on).

        Parameters
        ----------
        X : array-like or data frame of shape (n_queries, n_features)
            Raw features, as :meth:`transform` reads them (a data frame by column name).
        **kwargs
            Keyword arguments of the estimator's ``predict_interval`` (e.g. ``bounds``).

        Returns
        -------
        PredictionInterval or dict of name to PredictionInterval

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> from nwbound.io import TableModel
        >>> X = np.array([[0.0, 100.0], [1.0, 300.0], [0.2, 120.0], [0.9, 280.0]])
        >>> model = TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.6), X, ["no", "yes", "no", "yes"],
        ...                        features=["a", "b"], scale="minmax", lipschitz=0.5)
        >>> iv = model.predict_interval([[0.1, 110.0]])
        >>> iv.lower.shape, bool(np.all(iv.lower <= iv.upper))
        ((1, 2), True)
        """
        return self.estimator.predict_interval(self.transform(X), **kwargs)

    def predict_proba(self, X: Any) -> np.ndarray:
        """The estimator's ``predict_proba`` on the scaled features.

        Parameters
        ----------
        X : array-like or data frame of shape (n_queries, n_features)
            Raw features, as :meth:`transform` reads them (a data frame by column name).

        Returns
        -------
        ndarray of shape (n_queries, n_classes)

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> from nwbound.io import TableModel
        >>> X = np.array([[0.0, 100.0], [1.0, 300.0], [0.2, 120.0], [0.9, 280.0]])
        >>> model = TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.6), X, ["no", "yes", "no", "yes"],
        ...                        features=["a", "b"], scale="minmax", lipschitz=0.5)
        >>> model.predict_proba([[0.1, 110.0]]).round(2).tolist()
        [[1.0, 0.0]]
        """
        return self.estimator.predict_proba(self.transform(X))

    def predict(self, X: Any) -> np.ndarray:
        """The estimator's ``predict`` on the scaled features.

        Parameters
        ----------
        X : array-like or data frame of shape (n_queries, n_features)
            Raw features, as :meth:`transform` reads them (a data frame by column name).

        Returns
        -------
        ndarray of shape (n_queries,)
            Elements of ``classes_``.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> from nwbound.io import TableModel
        >>> X = np.array([[0.0, 100.0], [1.0, 300.0], [0.2, 120.0], [0.9, 280.0]])
        >>> model = TableModel.fit(NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.6), X, ["no", "yes", "no", "yes"],
        ...                        features=["a", "b"], scale="minmax", lipschitz=0.5)
        >>> model.predict([[0.1, 110.0], [0.95, 290.0]]).tolist()
        ['no', 'yes']
        """
        return self.estimator.predict(self.transform(X))
