"""The one place where a judge's answers become typed values.

Built-in judges return :class:`Verdict` and :class:`DecomposedClaim`; a custom judge may still
return the plain forms of the first contract (``(label, quotes)``, ``(label, quotes, p)``, a list
of strings). Every answer, fresh from a judge or replayed from judge_cache, is converted here and
validated: a malformed answer is a :class:`JudgeError` (recorded as ``judge_error``), never a
default label or an empty claim list. Every call made through :class:`TypedJudge` ends: it has
the judge's deadline (``call_deadline_s``), and a BaseException from the judge is a JudgeError.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from rt4chart.transforms.judges.base import (
    DEADLINE_OPTION,
    DecomposedClaim,
    Judge,
    JudgeError,
    Verdict,
    call_deadline_of,
    contained,
    start_deadline,
    stop_deadline,
)

T = TypeVar("T")


def as_verdict(answer: object) -> Verdict:
    """A verification answer as a Verdict: a Verdict, or a 2- or 3-element tuple or list."""
    if isinstance(answer, Verdict):
        return answer
    if not isinstance(answer, tuple | list) or len(answer) not in (2, 3):
        raise JudgeError(f"judge returned {answer!r:.200} instead of a Verdict or "
                         "(label, quotes[, p])")
    return Verdict(*answer)


def as_verdicts(answer: object, n: int) -> list[Verdict]:
    """A multi-claim answer: exactly one verdict per claim, in the claims' order."""
    if not isinstance(answer, tuple | list) or len(answer) != n:
        got = len(answer) if isinstance(answer, tuple | list) else 0
        raise JudgeError(f"judge gave {got} verdicts for {n} claims")
    return [as_verdict(v) for v in answer]


def _as_claim(item: object) -> DecomposedClaim:
    if isinstance(item, DecomposedClaim):
        return item
    if isinstance(item, str):
        return DecomposedClaim(item)
    if isinstance(item, dict) and "text" in item and set(item) <= {"text", "kind", "fragments"}:
        return DecomposedClaim(**item)  # the stored form of a claim with a kind or fragments
    raise JudgeError(f"judge returned an invalid claim {item!r:.200}")


def as_claims(answer: object) -> list[DecomposedClaim]:
    """A decomposition as claims, their text stripped; blank claims are dropped."""
    if not isinstance(answer, list | tuple):
        raise JudgeError(f"judge returned invalid claims {answer!r:.200}")
    claims = [_as_claim(item) for item in answer]
    return [DecomposedClaim(c.text.strip(), c.kind, c.fragments) for c in claims
            if c.text.strip()]


def batches_claims(judge: object) -> bool:
    """Whether a judge implements the optional `verify_local_many` (see BatchJudge)."""
    return callable(getattr(judge, "verify_local_many", None))


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


class TypedJudge:
    """Any judge seen through the typed contract, every call under the judge's deadline.
    Cheap to build: it holds the judge only."""

    def __init__(self, judge: Judge):
        self.judge = judge

    async def _call(self, call: Callable[[], Awaitable[T]]) -> T:
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
        """An absence claim's verdict (see AbsenceJudge); a judge that gave an absence claim
        without the method to check it fails the call."""
        check = getattr(self.judge, "verify_absence", None)
        if not callable(check):
            raise JudgeError("judge gave an absence claim but has no verify_absence to check it")
        return as_verdict(await self._call(lambda: check(claim, context, question)))

    async def verify_local_many(self, claims: Sequence[str], chunk: str,
                                question: str) -> list[Verdict]:
        """One verdict per claim: in one call if the judge batches claims, else claim by
        claim, concurrently."""
        if batches_claims(self.judge):
            answer = await self._call(
                lambda: self.judge.verify_local_many(list(claims), chunk, question))
            return as_verdicts(answer, len(claims))
        return list(await asyncio.gather(
            *(self.verify_local(claim, chunk, question) for claim in claims)))
