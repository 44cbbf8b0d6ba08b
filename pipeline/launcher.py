"""The `rt4chart` executable: answers `rt4chart`, `rt4chart --help` and `rt4chart --version`
from the command list alone, and hands every command to `cli.main`.

The commands' parsers are made from the options' declarations, which live beside the stages
that own them and so import Apache Beam, the openai client and pyarrow (seconds of start-up).
The root help only names the commands: it needs none of that; a command's help is replayed
from the parsers as recorded (`cli/quick_help.py`).
"""

from __future__ import annotations

import sys

from rt4chart.pipeline.cli import quick_help
from rt4chart.pipeline.cli.commands import COMMANDS, root_parser

ROOT_ONLY = {"-h", "--help", "--version"}


def root_only(argv: list[str]) -> bool:
    """Whether `argv` asks only the root parser: no command, only help or version (or nothing,
    which is the missing-command usage error)."""
    return all(token in ROOT_ONLY for token in argv)


def root_help(argv: list[str]) -> int:
    """Help, version or the missing-command error, from the command list alone."""
    root, sub = root_parser()
    for name, help_text in COMMANDS.items():
        sub.add_parser(name, help=help_text)
    try:
        root.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0  # pragma: no cover - argparse exits on help, version and a missing command


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if root_only(argv):
        return root_help(argv)
    helped = quick_help.answer(argv)  # a command's help: from the recorded parsers, no Beam
    if helped is not None:
        return helped
    # Beam's import-time notices (its "apitools not found" without the [gcp] extra) are kept
    # out of the logs by rt4chart's package (`rt4chart._quiet_beam`), imported before this.
    from rt4chart.pipeline.cli import main as cli  # the commands: Beam, openai, pyarrow

    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
