"""What every span source shares: flattening nested attributes into OpenTelemetry's dotted
keys, and reading times."""

from __future__ import annotations

import base64
import math
from datetime import UTC, datetime
from typing import Any

from rt4chart.schemas.spans import Scalar
from rt4chart.transforms.common import rfc3339

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class SpanDecodeError(ValueError):
    """A record that does not hold spans of the format it was read as; the message says why."""


def flatten(value: Any, prefix: str = "", into: dict[str, Scalar] | None = None,
            ) -> dict[str, Scalar]:
    """Nested objects and lists as flat dotted keys (`a.b.0.c`), as OpenTelemetry attributes
    spell OpenInference's structured values; None and non-finite numbers are left out, bytes
    become base64 text, other values their text."""
    out: dict[str, Scalar] = {} if into is None else into
    if isinstance(value, dict):
        for key, item in value.items():
            flatten(item, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            flatten(item, f"{prefix}.{i}" if prefix else str(i), out)
    elif value is None or (isinstance(value, float) and not math.isfinite(value)):
        pass
    elif isinstance(value, str | bool | int | float):
        out[prefix] = value
    elif isinstance(value, bytes):
        out[prefix] = base64.b64encode(value).decode()
    elif isinstance(value, datetime):
        out[prefix] = value.isoformat()
    else:
        out[prefix] = str(value)
    return out


def as_items(values: dict[str, Scalar]) -> tuple[tuple[str, Scalar], ...]:
    return tuple(sorted(values.items()))


def time_ns(value: Any) -> int:
    """Nanoseconds since the epoch from a datetime (naive: UTC), RFC 3339 text (read as trace
    timestamps are, `transforms/common/rfc3339.py`), or a number of nanoseconds (text or int); 0
    when
    absent.

    Raises:
        SpanDecodeError: a value that is none of these.
    """
    if value is None or value == "":
        return 0
    if isinstance(value, bool):
        raise SpanDecodeError(f"not a time: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        if value.isascii() and value.isdigit():
            return int(value)
        try:  # the reader of trace timestamps, exact to the nanosecond
            return rfc3339.parse_ns(value)
        except rfc3339.NotRfc3339 as exc:
            raise SpanDecodeError(f"not an RFC 3339 time: {exc}") from exc
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        delta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    raise SpanDecodeError(f"not a time: {type(value).__name__}")


TRACE_ID_DIGITS = 32  # an OTel trace id: 16 bytes
SPAN_ID_DIGITS = 16  # an OTel span id: 8 bytes
_HEX = frozenset("0123456789abcdef")


def span_json_id(value: Any, digits: int, what: str) -> str:
    """A trace or span id of span JSON as rt4chart keeps it: lowercase text.

    The OpenTelemetry SDK's `span.to_json()` (and its ConsoleSpanExporter) writes ids as `0x`
    and `digits` hex digits (`0x` + 32 for a trace, 16 for a span); they are read as the hex
    digits alone, as OTLP spells them, so that a trace read from the SDK's file and from a
    Collector is one trace and its id is what Phoenix knows. An id with the `0x` prefix that
    is not exactly that (other lengths, non-hex digits, all zeros: OTel's invalid id) is
    refused rather than guessed at. Ids without the prefix (Phoenix's own ids, an
    application's) are kept as they are, lower-cased; a missing or non-text id is "".

    Raises:
        SpanDecodeError: a `0x` id that is not `digits` hex digits, or all zeros.
    """
    if not isinstance(value, str):
        return ""
    if value[:2] not in ("0x", "0X"):
        return value.lower()
    digits_text = value[2:].lower()
    if len(digits_text) != digits or not set(digits_text) <= _HEX:
        raise SpanDecodeError(
            f"{what} {value[:80]!r}: a 0x id (OpenTelemetry SDK span JSON) must be 0x and "
            f"{digits} hex digits; not read rather than guessed")
    if set(digits_text) == {"0"}:
        raise SpanDecodeError(f"{what} {value!r}: all zeros, OpenTelemetry's invalid id")
    return digits_text
