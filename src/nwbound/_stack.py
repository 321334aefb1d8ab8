"""Warnings that point at the user's line, however deep in nwbound they are raised."""

from __future__ import annotations

import os
import sys

__all__ = ["caller_stacklevel"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def caller_stacklevel(below: int = 0) -> int:
    """The ``stacklevel`` that points a warning at the first frame outside nwbound and scikit-learn.

    Counted from the function that calls this one; ``below`` is the number of frames between that
    function and the one that calls :func:`warnings.warn` (1 when it passes the level to a helper
    such as :func:`nwbound.diagnostics.warn_if_useless`). So a warning reaches the user's line
    whichever public method, wrapper or decorator led there.

    Parameters
    ----------
    below : int, default=0
        Frames between the caller and :func:`warnings.warn`.

    Returns
    -------
    int

    Examples
    --------
    >>> from nwbound._stack import caller_stacklevel
    >>> caller_stacklevel()  # called from outside nwbound: this very frame
    1
    """
    sklearn = sys.modules.get("sklearn")  # not imported: none of its frames can be on the stack
    inside = (_PACKAGE, *(() if sklearn is None else (os.path.dirname(sklearn.__file__),)))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(inside):
        frame, level = frame.f_back, level + 1
    return level + below
