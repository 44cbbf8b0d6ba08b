"""Every `rt4chart …` command the README and the docs show parses with the current CLI: a
renamed or removed option, a stale sub-command or a missing required argument fails here, not
in a newcomer's terminal.

A command is a line of a shell code block (or a `$ `-prompted line of another block) that
starts with `rt4chart`, `.venv/bin/rt4chart` or `$ rt4chart` (lines joined at a trailing
backslash, a trailing comment and what follows `|`, `>` or `&&` cut off). Usage synopses
(`[--opt]` brackets) are not commands and are skipped.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.options.beam import split_beam_args

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md")),
         ROOT / "infra" / "README.md"]
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", re.S | re.M)
SHELL = {"bash", "sh", "shell", "console"}
START = re.compile(r"^(?:\$\s+)?(?:\S*/)?rt4chart\s")


def _logical_lines(block: str) -> list[str]:
    return block.replace("\\\n", " ").splitlines()


def _command(line: str) -> list[str] | None:
    """The rt4chart part of one shell line as argv, or None when it is not a command."""
    for part in re.split(r"&&|;", line):
        part = part.strip()
        if not START.match(part):
            continue
        part = re.split(r"\s(?:\||>|2>)\s", part)[0]
        words = shlex.split(part, comments=True)
        if words[0] == "$":
            words = words[1:]
        return words[1:]
    return None


def _is_synopsis(argv: list[str]) -> bool:
    return any(w.startswith("[") or w.endswith("]") or w in ("...", "…") for w in argv)


def doc_commands() -> list[tuple[str, list[str]]]:
    found = []
    for page in PAGES:
        if not page.exists():
            continue
        for language, block in FENCE.findall(page.read_text(encoding="utf-8")):
            for line in _logical_lines(block):
                if language.strip() not in SHELL and not line.startswith("$ "):
                    continue  # a diagram or an output: only prompted lines are commands
                argv = _command(line)
                if argv is not None and not _is_synopsis(argv):
                    found.append((f"{page.relative_to(ROOT)}: {line.strip()[:90]}", argv))
    return found


COMMANDS = doc_commands()


def test_the_docs_show_commands():
    # The README's quickstart alone shows several; an extraction that finds none is broken.
    readme = [argv for where, argv in COMMANDS if where.startswith("README.md")]
    assert len(readme) >= 4, readme
    assert ["audit", "--example", "--out", "rt4chart-out", "--overwrite"] in readme


def _parse(argv: list[str]) -> None:
    ours, _beam = split_beam_args(argv)
    root, commands = cli.parsers()
    cli.reject_unknown(commands, ours)
    args, unknown = root.parse_known_args(ours)
    cli.check_unknown(commands.get(args.command, root), unknown)


@pytest.mark.parametrize("where,argv", COMMANDS, ids=[w for w, _ in COMMANDS])
def test_doc_command_parses(where, argv):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            _parse(argv)
    except SystemExit as exc:
        assert exc.code == 0, f"{where}\n{err.getvalue()}"


def test_a_stale_command_fails_the_parse():
    # The check itself can fail: an option the CLI does not know is refused.
    with pytest.raises(SystemExit) as exc, contextlib.redirect_stderr(io.StringIO()):
        _parse(["audit", "traces.jsonl", "--out", "run", "--no-such-option", "1"])
    assert exc.value.code == 2
