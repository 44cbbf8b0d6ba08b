"""Global verification: every claim once more against the full context, adaptive prompt.

A local NIC is asked with no hint (its evidence may be spread over windows); a local ENT or CON
is asked with its deciding window as a location hint, to confirm or overturn. The final evidence
is what the judge quotes from the full context, aligned and grounded; a NIC has none. This is
where a claim's final label is set: a grounded ENT stands only if its quotes state the claim's
specifics (`specifics.supported_verdict`), else it is NIC with a note naming what they lack.

An absence claim ("the passages do not say X", kind "absence") is asked here only, with its own
prompt (`verify_absence`): ENT when the context indeed lacks X (no quote can show an absence,
and the row's note says so), CON when the context says X, which needs a grounded quote like any
CON (else NIC). The kind comes from decomposition, which never sees the context: text inside a
trace's context cannot turn a factual claim into one that needs no quote.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import NamedTuple

import apache_beam as beam

from rt4chart.schemas.records import ABSENCE, ClaimVerdict, Evidence, RenderedText, RunInfo
from rt4chart.schemas.requests import GlobalRequest
from rt4chart.schemas.usage import Usage, UsageRecord
from rt4chart.transforms.checks.evidence import (
    claim_probability,
    document_text,
    grounded_verdict,
    key_words,
)
from rt4chart.transforms.checks.specifics import supported_verdict
from rt4chart.transforms.common.guard import GuardedDoFn
from rt4chart.transforms.confirm import ConfirmConfig, ConfirmEnt, needs_confirmation
from rt4chart.transforms.judge_stage import JudgeCallFn, RunJudge
from rt4chart.transforms.judges.adapter import TypedJudge, as_verdict
from rt4chart.transforms.judges.contract import JudgeSpec

ABSENCE_NOTE = "absence claim: the context does not contain it (an absence has no quote)"
# The note of every claim of an answer whose retrieval returned nothing (`contexts: []`).
NOTHING_RETRIEVED = "nothing was retrieved"


def nothing_retrieved(element: GlobalRequest) -> bool:
    """Whether the trace's retrieval returned nothing (`contexts: []`): a trace with documents
    always has a sentence in its context (segment.py dead-letters one without)."""
    return not element.context.segments and not element.context.text


def unretrieved_verdict(element: GlobalRequest) -> ClaimVerdict:
    """A claim of an answer whose retrieval returned nothing, decided without the judge: there
    is nothing to verify it against. A factual claim is NIC (it can only come from the model's
    memory); an absence claim ("the sources do not say X") is ENT, as the empty context indeed
    lacks X. No judge call: no usage beyond the claim's own."""
    label = "ENT" if element.claim.kind == ABSENCE else "NIC"
    return ClaimVerdict(element.claim, element.window_labels, element.local_label,
                        element.deciding_window, label, "ok", (), NOTHING_RETRIEVED,
                        element.usage, 0.0 if label == "ENT" else 1.0)


def grounded_absence(verdict: object, rendered: RenderedText, claim: str
                     ) -> tuple[str, tuple[Evidence, ...], str | None, float]:
    """An absence claim's verdict, grounded: (label, evidence, note, p_unsupported).

    ENT (the context lacks what the claim says is absent) stands without quotes, with a note
    that says so; quotes given with it are not evidence of anything and are dropped. CON (the
    context does say it) and NIC are grounded like any verdict: a CON needs a quote found in
    the context that shares a content word with the claim, else it becomes NIC.
    """
    verdict = as_verdict(verdict)
    if verdict.label != "ENT":
        return grounded_verdict(verdict, rendered, claim)
    return "ENT", (), ABSENCE_NOTE, claim_probability("ENT", "ENT", verdict.p_unsupported)


def failed_verdict(element: GlobalRequest, reason: str, usage: Usage) -> ClaimVerdict:
    """The claim without a verdict (`judge_error`): its answer ends incomplete, never
    grounded. A failed global call and a fault deciding an empty retrieval's claim alike."""
    return ClaimVerdict(element.claim, element.window_labels, element.local_label,
                        element.deciding_window, None, "judge_error", (),
                        f"verify_global: {reason}", usage)


def verdict_out(element: GlobalRequest, verdict: ClaimVerdict, keyed: bool):
    """The verdict; for the confirm stage (`keyed`) keyed, with the JSON key paths of its
    evidence sentences (what the quotes alone no longer show: `confirm.ConfirmRequest.keys`)."""
    if not keyed:
        return verdict
    if not needs_confirmation(verdict):  # passes the confirm stage unchanged
        return element.key, verdict, ()
    cited = {e.sentence_index for e in verdict.evidence}
    return element.key, verdict, tuple(sorted(
        (i, words) for i, words in key_words(element.context).items() if i in cited))


class _GlobalFn(JudgeCallFn):
    """The answer of a call is the verdict's stored form (what judge_cache keeps and --reuse
    replays), so that a fresh and a replayed answer take the same path."""

    stage = "verify_global"

    def __init__(self, spec: JudgeSpec, run: RunInfo | None = None, keyed: bool = False):
        super().__init__(spec, run=run)
        self._keyed = keyed  # emit (TraceKey, ClaimVerdict) for the confirm stage

    def _out(self, element: GlobalRequest, verdict: ClaimVerdict):
        return verdict_out(element, verdict, self._keyed)

    async def call(self, judge, element: GlobalRequest) -> list:
        typed, claim = TypedJudge(judge), element.claim
        if claim.kind == ABSENCE:
            verdict = await typed.verify_absence(claim.text, element.context.text,
                                                 element.question)
        else:
            verdict = await typed.verify_global(claim.text, element.context.text,
                                                element.question, element.local_label,
                                                element.hint)
        return verdict.as_json()

    def cache_inputs(self, element: GlobalRequest) -> tuple:
        if element.claim.kind == ABSENCE:
            return (ABSENCE, element.claim.text, element.context.text, element.question)
        return (element.claim.text, element.context.text, element.question, element.local_label,
                element.hint)

    def on_result(self, element: GlobalRequest, result, usage) -> Iterable[ClaimVerdict]:
        claim, verdict = element.claim, as_verdict(result)
        if claim.kind == ABSENCE:
            grounded = grounded_absence(verdict, element.context, claim.text)
        else:
            # The support check reads only what the documents say: not the headers or doc ids
            # rt4chart adds, and not the question (it frames the claim, it is not evidence; a
            # specific the claim takes from it is the user's premise, `premise.premises`).
            grounded = supported_verdict(
                grounded_verdict(verdict, element.context, claim.text), claim.text,
                document_text(element.context), element.question)
        label, evidence, note, p = grounded
        yield self._out(element, ClaimVerdict(
            element.claim, element.window_labels, element.local_label, element.deciding_window,
            label, "ok", evidence, note, element.usage + usage, p))

    def on_error(self, element: GlobalRequest, reason: str, usage) -> Iterable[ClaimVerdict]:
        yield self._out(element, failed_verdict(element, reason, element.usage + usage))


class _UnretrievedFn(GuardedDoFn):
    """A claim of an empty retrieval decided without the judge (`unretrieved_verdict`). A fault
    on one leaves that claim without a verdict (`judge_error`, as a failed call would), so its
    answer comes out incomplete, never grounded."""

    stage = "verify_global"

    def __init__(self, keyed: bool):
        self._keyed = keyed

    def process(self, element: GlobalRequest) -> Iterable:
        yield verdict_out(element, unretrieved_verdict(element), self._keyed)

    def fault(self, element: GlobalRequest, reason: str) -> Iterable:
        yield verdict_out(element, failed_verdict(element, reason, element.usage), self._keyed)


class GlobalOutputs(NamedTuple):
    verdicts: beam.PCollection[ClaimVerdict]
    usage: beam.PCollection[UsageRecord]
    cache: beam.PCollection[dict]


_NO_CONFIRM = ConfirmConfig()


class VerifyGlobal(beam.PTransform):
    """GlobalRequest -> ClaimVerdict (final label, grounded evidence, or judge_error).

    With `confirm` (`--confirm-ent`, `--confirm-judge`), every ENT is asked once more with only
    the claim and its evidence (`confirm.ConfirmEnt`), by the same judge or a second one; usage
    and cache rows of both calls are in the outputs.
    """

    def __init__(self, spec: JudgeSpec, run: RunInfo | None = None,
                 reuse: beam.PCollection | None = None,
                 confirm: ConfirmConfig = _NO_CONFIRM):
        super().__init__()
        self._spec = spec
        self._run = run
        self._reuse = reuse
        self._confirm = confirm

    def expand(self, pending: beam.PCollection[GlobalRequest]) -> GlobalOutputs:
        fn = _GlobalFn(self._spec, run=self._run, keyed=self._confirm.enabled)
        retrieved, unretrieved = pending | "SplitRetrieved" >> beam.Partition(
            lambda element, _: int(nothing_retrieved(element)), 2)
        judged = retrieved | "Judge" >> RunJudge(fn, self._reuse)
        keyed = self._confirm.enabled
        decided = unretrieved | "NothingRetrieved" >> beam.ParDo(_UnretrievedFn(keyed))
        results = (judged.results, decided) | "AllVerdicts" >> beam.Flatten()
        if not self._confirm.enabled:
            return GlobalOutputs(results, judged.usage, judged.cache)
        confirmed = results | "ConfirmEnt" >> self._confirm_ent()
        return GlobalOutputs(
            confirmed.verdicts,
            (judged.usage, confirmed.usage) | "AllUsage" >> beam.Flatten(),
            (judged.cache, confirmed.cache) | "AllCache" >> beam.Flatten(),
        )

    def _confirm_ent(self) -> ConfirmEnt:
        """The same judge (`--confirm-ent`), or the second judge (`--confirm-judge`) under its
        own identity (`RunInfo.confirm`; without one, its spec's name and this run's prompts)."""
        second, run = self._confirm.judge_spec(), self._run
        if second is None:
            return ConfirmEnt(self._spec, run, self._reuse)
        own = None if run is None else (run.confirm or replace(
            run, judge_model=second.name, calibration=None, confirm=None))
        first = run.judge_model if run is not None else self._spec.name
        return ConfirmEnt(second, own, self._reuse, first=first)
