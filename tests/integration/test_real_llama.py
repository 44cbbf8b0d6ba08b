"""rt4chart against real model servers it did not write: llama.cpp's two OpenAI-compatible
servers, serving a real model (Gemma 3 270M, Q4_K_M) on 127.0.0.1, through the real `openai`
client.

The tiny model's verdicts are not judged for quality. What is asserted: the probe negotiates a
request each server accepts (and honours: checked by asking the server directly), check-judge
says so, and an audit of two short traces written for this test (a QA trace and a JSON record)
ends with every answer either complete (a label, the model's own claim labels and evidence,
grounded like any judge's) or incomplete with a readable reason and no label.

The servers come from the venv `.ci/run` builds (tests/fakes/llama_server.py). On 2 cores the
model reads a few tens of prompt tokens a second and writes 4-12 tokens a second: the traces
are short and every call's output is capped.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from rt4chart.pipeline.cli import main as cli

from llama_server import MODEL_NAME, LlamaServer

TRACES = Path(__file__).parents[1] / "data" / "real_judge" / "traces.jsonl"
LABELS = {"ENT", "CON", "NIC"}
# Small output caps (issue 23): no reasoning field, and a reply may double twice (256 to 1,024
# tokens) before it counts as a loop.
FREE = ("--judge-option", "price_input=0", "--judge-option", "price_output=0",
        "--judge-option", "reasoning_chars=0", "--judge-option", "max_output_tokens_cap=1024")
# A small model may split one sentence into many claims: two per answer keep the test short.
FEW_CLAIMS = ("--max-claims-per-answer", "2", "--oversize", "truncate")


@pytest.fixture(scope="module", params=["llama-cpp-python", "llama-server"])
def server(request, tmp_path_factory):
    log = tmp_path_factory.mktemp("llama") / f"{request.param}.log"
    with LlamaServer(request.param, log) as running:
        yield running


@pytest.fixture(autouse=True)
def no_hosted_key(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY",
                 "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION"):
        monkeypatch.delenv(name, raising=False)


def _judge(server: LlamaServer) -> list[str]:
    return ["--judge", "openai", "--base-url", server.base_url, "--model", MODEL_NAME, *FREE]


def _direct(server: LlamaServer, **fields) -> httpx.Response:
    body = {"model": MODEL_NAME, "messages": [
        {"role": "system", "content": "You answer in JSON."},
        {"role": "user", "content": "Write the numbers from one to fifty in words."}], **fields}
    return httpx.post(server.base_url + "/chat/completions", json=body, timeout=900)


def test_check_judge_negotiates_a_request_the_server_takes_and_honours(server, capsys):
    code = cli.main(["check-judge", *_judge(server), "--json"])
    out, err = capsys.readouterr()
    assert out, err[-2000:]  # nothing printed: the negotiation failed, and stderr says why
    findings = json.loads(out)  # printed whether or not the example calls succeed
    assert code == (0 if findings["usable"] else 1), err[-2000:]
    for call in findings["calls"]:  # each example call answered or says why not
        assert call.get("error") or call.get("prompt_tokens"), call
    request = findings["probe"]["request"]
    mode, limit = request["structured_output"], request["token_parameter"]
    # What was negotiated is what this server accepts: its json_schema answer decides the rung.
    schema_reply = _direct(server, max_tokens=4, response_format={
        "type": "json_schema", "json_schema": {"name": "x", "strict": True, "schema": {
            "type": "object", "properties": {"n": {"type": "string"}}, "required": ["n"]}}})
    if schema_reply.status_code == 200:
        assert mode == "json_schema_strict"
    else:
        assert mode not in ("json_schema_strict", "json_schema"), schema_reply.text[:300]
        assert any("json_schema" in change or "structured" in change
                   for change in findings["probe"]["changes"])
    # ... and the output limit is sent under the name the server reads.
    capped = _direct(server, **{limit: 3}).json()
    assert capped["usage"]["completion_tokens"] <= 3 + 1, (limit, capped["usage"])
    # The prompt arrived whole (the default chat template keeps the system message).
    counted = findings["probe"]["prompt_tokens_counted"]
    assert counted >= 0.5 * findings["probe"]["prompt_tokens_estimated"]
    # A one-slot server is called one call at a time.
    assert findings["options"].get("max_concurrency") == "1"
    verify = next(c for c in findings["calls"] if c["call"] == "verify")
    assert verify.get("error") or verify["label"] in LABELS


def test_audit_through_the_real_server_completes_or_names_each_failure(server, audit):
    code, tables, out = audit(str(TRACES), *_judge(server), *FEW_CLAIMS)
    summary = json.loads((out / "summary.json").read_text())
    answers = {a["trace_id"]: a for a in tables["answers"]}
    assert set(answers) == {"real-qa", "real-record"}
    for answer in answers.values():
        if answer["status"] == "ok":
            assert answer["label"] in LABELS and answer["reason"] is None
        else:  # incomplete: no label, and a reason a person can read
            assert answer["status"] == "incomplete" and answer["label"] is None, answer
            assert answer["reason"] and "Traceback" not in answer["reason"]
    assert code == (1 if all(a["status"] != "ok" for a in answers.values()) else 0)
    traces = {json.loads(line)["trace_id"]: json.loads(line)
              for line in TRACES.read_text().splitlines()}
    for claim in tables["claims"]:
        if claim["status"] != "ok":  # a failed call is never a verdict, least of all ENT
            assert claim["label"] != "ENT", claim
            continue
        assert claim["label"] in LABELS
        documents = " ".join(d["text"] for d in traces[claim["trace_id"]]["contexts"])
        for quote in claim["evidence"]:  # the model's own quotes, grounded in the documents
            assert quote["text"] in documents, quote
    endpoint = summary["judge_endpoint"]
    assert endpoint["request"]["structured_output"] in (
        "json_schema_strict", "json_schema", "json_object_schema", "json_object", "text")
    assert summary["judge_calls"] == sum(a["judge_calls"] for a in answers.values())
