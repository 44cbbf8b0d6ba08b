"""An audit's results as a Python caller reads them (`rt4chart.audit`, `rt4chart.open_run`):
answers with their claims and evidence, and a summary per route.

Built from the written tables' rows (`schemas/rows.py`), never from anything else, so that the
API and the command line report the same verdicts. No Beam here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rt4chart.schemas.rows import AnswerRow, ClaimRow

HALLUCINATED_LABELS = ("CON", "NIC")


@dataclass(frozen=True)
class Evidence:
    """A context sentence a claim's verdict rests on: its document, the sentence's index in it,
    character offsets within the document, and its text."""

    doc_id: str
    sentence_index: int
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Span:
    """Answer characters [start, end) of a hallucinated claim, with its label."""

    start: int
    end: int
    label: str


@dataclass(frozen=True)
class Claim:
    """One claim of an answer and its verdict.

    `label` is ENT (supported), CON (contradicted), NIC (not in the context) or None (a judge
    call failed: `status` is judge_error); `note` says why a label was changed or is missing;
    `kind` is fact, source or absence.
    """

    index: int
    text: str
    label: str | None
    kind: str | None
    status: str
    note: str | None
    p_unsupported: float | None
    sentence_index: int
    sentence: str
    answer_start: int
    answer_end: int
    evidence: tuple[Evidence, ...]

    @property
    def hallucinated(self) -> bool:
        """Contradicted or not in the context (an unjudged claim is not counted either way)."""
        return self.label in HALLUCINATED_LABELS

    @property
    def evidence_sentences(self) -> tuple[str, ...]:
        """The context sentences the verdict rests on, in order."""
        return tuple(e.text for e in self.evidence)

    @classmethod
    def of(cls, row: ClaimRow) -> Claim:
        evidence = tuple(Evidence(e.doc_id, e.sentence_index, e.char_start, e.char_end, e.text)
                         for e in row.evidence)
        return cls(row.claim_index, row.claim, row.label, row.kind, row.status, row.note,
                   row.p_unsupported, row.sentence_index, row.sentence, row.answer_start,
                   row.answer_end, evidence)


@dataclass(frozen=True)
class Answer:
    """One audited answer: its label (None when incomplete and undecided), the calibrated
    probability that it is hallucinated, the hallucinated spans and the claims.

    `status` is ok or incomplete (a judge call failed: `reason` says why); an incomplete
    answer is never counted as supported.
    """

    trace_id: str
    route: str
    label: str | None
    status: str
    probability: float | None
    spans: tuple[Span, ...]
    claims: tuple[Claim, ...]
    reason: str | None
    judge_model: str
    judge_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    suspicious_input: bool | None
    partial: bool | None
    # The trace's retrieval returned nothing (contexts: []): its checkable claims are NIC,
    # "nothing was retrieved". None: a run written before the column.
    empty_retrieval: bool | None = None

    @property
    def complete(self) -> bool:
        return self.status == "ok"

    @property
    def hallucinated(self) -> bool | None:
        """label != ENT for a complete answer; None when it is incomplete."""
        return self.label in HALLUCINATED_LABELS if self.complete else None

    def failing_claims(self) -> tuple[Claim, ...]:
        """The claims that are hallucinated or could not be judged."""
        return tuple(c for c in self.claims if c.hallucinated or c.label is None)

    @classmethod
    def of(cls, row: AnswerRow, claims: Iterable[ClaimRow] = ()) -> Answer:
        ordered = sorted(claims, key=lambda c: c.claim_index)
        spans = tuple(Span(s.char_start, s.char_end, s.label) for s in row.hallucinated_spans)
        return cls(row.trace_id, row.route, row.label, row.status, row.p_hallucinated, spans,
                   tuple(Claim.of(c) for c in ordered), row.reason, row.judge_model,
                   row.judge_calls, row.input_tokens, row.output_tokens, row.cost_usd,
                   row.suspicious_input, row.partial, row.empty_retrieval)


@dataclass(frozen=True)
class RouteSummary:
    """A route's figures over the whole run: complete answers (the rate's denominator), the
    hallucinated among them, the rate and its 95% Wilson interval, and the judge's calls,
    tokens and cost (None: a model with no price)."""

    route: str
    answers: int
    hallucinated: int
    con: int
    nic: int
    incomplete: int
    rate: float | None
    rate_low: float | None
    rate_high: float | None
    calls: int
    input_tokens: int
    cached_tokens: int
    output_tokens: int
    cost_usd: float | None


@dataclass(frozen=True)
class Summary:
    """The run's figures per route (sorted by route) and in total."""

    routes: tuple[RouteSummary, ...]
    answers: int
    hallucinated: int
    incomplete: int
    rate: float | None
    rate_low: float | None
    rate_high: float | None
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    dead_letters: int

    def route(self, name: str) -> RouteSummary:
        """The summary of one route (KeyError naming the routes there are)."""
        for r in self.routes:
            if r.route == name:
                return r
        raise KeyError(f"no route {name!r}; the run has {[r.route for r in self.routes]}")
