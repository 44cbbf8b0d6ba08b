"""Gold joined with audit rows: incomplete and missing answers, the score's fallback."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

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
    assert {r.task for r in limited} == {r.task for r in select(records, opts())}
    for task in {r.task for r in limited}:  # per task, every source but the last comes whole
        sources = [r.source_id for r in limited if r.task == task]
        for s in set(sources) - {sources[-1]}:
            assert sources.count(s) == sum(r.source_id == s for r in records)
    assert [r.trace_id for r in select(records, opts(limit=10, seed=1))] == [
        r.trace_id for r in limited]
    assert any([r.trace_id for r in select(records, opts(limit=10, seed=seed))] != [
        r.trace_id for r in limited] for seed in range(2, 6))  # the seed decides


_TASKED = st.lists(st.tuples(st.sampled_from(["QA", "Summary", "Data2txt", "Chat"]),
                             st.integers(0, 6)), min_size=1, max_size=60)


@given(rows=_TASKED, limit=st.integers(1, 60), seed=st.integers(0, 3))
def test_a_limit_is_a_sample_stratified_by_task(rows, limit, seed):
    """`eval --limit N` (issue 48, point 7: `--limit 12` once picked no QA answer): every task
    gets an answer when N allows, the rest in proportion to each task's answers."""
    from rt4chart.pipeline.eval.runner import EvalOptions, select

    records = [EvalRecord({"trace_id": f"t{i}"}, f"{task}-s{source}", task)
               for i, (task, source) in enumerate(rows)]
    opts = EvalOptions(dataset="ragtruth", data="d", out="o", split="all", limit=limit,
                       seed=seed)
    picked = select(records, opts)
    assert len(picked) == min(limit, len(records))
    assert len({r.trace_id for r in picked}) == len(picked)
    sizes = Counter(task for task, _ in rows)
    got = Counter(r.task for r in picked)
    if limit >= len(records):
        assert got == sizes
    elif limit >= len(sizes):
        rest, beyond = limit - len(sizes), sum(sizes.values()) - len(sizes)
        for task, size in sizes.items():
            assert abs(got[task] - (1 + rest * (size - 1) / beyond)) < 1, (task, got, sizes)
    else:
        assert set(got.values()) == {1} and len(got) == limit
    assert [r.trace_id for r in select(records, opts)] == [r.trace_id for r in picked]
