"""Helpers shared by tests."""

from __future__ import annotations

import json
from pathlib import Path


def read_tables(out: Path) -> dict[str, list[dict]]:
    """Every output table of a run, as lists of rows."""
    from rt4chart.pipeline.summary import read_table
    from rt4chart.schemas.tables import TABLES

    return {name: read_table(str(out), name).to_pylist() for name in TABLES}


def load_traces(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path
