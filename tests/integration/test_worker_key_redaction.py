"""Local worker processes redact the run's own key variable (issue 35): a real `rt4chart
audit` with the judge's key in a variable of its own (`api_key_env`), run by Beam's local
multi-processing runner, against a local server that echoes the request's key into the claims
and into error bodies. The key is not key-shaped (hex), so only the configured variable tells
it: nothing in the process environment names that variable for the workers; its name reaches
them inside the pickled stages and sinks."""

from __future__ import annotations

import json
import logging
import re
import secrets
import threading

import pytest

from fake_openai_server import FakeOpenAI, RawReply, lexical_responder, schema_name_of, tag
from testutil import read_tables, write_jsonl

KEY = secrets.token_hex(20)  # new at each run, no recognisable prefix
KEY_ENV = "RT4CHART_TEST_WORKER_KEY"
CTX = "Tokyo is the capital of Japan. It has about 14 million inhabitants."
_REQUEST = threading.local()  # the headers of the request the handler thread is answering


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _echo_in_claims(body: dict) -> dict:
    reply = lexical_responder(body)
    echo = _REQUEST.headers["authorization"].removeprefix("Bearer ")
    if schema_name_of(body) == "decompose":
        for claim in reply["claims"]:
            claim["text"] += f" ({echo})"
    else:
        reply["evidence"] = [*reply.get("evidence", []), f"key {echo}"]
    reply["reasoning"] = f"the header said {echo}"
    return reply


class EchoingJudge(FakeOpenAI):
    """Answers with the request's key in its text; a claim of a `fail` trace gets a 400 whose
    message echoes the key."""

    def chat(self, path, query, headers, body):
        _REQUEST.headers = headers
        return super().chat(path, query, headers, body)


def _echo_in_error(body: dict, headers: dict) -> RawReply | None:
    content = body["messages"][-1]["content"]
    if "failx" not in content or tag(content, "sentence") is not None:
        return None
    echo = headers["authorization"].removeprefix("Bearer ")
    return RawReply(400, json.dumps({"error": {"message": f"bad request from {echo}"}}),
                    "application/json")


def test_local_worker_processes_redact_the_runs_key_variable(tmp_path, audit, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    records = [{"trace_id": f"echo{i}", "contexts": [CTX],
                "answer": "Tokyo is the capital of Japan."} for i in range(3)]
    records += [{"trace_id": f"fail{i}", "contexts": [CTX],
                 "answer": "Kyoto failx has about 14 million inhabitants."} for i in range(3)]
    traces = write_jsonl(tmp_path / "t.jsonl", records)
    with EchoingJudge(_echo_in_claims, raw=_echo_in_error) as server:
        code, tables, out = audit(
            str(traces), "--judge", "openai", "--base-url", server.base_url,
            "--judge-option", f"api_key_env={KEY_ENV}", "--judge-option", "max_attempts=1",
            "--direct_num_workers", "2", "--direct_running_mode", "multi_processing")
        errors = server.statuses["raw"]
        sent = {r.headers.get("authorization") for r in server.received}
    assert code == 3 and errors >= 1 and sent == {f"Bearer {KEY}"}
    # The echoes reached the tables, redacted: the search below is not vacuous.
    assert any("[REDACTED]" in c["claim"] for c in tables["claims"])
    answers = {a["trace_id"]: a for a in tables["answers"]}
    assert all("[REDACTED]" in (answers[f"fail{i}"]["reason"] or "") for i in range(3))
    printed = capsys.readouterr()
    texts = {f"table {name}": json.dumps(rows, default=str)
             for name, rows in read_tables(out).items()}
    texts.update({str(p): p.read_text(errors="replace") for p in out.rglob("*")
                  if p.is_file() and not p.name.endswith(".parquet")})
    texts.update({str(p): p.read_bytes().hex() for p in out.rglob("*.parquet")})
    texts["stdout"], texts["stderr"] = printed.out, printed.err
    texts["log"] = "\n".join(r.getMessage() for r in caplog.records)
    hex_key = KEY.encode().hex()
    leaks = [where for where, text in texts.items()
             if re.search(f"{KEY}|{hex_key}", text, re.IGNORECASE)]
    assert leaks == []
