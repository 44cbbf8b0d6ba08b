"""A picklable custom judge with rules a test can apply by hand, for the judge stages' own
TestPipeline tests (tests/transforms/test_judge_stages.py). Loaded through the public
`module:factory` contract (`JudgeSpec.of("rule_judge:RuleJudge", options)`): a real judge
kind, built in each worker's `setup()`, no patching.

The rules read lines: the text a judge is shown (a window, the context, a confirming call's
evidence) holds one sentence per line.

- decompose: one claim per answer sentence, the sentence itself (stripped);
- verify (local, global, absence): ENT quoting the line when a line of the text is the claim;
  CON quoting the line when the claim is a line with " is " made " is not "; else NIC;
- a call about a sentence or claim holding the option `fail_on` (default "BROKEN") raises, in
  the stages named by `stages` (comma-separated: decompose, local, global; default all).
"""

from __future__ import annotations

from typing import NamedTuple

from rt4chart.schemas.records import TraceKey
from rt4chart.transforms.judge_stage import JudgeCallFn
from rt4chart.transforms.judges.adapter import TypedJudge, as_verdict

STAGES = ("decompose", "local", "global")


def negated(sentence: str) -> str:
    """The sentence with its first " is " made " is not " (what the judge calls CON)."""
    return sentence.replace(" is ", " is not ", 1)


def rule_verdict(claim: str, text: str) -> tuple[str, list[str]]:
    """(label, quotes) by the rules above."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    wanted = claim.strip()
    for line in lines:
        if line == wanted:
            return "ENT", [line]
    for line in lines:
        if negated(line) == wanted:
            return "CON", [line]
    return "NIC", []


class RuleJudgeDown(RuntimeError):
    """What a call the options make fail raises."""


class RuleJudge:
    model = "rule"

    def __init__(self, options: dict[str, str]):
        self.fail_on = options.get("fail_on", "BROKEN")
        self.stages = tuple(options.get("stages", ",".join(STAGES)).split(","))

    def _check(self, stage: str, text: str) -> None:
        if stage in self.stages and self.fail_on in text:
            raise RuleJudgeDown(f"{stage} judge down")

    async def decompose(self, sentence, answer, question):
        self._check("decompose", sentence)
        return [sentence.strip()]

    async def verify_local(self, claim, chunk, question):
        self._check("local", claim)
        return rule_verdict(claim, chunk)

    async def verify_global(self, claim, context, question, local_label, hint):
        self._check("global", claim)
        return rule_verdict(claim, context)

    async def verify_absence(self, claim, context, question):
        self._check("global", claim)
        return rule_verdict(claim, context)



class RuleRequest(NamedTuple):
    """A request of RuleCallFn: the claim and the text to check it against."""

    key: TraceKey
    claim: str
    text: str


class RuleCallFn(JudgeCallFn):
    """A minimal judge stage step, for RunJudge's own test: a request's result is
    (trace_id, claim, label, None), or when the call failed (trace_id, claim, None, reason)."""

    stage = "rule_call"

    async def call(self, judge, element: RuleRequest) -> list:
        verdict = await TypedJudge(judge).verify_global(element.claim, element.text, "", "ENT",
                                                        None)
        return verdict.as_json()

    def cache_inputs(self, element: RuleRequest) -> tuple:
        return element.claim, element.text

    def on_result(self, element: RuleRequest, result, usage):
        yield element.key.trace_id, element.claim, as_verdict(result).label, None

    def on_error(self, element: RuleRequest, reason: str, usage):
        yield element.key.trace_id, element.claim, None, reason
