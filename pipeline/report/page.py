"""The report page: overview, flagged traces, comparison and trace views, in one HTML file.

Everything is inline (styles, the page's script, the charts as SVG), so the file opens offline. This
module gathers the data; the templates (templates/page.html and the parts it imports) render it.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from importlib import resources

from markupsafe import Markup

from rt4chart.pipeline.report import charts, packing, timeline
from rt4chart.pipeline.report.side_by_side import compare_view
from rt4chart.pipeline.report.templating import macro
from rt4chart.pipeline.report.templating import render as render_template
from rt4chart.pipeline.report.trace_view import anchor, trace_data
from rt4chart.pipeline.results.load import SEVERITY, Run, answer_counts, route_totals
from rt4chart.pipeline.results.summary import usd
from rt4chart.schemas.usage import total_cost

STATIC = "rt4chart.pipeline.report"
FLAGGED_COLUMNS = ("#", "Trace", "Route", "Label", "P(hallucinated)", "CON claims",
                   "NIC claims", "Event time (UTC)", "Status")


def _static(name: str) -> Markup:
    # Our own stylesheet and script, shipped as package data: inlined as they are.
    return Markup(resources.files(STATIC).joinpath("static", name).read_text(encoding="utf-8"))


def flagged(run: Run) -> list[dict]:
    """Hallucinated or incomplete answers, worst first: by label (CON, NIC, no verdict), then
    by P(hallucinated), then (answers often tie on P) by the number of CON and NIC claims, more
    first, then by trace id, so that the order never depends on the order of the tables."""
    rows = [a for a in run.answers if a["hallucinated"] or a["status"] != "ok"]
    bad = Counter(c["trace_id"] for c in run.claims if c["label"] in ("CON", "NIC"))
    return sorted(rows, key=lambda a: (SEVERITY.get(a["label"] or "ERR", 2),
                                       -(a["p_hallucinated"] or 0.0), -bad[a["trace_id"]],
                                       a["trace_id"]))


def problems(run: Run) -> dict:
    """Incomplete answers and dead letters, with their reasons, most common first."""
    incomplete = Counter(a["reason"] or "unknown" for a in run.answers if a["status"] != "ok")
    dead = Counter(f'{d["stage"]}: {d["reason"]}' for d in run.dead_letters
                   if d["stage"] != "judge")
    return {"n_incomplete": sum(incomplete.values()), "n_dead": sum(dead.values()),
            "incomplete": incomplete.most_common(), "dead": dead.most_common()}


def suspicious(run: Run) -> list[dict]:
    """Traces whose text holds instructions aimed at an evaluator, with what matched (audited
    as usual; a judge may have obeyed them)."""
    return [{"trace_id": a["trace_id"], "route": a["route"], "label": a["label"] or a["status"],
             "snippets": list(a.get("suspicious_snippets") or ())}
            for a in run.answers if a.get("suspicious_input")]


def _stats(run: Run) -> list[tuple[str, object]]:
    complete = [a for a in run.answers if a["status"] == "ok"]
    total, n_complete, halluc = answer_counts(run.answers)
    rate = f"{halluc / n_complete:.1%}" if n_complete else "n/a"
    return [("Answers audited", total), ("Complete", n_complete),
            ("Hallucinated", f"{halluc} ({rate})"),
            ("CON", sum(a["label"] == "CON" for a in complete)),
            ("NIC", sum(a["label"] == "NIC" for a in complete)),
            ("Claims", len(run.claims)),
            ("Empty retrievals", empty_retrievals(run.answers)),
            ("Judge cost", usd(total_cost(a["cost_usd"] for a in run.answers)))]


def empty_retrievals(answers: list[dict]) -> str:
    """Answers whose retrieval returned nothing, and how many of them are flagged (a run
    written before the column has none to show)."""
    empty = [a for a in answers if a.get("empty_retrieval")]
    return f"{len(empty)} ({sum(bool(a['hallucinated']) for a in empty)} flagged)"


def overview_view(run: Run) -> dict:
    """The overview, for `overview.html`."""
    totals = route_totals(run.route_rates)
    undated = timeline.undated(run.answers, run.traces)
    return {
        "stats": _stats(run), "totals": totals, "windows": run.route_rates,
        "charts": [
            charts.rate_by_route(totals, "chart-rate", "Hallucination rate per route with 95% "
                                 "Wilson intervals; the numbers are in the table above."),
            charts.rate_over_time(
                timeline.dated_windows(run.route_rates, undated), "chart-time",
                "Hallucination rate per route and window (UTC day for batch runs), with 95% "
                "intervals" + (f"; answers without a timestamp of their own left out: "
                               f"{len(undated)}." if undated else "."), left_out=len(undated)),
            charts.con_nic(totals, "chart-split", "Hallucinated answers per route, split into "
                           "CON (contradicted) and NIC (baseless)."),
            *([charts.tokens_and_cost(totals, "chart-cost", "Judge tokens and cost per route.")]
              if has_cost(totals) else []),
        ],
        "no_cost": None if has_cost(totals) else NO_COST,
        "problems": problems(run), "suspicious": suspicious(run),
    }


# Said instead of the tokens and cost chart when there is nothing to draw.
NO_COST = ("No judge tokens or cost to chart: the judge reported none (an offline judge, or "
           "answers replayed from an earlier run).")


def has_cost(totals) -> bool:
    """Whether any route used judge tokens or has a cost (unknown counts: it is shown so)."""
    return any(t.input_tokens or t.output_tokens or t.cost_usd is None or t.cost_usd > 0
               for t in totals)


def _flag_row(rank: int, a: dict, claims: Counter) -> dict:
    tid, label = a["trace_id"], a["label"] or "ERR"
    return {"rank": rank, "trace_id": tid, "anchor": anchor(tid), "route": a["route"],
            "label": label, "severity": SEVERITY.get(label, 2), "p": a["p_hallucinated"],
            "con": claims[(tid, "CON")], "nic": claims[(tid, "NIC")],
            "event_time": a["event_time"], "status": a["status"]}


def flagged_view(rows: list[dict], run: Run) -> dict:
    """Flagged traces, worst first, for `flagged.html` (the page's script sorts and filters)."""
    claims = Counter((c["trace_id"], c["label"]) for c in run.claims)
    return {"columns": FLAGGED_COLUMNS,
            "rows": [_flag_row(i + 1, a, claims) for i, a in enumerate(rows)],
            "routes": sorted({a["route"] for a in rows}),
            "labels": sorted({a["label"] or "ERR" for a in rows},
                             key=lambda v: SEVERITY.get(v, 2))}


def _meta(run: Run) -> dict:
    """The run's identity and probability thresholds (summary.json, else the answer rows)."""
    prob = run.summary.get("probability") or {}
    answer_t = prob.get("answer_threshold")
    if answer_t is None:
        answer_t = next((a.get("p_threshold") for a in run.answers
                         if a.get("p_threshold") is not None), None)
    return {"out_dir": run.out_dir, "judge_model": run.summary.get("judge_model", "?"),
            "prompt_hash": run.summary.get("prompt_hash", "?"),
            "answer_threshold": answer_t,
            "claim_threshold": None if answer_t is None else prob.get("claim_threshold"),
            "generated": f"{datetime.now(UTC):%Y-%m-%d %H:%M}"}


def page_view(run: Run, other: Run | None, max_traces: int, title: str) -> dict:
    """Everything `page.html` shows."""
    rows = flagged(run)
    shown = rows[:max_traces]
    return {
        "title": title, "meta": _meta(run), "css": _static("report.css"),
        "js": _static("report.js"),
        "overview": overview_view(run), "flagged": flagged_view(rows, run),
        "compare": (compare_view(other, run, {a["trace_id"] for a in shown})
                    if other is not None else None),
        "more": ({"shown": max_traces, "flagged": len(rows)} if len(rows) > max_traces
                 else None),
        "packed_traces": [_packed_view(run, a) for a in shown],
    }


def _packed_view(run: Run, answer: dict) -> Markup:
    """One flagged answer's trace view, rendered (escaped by its template) and packed."""
    view = trace_data(answer, sorted(run.claims_of(answer["trace_id"]),
                                     key=lambda c: c["claim_index"]),
                      run.traces.get(answer["trace_id"]), run.summary)
    # Markup: base64 inside our own placeholder element (packing.placeholder).
    return Markup(packing.placeholder(macro("trace.html", "trace_view", view)))


def render(run: Run, other: Run | None = None, max_traces: int = 200,
           title: str = "RT4CHART audit report") -> str:
    """The whole report as one HTML document."""
    return render_template("page.html", page=page_view(run, other, max_traces, title))
