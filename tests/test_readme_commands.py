"""The README's ``nwbound fit / predict / evaluate`` commands, run verbatim on a small generated table.

The commands are parsed from README.md's code blocks, so this test follows the
README: edit a command there and this runs the edited command.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from nwbound.cli.main import main  # noqa: E402

README = Path(__file__).resolve().parents[1] / "README.md"
CLI_GUIDE = Path(__file__).resolve().parents[1] / "docs" / "source" / "user_guide" / "cli.md"
TABLE_COMMANDS = ("fit", "predict", "evaluate")


def readme_commands(text: str) -> list[str]:
    """``nwbound fit|predict|evaluate`` commands of the README, in order of appearance.

    From fenced code blocks (line continuations joined, ``#`` comments
    dropped) and from inline code spans such as ```nwbound evaluate …```.
    """
    commands = []
    code = re.findall(r"```[a-z]*\n(.*?)```|`([^`\n]+)`", text, flags=re.S)
    for block, inline in code:
        joined = re.sub(r"\\\n\s*", " ", block or inline)
        for line in joined.splitlines():
            line = line.split(" #", 1)[0].strip()
            words = shlex.split(line) if line.startswith("nwbound ") else []
            if len(words) > 1 and words[0] == "nwbound" and words[1] in TABLE_COMMANDS:
                commands.append(line)
    return commands


def _tables(folder: Path, n_train: int = 600, n_new: int = 150, seed: int = 0) -> None:
    """What the README's commands read: train.csv, new.csv, test.csv with a patient id and a label."""
    rng = np.random.default_rng(seed)

    def frame(n: int, start: int) -> "pd.DataFrame":
        x1 = rng.uniform(0, 10, n)  # raw units, as in the README (--scale minmax restates L)
        x2 = rng.uniform(0, 2, n)
        p_sick = 1 / (1 + np.exp(-1.5 * (x1 - 5)))
        label = np.where(rng.uniform(size=n) < p_sick, "sick", "well")
        return pd.DataFrame({"patient": [f"P{start + i:05d}" for i in range(n)], "x1": x1, "x2": x2, "label": label})

    frame(n_train, 0).to_csv(folder / "train.csv", index=False)
    frame(n_new, 10_000).drop(columns="label").to_csv(folder / "new.csv", index=False)
    frame(n_new, 20_000).to_csv(folder / "test.csv", index=False)


def test_readme_has_the_table_commands():
    commands = readme_commands(README.read_text(encoding="utf-8"))
    assert [shlex.split(c)[1] for c in commands][:3] == list(TABLE_COMMANDS), commands


def test_readme_commands_run_verbatim(tmp_path, monkeypatch, capsys):
    commands = readme_commands(README.read_text(encoding="utf-8"))
    _tables(tmp_path)
    monkeypatch.chdir(tmp_path)
    printed = {}
    for line in commands:
        argv = shlex.split(line)[1:]
        rc = main(argv)
        out, err = capsys.readouterr()
        assert rc == 0, f"{line!r} failed:\n{err}"
        printed[argv[0]] = out + err
    # What the README promises about the outputs.
    pred = pd.read_csv(tmp_path / "predictions.csv", dtype={"patient": str})
    new = pd.read_csv(tmp_path / "new.csv", dtype={"patient": str})
    assert pred["patient"].tolist() == new["patient"].tolist()
    for column in ("predicted", "proba_sick", "lower_sick", "upper_well", "epsilon_predicted", "kappa", "vacuous", "review"):
        assert column in pred.columns, column
    assert "Wrote model.npz" in printed["fit"]
    assert "certified" in printed["predict"]
    assert "accuracy_pct" in printed["evaluate"] and "errors_caught_pct" in printed["evaluate"]
    assert (tmp_path / "evaluation" / "metrics.csv").exists()


def test_cli_guide_runs_as_documented_and_shows_its_output(tmp_path, monkeypatch, capsys):
    """user_guide/cli.md: its Python block makes the tables, its commands run verbatim, and the
    lines it shows as their output are what they print."""
    text = CLI_GUIDE.read_text(encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    (python,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    exec(compile(python, str(CLI_GUIDE), "exec"), {})
    commands = readme_commands(text)
    assert [shlex.split(c)[1] for c in commands] == list(TABLE_COMMANDS), commands
    assert all("--bandwidth" in c for c in commands if shlex.split(c)[1] == "fit")
    (shown,) = re.findall(r"```text\n(.*?)```", text, flags=re.S)
    printed = []
    for line in commands:
        rc = main(shlex.split(line)[1:])
        out, err = capsys.readouterr()
        assert rc == 0, f"{line!r} failed:\n{err}"
        printed.append(out + err)
    assert "warning" not in printed[0]
    for line in shown.strip().splitlines():
        assert any(line in out for out in printed), line
    # The page's claim about a fixed --bandwidth 1.0 on the same tables.
    fixed = commands[0].replace("--bandwidth auto", "--bandwidth 1.0").replace("model.npz", "fixed.npz")
    assert main(shlex.split(fixed)[1:]) == 0
    out, err = capsys.readouterr()
    assert "100.0% of the rows have a trivial bound" in out + err and "bias term (L·D/κ) is 93%" in out + err


def _make_dry_run(target: str, venv) -> str:
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("make not available")
    proc = subprocess.run(["make", "-n", target, f"VENV={venv}"], cwd=README.parent, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_make_demo_installs_only_what_the_demo_needs(tmp_path):
    """The README: `make demo` installs nwbound with the plots extra (its figure), not the test extras;
    `make test` installs .[test]."""
    installs = lambda out: re.findall(r"^\S+/python -m pip install .*-e (\S+)$", out, flags=re.M)  # noqa: E731
    assert installs(_make_dry_run("demo", tmp_path / "venv")) == ['".[plots]"']
    assert set(installs(_make_dry_run("test", tmp_path / "venv"))) == {'".[test]"'}  # (and again for docs)
