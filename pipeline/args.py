"""rt4chart's command-line options: the parsers of `audit` and `stream`, the judge options they
share with `eval`, and their conversion to typed configs.

Each command's options are added by an `add_*_args(parser)` function, which serves both the
command's argparse parser (help, positionals) and its Beam `PipelineOptions` view
(`options.py`): an option added there is a Beam pipeline option as well.
"""

from __future__ import annotations

import argparse
import logging
import os

from rt4chart.pipeline.annotate import cli as annotate_cli
from rt4chart.pipeline.chunks import add_chunk_args
from rt4chart.pipeline.config import AuditConfig, StagesConfig, StreamConfig
from rt4chart.pipeline.outputs import add_tables_args, tables_config
from rt4chart.pipeline.sources.options import (
    AUDIT_FORMAT_HELP,
    AUDIT_FORMATS,
    add_source_args,
    span_mapping,
)
from rt4chart.pipeline.textfiles import DEFAULT_MAX_RECORD_BYTES, byte_size
from rt4chart.transforms.alerts import AlertConfig
from rt4chart.transforms.confirm import add_confirm_args
from rt4chart.transforms.judges.base import JudgeSpec
from rt4chart.transforms.judges.job_limits import add_rate_and_price_args, rate_and_price_options
from rt4chart.transforms.limits import OVERSIZE_MODES, LimitsConfig
from rt4chart.transforms.prune import add_prune_args
from rt4chart.transforms.segment import SegmentConfig
from rt4chart.transforms.windows import WindowingConfig

logger = logging.getLogger("rt4chart")

OFFLINE_NOTICE = (
    "no judge endpoint configured (OPENAI_API_KEY / OPENAI_BASE_URL / --base-url): using the "
    "offline judge. Its verdicts are a lexical baseline, not a model's judgement."
)
# Shorthand flags for the openai judge's options.
OPENAI_FLAGS = ("model", "base_url", "rpm", "tpm", "max_concurrency")


BEAM_EPILOG = (
    "Beam's pipeline options (--runner DataflowRunner --project P --region R, "
    "--direct_num_workers N, ...) are accepted anywhere on the line. rt4chart's own options are "
    "Beam pipeline options too: a Dataflow job lists them with its options.")


def add_audit_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the `audit` command to the root parser's sub-commands."""
    p = sub.add_parser("audit", allow_abbrev=False, help="audit trace files (batch)",
                       description="Audit RAG traces from JSONL or Parquet files.",
                       epilog=BEAM_EPILOG)
    p.add_argument("inputs", nargs="*",
                   help="JSONL or Parquet trace files or globs (each file read in the format "
                        "its content says), or - for standard input (read once)")
    add_audit_args(p)
    return p


def add_audit_args(p: argparse.ArgumentParser) -> None:
    """The `audit` command's options (its input files are positional, added by the parser)."""
    p.add_argument("--example", action="store_true", help="audit the bundled example traces")
    p.add_argument("--redo", metavar="RUN_DIR",
                   help="audit again the traces whose answers were incomplete in an earlier "
                        "run (batch or stream output directory, or bq:PROJECT:DATASET), e.g. "
                        "after a judge outage")
    p.add_argument("--reuse", metavar="RUN_DIR",
                   help="reuse the judge results of an earlier run (its judge_cache table; a "
                        "directory or bq:PROJECT:DATASET) wherever a call's inputs, model and "
                        "prompts are unchanged")
    p.add_argument("--input-format", default="auto", choices=AUDIT_FORMATS, help=AUDIT_FORMAT_HELP)
    p.add_argument("--out", default="rt4chart-out", help="output directory (default: %(default)s)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the earlier run in --out, once this run has succeeded (it "
                        "writes to a staging folder first); files rt4chart did not write are "
                        "never removed")
    p.add_argument("--bigquery", metavar="PROJECT:DATASET",
                   help="also write the tables to this BigQuery dataset (file loads)")
    p.add_argument("--batch-api", action="store_true",
                   help="openai judge through the Batch API: half the price, a separate rate "
                        "limit, results within 24 h; resumable (state in OUT/_batch_state)")
    p.add_argument("--allow-partial-input", action="store_true",
                   help="audit what can be read of a truncated or corrupt input file (a "
                        "warning, and a dead letter saying how far it was read) instead of "
                        "failing the run")
    p.add_argument("--max-record-bytes", type=byte_size, default=DEFAULT_MAX_RECORD_BYTES,
                   metavar="SIZE",
                   help="a record (JSONL line, Parquet row) larger than this is a dead letter, "
                        "skipped while it is read, never parsed or held whole (default 16M; "
                        "units k, M, G)")
    p.add_argument("--progress-every", type=float, default=10.0, metavar="SECONDS",
                   help="seconds between progress lines while the job runs (default 10)")
    add_tables_args(p)
    add_judge_args(p)
    add_limits_args(p)
    annotate_cli.add_annotate_args(p)
    add_source_args(p)
    add_confirm_args(p)
    add_chunk_args(p)


def add_stream_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the `stream` command to the root parser's sub-commands."""
    p = sub.add_parser(
        "stream", allow_abbrev=False, help="audit a Pub/Sub subscription (streaming)",
        description="Audit RAG traces published to Pub/Sub, continuously, with windowed "
                    "per-route rates and alerts. Stop with Ctrl-C or SIGTERM.",
        epilog=BEAM_EPILOG)
    add_stream_args(p)
    return p


def add_stream_args(p: argparse.ArgumentParser) -> None:
    """The `stream` command's options."""
    p.add_argument("--subscription", required=True,
                   help="projects/PROJECT/subscriptions/NAME; a message body is one JSON trace")
    p.add_argument("--out", help="write the tables as Parquet files under this directory")
    p.add_argument("--bigquery", metavar="PROJECT:DATASET",
                   help="write the tables to this BigQuery dataset (streaming inserts)")
    p.add_argument("--dead-letter-topic", "--dead_letter_topic", dest="dead_letter_topic",
                   help="projects/P/topics/T: malformed messages, payload kept, reason and "
                        "stage as attributes")
    p.add_argument("--alerts-topic", "--alerts_topic", dest="alerts_topic",
                   help="projects/P/topics/T: one JSON message per alert")
    add_window_and_alert_args(p)
    p.add_argument("--dedupe-horizon", "--dedupe_horizon", dest="dedupe_horizon", type=float,
                   default=86_400.0, help="seconds a trace_id is remembered (default 86400)")
    p.add_argument("--join-timeout", "--join_timeout", dest="join_timeout", type=float,
                   default=900.0, help="seconds a trace waits for its judge results before "
                                       "the missing ones are recorded as failures "
                                       "(default 900)")
    p.add_argument("--id-attribute", "--id_attribute", dest="id_attribute",
                   help="message attribute with a unique id for Pub/Sub's own dedupe "
                        "(Dataflow only; the local runner hangs with it)")
    add_tables_args(p)
    add_judge_args(p)
    add_limits_args(p)
    annotate_cli.add_annotate_args(p, streaming=True)
    add_source_args(p, stream=True)
    add_confirm_args(p)


def add_window_and_alert_args(p: argparse.ArgumentParser) -> None:
    """The stream's rate windows, their firings and the alert rules."""
    p.add_argument("--rate-window", "--rate_window", "--window", dest="window", type=int,
                   default=300,
                   help="rate window in seconds of event time (default 300)")
    p.add_argument("--sliding-period", "--sliding_period", dest="sliding_period", type=int,
                   help="sliding windows: start a window every N seconds (default: fixed)")
    p.add_argument("--early-firing", "--early_firing", dest="early_firing", type=float,
                   default=30.0, help="seconds between early firings of an open window "
                                      "(default 30; 0 for none)")
    p.add_argument("--allowed-lateness", "--allowed_lateness", dest="allowed_lateness",
                   type=int, default=3600,
                   help="seconds after a window's end during which late traces still update "
                        "it (default 3600); later ones are audited and marked late")
    p.add_argument("--alert-rate", "--alert_rate", dest="alert_rate", type=float,
                   help="alert when a window's rate exceeds this (default: off)")
    p.add_argument("--alert-relative", "--alert_relative", dest="alert_relative", type=float,
                   default=2.0, help="alert when a window's rate is N times the route's "
                                     "trailing baseline and significantly above it (default 2; "
                                     "0 for off)")
    p.add_argument("--alert-min-traces", "--alert_min_traces", dest="alert_min_traces",
                   type=int, default=20, help="traces a window needs to alert (default 20)")
    p.add_argument("--alert-baseline-windows", "--alert_baseline_windows",
                   dest="alert_baseline_windows", type=int, default=12,
                   help="windows in the trailing baseline (default 12)")


def add_judge_args(p: argparse.ArgumentParser) -> None:
    """The judge and window options that `audit`, `stream` and `eval` share."""
    p.add_argument("--judge", default="auto",
                   help="offline | openai | package.module:factory (default: openai when an "
                        "endpoint is configured, else offline)")
    p.add_argument("--judge-option", action="append", default=[], metavar="KEY=VALUE",
                   help="option passed to the judge factory (repeatable)")
    p.add_argument("--model", help="openai judge: model (default gpt-4o-mini)")
    p.add_argument("--base-url", dest="base_url", help="openai judge: endpoint base URL")
    p.add_argument("--rpm", help="openai judge: requests per minute for the whole job (default: "
                                 "the provider's x-ratelimit-limit-requests, starting at 500; "
                                 "see --rate-limiter)")
    p.add_argument("--tpm", help="openai judge: tokens per minute for the whole job (default: "
                                 "the provider's limit, starting at 200000)")
    p.add_argument("--max-concurrency", dest="max_concurrency",
                   help="openai judge: calls in flight per worker (default 32)")
    p.add_argument("--claims-per-call", type=int, default=1, metavar="N",
                   help="local verification: check up to N claims of an answer against a "
                        "window in one judge call (default 1, the paper's schedule)")
    p.add_argument("--window-size", type=int, default=25, help="W, sentences (default 25)")
    p.add_argument("--window-overlap", type=int, default=10, help="O, sentences (default 10)")
    add_prune_args(p)
    p.add_argument("-v", "--verbose", action="store_true")
    add_rate_and_price_args(p)


# The work limits per trace as options: (flag, LimitsConfig field, help).
LIMIT_FLAGS = (
    ("--max-answer-sentences", "max_answer_sentences", "answer sentences (one decomposition "
                                                      "call each)"),
    ("--max-context-sentences", "max_context_sentences", "context sentences over all documents "
                                                        "(they make the windows)"),
    ("--max-context-chars", "max_context_chars", "characters over all context documents"),
    ("--max-claims-per-answer", "max_claims_per_answer", "claims decomposed from one answer"),
)


def add_limits_args(p: argparse.ArgumentParser) -> None:
    """The work limits per trace (`transforms/limits.py`), shared by `audit` and `stream`."""
    defaults = LimitsConfig()
    for flag, name, what in LIMIT_FLAGS:
        p.add_argument(flag, dest=name, type=int, metavar="N",
                       help=f"limit per trace: {what} (default {getattr(defaults, name):,}); a "
                            "trace over it is a dead letter naming the limit, or see --oversize")
    p.add_argument("--oversize", metavar="|".join(OVERSIZE_MODES),
                   help="a trace over a limit: reject (default: a dead letter naming the "
                        "limit) or truncate (audit its first N sentences or claims)")


def limits_config(args: argparse.Namespace) -> LimitsConfig:
    """The work limits the options give (defaults for those not given); ValueError naming the
    option on a bad value."""
    given = {name: getattr(args, name, None) for _, name, _ in LIMIT_FLAGS}
    for flag, name, _ in LIMIT_FLAGS:
        if given[name] is not None and given[name] < 1:
            raise ValueError(f"{flag} must be >= 1, got {given[name]}")
    oversize = getattr(args, "oversize", None)
    if oversize is not None and oversize not in OVERSIZE_MODES:
        raise ValueError(f"--oversize must be {' or '.join(OVERSIZE_MODES)}, got {oversize!r}")
    return LimitsConfig(**{k: v for k, v in given.items() if v is not None},
                        **({"oversize": oversize} if oversize else {}))


def judge_spec(args: argparse.Namespace) -> JudgeSpec:
    """The judge the options name (`auto`: openai when an endpoint is configured)."""
    options: dict[str, str] = {}
    for item in args.judge_option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--judge-option expects KEY=VALUE, got {item!r}")
        options[key.strip()] = value
    shorthand = {k: getattr(args, k) for k in OPENAI_FLAGS if getattr(args, k) is not None}
    shorthand.update(rate_and_price_options(args))
    name = args.judge
    if name == "auto":
        configured = args.base_url or os.environ.get("OPENAI_BASE_URL") or os.environ.get(
            "OPENAI_API_KEY")
        name = "openai" if configured else "offline"
        if name == "offline":
            logger.warning(OFFLINE_NOTICE)
    if getattr(args, "batch_api", False):
        if name not in ("openai", "openai-batch"):
            raise ValueError(f"--batch-api needs the openai judge, not {name!r}")
        name = "openai-batch"
        options.setdefault("batch_state_dir", os.path.join(args.out, "_batch_state"))
    if shorthand and name not in ("openai", "openai-batch"):
        raise ValueError(f"--{', --'.join(shorthand)} apply to the openai judge, not {name!r}")
    return JudgeSpec.of(name, {**options, **{k: str(v) for k, v in shorthand.items()}})


def segment_config(args: argparse.Namespace) -> SegmentConfig:
    """Windows and work limits (the limits' defaults where the command has no limit options)."""
    return SegmentConfig(args.window_size, args.window_overlap, limits_config(args))


def audit_config(args: argparse.Namespace, example: str | None = None) -> AuditConfig:
    """The `audit` command's typed configuration; `example`: the bundled traces' path, audited
    with `--example` (ValueError on a bad value)."""
    inputs = tuple(args.inputs) + ((example,) if args.example and example else ())
    return AuditConfig(
        inputs=inputs, out=args.out, judge=judge_spec(args), overwrite=args.overwrite,
        input_format=args.input_format, segment=segment_config(args), bigquery=args.bigquery,
        claims_per_call=args.claims_per_call, reuse=args.reuse, redo=args.redo,
        allow_partial_input=args.allow_partial_input, spans=span_mapping(args),
        progress_every_s=args.progress_every,
        confirm_ent=getattr(args, "confirm_ent", False),
        tables=tables_config(args),
        chunk_traces=args.chunk_traces,
        prune_windows=args.prune_windows,
        max_record_bytes=args.max_record_bytes,
    )


def stream_config(args: argparse.Namespace, spec: JudgeSpec) -> StreamConfig:
    """The `stream` command's typed configuration (ValueError on a bad value)."""
    windowing = WindowingConfig.streaming_default(
        args.window, args.sliding_period, args.early_firing or None, args.allowed_lateness)
    stages = StagesConfig(spec, segment_config(args), windowing,
                          args.join_timeout, args.dedupe_horizon, args.claims_per_call,
                          confirm_ent=getattr(args, "confirm_ent", False),
                          prune_windows=args.prune_windows)
    alerts = AlertConfig(args.alert_rate, args.alert_relative or None, args.alert_min_traces,
                         args.alert_baseline_windows)
    return StreamConfig(args.subscription, stages, args.out, args.bigquery,
                        args.dead_letter_topic, args.alerts_topic, alerts, args.id_attribute,
                        args.input_format, span_mapping(args), tables_config(args))


def split_beam_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """Beam's own options set apart from rt4chart's arguments (see `options.split_beam_args`)."""
    from rt4chart.pipeline.options import split_beam_args as split  # it imports this module

    return split(argv)
