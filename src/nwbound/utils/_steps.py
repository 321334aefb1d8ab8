"""Resumable experiments: each finished step is recorded as it completes.

A long run is a sequence of named steps. :class:`StepLog` runs each one,
records its parameters, the files it wrote and a small JSON result in
``steps.json`` in the results folder, and on ``--resume`` skips the steps whose
record matches (same parameters, files still present). ``summary.md`` is
written last by :meth:`StepLog.write_summary` and removed when a run starts, so
a killed run never leaves a summary that describes files it did not write.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ._output import atomic_write_text
from ._progress import report

__all__ = ["StepLog", "add_resume_argument", "MANIFEST_NAME", "SUMMARY_NAME"]

MANIFEST_NAME = "steps.json"
SUMMARY_NAME = "summary.md"
_FORMAT = 1


def _plain(value: Any) -> Any:
    """JSON-ready copy: numpy scalars/arrays to Python, paths to str, tuples to lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):  # numpy scalar or array
        return _plain(value.tolist())
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _same(a: Any, b: Any) -> bool:
    """Equality that treats NaN as equal to NaN (recorded results may hold NaN)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


class StepLog:
    """Run the steps of an experiment, recording each as it finishes; skip finished ones on resume.

    Parameters
    ----------
    output : path-like
        The prepared results folder.
    params : mapping, optional
        Parameters of the whole run (seed, data folder, constants); part of
        every step's record, so changing one reruns every step.
    resume : bool, default=False
        Reuse the steps recorded by an earlier run with matching parameters.
        Without it, the record is started afresh (files of the same name are
        replaced as their steps finish).
    name : str, default=""
        Prefix of the progress lines.
    quiet : bool, default=False
        No progress lines.

    Attributes
    ----------
    files : list of pathlib.Path
        Every file written or reused so far, in step order.
    skipped, ran : list of str
        Names of the steps reused from the record and those computed now.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from nwbound.utils import StepLog, write_table
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> def step():
    ...     rows = [{"n": 10, "accuracy": 0.9}]
    ...     return rows, write_table(rows, tmp / "table")
    >>> log = StepLog(tmp, params={"seed": 0}, quiet=True)
    >>> log.run("table", step, params={"n": 10})
    [{'n': 10, 'accuracy': 0.9}]
    >>> _ = log.write_summary("# done\\n")
    >>> again = StepLog(tmp, params={"seed": 0}, resume=True, quiet=True)
    >>> again.run("table", step, params={"n": 10}), again.skipped
    ([{'n': 10, 'accuracy': 0.9}], ['table'])
    """

    def __init__(
        self,
        output: str | os.PathLike,
        *,
        params: Mapping[str, Any] | None = None,
        resume: bool = False,
        name: str = "",
        quiet: bool = False,
    ) -> None:
        self.output = Path(output)
        self.params = _plain(dict(params or {}))
        self.resume = bool(resume)
        self.name = name
        self.quiet = bool(quiet)
        self.files: list[Path] = []
        self.skipped: list[str] = []
        self.ran: list[str] = []
        self._manifest = self.output / MANIFEST_NAME
        self._steps: dict[str, Any] = self._read() if self.resume else {}
        # The summary describes a finished run; it is rewritten last.
        (self.output / SUMMARY_NAME).unlink(missing_ok=True)
        self._write()

    # -- record -------------------------------------------------------------------
    def _read(self) -> dict[str, Any]:
        try:
            record = json.loads(self._manifest.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return {}  # unreadable record: rerun everything rather than trust it
        if not isinstance(record, dict) or record.get("format") != _FORMAT or not isinstance(record.get("steps"), dict):
            return {}
        return dict(record["steps"])

    def _write(self) -> None:
        record = {"format": _FORMAT, "steps": self._steps}
        atomic_write_text(self._manifest, json.dumps(record, indent=1, allow_nan=True) + "\n")

    def _key(self, params: Mapping[str, Any] | None) -> dict[str, Any]:
        return _plain({**self.params, **dict(params or {})})

    def is_done(self, step: str, params: Mapping[str, Any] | None = None) -> bool:
        """Whether ``step`` is recorded with these parameters and all its files exist.

        Examples
        --------
        >>> import tempfile
        >>> from nwbound.utils import StepLog
        >>> StepLog(tempfile.mkdtemp(), quiet=True).is_done("fit")
        False
        """
        entry = self._steps.get(step)
        if not isinstance(entry, dict) or not _same(entry.get("params"), self._key(params)):
            return False
        return all((self.output / f).is_file() for f in entry.get("files", []))

    # -- run ------------------------------------------------------------------------
    def run(
        self,
        step: str,
        compute: Callable[[], tuple[Any, Iterable[str | os.PathLike]]],
        *,
        params: Mapping[str, Any] | None = None,
    ) -> Any:
        """Run ``compute`` (or reuse its recorded result) and record it at once.

        Parameters
        ----------
        step : str
            Unique name of the step in this run.
        compute : callable
            Takes no argument and returns ``(result, files)``: a JSON-able
            result (rows of numbers and strings; numpy values are converted)
            and the files it wrote into the results folder.
        params : mapping, optional
            The step's own parameters (added to the run's).

        Returns
        -------
        object
            The result, as recorded (a resumed step returns the stored copy,
            with tuples as lists).

        Examples
        --------
        >>> import tempfile
        >>> from nwbound.utils import StepLog
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     log = StepLog(tmp, quiet=True)
        ...     print(log.run("count", lambda: ((1, 2), []), params={"n": 2}), log.ran)
        ...     again = StepLog(tmp, resume=True, quiet=True)
        ...     print(again.run("count", lambda: ((9, 9), []), params={"n": 2}), again.skipped)
        [1, 2] ['count']
        [1, 2] ['count']
        """
        key = self._key(params)
        if self.resume and self.is_done(step, params):
            entry = self._steps[step]
            self.files += [self.output / f for f in entry["files"]]
            self.skipped.append(step)
            report(f"{self.name}: {step}: reused from an earlier run", quiet=self.quiet)
            return entry["result"]
        self._steps.pop(step, None)  # a half-done step is never trusted
        start = time.perf_counter()
        result, files = compute()
        seconds = time.perf_counter() - start
        paths = [Path(f) for f in files]
        rel = [os.path.relpath(p, self.output) for p in paths]
        result = _plain(result)
        self._steps[step] = {"params": key, "files": rel, "result": result, "seconds": round(seconds, 3)}
        self._write()
        self.files += paths
        self.ran.append(step)
        report(f"{self.name}: {step}: done in {seconds:.1f} s", quiet=self.quiet)
        return result

    def write_summary(self, text: str) -> Path:
        """Write ``summary.md`` last (every step it describes is on disk) and return its path.

        Parameters
        ----------
        text : str
            The Markdown summary.

        Returns
        -------
        pathlib.Path
            ``output/summary.md`` (also appended to ``files``).

        Examples
        --------
        >>> import tempfile
        >>> from nwbound.utils import StepLog
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     log = StepLog(tmp, quiet=True)
        ...     path = log.write_summary("# Results\\n")
        ...     print(path.name, path.read_text(), end="")
        summary.md # Results
        """
        path = atomic_write_text(self.output / SUMMARY_NAME, text)
        self.files.append(path)
        return path


class _ResumeAction(argparse.Action):
    """``--resume`` implies reusing a non-empty results folder."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        namespace.resume = True
        namespace.overwrite = True


def add_resume_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--resume`` to an experiment's parser (it also lets the folder hold files).

    Does nothing when the parser already has ``--resume`` (e.g. added for
    every experiment by ``nwbound experiment``), so both places may call it.

    Examples
    --------
    >>> import argparse
    >>> from nwbound.utils import add_resume_argument
    >>> p = argparse.ArgumentParser()
    >>> _ = p.add_argument("--overwrite", action="store_true")
    >>> add_resume_argument(p)
    >>> args = p.parse_args(["--resume"])
    >>> args.resume, args.overwrite
    (True, True)
    """
    try:
        parser.add_argument(
            "--resume", nargs=0, action=_ResumeAction, default=False,
            help="continue an interrupted run in the same folder: skip the steps already finished "
                 "with the same parameters (recorded in steps.json)",
        )
    except argparse.ArgumentError:  # already there: one definition is enough
        pass
