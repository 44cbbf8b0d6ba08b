"""Every file a run writes goes through the tables' redaction (issue 47, defect 6): a custom
judge, plugged in through the public `module:factory` contract, whose model name and replies
hold the key from its environment leaves it in no file of the run folder (summary.json,
manifest, tables), nor in the report, an export or what the commands print. Before, the
summary's `judge_model` and the report's header held it in clear.

The key is made at run time (no key-shaped literal in the repository)."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

from rt4chart.pipeline.report.packing import unpacked  # trace views as a browser shows them

from testutil import write_jsonl

RT4CHART = str(Path(sys.executable).parent / "rt4chart")
FAKES = Path(__file__).parents[1] / "fakes"
KEY = "sk-" + "proj-" + secrets.token_urlsafe(24)
CTX = "Tokyo is the capital of Japan. It has about 14 million inhabitants."


def rt4chart(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "PYTHONPATH": str(FAKES),
           "OPENAI_API_KEY": KEY}
    return subprocess.run([RT4CHART, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_a_key_in_a_custom_judges_model_name_and_replies_reaches_no_file(tmp_path):
    write_jsonl(tmp_path / "traces.jsonl", [
        {"trace_id": f"t{i}", "contexts": [CTX], "answer": "Tokyo is the capital of Japan."}
        for i in range(2)])
    printed = []
    for args in (("audit", "traces.jsonl", "--judge", "key_model_judge:key_model", "--out",
                  "R"),
                 ("report", "R", "--out", "report.html"),
                 ("export", "R", "--all", "--out", "labels.jsonl")):
        proc = rt4chart(*args, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-2000:]
        printed += [proc.stdout, proc.stderr]
    files = [p for p in (tmp_path / "R").rglob("*") if p.is_file()]
    files += [tmp_path / "report.html", tmp_path / "labels.jsonl"]
    assert {p.name for p in files} >= {"summary.json", "_rt4chart_manifest.json",
                                       "report.html", "labels.jsonl"}
    holding = [str(p.relative_to(tmp_path)) for p in files if KEY.encode() in p.read_bytes()]
    assert holding == []
    assert KEY not in unpacked((tmp_path / "report.html").read_text())
    assert not [text for text in printed if KEY in text]
    # The judge's model was written, redacted (not left out): the summary says which judge.
    summary = json.loads((tmp_path / "R" / "summary.json").read_text())
    assert summary["judge_model"] == "custom-[REDACTED]"
    assert "custom-[REDACTED]" in (tmp_path / "report.html").read_text()
