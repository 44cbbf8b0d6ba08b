"""The Langfuse write-back's pure parts: score bodies (an undecided answer as `incomplete`),
deterministic ids, Retry-After and Langfuse's error messages (no network)."""

from __future__ import annotations

import email.utils
import time

import httpx
import pytest

from rt4chart.pipeline.annotate.langfuse import (
    LangfuseTarget,
    _message,
    default_host,
)
from rt4chart.pipeline.annotate.langfuse_write import (
    INCOMPLETE,
    claim_scores,
    score_id,
    trace_scores,
)
from rt4chart.pipeline.annotate.verdicts import TraceVerdict, group_verdicts
from rt4chart.pipeline.sources.rest_client import retry_after as _retry_after
from rt4chart.schemas.columns import to_dict

from testutil import answer_row

TARGET = LangfuseTarget("http://127.0.0.1:1")


def _claim(**columns) -> dict:
    base = {"trace_id": "t", "claim_index": 0, "claim": "Paris is in Spain.", "sentence":
            "Paris is in Spain.", "answer_start": 0, "answer_end": 18, "label": "CON",
            "evidence": [{"doc_id": "d1", "sentence_index": 2, "char_start": 5, "char_end": 30,
                          "text": "Paris is the capital of France."}], "note": None,
            "spans": [], "p_unsupported": 0.9, "judge_model": "m", "prompt_hash": "h"}
    return {**base, **columns}


def test_an_undecided_answer_is_scored_incomplete_without_a_number():
    answer = to_dict(answer_row(label=None, status="incomplete", reason="judge call failed: 500",
                                n_claims=1))
    verdicts = group_verdicts([answer], [_claim(label=None, evidence=[], status="judge_error")])
    assert verdicts.undecided == ["t"] and verdicts.ready == []
    (verdict,) = verdicts.undecided_verdicts
    (label,) = trace_scores(verdict, TARGET)  # no p_hallucinated: no numeric score
    assert label["value"] == INCOMPLETE and label["dataType"] == "CATEGORICAL"
    assert label["name"] == "rt4chart_label" and label["traceId"] == "t"
    assert "Incomplete: judge call failed: 500" in label["comment"]


def test_a_decided_answer_has_its_label_number_and_flagged_claims():
    answer = to_dict(answer_row(label="CON", p_hallucinated=0.8, p_threshold=0.5, n_claims=2))
    ent = _claim(claim_index=1, claim="The Seine flows through Paris.", label="ENT")
    verdict = TraceVerdict(answer, (_claim(), ent))
    label, p = trace_scores(verdict, LangfuseTarget("http://h", prefix="audit"))
    assert (label["name"], label["value"]) == ("audit_label", "CON")
    assert (p["name"], p["value"], p["dataType"]) == ("audit_p_hallucinated", 0.8, "NUMERIC")
    assert ">= 0.5" in p["comment"]
    assert '[CON] "Paris is in Spain."' in label["comment"]
    assert "d1 sentence 2 [5:30]" in label["comment"]
    assert "Seine" not in label["comment"]  # ENT claims are not listed
    per_claim = claim_scores(verdict, TARGET, "obs-1")
    assert [(s["value"], s["observationId"]) for s in per_claim] == [("CON", "obs-1"),
                                                                     ("ENT", "obs-1")]
    assert len({s["id"] for s in per_claim}) == 2


def test_score_ids_depend_only_on_what_is_scored():
    assert score_id("t", "n") == score_id("t", "n")
    ids = {score_id("t", "n"), score_id("t", "m"), score_id("u", "n"),
           score_id("t", "n", "o", 0), score_id("t", "n", "o", 1), score_id("t", "n", "p", 0)}
    assert len(ids) == 6


def _response(status: int, headers: dict | None = None, **body) -> httpx.Response:
    return httpx.Response(status, headers=headers or {}, json=body or None)


def test_retry_after_in_seconds_or_as_a_date():
    assert _retry_after(_response(429, {"Retry-After": "2.5"})) == 2.5
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 20 < _retry_after(_response(429, {"Retry-After": when})) <= 30
    assert _retry_after(_response(429)) is None
    assert _retry_after(_response(429, {"Retry-After": "soon"})) is None


def test_langfuses_message_and_issues_are_reported():
    response = _response(400, message="Invalid request data",
                         error=[{"path": ["value"], "message": "Expected string"}])
    assert _message(response) == "Invalid request data (value: Expected string)"
    assert _message(httpx.Response(502, text="bad gateway")) == "bad gateway"


@pytest.mark.parametrize("host", ["cloud.langfuse.com", "ftp://x"])
def test_a_host_must_be_a_url(host):
    with pytest.raises(ValueError, match="http"):
        LangfuseTarget(host)


def test_the_host_is_found_as_the_sdk_finds_it():
    assert default_host({}) == "https://cloud.langfuse.com"
    assert default_host({"LANGFUSE_HOST": "http://old:3000"}) == "http://old:3000"
    assert default_host({"LANGFUSE_HOST": "http://old:3000",
                         "LANGFUSE_BASE_URL": "http://new:3000"}) == "http://new:3000"
