"""The OpenTelemetry SDK's own span JSON (`span.to_json()`, its ConsoleSpanExporter) as the
OpenInference span reader takes it (pipeline/sources/phoenix.py, common.span_json_id): `0x`
ids read as the 32 (16) lowercase hex digits OTLP spells, the resource's attributes read from
under `resource.attributes`; what is ambiguous (a `0x` id of another length or with non-hex
digits, a resource holding both forms) is refused, never guessed. Hypothesis writes the ids."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rt4chart.pipeline.sources import phoenix
from rt4chart.pipeline.sources.common import SpanDecodeError, span_json_id
from rt4chart.transforms.common.span_mapping import SpanMapping, trace_record

HEX = "0123456789abcdef"


def _sdk_span(trace_id: str, span_id: str, parent_id: str | None, kind: str,
              attributes: dict, resource: object = None) -> dict:
    """A span as the SDK's `ReadableSpan.to_json()` writes it (opentelemetry-sdk 1.x)."""
    if resource is None:
        resource = {"attributes": {"telemetry.sdk.language": "python",
                                   "service.name": "library-faq"}, "schema_url": ""}
    return {"name": kind.lower(), "context": {"trace_id": trace_id, "span_id": span_id,
                                              "trace_state": "[]"},
            "kind": "SpanKind.INTERNAL", "parent_id": parent_id,
            "start_time": "2026-12-06T08:47:56.600015Z",
            "end_time": "2026-12-06T08:47:56.600575Z", "status": {"status_code": "UNSET"},
            "attributes": {"openinference.span.kind": kind, **attributes},
            "events": [], "links": [], "resource": resource}


def _line(span: dict) -> str:
    return json.dumps(span)  # what ConsoleSpanExporter writes with indent=None, one a line


@given(st.text(HEX + "ABCDEF", min_size=32, max_size=32).filter(lambda t: set(t) != {"0"}),
       st.sampled_from(["0x", "0X"]))
def test_a_0x_trace_id_reads_as_its_32_lowercase_hex_digits(digits, prefix):
    assert span_json_id(prefix + digits, 32, "trace id") == digits.lower()


@given(st.integers(1, 2**128 - 1))
def test_the_sdk_trace_id_of_any_int_is_the_otlp_hex(value):
    # The SDK formats an id as "0x{:032x}"; OTLP spells the same bytes as 32 hex digits.
    sdk = f"0x{value:032x}"
    assert span_json_id(sdk, 32, "trace id") == value.to_bytes(16, "big").hex()


@given(st.text(HEX, min_size=0, max_size=40).filter(lambda t: len(t) != 16))
def test_a_0x_span_id_of_another_length_is_refused(digits):
    with pytest.raises(SpanDecodeError, match="16 hex digits"):
        span_json_id("0x" + digits, 16, "span id")


@given(st.text(min_size=32, max_size=32).filter(lambda t: not set(t.lower()) <= set(HEX)))
def test_a_0x_id_with_a_non_hex_digit_is_refused(digits):
    with pytest.raises(SpanDecodeError, match="not read rather than guessed"):
        span_json_id("0x" + digits, 32, "trace id")


@pytest.mark.parametrize("digits", [32, 16])
def test_the_all_zero_id_is_refused(digits):
    with pytest.raises(SpanDecodeError, match="invalid id"):
        span_json_id("0x" + "0" * digits, digits, "id")


@given(st.text(max_size=40).filter(lambda t: t[:2].lower() != "0x"))
def test_an_id_without_the_prefix_is_kept_lower_cased(text):
    assert span_json_id(text, 32, "trace id") == text.lower()


@given(st.one_of(st.none(), st.integers(), st.floats(), st.booleans()))
def test_a_missing_or_non_text_id_is_empty(value):
    assert span_json_id(value, 32, "trace id") == ""


def _trace(trace_id: str, root_id: str = "0x" + "a1" * 8, resource: object = None) -> list:
    child = "0x" + "b2" * 8
    llm = "0x" + "c3" * 8
    return [
        _sdk_span(trace_id, root_id, None, "CHAIN",
                  {"input.value": "When does the library open?",
                   "output.value": "It opens at 8 am."}, resource),
        _sdk_span(trace_id, child, root_id, "RETRIEVER",
                  {"retrieval.documents.0.document.id": "hours",
                   "retrieval.documents.0.document.content": "The library opens at 8 am."},
                  resource),
        _sdk_span(trace_id, llm, root_id, "LLM", {"llm.model_name": "mock"}, resource),
    ]


def test_sdk_span_json_gives_the_route_and_the_otlp_trace_id():
    spans = [s for line in map(_line, _trace("0x" + "5f" * 16)) for s in phoenix.line_spans(line)]
    assert {s.parent_id for s in spans} == {"", "a1" * 8}
    record = trace_record(spans, SpanMapping())
    assert record["trace_id"] == "5f" * 16
    assert record["route"] == "library-faq"
    assert record["contexts"] == [{"doc_id": "hours", "text": "The library opens at 8 am."}]
    assert record["generator"] == "mock"


def test_a_flat_resource_is_still_the_attributes_themselves():
    # As spans read from Phoenix's REST API are spooled (sources/phoenix_api.py).
    spans = [s for span in _trace("5f" * 16, resource={"service.name": "rag-app"})
             for s in phoenix.line_spans(_line(span))]
    assert trace_record(spans, SpanMapping())["route"] == "rag-app"


@pytest.mark.parametrize("resource, why", [
    ({"attributes": {"service.name": "a"}, "service.name": "b"}, "beside attributes of its own"),
    ({"attributes": "service.name=a"}, "not an object"),
    ("service.name=a", "must be a JSON object"),
])
def test_an_ambiguous_resource_is_refused(resource, why):
    span = _sdk_span("0x" + "5f" * 16, "0x" + "a1" * 8, None, "CHAIN", {}, resource)
    with pytest.raises(SpanDecodeError, match=why):
        phoenix.line_spans(_line(span))


@pytest.mark.parametrize("field, value", [
    ("trace_id", "0x5f5f"), ("span_id", "0x" + "a1" * 16), ("parent_id", "0xzz" + "1" * 14)])
def test_a_malformed_0x_id_in_any_place_is_refused(field, value):
    span = _sdk_span("0x" + "5f" * 16, "0x" + "a1" * 8, "0x" + "b2" * 8, "CHAIN", {})
    if field == "parent_id":
        span["parent_id"] = value
    else:
        span["context"][field] = value
    with pytest.raises(SpanDecodeError, match="hex digits"):
        phoenix.line_spans(_line(span))


def test_an_sdk_span_file_is_audited_by_route_and_a_bad_id_is_a_dead_letter(audit, tmp_path):
    good = _trace("0x" + "5f" * 16)
    bad = _trace("0x" + "5f" * 15)  # 30 digits: cut or padded? neither
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(_line(s) + "\n" for s in good + bad[:1]))
    code, tables, _ = audit(str(path), "--judge", "offline")
    assert code == 0
    assert [(r["trace_id"], r["route"]) for r in tables["answers"]] == [
        ("5f" * 16, "library-faq")]
    [letter] = tables["dead_letters"]
    assert letter["stage"] == "read"
    assert "must be 0x and 32 hex digits" in letter["reason"]
