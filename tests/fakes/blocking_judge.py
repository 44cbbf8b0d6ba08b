"""A custom judge whose coroutines block the event loop on some claims: `time.sleep` or a CPU
loop inside `async def` (as a judge calling a synchronous client would), for the tests that
such a call fails at its deadline without holding the other calls."""

from __future__ import annotations

import time

from rt4chart.transforms.judges.offline import claims as lexical_claims
from rt4chart.transforms.judges.offline import lexical


class BlockingJudge:
    """Options: `block_on` (text that makes a call block, default "Kyoto"), `how` ("sleep" or
    "spin"), `block_s` (how long it blocks, default 30), `call_deadline_s`."""

    model = "blocking"

    def __init__(self, options: dict[str, str]):
        self.block_on = options.get("block_on", "Kyoto")
        self.how = options.get("how", "sleep")
        self.block_s = float(options.get("block_s", "30"))
        if "call_deadline_s" in options:
            self.call_deadline_s = float(options["call_deadline_s"])

    def _block(self, text: str) -> None:
        if self.block_on not in text:
            return
        if self.how == "sleep":
            time.sleep(self.block_s)  # blocks the loop it runs on
            return
        end = time.monotonic() + self.block_s
        while time.monotonic() < end:  # a CPU loop: no await, no cancellation point
            sum(range(1000))

    async def decompose(self, sentence, answer, question):
        return lexical_claims.decompose_sentence(sentence)

    async def verify_local(self, claim, chunk, question):
        self._block(claim)
        return lexical.verify(claim, chunk)

    async def verify_global(self, claim, context, question, local_label, hint):
        self._block(claim)
        return lexical.verify(claim, context, hint)


def factory(options: dict[str, str]) -> BlockingJudge:
    return BlockingJudge(options)
