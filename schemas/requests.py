"""What a judge stage asks of the judge, one element per call, keyed by its trace
(`records.TraceKey`): a sentence to decompose, a claim (or several) to verify against a window,
or a claim to verify against the whole context. Frozen dataclasses, no Beam; the stages' other
elements are `records.py`'s."""

from __future__ import annotations

from dataclasses import dataclass

from rt4chart.schemas.records import AnswerSentence, Claim, RenderedText, TraceKey
from rt4chart.schemas.usage import Usage


@dataclass(frozen=True)
class DecomposeRequest:
    """One answer sentence to decompose. `answer` is the whole answer, or for a long answer a
    bounded excerpt around the sentence (transforms/decompose.py `answer_excerpt`): one request
    per sentence must not hold the whole answer."""

    key: TraceKey
    sentence: AnswerSentence
    answer: str
    question: str


@dataclass(frozen=True)
class LocalRequest:
    key: TraceKey
    claim: Claim
    window_index: int
    chunk: RenderedText
    question: str


@dataclass(frozen=True)
class LocalBatchRequest:
    """Several claims of one trace against one window, in one call (`--claims-per-call`)."""

    key: TraceKey
    claims: tuple[Claim, ...]
    window_index: int
    chunk: RenderedText
    question: str


@dataclass(frozen=True)
class GlobalRequest:
    key: TraceKey
    claim: Claim
    window_labels: tuple[str | None, ...]  # empty for an absence claim (no local pass)
    local_label: str | None  # None for an absence claim
    deciding_window: int | None
    context: RenderedText
    hint: str | None
    question: str
    usage: Usage = Usage()  # of the claim's local calls
