from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from rt4chart.schemas.records import Trace, TraceKey
from rt4chart.transforms.common.limits import (
    MAX_JSON_DEPTH,
    MAX_METADATA_CHARS,
    MAX_METADATA_ENTRIES,
    MAX_QUESTION_CHARS,
    MAX_ROUTE_CHARS,
    MAX_TRACE_ID_CHARS,
)
from rt4chart.transforms.validate import InvalidTrace, parse_timestamp, parse_trace, trace_record

BASE = {"trace_id": "t1", "contexts": ["Ctx."], "answer": "Ans."}


def test_defaults_and_string_contexts():
    before_us = time.time_ns() // 1000
    t = parse_trace(dict(BASE))
    after_us = time.time_ns() // 1000
    assert (t.route, t.question, t.task, t.metadata) == ("default", "", None, ())
    assert [(d.doc_id, d.text) for d in t.contexts] == [("doc0", "Ctx.")]
    assert before_us <= t.event_time_us <= after_us  # no timestamp: the time it was parsed


def test_full_record_from_json_text():
    line = ('{"trace_id": "x", "route": "r", "timestamp": "2024-05-01T09:30:00+02:00", '
            '"question": "q", "contexts": [{"doc_id": "d", "text": "c"}, {"text": "e"}], '
            '"answer": "a", "task": "QA", "generator": "g", "metadata": {"k": 1}}')
    t = parse_trace(line)
    assert t.event_time_us == int(datetime(2024, 5, 1, 7, 30, tzinfo=UTC).timestamp() * 1e6)
    assert [d.doc_id for d in t.contexts] == ["d", "doc1"]
    assert t.metadata == (("k", "1"),) and t.task == "QA"


def test_timestamps():
    assert parse_timestamp("2024-01-01T00:00:00Z") == 1704067200 * 1_000_000
    naive = datetime(2024, 1, 1)
    assert parse_timestamp(naive) == 1704067200 * 1_000_000  # naive Parquet time is UTC
    aware = datetime(2024, 1, 1, 1, tzinfo=timezone(timedelta(hours=1)))
    assert parse_timestamp(aware) == 1704067200 * 1_000_000
    with pytest.raises(InvalidTrace):
        parse_timestamp(12.5)


@pytest.mark.parametrize("patch,reason", [
    ({"trace_id": ""}, "empty"),
    ({"trace_id": 7}, "must be a string"),
    ({"route": ["a"]}, "must be a string"),
    ({"contexts": "text"}, "must be a list"),
    ({"contexts": None}, "must be a list"),
    ({"contexts": {"doc_id": "a", "text": "t"}}, "must be a list"),
    ({"contexts": [3]}, "string or an object"),
    ({"metadata": "k=v"}, "map"),
])
def test_invalid_fields(patch, reason):
    with pytest.raises(InvalidTrace, match=reason):
        parse_trace({**BASE, **patch})


def test_structured_context_is_rendered_as_json():
    t = parse_trace({**BASE, "contexts": [{"doc_id": "r", "text": {"stars": 4.5}}]})
    assert '"stars": 4.5' in t.contexts[0].text


@pytest.mark.parametrize("text", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-14:00",
                                  "9999-12-31T23:59:59.9995Z"])
def test_timestamps_out_of_range_after_conversion_to_utc(text):
    with pytest.raises(InvalidTrace, match=r"out of range: event times must lie within "
                                           r"0001-01-01T00:00:00Z\.\.9999-12-31T23:59:59\.999Z"):
        parse_timestamp(text)


@pytest.mark.parametrize("value,day", [
    ("0001-01-01T00:00:00Z", "0001-01-01"),
    ("0001-01-01T00:59:00-00:30", "0001-01-01"),
    ("9999-12-31T23:59:59.999Z", "9999-12-31"),
    ("9999-12-31T23:59:59+14:00", "9999-12-31"),
    (datetime(1, 1, 1), "0001-01-01"),
])
def test_the_ends_of_the_range_are_audited_and_have_a_day(value, day):
    t = parse_trace({**BASE, "timestamp": value})
    assert t.day == day
    assert TraceKey(t.trace_id, t.route, t.day).day == day
    assert parse_trace(trace_record(t)) == t  # a dead letter of it can be redone


def test_timestamps_are_exact_to_the_microsecond():
    assert parse_timestamp("2024-01-01T00:00:00.000001Z") == 1704067200 * 1_000_000 + 1
    assert parse_timestamp("9999-12-31T23:59:59.999Z") == 253402300799999000


def test_an_aware_datetime_shifted_out_of_range_is_refused():
    with pytest.raises(InvalidTrace, match="out of range"):
        parse_timestamp(datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))))


@pytest.mark.parametrize("us", [0, -1, 10**30, -(10**30), 253402300800 * 10**6,
                                -62135596800 * 10**6 - 1])
def test_trace_day_never_raises(us):
    day = Trace("t", "r", us, "", (), "").day
    assert len(day) == 10 and "0001-01-01" <= day <= "9999-12-31"


def test_trace_day_clamps_to_the_representable_days():
    assert Trace("t", "r", 10**30, "", (), "").day == "9999-12-31"
    assert Trace("t", "r", -(10**30), "", (), "").day == "0001-01-01"
    assert Trace("t", "r", -1, "", (), "").day == "1969-12-31"


@pytest.mark.parametrize("patch,reason", [
    ({"trace_id": "x" * (MAX_TRACE_ID_CHARS + 1)}, "field 'trace_id' is 257 characters long; "
                                                   "the limit is 256"),
    ({"route": "r" * (MAX_ROUTE_CHARS + 1)}, "field 'route' is 257 characters long"),
    ({"question": "q" * (MAX_QUESTION_CHARS + 1)}, "field 'question' is 20001 characters "
                                                    "long; the limit is 20000"),
    ({"task": 3}, "field 'task' must be a string, got int"),
    ({"generator": ["g"]}, "field 'generator' must be a string, got list"),
    ({"task": "t" * 257}, "field 'task' is 257 characters long"),
    ({"contexts": [{"doc_id": 1.5, "text": "c"}]}, r"contexts\[0\].doc_id must be a string or "
                                                    "an integer, got float"),
    ({"contexts": [{"doc_id": "d" * 257, "text": "c"}]}, r"contexts\[0\].doc_id is 257"),
    ({"metadata": {f"k{i}": "v" for i in range(MAX_METADATA_ENTRIES + 1)}},
     "'metadata' has 65 entries; the limit is 64"),
    ({"metadata": {"k": "v" * (MAX_METADATA_CHARS + 1)}}, "metadata 'k' is 1025 characters"),
    ({"metadata": {"k" * 1025: "v"}}, "a metadata key is 1025 characters"),
    ({"metadata": {"k": float("nan")}}, "metadata 'k' is nan: numbers must be finite"),
    ({"metadata": {"k": float("-inf")}}, "metadata 'k' is -inf: numbers must be finite"),
    ({"metadata": {"k": {"nested": 1}}}, "metadata 'k' must be a string or a number, got dict"),
    ({"metadata": {1: "a", "1": "b"}}, "duplicate keys"),
    ({"metadata": [("a",)]}, r"map of strings or \(key, value\) pairs"),
    ({"answer": "fine \ud800 text"}, r"field 'answer' is not valid text: lone surrogate "
                                     r"'\\ud800' at character 5"),
    ({"question": "\udfff"}, "field 'question' is not valid text"),
    ({"trace_id": "id\udc80"}, "field 'trace_id' is not valid text"),
    ({"contexts": ["ok", "bad \ud83d"]}, r"contexts\[1\] is not valid text"),
    ({"contexts": [{"text": {"k\ud800": 1}}]}, r"contexts\[0\].text key is not valid text"),
    ({"contexts": [{"text": {"stars": float("nan")}}]}, r"contexts\[0\].text holds nan"),
    ({"contexts": [{"text": [float("inf")]}]}, r"contexts\[0\].text holds inf"),
    ({"contexts": [{"text": {"n": 2**70}}]}, "integer beyond 64 bits"),
    ({"contexts": [{"text": {"when": datetime(2024, 1, 1)}}]}, "holds a datetime, not a JSON"),
    ({"contexts": [{"text": {1: "a"}}]}, "non-string key 1"),
])
def test_fields_later_stages_rely_on(patch, reason):
    with pytest.raises(InvalidTrace, match=reason):
        parse_trace({**BASE, **patch})


def test_a_question_at_its_limit_is_valid():
    question = "Is it open? " * (MAX_QUESTION_CHARS // 12)
    assert parse_trace({**BASE, "question": question}).question == question


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_structured_contexts_are_bounded_in_depth():
    ok = parse_trace({**BASE, "contexts": [{"text": nested(MAX_JSON_DEPTH)}]})
    assert ok.contexts[0].text.count("[") == MAX_JSON_DEPTH
    for depth in (MAX_JSON_DEPTH + 1, 100_000):  # the second would overflow a recursive check
        with pytest.raises(InvalidTrace, match=r"contexts\[0\].text is nested deeper than 32"):
            parse_trace({**BASE, "contexts": [{"text": nested(depth)}]})


def test_a_json_depth_bomb_is_not_valid_json():
    line = '{"trace_id": "b", "answer": "a", "contexts": [{"text": ' + "[" * 5000 + "]" * 5000
    with pytest.raises(InvalidTrace, match="not valid JSON: depth limit exceeded"):
        parse_trace(line + "}]}")


def test_numbers_and_bools_in_metadata_are_written_as_text():
    t = parse_trace({**BASE, "metadata": {"n": 2, "x": 0.5, "b": True, "none": None}})
    assert t.metadata == (("b", "True"), ("n", "2"), ("none", ""), ("x", "0.5"))
    t = parse_trace({**BASE, "contexts": [{"doc_id": 7, "text": "c"}]})
    assert t.contexts[0].doc_id == "7"


@pytest.mark.parametrize("text,expected", [
    ("2016-12-31T23:59:60Z", datetime(2017, 1, 1, tzinfo=UTC)),
    ("2016-12-31T23:59:60.250+01:00", datetime(2016, 12, 31, 23, 0, 0, 250000, tzinfo=UTC)),
])
def test_a_leap_second_is_read_as_the_next_second(text, expected):
    assert parse_timestamp(text) == (expected - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(
        microseconds=1)


@pytest.mark.parametrize("text,reason", [
    ("9999-12-31T23:59:60Z", "out of range"),
    ("2016-12-31T23:59:61Z", "is not RFC 3339"),
    ("2016-12-31T23:60:00Z", "is not RFC 3339"),
])
def test_leap_seconds_stay_within_the_rules(text, reason):
    with pytest.raises(InvalidTrace, match=reason):
        parse_timestamp(text)


@pytest.mark.parametrize("contexts,doc_id", [
    ([{"doc_id": "a", "text": "x"}, {"doc_id": "a", "text": "y"}], r"'a' \(contexts\[0\] and "
                                                                  r"contexts\[1\]\)"),
    ([{"text": "x"}, {"doc_id": "doc0", "text": "y"}], "'doc0'"),
    ([{"doc_id": 1, "text": "x"}, {"doc_id": "1", "text": "y"}], "'1'"),
])
def test_a_doc_id_collision_names_the_doc_id(contexts, doc_id):
    with pytest.raises(InvalidTrace, match="contexts have duplicate doc_id " + doc_id):
        parse_trace({**BASE, "contexts": contexts})


def test_metadata_as_a_list_must_be_key_value_pairs():
    with pytest.raises(InvalidTrace, match=r"map of strings or \(key, value\) pairs"):
        parse_trace({**BASE, "metadata": ["ab", "cd"]})  # dict() would read {"a": "b", ...}
    assert parse_trace({**BASE, "metadata": [["k", "v"]]}).metadata == (("k", "v"),)


BIG = 123456789012345678901234567890


def test_integers_beyond_64_bits_are_read_exactly_not_rounded():
    line = ('{"trace_id": "t", "contexts": ["c"], "answer": "a", "metadata": {"order": '
            f'{BIG}, "small": 18446744073709551615, "neg": -{BIG}}}}}')
    assert dict(parse_trace(line).metadata) == {
        "order": str(BIG), "small": "18446744073709551615", "neg": f"-{BIG}"}
    with pytest.raises(InvalidTrace, match="field 'trace_id' must be a string, got int"):
        parse_trace(f'{{"trace_id": {BIG}, "contexts": ["c"], "answer": "a"}}')
    with pytest.raises(InvalidTrace, match="a trace must be a JSON object, got int"):
        parse_trace(str(BIG))
    # A structured context keeps to 64-bit integers rather than show the judge a rounded one.
    with pytest.raises(InvalidTrace, match="integer beyond 64 bits"):
        parse_trace(f'{{"trace_id": "t", "contexts": [{{"text": {{"n": {BIG}}}}}], '
                    '"answer": "a"}')
    assert parse_trace('{"trace_id": "t", "contexts": ["c"], "answer": "a", "metadata": '
                       '{"x": 1e30}}').metadata == (("x", "1e+30"),)


def test_integers_beyond_64_bits_in_a_pubsub_message_are_read_exactly():
    from rt4chart.schemas.records import Message

    body = f'{{"contexts": ["c"], "answer": "a", "metadata": {{"n": {BIG}}}}}'.encode()
    trace = parse_trace(Message(body, (("trace_id", "m"),), 1_700_000_000_000_000))
    assert trace.metadata == (("n", str(BIG)),)


@pytest.mark.parametrize("value,token", [("NaN", "NaN"), ("-NaN", "-NaN"),
                                         ("Infinity", "Infinity"), ("-Infinity", "-Infinity")])
def test_nan_and_infinity_are_named(value, token):
    line = f'{{"trace_id": "t", "contexts": ["c"], "answer": "a", "metadata": {{"s": {value}}}}}'
    with pytest.raises(InvalidTrace, match=rf"not valid JSON: .*\({token}: JSON numbers must "
                                           "be finite"):
        parse_trace(line)
    with pytest.raises(InvalidTrace) as plain:
        parse_trace('{"trace_id": "t", "contexts": ["c"], "answer": Nope}')
    assert "finite" not in str(plain.value)
