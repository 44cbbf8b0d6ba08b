"""Issue 32 end to end through the real transforms, in one pipeline run: a restated question is
not a false alarm, a conflicting context still is, a judge's claim that asserts nothing is a
`no_claim` row outside the answer's label, and a compromised decomposer cannot hide a false
sentence behind a lead-in or behind claims that assert nothing."""

from __future__ import annotations

import json

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import BeamAssertException, assert_that

from rt4chart.pipeline.run.config import AuditConfig, StagesConfig
from rt4chart.pipeline.run.graph import Audit
from rt4chart.schemas.records import RunInfo
from rt4chart.transforms.judges.contract import JudgeSpec

import premise_judges as pj

RUN = RunInfo("issue-32", "test-hash")
NON_CLAIM_ANSWER = "Passage 1 and Passage 2. The kettle has a removable limescale filter."
TRACES = [
    pj.trace("civic", pj.CIVIC_QUESTION, pj.CIVIC_CONTEXT, pj.CIVIC_ANSWER),
    pj.trace("civic-no-question", "", pj.CIVIC_CONTEXT, pj.CIVIC_ANSWER),
    pj.trace("warranty", pj.WARRANTY_QUESTION, pj.WARRANTY_CONTEXT, pj.WARRANTY_ANSWER),
    pj.trace("non-claim", "Does the kettle have a filter?", pj.HIDDEN_CONTEXT, NON_CLAIM_ANSWER),
    *(pj.trace(f"hide-{way}", way, pj.HIDDEN_CONTEXT, pj.HIDDEN_ANSWER)
      for way in sorted(pj.HIDING_CLAIMS)),
]
EXPECTED = {"civic": "ENT", "civic-no-question": "NIC", "warranty": "NIC", "non-claim": "ENT",
            **{f"hide-{way}": "NIC" for way in pj.HIDING_CLAIMS}}


def _check_answers(rows) -> None:
    got = {r.trace_id: r.label for r in rows}
    if got != EXPECTED:
        raise BeamAssertException(f"answers {got} != {EXPECTED}")
    n_claims = {r.trace_id: r.n_claims for r in rows}["non-claim"]
    if n_claims != 2:
        raise BeamAssertException(f"the no_claim row is counted among the claims: {n_claims}")


def _check_premise_notes(by_trace: dict[str, list]) -> None:
    notes = {tid: " | ".join(r.note or "" for r in rows) for tid, rows in by_trace.items()}
    wanted = {"civic": "the question's premise, not demanded from the quotes: number 2011",
              "civic-no-question": "evidence lacks number 2011",
              "warranty": "evidence lacks number 3 years"}
    for tid, text in wanted.items():
        if text not in notes[tid]:
            raise BeamAssertException(f"{tid}: {notes[tid]!r} lacks {text!r}")


def _check_non_claim(rows) -> None:
    got = sorted((r.claim, r.status, r.label) for r in rows)
    expected = [("Passage 1 and Passage 2.", "no_claim", None),
                ("The kettle has a removable limescale filter.", "ok", "ENT")]
    if got != expected:
        raise BeamAssertException(f"{got} != {expected}")
    (empty,) = [r for r in rows if r.status == "no_claim"]
    if (empty.p_unsupported is not None or empty.evidence or empty.window_labels
            or "no_claim" not in (empty.note or "")):
        raise BeamAssertException(f"a no_claim row carries a verdict: {empty}")


def _check_hiding(way: str, rows) -> None:
    # The false sentence is checked: as the lead-in claim itself, or re-added whole.
    if not any("5 years" in r.claim and r.label == "NIC" for r in rows):
        raise BeamAssertException(f"{way}: {[(r.claim, r.status, r.label) for r in rows]}")
    empty = [r.claim for r in rows if r.status == "no_claim"]
    expected = [c for c in pj.HIDING_CLAIMS[way] if "5 years" not in c]
    if empty != expected:
        raise BeamAssertException(f"{way}: non-claims {empty} != {expected}")


def _check_claims(rows) -> None:
    by_trace: dict[str, list] = {}
    for r in sorted(rows, key=lambda r: (r.trace_id, r.claim_index)):
        by_trace.setdefault(r.trace_id, []).append(r)
    _check_premise_notes(by_trace)
    _check_non_claim(by_trace["non-claim"])
    for way in pj.HIDING_CLAIMS:
        _check_hiding(way, by_trace[f"hide-{way}"])


def test_premise_non_claims_and_a_compromised_decomposer_end_to_end():
    config = AuditConfig(inputs=("-",), out="-",
                         stages=StagesConfig(judge=JudgeSpec.of("premise_judges:issue_judge")))
    with TestPipeline(runner="FnApiRunner") as p:
        tables = p | beam.Create([json.dumps(t) for t in TRACES]) | Audit(config.stages, RUN)
        assert_that(tables.answers, _check_answers, label="Answers")
        assert_that(tables.claims, _check_claims, label="Claims")
