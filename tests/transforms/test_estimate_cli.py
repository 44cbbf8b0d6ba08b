"""`audit --estimate` and `stream --estimate` as a user runs them: the audit's readers and
validation (dead letters counted), JSON output, per-1,000 and per-hour scaling, usage errors,
and no request to the judge's endpoint."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from rt4chart.pipeline.cli import main as cli

DATA = Path(__file__).resolve().parents[1] / "data"
sys.path.insert(0, str(DATA.parent / "fakes"))
from fake_openai_server import FakeOpenAI  # noqa: E402


@pytest.fixture
def traces(tmp_path) -> Path:
    lines = (DATA / "ragtruth_sample.jsonl").read_text().splitlines()[:2]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([*lines, "not json", '{"trace_id": "x"}']) + "\n")
    return path


def test_audit_estimate_counts_dead_letters_writes_json_and_calls_nothing(tmp_path, traces,
                                                                        monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-estimate-cli-000000")
    out = tmp_path / "est.json"
    with FakeOpenAI() as server:
        code = cli.main(["audit", str(traces), "--judge", "openai", "--base-url",
                         server.base_url, "--model", "gpt-4o-mini", "--batch-api",
                         "--estimate", "--estimate-json", str(out), "--out",
                         str(tmp_path / "never")])
        assert server.requests == []
    assert code == 0 and not (tmp_path / "never").exists()
    data = json.loads(out.read_text())
    assert data["dead_letters"] == 2 and data["batch_api"] is True
    runs = data["runs"]
    assert set(runs) == {"configured", "claims_per_call=4", "prune_windows=True"}
    conf = runs["configured"]
    assert conf["traces"] == 2 and conf["total"]["calls"] > 0
    # Both figures are rounded to the microdollar (estimate_run), so halves may differ by one.
    assert conf["usd"]["configured"] == pytest.approx(conf["usd"]["configured_other_api"] / 2,
                                                      abs=1.01e-6)
    assert runs["claims_per_call=4"]["total"]["calls"] < conf["total"]["calls"]
    printed = capsys.readouterr().out
    assert "verify_local" in printed and "gpt-4o-mini" in printed


def test_stream_estimate_is_per_thousand_traces_and_per_hour(tmp_path, traces, capsys):
    code = cli.main(["stream", "--subscription", "projects/p/subscriptions/s", "--judge",
                     "openai", "--model", "gpt-4o-mini", "--estimate", str(traces),
                     "--traces-per-hour", "500", "--estimate-json", "-"])
    assert code == 0
    run = json.loads(capsys.readouterr().out)["runs"]["configured"]
    per_trace = run["total"]["calls"] / run["traces"]
    assert run["per_traces"] == 1000
    assert run["calls_per_trace_scaled"] == pytest.approx(per_trace * 1000, rel=1e-3)
    assert run["usd_per_hour"] == pytest.approx(run["usd"]["configured"] / 2, rel=1e-3)


def test_an_unpriced_model_costs_unknown_not_zero(traces, capsys):
    assert cli.main(["audit", str(traces), "--judge", "openai", "--model", "my-local-model",
                     "--estimate", "--estimate-json", "-"]) == 0
    usd = json.loads(capsys.readouterr().out)["runs"]["configured"]["usd"]
    assert usd["configured"] is None and usd["per_model"]["gpt-4o-mini"] > 0


@pytest.mark.parametrize("bad", [["--estimate-reasoning-fill", "2"], ["--claims-per-call", "0"]])
def test_usage_errors_exit_2(traces, bad):
    assert cli.main(["audit", str(traces), "--estimate", *bad]) == 2


def test_a_missing_input_is_a_usage_error(tmp_path):
    assert cli.main(["audit", str(tmp_path / "none.jsonl"), "--estimate"]) == 2


def test_the_estimate_counts_only_what_sampling_picks(tmp_path, capsys):
    """--sample and --always apply before the estimate as before the audit: the estimate is
    over the traces the run would audit, and says how many valid traces it saw."""
    record = json.loads((DATA / "ragtruth_sample.jsonl").read_text().splitlines()[0])
    many = [{**record, "trace_id": f"s-{i}", "metadata": {"flag": "yes" if i < 3 else "no"}}
            for i in range(40)]
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in many))
    code = cli.main(["audit", str(path), "--estimate", "--estimate-json", "-"])
    assert code == 0
    full = json.loads(capsys.readouterr().out)
    code = cli.main(["audit", str(path), "--sample", "0.25", "--sample-salt", "est",
                     "--always", "metadata.flag=yes", "--estimate", "--estimate-json", "-"])
    assert code == 0
    sampled = json.loads(capsys.readouterr().out)
    def picked(tid: str) -> bool:
        u = int.from_bytes(hashlib.sha256(f"est\x00{tid}".encode()).digest()[:8], "big")
        return u / 2**64 < 0.25

    expected = sum(1 for i, r in enumerate(many) if i < 3 or picked(r["trace_id"]))
    assert full["seen"] == sampled["seen"] == 40 and full["runs"]["configured"]["traces"] == 40
    assert sampled["runs"]["configured"]["traces"] == expected < 40
    per_trace = full["runs"]["configured"]["total"]["calls"] / 40  # identical traces
    assert sampled["runs"]["configured"]["total"]["calls"] == pytest.approx(
        per_trace * expected)
