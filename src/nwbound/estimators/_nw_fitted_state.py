"""The fitted state of :class:`~nwbound.NadarayaWatsonClassifier` as plain arrays (model files, shards).

Private to :mod:`nwbound.estimators`: the classifier inherits these methods; :meth:`set_fitted_state`
ends in the classifier's ``_install``, the one place a fitted state is set up (also from ``fit``).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._state import state_classes, state_scalar, training_state


class _FittedState:
    """``get_fitted_state`` and ``set_fitted_state`` of :class:`~nwbound.NadarayaWatsonClassifier`."""


    def get_fitted_state(self) -> dict[str, Any]:
        """Everything ``fit`` computed (for model files and shards): arrays, scalars, the learned space if any.

        Returns
        -------
        dict
            ``classes_``, ``class_prior_``, ``X`` (training inputs, in the fit
            dtype; divided by ``feature_unit``, a power of two present only for float32 data far
            from 1, see :func:`~nwbound._numerics.feature_unit`), ``labels`` (class indices),
            ``weights`` (absent without
            sample weights), ``bandwidths_``, ``box_low``/``box_high`` (the
            training inputs' bounding box), ``n_features_in_`` and, when fitted
            on named features, ``feature_names_in_``. With a learned space
            (``metric="auto"`` or ``"standard"``) ``X`` and the box are in that space and
            ``metric_`` is the :class:`~nwbound.spaces.LearnedSpace` itself; after
            ``lipschitz="auto"``, ``lipschitz_``, ``lipschitz_report_`` and
            ``pilot_lipschitz``. With ``point_estimate="auto"`` and a score model,
            ``point_model_`` (the point model) and ``point_units`` (the columns' units it
            reads the features in). A cross-fitted model gives ``classes_``,
            ``class_prior_``, ``n_features_in_`` (``feature_names_in_``), the point model's
            entries and ``cross_fit_models_``: one such state per model. The estimator's parameters
            are not part of it (see ``get_params``).

        Raises
        ------
        ValueError
            A ``metric`` given as an estimator (PCA, LDA, …): an arbitrary object.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> clf = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.2).fit(X, y)
        >>> copy = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth=0.2).set_fitted_state(clf.get_fitted_state())
        >>> bool(np.array_equal(copy.predict_proba(X), clf.predict_proba(X)))
        True
        """
        check_is_fitted(self)
        if self._is_cross_fitted():
            return self._cross_state()
        state = {
            "classes_": self.classes_,
            "class_prior_": self.class_prior_,
            "X": self._train.X,
            "labels": self._train.labels,
            "bandwidths_": self.bandwidths_,
            "box_low": self._box[0],
            "box_high": self._box[1],
            "n_features_in_": int(self.n_features_in_),
        }
        if self._unit() != 1.0:
            state["feature_unit"] = self._unit()
        if self._train.weights is not None:
            state["weights"] = np.asarray(self._train.weights)
        if hasattr(self, "feature_names_in_"):
            state["feature_names_in_"] = self.feature_names_in_
        state.update(self._learned_state())
        state.update(self._point_state())
        return state

    def set_fitted_state(self, state: Mapping[str, Any], *, shard: bool = False) -> "_FittedState":
        """Restore a state from :meth:`get_fitted_state` into this (unfitted) estimator.

        Every array is checked as untrusted input — shapes, dtypes,
        finiteness, ranges and consistency — before it is used; the index of
        the localized classifier is rebuilt. The training inputs must lie in
        ``[box_low, box_high]`` (a wider box, e.g. the union of training
        shards, is allowed).

        Parameters
        ----------
        state : mapping
        shard : bool, default=False
            The state is one shard of a larger training set (``nwbound.dask``): its sample
            weights may then all be 0 (every κ is 0). A model file is never a shard.

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
        >>> from nwbound import NadarayaWatsonClassifier
        >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
        >>> state = NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale").fit(X, y).get_fitted_state()
        >>> state["class_prior_"] = np.array([5.0, -4.0])
        >>> NadarayaWatsonClassifier(metric=None, lipschitz=None, bandwidth="scale").set_fitted_state(state)
        Traceback (most recent call last):
        ...
        ValueError: Fitted state 'class_prior_' must be >= 0, holds -4.
        """
        self._fit_complete = False
        self._validate_params()
        dtype, _, auto = self._check_params()
        if "cross_fit_models_" in state:
            return self._restore_cross(state, dtype)
        classes, prior = state_classes(state)
        n_features = state_scalar(state, "n_features_in_", low=1)
        width = self._restore_learned(state, n_features)  # the learned space's, or n_features
        X, labels, weights, grid, (low, high), unit = training_state(
            state, dtype=dtype, width=width, n_classes=classes.shape[0], bandwidth=self.bandwidth, shard=shard)
        self._restore_inputs(state, classes, prior, n_features, dtype, unit)
        self._restore_point(state, n_features, [self.metric_])
        return self._install(X, labels, weights, grid, (low, high))
