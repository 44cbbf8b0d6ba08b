"""The docs' option tables (docs/options.md), made from the options' declarations
(`options/flags.py`): one Markdown table per command (flag, default, help), written between
`<!-- options:begin -->` and `<!-- options:end -->`.

    python -m rt4chart.pipeline.options.reference docs/options.md          # rewrite the tables
    python -m rt4chart.pipeline.options.reference docs/options.md --check  # exit 1 if not current
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rt4chart.pipeline.options.flags import COMMANDS, Options
from rt4chart.transforms.common.options_spec import Option

BEGIN, END = "<!-- options:begin -->", "<!-- options:end -->"
NOTE = ("<!-- generated from the options' declarations by "
        "`python -m rt4chart.pipeline.options.reference docs/options.md`: "
        "edit the declarations -->")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _value_name(dest: str, opt: Option) -> str:
    """What follows the flag in the table, as argparse's usage shows it."""
    if opt.kind == "flag":
        return ""
    if opt.metavar:
        return f" {opt.metavar}"
    return " {" + ",".join(opt.choices) + "}" if opt.choices else f" {dest.upper()}"


def _flags(dest: str, opt: Option) -> str:
    """The option's flags, but the snake_case aliases kept for Beam and the Flex Template."""
    shown = [f for f in opt.flags if not ("_" in f and f.replace("_", "-") in opt.flags)]
    value = _value_name(dest, opt)
    return ", ".join(f"`{f}{value}`" for f in shown)


def _default(opt: Option) -> str:
    if opt.kind == "flag" or opt.default in (None, []):
        return ""
    return f"`{opt.default}`"


def _row(dest: str, opt: Option) -> str:
    help_text = (opt.help or "") % {"default": opt.default}
    return f"| {_cell(_flags(dest, opt))} | {_cell(_default(opt))} | {_cell(help_text)} |"


def table(options: Options) -> str:
    """One command's options as a Markdown table, in the order of its help."""
    rows = [_row(dest, opt) for dest, opt in options]
    return "\n".join(["| Option | Default | Help |", "| --- | --- | --- |", *rows])


def tables() -> str:
    """Every command's table, under a heading each, between the markers."""
    parts = [BEGIN, NOTE]
    for command, options in COMMANDS.items():
        parts += ["", f"## `rt4chart {command}`", "", table(options)]
    return "\n".join([*parts, "", END])


def current(text: str) -> str:
    """`text` (docs/options.md) with its tables replaced by the declarations' (ValueError without
    the markers)."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"no {BEGIN} ... {END} section")
    return text[:start] + tables() + text[end + len(END):]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("readme", type=Path)
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the tables are not what the declarations give")
    args = parser.parse_args(argv)
    text = args.readme.read_text()
    wanted = current(text)
    if args.check:
        if wanted != text:
            print(f"{args.readme}: option tables not current: run python -m "
                  f"rt4chart.pipeline.options.reference {args.readme}", file=sys.stderr)
            return 1
        return 0
    args.readme.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
