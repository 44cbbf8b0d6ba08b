"""The report page: overview, flagged traces, comparison and trace views, in one HTML file.

Everything is inline (styles, the page's script, plotly.js), so the file opens offline.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from importlib import resources

from plotly.offline import get_plotlyjs

from rt4chart.pipeline.report import charts
from rt4chart.pipeline.report.compare import compare_section
from rt4chart.pipeline.report.data import SEVERITY, RouteRate, Run, route_totals
from rt4chart.pipeline.report.trace_view import anchor, badge, esc, trace_section
from rt4chart.pipeline.summary import usd
from rt4chart.schemas.records import total_cost

STATIC = "rt4chart.pipeline.report"


def _static(name: str) -> str:
    return resources.files(STATIC).joinpath("static", name).read_text(encoding="utf-8")


def flagged(run: Run) -> list[dict]:
    """Hallucinated or incomplete answers, worst first (CON, NIC, no verdict; then by P)."""
    rows = [a for a in run.answers if a["hallucinated"] or a["status"] != "ok"]
    return sorted(rows, key=lambda a: (SEVERITY.get(a["label"] or "ERR", 2),
                                       -(a["p_hallucinated"] or 0.0), a["trace_id"]))


def _num(value: float | None, fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def _route_row(t: RouteRate) -> str:
    lo, hi = t.interval
    interval = "n/a" if lo is None else f"{lo:.1%} – {hi:.1%}"
    value = "" if t.rate is None else f"{t.rate:.6f}"
    return (f'<tr data-route="{esc(t.route)}"><th scope="row">{esc(t.route)}</th>'
            f'<td>{t.traces}</td><td>{t.hallucinated}</td>'
            f'<td class="rate" data-value="{value}">{_num(t.rate, ".1%")}</td>'
            f'<td>{interval}</td><td>{t.con}</td><td>{t.nic}</td><td>{t.incomplete}</td>'
            f'<td>{t.input_tokens}</td><td>{t.cached_tokens}</td><td>{t.output_tokens}</td>'
            f'<td>{usd(t.cost_usd)}</td></tr>')


def routes_table(totals: list[RouteRate]) -> str:
    head = "".join(f'<th scope="col">{h}</th>' for h in (
        "Route", "Complete answers", "Hallucinated", "Rate", "95% interval", "CON", "NIC",
        "Incomplete", "Input tokens", "Cached tokens", "Output tokens", "Cost"))
    body = "".join(_route_row(t) for t in totals) or '<tr><td colspan="12">No rows.</td></tr>'
    return (f'<table id="route-rates"><caption>Per route, over the whole run (latest pane of '
            f'each window)</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')


def windows_table(route_rates: list[dict]) -> str:
    head = "".join(f'<th scope="col">{h}</th>' for h in (
        "Route", "Window start (UTC)", "Pane", "Answers", "Hallucinated", "Rate",
        "95% interval", "CON", "NIC", "Incomplete", "Late", "Cost"))
    rows = "".join(
        f'<tr data-route="{esc(r["route"])}"><th scope="row">{esc(r["route"])}</th>'
        f'<td>{r["window_start"]:%Y-%m-%d %H:%M}</td><td>{esc(r["pane"])}</td>'
        f'<td>{r["traces"]}</td><td>{r["hallucinated"]}</td>'
        f'<td class="rate" data-value="{_num(r["rate"], ".6f")}">{_num(r["rate"], ".1%")}</td>'
        f'<td>{_num(r["rate_low"], ".1%")} – {_num(r["rate_high"], ".1%")}</td>'
        f'<td>{r["con"]}</td><td>{r["nic"]}</td><td>{r["incomplete"]}</td><td>{r["late"]}</td>'
        f'<td>{usd(r["cost_usd"])}</td></tr>' for r in route_rates)
    return (f'<details><summary>Rates per window (table)</summary><table id="window-rates">'
            f'<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></details>')


def _counts_table(table_id: str, caption: str, counts: Counter) -> str:
    if not counts:
        return f'<p id="{table_id}">{caption}: none.</p>'
    rows = "".join(f"<tr><td>{esc(k)}</td><td>{n}</td></tr>" for k, n in counts.most_common())
    return (f'<table id="{table_id}"><caption>{caption}</caption><thead><tr>'
            f'<th scope="col">Reason</th><th scope="col">Count</th></tr></thead>'
            f'<tbody>{rows}</tbody></table>')


def problems(run: Run) -> str:
    """Incomplete answers and dead letters, with their reasons."""
    incomplete = Counter(a["reason"] or "unknown" for a in run.answers if a["status"] != "ok")
    dead = Counter(f'{d["stage"]}: {d["reason"]}' for d in run.dead_letters
                   if d["stage"] != "judge")
    return (f'<h3>Incomplete traces and dead letters</h3>'
            f'<p><strong id="n-incomplete">{sum(incomplete.values())}</strong> incomplete '
            f'answers (kept out of the rates; <code>rt4chart audit --redo</code> retries them) '
            f'and <strong id="n-dead">{sum(dead.values())}</strong> dead letters.</p>'
            f'{_counts_table("incomplete-reasons", "Why answers are incomplete", incomplete)}'
            f'{_counts_table("dead-letter-reasons", "Dead letters by stage and reason", dead)}')


def suspicious(run: Run) -> str:
    """Traces whose text holds instructions aimed at an evaluator, with what matched (audited
    as usual; a judge may have obeyed them)."""
    rows = [a for a in run.answers if a.get("suspicious_input")]
    head = (f'<h3>Suspicious input</h3><p><strong id="n-suspicious">{len(rows)}</strong> traces '
            "hold instruction-like text aimed at an evaluator (their verdicts deserve a look).</p>")
    if not rows:
        return head
    body = "".join(
        f'<tr><td><code>{esc(a["trace_id"])}</code></td><td>{esc(a["route"])}</td>'
        f'<td>{esc(a["label"] or a["status"])}</td><td>'
        + "<br>".join(esc(x) for x in a.get("suspicious_snippets") or ()) + "</td></tr>"
        for a in rows)
    return (head + '<table id="suspicious-table"><thead><tr><th scope="col">Trace</th>'
            '<th scope="col">Route</th><th scope="col">Label</th><th scope="col">What matched'
            f'</th></tr></thead><tbody>{body}</tbody></table>')


def _stats(run: Run) -> str:
    complete = [a for a in run.answers if a["status"] == "ok"]
    halluc = sum(bool(a["hallucinated"]) for a in complete)
    rate = f"{halluc / len(complete):.1%}" if complete else "n/a"
    items = (("Answers audited", len(run.answers)), ("Complete", len(complete)),
             ("Hallucinated", f"{halluc} ({rate})"),
             ("CON", sum(a["label"] == "CON" for a in complete)),
             ("NIC", sum(a["label"] == "NIC" for a in complete)),
             ("Claims", len(run.claims)),
             ("Judge cost", usd(total_cost(a["cost_usd"] for a in run.answers))))
    return '<dl class="stats">' + "".join(
        f"<div><dt>{k}</dt><dd>{esc(v)}</dd></div>" for k, v in items) + "</dl>"


def overview(run: Run) -> str:
    totals = route_totals(run.route_rates)
    figs = [
        (charts.rate_by_route(totals), "chart-rate", "Hallucination rate per route with 95% "
         "Wilson intervals; the numbers are in the table above."),
        (charts.rate_over_time(run.route_rates), "chart-time", "Hallucination rate per route "
         "and window (UTC day for batch runs), with 95% intervals."),
        (charts.con_nic(totals), "chart-split", "Hallucinated answers per route, split into "
         "CON (contradicted) and NIC (baseless)."),
        (charts.tokens_and_cost(totals), "chart-cost", "Judge tokens and cost per route."),
    ]
    return (
        '<section id="overview" aria-labelledby="overview-title">'
        '<h2 id="overview-title">Overview</h2>' + _stats(run) + routes_table(totals)
        + '<div class="charts">' + "".join(charts.figure_html(*f) for f in figs) + "</div>"
        + windows_table(run.route_rates) + problems(run) + suspicious(run) + "</section>")


def _flag_row(rank: int, a: dict, claims: Counter) -> str:
    label = a["label"] or "ERR"
    p = a["p_hallucinated"]
    when = a["event_time"]
    tid = a["trace_id"]
    return (
        f'<tr data-route="{esc(a["route"])}" data-label="{esc(label)}" '
        f'data-date="{when:%Y-%m-%d}" data-trace="{esc(tid)}">'
        f'<td data-sort="{rank}">{rank}</td>'
        f'<td data-sort="{esc(tid)}"><a href="#{anchor(tid)}"><code>{esc(tid)}</code></a></td>'
        f'<td data-sort="{esc(a["route"])}">{esc(a["route"])}</td>'
        f'<td data-sort="{SEVERITY.get(label, 2)}">{badge(label)}</td>'
        f'<td data-sort="{_num(p, ".6f")}">{_num(p, ".2f")}</td>'
        f'<td data-sort="{claims[(tid, "CON")]}">{claims[(tid, "CON")]}</td>'
        f'<td data-sort="{claims[(tid, "NIC")]}">{claims[(tid, "NIC")]}</td>'
        f'<td data-sort="{when.isoformat()}">{when:%Y-%m-%d %H:%M}</td>'
        f'<td data-sort="{esc(a["status"])}">{esc(a["status"])}</td></tr>')


def _select(name: str, label: str, values: list[str]) -> str:
    options = "".join(f'<option value="{esc(v)}">{esc(v)}</option>' for v in values)
    return (f'<label>{label} <select id="filter-{name}" data-filter="{name}">'
            f'<option value="">all</option>{options}</select></label>')


def flagged_section(rows: list[dict], run: Run) -> str:
    """Flagged traces, worst first; the page's script sorts and filters them."""
    claims = Counter((c["trace_id"], c["label"]) for c in run.claims)
    cols = ("#", "Trace", "Route", "Label", "P(hallucinated)", "CON claims", "NIC claims",
            "Event time (UTC)", "Status")
    head = "".join(
        f'<th scope="col" aria-sort="{"ascending" if i == 0 else "none"}">'
        f'<button type="button" data-col="{i}">{c}</button></th>' for i, c in enumerate(cols))
    body = "".join(_flag_row(i + 1, a, claims) for i, a in enumerate(rows))
    filters = (
        _select("route", "Route", sorted({a["route"] for a in rows}))
        + _select("label", "Label", sorted({a["label"] or "ERR" for a in rows},
                                           key=lambda v: SEVERITY.get(v, 2)))
        + '<label>From <input type="date" id="filter-from" data-filter="from"></label>'
        + '<label>To <input type="date" id="filter-to" data-filter="to"></label>'
        + '<label>Trace id <input type="search" id="filter-text" data-filter="text"></label>')
    return (
        '<section id="flagged" aria-labelledby="flagged-title">'
        '<h2 id="flagged-title">Flagged traces</h2>'
        '<p>Hallucinated (CON or NIC) or incomplete (ERR) answers, worst first. Column '
        'headers sort; the fields below filter.</p>'
        f'<form class="filters" role="search" onsubmit="return false">{filters}</form>'
        f'<p id="flagged-count" aria-live="polite">{len(rows)} of {len(rows)} shown.</p>'
        f'<table id="flagged-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
        '</table></section>')


LEGEND = (
    '<p class="legend"><strong>Labels:</strong> '
    f'{badge("CON")} contradicted by the context · {badge("NIC")} not in the context '
    f'(baseless) · {badge("ENT")} entailed by the context · {badge("ERR")} no verdict '
    '(a judge call failed). A hallucinated answer has a CON or NIC claim.</p>')


def _thresholds(run: Run) -> str:
    """The run's probability thresholds (summary.json, else the answer rows)."""
    prob = run.summary.get("probability") or {}
    answer_t = prob.get("answer_threshold")
    if answer_t is None:
        answer_t = next((a.get("p_threshold") for a in run.answers
                         if a.get("p_threshold") is not None), None)
    if answer_t is None:
        return ""
    claim_t = prob.get("claim_threshold")
    claim = "" if claim_t is None else f", claim ENT below p_unsupported {claim_t:.2f}"
    return f" · hallucinated at P(hallucinated) ≥ {answer_t:.2f}{claim}"


def render(run: Run, other: Run | None = None, max_traces: int = 200,
           title: str = "RT4CHART audit report") -> str:
    """The whole report as one HTML document."""
    rows = flagged(run)
    shown = rows[:max_traces]
    linked = {a["trace_id"] for a in shown}
    traces = "".join(
        trace_section(a, sorted(run.claims_of(a["trace_id"]), key=lambda c: c["claim_index"]),
                      run.traces.get(a["trace_id"]), run.summary) for a in shown)
    more = (f'<p class="muted">Trace views of the {max_traces} worst of {len(rows)} flagged '
            f'traces (--max-traces).</p>' if len(rows) > max_traces else "")
    compare = compare_section(other, run, linked) if other is not None else ""
    nav = ('<nav aria-label="Sections"><a href="#overview">Overview</a> '
           '<a href="#flagged">Flagged traces</a> '
           + ('<a href="#compare">Comparison</a> ' if other is not None else "")
           + '<a href="#traces">Trace views</a></nav>')
    meta = (f'Run <code>{esc(run.out_dir)}</code> · judge '
            f'{esc(run.summary.get("judge_model", "?"))}'
            f' · prompts {esc(run.summary.get("prompt_hash", "?"))}{_thresholds(run)}'
            f' · generated '
            f'{datetime.now(UTC):%Y-%m-%d %H:%M} UTC')
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{esc(title)}</title><style>{_static("report.css")}</style></head><body>'
        '<a class="skip" href="#main">Skip to the report</a>'
        f'<header><h1>{esc(title)}</h1><p class="meta">{meta}</p>{nav}{LEGEND}</header>'
        f'<main id="main">{overview(run)}{flagged_section(rows, run)}{compare}'
        '<section id="traces" aria-labelledby="traces-title">'
        f'<h2 id="traces-title">Trace views</h2>{more}{traces}</section></main>'
        f'<script>{get_plotlyjs()}</script><script>{_static("report.js")}</script>'
        '</body></html>')
