"""Point-prediction metrics: accuracy, precision and recall."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_classes, check_label_pair, encode_labels

__all__ = ["accuracy", "weighted_precision_recall", "per_class_precision_recall"]


def _check_label_pair(y_true: ArrayLike, y_pred: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    return check_label_pair(y_true, y_pred)


def _counts(
    y_true: ArrayLike, y_pred: ArrayLike, classes: ArrayLike | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return ``classes, tp, predicted, support`` (each of shape (C,))."""
    t, p = _check_label_pair(y_true, y_pred)
    if classes is None:
        cls = np.unique(np.concatenate([t, p]))
    else:
        cls = check_classes(classes)
    ti = encode_labels(t, cls, "y_true")
    pi = encode_labels(p, cls, "y_pred")
    c = len(cls)
    tp = np.bincount(ti[ti == pi], minlength=c)
    predicted = np.bincount(pi, minlength=c)
    support = np.bincount(ti, minlength=c)
    return cls, tp, predicted, support


def _safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    # zero_division=0, as sklearn's default used in the paper's table.
    return np.divide(num, den, out=np.zeros(num.shape, dtype=np.float64), where=den > 0)


def accuracy(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Share of samples whose predicted label equals the true label.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)
        True and predicted class labels (any hashable, comparable type).

    Returns
    -------
    float
        Accuracy in [0, 1].

    Raises
    ------
    ValueError
        If the inputs are empty, of different lengths, contain NaN or mix
        string and numeric labels.

    Examples
    --------
    >>> from nwbound.metrics import accuracy
    >>> round(accuracy(["a", "b", "b"], ["a", "a", "b"]), 3)
    0.667
    """
    t, p = _check_label_pair(y_true, y_pred)
    return float(np.mean(t == p))


def weighted_precision_recall(
    y_true: ArrayLike, y_pred: ArrayLike, *, classes: ArrayLike | None = None
) -> tuple[float, float]:
    """Support-weighted precision and recall (sklearn ``average="weighted"``).

    Per-class precision ``TP_c / #{pred = c}`` and recall ``TP_c / #{true = c}``
    are averaged with weights equal to the class support; a class that is
    never predicted contributes precision 0 (``zero_division=0``), as in the
    paper's Table 2. Weighted recall equals accuracy.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)
        True and predicted class labels.
    classes : array-like, optional
        The labels to report on; default: all labels seen in either input.
        Every label in the inputs must be in ``classes``.

    Returns
    -------
    precision, recall : float

    Examples
    --------
    >>> from nwbound.metrics import weighted_precision_recall
    >>> precision, recall = weighted_precision_recall([0, 0, 1, 2], [0, 1, 1, 1])
    >>> round(precision, 3), round(recall, 3)  # class 2 is never predicted: precision 0
    (0.583, 0.5)
    """
    _, tp, predicted, support = _counts(y_true, y_pred, classes)
    w = support / support.sum()
    precision = float(np.sum(w * _safe_ratio(tp, predicted)))
    recall = float(np.sum(w * _safe_ratio(tp, support)))
    return precision, recall


def per_class_precision_recall(
    y_true: ArrayLike, y_pred: ArrayLike, *, classes: ArrayLike | None = None
) -> dict[str, np.ndarray]:
    """Precision, recall, F1 and support for every class.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)
        True and predicted class labels.
    classes : array-like, optional
        Labels (and their order) to report; default: sorted labels seen in
        either input.

    Returns
    -------
    dict of str to ndarray of shape (n_classes,)
        ``"classes"``, ``"precision"``, ``"recall"``, ``"f1"``, ``"support"``
        (true count) and ``"predicted"`` (predicted count). Undefined ratios
        are 0 (``zero_division=0``). ``pandas.DataFrame(result)`` gives a table.

    Examples
    --------
    >>> from nwbound.metrics import per_class_precision_recall
    >>> r = per_class_precision_recall([0, 0, 1, 2], [0, 1, 1, 1])
    >>> r["classes"].tolist(), r["precision"].round(2).tolist(), r["recall"].tolist()
    ([0, 1, 2], [1.0, 0.33, 0.0], [0.5, 1.0, 0.0])
    >>> r["support"].tolist(), r["predicted"].tolist()
    ([2, 1, 1], [1, 3, 0])
    """
    cls, tp, predicted, support = _counts(y_true, y_pred, classes)
    precision = _safe_ratio(tp, predicted)
    recall = _safe_ratio(tp, support)
    f1 = _safe_ratio(2 * precision * recall, precision + recall)
    return {
        "classes": cls,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "support": support,
        "predicted": predicted,
    }
