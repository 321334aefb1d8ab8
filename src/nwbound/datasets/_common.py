"""Input validation shared by the data-set generators and loaders."""

from __future__ import annotations

import numbers
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_choice, check_int_range, check_positive

__all__ = [
    "check_choice",
    "check_directory",
    "check_n_samples",
    "check_positive",
    "check_random_generator",
    "stratified_subsample",
]


def check_n_samples(value: Any, name: str = "n_samples", *, minimum: int = 1) -> int:
    """Return ``value`` as an ``int`` after checking it is an integer ``>= minimum``.

    The data sets' name for :func:`nwbound._validation.check_int_range` with no upper limit.

    Parameters
    ----------
    value : object
        The user's value.
    name : str, default="n_samples"
        Parameter name used in the error message.
    minimum : int, default=1
        Smallest accepted value.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        If ``value`` is not an integer (``bool`` and floats are rejected).
    ValueError
        If ``value < minimum``.

    Examples
    --------
    >>> from nwbound.datasets._common import check_n_samples
    >>> check_n_samples(100)
    100
    """
    return check_int_range(value, name, minimum)


def check_random_generator(random_state: Any) -> np.random.Generator:
    """Turn ``random_state`` into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        ``None`` draws fresh OS entropy; an int seeds a new generator; a generator
        is used as is (and advanced); a legacy ``RandomState`` seeds a new generator
        from one draw of it.

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    TypeError
        If ``random_state`` is not None, an int, a Generator or a RandomState.
    ValueError
        If ``random_state`` is a negative int.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.datasets._common import check_random_generator
    >>> check_random_generator(0).integers(10, size=3).tolist()
    [8, 6, 5]
    >>> rng = np.random.default_rng(1)
    >>> check_random_generator(rng) is rng
    True
    >>> check_random_generator(-1)
    Traceback (most recent call last):
        ...
    ValueError: random_state must be a non-negative int, got -1.
    """
    if random_state is None or isinstance(random_state, np.random.Generator):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral):
        raise TypeError(
            "random_state must be None, a non-negative int or a numpy.random.Generator, "
            f"got {random_state!r} of type {type(random_state).__name__}."
        )
    if random_state < 0:
        raise ValueError(f"random_state must be a non-negative int, got {random_state}.")
    return np.random.default_rng(int(random_state))


def check_directory(data_dir: Any, name: str, how_to_obtain: str) -> Path:
    """Return ``data_dir`` as a :class:`~pathlib.Path` to an existing directory.

    Raises
    ------
    TypeError
        If ``data_dir`` is not a str or path-like.
    FileNotFoundError
        If the directory does not exist; the message says how to obtain the data.
    NotADirectoryError
        If the path exists but is not a directory.

    Examples
    --------
    >>> import os, tempfile
    >>> from pathlib import Path
    >>> from nwbound.datasets._common import check_directory
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     check_directory(tmp, "MNIST", "Download it.") == Path(tmp)
    True
    >>> check_directory(os.path.join(tempfile.gettempdir(), "no-such-dir-nwbound"), "MNIST",
    ...                 "Download it.")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    FileNotFoundError: MNIST data directory '...no-such-dir-nwbound' does not exist. Download it.
    """
    if not isinstance(data_dir, (str, Path)) and not hasattr(data_dir, "__fspath__"):
        raise TypeError(f"data_dir must be a str or path-like, got {type(data_dir).__name__}.")
    path = Path(data_dir).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"{name} data directory {str(path)!r} does not exist. {how_to_obtain}")
    if not path.is_dir():
        raise NotADirectoryError(f"{name} data_dir {str(path)!r} is not a directory. {how_to_obtain}")
    return path


def stratified_subsample(y: Any, n_samples: int, random_state: Any = None) -> np.ndarray:
    """Sorted indices of a stratified random subsample of ``n_samples`` labels.

    Each class gets ``n_samples · share`` rows, rounded by largest remainders to
    exactly ``n_samples``, and at least one row, so rare classes are kept. Within
    a class the rows are a uniform random choice. This is the one subsampler of
    the package (data loaders, experiments, assumption checks).

    Parameters
    ----------
    y : array-like of shape (n,)
        Class labels (any sortable type).
    n_samples : int
        Subsample size; all indices when ``n_samples >= n``.
    random_state : None, int or numpy.random.Generator, default=None
        Seed of the draw (see :func:`check_random_generator`).

    Returns
    -------
    ndarray of int64, shape (min(n_samples, n),)
        Increasing row indices.

    Raises
    ------
    TypeError
        ``n_samples`` is not an integer.
    ValueError
        ``n_samples < 1``, or fewer than the number of classes (every class
        cannot be kept), or ``y`` is not one-dimensional.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound.datasets import stratified_subsample
    >>> y = np.array([0] * 90 + [1] * 10)
    >>> idx = stratified_subsample(y, 20, random_state=0)
    >>> idx.shape, np.bincount(y[idx]).tolist()
    ((20,), [18, 2])
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be one-dimensional labels, got shape {y.shape}.")
    n_samples = check_n_samples(n_samples)
    total = y.shape[0]
    if n_samples >= total:
        return np.arange(total)
    classes, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    n_classes = classes.shape[0]
    if n_samples < n_classes:
        raise ValueError(
            f"n_samples={n_samples} cannot be drawn stratified from labels of {n_classes} classes: "
            f"use n_samples >= {n_classes} (one per class) or a larger subsample."
        )
    quota = counts * (n_samples / total)
    take = np.maximum(np.floor(quota).astype(np.int64), 1)
    # Largest remainders fill (or trim) to exactly n_samples; at most a few rounds of C.
    order = np.argsort(-(quota - np.floor(quota)), kind="stable")
    i = 0
    while take.sum() != n_samples:
        c = order[i % n_classes]
        if take.sum() < n_samples and take[c] < counts[c]:
            take[c] += 1
        elif take.sum() > n_samples and take[c] > 1:
            take[c] -= 1
        i += 1
    rng = check_random_generator(random_state)
    # One random key per row; the `take[c]` smallest keys of each class win.
    key = rng.random(total)
    rows = np.lexsort((key, inverse))
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(total, dtype=np.int64)
    rank[rows] = np.arange(total) - np.repeat(start, counts)
    return np.flatnonzero(rank < take[inverse])
