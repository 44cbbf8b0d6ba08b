"""Per-trace fault isolation: an exception on one trace's data becomes that trace's dead letter.

`guarded(stage, fn, trace_of, tag)` wraps a generator function (a Regroup join or a FlatMap) so
that an exception while processing one element yields one `DeadLetter(stage, reason, raw)` on
the `tag` output instead of failing the bundle (and with it the whole run). Outputs the function
yielded before it raised are kept back: a trace ends either as its outputs or as one dead letter.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import apache_beam as beam

from rt4chart.schemas.records import DeadLetter, Trace
from rt4chart.transforms.validate import raw_text

logger = logging.getLogger(__name__)

MAX_REASON_CHARS = 500


def fault_reason(stage: str, exc: BaseException) -> str:
    """A short reason naming the stage and the exception (type and message)."""
    text = f"{stage} failed: {type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


def fault_letter(stage: str, exc: BaseException, trace: Trace) -> DeadLetter:
    return DeadLetter(stage, fault_reason(stage, exc), raw_text(trace), trace.trace_id,
                      trace.route)


def guarded(stage: str, fn: Callable[..., Iterable[Any]], trace_of: Callable[[Any], Trace],
            tag: str = "dead") -> Callable[..., Iterable[Any]]:
    """`fn(element, *args)` whose exception on one element becomes that trace's dead letter."""

    def run(element, *args, **kwargs):  # no hints: Beam would type-check *args
        try:
            out = list(fn(element, *args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - one trace's fault must not stop the run
            trace = trace_of(element)
            logger.warning("%s: trace %s dead-lettered: %r", stage, trace.trace_id, exc)
            yield beam.pvalue.TaggedOutput(tag, fault_letter(stage, exc, trace))
            return
        yield from out

    return run


def _with_parts(parts_of: Callable[[Any], Iterable[Any]]) -> Callable[[Any], Iterable[Any]]:
    def run(item: Any) -> Iterable[tuple[Any, tuple]]:
        yield item, tuple(parts_of(item))

    return run


class GuardedPartsOutputs(NamedTuple):
    heads: beam.PCollection
    parts: beam.PCollection
    dead_letters: beam.PCollection[DeadLetter]


class GuardedParts(beam.PTransform):
    """Items -> `.heads` (items whose parts were built), `.parts`, `.dead_letters`.

    A fan-out (one item to its requests) whose builder raises on one item would leave that
    item's join waiting for parts that never come: the item is held back from `.heads` and
    becomes one dead letter instead, so that the trace ends exactly once.
    """

    def __init__(self, stage: str, parts_of: Callable[[Any], Iterable[Any]],
                 trace_of: Callable[[Any], Trace]):
        super().__init__()
        self._stage, self._parts_of, self._trace_of = stage, parts_of, trace_of

    def expand(self, items: beam.PCollection) -> GuardedPartsOutputs:
        built = items | "Build" >> beam.FlatMap(
            guarded(self._stage, _with_parts(self._parts_of), self._trace_of)
        ).with_outputs("dead", main="built")
        return GuardedPartsOutputs(
            built.built | "Heads" >> beam.Map(lambda b: b[0]),
            built.built | "Parts" >> beam.FlatMap(lambda b: b[1]),
            built.dead,
        )

