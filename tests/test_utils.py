"""nwbound.utils: converters, the user error, result writing, resumable steps."""

from __future__ import annotations

import argparse
import json
import math
import stat

import pytest

from nwbound.utils import (
    MANIFEST_NAME,
    StepLog,
    UserError,
    add_resume_argument,
    atomic_write_text,
    bandwidth_or_auto,
    format_markdown,
    nonnegative_int,
    positive_float,
    positive_int,
    prepare_output_dir,
    write_table,
)


# ----------------------------------------------------------------------------- converters
@pytest.mark.parametrize("text, value", [("1", 1), ("10_000", 10_000), (" 7 ", 7)])
def test_positive_int_accepts(text, value):
    assert positive_int(text) == value


@pytest.mark.parametrize("text, match", [("0", "at least 1"), ("-3", "at least 1"), ("1.5", "not an integer"), ("x", "not an integer")])
def test_positive_int_rejects(text, match):
    with pytest.raises(argparse.ArgumentTypeError, match=match):
        positive_int(text)


def test_nonnegative_int():
    assert nonnegative_int("0") == 0
    with pytest.raises(argparse.ArgumentTypeError, match=">= 0"):
        nonnegative_int("-1")


@pytest.mark.parametrize("text", ["0", "-1", "nan", "inf", "abc"])
def test_positive_float_rejects(text):
    with pytest.raises(argparse.ArgumentTypeError):
        positive_float(text)


def test_bandwidth_or_auto():
    assert bandwidth_or_auto("auto") == "auto"
    assert bandwidth_or_auto("2.5") == 2.5
    with pytest.raises(argparse.ArgumentTypeError):
        bandwidth_or_auto("Auto")


def test_converters_in_a_parser_give_usage_errors(capsys):
    parser = argparse.ArgumentParser(prog="x")
    parser.add_argument("--n", type=positive_int)
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["--n", "0"])
    assert exc.value.code == 2
    assert "--n" in capsys.readouterr().err


def test_the_cli_error_is_the_one_user_error():
    from nwbound.cli.main import CommandError

    assert CommandError is UserError


# ----------------------------------------------------------------------------- errors
def test_user_error_is_one_line():
    assert str(UserError("a\n  b\tc")) == "a b c"


def test_main_prints_a_user_error_as_one_line(tmp_path, capsys):
    from nwbound.cli.main import main

    target = tmp_path / "file"
    target.write_text("x")
    assert main(["demo", "--output", str(target), "--no-figure", "--n-train", "50", "--n-queries", "5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a folder" in err[0]


# ----------------------------------------------------------------------------- output
def test_prepare_output_dir(tmp_path):
    out = prepare_output_dir(tmp_path / "a" / "b")
    assert out.is_dir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="--resume"):
        prepare_output_dir(out, resumable=True)
    # evaluate and demo have no --resume: their message used to offer it (an unrecognized argument)
    with pytest.raises(UserError, match="already holds files") as refused:
        prepare_output_dir(out)
    assert "--resume" not in str(refused.value) and "--overwrite" in str(refused.value)
    assert prepare_output_dir(out, overwrite=True) == out
    assert (out / "keep.txt").read_text() == "mine"  # nothing deleted


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_files_are_0644_and_no_temporary_is_left(tmp_path):
    p = atomic_write_text(tmp_path / "a.md", "x")
    csv_path, md_path = write_table([{"a": 1, "b": math.nan}, {"a": 2, "c": "z"}], tmp_path / "t", title="T")
    assert {_mode(p), _mode(csv_path), _mode(md_path)} == {0o644}
    assert sorted(f.name for f in tmp_path.iterdir()) == ["a.md", "t.csv", "t.md"]
    assert csv_path.read_text() == "a,b,c\n1,nan,\n2,,z\n"
    assert md_path.read_text().startswith("# T\n\n| a | b | c |")


def test_atomic_write_failure_keeps_old_file_and_removes_temporary(tmp_path):
    target = tmp_path / "a.txt"
    target.write_text("old")
    with pytest.raises(TypeError):
        atomic_write_text(target, 123)  # not a str: the write fails midway
    assert target.read_text() == "old"
    assert [f.name for f in tmp_path.iterdir()] == ["a.txt"]


def test_format_markdown_union_of_columns():
    text = format_markdown([{"a": 1.23456789}, {"b": "x"}])
    assert text.splitlines() == ["| a | b |", "|---|---|", "| 1.235 |  |", "|  | x |"]


# ----------------------------------------------------------------------------- steps
class _Counter:
    """A step that writes one table and counts how often it ran."""

    def __init__(self, out, name, value):
        self.out, self.name, self.value, self.calls = out, name, value, 0

    def __call__(self):
        self.calls += 1
        rows = [{"step": self.name, "value": self.value, "missing": math.nan}]
        return rows, write_table(rows, self.out / self.name)


def test_steps_are_recorded_as_they_finish(tmp_path):
    log = StepLog(tmp_path, params={"seed": 0}, quiet=True)
    first = _Counter(tmp_path, "one", 1)
    log.run("one", first)
    record = json.loads((tmp_path / MANIFEST_NAME).read_text())
    assert list(record["steps"]) == ["one"]  # on disk before the next step starts
    assert record["steps"]["one"]["files"] == ["one.csv", "one.md"]
    assert _mode(tmp_path / MANIFEST_NAME) == 0o644


def test_resume_skips_matching_steps_and_reruns_the_rest(tmp_path):
    one, two = _Counter(tmp_path, "one", 1), _Counter(tmp_path, "two", 2)
    log = StepLog(tmp_path, params={"seed": 0}, quiet=True)
    log.run("one", one, params={"n": 10})
    # killed here: "two" never ran, no summary
    assert not (tmp_path / "summary.md").exists()
    log = StepLog(tmp_path, params={"seed": 0}, resume=True, quiet=True)
    got = log.run("one", one, params={"n": 10})
    log.run("two", two)
    assert one.calls == 1 and two.calls == 1
    assert log.skipped == ["one"] and log.ran == ["two"]
    assert math.isnan(got[0]["missing"]) and got[0]["value"] == 1
    assert [p.name for p in log.files] == ["one.csv", "one.md", "two.csv", "two.md"]


@pytest.mark.parametrize("change", ["run_params", "step_params", "file_removed", "no_resume", "bad_record"])
def test_resume_reruns_when_anything_differs(tmp_path, change):
    step = _Counter(tmp_path, "one", 1)
    StepLog(tmp_path, params={"seed": 0}, quiet=True).run("one", step, params={"n": 10})
    run_params, step_params, resume = {"seed": 0}, {"n": 10}, True
    if change == "run_params":
        run_params = {"seed": 1}
    elif change == "step_params":
        step_params = {"n": 11}
    elif change == "file_removed":
        (tmp_path / "one.md").unlink()
    elif change == "no_resume":
        resume = False
    else:
        (tmp_path / MANIFEST_NAME).write_text("{not json")
    StepLog(tmp_path, params=run_params, resume=resume, quiet=True).run("one", step, params=step_params)
    assert step.calls == 2


def test_failed_step_is_not_recorded(tmp_path):
    log = StepLog(tmp_path, quiet=True)

    def boom():
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        log.run("one", boom)
    assert not StepLog(tmp_path, resume=True, quiet=True).is_done("one")


def test_summary_is_removed_at_start_and_written_last(tmp_path):
    (tmp_path / "summary.md").write_text("stale summary of an earlier run")
    log = StepLog(tmp_path, quiet=True)
    assert not (tmp_path / "summary.md").exists()
    path = log.write_summary("# new\n")
    assert path.read_text() == "# new\n" and log.files[-1] == path


def test_progress_lines(tmp_path, capsys):
    log = StepLog(tmp_path, name="mnist")
    log.run("one", _Counter(tmp_path, "one", 1))
    assert "mnist: one: done in" in capsys.readouterr().err
    StepLog(tmp_path, name="mnist", resume=True).run("one", _Counter(tmp_path, "one", 1))
    assert "reused" in capsys.readouterr().err


def test_add_resume_argument_implies_overwrite():
    parser = argparse.ArgumentParser()
    parser.add_argument("--overwrite", action="store_true")
    add_resume_argument(parser)
    assert vars(parser.parse_args([])) == {"overwrite": False, "resume": False}
    assert vars(parser.parse_args(["--resume"])) == {"overwrite": True, "resume": True}


def test_add_resume_argument_twice_is_harmless():
    parser = argparse.ArgumentParser()
    parser.add_argument("--overwrite", action="store_true")
    add_resume_argument(parser)
    add_resume_argument(parser)
    assert parser.parse_args(["--resume"]).resume is True
