"""The library leaves its host alone (issue 47, point 7): an audit through the Python API
changes neither the host's collector state nor Beam's functions; the speed-ups that need a
process-wide change (the heap set aside, Beam's DoFn specs remembered) belong to the `rt4chart`
command's own process only (`jobs.cli_process_tuning`, entered by cli/main.py)."""

from __future__ import annotations

import gc
import json

from apache_beam.runners.direct import transform_evaluator
from apache_beam.transforms import userstate

import rt4chart
from rt4chart.pipeline.cli import main as cli

import golden_traces as gt

BEAM_SPECS = userstate.get_dofn_specs


def _records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _traces() -> list[dict]:
    return [gt.trace("h1", "faq", gt.GROUNDED), gt.trace("h2", "faq", gt.GROUNDED)]


def test_a_freeze_the_host_makes_while_an_api_audit_runs_is_kept(tmp_path):
    record = tmp_path / "calls.jsonl"
    assert gc.get_freeze_count() == 0
    try:
        result = rt4chart.audit(_traces(), judge="host_probe_judge:factory",
                                judge_option={"record": str(record), "freeze": "true"})
        frozen_after = gc.get_freeze_count()
    finally:
        gc.unfreeze()
    assert len(result.answers) == 2
    calls = _records(record)
    assert calls and all(c["frozen"] > 0 for c in calls)
    assert frozen_after > 0  # the host's policy, not undone by the run


def test_an_api_audit_runs_with_beams_own_functions(tmp_path):
    record = tmp_path / "calls.jsonl"
    rt4chart.audit(_traces(), judge="host_probe_judge:factory",
                   judge_option={"record": str(record)})
    calls = _records(record)
    assert calls and not any(c["beam_specs_replaced"] for c in calls)
    assert userstate.get_dofn_specs is BEAM_SPECS


def _host_state() -> tuple:
    """What a process-wide patch would change: the function in both places Beam reads it
    from, and how many objects the collector has set aside."""
    return ((id(userstate.get_dofn_specs), id(transform_evaluator.get_dofn_specs)),
            gc.get_freeze_count())


def test_beam_and_the_collector_are_the_hosts_before_during_and_after_an_api_audit(tmp_path):
    """Beam functions replaced during an API audit: 0 (issue 49, point 2); the command's own
    speed-ups stay in its process (`jobs.cli_process_tuning`)."""
    record = tmp_path / "calls.jsonl"
    before = _host_state()
    assert userstate.get_dofn_specs is BEAM_SPECS is transform_evaluator.get_dofn_specs
    result = rt4chart.audit(_traces(), judge="host_probe_judge:factory",
                            judge_option={"record": str(record)})
    during = {(tuple(c["specs_ids"]), c["frozen"]) for c in _records(record)}
    assert len(result.answers) == 2 and len(_records(record)) >= 2
    assert during == {before}
    assert _host_state() == before


def test_an_api_audit_does_not_set_the_hosts_heap_aside(tmp_path):
    record = tmp_path / "calls.jsonl"
    before = gc.get_freeze_count()
    rt4chart.audit(_traces(), judge="host_probe_judge:factory",
                   judge_option={"record": str(record)})
    assert {c["frozen"] for c in _records(record)} == {before}


def test_the_command_runs_its_command_with_the_speed_ups_and_gives_them_back(monkeypatch,
                                                                             tmp_path):
    seen = []

    def command(args, beam_args):
        seen.append((gc.get_freeze_count(),
                     getattr(userstate.get_dofn_specs, "rt4chart_memo_of", None)))
        return 0

    monkeypatch.setattr(cli, "_command", command)
    before = gc.get_freeze_count()
    assert cli.main(["audit", "--example", "--out", str(tmp_path / "out")]) == 0
    assert seen and seen[0][0] > before and seen[0][1] is BEAM_SPECS
    assert gc.get_freeze_count() == before
    assert userstate.get_dofn_specs is BEAM_SPECS
