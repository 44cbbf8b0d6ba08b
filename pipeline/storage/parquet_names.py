"""Parquet schemas that repeat a name: two `answer` columns, or a struct with two `text`
fields. Rows read as dicts keep the last of a repeated name silently (pyarrow's to_pylist), or
fail (a struct's as_py), so which value is meant would be a guess: every row of such a file is
a dead letter naming the name, holding all its values as received."""

from __future__ import annotations

from collections.abc import Iterator

import apache_beam as beam
import orjson
import pyarrow as pa

from rt4chart.pipeline.storage.text_files import STAGE
from rt4chart.schemas.records import DeadLetter


def repeated_name(schema: pa.Schema) -> str | None:
    """The first column or nested field name a Parquet schema repeats ("column 'answer'",
    "field 'text' of column 'contexts'"), or None. Rows read as dicts keep the last of a repeated
    name silently (or fail, nested), so which value is meant would be a guess."""
    stack: list[tuple[list[pa.Field], str]] = [(list(schema), "")]
    while stack:
        fields, where = stack.pop()
        names = [f.name for f in fields]
        for name in names:
            if names.count(name) > 1:
                return f"field {name!r} of column {where!r}" if where else f"column {name!r}"
        for f in fields:
            stack.extend((list(t), where or f.name) for t in _nested_types(f.type))
    return None


def _nested_types(kind: pa.DataType) -> list[pa.DataType]:
    """The struct types directly inside a type (itself, a list's items, a map's values)."""
    if pa.types.is_struct(kind):
        return [kind]
    if pa.types.is_map(kind):
        return _nested_types(kind.key_type) + _nested_types(kind.item_type)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(
            kind):
        return _nested_types(kind.value_type)
    return []


def _scalar_json(value: pa.Scalar) -> str:
    """An Arrow value as JSON text keeping every field of a struct, repeated names too."""
    if pa.types.is_struct(value.type) and value.is_valid:
        return "{" + ", ".join(orjson.dumps(f.name).decode() + ": " + _scalar_json(value[i])
                               for i, f in enumerate(value.type)) + "}"
    if isinstance(value, pa.ListScalar | pa.LargeListScalar) and value.is_valid:
        return "[" + ", ".join(_scalar_json(v) for v in value.values) + "]"
    return orjson.dumps(value.as_py(), default=str, option=orjson.OPT_NON_STR_KEYS).decode()


def ambiguous_rows(batch: pa.RecordBatch, where: str, first: int, repeated: str) -> Iterator:
    """Each row of a batch whose schema repeats a name, as a dead letter holding every value."""
    reason = (f"{{}}: not read: {repeated} appears more than once, so which value is meant is "
              "ambiguous; give each column and field one name")
    for i in range(batch.num_rows):
        row = [(name, batch.column(j)[i]) for j, name in enumerate(batch.schema.names)]
        raw = "{" + ", ".join(orjson.dumps(name).decode() + ": " + _scalar_json(v)
                              for name, v in row) + "}"
        ids = [v.as_py() for name, v in row if name == "trace_id" and pa.types.is_string(v.type)]
        trace_id = ids[0] if len(ids) == 1 and isinstance(ids[0], str) else None
        yield beam.pvalue.TaggedOutput("dead", DeadLetter(
            STAGE, reason.format(f"{where} {first + i}"), raw, trace_id))
