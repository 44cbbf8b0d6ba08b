"""Language detection figures (docs/languages.md): how often an English sentence is taken for
another language, and how long detection takes.

    python tests/bench/bench_languages.py [--data ../shared/data/ragtruth]

Every sentence of RAGTruth's answers (English) is given to `text.language.detect`; a sentence
named another language would get that language's stopwords, locale numbers and remark rule,
so this share is how much the English figures can move. Speed is per distinct sentence (the
result is cached by text).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from pathlib import Path

from rt4chart.transforms.text.language import MIN_CONFIDENCE, _identifier, detect


def _sentences(data: Path) -> list[str]:
    out = []
    with open(data / "response.jsonl", encoding="utf-8") as fh:
        for line in fh:
            answer = json.loads(line).get("response", "")
            out.extend(s for s in re.split(r"(?<=[.!?])\s+|\n", answer) if s.strip())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/ragtruth"))
    args = parser.parse_args()
    sentences = _sentences(args.data)
    _identifier()  # the model's load (about a second) is not per sentence
    started = time.perf_counter()
    named = Counter(detect(s) for s in sentences)
    elapsed = time.perf_counter() - started
    other = sum(n for code, n in named.items() if code not in ("en", "und"))
    print(f"{len(sentences)} English answer sentences; min confidence {MIN_CONFIDENCE}")
    print(f"named English: {named['en']}, undetermined: {named['und']}, another language: "
          f"{other} ({100 * other / max(len(sentences), 1):.2f}%) {dict(named.most_common(6))}")
    print(f"detection: {1000 * elapsed / max(len(sentences), 1):.2f} ms per sentence")


if __name__ == "__main__":
    main()
