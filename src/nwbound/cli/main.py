"""``nwbound`` command line: one sub-command per module, one-line errors, exit codes.

Sub-commands register through :data:`COMMANDS`: each module provides
``add_parser(subparsers)`` (which sets ``func`` on its parser) so adding a
command never touches the others.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

__all__ = ["main", "CommandError", "COMMANDS"]

# module (in nwbound.cli) → imported lazily so `nwbound --help` stays fast.
COMMANDS: tuple[str, ...] = ("demo", "experiment", "fit", "predict", "evaluate")


class CommandError(Exception):
    """An error to show the user as one line (no traceback); exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="nwbound",
        description="Nadaraya-Watson classifiers with frequentist bounds on the class probabilities.",
    )
    parser.add_argument("--version", action="version", version=f"nwbound {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f".{name}", __package__).add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (0 success, 2 usage/data error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    from ..utils import UserError as OutputError

    try:
        result = args.func(args)
    except (CommandError, OutputError, ValueError, TypeError, OSError) as exc:
        print(f"nwbound {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"nwbound {args.command}: interrupted", file=sys.stderr)
        return 130
    return int(result or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
