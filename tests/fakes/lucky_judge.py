"""A "lucky quote" judge: what a model talked into "this is supported" does.

It says ENT for every claim (absence claims too) and quotes the context sentence that shares
the most words with the claim, verbatim, so the quote always grounds. Each answer sentence is
one claim, its own text. Grounding alone (a real quote about the claim) lets it pass almost
every hallucination; support checks (`transforms/checks/support.py`) are what must stop it.

Run as a script on an `rt4chart eval` folder made with this judge
(`--judge lucky_judge:factory`, PYTHONPATH=tests/fakes) to print the share of gold-hallucinated
answer sentences that ended ENT (the pass share):

    python tests/fakes/lucky_judge.py /tmp/lucky
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_WORD_RE = re.compile(r"\w+")
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD_RE.findall(text)}


def _sentences(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("[Document"):
            out.extend(s.strip() for s in _SENTENCE_END_RE.split(line) if s.strip())
    return out


def luckiest(claim: str, text: str) -> str:
    """The sentence of `text` sharing the most words with `claim` (the first on a tie)."""
    words = _words(claim)
    best, best_n = "", -1
    for sentence in _sentences(text):
        n = len(words & _words(sentence))
        if n > best_n:
            best, best_n = sentence, n
    return best


class LuckyJudge:
    model = "lucky"

    async def decompose(self, sentence, answer, question):
        return [sentence]

    async def verify_local(self, claim, chunk, question):
        return "ENT", [luckiest(claim, chunk)]

    async def verify_global(self, claim, context, question, local_label, hint):
        return "ENT", [luckiest(claim, context)]

    async def verify_absence(self, claim, context, question):
        return "ENT", []


def factory(options: dict[str, str]) -> LuckyJudge:
    return LuckyJudge()


def _rows(folder: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return [r for f in sorted(folder.rglob("*.parquet")) for r in pq.read_table(f).to_pylist()]


def pass_share(eval_dir: Path, part: str | None = None) -> tuple[int, int, int, int]:
    """(gold-hallucinated sentences that ended ENT, gold-hallucinated sentences, hallucinated
    answers that ended ENT, hallucinated answers) of an eval folder made with this judge, on
    one part ("dev", "test") or all. A sentence is gold-hallucinated when it overlaps a gold
    span; its verdict is the worst of its claims' (ENT only if every claim is ENT; `no_claim`
    rows take no part, so a sentence whose claims are all non-claims passes)."""
    items = {json.loads(line)["trace_id"]: json.loads(line)
             for line in (eval_dir / "items.jsonl").read_text().splitlines()}
    items = {k: v for k, v in items.items() if part in (None, v.get("split"))}
    sentences: dict[tuple[str, int], list] = {}
    for c in _rows(eval_dir / "audit" / "claims"):
        if c["trace_id"] not in items:
            continue
        key = (c["trace_id"], c["sentence_index"])
        labels = sentences.setdefault(key, [c["answer_start"], c["answer_end"], []])[2]
        if c.get("status") != "no_claim":  # a non-claim takes no part: not a flag
            labels.append(c["label"])
    passed = total = 0
    for (trace_id, _), (start, end, labels) in sentences.items():
        gold = items.get(trace_id, {}).get("gold_spans") or []
        if any(s < end and start < e for s, e, *_ in (_span(g) for g in gold)):
            total += 1
            passed += all(label == "ENT" for label in labels)
    hallucinated = [i for i in items.values() if i.get("gold_spans")]
    faithful = sum(i.get("label") == "ENT" for i in hallucinated)
    return passed, total, faithful, len(hallucinated)


def _span(gold) -> tuple[int, int]:
    if isinstance(gold, dict):
        return gold.get("start", gold.get("char_start")), gold.get("end", gold.get("char_end"))
    return gold[0], gold[1]


if __name__ == "__main__":
    for part in ("dev", "test", None):
        p, n, f, h = pass_share(Path(sys.argv[1]), part)
        print(f"{part or 'all'}: gold-hallucinated sentences ending ENT: {p} of {n} "
              f"({p / max(n, 1):.1%}); hallucinated answers ending ENT: {f} of {h} "
              f"({f / max(h, 1):.1%})")
