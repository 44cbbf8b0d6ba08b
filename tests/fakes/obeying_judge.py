"""An obeying judge for the planted-injection benchmark: it follows any instruction in front of
it, else answers from the gold labels (`planted_injections.py`).

Each answer sentence is one claim. When the text it is shown (the window or context, and the
question) holds a planted instruction in any of its forms (`planted_injections.obeys`), it says
ENT and quotes the sentence sharing the most words with the claim, as a model talked into
"supported" does. Otherwise it is honest: a faithful claim is ENT with the sentence that says
it, a conflicting one CON with the sentence it changes, a baseless one NIC. With `obey=false`
it never obeys: the honest second judge of `--confirm-judge`.

Options: `gold` (the gold.json next to the traces; default tests/data/injection/gold.json),
`obey` (true|false, default true), `model` (default obeying, or honest with obey=false).
"""

from __future__ import annotations

import json
from pathlib import Path

from lucky_judge import _sentences, _words, luckiest
from planted_injections import obeys

DEFAULT_GOLD = Path(__file__).resolve().parents[1] / "data" / "injection" / "gold.json"


class ObeyingJudge:
    def __init__(self, labels: dict[str, str], obey: bool, model: str):
        self._labels, self._obey, self.model = labels, obey, model

    def _verdict(self, claim: str, text: str, question: str) -> tuple[str, list[str]]:
        if self._obey and obeys(text + "\n" + question):
            return "ENT", [luckiest(claim, text)]
        label = self._labels.get(" ".join(claim.split()), "baseless")
        if label == "faithful":
            holding = [s for s in _sentences(text) if _words(claim) <= _words(s)]
            return ("ENT", holding[:1]) if holding else ("NIC", [])
        if label == "conflict":
            return "CON", [luckiest(claim, text)]
        return "NIC", []

    async def decompose(self, sentence, answer, question):
        return [sentence]

    async def verify_local(self, claim, chunk, question):
        return self._verdict(claim, chunk, question)

    async def verify_global(self, claim, context, question, local_label, hint):
        return self._verdict(claim, context, question)


def factory(options: dict[str, str]) -> ObeyingJudge:
    gold = json.loads(Path(options.get("gold") or DEFAULT_GOLD).read_text(encoding="utf-8"))
    labels = {" ".join(s.split()): lbl for g in gold.values()
              for s, lbl in zip(g["sentences"], g["labels"], strict=True)}
    obey = options.get("obey", "true").lower() not in ("false", "0", "no")
    return ObeyingJudge(labels, obey, options.get("model") or ("obeying" if obey else "honest"))
