"""Decomposition coverage on the hand-written sentence corpora, as figures.

    python tests/bench/bench_claimlike.py [--show]

For each corpus in tests/data/claimlike: of the sentences that assert nothing checkable, how
many coverage re-adds when a judge gives them no claim (each is a faithful answer flagged if no
quote supports it); of the checkable ones, how many it lets vanish; of the dropped false
sentences, how many it lets vanish. `sentences.jsonl` and `false_sentences.jsonl` were in view
while the assertion classifier was written and are asserted by
tests/transforms/test_claimlike_corpus.py; `heldout.jsonl` was written afterwards by someone who
had not seen the classifier or the first corpus, and is the honest figure for unseen forms.
Since issue 46 coverage waives no sentence for its topic or length (only a sentence of discourse
words only is exempt), so a sentence is re-added or not whatever its trace.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rt4chart.transforms.checks.coverage import check_coverage

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


def main() -> None:
    show = "--show" in sys.argv
    false = _rows("false_sentences.jsonl")
    out = {
        "sentences.jsonl": _sentences("sentences.jsonl", show),
        "heldout.jsonl": _sentences("heldout.jsonl", show),
        "false_sentences.jsonl": {
            "false": len(false),
            "vanished": sum(not check_coverage(r["sentence"], []).extra_claim for r in false)},
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
