"""A trace holding a vague quantity ("hundreds of") goes through `--prune-windows` and
`--estimate` (issue 32: both failed the whole run on Python 3.11), and `--estimate` names a
trace it could not estimate instead of failing."""

from __future__ import annotations

import pytest

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.run import estimate as estimate_run

from testutil import write_jsonl

HUNDREDS = "He treated hundreds of troops."
VAGUE = [
    {"trace_id": "hundreds", "question": "What did he do?", "contexts": [HUNDREDS],
     "answer": HUNDREDS},
    {"trace_id": "dozens", "question": "Who came?",
     "contexts": ["Dozens of people came. Tens of thousands of fans cheered."],
     "answer": "Dozens of people came, and a few thousand dollars were raised."},
]


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_prune_windows_audits_a_vague_quantity(tmp_path, audit):
    path = write_jsonl(tmp_path / "t.jsonl", VAGUE)
    code, tables, _ = audit(str(path), "--judge", "offline", "--prune-windows")
    assert code == 0
    assert {a["trace_id"]: a["status"] for a in tables["answers"]} == {
        "hundreds": "ok", "dozens": "ok"}
    assert tables["dead_letters"] == []


def test_estimate_reads_a_vague_quantity(tmp_path, capsys):
    path = write_jsonl(tmp_path / "t.jsonl", VAGUE)
    assert cli.main(["audit", str(path), "--judge", "openai", "--model", "gpt-4o-mini",
                     "--estimate"]) == 0
    out = capsys.readouterr().out
    assert "[configured] traces 2" in out and "not estimated" not in out


def test_estimate_names_the_trace_it_could_not_estimate(tmp_path, capsys, monkeypatch):
    original = estimate_run.estimate_trace

    def failing(prepared, config):
        if prepared.trace.trace_id == "dozens":
            raise RuntimeError("injected estimate fault")
        return original(prepared, config)

    monkeypatch.setattr(estimate_run, "estimate_trace", failing)
    path = write_jsonl(tmp_path / "t.jsonl", VAGUE)
    json_path = tmp_path / "est.json"
    assert cli.main(["audit", str(path), "--judge", "openai", "--model", "gpt-4o-mini",
                     "--estimate", "--estimate-json", str(json_path)]) == 0
    out = capsys.readouterr().out
    assert "[configured] traces 1" in out  # the other trace is estimated
    (line,) = [x for x in out.splitlines() if x.startswith("not estimated")]
    assert "trace dozens" in line and "estimate failed" in line and "injected" in line
    assert '"trace_id":"dozens"' in json_path.read_text().replace(" ", "")
