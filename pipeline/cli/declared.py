"""Declared options (`transforms/common/options_spec.py`) added to an argparse parser, or to
anything
with its `add_argument` (Beam's parser in `options.py`). Imports none of the commands, so that
any command's module may use it."""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from rt4chart.transforms.common.options_spec import Option, declared

_ACTIONS = {"value": "store", "flag": "store_true", "append": "append"}


def add_option(p: argparse.ArgumentParser, dest: str, opt: Option) -> None:
    """One declared option on an argparse parser."""
    kwargs = {"dest": dest, "action": _ACTIONS[opt.kind], "help": opt.help}
    if opt.kind != "flag":
        kwargs.update(metavar=opt.metavar, choices=opt.choices, type=opt.parse)
    if opt.default is not None or opt.kind == "append":
        kwargs["default"] = opt.default
    if opt.required:
        kwargs["required"] = True
    p.add_argument(*opt.flags, **{k: v for k, v in kwargs.items()
                                  if v is not None or k == "help"})


def add_all(p: argparse.ArgumentParser, options: Iterable[tuple[str, Option]]) -> None:
    """Each (dest, Option) of `options`, in order."""
    for dest, opt in options:
        add_option(p, dest, opt)


def add_options(p: argparse.ArgumentParser, config: type) -> None:
    """Every option declared on the config class `config`."""
    add_all(p, declared(config))
