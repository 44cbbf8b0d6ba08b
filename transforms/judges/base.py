"""The judge contract, usage metering and the judge factory.

A judge is any object with three coroutine methods (the public contract for custom judges):

- ``async decompose(sentence, answer, question) -> list[str]``
- ``async verify_local(claim, chunk, question) -> tuple[str, list[str]]``
- ``async verify_global(claim, context, question, local_label, hint) -> tuple[str, list[str]]``

Labels are "ENT", "CON" or "NIC"; the lists are evidence quotes copied from the text the judge
was given. A judge signals failure by raising: the pipeline records ``judge_error`` and never
turns a failure into a label. A judge may report what a call cost with :func:`record_usage`;
its optional ``model`` attribute names it in the outputs.
"""

from __future__ import annotations

import contextvars
import importlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from rt4chart.schemas.records import LABELS, Usage

T = TypeVar("T")


class Judge(Protocol):
    """What the pipeline needs from a judge backend."""

    async def decompose(self, sentence: str, answer: str, question: str) -> list[str]: ...

    async def verify_local(
        self, claim: str, chunk: str, question: str
    ) -> tuple[str, list[str]]: ...

    async def verify_global(
        self, claim: str, context: str, question: str, local_label: str, hint: str | None
    ) -> tuple[str, list[str]]: ...


class JudgeError(RuntimeError):
    """A judge call failed for good (after its retries); the message says why."""


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

    Raises what the call raised; the usage of failed attempts is attached to the exception as
    ``exc.rt4chart_usage`` so that it is still accounted for.
    """
    meter = UsageMeter()
    token = _METER.set(meter)
    try:
        result = await fn()
    except BaseException as exc:
        exc.rt4chart_usage = _at_least_one_call(meter.usage)  # type: ignore[attr-defined]
        raise
    finally:
        _METER.reset(token)
    return result, _at_least_one_call(meter.usage)


def _at_least_one_call(usage: Usage) -> Usage:
    # A judge that reports no usage (a custom one) still made the call.
    return usage if usage.calls else usage + Usage(calls=1)


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


BUILTIN = {
    "offline": "rt4chart.transforms.judges.offline:OfflineJudge",
    "openai": "rt4chart.transforms.judges.openai_judge:OpenAIJudge",
    "openai-batch": "rt4chart.transforms.judges.openai_batch:BatchOpenAIJudge",
}


@dataclass(frozen=True)
class JudgeSpec:
    """Which judge to build and with what options: small, hashable, picklable."""

    name: str = "offline"
    options: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, name: str, options: Mapping[str, str] | None = None) -> JudgeSpec:
        return cls(name, tuple(sorted((options or {}).items())))

    def build(self) -> Judge:
        """Import the backend lazily and call its factory with the options."""
        target = BUILTIN.get(self.name, self.name)
        module_name, sep, attr = target.partition(":")
        if not sep or not attr:
            raise ValueError(
                f"judge {self.name!r}: expected 'offline', 'openai' or 'package.module:factory'"
            )
        try:
            factory = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"judge {self.name!r} cannot be imported: {exc}") from exc
        judge = factory(dict(self.options))
        missing = [m for m in ("decompose", "verify_local", "verify_global")
                   if not callable(getattr(judge, m, None))]
        if missing:
            raise ValueError(f"judge {self.name!r} lacks the method(s) {', '.join(missing)}")
        return judge


def judge_model(judge: object, spec: JudgeSpec) -> str:
    """The name recorded in the outputs for a judge."""
    return str(getattr(judge, "model", None) or spec.name)
