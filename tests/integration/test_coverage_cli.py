"""Decomposition coverage through a whole audit run: a judge that returns no claims, or other
claims, for a false sentence cannot make it vanish."""

from __future__ import annotations

import pytest

from testutil import write_jsonl

TRACE = {"trace_id": "trial", "question": "How long is the free trial?",
         "contexts": ["The free trial lasts 14 days. Plans renew monthly."],
         "answer": "Hello! The free trial lasts 30 days. Let me know if you have questions."}


@pytest.mark.parametrize("claims", ["none", "substitute"])
def test_a_false_sentence_still_gets_a_claim_and_ends_non_ent(tmp_path, audit, claims):
    path = str(write_jsonl(tmp_path / "t.jsonl", [TRACE]))
    code, tables, _ = audit(path, "--judge", "fake_judges:dropping", "--judge-option",
                            f"claims={claims}")
    assert code == 0
    (answer,) = tables["answers"]
    assert answer["label"] != "ENT" and answer["hallucinated"] is True
    trial = [c for c in tables["claims"] if c["claim"] == "The free trial lasts 30 days."]
    (claim,) = trial
    assert claim["label"] != "ENT" and claim["sentence_index"] == 1
    # The greeting and the offer claim nothing: no claim is added for them.
    assert {c["sentence_index"] for c in tables["claims"]} == ({1} if claims == "none"
                                                                else {0, 1, 2})
