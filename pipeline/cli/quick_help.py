"""`rt4chart COMMAND --help` from the recorded parsers (`help.json`, written by
`help_record.py`), without importing the commands: their options are declared beside the
stages, whose modules import Apache Beam; help needs none of it.

The recorded calls are replayed on plain argparse parsers (values are never converted: help
does not parse them). A command line the replay cannot answer with a help page (no -h/--help, a
`--` before it, an error first) goes to the full command line, which answers as it always did.
"""

from __future__ import annotations

import argparse
import json
from importlib import resources
from typing import Any

HELP = {"-h", "--help"}


class _NotHelp(Exception):
    """The replayed parser met something other than a help request."""


class _ReplayParser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        kwargs["allow_abbrev"] = False  # as the full command line's parsers: `--hel` is no help
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        raise _NotHelp(message)


def _build(spec: dict[str, Any], parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    for call in spec["calls"]:
        if "argument" in call:
            parser.add_argument(*call["argument"], **call["kwargs"])
            continue
        sub = parser.add_subparsers(parser_class=_ReplayParser, **call["subparsers"])
        for command in call["commands"]:
            child = sub.add_parser(command["name"], **command["kwargs"])
            _build(command["parser"], child)
    return parser


def replayed_root() -> argparse.ArgumentParser:
    """The root parser with every command's, as recorded."""
    spec = json.loads(resources.files("rt4chart.pipeline.cli").joinpath("help.json")
                      .read_text(encoding="utf-8"))
    return _build(spec, _ReplayParser(**spec["init"]))


def asks_help(argv: list[str]) -> bool:
    """Whether `argv` may be a command's help request (-h/--help before any `--`)."""
    before = argv[:argv.index("--")] if "--" in argv else argv
    return bool(HELP & set(before))


def answer(argv: list[str]) -> int | None:
    """0 once the help is printed; None when `argv` is not answered with a help page (the full
    command line is then used)."""
    if not asks_help(argv):
        return None
    try:
        replayed_root().parse_args(argv)
    except _NotHelp:
        return None
    except SystemExit:  # argparse's help action prints, then exits 0 (errors raise _NotHelp)
        return 0
    return None
