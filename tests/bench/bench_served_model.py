"""Which model a run asks a local server for, and what it bills (issue 48, point 4; not a test).

    python tests/bench/bench_served_model.py RT4CHART_EXECUTABLE OUT_DIR

Audits the running example with only OPENAI_BASE_URL set (no --model) against the tests' fake
OpenAI-compatible server, which lists one model (`qwen2.5-0.5b`) and answers any name, as
llama.cpp's server does. Prints the exit code, the judge line of the run's summary (its cost),
the price warning and the model names the server was asked for. Run it with an older
`rt4chart` executable to compare.
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "fakes"))

import fake_judges as fj  # noqa: E402
from fake_openai_server import FakeOpenAI  # noqa: E402
from testutil import write_jsonl  # noqa: E402


def main(exe: str, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    traces = write_jsonl(out / "t.jsonl", [fj.RUNNING_TRACE])
    with FakeOpenAI(fj.running_example_responder, models=("qwen2.5-0.5b",)) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "AZURE"))}
        env["OPENAI_BASE_URL"] = server.base_url
        run = subprocess.run([exe, "audit", str(traces), "--out", str(out / "run"),
                              "--overwrite"], env=env, capture_output=True, text=True,
                             timeout=600)
    print("exit", run.returncode)
    print("\n".join(line for line in run.stdout.splitlines() if line.startswith("judge:")))
    print("\n".join(line for line in run.stderr.splitlines() if "price" in line)[-600:])
    print("models asked:", dict(collections.Counter(b["model"] for b in server.requests)))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
