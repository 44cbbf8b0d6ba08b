"""Every judge call ends and secrets stay out, through real audits: the real `openai` client
against the local fake server (or a closed port), and custom judges that misbehave."""

from __future__ import annotations

import json
import socket

import pytest

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.report.packing import unpacked  # trace views as a browser shows them
from rt4chart.transforms.judges import runtime
from rt4chart.transforms.judges.openai.judge import OpenAIJudge

from fake_openai_server import FakeOpenAI, RawReply, lexical_responder, tag
from testutil import load_traces, read_tables, write_jsonl

KEY = "sk-test-echo-0123456789abcdefghijkl"
CTX = "Tokyo is the capital of Japan. It has about 14 million inhabitants."
RECORDS = [
    {"trace_id": "bad", "contexts": [CTX],
     "answer": "Tokyo is the capital of Japan. Kyoto has about 14 million inhabitants."},
    {"trace_id": "good", "contexts": [CTX], "answer": "Tokyo is the capital of Japan."},
]


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _openai(base_url: str, *options: str) -> list[str]:
    # The model named: no server listens on a closed port to say which one it serves
    # (served_models.py); the faults tested are the calls'.
    args = ["--judge", "openai", "--base-url", base_url, "--model", "gpt-4o-mini"]
    for option in ("backoff_initial_s=0.02", "backoff_max_s=0.2", *options):
        args += ["--judge-option", option]
    return args


def _claim(body: dict) -> str:
    return tag(body["messages"][-1]["content"], "claim") or ""


def _assert_bad_incomplete_good_ok(tables: dict, reason: str) -> list[dict]:
    answers = {a["trace_id"]: a for a in tables["answers"]}
    assert answers["good"]["status"] == "ok" and answers["good"]["label"] == "ENT"
    assert answers["bad"]["status"] == "incomplete" and answers["bad"]["label"] is None
    assert reason in answers["bad"]["reason"], answers["bad"]["reason"]
    kyoto = [c for c in tables["claims"] if "Kyoto" in c["claim"]]
    assert kyoto and all(c["status"] == "judge_error" and c["label"] is None for c in kyoto)
    return kyoto


def _html_for_kyoto(body: dict, headers: dict) -> RawReply | None:
    if "Kyoto" in _claim(body):
        return RawReply(200, "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
                             "<body><h1>Bad Gateway</h1></body></html>")
    return None


def test_an_html_200_is_retried_then_incomplete_with_a_readable_reason(tmp_path, audit):
    traces = write_jsonl(tmp_path / "t.jsonl", RECORDS)
    with FakeOpenAI(raw=_html_for_kyoto) as server:
        code, tables, _ = audit(str(traces), *_openai(server.base_url, "max_attempts=3"))
    assert code == 3  # answers left incomplete
    kyoto = _assert_bad_incomplete_good_ok(
        tables, "no valid answer after 3 attempts: HTTP 200 reply is not a chat completion "
                "(text/html): '<!DOCTYPE html><html><head><title>502 Bad Gateway")
    assert "AttributeError" not in kyoto[0]["note"]
    assert len([b for b in server.requests if "Kyoto" in _claim(b)]) == 3  # retried
    assert server.statuses["raw"] == 3


def test_non_json_200s_now_and_then_are_retried_and_lose_nothing(tmp_path, audit):
    seen = []

    def sometimes_garbage(body: dict, headers: dict) -> RawReply | None:
        seen.append(1)
        if len(seen) % 4 == 1:  # the 1st, 5th, 9th... request: a JSON content type, no JSON
            return RawReply(200, "<html>maintenance</html>", "application/json")
        if len(seen) % 4 == 3:
            return RawReply(200, "upstream said no", "text/plain")
        return None

    traces = write_jsonl(tmp_path / "t.jsonl", RECORDS)
    with FakeOpenAI(raw=sometimes_garbage) as server:
        code, tables, _ = audit(str(traces), *_openai(server.base_url))
    assert code == 0 and server.statuses["raw"] >= 2
    assert all(a["status"] == "ok" for a in tables["answers"])
    assert {a["trace_id"]: a["label"] for a in tables["answers"]} == {"good": "ENT",
                                                                       "bad": "ENT"}


def _faulty(fault: str, stage: str, *extra: str) -> list[str]:
    args = ["--judge", "fake_judges:faulty", "--judge-option", f"fault={fault}",
            "--judge-option", f"stage={stage}", "--judge-option", "fail_on=Kyoto"]
    for option in extra:
        args += ["--judge-option", option]
    return args


def _loop_survived() -> None:
    """The process's judge runtime (its event loop thread) still runs calls."""
    worker = runtime.acquire(runtime.runtime_handle())
    assert worker.thread.is_alive()
    assert worker.submit(_answer(42)).result() == 42


async def _answer(value: int) -> int:
    return value


@pytest.mark.parametrize("fault, stage", [
    ("KeyboardInterrupt", "local"), ("SystemExit", "global"), ("GeneratorExit", "local"),
    ("JudgeTantrum", "global"), ("KeyboardInterrupt", "decompose"),
])
def test_a_base_exception_from_a_custom_judge_is_a_judge_error(tmp_path, audit, fault, stage):
    traces = write_jsonl(tmp_path / "t.jsonl", RECORDS)
    code, tables, _ = audit(str(traces), *_faulty(fault, stage))
    assert code == 3  # answers left incomplete
    _assert_bad_incomplete_good_ok(tables, f"the judge raised {fault}")
    _loop_survived()
    # A following run on the same worker loop is healthy.
    code, tables, _ = audit(str(traces), "--judge", "offline", out=tmp_path / "after")
    assert code == 0 and all(a["status"] == "ok" for a in tables["answers"])


@pytest.mark.parametrize("fault, stage", [("hang", "local"), ("stubborn", "global"),
                                          ("hang", "decompose")])
def test_a_hanging_custom_judge_ends_at_its_call_deadline(tmp_path, audit, fault, stage):
    traces = write_jsonl(tmp_path / "t.jsonl", RECORDS)
    code, tables, _ = audit(str(traces), *_faulty(fault, stage, "call_deadline_s=0.5",
                                                  "linger_s=0.2"))
    assert code == 3  # answers left incomplete
    _assert_bad_incomplete_good_ok(tables, "did not answer within 0.5 s (call_deadline_s)")
    _loop_survived()


def _breaker_options(*extra: str) -> tuple[str, ...]:
    return ("max_attempts=6", "max_concurrency=2", "breaker_after_s=0.3", *extra)


def test_a_dead_endpoint_opens_the_breaker_and_the_run_gives_up_after_few_requests(
        ragtruth_sample, tmp_path, audit):
    records = load_traces(ragtruth_sample)[:8]
    traces = write_jsonl(tmp_path / "t.jsonl", records)
    with FakeOpenAI() as server:
        server.down = True  # every request: 503
        code, tables, _ = audit(str(traces), *_openai(
            server.base_url, *_breaker_options("breaker_probe_s=3600")))
    assert code == 1  # nothing could be judged
    assert len(tables["answers"]) == len(records)
    assert all(a["status"] == "incomplete" and a["label"] is None for a in tables["answers"])
    refused = [a for a in tables["answers"] if "circuit breaker open" in a["reason"]]
    assert len(refused) >= len(records) - 2, [a["reason"] for a in tables["answers"]]
    assert "Error code: 503" in refused[0]["reason"] and "--redo" in refused[0]["reason"]
    # Without the breaker, each of the calls would be tried 6 times; with it, only the calls
    # in flight before it opened were (at most max_concurrency x max_attempts requests).
    calls = sum(a["judge_calls"] for a in tables["answers"])
    assert calls >= 20
    assert server.statuses["503"] <= 2 * 6 < calls * 6


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_closed_port_opens_the_breaker_after_a_bounded_number_of_attempts(
        ragtruth_sample, tmp_path, audit, monkeypatch):
    attempts = []
    send = OpenAIJudge._send

    async def counted(self, client, body, *args, **kwargs):
        attempts.append(body["model"])
        return await send(self, client, body, *args, **kwargs)

    monkeypatch.setattr(OpenAIJudge, "_send", counted)
    records = load_traces(ragtruth_sample)[:8]
    traces = write_jsonl(tmp_path / "t.jsonl", records)
    # With the start-up probe, a closed port stops the run before any trace; without it (an
    # endpoint that goes away after the run started), the breaker bounds the attempts.
    code, tables, _ = audit(str(traces), *_openai(
        f"http://127.0.0.1:{_closed_port()}/v1",
        *_breaker_options("breaker_probe_s=3600", "probe=false")))
    assert code == 1
    assert all(a["status"] == "incomplete" for a in tables["answers"])
    assert any("circuit breaker open" in a["reason"] and "APIConnectionError" in a["reason"]
               for a in tables["answers"])
    calls = sum(a["judge_calls"] for a in tables["answers"])
    assert 0 < len(attempts) <= 2 * 6 < calls * 6


def test_after_an_outage_a_redo_probes_the_endpoint_and_audits_everything(
        ragtruth_sample, tmp_path, audit):
    records = load_traces(ragtruth_sample)[:4]
    traces = write_jsonl(tmp_path / "t.jsonl", records)
    options = _breaker_options("breaker_probe_s=0.2")
    with FakeOpenAI() as server:
        server.down = True
        code, before, first = audit(str(traces), *_openai(server.base_url, *options))
        assert code == 1 and all(a["status"] == "incomplete" for a in before["answers"])
        server.down = False  # back; the worker's judge (and its open breaker) is the same
        code, after, _ = audit("--redo", str(first), *_openai(server.base_url, *options),
                               out=tmp_path / "redo")
    assert code == 0
    assert sorted(a["trace_id"] for a in after["answers"]) == sorted(
        r["trace_id"] for r in records)
    assert all(a["status"] == "ok" for a in after["answers"])


def _echo_headers(body: dict, headers: dict) -> RawReply | None:
    """An endpoint that echoes the request's credentials in its error messages."""
    claim = _claim(body)
    auth = headers.get("authorization", "")
    if "Kyoto" in claim:  # a 400 (not retried) whose message echoes the headers
        message = f"Invalid request: headers {{'authorization': '{auth}', 'api-key': '{KEY}'}}"
        return RawReply(400, json.dumps({"error": {"message": message, "type": "invalid"}}),
                        "application/json")
    if "14 million" in claim:  # an HTML 200 (retried) with the key near its start
        return RawReply(200, f"<html><pre>{auth}</pre><p>proxy error</p></html>")
    if "capital" in claim and "Tokyo" not in claim:
        return RawReply(500, json.dumps({"error": {"message": f"failed for key {KEY}"}}),
                        "application/json")
    return None


def test_an_endpoint_echoing_the_key_leaves_it_in_no_output(tmp_path, audit, capsys):
    records = [*RECORDS, {"trace_id": "html", "contexts": [CTX],
                          "answer": "Osaka has about 14 million inhabitants."},
               {"trace_id": "five", "contexts": [CTX],
                "answer": "The capital of France is Paris."},
               # invalid (no contexts), with a key in what is kept of it as received
               {"trace_id": "leaky", "answer": "x", "metadata": {"auth": f"Bearer {KEY}"}}]
    traces = write_jsonl(tmp_path / "t.jsonl", records)
    with FakeOpenAI(lexical_responder, raw=_echo_headers) as server:
        code, tables, out = audit(str(traces), *_openai(server.base_url, "max_attempts=2"))
        echoed = server.statuses["raw"]
    assert code == 3 and echoed >= 4
    answers = {a["trace_id"]: a for a in tables["answers"]}
    assert answers["bad"]["status"] == answers["html"]["status"] == "incomplete"
    assert "HTTP 400" in answers["bad"]["reason"] and "[REDACTED]" in answers["bad"]["reason"]
    assert "[REDACTED]" in answers["html"]["reason"]
    html = tmp_path / "report.html"
    assert cli.main(["report", str(out), "--out", str(html)]) == 0
    leaks = []
    for name, rows in read_tables(out).items():
        if KEY in json.dumps(rows, default=str):
            leaks.append(f"table {name}")
    for path in [*out.rglob("*"), html]:
        if path.is_file() and KEY.encode() in path.read_bytes():
            leaks.append(str(path))
    if KEY in unpacked(html.read_text()):
        leaks.append(f"{html}, unpacked")
    assert "not a chat completion" in html.read_text()  # the reasons are in the report
    (leaky,) = [d for d in read_tables(out)["dead_letters"] if d["trace_id"] == "leaky"]
    assert "Bearer [REDACTED]" in leaky["raw"]
    assert "summary.json" in {p.name for p in out.iterdir()}  # grepped above
    assert not leaks
    printed = capsys.readouterr()
    assert KEY not in printed.out and KEY not in printed.err


def test_a_closed_port_stops_the_run_at_the_probe_before_any_trace(
        ragtruth_sample, tmp_path, audit, capsys):
    traces = write_jsonl(tmp_path / "t.jsonl", load_traces(ragtruth_sample)[:2])
    code, tables, out = audit(str(traces), *_openai(f"http://127.0.0.1:{_closed_port()}/v1"))
    assert code == 1 and tables == {} and not (out / "answers").exists()
    assert "cannot be reached" in capsys.readouterr().err


# -- issue 33, defect 7 and 9: replies held to what was asked -----------------------------------
# A reply beyond a bound of its schema (maxItems, maxLength) is a judge error for its call after
# one retry, never more calls: once a 500-claim decomposition was accepted and 2 traces took
# 2,677 calls. Each case: the bound broken for Kyoto's sentence or claims only.

def _beyond(kind: str):
    def reply(body: dict) -> dict:
        answer = lexical_responder(body)
        user = body["messages"][-1]["content"]
        kyoto = "Kyoto" in (tag(user, "sentence") or _claim(body))
        if kyoto and kind == "40 claims" and "claims" in answer:
            answer["claims"] = [{"text": f"Kyoto fact number {i}.", "kind": "fact",
                                 "fragments": ["Kyoto"]} for i in range(40)]
        elif kyoto and kind == "5 fragments" and "claims" in answer:
            answer["claims"][0]["fragments"] = ["Kyoto", "has", "about", "14", "million"]
        elif kyoto and kind == "10 quotes" and "evidence" in answer:
            answer.update(label="ENT", evidence=[CTX] * 10)
        elif kyoto and kind == "a 2,000-character quote" and "evidence" in answer:
            answer.update(label="ENT", evidence=[(CTX + " ") * 30])
        elif kyoto and kind == "a 5,000-character claim" and "claims" in answer:
            answer["claims"][0]["text"] = "Kyoto " * 1000
        return answer

    return reply


@pytest.mark.parametrize("kind, bound", [
    ("40 claims", "beyond maxItems=8"), ("5 fragments", "beyond maxItems=3"),
    ("10 quotes", "beyond maxItems=4"), ("a 2,000-character quote", "beyond maxLength=400"),
    ("a 5,000-character claim", "beyond maxLength=300"),
])
def test_a_reply_beyond_its_schema_bounds_is_a_judge_error_after_one_retry(
        tmp_path, audit, kind, bound):
    traces = write_jsonl(tmp_path / "t.jsonl", RECORDS)
    with FakeOpenAI(_beyond(kind)) as server:
        code, tables, _ = audit(str(traces), *_openai(server.base_url, "max_attempts=6"))
    assert code == 3  # answers left incomplete
    _assert_bad_incomplete_good_ok(tables, "no answer within the schema's bounds")
    assert any(bound in (a["reason"] or "") for a in tables["answers"])
    kyoto = [b for b in server.requests if "Kyoto" in (tag(b["messages"][-1]["content"],
                                                           "sentence") or _claim(b))]
    # the call and one retry (plus the retries of a reply cut off at its output budget, which
    # the budget's cap bounds): never one call per surplus item
    assert 2 <= len(kyoto) <= 4
    assert len(server.requests) <= 14  # about 5 calls per trace, as an honest judge's run


def _rotated(body: dict) -> dict:
    """--claims-per-call verdicts whose claim numbers are rotated (2, 3, ..., 1)."""
    answer = lexical_responder(body)
    if "verdicts" in answer and len(answer["verdicts"]) > 1:
        numbers = [v["claim"] for v in answer["verdicts"]]
        for verdict, number in zip(answer["verdicts"], numbers[1:] + numbers[:1], strict=True):
            verdict["claim"] = number
    return answer


def test_claims_per_call_verdicts_with_rotated_numbers_are_a_judge_error(tmp_path, audit):
    records = [{"trace_id": "many", "contexts": [CTX], "answer": "Tokyo is the capital of "
                "Japan. Kyoto has about 14 million inhabitants. Tokyo is large."}]
    traces = write_jsonl(tmp_path / "t.jsonl", records)
    with FakeOpenAI(_rotated) as server:
        code, tables, _ = audit(str(traces), "--claims-per-call", "3",
                                *_openai(server.base_url, "max_attempts=6"))
    many = [b for b in server.requests if tag(b["messages"][-1]["content"], "claims")]
    assert many, "no --claims-per-call request was made"
    (answer,) = tables["answers"]
    assert answer["status"] == "incomplete" and answer["label"] is None, answer
    assert "expected claims 1..3 in order" in answer["reason"], answer["reason"]
    assert all(c["status"] == "judge_error" for c in tables["claims"])
    assert len(many) == 2  # retried once, then the judge error
    assert code == 1  # nothing could be judged


def _lucky(body: dict) -> dict:
    """A judge that says ENT to everything, quoting the whole context it was shown."""
    answer = lexical_responder(body)
    if "evidence" in answer:
        user = body["messages"][-1]["content"]
        shown = tag(user, "passage") or tag(user, "context") or ""
        text = "\n".join(line for line in shown.splitlines() if not line.startswith("["))
        answer.update(label="ENT", evidence=[text])
    return answer


def test_a_quote_of_the_whole_context_is_not_evidence(tmp_path, audit):
    context = ("Tokyo is the capital of Japan. It has about 14 million inhabitants. Kyoto was "
               "the capital for a thousand years. Osaka is known for its food.")
    records = [{"trace_id": "lucky", "contexts": [context],
                "answer": "Kyoto has about 30 million inhabitants."}]
    traces = write_jsonl(tmp_path / "t.jsonl", records)
    with FakeOpenAI(_lucky) as server:
        code, tables, _ = audit(str(traces), *_openai(server.base_url))
    assert code == 0 and server.requests
    (answer,) = tables["answers"]
    assert answer["status"] == "ok" and answer["label"] != "ENT", answer
    notes = " ".join(c["note"] or "" for c in tables["claims"])
    assert "covers most of the context" in notes, notes
    assert all(c["label"] != "ENT" for c in tables["claims"])
