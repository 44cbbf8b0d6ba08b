"""Write the BigQuery table definitions Terraform reads, from `schemas/tables.py`.

The columns come from the row classes of `schemas/rows.py` (a field's metadata holds its type,
mode and description); `schemas/tables.py` adds each table's description, partitioning and
clustering. `python infra/export_schemas.py` writes `infra/terraform/schemas/<table>.json` (the
column schema, as `google_bigquery_table.schema` takes it) and
`infra/terraform/schemas/tables.json` (description, partitioning and clustering of every
table). The files are checked in; `--check` exits 1 when they differ from the definitions (a
test runs the same check).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rt4chart.schemas.tables import TABLES, Table, bigquery_schema

OUT = Path(__file__).resolve().parent / "terraform" / "schemas"
SETTINGS = "tables.json"


def _dump(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _settings(table: Table) -> dict:
    if not table.partition_field:
        raise ValueError(f"table {table.name!r} has no partition_field")
    return {
        "description": table.description,
        "partition_field": table.partition_field,
        "partition_type": "DAY",
        "cluster_fields": list(table.cluster_fields),
    }


def render() -> dict[str, str]:
    """File name (under `terraform/schemas/`) to content, for every generated file."""
    files = {f"{name}.json": _dump(bigquery_schema(t)["fields"]) for name, t in TABLES.items()}
    files[SETTINGS] = _dump({name: _settings(t) for name, t in TABLES.items()})
    return files


def drift(out: Path = OUT) -> list[str]:
    """Generated files that are missing, stale, or no longer generated."""
    expected = render()
    stale = [name for name, text in expected.items()
             if not (out / name).is_file() or (out / name).read_text() != text]
    extra = sorted(p.name for p in out.glob("*.json") if p.name not in expected)
    return sorted(stale) + extra


def write(out: Path = OUT) -> None:
    out.mkdir(parents=True, exist_ok=True)
    expected = render()
    for path in out.glob("*.json"):
        if path.name not in expected:
            path.unlink()
    for name, text in expected.items():
        (out / name).write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the checked-in files differ from schemas/ (rows.py, "
                        "tables.py)")
    args = parser.parse_args(argv)
    if args.check:
        stale = drift()
        if stale:
            print("out of date (run python infra/export_schemas.py): " + ", ".join(stale),
                  file=sys.stderr)
            return 1
        return 0
    write()
    print(f"wrote {len(render())} files to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
