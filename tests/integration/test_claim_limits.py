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
