"""The `rt4chart` executable: answers `rt4chart`, `rt4chart --help` and `rt4chart --version`
from the command list alone, and hands every command to `cli.main`.

The commands' parsers are made from the options' declarations, which live beside the stages
that own them and so import Apache Beam, the openai client and pyarrow (seconds of start-up).
The root help only names the commands: it needs none of that.
"""

from __future__ import annotations

import logging
import sys

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


def _without_gcp_notice(record: logging.LogRecord) -> bool:
    """Beam's `apache_beam.io` tries its BigQuery module at import and, without the `[gcp]`
    extra, warns on the root logger that the clients are missing: the base install leaves
    them out on purpose, and a command that needs them says so (`gcp_extra`)."""
    return not str(record.msg).startswith("apitools not found")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if root_only(argv):
        return root_help(argv)
    logging.getLogger().addFilter(_without_gcp_notice)
    from rt4chart.pipeline.cli import main as cli  # the commands: Beam, openai, pyarrow

    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
