"""Flex Template launcher: template parameters to the `rt4chart stream` command line.

Dataflow runs this file with every parameter as ``--name=value``: the template's own
parameters (declared in ``metadata.json`` next to this file; names use underscores, as Flex
Template parameter names cannot contain dashes) and the job's Beam options (``--project``,
``--region``, ``--temp_location``, ``--sdk_container_image``, ...). Template parameters become
rt4chart's options (``dead_letter_topic`` -> ``--dead-letter-topic``; ``judge_options``, a
``;``-separated list of KEY=VALUE, becomes repeated ``--judge-option``; ``write_traces=true``
becomes ``--write-traces``); everything else is passed on unchanged for Beam.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

METADATA = Path(__file__).resolve().with_name("metadata.json")
# Template parameters that do not map one-to-one on a flag.
LIST_PARAMS = {"judge_options": "--judge-option", "max_usd_per_hour": "--max-usd-per-hour",
               "samples": "--sample", "always": "--always",
               "confirm_judge_options": "--confirm-judge-option"}
# Template parameters that switch a flag on: "true" gives the flag, anything else nothing.
FLAG_PARAMS = {"write_traces": "--write-traces", "confirm_ent": "--confirm-ent",
               "prune_windows": "--prune-windows"}


def template_parameters(metadata: Path = METADATA) -> list[str]:
    """Names of the parameters declared in the template's metadata."""
    return [p["name"] for p in json.loads(metadata.read_text())["parameters"]]


def flag(name: str) -> str:
    """The rt4chart option of a template parameter (a scalar one)."""
    return "--" + name.replace("_", "-")


def _split(token: str, rest: list[str]) -> tuple[str, str | None, int]:
    """(name, value, tokens consumed) of a `--name=value` or `--name value` token."""
    name, eq, value = token[2:].partition("=")
    if eq:
        return name, value, 1
    if rest and not rest[0].startswith("--"):
        return name, rest[0], 2
    return name, None, 1


def _translate(name: str, value: str) -> list[str]:
    if name in FLAG_PARAMS:
        return [FLAG_PARAMS[name]] if value.lower() == "true" else []
    if name in LIST_PARAMS:
        items = [item.strip() for item in value.split(";") if item.strip()]
        return [part for item in items for part in (LIST_PARAMS[name], item)]
    return [flag(name), value]


def stream_argv(argv: list[str], parameters: list[str] | None = None) -> list[str]:
    """The `rt4chart` argument list for the launcher's arguments `argv`."""
    params = set(template_parameters() if parameters is None else parameters)
    out = ["stream"]
    i = 0
    while i < len(argv):
        token = argv[i]
        name = token[2:].partition("=")[0] if token.startswith("--") else ""
        if name not in params:
            out.append(token)
            i += 1
            continue
        name, value, used = _split(token, argv[i + 1:])
        i += used
        if value is None:
            raise ValueError(f"template parameter {name} needs a value")
        if value.strip():  # an optional parameter left empty keeps rt4chart's default
            out += _translate(name, value.strip())
    return out


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO)
    from openai_key import export_api_key

    from rt4chart.pipeline.cli import main as cli

    # The launcher builds the judge before submitting the job (a missing key fails fast), so
    # it needs the key as much as the workers do.
    export_api_key()
    args = stream_argv(list(sys.argv[1:] if argv is None else argv))
    return cli.main(args)


if __name__ == "__main__":
    sys.exit(main())
