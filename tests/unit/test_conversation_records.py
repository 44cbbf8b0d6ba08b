"""rt4chart's own records with an agent's fields (issue 50): a context naming its tool and call,
the earlier turns of a conversation (`conversation` or `history`); records without them read
as before."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rt4chart.transforms.common.limits import MAX_CONVERSATION_CHARS
from rt4chart.transforms.validate import InvalidTrace, parse_trace, trace_record

BASE = {"trace_id": "t1", "timestamp": "2026-01-05T10:00:00Z", "question": "and for children?",
        "contexts": ["Adults take 500 mg."], "answer": "Children take 250 mg."}


def test_a_record_without_the_new_fields_reads_as_before():
    trace = parse_trace(dict(BASE))
    assert trace.conversation == () and trace.user_text == "and for children?"
    assert [(d.doc_id, d.tool, d.call_id) for d in trace.contexts] == [("doc0", None, None)]
    assert "conversation" not in trace_record(trace)


def test_a_context_names_its_tool_and_call_and_gets_its_id_from_them():
    record = {**BASE, "contexts": [
        {"tool": "get_order_status", "call_id": "call_1", "text": {"status": "shipped"}},
        {"tool": "get_order_status", "text": "no such order"},
        {"doc_id": "kb-7", "tool": "search", "call_id": 3, "text": "Policy."}]}
    trace = parse_trace(record)
    assert [(d.doc_id, d.tool, d.call_id) for d in trace.contexts] == [
        ("tool:get_order_status#call_1", "get_order_status", "call_1"),
        ("tool:get_order_status#1", "get_order_status", None),
        ("kb-7", "search", "3")]
    assert '"status": "shipped"' in trace.contexts[0].text
    assert parse_trace(trace_record(trace)) == trace


@pytest.mark.parametrize("context, reason", [
    ({"tool": "", "text": "x"}, "tool must be a non-empty string"),
    ({"tool": 5, "text": "x"}, "tool must be a non-empty string"),
    ({"call_id": "c1", "text": "x"}, "has a call_id but no tool"),
    ({"tool": "t", "call_id": True, "text": "x"}, "call_id must be a string or an integer"),
    ({"tool": "t", "call_id": ["c"], "text": "x"}, "call_id must be a string or an integer"),
])
def test_a_bad_tool_field_is_refused_with_its_reason(context, reason):
    with pytest.raises(InvalidTrace, match=reason):
        parse_trace({**BASE, "contexts": [context]})


def test_the_users_earlier_turns_are_kept_and_the_assistants_left_out():
    for name in ("conversation", "history"):
        trace = parse_trace({**BASE, name: [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "How much amoxicillin does my 30 kg son take?"},
            {"role": "assistant", "content": "He takes 400 mg a day."},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
            {"role": "tool", "content": [{"type": "tool_result", "id": "c1"}]},
            {"role": "human", "content": [{"type": "text", "text": "He is 8."}]}]})
        assert trace.conversation == ("How much amoxicillin does my 30 kg son take?",
                                      "He is 8.")
        assert trace.user_text == ("How much amoxicillin does my 30 kg son take?\nHe is 8.\n"
                                   "and for children?")
        assert "400 mg" not in trace.user_text
        assert parse_trace(trace_record(trace)) == trace


@pytest.mark.parametrize("extra, reason", [
    ({"conversation": [], "history": []}, "not both"),
    ({"conversation": "hi"}, "must be a list"),
    ({"conversation": ["hi"]}, r"conversation\[0\] must be an object with a string 'role'"),
    ({"history": [{"content": "hi"}]}, r"history\[0\] must be an object"),
    ({"conversation": [{"role": "user", "content": 5}]}, "must be a string or a list"),
    ({"conversation": [{"role": "user", "content": [{"image": "x"}]}]}, "part with 'text'"),
    ({"conversation": [{"role": "user", "content": "\ud800"}]}, "lone surrogate"),
    ({"conversation": [{"role": "user", "content": "x" * (MAX_CONVERSATION_CHARS + 1)}]},
     "the limit is"),
])
def test_a_bad_conversation_is_refused_with_its_reason(extra, reason):
    with pytest.raises(InvalidTrace, match=reason):
        parse_trace({**BASE, **extra})


turns = st.lists(st.fixed_dictionaries({
    "role": st.sampled_from(["user", "assistant", "system", "tool", "User", "human"]),
    "content": st.text(max_size=30)}), max_size=6)


@given(turns)
def test_only_user_turns_are_ever_read_and_the_record_round_trips(history):
    trace = parse_trace({**BASE, "history": history})
    users = [t["content"] for t in history if t["role"].lower() in ("user", "human")]
    assert trace.conversation == tuple(u for u in users if u.strip())
    others = {t["content"] for t in history if t["role"].lower() not in ("user", "human")}
    for other in others - set(users):
        if other.strip() and other not in BASE["question"]:
            assert other not in trace.conversation
    assert parse_trace(trace_record(trace)) == trace


names = st.text(st.characters(blacklist_characters="#", blacklist_categories=("Cs",)),
                min_size=1, max_size=40)


@given(names, names)
def test_a_tool_doc_id_names_its_tool(tool, call):
    from rt4chart.transforms.common.fields import tool_doc_id, tool_of
    from rt4chart.transforms.common.limits import MAX_DOC_ID_CHARS

    assert tool_of(tool_doc_id(tool, call)) == tool
    assert len(tool_doc_id(tool * 50, call * 50)) <= MAX_DOC_ID_CHARS
    assert tool_of(call) is None or call.startswith("tool:")
