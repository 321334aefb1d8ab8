"""The one error type shown to a user as a single line (no traceback)."""

from __future__ import annotations

__all__ = ["UserError"]


class UserError(Exception):
    """A problem the user can fix (bad option, unusable folder, missing data).

    The command line prints its message as one line and exits with status 2;
    library code raises ``ValueError``/``TypeError`` instead and the command
    line turns those into the same one-line message.

    Examples
    --------
    >>> from nwbound.utils import UserError
    >>> try:
    ...     raise UserError("--sizes: give at least one size.")
    ... except UserError as exc:
    ...     print(exc)
    --sizes: give at least one size.
    """

    def __init__(self, message: object = "") -> None:
        # One line: a loader's multi-line message must not break the CLI's output.
        super().__init__(" ".join(str(message).split()))


def as_user_error(label: str, exc: BaseException) -> UserError:
    """Wrap ``exc`` as a :class:`UserError` prefixed by ``label``, e.g. ``"MNIST data"``.

    Examples
    --------
    >>> from nwbound.utils import as_user_error
    >>> str(as_user_error("MNIST data", FileNotFoundError("no file\\nhere")))
    'MNIST data: no file here'
    """
    error = UserError(f"{label}: {exc}")
    error.__cause__ = exc
    return error
