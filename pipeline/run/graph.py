"""The audit graph: read, validate, segment, decompose, verify locally and globally, join, write.

One graph serves both jobs: `build` (batch, files in) and `build_stream` (Pub/Sub in). Stage
labels are stable verbs: a runner's in-place update of a streaming job depends on them.
"""

from __future__ import annotations

from typing import NamedTuple

import apache_beam as beam

from rt4chart.pipeline.results.earlier import read_cache
from rt4chart.pipeline.run.chunk_files import Chunk, ReadPickles, ReadShard, WritePickles
from rt4chart.pipeline.run.config import AuditConfig, StagesConfig, StreamConfig
from rt4chart.pipeline.run.progress_figures import DeadLetterRows, ExpectCalls
from rt4chart.pipeline.sinks.fanout import Sinks, WriteTables, key_envs
from rt4chart.pipeline.sources.memory import ReadMemory
from rt4chart.pipeline.sources.traces import ReadOutputs, ReadTraces
from rt4chart.pipeline.stream.pubsub_frontend import LocalPubSub, LocalSource
from rt4chart.schemas import rows
from rt4chart.schemas.records import Message, RunInfo
from rt4chart.transforms.aggregate import REDO_STAGE, AggregateAnswers
from rt4chart.transforms.alerts import RouteAlerts
from rt4chart.transforms.common.guard import GuardedDoFn
from rt4chart.transforms.common.redact import Redactor
from rt4chart.transforms.decompose import DecomposeClaims
from rt4chart.transforms.estimate import EstimateConfig
from rt4chart.transforms.judges.contract import judge_keys
from rt4chart.transforms.rates import (
    CostsByRoute,
    RatesByRoute,
    dead_letter_traffic,
    skipped_traffic,
)
from rt4chart.transforms.sampling import Sample
from rt4chart.transforms.segment import Segment
from rt4chart.transforms.spend_cap import CapGate, SettleFn, cap_prices
from rt4chart.transforms.validate import ValidateTraces
from rt4chart.transforms.verify_global import VerifyGlobal
from rt4chart.transforms.verify_local import VerifyLocal


class AuditTables(NamedTuple):
    """The audit's output tables, named as the tables are, as rows (route_rates and costs are
    None in one chunk of a run in chunks: they are computed over all chunks, see `Audit`)."""

    answers: beam.PCollection[rows.AnswerRow]
    claims: beam.PCollection[rows.ClaimRow]
    route_rates: beam.PCollection[rows.RouteRateRow]
    costs: beam.PCollection[rows.CostRow]
    dead_letters: beam.PCollection[rows.DeadLetterRow]
    judge_cache: beam.PCollection[rows.JudgeCacheRow]
    # A stream's "spend cap reached" alerts, for its alerts table (RouteAlerts adds the rate
    # alerts); empty without a cap. Not a table of its own: `written` leaves it out.
    cap_alerts: beam.PCollection[rows.AlertRow]
    traces: beam.PCollection[rows.TraceRow] | None = None  # opt-in (--write-traces)
    skipped: beam.PCollection[rows.SkippedRow] | None = None  # with a spend cap

    def written(self) -> dict[str, beam.PCollection]:
        """{table name: rows} of the tables to write (an opt-in table not asked for is not)."""
        return {name: pc for name, pc in self._asdict().items()
                if pc is not None and name not in _NOT_TABLES}


_NOT_TABLES = frozenset({"cap_alerts"})


class _Gated(NamedTuple):
    """What the spend cap lets start (every trace without a cap) and what it keeps back."""

    started: beam.PCollection
    skipped: beam.PCollection[rows.SkippedRow] | None  # the skipped table: only with a cap
    alerts: beam.PCollection[rows.AlertRow]  # empty without a cap
    dead_letters: tuple[beam.PCollection, ...]  # the gate's, none without a cap


class _Aggregates(NamedTuple):
    """route_rates and costs (None in a chunk of a run in chunks), their steps' dead letter rows."""

    rates: beam.PCollection[rows.RouteRateRow] | None
    costs: beam.PCollection[rows.CostRow] | None
    dead_letters: tuple[beam.PCollection, ...]


class Audit(beam.PTransform):
    """Raw trace records (or Pub/Sub Messages) -> the output tables (as rows).

    `reuse`: judge_cache rows of an earlier run; calls whose key is there are not made again.
    `write_traces`: also return the valid traces as the `traces` table.
    `carry` (one chunk of a batch run in chunks, see chunks.py): a folder where the answer rows
    and usage records go instead of into route_rates and costs, which `build_aggregates`
    computes once over every chunk's.
    """

    def __init__(self, stages: StagesConfig, run: RunInfo, reuse: beam.PCollection | None = None,
                 write_traces: bool = False, carry: str | None = None,
                 unread: tuple[beam.PCollection, ...] = ()):
        """`unread`: dead letter rows of the stages before this (reading, receiving), added to
        the dead letters and counted in route_rates, as are the traces a spend cap kept from
        the judges (the skipped table)."""
        super().__init__()
        self._unread = tuple(unread)
        self._stages = stages
        self._run = run
        self._reuse = reuse
        self._write_traces = write_traces
        self._carry = carry

    def expand(self, records: beam.PCollection) -> AuditTables:
        st = self._stages
        spec, streaming, timeout = st.judge, st.streaming, st.join_timeout_s
        valid = records | "ValidateTraces" >> ValidateTraces(st.windowing, st.dedupe_horizon_s)
        # Before any judge call: an unsampled trace is only counted (transforms/sampling.py).
        picked, traffic, unsampled = valid.traces | "Sample" >> Sample(st.sampling)
        segmented = picked | "Segment" >> Segment(st.segment)
        run, reuse = self._run, self._reuse
        gated = self._gate(segmented.prepared)
        started = gated.started
        if not streaming:  # a batch run's ETA from its start (a stream's label set stays)
            started = started | "ExpectCalls" >> beam.Map(ExpectCalls(EstimateConfig(
                st.verify_local.claims_per_call, st.verify_local.prune_windows,
                st.confirm.enabled)))
        decomposed = started | "DecomposeClaims" >> DecomposeClaims(
            spec, streaming, timeout, run, reuse, st.segment.limits)
        local = decomposed.claim_sets | "VerifyLocal" >> VerifyLocal(
            spec, streaming, timeout, st.verify_local, run, reuse)
        final = local.pending | "VerifyGlobal" >> VerifyGlobal(spec, run, reuse, st.confirm)
        usage = (decomposed.usage, local.usage, final.usage) | "AllUsage" >> beam.Flatten()
        answers = {
            "claim_sets": local.claim_sets, "verdicts": final.verdicts,
            "failed": local.failed,
        } | "AggregateAnswers" >> AggregateAnswers(self._run, streaming, timeout)
        dead = (
            (valid.dead_letters, unsampled, segmented.dead_letters, decomposed.dead_letters,
             local.dead_letters, answers.redo, *gated.dead_letters)
            | "DeadLetters" >> beam.Flatten()
            | "DeadLetterRows" >> beam.Map(DeadLetterRows())  # counted: a trace ends here
        )
        if gated.skipped is not None:  # a stream's hourly ledger learns the actual costs
            answers.answers | "SettleSpend" >> beam.ParDo(SettleFn(st.caps))
        dead = (dead, *self._unread) | "AllDeadLetters" >> beam.Flatten()
        aggregated = self._aggregates(answers.answers, usage,
                                      self._traffic(traffic, gated.skipped, dead))
        if aggregated.dead_letters:  # the rate and cost steps' own faults (after the traffic)
            dead = (dead, *aggregated.dead_letters) | "WithAggregateFaults" >> beam.Flatten()
        return AuditTables(
            answers.answers, answers.claims, aggregated.rates, aggregated.costs, dead,
            (decomposed.cache, local.cache, final.cache) | "JudgeCache" >> beam.Flatten(),
            gated.alerts,
            (valid.traces | "TraceRows" >> beam.Map(rows.TraceRow.of))
            if self._write_traces else None,
            gated.skipped,
        )

    @staticmethod
    def _traffic(traffic: beam.PCollection, skipped: beam.PCollection | None,
                 dead: beam.PCollection) -> beam.PCollection:
        """Every trace's Traffic record: sampled or not, skipped by a cap, dead lettered."""
        capped = () if skipped is None else (
            skipped | "SkippedTraffic" >> beam.Map(skipped_traffic),)
        counted = (traffic, *capped, dead | "DeadLetterTraffic" >> beam.FlatMap(
            lambda row: [] if row.stage == REDO_STAGE else [dead_letter_traffic(row)]))
        return counted | "Traffic" >> beam.Flatten()

    def _gate(self, prepared: beam.PCollection) -> _Gated:
        """With a spend cap, a trace starts only while the cap holds its reservation
        (transforms/spend_cap.py); without one, every trace starts."""
        st = self._stages
        if not st.caps.enabled:
            return _Gated(prepared, None, prepared | "NoCapAlerts" >> beam.FlatMap(_nothing), ())
        prices = st.caps.prices or cap_prices(st.judge.name, dict(st.judge.options))
        gated = prepared | "CapSpend" >> CapGate(st.caps, st, prices)
        return _Gated(gated.admitted, gated.skipped, gated.alerts, (gated.dead_letters,))

    def _aggregates(self, answers: beam.PCollection, usage: beam.PCollection,
                    traffic: beam.PCollection) -> _Aggregates:
        windowing = self._stages.windowing
        if self._carry is None:
            rates = (answers, traffic) | "RatesByRoute" >> RatesByRoute(windowing)
            costs = usage | "CostsByRoute" >> CostsByRoute(windowing)
            faults = aggregate_faults("RatesByRouteCostsByRoute", rates.dead_letters,
                                      costs.dead_letters)
            return _Aggregates(rates.rates, costs.costs, (faults,))
        answers | "CarryAnswers" >> WritePickles(self._carry, "answers")
        traffic | "CarryTraffic" >> WritePickles(self._carry, "traffic")
        usage | "CarryUsage" >> WritePickles(self._carry, "usage")
        return _Aggregates(None, None, ())


def _nothing(_element) -> tuple:
    """No element: the cap alerts of an audit without a cap."""
    return ()


def aggregate_faults(label: str, *letters: beam.PCollection) -> beam.PCollection:
    """The dead letters of aggregate steps (RatesByRoute, CostsByRoute, RouteAlerts) as rows,
    counted like the others. `label`: the steps' names, a stable prefix of the step labels."""
    return (letters | f"{label}Faults" >> beam.Flatten()
            | f"{label}FaultRows" >> beam.Map(DeadLetterRows()))


def build(pipeline: beam.Pipeline, config: AuditConfig, run: RunInfo,
          bigquery_client=None, bigquery_method: str | None = None,
          chunk: Chunk | None = None) -> AuditTables:
    """Add the batch audit, from files to Parquet tables (and BigQuery), to a pipeline.

    Rows BigQuery rejects become dead letters in the Parquet dead_letters table.
    `bigquery_client`/`bigquery_method` are test hooks (Beam's `test_client`, an insert method).
    With `chunk`, the audit of one input shard (see chunks.py): without route_rates and costs.
    """
    reuse = (pipeline | "ReadReuse" >> read_cache(config.reuse, run, bigquery_client)
             ) if config.reuse else None
    read = pipeline | "ReadTraces" >> (ReadShard(chunk.shard) if chunk else read_traces(config))
    unread = read.dead_letters | "ReadDeadLetterRows" >> beam.Map(rows.DeadLetterRow.of)
    tables = read.records | "Audit" >> Audit(config.stages, run, reuse,
                                             config.tables.write_traces,
                                             chunk.carry if chunk else None, (unread,))
    write_tables(tables.written(), config, bigquery_client, bigquery_method)
    return tables


def read_traces(config: AuditConfig) -> beam.PTransform:
    """The run's reading: its files (`ReadTraces`), the caller's in-memory records
    (`ReadMemory`, elements of the graph), or both (records and a --redo's traces)."""
    files = ReadTraces(config.inputs, config.input_format, config.allow_partial_input,
                       config.spans, config.max_record_bytes) if config.inputs else None
    if config.records is None:
        return files
    memory = ReadMemory(config.records, config.max_record_bytes)
    return memory if files is None else _read_both(files, memory)


@beam.ptransform_fn
def _read_both(pbegin: beam.pvalue.PBegin, files: beam.PTransform,
               memory: beam.PTransform) -> ReadOutputs:
    parts = (pbegin | "Files" >> files, pbegin | "Memory" >> memory)
    return ReadOutputs(tuple(p.records for p in parts) | "Records" >> beam.Flatten(),
                       tuple(p.dead_letters for p in parts) | "DeadLetters" >> beam.Flatten())


def judge_key_envs(stages: StagesConfig) -> tuple[str, ...]:
    """The key variables of the run's judges (the first, and a confirming one)."""
    return key_envs(stages.judge, stages.confirm.judge_spec())


def run_keys(stages: StagesConfig) -> Redactor:
    """What the run's launcher redacts besides the well-known keys: its judges' key
    variables (the first, and a confirming one)."""
    return judge_keys(stages.judge, stages.confirm.judge_spec())


def write_tables(tables: dict, config: AuditConfig, bigquery_client=None,
                 bigquery_method: str | None = None) -> None:
    """Add the writes of the audit's tables (those not None) to their sinks."""
    sinks = Sinks(config.out, bigquery=config.bigquery, bigquery_method=bigquery_method,
                  key_envs=judge_key_envs(config.stages), tables=config.tables)
    present = {name: rows for name, rows in tables.items() if rows is not None}
    present | "WriteTables" >> WriteTables(sinks, bigquery_client)


def build_aggregates(pipeline: beam.Pipeline, config: AuditConfig, carry: str,
                     bigquery_client=None, bigquery_method: str | None = None) -> None:
    """Add the last step of a batch audit in chunks: route_rates and costs over the answer rows
    and usage records every chunk left in `carry` (the same transforms as one run's). Its
    dead_letters table holds only the rows BigQuery rejects."""
    windowing = config.stages.windowing
    counted = (pipeline | "EarlierAnswers" >> ReadPickles(carry, "answers"),
               pipeline | "EarlierTraffic" >> ReadPickles(carry, "traffic"))
    rates = counted | "RatesByRoute" >> RatesByRoute(windowing)
    costs = (pipeline | "EarlierUsage" >> ReadPickles(carry, "usage")
             | "CostsByRoute" >> CostsByRoute(windowing))
    tables = {
        "route_rates": rates.rates,
        "costs": costs.costs,
        "dead_letters": aggregate_faults("RatesByRouteCostsByRoute", rates.dead_letters,
                                         costs.dead_letters),
    }
    write_tables(tables, config, bigquery_client, bigquery_method)


def to_message(msg: beam.io.PubsubMessage, timestamp=beam.DoFn.TimestampParam) -> Message:
    """A Beam PubsubMessage as our own Message (publish time in microseconds)."""
    published = msg.publish_time
    publish_us = (int(published.timestamp() * 1_000_000) if published is not None
                  else int(timestamp.micros))
    return Message(msg.data or b"", tuple(sorted((msg.attributes or {}).items())), publish_us,
                   msg.message_id)


class _CheckSizeFn(GuardedDoFn):
    """Messages -> messages within the size limit; the others -> "dead" letters, unparsed."""

    stage = "receive"

    def __init__(self, limit: int):
        self._limit = limit

    def process(self, message: Message):
        from rt4chart.pipeline.stream.pubsub_leases import oversize_letter

        letter = oversize_letter(message, self._limit)
        yield message if letter is None else beam.pvalue.TaggedOutput("dead", letter)


class OtlpTraces(NamedTuple):
    messages: beam.PCollection[Message]  # one per assembled trace
    dead_letters: beam.PCollection[rows.DeadLetterRow]


@beam.ptransform_fn
def otlp_traces(messages, config: StreamConfig) -> OtlpTraces:
    """OTLP messages -> a Message per assembled trace, and dead letter rows."""
    from rt4chart.pipeline.sources.spans import AssembleOtlpMessages

    out = messages | "Spans" >> AssembleOtlpMessages(config.spans, config.stages.dedupe_horizon_s)
    return OtlpTraces(out.messages,
                      out.dead_letters | "Rows" >> beam.Map(rows.DeadLetterRow.of))


class StreamTables(NamedTuple):
    tables: AuditTables
    alerts: beam.PCollection[rows.AlertRow]


def build_stream(pipeline: beam.Pipeline, config: StreamConfig, run: RunInfo,
                 bigquery_client=None, local: LocalPubSub | None = None) -> StreamTables:
    """Add the streaming audit, from a Pub/Sub subscription to the sinks, to a pipeline.

    Rows BigQuery rejects become dead letters: in the Parquet dead_letters table with --out and
    on the dead-letter topic. A message over `config.max_message_bytes` is a dead letter
    (stage `receive`) without being parsed. `local`: the local runner's Pub/Sub, read from
    its front-end and settled by the Parquet files once durable (pipeline/stream/); without
    it, Beam's ReadFromPubSub reads the subscription (Dataflow).
    """
    if local is not None:
        received = pipeline | "ReadMessages" >> LocalSource(local)
    else:
        read = beam.io.ReadFromPubSub(subscription=config.subscription, with_attributes=True,
                                      id_label=config.id_attribute)
        received = pipeline | "ReadMessages" >> read | "Messages" >> beam.Map(to_message)
    sized = received | "CheckSize" >> beam.ParDo(
        _CheckSizeFn(config.max_message_bytes)).with_outputs("dead", main="ok")
    messages, unread = sized.ok, [sized.dead | "OversizeRows" >> beam.Map(
        rows.DeadLetterRow.of)]
    if config.input_format == "otlp":  # spans -> one message per trace (pipeline/sources)
        assembled = messages | "AssembleTraces" >> otlp_traces(config)
        messages = assembled.messages
        unread.append(assembled.dead_letters)
    tables = messages | "Audit" >> Audit(config.stages, run,
                                         write_traces=config.tables.write_traces,
                                         unread=tuple(unread))
    alerting = tables.route_rates | "RouteAlerts" >> RouteAlerts(config.alerts)
    faults = aggregate_faults("RouteAlerts", alerting.dead_letters)
    tables = tables._replace(dead_letters=(tables.dead_letters, faults)
                             | "WithAlertFaults" >> beam.Flatten())
    # And that the hour's spend cap was reached (none without a cap).
    cap_alerts = tables.cap_alerts | "CapAlertWindows" >> beam.WindowInto(
        alerting.alerts.windowing.windowfn)
    alerts = (alerting.alerts, cap_alerts) | "WithCapAlerts" >> beam.Flatten()
    sinks = Sinks(config.out, streaming=True, bigquery=config.bigquery,
                  dead_letter_topic=config.dead_letter_topic, alerts_topic=config.alerts_topic,
                  key_envs=judge_key_envs(config.stages), tables=config.tables,
                  settle=local.settle if local is not None else None)
    {**tables.written(), "alerts": alerts} | "WriteTables" >> WriteTables(sinks, bigquery_client)
    return StreamTables(tables, alerts)
