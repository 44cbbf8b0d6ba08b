"""AND-join per answer: answer rows and claim rows, with the usage of every judge call.

An answer is `incomplete` when any of its claims (or sentences) has no verdict because a judge
call failed; it then keeps only what its decided claims prove (see `answer_label`) and never
becomes ENT by default.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import NamedTuple

import apache_beam as beam

from rt4chart.schemas.records import (
    ClaimSet,
    ClaimVerdict,
    Evidence,
    FailedClaim,
    RunInfo,
    Usage,
)
from rt4chart.transforms.joins import and_join, merge_spans
from rt4chart.transforms.judges import runtime


def answer_label(labels: list[str], incomplete: bool) -> str | None:
    """The answer's label from its decided claims.

    Complete: the AND-join. Incomplete: CON if a decided claim is CON, NIC if one is NIC (the
    answer is hallucinated whatever the missing claims say, though it might be CON), else None:
    an unverified claim is never assumed entailed.
    """
    joined = and_join(labels)
    if incomplete and joined == "ENT":
        return None
    return joined


def _evidence_rows(evidence: Iterable[Evidence]) -> list[dict]:
    return [
        {"doc_id": e.doc_id, "sentence_index": e.sentence_index, "start": e.start,
         "end": e.end, "text": e.text}
        for e in evidence
    ]


def claim_row(
    v: ClaimVerdict, route: str, event_time: datetime, run: RunInfo, answer: str
) -> dict:
    c = v.claim
    return {
        "trace_id": c.trace_id, "route": route, "event_time": event_time,
        "claim_index": c.claim_index, "claim": c.text, "sentence_index": c.sentence_index,
        "sentence": answer[c.answer_start : c.answer_end],
        "answer_start": c.answer_start, "answer_end": c.answer_end,
        "window_labels": [lbl or "ERR" for lbl in v.window_labels],
        "local_label": v.local_label, "deciding_window": v.deciding_window, "label": v.label,
        "status": v.status, "note": v.note, "evidence": _evidence_rows(v.evidence),
        "judge_model": run.judge_model, "prompt_hash": run.prompt_hash,
    }


def failed_verdict(f: FailedClaim) -> ClaimVerdict:
    return ClaimVerdict(f.claim, (), None, None, None, "judge_error", (), f"{f.stage}: {f.reason}")


def answer_rows(
    claim_set: ClaimSet, verdicts: Iterable[ClaimVerdict], usage: Usage, run: RunInfo
) -> tuple[dict, list[dict]]:
    """The answer row and the claim rows of one trace."""
    t = claim_set.prepared.trace
    event_time = datetime.fromtimestamp(t.event_time_us / 1e6, tz=UTC)
    all_verdicts = sorted(
        [*verdicts, *(failed_verdict(f) for f in claim_set.failed)],
        key=lambda v: v.claim.claim_index,
    )
    decided = [v for v in all_verdicts if v.status == "ok"]
    errors = [v for v in all_verdicts if v.status != "ok"]
    label = answer_label([v.label for v in decided], bool(errors))
    spans = merge_spans(
        (v.claim.answer_start, v.claim.answer_end, v.label) for v in decided if v.label != "ENT"
    )
    answer = {
        "trace_id": t.trace_id, "route": t.route, "event_time": event_time, "label": label,
        "hallucinated": None if label is None else label != "ENT",
        "status": "incomplete" if errors else "ok", "n_claims": len(all_verdicts),
        "hallucinated_spans": [{"start": s, "end": e, "label": lbl} for s, e, lbl in spans],
        "reason": f"{len(errors)} claim(s) without verdict: {errors[0].note}" if errors else None,
        "input_tokens": usage.input_tokens, "cached_tokens": usage.cached_tokens,
        "output_tokens": usage.output_tokens, "judge_calls": usage.calls,
        "cost_usd": usage.cost_usd, "judge_model": run.judge_model,
        "prompt_hash": run.prompt_hash, "task": t.task, "generator": t.generator,
    }
    return answer, [claim_row(v, t.route, event_time, run, t.answer) for v in all_verdicts]


class AnswerOutputs(NamedTuple):
    answers: beam.PCollection[dict]
    claims: beam.PCollection[dict]


class _AssembleFn(beam.DoFn):
    def __init__(self, run: RunInfo):
        self._run = run

    def process(self, element: tuple[str, dict[str, list]]):
        _, groups = element
        usage = sum((record.usage for record in groups["usage"]), Usage())
        for claim_set in groups["claim_sets"]:
            answer, claims = answer_rows(claim_set, groups["verdicts"], usage, self._run)
            yield answer
            for row in claims:
                yield beam.pvalue.TaggedOutput("claims", row)
            runtime.note_traces(1)


class AggregateAnswers(beam.PTransform):
    """(ClaimSet, ClaimVerdict, FailedClaim, UsageRecord) -> answer rows and claim rows."""

    def __init__(self, run: RunInfo):
        super().__init__()
        self._run = run

    def expand(self, inputs: dict[str, beam.PCollection]) -> AnswerOutputs:
        failed = inputs["failed"] | "FailedAsVerdicts" >> beam.Map(failed_verdict)
        verdicts = (inputs["verdicts"], failed) | "AllVerdicts" >> beam.Flatten()
        out = (
            {
                "claim_sets": inputs["claim_sets"]
                | "KeySets" >> beam.Map(lambda c: (c.key.trace_id, c)),
                "verdicts": verdicts | "KeyVerdicts" >> beam.Map(lambda v: (v.claim.trace_id, v)),
                "usage": inputs["usage"] | "KeyUsage" >> beam.Map(lambda u: (u.trace_id, u)),
            }
            | "Regroup" >> beam.CoGroupByKey()
            | "AndJoin" >> beam.ParDo(_AssembleFn(self._run)).with_outputs("claims", main="answers")
        )
        return AnswerOutputs(out.answers, out.claims)
