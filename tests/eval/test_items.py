"""Gold joined with audit rows: incomplete and missing answers, the score's fallback."""

from __future__ import annotations

from rt4chart.pipeline.eval.items import build_items
from rt4chart.pipeline.eval.loaders import EvalRecord, GoldSpan


def _record(tid: str, spans=()) -> EvalRecord:
    trace = {"trace_id": tid, "contexts": ["c"], "answer": "An answer.", "task": "QA"}
    return EvalRecord(trace, f"s-{tid}", "QA", tuple(spans))


def _answer(tid, label, hallucinated, status="ok", p=None, spans=()):
    return {"trace_id": tid, "label": label, "hallucinated": hallucinated, "status": status,
            "p_hallucinated": p, "judge_calls": 3, "input_tokens": 10, "cached_tokens": 0,
            "output_tokens": 2, "cost_usd": 0.5,
            "hallucinated_spans": [{"char_start": s, "char_end": e, "label": lb}
                                   for s, e, lb in spans]}


def test_incomplete_missing_and_fallback_score():
    records = [_record("decided", [GoldSpan(0, 2, "CON")]), _record("undecided"),
               _record("scored"), _record("missing", [GoldSpan(3, 9, "NIC")])]
    answers = [
        _answer("decided", "CON", True, "incomplete", spans=[(0, 9, "CON")]),
        _answer("undecided", None, None, "incomplete"),
        _answer("scored", "ENT", False, p=0.25),
    ]
    claims = [{"trace_id": "decided", "label": "CON",
               "evidence": [{"doc_id": "doc0", "char_start": 0, "char_end": 1, "text": "c"}]},
              {"trace_id": "decided", "label": "NIC", "evidence": []}]
    items = {it["trace_id"]: it for it in build_items(records, answers, claims)}
    decided = items["decided"]
    assert (decided["flagged"], decided["score"], decided["score_from"]) == (True, 1.0, "verdict")
    assert decided["pred_spans"] == [[0, 9, "CON"]]
    assert decided["pred_evidence"] == [["doc0", 0, 1]]
    undecided = items["undecided"]
    assert (undecided["flagged"], undecided["score"], undecided["status"]) == (
        False, 0.0, "incomplete")
    assert (items["scored"]["score"], items["scored"]["score_from"]) == (0.25, "p_hallucinated")
    missing = items["missing"]
    assert (missing["status"], missing["flagged"], missing["judge_calls"]) == ("missing", False, 0)
    assert missing["gold_spans"] == [[3, 9, "NIC"]] and missing["answer_len"] == 10


def test_select_parts_tasks_and_seeded_limit():
    from pathlib import Path

    from rt4chart.pipeline.eval import loaders
    from rt4chart.pipeline.eval.runner import EvalOptions, select

    records = loaders.load_ragtruth(Path(__file__).parent / "data" / "ragtruth").records

    def opts(**kw):
        return EvalOptions(dataset="ragtruth", data="d", out="o", **kw)

    assert len(select(records, opts())) == 31  # test: both parts audited
    dev = select(records, opts(split="dev"))
    assert dev and {r.split for r in dev} == {"dev"}
    assert {r.task for r in select(records, opts(tasks=("summary",)))} == {"Summary"}
    limited = select(records, opts(limit=10, seed=1))
    assert len(limited) == 10
    sources = [r.source_id for r in limited]
    for s in set(sources) - {sources[-1]}:  # every source but the last one comes whole
        assert sources.count(s) == sum(r.source_id == s for r in records)
    assert [r.trace_id for r in select(records, opts(limit=10, seed=1))] == [
        r.trace_id for r in limited]
    assert [r.trace_id for r in select(records, opts(limit=10, seed=2))] != [
        r.trace_id for r in limited]
