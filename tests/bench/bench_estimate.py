"""`--estimate` against the real run on the local OpenAI-compatible server, per task.

    .venv/bin/python tests/bench/bench_estimate.py [--per-task 20] [TRACES.jsonl]

For each task (route ragtruth/qa, ragtruth/summary, ragtruth/data2txt) it runs
`rt4chart audit --estimate --estimate-json` and then the real audit through the real openai
client on tests/fakes/fake_openai_server.py (lexical replies), and prints estimate / actual for
calls, input tokens and output tokens (actual: the answers table's judge_calls, input_tokens,
output_tokens). The fake's replies write a one-word `reasoning`, so the estimate is asked with
`--estimate-reasoning-fill 0.01` (a real model's fill is its own: measure it on a real run).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "fakes"))

TASKS = ("ragtruth/qa", "ragtruth/summary", "ragtruth/data2txt")
FAKE_FILL = "0.01"  # the fake server's reasoning is one word of the 500 characters allowed


def by_task(path: Path, per_task: int) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {t: [] for t in TASKS}
    for line in path.read_text(encoding="utf-8").splitlines():
        route = json.loads(line).get("route")
        if route in out and len(out[route]) < per_task:
            out[route].append(line)
    return {t: lines for t, lines in out.items() if lines}


def measure(lines: list[str], folder: Path, *extra: str) -> dict[str, tuple[float, float]]:
    """{calls|input_tokens|output_tokens: (estimated, actual)} for these trace lines."""
    from rt4chart.pipeline.cli import main as cli

    from fake_openai_server import FakeOpenAI
    from testutil import read_tables

    traces = folder / "traces.jsonl"
    traces.write_text("\n".join(lines) + "\n", encoding="utf-8")
    est_path = folder / "estimate.json"
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-estimate-000000")
    with FakeOpenAI() as server:
        judge = ["--judge", "openai", "--base-url", server.base_url, "--model", "gpt-4o-mini",
                 *extra]
        code = cli.main(["audit", str(traces), *judge, "--estimate", "--estimate-json",
                         str(est_path), "--estimate-reasoning-fill", FAKE_FILL])
        assert code == 0, f"--estimate exit {code}"
        assert not server.requests, "--estimate made a judge call"
        code = cli.main(["audit", str(traces), *judge, "--out", str(folder / "out")])
        assert code == 0, f"audit exit {code}"
    total = json.loads(est_path.read_text())["runs"]["configured"]["total"]
    answers = read_tables(folder / "out")["answers"]
    actual = {"calls": sum(a["judge_calls"] for a in answers),
              "input_tokens": sum(a["input_tokens"] for a in answers),
              "output_tokens": sum(a["output_tokens"] for a in answers)}
    return {k: (total[k], actual[k]) for k in actual}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("traces", nargs="?", default=str(TESTS / "data" / "ragtruth_sample.jsonl"))
    p.add_argument("--per-task", type=int, default=20)
    p.add_argument("extra", nargs=argparse.REMAINDER, help="more audit options after --")
    a = p.parse_args()
    extra = [x for x in a.extra if x != "--"]
    print(f"{'task':<20}{'n':>4}{'calls est/act':>22}{'input est/act':>26}{'output est/act':>24}")
    for task, lines in by_task(Path(a.traces), a.per_task).items():
        with tempfile.TemporaryDirectory() as tmp:
            m = measure(lines, Path(tmp), *extra)
        cells = [f"{int(e)}/{int(x)}={e / x:.3f}" for e, x in m.values()]
        print(f"{task:<20}{len(lines):>4}{cells[0]:>22}{cells[1]:>26}{cells[2]:>24}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
