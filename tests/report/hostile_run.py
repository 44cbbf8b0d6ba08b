"""A run built by hand whose every free-text field holds markup, for the escaping tests."""

from __future__ import annotations

from datetime import UTC, datetime

from rt4chart.pipeline.results.load import Run
from rt4chart.transforms.segment import SegmentConfig, prepare
from rt4chart.transforms.validate import parse_trace

EVIL = '<script>document.title="pwned"</script><img src=x onerror=alert(1)><b>&amp;'


def evil(field: str) -> str:
    """The hostile value of one field (named, so each can be found where it is shown)."""
    return f"{field}:{EVIL}"


def _answer(trace_id: str, **extra) -> dict:
    return {"trace_id": trace_id, "route": evil("route"), "label": "CON", "status": "ok",
            "reason": None, "hallucinated": True, "p_hallucinated": 0.9, "n_claims": 2,
            "event_time": datetime(2024, 5, 1, 9, 30, tzinfo=UTC), "cost_usd": 0.0,
            "suspicious_input": True, "suspicious_snippets": [evil("snippet")], **extra}


def _claims(trace_id: str, answer: str, context: str) -> list[dict]:
    quote = context.index("says")
    base = {"trace_id": trace_id, "sentence_index": 0, "sentence": answer,
            "answer_start": 0, "answer_end": len(answer), "window_labels": ["CON", "ENT"],
            "deciding_window": 0, "local_label": "CON", "p_unsupported": 0.8,
            "evidence": [{"doc_id": evil("doc"), "sentence_index": 0, "char_start": quote,
                          "char_end": quote + 4, "text": evil("evidence")}]}
    return [{**base, "claim_index": 0, "claim": evil("claim"), "label": "CON",
             "status": evil("claim-status"), "note": evil("note"), "kind": "fact"},
            {**base, "claim_index": 1, "claim": "Nothing is promised.", "label": "NIC",
             "status": "ok", "note": "", "kind": "absence", "evidence": []}]


def _route_rate() -> dict:
    return {"route": evil("route"), "window_start": datetime(2024, 5, 1, tzinfo=UTC),
            "pane": evil("pane"), "traces": 1, "hallucinated": 1, "rate": 1.0,
            "rate_low": 0.2, "rate_high": 1.0, "con": 1, "nic": 0, "incomplete": 0, "late": 0,
            "input_tokens": 10, "cached_tokens": 0, "output_tokens": 5, "cost_usd": 0.0}


def hostile_run(out_dir: str = evil("out_dir"), label: str = "CON") -> Run:
    """One flagged trace with markup in its id, route, question, answer, context, claims,
    notes, evidence, reasons and snippets; plus an incomplete answer and a dead letter."""
    tid = evil("trace_id")
    context = f"The context says {EVIL}. A second sentence."
    trace = parse_trace({"trace_id": tid, "route": evil("route"), "question": evil("question"),
                         "answer": evil("answer"),
                         "contexts": [{"doc_id": evil("doc"), "text": context}]})
    claims = _claims(tid, evil("answer"), context)
    claims[0]["label"] = label
    incomplete = _answer(evil("incomplete_id"), status="incomplete", label=None,
                         hallucinated=False, reason=evil("reason"), suspicious_input=False)
    return Run(out_dir=out_dir, answers=[_answer(tid, label=label), incomplete], claims=claims,
               route_rates=[_route_rate()], costs=[],
               dead_letters=[{"stage": evil("stage"), "reason": evil("dead")}],
               summary={"judge_model": evil("judge_model"), "prompt_hash": evil("prompt_hash")},
               traces={tid: prepare(trace, SegmentConfig())})
