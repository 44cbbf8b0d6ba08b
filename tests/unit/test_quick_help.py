"""`rt4chart COMMAND --help` is answered from the recorded parsers (pipeline/cli/help.json,
pipeline/cli/quick_help.py): no Apache Beam module is imported, and the help is the full
command line's, word for word (issue 48)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rt4chart.pipeline.cli import help_record, quick_help
from rt4chart.pipeline.cli import main as cli

WIDTH = "100"


def _command_paths(spec: dict, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = []
    for call in spec["calls"]:
        for command in call.get("commands", []):
            path = (*prefix, command["name"])
            paths += [path, *_command_paths(command["parser"], path)]
    return paths


def _recorded() -> dict:
    import json

    return json.loads(help_record.HELP_FILE.read_text(encoding="utf-8"))


COMMAND_PATHS = _command_paths(_recorded())


def _full_help(argv: list[str]) -> str:
    """What the full command line's parsers print for `argv` (a help request)."""
    root, _commands = cli.parsers()
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exc:
        root.parse_args(argv)
    assert exc.value.code == 0
    return out.getvalue()


def test_the_recorded_parsers_are_current():
    assert help_record.record() == help_record.HELP_FILE.read_text(encoding="utf-8"), (
        "pipeline/cli/help.json is not current: run python -m rt4chart.pipeline.cli.help_record")


def test_every_command_and_sub_command_is_recorded():
    assert {p[0] for p in COMMAND_PATHS} == set(cli.parsers()[1])
    assert ("eval", "compare") in COMMAND_PATHS and ("annotate", "phoenix") in COMMAND_PATHS


@pytest.mark.parametrize("path", COMMAND_PATHS, ids=" ".join)
def test_a_commands_help_imports_no_beam_and_is_the_full_help(path, monkeypatch):
    env = {**os.environ, "COLUMNS": WIDTH}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "rt4chart", *path,
                           "--help"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = [line for line in done.stderr.splitlines() if "apache_beam" in line]
    assert imported == [], imported[:5]
    assert "openai" not in done.stderr and "pyarrow" not in done.stderr
    monkeypatch.setenv("COLUMNS", WIDTH)  # argparse wraps to the terminal's width
    assert done.stdout == _full_help([*path, "--help"])


def test_what_is_not_a_help_request_goes_to_the_full_command_line():
    assert quick_help.answer(["audit", "x.jsonl"]) is None
    assert quick_help.answer(["audit", "--", "--help"]) is None  # a file named --help
    assert quick_help.answer(["nosuch", "--help"]) is None  # the full parser's error
    assert quick_help.answer(["audit", "--hel"]) is None  # no abbreviation, as the full parser


TOKENS = ["audit", "eval", "compare", "report", "gate", "-h", "--help", "--", "--out", "x",
          "--judge", "offline", "-v", "--version", "--window-size", "3", "--nosuch"]


@given(st.lists(st.sampled_from(TOKENS), max_size=7))
def test_a_replayed_help_is_what_the_full_parser_prints(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        answered = quick_help.answer(argv)
    if answered is None:
        return
    assert answered == 0
    assert out.getvalue() == _full_help(argv)
