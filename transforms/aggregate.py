"""AND-join per answer: answer rows and claim rows, with the usage of every judge call.

Probabilities follow one rule (:mod:`rt4chart.transforms.common.probability`): a claim's
p_unsupported is its judge score, calibrated, on the side of the run's claim threshold its
label says; an answer's p_hallucinated comes from its largest claim p, on the side of the
answer threshold.

A judge's claim whose text asserts nothing checkable (status `no_claim`) has a claim row and no
label; it takes no part in the answer's label, probability or spans.

An answer is `incomplete` when any of its claims (or sentences) has no verdict because a judge
call failed; it then carries no label (see `answer_label`): neither ENT by default nor the
CON or NIC of its decided claims, which keep their labels in the claims table.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import NamedTuple

import apache_beam as beam

from rt4chart.schemas.records import (
    NO_CLAIM,
    Calibration,
    Claim,
    ClaimSet,
    ClaimVerdict,
    DeadLetter,
    Evidence,
    FailedClaim,
    RunInfo,
)
from rt4chart.schemas.rows import (
    AnswerRow,
    ClaimRow,
    ClaimSpanRow,
    EvidenceRow,
    SpanRow,
    usage_columns,
)
from rt4chart.transforms.checks.spans import label_spans
from rt4chart.transforms.common import probability
from rt4chart.transforms.common.guard import guarded
from rt4chart.transforms.common.joins import and_join
from rt4chart.transforms.judges import runtime
from rt4chart.transforms.regroup import DEFAULT_TIMEOUT_S, Regroup
from rt4chart.transforms.validate import trace_text

METRICS = "rt4chart"
# Dead letters of this stage hold the trace of an incomplete answer, to audit again.
REDO_STAGE = "judge"


def answer_label(labels: list[str], incomplete: bool) -> str | None:
    """The answer's label: the AND-join of its claims' labels when every claim was decided;
    None when any was not (an `incomplete` answer carries no label, CON included: a label on
    an answer some of whose calls failed would be counted and read like a complete one's; its
    decided claims keep their own labels in the claims table, and a redo labels it)."""
    return None if incomplete else and_join(labels)


def calibration(run: RunInfo) -> Calibration:
    """The run's calibration (`RunInfo.calibration`; the identity at 0.5 when it has none)."""
    return run.calibration or probability.identity(run.judge_model)


def _evidence_rows(evidence: Iterable[Evidence]) -> tuple[EvidenceRow, ...]:
    return tuple(
        EvidenceRow(doc_id=e.doc_id, sentence_index=e.sentence_index, char_start=e.start,
                    char_end=e.end, text=e.text)
        for e in evidence
    )


# What the note says of a claim span less precise than the claim's own fragments.
SPAN_NOTES = {
    "claim_text": "span: the claim's text, found in its sentence (no fragment given or found)",
    "sentence": "span: the whole sentence (neither a fragment nor the claim's text found in it)",
}


def claim_note(v: ClaimVerdict) -> str | None:
    """Why the claim's kind is not the decomposer's, the verdict's note, and where the claim's
    span comes from when not its fragments."""
    parts = [v.claim.kind_note, v.note,
             SPAN_NOTES.get(v.claim.span_source) if v.status == "ok" else None]
    return "; ".join(p for p in parts if p) or None


def claim_row(
    v: ClaimVerdict, route: str, event_time: datetime, run: RunInfo, answer: str
) -> ClaimRow:
    c = v.claim
    return ClaimRow(
        trace_id=c.trace_id, route=route, event_time=event_time,
        claim_index=c.claim_index, claim=c.text, sentence_index=c.sentence_index,
        sentence=answer[c.answer_start : c.answer_end],
        answer_start=c.answer_start, answer_end=c.answer_end,
        window_labels=tuple(lbl or "ERR" for lbl in v.window_labels),
        local_label=v.local_label, deciding_window=v.deciding_window, label=v.label,
        status=v.status, note=claim_note(v), evidence=_evidence_rows(v.evidence),
        p_unsupported=probability.claim_p(v.label, v.p_unsupported, calibration(run)),
        judge_model=run.judge_model, prompt_hash=run.prompt_hash, kind=c.kind,
        spans=tuple(ClaimSpanRow(char_start=s, char_end=e) for s, e in c.answer_spans),
        p_threshold=probability.claim_threshold(calibration(run)),
    )


def failed_verdict(f: FailedClaim) -> ClaimVerdict:
    return ClaimVerdict(f.claim, (), None, None, None, "judge_error", (), f"{f.stage}: {f.reason}",
                        f.usage)


def no_claim_verdict(claim: Claim) -> ClaimVerdict:
    """A non-claim's row: no label, no judge call (its note, the claim's `kind_note`, says
    why)."""
    return ClaimVerdict(claim, (), None, None, None, NO_CLAIM)


def answer_rows(
    claim_set: ClaimSet, verdicts: Iterable[ClaimVerdict], run: RunInfo,
    audited_at: datetime | None = None,
) -> tuple[AnswerRow, list[ClaimRow]]:
    """The answer row and the claim rows of one trace.

    A claim whose verdict never arrived (a streaming join that timed out) is a judge_error.
    A non-claim (`ClaimSet.no_claims`, status NO_CLAIM) has a row but no label: it is neither
    decided nor an error, and the answer's label, probability and spans leave it out.
    """
    t = claim_set.prepared.trace
    event_time = datetime.fromtimestamp(t.event_time_us / 1e6, tz=UTC)
    got = {v.claim.claim_index: v for v in verdicts}
    missing = [
        failed_verdict(FailedClaim(c, "regroup", "verdict missing (join timed out)"))
        for c in claim_set.claims if c.claim_index not in got
    ]
    all_verdicts = sorted(
        [*got.values(), *missing, *(failed_verdict(f) for f in claim_set.failed),
         *(no_claim_verdict(c) for c in claim_set.no_claims)],
        key=lambda v: v.claim.claim_index,
    )
    usage = sum((v.usage for v in all_verdicts), claim_set.usage)
    decided = [v for v in all_verdicts if v.status == "ok"]
    errors = [v for v in all_verdicts if v.status not in ("ok", NO_CLAIM)]
    label = answer_label([v.label for v in decided], bool(errors))
    cal = calibration(run)
    rows = [claim_row(v, t.route, event_time, run, t.answer) for v in all_verdicts]
    p_hallucinated = probability.answer_p([r.p_unsupported for r in rows if r.status == "ok"],
                                          label, cal)
    # The words of the answer that its non-ENT claims restate (CON over NIC where they meet).
    spans = label_spans((s, e, v.label) for v in decided if v.label != "ENT"
                        for s, e in v.claim.answer_spans)
    answer = AnswerRow(
        trace_id=t.trace_id, route=t.route, event_time=event_time, label=label,
        hallucinated=None if label is None else label != "ENT",
        p_hallucinated=p_hallucinated,
        status="incomplete" if errors else "ok", n_claims=len(all_verdicts),
        hallucinated_spans=tuple(
            SpanRow(char_start=s, char_end=e, label=lbl) for s, e, lbl in spans),
        reason=f"{len(errors)} claim(s) without verdict: {errors[0].note}" if errors else None,
        **usage_columns(AnswerRow, usage),
        judge_model=run.judge_model, prompt_hash=run.prompt_hash, task=t.task,
        generator=t.generator, audited_at=audited_at or datetime.now(UTC), late=t.late,
        partial=claim_set.prepared.partial, partial_reason=claim_set.prepared.partial_reason,
        suspicious_input=bool(t.suspicious), suspicious_snippets=t.suspicious,
        p_threshold=probability.answer_threshold(cal), sample_weight=t.sample_weight,
        empty_retrieval=not t.contexts,
    )
    return answer, rows


class AnswerOutputs(NamedTuple):
    answers: beam.PCollection[AnswerRow]
    claims: beam.PCollection[ClaimRow]
    redo: beam.PCollection[DeadLetter]


class _Assemble:
    """The join of one trace: its answer row (main), claim rows and, if incomplete, its redo.

    Counts every assembled answer in the `rt4chart/traces_done` metric (the job's progress).
    """

    def __init__(self, run: RunInfo):
        self._run = run
        self._done = runtime.counter(METRICS, "traces_done")

    def __call__(self, claim_set: ClaimSet, verdicts: list[ClaimVerdict]):
        answer, claims = answer_rows(claim_set, verdicts, self._run)
        yield answer
        for row in claims:
            yield beam.pvalue.TaggedOutput("claims", row)
        if answer.status != "ok":  # keep the trace, so that `audit --redo` can redo it
            t = claim_set.prepared.trace
            yield beam.pvalue.TaggedOutput(
                "redo", DeadLetter(REDO_STAGE, answer.reason, trace_text(t), t.trace_id, t.route))
        self._done.inc()


class AggregateAnswers(beam.PTransform):
    """(ClaimSet, ClaimVerdict, FailedClaim) -> answer rows and claim rows.

    A trace's usage is carried along its elements (decomposition in the ClaimSet, local and
    global calls in each verdict), so the join waits for exactly one verdict per claim.
    """

    def __init__(self, run: RunInfo, streaming: bool = False,
                 join_timeout_s: float = DEFAULT_TIMEOUT_S):
        super().__init__()
        self._run = run
        self._streaming = streaming
        self._timeout_s = join_timeout_s

    def expand(self, inputs: dict[str, beam.PCollection]) -> AnswerOutputs:
        failed = inputs["failed"] | "FailedAsVerdicts" >> beam.Map(failed_verdict)
        verdicts = (inputs["verdicts"], failed) | "AllVerdicts" >> beam.Flatten()
        out = {"head": inputs["claim_sets"], "parts": verdicts} | "AndJoin" >> Regroup(
            key_head=lambda c: c.key.trace_id,
            key_part=lambda v: v.claim.trace_id,
            expected=lambda c: len(c.claims),
            join=guarded("aggregate", _Assemble(self._run), lambda c: c.prepared.trace,
                         tag="redo"),
            event_time=lambda c: c.prepared.trace.event_time_us / 1e6,
            streaming=self._streaming, timeout_s=self._timeout_s, tags=("claims", "redo"),
        )
        return AnswerOutputs(out.main, out.claims, out.redo)
