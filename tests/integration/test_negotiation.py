"""Capability negotiation end to end: `rt4chart audit` through the real `openai` client against
the local server's strict profiles (tests/fakes/strict_profiles.py), each rejecting what one
family of real servers rejects, with its error body."""

from __future__ import annotations

import json

import pytest

import fake_judges as fj
from fake_openai_server import FakeOpenAI
from testutil import write_jsonl

KEY = "sk-test-0123456789abcdefghijklmnop"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for name in ("OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)


def _audit(audit, tmp_path, server: FakeOpenAI, *extra: str, out=None):
    traces = write_jsonl(tmp_path / "t.jsonl", [fj.RUNNING_TRACE])
    code, tables, out = audit(str(traces), "--judge", "openai", "--base-url", server.base_url,
                              "--model", "o4-mini", "--window-size", "2", "--window-overlap",
                              "1", "--judge-option", "backoff_initial_s=0.02", *extra, out=out)
    summary = json.loads((out / "summary.json").read_text()) if code == 0 else None
    return code, tables, summary


def _sent(server: FakeOpenAI) -> list[dict]:
    """The run's requests as the server answered them (the probe's are in `probes`)."""
    assert server.requests, "the run made no call"
    return server.requests


CASES = {
    # profile: (what the summary must say was adapted, what no answered request may carry)
    "openai-reasoning": ({"dropped": {"temperature", "logprobs", "top_logprobs"},
                          "token_parameter": "max_completion_tokens"},
                         ("temperature", "logprobs", "top_logprobs", "max_tokens")),
    "llama-cpp-python": ({"structured": {"json_object_schema"}, "token_parameter": "max_tokens"},
                         ("max_completion_tokens",)),
    "no-logprobs": ({"dropped": {"logprobs", "top_logprobs"}}, ("logprobs", "top_logprobs")),
    "strict-fields": ({"dropped": {"prompt_cache_key", "reasoning_effort"}},
                      ("prompt_cache_key", "reasoning_effort")),
    "no-json-schema": ({"structured": {"json_object_schema", "json_object"}}, ()),
}


@pytest.mark.parametrize("profile", sorted(CASES))
def test_each_server_family_audits_to_complete_answers_and_says_what_it_adapted(
        profile, tmp_path, audit):
    expected, never_sent = CASES[profile]
    with FakeOpenAI(fj.running_example_responder, profile=profile) as server:
        code, tables, summary = _audit(audit, tmp_path, server)
    assert code == 0
    (answer,) = tables["answers"]
    assert answer["status"] == "ok" and answer["label"] == "CON"
    assert len(tables["claims"]) == 5 and all(c["status"] == "ok" for c in tables["claims"])
    request = summary["judge_endpoint"]["request"]
    if "dropped" in expected:
        assert expected["dropped"] <= set(request["dropped"])
    if "structured" in expected:
        assert request["structured_output"] in expected["structured"]
    if "token_parameter" in expected:
        assert request["token_parameter"] == expected["token_parameter"]
    for body in _sent(server):  # every worker sent what the probe negotiated, nothing refused
        assert not set(never_sent) & set(body), (profile, sorted(body))
    assert server.statuses["rejected"] == sum(1 for r in server.received if r.status >= 400)
    assert all(r.status == 200 for r in server.received if r.body in server.requests)


def test_what_an_endpoint_accepts_is_part_of_the_prompt_hash(tmp_path, audit):
    hashes = []
    for i, profile in enumerate(("permissive", "no-json-schema")):
        (tmp_path / str(i)).mkdir()
        with FakeOpenAI(fj.running_example_responder, profile=profile) as server:
            code, _, summary = _audit(audit, tmp_path / str(i), server,
                                      out=tmp_path / str(i) / "out")
        assert code == 0
        hashes.append(summary["prompt_hash"])
    assert hashes[0] != hashes[1]  # --reuse never takes one mode's replies for the other's


def test_without_the_probe_each_refusal_is_corrected_on_the_call_that_meets_it(tmp_path, audit):
    with FakeOpenAI(fj.running_example_responder, profile="openai-reasoning+strict-fields"
                    ) as server:
        code, tables, _ = _audit(audit, tmp_path, server, "--judge-option", "probe=false")
    assert code == 0 and not server.probes
    assert all(a["status"] == "ok" for a in tables["answers"])
    refused = [r for r in server.received if r.status == 400]
    # Each field is refused once per worker judge, then never sent again: a handful, not one
    # per call (23 calls in this run).
    assert 1 <= len(refused) <= 8
    last = server.requests[-1]
    assert "temperature" not in last and "prompt_cache_key" not in last


def test_a_template_that_drops_the_system_message_stops_the_run_before_any_trace(
        tmp_path, audit, capsys):
    with FakeOpenAI(fj.running_example_responder, profile="llama-cpp-python+drops-system"
                    ) as server:
        code, tables, _ = _audit(audit, tmp_path, server)
    assert code == 1 and tables == {} and not server.requests
    err = capsys.readouterr().err
    assert "chat template dropped part of the prompt" in err


@pytest.mark.parametrize("fault, says", [
    ("401", "Incorrect API key"),
    ("404", "Not Found"),
])
def test_a_judge_that_cannot_be_used_stops_the_run_with_the_servers_message(
        fault, says, tmp_path, audit, capsys):
    every = {"401": 1} if fault == "401" else {}
    with FakeOpenAI(fj.running_example_responder, every=every, probe_faults=True) as server:
        base = server.base_url if fault == "401" else server.base_url + "/no-such-api"
        traces = write_jsonl(tmp_path / "t.jsonl", [fj.RUNNING_TRACE])
        # A model named: the probe's call, not the model listing, meets the fault.
        code, tables, out = audit(str(traces), "--judge", "openai", "--base-url", base,
                                  "--model", "gpt-4o-mini")
    assert code == 1 and tables == {} and not (out / "answers").exists()
    err = capsys.readouterr().err
    assert "refused the probe call" in err and says in err and KEY not in err


@pytest.mark.parametrize("serial", [True, False])
def test_the_probe_calls_a_one_slot_server_one_call_at_a_time(serial, capsys):
    from rt4chart.pipeline.cli import main as cli

    with FakeOpenAI(latency_s=0.25, serial=serial, probe_faults=True) as server:
        code = cli.main(["check-judge", "--base-url", server.base_url, "--json"])
    findings = json.loads(capsys.readouterr().out)
    assert code == 0 and findings["usable"]
    assert findings["probe"]["slots"] == (1 if serial else None)
    assert findings["options"].get("max_concurrency") == ("1" if serial else None)


def test_hidden_reasoning_that_outgrows_the_reservation_is_retried_with_more(tmp_path, audit):
    # 300 reasoning tokens at effort "low" > the first 256-token reservation: the reply comes
    # back empty, cut off ("length"), and is asked again with twice the budget.
    with FakeOpenAI(fj.running_example_responder, profile="openai-reasoning",
                    reasoning_tokens=300) as server:
        code, tables, summary = _audit(audit, tmp_path, server)
    assert code == 0 and all(a["status"] == "ok" for a in tables["answers"])
    budgets = [b["max_completion_tokens"] for b in server.requests]
    assert min(budgets) <= 256 < max(budgets)
    assert all(b["reasoning_effort"] == "low" for b in server.requests)
    # the hidden tokens are counted as output (and priced: o4-mini is in the price table)
    retried = sum(1 for b in budgets if b > 256)  # each answered with its 300 hidden tokens
    assert retried >= 23 and summary["output_tokens"] >= 300 * retried
    assert summary["cost_usd"] is not None
