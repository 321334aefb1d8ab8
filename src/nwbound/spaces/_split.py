"""The split of a training set into a metric share and an NW share (stratified, or by group)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["split_rows", "check_fraction", "check_groups", "fold_rows", "cross_fit_layouts", "AUTO_CROSS_FIT_FOLDS",
           "split_seed", "nw_share_weights", "check_rows_split", "check_map_classes", "MAP_SHARE"]


def split_seed(random_state: Any) -> int:
    """The seed of the split of the training rows and of ``metric="auto"``, from ``random_state``.

    The estimator's ``fit`` and the sharded one (:mod:`nwbound.dask`) both seed their splits with
    it, so they split the same rows.

    Parameters
    ----------
    random_state : None, int or numpy.random.RandomState
        None gives 0, so that a fit repeats; an int is the seed; a ``RandomState`` gives one draw
        per call. A fit draws one for its split, then one for the pilot L (not with ``metric="auto"``,
        whose space states it) and one for the check of ``lipschitz="auto"``; a cross-fitted model draws its own from a copy (as
        :func:`sklearn.base.clone` makes) after the layouts' draw. The sharded fit draws the same.

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import split_seed
    >>> split_seed(None), split_seed(7), split_seed(np.int64(3))
    (0, 7, 3)
    >>> split_seed(np.random.RandomState(0)) == split_seed(np.random.RandomState(0))
    True
    """
    if random_state is None:
        return 0
    if isinstance(random_state, (int, np.integer)):
        return int(random_state)
    return int(_random_state(random_state).randint(2**31 - 1))


def nw_share_weights(weights: np.ndarray | None, nw_rows: np.ndarray | None, dtype: Any) -> np.ndarray | None:
    """The sample weights of the rows in the kernel sums as the estimator keeps them: divided by
    their largest, None when all equal 1.

    Only relative weights matter (p̂ and every bound are invariant to a common factor); scaling the
    largest to 1 keeps weights like 1e308 from overflowing Σ(wK)², and κ and ΣK² are then in units
    of the largest weight.

    Parameters
    ----------
    weights : ndarray of shape (n_samples,) or None
        Non-negative, finite sample weights of every training row (None: unweighted).
    nw_rows : ndarray of int or None
        The rows in the kernel sums (the NW share of a split); None: every row.
    dtype : numpy dtype or str
        The estimator's ``dtype``, which the kept weights take.

    Returns
    -------
    ndarray of shape (len(nw_rows),) or None

    Raises
    ------
    ValueError
        Every weight of those rows is 0.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import nw_share_weights
    >>> nw_share_weights(np.array([0.5, 1.0, 0.25]), np.array([0, 2]), "float64")
    array([1. , 0.5])
    >>> nw_share_weights(np.array([0.5, 1.0, 0.5]), np.array([0, 2]), "float64") is None
    True
    >>> nw_share_weights(np.array([0.0, 1.0, 0.0]), np.array([0, 2]), "float64")
    Traceback (most recent call last):
    ...
    ValueError: sample_weight is 0 on every row of the NW share: give positive weights.
    """
    if weights is None:
        return None
    w = (weights if nw_rows is None else weights[nw_rows]).astype(np.float64)
    if not np.any(w > 0):
        raise ValueError("sample_weight is 0 on every row of the NW share: give positive weights.")
    w = w / w.max()
    return None if np.all(w == 1.0) else w.astype(dtype)


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


def check_groups(groups: Any, n: int) -> np.ndarray | None:
    """``groups`` as a 1-D array of one label per training row (None stays None).

    Examples
    --------
    >>> from nwbound.spaces import check_groups
    >>> check_groups([1, 1, 2], 3).tolist()
    [1, 1, 2]
    >>> check_groups([1, 2], 3)
    Traceback (most recent call last):
    ...
    ValueError: groups must hold one group label per training row: got shape (2,) for 3 rows.
    """
    if groups is None:
        return None
    groups = np.asarray(groups)
    if groups.ndim != 1 or groups.shape[0] != n:
        raise ValueError(f"groups must hold one group label per training row: got shape {groups.shape} for {n} rows.")
    return groups


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
    rng = _random_state(random_state)
    groups = check_groups(groups, n)
    if groups is not None:
        names, inverse = np.unique(groups, return_inverse=True)
        if names.shape[0] < 2:
            raise GroupsError(
                f"groups: the {n} rows to split all belong to one group ({names[0].item()!r}), and a group never "
                "sits on both sides of a split; pass at least 2 groups (or groups=None)."
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


#: ``cross_fit="auto"``: folds of ``metric="auto"``'s cross-fitting beside the swapped pair (0: the
#: pair alone). Measured with the two-constant space (breast-cancer 70/30, seed 0; a 2-D known-p
#: field, 5 000 rows): the pair certified 82.5 % / 70.1 % in 2.1 s / 3.6 s, the pair and 3 folds
#: (5 models at δ/5) 78.9 % / 71.1 % in 10.3 s / 9.3 s: the folds cost 2.5–5× for nothing.
AUTO_CROSS_FIT_FOLDS = 0


class GroupsError(ValueError):
    """Rows could not be split because of their ``groups`` (too few groups for a split).

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import GroupsError, split_rows
    >>> try:
    ...     split_rows(np.repeat([0, 1], 5), 0.5, groups=np.zeros(10))
    ... except GroupsError as exc:
    ...     print(type(exc).__name__, isinstance(exc, ValueError))
    GroupsError True
    """


def fold_rows(labels: np.ndarray, n_folds: int, *, groups: Any = None,
              random_state: Any = None, _setting: str | None = None) -> list[np.ndarray]:
    """``n_folds`` disjoint folds of the rows that cover them all: stratified, or whole groups.

    Without ``groups``: ``StratifiedKFold`` (shuffled), so each fold holds about ``1/n_folds`` of
    every class. With ``groups``: ``StratifiedGroupKFold`` (shuffled), each group in one fold.

    Parameters
    ----------
    labels : ndarray of shape (n,)
    n_folds : int, at least 2
    groups : array-like of shape (n,) or None, default=None
    random_state : int or None, default=None

    Returns
    -------
    list of ndarray of int
        The folds' row numbers, each sorted.

    Raises
    ------
    ValueError
        Fewer rows (or groups) than folds.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import fold_rows
    >>> folds = fold_rows(np.array([0] * 6 + [1] * 3), 3, random_state=0)
    >>> [len(f) for f in folds], sorted(np.concatenate(folds).tolist()) == list(range(9))
    ([3, 3, 3], True)
    """
    import warnings

    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

    labels = np.asarray(labels)
    n = labels.shape[0]
    groups = check_groups(groups, n)
    units = n if groups is None else np.unique(groups).shape[0]
    if isinstance(n_folds, bool) or not isinstance(n_folds, (int, np.integer)) or n_folds < 2:
        raise ValueError(f"cross_fit must be True, False, 'auto' or a number of folds >= 2, got {n_folds!r}.")
    if units < n_folds:
        what = "groups" if groups is not None else "rows"
        raise (ValueError if groups is None else GroupsError)(
            f"{_setting or f'cross_fit={n_folds}'} needs at least {n_folds} {what} (one fold each); got {units}."
            + (" Give a smaller cross_fit." if _setting is None else ""))
    seed = _random_state(random_state).randint(2**31 - 1) if not isinstance(random_state, (int, np.integer)) \
        else int(random_state)
    splitter = (StratifiedKFold(n_folds, shuffle=True, random_state=seed) if groups is None
                else StratifiedGroupKFold(n_folds, shuffle=True, random_state=seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "the least populated class has fewer members than n_splits"
        folds = [np.sort(test) for _, test in splitter.split(np.zeros((n, 1)), labels, groups)]
    if any(f.shape[0] == 0 for f in folds):
        raise ValueError(f"cross_fit={n_folds} left a fold empty; give a smaller cross_fit or more groups.")
    return folds


def cross_fit_layouts(labels: np.ndarray, cross_fit: Any, fraction: float, *, groups: Any = None,
                      random_state: Any = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """The ``(metric_rows, nw_rows)`` of every model of a cross-fitted classifier.

    * ``cross_fit=True``: the split at ``fraction`` (:func:`split_rows`) and the same with the
      roles swapped: 2 models.
    * ``cross_fit=K`` (an int ≥ 2): ``K`` folds (:func:`fold_rows`); model ``k`` puts fold ``k``
      in its kernel sums and fits its map on the other ``K − 1``: ``K`` models.
    * ``cross_fit="auto"`` (when it cross-fits): the swapped pair, and ``AUTO_CROSS_FIT_FOLDS``
      folds beside it when that is not 0 (it is 0: the pair alone, 2 models at ``δ/2``).

    Every layout is fixed before any label is seen (the folds depend on the labels' classes only
    through stratification, which keeps the labels of the kernel sums independent given the
    split), so no choice among them costs anything beyond the union bound.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import cross_fit_layouts
    >>> labels = np.repeat([0, 1], 30)
    >>> [len(n) for _, n in cross_fit_layouts(labels, True, 0.4, random_state=0)]
    [36, 24]
    >>> [len(n) for _, n in cross_fit_layouts(labels, 3, 0.4, random_state=0)]
    [20, 20, 20]
    >>> len(cross_fit_layouts(labels, "auto", 0.4, random_state=0))
    2
    """
    labels = np.asarray(labels)
    pairs: list[tuple[np.ndarray, np.ndarray]] = []
    if cross_fit is True or (isinstance(cross_fit, str) and cross_fit == "auto"):
        first, second = split_rows(labels, fraction, groups=groups, random_state=random_state)
        pairs += [(first, second), (second, first)]
    if isinstance(cross_fit, str):
        if cross_fit != "auto":
            raise ValueError(f"cross_fit must be True, False, 'auto' or a number of folds >= 2, got {cross_fit!r}.")
        n_folds = AUTO_CROSS_FIT_FOLDS
    elif cross_fit is True:
        n_folds = 0
    else:
        n_folds = cross_fit
    if n_folds:
        setting = f"cross_fit='auto' (the swapped pair and {n_folds} folds)" if isinstance(cross_fit, str) else None
        folds = fold_rows(labels, n_folds, groups=groups, random_state=random_state, _setting=setting)
        everything = np.arange(labels.shape[0])
        pairs += [(np.setdiff1d(everything, fold, assume_unique=True), fold) for fold in folds]
    return pairs


#: ``lipschitz="auto"``: the share of the metric share that fits the map (and the pilot L); the rest
#: are the check rows. The score model of ``metric="auto"`` sees only the map rows, and its row
#: count, not its capacity, set most of the default's accuracy gap to gradient boosting on the
#: unseen tabular sets (``benchmarks/accuracy_gap.py``; user guide, tabular page, "Round 15").
MAP_SHARE = 0.6


def check_rows_split(labels: np.ndarray, metric_rows: np.ndarray, *, groups: np.ndarray | None = None,
                     random_state: Any = 0) -> tuple[np.ndarray, np.ndarray]:
    """``lipschitz="auto"``: the metric share split into map rows (:data:`MAP_SHARE` of it: they fit
    the map and the pilot L) and check rows (the rest: the held-out check of L), as the
    estimator's ``fit`` splits it.

    Parameters
    ----------
    labels : ndarray of shape (n_samples,)
        Class indices of every training row.
    metric_rows : ndarray of int
        The metric share (:func:`split_rows`).
    groups : ndarray of shape (n_samples,) or None, default=None
        Group labels of every training row: each group on one side.
    random_state : int, default=0
        :func:`split_seed` of the estimator's ``random_state``.

    Returns
    -------
    map_rows, check_rows : ndarray of int
        Training row numbers, each a subset of ``metric_rows``.

    Raises
    ------
    GroupsError
        The metric share's rows all belong to one group, naming it.
    ValueError
        The metric share could not be split (too few rows), with the cause.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import check_rows_split
    >>> map_rows, check_rows = check_rows_split(np.repeat([0, 1], 20), np.arange(0, 40, 2))
    >>> map_rows.size, check_rows.size, bool(np.isin(check_rows, np.arange(0, 40, 2)).all())
    (12, 8, True)
    >>> check_rows_split(np.repeat([0, 1], 20), np.arange(0, 40, 2), groups=np.zeros(40))
    Traceback (most recent call last):
    ...
    nwbound.spaces._split.GroupsError: lipschitz='auto' splits the metric share (20 rows) into map rows and check rows of whole groups, but those rows all belong to one group (0.0).
    """
    try:
        a, b = split_rows(labels[metric_rows], MAP_SHARE, random_state=random_state,
                          groups=None if groups is None else groups[metric_rows])
    except GroupsError:
        raise GroupsError(
            f"lipschitz='auto' splits the metric share ({metric_rows.shape[0]} rows) into map rows and "
            f"check rows of whole groups, but those rows all belong to one group "
            f"({groups[metric_rows][0].item()!r})."
        ) from None
    except ValueError as exc:
        raise ValueError(
            f"lipschitz='auto' splits the metric share ({metric_rows.shape[0]} rows) into map rows and "
            f"check rows and could not: {exc}"
        ) from None
    return metric_rows[a], metric_rows[b]


def check_map_classes(map_labels: np.ndarray, metric: Any) -> None:
    """Refuse map rows of one class: a map fitted on labels (``metric="auto"``, a transformer or a
    classifier) needs at least 2.

    Parameters
    ----------
    map_labels : ndarray
        Class indices of the rows that fit the map.
    metric : str or estimator
        The estimator's ``metric``, named in the error.

    Raises
    ------
    ValueError
        The rows hold one class only, naming the fixes.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.spaces import check_map_classes
    >>> check_map_classes(np.array([0, 1, 1]), "auto")
    >>> check_map_classes(np.array([1, 1]), "auto")
    Traceback (most recent call last):
    ...
    ValueError: The 2 rows that fit metric='auto' hold one class only; a supervised map needs at least 2 (more rows per class, other groups or a larger metric_fraction).
    """
    if np.unique(map_labels).shape[0] < 2:
        raise ValueError(
            f"The {map_labels.shape[0]} rows that fit metric={metric!r} hold one class only; a supervised "
            "map needs at least 2 (more rows per class, other groups or a larger metric_fraction)."
        )


def _random_state(random_state: Any) -> Any:
    """scikit-learn's ``check_random_state``, imported when called: ``nwbound.spaces`` loads without
    scikit-learn (``nwbound predict`` maps queries with a model file's frozen arrays)."""
    from sklearn.utils import check_random_state

    return check_random_state(random_state)
