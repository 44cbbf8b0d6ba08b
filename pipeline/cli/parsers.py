"""rt4chart's command lines: the parsers of `audit` and `stream`; their parsed values become
typed configs through `run/settings.py`, as the Python API's keywords do.

The options themselves are added by `options/flags.py`, from the declarations on the stages' configs
(`transforms/common/options_spec.py`); the same functions give Beam's `PipelineOptions` views
(`options/beam.py`), so an option added there is a Beam pipeline option as well.
"""

from __future__ import annotations

import argparse
from typing import Any

from rt4chart.pipeline.options.beam import split_beam_args
from rt4chart.pipeline.options.flags import add_audit_args, add_stream_args

# The typed configs are built from the parsed values by the same functions the Python API
# uses (`run/settings.py`, no argparse there): the command line only parses.
from rt4chart.pipeline.run.settings import (
    audit_config,
    judge_spec,
    segment_config,
    span_mapping,
    stage_configs,
    stages_config,
    stream_config,
    stream_stages,
)

__all__ = ["add_audit_parser", "add_stream_parser", "audit_config", "judge_spec", "segment_config",
           "span_mapping", "split_beam_args", "stage_configs", "stages_config", "stream_config",
           "stream_stages"]

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
