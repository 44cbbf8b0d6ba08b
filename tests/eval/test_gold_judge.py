"""A judge that knows the gold must get perfect answer labels from the real `rt4chart eval`.

The gold judge (tests/fakes/gold_judge.py) goes through the public custom-judge contract over
29 RAGTruth answers (tests/data/ragtruth_gold: Data2txt records whose faithful answers name
JSON keys such as RestaurantsTakeOut or BusinessParking, QA answers with citations and
lead-ins, Summary answers). Any answer it gets wrong is the pipeline's fault: this catches
grounding regressions.
"""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path

import pytest

from rt4chart.pipeline.cli import eval as eval_cli
from rt4chart.pipeline.results.summary import read_table

import gold_judge

DATA = Path(__file__).resolve().parents[1] / "data" / "ragtruth_gold"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gold") / "run"
    code = eval_cli.main([
        "--dataset", "ragtruth", "--data", str(DATA), "--split", "all", "--out", str(out),
        "--judge", "gold_judge:factory", "--judge-option", f"data={DATA}",
        "--bootstrap", "50", "--seed", "3",
    ])
    assert code == 0
    return out


def _items(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "items.jsonl").open()]


def test_the_gold_judge_gets_every_answer_right(run):
    items = _items(run)
    assert len(items) == 29 and {it["task"] for it in items} == {"QA", "Summary", "Data2txt"}
    assert sum(bool(it["gold_spans"]) for it in items) == 11
    wrong = [(it["trace_id"], it["label"]) for it in items
             if it["flagged"] != bool(it["gold_spans"]) or it["status"] != "ok"]
    assert wrong == []
    report = json.loads((run / "report.json").read_text())
    for name, group in report["groups"].items():
        assert group["systems"]["judge"]["answer.f1"]["value"] == 1.0, name


def test_contradictions_stay_contradictions(run):
    raw = {f"ragtruth-{r['id']}": r for r in map(json.loads, (DATA / "response.jsonl").open())}
    for it in _items(run):
        types = {lb["label_type"] for lb in raw[it["trace_id"]]["labels"]}
        expected = "CON" if any("Conflict" in t for t in types) else "NIC" if types else "ENT"
        assert it["label"] == expected, it["trace_id"]


def test_json_keys_are_evidence_for_the_claims_that_name_them(run):
    claims = read_table(str(run / "audit"), "claims").to_pylist()
    takeout = [c for c in claims if c["trace_id"] == "ragtruth-5820"
               and "takeout" in c["claim"]]
    assert takeout and all(c["label"] == "ENT" for c in takeout)
    assert any("RestaurantsTakeOut" in e["text"] for c in takeout for e in c["evidence"])
    record_claims = [c for c in claims if c["trace_id"] in ("ragtruth-5820", "ragtruth-8317")]
    assert all(c["label"] == "ENT" and c["evidence"] for c in record_claims)


# The gold judge itself: honest (no pipeline internals) and careful.

def test_the_gold_judge_reads_no_pipeline_internals():
    tree = ast.parse(Path(gold_judge.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any(m.startswith("rt4chart") for m in imported)


@pytest.fixture(scope="module")
def judge():
    return gold_judge.factory({"data": str(DATA)})


def _response(response_id: str) -> dict:
    return next(r for r in map(json.loads, (DATA / "response.jsonl").open())
                if r["id"] == response_id)


def test_decomposition_follows_the_gold_spans(judge):
    r = _response("584")  # Summary, one "Evident Conflict" span inside a sentence
    (span,) = r["labels"]
    answer = r["response"]
    start = answer.rfind(". ", 0, span["start"]) + 2
    end = answer.find(".", span["end"]) + 1
    claims = asyncio.run(judge.decompose(answer[start:end], answer, ""))
    assert span["text"] in claims and len(claims) == 2
    assert judge.gold_label(span["text"], "", "") == "CON"
    rest = next(c for c in claims if c != span["text"])
    assert judge.gold_label(rest, "", "") == "ENT"


@pytest.mark.parametrize("sentence", [
    "Sure!", "Here is a summary of the record:", "(Passage 1)", "(Passage 2:1)",
    "Based on the given passages, the correct answer is:",
    "Unable to answer based on given passages.", "I hope this helps!",
    "None mentioned in the passages.", "Let me know if you have any further questions.",
])
def test_no_claim_for_sentences_that_assert_nothing(sentence):
    assert gold_judge.says_nothing(sentence)


def test_claims_about_the_world_are_kept():
    for sentence in ("The answer is 42.", "Finch & Fork is in Santa Barbara.",
                     "In 1932 the bridge opened (passage 2)."):
        assert not gold_judge.says_nothing(sentence)


def _record(response_id: str) -> str:
    """The Data2txt record of a response, as indented JSON."""
    sid = _response(response_id)["source_id"]
    source = next(s for s in map(json.loads, (DATA / "source_info.jsonl").open())
                  if s["source_id"] == sid)
    return json.dumps(source["source_info"], indent=2, ensure_ascii=False)


def test_quotes_are_verbatim_key_value_lines(judge):
    text = _record("5820")
    quotes = gold_judge.best_quotes("It offers takeout and street parking.", text)
    assert quotes and all(q in text for q in quotes)
    assert any("TakeOut" in q for q in quotes) and any('"street"' in q for q in quotes)


def test_baseless_claims_are_nic_without_quotes(judge):
    r = next(r for r in map(json.loads, (DATA / "response.jsonl").open())
             if r["id"] == "5673")  # Data2txt, baseless spans only
    span = r["labels"][0]["text"]
    assert asyncio.run(judge.verify_global(span, _record("5673"), "", "NIC", None)) == (
        "NIC", [])


def test_an_unknown_answer_is_a_failure_not_a_guess(judge):
    with pytest.raises(LookupError):
        asyncio.run(judge.decompose("Hello.", "Hello. Not a RAGTruth answer.", ""))


def test_claims_are_self_contained_and_keep_their_own_words_as_span(judge):
    answer = ("Both cells are in the blood. The main difference is their functions.\n\n"
              "Adverb clause:\n\n* She walked slowly so that she would not fall.\n")
    assert gold_judge.lead_in(answer, answer.index("* She")) == "Adverb clause"
    assert gold_judge.lead_in(answer, answer.index("The main")) == ""
    item = judge._self_contained("She walked slowly.",
                                 "* She walked slowly so that she would not fall.", answer, "q")
    assert item == {"text": "She walked slowly. [re: Adverb clause]", "kind": "fact",
                    "fragments": ["She walked slowly."]}
    pronoun = judge._self_contained("The main difference is their functions.",
                                    "The main difference is their functions.", answer,
                                    "red and white blood cells")
    assert pronoun["text"].endswith("[re: red and white blood cells]")
    assert judge._self_contained("Both cells are in the blood.", "Both cells are in the blood.",
                                 answer, "q") == "Both cells are in the blood."


def test_absence_claims_are_verified_from_the_gold():
    absent = gold_judge.factory({"data": str(DATA), "sources": "kinds"})
    assert absent._kind("The passages do not say when it opened.") == "absence"
    assert absent._kind("Based on the passages, it opened in 1990.") == "fact"
    with pytest.raises(ValueError, match="sources="):
        gold_judge.factory({"data": str(DATA), "sources": "maybe"})
