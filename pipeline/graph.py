"""The audit graph: read, validate, segment, decompose, verify locally and globally, join, write.

One graph serves both jobs: `build` (batch, files in) and `build_stream` (Pub/Sub in). Stage
labels are stable verbs: a runner's in-place update of a streaming job depends on them.
"""

from __future__ import annotations

from typing import NamedTuple

import apache_beam as beam

from rt4chart.pipeline.config import AuditConfig, StagesConfig, StreamConfig
from rt4chart.pipeline.io import ReadTraces
from rt4chart.pipeline.sinks import Sinks, WriteTables, key_envs
from rt4chart.schemas import rows
from rt4chart.schemas.records import Message, RunInfo
from rt4chart.transforms.aggregate import AggregateAnswers
from rt4chart.transforms.alerts import RouteAlerts
from rt4chart.transforms.decompose import DecomposeClaims
from rt4chart.transforms.rates import CostsByRoute, RatesByRoute
from rt4chart.transforms.reuse import ReadCache
from rt4chart.transforms.segment import Segment
from rt4chart.transforms.validate import ValidateTraces
from rt4chart.transforms.verify_global import VerifyGlobal
from rt4chart.transforms.verify_local import VerifyLocal


class AuditTables(NamedTuple):
    """The audit's output tables, named as the tables are, as rows."""

    answers: beam.PCollection[rows.AnswerRow]
    claims: beam.PCollection[rows.ClaimRow]
    route_rates: beam.PCollection[rows.RouteRateRow]
    costs: beam.PCollection[rows.CostRow]
    dead_letters: beam.PCollection[rows.DeadLetterRow]
    judge_cache: beam.PCollection[rows.JudgeCacheRow]


class Audit(beam.PTransform):
    """Raw trace records (or Pub/Sub Messages) -> the output tables (as rows).

    `reuse`: judge_cache rows of an earlier run; calls whose key is there are not made again.
    """

    def __init__(self, stages: StagesConfig, run: RunInfo, reuse: beam.PCollection | None = None):
        super().__init__()
        self._stages = stages
        self._run = run
        self._reuse = reuse

    def expand(self, records: beam.PCollection) -> AuditTables:
        st = self._stages
        spec, streaming, timeout = st.judge, st.streaming, st.join_timeout_s
        valid = records | "ValidateTraces" >> ValidateTraces(st.windowing, st.dedupe_horizon_s)
        segmented = valid.traces | "Segment" >> Segment(st.segment)
        run, reuse = self._run, self._reuse
        decomposed = segmented.prepared | "DecomposeClaims" >> DecomposeClaims(
            spec, streaming, timeout, run, reuse, st.segment.limits)
        local = decomposed.claim_sets | "VerifyLocal" >> VerifyLocal(
            spec, streaming, timeout, st.claims_per_call, run, reuse, st.prune_windows)
        final = local.pending | "VerifyGlobal" >> VerifyGlobal(spec, run, reuse)
        usage = (decomposed.usage, local.usage, final.usage) | "AllUsage" >> beam.Flatten()
        answers = {
            "claim_sets": local.claim_sets, "verdicts": final.verdicts,
            "failed": local.failed,
        } | "AggregateAnswers" >> AggregateAnswers(self._run, streaming, timeout)
        dead = (
            (valid.dead_letters, segmented.dead_letters, decomposed.dead_letters,
             local.dead_letters, answers.redo)
            | "DeadLetters" >> beam.Flatten()
            | "DeadLetterRows" >> beam.Map(rows.DeadLetterRow.of)
        )
        return AuditTables(
            answers.answers,
            answers.claims,
            answers.answers | "RatesByRoute" >> RatesByRoute(st.windowing),
            usage | "CostsByRoute" >> CostsByRoute(st.windowing),
            dead,
            (decomposed.cache, local.cache, final.cache) | "JudgeCache" >> beam.Flatten(),
        )


def build(pipeline: beam.Pipeline, config: AuditConfig, run: RunInfo,
          bigquery_client=None, bigquery_method: str | None = None) -> AuditTables:
    """Add the batch audit, from files to Parquet tables (and BigQuery), to a pipeline.

    Rows BigQuery rejects become dead letters in the Parquet dead_letters table.
    `bigquery_client`/`bigquery_method` are test hooks (Beam's `test_client`, an insert method).
    """
    reuse = (pipeline | "ReadReuse" >> ReadCache(config.reuse)) if config.reuse else None
    read = pipeline | "ReadTraces" >> ReadTraces(config.inputs, config.input_format,
                                                 config.allow_partial_input)
    tables = read.records | "Audit" >> Audit(config.stages, run, reuse)
    unread = read.dead_letters | "ReadDeadLetterRows" >> beam.Map(rows.DeadLetterRow.of)
    tables = tables._replace(dead_letters=(tables.dead_letters, unread)
                             | "WithReadDeadLetters" >> beam.Flatten())
    sinks = Sinks(config.out, bigquery=config.bigquery, bigquery_method=bigquery_method,
                  key_envs=key_envs(config.judge))
    tables._asdict() | "WriteTables" >> WriteTables(sinks, bigquery_client)
    return tables


def to_message(msg: beam.io.PubsubMessage, timestamp=beam.DoFn.TimestampParam) -> Message:
    """A Beam PubsubMessage as our own Message (publish time in microseconds)."""
    published = msg.publish_time
    publish_us = (int(published.timestamp() * 1_000_000) if published is not None
                  else int(timestamp.micros))
    return Message(msg.data or b"", tuple(sorted((msg.attributes or {}).items())), publish_us,
                   msg.message_id)


class StreamTables(NamedTuple):
    tables: AuditTables
    alerts: beam.PCollection[rows.AlertRow]


def build_stream(pipeline: beam.Pipeline, config: StreamConfig, run: RunInfo,
                 bigquery_client=None) -> StreamTables:
    """Add the streaming audit, from a Pub/Sub subscription to the sinks, to a pipeline.

    Rows BigQuery rejects become dead letters: in the Parquet dead_letters table with --out and
    on the dead-letter topic.
    """
    read = beam.io.ReadFromPubSub(subscription=config.subscription, with_attributes=True,
                                  id_label=config.id_attribute)
    tables = (
        pipeline
        | "ReadMessages" >> read
        | "Messages" >> beam.Map(to_message)
        | "Audit" >> Audit(config.stages, run)
    )
    alerts = tables.route_rates | "RouteAlerts" >> RouteAlerts(config.alerts)
    sinks = Sinks(config.out, streaming=True, bigquery=config.bigquery,
                  dead_letter_topic=config.dead_letter_topic, alerts_topic=config.alerts_topic,
                  key_envs=key_envs(config.stages.judge))
    {**tables._asdict(), "alerts": alerts} | "WriteTables" >> WriteTables(sinks, bigquery_client)
    return StreamTables(tables, alerts)
