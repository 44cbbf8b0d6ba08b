"""A judge that says ENT and quotes the closest context sentence, through a whole audit run."""

from __future__ import annotations

from testutil import write_jsonl

TRACE = {"trace_id": "trial", "question": "How long is the free trial?",
         "contexts": ["The free trial lasts 14 days. Plans renew monthly."],
         "answer": "The free trial lasts 30 days. Plans renew monthly."}


def test_a_lucky_quote_with_another_number_does_not_make_the_claim_supported(tmp_path, audit):
    path = str(write_jsonl(tmp_path / "t.jsonl", [TRACE]))
    code, tables, _ = audit(path, "--judge", "lucky_judge:factory")
    assert code == 0
    claims = sorted(tables["claims"], key=lambda c: c["claim_index"])
    assert [(c["claim"], c["label"]) for c in claims] == [
        ("The free trial lasts 30 days.", "NIC"), ("Plans renew monthly.", "ENT")]
    assert claims[0]["note"].startswith("ENT overturned: evidence lacks")
    assert "30 days" in claims[0]["note"]
    (answer,) = tables["answers"]
    assert (answer["label"], answer["hallucinated"]) == ("NIC", True)
