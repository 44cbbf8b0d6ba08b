"""OpenInference spans as Phoenix keeps them -> SourceSpans: the rows of its spans dataframe
(`px.Client().get_spans_dataframe()` saved as Parquet: `context.trace_id`, `context.span_id`,
`parent_id`, `span_kind`, `start_time`, `end_time`, `attributes.*` columns, structured values
such as `attributes.retrieval.documents` as lists of structs), and OpenInference span JSON, one
span a line (`{"name", "context": {"trace_id", "span_id"}, "parent_id", "span_kind",
"start_time", "end_time", "attributes": {...}}`, attributes nested or dotted; an optional
`resource` object holds the resource's attributes, as spans read from Phoenix's REST API are
spooled, `sources/phoenix_api.py`). The OpenTelemetry SDK's own span JSON (`span.to_json()`, what
its ConsoleSpanExporter writes, one span a line with `indent=None`) is read too: its ids carry a
`0x` prefix (`common.span_json_id`) and its `resource` nests the attributes under `attributes`
beside `schema_url`."""

from __future__ import annotations

from typing import Any

import orjson
from openinference.semconv.trace import SpanAttributes

from rt4chart.pipeline.sources.common import (
    SPAN_ID_DIGITS,
    TRACE_ID_DIGITS,
    SpanDecodeError,
    as_items,
    flatten,
    span_json_id,
    time_ns,
)
from rt4chart.schemas.spans import SourceSpan
from rt4chart.transforms.checks.json_text import load_strict
from rt4chart.transforms.common.fields import InvalidTrace

ATTRIBUTES = "attributes"
RESOURCE = "resource"
TRACE_ID = "context.trace_id"
SPAN_ID = "context.span_id"
PARENT_ID = "parent_id"
SPAN_KIND = "span_kind"
# The columns that make a Parquet file a Phoenix spans export.
MARK_COLUMNS = (TRACE_ID, SPAN_ID)
# The keys of the OpenTelemetry SDK's resource JSON (`Resource.to_json()`): its attributes
# nested under "attributes", and the schema URL.
SDK_RESOURCE_KEYS = frozenset({ATTRIBUTES, "schema_url"})


def resource_attributes(resource: Any) -> dict[str, Any]:
    """A span's resource attributes, flat: the SDK's `{"attributes": {...}, "schema_url": ...}`
    gives what is under "attributes"; an object without an "attributes" key is the attributes
    themselves (as spans read from Phoenix's REST API are spooled); absent or null: none.

    Raises:
        SpanDecodeError: a resource that is not an object, or one that holds "attributes"
            beside keys the SDK does not write (both forms at once: which is meant is not
            guessed).
    """
    if resource is None:
        return {}
    if not isinstance(resource, dict):
        raise SpanDecodeError(f"{RESOURCE} must be a JSON object, got {type(resource).__name__}")
    if ATTRIBUTES not in resource:
        return flatten(resource)
    nested, others = resource[ATTRIBUTES], sorted(set(resource) - SDK_RESOURCE_KEYS)
    if not isinstance(nested, dict) or others:
        raise SpanDecodeError(
            f"ambiguous {RESOURCE}: an 'attributes' entry ("
            + ("not an object" if not isinstance(nested, dict) else "the SDK's form")
            + (f") beside attributes of its own ({', '.join(others[:5])})" if others else ")")
            + "; the resource is either the SDK's {attributes, schema_url} or the attributes")
    return flatten(nested)


def row_span(row: dict[str, Any]) -> SourceSpan:
    """One span from a dataframe row or an OpenInference span JSON object.

    Raises:
        SpanDecodeError: no trace or span id, an SDK (`0x`) id that is not one, an ambiguous
            resource (`resource_attributes`), or a time that is not one.
    """
    resource = resource_attributes(row.get(RESOURCE))
    flat = flatten({k: v for k, v in row.items() if k != RESOURCE})
    trace_id = span_json_id(flat.get(TRACE_ID), TRACE_ID_DIGITS, TRACE_ID)
    span_id = span_json_id(flat.get(SPAN_ID), SPAN_ID_DIGITS, SPAN_ID)
    if not trace_id or not span_id:
        raise SpanDecodeError(f"not an OpenInference span: no {TRACE_ID} or {SPAN_ID}")
    prefix = ATTRIBUTES + "."
    attributes = {k[len(prefix):]: v for k, v in flat.items() if k.startswith(prefix)}
    kind = flat.get(SPAN_KIND)
    if isinstance(kind, str) and kind:
        attributes.setdefault(SpanAttributes.OPENINFERENCE_SPAN_KIND, kind.upper())
    name = flat.get("name")
    parent_id = span_json_id(flat.get(PARENT_ID), SPAN_ID_DIGITS, PARENT_ID)
    return SourceSpan(
        trace_id=trace_id, span_id=span_id, parent_id=parent_id,
        name=name if isinstance(name, str) else "",
        start_ns=time_ns(row.get("start_time")), end_ns=time_ns(row.get("end_time")),
        attributes=as_items(attributes),
        resource=as_items(resource))


def line_spans(line: str | bytes) -> list[SourceSpan]:
    """The span of one line of OpenInference span JSON."""
    try:
        value = load_strict(line)  # a key given twice is ambiguous: refused (json_text)
    except orjson.JSONDecodeError as exc:
        raise SpanDecodeError(f"not valid JSON: {exc}") from exc
    except InvalidTrace as exc:
        raise SpanDecodeError(str(exc)) from exc
    if not isinstance(value, dict):
        raise SpanDecodeError(f"a span must be a JSON object, got {type(value).__name__}")
    return [row_span(value)]
