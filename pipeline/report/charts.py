"""The report's charts, as inline SVG (pipeline/report/svg.py): no chart library, no script.

Each function returns a `Chart` whose `svg` the `figure` macro (templates/macros.html) puts in
the page as it is: svg.py escapes every text it writes (route names are untrusted).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from markupsafe import Markup

from rt4chart.pipeline.report import svg
from rt4chart.pipeline.report.svg import OKABE_ITO, Axes, Line, Series
from rt4chart.pipeline.results.load import RouteRate
from rt4chart.pipeline.results.summary import usd

LABEL_COLOURS = {"CON": "#D55E00", "NIC": "#E69F00", "ENT": "#009E73", "ERR": "#777777"}
RATE_AXES = Axes(y_label="rate", y_format=svg.percent, y_range=(0.0, 1.0))


@dataclass(frozen=True)
class Chart:
    """A figure for the `figure` macro: its id, text alternative and SVG (escaped by svg.py)."""

    id: str
    description: str
    svg: Markup


def _chart(fig_id: str, description: str, drawing: str) -> Chart:
    # svg.py escapes every text and attribute it writes, so the drawing is safe as Markup.
    return Chart(fig_id, description, Markup(drawing))


def _rate_series(name: str, totals: list[RouteRate], colour: str, hatch: bool = False) -> Series:
    return Series(name, [t.rate for t in totals], colour,
                  low=[t.interval[0] for t in totals], high=[t.interval[1] for t in totals],
                  texts=[_pct(t.rate) for t in totals], hatch=hatch)


def rate_by_route(totals: list[RouteRate], fig_id: str, description: str) -> Chart:
    """Hallucination rate per route with its 95% Wilson interval."""
    return _chart(fig_id, description, svg.bars(
        fig_id, "Hallucination rate per route (95% interval)", description,
        [t.route for t in totals], [_rate_series("rate", totals, OKABE_ITO[0])], RATE_AXES))


def _day(seconds: float) -> str:
    return f"{datetime.fromtimestamp(seconds, UTC):%Y-%m-%d %H:%M}"


def rate_over_time(route_rates: list[dict], fig_id: str, description: str,
                   left_out: int = 0) -> Chart:
    """Rate per route and window (batch: per day; streaming: per window), with intervals.

    `left_out` answers without an event time of their own are not in `route_rates` (the caller
    removed them): the chart says how many, instead of placing them at the audit's date.
    """
    title = "Hallucination rate over time"
    if left_out:
        title += f" ({left_out} undated answer{'s' if left_out > 1 else ''} left out)"
    routes = sorted({r["route"] for r in route_rates})
    series = []
    for i, route in enumerate(routes):
        rows = [r for r in route_rates if r["route"] == route]
        series.append(Line(
            route, [(r["window_start"].timestamp(), r["rate"]) for r in rows],
            OKABE_ITO[i % len(OKABE_ITO)],
            tips=[f"{route}, window {_day(r['window_start'].timestamp())}: {_pct(r['rate'])} "
                  f"of {r['traces']}" for r in rows],
            low=[r["rate_low"] for r in rows], high=[r["rate_high"] for r in rows]))
    if not series:
        return _chart(fig_id, description, svg.note(fig_id, title, "No dated windows to draw."))
    axes = Axes("window start (UTC)", "rate", x_format=_day, y_format=svg.percent,
                y_range=(0.0, 1.0))
    return _chart(fig_id, description, svg.lines(fig_id, title, description, series, axes))


def con_nic(totals: list[RouteRate], fig_id: str, description: str) -> Chart:
    """Hallucinated answers per route, split into contradicted (CON) and baseless (NIC)."""
    series = [Series("CON (contradicted)", [t.con for t in totals], LABEL_COLOURS["CON"],
                     hatch=True),
              Series("NIC (baseless)", [t.nic for t in totals], LABEL_COLOURS["NIC"])]
    axes = Axes(y_label="answers", y_format=lambda v: f"{v:.0f}")
    return _chart(fig_id, description, svg.bars(
        fig_id, "CON vs NIC answers per route", description, [t.route for t in totals],
        series, axes, stacked=True))


def tokens_and_cost(totals: list[RouteRate], fig_id: str, description: str) -> Chart:
    """Judge tokens per route, stacked; the route's cost printed above its bars."""
    n = len(totals)
    costs = [f"{usd(t.cost_usd)}" for t in totals]
    series = [Series("input (uncached)", [t.input_tokens - t.cached_tokens for t in totals],
                     OKABE_ITO[0]),
              Series("input (cached)", [t.cached_tokens for t in totals], OKABE_ITO[4],
                     hatch=True),
              Series("output", [t.output_tokens for t in totals], OKABE_ITO[1],
                     texts=[f"{t.output_tokens} tokens; cost {c}" for t, c in zip(totals, costs,
                                                                                   strict=True)]
                     if n else None)]
    axes = Axes(y_label="tokens", y_format=lambda v: f"{v:,.0f}")
    return _chart(fig_id, description, svg.bars(
        fig_id, "Judge tokens and cost per route", description, [t.route for t in totals],
        series, axes, stacked=True))


def compare_rates(before: list[RouteRate], after: list[RouteRate], fig_id: str,
                  description: str) -> Chart:
    """Rate per route in two runs side by side (`before` and `after` aligned by route)."""
    series = [_rate_series("before", before, OKABE_ITO[1], hatch=True),
              _rate_series("after", after, OKABE_ITO[0])]
    return _chart(fig_id, description, svg.bars(
        fig_id, "Hallucination rate per route: before vs after", description,
        [t.route for t in after], series, RATE_AXES))


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"
