"""Class labels of the columns of an interval, shared by the displays."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_classes, check_interval


def _labels_for(classes: ArrayLike | None, n_classes: int) -> np.ndarray:
    """Column labels: ``classes`` or 0 … C−1."""
    if classes is None:
        return np.arange(n_classes)
    return check_classes(classes, n_classes=n_classes)


def _argmax_labels(interval: Any, classes: ArrayLike | None) -> np.ndarray:
    iv = check_interval(interval)
    return _labels_for(classes, iv.n_classes)[np.argmax(iv.proba, axis=1)]
