"""rt4chart's command lines: the parsers of `audit` and `stream`, and their parsed values as
typed configs.

The options themselves are added by `flags.py`, from the declarations on the stages' configs
(`transforms/common/options_spec.py`); the same functions give Beam's `PipelineOptions` views
(`options.py`), so an option added there is a Beam pipeline option as well.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from rt4chart.pipeline.cli.beam_options import split_beam_args
from rt4chart.pipeline.cli.flags import add_audit_args, add_stream_args
from rt4chart.pipeline.cli.source_options import phoenix_source, span_mapping
from rt4chart.pipeline.run.config import AuditConfig, AuditSwitches, StagesConfig, StreamConfig
from rt4chart.pipeline.sinks.options import tables_config
from rt4chart.transforms.alerts import AlertConfig
from rt4chart.transforms.common.limits import LimitsConfig
from rt4chart.transforms.common.options_spec import from_values
from rt4chart.transforms.common.windows import WindowingConfig
from rt4chart.transforms.confirm import ConfirmConfig
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.judge_options import JudgeOptions
from rt4chart.transforms.sampling import SamplingConfig
from rt4chart.transforms.segment import SegmentConfig
from rt4chart.transforms.spend_cap import CapConfig
from rt4chart.transforms.verify_local import VerifyLocalConfig

__all__ = ["add_audit_parser", "add_stream_parser", "audit_config", "judge_spec", "segment_config",
           "split_beam_args", "stage_configs", "stream_config"]

BEAM_EPILOG = (
    "Beam's pipeline options (--runner DataflowRunner --project P --region R, "
    "--direct_num_workers N, ...) are accepted anywhere on the line. rt4chart's own options are "
    "Beam pipeline options too: a Dataflow job lists them with its options.")


def add_audit_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the `audit` command to the root parser's sub-commands."""
    p = sub.add_parser("audit", allow_abbrev=False, help="audit trace files (batch)",
                       description="Audit RAG traces from JSONL or Parquet files. Exit codes: 0 "
                                   "done, every answer complete; 1 the run failed or judged "
                                   "nothing; 2 a usage error; 3 done, but answers were left "
                                   "incomplete (a judge call failed on them: --redo audits "
                                   "them again).",
                       epilog=BEAM_EPILOG)
    p.add_argument("inputs", nargs="*",
                   help="JSONL or Parquet trace files or globs (each file read in the format "
                        "its content says), or - for standard input (read once)")
    add_audit_args(p)
    return p


def add_stream_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the `stream` command to the root parser's sub-commands."""
    p = sub.add_parser(
        "stream", allow_abbrev=False, help="audit a Pub/Sub subscription (streaming)",
        description="Audit RAG traces published to Pub/Sub, continuously, with windowed "
                    "per-route rates and alerts. Stop with Ctrl-C or SIGTERM.",
        epilog=BEAM_EPILOG)
    add_stream_args(p)
    return p


def judge_spec(args: argparse.Namespace) -> JudgeSpec:
    """The judge the options name (`auto`: openai when an endpoint is configured)."""
    batch = os.path.join(args.out, "_batch_state") if getattr(args, "batch_api", False) else None
    return from_values(JudgeOptions, args).spec(batch)


def segment_config(args: argparse.Namespace) -> SegmentConfig:
    """Windows and work limits (the limits' defaults where the command has no limit options)."""
    return from_values(SegmentConfig, args, limits=from_values(LimitsConfig, args))


def stage_configs(args: argparse.Namespace) -> dict[str, Any]:
    """The stages' own configs that `audit`, `stream` and `eval` share, by StagesConfig field."""
    return {"verify_local": from_values(VerifyLocalConfig, args),
            "confirm": from_values(ConfirmConfig, args), "caps": from_values(CapConfig, args),
            "sampling": from_values(SamplingConfig, args)}


def stages_config(args: argparse.Namespace) -> StagesConfig:
    """The batch stages' config (`audit`, `eval`): the judge, the windows, the stages' own."""
    return StagesConfig(judge=judge_spec(args), segment=segment_config(args),
                        **stage_configs(args))


def audit_config(args: argparse.Namespace, example: str | None = None) -> AuditConfig:
    """The `audit` command's typed configuration; `example`: the bundled traces' path, audited
    with `--example` (ValueError on a bad value)."""
    switches = from_values(AuditSwitches, args)
    inputs = tuple(args.inputs) + ((example,) if switches.example and example else ())
    return from_values(AuditConfig, args, inputs=inputs, stages=stages_config(args),
                       spans=span_mapping(args), tables=tables_config(args),
                       phoenix=phoenix_source(args))


def stream_config(args: argparse.Namespace, spec: JudgeSpec) -> StreamConfig:
    """The `stream` command's typed configuration (ValueError on a bad value)."""
    return from_values(StreamConfig, args, stages=stream_stages(args, spec),
                       alerts=from_values(AlertConfig, args),
                       spans=span_mapping(args), tables=tables_config(args))


def stream_stages(args: argparse.Namespace, spec: JudgeSpec) -> StagesConfig:
    """The `stream` command's stages alone (what `stream --estimate` needs: no sink)."""
    windowing = from_values(WindowingConfig, args, streaming=True)
    return from_values(StagesConfig, args, judge=spec, segment=segment_config(args),
                       windowing=windowing, **stage_configs(args))

