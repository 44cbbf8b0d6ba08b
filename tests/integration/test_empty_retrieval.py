"""An empty retrieval (`contexts: []`) is data: audited, never a dead letter.

Its checkable claims are NIC, "nothing was retrieved", decided without a verification call
(there is nothing to verify against; decomposition still runs); a refusal, or an absence claim
("the documents do not mention X"), is ENT. The route's rates count it, the answers table flags
it, and the summary and the report show the figure. Through the real openai client against the
local fake server; JSON lines, Parquet and the Python API's records alike. A missing or
malformed `contexts` stays a dead letter.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

import rt4chart
from rt4chart.pipeline.cli import main as cli

from fake_openai_server import FakeOpenAI, lexical_responder, schema_name_of, tag
from testutil import write_jsonl

QUESTION = "When did the city museum open?"
FACTS = "The city museum opened in 1990. It holds about 4,000 paintings."
# A refusal as the assertion classifier reads one (every word discourse: text/assertion.py).
# "I don't know, nothing was found." is not one to it: "found" is outside the closed discourse
# vocabulary, so that sentence is checked, and with nothing retrieved it is flagged NIC.
REFUSAL = "I'm sorry, I could not find anything about that."
ABSENT = "The documents do not mention when the museum opened."
TRACES = [
    {"trace_id": "er-facts", "route": "museum", "question": QUESTION, "contexts": [],
     "answer": FACTS},
    {"trace_id": "er-refusal", "route": "museum", "question": QUESTION, "contexts": [],
     "answer": REFUSAL},
    {"trace_id": "er-absent", "route": "museum", "question": QUESTION, "contexts": [],
     "answer": ABSENT},
]


def responder(body: dict) -> dict:
    """A model that follows the decomposition prompt: a refusal has no claims, a sentence
    saying the sources lack something is one absence claim; the rest as the lexical fake."""
    if schema_name_of(body) == "decompose":
        sentence = tag(body["messages"][-1]["content"], "sentence") or ""
        if sentence == REFUSAL:
            return {"reasoning": "a refusal", "claims": []}
        if sentence == ABSENT:
            return {"reasoning": "absence", "claims": [
                {"text": "The documents do not mention the museum's opening date.",
                 "kind": "absence", "fragments": ["The documents do not mention"]}]}
    return lexical_responder(body)


def _checked(tables: dict, server: FakeOpenAI) -> None:
    answers = {a["trace_id"]: a for a in tables["answers"]}
    facts, refusal, absent = answers["er-facts"], answers["er-refusal"], answers["er-absent"]
    assert all(a["empty_retrieval"] and a["status"] == "ok" for a in answers.values())
    assert facts["label"] == "NIC" and facts["hallucinated"]
    assert refusal["label"] == "ENT" and not refusal["hallucinated"]
    assert absent["label"] == "ENT" and not absent["hallucinated"]
    claims = [c for c in tables["claims"] if c["trace_id"] == "er-facts"]
    assert len(claims) == 2
    assert all(c["label"] == "NIC" and c["note"] == "nothing was retrieved" for c in claims)
    assert not tables["dead_letters"]
    # Decomposition ran; nothing was verified: there was nothing to verify against.
    assert server.requests and {schema_name_of(b) for b in server.requests} == {"decompose"}


def _run(tmp_path, audit, path, name: str):
    with FakeOpenAI(responder) as server:
        code, tables, out = audit(str(path), "--judge", "openai", "--base-url",
                                  server.base_url, "--model", "gpt-4o-mini", out=tmp_path / name)
    return code, tables, out, server


def test_an_empty_retrieval_with_facts_is_flagged_and_a_refusal_is_not(tmp_path, audit, capsys):
    path = write_jsonl(tmp_path / "t.jsonl", TRACES)
    code, tables, out, server = _run(tmp_path, audit, path, "jsonl")
    assert code == 0
    _checked(tables, server)
    (rates,) = [r for r in tables["route_rates"] if r["route"] == "museum"]
    assert (rates["traces"], rates["hallucinated"], rates["nic"]) == (3, 1, 1)
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["empty_retrievals"], summary["empty_retrievals_flagged"]) == (3, 1)
    assert "empty retrievals: 3 answer(s) whose retrieval returned nothing, 1 flagged" in (
        capsys.readouterr().out)
    report = tmp_path / "report.html"
    assert cli.main(["report", str(out), "--out", str(report)]) == 0
    html = report.read_text()
    assert "Empty retrievals" in html and "3 (1 flagged)" in html


def test_parquet_rows_with_an_empty_contexts_list_are_audited_alike(tmp_path, audit):
    path = tmp_path / "t.parquet"
    contexts = pa.list_(pa.struct([("doc_id", pa.string()), ("text", pa.string())]))
    pq.write_table(pa.table({
        "trace_id": [t["trace_id"] for t in TRACES], "route": [t["route"] for t in TRACES],
        "question": [t["question"] for t in TRACES], "answer": [t["answer"] for t in TRACES],
        "contexts": pa.array([[] for _ in TRACES], contexts)}), path)
    code, tables, _, server = _run(tmp_path, audit, path, "parquet")
    assert code == 0
    _checked(tables, server)


def test_python_api_records_with_empty_contexts_are_audited(tmp_path):
    with FakeOpenAI(responder) as server:
        result = rt4chart.audit(TRACES[:2], "openai", base_url=server.base_url,
                                model="gpt-4o-mini")
    answers = {a.trace_id: a for a in result.answers}
    assert answers["er-facts"].label == "NIC" and answers["er-refusal"].label == "ENT"
    assert answers["er-facts"].empty_retrieval and answers["er-refusal"].empty_retrieval


def test_a_missing_or_malformed_contexts_field_stays_a_dead_letter(tmp_path, audit):
    bad = [{"trace_id": "no-ctx", "answer": FACTS},
           {"trace_id": "null-ctx", "answer": FACTS, "contexts": None},
           {"trace_id": "str-ctx", "answer": FACTS, "contexts": "The museum opened in 1990."}]
    path = write_jsonl(tmp_path / "t.jsonl", [*bad, TRACES[0]])
    code, tables, _, _ = _run(tmp_path, audit, path, "bad")
    assert code == 0
    assert [a["trace_id"] for a in tables["answers"]] == ["er-facts"]
    dead = {d["trace_id"]: d["reason"] for d in tables["dead_letters"]}
    assert set(dead) == {"no-ctx", "null-ctx", "str-ctx"}
    assert all("'contexts' must be a list" in r for r in dead.values())
