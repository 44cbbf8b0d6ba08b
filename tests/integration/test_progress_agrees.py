"""The progress line and summary.json count judge calls the same way, and a model with no price
is "cost unknown" in both (not $0.0000 in the progress line)."""

from __future__ import annotations

import json
import logging
import re
import threading

import pytest

from rt4chart.pipeline.run.progress_figures import Progress

from fake_openai_server import FakeOpenAI, lexical_responder
from testutil import write_jsonl

CTX = "Tokyo is the capital of Japan. It has about 14 million inhabitants."
RECORDS = [{"trace_id": f"t{i}", "contexts": [CTX],
            "answer": "Tokyo is the capital of Japan. It has about 14 million inhabitants."}
           for i in range(3)]


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-progress-0123456789abcdefghij")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_progress_and_summary_agree_on_calls_and_unknown_cost(tmp_path, audit, caplog):
    traces = write_jsonl(tmp_path / "t.jsonl", RECORDS)
    # Malformed and schema-violating replies are retried: calls are more than the requests'
    # elements, and every attempt the usage counts is a call in both.
    with caplog.at_level(logging.INFO), FakeOpenAI(every={"malformed": 3, "schema": 5}) as srv:
        code, _, out = audit(str(traces), "--judge", "openai", "--base-url", srv.base_url,
                             "--judge-option", "model=my-local-model",
                             "--judge-option", "backoff_initial_s=0.01",
                             "--judge-option", "backoff_max_s=0.02")
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    final = [r.getMessage() for r in caplog.records if r.getMessage().startswith("progress:")
             and "(final)" in r.getMessage()]
    assert final, [r.getMessage() for r in caplog.records][-20:]
    calls = int(re.search(r"([\d,]+) judge calls", final[-1]).group(1).replace(",", ""))
    assert summary["judge_calls"] > 3 * 2  # retries counted
    assert calls == summary["judge_calls"], (final[-1], summary["judge_calls"])
    assert summary["cost_usd"] is None
    assert "cost unknown" in final[-1] and "$0.0000" not in final[-1]


def test_a_known_cost_is_shown_and_an_unknown_one_wins():
    assert Progress(cost_micro_usd=1_500).line().endswith("$0.0015")
    unknown = Progress(cost_micro_usd=1_500, cost_unknown=1)
    assert unknown.line().endswith("cost unknown")
    assert "cost unknown" in unknown.bar("")
    assert Progress.of({"verify_local_cost_unknown": 2}).cost_unknown == 2


class _FirstLine(logging.Handler):
    """Sets `seen` at the first progress line logged."""

    def __init__(self):
        super().__init__()
        self.seen = threading.Event()
        self.lines: list[str] = []

    def emit(self, record):
        if record.getMessage().startswith("progress:"):
            self.lines.append(record.getMessage())
            self.seen.set()


def test_a_logs_first_progress_line_gives_an_eta_from_the_expected_calls(tmp_path, audit):
    """stderr not a terminal: the first line, long before --progress-every, has the calls
    expected (the estimate's, which the run then makes) and an ETA from them."""
    traces = write_jsonl(tmp_path / "t.jsonl", RECORDS)
    handler, answered = _FirstLine(), []

    def held(body):  # the first call ends; the others wait for the first line (a slow model)
        if answered:
            handler.seen.wait(120)  # a guard for a failing run, far below --progress-every
        answered.append(1)
        return lexical_responder(body)

    log = logging.getLogger("rt4chart.pipeline.progress")
    log.addHandler(handler)
    level, log.level = log.level, logging.INFO
    try:
        with FakeOpenAI(responder=held) as srv:
            code, _, out = audit(str(traces), "--judge", "openai", "--base-url", srv.base_url,
                                 "--judge-option", "model=my-local-model",
                                 "--progress-every", "3600")
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
    assert code == 0
    calls = json.loads((out / "summary.json").read_text())["judge_calls"]
    first = handler.lines[0]
    assert f"of {calls} expected judge calls" in first, (first, calls)
    assert re.search(r"elapsed, ETA \d", first), first
    assert len(handler.lines) == 2 and handler.lines[-1].endswith("(final)")
