"""The phoenix-api source without a server: its options, its window, the watermark's rules and
the spooled span's resource (against the server: tests/integration/test_phoenix_source.py)."""

from __future__ import annotations

import json

import pytest

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.sources import watermark
from rt4chart.pipeline.sources.phoenix import row_span
from rt4chart.pipeline.sources.phoenix_api import PhoenixSource, _spooled
from rt4chart.pipeline.sources.phoenix_client import PhoenixTarget
from rt4chart.pipeline.sources.watermark import Watermark, newest, previous

TARGET = PhoenixTarget("http://127.0.0.1:6006", "rag")


def test_a_window_is_given_to_phoenix_as_iso_times_utc_when_no_offset():
    source = PhoenixSource(TARGET, since="2024-05-01T00:00:00", until="2024-05-02T01:00:00+01:00")
    assert source.bounds() == ("2024-05-01T00:00:00+00:00", "2024-05-02T01:00:00+01:00")
    mark = Watermark("2024-05-03T10:00:00.500000000Z", 0, ())
    # the watermark, when there is one, replaces --since
    assert PhoenixSource(TARGET, since="2024-05-01", after=mark).bounds()[0] == (
        "2024-05-03T10:00:00.500000+00:00")


@pytest.mark.parametrize("kwargs, message", [
    ({"since": "yesterday"}, "--since must be an ISO-8601 time"),
    ({"since": "2024-05-02", "until": "2024-05-01"}, "must be before --until"),
    ({"since": "2024-05-01", "until": "2024-05-01"}, "must be before --until"),
    ({"page_size": 0}, "--phoenix-page-size must be within 1..1000"),
    ({"page_size": 1001}, "--phoenix-page-size must be within 1..1000"),
])
def test_bad_values_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PhoenixSource(TARGET, **kwargs)


@pytest.mark.parametrize("argv, message", [
    (["x.jsonl", "--since", "2024-05-01"], "--since: only with --input-format phoenix-api"),
    (["x.jsonl", "--watermark"], "--watermark: only with --input-format phoenix-api"),
    (["--input-format", "phoenix-api"], "needs the Phoenix URL"),
    (["--input-format", "phoenix-api", "--phoenix-endpoint", "127.0.0.1:6006"],
     "must be an http"),
    (["--input-format", "phoenix-api", "--phoenix-endpoint", "http://h", "--example"],
     "give no input files, --example or --redo"),
    (["--input-format", "phoenix-api", "--phoenix-endpoint", "http://h", "--estimate"],
     "--estimate counts input files"),
])
def test_usage_errors_exit_2_with_the_reason(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("PHOENIX_COLLECTOR_ENDPOINT", raising=False)
    assert cli.main(["audit", *argv, "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_newest_root_and_the_traces_that_share_its_start():
    roots = [(5, "a"), (7, "b"), (9, "c"), (9, "d")]
    mark = newest(roots, None)
    assert (mark.start_ns, mark.trace_ids) == (9, ("c", "d"))
    assert mark.start_time == "1970-01-01T00:00:00.000000009Z"
    # the next read, starting at 9 inclusive, leaves out c and d but not a new root at 9
    assert mark.covers("c", 9) and not mark.covers("e", 9) and not mark.covers("c", 10)
    again = newest([(9, "e")], mark)
    assert again.trace_ids == ("c", "d", "e")
    assert newest([], mark) is mark  # nothing read: it stays
    assert newest([(12, "f")], mark).trace_ids == ("f",)


def _record(tmp_path, doc) -> str:
    (tmp_path / "_phoenix").mkdir(exist_ok=True)
    (tmp_path / watermark.READ_RECORD).write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(tmp_path)


def test_previous_watermark_is_checked_against_the_source(tmp_path):
    assert previous(str(tmp_path), "http://h", "p") is None  # no run yet
    mark = {"start_time": "2024-05-01T00:00:00.000000000Z", "start_ns": 1714521600 * 10**9,
            "trace_ids": ["t"]}
    out = _record(tmp_path, {"endpoint": "http://h", "project": "p", "watermark": mark})
    assert previous(out, "http://h", "p") == Watermark(mark["start_time"], mark["start_ns"],
                                                       ("t",))
    with pytest.raises(ValueError, match="the last run read project 'p' at http://h, not 'q'"):
        previous(out, "http://h", "q")
    _record(tmp_path, {"endpoint": "http://h", "project": "p", "watermark": None})
    assert previous(out, "http://h", "p") is None
    _record(tmp_path, "{not json")
    with pytest.raises(ValueError, match="not a watermark rt4chart wrote"):
        previous(out, "http://h", "p")


def test_a_spooled_span_carries_the_project_as_its_resource():
    rest = {"name": "rag", "context": {"trace_id": "AB" * 16, "span_id": "cd" * 8},
            "span_kind": "CHAIN", "parent_id": None, "start_time": "2024-05-01T00:00:00+00:00",
            "end_time": "2024-05-01T00:00:03.5+00:00",
            "attributes": {"input.value": "q", "metadata.route": "r"}}
    span = row_span(json.loads(_spooled(rest, "support-desk")))
    assert dict(span.resource) == {"service.name": "support-desk",
                                   "openinference.project.name": "support-desk"}
    assert span.trace_id == "ab" * 16 and span.parent_id == ""
    assert span.end_ns - span.start_ns == 3_500_000_000
    assert dict(span.attributes)["metadata.route"] == "r"
    assert not any(k.startswith("resource") for k in dict(span.attributes))
