"""A usage report that is null, missing or negative is unknown usage, through real audits (the
real `openai` client against the local fake server): the calls still count and their answers
are read (never `judge_error` for it), and the cost is unknown (NULL, "cost unknown"), never
negative and never $0."""

from __future__ import annotations

import json
import re

import pytest

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.report.packing import unpacked

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
    page = unpacked(html.read_text())  # trace views as a browser shows them
    assert "cost unknown" in page and not re.search(r"<td>\$-", page)


def _huge_completion(body: dict, usage: dict) -> dict:
    return {**usage, "completion_tokens": 5 * 10**18}  # fits 64 bits; two of them do not


def _huge_prompt(body: dict, usage: dict) -> dict:
    return {**usage, "prompt_tokens": 1e300}


@pytest.mark.parametrize("rewrite", [_huge_completion, _huge_prompt])
def test_implausible_token_counts_are_unknown_and_every_answer_is_kept(tmp_path, audit, capsys,
                                                                        rewrite):
    """Issue 33, defect 2: such a report failed the run (OverflowError writing the costs table,
    or in the progress tally) and the output folder went with it: 0 of 10 answers kept."""
    records = [{**RECORDS[0], "trace_id": f"u{i}"} for i in range(10)]
    traces = write_jsonl(tmp_path / "t.jsonl", records)
    with FakeOpenAI(usage=rewrite) as server:
        code, tables, out = audit(str(traces), "--judge", "openai", "--base-url",
                                  server.base_url)
    assert code == 0
    assert [a["status"] for a in tables["answers"]] == ["ok"] * 10
    assert all(a["cost_usd"] is None for a in tables["answers"])  # unknown, not huge
    for column in ("input_tokens", "output_tokens"):
        assert 0 <= sum(c[column] for c in tables["costs"]) < 10**9
    assert json.loads((out / "summary.json").read_text())["cost_usd"] is None
    html = tmp_path / "report.html"
    capsys.readouterr()
    assert cli.main(["report", str(out), "--out", str(html)]) == 0
    assert "10 answers, 10 complete" in capsys.readouterr().out


def test_a_valid_usage_report_still_has_its_cost(tmp_path, audit):
    traces = write_jsonl(tmp_path / "t.jsonl", RECORDS)
    with FakeOpenAI() as server:
        # Named: a model the server listed on its own is never priced (served_models.py)
        code, tables, _ = audit(str(traces), "--judge", "openai", "--base-url", server.base_url,
                                "--model", "gpt-4o-mini")
    assert code == 0
    assert all(a["cost_usd"] is not None and a["cost_usd"] > 0 for a in tables["answers"])


class _Usage:
    def __init__(self, **fields):
        self.__dict__.update(fields)


def test_token_counts_are_whole_non_negative_numbers_or_unknown():
    from rt4chart.transforms.judges.openai.pricing import reported_usage, token_count

    assert [token_count(v) for v in (0, 12, 12.0, None, -1, 1.5, "12", True, float("nan"))] == [
        0, 12, 12, None, None, None, None, None, None]
    assert [token_count(v) for v in (5 * 10**18, 1e300, float("inf"), 10**9 + 1, 10**9)] == [
        None, None, None, None, 10**9]
    details = _Usage(cached_tokens=None)
    assert reported_usage(_Usage(prompt_tokens=10, completion_tokens=2,
                                 prompt_tokens_details=details), None) == (10, 0, 2, None)
    assert reported_usage(None, None) == (0, 0, None, None)
