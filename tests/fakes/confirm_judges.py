"""Second judges for `--confirm-judge` tests, behind the public custom-judge contract.

`honest:factory` (model "honest-second") says ENT for a claim only when one sentence of the
text it is shown holds every word of the claim, quoting that sentence, else NIC: it cannot be
talked into ENT by an instruction in the text. `naysayer:factory` (model "naysayer") says NIC
to every claim. Both decompose each answer sentence into one claim, as `obedient_judge` does.
"""

from __future__ import annotations

import obedient_judge


class HonestJudge:
    model = "honest-second"

    async def decompose(self, sentence, answer, question):
        return [sentence]

    async def verify_local(self, claim, chunk, question):
        return self._honest(claim, chunk)

    async def verify_global(self, claim, context, question, local_label, hint):
        return self._honest(claim, context)

    @staticmethod
    def _honest(claim: str, text: str) -> tuple[str, list[str]]:
        holding = [s for s in obedient_judge._sentences(text)
                   if obedient_judge._words(claim) <= obedient_judge._words(s)]
        return ("ENT", holding[:1]) if holding else ("NIC", [])


class Naysayer(HonestJudge):
    model = "naysayer"

    async def verify_global(self, claim, context, question, local_label, hint):
        return "NIC", []


def honest(options: dict[str, str]) -> HonestJudge:
    return HonestJudge()


def naysayer(options: dict[str, str]) -> Naysayer:
    return Naysayer()
