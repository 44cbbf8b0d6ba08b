"""A request the server rejects as invalid (a validation error in a 500, 400 or 422) is not
retried like an outage, and the run's final message carries the server's own reason."""

from __future__ import annotations

import json

import pytest

from rt4chart.pipeline.cli import main as cli
from rt4chart.transforms.judges.openai.capabilities import LADDER

from fake_openai_server import FakeOpenAI, RawReply
from testutil import write_jsonl

KEY = "sk-test-reject-0123456789abcdefghijkl"
CTX = "Tokyo is the capital of Japan. It has about 14 million inhabitants."
RECORDS = [{"trace_id": "t", "contexts": [CTX], "answer": "Tokyo is the capital of Japan."}]

LLAMA_CPP_PYTHON = (500, {"error": {
    "message": "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
               "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
               f"'ctx': {{'expected': \"'text' or 'json_object'\"}}}}] (key {KEY})",
    "type": "internal_server_error"}})
FASTAPI_422 = (422, {"detail": [{"loc": ["body", "response_format", "type"],
                                 "msg": "Input should be 'text' or 'json_object'",
                                 "type": "literal_error"}]})
OPENAI_400 = (400, {"error": {
    "message": "Unsupported value: 'temperature' does not support 0 with this model. Only the "
               "default (1) value is supported.", "type": "invalid_request_error",
    "param": "temperature", "code": "unsupported_value"}})


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


FASTAPI_MISSING = (422, {"detail": [{"loc": ["body", "messages", 0, "content"],
                                     "msg": "Field required", "type": "missing"}]})


# A refusal that names a field rt4chart can stop sending is corrected first (the request sent
# again without it: one step down the structured-output ladder each time, or the field
# dropped), then, when nothing is left to change, fails at once: never six attempts per step.
@pytest.mark.parametrize("status,body,said,sent", [
    (*LLAMA_CPP_PYTHON, "Input should be 'text' or 'json_object'", len(LADDER)),
    (*FASTAPI_422, "body.response_format.type: Input should be 'text' or 'json_object'",
     len(LADDER)),
    (*OPENAI_400, "Unsupported value: 'temperature' does not support 0", 2),
    (*FASTAPI_MISSING, "body.messages.0.content: Field required", 1),
], ids=["llama-cpp-python-500", "fastapi-422", "openai-400", "fastapi-missing"])
def test_a_rejected_request_fails_at_once_with_the_servers_reason(tmp_path, capsys, status,
                                                                   body, said, sent):
    def reject(_body: dict, _headers: dict) -> RawReply:
        return RawReply(status, json.dumps(body), "application/json")

    traces = write_jsonl(tmp_path / "t.jsonl", RECORDS)
    with FakeOpenAI(raw=reject) as server:
        code = cli.main(["audit", str(traces), "--out", str(tmp_path / "out"),
                         "--judge", "openai", "--base-url", server.base_url,
                         "--judge-option", "backoff_initial_s=0.02",
                         "--judge-option", "backoff_max_s=0.2"])
    err = capsys.readouterr().err
    assert code == 1
    assert server.statuses["raw"] == len(server.requests)
    assert len(server.requests) == sent  # the one decomposition call and its corrections
    final = [line for line in err.splitlines() if "no answer could be judged" in line]
    assert final and said in final[0] and "not retried" in final[0], err[-2000:]
    assert KEY not in err


def test_an_outage_500_is_still_retried(tmp_path):
    def down(_body: dict, _headers: dict) -> RawReply:
        return RawReply(500, json.dumps({"error": {"message": "internal error",
                                                   "type": "server_error"}}),
                        "application/json")

    traces = write_jsonl(tmp_path / "t.jsonl", RECORDS)
    with FakeOpenAI(raw=down) as server:
        code = cli.main(["audit", str(traces), "--out", str(tmp_path / "out"),
                         "--judge", "openai", "--base-url", server.base_url,
                         "--judge-option", "backoff_initial_s=0.01",
                         "--judge-option", "backoff_max_s=0.02",
                         "--judge-option", "max_attempts=3"])
    assert code == 1
    assert len(server.requests) == 3
