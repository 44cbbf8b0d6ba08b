"""Field checks of a raw trace record: what each field must be for later stages to hold.

Every check raises InvalidTrace with a reason naming the field and what is wrong with it; the
limits are those of `transforms/common/limits.py`. See `transforms/validate.py` for the whole
record.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from rt4chart.schemas.records import Document
from rt4chart.transforms.common import rfc3339
from rt4chart.transforms.common.limits import (
    MAX_DOC_ID_CHARS,
    MAX_JSON_DEPTH,
    MAX_LABEL_CHARS,
    MAX_METADATA_CHARS,
    MAX_METADATA_ENTRIES,
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# What BigQuery, Parquet and Python datetimes all hold; the end stops a millisecond short of
# year 10000 so that `event_time_us / 1e6` as a float cannot round into it.
MIN_EVENT_TIME = datetime(1, 1, 1, tzinfo=UTC)
MAX_EVENT_TIME = datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)
SURROGATE = re.compile("[\ud800-\udfff]")


class InvalidTrace(ValueError):
    """A record that does not satisfy the trace schema."""


def check_text(value: str, where: str, max_chars: int | None = None) -> str:
    """`value` if it is valid Unicode text within `max_chars`, else InvalidTrace naming `where`."""
    bad = SURROGATE.search(value)
    if bad:
        raise InvalidTrace(f"{where} is not valid text: lone surrogate {bad.group()!r} at "
                           f"character {bad.start()}")
    if max_chars is not None and len(value) > max_chars:
        raise InvalidTrace(f"{where} is {len(value)} characters long; the limit is {max_chars}")
    return value


def string_field(record: dict, name: str, default: str | None = None, required: bool = False,
                 max_chars: int | None = None) -> str:
    """A string field of the record (`default` when absent), valid text within `max_chars`."""
    value = record.get(name)
    if value is None:
        if required:
            raise InvalidTrace(f"missing required field '{name}'")
        return default if default is not None else ""
    if not isinstance(value, str):
        raise InvalidTrace(f"field '{name}' must be a string, got {type(value).__name__}")
    return check_text(value, f"field '{name}'", max_chars)


def optional_label(record: dict, name: str) -> str | None:
    """`task` or `generator`: absent, or a string within MAX_LABEL_CHARS."""
    if record.get(name) is None:
        return None
    return string_field(record, name, max_chars=MAX_LABEL_CHARS)


def parse_timestamp(value: Any) -> int:
    """Microseconds since the epoch from RFC 3339 text (`transforms/common/rfc3339.py`: exactly
    RFC 3339's date-time, and a time without offset as UTC) or a datetime; now when absent.
    A fraction finer than a microsecond is cut, as a datetime would hold it.

    The time must lie within MIN_EVENT_TIME..MAX_EVENT_TIME once converted to UTC.
    """
    if value is None:
        return time.time_ns() // 1000
    if isinstance(value, str):
        return _text_timestamp(value)
    if not isinstance(value, datetime):
        raise InvalidTrace(f"timestamp must be RFC 3339 text, got {type(value).__name__}")
    if value.tzinfo is None:  # Parquet timestamps without a zone are UTC
        value = value.replace(tzinfo=UTC)
    try:
        utc = value.astimezone(UTC)
    except (OverflowError, ValueError):  # the zone shifts it out of years 1-9999
        utc = None
    if utc is None or not MIN_EVENT_TIME <= utc <= MAX_EVENT_TIME:
        raise InvalidTrace(f"timestamp {value.isoformat()} is out of range: event times must "
                           f"lie within {_EVENT_TIME_RANGE} in UTC")
    return (utc - EPOCH) // timedelta(microseconds=1)


_EVENT_TIME_RANGE = "0001-01-01T00:00:00Z..9999-12-31T23:59:59.999Z"
_MIN_US = (MIN_EVENT_TIME - EPOCH) // timedelta(microseconds=1)
_MAX_US = (MAX_EVENT_TIME - EPOCH) // timedelta(microseconds=1)


def _text_timestamp(text: str) -> int:
    """Microseconds of RFC 3339 text, within the event time range."""
    try:
        us = rfc3339.parse_ns(text) // 1000
    except rfc3339.OutOfRange:
        us = None
    except rfc3339.NotRfc3339 as exc:
        raise InvalidTrace(f"timestamp {exc}") from exc
    if us is None or not _MIN_US <= us <= _MAX_US:
        raise InvalidTrace(f"timestamp {text!r:.60} is out of range: event times must lie "
                           f"within {_EVENT_TIME_RANGE} in UTC")
    return us


def event_time_text(event_time_us: int) -> str:
    """An event time as RFC 3339 text, exact to the microsecond."""
    try:
        return (EPOCH + timedelta(microseconds=event_time_us)).isoformat()
    except (OverflowError, TypeError, ValueError):  # a Trace built by hand: keep the number
        return str(event_time_us)


def _json_children(item: dict | list | tuple, where: str) -> Iterable[Any]:
    if not isinstance(item, dict):
        return item
    for key in item:
        if not isinstance(key, str):
            raise InvalidTrace(f"{where} has a non-string key {key!r:.40}")
        check_text(key, f"{where} key")
    return item.values()


def _check_json_scalar(item: Any, where: str) -> None:
    if isinstance(item, str):
        check_text(item, where)
    elif isinstance(item, float) and not math.isfinite(item):
        raise InvalidTrace(f"{where} holds {item!r}: numbers must be finite")
    elif isinstance(item, int) and not isinstance(item, bool) and not -(2**63) <= item < 2**64:
        raise InvalidTrace(f"{where} holds an integer beyond 64 bits")
    elif item is not None and not isinstance(item, bool | int | float):
        raise InvalidTrace(f"{where} holds a {type(item).__name__}, not a JSON value")


def check_json(value: Any, where: str) -> None:
    """A structured context: JSON values only, finite numbers, valid text, bounded depth.

    Iterative, so that a depth bomb cannot exhaust the stack before it is refused.
    """
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth > MAX_JSON_DEPTH:
                raise InvalidTrace(f"{where} is nested deeper than {MAX_JSON_DEPTH} levels")
            stack.extend((child, depth + 1) for child in _json_children(item, where))
        else:
            _check_json_scalar(item, where)


def _context_text(item: dict, i: int) -> str:
    text = item.get("text")
    if isinstance(text, dict | list):  # structured record (data-to-text): render it readably
        check_json(text, f"contexts[{i}].text")
        try:
            return orjson.dumps(text, option=orjson.OPT_INDENT_2).decode()
        except TypeError as exc:
            raise InvalidTrace(f"contexts[{i}].text cannot be rendered as JSON: {exc}") from exc
    if not isinstance(text, str):
        raise InvalidTrace(f"contexts[{i}].text must be a string")
    return check_text(text, f"contexts[{i}].text")


def _document(item: dict, i: int) -> Document:
    """A context object: its text, and for a tool's result the tool and call it names."""
    tool = item.get("tool")
    if tool is not None and (not isinstance(tool, str) or not tool.strip()):
        raise InvalidTrace(f"contexts[{i}].tool must be a non-empty string")
    call_id = item.get("call_id")
    if call_id is not None:
        if isinstance(call_id, bool) or not isinstance(call_id, str | int):
            raise InvalidTrace(f"contexts[{i}].call_id must be a string or an integer")
        if tool is None:
            raise InvalidTrace(f"contexts[{i}] has a call_id but no tool")
        call_id = check_text(str(call_id), f"contexts[{i}].call_id", MAX_LABEL_CHARS)
    if tool is not None:
        tool = check_text(tool, f"contexts[{i}].tool", MAX_LABEL_CHARS)
    return Document(_doc_id(item, i, tool, call_id), _context_text(item, i), tool, call_id)


def tool_doc_id(tool: str, call: str) -> str:
    """A tool result's doc id, `tool:NAME#CALL` (`call`: its call id, else its position), cut
    to the doc id limit (each part to a third of it)."""
    part = MAX_DOC_ID_CHARS // 3
    return f"tool:{tool[:part]}#{call[:part]}"


def tool_of(doc_id: str) -> str | None:
    """The tool a doc id of `tool_doc_id`'s form names (None for another id): for showing a
    quote as the tool's ("get_order_status → ...")."""
    if not doc_id.startswith("tool:") or "#" not in doc_id:
        return None
    return doc_id[len("tool:"):].rpartition("#")[0] or None


def _doc_id(item: dict, i: int, tool: str | None = None, call_id: str | None = None) -> str:
    doc_id = item.get("doc_id")
    if doc_id in (None, ""):
        return f"doc{i}" if tool is None else tool_doc_id(tool, call_id or str(i))
    if isinstance(doc_id, bool) or not isinstance(doc_id, str | int):
        raise InvalidTrace(f"contexts[{i}].doc_id must be a string or an integer, "
                           f"got {type(doc_id).__name__}")
    return check_text(str(doc_id), f"contexts[{i}].doc_id", MAX_DOC_ID_CHARS)


def parse_contexts(value: Any) -> tuple[Document, ...]:
    """A list of strings or of {doc_id, text} objects. An empty list is a retrieval that
    returned nothing: audited, every checkable claim NIC (verify_global.nothing_retrieved). A
    missing field (None) or anything but a list is a dead letter: it does not say what was
    retrieved."""
    if not isinstance(value, list | tuple):
        raise InvalidTrace("'contexts' must be a list (an empty list when nothing was "
                           "retrieved)")
    if not value:
        return ()
    docs: list[Document] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            docs.append(Document(f"doc{i}", check_text(item, f"contexts[{i}]")))
        elif isinstance(item, dict):
            docs.append(_document(item, i))
        else:
            raise InvalidTrace(f"contexts[{i}] must be a string or an object with 'text'")
    first: dict[str, int] = {}
    for i, doc in enumerate(docs):
        if doc.doc_id in first:
            raise InvalidTrace(f"contexts have duplicate doc_id {doc.doc_id[:60]!r} "
                               f"(contexts[{first[doc.doc_id]}] and contexts[{i}])")
        first[doc.doc_id] = i
    if not any(d.text.strip() for d in docs):
        raise InvalidTrace("contexts contain no text")
    return tuple(docs)


def _metadata_text(value: Any, where: str) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidTrace(f"{where} is {value!r}: numbers must be finite")
    if isinstance(value, bool | int | float):
        value = str(value)
    if not isinstance(value, str):
        raise InvalidTrace(f"{where} must be a string or a number, got {type(value).__name__}")
    return check_text(value, where, MAX_METADATA_CHARS)


def parse_metadata(value: Any) -> tuple[tuple[str, str], ...]:
    """A map of strings (numbers are written as text), at most MAX_METADATA_ENTRIES entries of
    at most MAX_METADATA_CHARS each; sorted (key, value) pairs."""
    if value is None:
        return ()
    if isinstance(value, list | tuple):  # Parquet map columns arrive as (key, value) pairs
        # dict() would also take any 2-character strings as pairs: ["ab"] -> {"a": "b"}
        if not all(isinstance(pair, list | tuple) and len(pair) == 2 for pair in value):
            raise InvalidTrace("'metadata' must be a map of strings or (key, value) pairs")
        try:
            pairs, value = len(value), dict(value)
        except TypeError as exc:  # an unhashable key
            raise InvalidTrace("'metadata' must be a map of strings or (key, value) pairs") from exc
        if len(value) != pairs:  # dict() keeps the last of a repeated key: ambiguous
            raise InvalidTrace("'metadata' has duplicate keys")
    if not isinstance(value, dict):
        raise InvalidTrace("'metadata' must be a map of strings")
    if len(value) > MAX_METADATA_ENTRIES:
        raise InvalidTrace(f"'metadata' has {len(value)} entries; the limit is "
                           f"{MAX_METADATA_ENTRIES}")
    items = {}
    for k, v in value.items():
        key = _metadata_text(k, "a metadata key")
        items[key] = "" if v is None else _metadata_text(v, f"metadata {key[:40]!r}")
    if len(items) != len(value):
        raise InvalidTrace("'metadata' has duplicate keys")
    return tuple(sorted(items.items()))


def escape_surrogates(text: str) -> str:
    """`text` with any lone surrogate written as its escape (\\udXXX), so it can be encoded."""
    if SURROGATE.search(text) is None:
        return text
    return text.encode("utf-8", errors="backslashreplace").decode("utf-8")


# The roles whose turns are the user's (OpenAI's "user", LangChain's "human").
USER_ROLES = ("user", "human")


def _turn_text(content: Any, where: str) -> str:
    """A turn's content: a string, or a list of parts whose text parts are joined."""
    if isinstance(content, str):
        return check_text(content, where)
    if isinstance(content, list | tuple):
        texts = []
        for j, part in enumerate(content):
            text = part.get("text") if isinstance(part, dict) else part
            if not isinstance(text, str):
                raise InvalidTrace(f"{where}[{j}] must be a string or a part with 'text'")
            texts.append(check_text(text, f"{where}[{j}]"))
        return "\n".join(texts)
    raise InvalidTrace(f"{where} must be a string or a list of text parts, got "
                       f"{type(content).__name__}")


def parse_conversation(record: dict, max_chars: int) -> tuple[str, ...]:
    """The user's earlier turns from `conversation` (or its synonym `history`): a list of
    {role, content} objects, oldest first. Only the user's turns are kept (roles USER_ROLES);
    the assistant's, the system's and tools' are left out unread (their content may be any
    shape: tool calls, blocks), as none is the user's setting and none is evidence. Their
    text, together, within `max_chars`."""
    if record.get("conversation") is not None and record.get("history") is not None:
        raise InvalidTrace("give the earlier turns as 'conversation' or 'history', not both")
    name = "conversation" if record.get("conversation") is not None else "history"
    turns = record.get(name)
    if turns is None:
        return ()
    if not isinstance(turns, list | tuple):
        raise InvalidTrace(f"'{name}' must be a list of {{role, content}} objects")
    kept = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict) or not isinstance(turn.get("role"), str):
            raise InvalidTrace(f"{name}[{i}] must be an object with a string 'role'")
        if turn["role"].strip().lower() in USER_ROLES:
            kept.append(_turn_text(turn.get("content"), f"{name}[{i}].content"))
    total = sum(len(t) for t in kept)
    if total > max_chars:
        raise InvalidTrace(f"the user's turns in '{name}' are {total} characters long; the "
                           f"limit is {max_chars}")
    return tuple(t for t in kept if t.strip())
