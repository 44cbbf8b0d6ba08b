"""Per-trace fault isolation: an exception on one trace's data becomes that trace's dead letter.

`guarded(stage, fn, trace_of, tag)` wraps a generator function (a Regroup join or a FlatMap) so
that an exception while processing one element yields one `DeadLetter(stage, reason, raw)` on
the `tag` output instead of failing the bundle (and with it the whole run). Outputs the function
yielded before it raised are kept back: a trace ends either as its outputs or as one dead letter.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

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

    def run(element: Any, *args: Any, **kwargs: Any) -> Iterable[Any]:
        try:
            out = list(fn(element, *args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - one trace's fault must not stop the run
            trace = trace_of(element)
            logger.warning("%s: trace %s dead-lettered: %r", stage, trace.trace_id, exc)
            yield beam.pvalue.TaggedOutput(tag, fault_letter(stage, exc, trace))
            return
        yield from out

    return run
