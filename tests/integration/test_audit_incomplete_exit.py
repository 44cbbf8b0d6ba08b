"""`rt4chart audit` says in its exit status that it left answers incomplete (issue 47): exit 3,
neither 0 (a cron job must notice without a gate) nor 1 (the run succeeded and `--redo`
finishes it); the Python API says the same with `AuditResult.complete`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import rt4chart
from rt4chart.pipeline.cli import main as cli

import golden_traces as gt
from testutil import write_jsonl

FAKES = Path(__file__).resolve().parents[1] / "fakes"
RT4CHART = str(Path(sys.executable).parent / "rt4chart")
JUDGE = ("--judge", "gate_judges:lexical_judge")
TRACES = gt.golden({"faq": [gt.GROUNDED, gt.UNSUPPORTED, gt.CONTRADICTED]})


def test_a_run_leaving_an_answer_incomplete_exits_3_and_its_redo_0(tmp_path):
    traces = write_jsonl(tmp_path / "t.jsonl", TRACES)
    done = subprocess.run(
        [RT4CHART, "audit", str(traces), "--out", "R", *JUDGE, "--judge-option",
         "fail_on=chess"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(FAKES)})
    assert done.returncode == 3, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("rt4chart: 1 of 3 answers are incomplete (a judge call failed on "
                           "them: not counted as grounded); most say: ")
    assert "judge endpoint unreachable" in last
    assert "`rt4chart audit --redo R --out R --overwrite` audits them again (exit 3)" in last
    result = rt4chart.open_run(tmp_path / "R")
    assert not result.complete
    assert [a.trace_id for a in result.incomplete_answers] == ["g-faq-1"]
    # The judge is back: the redo completes every answer, exit 0.
    code = cli.main(["audit", "--redo", str(tmp_path / "R"), "--out", str(tmp_path / "R2"),
                     *JUDGE])
    assert code == 0
    assert rt4chart.open_run(tmp_path / "R2").complete


def test_a_run_with_every_answer_incomplete_still_exits_1(tmp_path, capsys):
    traces = write_jsonl(tmp_path / "t.jsonl", TRACES)
    code = cli.main(["audit", str(traces), "--out", str(tmp_path / "R"), *JUDGE,
                     "--judge-option", "fail_on=library"])
    assert code == 1
    assert "no answer could be judged" in capsys.readouterr().err


def test_the_api_says_it_with_result_complete(tmp_path):
    result = rt4chart.audit(TRACES, judge="gate_judges:lexical_judge",
                            judge_option={"fail_on": "10 am"})
    assert not result.complete
    assert [(a.trace_id, a.status) for a in result.incomplete_answers] == [
        ("g-faq-2", "incomplete")]
    whole = rt4chart.audit(TRACES, judge="gate_judges:lexical_judge")
    assert whole.complete and whole.incomplete_answers == ()
