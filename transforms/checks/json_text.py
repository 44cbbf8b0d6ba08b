"""One JSON text read as exactly one value, or refused: what `validate.load_json` reads records
with.

orjson is fast but, like most JSON readers, silently keeps the last of two values of one key
(`{"answer": "30 days", "answer": "14 days"}`), and rounds integers beyond 64 bits to doubles.
Readers disagree on which copy of a repeated key counts, so a record that repeats one is
ambiguous: it is refused (a dead letter naming the key and where it is), never read with one
reader's guess. The check costs one `orjson.dumps` of the parsed value: every key-value pair
of a JSON text has exactly one colon outside strings, so the text and the value written back
have as many colons exactly when no object repeated a key (a `\\u003a` escape, a colon the
writer would write as it is, sends the text to the exact check). Only a text where they differ
is read again with the standard library to find the key.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from rt4chart.transforms.common.fields import InvalidTrace

_COLON_ESCAPE = "u003"  # \u003a or \u003A, a colon written as an escape (or u003 in text)
_COLON_ESCAPE_BYTES = _COLON_ESCAPE.encode()


class _Repeated(dict):
    """An object of the text that repeats a key (the standard library's reading)."""

    repeated: str = ""


def _pairs(pairs: list[tuple[str, Any]]) -> dict:
    out = _Repeated(pairs)
    if len(out) == len(pairs):
        return dict(out)
    seen: set[str] = set()
    out.repeated = next(k for k, _ in pairs if k in seen or seen.add(k))
    return out


def _has_rounded_integer(value: Any) -> bool:
    """Whether a parsed value holds a double that orjson made of an integer beyond 64 bits."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float) and abs(item) >= 2**63 and item.is_integer():
            return True
    return False


def may_repeat_keys(data: bytes | str, value: Any) -> bool:
    """Whether a JSON text may hold an object with a repeated key, from its parsed `value`:
    False only when it certainly holds none.

    orjson writes `value` back with one colon per key and every colon inside a string as it is,
    so when `data` writes no colon as an escape, its colons outside strings (one per key-value
    pair it holds) equal the parsed keys exactly when both texts have as many colons."""
    if isinstance(data, str):
        colon, escape = ":", _COLON_ESCAPE
    else:
        colon, escape = b":", _COLON_ESCAPE_BYTES
    if escape in data:
        return True
    try:
        again = orjson.dumps(value)
    except TypeError:  # not writable back (a lone surrogate): the exact check decides
        return True
    return data.count(colon) != again.count(b":")


def repeated_key(value: Any) -> str | None:
    """Where the first object that repeats a key is, and the key, in a value the standard
    library read with `_pairs` (e.g. "key 'answer' of the record", "key 'text' of
    contexts[0]"); None if no object repeats one."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, _Repeated):
            return f"key {item.repeated!r} of {path or 'the record'}"
        if isinstance(item, dict):
            stack.extend((v, f"{path}.{k}" if path else k) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(item))
    return None


def _strict_reading(data: bytes | str) -> Any:
    """The standard library's reading of a text orjson read, refusing a repeated key."""
    try:
        value = json.loads(data, object_pairs_hook=_pairs)
    except RecursionError as exc:
        raise InvalidTrace("not valid JSON: nested too deep to read exactly (to check its "
                           "keys or its integers beyond 64 bits)") from exc
    where = repeated_key(value)
    if where is not None:
        raise InvalidTrace(f"not read: {where} appears more than once, so which value is meant "
                           "is ambiguous (JSON readers disagree); send each key once")
    return value


def load_strict(data: bytes | str) -> Any:
    """One JSON text as orjson reads it, refusing a repeated key at any depth and reading
    integers beyond 64 bits exactly (then with the standard library).

    Raises:
        orjson.JSONDecodeError: not JSON (left to the caller to word).
        InvalidTrace: an object repeats a key, or too deep to check.
    """
    value = orjson.loads(data)
    if _has_rounded_integer(value) or may_repeat_keys(data, value):
        return _strict_reading(data)
    return value
