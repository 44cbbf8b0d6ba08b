"""Two audit runs side by side (a backfill before and after a retriever or prompt change):
`report --compare` and `gate --baseline`'s claim changes. (`eval compare`, `eval/compare.py`,
compares two judges' measures on labelled data instead.)

Answers are matched by trace id. Claims are matched within a trace by their text (a new
decomposition prompt may renumber them), so a claim found in one run only is listed as added
or removed rather than compared with a different claim.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from rt4chart.pipeline.report import charts
from rt4chart.pipeline.report.trace_view import anchor
from rt4chart.pipeline.results.load import RouteRate, Run, route_totals

MAX_ROWS = 500


@dataclass(frozen=True)
class VerdictChange:
    trace_id: str
    route: str
    before: str
    after: str
    p_before: float | None
    p_after: float | None


@dataclass(frozen=True)
class ClaimChange:
    trace_id: str
    claim: str
    before: str  # "absent" when the claim is only in the other run
    after: str


def _verdict(answer: dict | None) -> str:
    if answer is None:
        return "absent"
    if answer["status"] != "ok":
        return "ERR" if answer["label"] is None else f"{answer['label']} (incomplete)"
    return answer["label"] or "ERR"


def verdict_changes(before: Run, after: Run) -> list[VerdictChange]:
    """Traces whose answer label or status differs between the runs (or in one run only)."""
    b = {a["trace_id"]: a for a in before.answers}
    a = {a["trace_id"]: a for a in after.answers}
    out = []
    for tid in sorted(b.keys() | a.keys()):
        vb, va = _verdict(b.get(tid)), _verdict(a.get(tid))
        if vb != va:
            row = a.get(tid) or b[tid]
            out.append(VerdictChange(tid, row["route"], vb, va,
                                     (b.get(tid) or {}).get("p_hallucinated"),
                                     (a.get(tid) or {}).get("p_hallucinated")))
    return out


def _claim_key(claim: dict) -> tuple[str, str]:
    return claim["trace_id"], " ".join(claim["claim"].lower().split())


def claim_changes(before: Run, after: Run) -> list[ClaimChange]:
    """Claims of traces audited in both runs whose label differs, or found in one run only."""
    common = {a["trace_id"] for a in before.answers} & {a["trace_id"] for a in after.answers}
    b = {_claim_key(c): c for c in before.claims if c["trace_id"] in common}
    a = {_claim_key(c): c for c in after.claims if c["trace_id"] in common}
    out = []
    for key in sorted(b.keys() | a.keys()):
        lb = (b[key]["label"] or "ERR") if key in b else "absent"
        la = (a[key]["label"] or "ERR") if key in a else "absent"
        if lb != la:
            out.append(ClaimChange(key[0], (a.get(key) or b[key])["claim"], lb, la))
    return out


def _empty(route: str) -> RouteRate:
    return RouteRate(route, 0, 0, 0, 0, 0, 0, 0, 0, 0.0)


def aligned_totals(before: Run, after: Run) -> tuple[list[RouteRate], list[RouteRate]]:
    """Both runs' per-route totals over the union of their routes, in the same order."""
    b = {t.route: t for t in route_totals(before.route_rates)}
    a = {t.route: t for t in route_totals(after.route_rates)}
    routes = sorted(b.keys() | a.keys())
    return [b.get(r) or _empty(r) for r in routes], [a.get(r) or _empty(r) for r in routes]


def _trace(trace_id: str, linked: set[str]) -> dict:
    """A trace id and the anchor of its trace view, when the page has one."""
    return {"id": trace_id, "anchor": anchor(trace_id) if trace_id in linked else None}


def compare_view(before: Run, after: Run, linked: set[str]) -> dict:
    """The comparison, for `compare.html`: rates per route in both runs, changed verdicts,
    changed claims (the first MAX_ROWS of each)."""
    b, a = aligned_totals(before, after)
    verdicts = verdict_changes(before, after)
    claims = claim_changes(before, after)
    return {
        "before_dir": before.out_dir, "after_dir": after.out_dir, "max_rows": MAX_ROWS,
        "rates": [{"before": tb, "after": ta,
                   "delta": None if ta.rate is None or tb.rate is None
                   else (ta.rate - tb.rate) * 100}
                  for tb, ta in zip(b, a, strict=True)],
        "chart": charts.compare_rates(
            b, a, "chart-compare",
            "Hallucination rate per route before and after, with 95% intervals; "
            "the same numbers are in the table above."),
        "n_verdicts": len(verdicts), "n_claims": len(claims),
        "verdicts": [{**asdict(v), "trace": _trace(v.trace_id, linked)}
                     for v in verdicts[:MAX_ROWS]],
        "claims": [{**asdict(c), "trace": _trace(c.trace_id, linked)} for c in claims[:MAX_ROWS]],
    }
