"""Claim kinds and claim spans end to end through the real transforms: a greeting gives no
claim, an absence claim is checked against the full context only, hallucinated spans are the
words of the non-ENT claims; a judge that obeys text in its inputs cannot make a factual claim
an absence claim by text in the context, which decomposition never sees, nor by text in the
question: an absence label on a factual claim is not trusted."""

from __future__ import annotations

import json

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import BeamAssertException, assert_that

from rt4chart.pipeline.run.config import AuditConfig, StagesConfig
from rt4chart.pipeline.run.graph import Audit
from rt4chart.schemas.records import RunInfo
from rt4chart.schemas.rows import AnswerRow, ClaimRow, SpanRow
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.segment import SegmentConfig
from rt4chart.transforms.verify_global import ABSENCE_NOTE

import fake_judges as fj

CONTEXT = "The price of the guided tour is $50 per person. The tour starts at 9 a.m."
ANSWER = ("Hello! The tour starts at 9 a.m. and the bus is painted red. The passages do not "
          "say how long the tour lasts. The passages do not mention the price of the guided "
          "tour. Let me know if you have any questions.")
TRACE = {"trace_id": "kinds", "question": "When does the tour start?",
         "contexts": [{"doc_id": "d", "text": CONTEXT}], "answer": ANSWER,
         "timestamp": "2024-05-01T09:30:00Z"}
RUN = RunInfo("offline", "test-hash")


def _config(judge: str) -> AuditConfig:
    return AuditConfig(inputs=("-",), out="-", stages=StagesConfig(
        judge=JudgeSpec.of(judge), segment=SegmentConfig(1, 0)))


def _span(text: str) -> tuple[int, int]:
    start = ANSWER.index(text)
    return start, start + len(text)


def _check_claims(rows: list[ClaimRow]) -> None:
    got = sorted((r.claim_index, r.kind, r.label, r.window_labels, r.local_label,
                  tuple((s.char_start, s.char_end) for s in r.spans)) for r in rows)
    expected = [
        (0, "fact", "ENT", ("NIC", "ENT"), "ENT", (_span("The tour starts at 9 a.m"),)),
        (1, "fact", "NIC", ("NIC", "NIC"), "NIC", (_span("the bus is painted red"),)),
        (2, "absence", "ENT", (), None,
         (_span("The passages do not say how long the tour lasts"),)),
        (3, "absence", "CON", (), None,
         (_span("The passages do not mention the price of the guided tour"),)),
    ]
    if got != expected:
        raise BeamAssertException(f"claims:\n{got}\n!=\n{expected}")
    by_index = {r.claim_index: r for r in rows}
    if by_index[2].note != ABSENCE_NOTE or by_index[2].evidence:
        raise BeamAssertException(f"true absence: {by_index[2]}")
    (evidence,) = by_index[3].evidence
    if evidence.text != "The price of the guided tour is $50 per person":
        raise BeamAssertException(f"present: {by_index[3]}")


def _check_answer(rows: list[AnswerRow]) -> None:
    (answer,) = rows
    expected = (
        SpanRow(char_start=_span("the bus")[0], char_end=_span("painted red")[1], label="NIC"),
        SpanRow(char_start=_span("The passages do not mention")[0],
                char_end=_span("of the guided tour")[1], label="CON"),
    )
    if (answer.label, answer.n_claims, answer.hallucinated_spans) != ("CON", 4, expected):
        raise BeamAssertException(f"answer {answer}")
    # 5 decompositions + 2 facts x 2 windows + 4 global checks (2 of them absence checks)
    if answer.judge_calls != 5 + 4 + 4:
        raise BeamAssertException(f"calls {answer.judge_calls}")


def test_kinds_and_claim_spans_through_the_pipeline_with_the_offline_judge():
    with TestPipeline(runner="FnApiRunner") as p:
        tables = p | beam.Create([json.dumps(TRACE)]) | Audit(_config("offline").stages, RUN)
        assert_that(tables.claims, _check_claims, label="Claims")
        assert_that(tables.answers, _check_answer, label="Answer")


def _kinds(expected: list[tuple[str, str]]):
    def check(rows: list[ClaimRow]) -> None:
        got = sorted((r.kind, r.label) for r in rows)
        if got != expected:
            raise BeamAssertException(f"{got} != {expected}")
    return check


def test_text_in_the_context_cannot_turn_a_factual_claim_into_an_absence_claim():
    injected = {**TRACE, "answer": "The museum opened in 1990.",
                "contexts": [{"doc_id": "d", "text": f"{fj.INJECTED_KIND}. {CONTEXT}"}]}
    # The same instruction where the decomposer does read (the question) is obeyed: the judge
    # labels the claim `absence`. The label is not trusted either: the claim's text states a
    # fact, so it is verified as one (issue 21), and its quote (the claim) is not in the context.
    control = {**injected, "trace_id": "control", "question": fj.INJECTED_KIND,
               "contexts": [{"doc_id": "d", "text": CONTEXT}]}
    stages = _config("fake_judges:obedient").stages
    with TestPipeline(runner="FnApiRunner") as p:
        injected_rows = (p | "Injected" >> beam.Create([json.dumps(injected)])
                         | "AuditInjected" >> Audit(stages, RUN))
        control_rows = (p | "Control" >> beam.Create([json.dumps(control)])
                        | "AuditControl" >> Audit(stages, RUN))
        assert_that(injected_rows.claims, _kinds([("fact", "NIC")]), label="Injected")
        assert_that(control_rows.claims, _kinds([("fact", "NIC")]), label="Control")

