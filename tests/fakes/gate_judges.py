"""A custom judge for the gate's cases, loaded through the public `module:factory` contract:
lexical verdicts (as the offline judge's), under a model name and a request mode chosen by
option, failing on the claims that hold a word. So a test can make, with real audits, a run
judged by another model or with another prompt hash, and a run whose judge failed on exactly
its hallucinated answers."""

from __future__ import annotations

from rt4chart.transforms.judges.offline import claims as lexical_claims
from rt4chart.transforms.judges.offline import lexical


class LexicalJudge:
    """Options: `model` (the name recorded on every row, default "lexical-a"); `request_mode`
    (recorded in the prompt hash: another mode, another hash); `fail_on` (every verification
    of a claim holding that word fails, so its answer ends incomplete)."""

    def __init__(self, options: dict[str, str]):
        self.model = options.get("model", "lexical-a")
        self.request_mode = options.get("request_mode") or None
        self.fail_on = options.get("fail_on") or None

    def _check(self, claim: str) -> None:
        if self.fail_on and self.fail_on in claim:
            raise ConnectionError("judge endpoint unreachable")

    async def decompose(self, sentence, answer, question):
        return lexical_claims.decompose_sentence(sentence)

    async def verify_local(self, claim, chunk, question):
        self._check(claim)
        return lexical.verify(claim, chunk)

    async def verify_global(self, claim, context, question, local_label, hint):
        self._check(claim)
        return lexical.verify(claim, context, hint)


def lexical_judge(options: dict[str, str]) -> LexicalJudge:
    return LexicalJudge(options)
