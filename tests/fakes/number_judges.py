"""An honest judge for the misread-number cases (tests/data/exemptions/misread_numbers.jsonl),
through the public contract (`number_judges:honest`).

Each answer sentence is one claim. It says ENT for a claim of a faithful case, quoting the
context sentence that shares the most words with it (as a careful model quotes the sentence
that says it, whatever format the number is in there), and NIC for anything else. The obeying
side is `lucky_judge:factory`: ENT for everything with the best-overlapping sentence.

Options: `cases` (the case file; default the one above).
"""

from __future__ import annotations

import json
from pathlib import Path

from lucky_judge import luckiest

CASES = Path(__file__).resolve().parents[1] / "data" / "exemptions" / "misread_numbers.jsonl"


def load_cases(path: Path = CASES) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def trace(case: dict) -> dict:
    return {"trace_id": case["id"], "route": "numbers", "timestamp": "2026-01-05T10:00:00Z",
            "question": "", "contexts": [{"doc_id": "d1", "text": case["context"]}],
            "answer": case["answer"]}


class HonestJudge:
    model = "honest-numbers"

    def __init__(self, faithful: set[str]):
        self._faithful = faithful

    def _verdict(self, claim: str, text: str) -> tuple[str, list[str]]:
        if " ".join(claim.split()) in self._faithful:
            return "ENT", [luckiest(claim, text)]
        return "NIC", []

    async def decompose(self, sentence, answer, question):
        return [sentence]

    async def verify_local(self, claim, chunk, question):
        return self._verdict(claim, chunk)

    async def verify_global(self, claim, context, question, local_label, hint):
        return self._verdict(claim, context)

    async def verify_absence(self, claim, context, question):
        return "NIC", []


def honest(options: dict[str, str]) -> HonestJudge:
    cases = load_cases(Path(options["cases"]) if options.get("cases") else CASES)
    return HonestJudge({" ".join(c["answer"].split()) for c in cases
                        if c["label"] == "faithful"})
