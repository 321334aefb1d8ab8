"""``nwbound`` command line: one sub-command per module, one-line errors, exit codes.

Sub-commands register through :data:`COMMANDS`: each module provides
``add_parser(subparsers)`` (which sets ``func`` on its parser) so adding a
command never touches the others. Only the module of the command being run
is imported (``nwbound --help`` lists the commands from :data:`COMMANDS`), so
``--help`` and ``--version`` import neither scikit-learn nor matplotlib from
here.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from typing import Sequence

from ..utils import UserError

__all__ = ["main", "CommandError", "COMMANDS"]

# command → one-line help; its module (nwbound.cli.<command>) is imported only when run.
COMMANDS: dict[str, str] = {
    "demo": "fit on synthetic data with known probabilities; print intervals and coverage; write a figure",
    "experiment": "reproduce a table/figure of the paper into a results folder",
    "fit": "fit a classifier with probability bounds on a CSV/Parquet table; save a model file",
    "predict": "predict a CSV/Parquet table with a saved model: classes, bounds, certified/review flags",
    "evaluate": "accuracy, certified share and the review queue against other rules on a labelled table",
}


# The one user-facing error type (defined in nwbound.utils, which experiments use too).
CommandError = UserError


def _command_in(argv: Sequence[str]) -> str | None:
    """The sub-command named in ``argv`` (its first non-option word), if any."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def build_parser(command: str | None = None, argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser; the full sub-parser only for ``command`` (all when None).

    A command module whose ``add_parser`` takes ``argv`` gets the command line, so that it
    imports only what the command names (``nwbound experiment NAME`` imports that experiment).
    """
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="nwbound",
        description="Nadaraya-Watson classifiers with frequentist bounds on the class probabilities.",
    )
    parser.add_argument("--version", action="version", version=f"nwbound {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, help_text in COMMANDS.items():
        if command is None or name == command:
            add_parser = importlib.import_module(f".{name}", __package__).add_parser
            if argv is not None and "argv" in inspect.signature(add_parser).parameters:
                add_parser(sub, argv=argv)
            else:
                add_parser(sub)
        else:  # listed in --help without importing its module
            sub.add_parser(name, help=help_text)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (0 success, 2 usage/data error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command_in(argv)
    parser = build_parser(command if command is not None else "", argv)
    args = parser.parse_args(argv)
    try:
        result = args.func(args)
    except (UserError, ValueError, TypeError, OSError) as exc:
        print(f"nwbound {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"nwbound {args.command}: interrupted", file=sys.stderr)
        return 130
    return int(result or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
