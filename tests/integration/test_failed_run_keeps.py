"""A failed run keeps what it completed (issue 33, defect 2): a real audit that fails (the
summary cannot be made after every table is written, or a table's write fails mid-job, as an
overflowing usage sum made it fail before) ends with exit 1, and the tables it completed stay
in --out under a manifest marked incomplete: `report` reads them with a loud warning, and the
folder is never removed."""

from __future__ import annotations

import json

import apache_beam as beam

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.run import jobs
from rt4chart.pipeline.sinks import fanout as sinks

from testutil import write_jsonl

CTX = "Tokyo is the capital of Japan. It has about 14 million inhabitants."
MANIFEST = "_rt4chart_manifest.json"
RECORDS = [{"trace_id": f"t{i}", "contexts": [CTX], "answer": "Tokyo is the capital of Japan."}
           for i in range(10)]


def _fail(*_args, **_kwargs):
    raise OverflowError("Python int too large to convert to C long")


class _FailingWrite(beam.PTransform):
    """A table write that fails when it runs."""

    def expand(self, rows):
        return rows | "Fail" >> beam.Map(_fail)


def _failed_manifest(out) -> dict:
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["complete"] is False and manifest["phase"] == "failed"
    return manifest


def test_a_run_failing_after_its_tables_keeps_every_answer_and_claim(tmp_path, audit, capsys,
                                                                    monkeypatch):
    monkeypatch.setattr(jobs, "summarise", _fail)
    code, tables, out = audit(str(write_jsonl(tmp_path / "t.jsonl", RECORDS)), "--judge",
                              "offline")
    assert code == 1 and "OverflowError" in capsys.readouterr().err
    _failed_manifest(out)
    assert sorted(a["trace_id"] for a in tables["answers"]) == [f"t{i}" for i in range(10)]
    assert {c["trace_id"] for c in tables["claims"]} == {f"t{i}" for i in range(10)}
    assert cli.main(["report", str(out), "--out", str(tmp_path / "r.html")]) == 0
    printed = capsys.readouterr()
    assert "WARNING" in printed.err and "failed run" in printed.err
    assert "10 answers, 10 complete" in printed.out


def test_a_run_whose_table_write_fails_mid_job_keeps_its_folder_and_whole_files(
        tmp_path, audit, capsys, monkeypatch):
    real = sinks.WriteTable
    monkeypatch.setattr(sinks, "WriteTable", lambda out, name: _FailingWrite()
                        if name == "costs" else real(out, name))
    code, _, out = audit(str(write_jsonl(tmp_path / "t.jsonl", RECORDS)), "--judge", "offline")
    assert code == 1 and "OverflowError" in capsys.readouterr().err
    manifest = _failed_manifest(out)
    assert manifest["files"] and all(f.split("/")[0] != "costs" for f in manifest["files"])
    assert sorted(f for f in manifest["files"]) == sorted(
        str(p.relative_to(out)) for p in out.rglob("*.parquet"))
