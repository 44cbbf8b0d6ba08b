"""`audit --estimate` within 15% of the calls, input and output tokens that the real run then
makes through the real openai client on the local server, for a QA, a Summary and a Data2txt
trace (the shortest of each in the bundled sample, to keep the run small); and the estimate
itself makes no request. The larger sample: tests/bench/bench_estimate.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
DATA = TESTS / "data"
sys.path.insert(0, str(TESTS / "bench"))
from bench_estimate import TASKS, measure  # noqa: E402


def shortest(task: str) -> str:
    lines = [line for line in (DATA / "ragtruth_sample.jsonl").read_text().splitlines()
             if json.loads(line)["route"] == task]
    return min(lines, key=len)


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-estimate-0123456789")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.mark.parametrize("task", TASKS)
def test_estimate_is_within_15_percent_of_the_real_run(tmp_path, task):
    measured = measure([shortest(task)], tmp_path)
    for what, (estimated, actual) in measured.items():
        assert actual > 0
        assert abs(estimated - actual) / actual <= 0.15, (task, what, estimated, actual)
