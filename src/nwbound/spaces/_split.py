"""The split of a training set into a metric share and an NW share (stratified, or by group)."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["split_rows", "check_fraction"]


def check_fraction(value: Any, name: str = "metric_fraction") -> float:
    """A share of training rows strictly between 0 and 1.

    Examples
    --------
    >>> from nwbound.spaces import check_fraction
    >>> check_fraction(0.4)
    0.4
    >>> check_fraction(1.0)
    Traceback (most recent call last):
    ...
    ValueError: metric_fraction must be a number in (0, 1) (the share of training rows that fit the map; the rest enter the kernel sums), got 1.0.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not 0.0 < float(value) < 1.0:
        raise ValueError(
            f"{name} must be a number in (0, 1) (the share of training rows that fit the map; the rest "
            f"enter the kernel sums), got {value!r}."
        )
    return float(value)


def split_rows(labels: np.ndarray, fraction: float, *, groups: Any = None,
               random_state: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Row numbers of the metric share and of the NW share.

    Without ``groups`` the split is stratified: each class with ``n_c ≥ 2`` rows puts
    ``round(fraction · n_c)`` of them (at least 1, at most ``n_c − 1``) in the metric share,
    a class with one row puts it in the NW share. With ``groups``, whole groups (patients,
    say) go to one side: the groups, in a random order, fill the metric share until it holds
    about ``fraction`` of the rows. Both shares are sorted.

    Parameters
    ----------
    labels : ndarray of shape (n,)
        Class indices (or any labels).
    fraction : float in (0, 1)
        The metric share's target size.
    groups : array-like of shape (n,) or None, default=None
    random_state : int, RandomState or None, default=None

    Returns
    -------
    metric_rows, nw_rows : ndarray of int

    Raises
    ------
    ValueError
        ``groups`` of the wrong length, a single group holding every row, or a share left empty.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import split_rows
    >>> m, n = split_rows(np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1]), 0.5, random_state=0)
    >>> len(m), len(n)
    (5, 5)
    >>> m, n = split_rows(np.zeros(6), 0.5, groups=[1, 1, 2, 2, 3, 3], random_state=0)
    >>> sorted(set(np.array([1, 1, 2, 2, 3, 3])[m]) & set(np.array([1, 1, 2, 2, 3, 3])[n]))
    []
    """
    fraction = check_fraction(fraction)
    labels = np.asarray(labels)
    n = labels.shape[0]
    rng = check_random_state(random_state)
    if groups is not None:
        groups = np.asarray(groups)
        if groups.ndim != 1 or groups.shape[0] != n:
            raise ValueError(
                f"groups must hold one group label per training row: got shape {groups.shape} for {n} rows."
            )
        names, inverse = np.unique(groups, return_inverse=True)
        if names.shape[0] < 2:
            raise ValueError(
                f"groups: one group ({names[0]!r}) holds every training row, so no group can fit the map "
                "while others enter the kernel sums; pass at least 2 groups (or groups=None)."
            )
        sizes = np.bincount(inverse)
        order = rng.permutation(names.shape[0])
        before = np.concatenate([[0], np.cumsum(sizes[order])[:-1]])
        # A group joins the metric share while the share holds fewer than fraction·n rows;
        # the first group always does, the last never.
        take = before < fraction * n
        take[0], take[-1] = True, False
        in_metric = np.zeros(names.shape[0], dtype=bool)
        in_metric[order[take]] = True
        mask = in_metric[inverse]
    else:
        mask = np.zeros(n, dtype=bool)
        for c in np.unique(labels):
            rows = np.flatnonzero(labels == c)
            if rows.shape[0] < 2:
                continue
            k = int(np.clip(round(fraction * rows.shape[0]), 1, rows.shape[0] - 1))
            mask[rng.choice(rows, size=k, replace=False)] = True
    metric_rows, nw_rows = np.flatnonzero(mask), np.flatnonzero(~mask)
    if metric_rows.shape[0] == 0 or nw_rows.shape[0] == 0:
        raise ValueError(
            f"Splitting {n} training rows at metric_fraction={fraction:g} left a share empty; "
            "give more rows (at least 2 per class) or another metric_fraction."
        )
    return metric_rows, nw_rows
