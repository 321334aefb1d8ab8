"""``metric="auto"``'s score models as plain arrays: their ``predict_proba`` without scikit-learn.

A model file stores, next to the learned space's skops blob, each score model as the arrays
:class:`FrozenScoreMap` evaluates with NumPy alone: ``nwbound predict`` then maps queries without
importing scikit-learn (about a second of its start-up). The arithmetic is scikit-learn's own, in
the same order (a gradient-boosting model's trees summed iteration by iteration onto its baseline,
a logistic regression's ``(x − mean)/scale``, then ``X @ coef.T + intercept``), so the
probabilities agree with ``predict_proba`` to a few units in the last place.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

__all__ = ["FrozenScoreMap"]

# The arrays of each kind, with their dtype kind and number of dimensions.
_LAYOUT = {
    "gradient_boosting": {
        "feature": ("i", 1), "threshold": ("f", 1), "missing_left": ("b", 1), "left": ("i", 1),
        "right": ("i", 1), "leaf": ("b", 1), "value": ("f", 1), "roots": ("i", 2), "baseline": ("f", 1),
    },
    "logistic": {"mean": ("f", 1), "scale": ("f", 1), "coef": ("f", 2), "intercept": ("f", 1)},
}
KINDS = tuple(_LAYOUT)


# The C library's exp, value by value: scikit-learn's logistic link (scipy's expit) calls it, and
# NumPy's vectorised exp differs from it in the last place on about 2 % of values, which the
# bounds' search can widen to ~1e-9 in an interval. e^709.78… is the largest finite double.
_LIBM_EXP = np.frompyfunc(lambda v: math.inf if v >= 709.782712893384 else math.exp(v), 1, 1)


def _expit(x: np.ndarray) -> np.ndarray:
    """The logistic function as scipy's ``expit`` computes it: ``1 / (1 + e^{−x})``, bit for bit."""
    return 1.0 / (1.0 + _LIBM_EXP(-x).astype(np.float64))


def _softmax(raw: np.ndarray) -> np.ndarray:
    """scikit-learn's ``softmax``: shift by the row maximum, exponentiate, normalise (same order)."""
    out = raw - raw.max(axis=1, keepdims=True)
    np.exp(out, out=out)
    out /= out.sum(axis=1, keepdims=True)
    return out


def _binary(p1: np.ndarray) -> np.ndarray:
    """``[1 − p, p]`` columns of a two-class model's probability of its second class."""
    return np.stack([1.0 - p1, p1], axis=1)


class FrozenScoreMap:
    """A fitted score model of ``metric="auto"`` as plain arrays, with its ``predict_proba``.

    Two kinds, the candidates of :func:`~nwbound.spaces.auto_candidates`:

    * ``"gradient_boosting"``: a ``HistGradientBoostingClassifier`` on numeric features. Its
      trees' nodes laid end to end (``feature``, ``threshold``, ``missing_left``, ``left``,
      ``right`` as indices into those arrays, ``leaf``, ``value``), each tree's root in
      ``roots`` (iterations × trees per iteration) and the ``baseline`` raw prediction. A row goes
      left where its feature is ``<= threshold``, and where it is NaN as ``missing_left`` says;
      the raw prediction is the baseline plus the leaves reached, iteration by iteration; the
      link is the logistic function for one tree per iteration (two classes), else the softmax.
    * ``"logistic"``: ``make_pipeline(StandardScaler(), LogisticRegression())``: ``mean``,
      ``scale``, ``coef`` (one row for two classes) and ``intercept``; the same links.

    Built from a fitted model with :meth:`from_estimator` (the only step that reads
    scikit-learn objects), stored with :meth:`to_arrays` and read back with :meth:`from_arrays`,
    which checks every array as untrusted input; evaluation is vectorised over rows (loops run
    over trees and tree depth only).

    Parameters
    ----------
    kind : {"gradient_boosting", "logistic"}
    arrays : mapping of str to ndarray
        The kind's arrays (see above); checked as :meth:`from_arrays` does.
    n_features : int
        Features the model reads.
    prefix : str, default=""
        Put before each array's name in error messages (the member a model file stores it in).

    Attributes
    ----------
    n_classes_ : int
        Columns of :meth:`predict_proba`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import HistGradientBoostingClassifier
    >>> from nwbound.spaces import FrozenScoreMap
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3)); y = (X[:, 0] + X[:, 1] > 0).astype(int)
    >>> model = HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(X, y)
    >>> frozen = FrozenScoreMap.from_estimator(model)
    >>> bool(np.allclose(frozen.predict_proba(X), model.predict_proba(X), rtol=0, atol=1e-12))
    True
    >>> again = FrozenScoreMap.from_arrays(frozen.kind, frozen.to_arrays(), n_features=3)
    >>> bool(np.array_equal(again.predict_proba(X), frozen.predict_proba(X)))
    True
    """

    def __init__(self, kind: str, arrays: Mapping[str, np.ndarray], n_features: int, *, prefix: str = "") -> None:
        checked = self._checked(kind, arrays, n_features, prefix)
        self.kind, self.n_features_in_ = kind, int(n_features)
        self._arrays = checked
        if kind == "gradient_boosting":
            self.n_classes_ = 2 if checked["roots"].shape[1] == 1 else int(checked["roots"].shape[1])
            # the longest root-to-leaf walk is bounded by the largest tree (children come after parents)
            starts = checked["roots"].ravel()
            self._max_steps = int(np.diff(np.append(starts, checked["leaf"].shape[0])).max())
        else:
            self.n_classes_ = 2 if checked["coef"].shape[0] == 1 else int(checked["coef"].shape[0])

    # -- building ------------------------------------------------------------------------------
    @classmethod
    def from_estimator(cls, model: Any) -> "FrozenScoreMap":
        """The arrays of a fitted score model of ``metric="auto"``.

        Parameters
        ----------
        model : HistGradientBoostingClassifier or Pipeline(StandardScaler, LogisticRegression)
            Fitted, on numeric features (no categorical split).

        Returns
        -------
        FrozenScoreMap

        Raises
        ------
        TypeError
            Any other model, naming what is supported.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn.linear_model import LogisticRegression
        >>> from sklearn.pipeline import make_pipeline
        >>> from sklearn.preprocessing import StandardScaler
        >>> from nwbound.spaces import FrozenScoreMap
        >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = [0, 0, 1, 1]
        >>> model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
        >>> FrozenScoreMap.from_estimator(model).kind
        'logistic'
        """
        name = type(model).__name__
        steps = [type(step).__name__ for _, step in getattr(model, "steps", ())]
        if name == "Pipeline" and steps == ["StandardScaler", "LogisticRegression"]:
            scaler, logistic = model.steps[0][1], model.steps[1][1]
            if not (scaler.with_mean and scaler.with_std) or scaler.mean_ is None or scaler.scale_ is None:
                raise TypeError("FrozenScoreMap needs a StandardScaler with with_mean=True and with_std=True.")
            arrays = {"mean": scaler.mean_, "scale": scaler.scale_, "coef": logistic.coef_,
                      "intercept": logistic.intercept_}
            return cls("logistic", {k: np.asarray(v, dtype=np.float64) for k, v in arrays.items()},
                       int(scaler.n_features_in_))
        if name == "HistGradientBoostingClassifier":
            return cls("gradient_boosting", _tree_arrays(model), int(model.n_features_in_))
        raise TypeError(
            f"FrozenScoreMap holds metric='auto''s score models only: a HistGradientBoostingClassifier or "
            f"make_pipeline(StandardScaler(), LogisticRegression()); got {name}"
            + (f" of {steps}" if steps else "") + "."
        )

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays that :meth:`from_arrays` reads back (plain numeric and boolean arrays).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.spaces import FrozenScoreMap
        >>> arrays = {"mean": np.zeros(1), "scale": np.ones(1), "coef": np.ones((1, 1)), "intercept": np.zeros(1)}
        >>> sorted(FrozenScoreMap("logistic", arrays, n_features=1).to_arrays())
        ['coef', 'intercept', 'mean', 'scale']
        """
        return dict(self._arrays)

    @classmethod
    def from_arrays(cls, kind: str, arrays: Mapping[str, np.ndarray], n_features: int, *,
                    prefix: str = "") -> "FrozenScoreMap":
        """A map from stored arrays, each checked as untrusted input.

        Parameters
        ----------
        kind : {"gradient_boosting", "logistic"}
        arrays : mapping of str to ndarray
        n_features : int
        prefix : str, default=""
            Put before each array's name in error messages.

        Returns
        -------
        FrozenScoreMap

        Raises
        ------
        ValueError
            An unknown kind, a missing or extra array, a wrong dtype or shape, a non-finite value,
            or a tree whose nodes point outside it, backwards, or at a feature the input lacks;
            the message names the array.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.spaces import FrozenScoreMap
        >>> arrays = {"mean": np.zeros(2), "scale": np.ones(2), "coef": np.ones((1, 2)), "intercept": np.zeros(1)}
        >>> FrozenScoreMap.from_arrays("logistic", arrays, n_features=3)
        Traceback (most recent call last):
        ...
        ValueError: score map array 'mean' has shape (2,); it must be (3,).
        """
        return cls(kind, arrays, n_features, prefix=prefix)

    @staticmethod
    def _checked(kind: str, arrays: Mapping[str, np.ndarray], n_features: Any, prefix: str) -> dict[str, np.ndarray]:
        if kind not in _LAYOUT:
            raise ValueError(f"score map kind {kind!r} is not one of {list(_LAYOUT)}.")
        if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)) or n_features < 1:
            raise ValueError(f"score map n_features must be an int >= 1, got {n_features!r}.")
        layout = _LAYOUT[kind]
        if set(arrays) != set(layout):
            raise ValueError(f"score map of kind {kind!r} needs the arrays {sorted(prefix + k for k in layout)}, got "
                             f"{sorted(prefix + k for k in arrays)}.")
        out = {}
        for name, (dkind, ndim) in layout.items():
            a = np.asarray(arrays[name])
            if a.dtype.kind not in (dkind + ("u" if dkind == "i" else "")) or a.ndim != ndim:
                raise ValueError(f"score map array {prefix + name!r} must be a {ndim}-D array of kind {dkind!r}, "
                                 f"got {a.dtype} of shape {a.shape}.")
            if dkind == "f" and name != "threshold" and not np.all(np.isfinite(a)):
                raise ValueError(f"score map array {prefix + name!r} holds NaN or infinite values.")
            out[name] = np.ascontiguousarray(a, dtype={"i": np.int64, "f": np.float64, "b": np.bool_}[dkind])
        check = _check_trees if kind == "gradient_boosting" else _check_logistic
        check(out, int(n_features), prefix)
        return out

    # -- evaluation ----------------------------------------------------------------------------
    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of rows ``X`` (float64, one column per class), as the model's own.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric; NaN (gradient boosting) follows each split's side for missing values.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.spaces import FrozenScoreMap
        >>> arrays = {"mean": np.zeros(1), "scale": np.ones(1), "coef": np.ones((1, 1)), "intercept": np.zeros(1)}
        >>> FrozenScoreMap("logistic", arrays, n_features=1).predict_proba([[0.0]])
        array([[0.5, 0.5]])
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"FrozenScoreMap expects {self.n_features_in_} features, got shape {X.shape}.")
        raw = self._raw_trees(X) if self.kind == "gradient_boosting" else self._raw_logistic(X)
        return _binary(_expit(raw[:, 0])) if raw.shape[1] == 1 else _softmax(raw)

    def _raw_logistic(self, X: np.ndarray) -> np.ndarray:
        a = self._arrays
        Z = X - a["mean"]
        Z /= a["scale"]
        return Z @ a["coef"].T + a["intercept"]

    def _raw_trees(self, X: np.ndarray) -> np.ndarray:
        a = self._arrays
        roots = a["roots"]  # (iterations, trees per iteration)
        n = X.shape[0]
        # scikit-learn: zeros, += baseline, then += each iteration's leaves (the same additions, in order);
        # one iteration's trees at a time keeps memory at rows × trees per iteration
        raw = np.zeros((n, roots.shape[1]))
        raw += a["baseline"]
        for tree_roots in roots:
            node = np.broadcast_to(tree_roots, (n, roots.shape[1])).copy()  # each row's node in each tree
            for _ in range(self._max_steps):
                inner = ~a["leaf"][node]
                if not inner.any():
                    break
                at = node[inner]
                x = X[np.nonzero(inner)[0], a["feature"][at]]
                left = np.where(np.isnan(x), a["missing_left"][at], x <= a["threshold"][at])
                node[inner] = np.where(left, a["left"][at], a["right"][at])
            raw += a["value"][node]
        return raw


def _tree_arrays(model: Any) -> dict[str, np.ndarray]:
    """A fitted ``HistGradientBoostingClassifier``'s nodes laid end to end (child indices shifted)."""
    fields = {"feature": "feature_idx", "threshold": "num_threshold", "missing_left": "missing_go_to_left",
              "leaf": "is_leaf", "value": "value"}
    parts: dict[str, list] = {k: [] for k in (*fields, "left", "right")}
    roots, start = [], 0
    for iteration in model._predictors:
        row = []
        for tree in iteration:
            nodes = tree.nodes
            if np.any(nodes["is_categorical"]):
                raise TypeError("FrozenScoreMap does not hold gradient-boosting models with categorical splits.")
            for key, field in fields.items():
                parts[key].append(nodes[field])
            for key in ("left", "right"):
                parts[key].append(nodes[key].astype(np.int64) + start)
            row.append(start)
            start += nodes.shape[0]
        roots.append(row)
    arrays = {key: np.concatenate(values) for key, values in parts.items()}
    arrays = {"feature": arrays["feature"].astype(np.int64), "threshold": arrays["threshold"].astype(np.float64),
              "missing_left": arrays["missing_left"].astype(bool), "left": arrays["left"],
              "right": arrays["right"], "leaf": arrays["leaf"].astype(bool),
              "value": arrays["value"].astype(np.float64)}
    arrays["roots"] = np.asarray(roots, dtype=np.int64).reshape(len(roots), model.n_trees_per_iteration_)
    arrays["baseline"] = np.asarray(model._baseline_prediction, dtype=np.float64).reshape(-1)
    return arrays


def _tree_ends(a: Mapping[str, np.ndarray]) -> np.ndarray:
    """Where each tree's nodes end (trees are stored in root order, end to end)."""
    starts = a["roots"].ravel()
    return np.append(starts[1:], a["leaf"].shape[0])


def _check_trees(a: dict[str, np.ndarray], n_features: int, prefix: str) -> None:
    """Trees that stay inside themselves: the walk of :meth:`FrozenScoreMap._raw_trees` ends in a leaf
    of the same tree, and every split reads a feature of the input."""
    n = a["leaf"].shape[0]
    for name in ("feature", "threshold", "missing_left", "left", "right", "value"):
        if a[name].shape != (n,):
            raise ValueError(f"score map array {prefix + name!r} has shape {a[name].shape}; it must be ({n},), one per node.")
    roots = a["roots"]
    if roots.shape[0] < 1 or roots.shape[1] not in (1,) and roots.shape[1] < 3:
        raise ValueError(f"score map array {prefix + 'roots'!r} has shape {roots.shape}; it needs >= 1 iteration and 1 or "
                         ">= 3 trees per iteration.")
    if a["baseline"].shape != (roots.shape[1],):
        raise ValueError(f"score map array {prefix + 'baseline'!r} has shape {a['baseline'].shape}; it must be ({roots.shape[1]},).")
    starts = roots.ravel()
    if starts[0] != 0 or np.any(np.diff(starts) < 1) or starts[-1] >= n:
        raise ValueError(f"score map array {prefix + 'roots'!r} must list the trees' first nodes in increasing order from 0.")
    ends = np.repeat(_tree_ends(a), np.diff(np.append(starts, n)))  # each node's tree end
    index = np.arange(n)
    split = ~a["leaf"]
    for side in ("left", "right"):
        child = a[side][split]
        if np.any((child <= index[split]) | (child >= ends[split])):
            raise ValueError(f"score map array {prefix + side!r} points outside its tree or backwards.")
    feature = a["feature"][split]
    if np.any((feature < 0) | (feature >= n_features)):
        raise ValueError(f"score map array {prefix + 'feature'!r} reads a feature outside [0, {n_features}).")
    if np.any(np.isnan(a["threshold"][split])):
        raise ValueError(f"score map array {prefix + 'threshold'!r} holds NaN.")


def _check_logistic(a: dict[str, np.ndarray], n_features: int, prefix: str) -> None:
    for name in ("mean", "scale"):
        if a[name].shape != (n_features,):
            raise ValueError(f"score map array {prefix + name!r} has shape {a[name].shape}; it must be ({n_features},).")
    if not np.all(a["scale"] > 0):
        raise ValueError(f"score map array {prefix + 'scale'!r} must be > 0.")
    rows = a["coef"].shape[0]
    if a["coef"].shape[1] != n_features or rows not in (1,) and rows < 3:
        raise ValueError(f"score map array {prefix + 'coef'!r} has shape {a['coef'].shape}; it must be (1 or >= 3, {n_features}).")
    if a["intercept"].shape != (rows,):
        raise ValueError(f"score map array {prefix + 'intercept'!r} has shape {a['intercept'].shape}; it must be ({rows},).")
