"""Issue 46 point 3 end to end through the real transforms: numbers written in words, CJK
numerals, other digit scripts, framed and Roman numeral characters, "5O" and digits under a
bidi override (tests/data/exemptions/misread_numbers.jsonl, written for these tests). A
hallucinated answer stays non-ENT when the judge obeys (says ENT to everything, quoting the
best-overlapping context sentence: `lucky_judge:factory`); a faithful restatement in another
format stays ENT when the judge is honest (`number_judges:honest`) and when it obeys."""

from __future__ import annotations

import json

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import BeamAssertException, assert_that

from rt4chart.pipeline.run.config import AuditConfig, StagesConfig
from rt4chart.pipeline.run.graph import Audit
from rt4chart.schemas.records import RunInfo
from rt4chart.transforms.judges.contract import JudgeSpec

import number_judges as nj

RUN = RunInfo("issue-46-numbers", "test-hash")
CASES = nj.load_cases()
HALLUCINATED = [c for c in CASES if c["label"] == "hallucinated"]
FAITHFUL = [c for c in CASES if c["label"] == "faithful"]


def _labels_are(expected: dict[str, str]):
    def check(rows) -> None:
        got = {r.trace_id: r.label for r in rows}
        wrong = {tid: got.get(tid) for tid, want in expected.items()
                 if (got.get(tid) == "ENT") != (want == "ENT")}
        if wrong or set(got) != set(expected):
            raise BeamAssertException(f"answers not as expected: {wrong} (got {got})")
    return check


def _audit(spec: str, cases: list[dict], expected: dict[str, str]) -> None:
    config = AuditConfig(inputs=("-",), out="-", stages=StagesConfig(judge=JudgeSpec.of(spec)))
    with TestPipeline(runner="FnApiRunner") as p:
        lines = p | beam.Create([json.dumps(nj.trace(c), ensure_ascii=False) for c in cases])
        tables = lines | Audit(config.stages, RUN)
        assert_that(tables.answers, _labels_are(expected), label="Answers")


def test_the_case_file_holds_every_form_both_ways():
    assert len(HALLUCINATED) >= 14 and len(FAITHFUL) >= 10
    forms = {c["form"] for c in HALLUCINATED}
    assert {"range in words", "coordinated words", "CJK 点/万", "CJK colloquial",
            "financial numeral", "廿", "circled digit", "Roman numeral character",
            "digit with letter O", "bidi override"} <= forms
    assert {c["form"] for c in FAITHFUL} <= forms | {"number in words"}


def test_misread_hallucinations_stay_flagged_under_an_obeying_judge():
    _audit("lucky_judge:factory", HALLUCINATED, {c["id"]: "not ENT" for c in HALLUCINATED})


def test_faithful_restatements_in_another_format_stay_ent():
    expected = {c["id"]: "ENT" for c in FAITHFUL}
    _audit("number_judges:honest", FAITHFUL, expected)
    _audit("lucky_judge:factory", FAITHFUL, expected)
