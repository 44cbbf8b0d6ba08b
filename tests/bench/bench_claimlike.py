"""Decomposition coverage on the hand-written sentence corpora, as figures.

    python tests/bench/bench_claimlike.py [--show]

For each corpus in tests/data/claimlike: of the sentences that assert nothing checkable, how
many coverage re-adds when a judge gives them no claim (each is a faithful answer flagged if no
quote supports it); of the checkable ones, how many it lets vanish; of the dropped false
sentences, how many it lets vanish. `sentences.jsonl` and `false_sentences.jsonl` were in view
while the assertion classifier was written and are asserted by
tests/transforms/test_claimlike_corpus.py; `heldout.jsonl` was written afterwards by someone who
had not seen the classifier or the first corpus, and is the honest figure for unseen forms.
Last, the non-checkable sentences paired with 40 real RAGTruth questions and contexts, as
coverage sees them in a run (a short remark that touches neither is not re-added), and the
false sentences with their own contexts.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from rt4chart.transforms.checks.coverage import check_coverage, topic_terms

DATA = Path(__file__).resolve().parents[1] / "data" / "claimlike"


def _rows(name: str) -> list[dict]:
    with open(DATA / name, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _sentences(name: str, show: bool) -> dict:
    rows = _rows(name)
    non = [r for r in rows if not r["checkable"]]
    chk = [r for r in rows if r["checkable"]]
    readded = [r for r in non if check_coverage(r["text"], []).extra_claim]
    vanished = [r for r in chk if not check_coverage(r["text"], []).extra_claim]
    if show:
        for r in readded:
            print(f"  re-added  [{r['kind']}] {r['text']}", file=sys.stderr)
        for r in vanished:
            print(f"  vanished  [{r['kind']}] {r['text']}", file=sys.stderr)
    return {"non_checkable": len(non), "re_added": len(readded),
            "re_added_share": round(len(readded) / max(len(non), 1), 3),
            "checkable": len(chk), "vanished": len(vanished)}


def _contexts(directory: Path, n: int = 40) -> list[frozenset[str]]:
    """The topic terms of n RAGTruth sources (fixed sample): real questions and contexts to pair
    the corpora's sentences with, as the pipeline pairs an answer with its trace."""
    with open(directory / "source_info.jsonl", encoding="utf-8") as fh:
        sources = [json.loads(line) for line in fh]
    texts = []
    for rec in random.Random(0).sample(sources, min(n, len(sources))):
        info = rec["source_info"]
        if isinstance(info, dict) and "question" in info:
            texts.append(f"{info['question']} {info['passages']}")
        else:
            texts.append(info if isinstance(info, str) else json.dumps(info))
    return [topic_terms(t) for t in texts]


def _with_topics(name: str, topics: list[frozenset[str]]) -> dict:
    non = [r for r in _rows(name) if not r["checkable"]]
    n = sum(bool(check_coverage(r["text"], [], t).extra_claim) for r in non for t in topics)
    return {"pairs": len(non) * len(topics), "re_added": n,
            "re_added_share": round(n / max(len(non) * len(topics), 1), 3)}


def main() -> None:
    show = "--show" in sys.argv
    false = _rows("false_sentences.jsonl")
    data = Path(__file__).resolve().parents[3] / "shared" / "data" / "ragtruth"
    out = {
        "sentences.jsonl": _sentences("sentences.jsonl", show),
        "heldout.jsonl": _sentences("heldout.jsonl", show),
        "false_sentences.jsonl": {
            "false": len(false),
            "vanished": sum(not check_coverage(r["sentence"], []).extra_claim for r in false),
            "vanished_with_their_context": sum(
                not check_coverage(r["sentence"], [], topic_terms(r["question"], *r["context"]))
                .extra_claim for r in false)},
    }
    if data.exists():
        topics = _contexts(data)
        out["with 40 RAGTruth contexts (topic test)"] = {
            name: _with_topics(name, topics) for name in ("sentences.jsonl", "heldout.jsonl")}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
