"""Sentence splitting time against context size (not a test).

    python tests/bench/bench_segment.py [--sizes 1000 10000 50000] [--baseline 1000 4000 8000]
                                        [--json out.json]

Builds contexts of N sentences from the RAGTruth sample's passages (cycled), once as one
paragraph on one line and once one sentence per line, and times `split_sentences` on each.
Prints seconds (CPU time) per 1,000 sentences for every size and layout, and the ratio of the
largest size's figure to the smallest's per layout: about 1 when the time is linear in the text's
length.
`--baseline` also times the splitter without pieces (the whole line given to pysbd at once, as
before) on one line, for the sizes given: that one is superlinear.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

from rt4chart.transforms.segment import split_sentences
from rt4chart.transforms.validate import parse_trace

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "ragtruth_sample.jsonl"


def sample_sentences() -> list[str]:
    """The sentences of the sample's prose passages (not its JSON records)."""
    sentences: list[str] = []
    for line in SAMPLE.read_text().splitlines():
        for doc in parse_trace(line).contexts:
            if not doc.text.lstrip().startswith(("{", "[")):
                sentences += [doc.text[s:e] for s, e in split_sentences(doc.text)]
    return sentences


def context(sentences: list[str], n: int, sep: str) -> str:
    return sep.join(itertools.islice(itertools.cycle(sentences), n))


def seconds_per_1k(text: str, n: int, piece_chars: int | None = None) -> tuple[float, int]:
    # CPU time of this process: on a shared machine, wall-clock time also counts the waits.
    start = time.process_time()
    found = split_sentences(text) if piece_chars is None else split_sentences(text, piece_chars)
    return round((time.process_time() - start) / n * 1000, 3), len(found)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 50_000])
    ap.add_argument("--baseline", type=int, nargs="*", default=[1000, 4000, 8000],
                    help="sizes to time without pieces, on one line (superlinear: keep small)")
    ap.add_argument("--json")
    args = ap.parse_args()
    sentences = sample_sentences()
    split_sentences(" ".join(sentences[:50]))  # load pysbd and compile its patterns
    figures: dict = {"sample_sentences": len(sentences), "seconds_per_1k_sentences": {}}
    for layout, sep in (("one_line", " "), ("one_per_line", "\n")):
        rows = {}
        for n in args.sizes:
            text = context(sentences, n, sep)
            per_1k, found = seconds_per_1k(text, n)
            rows[n] = {"chars": len(text), "sentences_found": found, "s_per_1k": per_1k}
            print(f"{layout:13} {n:>6} sentences ({len(text):>9} chars): {per_1k:.3f} s per 1,000"
                  f" ({found} found)", flush=True)
        small, large = min(args.sizes), max(args.sizes)
        ratio = round(rows[large]["s_per_1k"] / rows[small]["s_per_1k"], 2)
        print(f"{layout:13} ratio {large // 1000}k/{small // 1000}k: {ratio}", flush=True)
        figures["seconds_per_1k_sentences"][layout] = {"sizes": rows, f"ratio_{large}_{small}":
                                                       ratio}
    baseline = {}
    for n in args.baseline:
        text = context(sentences, n, " ")
        per_1k, found = seconds_per_1k(text, n, piece_chars=len(text))
        baseline[n] = {"s_per_1k": per_1k, "sentences_found": found}
        print(f"{'unpieced':13} {n:>6} sentences on one line: {per_1k:.3f} s per 1,000", flush=True)
    figures["unpieced_one_line"] = baseline
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
