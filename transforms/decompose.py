"""Decomposition: one judge call per answer sentence; the judge sees the answer, not the context.

Claims are numbered per trace in answer order (sentence, then position in the sentence). Each
keeps its kind ("fact", "source" or "absence", see `schemas.records.CLAIM_KINDS`), its source
sentence's span and its own answer spans (its verbatim fragments aligned to the sentence, see
`transforms.spans`). A sentence with no claims (a greeting, an offer, a refusal) contributes
nothing; a claim the judge gave whose text asserts nothing checkable is a non-claim (status
`no_claim`, `no_claim_note`). A sentence whose decomposition failed becomes a failed claim
carrying the sentence, so that the answer is marked incomplete and the sentence is not
silently skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import NamedTuple

import apache_beam as beam

from rt4chart.schemas.records import (
    ABSENCE,
    FACT,
    NO_CLAIM,
    AnswerSentence,
    Claim,
    ClaimSet,
    DeadLetter,
    DecomposeResult,
    FailedClaim,
    PlacedClaim,
    PreparedTrace,
    RunInfo,
    TraceKey,
)
from rt4chart.schemas.requests import DecomposeRequest
from rt4chart.schemas.usage import Usage, UsageRecord
from rt4chart.transforms.checks.coverage import check_coverage
from rt4chart.transforms.checks.spans import claim_spans
from rt4chart.transforms.common.guard import GuardedParts, guarded
from rt4chart.transforms.common.limits import LimitsConfig, claims_over_limit
from rt4chart.transforms.judge_stage import JudgeCallFn, RunJudge
from rt4chart.transforms.judges.adapter import TypedJudge, as_claims
from rt4chart.transforms.judges.base import DecomposedClaim
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.regroup import DEFAULT_TIMEOUT_S, Regroup
from rt4chart.transforms.text.absence import accepted_absence, states_absence
from rt4chart.transforms.text.assertion import classify
from rt4chart.transforms.validate import raw_text


def place(claim: DecomposedClaim, sentence: AnswerSentence) -> PlacedClaim:
    """A decomposed claim with its answer spans (fragments, else its text, else the sentence)."""
    spans, source = claim_spans(sentence.text, sentence.start, claim.text, claim.fragments)
    return PlacedClaim(claim.text, claim.kind, spans, source)


# What a decomposition request carries of the answer. An answer up to WHOLE_ANSWER_MAX_CHARS is
# given whole (every RAGTruth answer is under 2,100 characters); a longer one is given as an
# excerpt around the sentence: up to EXCERPT_NEIGHBOURS whole sentences on each side, as many as
# fit in EXCERPT_SIDE_MAX_CHARS on that side, with EXCERPT_CUT where the answer was cut. Each
# request then holds a bounded text instead of the whole answer (one request per sentence: the
# whole answer in each made memory grow with the square of the answer's length).
WHOLE_ANSWER_MAX_CHARS = 8_000
EXCERPT_NEIGHBOURS = 8
EXCERPT_SIDE_MAX_CHARS = 1_500
EXCERPT_CUT = "[…]"


def _neighbours(sentences: Sequence[AnswerSentence], step: int, position: int) -> int:
    """The position of the farthest neighbour kept on one side (step -1 before, +1 after)."""
    here, kept = sentences[position], position
    for _ in range(EXCERPT_NEIGHBOURS):
        nxt = kept + step
        if not 0 <= nxt < len(sentences):
            break
        # Characters the side would span, gaps between sentences included.
        side = here.start - sentences[nxt].start if step < 0 else sentences[nxt].end - here.end
        if side > EXCERPT_SIDE_MAX_CHARS:
            break
        kept = nxt
    return kept


def answer_excerpt(answer: str, sentences: Sequence[AnswerSentence], position: int) -> str:
    """What a decomposition request carries of the answer for `sentences[position]`.

    The whole answer when it is at most WHOLE_ANSWER_MAX_CHARS long (so its results and
    judge_cache keys are those of a whole-answer request), else the excerpt around the sentence
    (see above), marked with EXCERPT_CUT at each end where text was left out.
    """
    if len(answer) <= WHOLE_ANSWER_MAX_CHARS:
        return answer
    first = _neighbours(sentences, -1, position)
    last = _neighbours(sentences, 1, position)
    start, end = sentences[first].start, sentences[last].end
    head = f"{EXCERPT_CUT} " if answer[:start].strip() else ""
    tail = f" {EXCERPT_CUT}" if answer[end:].strip() else ""
    return head + answer[start:end] + tail


def requests_for(prepared: PreparedTrace) -> Iterable[DecomposeRequest]:
    """One decomposition request per answer sentence, with the answer or an excerpt of it."""
    t = prepared.trace
    key = TraceKey(t.trace_id, t.route, t.day, t.event_time_us, t.late)
    sentences = prepared.answer_sentences
    for position, sentence in enumerate(sentences):
        excerpt = answer_excerpt(t.answer, sentences, position)
        yield DecomposeRequest(key, sentence, excerpt, t.user_text)


class _DecomposeFn(JudgeCallFn):
    """The answer of a call is the claims' stored form (what judge_cache keeps and --reuse
    replays), so that a fresh and a replayed answer take the same path."""

    stage = "decompose"

    async def call(self, judge, element: DecomposeRequest) -> list:
        claims = await TypedJudge(judge).decompose(element.sentence.text, element.answer,
                                                   element.question)
        return [c.as_json() for c in claims]

    def cache_inputs(self, element: DecomposeRequest) -> tuple:
        return (element.sentence.text, element.answer, element.question)

    def on_result(self, element: DecomposeRequest, result, usage) -> Iterable[DecomposeResult]:
        claims = tuple(place(c, element.sentence) for c in as_claims(result))
        yield DecomposeResult(element.key.trace_id, element.sentence.index, claims, "ok",
                              usage=usage)

    def on_error(self, element: DecomposeRequest, reason: str, usage) -> Iterable[DecomposeResult]:
        yield DecomposeResult(
            element.key.trace_id, element.sentence.index, (), "judge_error", reason, usage
        )


MISLABELLED_NOTE = ("decomposed as an absence claim, but its text states a fact, not what the "
                    "sources lack: verified as a fact")


def checked_kind(claim: PlacedClaim) -> tuple[PlacedClaim, str | None]:
    """The claim with the kind rt4chart checks it as, and a note when that is not the
    decomposer's. An `absence` claim needs no quote, so the label is accepted only when the
    claim's own text says the sources lack something (`text.absence.accepted_absence`, read
    on the text, whatever the judge said); otherwise the claim is a fact."""
    if claim.kind != ABSENCE or accepted_absence(claim.text):
        return claim, None
    return replace(claim, kind=FACT), MISLABELLED_NOTE


def covering(sentence: str, claims: Sequence[PlacedClaim]) -> list[str]:
    """The texts of the claims that may cover `sentence` for decomposition coverage: an
    absence claim does not state what a sentence about the world states ("The passages do not
    say that the free trial lasts 3 days" for "The free trial lasts 3 days."), so for a sentence
    that is not itself an absence statement it counts as dropped, and the sentence is re-added
    as a fact."""
    if states_absence(sentence):
        return [c.text for c in claims]
    return [c.text for c in claims if c.kind != ABSENCE]


def no_claim_note(claim: PlacedClaim) -> str | None:
    """Why a judge's claim is a non-claim (status NO_CLAIM), or None: its text asserts nothing
    checkable (`text.assertion.classify`, the classifier that decides coverage): "Passage 1
    and Passage 2", "Based on the given passages, the lyrics are:". An absence claim is
    checked (its text says what the sources lack, `checked_kind`)."""
    if claim.kind == ABSENCE:
        return None
    found = classify(claim.text)
    if found.checkable:
        return None
    return (f"{NO_CLAIM}: the claim asserts nothing checkable ({found.reason}); not verified, "
            "not part of the answer's label")


def number_claims(prepared: PreparedTrace, results: Iterable[DecomposeResult]) -> ClaimSet:
    """Number the claims of a trace in answer order; failed sentences become failed claims.

    Decomposition coverage: a sentence whose claims leave out its numbers, names, negation or
    content words (no claims, or substituted ones) gets one more factual claim for it, spanning
    the sentence (`coverage.check_coverage`), so that no false sentence can vanish; a sentence
    that asserts nothing checkable (`text.assertion.classify`) may stay without claims. An
    absence claim whose text states a fact is a fact (`checked_kind`), and absence claims do
    not cover a sentence about the world (`covering`). A claim whose text asserts nothing
    checkable (`no_claim_note`) is a non-claim: numbered, never verified, and it covers
    nothing (a judge cannot hide a sentence behind it).
    """
    by_sentence = {r.sentence_index: r for r in results}
    usage = sum((r.usage for r in by_sentence.values()), Usage())
    claims: list[Claim] = []
    failed: list[FailedClaim] = []
    no_claims: list[Claim] = []
    trace_id = prepared.trace.trace_id

    def next_index() -> int:
        return len(claims) + len(failed) + len(no_claims)

    for s in prepared.answer_sentences:
        result = by_sentence.get(s.index)
        if result is None or result.status != "ok":
            reason = result.error if result else "decomposition result missing"
            claim = Claim(trace_id, next_index(), s.text, s.index, s.start, s.end)
            failed.append(FailedClaim(claim, "decompose", reason or "judge error"))
            continue
        checked = []
        for c, note in (checked_kind(c) for c in result.claims):
            empty = no_claim_note(c)
            claim = Claim(trace_id, next_index(), c.text, s.index, s.start, s.end, c.kind,
                          c.spans, c.span_source, empty or note)
            (no_claims if empty else claims).append(claim)
            checked += [] if empty else [c]
        extra = check_coverage(s.text, covering(s.text, checked))
        if extra.extra_claim:
            claims.append(Claim(trace_id, next_index(), extra.extra_claim, s.index,
                                s.start, s.end, extra.kind))
    return ClaimSet(prepared, tuple(claims), tuple(failed), usage, tuple(no_claims))


def limit_claims(claim_set: ClaimSet, limits: LimitsConfig) -> ClaimSet | DeadLetter:
    """`claim_set` within `max_claims_per_answer` (failed sentences and non-claims count).

    Over the limit: with oversize "reject" the trace's dead letter (stage "decompose") naming the
    limit; with "truncate" the first N claims (in answer order), the trace marked partial.
    """
    n = len(claim_set.claims) + len(claim_set.failed) + len(claim_set.no_claims)
    over = claims_over_limit(n, limits)
    if over is None:
        return claim_set
    trace = claim_set.prepared.trace
    if not limits.truncate:
        return DeadLetter("decompose", over, raw_text(trace), trace.trace_id, trace.route)
    keep = limits.max_claims_per_answer
    note = f"{over}; audited the first {keep} claims"
    prepared = claim_set.prepared
    reason = "; ".join(r for r in (prepared.partial_reason, note) if r)
    prepared = replace(prepared, partial=True, partial_reason=reason)
    claims = tuple(c for c in claim_set.claims if c.claim_index < keep)
    failed = tuple(f for f in claim_set.failed if f.claim.claim_index < keep)
    no_claims = tuple(c for c in claim_set.no_claims if c.claim_index < keep)
    return ClaimSet(prepared, claims, failed, claim_set.usage, no_claims)


def _numbered(prepared: PreparedTrace, results: Iterable[DecomposeResult],
              limits: LimitsConfig) -> Iterable:
    out = limit_claims(number_claims(prepared, results), limits)
    yield beam.pvalue.TaggedOutput("dead", out) if isinstance(out, DeadLetter) else out


class DecomposeOutputs(NamedTuple):
    claim_sets: beam.PCollection[ClaimSet]
    usage: beam.PCollection[UsageRecord]
    cache: beam.PCollection[dict]
    dead_letters: beam.PCollection[DeadLetter]


class DecomposeClaims(beam.PTransform):
    """PreparedTrace -> ClaimSet (numbered claims), plus the usage of the calls.

    A trace over `limits.max_claims_per_answer` is a dead letter (or, with oversize "truncate",
    cut to its first claims and marked partial).
    """

    def __init__(self, spec: JudgeSpec, streaming: bool = False,
                 join_timeout_s: float = DEFAULT_TIMEOUT_S, run: RunInfo | None = None,
                 reuse: beam.PCollection | None = None, limits: LimitsConfig | None = None):
        super().__init__()
        self._limits = limits or LimitsConfig()
        self._spec = spec
        self._streaming = streaming
        self._timeout_s = join_timeout_s
        self._run = run
        self._reuse = reuse

    def expand(self, prepared: beam.PCollection[PreparedTrace]) -> DecomposeOutputs:
        built = prepared | "Requests" >> GuardedParts("decompose", requests_for,
                                                      lambda p: p.trace)
        judged = built.parts | "Judge" >> RunJudge(_DecomposeFn(self._spec, run=self._run),
                                                   self._reuse)
        limits = self._limits
        joined = {"head": built.heads, "parts": judged.results} | "Regroup" >> Regroup(
            key_head=lambda p: p.trace.trace_id,
            key_part=lambda r: r.trace_id,
            expected=lambda p: len(p.answer_sentences),
            join=guarded("decompose", lambda p, results: _numbered(p, results, limits),
                         lambda p: p.trace),
            event_time=lambda p: p.trace.event_time_us / 1e6,
            streaming=self._streaming, timeout_s=self._timeout_s, tags=("dead",),
        )
        dead = (built.dead_letters, joined.dead) | "DeadLetters" >> beam.Flatten()
        return DecomposeOutputs(joined.main, judged.usage, judged.cache, dead)
