"""No provider reply can stall a run: 429s and 200s asking for absurd pauses (10^9 s, a date
far ahead, a reset epoch years away, negative or garbage values), through the real `openai`
client against the local server, end in bounded time and a bounded count of retries."""

from __future__ import annotations

import itertools
import json
import logging
import time

import pytest

from fake_openai_server import FakeOpenAI, RawReply, lexical_responder
from testutil import write_jsonl

KEY = "sk-test-pause-0123456789abcdefghijkl"
CTX = "Tokyo is the capital of Japan. It has about 14 million inhabitants."
RECORDS = [{"trace_id": "t", "contexts": [CTX], "answer": "Tokyo is the capital of Japan."}]
FAR = str(int(time.time()) + 10 ** 8)  # a Unix time three years ahead

ABSURD_429_HEADERS = [
    {"retry-after": "1000000000"},
    {"retry-after": "Fri, 31 Dec 9999 23:59:59 GMT"},
    {"retry-after-ms": "1e12"},
    {"retry-after": "-5", "x-ratelimit-remaining-requests": "0",
     "x-ratelimit-reset-requests": "999999h"},
    {"retry-after": "soon", "x-ratelimit-remaining": "0", "x-ratelimit-reset": FAR},
    {"retry-after": "NaN"},
]


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _args(base_url: str) -> list[str]:
    args = ["--judge", "openai", "--base-url", base_url]
    for option in ("backoff_initial_s=0.02", "backoff_max_s=0.3", "max_attempts=4"):
        args += ["--judge-option", option]
    return args


@pytest.mark.parametrize("headers", ABSURD_429_HEADERS,
                         ids=[json.dumps(h)[:40] for h in ABSURD_429_HEADERS])
def test_a_429_asking_for_an_absurd_pause_is_capped(tmp_path, audit, caplog, headers):
    # Every other request is a 429 with the absurd ask: each call succeeds on a retry.
    turn = itertools.count()

    def every_other(body: dict, _headers: dict) -> RawReply | None:
        if next(turn) % 2 == 0:
            return RawReply(429, json.dumps({"error": {"message": "Rate limit reached"}}),
                            "application/json", headers)
        return None

    traces = write_jsonl(tmp_path / "t.jsonl", RECORDS)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING), FakeOpenAI(raw=every_other) as server:
        code, tables, _ = audit(str(traces), *_args(server.base_url))
    elapsed = time.monotonic() - started
    assert code == 0
    assert [a["status"] for a in tables["answers"]] == ["ok"]
    calls = server.statuses["ok"]
    assert server.statuses["raw"] == calls  # one 429 per call, then its answer: 2 per call
    assert elapsed < 60, elapsed  # the pauses were 0.3 s at most, not 10^9 s
    capped = [r for r in caplog.records if "capped at 0.3 s" in r.getMessage()]
    huge = any(float(v) > 1 for k, v in headers.items() if k == "retry-after"
               and v.replace(".", "").isdigit())
    assert len(capped) <= 1 and (capped or not huge)


def test_a_200_with_a_reset_years_ahead_does_not_pause_the_worker(tmp_path, audit, caplog):
    fake = FakeOpenAI()

    def exhausted(body: dict, _headers: dict) -> RawReply:
        completion = fake._completion(body, lexical_responder(body), refusal=False)
        return RawReply(200, json.dumps(completion), "application/json", {
            "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "100000000s",
            "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": FAR})

    fake.raw = exhausted
    traces = write_jsonl(tmp_path / "t.jsonl", RECORDS)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING), fake:
        code, tables, _ = audit(str(traces), *_args(fake.base_url))
    assert code == 0 and [a["status"] for a in tables["answers"]] == ["ok"]
    assert time.monotonic() - started < 60
    capped = [r.getMessage() for r in caplog.records if "capped at 0.3 s" in r.getMessage()]
    assert len(capped) == 1 and "x-ratelimit-reset" in capped[0], capped
