"""A real local model server on a busy machine (issue 33, defect 8): llama.cpp's `llama-server`
(Gemma 3 270M, as test_real_llama.py starts it) while CPU-bound processes share its cores.

Before, every call had one fixed timeout for its whole reply: under load the replies ran past
it, the breaker opened and no answer was judged (0 of 6). Now replies are read as a stream: a
reply may take as long as it keeps producing tokens. The audit runs with a whole-reply timeout
that the server's own log shows its replies exceeded, and a short idle timeout, and every
answer completes.

The CPU load: one busy-looping Python process per core, started by the test, each ending by
itself after BURN_S at the latest and stopped by its PID when the audit ends.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llama_server import MODEL_NAME, LlamaServer

TRACES = Path(__file__).parents[1] / "data" / "real_judge" / "traces.jsonl"
# Far below what a reply takes on a busy machine: the old whole-reply timeout would fail them.
WHOLE_REPLY_TIMEOUT_S = 2
IDLE_TIMEOUT_S = 20
BURN_S = 900  # the burners' own end, should the test be killed before it stops them
BURN = "import time\nend = time.monotonic() + float(__import__('sys').argv[1])\n" \
       "while time.monotonic() < end:\n    pass\n"
# llama-server's log line for each request: "total time = 8520.61 ms / 137 tokens"
TOTAL_TIME = re.compile(r"total time\s*=\s*([0-9.]+) ms")


@pytest.fixture(autouse=True)
def no_hosted_key(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY",
                 "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION"):
        monkeypatch.delenv(name, raising=False)


class Burners:
    """CPU-bound processes, one per core, stopped by their PIDs."""

    def __init__(self, count: int):
        self.count = count
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> Burners:
        for _ in range(self.count):
            self.procs.append(subprocess.Popen([sys.executable, "-c", BURN, str(BURN_S)],
                                               stdout=subprocess.DEVNULL,
                                               stderr=subprocess.DEVNULL))
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()  # by its PID: only what this test started
            proc.wait(timeout=30)


def reply_seconds(log: Path) -> list[float]:
    """Each request's total time, as llama-server logged it."""
    return [float(ms) / 1000 for ms in TOTAL_TIME.findall(log.read_text(errors="replace"))]


def test_a_busy_real_server_finishes_every_answer(tmp_path, audit):
    log = tmp_path / "llama-server.log"
    with LlamaServer("llama-server", log) as server, Burners(os.cpu_count() or 2):
        code, tables, out = audit(
            str(TRACES), "--judge", "openai", "--base-url", server.base_url, "--model",
            MODEL_NAME, "--judge-option", "price_input=0", "--judge-option", "price_output=0",
            "--judge-option", "reasoning_chars=0", "--judge-option",
            "max_output_tokens_cap=1024", "--judge-option", f"timeout_s={WHOLE_REPLY_TIMEOUT_S}",
            "--judge-option", f"idle_timeout_s={IDLE_TIMEOUT_S}",
            "--max-claims-per-answer", "2", "--oversize", "truncate")
    answers = {a["trace_id"]: a for a in tables["answers"]}
    assert set(answers) == {"real-qa", "real-record"}
    assert code == 0 and all(a["status"] == "ok" for a in answers.values()), answers
    assert all(c["status"] == "ok" for c in tables["claims"])
    # The replies took longer than the whole-reply timeout they would have had before.
    took = reply_seconds(log)
    assert took and max(took) > WHOLE_REPLY_TIMEOUT_S, took
    summary = json.loads((out / "summary.json").read_text())
    assert summary["judge_endpoint"]["request"]["streaming"] is True
