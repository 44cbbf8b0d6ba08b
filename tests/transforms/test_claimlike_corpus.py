"""Decomposition coverage against a hand-written corpus (tests/data/claimlike).

`check_coverage(sentence, [])` is what happens when a judge gives a sentence no claim: a
sentence that asserts nothing must stay without one (re-adding it flags faithful answers), and
a checkable sentence must come back as a claim (else a false sentence vanishes). The corpus was
written for this test, apart from the fakes and data the classifier was tuned with.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rt4chart.transforms.checks.coverage import check_coverage

DATA = Path(__file__).resolve().parents[1] / "data" / "claimlike"


def _read(name: str) -> list[dict]:
    with open(DATA / name, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(scope="module")
def sentences() -> list[dict]:
    return _read("sentences.jsonl")


def _report(rows: list[dict], total: int, what: str) -> str:
    shown = "\n".join(f"  {r['id']} [{r['kind']}]: {r['text']}" for r in rows)
    return f"{len(rows)} of {total} {what}:\n{shown}"


def test_the_corpus_is_what_it_says(sentences):
    ids = [r["id"] for r in sentences]
    assert len(ids) == len(set(ids)) and len(sentences) >= 220
    assert sum(not r["checkable"] for r in sentences) >= 120
    assert sum(r["checkable"] for r in sentences) >= 100
    assert all(isinstance(r["checkable"], bool) and r["kind"] and r["text"] for r in sentences)
    for record in _read("false_sentences.jsonl"):
        assert record["sentence"] in record["answer"] and record["context"], record["id"]


# Since issue 46 only a sentence of discourse vocabulary is exempt: a remark with a word the
# closed lists do not hold ("Always check with your doctor." is, "It's wise to read the fine
# print." is not) is re-added and verified, the safe side. 31 of 144 are re-added (0 before);
# the bound keeps the vocabulary from shrinking unnoticed.
MAX_RE_ADDED_SHARE = 0.22


def test_sentences_that_assert_nothing_are_mostly_not_re_added(sentences):
    rows = [r for r in sentences if not r["checkable"]]
    wrong = [r for r in rows if check_coverage(r["text"], []).extra_claim is not None]
    assert len(wrong) <= MAX_RE_ADDED_SHARE * len(rows), _report(wrong, len(rows),
                                                                  "non-claims re-added")


def test_checkable_sentences_without_claims_are_re_added(sentences):
    rows = [r for r in sentences if r["checkable"]]
    missed = [r for r in rows if check_coverage(r["text"], []).extra_claim is None]
    assert len(missed) <= 0.05 * len(rows), _report(missed, len(rows), "claims not re-added")


def test_every_dropped_false_sentence_is_re_added():
    records = _read("false_sentences.jsonl")
    missed = [{"id": r["id"], "kind": r["why"], "text": r["sentence"]} for r in records
              if check_coverage(r["sentence"], []).extra_claim is None]
    assert missed == [], _report(missed, len(records), "false sentences not re-added")
