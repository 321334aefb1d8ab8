"""The README's Python blocks run verbatim; a block followed by a ``text`` block prints exactly that."""

from __future__ import annotations

import contextlib
import functools
import io
import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(text: str) -> list[tuple[str, str]]:
    return re.findall(r"```([a-z]*)\n(.*?)```", text, flags=re.S)


@functools.lru_cache(maxsize=None)  # each block runs once per session, whichever test asks first
def _run(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    return out.getvalue()


BLOCKS = _blocks(README.read_text(encoding="utf-8"))
PYTHON = [i for i, (lang, _) in enumerate(BLOCKS) if lang == "python"]


def test_the_readme_shows_what_a_block_prints():
    shown = [i for i in PYTHON if i + 1 < len(BLOCKS) and BLOCKS[i + 1][0] == "text"]
    assert shown, "no Python block of the README is followed by the text block of what it prints"


@pytest.mark.parametrize("index", PYTHON, ids=[f"block{n}" for n in range(len(PYTHON))])
def test_readme_python_block_runs_and_prints_what_the_readme_shows(index):
    printed = _run(BLOCKS[index][1])
    if index + 1 < len(BLOCKS) and BLOCKS[index + 1][0] == "text":
        assert printed.strip() == BLOCKS[index + 1][1].strip()
    else:  # figures that move with the default model live in the headline table, not here
        assert printed.strip(), "a README block that prints nothing shows the reader nothing"


def test_the_real_data_block_prints_the_headline_tables_breast_cancer_figures():
    """The ten lines on breast-cancer are the headline table's split at random_state=0: their accuracy
    lies within that row's min-max over the seeds."""
    index = next(i for i in PYTHON if "load_breast_cancer" in BLOCKS[i][1])
    printed = _run(BLOCKS[index][1])
    accuracy = float(re.search(r"accuracy (\d\.\d+)", printed).group(1))
    text = README.read_text(encoding="utf-8")
    row = re.search(r"^\| breast-cancer \|.*?\| (\d\.\d+) \((\d\.\d+)–(\d\.\d+)\)", text, flags=re.M)
    assert row is not None, "the headline table has no breast-cancer row"
    low, high = float(row.group(2)), float(row.group(3))
    assert low <= round(accuracy, 3) <= high


def test_the_headline_table_is_the_one_headline_py_wrote():
    """README's table between the headline markers is benchmarks/headline.md's (the script's output)."""
    written = (README.parent / "benchmarks" / "headline.md").read_text(encoding="utf-8")
    text = README.read_text(encoding="utf-8")
    shown = re.search(r"<!-- headline:start -->\n(.*?)<!-- headline:end -->", text, flags=re.S).group(1)
    table = [line for line in written.splitlines() if line.startswith("|")]
    assert shown.strip().splitlines() == table
    assert "python benchmarks/headline.py --readme README.md > benchmarks/headline.md" in text


def test_the_readme_is_a_front_door():
    """Issue 32: at most 15 KB; the history lives in docs/source/changelog.md, which the README links."""
    assert len(README.read_bytes()) <= 15_000
    assert "(docs/source/changelog.md)" in README.read_text(encoding="utf-8")
