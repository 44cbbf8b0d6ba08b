from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from rt4chart.transforms.validate import InvalidTrace, parse_timestamp, parse_trace

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
    ({"contexts": "text"}, "non-empty list"),
    ({"contexts": [3]}, "string or an object"),
    ({"metadata": "k=v"}, "map"),
])
def test_invalid_fields(patch, reason):
    with pytest.raises(InvalidTrace, match=reason):
        parse_trace({**BASE, **patch})


def test_structured_context_is_rendered_as_json():
    t = parse_trace({**BASE, "contexts": [{"doc_id": "r", "text": {"stars": 4.5}}]})
    assert '"stars": 4.5' in t.contexts[0].text
