"""The command list and the root parser: what `rt4chart --help` shows, shared by the launcher
(which answers it without importing the commands) and the full command line (`cli.py`)."""

from __future__ import annotations

import argparse

from rt4chart import __version__

DESCRIPTION = "Claim-level hallucination audit of RAG traces."
EPILOG = "`rt4chart COMMAND --help` shows a command's options."
# Each command's one-line help, as its own parser declares it (a test holds them equal).
COMMANDS = {
    "audit": "audit trace files (batch)",
    "stream": "audit a Pub/Sub subscription (streaming)",
    "eval": "evaluate the audit on a labelled dataset",
    "report": "write a self-contained HTML report of an audit run",
    "annotate": "write a run's verdicts onto the traces where they are kept",
    "check-judge": "check that a judge endpoint can be used, and how",
    "export": "write audited answers as labelled JSONL for `eval`",
    "gate": "exit 1 when a run's hallucination rates are over their limits (CI)",
}


def root_parser(parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser,
                ) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """The root parser and its (empty) sub-command action: `cli.parsers` adds the commands."""
    root = parser_class(prog="rt4chart", allow_abbrev=False, description=DESCRIPTION,
                        epilog=EPILOG)
    root.add_argument("--version", action="version", version=f"rt4chart {__version__}")
    return root, root.add_subparsers(dest="command", required=True)
