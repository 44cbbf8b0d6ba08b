"""Issue 21, defects 1 and 2, end to end through `rt4chart audit`: a number in a document
header, a doc id or the question never clears a claim; an `absence` label never clears a fact.
"""

from __future__ import annotations

import pytest

from testutil import write_jsonl

FIVE = ["Shipping is free.", "Returns take a week.", "The free trial lasts 14 days.",
        "Support is open.", "Refunds go to the card."]
TRIAL = "How long is the free trial?"
# Every answer states a number the documents do not: none may end ENT. Where the number is
# (a header's "Document 3", a doc id, the question) is what each trace tests.
HEADER_TRACES = [
    {"trace_id": "five-docs", "question": TRIAL, "contexts": FIVE,
     "answer": "The free trial lasts 3 days."},
    {"trace_id": "six-docs", "question": TRIAL, "contexts": [*FIVE, "Open daily."],
     "answer": "The free trial lasts 6 days."},
    {"trace_id": "doc-id", "question": TRIAL,
     "contexts": [{"doc_id": "kb-30", "text": "The free trial lasts 14 days."}],
     "answer": "The free trial lasts 30 days."},
    {"trace_id": "doc-id-price", "question": "What does it cost?",
     "contexts": [{"doc_id": "price-$49", "text": "The plan costs $29 a month."}],
     "answer": "The plan costs $49 a month."},
    {"trace_id": "question", "question": "Is it 30 days?",
     "contexts": ["The free trial lasts 14 days."], "answer": "It is 30 days."},
    {"trace_id": "question-trial", "question": "Is the free trial 30 days?",
     "contexts": ["The free trial lasts 14 days."], "answer": "The free trial lasts 30 days."},
    {"trace_id": "question-price", "question": "Is it $49 a month?",
     "contexts": ["The plan costs $29 a month."], "answer": "The plan costs $49 a month."},
]


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.mark.parametrize("judge", [
    ["--judge", "offline"],
    # ENT for everything, quoting the context sentence closest to the claim (it grounds): the
    # support check must find the claim's number in the documents, not in a header.
    ["--judge", "lucky_judge:factory"],
    # ENT quoting "[Document 3: doc2]\nThe free trial lasts 14 days." as one quote.
    ["--judge", "fake_judges:header_quote"],
    ["--judge", "fake_judges:header_quote", "--judge-option", "quote=header"],
])
def test_no_header_doc_id_or_question_clears_a_claim(tmp_path, audit, judge):
    inp = write_jsonl(tmp_path / "in.jsonl", HEADER_TRACES)
    code, tables, _ = audit(str(inp), *judge)
    assert code == 0
    labels = {c["trace_id"]: c["label"] for c in tables["claims"]}
    assert set(labels) == {t["trace_id"] for t in HEADER_TRACES}
    assert [t for t, label in labels.items() if label == "ENT"] == []
    for claim in tables["claims"]:
        assert all("Document" not in e["text"] for e in claim["evidence"])


def test_document_text_still_clears_a_true_claim_with_many_documents(tmp_path, audit):
    traces = [{"trace_id": "true", "question": TRIAL, "contexts": FIVE,
               "answer": "The free trial lasts 14 days."}]
    for judge in ("offline", "lucky_judge:factory"):
        code, tables, _ = audit(str(write_jsonl(tmp_path / "t.jsonl", traces)), "--judge", judge,
                                out=tmp_path / judge.replace(":", "-"))
        assert code == 0
        ((claim),) = tables["claims"]
        assert claim["label"] == "ENT", judge
        assert [(e["doc_id"], e["text"]) for e in claim["evidence"]] == [
            ("doc2", "The free trial lasts 14 days")]


# Five hallucinated facts, a true fact and a true absence statement, over the same context.
ABSENCE_TRACES = [
    {"trace_id": t, "question": "?", "contexts": FIVE, "answer": a} for t, a in (
        ("trial", "The free trial lasts 3 days."),
        ("shipping", "Shipping costs $5."),
        ("returns", "Returns take a month."),
        ("support", "Support is closed on Sundays."),
        ("refunds", "Refunds are paid in cash."),
        ("true-fact", "The free trial lasts 14 days."),
        ("true-absence", "The passages do not say when it opened."),
    )
]
HALLUCINATED = {"trial", "shipping", "returns", "support", "refunds"}


@pytest.mark.parametrize("claims", ["sentence", "lacks"])
def test_an_absence_label_cannot_clear_a_fact(tmp_path, audit, claims):
    inp = write_jsonl(tmp_path / "in.jsonl", ABSENCE_TRACES)
    code, tables, _ = audit(str(inp), "--judge", "fake_judges:absence_label",
                            "--judge-option", f"claims={claims}")
    assert code == 0
    answers = {a["trace_id"]: a for a in tables["answers"]}
    # With "lacks", the true fact's restatement ("The passages do not say that the free trial
    # lasts 14 days.") is rightly contradicted by the context: a bad decomposition costs a false
    # alarm, never a cleared hallucination.
    cleared = {"true-absence"} | ({"true-fact"} if claims == "sentence" else set())
    assert {t for t, a in answers.items() if a["label"] == "ENT"} == cleared
    assert all(answers[t]["hallucinated"] for t in HALLUCINATED)
    (true_absence,) = [c for c in tables["claims"] if c["trace_id"] == "true-absence"]
    assert (true_absence["kind"], true_absence["label"]) == ("absence", "ENT")
    for claim in tables["claims"]:
        if claim["trace_id"] in HALLUCINATED and claim["kind"] == "fact":
            assert claim["label"] == "NIC"
            if claims == "sentence":  # the label was changed, and the note says so
                assert claim["note"].startswith("decomposed as an absence claim")


# Sentences that say what the sources lack and also state a fact: the local OpenAI-compatible
# server's synthetic decomposer (the offline one) used to make each one absence claim, so the
# fact was never verified.
MIXED = [
    {"trace_id": "mixed-price", "question": "?", "contexts": FIVE,
     "answer": "The passages do not say when support opens, but shipping costs $5."},
    {"trace_id": "mixed-trial", "question": "?", "contexts": FIVE,
     "answer": "The documents do not mention the fee; the free trial lasts 3 days."},
]


def test_through_the_openai_client_a_fact_beside_an_absence_is_verified(tmp_path, audit,
                                                                        monkeypatch):
    from fake_openai_server import FakeOpenAI

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghijklmnop")
    inp = write_jsonl(tmp_path / "in.jsonl", MIXED)
    with FakeOpenAI() as server:
        code, tables, _ = audit(str(inp), "--judge", "openai", "--base-url", server.base_url)
    assert code == 0
    answers = {a["trace_id"]: a["label"] for a in tables["answers"]}
    assert answers == {"mixed-price": "NIC", "mixed-trial": "NIC"}
    kinds = sorted((c["trace_id"], c["kind"], c["label"]) for c in tables["claims"])
    assert ("mixed-price", "fact", "NIC") in kinds and ("mixed-trial", "fact", "NIC") in kinds
    assert ("mixed-trial", "absence", "ENT") in kinds  # its absence clause, on its own
