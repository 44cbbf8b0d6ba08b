"""The jobs' configuration: frozen dataclasses, validated once."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field

from rt4chart.pipeline.sinks.options import TablesConfig
from rt4chart.pipeline.sources.detect import INPUT_FORMATS, STREAM_FORMATS
from rt4chart.pipeline.sources.memory import MemoryRecords
from rt4chart.pipeline.sources.phoenix_api import API_FORMAT, PhoenixSource
from rt4chart.pipeline.storage.run_folder import check_out
from rt4chart.pipeline.storage.text_files import (
    DEFAULT_MAX_RECORD_BYTES,
    MIN_RECORD_BYTES,
    byte_size,
)
from rt4chart.transforms.alerts import AlertConfig
from rt4chart.transforms.common.options_spec import Flex, option
from rt4chart.transforms.common.span_mapping import SpanMapping
from rt4chart.transforms.common.windows import WindowingConfig
from rt4chart.transforms.confirm import ConfirmConfig
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.regroup import DEFAULT_TIMEOUT_S
from rt4chart.transforms.sampling import SamplingConfig
from rt4chart.transforms.segment import SegmentConfig
from rt4chart.transforms.spend_cap import CapConfig
from rt4chart.transforms.verify_local import VerifyLocalConfig

DEFAULT_CHUNK_TRACES = 400  # local runs: traces per pipeline run (pipeline/run/chunked_audit.py)
AUDIT_FORMAT_HELP = ("input format (default auto: by suffix, .parquet/.pq else JSON lines, or "
                     "what the file says it is: OTLP JSON, OpenInference span JSON, a Phoenix "
                     "spans export, a Langfuse export; see docs/sources.md); phoenix-api: no "
                     "files, the spans of a live Phoenix server (--phoenix-endpoint, "
                     "--phoenix-project, --since, --until, --watermark)")
AUDIT_FORMATS = (*INPUT_FORMATS, API_FORMAT)


@dataclass(frozen=True)
class StagesConfig:
    """How the audit stages run, in batch or streaming alike."""

    judge: JudgeSpec
    segment: SegmentConfig = SegmentConfig()
    windowing: WindowingConfig = WindowingConfig()
    join_timeout_s: float = option(
        "--join-timeout", "--join_timeout", dest="join_timeout", default=DEFAULT_TIMEOUT_S,
        parsed_default=900.0, parse=float,
        flex=Flex(
            "Judge join timeout (s)",
            "Seconds a trace waits for its judge results before the missing ones are recorded "
            "as failures. Default: 900.",
            regexes=("^[0-9]+(\\.[0-9]+)?$",)),
        help="seconds a trace waits for its judge results before the missing ones are "
             "recorded as failures (default 900)")
    dedupe_horizon_s: float = option(
        "--dedupe-horizon", "--dedupe_horizon", dest="dedupe_horizon", default=86_400.0,
        parse=float,
        flex=Flex(
            "Dedupe horizon (s)",
            "Seconds a trace_id is remembered to audit a redelivered trace once. Default: "
            "86400.",
            regexes=("^[0-9]+(\\.[0-9]+)?$",)),
        help="seconds a trace_id is remembered (default 86400)")
    verify_local: VerifyLocalConfig = VerifyLocalConfig()
    confirm: ConfirmConfig = ConfirmConfig()
    caps: CapConfig = CapConfig()  # --max-usd, --max-usd-per-hour (transforms/spend_cap.py)
    sampling: SamplingConfig = SamplingConfig()  # which valid traces are audited

    @property
    def streaming(self) -> bool:
        return self.windowing.streaming


class NestsStages:
    """`judge` and `segment` of a config that nests the stages' config as `stages` (shorthands
    for `config.stages.judge` and `config.stages.segment`)."""

    stages: StagesConfig

    @property
    def judge(self) -> JudgeSpec:
        return self.stages.judge

    @property
    def segment(self) -> SegmentConfig:
        return self.stages.segment


@dataclass(frozen=True)
class AuditSwitches:
    """`audit`'s switches that shape other values rather than being one: `--example` adds the
    bundled traces to the inputs, `--batch-api` turns the openai judge into its Batch API
    variant (its state under --out)."""

    example: bool = option("--example", kind="flag", default=False,
                           help="audit the bundled example traces")
    batch_api: bool = option(
        "--batch-api", kind="flag", default=False,
        help="openai judge through the Batch API: half the price, a separate rate limit, "
             "results within 24 h; resumable (state in OUT/_batch_state)")


@dataclass(frozen=True)
class AuditConfig(NestsStages):
    """Batch: what to read, how to run the stages, where to write."""

    inputs: tuple[str, ...]
    out: str = option("--out", default=MISSING, parsed_default="rt4chart-out",
                      help="output directory (default: %(default)s)")
    stages: StagesConfig = field(kw_only=True)  # the judge, the windows and the stage configs
    overwrite: bool = option(
        "--overwrite", kind="flag", default=False,
        help="replace the earlier run in --out, once this run has succeeded (it writes to a "
             "staging folder first); files rt4chart did not write are never removed")
    input_format: str = option("--input-format", default="auto", choices=AUDIT_FORMATS,
                               help=AUDIT_FORMAT_HELP)
    bigquery: str | None = option(
        "--bigquery", metavar="PROJECT:DATASET",
        help="also write the tables to this BigQuery dataset (file loads)")
    reuse: str | None = option(  # an earlier run's output directory: reuse its judge results
        "--reuse", metavar="RUN_DIR",
        help="reuse the judge results of an earlier run (its judge_cache table; a directory "
             "or bq:PROJECT:DATASET) wherever a call's inputs, model and prompts are unchanged")
    redo: str | None = option(  # an earlier run's output directory: audit its incomplete answers
        "--redo", metavar="RUN_DIR",
        help="audit again the traces whose answers were incomplete in an earlier run (batch "
             "or stream output directory, or bq:PROJECT:DATASET), e.g. after a judge outage")
    allow_partial_input: bool = option(  # a truncated input file: a dead letter, not a failure
        "--allow-partial-input", kind="flag", default=False,
        help="audit what can be read of a truncated or corrupt input file (a warning, and a "
             "dead letter saying how far it was read) instead of failing the run")
    spans: SpanMapping = SpanMapping()  # span formats: route and trace id attributes
    phoenix: PhoenixSource | None = None  # --input-format phoenix-api: what to read, where
    progress_every_s: float = option(
        "--progress-every", dest="progress_every", default=10.0, parse=float,
        metavar="SECONDS",
        help="seconds between progress lines while the job runs (default 10)")
    tables: TablesConfig = TablesConfig()  # the traces table, BigQuery's location and expiry
    chunk_traces: int | None = option(  # local runs: traces per pipeline run (None: the default)
        "--chunk-traces", "--chunk_traces", parse=int, metavar="N",
        help="local runs: audit the input about N traces per pipeline run, so that memory does "
             f"not grow with the input (default {DEFAULT_CHUNK_TRACES}; 0: one run over the "
             "whole input, the default with --batch-api)")
    # The Python API's in-memory records (`rt4chart.audit(records)`), read as elements of the
    # graph beside any files (sources/memory.py); never a command-line option.
    records: MemoryRecords | None = None
    max_record_bytes: int = option(  # a longer line or row: a dead letter
        "--max-record-bytes", default=DEFAULT_MAX_RECORD_BYTES, parse=byte_size,
        metavar="SIZE",
        help="a record (JSONL line, Parquet row) larger than this is a dead letter, skipped "
             "while it is read, never parsed or held whole (default 16M; units k, M, G)")

    def __post_init__(self) -> None:
        if self.input_format not in AUDIT_FORMATS:
            raise ValueError(f"--input-format must be one of {', '.join(AUDIT_FORMATS)}, "
                             f"got {self.input_format!r}")
        self._check_phoenix()
        if not (self.inputs or self.redo or self.phoenix or self.records):
            raise ValueError("no input given: pass trace files (JSONL or Parquet) or --example")
        if not self.out:
            raise ValueError("--out is required")
        check_out(self.out)
        if not MIN_RECORD_BYTES <= self.max_record_bytes:
            raise ValueError(f"--max-record-bytes must be >= {MIN_RECORD_BYTES}, got "
                             f"{self.max_record_bytes}")
        if not self.progress_every_s > 0:
            raise ValueError(f"--progress-every must be > 0, got {self.progress_every_s}")
        if self.chunk_traces is not None and self.chunk_traces < 0:
            raise ValueError(f"--chunk-traces must be >= 0, got {self.chunk_traces}")

    def _check_phoenix(self) -> None:
        if (self.input_format == API_FORMAT) != (self.phoenix is not None):
            raise ValueError("--input-format phoenix-api and a Phoenix source go together")
        if self.records is not None and self.input_format != "auto":  # it names files' format
            raise ValueError(f"input_format={self.input_format!r} names the format of files; "
                             "in-memory records are read in formats told by their content")
        if self.phoenix is not None and (self.inputs or self.redo or self.records):
            raise ValueError("--input-format phoenix-api reads the spans from Phoenix: give no "
                             "input files, --example or --redo with it")


MAX_MESSAGE_BYTES = 2 * 1024 * 1024  # a streamed trace; Pub/Sub allows up to 10 MB


@dataclass(frozen=True)
class StreamConfig:
    """Streaming: the subscription to audit, the sinks, the windows and the alerts."""

    # Needed to run a stream, not to estimate one (`stream --estimate SAMPLE`): checked by
    # the command (pipeline/cli/main.py), not by the parser.
    subscription: str = option(
        "--subscription", default=MISSING,
        flex=Flex(
            "Traces subscription",
            "Pub/Sub subscription of the traces, projects/PROJECT/subscriptions/NAME. A "
            "message body is one JSON trace; the attributes may carry trace_id and route.",
            regexes=("^projects/[^/]+/subscriptions/[^/]+$",),
            optional=False,
            param_type="PUBSUB_SUBSCRIPTION"),
        help="projects/PROJECT/subscriptions/NAME; a message body is one JSON trace")
    stages: StagesConfig
    out: str | None = option("--out",
                             help="write the tables as Parquet files under this directory")
    bigquery: str | None = option(
        "--bigquery", metavar="PROJECT:DATASET",
        flex=Flex(
            "BigQuery dataset",
            "PROJECT:DATASET that holds the answers, claims, route_rates, costs, dead_letters "
            "and alerts tables (created by infra/terraform).",
            regexes=("^[^:]+:[A-Za-z0-9_]+$",),
            optional=False),
        help="write the tables to this BigQuery dataset (streaming inserts)")
    dead_letter_topic: str | None = option(
        "--dead-letter-topic", "--dead_letter_topic",
        flex=Flex(
            "Dead-letter topic",
            "projects/PROJECT/topics/NAME: records that could not be processed, payload kept, "
            "reason and stage as attributes.",
            regexes=("^projects/[^/]+/topics/[^/]+$",),
            optional=False,
            param_type="PUBSUB_TOPIC"),
        help="projects/P/topics/T: malformed messages, payload kept, reason and stage as "
             "attributes")
    alerts_topic: str | None = option(
        "--alerts-topic", "--alerts_topic",
        flex=Flex(
            "Alerts topic",
            "projects/PROJECT/topics/NAME: one JSON message per alert.",
            regexes=("^projects/[^/]+/topics/[^/]+$",),
            optional=False,
            param_type="PUBSUB_TOPIC"),
        help="projects/P/topics/T: one JSON message per alert")
    alerts: AlertConfig = field(default_factory=AlertConfig)
    id_attribute: str | None = option(
        "--id-attribute", "--id_attribute",
        flex=Flex(
            "Message id attribute",
            "Message attribute with a unique id, for Pub/Sub's own dedupe in Dataflow. "
            "Default: none."),
        help="message attribute with a unique id for Pub/Sub's own dedupe (Dataflow only; "
             "the local runner hangs with it)")
    input_format: str = option(  # or "otlp": spans assembled into traces (pipeline/sources)
        "--input-format", "--input_format", default="json", metavar="|".join(STREAM_FORMATS),
        flex=Flex(
            "Message format",
            "json (one trace in rt4chart's schema per message) or otlp (OTLP traces as the "
            "OpenTelemetry Collector's googlecloudpubsub exporter publishes them, assembled by "
            "trace id; see docs/sources.md). Default: json.",
            regexes=("^(json|otlp)$",)),
        help="message bodies: json (one trace in rt4chart's schema) or otlp (OTLP traces as "
             "the OpenTelemetry Collector's googlecloudpubsub exporter publishes them, "
             "assembled by trace id)")
    spans: SpanMapping = SpanMapping()
    tables: TablesConfig = TablesConfig()  # the traces table, BigQuery's location and expiry
    # A message over this is dead-lettered unparsed. The local runner's Pub/Sub front-end
    # passes at most 3 MiB per pull to Beam (pipeline/stream/pubsub_frontend.py): keep it below.
    max_message_bytes: int = MAX_MESSAGE_BYTES
    lease_s: int = 30  # local runner: a message's ack deadline, extended while in flight

    def __post_init__(self) -> None:
        if not 0 < self.max_message_bytes <= MAX_MESSAGE_BYTES:
            raise ValueError(f"max_message_bytes must be in 1..{MAX_MESSAGE_BYTES}, got "
                             f"{self.max_message_bytes}")
        if self.input_format not in STREAM_FORMATS:
            raise ValueError(f"--input-format must be one of {', '.join(STREAM_FORMATS)}, "
                             f"got {self.input_format!r}")
        if not self.subscription.startswith("projects/") or "/subscriptions/" not in (
                self.subscription):
            raise ValueError("--subscription must be projects/PROJECT/subscriptions/NAME, got "
                             f"{self.subscription!r}")
        for name in ("dead_letter_topic", "alerts_topic"):
            topic = getattr(self, name)
            if topic is not None and not (topic.startswith("projects/") and "/topics/" in topic):
                raise ValueError(f"--{name.replace('_', '-')} must be projects/PROJECT/topics/"
                                 f"NAME, got {topic!r}")
        if not (self.out or self.bigquery):
            raise ValueError("give --out DIR or --bigquery PROJECT:DATASET (or both)")
        if self.out is not None:
            check_out(self.out)
        if not self.stages.streaming:
            raise ValueError("a stream needs streaming windowing")
