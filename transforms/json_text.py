"""One JSON text read as exactly one value, or refused: what `validate.load_json` reads records
with.

orjson is fast but, like most JSON readers, silently keeps the last of two values of one key
(`{"answer": "30 days", "answer": "14 days"}`), and rounds integers beyond 64 bits to doubles.
Readers disagree on which copy of a repeated key counts, so a record that repeats one is
ambiguous: it is refused (a dead letter naming the key and where it is), never read with one
reader's guess. The check costs one pass over the parsed value: every key-value pair of the
text has exactly one colon outside strings, so the text's colons less those inside its strings
(counted in the parsed strings; a `\\u003a` escape makes that count inexact and sends the text
to the exact check) equal the parsed keys exactly when no object repeats a key. Only a text
where they differ is read again with the standard library to find the key.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from rt4chart.transforms.fields import InvalidTrace

_COLON_ESCAPES = ("u003a", "u003A")


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


def _scan(value: Any) -> tuple[int, int, bool]:
    """(keys of every object, colons inside every string and key, whether a double holds an
    integer beyond 64 bits that orjson rounded) of a parsed value."""
    keys = colons = 0
    rounded = False
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            keys += len(item)
            colons += sum(k.count(":") for k in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            colons += item.count(":")
        elif isinstance(item, float) and abs(item) >= 2**63 and item.is_integer():
            rounded = True
    return keys, colons, rounded


def may_repeat_keys(data: bytes | str, keys: int, string_colons: int) -> bool:
    """Whether a JSON text may hold an object with a repeated key, from its parsed value's key
    and in-string colon counts (`_scan`): False only when it certainly holds none."""
    if isinstance(data, str):
        colon, escapes = ":", _COLON_ESCAPES
    else:
        colon, escapes = b":", tuple(e.encode() for e in _COLON_ESCAPES)
    if any(e in data for e in escapes):
        return True
    return data.count(colon) - string_colons != keys


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
    keys, colons, rounded = _scan(value)
    if rounded or may_repeat_keys(data, keys, colons):
        return _strict_reading(data)
    return value
