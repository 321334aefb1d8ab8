"""The backends an estimator may pick, and the one rule that picks: :func:`select_backend`.

A new backend is its own module (a class with the methods of :class:`~nwbound.engine.Backend`)
and one entry in :data:`BACKENDS`: these two files, nothing else.
"""

from __future__ import annotations

from typing import Any

from .device._backend import DeviceBackend
from .host._backend import HostBackend

__all__ = ["BACKENDS", "select_backend"]

# The backends in the order select_backend asks them; the host serves everything (the last).
BACKENDS: tuple = (DeviceBackend, HostBackend)


def select_backend(estimator: Any) -> Any:
    """The first backend of :data:`BACKENDS` usable for a fitted ``estimator``, bound to it.

    Parameters
    ----------
    estimator : NadarayaWatsonClassifier
        A fitted classifier.

    Returns
    -------
    Backend
        An instance of the first class of :data:`BACKENDS` whose ``is_usable_for(estimator)`` holds.

    Examples
    --------
    >>> import numpy as np
    >>> from nwbound import NadarayaWatsonClassifier
    >>> from nwbound.engine import select_backend
    >>> X = np.linspace(0, 1, 40)[:, None]; y = (X[:, 0] > 0.5).astype(int)
    >>> clf = NadarayaWatsonClassifier(metric=None, bandwidth=0.2, lipschitz=1.0).fit(X, y)
    >>> type(select_backend(clf)).__name__
    'HostBackend'
    """
    return next(backend for backend in BACKENDS if backend.is_usable_for(estimator))(estimator)
