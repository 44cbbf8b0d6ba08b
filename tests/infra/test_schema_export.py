"""The BigQuery schemas Terraform reads are generated from schemas/tables.py and stay in step."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rt4chart.schemas.tables import TABLES, bigquery_schema

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
