"""The command-line options of `audit`, `stream` and `eval`, as ordered lists of the options
their owners declare (`transforms/common/options_spec.py`): each command's parser (`args.py`,
`eval/cli.py`), its Beam `PipelineOptions` view (`options.py`), the Flex Template metadata
(`infra/flex_template/metadata.py`) and the README's option tables (`option_tables.py`) are
made from these lists. This module imports neither `args` nor `options`.
"""

from __future__ import annotations

import argparse

from rt4chart.pipeline.annotate.options import AnnotateOptions, annotate_options
from rt4chart.pipeline.cli.declared import add_all, add_option, add_options
from rt4chart.pipeline.eval.phoenix_labels import GoldOptions
from rt4chart.pipeline.eval.runner import EvalOptions
from rt4chart.pipeline.run.config import AuditConfig, AuditSwitches, StagesConfig, StreamConfig
from rt4chart.pipeline.sinks.options import TablesConfig
from rt4chart.pipeline.sources.phoenix_api import PhoenixSource
from rt4chart.transforms.alerts import AlertConfig
from rt4chart.transforms.common.limits import LimitsConfig
from rt4chart.transforms.common.options_spec import Option, declared, field_option, fields_options
from rt4chart.transforms.common.span_mapping import SpanMapping
from rt4chart.transforms.common.windows import WindowingConfig
from rt4chart.transforms.confirm import ConfirmConfig
from rt4chart.transforms.estimate import AuditEstimateSwitches, StreamEstimateSwitches
from rt4chart.transforms.judges.judge_options import RATE_AND_PRICE, SHORTHAND, JudgeOptions
from rt4chart.transforms.sampling import SamplingConfig
from rt4chart.transforms.segment import SegmentConfig
from rt4chart.transforms.spend_cap import CapConfig
from rt4chart.transforms.verify_local import VerifyLocalConfig

__all__ = ["AUDIT", "EVAL", "SHARED", "STREAM", "add_audit_args", "add_eval_args", "add_option",
           "add_options", "add_stream_args", "declared_flex", "stream_dests", "VERBOSE_HELP"]

Options = tuple[tuple[str, Option], ...]
VERBOSE_HELP = ("debug lines too (each judge call's retries and waits, a failed run's "
                "traceback); the default shows progress, warnings and errors")
VERBOSE = ("verbose", Option(("-v", "--verbose"), kind="flag", default=False, help=VERBOSE_HELP))
_FIRST_JUDGE = ("judge", "judge_option", *SHORTHAND)
# The options `audit`, `stream` and `eval` share (the judge, the windows, local verification),
# in the order of their help; `eval` records them as `audit` takes them.
SHARED: Options = (
    *fields_options(JudgeOptions, *_FIRST_JUDGE),
    field_option(VerifyLocalConfig, "claims_per_call"),
    *declared(SegmentConfig),
    field_option(VerifyLocalConfig, "prune_windows"),
    VERBOSE,
    *fields_options(JudgeOptions, *RATE_AND_PRICE),
)
_SPANS: Options = fields_options(SpanMapping, "route_attribute", "trace_id_attribute")

# `rt4chart audit`'s options (its input files are positional, added by its parser).
AUDIT: Options = (
    field_option(AuditSwitches, "example"),
    *fields_options(AuditConfig, "redo", "reuse", "input_format", "out", "overwrite",
                    "bigquery"),
    field_option(AuditSwitches, "batch_api"),
    *fields_options(AuditConfig, "allow_partial_input", "max_record_bytes", "progress_every_s"),
    *declared(TablesConfig),
    *SHARED,
    *declared(LimitsConfig),
    *annotate_options(),
    *declared(PhoenixSource),
    *_SPANS,
    *declared(ConfirmConfig),
    field_option(CapConfig, "max_usd"),
    *declared(SamplingConfig),
    field_option(AuditConfig, "chunk_traces"),
    *declared(AuditEstimateSwitches),
)

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
