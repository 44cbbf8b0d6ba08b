"""The repeated-key check of JSON records (transforms/checks/json_text.py): a record whose object
repeats a key, at any depth, is refused naming the key; any other record reads as the standard
library reads it. Hypothesis writes the texts, with repeated keys, colons inside strings and
keys, and keys or colons written as \\u escapes (which the fast check cannot see through)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rt4chart.transforms.common.fields import InvalidTrace
from rt4chart.transforms.validate import load_json, parse_trace

KEYS = st.sampled_from(["a", "b", ":", "a:b", "answer", "é", ""])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30),
                    st.sampled_from(["", ":", "x:y", "::", "a", "\u00e9:"]))


def _string(text: str, escape: list[bool]) -> str:
    """`text` as a JSON string, each character written as a \\u escape where `escape` says."""
    out = []
    for ch, esc in zip(text, escape + [False] * len(text), strict=False):
        out.append(f"\\u{ord(ch):04x}" if esc and ord(ch) < 0x10000
                   else json.dumps(ch, ensure_ascii=False)[1:-1])
    return '"' + "".join(out) + '"'


STRING_TEXTS = SCALARS.filter(lambda v: isinstance(v, str))


@st.composite
def _strings(draw):
    text = draw(STRING_TEXTS)
    return _string(text, draw(st.lists(st.booleans(), max_size=len(text))))


@st.composite
def _keys(draw):
    key = draw(KEYS)
    return _string(key, draw(st.lists(st.booleans(), max_size=len(key))))


def _value(children):
    scalar = st.one_of(SCALARS.filter(lambda v: not isinstance(v, str)).map(json.dumps),
                       _strings())
    return st.one_of(
        scalar,
        st.lists(children, max_size=4).map(lambda items: "[" + ", ".join(items) + "]"),
        st.lists(st.tuples(_keys(), children), max_size=4).map(
            lambda pairs: "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"),
    )


TEXTS = st.recursive(st.one_of(SCALARS.map(json.dumps), _strings()), _value, max_leaves=20)


def _reference(text: str):
    """(the standard library's value, whether some object repeats a key)."""
    repeated = []

    def pairs(items):
        keys = [k for k, _ in items]
        repeated.extend(k for k in keys if keys.count(k) > 1)
        return dict(items)

    return json.loads(text, object_pairs_hook=pairs), bool(repeated)


@settings(max_examples=400, deadline=None)
@given(text=TEXTS, as_bytes=st.booleans())
def test_a_repeated_key_is_refused_at_any_depth_and_nothing_else_is(text, as_bytes):
    value, repeated = _reference(text)
    data = text.encode() if as_bytes else text
    if repeated:
        with pytest.raises(InvalidTrace, match="appears more than once"):
            load_json(data)
    else:
        assert load_json(data) == value


@pytest.mark.parametrize("line, where", [
    # issue 33, defect 4: the last copy was audited (30 days -> ENT) without a word
    ('{"trace_id": "t", "contexts": ["The trial lasts 14 days."], '
     '"answer": "The free trial lasts 30 days.", "answer": "The free trial lasts 14 days."}',
     "key 'answer' of the record"),
    ('{"trace_id": "t", "contexts": ["A."], "contexts": ["B."], "answer": "a"}',
     "key 'contexts' of the record"),
    ('{"trace_id": "t1", "trace_id": "t2", "contexts": ["A."], "answer": "a"}',
     "key 'trace_id' of the record"),
    ('{"trace_id": "t", "contexts": [{"doc_id": "a", "text": "A.", "text": "B."}], '
     '"answer": "a"}',
     "key 'text' of contexts[0]"),
    ('{"trace_id": "t", "contexts": ["A."], "answer": "a", "metadata": {"k": "1", "k": "2"}}',
     "key 'k' of metadata"),
    ('{"trace_id": "t", "contexts": ["A."], "answer": "a", "\\u0061nswer": "b"}',
     "key 'answer' of the record"),  # the same key, written another way
])
def test_a_record_repeating_a_key_is_not_a_trace(line, where):
    with pytest.raises(InvalidTrace, match=re.escape(f"{where} appears more than once")):
        parse_trace(line)


def test_colons_in_strings_and_keys_do_not_look_like_repeated_keys():
    line = ('{"trace_id": "t:1", "contexts": ["At 9:30: open.", {"doc_id": "a:b", "text": '
            '"x\\u003a y"}], "answer": "It opens at 9:30.", "metadata": {"k:": ":"}}')
    trace = parse_trace(line)
    assert trace.trace_id == "t:1" and trace.raw == line


def test_span_records_repeating_a_key_are_refused_too():
    """OpenInference span lines and OTLP JSON objects are read by the same rule: an attribute
    given twice (which output.value is the answer?) is no span."""
    from rt4chart.pipeline.sources import otlp, phoenix
    from rt4chart.pipeline.sources.common import SpanDecodeError

    line = ('{"context": {"trace_id": "a", "span_id": "b"}, "name": "llm", '
            '"attributes": {"output.value": "30 days", "output.value": "14 days"}}')
    with pytest.raises(SpanDecodeError, match=re.escape(
            "key 'output.value' of attributes appears more than once")):
        phoenix.line_spans(line)
    otlp_json = '{"resourceSpans": [], "resourceSpans": [{"scopeSpans": []}]}'
    with pytest.raises(SpanDecodeError, match="key 'resourceSpans' of the record appears"):
        otlp.json_spans(otlp_json)
