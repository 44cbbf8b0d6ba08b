"""A judge that decomposes and quotes perfectly, in any language: the gold of
tests/data/languages (written for issue 34).

Through the public custom-judge contract only (it imports nothing of rt4chart). Each answer
sentence is one claim, its own text, unless the gold says it asserts nothing (a courtesy line:
no claim). A claim the gold supports is ENT with the supporting context sentence as its verbatim
quote (when that sentence is in the text given); a hallucinated one is NIC without a quote.
With the option ``lucky=1`` it says ENT for a hallucinated claim too, quoting the context
sentence the gold's trace pairs with it (the one sharing the most characters): what a judge
talked into "supported" does, which the support checks must overturn in every language.
"""

from __future__ import annotations

import json
from pathlib import Path

GOLD = Path(__file__).resolve().parents[1] / "data" / "languages" / "gold.jsonl"
TRACES = GOLD.with_name("traces.jsonl")


def _load() -> tuple[dict[str, dict], dict[str, list[str]]]:
    gold = {}
    with open(GOLD, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            gold[row["sentence"]] = row
    contexts = {}
    with open(TRACES, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            contexts[row["trace_id"]] = [c["text"] for c in row["contexts"]]
    return gold, contexts


def _closest(claim: str, text: str) -> str:
    """The sentence of `text` sharing the most characters with `claim`, verbatim."""
    pieces, start = [], 0
    for i, ch in enumerate(text):
        if ch in ".。!?！？" and (i + 1 == len(text) or text[i + 1] in " 　" or ch in "。！？"):
            if not (ch == "." and i + 1 < len(text) and text[i + 1].isdigit()):
                pieces.append(text[start:i + 1].strip())
                start = i + 1
    pieces.append(text[start:].strip())
    pieces = [p for p in pieces if p]
    return max(pieces, key=lambda p: len(set(p) & set(claim))) if pieces else ""


class PolyglotJudge:
    model = "polyglot-gold"

    def __init__(self, lucky: bool):
        self._gold, self._contexts = _load()
        self._lucky = lucky

    def _verdict(self, claim: str, text: str) -> tuple[str, list[str]]:
        row = self._gold.get(claim.removeprefix("- "))
        if row is None:
            return "NIC", []
        if row["label"] == "ENT":
            return ("ENT", [row["quote"]]) if row["quote"] in text else ("NIC", [])
        if self._lucky:
            return "ENT", [_closest(claim, text)]
        return "NIC", []

    async def decompose(self, sentence, answer, question):
        claim = sentence.strip().removeprefix("- ")  # a list item's claim, without its marker
        row = self._gold.get(claim)
        return [] if row is not None and row["label"] == "none" else [claim]

    async def verify_local(self, claim, chunk, question):
        return self._verdict(claim, chunk)

    async def verify_global(self, claim, context, question, local_label, hint):
        return self._verdict(claim, context)

    async def verify_absence(self, claim, context, question):
        return "ENT", []


def factory(options: dict[str, str]) -> PolyglotJudge:
    return PolyglotJudge(options.get("lucky", "0") == "1")
