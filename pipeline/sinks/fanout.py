"""The sink fan-out of the audit's tables: Parquet files, BigQuery tables, Pub/Sub topics.

Rows stay rows (`rt4chart.schemas.rows`) up to here; each sink turns them into what it writes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import apache_beam as beam

from rt4chart.pipeline.sinks.options import TablesConfig
from rt4chart.pipeline.sources.traces import dead_letter_message
from rt4chart.pipeline.storage.table_files import WriteTable, WriteTableStreaming
from rt4chart.schemas.tables import TABLES
from rt4chart.transforms.alerts import alert_message
from rt4chart.transforms.common.guard import GuardedDoFn
from rt4chart.transforms.common.redact import KEY_ENV_NAMES, Redactor, redact
from rt4chart.transforms.judges import runtime
from rt4chart.transforms.judges.contract import JudgeSpec, judge_keys

if TYPE_CHECKING:
    from rt4chart.pipeline.stream.pubsub_leases import LeaseHandle

# Every text column is redacted (see `redact_value`) but the identities that join tables and
# name traces: a trace id is the input's own (`--redo` finds traces by it), the others hashes.
IDENTITY_COLUMNS = frozenset({"trace_id", "dead_letter_id", "key", "doc_id", "prompt_hash",
                              "sample_trace_ids"})


@dataclass(frozen=True)
class Sinks:
    """Where the tables go; a sink left None is not written.

    `bigquery_method` overrides the BigQuery write method (a test hook, as is the client
    `WriteTables` takes).
    """

    out: str | None = None
    streaming: bool = False
    bigquery: str | None = None
    bigquery_method: str | None = None
    dead_letter_topic: str | None = None
    alerts_topic: str | None = None
    key_envs: tuple[str, ...] = ()  # variables holding keys to redact, besides the usual ones
    tables: TablesConfig = TablesConfig()  # BigQuery's partition expiry (the rest: pre-launch)
    settle: LeaseHandle | None = None  # local stream: the Pub/Sub leases the files settle


def key_envs(*specs: JudgeSpec | None) -> tuple[str, ...]:
    """The environment variables the judges (the first, a confirming one) read their keys
    from (`JudgeKind.key_envs`), besides the well-known ones that are always redacted."""
    return tuple(n for n in judge_keys(*specs).names if n not in KEY_ENV_NAMES)


def redact_value(value: Any, secrets: Iterable[str]) -> Any:
    """`value` with every text in it redacted (see `transforms/common/redact.py`): a string, the
    strings of a tuple or list, the fields of a row (nested records too) or the values of a
    dict, but not IDENTITY_COLUMNS. The same object when there was nothing to remove.

    Everything a judge or a server returns reaches the tables in some text column (a claim's
    text, its evidence, a note, a reason, the judge_cache's result), so every one is cleaned,
    not a list of the columns known to carry it."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, tuple | list):
        items = [redact_value(item, secrets) for item in value]
        changed = any(new is not old for new, old in zip(items, value, strict=True))
        return type(value)(items) if changed else value
    if isinstance(value, dict):
        clean = {k: v if k in IDENTITY_COLUMNS else redact_value(v, secrets)
                 for k, v in value.items()}
        return clean if any(clean[k] is not value[k] for k in value) else value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            old = getattr(value, f.name)
            new = old if f.name in IDENTITY_COLUMNS else redact_value(old, secrets)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value


def redact_row(row: Any, secrets: Iterable[str]) -> Any:
    """The row with every text column redacted (`redact_value`); the same row when there was
    nothing to remove."""
    return redact_value(row, tuple(secrets))


class _RedactFn(GuardedDoFn):
    """Rows -> rows without keys: the values of the run's key variables (read from the worker's
    environment) and the keys the worker's judges hold (its judge runtime's, e.g. one read from
    Secret Manager). A row the redaction fails on is written with its redacted columns
    withheld, never as it was."""

    stage = "redact"

    def fault(self, row: Any, reason: str) -> Iterator[Any]:
        withheld = {f.name: f"[withheld: {reason}]" for f in dataclasses.fields(row)
                    if f.name not in IDENTITY_COLUMNS
                    and isinstance(getattr(row, f.name, None), str)}
        yield dataclasses.replace(row, **withheld) if withheld else row

    def __init__(self, env_names: tuple[str, ...]):
        self._names = Redactor(env_names)  # pickled with the DoFn: names only
        self._shared = runtime.runtime_handle()

    def setup(self) -> None:
        self._runtime = runtime.acquire(self._shared)
        self._held: Redactor | None = None
        self._secrets: tuple[str, ...] = ()

    def teardown(self) -> None:
        self._runtime = None  # the runtime goes once no DoFn of this process holds it

    def process(self, row: Any) -> Iterator[Any]:
        held = self._runtime.keys  # grows as this process builds judges
        if held is not self._held:
            self._held, self._secrets = held, self._names.joined(held).secrets()
        yield redact_row(row, self._secrets)


def _redacted(name: str) -> bool:
    """Whether a table's rows pass through RedactRows: every table's (each has text)."""
    return name in TABLES or name == "dead_letters"


def _bigquery_sink(sinks: Sinks, table: str, test_client=None) -> beam.PTransform:
    from rt4chart.pipeline.storage.bigquery import WriteBigQueryTable  # the GCP client libraries

    return WriteBigQueryTable(sinks.bigquery, table, streaming=sinks.streaming,
                              method=sinks.bigquery_method, test_client=test_client,
                              partition_expiration_ms=sinks.tables.partition_expiration_ms)


def _publish(rows: beam.PCollection, topic: str, to_message, what: str) -> None:
    (rows
     | f"{what}Messages" >> beam.Map(to_message)
     | f"Publish{what}s" >> beam.io.WriteToPubSub(topic, with_attributes=True))


class WriteTables(beam.PTransform):
    """{table name: rows} -> Parquet files under `out`, BigQuery tables and Pub/Sub topics.

    Every row is redacted first (`Redact_<table>`, the one redaction step of what is written
    or published: every text column but the identities, see `redact_value`). Rows BigQuery
    rejects join the dead letters, which are then written (and published to the dead-letter
    topic) with the others; alerts, if given, go to the alerts topic. Labels are per table:
    `Redact_<table>`, `BigQuery_<table>`, `Write_<table>`.
    """

    def __init__(self, sinks: Sinks, bigquery_client=None):
        super().__init__()
        self._sinks = sinks
        self._client = bigquery_client

    def expand(self, tables: dict[str, beam.PCollection]) -> beam.pvalue.PDone:
        sinks = self._sinks
        tables = {name: rows | f"Redact_{name}" >> beam.ParDo(_RedactFn(sinks.key_envs))
                  if _redacted(name) else rows for name, rows in tables.items()}
        if sinks.bigquery:
            rejected = [rows | f"BigQuery_{name}" >> _bigquery_sink(sinks, name, self._client)
                        for name, rows in tables.items()]
            tables = {**tables, "dead_letters": (tables["dead_letters"], *rejected)
                      | "AllDeadLetters" >> beam.Flatten()}
        for name, rows in tables.items():
            if sinks.out and sinks.streaming:
                rows | f"Write_{name}" >> WriteTableStreaming(sinks.out, name, sinks.settle)
            elif sinks.out:
                rows | f"Write_{name}" >> WriteTable(sinks.out, name)
        if sinks.dead_letter_topic:
            _publish(tables["dead_letters"], sinks.dead_letter_topic, dead_letter_message,
                     "DeadLetter")
        if sinks.alerts_topic and "alerts" in tables:
            _publish(tables["alerts"], sinks.alerts_topic, alert_message, "Alert")
        return beam.pvalue.PDone(tables["dead_letters"].pipeline)
