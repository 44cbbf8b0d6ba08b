"""The paper's running example, end to end through the real transforms.

Four context sentences, W=2, O=1 (three windows), five claims: claims 1 and 2 CON, claim 3 ENT,
claim 4 NIC in every window but ENT after global verification, claim 5 NIC; the answer CON.
"""

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

import fake_judges as fj

SPEC = JudgeSpec.of("fake_judges:running_example")
CONFIG = AuditConfig(inputs=("-",), out="-", stages=StagesConfig(
    judge=SPEC, segment=SegmentConfig(window_size=2, window_overlap=1)))
RUN = RunInfo("scripted", "test-hash")


def _check_claims(rows: list[ClaimRow]) -> None:
    by_index = {r.claim_index: r for r in rows}
    got = [(by_index[i].claim, by_index[i].window_labels, by_index[i].local_label,
            by_index[i].label) for i in sorted(by_index)]
    expected = [
        (fj.C1, ("CON", "CON", "NIC"), "CON", "CON"),
        (fj.C2, ("NIC", "CON", "CON"), "CON", "CON"),
        (fj.C3, ("ENT", "NIC", "NIC"), "ENT", "ENT"),
        (fj.C4, ("NIC", "NIC", "NIC"), "NIC", "ENT"),
        (fj.C5, ("NIC", "NIC", "NIC"), "NIC", "NIC"),
    ]
    if got != expected:
        raise BeamAssertException(f"claims:\n{got}\n!=\n{expected}")
    c4 = by_index[3]
    # Claim 4's support is spread over three sentences, two of which never share a window.
    if sorted(e.sentence_index for e in c4.evidence) != [1, 2, 3]:
        raise BeamAssertException(f"claim 4 evidence {c4.evidence}")
    if by_index[0].deciding_window != 0 or by_index[1].deciding_window != 1:
        raise BeamAssertException("deciding windows")
    if by_index[4].evidence or by_index[3].deciding_window is not None:
        raise BeamAssertException("NIC claims carry no evidence and no deciding window")
    # All factual (the scripted judge returns plain strings); claim 1 copies its sentence's
    # words, so its span is its own text; claim 2 restates them, so it spans its sentence.
    spans = {i: [(s.char_start, s.char_end) for s in r.spans] for i, r in by_index.items()}
    if {r.kind for r in rows} != {"fact"} or spans[0] != [(0, len(fj.C1) - 1)]:
        raise BeamAssertException(f"kinds and spans {spans}")
    if spans[1] != [(0, len(fj.A1))] or "whole sentence" not in by_index[1].note:
        raise BeamAssertException(f"claim 2 span {spans[1]}: {by_index[1].note}")
    ev = by_index[0].evidence[0]
    quoted = fj.RUNNING_CONTEXT[ev.char_start:ev.char_end]
    if quoted != ev.text or ev.sentence_index != 1:
        raise BeamAssertException(f"evidence offsets {ev}")


def _check_answer(rows: list[AnswerRow]) -> None:
    (answer,) = rows
    a1_end = len(fj.A1)
    a3_start = len(fj.A1) + 1 + len(fj.A2) + 1
    expected_spans = (
        SpanRow(char_start=0, char_end=a1_end, label="CON"),
        SpanRow(char_start=a3_start, char_end=len(fj.RUNNING_ANSWER), label="NIC"),
    )
    if (answer.label, answer.hallucinated, answer.status, answer.n_claims) != (
        "CON", True, "ok", 5
    ):
        raise BeamAssertException(f"answer {answer}")
    if answer.hallucinated_spans != expected_spans:
        raise BeamAssertException(f"spans {answer.hallucinated_spans}")
    # 3 decompositions + 5 claims x 3 windows + 5 global checks
    if answer.judge_calls != 3 + 15 + 5:
        raise BeamAssertException(f"calls {answer.judge_calls}")


def test_running_example_labels_claims_and_answer():
    with TestPipeline(runner="FnApiRunner") as p:
        tables = p | beam.Create([json.dumps(fj.RUNNING_TRACE)]) | Audit(CONFIG.stages, RUN)
        assert_that(tables.claims, _check_claims, label="Claims")
        assert_that(tables.answers, _check_answer, label="Answer")
        assert_that(tables.dead_letters, lambda rows: rows == [] or _fail(rows), label="NoDead")


def _fail(rows):
    raise BeamAssertException(f"unexpected dead letters {rows}")


def test_global_prompt_gets_hint_only_for_local_ent_or_con():
    from rt4chart.transforms.judges import runtime

    with TestPipeline(runner="FnApiRunner") as p:
        _ = p | beam.Create([json.dumps(fj.RUNNING_TRACE)]) | Audit(CONFIG.stages, RUN)
    judge = runtime.judge_for(SPEC)
    hints = {claim: (local, hint) for claim, local, hint in judge.global_calls}
    assert hints[fj.C4] == ("NIC", None)
    assert hints[fj.C5] == ("NIC", None)
    assert hints[fj.C1] == ("CON", f"{fj.S0}\n{fj.S1}")  # its deciding window, w0
    assert hints[fj.C2] == ("CON", f"{fj.S1}\n{fj.S2}")
    assert hints[fj.C3] == ("ENT", f"{fj.S0}\n{fj.S1}")
