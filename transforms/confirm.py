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

With `--confirm-judge SPEC` the confirming call goes to a second judge (its own options,
`--confirm-judge-option`), which sees the same isolated prompt: the claim stays ENT only when
both judges say so, a disagreement is NIC with a note naming which judge said what, and the
second judge's calls are recorded under its own model (usage, costs, judge_cache keys).
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
)
from rt4chart.schemas.usage import UsageRecord
from rt4chart.transforms.checks.evidence import grounded_verdict
from rt4chart.transforms.common.options_spec import Flex, option
from rt4chart.transforms.judge_stage import JudgeCallFn, RunJudge
from rt4chart.transforms.judges.adapter import TypedJudge, as_verdict
from rt4chart.transforms.judges.contract import JudgeSpec

STAGE = "confirm"
# The name of the judge that gave the first ENT in a disagreement's note, when no model is known.
FIRST = "the judge"


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
    confirm_judge: str | None = option(
        "--confirm-judge",
        flex=Flex(
            "Confirming judge",
            "offline, openai or package.module:factory: a second judge asked, with only the "
            "claim and its quoted evidence, for every ENT claim; the claim stays ENT only when "
            "both judges say so. Default: none (with confirm_ent: the same judge)."),
        metavar="SPEC",
        help="a second judge (offline | openai | package.module:factory) that confirms every "
             "ENT claim, given only the claim and its quoted evidence: the claim stays ENT only "
             "when both judges agree (implies --confirm-ent; options: --confirm-judge-option)")
    confirm_judge_option: tuple[str, ...] = option(
        "--confirm-judge-option",
        flex=Flex(
            "Confirming judge options",
            "Semicolon-separated KEY=VALUE options for the confirming judge (each becomes "
            "--confirm-judge-option), e.g. model=gpt-4o;base_url=https://...;api_key_env=KEY2. "
            "The API key is never an option.",
            name="confirm_judge_options"),
        default=(), parsed_default=[], kind="append", metavar="KEY=VALUE",
        help="option passed to the confirming judge's factory (repeatable; the openai judge: "
             "model, base_url, api_key_env, rpm, tpm, prices, price_input, ...)")
    # The confirming judge's spec as the run uses it (negotiated, its rate share), set by the
    # job before the pipeline is built; None: built from the two options above.
    resolved: JudgeSpec | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "confirm_judge_option", tuple(self.confirm_judge_option))
        for item in self.confirm_judge_option:
            key, sep, _ = item.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"--confirm-judge-option expects KEY=VALUE, got {item!r}")
        if self.confirm_judge_option and not self.confirm_judge:
            raise ValueError("--confirm-judge-option needs --confirm-judge")
        if self.confirm_judge is not None and not self.confirm_judge.strip():
            raise ValueError("--confirm-judge needs a judge: offline, openai or "
                             "package.module:factory")

    @property
    def enabled(self) -> bool:
        """Whether ENT claims are confirmed (`--confirm-ent`, or a confirming judge)."""
        return self.confirm_ent or self.confirm_judge is not None

    def judge_spec(self) -> JudgeSpec | None:
        """The confirming judge's spec; None: the run's own judge confirms."""
        if self.resolved is not None or self.confirm_judge is None:
            return self.resolved
        options: dict[str, str] = {}
        for item in self.confirm_judge_option:  # the last of a key wins, as --judge-option
            key, _, value = item.partition("=")
            options[key.strip()] = value
        return JudgeSpec.of(self.confirm_judge.strip(), options)


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


def confirmed(verdict: ClaimVerdict, answer: object,
              judges: tuple[str, str] | None = None,
              keys: tuple[tuple[int, frozenset[str]], ...] = ()) -> ClaimVerdict:
    """The verdict after the confirming call's answer: unchanged when the judge says ENT again
    with a quote from the evidence, else NIC with a note naming what it said. `judges`: (first
    judge's model, confirming judge's model) when a second judge confirms: the note names
    which judge said what. `keys`: the JSON key paths of the evidence sentences, as the global
    stage read them in the whole document, so that a quoted field (`"lot": true` under
    `BusinessParking`) is grounded by the same rule in both calls."""
    label, _, note, p = grounded_verdict(as_verdict(answer), evidence_text(verdict),
                                         verdict.claim.text, keys=dict(keys), refuse_wide=False)
    if label == "ENT":
        return verdict
    said = as_verdict(answer).label
    if judges is not None:
        first, second = judges
        why = (f"not confirmed: judges disagree: {first} said ENT, confirming judge {second} "
               f"said {said} given only the claim and its evidence")
        if said == "ENT" and note:
            why = (f"not confirmed: judges disagree: {first} said ENT, confirming judge "
                   f"{second}: {note}")
    else:
        why = f"not confirmed: given only the claim and its evidence the judge said {said}"
        if said == "ENT" and note:
            why = f"not confirmed: {note}"
    return replace(verdict, label="NIC", evidence=(), note=why, p_unsupported=p)


class ConfirmRequest(NamedTuple):
    """A verdict to confirm, with its trace's identity (what the judge stage keys usage by)."""

    key: TraceKey
    verdict: ClaimVerdict
    # (sentence index, content words of its JSON key path) of the evidence sentences that sit
    # in a JSON object: the quotes alone no longer show which field they are.
    keys: tuple[tuple[int, frozenset[str]], ...] = ()


class _ConfirmFn(JudgeCallFn):
    """`first`: the first judge's model when a second judge confirms (None: the same judge)."""

    stage = STAGE

    def __init__(self, spec: JudgeSpec, run: RunInfo | None = None, first: str | None = None):
        super().__init__(spec, run=run)
        self._first = first

    async def call(self, judge, element: ConfirmRequest) -> list:
        verdict = element.verdict
        answer = await TypedJudge(judge).verify_global(
            verdict.claim.text, evidence_text(verdict).text, "", "ENT", None)
        return answer.as_json()

    def cache_inputs(self, element: ConfirmRequest) -> tuple:
        return (STAGE, element.verdict.claim.text, evidence_text(element.verdict).text)

    def on_result(self, element: ConfirmRequest, result, usage) -> Iterable[ClaimVerdict]:
        judges = None if self._first is None else (self._first, self._model)
        out = confirmed(element.verdict, result, judges, element.keys)
        yield replace(out, usage=element.verdict.usage + usage)

    def on_error(self, element: ConfirmRequest, reason: str, usage) -> Iterable[ClaimVerdict]:
        verdict = element.verdict
        who = "" if self._first is None else f"confirming judge {self._model}: "
        yield replace(verdict, label=None, status="judge_error", evidence=(),
                      note=f"{STAGE}: {who}{reason}", usage=verdict.usage + usage,
                      p_unsupported=None)


class ConfirmOutputs(NamedTuple):
    verdicts: beam.PCollection[ClaimVerdict]
    usage: beam.PCollection[UsageRecord]
    cache: beam.PCollection[dict]


class ConfirmEnt(beam.PTransform):
    """(TraceKey, ClaimVerdict[, evidence key paths]) -> ClaimVerdict: every ENT with evidence
    confirmed (or made NIC, or a judge_error); every other verdict unchanged.

    `spec` and `run`: the confirming judge and its identity (its model and prompt hash key its
    judge_cache rows); `first`: the first judge's model when `spec` is a second judge."""

    def __init__(self, spec: JudgeSpec, run: RunInfo | None = None,
                 reuse: beam.PCollection | None = None, first: str | None = None):
        super().__init__()
        self._spec = spec
        self._run = run
        self._reuse = reuse
        self._first = first

    def expand(self, verdicts: beam.PCollection) -> ConfirmOutputs:
        parts = verdicts | "Select" >> beam.Partition(
            lambda kv, _: int(needs_confirmation(kv[1])), 2)
        asked = (parts[1] | "Requests" >> beam.MapTuple(ConfirmRequest)
                 | "Judge" >> RunJudge(_ConfirmFn(self._spec, self._run, self._first),
                                            self._reuse))
        kept = parts[0] | "Unchanged" >> beam.MapTuple(lambda _, verdict, *keys: verdict)
        merged = (kept, asked.results) | "Merge" >> beam.Flatten()
        return ConfirmOutputs(merged, asked.usage, asked.cache)
