"""--max-claims-per-answer through a whole audit run."""

from __future__ import annotations

from testutil import write_jsonl

RECORDS = [
    {"trace_id": "many", "contexts": ["Paris is the capital of France. It lies on the Seine."],
     "answer": "Paris is the capital of France. It lies on the Seine. Paris is in Europe."},
    {"trace_id": "few", "contexts": ["Paris is the capital of France."],
     "answer": "Paris is the capital of France."},
]


def test_over_the_claim_limit_the_trace_is_one_dead_letter_and_the_run_goes_on(tmp_path, audit):
    path = str(write_jsonl(tmp_path / "t.jsonl", RECORDS))
    code, tables, _ = audit(path, "--judge", "offline", "--max-claims-per-answer", "2")
    assert code == 0
    assert [a["trace_id"] for a in tables["answers"]] == ["few"]
    (dead,) = tables["dead_letters"]
    assert (dead["stage"], dead["trace_id"]) == ("decompose", "many")
    assert dead["reason"].startswith("over limit max_claims_per_answer=2: the answer has ")


def test_over_the_claim_limit_with_truncate_the_first_claims_are_audited(tmp_path, audit):
    path = str(write_jsonl(tmp_path / "t.jsonl", RECORDS))
    code, tables, _ = audit(path, "--judge", "offline", "--max-claims-per-answer", "2",
                            "--oversize", "truncate")
    assert code == 0
    assert sorted(a["trace_id"] for a in tables["answers"]) == ["few", "many"]
    assert not tables["dead_letters"]
    many = [c for c in tables["claims"] if c["trace_id"] == "many"]
    assert sorted(c["claim_index"] for c in many) == [0, 1]


def test_a_truncated_answer_is_marked_partial_with_the_limit_in_its_answer_row(tmp_path, audit):
    records = [*RECORDS, {"trace_id": "long", "contexts": ["Paris is big."],
                          "answer": "Paris is big. " * 4}]
    path = str(write_jsonl(tmp_path / "t.jsonl", records))
    code, tables, _ = audit(path, "--judge", "offline", "--max-claims-per-answer", "2",
                            "--max-answer-sentences", "3", "--oversize", "truncate")
    assert code == 0
    answers = {a["trace_id"]: a for a in tables["answers"]}
    assert (answers["few"]["partial"], answers["few"]["partial_reason"]) == (False, None)
    assert answers["many"]["partial"] is True
    assert answers["many"]["partial_reason"].startswith(
        "over limit max_claims_per_answer=2: the answer has 3 claims; audited the first 2")
    assert answers["long"]["partial"] is True
    assert answers["long"]["partial_reason"].startswith("over limit max_answer_sentences=3")
    assert "max_claims_per_answer=2" in answers["long"]["partial_reason"]
