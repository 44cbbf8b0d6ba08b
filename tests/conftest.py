"""Shared fixtures: the fakes folder on sys.path (custom judges load by module name)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS / "fakes"))

DATA = TESTS / "data"
SHARED_RAGTRUTH = TESTS.parent.parent / "shared" / "data" / "ragtruth"

# Hypothesis: a fixed budget and a fixed sequence of examples (derandomize), so that .ci/run
# takes the same time and finds the same thing on every run; no example database is written.
# `HYPOTHESIS_PROFILE=deep` searches more (and randomly) when a text rule changes.
settings.register_profile(
    "ci", max_examples=60, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "deep", max_examples=2000, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def ragtruth_sample() -> Path:
    return DATA / "ragtruth_sample.jsonl"



@pytest.fixture
def audit(tmp_path):
    """Run `rt4chart audit ARGS --out TMP` in process; returns (exit code, tables, out dir)."""
    from rt4chart.pipeline.cli import main as cli

    from testutil import read_tables

    def run(*args: str, out: Path | None = None):
        out = out or tmp_path / "out"
        code = cli.main(["audit", *args, "--out", str(out)])
        tables = read_tables(out) if (out / "answers").exists() else {}
        return code, tables, out

    return run
