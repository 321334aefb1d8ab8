"""The README's Python usage block runs verbatim and prints what the README says it prints."""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(text: str) -> list[tuple[str, str]]:
    return re.findall(r"```([a-z]*)\n(.*?)```", text, flags=re.S)


def test_readme_usage_block_runs_and_prints_what_the_readme_shows():
    blocks = _blocks(README.read_text(encoding="utf-8"))
    index = next(i for i, (lang, _) in enumerate(blocks) if lang == "python")
    code = blocks[index][1]
    shown = blocks[index + 1][1]  # the block right after it: its printed output
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    assert out.getvalue().strip() == shown.strip()
