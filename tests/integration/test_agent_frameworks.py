"""Agents audited end to end (issue 50): traces a LangGraph and a LlamaIndex agent wrote through
OpenInference's instrumentors and the OpenTelemetry SDK (`tests/fakes/agent_traces.py`), and a
Langfuse export of an agent with tool observations, through `rt4chart audit` with judges that
say ENT only when a context sentence holds the claim."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.sources import otlp
from rt4chart.transforms.common.span_mapping import SpanMapping, trace_record

import agent_traces
from agent_traces import ASSISTANT_ONLY, CASE_ATTRIBUTE, CASES, PREMISE_VALUE, SESSION, SESSION_ID
from testutil import read_tables, write_jsonl

HONEST, PREMISE = "honest_judge:factory", "premise_value_judges:honest"


def run_audit(path: Path, out: Path, judge: str, *extra: str) -> dict[str, list[dict]]:
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["audit", str(path), "--out", str(out), "--judge", judge, *extra])
    assert code == 0, code
    return read_tables(out)


@pytest.fixture(scope="module")
def spans_file(tmp_path_factory) -> Path:
    return agent_traces.write(tmp_path_factory.mktemp("agents") / "agents.otlp.jsonl")


def records(path: Path) -> dict[str, dict]:
    """The trace records the file's spans make, by case id (no pipeline)."""
    by_trace: dict[str, list] = {}
    for line in path.read_text().splitlines():
        for span in otlp.line_spans(line):
            by_trace.setdefault(span.trace_id, []).append(span)
    mapping = SpanMapping(trace_id_attribute=CASE_ATTRIBUTE)
    made = [trace_record(spans, mapping) for spans in by_trace.values()]
    return {r["trace_id"]: r for r in made}


def labels(tables: dict) -> dict[str, str | None]:
    return {row["trace_id"]: row["label"] for row in tables["answers"]}


def test_framework_traces_are_audited_with_the_tool_results_as_evidence(spans_file, tmp_path):
    tables = run_audit(spans_file, tmp_path / "out", HONEST,
                       "--trace-id-attribute", CASE_ATTRIBUTE)
    assert tables["dead_letters"] == []
    found = labels(tables)
    assert set(found) == {c.case_id for c in CASES} | {t.case_id for t in SESSION}
    for case in CASES:
        assert (found[case.case_id] == "ENT") is case.faithful, case.case_id
        if case.faithful:
            claims = [c for c in tables["claims"] if c["trace_id"] == case.case_id]
            assert claims and all(e["doc_id"] == f"tool:{case.tool}#call_{case.case_id}"
                                  for c in claims for e in c["evidence"])
            assert all(c["evidence"] for c in claims)


def test_each_turn_of_a_session_keeps_its_session_and_only_the_users_turns(spans_file):
    made = records(spans_file)
    for i, turn in enumerate(SESSION):
        record = made[turn.case_id]
        assert record["metadata"]["session_id"] == SESSION_ID
        assert [t["content"] for t in record.get("conversation", [])] == [
            t.question for t in SESSION[:i]]
        assert ASSISTANT_ONLY not in json.dumps(record["contexts"])
        assert ASSISTANT_ONLY not in json.dumps(record.get("conversation", []))


def test_a_follow_up_restating_an_earlier_users_setting_passes_and_an_assistant_turn_is_no_evidence(
        spans_file, tmp_path):
    tables = run_audit(spans_file, tmp_path / "out", PREMISE,
                       "--trace-id-attribute", CASE_ATTRIBUTE)
    found = labels(tables)
    follow_up, repeat = SESSION[1], SESSION[2]
    assert found[follow_up.case_id] == "ENT"
    notes = [c["note"] or "" for c in tables["claims"] if c["trace_id"] == follow_up.case_id]
    assert any(f"number {PREMISE_VALUE}" in note and "premise" in note for note in notes)
    # What only the assistant said (turn 1) is flagged wherever an answer repeats it.
    assert found[repeat.case_id] != "ENT" and found[SESSION[0].case_id] != "ENT"
    quotes = [e for c in tables["claims"] for e in c["evidence"]]
    assert quotes and all(e["doc_id"].startswith("tool:") and ASSISTANT_ONLY not in e["text"]
                          for e in quotes)
    # Read alone, without the conversation, the same follow-up is flagged: the model year is
    # then nobody's setting.
    alone = write_jsonl(tmp_path / "alone.jsonl", [{
        "trace_id": follow_up.case_id, "question": follow_up.question,
        "answer": follow_up.answer, "timestamp": "2026-12-01T10:00:00Z",
        "contexts": [{"tool": follow_up.tool, "text": follow_up.result}]}])
    assert labels(run_audit(alone, tmp_path / "alone", PREMISE)) == {follow_up.case_id: "NIC"}


def test_a_failed_tool_is_an_empty_retrieval_not_a_dead_letter(tmp_path):
    """A LangGraph tool that raises: the agent goes on with the error as its tool message;
    the error is no evidence, and no document or result is left."""
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.prebuilt import ToolNode, create_react_agent
    from openinference.instrumentation.langchain import LangChainInstrumentor

    from otlp_file_exporter import file_tracer_provider

    @tool
    def get_order_status(order_id: str) -> str:
        """Look up an order."""
        raise ConnectionError("order service unreachable")

    path = tmp_path / "failed.otlp.jsonl"
    provider = file_tracer_provider(path)
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        model = agent_traces._fake_chat_model([
            AIMessage(content="", tool_calls=[{"name": "get_order_status",
                                               "args": {"order_id": "A17"}, "id": "call_9"}]),
            AIMessage(content="Order A17 has shipped.")])
        agent = create_react_agent(model, ToolNode([get_order_status], handle_tool_errors=True))
        out = agent.invoke({"messages": [("user", "Where is my order A17?")]},
                           {"metadata": {"case": "failed"}})
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
    assert "unreachable" in out["messages"][2].content  # the model was shown the error
    record = records(path)["failed"]
    assert record["contexts"] == [] and record["answer"] == "Order A17 has shipped."


def langfuse_agent_export() -> dict:
    """A Langfuse API page: one agent trace, its generation asking for a tool, the TOOL
    observation, and the final generation given the tool's result as a message; a second turn
    of the same session restating the user's earlier setting."""
    result = "The Kona Electric charges from 10 to 80 percent in 47 minutes at a fast charger."
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_7", "type": "function",
         "function": {"name": "get_charging_time", "arguments": '{"model": "Kona"}'}}]}
    earlier = [{"role": "user", "content": "I have a 2019 Kona Electric. How far can it go?"},
               {"role": "assistant", "content": "It has a range of 484 km. Charging is free."}]
    question = {"role": "user", "content": "And how long does charging take?"}
    answer = "Your 2019 Kona Electric charges from 10 to 80 percent in 47 minutes."
    observations = [
        {"id": "g1", "type": "GENERATION", "name": "plan", "model": "gpt-x",
         "startTime": "2026-12-01T10:00:01Z", "endTime": "2026-12-01T10:00:02Z",
         "input": [*earlier, question], "output": call},
        {"id": "t1", "type": "TOOL", "name": "get_charging_time",
         "startTime": "2026-12-01T10:00:03Z", "endTime": "2026-12-01T10:00:04Z",
         "input": {"model": "Kona"}, "output": {"summary": result}},
        {"id": "t2", "type": "TOOL", "name": "get_discounts", "level": "ERROR",
         "startTime": "2026-12-01T10:00:03Z", "endTime": "2026-12-01T10:00:04Z",
         "output": "Charging is free for all owners."},
        {"id": "g2", "type": "GENERATION", "name": "answer", "model": "gpt-x",
         "startTime": "2026-12-01T10:00:05Z", "endTime": "2026-12-01T10:00:06Z",
         "input": [*earlier, question, call,
                   {"role": "tool", "tool_call_id": "call_7",
                    "content": json.dumps({"summary": result})}],
         "output": {"role": "assistant", "content": answer}}]
    return {"data": [{"id": "lf-turn-2", "timestamp": "2026-12-01T10:00:00Z",
                      "name": "support-agent", "sessionId": "lf-session",
                      "input": [question], "output": answer, "observations": observations}]}


def test_langfuse_observations_with_tools(tmp_path):
    path = tmp_path / "langfuse.json"
    path.write_text(json.dumps(langfuse_agent_export()))
    tables = run_audit(path, tmp_path / "out", PREMISE)
    assert tables["dead_letters"] == [] and labels(tables) == {"lf-turn-2": "ENT"}
    evidence = {e["doc_id"] for c in tables["claims"] for e in c["evidence"]}
    assert evidence == {"tool:get_charging_time#call_7"}
    # The failed tool's output and the assistant's earlier turn are neither evidence nor the
    # user's setting: an answer repeating them is flagged.
    with_both = langfuse_agent_export()
    with_both["data"][0]["id"] = "lf-free"
    with_both["data"][0]["observations"][-1]["output"]["content"] = "Charging is free."
    path.write_text(json.dumps(with_both))
    assert labels(run_audit(path, tmp_path / "free", PREMISE)) == {"lf-free": "NIC"}
