"""Two runs side by side (a backfill before and after a retriever or prompt change).

Answers are matched by trace id. Claims are matched within a trace by their text (a new
decomposition prompt may renumber them), so a claim found in one run only is listed as added
or removed rather than compared with a different claim.
"""

from __future__ import annotations

from dataclasses import dataclass

from rt4chart.pipeline.report import charts
from rt4chart.pipeline.report.data import RouteRate, Run, route_totals
from rt4chart.pipeline.report.trace_view import anchor, badge, esc

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


def _rate_cell(t: RouteRate) -> str:
    if t.rate is None:
        return '<td data-value="">n/a</td><td>n/a</td><td>0</td>'
    lo, hi = t.interval
    return (f'<td data-value="{t.rate:.6f}">{t.rate:.1%}</td>'
            f'<td>{lo:.1%} – {hi:.1%}</td><td>{t.traces}</td>')


def _rates_table(before: list[RouteRate], after: list[RouteRate]) -> str:
    rows = []
    for b, a in zip(before, after, strict=True):
        delta = ("n/a" if a.rate is None or b.rate is None
                 else f"{(a.rate - b.rate) * 100:+.1f} points")
        rows.append(f'<tr data-route="{esc(a.route)}"><th scope="row">{esc(a.route)}</th>'
                    f'{_rate_cell(b)}{_rate_cell(a)}<td>{delta}</td></tr>')
    return (
        '<table id="compare-rates"><caption>Hallucination rate per route</caption><thead><tr>'
        '<th scope="col">Route</th><th scope="col">Rate before</th>'
        '<th scope="col">95% interval</th><th scope="col">Answers</th>'
        '<th scope="col">Rate after</th><th scope="col">95% interval</th>'
        '<th scope="col">Answers</th><th scope="col">Change</th></tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table>')


def _trace_link(trace_id: str, linked: set[str]) -> str:
    if trace_id in linked:
        return f'<a href="#{anchor(trace_id)}"><code>{esc(trace_id)}</code></a>'
    return f"<code>{esc(trace_id)}</code>"


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _verdicts_table(changes: list[VerdictChange], linked: set[str]) -> str:
    if not changes:
        return "<p>No trace changed its verdict.</p>"
    rows = "".join(
        f'<tr data-trace="{esc(c.trace_id)}"><td>{_trace_link(c.trace_id, linked)}</td>'
        f'<td>{esc(c.route)}</td><td>{badge(c.before)}</td><td>{badge(c.after)}</td>'
        f'<td>{_p(c.p_before)} → {_p(c.p_after)}</td></tr>'
        for c in changes[:MAX_ROWS])
    more = _more(len(changes))
    return ('<table id="changed-traces"><caption>Traces whose verdict changed</caption>'
            '<thead><tr><th scope="col">Trace</th><th scope="col">Route</th>'
            '<th scope="col">Before</th><th scope="col">After</th>'
            f'<th scope="col">P(hallucinated)</th></tr></thead><tbody>{rows}</tbody></table>'
            f'{more}')


def _claims_table(changes: list[ClaimChange], linked: set[str]) -> str:
    if not changes:
        return "<p>No claim changed its label.</p>"
    rows = "".join(
        f'<tr><td>{_trace_link(c.trace_id, linked)}</td><td>{esc(c.claim)}</td>'
        f'<td>{badge(c.before)}</td><td>{badge(c.after)}</td></tr>'
        for c in changes[:MAX_ROWS])
    return ('<table id="changed-claims"><caption>Claims whose label changed</caption>'
            '<thead><tr><th scope="col">Trace</th><th scope="col">Claim</th>'
            '<th scope="col">Before</th><th scope="col">After</th></tr></thead>'
            f'<tbody>{rows}</tbody></table>{_more(len(changes))}')


def _more(n: int) -> str:
    return f'<p class="muted">First {MAX_ROWS} of {n} shown.</p>' if n > MAX_ROWS else ""


def compare_section(before: Run, after: Run, linked: set[str]) -> str:
    """The comparison: rates per route in both runs, changed verdicts, changed claims."""
    b, a = aligned_totals(before, after)
    verdicts = verdict_changes(before, after)
    claims = claim_changes(before, after)
    fig = charts.figure_html(
        charts.compare_rates(b, a), "chart-compare",
        "Hallucination rate per route before and after, with 95% intervals; "
        "the same numbers are in the table above.")
    return (
        '<section id="compare" aria-labelledby="compare-title">'
        '<h2 id="compare-title">Comparison of two runs</h2>'
        f'<p>Before: <code>{esc(before.out_dir)}</code>. After: '
        f'<code>{esc(after.out_dir)}</code>. {len(verdicts)} traces changed their verdict; '
        f'{len(claims)} claims changed their label.</p>'
        f'{_rates_table(b, a)}{fig}'
        f'<h3>Traces whose verdict changed</h3>{_verdicts_table(verdicts, linked)}'
        f'<h3>Claims that changed</h3>{_claims_table(claims, linked)}</section>')
