"""docs/source/getting_started.md: its Python recipe prints what the page shows, and its commands
are the ones user_guide/cli.md runs (tests/test_readme_commands.py runs those verbatim)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs" / "source"
PAGE = DOCS / "getting_started.md"

pytestmark = pytest.mark.filterwarnings("ignore::nwbound.diagnostics.UselessBoundWarning")


def test_python_recipe_prints_what_the_page_shows():
    text = PAGE.read_text(encoding="utf-8")
    (python,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    (shown,) = re.findall(r"```text\n(.*?)```", text, flags=re.S)
    assert len(python.strip().splitlines()) <= 12  # a short recipe
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(python, str(PAGE), "exec"), {})
    assert out.getvalue() == shown


def test_cli_recipe_is_the_one_the_cli_guide_runs():
    bash = lambda path: re.findall(r"```bash\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)  # noqa: E731
    commands = [block for block in bash(PAGE) if "nwbound fit" in block]
    assert commands and commands[0] in bash(DOCS / "user_guide" / "cli.md")


def test_page_is_first_in_the_toctree():
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    toctree = re.search(r"```\{toctree\}\n(.*?)```", index, flags=re.S).group(1)
    entries = [line.strip() for line in toctree.splitlines() if line.strip() and not line.startswith(":")]
    assert entries[0] == "getting_started"
