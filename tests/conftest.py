"""Shared fixtures: the fakes folder on sys.path (custom judges load by module name)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS / "fakes"))

DATA = TESTS / "data"
SHARED_RAGTRUTH = TESTS.parent.parent / "shared" / "data" / "ragtruth"


@pytest.fixture
def ragtruth_sample() -> Path:
    return DATA / "ragtruth_sample.jsonl"



@pytest.fixture
def audit(tmp_path):
    """Run `rt4chart audit ARGS --out TMP` in process; returns (exit code, tables, out dir)."""
    from rt4chart.pipeline import cli

    from testutil import read_tables

    def run(*args: str, out: Path | None = None):
        out = out or tmp_path / "out"
        code = cli.main(["audit", *args, "--out", str(out)])
        tables = read_tables(out) if (out / "answers").exists() else {}
        return code, tables, out

    return run
