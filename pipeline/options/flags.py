"""Each command's options, and how a declared option becomes an argparse option.

The command-line options of `audit`, `stream` and `eval`, as ordered lists of the options
their owners declare (`transforms/common/options_spec.py`): each command's parser
(`cli/parsers.py`, `cli/eval.py`), its Beam `PipelineOptions` view (`options/beam.py`), the
Flex Template metadata (`infra/flex_template/metadata.py`) and the docs' option tables
(`options/reference.py`) are made from these lists. Declared options are added to an argparse
parser, or to anything with its `add_argument` (Beam's parser in `options/beam.py`), by
`add_option`/`add_all`/`add_options`. Imports none of the commands, so that any command's
module may use it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from rt4chart.pipeline.annotate.options import AnnotateOptions, annotate_options
from rt4chart.pipeline.eval.phoenix_labels import GoldOptions
from rt4chart.pipeline.eval.runner import EvalOptions
from rt4chart.pipeline.run.config import AuditConfig, StagesConfig, StreamConfig
from rt4chart.pipeline.run.settings import AUDIT, SHARED, SPANS, VERBOSE_HELP, Options
from rt4chart.pipeline.sinks.options import TablesConfig
from rt4chart.transforms.alerts import AlertConfig
from rt4chart.transforms.common.limits import LimitsConfig
from rt4chart.transforms.common.options_spec import Option, declared, field_option, fields_options
from rt4chart.transforms.common.span_mapping import SpanMapping
from rt4chart.transforms.common.windows import WindowingConfig
from rt4chart.transforms.confirm import ConfirmConfig
from rt4chart.transforms.estimate import StreamEstimateSwitches
from rt4chart.transforms.sampling import SamplingConfig
from rt4chart.transforms.spend_cap import CapConfig

__all__ = ["AUDIT", "EVAL", "SHARED", "STREAM", "add_all", "add_audit_args", "add_eval_args",
           "add_option", "add_options", "add_stream_args", "declared_flex", "stream_dests",
           "VERBOSE_HELP"]

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


# `audit`'s options and those the commands share are listed with the typed configs they build
# (run/settings.py, no argparse: the Python API takes them too).
_SPANS = SPANS

# `rt4chart stream`'s options; the Flex Template's parameters follow this order.
STREAM: Options = (
    *fields_options(StreamConfig, "subscription", "out", "bigquery", "dead_letter_topic",
                    "alerts_topic"),
    *declared(WindowingConfig),
    *declared(AlertConfig),
    *fields_options(StagesConfig, "dedupe_horizon_s", "join_timeout_s"),
    field_option(StreamConfig, "id_attribute"),
    *declared(TablesConfig),
    *SHARED,
    *declared(LimitsConfig),
    *annotate_options(streaming=True),
    field_option(StreamConfig, "input_format"),
    field_option(SpanMapping, "trace_gap_s"),
    *_SPANS,
    *declared(ConfirmConfig),
    field_option(CapConfig, "max_usd_per_hour"),
    *declared(SamplingConfig),
    *declared(StreamEstimateSwitches),
    field_option(AuditConfig, "progress_every_s"),  # the launcher's, as audit's
)

# `rt4chart eval`'s options (and `eval calibrate`'s, which adds --write).
EVAL: Options = (
    *fields_options(EvalOptions, "dataset", "data", "split", "tasks", "limit", "seed",
                    "bootstrap", "label_map", "out", "overwrite"),
    *declared(GoldOptions),
    *fields_options(AnnotateOptions, "phoenix_endpoint", "phoenix_project"),
    *SHARED,
    *declared(ConfirmConfig),
)

COMMANDS: dict[str, Options] = {"audit": AUDIT, "stream": STREAM, "eval": EVAL}


def add_audit_args(p: argparse.ArgumentParser) -> None:
    """The `audit` command's options (its input files are positional, added by the parser)."""
    add_all(p, AUDIT)


def add_stream_args(p: argparse.ArgumentParser) -> None:
    """The `stream` command's options."""
    add_all(p, STREAM)


def add_eval_args(p: argparse.ArgumentParser) -> None:
    """The `eval` command's options (also its Beam options view, `options.EvalCommandOptions`)."""
    add_all(p, EVAL)


def stream_dests() -> list[str]:
    """The dests of `rt4chart stream`'s options, in the order its parser has them."""
    return [dest for dest, _ in STREAM]


def option_strings() -> set[str]:
    """Every option string of `audit`, `stream` and `eval`."""
    return {flag for options in COMMANDS.values() for _, opt in options for flag in opt.flags}


def _flex_param(dest: str, opt: Option) -> dict:
    f = opt.flex
    param = {"name": f.name or dest, "label": f.label, "helpText": f.help,
             "isOptional": f.optional}
    param.update({"regexes": list(f.regexes)} if f.regexes else {})
    param.update({"paramType": f.param_type} if f.param_type else {})
    return param


def declared_flex() -> dict[str, dict]:
    """The Flex Template parameters the stream's options declare, by dest (metadata.json
    form), in the order of its options."""
    return {dest: _flex_param(dest, opt) for dest, opt in STREAM if opt.flex is not None}
