"""Azure OpenAI from its standard variables alone (AZURE_OPENAI_API_KEY, AZURE_OPENAI_ENDPOINT,
OPENAI_API_VERSION; the deployment as --model or AZURE_OPENAI_DEPLOYMENT): `rt4chart audit`
picks the openai judge, calls the deployment's URL with the api-key header and the API version
(against the test server's strict azure profile), and the key reaches no output."""

from __future__ import annotations

import json
import logging

import pytest

from fake_openai_server import FakeOpenAI
from testutil import read_tables, write_jsonl

KEY = "5e4d3c2b1a09f8e7d6c5b4a392817060"  # an Azure key: no prefix that would give it away
CTX = "Tokyo is the capital of Japan. It has about 14 million inhabitants."
RECORDS = [
    {"trace_id": "t1", "contexts": [CTX], "question": "What is the capital of Japan?",
     "answer": "Tokyo is the capital of Japan."},
    {"trace_id": "t2", "contexts": [CTX], "question": "How many people live in Tokyo?",
     "answer": "Tokyo has about 14 million inhabitants. It is the capital of France."},
]


@pytest.fixture(autouse=True)
def azure_only(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_DEPLOYMENT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_VERSION", "2024-10-21")


def _audit(tmp_path, audit, monkeypatch, server: FakeOpenAI, *args: str):
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", server.endpoint)
    traces = write_jsonl(tmp_path / "t.jsonl", RECORDS)
    return audit(str(traces), *args)


def _outputs(out, capsys, caplog) -> dict[str, str]:
    printed = capsys.readouterr()
    texts = {f"table {name}": json.dumps(rows, default=str)
             for name, rows in read_tables(out).items()}
    texts.update({str(p): p.read_text(errors="replace") for p in out.rglob("*")
                  if p.is_file() and not p.name.endswith(".parquet")})
    texts["stdout"], texts["stderr"] = printed.out, printed.err
    texts["log"] = "\n".join(r.getMessage() for r in caplog.records)
    return texts


def test_audit_through_azure_from_its_variables(tmp_path, audit, monkeypatch, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    with FakeOpenAI(profile="azure", azure_api_key=KEY,
                    azure_deployments=("judge-deploy",)) as server:
        code, tables, out = _audit(tmp_path, audit, monkeypatch, server,
                                   "--model", "judge-deploy")
    assert code == 0
    assert server.received and all(r.status == 200 for r in server.received)
    for seen in server.received:
        assert seen.path == "/openai/deployments/judge-deploy/chat/completions"
        assert seen.query == {"api-version": ["2024-10-21"]}
        assert seen.headers["api-key"] == KEY
        assert seen.body["model"] == "judge-deploy"
    answers = {a["trace_id"]: a for a in tables["answers"]}
    assert set(answers) == {"t1", "t2"}
    assert all(a["status"] == "ok" for a in answers.values())
    assert tables["claims"] and all(c["label"] in ("ENT", "CON", "NIC") for c in tables["claims"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["judge"] == "openai" and summary["judge_model"] == "judge-deploy"
    texts = _outputs(out, capsys, caplog)
    assert not [where for where, text in texts.items() if KEY in text]
    assert "no judge endpoint configured" not in texts["log"] + texts["stderr"]


def test_the_deployment_from_its_variable(tmp_path, audit, monkeypatch):
    monkeypatch.setenv("AZURE_OPENAI_DEPLOYMENT", "eu-judge")
    with FakeOpenAI(profile="azure", azure_api_key=KEY, azure_deployments=("eu-judge",)) as server:
        code, tables, _ = _audit(tmp_path, audit, monkeypatch, server)
    assert code == 0 and all(a["status"] == "ok" for a in tables["answers"])
    assert {r.path for r in server.received} == {"/openai/deployments/eu-judge/chat/completions"}


def test_an_unknown_deployment_stops_the_run_before_any_trace_with_azures_message(
        tmp_path, audit, monkeypatch, capsys):
    with FakeOpenAI(profile="azure", azure_api_key=KEY) as server:
        code, tables, out = _audit(tmp_path, audit, monkeypatch, server, "--model", "gpt-4o",
                                   "--judge-option", "max_attempts=1")
    assert code == 1 and {r.status for r in server.received} == {404}
    assert len(server.received) == 1  # the probe's first call: no trace was started
    assert tables == {} and not (out / "answers").exists()
    err = capsys.readouterr().err
    assert "HTTP 404" in err and "you created the deployment" in err and KEY not in err
