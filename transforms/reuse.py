"""Content-addressed reuse of judge results, for backfills that only pay for what changed.

Every successful judge call is written to the `judge_cache` table under a key: the sha256 of
the stage, the judge model, the prompt hash and the call's inputs (the answer sentence, answer
and question for a decomposition; the claim, window text and question for a local verdict; the
claim, full context, question, local label and hint for a global verdict). A later run given
`--reuse DIR` (or `--reuse bq:PROJECT:DATASET`, see pipeline/results/earlier.py) joins its requests
with that table on the key: a hit replays the stored answer (through the same grounding as a
fresh one, at no cost), a miss calls the judge. Change the
retriever, and only the traces whose windows changed are judged again; change a prompt or the
model, and nothing is reused.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, NamedTuple

import apache_beam as beam
import orjson

from rt4chart.schemas.columns import from_dict
from rt4chart.schemas.records import RunInfo
from rt4chart.schemas.rows import JudgeCacheRow
from rt4chart.transforms.common.guard import GuardedDoFn


def cache_key(stage: str, run: RunInfo, inputs: tuple) -> str:
    payload = orjson.dumps([stage, run.judge_model, run.prompt_hash, *inputs])
    return hashlib.sha256(payload).hexdigest()


def cache_row(key: str, stage: str, run: RunInfo, result: Any) -> JudgeCacheRow:
    """The judge_cache row of a call's result (stored as JSON, read back by `_SplitHits`)."""
    return JudgeCacheRow(key=key, stage=stage, judge_model=run.judge_model,
                         prompt_hash=run.prompt_hash, result=orjson.dumps(result).decode(),
                         created_at=datetime.now(UTC))


class _SplitHits(GuardedDoFn):
    """(key, {requests, stored}) -> misses (main) and (request, stored result) hits.

    A stored result that cannot be read back (a fault) makes its requests misses: they are
    asked again."""

    stage = "reuse"

    def fault(self, element: tuple[str, dict[str, list]], reason: str) -> Iterable[Any]:
        yield from element[1]["requests"]

    def process(self, element: tuple[str, dict[str, list]]) -> Iterable[Any]:
        _, groups = element
        stored = groups["stored"]
        for request in groups["requests"]:
            if stored:
                yield beam.pvalue.TaggedOutput("hit", (request, orjson.loads(stored[0])))
            else:
                yield request


class ReusedOutputs(NamedTuple):
    misses: beam.PCollection  # requests to ask the judge
    hits: beam.PCollection  # (request, stored result) pairs


class SplitReused(beam.PTransform):
    """Requests -> `.misses`, `.hits`: a hit pairs a request with the stored result of its
    key."""

    def __init__(self, key_of, stage: str):
        super().__init__()
        self._key_of = key_of
        self._stage = stage

    def expand(self, inputs: dict[str, beam.PCollection]) -> ReusedOutputs:
        key_of, stage = self._key_of, self._stage
        split = (
            {
                "requests": inputs["requests"] | "Key" >> beam.Map(lambda r: (key_of(r), r)),
                "stored": inputs["cache"]
                | "OfStage" >> beam.Filter(lambda row: row.stage == stage)
                | "KeyStored" >> beam.Map(lambda row: (row.key, row.result)),
            }
            | "Join" >> beam.CoGroupByKey()
            | "Split" >> beam.ParDo(_SplitHits()).with_outputs("hit", main="miss")
        )
        return ReusedOutputs(split.miss, split.hit)


class ReadCache(beam.PTransform):
    """The judge_cache rows of an earlier run's Parquet files, given as globs (a run folder's
    judge_cache table, in either layout: `rt4chart.pipeline.storage.table_files.table_patterns`)."""

    def __init__(self, patterns: tuple[str, ...]):
        super().__init__()
        self._patterns = tuple(patterns)

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection[JudgeCacheRow]:
        return (
            pbegin
            | "Patterns" >> beam.Create(self._patterns)
            | "ReadCache" >> beam.io.ReadAllFromParquet()
            | "Rows" >> beam.Map(lambda values: from_dict(JudgeCacheRow, values))
        )
