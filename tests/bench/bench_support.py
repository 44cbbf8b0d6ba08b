"""The support check as the pipeline applies it, against a "lucky quote" judge and the gold judge
(figures on RAGTruth, by part: dev, where thresholds are chosen, and test).

    python tests/bench/bench_support.py [--data ../shared/data/ragtruth] [--examples 15]
        [--write-sample tests/data/support_sample.jsonl]

Every answer sentence that claims something (`is_non_claim`) is taken as one claim, checked
against the full context rendered as the pipeline renders it, exactly where the final label is
set (`evidence.grounded_verdict` then `specifics.supported_verdict`). The lucky judge
(`tests/fakes/lucky_judge.py`) says ENT and quotes the context sentence sharing the most words
with the claim; its pass share is the share of gold-hallucinated sentences (those overlapping a
gold span) whose ENT stands (target: at most 10%). The gold judge (`tests/fakes/gold_judge.py`)
says ENT for a faithful sentence and quotes what covers it; its cost is the faithful answers
(no gold span) in which the check overturns a sentence: each is an answer the gold judge loses
(it must be none). The end-to-end figures (`rt4chart eval`, whose claims are decomposed by the
judges) are in the README; this bench follows them within a few sentences.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "fakes"))

import gold_judge  # noqa: E402, I001 - the fakes folder is not a package
import lucky_judge  # noqa: E402

from rt4chart.pipeline.eval.datasets import ragtruth_contexts  # noqa: E402

from rt4chart.pipeline.eval.datasets import split_of  # noqa: E402
from rt4chart.schemas.records import Document, Trace  # noqa: E402
from rt4chart.transforms.checks.coverage import is_non_claim  # noqa: E402
from rt4chart.transforms.checks.evidence import grounded_verdict  # noqa: E402
from rt4chart.transforms.checks.specifics import supported_verdict  # noqa: E402
from rt4chart.transforms.judges.base import Verdict  # noqa: E402
from rt4chart.transforms.segment import (  # noqa: E402
    SegmentConfig,
    prepare,
    render_context,
    split_sentences,
)

DEFAULT_DATA = HERE.parents[2] / "shared" / "data" / "ragtruth"
SEGMENT = SegmentConfig(25, 10)


@dataclass(frozen=True)
class Case:
    """One answer sentence as a claim, with its trace's question and documents."""

    answer_id: str
    task: str
    part: str  # "dev" or "test" (datasets.split_of)
    claim: str
    hallucinated: bool  # overlaps a gold span
    gold_claim: str | None  # the gold judge's claim (with its topic), None: it claims nothing
    question: str
    docs: tuple[tuple[str, str], ...]  # (doc_id, text)


def _rendered(case: Case):
    return _render(case.question, case.docs)


@functools.lru_cache(maxsize=64)
def _render(question: str, docs: tuple[tuple[str, str], ...]):
    trace = Trace("bench", "r", 0, question, tuple(Document(d, t) for d, t in docs), "-")
    return render_context(prepare(trace, SEGMENT))


def final_label(case: Case, quotes: list[str]) -> tuple[str, str | None]:
    """(label, note) of an ENT with these quotes, where the pipeline sets the final label."""
    rendered = _rendered(case)
    grounded = grounded_verdict(Verdict("ENT", tuple(quotes)), rendered, case.claim)
    label, _, note, _ = supported_verdict(grounded, case.claim,
                                          f"{case.question}\n{rendered.text}")
    return label, note


def lucky_passes(case: Case) -> bool:
    quote = lucky_judge.luckiest(case.claim, _rendered(case).text)
    return final_label(case, [quote])[0] == "ENT"


def gold_overturned(case: Case) -> str | None:
    """The note when the check overturns the gold judge's ENT for this sentence, else None."""
    if case.gold_claim is None:
        return None
    rendered = _rendered(case)
    quotes = gold_judge.best_quotes(case.gold_claim, rendered.text, case.question)
    label, note = final_label(replace(case, claim=case.gold_claim), quotes)
    return None if label == "ENT" else note or label


def _gold_claim(answer: str, start: int, claim: str, question: str) -> str | None:
    """The claim the gold judge makes of a faithful sentence (`GoldJudge.decompose`)."""
    if gold_judge.says_nothing(claim):
        return None
    topic = gold_judge.lead_in(answer, start) or (
        question if gold_judge._REFERENCE_RE.search(claim) else "")
    return f"{claim.strip()} [re: {' '.join(topic.split())}]" if topic else claim.strip()


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
    docs = tuple((d["doc_id"], d["text"]) for d in contexts)
    spans = [(int(lb["start"]), int(lb["end"])) for lb in response.get("labels") or []]
    answer = response["response"]
    for start, end in split_sentences(answer):
        claim = answer[start:end]
        if is_non_claim(claim):
            continue
        hallucinated = any(s < end and start < e for s, e in spans)
        yield Case(str(response["id"]), source["task_type"], split_of(response["source_id"]),
                   claim, hallucinated, _gold_claim(answer, start, claim, question), question,
                   docs)


def figures(cases: list[Case]) -> dict[str, str]:
    """Lucky pass share and faithful answers the gold judge loses, per part and overall."""
    bad_answers = {c.answer_id for c in cases if c.hallucinated}
    out = {}
    for part in ("dev", "test", "all"):
        mine = [c for c in cases if part in ("all", c.part)]
        bad = [c for c in mine if c.hallucinated]
        passed = sum(lucky_passes(c) for c in bad)
        faithful = [c for c in mine if c.answer_id not in bad_answers]
        lost = {c.answer_id for c in faithful if gold_overturned(c)}
        answers = {c.answer_id for c in faithful}
        out[part] = (f"lucky pass {passed}/{len(bad)} ({_share(passed, len(bad)):.1%}); gold "
                     f"loses {len(lost)} of {len(answers)} faithful answers")
    return out


def _share(n: int, total: int) -> float:
    return n / total if total else 0.0


def _examples(cases: list[Case], limit: int) -> None:
    bad_answers = {c.answer_id for c in cases if c.hallucinated}
    lost = [(c, gold_overturned(c)) for c in cases if c.answer_id not in bad_answers]
    print(f"\ngold ENTs overturned in faithful answers: {sum(bool(n) for _, n in lost)}")
    for case, note in [(c, n) for c, n in lost if n][:limit]:
        print(f"- [{case.task}/{case.part}] {case.claim!r:.200}\n    {note}")
    passed = [c for c in cases if c.hallucinated and lucky_passes(c)]
    print(f"\nlucky quotes that pass ({len(passed)}), the first {limit}:")
    for case in passed[:limit]:
        print(f"- [{case.task}/{case.part}] {case.claim!r:.200}")


def write_sample(cases: list[Case], path: Path, size: int, part: str = "dev") -> None:
    """Every hallucinated sentence of one part (so that its lucky pass share is the part's) and
    every k-th claim sentence of its faithful answers (up to `size`); each source's documents
    once, as a first line {"sources": {key: [question, docs]}}."""
    mine = [c for c in cases if c.part == part]
    bad_answers = {c.answer_id for c in mine if c.hallucinated}
    faithful = [c for c in mine if c.answer_id not in bad_answers and c.gold_claim]
    sample = [c for c in mine if c.hallucinated] + faithful[:: max(1, len(faithful) // size)]
    sources: dict[str, list] = {}
    rows = []
    for case in sample:
        key = sources.setdefault(json.dumps([case.question, case.docs]), [str(len(sources))])[0]
        row = asdict(case)
        del row["question"], row["docs"]
        rows.append(row | {"source": key})
    head = {"sources": {key: json.loads(text) for text, (key,) in sources.items()}}
    with open(path, "w", encoding="utf-8") as fh:
        for row in [head, *rows]:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(sample)} cases ({len(sources)} sources) to {path}")


def read_sample(path: Path) -> list[Case]:
    with open(path, encoding="utf-8") as fh:
        head, *rows = [json.loads(line) for line in fh if line.strip()]
    out = []
    for row in rows:
        question, docs = head["sources"][row.pop("source")]
        out.append(Case(**row, question=question, docs=tuple(map(tuple, docs))))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--examples", type=int, default=15)
    ap.add_argument("--write-sample", type=Path, help="write a small sample here (for the test)")
    ap.add_argument("--sample", type=int, default=40,
                    help="faithful sentences in the sample (all hallucinated ones of its part)")
    args = ap.parse_args()
    cases = list(load(args.data))
    for part, line in figures(cases).items():
        print(f"{part}: {line}")
    _examples(cases, args.examples)
    if args.write_sample:
        write_sample(cases, args.write_sample, args.sample)


if __name__ == "__main__":
    sys.exit(main())
