"""Gold records joined with the audit's answers and claims: one evaluation item per answer.

An item is a plain dict (written to OUT/items.jsonl, read back by `eval compare`):

- gold: ``gold_spans`` ``[[start, end, label]]``, ``gold_evidence`` ``[[doc_id, start, end]]``
  or null, ``source_id``, ``task``, ``split`` (dev/test), ``answer_len``;
- prediction: ``status`` (ok, incomplete, or missing when the audit wrote no answer row, e.g. a
  dead-lettered trace), ``label``, ``flagged``, ``pred_spans``, ``score`` and ``score_from``,
  ``pred_evidence`` (the evidence of the answer's CON claims), usage.

Choices: an incomplete answer is flagged when its label says so (a CON or NIC already decided
survives a failed call) and not flagged when its label is None; a missing answer is not flagged.
The score is the answer's ``p_hallucinated`` when the audit wrote one, else 1.0 / 0.0 from the
verdict (``score_from`` says which), so threshold-free measures of a binary score are the ROC
of one operating point.
"""

from __future__ import annotations

from rt4chart.pipeline.eval.loaders import EvalRecord

USAGE = ("judge_calls", "input_tokens", "cached_tokens", "output_tokens", "cost_usd")


def _evidence(claims: list[dict]) -> list[list]:
    return sorted({(e["doc_id"], e["char_start"], e["char_end"])
                   for c in claims if c.get("label") == "CON" for e in c.get("evidence") or []})


def _prediction(answer: dict | None, claims: list[dict]) -> dict:
    if answer is None:
        return {"status": "missing", "label": None, "flagged": False, "pred_spans": [],
                "score": 0.0, "score_from": "missing", "pred_evidence": [],
                **{k: 0 for k in USAGE}}
    flagged = bool(answer.get("hallucinated"))
    p = answer.get("p_hallucinated")
    return {
        "status": answer["status"], "label": answer.get("label"), "flagged": flagged,
        "pred_spans": sorted([s["char_start"], s["char_end"], s["label"]]
                             for s in answer.get("hallucinated_spans") or []),
        "score": float(p) if p is not None else float(flagged),
        "score_from": "p_hallucinated" if p is not None else "verdict",
        "pred_evidence": [list(e) for e in _evidence(claims)],
        **{k: answer.get(k) or 0 for k in USAGE},
        "cost_usd": answer.get("cost_usd"),  # None: a judge model with no price
    }


def build_items(records: list[EvalRecord], answers: list[dict], claims: list[dict]) -> list[dict]:
    """One item per record, in the records' order."""
    by_trace = {a["trace_id"]: a for a in answers}
    claims_by_trace: dict[str, list[dict]] = {}
    for c in claims:
        claims_by_trace.setdefault(c["trace_id"], []).append(c)
    items = []
    for r in records:
        gold = {
            "trace_id": r.trace_id, "source_id": r.source_id, "task": r.task, "split": r.split,
            "answer_len": len(r.trace.get("answer") or ""),
            "gold_spans": [[s.start, s.end, s.label] for s in r.gold_spans],
            "gold_evidence": None if r.gold_evidence is None
            else [[e.doc_id, e.start, e.end] for e in r.gold_evidence],
        }
        pred = _prediction(by_trace.get(r.trace_id), claims_by_trace.get(r.trace_id, []))
        items.append({**gold, **pred})
    return items
