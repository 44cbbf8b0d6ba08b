"""`rt4chart stream` options a user meets first: --estimate needs no subscription, and
--progress-every (documented for both commands) is the stream's progress interval too."""

from __future__ import annotations

import pytest

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.run import jobs

from testutil import write_jsonl

SAMPLE = [{"trace_id": f"s{i}", "question": "What did he do?",
           "contexts": ["He treated hundreds of troops. The war ended in 1918."],
           "answer": "He treated hundreds of troops."} for i in range(3)]


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_stream_estimate_needs_no_subscription(tmp_path, capsys):
    sample = write_jsonl(tmp_path / "sample.jsonl", SAMPLE)
    code = cli.main(["stream", "--judge", "openai", "--model", "gpt-4o-mini", "--estimate",
                     str(sample), "--traces-per-hour", "40000"])
    out = capsys.readouterr().out
    assert code == 0
    assert "per hour" in out and "[per 1000 traces]" in out
    assert "valid traces 3" in out


def test_a_stream_without_subscription_is_a_usage_error(tmp_path, capsys):
    code = cli.main(["stream", "--judge", "offline", "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert "stream needs --subscription" in err and "--estimate" in err


@pytest.mark.parametrize("value", ["0", "-1"])
def test_stream_progress_every_must_be_positive(tmp_path, capsys, value):
    code = cli.main(["stream", "--subscription", "projects/p-1/subscriptions/s", "--judge",
                     "offline", "--out", str(tmp_path / "out"), "--progress-every", value])
    assert code == 2
    assert "--progress-every must be > 0" in capsys.readouterr().err


def test_stream_progress_every_is_the_streams_progress_interval(tmp_path, monkeypatch):
    seen = {}

    def run_stream(config, options, stop=None, every_s=None):
        seen["every_s"] = every_s
        return jobs.StreamRun("STOPPED", "test")

    monkeypatch.setattr(jobs, "run_stream", run_stream)
    code = cli.main(["stream", "--subscription", "projects/p-1/subscriptions/s", "--judge",
                     "offline", "--out", str(tmp_path / "out"), "--progress-every", "2.5"])
    assert code == 0
    assert seen["every_s"] == 2.5
