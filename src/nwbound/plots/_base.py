"""Lazy matplotlib access and atomic figure saving."""

from __future__ import annotations

import importlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["pyplot", "save_figure"]

def _install_hint() -> str:
    from ..utils import install_hint

    return f"Plotting needs matplotlib, an optional dependency: {install_hint('plots')}"


def pyplot() -> Any:
    """Return ``matplotlib.pyplot``, imported on first use (matplotlib is optional).

    Returns
    -------
    module
        ``matplotlib.pyplot``.

    Raises
    ------
    ImportError
        matplotlib is not installed; the message says how to install it.

    Examples
    --------
    >>> from nwbound.plots import pyplot
    >>> plt = pyplot()
    >>> fig, ax = plt.subplots()
    >>> plt.close(fig)
    """
    try:
        return importlib.import_module("matplotlib.pyplot")
    except ImportError as exc:
        raise ImportError(_install_hint()) from exc


_pyplot = pyplot  # transition: the old private name, until every caller uses pyplot()


def _check_ax(ax: Any) -> tuple[Any, Any]:
    """Return ``(figure, ax)``, creating a new figure when ``ax`` is None."""
    plt = pyplot()
    if ax is None:
        fig, ax = plt.subplots()
        return fig, ax
    if not hasattr(ax, "figure") or not hasattr(ax, "plot"):
        raise TypeError(f"`ax` must be a matplotlib Axes, got {type(ax).__name__}.")
    return ax.figure, ax


_KNOWN_FORMATS = ("png", "pdf", "svg", "pgf", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp")


def save_figure(
    fig: Any,
    path_without_suffix: str | os.PathLike[str],
    formats: Sequence[str] = ("png", "pdf"),
    overwrite: bool = False,
    **savefig_kwargs: Any,
) -> list[Path]:
    """Save a figure in several formats, atomically and without clobbering.

    Each file is first written to a temporary file in the target folder and
    then moved into place, so an interrupted save never leaves a truncated
    figure. Existing files are never replaced unless ``overwrite=True``; the
    check covers all formats before anything is written.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure (e.g. ``display.figure_``).
    path_without_suffix : str or path-like
        Target path; ``".<format>"`` is appended for each format. Missing
        parent folders are created.
    formats : sequence of str, default=("png", "pdf")
        File formats understood by ``Figure.savefig``.
    overwrite : bool, default=False
        Replace existing files.
    **savefig_kwargs
        Passed to ``Figure.savefig`` (e.g. ``dpi=300``, ``bbox_inches="tight"``).

    Returns
    -------
    list of pathlib.Path
        The written files, in ``formats`` order.

    Raises
    ------
    FileExistsError
        If a target exists and ``overwrite`` is False.
    ValueError
        If ``formats`` is empty or the path already ends in a format suffix.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")  # draw off-screen
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> import os, tempfile
    >>> from nwbound.plots import save_figure
    >>> fig, ax = plt.subplots()
    >>> _ = ax.plot([0, 1], [0, 1])
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     paths = save_figure(fig, os.path.join(tmp, "fig"), formats=("png", "svg"))
    ...     [p.name for p in paths]
    ['fig.png', 'fig.svg']
    >>> plt.close(fig)
    """
    if not hasattr(fig, "savefig"):
        raise TypeError(f"`fig` must be a matplotlib Figure, got {type(fig).__name__}.")
    if isinstance(formats, str):
        formats = (formats,)
    fmts = [str(f).lower().lstrip(".") for f in formats]
    if not fmts or any(not f for f in fmts):
        raise ValueError(f"`formats` must name at least one file format, got {formats!r}.")
    if len(set(fmts)) != len(fmts):
        raise ValueError(f"`formats` has duplicates: {formats!r}.")
    base = Path(path_without_suffix)
    if base.suffix.lower().lstrip(".") in _KNOWN_FORMATS:
        raise ValueError(
            f"`path_without_suffix` ends in {base.suffix!r}; pass the path without it "
            f"(the suffixes come from `formats`)."
        )
    if not base.name:
        raise ValueError(f"`path_without_suffix` needs a file name, got {str(base)!r}.")
    targets = [base.with_name(f"{base.name}.{f}") for f in fmts]
    if not overwrite:
        existing = [str(t) for t in targets if t.exists()]
        if existing:
            raise FileExistsError(
                f"Refusing to overwrite existing file(s) {existing}; pass overwrite=True "
                "or choose another path."
            )
    base.parent.mkdir(parents=True, exist_ok=True)

    written: list[Path] = []
    for fmt, target in zip(fmts, targets):
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            # mkstemp creates 0600 files; give the figure ordinary permissions.
            os.chmod(tmp, 0o644)
            with os.fdopen(fd, "wb") as fh:
                fig.savefig(fh, format=fmt, **savefig_kwargs)
            if overwrite:
                os.replace(tmp, target)
            else:
                _move_no_clobber(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        written.append(target)
    return written


def _move_no_clobber(tmp: str, target: Path) -> None:
    """Move ``tmp`` to ``target`` unless ``target`` appeared meanwhile."""
    try:
        # A hard link fails if the target exists, closing the check/replace race.
        os.link(tmp, target)
    except FileExistsError:
        raise FileExistsError(
            f"Refusing to overwrite existing file {str(target)!r}; pass overwrite=True."
        ) from None
    except OSError:
        # File systems without hard links: fall back to check-then-replace.
        if target.exists():
            raise FileExistsError(
                f"Refusing to overwrite existing file {str(target)!r}; pass overwrite=True."
            ) from None
        os.replace(tmp, target)
        return
    os.unlink(tmp)
