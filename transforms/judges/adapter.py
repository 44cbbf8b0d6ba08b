"""How the stages call a judge: :class:`TypedJudge`, every call typed and bounded.

Judges answer with :class:`Verdict` and :class:`DecomposedClaim` (the contract,
:mod:`.contract`, which converts a custom judge's plain answers once, where it is built). A
stored answer replayed from judge_cache is converted with the same functions, re-exported here
(`as_verdict`, `as_verdicts`, `as_claims`): a malformed answer is a :class:`JudgeError`
(recorded as ``judge_error``), never a default label or an empty claim list. Every call made
through :class:`TypedJudge` ends: it has the judge's deadline (``call_deadline_s``), and a
BaseException from the judge is a JudgeError.

A custom judge's call runs in a thread of its own, on an event loop of its own
(:func:`in_own_thread`): a coroutine that blocks (``time.sleep``, a CPU loop inside ``async
def``) then holds only its own call, which fails at its deadline as a judge_error while the
worker's shared loop and every other call go on. The built-in judges, which never block and
share their client, limiter and breaker across calls, run on the shared loop; a custom judge
that holds loop-bound state across calls (a client session, an ``asyncio.Semaphore``) and never
blocks may ask for the shared loop too with a class attribute ``shares_event_loop = True``
(its traits then say so).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from rt4chart.transforms.judges.base import (
    DEADLINE_OPTION,
    DecomposedClaim,
    JudgeError,
    Verdict,
    call_deadline_of,
    contained,
    context_for_thread,
    start_deadline,
    stop_deadline,
)
from rt4chart.transforms.judges.contract import (
    Judge,
    as_claims,
    as_judge,
    as_verdict,
    as_verdicts,
)

__all__ = ["TypedJudge", "as_claims", "as_verdict", "as_verdicts", "batches_claims", "bounded",
           "in_own_thread", "runs_in_own_thread"]

T = TypeVar("T")


def batches_claims(judge: object) -> bool:
    """Whether a judge checks several claims in one call (its traits; a custom judge: it has
    a `verify_local_many` method)."""
    return as_judge(judge).traits.batches_claims


async def bounded(call: Callable[[], Awaitable[T]], seconds: float | None) -> T:
    """Await a judge call for at most `seconds` of running time (see base.CallDeadline; None:
    no deadline); a BaseException from the judge is a JudgeError (see base.contained).

    The call runs as a task of its own: when the deadline passes it is cancelled and abandoned,
    not awaited, so that a judge that ignores the cancellation cannot hold the caller.
    """
    if seconds is None:
        return await contained(call)
    deadline, token = start_deadline(seconds)
    try:
        task = asyncio.ensure_future(contained(call))  # copies the context: sees the deadline
    finally:
        stop_deadline(token)
    try:
        await asyncio.wait((task, deadline.expired), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        deadline.close()
    if not task.done():
        task.cancel()
        task.add_done_callback(_forget)
        raise JudgeError(f"the judge did not answer within {seconds:g} s "
                         f"({DEADLINE_OPTION}); the call was cancelled")
    return task.result()


def _forget(task: asyncio.Task) -> None:
    # An abandoned call's late outcome is nobody's business; read it so asyncio does not log it.
    if not task.cancelled():
        task.exception()


def runs_in_own_thread(judge: object) -> bool:
    """Whether a judge's calls each run in a thread of their own (custom judges), rather than
    on the worker's shared event loop (built-in ones, and judges with shares_event_loop)."""
    return not as_judge(judge).traits.shares_event_loop


class _ThreadCall:
    """One judge call on an event loop of its own, in a daemon thread; its outcome is handed
    to the caller's loop."""

    def __init__(self, call: Callable[[], Awaitable[T]]):
        self._call = call
        self._caller = asyncio.get_running_loop()
        self.outcome: asyncio.Future = self._caller.create_future()
        self._context = context_for_thread()  # the element's usage meter, the call's deadline
        self._lock = threading.Lock()
        self._own: tuple[asyncio.AbstractEventLoop, asyncio.Task] | None = None
        self._cancelled = False

    async def _main(self) -> object:
        with self._lock:
            self._own = (asyncio.get_running_loop(), asyncio.current_task())
            if self._cancelled:  # cancelled before it started: do not start the judge's call
                raise JudgeError("the judge's call was cancelled")
        return await contained(self._call)

    def run(self) -> None:
        result, error = None, None
        try:
            result = self._context.run(asyncio.run, self._main())
        except asyncio.CancelledError:
            error = JudgeError("the judge's call was cancelled")
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's loop as is
            error = exc
        with contextlib.suppress(RuntimeError):  # the caller's loop is gone: nobody waits
            self._caller.call_soon_threadsafe(self._settle, result, error)

    def _settle(self, result: object, error: BaseException | None) -> None:
        if self.outcome.done():
            return
        if error is None:
            self.outcome.set_result(result)
        else:
            self.outcome.set_exception(error)

    def cancel(self) -> None:
        """Cancel the call on its own loop (a call that blocks its thread cannot see it)."""
        with self._lock:
            self._cancelled = True
            own = self._own
        if own is not None:
            with contextlib.suppress(RuntimeError):  # its loop already closed: it ended
                own[0].call_soon_threadsafe(own[1].cancel)


async def in_own_thread(call: Callable[[], Awaitable[T]]) -> T:
    """Run a judge call on a new event loop in a daemon thread of its own and await its
    outcome: a call that blocks its thread holds no other call. Cancelled (its deadline), the
    call is cancelled on its own loop too; one that blocks its thread for good is abandoned
    there (a daemon thread: it does not hold the process's exit)."""
    job = _ThreadCall(call)
    threading.Thread(target=job.run, name="rt4chart-judge-call", daemon=True).start()
    try:
        return await job.outcome
    except asyncio.CancelledError:
        job.cancel()
        raise


class TypedJudge:
    """Any judge seen through the typed contract, every call under the judge's deadline.
    Cheap to build: it holds the judge only (a custom judge's object is wrapped once)."""

    def __init__(self, judge: Judge | object):
        self.judge = as_judge(judge)
        self._own_thread = not self.judge.traits.shares_event_loop

    async def _call(self, call: Callable[[], Awaitable[T]]) -> T:
        if self._own_thread:
            return await bounded(lambda: in_own_thread(call), call_deadline_of(self.judge))
        return await bounded(call, call_deadline_of(self.judge))

    async def decompose(self, sentence: str, answer: str, question: str) -> list[DecomposedClaim]:
        return as_claims(await self._call(
            lambda: self.judge.decompose(sentence, answer, question)))

    async def verify_local(self, claim: str, chunk: str, question: str) -> Verdict:
        return as_verdict(await self._call(
            lambda: self.judge.verify_local(claim, chunk, question)))

    async def verify_global(self, claim: str, context: str, question: str, local_label: str,
                            hint: str | None) -> Verdict:
        return as_verdict(await self._call(
            lambda: self.judge.verify_global(claim, context, question, local_label, hint)))

    async def verify_absence(self, claim: str, context: str, question: str) -> Verdict:
        """An absence claim's verdict (`traits.verifies_absence`); a judge that gave an
        absence claim without the method to check it fails the call."""
        if not self.judge.traits.verifies_absence:
            raise JudgeError("judge gave an absence claim but has no verify_absence to check it")
        return as_verdict(await self._call(
            lambda: self.judge.verify_absence(claim, context, question)))

    async def verify_local_many(self, claims: Sequence[str], chunk: str,
                                question: str) -> list[Verdict]:
        """One verdict per claim: in one call if the judge batches claims, else claim by
        claim, concurrently."""
        if self.judge.traits.batches_claims:
            answer = await self._call(
                lambda: self.judge.verify_local_many(list(claims), chunk, question))
            return as_verdicts(answer, len(claims))
        return list(await asyncio.gather(
            *(self.verify_local(claim, chunk, question) for claim in claims)))
