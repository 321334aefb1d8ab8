"""Each class's rows certified as another class, against what the bound allows (issue 32, finding 9a).

A certificate is a statement about one query: ``P(y ≠ ŷ | x) ≤ error_upper``. The errors among the
certified stay below their summed ceilings on average over all rows, and a rare class can hide in
that sum: its few rows certified as another class weigh nothing against the ceilings of the
thousands of others. A check of that class must not select rows by their label (the ceilings bound
``P(y ≠ ŷ | x)``, not ``P(ŷ ≠ y | y = c)``): it takes the rows the model **certified as another
class** (chosen by the inputs and the training data only) and counts how many are labelled ``c``.
Each such row is labelled ``c`` with probability ``p_c(x) ≤ upper_c(x)`` wherever its interval holds;
given the training data the labels are independent, so the count is at most a Poisson-binomial of
the ``upper_c`` (:func:`~nwbound.lipschitz_check.poisson_binomial_sf`) on the event that those
intervals hold. A small tail probability is evidence against the assumption (L too small there,
or rows that are not independent draws), not a proof.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ._intervals import _not_certified, _true_columns

__all__ = ["ClassCertificateTable", "class_certificates"]


@dataclass(frozen=True)
class ClassCertificateTable:
    """Per true class: its rows, those certified as another class, and the bound's allowance.

    Attributes
    ----------
    classes : ndarray of shape (n_classes,)
    support : ndarray of int
        Rows labelled ``c``.
    certified_other : ndarray of int
        Rows labelled ``c`` and certified as another class.
    rows_certified_other : ndarray of int
        Rows certified as a class other than ``c`` (whatever their label).
    allowance : ndarray of float
        ``Σ upper_c`` over those rows: under the assumption, the expected number of them labelled
        ``c`` is at most this.
    p_value : ndarray of float
        ``P(Σ Bernoulli(upper_c) ≥ certified_other)`` over those rows: the chance of so many, or
        more, where every interval holds.
    """

    classes: np.ndarray
    support: np.ndarray
    certified_other: np.ndarray
    rows_certified_other: np.ndarray
    allowance: np.ndarray
    p_value: np.ndarray

    def flagged(self, level: float) -> np.ndarray:
        """Column indices of the classes whose ``p_value`` is at most ``level`` divided by the number of
        classes (one test per class, Bonferroni).

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.metrics import ClassCertificateTable
        >>> t = ClassCertificateTable(np.array(["a", "b"]), np.array([90, 10]), np.array([0, 7]),
        ...     np.array([10, 90]), np.array([1.0, 0.9]), np.array([1.0, 1e-6]))
        >>> t.flagged(0.05).tolist()
        [1]
        """
        return np.flatnonzero(self.p_value <= float(level) / max(1, self.classes.shape[0]))

    def rows(self) -> list[dict[str, Any]]:
        """One dict per class, for a table.

        Examples
        --------
        >>> import numpy as np
        >>> from nwbound.metrics import ClassCertificateTable
        >>> t = ClassCertificateTable(np.array(["a"]), np.array([3]), np.array([1]), np.array([5]),
        ...     np.array([0.25]), np.array([0.2]))
        >>> t.rows()[0]["certified_as_another"]
        1
        """
        return [
            {"class": str(c), "rows": int(n), "certified_as_another": int(k), "rows_certified_as_another": int(m),
             "allowed_labelled_c": round(float(a), 2), "p_value": float(f"{p:.3g}")}
            for c, n, k, m, a, p in zip(self.classes, self.support, self.certified_other,
                                        self.rows_certified_other, self.allowance, self.p_value)
        ]


def class_certificates(y_true: ArrayLike, interval: Any, classes: ArrayLike | None = None) -> ClassCertificateTable:
    """Each class's rows certified as another class, with the number the bound allows and a tail probability.

    See the module notes: the rows certified as a class other than ``c`` are chosen without their
    labels; under the assumption each is labelled ``c`` with probability at most ``upper_c``, so
    their count of ``c`` labels is tested against ``Σ upper_c`` (a Poisson-binomial tail). This
    polices a rare class that the summed check (errors among the certified against their summed
    ceilings) cannot see.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels (entries of ``classes``, or column indices).
    interval : PredictionInterval
        Probabilities and bounds, columns in ``classes`` order.
    classes : array-like of shape (n_classes,), optional
        Label of each column.

    Returns
    -------
    ClassCertificateTable

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import PredictionInterval
    >>> from nwbound.metrics import class_certificates
    >>> iv = PredictionInterval.from_parts(  # 20 rows certified as "a", upper_b = 0.02 on each
    ...     proba=np.tile([0.97, 0.01], (20, 1)), bias=np.zeros((20, 2)), sampling=np.full((20, 2), 0.01),
    ...     kappa=np.ones(20), n_eff=np.ones(20), vacuous=np.zeros(20, dtype=bool), bandwidth=np.ones(20))
    >>> y = np.array(["a"] * 17 + ["b"] * 3)  # 3 of them labelled b, against an allowance of 0.4
    >>> table = class_certificates(y, iv, classes=["a", "b"])
    >>> table.certified_other.tolist(), table.allowance.round(2).tolist(), table.flagged(0.05).tolist()
    ([0, 3], [0.0, 0.4], [1])
    """
    iv, ti, cls = _true_columns(y_true, interval, classes)
    c = iv.n_classes
    top = np.argmax(iv.proba, axis=1)
    certified = ~_not_certified(iv, top)  # review_flags' rule
    from ..lipschitz_check import poisson_binomial_sf

    support, hits, n_other, allowance, p_value = (np.zeros(c, dtype=np.int64), np.zeros(c, dtype=np.int64),
                                                  np.zeros(c, dtype=np.int64), np.zeros(c), np.ones(c))
    for k in range(c):
        other = certified & (top != k)
        ceilings = np.clip(iv.upper[other, k], 0.0, 1.0)
        support[k] = int(np.sum(ti == k))
        hits[k] = int(np.sum(ti[other] == k))
        n_other[k] = int(other.sum())
        allowance[k] = float(ceilings.sum())
        p_value[k] = float(poisson_binomial_sf(ceilings, int(hits[k])))
    labels = cls if cls is not None else np.arange(c)
    return ClassCertificateTable(labels, support, hits, n_other, allowance, p_value)
