"""The keyed judge stage shared by decomposition, local and global verification.

Requests are reshuffled (so that a fan-out spreads over workers), batched, and each batch is run
concurrently on the worker's shared event loop, through one judge per worker. Every request
gives exactly one result: the judge's answer, or a failure with its reason. Usage of every call
goes to a side output for cost accounting.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from typing import Any, NamedTuple

import apache_beam as beam

from rt4chart.schemas.records import TraceKey, Usage, UsageRecord
from rt4chart.transforms.judges import runtime
from rt4chart.transforms.judges.base import Judge, JudgeSpec, judge_model, metered

METRICS = "rt4chart"
MAX_BATCH = 256
# Batches start this large so that a bundle keeps many calls in flight from the first batch.
MIN_BATCH = 32


class JudgeOutputs(NamedTuple):
    results: beam.PCollection
    usage: beam.PCollection[UsageRecord]


def short_error(exc: BaseException) -> str:
    """A one-line reason for a failed call (exception type and message, bounded)."""
    text = str(exc).replace("\n", " ").strip()
    return f"{type(exc).__name__}: {text}"[:300]


class JudgeCallFn(beam.DoFn):
    """Base DoFn: one judge call per element of a batch, run concurrently.

    Subclasses say which call to make (`call`), what a success emits (`on_result`) and what a
    failure emits (`on_error`). The judge is built in `setup()` from its spec, so the DoFn
    pickles as a name and options.
    """

    stage = "judge"

    def __init__(self, spec: JudgeSpec):
        self._spec = spec
        self._judge: Judge | None = None
        self._model = spec.name

    def setup(self) -> None:
        self._judge = runtime.judge_for(self._spec)
        self._model = judge_model(self._judge, self._spec)
        self._calls = beam.metrics.Metrics.counter(METRICS, f"{self.stage}_calls")
        self._errors = beam.metrics.Metrics.counter(METRICS, f"{self.stage}_errors")

    def key_of(self, element: Any) -> TraceKey:
        return element.key

    def call(self, judge: Judge, element: Any) -> Awaitable[Any]:
        raise NotImplementedError

    def on_result(self, element: Any, result: Any) -> Iterable[Any]:
        raise NotImplementedError

    def on_error(self, element: Any, reason: str) -> Iterable[Any]:
        raise NotImplementedError

    def process(self, batch: list[Any]) -> Iterable[Any]:
        judge = self._judge
        outcomes = runtime.run_all(
            [metered(lambda e=e: self.call(judge, e)) for e in batch]  # noqa: B023
        )
        total, errors = Usage(), 0
        for element, outcome in zip(batch, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                usage = getattr(outcome, "rt4chart_usage", Usage())
                errors += 1
                yield from self.on_error(element, short_error(outcome))
            else:
                result, usage = outcome
                yield from self.on_result(element, result)
            total = total + usage
            key = self.key_of(element)
            yield beam.pvalue.TaggedOutput(
                "usage", UsageRecord(key.trace_id, key.route, key.day, self._model, usage)
            )
        self._calls.inc(len(batch))
        self._errors.inc(errors)
        runtime.note_calls(total, errors)


class RunJudge(beam.PTransform):
    """Requests -> (results, usage): reshuffle, batch, call the judge concurrently."""

    def __init__(self, fn: JudgeCallFn, max_batch: int = MAX_BATCH):
        super().__init__()
        self._fn = fn
        self._max_batch = max_batch

    def expand(self, requests: beam.PCollection) -> JudgeOutputs:
        out = (
            requests
            | "Spread" >> beam.Reshuffle()
            | "Batch" >> beam.BatchElements(
                min_batch_size=min(MIN_BATCH, self._max_batch), max_batch_size=self._max_batch
            )
            | "Call" >> beam.ParDo(self._fn).with_outputs("usage", main="results")
        )
        return JudgeOutputs(out.results, out.usage)
