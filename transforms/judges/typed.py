"""The typed judge interface: what the stages call, and a custom judge seen through it.

- :class:`Judge`: what the stages call. Its methods return only :class:`Verdict` and
  :class:`DecomposedClaim`; the built-in judges implement it.
- :class:`JudgeTraits`: what a judge declares (the name it is recorded under, whether it shares
  the worker's event loop, checks several claims in one call or checks absence claims, its
  decision threshold and calibration, whether its endpoint is negotiated, its limits shared by
  the job's workers, whether its calls wait in a Batch API). Callers ask the traits, never the
  judge's attributes.
- :class:`PlainJudge`: a custom judge (``--judge package.module:factory``, any object with the
  three coroutine methods of the first contract) seen through this one: its optional methods
  and attributes are read once, when it is built, and its plain answers (``(label, quotes)``,
  ``(label, quotes, p)``, a list of strings) converted here, so that the stages only see typed
  results. A malformed answer is a :class:`JudgeError`, never a default.

What a judge is before it is built (its kind) and the spec that builds it are in
:mod:`rt4chart.transforms.judges.contract`, which also re-exports these names.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rt4chart.transforms.common import probability
from rt4chart.transforms.judges.base import (
    DEADLINE_OPTION,
    DEFAULT_CALL_DEADLINE_S,
    DecomposedClaim,
    JudgeError,
    Verdict,
)

logger = logging.getLogger(__name__)

# Where a custom judge's calls run unless it says otherwise (`shares_event_loop`): objects of
# the package's own modules share the worker's loop, any other runs each call in a thread.
_BUILTIN_PREFIX = "rt4chart."
REQUIRED = ("decompose", "verify_local", "verify_global")


@dataclass(frozen=True)
class JudgeTraits:
    """What a judge declares about itself; the pipeline asks these, not the judge's attributes.

    Attributes:
        model: the name recorded in the outputs (None: the spec's name).
        shares_event_loop: its calls run on the worker's shared event loop (it never blocks and
            keeps loop-bound state across calls); else each call runs in a thread of its own.
        batches_claims: `verify_local_many` checks several claims in one call
            (`--claims-per-call`); else they are asked claim by claim.
        verifies_absence: `verify_absence` checks absence claims.
        decision_threshold: the raw score below which it may say ENT (calibration_of).
        calibration: its own calibration file (None: the identity).
        negotiates: its endpoint is probed before a run (`check-judge` has something to probe).
        shares_limits: its rate limits are the job's, shared by the worker processes.
        batch_api: its calls wait at the provider in batches (one run, no chunks).
    """

    model: str | None = None
    shares_event_loop: bool = False
    batches_claims: bool = False
    verifies_absence: bool = False
    decision_threshold: float = probability.DEFAULT_DECISION
    calibration: str | None = None
    negotiates: bool = False
    shares_limits: bool = False
    batch_api: bool = False


class Judge(abc.ABC):
    """What the pipeline needs from a judge backend: typed answers, every call a coroutine.

    A judge signals failure by raising (the pipeline records ``judge_error``, never a label).
    `call_deadline_s` is its per-call deadline (0 or None: none); the `call_deadline_s` option
    of any judge sets it.
    """

    traits: JudgeTraits = JudgeTraits()  # a subclass declares its own
    call_deadline_s: float | None = DEFAULT_CALL_DEADLINE_S

    @abc.abstractmethod
    async def decompose(self, sentence: str, answer: str, question: str
                        ) -> list[DecomposedClaim]: ...

    @abc.abstractmethod
    async def verify_local(self, claim: str, chunk: str, question: str) -> Verdict: ...

    @abc.abstractmethod
    async def verify_global(self, claim: str, context: str, question: str, local_label: str,
                            hint: str | None) -> Verdict: ...

    async def verify_local_many(self, claims: Sequence[str], chunk: str,
                                question: str) -> list[Verdict]:
        """One verdict per claim, in the claims' order: claim by claim, concurrently, unless the
        judge checks several in one call (`traits.batches_claims`)."""
        return list(await asyncio.gather(
            *(self.verify_local(claim, chunk, question) for claim in claims)))

    async def verify_absence(self, claim: str, context: str, question: str) -> Verdict:
        """An absence claim's verdict (`traits.verifies_absence`): ENT with no quotes when the
        context lacks it, CON quoting where it says it. A judge without it fails the call."""
        raise JudgeError("judge gave an absence claim but has no verify_absence to check it")

    async def aclose(self) -> None:  # noqa: B027 - optional: a judge without connections
        """Close the judge's connections, in the event loop that used them (see close_judge)."""

    @property
    def request_mode(self) -> str | None:
        """What the judge sends, when that changes its answers (part of the prompt hash)."""
        return None

    def endpoint_speed(self) -> dict[str, Any] | None:
        """The endpoint's speed as this judge measured it (check-judge), None when unknown."""
        return None

    def held_keys(self) -> tuple[str, ...]:
        """The keys this judge holds that its process's environment does not (one it read from
        Secret Manager): its runtime redacts them from what its stages write."""
        return ()


# --- a custom judge's answers, converted in one place --------------------------------------

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


class PlainJudge(Judge):
    """A custom judge seen through the typed contract: built once per judge, it reads the
    object's optional methods and attributes once and converts each answer. The object's own
    attributes (a fake's records, its options) read through the wrapper."""

    def __init__(self, inner: object):
        self.inner = inner
        shares = getattr(inner, "shares_event_loop", None)
        decision = getattr(inner, "decision_threshold", probability.DEFAULT_DECISION)
        self.traits = JudgeTraits(
            model=str(getattr(inner, "model", None) or "") or None,
            shares_event_loop=(bool(shares) if shares is not None
                               else type(inner).__module__.startswith(_BUILTIN_PREFIX)),
            batches_claims=callable(getattr(inner, "verify_local_many", None)),
            verifies_absence=callable(getattr(inner, "verify_absence", None)),
            decision_threshold=float(decision),
            calibration=getattr(inner, "calibration", None))
        self._aclose = getattr(inner, "aclose", None)
        self._request_mode = getattr(inner, "request_mode", None)

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (a half-built wrapper): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property  # type: ignore[override]
    def call_deadline_s(self) -> object:
        """The object's own `call_deadline_s` when it has one (checked by call_deadline_of)."""
        return getattr(self.inner, DEADLINE_OPTION, DEFAULT_CALL_DEADLINE_S)

    @call_deadline_s.setter
    def call_deadline_s(self, seconds: float) -> None:
        setattr(self.inner, DEADLINE_OPTION, seconds)  # AttributeError: it does not take one

    @property
    def request_mode(self) -> str | None:
        return self._request_mode

    async def decompose(self, sentence: str, answer: str, question: str
                        ) -> list[DecomposedClaim]:
        return as_claims(await self.inner.decompose(sentence, answer, question))

    async def verify_local(self, claim: str, chunk: str, question: str) -> Verdict:
        return as_verdict(await self.inner.verify_local(claim, chunk, question))

    async def verify_global(self, claim: str, context: str, question: str, local_label: str,
                            hint: str | None) -> Verdict:
        return as_verdict(await self.inner.verify_global(claim, context, question, local_label,
                                                         hint))

    async def verify_local_many(self, claims: Sequence[str], chunk: str,
                                question: str) -> list[Verdict]:
        if not self.traits.batches_claims:
            return await super().verify_local_many(claims, chunk, question)
        answer = await self.inner.verify_local_many(list(claims), chunk, question)
        return as_verdicts(answer, len(claims))

    async def verify_absence(self, claim: str, context: str, question: str) -> Verdict:
        if not self.traits.verifies_absence:
            return await super().verify_absence(claim, context, question)
        return as_verdict(await self.inner.verify_absence(claim, context, question))

    async def aclose(self) -> None:
        if self._aclose is not None:
            await self._aclose()


def as_judge(judge: object) -> Judge:
    """Any judge through the typed contract: a Judge as it is, another object wrapped (once)."""
    return judge if isinstance(judge, Judge) else PlainJudge(judge)


def checked(judge: object, name: str) -> Judge:
    """A factory's judge through the typed contract; ValueError when a custom judge's object
    lacks one of the three methods every judge has."""
    if not isinstance(judge, Judge):
        missing = [m for m in REQUIRED if not callable(getattr(judge, m, None))]
        if missing:
            raise ValueError(f"judge {name!r} lacks the method(s) {', '.join(missing)}")
    return as_judge(judge)


async def close_judge(judge: object) -> None:
    """Close a judge's connections (its `aclose()`), in the event loop that used them: a client
    left open is closed by the garbage collector later, in whatever loop then runs, and its
    connections' loop is closed by then ("Task exception was never retrieved … Event loop is
    closed"). Never raises: closing is tidying up."""
    try:
        await as_judge(judge).aclose()
    except Exception as exc:  # noqa: BLE001 - a connection that will not close is not a fault
        logger.debug("closing the judge %r: %r", type(judge).__name__, exc)
