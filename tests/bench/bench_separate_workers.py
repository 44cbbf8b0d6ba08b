"""Separate workers call the endpoint the launcher checked (issue 47, point 4).

Beam's portable runner with an external worker pool (SDK workers in processes of their own,
as on Flink, Spark or Dataflow) whose environment holds only the key; the launcher finds its
endpoint in OPENAI_BASE_URL (a local OpenAI-compatible fake, through the real openai client),
not in a flag. Prints how many of the 8 answers came out complete and how many of the run's
judge calls the configured server received. Before the fix the workers ignored the launcher's
endpoint and called the default provider: 0/8 complete, 0 calls on the configured server.

    .venv/bin/python tests/bench/bench_separate_workers.py

It runs the rt4chart of the interpreter that runs it (another checkout's venv: that code).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fakes"))

from golden_traces import CONTRADICTED, GROUNDED, UNSUPPORTED, golden  # noqa: E402
from worker_pool import audit_on_pool, launcher_env, worker_env  # noqa: E402

KEY = "sk-bench-0123456789abcdefghijklmnopqrstuv"
TRACES = golden({"faq": [GROUNDED, CONTRADICTED, UNSUPPORTED, GROUNDED],
                 "billing": [UNSUPPORTED, GROUNDED, CONTRADICTED, GROUNDED]})


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        run = audit_on_pool(Path(tmp), TRACES, worker_env({"OPENAI_API_KEY": KEY}),
                            launcher_env({"OPENAI_API_KEY": KEY}))
    complete = sum(1 for a in run.answers if a["status"] == "ok")
    calls = (run.summary or {}).get("judge_calls")
    print(f"separate workers with the launcher's endpoint: {complete}/{len(TRACES)} complete; "
          f"the run's judge calls {calls}, on the configured server {len(run.run_calls)} "
          f"(+{len(run.probe_calls)} probe calls from the launcher); exit {run.code}")
    for reason in sorted({a["reason"] for a in run.answers if a["status"] != "ok"})[:3]:
        print(f"  incomplete: {str(reason)[:200]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
