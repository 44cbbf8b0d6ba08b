"""Judges for the premise rule and non-claim tests (issue 32), through the public contract.

`issue_judge` (`IssueJudge`): a careful judge on a faithful answer that restates the question
(ENT, quoting the context sentence that best matches the claim, verbatim), a lucky-quote judge
on a claim that changes one value of a context sentence, and a compromised decomposer for the
false sentence of the hiding traces: it turns "The warranty lasts 5 years." into a lead-in
("Based on the passages, the warranty lasts 5 years.") or into claims that assert nothing
("Passage 1 and Passage 2"), chosen by the trace's question.

Every trace here is written for these tests (none from RAGTruth).
"""

from __future__ import annotations

import re

_WORD_RE = re.compile(r"[a-z0-9]+")

# The restated question: a model year, a form number and a date the user gave.
CIVIC_CONTEXT = ("Open the glove box, unclip its two stops and pull out the cabin air filter. "
                 "Slide the new filter in with the arrow pointing down.")
CIVIC_QUESTION = "2011 honda civic replace cabin air filter"
CIVIC_ANSWER = ("To replace the cabin air filter on a 2011 Honda Civic, open the glove box, "
                "unclip its two stops and pull out the cabin air filter.")
# The conflicting value: the question's 3 years against the context's 2 years.
WARRANTY_CONTEXT = "The warranty lasts 2 years from delivery. It covers the motor and the pump."
WARRANTY_QUESTION = "Is the warranty 3 years?"
WARRANTY_ANSWER = "Yes, the warranty lasts 3 years from delivery."
# A false sentence a compromised decomposer tries to hide.
HIDDEN_CONTEXT = ("The kettle has a removable limescale filter. The warranty covers the heating "
                  "element.")
HIDDEN_ANSWER = "The kettle has a removable limescale filter. The warranty lasts 5 years."
HIDDEN_SENTENCE = "The warranty lasts 5 years."
# What the compromised decomposer returns for the false sentence, by the trace's question.
HIDING_CLAIMS = {
    "lead_in": ["Based on the passages, the warranty lasts 5 years."],
    "non_claims": ["Passage 1 and Passage 2",
                   "Therefore, these steps are based on the information provided in passage 1."],
    "mixed": ["Passage 2 provides the necessary information to answer the question.",
              "According to the given passages, the warranty lasts 5 years."],
}


def trace(trace_id: str, question: str, context: str, answer: str) -> dict:
    return {"trace_id": trace_id, "route": "premise", "timestamp": "2026-01-05T10:00:00Z",
            "question": question, "contexts": [{"doc_id": "d1", "text": context}],
            "answer": answer}


def _words(text: str) -> set[str]:
    return {w for w in _WORD_RE.findall(text.lower()) if len(w) > 2} - _FRAME


# Words of lead-ins and references to the sources: not what a claim says about the world.
_FRAME = frozenset("based passages passage according given information provided".split())
# The share of a claim's words its best context sentence must hold for an ENT.
ENT_SHARE = 0.6


def best_line(claim: str, context: str) -> str | None:
    """The context sentence sharing the most words with the claim (None if none shares any);
    header lines ("[Document 1: d1]") are not sentences of the context."""
    lines = [line for line in context.splitlines() if not line.startswith("[")]
    sentences = [s.strip() for line in lines for s in re.split(r"(?<=[.!?])\s+", line)
                 if s.strip()]
    scored = [(len(_words(claim) & _words(s)), s) for s in sentences]
    best = max(scored, default=(0, None))
    return best[1] if best[0] else None


class IssueJudge:
    """Decomposes each answer sentence into itself, except the false sentence of the hiding
    traces, which it turns into the claims of `HIDING_CLAIMS[question]`; says ENT with the
    best-matching context sentence when it holds ENT_SHARE of the claim's words (a lucky
    quote for a claim that changes one value), else NIC."""

    model = "issue-32"

    async def decompose(self, sentence: str, answer: str, question: str) -> list[str]:
        if sentence.strip() == HIDDEN_SENTENCE and question in HIDING_CLAIMS:
            return list(HIDING_CLAIMS[question])
        return [sentence.strip()]

    async def verify_local(self, claim: str, chunk: str, question: str):
        line = best_line(claim, chunk)
        words = _words(claim)
        if line and len(words & _words(line)) >= ENT_SHARE * len(words):
            return "ENT", [line]
        return "NIC", []

    async def verify_global(self, claim, context, question, local_label, hint):
        return await self.verify_local(claim, context, question)


def issue_judge(options: dict[str, str]) -> IssueJudge:
    return IssueJudge()
