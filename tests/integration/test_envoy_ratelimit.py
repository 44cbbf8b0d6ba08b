"""`--rate-limiter envoy`: one budget for the whole job, held by an Envoy rate-limit service
(here a local gRPC server speaking its protocol, tests/fakes/envoy_rls.py)."""

from __future__ import annotations

import multiprocessing

import fake_judges as fj
from envoy_rls import FakeRateLimitService, worker
from fake_openai_server import FakeOpenAI
from testutil import write_jsonl

LIMIT = 4  # requests per window, for the whole job
WINDOW_S = 0.5


def test_two_worker_processes_share_one_budget():
    calls = 10
    with FakeRateLimitService({"requests": LIMIT, "tokens": 10**9}, WINDOW_S) as rls:
        spawn = multiprocessing.get_context("spawn")  # gRPC and fork do not mix
        results = spawn.Queue()
        procs = [spawn.Process(target=worker, args=(rls.address, calls, 50, results))
                 for _ in range(2)]
        for p in procs:
            p.start()
        outcomes = [results.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=30)
        per_window = rls.per_window("requests")
    assert all(p.exitcode == 0 for p in procs)
    assert [done for done, _ in outcomes] == [calls, calls]
    assert sum(per_window.values()) == 2 * calls  # every call was admitted by the service
    assert max(per_window.values()) <= LIMIT  # ... and never more than the job's budget
    assert len(per_window) >= 2 * calls / LIMIT
    assert rls.refused > 0
    # The held time reached the throttling clock that the judge stages report to Beam.
    assert sum(throttled for _, throttled in outcomes) > 0
    assert rls.per_window("tokens") and sum(rls.per_window("tokens").values()) == 2 * calls * 50


def test_audit_with_the_envoy_limiter_asks_the_service_before_every_call(tmp_path, audit):
    traces = write_jsonl(tmp_path / "t.jsonl", [fj.RUNNING_TRACE])
    with FakeRateLimitService({"requests": 6, "tokens": 10**9}, WINDOW_S) as rls, \
            FakeOpenAI(fj.running_example_responder) as server:
        code, tables, _ = audit(str(traces), "--judge", "openai", "--base-url", server.base_url,
                                "--rate-limiter", "envoy", "--rate-limit-service", rls.address,
                                "--window-size", "2", "--window-overlap", "1")
        sent = len(server.requests)
    assert code == 0
    assert [a["status"] for a in tables["answers"]] == ["ok"]
    per_window = rls.per_window("requests")
    assert max(per_window.values()) <= 6
    calls = sum(r["calls"] for r in tables["costs"])
    assert sum(per_window.values()) == calls == sent == 23
