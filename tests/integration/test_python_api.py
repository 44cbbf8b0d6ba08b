"""`rt4chart.audit` and `rt4chart.Auditor` against `rt4chart audit` on the same records."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile

import pytest

import rt4chart
from rt4chart.pipeline.cli import main as cli
from rt4chart.transforms.judges import runtime

import golden_traces as gt
from fake_openai_server import FakeOpenAI, lexical_responder
from testutil import read_tables, write_jsonl

# Columns that differ between two runs of the same records by nature: when they ran.
TIMES = {"audited_at", "received_at", "dead_letter_id"}


def _records() -> list:
    return [
        gt.trace("a-ok", "faq", gt.GROUNDED),
        gt.trace("a-con", "faq", gt.CONTRADICTED),
        gt.trace("a-nic", "billing", gt.UNSUPPORTED),
        gt.trace("a-mixed", "billing", f"{gt.GROUNDED} {gt.UNSUPPORTED}"),
        {"trace_id": "a-bad", "route": "faq", "question": "q?"},  # no context, no answer
    ]


def _rows(rows: list[dict], key: tuple[str, ...]) -> list[dict]:
    """Rows without their times, a dead letter's raw record parsed (the API serialises the
    dicts it is given: the same record, spaced otherwise), in `key` order."""
    out = [{k: json.loads(v) if k == "raw" else v for k, v in r.items() if k not in TIMES}
           for r in rows]
    return sorted(out, key=lambda r: tuple(r[k] for k in key))


@pytest.fixture
def clean_dirs(tmp_path, monkeypatch):
    """A working folder and a temporary folder of the test's own, to see what is left."""
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("TMPDIR", str(tmp))
    return cwd, tmp


def test_api_gives_the_cli_rows_and_leaves_no_file(tmp_path, clean_dirs):
    records = _records()
    path = write_jsonl(tmp_path / "traces.jsonl", records)
    out = tmp_path / "cli-out"
    assert cli.main(["audit", str(path), "--judge", "offline", "--window-size", "2",
                     "--window-overlap", "1", "--out", str(out)]) == 0
    cli_tables = read_tables(out)
    cwd, tmp = clean_dirs
    before = (sorted(os.listdir(cwd)), sorted(os.listdir(tmp)))

    result = rt4chart.audit(records, judge="offline", window_size=2, window_overlap="1")

    assert (sorted(os.listdir(cwd)), sorted(os.listdir(tmp))) == before == ([], [])
    assert result.source is None
    for table, key in (("answers", ("trace_id",)), ("claims", ("trace_id", "claim_index")),
                       ("dead_letters", ("stage", "trace_id"))):
        assert _rows(result.to_arrow(table).to_pylist(), key) == _rows(cli_tables[table], key)
    # The typed answers are the CLI run's, read back by open_run.
    assert result.answers == rt4chart.open_run(str(out)).answers
    labels = {a.trace_id: a.label for a in result.answers}
    assert labels == {"a-ok": "ENT", "a-con": "CON", "a-nic": "NIC", "a-mixed": "NIC"}
    con = result.answer("a-con").claims[0]
    assert con.label == "CON" and con.evidence_sentences and all(
        s in gt.HOURS for s in con.evidence_sentences)
    mixed = result.answer("a-mixed")
    assert [c.label for c in mixed.claims] == ["ENT", "ENT", "NIC"]
    assert [(d.stage, d.trace_id) for d in result.dead_letters] == [("validate", "a-bad")]
    faq = result.summary.route("faq")
    assert (faq.answers, faq.hallucinated, faq.rate) == (2, 1, 0.5)
    assert faq.rate_low < 0.5 < faq.rate_high and faq.calls > 0


def test_out_keeps_the_run_and_open_run_reads_it(tmp_path, clean_dirs):
    out = tmp_path / "kept"
    result = rt4chart.audit([gt.trace("k1", "faq", gt.GROUNDED)], judge="offline", out=out)
    assert result.source == str(out) and (out / "summary.json").exists()
    assert (out / "traces").is_dir()  # the records exist nowhere else: the report reads them
    again = rt4chart.open_run(str(out))
    assert again.answers == result.answers and again.summary == result.summary
    assert os.listdir(clean_dirs[0]) == [] and os.listdir(clean_dirs[1]) == []


def test_a_path_is_audited_as_the_command_reads_it(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", [gt.trace("p1", "faq", gt.CONTRADICTED)])
    result = rt4chart.audit(path, judge="offline")
    assert [(a.trace_id, a.label) for a in result.answers] == [("p1", "CON")]
    assert path.exists()  # the caller's input is never removed


def test_options_are_the_commands_declarations():
    with pytest.raises(TypeError, match="did you mean 'window_size'"):
        rt4chart.Auditor("offline", window_sise=4)
    with pytest.raises(ValueError, match="window_size"):
        rt4chart.Auditor("offline", window_size="four")
    with pytest.raises(ValueError, match="input_format .* must be one of"):
        rt4chart.Auditor("offline", input_format="csv")
    with pytest.raises(ValueError, match="rt4chart audit --estimate"):
        rt4chart.Auditor("offline", estimate=True)
    with pytest.raises(ValueError, match="window overlap must be"):  # the config's own check
        rt4chart.Auditor("offline", window_size=2, window_overlap=5)
    with pytest.raises(TypeError, match="switch"):
        rt4chart.Auditor("offline", overwrite="yes")


def test_bad_records_are_refused_or_dead_lettered(tmp_path):
    with pytest.raises(TypeError, match="record 1: a trace is a dict"):
        rt4chart.audit([gt.trace("x", "r", gt.GROUNDED), "not a dict"], judge="offline")
    with pytest.raises(TypeError, match="record 0 is not JSON"):
        rt4chart.audit([{"trace_id": object()}], judge="offline")
    with pytest.raises(ValueError, match="no records"):
        rt4chart.audit([], judge="offline")
    with pytest.raises(FileNotFoundError):
        rt4chart.audit(tmp_path / "missing.jsonl", judge="offline")
    with pytest.raises(rt4chart.AuditFailed, match="nothing valid") as failed:
        rt4chart.audit([{"trace_id": "only-bad"}], judge="offline")
    assert [d.trace_id for d in failed.value.result.dead_letters] == ["only-bad"]


def test_to_pandas_says_what_is_missing_or_gives_the_table():
    result = rt4chart.audit([gt.trace("pd", "faq", gt.GROUNDED)], judge="offline")
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install pandas"):
            result.to_pandas()
    else:
        assert list(result.to_pandas("claims")["label"]) == ["ENT", "ENT"]
    with pytest.raises(ValueError, match="table must be one of"):
        result.to_arrow("judge_cache")


def test_auditor_probes_once_and_keeps_its_judge(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghijklmnop")
    with FakeOpenAI(lexical_responder) as server:
        auditor = rt4chart.Auditor(
            "openai", base_url=server.base_url,
            judge_option={"backoff_initial_s": 0.02, "backoff_max_s": 0.2})
        first = auditor.audit([gt.trace("o1", "faq", gt.CONTRADICTED)])
        probes = len(server.probes)
        def openai_judges() -> dict:  # in the runtime the stages' DoFns acquire
            # The runtime is the process's: earlier tests' judges of other servers are in it.
            return {k: v for k, v in auditor._runtime._judges.items()
                    if k.name == "openai" and dict(k.options).get("base_url") == server.base_url}

        judges = openai_judges()
        second = asyncio.run(auditor.audit_async([gt.trace("o2", "faq", gt.GROUNDED)]))
        assert probes > 0 and len(server.probes) == probes  # the endpoint probed once
        assert len(server.requests) == first.summary.calls + second.summary.calls
        assert runtime.acquire(runtime.runtime_handle()) is auditor._runtime
        assert openai_judges() == judges and len(judges) == 1  # the same client, limits
        auditor.close()
    assert [a.label for a in first.answers + second.answers] == ["CON", "ENT"]


def test_import_rt4chart_is_light():
    code = ("import sys, rt4chart; print('apache_beam' in sys.modules, "
            "'rt4chart.pipeline' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["False", "False"]
    assert {"audit", "Auditor", "open_run"} <= set(dir(rt4chart))
