"""A usage report that is null, missing or negative is unknown usage, through real audits (the
real `openai` client against the local fake server): the calls still count and their answers
are read (never `judge_error` for it), and the cost is unknown (NULL, "cost unknown"), never
negative and never $0."""

from __future__ import annotations

import json
import re

import pytest

from rt4chart.pipeline import cli

from fake_openai_server import FakeOpenAI
from testutil import write_jsonl

CTX = "Tokyo is the capital of Japan. It has about 14 million inhabitants."
RECORDS = [{"trace_id": f"t{i}", "contexts": [CTX], "answer": "Tokyo is the capital of Japan."}
           for i in range(3)]


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-usage-0123456789abcdef")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _null_prompt(body: dict, usage: dict) -> dict:
    return {**usage, "prompt_tokens": None}


def _missing(body: dict, usage: dict) -> None:
    return None


def _negative(body: dict, usage: dict) -> dict:
    return {**usage, "prompt_tokens": -5000, "completion_tokens": -40,
            "prompt_tokens_details": {"cached_tokens": 0}}


def _null_completion(body: dict, usage: dict) -> dict:
    return {**usage, "completion_tokens": None}


def _cached_over_prompt(body: dict, usage: dict) -> dict:
    return {**usage, "prompt_tokens_details": {"cached_tokens": usage["prompt_tokens"] + 1}}


@pytest.mark.parametrize("rewrite", [_null_prompt, _missing, _negative, _null_completion,
                                     _cached_over_prompt])
def test_unusable_usage_is_unknown_cost_not_a_judge_error(tmp_path, audit, capsys, rewrite):
    traces = write_jsonl(tmp_path / "t.jsonl", RECORDS)
    with FakeOpenAI(usage=rewrite) as server:
        code, tables, out = audit(str(traces), "--judge", "openai", "--base-url",
                                  server.base_url)
        served = server.statuses["ok"]
    assert code == 0
    assert [a["status"] for a in tables["answers"]] == ["ok"] * 3
    assert all(c["status"] != "judge_error" for c in tables["claims"])
    assert all(a["cost_usd"] is None and a["judge_calls"] > 0 for a in tables["answers"])
    assert tables["costs"] and all(c["cost_usd"] is None for c in tables["costs"])
    assert sum(c["calls"] for c in tables["costs"]) == served
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cost_usd"] is None and summary["judge_calls"] == served
    assert "cost unknown" in capsys.readouterr().out
    html = tmp_path / "report.html"
    assert cli.main(["report", str(out), "--out", str(html)]) == 0
    page = html.read_text()
    assert "cost unknown" in page and not re.search(r"<td>\$-", page)


def test_a_valid_usage_report_still_has_its_cost(tmp_path, audit):
    traces = write_jsonl(tmp_path / "t.jsonl", RECORDS)
    with FakeOpenAI() as server:
        code, tables, _ = audit(str(traces), "--judge", "openai", "--base-url", server.base_url)
    assert code == 0
    assert all(a["cost_usd"] is not None and a["cost_usd"] > 0 for a in tables["answers"])


class _Usage:
    def __init__(self, **fields):
        self.__dict__.update(fields)


def test_token_counts_are_whole_non_negative_numbers_or_unknown():
    from rt4chart.transforms.judges.pricing import reported_usage, token_count

    assert [token_count(v) for v in (0, 12, 12.0, None, -1, 1.5, "12", True, float("nan"))] == [
        0, 12, 12, None, None, None, None, None, None]
    details = _Usage(cached_tokens=None)
    assert reported_usage(_Usage(prompt_tokens=10, completion_tokens=2,
                                 prompt_tokens_details=details), None) == (10, 0, 2, None)
    assert reported_usage(None, None) == (0, 0, None, None)
