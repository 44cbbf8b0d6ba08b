"""The Python API takes the stages' own frozen configs (issue 49, point 1): a config given
whole gives the verdicts its keywords give, a keyword that a config given whole already holds
is refused, and nothing on the API's path goes through argparse (the command line's): no
module it imports imports argparse, and no parser is made or used by rt4chart's code while an
API audit runs."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
import textwrap

import pytest

import rt4chart
from rt4chart.pipeline.run.config import StagesConfig
from rt4chart.pipeline.sinks.options import TablesConfig
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.segment import SegmentConfig

import golden_traces as gt

TRACES = [gt.trace("t-ok", "faq", gt.GROUNDED), gt.trace("t-con", "faq", gt.CONTRADICTED),
          gt.trace("t-nic", "billing", gt.UNSUPPORTED)]


def _verdicts(result) -> list[tuple]:
    return sorted((a.trace_id, a.label, tuple((c.label, c.text) for c in a.claims))
                  for a in result.answers)


def test_configs_given_whole_give_what_their_keywords_give(tmp_path):
    by_keywords = rt4chart.audit(TRACES, judge="offline", window_size=3, window_overlap=1)
    segment = SegmentConfig(window_size=3, window_overlap=1)
    whole = rt4chart.audit(TRACES, judge=JudgeSpec("offline"), segment=segment)
    stages = StagesConfig(judge=JudgeSpec("offline"), segment=segment)
    nested = rt4chart.audit(TRACES, stages=stages, out=tmp_path / "kept",
                            tables=TablesConfig(write_traces=False))
    assert _verdicts(whole) == _verdicts(by_keywords) == _verdicts(nested)
    assert {a.label for a in whole.answers} == {"ENT", "CON", "NIC"}
    assert "traces" not in nested.tables  # tables= as given, even for records kept in out=


def test_the_config_an_auditor_runs_is_the_one_given():
    segment = SegmentConfig(window_size=5, window_overlap=2)
    auditor = rt4chart.Auditor(JudgeSpec("offline"), segment=segment, max_usd=2)
    config = auditor.config(("x.jsonl",), "out")
    assert config.stages.segment is segment
    assert config.stages.judge == JudgeSpec("offline")
    assert config.stages.caps.max_usd == ("2",)  # a keyword beside a config given whole


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"segment": SegmentConfig(), "window_size": 4}, "window_size: already held by the segment="),
    ({"stages": StagesConfig(judge=JudgeSpec("offline")), "model": "m"}, "model: already held"),
    ({"judge": JudgeSpec("offline"), "judge_option": {"a": "1"}}, "judge_option: already held"),
    ({"segment": {"window_size": 4}}, "segment: a SegmentConfig, got dict"),
    ({"judge": 3}, "judge: a name"),
])
def test_a_value_two_places_would_hold_or_an_object_of_another_type_is_refused(kwargs, message):
    with pytest.raises(TypeError, match=message):
        rt4chart.Auditor(**kwargs)


def test_a_bad_config_given_whole_is_refused_by_its_own_check():
    with pytest.raises(ValueError, match="window overlap must be"):
        rt4chart.Auditor("offline", segment=dataclasses.replace(SegmentConfig(), window_size=2,
                                                                  window_overlap=5))


def _imports_argparse(path: str) -> bool:
    tree = ast.parse(open(path, encoding="utf-8").read())
    return any(isinstance(n, ast.Import) and any(a.name == "argparse" for a in n.names)
               or isinstance(n, ast.ImportFrom) and n.module == "argparse"
               for n in ast.walk(tree))


def test_no_module_on_the_apis_path_imports_argparse():
    code = ("import sys, rt4chart.pipeline.api; print('\\n'.join(f'{n} {m.__file__}' for n, m "
            "in sys.modules.items() if n.startswith('rt4chart') and getattr(m, '__file__', "
            "None)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300).stdout.split("\n")
    modules = dict(line.split(" ", 1) for line in out if line)
    assert "rt4chart.pipeline.api" in modules and "rt4chart.pipeline.run.jobs" in modules
    assert not any(name.startswith("rt4chart.pipeline.cli") for name in modules)
    assert [n for n, path in sorted(modules.items()) if _imports_argparse(path)] == []


SPY = textwrap.dedent("""
    import argparse, sys
    used = []
    def spy(name, original):
        def call(self, *args, **kwargs):
            frame = sys._getframe(1)
            while frame.f_globals.get("__name__") == "argparse":  # its own calls
                frame = frame.f_back
            module = frame.f_globals.get("__name__", "")  # who asked argparse
            if module == "rt4chart" or module.startswith("rt4chart."):
                used.append((name, module))
            return original(self, *args, **kwargs)
        return call
    for name in ("__init__", "parse_args", "parse_known_args", "add_argument"):
        original = getattr(argparse.ArgumentParser, name)
        setattr(argparse.ArgumentParser, name, spy(name, original))
    import rt4chart
    result = rt4chart.audit([{"trace_id": "a", "route": "r", "question": "q?",
                              "contexts": [{"doc_id": "d", "text": "The sky is blue."}],
                              "answer": "The sky is blue."}], judge="offline", window_size=12)
    assert [a.label for a in result.answers] == ["ENT"], result.answers
    print(len(used), used[:3])
""")


def test_an_api_audit_makes_and_uses_no_argparse_parser_of_rt4chart():
    """Beam parses its own pipeline options with argparse (asked by Beam's code, also when
    rt4chart makes a PipelineOptions): that is Beam's, not counted; a parser that rt4chart's
    code makes or asks itself is."""
    out = subprocess.run([sys.executable, "-c", SPY], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split(" ", 1)[0] == "0", out.stdout


def test_records_in_chunks_give_the_verdicts_of_one_run(caplog):
    """In-memory records split into chunks (`chunk_traces`) as a file's lines are."""
    traces = [gt.trace(f"c{i}", "faq", (gt.GROUNDED, gt.CONTRADICTED, gt.UNSUPPORTED)[i % 3])
              for i in range(5)] + [{"trace_id": "c-bad", "route": "faq"}]
    caplog.set_level("INFO", logger="rt4chart")
    one = rt4chart.audit(traces, judge="offline", chunk_traces=0)
    chunked = rt4chart.audit(traces, judge="offline", chunk_traces=2)
    assert any("auditing in 3 chunks" in r.getMessage() for r in caplog.records)
    assert _verdicts(chunked) == _verdicts(one) and len(one.answers) == 5
    assert [d.trace_id for d in chunked.dead_letters] == [d.trace_id for d in one.dead_letters]
    assert (chunked.summary.rate, chunked.summary.answers) == (one.summary.rate, 5)
