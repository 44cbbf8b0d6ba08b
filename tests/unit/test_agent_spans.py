"""An agent's trace: its tool results are the contexts, its earlier user turns the user's
setting, its assistant messages neither (transforms/common/agent_spans.py, issue 50), on spans
built by hand; the frameworks' own spans are in tests/integration/test_agent_frameworks.py."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rt4chart.schemas.spans import SPAN_FAILED
from rt4chart.transforms.common.agent_spans import structured, tool_contexts, tool_results
from rt4chart.transforms.common.limits import MAX_CONVERSATION_CHARS
from rt4chart.transforms.common.span_mapping import SpanMapping, Unassembled, trace_record
from rt4chart.transforms.validate import parse_trace

from span_builders import retriever, span

QUESTION = "Where is my order A17?"
RESULT = {"order_id": "A17", "status": "shipped", "carrier": "DHL"}
# What a LangGraph agent's root holds: its message state, not a question or an answer.
STATE = json.dumps({"messages": [{"type": "human", "data": {"content": QUESTION}}]})


def messages(prefix: str, *items: dict) -> dict:
    """Flattened OpenInference messages: {role, content, tool_call_id, name, calls: [(id,
    name, arguments)]} each."""
    out = {}
    for i, item in enumerate(items):
        head = f"{prefix}.{i}.message."
        for key in ("role", "content", "tool_call_id", "name"):
            if key in item:
                out[head + key] = item[key]
        for j, (call_id, name, arguments) in enumerate(item.get("calls", ())):
            out[f"{head}tool_calls.{j}.tool_call.id"] = call_id
            out[f"{head}tool_calls.{j}.tool_call.function.name"] = name
            out[f"{head}tool_calls.{j}.tool_call.function.arguments"] = arguments
    return {k.replace(".", "__"): v for k, v in out.items()}


def llm(span_id: str, start: int, inputs: list[dict], outputs: list[dict]) -> object:
    return span(span_id, "agent", "LLM", start, start + 5,
                **messages("llm.input_messages", *inputs),
                **messages("llm.output_messages", *outputs))


ROOT = span("root", kind="CHAIN", start=0, end=100, input__value=STATE,
            input__mime_type="application/json", output__value=STATE,
            output__mime_type="application/json", session__id="sess-9")
AGENT = span("agent", "root", "AGENT", 1, 99)
USER = {"role": "user", "content": QUESTION}
CALL = {"role": "assistant", "content": "Let me check: the order is probably lost.",
        "calls": [("call_1", "get_order_status", '{"order_id": "A17", "note": "lost?"}')]}
FIRST = llm("llm1", 10, [{"role": "system", "content": "Use the tools."}, USER], [CALL])
TOOL_SPAN = span("tool1", "agent", "TOOL", 20, 25, tool__name="get_order_status",
                 input__value='{"order_id": "A17"}', output__value=json.dumps(RESULT))
TOOL_MESSAGE = {"role": "tool", "content": json.dumps(RESULT), "tool_call_id": "call_1"}
ANSWER = "Your order A17 has shipped with DHL."
FINAL = llm("llm2", 30, [{"role": "system", "content": "Use the tools."}, USER, CALL,
                         TOOL_MESSAGE], [{"role": "assistant", "content": ANSWER}])


def test_a_tool_result_seen_as_span_and_message_is_one_context_naming_its_tool_and_call():
    record = trace_record([ROOT, AGENT, FIRST, TOOL_SPAN, FINAL], SpanMapping())
    assert record["contexts"] == [{"doc_id": "tool:get_order_status#call_1", "text": RESULT,
                                   "tool": "get_order_status", "call_id": "call_1"}]
    # The framework's state on the root is neither the question nor the answer.
    assert (record["question"], record["answer"]) == (QUESTION, ANSWER)
    assert record["metadata"] == {"session_id": "sess-9"}
    trace = parse_trace(record)
    assert [(d.doc_id, d.tool, d.call_id) for d in trace.contexts] == [
        ("tool:get_order_status#call_1", "get_order_status", "call_1")]
    assert '"carrier": "DHL"' in trace.contexts[0].text  # rendered as a Data2txt record is


def test_reasoning_arguments_and_the_system_prompt_are_never_evidence():
    record = trace_record([ROOT, AGENT, FIRST, TOOL_SPAN, FINAL], SpanMapping())
    every = json.dumps(record["contexts"])
    assert "probably lost" not in every and "lost?" not in every and "Use the tools" not in every


def test_only_what_was_gathered_before_the_final_generator_is_evidence():
    late = span("tool2", "agent", "TOOL", 40, 45, tool__name="audit_log",
                output__value="Order A17 was refunded.")
    nested = span("tool3", "tool1", "TOOL", 21, 22, tool__name="db_query",
                  output__value="raw row 17")
    record = trace_record([ROOT, AGENT, FIRST, TOOL_SPAN, nested, FINAL, late], SpanMapping())
    assert [c["doc_id"] for c in record["contexts"]] == ["tool:get_order_status#call_1"]


def test_tools_and_retrievers_together_and_an_id_taken_twice():
    docs = retriever("r1", ("tool:get_order_status#call_1", "Orders ship within 2 days."),
                     start=5)
    record = trace_record([ROOT, AGENT, docs, FIRST, TOOL_SPAN, FINAL], SpanMapping())
    assert [c["doc_id"] for c in record["contexts"]] == [
        "tool:get_order_status#call_1", "tool:get_order_status#call_1~2"]
    assert len({d.doc_id for d in parse_trace(record).contexts}) == 2


@pytest.mark.parametrize("output, failed", [
    ("", False), ("  ", False), ("{}", False), ("[]", False),
    ("Error: order service timed out", True),
    (json.dumps({"type": "tool", "data": {"content": "Error: boom", "status": "error",
                                          "tool_call_id": "call_1"}}), False),
    (json.dumps({"blocks": [{"text": "boom"}], "tool_name": "get_order_status",
                 "raw_output": None, "is_error": True}), False),
])
def test_an_empty_or_failed_tool_result_is_an_empty_retrieval_not_a_dead_letter(output, failed):
    extra = {SPAN_FAILED.replace(".", "__"): True} if failed else {}
    tool = span("tool1", "agent", "TOOL", 20, 25, tool__name="get_order_status",
                output__value=output, output__mime_type="application/json", **extra)
    message = {**TOOL_MESSAGE, "content": output if not output.startswith('{"') else "boom"}
    final = llm("llm2", 30, [USER, CALL, message], [{"role": "assistant", "content": ANSWER}])
    record = trace_record([ROOT, AGENT, FIRST, tool, final], SpanMapping())
    assert record["contexts"] == [] and record["answer"] == ANSWER


def test_a_trace_without_tools_or_retriever_is_still_a_dead_letter():
    plain = llm("llm2", 30, [USER], [{"role": "assistant", "content": ANSWER}])
    with pytest.raises(Unassembled, match="^no retriever span"):
        trace_record([ROOT, AGENT, plain], SpanMapping())


def test_a_tool_span_without_call_id_matches_its_message_by_text_and_the_call_names_it():
    # LlamaIndex: the message has only the call id; the name is the assistant's tool call's.
    tool = span("tool1", "agent", "TOOL", 20, 25, tool__name="get_order_status",
                output__value=json.dumps({"blocks": [{"text": repr(RESULT)}],
                                          "tool_name": "get_order_status",
                                          "raw_output": RESULT, "is_error": False}),
                output__mime_type="application/json")
    message = {"role": "tool", "content": repr(RESULT), "tool_call_id": "call_1"}
    final = llm("llm2", 30, [USER, CALL, message], [{"role": "assistant", "content": ANSWER}])
    record = trace_record([ROOT, AGENT, FIRST, tool, final], SpanMapping())
    # One context, read as the structure whose repr the model was shown.
    assert record["contexts"] == [{"doc_id": "tool:get_order_status#call_1", "text": RESULT,
                                   "tool": "get_order_status", "call_id": "call_1"}]


def test_a_repr_that_is_not_exactly_the_raw_output_stays_text():
    shown = "{'order_id': 'A17', 'status': 'shipped'}"  # a field left out of what was shown
    tool = span("tool1", "agent", "TOOL", 20, 25, tool__name="get_order_status",
                output__value=json.dumps({"blocks": [{"text": shown}],
                                          "tool_name": "get_order_status",
                                          "raw_output": RESULT, "is_error": False}),
                output__mime_type="application/json")
    assert [r.value for r in tool_results([tool], None)] == [shown]


def test_earlier_user_turns_are_the_conversation_and_assistant_turns_are_not_kept():
    history = [{"role": "user", "content": "I live in Berlin since 2006."},
               {"role": "assistant", "content": "Noted: your parcel locker is 4411."}]
    final = llm("llm2", 30, [*history, USER, CALL, TOOL_MESSAGE],
                [{"role": "assistant", "content": ANSWER}])
    record = trace_record([ROOT, AGENT, FIRST, TOOL_SPAN, final], SpanMapping())
    assert record["conversation"] == [{"role": "user", "content": "I live in Berlin since 2006."}]
    assert "4411" not in json.dumps(record)
    trace = parse_trace(record)
    assert trace.conversation == ("I live in Berlin since 2006.",)
    assert trace.user_text == "I live in Berlin since 2006.\n" + QUESTION


def test_the_latest_user_turns_are_kept_within_the_limit_and_the_rest_counted():
    turn = "x" * (MAX_CONVERSATION_CHARS // 3)
    history = [{"role": "user", "content": f"{i} {turn}"} for i in range(5)]
    final = llm("llm2", 30, [*history, USER, CALL, TOOL_MESSAGE],
                [{"role": "assistant", "content": ANSWER}])
    record = trace_record([ROOT, AGENT, FIRST, TOOL_SPAN, final], SpanMapping())
    kept = [t["content"] for t in record["conversation"]]
    assert [k.split()[0] for k in kept] == ["3", "4"]
    assert record["metadata"]["conversation_turns_left_out"] == "3"
    assert parse_trace(record).conversation == tuple(kept)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=12)


@given(st.dictionaries(st.text(max_size=8), json_values, max_size=5)
       | st.lists(json_values, max_size=5))
def test_a_json_tool_result_is_read_as_its_structure(value):
    assert structured(orjson.dumps(value).decode()) == value


@given(st.text(max_size=60))
def test_text_that_is_not_a_json_object_or_array_stays_as_it_is(text):
    read = structured(text)
    assert read == text or (isinstance(read, dict | list)
                            and read == orjson.loads(text.strip()))


@given(st.lists(st.tuples(st.sampled_from(["lookup", "search", "weather"]),
                          st.text("abc123", min_size=1, max_size=6),
                          st.sampled_from(["message", "span", "both"])),
                max_size=6, unique_by=lambda t: t[1]))
def test_each_call_is_one_context_however_often_it_was_seen(calls):
    """Each call's result, seen as a message, a span or both, is one context named by its
    tool and call id; nothing else is a context."""
    inputs, spans = [USER], [ROOT, AGENT]
    for i, (name, call_id, seen) in enumerate(calls):
        text = f"result {i} of {name}"
        if seen in ("message", "both"):
            inputs.append({"role": "tool", "content": text, "tool_call_id": call_id,
                           "name": name})
        if seen in ("span", "both"):
            spans.append(span(f"t{i}", "agent", "TOOL", 10 + i, 11 + i, tool__name=name,
                              output__value=json.dumps({"type": "tool", "data": {
                                  "content": text, "tool_call_id": call_id}}),
                              output__mime_type="application/json"))
    final = llm("llm2", 30, inputs, [{"role": "assistant", "content": ANSWER}])
    contexts = tool_contexts(spans + [final], final)
    assert sorted(c["doc_id"] for c in contexts) == sorted(
        f"tool:{name}#{call_id}" for name, call_id, _ in calls)
    assert all(c["text"].startswith("result ") for c in contexts)
