"""A clean `--judge openai` run closes its clients' connections in the loops that opened them:
no "Task exception was never retrieved … RuntimeError('Event loop is closed')" on stderr."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import subprocess
import sys
from pathlib import Path

from rt4chart.pipeline.run.judge_probe import negotiate
from rt4chart.transforms.judges.contract import JudgeSpec

import fake_judges as fj
from fake_openai_server import FakeOpenAI
from testutil import write_jsonl

KEY = "sk-test-0123456789abcdefghijklmnop"
SYMPTOMS = ("Task exception was never retrieved", "Event loop is closed")


def test_the_probe_closes_its_client_in_its_own_loop(monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAI(fj.running_example_responder) as server:  # keeps connections alive
        spec, report = negotiate(JudgeSpec.of("openai", {"base_url": server.base_url}))
    assert report is not None and spec.name == "openai"

    async def collect_in_another_loop():
        gc.collect()  # the probe's judge goes now, while a loop runs
        await asyncio.sleep(0.1)

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        asyncio.run(collect_in_another_loop())
    assert not [r for r in caplog.records if any(s in r.getMessage() for s in SYMPTOMS)]


def test_a_clean_openai_run_prints_no_event_loop_error(tmp_path):
    traces = write_jsonl(tmp_path / "t.jsonl", [fj.RUNNING_TRACE])
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    env.pop("OPENAI_BASE_URL", None)
    with FakeOpenAI(fj.running_example_responder) as server:
        done = subprocess.run(
            [sys.executable, "-m", "rt4chart.pipeline.cli.main", "audit", str(traces), "--judge",
             "openai", "--base-url", server.base_url, "--window-size", "2",
             "--window-overlap", "1", "--out", str(tmp_path / "out")],
            capture_output=True, text=True, env=env, cwd=Path(__file__).parent, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "out" / "answers").exists()
    for symptom in SYMPTOMS:
        assert symptom not in done.stderr
