"""A column of an output table, and a row as it is written and read back.

A column is a dataclass field whose metadata holds its BigQuery type, mode and description
(`column`); the row classes that use it are `rows.py`'s. Only a sink turns a row into a dict
(`to_dict`), and a reader of a written table turns a dict back into a row (`from_dict`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, fields
from typing import Any, TypeVar

TYPES = ("STRING", "INT64", "FLOAT64", "BOOL", "TIMESTAMP", "RECORD")
MODES = ("NULLABLE", "REQUIRED", "REPEATED")
R = TypeVar("R")


def column(type_: str, mode: str = "NULLABLE", description: str = "",
           record: type | None = None) -> Any:
    """A column: a dataclass field whose metadata holds its type, mode and description.

    Args:
        type_: one of `TYPES`; "RECORD" needs `record`, the row class of its sub-columns.
        mode: one of `MODES`.
        description: the column's description in BigQuery.
        record: the row class of a RECORD column.
    """
    if type_ not in TYPES or mode not in MODES or (type_ == "RECORD") != (record is not None):
        raise ValueError(f"bad column: type {type_!r}, mode {mode!r}, record {record!r}")
    return field(metadata={"type": type_, "mode": mode, "description": description,
                           "record": record})


def _plain(value: Any, meta: Mapping[str, Any]) -> Any:
    if meta["mode"] == "REPEATED":
        return [to_dict(v) if meta["record"] else v for v in value]
    return to_dict(value) if meta["record"] and value is not None else value


def _typed(value: Any, meta: Mapping[str, Any]) -> Any:
    record = meta["record"]
    if meta["mode"] == "REPEATED":
        return tuple(from_dict(record, v) if record else v for v in value or ())
    return from_dict(record, value) if record and value is not None else value


def to_dict(row: Any) -> dict[str, Any]:
    """A row as a sink writes it: column name to value, REPEATED as lists, RECORD as dicts."""
    return {f.name: _plain(getattr(row, f.name), f.metadata) for f in fields(row)}


def from_dict(row_type: type[R], values: Mapping[str, Any]) -> R:
    """A row from a written row (lists and dicts as `to_dict` makes). A column missing from it
    must be one added after the first release (NULLABLE or REPEATED): a table or file written
    before the column existed reads it as null (or empty); a missing REQUIRED column is an
    error."""
    out = {}
    for f in fields(row_type):
        if f.name not in values and f.metadata.get("mode") == "REQUIRED":
            raise KeyError(f.name)
        out[f.name] = _typed(values.get(f.name), f.metadata)
    return row_type(**out)
