"""In-memory trace records (`rt4chart.audit(records)`) as the elements `rt4chart audit`'s file
reader would hand to validation, entering the graph as elements (`ReadMemory`, a
`beam.Create`): validated and dead-lettered by the same rules and with the same reasons as the
command's, with no file in between (nothing of the caller's leaves the process).

Before, the API wrote every record with orjson, which turns NaN and Infinity into null (the
trace was audited; the command dead-letters it), refuses integers beyond 64 bits (the whole call
failed; the command reads them exactly) and turns a UUID or bytes into text (the command's
Parquet reader hands them to validation as they are, which refuses them). Now, in memory:

- a record JSON can hold becomes the JSON line Python's `json` writes (NaN, Infinity and
  -Infinity as the tokens the command names in its dead letter; integers exact), handed on as
  the command's reader hands on a JSON line (text, parsed by validation);
- a `timestamp` given as a datetime becomes its RFC 3339 text first (the same instant to
  the microsecond; a datetime without a zone is UTC, as a Parquet timestamp is), so a record
  that is JSON but for it stays a JSON line;
- a record holding other values JSON cannot (a UUID, bytes, a datetime elsewhere, a Decimal,
  keys that are not text) becomes a one-row Arrow batch, handed on as the command's Parquet
  reader hands on its rows (`records.batch_rows`): validation sees the UUID and refuses it;
- a record over `max_record_bytes` (its line's UTF-8 bytes, its row's Arrow size) is the
  reader's dead letter (`records.oversize_letter`);
- a record neither can hold (an object of the caller's class) is a TypeError for the call,
  naming the record, before anything runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import apache_beam as beam
import pyarrow as pa

from rt4chart.pipeline.sources.records import ReadOutputs, oversize_letter, sized_rows
from rt4chart.pipeline.storage.text_files import DEFAULT_MAX_RECORD_BYTES, HEAD_KEEP
from rt4chart.transforms.common.fields import SURROGATE


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


@dataclass(frozen=True, eq=False)
class MemoryRecords:
    """A caller's records made ready in the launcher: each the JSON line, or the one-row
    Arrow table, its file would have held (see the module's docstring). Compared by identity
    (a config holding it stays cheap to compare)."""

    elements: tuple[str | pa.Table, ...]

    def __len__(self) -> int:
        return len(self.elements)


def memory_records(records: Iterable[Mapping[str, Any]]) -> MemoryRecords:
    """`records` made ready for the graph (see the module's docstring).

    Raises:
        TypeError: a record that is not a mapping, or that neither JSON nor Arrow can hold.
    """
    elements: list[str | pa.Table] = []
    for index, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise TypeError(f"record {index}: a trace is a dict, got {_name(record)} (pass "
                            "a path as records= for files)")
        record = _timestamp_text(dict(record))
        text = _exact_json(record)
        if text is not None:
            elements.append(text)
            continue
        row = _parquet_row(record)
        if row is None:
            raise TypeError(f"record {index} is not JSON, nor a Parquet row: it holds "
                            f"{_odd_value(record)}; give text, numbers, lists and dicts")
        elements.append(row)
    return MemoryRecords(tuple(elements))


class _RecordFn(beam.DoFn):
    """(index, element) -> what the file reader would give for it: the JSON line, the row's
    dict, or the reader's dead letter (over the size limit, a value Python cannot hold)."""

    def __init__(self, max_bytes: int):
        self._max_bytes = max_bytes

    def process(self, item: tuple[int, str | pa.Table]) -> Iterator:
        index, element = item
        where = f"record {index}"
        if isinstance(element, str):
            data = element.encode("utf-8", errors="surrogatepass")
            if len(data) > self._max_bytes:
                yield beam.pvalue.TaggedOutput("dead", oversize_letter(
                    where, len(data), data[:HEAD_KEEP], "utf-8", self._max_bytes))
            elif element.strip():
                yield element
            return
        for batch in element.to_batches():
            yield from sized_rows(batch, "record", index, self._max_bytes)


class ReadMemory(beam.PTransform):
    """In-memory records (`MemoryRecords`) -> raw records and the read stage's dead letters,
    as `ReadTraces` gives them from files."""

    def __init__(self, records: MemoryRecords, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES):
        super().__init__()
        self._records = records
        self._max_bytes = max_record_bytes

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadOutputs:
        parts = (pbegin
                 | "Records" >> beam.Create(list(enumerate(self._records.elements)),
                                            reshuffle=False)
                 | "AsRead" >> beam.ParDo(_RecordFn(self._max_bytes)).with_outputs(
                     "dead", main="records"))
        return ReadOutputs(parts.records, parts.dead)


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
