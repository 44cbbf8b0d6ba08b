"""Separate workers call the endpoint the launcher checked, and read only the key (issue 47.4).

Beam's portable runner with an external worker pool: the stages run in SDK workers started by
the pool, in processes whose environment is the pool's (as on Flink, Spark or Dataflow), not
the launcher's. The launcher finds its endpoint in OPENAI_BASE_URL (not a flag); the pool's
environment holds a key and nothing of the endpoint. Every answer must complete with every call
on the configured server; a pool without the key must fail the run at its first bundle with the
reason, not leave every answer silently incomplete.
"""

from __future__ import annotations

from golden_traces import CONTRADICTED, GROUNDED, UNSUPPORTED, golden
from worker_pool import audit_on_pool, launcher_env, worker_env

# The launcher's key and the workers' differ: the workers' calls carry their own, so the key
# did not travel with the job.
LAUNCHER_KEY = "sk-launcher-0123456789abcdefghijklmnop"
WORKER_KEY = "sk-worker-9876543210zyxwvutsrqponmlkji"
TRACES = golden({"faq": [GROUNDED, CONTRADICTED, UNSUPPORTED, GROUNDED],
                 "billing": [UNSUPPORTED, GROUNDED, CONTRADICTED, GROUNDED]})


def _written(out) -> dict[str, str]:
    """Every file the run wrote (manifest, summary, tables' bytes), by path."""
    return {str(p): p.read_bytes().decode("latin-1") for p in out.rglob("*") if p.is_file()}


def test_workers_with_only_the_key_call_the_launchers_endpoint(tmp_path):
    run = audit_on_pool(tmp_path, TRACES, worker_env({"OPENAI_API_KEY": WORKER_KEY}),
                        launcher_env({"OPENAI_API_KEY": LAUNCHER_KEY}))
    assert run.code == 0, run.stderr[-3000:] + run.pool_log[-3000:]
    assert len(run.answers) == len(TRACES)
    assert [a["trace_id"] for a in run.answers if a["status"] != "ok"] == []
    # Every call of the run reached the configured server, from the workers (their key).
    assert run.summary["judge_calls"] == len(run.run_calls) > 0
    assert {r.headers["authorization"] for r in run.run_calls} == {f"Bearer {WORKER_KEY}"}
    assert {r.headers["authorization"] for r in run.probe_calls} == {f"Bearer {LAUNCHER_KEY}"}
    # The launcher's key is in nothing the run wrote (manifest, summary, tables, logs).
    written = _written(run.out)
    assert any("manifest" in path for path in written)
    for key in (LAUNCHER_KEY, WORKER_KEY):
        assert not [path for path, text in written.items() if key in text]
        assert key not in run.stdout + run.stderr
    assert LAUNCHER_KEY not in run.pool_log


def test_a_worker_without_the_key_fails_the_run_at_its_first_bundle(tmp_path):
    run = audit_on_pool(tmp_path, TRACES, worker_env({}),
                        launcher_env({"OPENAI_API_KEY": LAUNCHER_KEY}))
    assert run.code != 0
    assert run.probe_calls and not run.run_calls  # no judge call left a worker
    assert ("openai judge: no API key for http://127.0.0.1:" in run.stderr
            and "OPENAI_API_KEY is not set in this process's environment" in run.stderr), (
        run.stderr[-3000:])
    assert not run.answers  # not 8 answers silently incomplete
    assert LAUNCHER_KEY not in run.stdout + run.stderr
