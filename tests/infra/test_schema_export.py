"""The BigQuery schemas Terraform reads are generated from schemas/tables.py and stay in step;
the tables are derived from the row classes of schemas/rows.py."""

from __future__ import annotations

import dataclasses
import json
import shutil
import typing
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest

from rt4chart.schemas import columns, rows
from rt4chart.schemas.tables import TABLES, Column, Table, arrow_schema, bigquery_schema

SCHEMAS = Path(__file__).resolve().parents[2] / "infra" / "terraform" / "schemas"


def test_checked_in_schemas_match_tables_py(export_schemas):
    export = export_schemas
    stale = export.drift()
    assert stale == [], f"run: python infra/export_schemas.py (stale: {stale})"
    assert export.main(["--check"]) == 0


@pytest.mark.parametrize("name", sorted(TABLES))
def test_schema_file_is_the_bigquery_schema(name):
    fields = json.loads((SCHEMAS / f"{name}.json").read_text())
    assert fields == bigquery_schema(TABLES[name])["fields"]
    assert [f["name"] for f in fields] == TABLES[name].column_names


def test_settings_give_day_partitioning_and_clustering_of_every_table():
    settings = json.loads((SCHEMAS / "tables.json").read_text())
    assert set(settings) == set(TABLES)
    for name, table in TABLES.items():
        s = settings[name]
        assert s["partition_type"] == "DAY"
        assert s["partition_field"] == table.partition_field
        column = next(c for c in table.columns if c.name == table.partition_field)
        assert column.type == "TIMESTAMP"
        assert s["cluster_fields"] == list(table.cluster_fields)
        assert set(s["cluster_fields"]) <= set(table.column_names)
        assert 0 < len(s["cluster_fields"]) <= 4  # BigQuery's limit
        assert s["description"] == table.description


def test_check_reports_a_changed_a_missing_and_an_extra_file(tmp_path, export_schemas):
    export = export_schemas
    out = tmp_path / "schemas"
    shutil.copytree(SCHEMAS, out)
    assert export.drift(out) == []
    answers = json.loads((out / "answers.json").read_text())
    (out / "answers.json").write_text(json.dumps(answers[:-1], indent=2) + "\n")
    (out / "claims.json").unlink()
    (out / "old_table.json").write_text("[]\n")
    assert export.drift(out) == ["answers.json", "claims.json", "old_table.json"]
    export.write(out)
    assert export.drift(out) == []
    assert not (out / "old_table.json").exists()


PYTHON_TYPES = {"STRING": str, "INT64": int, "FLOAT64": float, "BOOL": bool,
                "TIMESTAMP": datetime}


def _hint(meta) -> object:
    """The annotation a column's metadata calls for."""
    base = meta["record"] or PYTHON_TYPES[meta["type"]]
    return {"REQUIRED": base, "NULLABLE": base | None, "REPEATED": tuple[base, ...]}[meta["mode"]]


def _row_classes(row_type: type) -> list[type]:
    """A row class and the row classes of its RECORD columns, recursively."""
    nested = [f.metadata["record"] for f in dataclasses.fields(row_type) if f.metadata["record"]]
    return [row_type, *(c for n in nested for c in _row_classes(n))]


@pytest.mark.parametrize("name", sorted(TABLES))
def test_table_columns_are_the_row_class_fields(name):
    table = TABLES[name]
    assert table.row_type is not None and dataclasses.is_dataclass(table.row_type)
    assert table.column_names == [f.name for f in dataclasses.fields(table.row_type)]
    for row_type in _row_classes(table.row_type):
        assert row_type.__dataclass_params__.frozen, row_type
        hints = typing.get_type_hints(row_type)
        for f in dataclasses.fields(row_type):
            assert f.kw_only, (row_type.__name__, f.name)
            assert set(f.metadata) == {"type", "mode", "description", "record"}
            assert hints[f.name] == _hint(f.metadata), (row_type.__name__, f.name)
            assert f.default is dataclasses.MISSING, (row_type.__name__, f.name)


def _value(meta, i: int) -> object:
    if meta["record"]:
        return _sample(meta["record"], i)
    return {"STRING": f"s{i}", "INT64": i, "FLOAT64": i + 0.5, "BOOL": i % 2 == 0,
            "TIMESTAMP": datetime(2024, 6, 1, 0, 0, i, tzinfo=UTC)}[meta["type"]]


def _sample(row_type: type, i: int = 1) -> object:
    """A row with a value in every column (two elements in a REPEATED one)."""
    values = {}
    for f in dataclasses.fields(row_type):
        meta = f.metadata
        many = meta["mode"] == "REPEATED"
        values[f.name] = tuple(_value(meta, i + k) for k in range(2)) if many else _value(meta, i)
    return row_type(**values)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_a_row_becomes_the_dict_its_schemas_take_and_back(name):
    table = TABLES[name]
    row = _sample(table.row_type)
    written = columns.to_dict(row)
    assert list(written) == table.column_names
    assert all(isinstance(written[c.name], list) for c in table.columns if c.mode == "REPEATED")
    arrow = pa.Table.from_pylist([written], schema=arrow_schema(table))
    (read,) = arrow.to_pylist()
    assert columns.from_dict(table.row_type, read) == row
    assert columns.from_dict(table.row_type, written) == row


def test_a_new_field_is_a_new_column_in_every_derived_schema():
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Extended(rows.JudgeCacheRow):
        hits: tuple[int, ...] = columns.column("INT64", "REPEATED", "times reused")

    table = Table.of("judge_cache", Extended, "d", partition_field="created_at",
                     cluster_fields=("stage",), insert_id=("key",))
    assert table.columns[:-1] == TABLES["judge_cache"].columns
    assert table.columns[-1] == Column("hits", "INT64", "REPEATED", (), "times reused")
    assert bigquery_schema(table)["fields"][-1] == {
        "name": "hits", "type": "INT64", "mode": "REPEATED", "description": "times reused"}
    assert arrow_schema(table).field("hits").type == pa.list_(pa.int64())


def test_column_metadata_is_checked():
    with pytest.raises(ValueError, match="bad column"):
        columns.column("INTEGER")
    with pytest.raises(ValueError, match="bad column"):
        columns.column("RECORD", "REPEATED")
    with pytest.raises(ValueError, match="bad column"):
        columns.column("STRING", "OPTIONAL")
