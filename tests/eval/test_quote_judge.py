"""The real `rt4chart eval` against a second gold judge, written apart from the first.

tests/fakes/quote_judge.py knows RAGTruth's labels like gold_judge.py but decomposes and quotes
differently (its own no-claim rules, absence and source claims, a single verbatim quote per
verdict), so the pipeline is not measured only against the fake it was tuned with. The run uses
the 29 answers of tests/data/ragtruth_gold in both cut modes. Thresholds are the measured
figures rounded down: with ``cut=sentence`` a whole sentence is one claim, so span F1 is lower
than with ``cut=gold``; the one answer both modes get wrong (ragtruth-8317, faithful) is a
sentence about the answer itself that the judge gives no claim and coverage re-adds.
"""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path

import pytest
import quote_judge

from rt4chart.pipeline.cli import eval as eval_cli

DATA = Path(__file__).resolve().parents[1] / "data" / "ragtruth_gold"
# cut -> (answer F1, span F1) at least, overall; measured 0.957 / 0.616 and 0.957 / 0.926
# before issue 46, 0.957 / 0.899 with `cut=gold` after it: the lead-ins and headings this judge
# gives no claim are re-added and verified now (an exemption must prove there is nothing to
# check), and in answers flagged already their spans widen the predicted spans.
FLOORS = {"sentence": (0.95, 0.60), "gold": (0.95, 0.89)}


@pytest.fixture(scope="module", params=sorted(FLOORS))
def run(request, tmp_path_factory) -> tuple[str, dict]:
    out = tmp_path_factory.mktemp(f"quote-{request.param}") / "run"
    code = eval_cli.main([
        "--dataset", "ragtruth", "--data", str(DATA), "--split", "all", "--out", str(out),
        "--judge", "quote_judge:factory", "--judge-option", f"data={DATA}",
        "--judge-option", f"cut={request.param}", "--bootstrap", "50", "--seed", "3",
    ])
    assert code == 0
    return request.param, json.loads((out / "report.json").read_text())


def test_answer_and_span_f1_reach_the_measured_floors(run):
    cut, report = run
    answer_floor, span_floor = FLOORS[cut]
    judge = report["groups"]["overall"]["systems"]["judge"]
    assert judge["answer.f1"]["value"] >= answer_floor
    assert judge["span.f1"]["value"] >= span_floor
    qa = report["groups"]["QA"]["systems"]["judge"]
    assert qa["answer.f1"]["value"] == 1.0


# The judge itself.

def test_the_quote_judge_is_independent():
    tree = ast.parse(Path(quote_judge.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any(m.startswith(("rt4chart", "gold_judge")) for m in imported)


@pytest.fixture(scope="module")
def judge():
    return quote_judge.factory({"data": str(DATA)})


def _response(response_id: str) -> dict:
    return next(r for r in map(json.loads, (DATA / "response.jsonl").open())
                if r["id"] == response_id)


def _source(response_id: str) -> dict:
    sid = _response(response_id)["source_id"]
    return next(s for s in map(json.loads, (DATA / "source_info.jsonl").open())
                if s["source_id"] == sid)


def _record(response_id: str) -> str:
    return json.dumps(_source(response_id)["source_info"], indent=2, ensure_ascii=False)


@pytest.mark.parametrize("sentence", [
    "Sure!", "Here is a brief overview:", "(Passage 1)", "[1][3]", "## Details",
    "Unable to answer based on given passages.", "Let me know if you have any questions.",
    "If the passages lacked it, I would have replied with 'Unable to answer'.",
    "Therefore, I am able to answer the question based on the given passages.",
    "It may be best to consult additional resources or seek advice from a professional.",
])
def test_no_claim_for_sentences_that_assert_nothing(sentence):
    assert quote_judge.asserts_nothing(sentence)


@pytest.mark.parametrize("sentence", [
    "The answer is 42.", "The museum is popular with families.", "Take 500 mg twice a day.",
    "Passage 2 says the bridge opened in 1932.",
])
def test_claims_about_the_world_are_kept(sentence):
    assert not quote_judge.asserts_nothing(sentence)


def test_a_real_lead_in_gets_no_claim_and_a_fact_one_claim_of_its_own_words(judge):
    answer = _response("12916")["response"]
    lead = "Based on the given passages, the correct answer is:"
    assert asyncio.run(judge.decompose(lead, answer, "")) == []
    fact = answer.split("\n\n")[1]
    (claim,) = asyncio.run(judge.decompose(fact, answer, ""))
    assert claim == {"text": fact, "kind": "fact", "fragments": [fact]}


def test_absence_and_source_kinds():
    assert quote_judge.claim_kind("None mentioned in the passages.") == "absence"
    assert quote_judge.claim_kind("The passages do not say when the museum opened.") == "absence"
    assert quote_judge.claim_kind("Passage 2 says the bridge opened in 1932.") == "source"
    assert quote_judge.claim_kind("Based on the passages, it opened in 1990.") == "fact"


def test_verify_absence_answers_from_the_gold(judge):
    faithful = _response("12013")["response"]
    sentence = faithful.split(". ")[0] + "."
    context = _source("12013")["source_info"]["passages"]
    assert asyncio.run(judge.verify_absence(sentence, context, "")) == ("ENT", [])
    r = _response("584")
    span = r["labels"][0]["text"]
    label, quotes = asyncio.run(judge.verify_absence(span, _source("584")["source_info"], ""))
    assert label == "CON" and len(quotes) == 1


def test_one_verbatim_line_is_quoted(judge):
    record = _record("5820")
    label, quotes = asyncio.run(judge.verify_global(
        "It offers takeout.", record, "", "ENT", None))
    assert label == "ENT" and len(quotes) == 1
    assert quotes[0] in [line.strip() for line in record.splitlines()]
    assert "TakeOut" in quotes[0]


def test_cut_gold_gives_the_span_as_a_claim_and_baseless_claims_quote_nothing():
    judge = quote_judge.factory({"data": str(DATA), "cut": "gold"})
    r = _response("584")
    (span,) = r["labels"]
    answer = r["response"]
    start = answer.rfind(". ", 0, span["start"]) + 2
    end = answer.find(".", span["end"]) + 1
    claims = asyncio.run(judge.decompose(answer[start:end], answer, ""))
    assert [c["text"] for c in claims][0] == span["text"] and len(claims) == 2
    assert judge.label(span["text"], "") == "CON"
    baseless = _response("5673")["labels"][0]["text"]
    assert asyncio.run(judge.verify_global(baseless, _record("5673"), "", "NIC", None)) == (
        "NIC", [])


def test_bad_options_and_unknown_answers_fail():
    with pytest.raises(ValueError, match="cut="):
        quote_judge.factory({"data": str(DATA), "cut": "words"})
    judge = quote_judge.factory({"data": str(DATA)})
    with pytest.raises(LookupError):
        asyncio.run(judge.decompose("Hello.", "Hello. Not a RAGTruth answer.", ""))
