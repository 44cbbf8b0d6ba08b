"""The openai judge through the Batch API (/v1/files, /v1/batches) of the local server:
same verdicts as direct calls at half the price, and resumable without paying twice."""

from __future__ import annotations

import json

import pytest

import fake_judges as fj
from fake_openai_server import FakeOpenAI
from testutil import write_jsonl

FAST = ["--judge-option", "batch_poll_s=0.1", "--judge-option", "batch_idle_s=0.2"]


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-batch-0123456789")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _args(server: FakeOpenAI, *extra: str) -> list[str]:
    # The model named: a local server's listed model is used unpriced (served_models.py).
    return ["--judge", "openai", "--base-url", server.base_url, "--model", "gpt-4o-mini",
            "--window-size", "2", "--window-overlap", "1", *extra]


def _submitted(server: FakeOpenAI) -> list[str]:
    """custom_ids of every request in every batch input file, in order."""
    ids = []
    for batch in server.batches.values():
        for line in server.files[batch["input_file_id"]].decode().splitlines():
            ids.append(json.loads(line)["custom_id"])
    return ids


def test_batch_api_gives_the_direct_verdicts_at_half_the_price(tmp_path, audit):
    traces = write_jsonl(tmp_path / "t.jsonl", [fj.RUNNING_TRACE])
    with FakeOpenAI(fj.running_example_responder) as server:
        code, direct, _ = audit(str(traces), *_args(server), out=tmp_path / "direct")
    with FakeOpenAI(fj.running_example_responder) as server:
        code_b, batched, _ = audit(str(traces), *_args(server, "--batch-api", *FAST),
                                   out=tmp_path / "batched")
        batches = list(server.batches.values())
    assert code == code_b == 0
    # One batch per stage: decomposition, local verification, global verification.
    assert len(batches) == 3 and all(b["status"] == "completed" for b in batches)
    assert [b["request_counts"]["total"] for b in batches] == [3, 15, 5]
    labels = {c["claim"]: (c["window_labels"], c["label"]) for c in direct["claims"]}
    assert labels == {c["claim"]: (c["window_labels"], c["label"]) for c in batched["claims"]}
    (a,) = direct["answers"]
    (b,) = batched["answers"]
    assert b["label"] == a["label"] == "CON" and b["judge_calls"] == a["judge_calls"] == 23
    assert b["input_tokens"] == a["input_tokens"]
    assert b["cost_usd"] == pytest.approx(a["cost_usd"] / 2)


def test_an_interrupted_batch_run_resumes_without_paying_twice(tmp_path, audit):
    traces = write_jsonl(tmp_path / "t.jsonl", [fj.RUNNING_TRACE])
    out = tmp_path / "out"
    with FakeOpenAI(fj.running_example_responder) as server:
        server.batch_frozen = True  # the provider is slow: the run gives up waiting
        code, first, _ = audit(str(traces), *_args(server, "--batch-api", *FAST,
                                                   "--judge-option", "batch_max_wait_s=1.5"),
                               out=out)
        assert code == 1 and first["answers"][0]["status"] == "incomplete"
        assert "rerun the same command to resume" in first["answers"][0]["reason"]
        assert len(server.batches) == 1  # the decomposition batch, still in progress
        server.batch_frozen = False
        code, second, _ = audit(str(traces), *_args(server, "--batch-api", *FAST),
                                "--overwrite", out=out)
        submitted = _submitted(server)
    assert code == 0 and second["answers"][0]["label"] == "CON"
    # The decomposition requests were polled in their first batch, never submitted again.
    assert len(server.batches) == 3 and len(submitted) == len(set(submitted)) == 23
    # A third run answers everything from the state: no new batch.
    with FakeOpenAI(fj.running_example_responder) as server:
        code, third, _ = audit(str(traces), *_args(server, "--batch-api", *FAST),
                               "--overwrite", out=out)
        assert code == 0 and not server.batches and not server.requests
    assert third["answers"][0]["label"] == "CON"
