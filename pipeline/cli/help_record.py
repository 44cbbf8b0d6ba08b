"""The commands' parsers as data (`help.json`), so that `rt4chart COMMAND --help` is answered
without importing what the commands run (`quick_help.py`).

A command's options are declared beside the stage that owns them, in modules that import
Apache Beam (about 200 modules, seconds of start-up); its help needs only the declarations.
`RecordingParser` is the full command line's parser class that also keeps what each
`add_argument`, `add_subparsers` and `add_parser` call was given; `record()` turns the parsers
`cli.main.parsers` builds into JSON, which `quick_help` replays on a plain argparse parser.

    python -m rt4chart.pipeline.cli.help_record            # rewrite pipeline/cli/help.json
    python -m rt4chart.pipeline.cli.help_record --check    # exit 1 if it is not current

A test (`tests/unit/test_quick_help.py`) fails when the file is not current, and holds every
command's help as quick_help prints it equal to the full parser's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.options.beam import KnownOptionsParser

HELP_FILE = Path(__file__).with_name("help.json")
_JSON = (str, int, float, bool, type(None))


def _plain(value: Any) -> Any:
    """A keyword argument as JSON: what help shows of it (`%(default)s` is `str()`)."""
    if isinstance(value, _JSON):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


def _kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    # `type` converts values when a command runs; help never calls it.
    return {k: _plain(v) for k, v in kwargs.items() if k not in ("type", "parser_class")}


class RecordingParser(KnownOptionsParser):
    """A `KnownOptionsParser` that keeps its own construction's calls (`spec()`)."""

    def __init__(self, *args, **kwargs) -> None:
        self.calls: list[dict[str, Any]] = []
        self.init = _kwargs(kwargs)
        super().__init__(*args, **kwargs)

    def add_argument(self, *args, **kwargs):
        action = super().add_argument(*args, **kwargs)
        if "-h" not in args:  # argparse's own help option: the replay adds it as well
            self.calls.append({"argument": list(args), "kwargs": _kwargs(kwargs)})
        return action

    def add_subparsers(self, **kwargs):
        action = super().add_subparsers(**kwargs)
        commands: list[dict[str, Any]] = []
        self.calls.append({"subparsers": _kwargs(kwargs), "commands": commands})
        add_parser = action.add_parser

        def recorded(name: str, **kw):
            parser = add_parser(name, **kw)
            commands.append({"name": name, "kwargs": _kwargs(kw), "parser": parser})
            return parser

        action.add_parser = recorded
        return action

    def spec(self) -> dict[str, Any]:
        """The parser's construction as JSON-ready data."""
        return {"init": self.init, "calls": [_call_spec(c) for c in self.calls]}


def _call_spec(call: dict[str, Any]) -> dict[str, Any]:
    if "subparsers" not in call:
        return call
    return {"subparsers": call["subparsers"],
            "commands": [{"name": c["name"], "kwargs": c["kwargs"], "parser": c["parser"].spec()}
                         for c in call["commands"]]}


def record() -> str:
    """`help.json`'s text: the root parser, its commands and theirs, as `cli.main` builds them."""
    root, _commands = cli.parsers(RecordingParser)
    return json.dumps(root.spec(), indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    text = record()
    if "--check" in argv:
        current = HELP_FILE.exists() and HELP_FILE.read_text(encoding="utf-8") == text
        if not current:
            print(f"{HELP_FILE} is not current: run python -m rt4chart.pipeline.cli.help_record",
                  file=sys.stderr)
        return 0 if current else 1
    HELP_FILE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
