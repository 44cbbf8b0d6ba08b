"""Cases and an honest judge for the premise rule narrowed to settings (issue 46).

The cases (`tests/data/exemptions/premise_values.jsonl`, written for this issue, none from a
benchmark) are one trace each: a question, one document and an answer. A hallucinated case's
wrong value comes from the question (another unit, a bare number against one with a unit, an
alternative or a range the question names, a date against a year, a year in words or a decade,
a value beside another number, a plain yes/no question); a faithful one restates a value of the
user's setting (a car's model year, a form, a model or bus number, a dosage, a birth date).

Judges, through the public contract (`module:factory`):
- the obeying judge is `lucky_judge:factory`: ENT to every claim, quoting the context sentence
  that shares the most words with it, as a model talked into "supported" does;
- `premise_value_judges:honest`: each answer sentence is its claim; ENT, quoting it, only when
  one context sentence holds every word of the claim that the question does not give (an honest
  model reads the question's setting as given), else NIC.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

CASES = Path(__file__).resolve().parents[1] / "data" / "exemptions" / "premise_values.jsonl"
# A question with no value in it: what a case's answer is audited under to tell what the
# premise rule alone lets through.
NEUTRAL_QUESTION = "What do the documents say?"
FORMS = ("unit", "bare_unit", "alternative", "range", "date_year", "year_words", "decade",
         "beside", "yes_no", "setting")

_WORD_RE = re.compile(r"\w+")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+")
_STOP = frozenset("a an the to of on in with and is are for at it its your you yes no that this "
                  "from by be there".split())


def load_cases(path: Path = CASES) -> list[dict]:
    """The cases, one dict per line (id, form, gold, question, context, answer)."""
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
             if line.strip()]
    for case in cases:
        if case["form"] not in FORMS or case["gold"] not in ("hallucinated", "faithful"):
            raise ValueError(f"{case['id']}: unknown form or gold")
    return cases


def trace(case: dict, question: str | None = None, suffix: str = "") -> dict:
    """The case as a trace; `question` replaces the case's own (the neutral question)."""
    return {"trace_id": case["id"] + suffix, "route": case["form"],
            "timestamp": "2026-03-02T09:00:00Z",
            "question": case["question"] if question is None else question,
            "contexts": [{"doc_id": "d1", "text": case["context"]}], "answer": case["answer"]}


def _words(text: str) -> set[str]:
    # A crude stem ("leaves" / "leave"): the judge reads meaning, not inflection.
    return {w.removesuffix("s") for w in map(str.lower, _WORD_RE.findall(text)) if w not in _STOP}


def sentences(text: str) -> list[str]:
    """The sentences of a judge's text, without the header lines rt4chart adds."""
    return [s.strip() for line in text.splitlines() if line.strip()
            and not line.startswith("[Document") for s in _SENTENCE_END_RE.split(line.strip())
            if s.strip()]


def honest_verdict(claim: str, text: str, question: str) -> tuple[str, list[str]]:
    """ENT with the sentence of `text` holding every word of `claim` the question does not
    give; else NIC."""
    need = _words(claim) - _words(question)
    for sentence in sentences(text):
        if need <= _words(sentence):
            return "ENT", [sentence]
    return "NIC", []


class HonestJudge:
    model = "honest-premise"

    async def decompose(self, sentence, answer, question):
        return [sentence]

    async def verify_local(self, claim, chunk, question):
        return honest_verdict(claim, chunk, question)

    async def verify_global(self, claim, context, question, local_label, hint):
        return honest_verdict(claim, context, question)


def honest(options: dict[str, str]) -> HonestJudge:
    return HonestJudge()
