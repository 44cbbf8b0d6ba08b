"""The judge's typed answers, usage metering and call deadlines.

:class:`Verdict` and :class:`DecomposedClaim` are what a judge answers, validated when built; a
judge signals failure by raising (:class:`JudgeError` for an answer that cannot be used): the
pipeline records ``judge_error`` and never turns a failure into a label. A judge may report what
a call cost with :func:`record_usage`.

Every call ends: a call that runs longer than the judge's ``call_deadline_s`` (the option of
that name for any judge; default 300 s, 0 = none) fails with that reason, and a judge that waits
in a queue of its own (a concurrency limit, a rate limiter) marks the wait with :func:`queued` so
that it does not count. A BaseException raised by a judge (KeyboardInterrupt, SystemExit…) is a
failed call, like any exception.

The contract a judge implements, its traits and the spec that builds it are in
:mod:`rt4chart.transforms.judges.contract`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rt4chart.schemas.records import CLAIM_KINDS, FACT, LABELS
from rt4chart.schemas.usage import Usage

T = TypeVar("T")


class JudgeError(RuntimeError):
    """A judge call failed for good (after its retries); the message says why."""


class JudgeUnusable(Exception):
    """The endpoint cannot be used as a judge; the message says why, in the server's words
    (raised when a judge's kind negotiates: `JudgeKind.negotiate`)."""


# A built-in example any judge can be asked (a backend's probe, `check-judge`'s example calls).
CONTEXT = ("The city museum opened in 1990 on the river bank. It holds about 4,000 paintings. "
           "Entry is free on Sundays.")
CLAIM = "The city museum opened in 1990."
QUESTION = "When did the city museum open?"


def check_label(label: Any) -> str:
    """A judge's label, validated: anything but ENT/CON/NIC is a judge error, never a default."""
    if label not in LABELS:
        raise JudgeError(f"judge returned an invalid label {label!r}")
    return label


def check_quotes(quotes: Any) -> list[str]:
    """A judge's quotes, validated as a list of strings."""
    if not isinstance(quotes, list | tuple) or not all(isinstance(q, str) for q in quotes):
        raise JudgeError(f"judge returned invalid evidence {quotes!r:.200}")
    return list(quotes)


def check_probability(value: object) -> float | None:
    """A judge's p_unsupported: a number in [0, 1], or None when it gave none."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise JudgeError(f"judge returned p_unsupported {value!r:.50}, not a number in [0, 1]")
    return float(value)


@dataclass(frozen=True)
class Verdict:
    """A verification: the label, the quotes it rests on, and optionally the judge's own
    probability that the claim is unsupported (contradicted or not in the text).

    Validated when built: an invalid label, quotes that are not strings or a probability outside
    [0, 1] raise :class:`JudgeError` (so a judge that builds a bad verdict fails its call).
    """

    label: str
    quotes: tuple[str, ...] = ()
    p_unsupported: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "label", check_label(self.label))
        object.__setattr__(self, "quotes", tuple(check_quotes(self.quotes)))
        object.__setattr__(self, "p_unsupported", check_probability(self.p_unsupported))

    def as_json(self) -> list:
        """The form judge_cache stores (``[label, quotes, p_unsupported or null]``)."""
        return [self.label, list(self.quotes), self.p_unsupported]


@dataclass(frozen=True)
class DecomposedClaim:
    """One claim of an answer sentence.

    `kind` says what the claim is about and `fragments` are the verbatim words of the sentence
    it restates; the pipeline reads only `text` today (every claim is a factual claim), the
    other fields are carried so that a decomposer can already give them.
    """

    text: str
    kind: str = FACT
    fragments: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise JudgeError(f"judge returned a claim that is not text: {self.text!r:.200}")
        if self.kind not in CLAIM_KINDS:
            raise JudgeError(f"judge returned an invalid claim kind {self.kind!r:.50}")
        if not isinstance(self.fragments, list | tuple) or not all(
                isinstance(f, str) for f in self.fragments):
            raise JudgeError(f"judge returned invalid claim fragments {self.fragments!r:.200}")
        object.__setattr__(self, "fragments", tuple(self.fragments))

    def as_json(self) -> str | dict:
        """The form judge_cache stores: the text alone for a factual claim without fragments
        (as plain decompositions always were), else an object with every field."""
        if self.kind == FACT and not self.fragments:
            return self.text
        return {"text": self.text, "kind": self.kind, "fragments": list(self.fragments)}


# What a judge may return; the adapter turns each into the typed value.
VerdictLike = Verdict | tuple[str, Sequence[str]] | tuple[str, Sequence[str], float | None]
ClaimLike = DecomposedClaim | str


@dataclass
class UsageMeter:
    """Usage of the judge calls made on behalf of one pipeline element."""

    usage: Usage = field(default_factory=Usage)

    def add(self, usage: Usage) -> None:
        self.usage = self.usage + usage


_METER: contextvars.ContextVar[UsageMeter | None] = contextvars.ContextVar(
    "rt4chart_usage_meter", default=None
)


def record_usage(
    input_tokens: int, cached_tokens: int, output_tokens: int, cost_usd: float, calls: int = 1
) -> None:
    """Attribute one judge call's usage to the element being judged (no-op outside a stage)."""
    meter = _METER.get()
    if meter is not None:
        meter.add(Usage(calls, input_tokens, cached_tokens, output_tokens, cost_usd))


async def metered(fn: Callable[[], Awaitable[T]]) -> tuple[T, Usage]:
    """Run one judge call and return its result with the usage it recorded.

    Raises what the call raised, except that a BaseException other than a cancellation
    (KeyboardInterrupt, SystemExit, GeneratorExit, a custom subclass) becomes a JudgeError: let
    through, asyncio would re-raise it out of the shared event loop and stop every call of the
    worker. The usage of failed attempts is attached to the exception as ``exc.rt4chart_usage``
    so that it is still accounted for.
    """
    meter = UsageMeter()
    token = _METER.set(meter)
    try:
        result = await contained(fn)
    except BaseException as exc:
        exc.rt4chart_usage = _at_least_one_call(meter.usage)  # type: ignore[attr-defined]
        raise
    finally:
        _METER.reset(token)
    return result, _at_least_one_call(meter.usage)


async def contained(fn: Callable[[], Awaitable[T]]) -> T:
    """Await a judge call; a BaseException that is not a cancellation of this task comes out as
    a JudgeError naming it (it must never reach asyncio's task machinery, see `metered`)."""
    try:
        return await fn()
    except Exception:
        raise
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # a real cancellation (a deadline, a shutdown): asyncio must see it
        raise JudgeError("the judge raised CancelledError without being cancelled") from None
    except BaseException as exc:  # noqa: BLE001 - see the docstring
        detail = f": {exc}" if str(exc) else ""
        raise JudgeError(f"the judge raised {type(exc).__name__}{detail} (a BaseException, "
                         "treated as a failed call)") from exc


# A judge call's deadline. Time a judge spends in its own queue (a concurrency limit, a rate
# limiter, a batch job) is not the call hanging: a judge marks it with `queued()`.
DEADLINE_OPTION = "call_deadline_s"
# Every judge's option too, handled by the pipeline (rt4chart.transforms.common.probability), never
# seen by a factory: a calibration file of the judge's scores, or "identity".
CALIBRATION_OPTION = "calibration"
DEFAULT_CALL_DEADLINE_S = 300.0


class CallDeadline:
    """The deadline of one judge call, on the running event loop.

    `expired` is a future that resolves when the call has run `seconds` without being queued:
    the clock stops while the call waits in the judge's own queue and goes on from where it
    stopped when the wait ends (so a queued call is not cut short by the others ahead of it,
    and a call that queues between its attempts still ends). Nothing else restarts it: not the
    tokens of a reply, which a server can drip forever.
    """

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._loop = asyncio.get_running_loop()
        self.expired: asyncio.Future[None] = self._loop.create_future()
        self._timer: asyncio.TimerHandle | None = None
        self._queued = 0
        self._left = seconds  # running time left when the clock last stopped
        self._since = self._loop.time()
        self._arm()

    def _arm(self) -> None:
        if not self._queued and not self.expired.done():
            self._since = self._loop.time()
            self._timer = self._loop.call_later(max(0.0, self._left), self._expire)

    def _stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._left -= self._loop.time() - self._since

    def _expire(self) -> None:
        if not self.expired.done():
            self.expired.set_result(None)

    def enter_queue(self) -> None:
        self._queued += 1
        if self._queued == 1:
            self._stop()

    def leave_queue(self) -> None:
        self._queued -= 1
        if not self._queued:
            self._arm()

    def close(self) -> None:
        """Stop the clock (the call ended)."""
        if self._timer is not None:
            self._timer.cancel()
        if not self.expired.done():
            self.expired.cancel()


_DEADLINE: contextvars.ContextVar[CallDeadline | None] = contextvars.ContextVar(
    "rt4chart_call_deadline", default=None
)


def start_deadline(seconds: float) -> tuple[CallDeadline, contextvars.Token]:
    """A deadline for the call about to start, seen by the tasks created in this context."""
    deadline = CallDeadline(seconds)
    return deadline, _DEADLINE.set(deadline)


def stop_deadline(token: contextvars.Token) -> None:
    _DEADLINE.reset(token)


@contextlib.contextmanager
def queued() -> Iterator[None]:
    """Mark a wait in the judge's own queue: it does not count against the call's deadline,
    whose clock goes on when the wait ends. A no-op outside a deadline."""
    deadline = _DEADLINE.get()
    if deadline is None:
        yield
        return
    deadline.enter_queue()
    try:
        yield
    finally:
        deadline.leave_queue()


class _DeadlineFromThread:
    """A call's deadline seen from another thread (a custom judge's call runs in a thread of
    its own, see adapter.in_own_thread): `queued()` there reaches the deadline on its loop."""

    def __init__(self, deadline: CallDeadline, loop: asyncio.AbstractEventLoop):
        self._deadline, self._loop = deadline, loop

    def _on_loop(self, method: Callable[[], None]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: no deadline left to move
            self._loop.call_soon_threadsafe(method)

    def enter_queue(self) -> None:
        self._on_loop(self._deadline.enter_queue)

    def leave_queue(self) -> None:
        self._on_loop(self._deadline.leave_queue)


def context_for_thread() -> contextvars.Context:
    """A copy of the current context (the element's usage meter, the call's deadline) for a
    call that runs in another thread, its deadline reached thread-safely."""
    context = contextvars.copy_context()
    deadline = _DEADLINE.get()
    if isinstance(deadline, CallDeadline):
        carrier = _DeadlineFromThread(deadline, asyncio.get_running_loop())
        context.run(_DEADLINE.set, carrier)  # type: ignore[arg-type]
    return context


def check_deadline(value: object, where: str = DEADLINE_OPTION) -> float | None:
    """A call deadline in seconds: a finite number >= 0; 0 or None turns it off."""
    if value is None:
        return None
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{where}={value!r}: expected a number of seconds >= 0 (0 = none)")
    return seconds or None


def call_deadline_of(judge: Any) -> float | None:
    """A judge's (contract.Judge's) per-call deadline, its `call_deadline_s` checked; None when
    turned off."""
    try:
        return check_deadline(judge.call_deadline_s, f"judge {DEADLINE_OPTION}")
    except ValueError as exc:
        raise JudgeError(str(exc)) from exc


def _at_least_one_call(usage: Usage) -> Usage:
    # A judge that reports no usage (a custom one) still made the call.
    return usage if usage.calls else usage + Usage(calls=1)
