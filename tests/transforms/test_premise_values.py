"""Issue 46 end to end: the fresh premise cases (`tests/data/exemptions/premise_values.jsonl`)
through the real transforms, with the judges plugged in through the public contract. Under the
obeying judge (`lucky_judge:factory`, ENT to everything with the best-overlapping context
sentence) no hallucinated answer whose wrong value comes from the question ends ENT; under the
honest judge (`premise_value_judges:honest`) every faithful restatement of the user's setting
ends ENT, and the premise rule is what keeps it (the claim's note names it)."""

from __future__ import annotations

import json

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import BeamAssertException, assert_that
from premise_value_judges import FORMS, load_cases, trace

from rt4chart.pipeline.run.config import AuditConfig, StagesConfig
from rt4chart.pipeline.run.graph import Audit
from rt4chart.schemas.records import RunInfo
from rt4chart.transforms.judges.contract import JudgeSpec

RUN = RunInfo("issue-46", "test-hash")
CASES = load_cases()
GOLD = {c["id"]: c["gold"] for c in CASES}
PREMISE_NOTE = "the question's premise, not demanded from the quotes"


def test_the_case_file_covers_every_form_with_fresh_cases():
    hallucinated = [c for c in CASES if c["gold"] == "hallucinated"]
    assert len(hallucinated) >= 34 and len(CASES) - len(hallucinated) >= 10
    assert {c["form"] for c in hallucinated} == set(FORMS) - {"setting"}
    assert len({c["id"] for c in CASES}) == len(CASES)


def _check_obeying(rows) -> None:
    got = {r.trace_id: r.label for r in rows}
    passed = sorted(t for t, label in got.items() if GOLD[t] == "hallucinated" and label == "ENT")
    if len(got) != len(CASES) or passed:
        raise BeamAssertException(f"{len(got)} answers; hallucinated ENT: {passed}")


def _check_honest(rows) -> None:
    got = {r.trace_id: r.label for r in rows if GOLD[r.trace_id] == "faithful"}
    lost = sorted(t for t, label in got.items() if label != "ENT")
    if len(got) != sum(g == "faithful" for g in GOLD.values()) or lost:
        raise BeamAssertException(f"faithful answers not ENT: {lost}")


def _check_kept_by_the_rule(rows) -> None:
    kept = {r.trace_id for r in rows if PREMISE_NOTE in (r.note or "")}
    faithful = {t for t, g in GOLD.items() if g == "faithful"}
    if kept != faithful:
        raise BeamAssertException(f"premise notes on {sorted(kept ^ faithful)}")


def _audit(p, name: str, spec: str):
    config = AuditConfig(inputs=("-",), out="-",
                         stages=StagesConfig(judge=JudgeSpec.of(spec)))
    return (p | f"Traces{name}" >> beam.Create([json.dumps(trace(c)) for c in CASES])
            | f"Audit{name}" >> Audit(config.stages, RUN))


def test_premise_cases_end_to_end_under_an_obeying_and_an_honest_judge():
    with TestPipeline(runner="FnApiRunner") as p:
        obeying = _audit(p, "Obeying", "lucky_judge:factory")
        honest = _audit(p, "Honest", "premise_value_judges:honest")
        assert_that(obeying.answers, _check_obeying, label="ObeyingAnswers")
        assert_that(honest.answers, _check_honest, label="HonestAnswers")
        assert_that(honest.claims, _check_kept_by_the_rule, label="HonestClaims")
