"""The audit's options and its typed configuration built from their values, without argparse.

`AUDIT` lists `rt4chart audit`'s options, as the configs that own them declare them
(`transforms/common/options_spec.py`); `SHARED` those `audit`, `stream` and `eval` share. The
builders (`audit_config`, `stages_config`, `stream_config`, ...) take `values`, any object with
the options' dests as attributes: the command line's parsed `argparse.Namespace`
(`cli/parsers.py`) and the Python API's keywords (`api.py`) alike, so that both doors
build the same frozen configs, checked by the configs' own `__post_init__`. Nothing here
parses text into options: that is the command line's (`pipeline/cli/`).
"""

from __future__ import annotations

import os
from typing import Any

from rt4chart.pipeline.annotate.options import AnnotateOptions, annotate_options
from rt4chart.pipeline.run.config import AuditConfig, AuditSwitches, StagesConfig, StreamConfig
from rt4chart.pipeline.sinks.options import TablesConfig, tables_config
from rt4chart.pipeline.sources.phoenix_api import API_FORMAT, PhoenixSource
from rt4chart.pipeline.sources.phoenix_client import ENDPOINT_ENV, PhoenixTarget
from rt4chart.transforms.alerts import AlertConfig
from rt4chart.transforms.common.limits import LimitsConfig
from rt4chart.transforms.common.options_spec import (
    Option,
    declared,
    field_option,
    fields_options,
    from_values,
)
from rt4chart.transforms.common.span_mapping import SpanMapping
from rt4chart.transforms.common.windows import WindowingConfig
from rt4chart.transforms.confirm import ConfirmConfig
from rt4chart.transforms.estimate import AuditEstimateSwitches
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.judge_options import RATE_AND_PRICE, SHORTHAND, JudgeOptions
from rt4chart.transforms.sampling import SamplingConfig
from rt4chart.transforms.segment import SegmentConfig
from rt4chart.transforms.spend_cap import CapConfig
from rt4chart.transforms.verify_local import VerifyLocalConfig

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
SPANS: Options = fields_options(SpanMapping, "route_attribute", "trace_id_attribute")

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
    *SPANS,
    *declared(ConfirmConfig),
    field_option(CapConfig, "max_usd"),
    *declared(SamplingConfig),
    field_option(AuditConfig, "chunk_traces"),
    *declared(AuditEstimateSwitches),
)


def defaults(options: Options) -> dict[str, Any]:
    """Each option's value when it is not given, as the command's parser has it (a switch
    False, an option without a default None)."""
    return {dest: False if opt.kind == "flag" and opt.default is None else opt.default
            for dest, opt in options}


def judge_spec(values: Any) -> JudgeSpec:
    """The judge the options name (`auto`: openai when an endpoint is configured)."""
    batch = (os.path.join(values.out, "_batch_state") if getattr(values, "batch_api", False)
             else None)
    return from_values(JudgeOptions, values).spec(batch)


def segment_config(values: Any) -> SegmentConfig:
    """Windows and work limits (the limits' defaults where the command has no limit options)."""
    return from_values(SegmentConfig, values, limits=from_values(LimitsConfig, values))


def stage_configs(values: Any) -> dict[str, Any]:
    """The stages' own configs that `audit`, `stream` and `eval` share, by StagesConfig field."""
    return {"verify_local": from_values(VerifyLocalConfig, values),
            "confirm": from_values(ConfirmConfig, values),
            "caps": from_values(CapConfig, values),
            "sampling": from_values(SamplingConfig, values)}


def stages_config(values: Any) -> StagesConfig:
    """The batch stages' config (`audit`, `eval`): the judge, the windows, the stages' own."""
    return StagesConfig(judge=judge_spec(values), segment=segment_config(values),
                        **stage_configs(values))


def span_mapping(values: Any) -> SpanMapping:
    """The span mapping the options give (ValueError on a bad value)."""
    return from_values(SpanMapping, values)


def phoenix_source(values: Any) -> PhoenixSource | None:
    """What `--input-format phoenix-api` reads (the endpoint and project are the write-back's
    options, `--phoenix-endpoint`, `--phoenix-project`); None for other formats (ValueError
    on a bad value, or a phoenix-api option without phoenix-api)."""
    if getattr(values, "input_format", None) != API_FORMAT:
        given = [flag for dest, flag in (("since", "--since"), ("until", "--until"),
                                         ("watermark", "--watermark"))
                 if getattr(values, dest, None)]
        if given:
            raise ValueError(f"{', '.join(given)}: only with --input-format {API_FORMAT}")
        return None
    endpoint = getattr(values, "phoenix_endpoint", None) or os.environ.get(ENDPOINT_ENV)
    if not endpoint:
        raise ValueError(f"--input-format {API_FORMAT} needs the Phoenix URL: give "
                         f"--phoenix-endpoint or set ${ENDPOINT_ENV}")
    opts = from_values(AnnotateOptions, values)
    target = PhoenixTarget(endpoint, opts.phoenix_project or "default")
    return from_values(PhoenixSource, values, target=target)


def audit_config(values: Any, example: str | None = None, **fields: Any) -> AuditConfig:
    """The `audit` command's typed configuration; `example`: the bundled traces' path, audited
    with `--example`; `fields`: AuditConfig fields given whole (the API's in-memory
    `records`). ValueError on a bad value."""
    switches = from_values(AuditSwitches, values)
    inputs = tuple(values.inputs) + ((example,) if switches.example and example else ())
    return from_values(AuditConfig, values, inputs=inputs, stages=stages_config(values),
                       spans=span_mapping(values), tables=tables_config(values),
                       phoenix=phoenix_source(values), **fields)


def stream_config(values: Any, spec: JudgeSpec) -> StreamConfig:
    """The `stream` command's typed configuration (ValueError on a bad value)."""
    return from_values(StreamConfig, values, stages=stream_stages(values, spec),
                       alerts=from_values(AlertConfig, values),
                       spans=span_mapping(values), tables=tables_config(values))


def stream_stages(values: Any, spec: JudgeSpec) -> StagesConfig:
    """The `stream` command's stages alone (what `stream --estimate` needs: no sink)."""
    windowing = from_values(WindowingConfig, values, streaming=True)
    return from_values(StagesConfig, values, judge=spec, segment=segment_config(values),
                       windowing=windowing, **stage_configs(values))
