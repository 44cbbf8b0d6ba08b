"""Per-trace fault isolation: an exception on one trace's data becomes that trace's dead letter.

Every per-element step of the graph runs under the same guard, by construction:

- `GuardedDoFn` is the base of every DoFn of the package: its subclasses' `process` is wrapped
  when the class is defined, so an exception on one element becomes what the DoFn's `fault`
  says (by default one `DeadLetter(stage, reason, raw)` on the "dead" output; a step inside a
  fan-out emits the failed part instead, so that its trace's join completes as `incomplete`).
  A DoFn cannot opt out: defining `process` is enough to be guarded.
- `guarded(stage, fn, trace_of, tag)` wraps a generator function (a Regroup join or a FlatMap)
  the same way.

Outputs the step yielded before it raised are kept back: a trace ends either as its outputs or
as one dead letter. `tests/integration/test_every_stage_guarded.py` walks the built graphs and
makes each guarded step fail in turn.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, NamedTuple

import apache_beam as beam

from rt4chart.schemas.records import DeadLetter, Trace
from rt4chart.transforms.common.rawtext import raw_text

logger = logging.getLogger(__name__)

MAX_REASON_CHARS = 500


def fault_reason(stage: str, exc: BaseException) -> str:
    """A short reason naming the stage and the exception (type and message)."""
    text = f"{stage} failed: {type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


def fault_letter(stage: str, exc: BaseException, trace: Trace) -> DeadLetter:
    return fault_letter_reason(stage, fault_reason(stage, exc), trace)


def fault_hook(step: Any, element: Any) -> None:
    """Called by the guard before each element (`step`: the DoFn, or the guarded callable).

    Does nothing: it is the seam through which the stage-fault test makes one step fail on one
    trace (the in-process runner calls the patched module function)."""


def element_letter(stage: str, reason: str, element: Any, route: str | None = None
                   ) -> DeadLetter:
    """The dead letter of an element that is not a trace (a row, a message, an aggregate):
    the element as text, with the trace id and route it carries (or `route`), if any."""
    trace_id = getattr(element, "trace_id", None)
    route = route or getattr(element, "route", None)
    return DeadLetter(stage, reason, raw_text(element),
                      trace_id if isinstance(trace_id, str) else None,
                      route if isinstance(route, str) else None)


class GuardedDoFn(beam.DoFn):
    """Base of every DoFn of rt4chart: an exception in `process` on one element becomes
    `fault(element, reason)` instead of failing the bundle (and the run).

    Subclasses set `stage` (named in the dead letter's stage and reason) and, unless the
    element is a trace or a row, `trace_of` or `fault`. `process` is wrapped when the subclass
    is defined (`__init_subclass__`): a new DoFn is guarded without doing anything.
    """

    stage: ClassVar[str] = ""
    # The output the default `fault` writes the dead letter to (wired to the dead letters).
    dead_tag: ClassVar[str] = "dead"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "process" in cls.__dict__:
            cls.process = _guard_process(cls.__dict__["process"])

    def trace_of(self, element: Any) -> Trace | None:
        """The trace an element belongs to (None: the element is kept as it is)."""
        return element if isinstance(element, Trace) else getattr(element, "trace", None)

    def fault(self, element: Any, reason: str) -> Iterable[Any]:
        """What a failed element becomes: by default one dead letter of its trace (or of the
        element itself, when it is not a trace's)."""
        trace = self.trace_of(element)
        letter = (fault_letter_reason(self.stage, reason, trace) if isinstance(trace, Trace)
                  else element_letter(self.stage, reason, element))
        yield beam.pvalue.TaggedOutput(self.dead_tag, letter)


class RouteKeyedFn(GuardedDoFn):
    """A guarded DoFn over (route, ...) or ((route, ...), ...) pairs (rates, costs, alerts):
    its dead letter names the route."""

    def fault(self, element: Any, reason: str) -> Iterable[Any]:
        key = element[0]
        route = key[0] if isinstance(key, tuple) else key
        yield beam.pvalue.TaggedOutput(self.dead_tag, element_letter(
            self.stage, reason, element, route if isinstance(route, str) else None))


class StorageDoFn(beam.DoFn):
    """Base of the DoFns that read or write storage (input files, Parquet shards, BigQuery):
    not guarded, by design. The records they read that are bad become dead letters of their
    own; a failure of the storage itself (a disk full, a table gone) is no trace's fault and
    fails the run, so that no output is silently incomplete. The stage-fault test accepts a
    DoFn of the graph only if it is a GuardedDoFn or a StorageDoFn."""


def _guard_process(process: Callable[..., Any]) -> Callable[..., Any]:
    # functools.wraps keeps the signature Beam reads (its StateParam, TimestampParam, ...).
    @functools.wraps(process)
    def guarded_process(self, element, *args, **kwargs):
        try:
            fault_hook(self, element)
            return list(process(self, element, *args, **kwargs) or ())
        except Exception as exc:  # noqa: BLE001 - one element's fault must not stop the run
            reason = fault_reason(self.stage or type(self).__name__, exc)
            logger.warning("%s: element dead-lettered: %r", self.stage, exc)
            return _faulted(self, element, reason)

    return guarded_process


def _faulted(step: GuardedDoFn, element: Any, reason: str) -> list[Any]:
    """The step's `fault` outputs; if its own fault handling fails, the element as a dead
    letter (the element, not the trace it may belong to), so that the run still goes on."""
    try:
        return list(step.fault(element, reason))
    except Exception as exc:  # noqa: BLE001 - the last resort: the run must go on
        logger.error("%s: handling a fault failed too: %r", step.stage, exc)
        return [beam.pvalue.TaggedOutput(step.dead_tag, element_letter(
            step.stage, f"{reason}; then {type(exc).__name__}: {exc}"[:MAX_REASON_CHARS],
            element))]


def guarded(stage: str, fn: Callable[..., Iterable[Any]], trace_of: Callable[[Any], Trace],
            tag: str = "dead") -> Callable[..., Iterable[Any]]:
    """`fn(element, *args)` whose exception on one element becomes that trace's dead letter."""

    def run(element, *args, **kwargs):  # no hints: Beam would type-check *args
        try:
            fault_hook(run, element)
            out = list(fn(element, *args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - one trace's fault must not stop the run
            trace = trace_of(element)
            logger.warning("%s: trace %s dead-lettered: %r", stage, trace.trace_id, exc)
            yield beam.pvalue.TaggedOutput(tag, fault_letter(stage, exc, trace))
            return
        yield from out

    def fault(element, reason: str) -> Iterable[Any]:
        """What `element` becomes when a step around `fn` fails on it (see Regroup)."""
        yield beam.pvalue.TaggedOutput(tag, fault_letter_reason(stage, reason,
                                                               trace_of(element)))

    run.fault = fault
    return run


def fault_letter_reason(stage: str, reason: str, trace: Trace) -> DeadLetter:
    return DeadLetter(stage, reason, raw_text(trace), trace.trace_id, trace.route)


def _with_parts(parts_of: Callable[[Any], Iterable[Any]]) -> Callable[[Any], Iterable[Any]]:
    def run(item: Any) -> Iterable[tuple[Any, tuple]]:
        yield item, tuple(parts_of(item))

    return run


class GlobalDeadLetters(beam.PTransform):
    """Dead letters from steps in event-time windows (rates, costs, alerts) -> one
    PCollection in the global window, as the other stages' dead letters are."""

    def expand(self, letters: Iterable[beam.PCollection]) -> beam.PCollection[DeadLetter]:
        # Each input first: Flatten wants its inputs in one windowing.
        return tuple(
            pc | f"Global{i}" >> beam.WindowInto(beam.window.GlobalWindows())
            for i, pc in enumerate(letters)) | "Flatten" >> beam.Flatten()


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

