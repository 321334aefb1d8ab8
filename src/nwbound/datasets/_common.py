"""Input validation shared by the data-set generators and loaders."""

from __future__ import annotations

import math
import numbers
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_choice, check_positive

__all__ = [
    "check_choice",
    "check_directory",
    "check_n_samples",
    "check_positive",
    "check_random_generator",
    "sklearn_seed",
]


def check_n_samples(value: Any, name: str = "n_samples", *, minimum: int = 1) -> int:
    """Return ``value`` as an ``int`` after checking it is an integer ``>= minimum``.

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
    """
    # bool is an Integral subclass; ``n_samples=True`` is almost surely a mistake.
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r} of type {type(value).__name__}.")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}.")
    return value


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


def sklearn_seed(random_state: Any) -> int | np.random.RandomState | None:
    """Convert ``random_state`` into something scikit-learn accepts.

    scikit-learn takes ``None``, an int or a ``RandomState``; a numpy
    ``Generator`` is turned into an int seed by one draw from it.
    """
    if random_state is None or isinstance(random_state, np.random.RandomState):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**31 - 1))
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral):
        raise TypeError(
            "random_state must be None, a non-negative int or a numpy.random.Generator, "
            f"got {random_state!r} of type {type(random_state).__name__}."
        )
    if random_state < 0:
        raise ValueError(f"random_state must be a non-negative int, got {random_state}.")
    return int(random_state)


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
    """
    if not isinstance(data_dir, (str, Path)) and not hasattr(data_dir, "__fspath__"):
        raise TypeError(f"data_dir must be a str or path-like, got {type(data_dir).__name__}.")
    path = Path(data_dir).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"{name} data directory {str(path)!r} does not exist. {how_to_obtain}")
    if not path.is_dir():
        raise NotADirectoryError(f"{name} data_dir {str(path)!r} is not a directory. {how_to_obtain}")
    return path
