"""Checks shared by every package: one clear message per mistake.

Parameter checks of the estimators, and the label, probability and interval checks of the scoring
functions (``nwbound.metrics``) and the plots, which read the same inputs."""

from __future__ import annotations

import contextlib
import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "numeric_features",
    "check_positive",
    "check_open_unit",
    "check_choice",
    "check_int_range",
    "check_dtype",
    "check_beta",
    "check_n_jobs",
    "check_class_count",
    "check_params_as_fitted",
    "FEW_CLASSES",
    "MIN_ROWS_PER_CLASS",
    "MAX_CLASS_TABLE",
    "as_1d",
    "check_same_length",
    "check_label_pair",
    "check_classes",
    "encode_labels",
    "check_proba",
    "IntervalArrays",
    "check_interval",
]

#: Up to this many classes any split of the rows is accepted: the cost is small and hand-made
#: examples (three rows, two classes) are common.
FEW_CLASSES = 20
#: Fewest training rows per class, on average, above :data:`FEW_CLASSES` classes. Fewer means
#: that most classes are seen once: the target names rows (an id column), it does not label
#: classes, and every class probability would rest on a single point.
MIN_ROWS_PER_CLASS = 2
#: Most entries of the per-class training table the estimators keep (one float per training
#: row and class, 8 bytes each in float64: 2 GiB), and of the rows × classes work per query block.
MAX_CLASS_TABLE = 2**28


def check_positive(value: object, name: str, *, allow_none: bool = False) -> float | None:
    """A finite real number > 0 (TypeError for a non-number, ValueError otherwise).

    Parameters
    ----------
    value : object
        The value to check.
    name : str
        Parameter name used in the error message.
    allow_none : bool, default=False
        Whether ``None`` passes (and is returned unchanged).

    Returns
    -------
    float or None
        ``float(value)``, or None when allowed and given.

    Raises
    ------
    TypeError
        ``value`` is not a real number (bools count as not a number).
    ValueError
        ``value`` is not finite or not > 0.

    Examples
    --------
    >>> check_positive(2, "bandwidth")
    2.0
    >>> check_positive(None, "bandwidth", allow_none=True) is None
    True
    >>> check_positive(0, "bandwidth")
    Traceback (most recent call last):
        ...
    ValueError: bandwidth must be a finite number > 0, got 0.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a finite number > 0, got {value!r} of type {type(value).__name__}.")
    if not math.isfinite(float(value)) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")
    return float(value)


def check_open_unit(value: object, name: str) -> float:
    """A real number strictly between 0 and 1.

    Parameters
    ----------
    value : object
        The value to check.
    name : str
        Parameter name used in the error message.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        ``value`` is not a real number in the open interval ``(0, 1)``.

    Examples
    --------
    >>> check_open_unit(0.05, "delta")
    0.05
    >>> check_open_unit(1, "delta")
    Traceback (most recent call last):
        ...
    ValueError: delta must be a number with 0 < delta < 1, got 1.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (0.0 < float(value) < 1.0):
        raise ValueError(f"{name} must be a number with 0 < {name} < 1, got {value!r}.")
    return float(value)


def check_choice(value: object, name: str, choices: tuple) -> object:
    """One of a fixed set of values (strings, or None where allowed).

    Parameters
    ----------
    value : object
        The value to check.
    name : str
        Parameter name used in the error message.
    choices : tuple
        The allowed values.

    Returns
    -------
    object
        ``value`` unchanged.

    Raises
    ------
    ValueError
        ``value`` is not one of ``choices``.

    Examples
    --------
    >>> check_choice("hoeffding", "bound", ("hoeffding", "paper"))
    'hoeffding'
    >>> check_choice("hoef", "bound", ("hoeffding", "paper"))
    Traceback (most recent call last):
        ...
    ValueError: bound must be one of 'hoeffding', 'paper', got 'hoef'.
    """
    if not any(value is c or (isinstance(value, str) and value == c) for c in choices):
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}, got {value!r}.")
    return value


def check_int_range(value: object, name: str, low: int, high: int | None = None, hint: str = "") -> int:
    """An integer in ``[low, high]``.

    Parameters
    ----------
    value : object
        The value to check.
    name : str
        Parameter name used in the error message.
    low : int
        Smallest allowed value.
    high : int, optional
        Largest allowed value (no upper limit when None).
    hint : str, default=""
        Appended to the ``ValueError`` message (how to fix it).

    Returns
    -------
    int

    Raises
    ------
    TypeError
        ``value`` is not an integer (bools count as not an integer).
    ValueError
        ``value`` lies outside ``[low, high]``.

    Examples
    --------
    >>> check_int_range(3, "n_bins", 1, 10)
    3
    >>> check_int_range(0, "n_bins", 1, hint="Use at least one bin.")
    Traceback (most recent call last):
        ...
    ValueError: n_bins must be >= 1, got 0. Use at least one bin.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}.")
    if value < low or (high is not None and value > high):
        upper = "" if high is None else f" and <= {high}"
        raise ValueError(f"{name} must be >= {low}{upper}, got {value}.{(' ' + hint) if hint else ''}")
    return int(value)


def check_class_count(n_classes: int, n_rows: int, *, name: str = "y") -> None:
    """Refuse a number of classes that is implausible for a classifier trained on ``n_rows`` rows.

    Two rules, each with a message that names ``name`` and the fix:

    * above :data:`FEW_CLASSES` classes, at least :data:`MIN_ROWS_PER_CLASS` rows per class on
      average (``n_rows >= 2 * n_classes``): otherwise most classes have a single row, as when
      an id column is used as the target;
    * at most :data:`MAX_CLASS_TABLE` entries in the ``n_rows × n_classes`` table the estimators
      keep (memory grows as rows × classes).

    Parameters
    ----------
    n_classes : int
        Distinct labels.
    n_rows : int
        Training rows.
    name : str, default="y"
        What holds the labels, for the message (the CLI passes its target column).

    Raises
    ------
    ValueError
        With the counts, the rule and the fix.

    Examples
    --------
    >>> check_class_count(2, 3)  # a hand-made example: accepted
    >>> check_class_count(1000, 1000, name="target column 'id'")
    Traceback (most recent call last):
        ...
    ValueError: target column 'id' has 1000 classes among 1000 rows (1 per class on average; a classifier needs at least 2 per class above 20 classes): it names rows (an id?) rather than classes. Use a column of class labels, or merge rare classes (e.g. into 'other') so that classes have at least 2 rows on average.
    """
    n_classes, n_rows = int(n_classes), int(n_rows)
    if n_classes > FEW_CLASSES and n_rows < MIN_ROWS_PER_CLASS * n_classes:
        raise ValueError(
            f"{name} has {n_classes} classes among {n_rows} rows ({n_rows / n_classes:.2g} per class on "
            f"average; a classifier needs at least {MIN_ROWS_PER_CLASS} per class above {FEW_CLASSES} classes): "
            "it names rows (an id?) rather than classes. Use a column of class labels, or merge rare classes "
            f"(e.g. into 'other') so that classes have at least {MIN_ROWS_PER_CLASS} rows on average."
        )
    if n_rows * n_classes > MAX_CLASS_TABLE:
        raise ValueError(
            f"{name} has {n_classes} classes for {n_rows} rows: the classifier keeps one number per row and "
            f"class ({n_rows * n_classes:,} entries, {n_rows * n_classes * 8 / 2**30:.3g} GiB in float64), above "
            f"the limit of {MAX_CLASS_TABLE:,} ({MAX_CLASS_TABLE * 8 / 2**30:.3g} GiB). Merge rare classes "
            "(e.g. into 'other') or train on fewer rows."
        )


def check_dtype(value: object) -> np.dtype:
    """float64 or float32.

    Parameters
    ----------
    value : object
        Anything :class:`numpy.dtype` accepts (``"float32"``, ``np.float64``, ...).

    Returns
    -------
    numpy.dtype

    Raises
    ------
    ValueError
        ``value`` is neither float64 nor float32.

    Examples
    --------
    >>> import numpy as np
    >>> check_dtype("float32") == np.float32
    True
    >>> check_dtype(int)
    Traceback (most recent call last):
        ...
    ValueError: dtype must be float64 or float32, got <class 'int'>.
    """
    try:
        dtype = np.dtype(value)
    except TypeError:
        dtype = None
    if dtype not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"dtype must be float64 or float32, got {value!r}.")
    return dtype


def check_beta(lipschitz: object, margin: object, *, required: bool) -> float | None:
    """``β = L`` or ``1/γ`` from exactly one of ``lipschitz`` and ``margin``.

    Parameters
    ----------
    lipschitz : object
        Lipschitz constant ``L`` of the class probabilities, or None.
    margin : object
        Margin ``γ`` separating the classes, or None.
    required : bool
        Whether one of the two must be given.

    Returns
    -------
    float or None
        ``β``; None when neither is given and ``required`` is False.

    Raises
    ------
    ValueError
        Both are given, neither is given while ``required``, or the one
        given is not a finite number > 0.

    Examples
    --------
    >>> check_beta(3.0, None, required=True)
    3.0
    >>> check_beta(None, 0.5, required=True)
    2.0
    >>> check_beta(None, None, required=False) is None
    True
    >>> check_beta(1.0, 0.5, required=True)
    Traceback (most recent call last):
        ...
    ValueError: Give either lipschitz (overlapping classes) or margin (separable classes), not both.
    """
    if lipschitz is not None and margin is not None:
        raise ValueError(
            "Give either lipschitz (overlapping classes) or margin (separable classes), not both."
        )
    if lipschitz is not None:
        return check_positive(lipschitz, "lipschitz")
    if margin is not None:
        return 1.0 / check_positive(margin, "margin")
    if required:
        raise ValueError(
            "Bounds need an assumption on the data: set lipschitz=L (the Lipschitz constant of the "
            "class probabilities, in the units of the features the classifier sees) or margin=γ "
            "(the distance separating different classes)."
        )
    return None


def check_n_jobs(value: object) -> int | None:
    """None, a positive int, or a negative int counted back from the cores (-1: all, -2: all but one).

    Parameters
    ----------
    value : object
        The ``n_jobs`` setting.

    Returns
    -------
    int or None
        ``value`` unchanged (as int).

    Raises
    ------
    ValueError
        ``value`` is 0 or not an integer.

    Examples
    --------
    >>> check_n_jobs(-1)
    -1
    >>> check_n_jobs(None) is None
    True
    >>> check_n_jobs(0)
    Traceback (most recent call last):
        ...
    ValueError: n_jobs must be None, a positive int, or a negative int (-1: all cores, -2: all but one), got 0.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value == 0:
        raise ValueError(
            f"n_jobs must be None, a positive int, or a negative int (-1: all cores, -2: all but one), got {value!r}."
        )
    return int(value)


def _same_setting(a: object, b: object) -> bool:
    """Whether a parameter still has the value it had at fit (arrays and lists by content)."""
    if a is b:
        return True
    try:
        if isinstance(a, (np.ndarray, list, tuple)) or isinstance(b, (np.ndarray, list, tuple)):
            return bool(np.array_equal(np.asarray(a), np.asarray(b)))
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def check_params_as_fitted(estimator: object, fitted: dict | None, *, live: tuple[str, ...] = ()) -> None:
    """Refuse to use a fitted state after ``set_params`` changed a parameter it depends on.

    Parameters
    ----------
    estimator : object
        The fitted estimator (its current parameters are its attributes).
    fitted : dict or None
        The parameters the fitted state depends on, as they were at fit (None or empty: nothing
        recorded, e.g. a pickle from before the record; nothing is checked).
    live : tuple of str, default=()
        The parameters that do take effect without a refit, named in the message.

    Raises
    ------
    ValueError
        Naming each changed parameter, its value now and at fit, and the fix (call fit again).

    Examples
    --------
    >>> class Rule:
    ...     alpha = 0.05
    >>> rule = Rule()
    >>> check_params_as_fitted(rule, {"alpha": 0.05})
    >>> rule.alpha = 0.01
    >>> check_params_as_fitted(rule, {"alpha": 0.05})
    Traceback (most recent call last):
        ...
    ValueError: alpha=0.01 was set after fit (fitted with alpha=0.05); the fitted state depends on this parameter: call fit again.
    """
    if not fitted:
        return
    changed = [name for name, value in fitted.items() if not _same_setting(getattr(estimator, name, None), value)]
    if changed:
        now = ", ".join(f"{name}={getattr(estimator, name, None)!r}" for name in changed)
        then = ", ".join(f"{name}={fitted[name]!r}" for name in changed)
        raise ValueError(
            f"{now} was set after fit (fitted with {then}); the fitted state depends on "
            f"{'this parameter' if len(changed) == 1 else 'these parameters'}: call fit again."
            + (f" Only {', '.join(live)} take effect without a refit." if live else "")
        )


def as_1d(y: ArrayLike, name: str) -> np.ndarray:
    """Return ``y`` as a non-empty 1-D array without NaN.

    Examples
    --------
    >>> from nwbound._validation import as_1d
    >>> as_1d([[1], [2]], "y_true").tolist()
    [1, 2]
    >>> as_1d([], "y_true")
    Traceback (most recent call last):
    ...
    ValueError: `y_true` is empty; at least one sample is needed.
    """
    if y is None:
        raise ValueError(f"`{name}` is required, got None.")
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be 1-D, got an array of shape {arr.shape}.")
    if arr.shape[0] == 0:
        raise ValueError(f"`{name}` is empty; at least one sample is needed.")
    if arr.dtype == object:
        # Object arrays may hide float NaN among labels (e.g. from pandas).
        if any(isinstance(v, float) and v != v for v in arr):
            raise ValueError(f"`{name}` contains NaN; drop or impute those samples first.")
    elif np.issubdtype(arr.dtype, np.number) or arr.dtype == bool:
        if np.issubdtype(arr.dtype, np.complexfloating):
            raise TypeError(f"`{name}` must be real, got dtype {arr.dtype}.")
        if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr)):
            raise ValueError(
                f"`{name}` contains NaN or infinite values; drop or impute those samples first."
            )
    return arr


def check_label_pair(
    y_true: ArrayLike, y_pred: ArrayLike, names: tuple[str, str] = ("y_true", "y_pred")
) -> tuple[np.ndarray, np.ndarray]:
    """Two 1-D label arrays of one length whose labels can be compared (not text vs numbers).

    Text labels compared with numeric ones are never equal: every prediction would count as
    wrong, without a word.

    Examples
    --------
    >>> from nwbound._validation import check_label_pair
    >>> [a.tolist() for a in check_label_pair(["a", "b"], ["a", "a"])]
    [['a', 'b'], ['a', 'a']]
    >>> check_label_pair(["a", "b"], [0, 1], names=("y_test", "the model's classes"))
    Traceback (most recent call last):
    ...
    ValueError: `y_test` (dtype <U1) and `the model's classes` (dtype int64) hold different label types; encode both the same way.
    """
    t = as_1d(y_true, names[0])
    p = as_1d(y_pred, names[1])
    check_same_length((names[0], t), (names[1], p))
    kinds = {t.dtype.kind, p.dtype.kind}
    if kinds & set("US") and kinds & set("biuf"):
        raise ValueError(
            f"`{names[0]}` (dtype {t.dtype}) and `{names[1]}` (dtype {p.dtype}) hold different "
            "label types; encode both the same way."
        )
    return t, p


def check_same_length(*pairs: tuple[str, np.ndarray]) -> int:
    """Check that all arrays have the same first dimension; return it.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound._validation import check_same_length
    >>> check_same_length(("y_true", np.zeros(3)), ("proba", np.zeros((3, 2))))
    3
    """
    n = pairs[0][1].shape[0]
    for name, arr in pairs[1:]:
        if arr.shape[0] != n:
            raise ValueError(
                f"`{pairs[0][0]}` has {n} samples but `{name}` has {arr.shape[0]}; "
                "they must describe the same samples."
            )
    return n


def _check_label_count(classes: np.ndarray, n_classes: int, name: str = "classes") -> None:
    """``classes`` names exactly ``n_classes`` columns (the one copy of this rule)."""
    if classes.shape[0] != n_classes:
        raise ValueError(
            f"`{name}` has {classes.shape[0]} labels but there are {n_classes} columns; pass one "
            "label per column, in column order (e.g. `estimator.classes_`)."
        )


def check_classes(classes: ArrayLike, name: str = "classes", n_classes: int | None = None) -> np.ndarray:
    """Return ``classes`` as a 1-D array of unique labels (``n_classes`` of them, if given).

    Examples
    --------
    >>> from nwbound._validation import check_classes
    >>> check_classes(["a", "b"]).tolist()
    ['a', 'b']
    >>> check_classes([0, 0])
    Traceback (most recent call last):
    ...
    ValueError: `classes` must not contain duplicates, got [0, 0].
    """
    arr = as_1d(classes, name)
    uniq = np.unique(arr)
    if uniq.shape[0] != arr.shape[0]:
        raise ValueError(f"`{name}` must not contain duplicates, got {arr.tolist()}.")
    if n_classes is not None:
        _check_label_count(arr, n_classes, name)
    return arr


def encode_labels(y: np.ndarray, classes: np.ndarray | None, name: str, n_classes: int | None = None) -> np.ndarray:
    """Map labels to column indices of ``classes``.

    With ``classes=None`` the labels must already be integer indices in
    ``[0, n_classes)``. With both ``classes`` and ``n_classes``, ``classes`` must name
    exactly ``n_classes`` columns (a label list of another length maps labels to columns
    that do not exist, or to the wrong ones).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound._validation import encode_labels
    >>> encode_labels(np.array(["b", "a", "b"]), np.array(["a", "b"]), "y_true").tolist()
    [1, 0, 1]
    >>> encode_labels(np.array([0, 2]), None, "y_true", n_classes=3).tolist()
    [0, 2]
    >>> encode_labels(np.array(["a"]), np.array(["a", "b", "c"]), "y_true", n_classes=2)
    Traceback (most recent call last):
    ...
    ValueError: `classes` has 3 labels but there are 2 columns; pass one label per column, in column order (e.g. `estimator.classes_`).
    """
    if classes is not None and n_classes is not None:
        _check_label_count(classes, n_classes)
    if classes is None:
        if not (np.issubdtype(y.dtype, np.integer) or _is_integral_float(y)):
            raise ValueError(
                f"`{name}` holds labels {np.unique(y)[:5].tolist()}... that are not "
                "integer column indices; pass `classes` (e.g. `estimator.classes_`) "
                "to map labels to columns."
            )
        idx = y.astype(np.intp)
        if n_classes is not None and (idx.min() < 0 or idx.max() >= n_classes):
            raise ValueError(
                f"`{name}` must hold column indices in [0, {n_classes}) when `classes` "
                f"is None, got values in [{idx.min()}, {idx.max()}]."
            )
        return idx
    sorter = np.argsort(classes, kind="stable")
    sorted_classes = classes[sorter]
    try:
        pos = np.searchsorted(sorted_classes, y)
    except TypeError as exc:  # e.g. str labels vs int classes
        raise ValueError(
            f"`{name}` labels (dtype {y.dtype}) cannot be compared with `classes` "
            f"(dtype {classes.dtype}); use the same label type."
        ) from exc
    pos = np.clip(pos, 0, len(classes) - 1)
    found = sorted_classes[pos] == y
    if not np.all(found):
        missing = np.unique(y[~np.asarray(found, dtype=bool)])
        raise ValueError(
            f"`{name}` contains labels not in `classes`: {missing[:10].tolist()} "
            f"(classes = {classes.tolist()})."
        )
    return sorter[pos]


def _is_integral_float(y: np.ndarray) -> bool:
    return bool(np.issubdtype(y.dtype, np.floating) and np.all(np.mod(y, 1) == 0))


def check_proba(proba: ArrayLike, name: str = "proba") -> np.ndarray:
    """Return ``proba`` as a finite ``(n, C)`` float array with values in [0, 1].

    Examples
    --------
    >>> from nwbound._validation import check_proba
    >>> check_proba([[0.25, 0.75]]).tolist()
    [[0.25, 0.75]]
    """
    if hasattr(proba, "proba") and not isinstance(proba, np.ndarray):
        proba = proba.proba  # a PredictionInterval
    arr = np.asarray(proba)
    if arr.ndim != 2:
        raise ValueError(f"`{name}` must be 2-D (n_samples, n_classes), got shape {arr.shape}.")
    if arr.shape[0] == 0:
        raise ValueError(f"`{name}` is empty; at least one sample is needed.")
    if arr.shape[1] == 0:
        raise ValueError(f"`{name}` has no class columns.")
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"`{name}` must be a real numeric array, got dtype {arr.dtype}.")
    arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"`{name}` contains NaN or infinite values.")
    tol = 1e-9
    if arr.min() < -tol or arr.max() > 1 + tol:
        raise ValueError(
            f"`{name}` must hold probabilities in [0, 1], got values in "
            f"[{arr.min():.4g}, {arr.max():.4g}]."
        )
    return arr


@dataclass(frozen=True)
class IntervalArrays:
    """The checked arrays of a :class:`~nwbound.PredictionInterval` (:func:`check_interval`), as float64."""

    proba: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    epsilon: np.ndarray
    vacuous: np.ndarray

    @property
    def n_classes(self) -> int:
        return self.proba.shape[1]


def check_interval(interval: Any, name: str = "interval") -> IntervalArrays:
    """Validate a :class:`~nwbound.PredictionInterval` (or a look-alike).

    Any object with ``proba``, ``lower``, ``upper``, ``epsilon`` (n, C) and
    ``vacuous`` (n,) attributes is accepted, so other models can be scored.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> from nwbound._validation import check_interval
    >>> iv = PredictionInterval.from_parts(proba=np.array([[0.7, 0.3]]), bias=np.zeros((1, 2)),
    ...     sampling=np.full((1, 2), 0.1), kappa=np.array([2.0]), n_eff=np.array([2.0]),
    ...     vacuous=np.array([False]), bandwidth=np.array([1.0]))
    >>> checked = check_interval(iv)
    >>> checked.n_classes, checked.lower.round(2).tolist()
    (2, [[0.6, 0.2]])
    """
    missing = [a for a in ("proba", "lower", "upper", "epsilon", "vacuous") if not hasattr(interval, a)]
    if missing:
        raise TypeError(
            f"`{name}` must be a PredictionInterval (attributes proba, lower, upper, "
            f"epsilon, vacuous); got {type(interval).__name__} without {missing}."
        )
    proba = check_proba(interval.proba, f"{name}.proba")
    out = {}
    for attr in ("lower", "upper", "epsilon"):
        arr = np.asarray(getattr(interval, attr))
        if arr.shape != proba.shape:
            raise ValueError(
                f"`{name}.{attr}` has shape {arr.shape} but `{name}.proba` has {proba.shape}."
            )
        arr = arr.astype(np.float64, copy=False)
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"`{name}.{attr}` contains NaN or infinite values.")
        out[attr] = arr
    if np.any(out["epsilon"] < 0):
        raise ValueError(f"`{name}.epsilon` must be non-negative.")
    crossed = out["lower"] > out["upper"] + 1e-9
    if np.any(crossed):
        # An empty interval holds no probability, and the certificate (top lower > other uppers)
        # would read it as proof.
        i, j = (int(v[0]) for v in np.nonzero(crossed))
        raise ValueError(
            f"`{name}.lower` exceeds `{name}.upper` in {int(crossed.sum())} entries (first: row {i}, column {j}: "
            f"{out['lower'][i, j]:.4g} > {out['upper'][i, j]:.4g}); each interval must be [lower, upper] with "
            "lower <= upper."
        )
    vac = np.asarray(interval.vacuous)
    if vac.shape != (proba.shape[0],):
        raise ValueError(
            f"`{name}.vacuous` must have shape ({proba.shape[0]},), got {vac.shape}."
        )
    return IntervalArrays(proba=proba, vacuous=vac.astype(bool), **out)


def check_label_free_weights(weights: np.ndarray, labels: np.ndarray, classes: np.ndarray) -> None:
    """Refuse sample weights that are a function of the label (for a fit with a bound).

    The proofs condition on the inputs and need the weights to depend on them only: with
    ``w = f(y)`` the weighted estimate converges to ``w_c p_c / Σ_k w_k p_k``, not to ``p_c``, and
    every interval is about that other quantity (measured: balanced weights missed p on 49–80 %
    of queries). Detected when the weights are constant within each class and not all equal.

    Parameters
    ----------
    weights : ndarray of shape (n,)
    labels : ndarray of shape (n,)
        Class indices into ``classes``.
    classes : ndarray

    Raises
    ------
    ValueError
        Naming ``sample_weight``, the weights per class, and the valid routes.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound._validation import check_label_free_weights
    >>> check_label_free_weights(np.array([1.0, 0.5, 0.7]), np.array([0, 0, 1]), np.array(["a", "b"]))
    >>> check_label_free_weights(np.array([1.0, 1.0, 0.5]), np.array([0, 0, 1]), np.array(["a", "b"]))
    Traceback (most recent call last):
    ...
    ValueError: sample_weight is constant within each class and differs between classes (relative weights 'a': 1, 'b': 0.5), e.g. compute_sample_weight('balanced', y). The bounds need weights that depend on the inputs only: with class weights the estimate converges to w_c·p_c / Σ_k w_k·p_k, not to p_c, and every interval would be about that other quantity. Fit without sample_weight and apply class priors or costs at decision time (nwbound.metrics.bayes_decision), or set lipschitz=None for predictions without bounds.
    """
    per_class = [weights[labels == c] for c in range(classes.shape[0])]
    if not all(w.size and np.all(w == w[0]) for w in per_class) or len({float(w[0]) for w in per_class}) < 2:
        return
    values = ", ".join(f"{classes.tolist()[c]!r}: {float(w[0]):.3g}" for c, w in enumerate(per_class))
    raise ValueError(
        f"sample_weight is constant within each class and differs between classes (relative weights {values}), "
        "e.g. compute_sample_weight('balanced', y). The bounds need weights that depend on the inputs only: "
        "with class weights the estimate converges to w_c·p_c / Σ_k w_k·p_k, not to p_c, and every interval "
        "would be about that other quantity. Fit without sample_weight and apply class priors or costs at "
        "decision time (nwbound.metrics.bayes_decision), or set lipschitz=None for predictions without bounds."
    )



@contextlib.contextmanager
def numeric_features(X: Any, name: str = "X"):
    """Turn scikit-learn's "could not convert string to float" about ``X`` into a message that names
    the column holding text and the fix (features must be numbers: encode categories first).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound._validation import numeric_features
    >>> with numeric_features([["a"]]):
    ...     np.asarray([["a"]], dtype=float)
    Traceback (most recent call last):
    ...
    ValueError: X must hold numbers only, but column 0 holds text ('a'). Encode categorical features as numbers first (e.g. sklearn.preprocessing.OneHotEncoder or OrdinalEncoder, in a Pipeline before the classifier), or drop them.
    """
    try:
        yield
    except ValueError as exc:
        if "could not convert" not in str(exc):
            raise
        column, value = _first_text_column(X)
        where = f"column {column!r}" if column is not None else "a column"
        raise ValueError(
            f"{name} must hold numbers only, but {where} holds text{f' ({value!r})' if value is not None else ''}. "
            "Encode categorical features as numbers first (e.g. sklearn.preprocessing.OneHotEncoder or "
            "OrdinalEncoder, in a Pipeline before the classifier), or drop them."
        ) from None


#: The rows :func:`numeric_features` reads for the column it names (the error path only).
_TEXT_SEARCH_ROWS = 10_000


def _first_text_column(X: Any) -> tuple[Any, Any]:
    """``(name or index, first value)`` of the first column of ``X`` holding, in its first
    ``_TEXT_SEARCH_ROWS`` rows, a value that is not a number; ``(None, None)`` where none is found."""
    columns = getattr(X, "columns", None)
    try:
        rows = np.asarray(X[:_TEXT_SEARCH_ROWS] if columns is None else X.iloc[:_TEXT_SEARCH_ROWS], dtype=object)
    except Exception:  # noqa: BLE001 - only the message depends on it
        return None, None
    if rows.ndim != 2:
        return None, None
    for j in range(rows.shape[1]):
        for value in rows[:, j]:
            if isinstance(value, (str, bytes)):
                try:
                    float(value)
                except ValueError:
                    return (list(columns)[j] if columns is not None else j), value
    return None, None
