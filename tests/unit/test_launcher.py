"""`rt4chart`, `rt4chart --help` and `--version` answer from the command list alone (no Beam,
no openai client imported), and that list is the commands' own."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys

import pytest

from rt4chart.pipeline import launcher
from rt4chart.pipeline.cli import commands
from rt4chart.pipeline.cli import main as cli


def _sub_action(root):
    return next(a for a in root._actions if a.dest == "command")


def test_the_root_help_names_every_command_with_its_own_help():
    root, _commands = cli.parsers()
    real = {choice.dest: choice.help for choice in _sub_action(root)._choices_actions}
    assert real == commands.COMMANDS


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = launcher.main(argv)
    return code, out.getvalue(), err.getvalue()


def test_help_version_and_a_missing_command():
    code, out, _ = _run(["--help"])
    assert code == 0 and all(name in out for name in commands.COMMANDS)
    code, out, _ = _run(["--version"])
    assert code == 0 and out.startswith("rt4chart ")
    code, _, err = _run([])
    assert code == 2 and "required" in err


def test_a_command_goes_to_the_full_cli():
    with pytest.raises(SystemExit) as exc:  # argparse's usage error exits, as from `cli.main`
        _run(["report", "--nosuch"])
    assert exc.value.code == 2


def test_a_commands_help_is_answered_without_the_full_cli():  # tests/unit/test_quick_help.py
    code, out, _ = _run(["report", "--help"])
    assert code == 0 and out.startswith("usage: rt4chart report")


def test_the_root_help_imports_neither_beam_nor_openai():
    probe = ("import sys, contextlib, io\n"
             "from rt4chart.pipeline import launcher\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    launcher.main(['--help'])\n"
             "heavy = [m for m in ('apache_beam', 'openai', 'pyarrow') if m in sys.modules]\n"
             "print(','.join(heavy))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == ""
