"""In-memory trace records (`rt4chart.audit(records)`) written to files that `rt4chart audit`
reads, through its own doors, so that the API validates and dead-letters them by the same
rules and with the same reasons as the command does.

Before, the API wrote every record with orjson, which turns NaN and Infinity into null (the
trace was audited; the command dead-letters it), refuses integers beyond 64 bits (the whole call
failed; the command reads them exactly) and turns a UUID or bytes into text (the command's
Parquet reader hands them to validation as they are, which refuses them). Now:

- a record JSON can hold is written as the JSON line Python's `json` writes (NaN, Infinity and
  -Infinity as the tokens the command names in its dead letter; integers exact), read as the
  command reads a JSON line;
- a `timestamp` given as a datetime is written as its RFC 3339 text first (the same instant to
  the microsecond; a datetime without a zone is UTC, as a Parquet timestamp is), so a record
  that is JSON but for it stays a JSON line;
- a record holding other values JSON cannot (a UUID, bytes, a datetime elsewhere, a Decimal,
  keys that are not text) is written as a Parquet row, which holds them as they are, and read
  as the command reads Parquet rows: validation sees the UUID and refuses it by name;
- a record neither can hold (an object of the caller's class) is a TypeError for the call,
  naming the record, before anything runs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rt4chart.transforms.common.fields import SURROGATE

JSONL = "traces.jsonl"


def _exact_json(record: dict) -> str | None:
    """The record as the JSON line Python's `json` writes, or None when JSON cannot hold it
    exactly: a value of another type, or an object key that is not text (`json` would turn
    1, True or None into "1", "true", "null")."""
    stack: list[Any] = [record]
    while stack:  # iterative: a deep record must not exhaust the stack here
        item = stack.pop()
        if isinstance(item, dict):
            if not all(isinstance(k, str) for k in item):
                return None
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif item is not None and not isinstance(item, str | int | float):  # bool is an int
            return None
    try:
        text = json.dumps(record, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        return None
    if SURROGATE.search(text):  # a lone surrogate cannot be UTF-8: escaped, as json writes it
        text = json.dumps(record, allow_nan=True)
    return text


def _timestamp_text(record: dict) -> dict:
    """The record with a datetime `timestamp` as RFC 3339 text (UTC when it has no zone)."""
    value = record.get("timestamp")
    if not isinstance(value, datetime):
        return record
    zoned = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return {**record, "timestamp": zoned.isoformat()}


def _parquet_row(record: dict) -> pa.Table | None:
    """The record as a one-row Arrow table, or None when Arrow cannot hold it as it is."""
    try:
        return pa.Table.from_pylist([record])
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None


def _name(value: Any) -> str:
    return type(value).__name__


def write_records(records: Iterable[Mapping[str, Any]], folder: str) -> tuple[str, ...]:
    """Write `records` into `folder` as files `rt4chart audit` reads (see the module's
    docstring); their paths (the JSON lines first, then one Parquet file per record that is
    not JSON). None when there were no records.

    Raises:
        TypeError: a record that is not a mapping, or that neither JSON nor Parquet can hold.
    """
    lines = os.path.join(folder, JSONL)
    paths = [lines]
    count = 0
    with open(lines, "w", encoding="utf-8") as fh:
        for index, record in enumerate(records):
            if not isinstance(record, Mapping):
                raise TypeError(f"record {index}: a trace is a dict, got {_name(record)} (pass "
                                "a path as records= for files)")
            record = _timestamp_text(dict(record))
            text = _exact_json(record)
            count += 1
            if text is not None:
                fh.write(text + "\n")
                continue
            row = _parquet_row(record)
            if row is None:
                raise TypeError(f"record {index} is not JSON, nor a Parquet row: it holds "
                                f"{_odd_value(record)}; give text, numbers, lists and dicts")
            paths.append(os.path.join(folder, f"record-{index:08d}.parquet"))
            pq.write_table(row, paths[-1])
    return tuple(paths) if count else ()


def _odd_value(record: dict) -> str:
    """What in a record Arrow cannot hold, for the error: in the first field it refuses, the
    first value that is not JSON (Arrow infers a UUID alone, not inside a map)."""
    for name, value in record.items():
        if _parquet_row({name: value}) is not None:
            continue
        stack: list[tuple[str, Any]] = [(name, value)]
        while stack:
            where, item = stack.pop(0)
            if isinstance(item, dict):
                stack.extend((f"{where}.{k}", v) for k, v in item.items())
            elif isinstance(item, list | tuple):
                stack.extend((f"{where}[{i}]", v) for i, v in enumerate(item))
            elif item is not None and not isinstance(item, str | int | float):
                return f"a {_name(item)} at {where!r}"
    return "values of types that cannot share a column"
