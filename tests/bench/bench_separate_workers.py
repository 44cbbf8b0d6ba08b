"""Separate workers call the endpoint the launcher checked (issue 47, point 4).

Beam's portable runner with an external worker pool (SDK workers in processes of their own,
as on Flink, Spark or Dataflow) whose environment holds only the key; the launcher finds its
endpoint in OPENAI_BASE_URL (a local OpenAI-compatible fake, through the real openai client),
not in a flag. Prints how many of the 8 answers came out complete and how many of the run's
judge calls the configured server received. Before the fix the workers ignored the launcher's
endpoint and called the default provider: 0/8 complete, 0 calls on the configured server.

    .venv/bin/python tests/bench/bench_separate_workers.py

Runs the code of the interpreter that runs it (a checkout's venv: that checkout's rt4chart).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

FAKES = Path(__file__).resolve().parents[1] / "fakes"
sys.path.insert(0, str(FAKES))

from fake_openai_server import FakeOpenAI  # noqa: E402
from golden_traces import CONTRADICTED, GROUNDED, UNSUPPORTED, golden  # noqa: E402
from testutil import read_tables, write_jsonl  # noqa: E402
from worker_pool import portable_args, worker_env, worker_pool  # noqa: E402

KEY = "sk-bench-0123456789abcdefghijklmnopqrstuv"
TRACES = golden({"faq": [GROUNDED, CONTRADICTED, UNSUPPORTED, GROUNDED],
                 "billing": [UNSUPPORTED, GROUNDED, CONTRADICTED, GROUNDED]})
PROBE_HEADER = "x-rt4chart-probe"
RUN_TIMEOUT_S = 900  # the run ends by itself; this only stops a hung one


def launcher_env(base_url: str) -> dict[str, str]:
    """The launcher's environment: this one without any judge setting, then the endpoint in
    OPENAI_BASE_URL and the key."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "AZURE_OPENAI_"))}
    return {**env, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": KEY}


def run(folder: Path, pool_env: dict[str, str]) -> dict:
    """One audit of the 8 traces on a fresh pool with `pool_env`: the launcher's exit code and
    output, the answers, the summary, and what the server received."""
    traces = write_jsonl(folder / "traces.jsonl", TRACES)
    out = folder / "out"
    with FakeOpenAI() as server, worker_pool(pool_env, folder / "pool.log") as port:
        done = subprocess.run(
            [sys.executable, "-m", "rt4chart.pipeline.launcher", "audit", str(traces),
             "--judge", "openai", "--out", str(out), *portable_args(port)],
            env=launcher_env(server.base_url), capture_output=True, text=True,
            timeout=RUN_TIMEOUT_S)
        received = list(server.received)
    summary_path = out / "summary.json"
    return {
        "code": done.returncode, "stderr": done.stderr, "stdout": done.stdout,
        "answers": read_tables(out).get("answers", []) if (out / "answers").exists() else [],
        "summary": json.loads(summary_path.read_text()) if summary_path.exists() else None,
        "received": received,
        "out": out,
    }


def calls_of(received: list) -> tuple[int, int]:
    """The server's requests: the probe's (launcher), the run's (workers)."""
    probes = sum(1 for r in received if PROBE_HEADER in r.headers)
    return probes, len(received) - probes


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        result = run(Path(tmp), worker_env({"OPENAI_API_KEY": KEY}))
    answers = result["answers"]
    complete = sum(1 for a in answers if a["status"] == "ok")
    probes, calls = calls_of(result["received"])
    summary = result["summary"] or {}
    reasons = sorted({a["reason"] for a in answers if a["status"] != "ok" and a["reason"]})
    print(f"separate workers with the launcher's endpoint: {complete}/{len(TRACES)} complete; "
          f"run's judge calls {summary.get('judge_calls')}, on the configured server {calls} "
          f"(+{probes} probe calls from the launcher); exit {result['code']}")
    for reason in reasons[:3]:
        print(f"  incomplete: {reason[:200]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
