"""Launching on Dataflow: what is refused at start (exit 2, with what to use instead), the judge's
key from Secret Manager for stock workers, and `--dry_run`'s plan (exit 0, nothing run)."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from rt4chart.pipeline.cli.main import main
from rt4chart.transforms.common.redact import redact_configured
from rt4chart.transforms.judges.openai import secret_key
from rt4chart.transforms.judges.openai.judge import OpenAIJudge

from fake_openai_server import FakeOpenAI

DATAFLOW = ["--runner", "DataflowRunner", "--project", "proj", "--region", "europe-west1",
            "--temp_location", "gs://bucket-a/tmp", "--max_num_workers", "4"]
SHIPPED = ["--extra_package", "dist/rt4chart-0.1.0-py3-none-any.whl"]
SECRET = ["--judge-option", "api_key_secret=projects/proj/secrets/judge-key"]


@pytest.fixture
def traces(tmp_path):
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps({"trace_id": "t1", "question": "Where?",
                                "contexts": ["The office is in Lyon."],
                                "answer": "The office is in Lyon."}) + "\n")
    return str(path)


def _audit(capsys, *argv) -> tuple[int, str, str]:
    code = main(["audit", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_local_out_and_inputs_are_refused_with_what_to_use(capsys, traces, tmp_path):
    out = tmp_path / "out"
    code, _, err = _audit(capsys, traces, "--out", str(out), *DATAFLOW, *SHIPPED)
    assert code == 2
    assert f"input {traces} is on this machine" in err and "gs://BUCKET" in err
    assert f"--out {out} is on this machine" in err and "bq:PROJECT:DATASET" in err
    assert not out.exists()  # refused before anything was made


def test_the_package_and_the_temp_location_must_reach_the_workers(capsys):
    code, _, err = _audit(capsys, "gs://bucket-a/t.jsonl", "--out", "gs://bucket-a/out",
                          "--runner", "DataflowRunner", "--project", "proj",
                          "--max_num_workers", "2")
    assert code == 2
    assert "--temp_location gs://" in err
    assert "would not have rt4chart installed" in err and "pip wheel --no-deps" in err


def test_an_openai_judge_needs_a_key_the_workers_can_read(capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-launcher-only-0123456789")
    argv = ["gs://bucket-a/t.jsonl", "--out", "gs://bucket-a/out", "--judge", "openai",
            *DATAFLOW, *SHIPPED]
    code, _, err = _audit(capsys, *argv)
    assert code == 2
    assert "workers would have no OPENAI_API_KEY" in err and "api_key_secret" in err
    assert "sk-launcher-only" not in err
    # The same launch with the key in Secret Manager, or with the rt4chart image: a dry run.
    for fix in (SECRET, ["--sdk_container_image", "REGION-docker.pkg.dev/p/r/rt4chart:v1",
                         "--sdk_location", "container"]):
        code, out, err = _audit(capsys, *argv, *fix, "--dry_run", "True")
        assert code == 0, err
        assert "dry run of `rt4chart audit`" in out


def test_dry_run_on_dataflow_prints_the_plan_and_reads_nothing(capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-launcher-only-0123456789")
    code, out, err = _audit(capsys, "gs://bucket-a/traces/*.parquet", "--out",
                            "gs://bucket-a/audits/r1", "--judge", "openai", "--rpm", "500",
                            "--tpm", "200000", "--window-size", "12", "--window-overlap", "4",
                            *DATAFLOW, *SHIPPED, *SECRET, "--dry_run", "True")
    assert code == 0, err
    lines = out.splitlines()
    assert "inputs: gs://bucket-a/traces/*.parquet" in lines
    assert "out: gs://bucket-a/audits/r1" in lines
    assert any("windows of 12 sentences, overlap 4" in line for line in lines)
    assert any(line.startswith("worker processes: 4 (4 workers") for line in lines)
    # 500 rpm and 200,000 tpm shared by 4 processes (n1-standard-1: one SDK process each).
    assert any("125 requests/min, 50000 tokens/min" in line for line in lines)
    assert any("the audit's graph builds" in line for line in lines)
    assert any("inputs are remote" in line for line in lines)
    assert "sk-launcher-only" not in out + err


def test_dry_run_of_a_local_run_writes_nothing(capsys, traces, tmp_path):
    out = tmp_path / "out"
    code, stdout, _ = _audit(capsys, traces, "--out", str(out), "--dry_run", "True")
    assert code == 0
    assert f"inputs: {traces}" in stdout and "judge: offline" in stdout
    # The estimate over the local inputs: the one trace, its calls, no price for offline.
    assert "cost estimate: 1 of 1 valid traces audited, 0 dead letters;" in stdout
    assert "USD unknown" in stdout
    assert not out.exists()


def test_dry_run_names_the_confirming_judge_and_builds_its_graph(capsys, traces, tmp_path):
    out = tmp_path / "out"
    code, stdout, _ = _audit(capsys, traces, "--out", str(out), "--judge", "offline",
                             "--confirm-judge", "confirm_judges:honest", "--dry_run", "True")
    assert code == 0
    assert "-> confirm_ent (confirming judge confirm_judges:honest) ->" in stdout
    assert "the audit's graph builds" in stdout
    assert not out.exists()


def test_an_unbounded_dataflow_job_is_refused_in_the_dry_run_too(capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-launcher-only-0123456789")
    code, _, err = _audit(capsys, "gs://bucket-a/t.jsonl", "--out", "gs://bucket-a/out",
                          "--judge", "openai", "--runner", "DataflowRunner", "--project", "p",
                          "--temp_location", "gs://bucket-a/tmp", *SHIPPED, *SECRET,
                          "--dry_run", "True")
    assert code == 2 and "--max_num_workers" in err


def test_stream_on_dataflow_refuses_a_local_out(capsys, tmp_path):
    code = main(["stream", "--subscription", "projects/p/subscriptions/s", "--out",
                 str(tmp_path / "o"), *DATAFLOW, *SHIPPED])
    err = capsys.readouterr().err
    assert code == 2 and "where Dataflow workers cannot write" in err


def test_secret_names_and_an_empty_secret():
    assert secret_key.version_name("k", "p") == "projects/p/secrets/k/versions/latest"
    assert secret_key.version_name("projects/q/secrets/k", None) == \
        "projects/q/secrets/k/versions/latest"
    assert secret_key.version_name("projects/q/secrets/k/versions/3", None) == \
        "projects/q/secrets/k/versions/3"
    with pytest.raises(ValueError, match="bare id and the project is unknown"):
        secret_key.version_name("k", None)
    with pytest.raises(ValueError, match="neither a secret id"):
        secret_key.version_name("a/b", "p")
    with pytest.raises(ValueError, match="is empty"):
        secret_key.read_api_key("projects/q/secrets/k", access=lambda name: "")


def test_a_judge_without_the_key_in_its_environment_reads_it_from_the_secret(monkeypatch):
    """What a stock Dataflow worker does: no OPENAI_API_KEY, api_key_secret set. The key read
    from Secret Manager (Google's client stood in for: it cannot run here) is what the endpoint
    receives, and it is redacted from what rt4chart writes."""
    monkeypatch.setenv("OPENAI_API_KEY", "")  # so that the judge's setting is undone after
    monkeypatch.delenv("OPENAI_API_KEY")
    key = "sk-from-secret-manager-5f2d9c"
    asked = []

    def access(name: str) -> str:
        asked.append(name)
        return key

    monkeypatch.setattr(secret_key, "access_secret", access)
    with FakeOpenAI() as server:
        judge = OpenAIJudge({"base_url": server.base_url, "probe": "false",
                             "api_key_secret": "projects/proj/secrets/judge-key"})
        asyncio.run(judge.verify_local("The office is in Lyon.", "The office is in Lyon.", "q"))
        auth = [r.headers.get("authorization") for r in server.received]
    assert asked == ["projects/proj/secrets/judge-key/versions/latest"]
    assert auth and set(auth) == {f"Bearer {key}"}
    assert "OPENAI_API_KEY" not in os.environ  # held by the judge: never a file nor the env
    assert judge.held_keys() == (key,)  # its runtime redacts it from what the stages write
    assert key not in (redact_configured(f"upstream said: bad key {key}") or "")
