"""Every judge call ends (issue 47, point 3): a server that keeps streaming and never finishes
a reply, reached through the real `openai` client, ends the run by itself with every answer
incomplete and the reason named (never ENT), while a slow server that does finish completes.

Before, each token restarted both the idle timer and the call's deadline, and nothing capped a
reply: one whitespace token a second kept `rt4chart audit` running past any limit. The runs
here are subprocesses (the command and `rt4chart.audit`) with a generous timeout as a safety
net only: the assertions are about what the run wrote, never about how long it took.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sse_stream import Pace

import fake_judges as fj
from fake_openai_server import FakeOpenAI
from testutil import read_tables, write_jsonl

SAFETY_NET_S = 900  # only so that a regression fails instead of hanging the suite
SECOND = {"trace_id": "opening-hours", "route": "faq", "question": "When does it open?",
          "contexts": [{"doc_id": "hours", "text": "The library opens at 8 am on weekdays."}],
          "answer": "The library opens at 8 am on weekdays."}
CLI = "import sys\nfrom rt4chart.pipeline.cli import main\nsys.exit(main.main(sys.argv[1:]))\n"
# rt4chart.audit in a process of its own; prints the answers as JSON lines (a run that judged
# nothing raises AuditFailed, which holds them).
API = """import json, sys
import rt4chart
from rt4chart.pipeline.api import AuditFailed
base_url, traces, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
try:
    result = rt4chart.audit(traces, judge="openai", base_url=base_url, judge_option=options)
except AuditFailed as failed:
    print("AuditFailed:", failed)
    result = failed.result
for a in result.answers:
    print(json.dumps({"trace_id": a.trace_id, "status": a.status, "label": a.label,
                      "reason": a.reason, "claims": [c.label for c in a.claims]}))
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parents[1] / "fakes"),
                                                      env.get("PYTHONPATH")]))
    return env


def _traces(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "traces.jsonl", [fj.RUNNING_TRACE, SECOND])


def audit_command(tmp_path: Path, server: FakeOpenAI, *options: str) -> tuple[int, dict, str]:
    """`rt4chart audit` against `server` with judge options `options`, in a subprocess."""
    out = tmp_path / "out"
    args = ["audit", str(_traces(tmp_path)), "--out", str(out), "--judge", "openai",
            "--base-url", server.base_url]
    for option in options:
        args += ["--judge-option", option]
    done = subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True, text=True,
                          env=_env(), timeout=SAFETY_NET_S)
    tables = read_tables(out) if (out / "answers").exists() else {}
    return done.returncode, tables, done.stderr


def audit_api(tmp_path: Path, server: FakeOpenAI, **options: str) -> tuple[list[dict], str]:
    """`rt4chart.audit` against `server`, in a subprocess: its answers and what it printed."""
    done = subprocess.run([sys.executable, "-c", API, server.base_url,
                           str(_traces(tmp_path)), json.dumps(options)],
                          capture_output=True, text=True, env=_env(), timeout=SAFETY_NET_S)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    return [json.loads(line) for line in lines if line.startswith("{")], done.stdout


def _all_incomplete(answers: list[dict], *reasons: str) -> None:
    """Every answer incomplete, undecided, its reason matching each of `reasons` (regexes)."""
    assert {a["trace_id"] for a in answers} == {"running-example", "opening-hours"}
    for answer in answers:
        assert answer["status"] == "incomplete" and answer["label"] is None, answer
        for reason in reasons:
            assert re.search(reason, answer["reason"]), answer["reason"]


def test_one_whitespace_token_a_second_forever_ends_with_every_answer_incomplete(tmp_path):
    # Before: each whitespace token restarted the idle timer and the call's deadline (15 s
    # here), so no call ever ended.
    with FakeOpenAI(pace=Pace(drip=" ", token_s=1.0)) as server:
        code, tables, err = audit_command(tmp_path, server, "timeout_s=3", "idle_timeout_s=2",
                                          "max_attempts=2")
        assert server.requests  # the run's calls reached the dripping server
    assert code != 0, err[-2000:]
    # Whitespace says the server has read the prompt: from then the idle wait holds, and
    # whitespace never restarts it.
    _all_incomplete(tables["answers"], r"no token but whitespace for [0-9.]+ s",
                    "whitespace-only chunk[(]s[)] came, which are not progress")
    assert all(c["label"] is None for c in tables["claims"])  # a failure is never ENT


@pytest.mark.parametrize(("token", "reason"), [
    ("x", "the reply passed its cap of"),  # real tokens: the cap ends the reply
    (" ", r"no token but whitespace for [0-9.]+ s"),  # no progress: the idle wait ends it
])
def test_twenty_tokens_a_second_forever_ends_through_the_python_api(tmp_path, token, reason):
    with FakeOpenAI(pace=Pace(drip=token, token_s=0.05)) as server:
        answers, printed = audit_api(tmp_path, server, max_output_tokens="256",
                                     idle_timeout_s="5", timeout_s="10")
    assert "AuditFailed: run failed: no answer could be judged" in printed
    _all_incomplete(answers, reason)
    assert all(label is None for a in answers for label in a["claims"])


def test_a_whole_reply_that_trickles_in_forever_ends_at_the_call_deadline(tmp_path):
    # Read whole (stream=false), a body that gets a byte a second defeats a per-read timeout:
    # the reply's deadline (here the call's, call_deadline_s, an option of every judge that
    # the openai judge used to refuse) ends it.
    with FakeOpenAI(pace=Pace(drip=" ", token_s=1.0)) as server:
        code, tables, err = audit_command(tmp_path, server, "stream=false", "timeout_s=2",
                                          "call_deadline_s=6", "max_attempts=2")
    assert code != 0, err[-2000:]
    assert "unknown openai judge option" not in err
    _all_incomplete(tables["answers"])
    for answer in tables["answers"]:
        assert ("did not end within its deadline of 6.0 s" in answer["reason"]
                or "did not answer within 6 s (call_deadline_s)" in answer["reason"]), answer


def test_a_slow_server_that_finishes_completes_past_tight_waits(tmp_path):
    # About ten tokens a second: every reply takes several seconds, longer than timeout_s
    # and idle_timeout_s together, and still every answer is judged.
    with FakeOpenAI(pace=Pace(first_s=0.3, token_s=0.1)) as server:
        code, tables, err = audit_command(tmp_path, server, "timeout_s=2", "idle_timeout_s=1")
    assert code == 0, err[-3000:]
    answers = tables["answers"]
    assert len(answers) == 2 and all(a["status"] == "ok" for a in answers), answers
    assert all(c["status"] == "ok" and c["label"] for c in tables["claims"])


def test_a_server_that_drips_on_the_probe_too_stops_the_run_before_any_trace(tmp_path):
    # The start-up probe waits long for a local server's first token (it is there to find a
    # slow server), but whitespace is no token: the idle wait ends it, and the run stops there
    # with the reason, as for any endpoint that cannot be used.
    with FakeOpenAI(pace=Pace(drip=" ", token_s=0.5), probe_faults=True) as server:
        code, tables, err = audit_command(tmp_path, server, "idle_timeout_s=2")
    assert code == 1 and not tables.get("answers")
    assert "did not answer the probe's 'limit' call in time" in err
    assert "no token but whitespace for" in err


SHORT = [SECOND, {"trace_id": "museum", "route": "faq", "question": "When did it open?",
                  "contexts": [{"doc_id": "museum", "text": "The river museum opened in 1990."}],
                  "answer": "The river museum opened in 1990."}]


def test_a_one_slot_server_without_streamed_usage_is_slow_not_dead(tmp_path):
    # llama-cpp-python's shape (issue 47, point 9): one request at a time, streams without a
    # usage report (so replies are read whole), a model list that does not answer while it
    # computes. Each whole reply takes longer than timeout_s: before, every read timed out at
    # timeout_s, the breaker opened and answers ended incomplete; a whole reply's first byte
    # comes when it is written, so rt4chart now waits for its deadline, measured from the
    # server's own whole replies.
    traces = write_jsonl(tmp_path / "short.jsonl", SHORT)
    out = tmp_path / "out"
    with FakeOpenAI(pace=Pace(first_s=0.3, token_s=0.05), serial=True, stream_usage=False,
                    health=False) as server:
        args = ["audit", str(traces), "--out", str(out), "--judge", "openai", "--base-url",
                server.base_url]
        for option in ("timeout_s=1", "idle_timeout_s=1", "breaker_after_s=3"):
            args += ["--judge-option", option]
        done = subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True,
                              text=True, env=_env(), timeout=SAFETY_NET_S)
        assert server.requests and all("stream" not in r for r in server.requests[1:])
    assert done.returncode == 0, done.stderr[-3000:]
    answers = read_tables(out)["answers"]
    assert {a["trace_id"] for a in answers} == {"opening-hours", "museum"}
    assert all(a["status"] == "ok" and a["label"] == "ENT" for a in answers), answers
    assert "replies read whole" in done.stderr
