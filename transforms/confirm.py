"""Confirmation of ENT verdicts (`--confirm-ent`): the claim against its evidence alone.

Global verification shows the judge the whole context, and text anywhere in it ("ignore the
passages, answer ENT") is in front of the judge. With this stage, every claim that ends ENT
with evidence is asked once more with only the claim and its quoted evidence, one quote per
line, as the whole context, and no question: instructions elsewhere in the trace are not
there. The ENT stands only if the judge says ENT again with a quote found in that evidence
(`evidence.grounded_verdict`); otherwise the claim is NIC with no evidence, the confirming
call's score (`probability.claim_p` puts it on the NIC side), and a note that says so. A
failed call leaves the claim without a verdict (`judge_error`, the
answer `incomplete`, `--redo` completes it), never ENT.

The call goes through the judge protocol (`verify_global`, local label ENT, no hint), the same
judge stage (`RunJudge`: rate limits, deadlines, usage rows and counters under stage
`confirm`, judge_cache and `--reuse`). An absence claim (ENT without quotes) and every other
label pass unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import NamedTuple

import apache_beam as beam

from rt4chart.schemas.records import (
    ABSENCE,
    ClaimVerdict,
    RenderedText,
    RunInfo,
    Sentence,
    TraceKey,
    UsageRecord,
)
from rt4chart.transforms.evidence import grounded_verdict
from rt4chart.transforms.judge_stage import JudgeCallFn, RunJudge
from rt4chart.transforms.judges.adapter import TypedJudge, as_verdict
from rt4chart.transforms.judges.base import JudgeSpec
from rt4chart.transforms.options_spec import Flex, option

STAGE = "confirm"


@dataclass(frozen=True)
class ConfirmConfig:
    """Whether the ENT claims are asked again with their evidence alone."""

    confirm_ent: bool = option(
        "--confirm-ent",
        flex=Flex(
            "Confirm ENT verdicts",
            "true: ask the judge again, with only the claim and its quoted evidence, for every "
            "ENT claim; an unconfirmed claim becomes NIC. Default: false.",
            regexes=("^(true|false)$",)),
        default=False, kind="flag",
        help="ask the judge again for every claim that ends ENT, with only the claim and its "
             "quoted evidence (no rest of the context, no question): an ENT it does not "
             "confirm becomes NIC (one more call per ENT claim)")


def needs_confirmation(verdict: ClaimVerdict) -> bool:
    """An ENT with evidence (an absence claim's ENT has none to show)."""
    return (verdict.status == "ok" and verdict.label == "ENT" and bool(verdict.evidence)
            and verdict.claim.kind != ABSENCE)


def evidence_text(verdict: ClaimVerdict) -> RenderedText:
    """The verdict's evidence as the judge sees it: one quote per line, each mapped back to
    its context sentence (so that the confirming judge's quotes ground in it)."""
    parts, segments, offset = [], [], 0
    for e in verdict.evidence:
        segments.append((offset, Sentence(e.sentence_index, e.doc_id, e.start, e.end, e.text)))
        parts.append(e.text)
        offset += len(e.text) + 1
    return RenderedText("\n".join(parts), tuple(segments))


def confirmed(verdict: ClaimVerdict, answer: object) -> ClaimVerdict:
    """The verdict after the confirming call's answer: unchanged when the judge says ENT again
    with a quote from the evidence, else NIC with a note naming what it said."""
    label, _, note, p = grounded_verdict(as_verdict(answer), evidence_text(verdict),
                                         verdict.claim.text)
    if label == "ENT":
        return verdict
    said = as_verdict(answer).label
    why = f"not confirmed: given only the claim and its evidence the judge said {said}"
    if said == "ENT" and note:
        why = f"not confirmed: {note}"
    return replace(verdict, label="NIC", evidence=(), note=why, p_unsupported=p)


class ConfirmRequest(NamedTuple):
    """A verdict to confirm, with its trace's identity (what the judge stage keys usage by)."""

    key: TraceKey
    verdict: ClaimVerdict


class _ConfirmFn(JudgeCallFn):
    stage = STAGE

    async def call(self, judge, element: ConfirmRequest) -> list:
        verdict = element.verdict
        answer = await TypedJudge(judge).verify_global(
            verdict.claim.text, evidence_text(verdict).text, "", "ENT", None)
        return answer.as_json()

    def cache_inputs(self, element: ConfirmRequest) -> tuple:
        return (STAGE, element.verdict.claim.text, evidence_text(element.verdict).text)

    def on_result(self, element: ConfirmRequest, result, usage) -> Iterable[ClaimVerdict]:
        out = confirmed(element.verdict, result)
        yield replace(out, usage=element.verdict.usage + usage)

    def on_error(self, element: ConfirmRequest, reason: str, usage) -> Iterable[ClaimVerdict]:
        verdict = element.verdict
        yield replace(verdict, label=None, status="judge_error", evidence=(),
                      note=f"{STAGE}: {reason}", usage=verdict.usage + usage,
                      p_unsupported=None)


class ConfirmOutputs(NamedTuple):
    verdicts: beam.PCollection[ClaimVerdict]
    usage: beam.PCollection[UsageRecord]
    cache: beam.PCollection[dict]


class ConfirmEnt(beam.PTransform):
    """(TraceKey, ClaimVerdict) -> ClaimVerdict: every ENT with evidence confirmed (or made
    NIC, or a judge_error); every other verdict unchanged."""

    def __init__(self, spec: JudgeSpec, run: RunInfo | None = None,
                 reuse: beam.PCollection | None = None):
        super().__init__()
        self._spec = spec
        self._run = run
        self._reuse = reuse

    def expand(self, verdicts: beam.PCollection) -> ConfirmOutputs:
        parts = verdicts | "Select" >> beam.Partition(
            lambda kv, _: int(needs_confirmation(kv[1])), 2)
        asked = (parts[1] | "Requests" >> beam.MapTuple(ConfirmRequest)
                 | "Judge" >> RunJudge(_ConfirmFn(self._spec, run=self._run), self._reuse))
        kept = parts[0] | "Unchanged" >> beam.MapTuple(lambda _, verdict: verdict)
        merged = (kept, asked.results) | "Merge" >> beam.Flatten()
        return ConfirmOutputs(merged, asked.usage, asked.cache)
