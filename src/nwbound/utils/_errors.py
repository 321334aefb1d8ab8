"""The one error type shown to a user as a single line (no traceback), and how to install an extra."""

from __future__ import annotations

__all__ = ["UserError", "as_user_error", "install_hint"]


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


def _extra_packages(extra: str) -> list[str]:
    """The requirements of nwbound's optional ``extra`` as installed (empty when unknown)."""
    import importlib.metadata
    import re

    try:
        requires = importlib.metadata.requires("nwbound") or []
    except importlib.metadata.PackageNotFoundError:  # run from a source folder that was never installed
        return []
    marker = re.compile(r"""extra\s*==\s*["']""" + re.escape(extra) + r"""["']""")
    return [r.split(";")[0].strip() for r in requires if ";" in r and marker.search(r.split(";", 1)[1])]


def install_hint(extra: str) -> str:
    """How to install nwbound's optional ``extra``, for an error message: from the checkout.

    nwbound is not on a package index, so ``pip install nwbound[extra]`` finds
    nothing; the extra is installed from the checkout, or its packages alone.

    Parameters
    ----------
    extra : str
        The extra's name in ``pyproject.toml`` (``"plots"``, ``"tables"``, ``"gpu"`` …).

    Returns
    -------
    str

    Examples
    --------
    >>> from nwbound.utils import install_hint
    >>> install_hint("plots").startswith('pip install -e ".[plots]" in the nwbound checkout')
    True
    """
    import shlex

    packages = _extra_packages(extra)
    alone = f" (or its packages alone: pip install {' '.join(shlex.quote(p) for p in packages)})" if packages else ""
    return f'pip install -e ".[{extra}]" in the nwbound checkout{alone}'
