"""The support check against a "lucky quote" judge and a careful judge, on RAGTruth (figures).

    python tests/bench/bench_support.py [--data ../shared/data/ragtruth] [--examples 15]
        [--write-sample tests/data/support_sample.jsonl]

A lucky-quote judge always says ENT and quotes the context sentence sharing the most words with
the claim: what a model talked into "this is supported" does. For every gold-hallucinated answer
sentence (one overlapping a gold span) taken as the claim, this prints the share that passes
grounding alone and grounding + the support check (target: at most 10%). A careful judge quotes
the context sentences that best match a faithful sentence (the best one, then up to two more
that add words or numbers of the claim): the share of non-hallucinated claim sentences the check
overturns is the cost (it must be near 0), also counted per faithful answer (an answer the gold
judge would then lose). Contexts are rendered as the RAGTruth loader does and split into
sentences as the pipeline does; sentences that claim nothing (`is_non_claim`) are left out.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from rt4chart.pipeline.datasets import ragtruth_contexts
from rt4chart.schemas.records import Evidence
from rt4chart.transforms.coverage import is_non_claim
from rt4chart.transforms.evidence import content_words, ground
from rt4chart.transforms.quantities import number_terms
from rt4chart.transforms.segment import split_sentences
from rt4chart.transforms.support import check_support, content_terms

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parents[2] / "shared" / "data" / "ragtruth"


@dataclass(frozen=True)
class Case:
    """One answer sentence as a claim, with the quotes of both judges."""

    answer_id: str
    task: str
    claim: str
    hallucinated: bool  # overlaps a gold span
    lucky: str  # the most word-overlapping context sentence
    careful: tuple[str, ...]  # the best 1-3 context sentences
    known: str  # question and contexts: names the claim may take from there


def _lucky(claim: str, sentences: list[str]) -> str:
    words = content_words(claim)
    return max(sentences, key=lambda s: len(words & content_words(s)))


def _values(text: str) -> set[str]:
    # Numbers by value, whatever the unit: `"stars": 4.5` states "4.5 stars".
    return {"#" + term.split()[0] for term in number_terms(text)}


def _careful(claim: str, sentences: list[str], size: int = 3) -> tuple[str, ...]:
    """The best-matching sentence, then up to two more that add words or (worth three words)
    numbers of the claim: what a careful judge quotes."""
    wanted = content_terms(claim) | _values(claim)
    terms = [content_terms(s) | _values(s) for s in sentences]
    chosen: list[int] = []
    have: set[str] = set()
    for _ in range(size):
        gains = {i: sum(3 if t[0] == "#" else 1 for t in (wanted & ts) - have)
                 for i, ts in enumerate(terms) if i not in chosen}
        best = max(gains, key=lambda i: (gains[i], -i), default=None)
        if best is None or gains[best] == 0:
            break
        chosen.append(best)
        have |= wanted & terms[best]
    return tuple(sentences[i] for i in sorted(chosen)) or (_lucky(claim, sentences),)


def load(data: Path) -> Iterator[Case]:
    """Every answer sentence of the RAGTruth records in `data` that claims something."""
    sources = {}
    with open(data / "source_info.jsonl", encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            sources[record["source_id"]] = record
    with open(data / "response.jsonl", encoding="utf-8") as fh:
        for line in fh:
            yield from _cases(json.loads(line), sources)


def _cases(response: dict, sources: dict) -> Iterator[Case]:
    source = sources[response["source_id"]]
    question, contexts = ragtruth_contexts(source)
    sentences = [doc["text"][s:e] for doc in contexts for s, e in split_sentences(doc["text"])]
    known = "\n".join([question, *(doc["text"] for doc in contexts)])
    spans = [(int(lb["start"]), int(lb["end"])) for lb in response.get("labels") or []]
    answer = response["response"]
    for start, end in split_sentences(answer):
        claim = answer[start:end]
        if is_non_claim(claim) or not sentences:
            continue
        hallucinated = any(s < end and start < e for s, e in spans)
        yield Case(str(response["id"]), source["task_type"], claim, hallucinated,
                   _lucky(claim, sentences), _careful(claim, sentences), known)


def passes_grounding(claim: str, quotes: tuple[str, ...]) -> bool:
    evidence = tuple(Evidence("doc", i, 0, len(q), q) for i, q in enumerate(quotes))
    return ground("ENT", evidence, 0, len(quotes), claim)[0] == "ENT"


def lucky_passes(case: Case, use_known: bool = True) -> bool:
    quotes = (case.lucky,)
    return passes_grounding(case.claim, quotes) and check_support(
        case.claim, quotes, case.known if use_known else "").supported


def careful_overturned(case: Case, use_known: bool = True) -> tuple[str, ...]:
    """What the check finds missing from the careful judge's quotes (empty: ENT stands)."""
    return check_support(case.claim, case.careful, case.known if use_known else "").missing


def figures(cases: list[Case], use_known: bool = True) -> dict:
    """Lucky-quote pass shares and careful-judge overturn shares, overall and per task."""
    bad = [c for c in cases if c.hallucinated]
    good = [c for c in cases if not c.hallucinated]
    faithful = {c.answer_id for c in good} - {c.answer_id for c in bad}
    lost = {c.answer_id for c in good
            if c.answer_id in faithful and careful_overturned(c, use_known)}
    out = {
        "hallucinated_sentences": len(bad),
        "lucky_pass_grounding": _share(sum(passes_grounding(c.claim, (c.lucky,)) for c in bad),
                                       len(bad)),
        "lucky_pass_support": _share(sum(lucky_passes(c, use_known) for c in bad), len(bad)),
        "faithful_sentences": len(good),
        "careful_overturned": _share(sum(bool(careful_overturned(c, use_known)) for c in good),
                                     len(good)),
        "faithful_answers": len(faithful),
        "faithful_answers_lost": _share(len(lost), len(faithful)),
    }
    for task in sorted({c.task for c in cases}):
        b = [c for c in bad if c.task == task]
        g = [c for c in good if c.task == task]
        out[f"{task}: lucky pass / careful overturned"] = (
            f"{_share(sum(lucky_passes(c, use_known) for c in b), len(b))} of {len(b)} / "
            f"{_share(sum(bool(careful_overturned(c, use_known)) for c in g), len(g))} of {len(g)}")
    return out


def _share(n: int, total: int) -> float:
    return round(n / total, 4) if total else 0.0


def _examples(cases: list[Case], limit: int) -> None:
    over = [(c, careful_overturned(c)) for c in cases if not c.hallucinated]
    over = [(c, m) for c, m in over if m]
    print(f"\nfalse overturns ({len(over)}), by kind:",
          dict(Counter(m.split()[0] for _, ms in over for m in ms)))
    for case, missing in over[:limit]:
        print(f"- [{case.task}] {case.claim!r}\n    quotes {list(case.careful)!r:.400}\n"
              f"    missing {list(missing)}")
    passed = [c for c in cases if c.hallucinated and lucky_passes(c)]
    print(f"\nlucky quotes that pass ({len(passed)}):")
    for case in passed[:limit]:
        print(f"- [{case.task}] {case.claim!r}\n    quote {case.lucky!r:.300}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--examples", type=int, default=15)
    ap.add_argument("--write-sample", type=Path, help="write a small sample here (for the test)")
    ap.add_argument("--sample", type=int, default=24, help="cases of each side in the sample")
    args = ap.parse_args()
    cases = list(load(args.data))
    for use_known in (True, False):
        label = "entities also found in question/context" if use_known else "evidence only"
        print(f"== {label}")
        for key, value in figures(cases, use_known).items():
            print(f"{key}: {value}")
    _examples(cases, args.examples)
    if args.write_sample:
        write_sample(cases, args.write_sample, args.sample)


def _reduced_known(case: Case) -> str:
    """The short lines of the question and contexts (record fields such as `"state": "CA"`) and
    those sharing a word stem with the claim's names: what the entity check reads of them."""
    stems = {w[:5].lower() for w in re.findall(r"[A-Z][\w'’]*", case.claim)}
    return "\n".join(line for line in case.known.splitlines() if len(line) <= 60
                     or stems & {w[:5].lower() for w in re.findall(r"\w+", line)})


def write_sample(cases: list[Case], path: Path, size: int) -> None:
    """Every k-th hallucinated and faithful case, so that the sample spans all tasks; the
    reduced question/context gives the same verdicts as the full one (checked here)."""
    sample = []
    for side in (True, False):
        group = [c for c in cases if c.hallucinated == side]
        sample += group[:: max(1, len(group) // size)][:size]
    with open(path, "w", encoding="utf-8") as fh:
        for case in sample:
            small = replace(case, known=_reduced_known(case))
            assert lucky_passes(small) == lucky_passes(case), case.claim
            assert careful_overturned(small) == careful_overturned(case), case.claim
            fh.write(json.dumps(asdict(small), ensure_ascii=False) + "\n")
    print(f"wrote {len(sample)} cases to {path}")


if __name__ == "__main__":
    sys.exit(main())
