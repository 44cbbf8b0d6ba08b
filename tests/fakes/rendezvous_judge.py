"""A custom judge that proves two audits run at once: the offline judge's lexical verdicts,
except that its first call waits until every party of the rendezvous has made its first call
(tests/integration/test_api_audits_at_once.py).

Options: `folder` (where each party leaves a file), `party` (this audit's name), `parties`
(how many must arrive, default 2), `wait_s` (how long to wait, default 120). A party that waits
in vain raises: its calls fail and its answers are incomplete, so a test that expects the
verdicts of a run alone fails loudly when the audits were made to take turns.
"""

from __future__ import annotations

import asyncio
import os
import time

from rt4chart.transforms.judges.offline import claims as lexical_claims
from rt4chart.transforms.judges.offline import lexical


class RendezvousJudge:
    model = "rendezvous"

    def __init__(self, options: dict[str, str]):
        self._folder = options["folder"]
        self._party = options["party"]
        self._parties = int(options.get("parties", "2"))
        self._wait_s = float(options.get("wait_s", "120"))
        self._met = False

    async def _meet(self) -> None:
        if self._met:
            return
        open(os.path.join(self._folder, self._party), "w").close()
        end = time.monotonic() + self._wait_s
        while len(os.listdir(self._folder)) < self._parties:
            if time.monotonic() > end:
                raise TimeoutError(f"{self._party}: the other audits never started")
            await asyncio.sleep(0.05)
        self._met = True

    async def decompose(self, sentence, answer, question):
        await self._meet()
        return lexical_claims.decompose_sentence(sentence)

    async def verify_local(self, claim, chunk, question):
        return lexical.verify(claim, chunk)

    async def verify_global(self, claim, context, question, local_label, hint):
        return lexical.verify(claim, context, hint)


def factory(options: dict[str, str]) -> RendezvousJudge:
    return RendezvousJudge(options)
