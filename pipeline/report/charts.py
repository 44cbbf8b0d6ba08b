"""The report's charts, drawn by Plotly (its JavaScript is inlined once by the page).

A figure is embedded as JSON in a `<script type="application/json">` with `<`, `>` and `&`
escaped, so route names (untrusted) cannot close the script; the page's own script draws it
(the `figure` macro of templates/macros.html).
Route names shown by Plotly are HTML-escaped too: Plotly reads a subset of HTML in labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

import plotly.graph_objects as go
from markupsafe import Markup

from rt4chart.pipeline.results.load import RouteRate
from rt4chart.pipeline.results.summary import usd

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
             "#000000")
LABEL_COLOURS = {"CON": "#D55E00", "NIC": "#E69F00", "ENT": "#009E73", "ERR": "#777777"}


def _label(route: str) -> str:
    return escape(route, quote=False)


def _layout(fig: go.Figure, title: str, yaxis: str, percent: bool = False) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0.01, "xanchor": "left", "y": 0.98},
        colorway=list(OKABE_ITO), template="plotly_white",
        margin={"l": 60, "r": 20, "t": 70, "b": 60}, height=360,
        legend={"orientation": "h", "y": -0.2}, font={"size": 13},
    )
    fig.update_yaxes(title_text=yaxis, tickformat=".0%" if percent else None,
                     range=[0, 1.15] if percent else None)
    return fig


def _error(rates: list[tuple[float | None, float | None, float | None]]) -> dict:
    return {
        "type": "data", "symmetric": False, "visible": True,
        "array": [(hi - r) if r is not None and hi is not None else 0 for r, _, hi in rates],
        "arrayminus": [(r - lo) if r is not None and lo is not None else 0
                       for r, lo, _ in rates],
    }


def rate_by_route(totals: list[RouteRate]) -> go.Figure:
    """Hallucination rate per route with its 95% Wilson interval."""
    rates = [(t.rate, *t.interval) for t in totals]
    fig = go.Figure(go.Bar(
        x=[_label(t.route) for t in totals], y=[r for r, _, _ in rates],
        error_y=_error(rates), marker_color=OKABE_ITO[0], name="rate",
        text=[_pct(r) for r, _, _ in rates], textposition="outside",
        hovertemplate="%{x}: %{y:.1%}<extra></extra>",
    ))
    return _layout(fig, "Hallucination rate per route (95% interval)", "rate", percent=True)


def rate_over_time(route_rates: list[dict]) -> go.Figure:
    """Rate per route and window (batch: per day; streaming: per window), with intervals."""
    fig = go.Figure()
    for i, route in enumerate(sorted({r["route"] for r in route_rates})):
        rows = [r for r in route_rates if r["route"] == route]
        fig.add_trace(go.Scatter(
            x=[r["window_start"].isoformat() for r in rows], y=[r["rate"] for r in rows],
            error_y=_error([(r["rate"], r["rate_low"], r["rate_high"]) for r in rows]),
            mode="lines+markers", name=_label(route),
            marker={"symbol": ["circle", "square", "diamond", "triangle-up", "x"][i % 5],
                    "size": 9},
            line={"color": OKABE_ITO[i % len(OKABE_ITO)]},
        ))
    fig.update_xaxes(title_text="window start (UTC)", type="date", tickformat="%Y-%m-%d %H:%M")
    return _layout(fig, "Hallucination rate over time", "rate", percent=True)


def con_nic(totals: list[RouteRate]) -> go.Figure:
    """Hallucinated answers per route, split into contradicted (CON) and baseless (NIC)."""
    x = [_label(t.route) for t in totals]
    fig = go.Figure([
        go.Bar(x=x, y=[t.con for t in totals], name="CON (contradicted)",
               marker={"color": LABEL_COLOURS["CON"], "pattern": {"shape": "/"}}),
        go.Bar(x=x, y=[t.nic for t in totals], name="NIC (baseless)",
               marker={"color": LABEL_COLOURS["NIC"], "pattern": {"shape": "."}}),
    ])
    fig.update_layout(barmode="stack")
    return _layout(fig, "CON vs NIC answers per route", "answers")


def tokens_and_cost(totals: list[RouteRate]) -> go.Figure:
    """Judge tokens (bars) and cost (markers, right axis) per route."""
    x = [_label(t.route) for t in totals]
    fig = go.Figure([
        go.Bar(x=x, y=[t.input_tokens - t.cached_tokens for t in totals], name="input (uncached)"),
        go.Bar(x=x, y=[t.cached_tokens for t in totals], name="input (cached)"),
        go.Bar(x=x, y=[t.output_tokens for t in totals], name="output"),
        go.Scatter(x=x, y=[t.cost_usd for t in totals], name="cost (USD)", yaxis="y2",
                   mode="markers+text", marker={"symbol": "diamond", "size": 12,
                                                "color": "#000000"},
                   text=[usd(t.cost_usd) for t in totals], textposition="top center"),
    ])
    fig.update_layout(barmode="stack",
                      yaxis2={"title": {"text": "USD"}, "overlaying": "y", "side": "right",
                              "rangemode": "tozero"})
    return _layout(fig, "Judge tokens and cost per route", "tokens")


def compare_rates(before: list[RouteRate], after: list[RouteRate]) -> go.Figure:
    """Rate per route in two runs side by side."""
    fig = go.Figure()
    for name, totals, colour in (("before", before, OKABE_ITO[1]), ("after", after, OKABE_ITO[0])):
        rates = [(t.rate, *t.interval) for t in totals]
        fig.add_trace(go.Bar(
            x=[_label(t.route) for t in totals], y=[r for r, _, _ in rates], name=name,
            error_y=_error(rates), marker_color=colour,
            marker_pattern_shape="/" if name == "before" else "",
            text=[_pct(r) for r, _, _ in rates], textposition="outside"))
    fig.update_layout(barmode="group")
    return _layout(fig, "Hallucination rate per route: before vs after", "rate", percent=True)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


@dataclass(frozen=True)
class Chart:
    """A figure for the `figure` macro: its element id, text alternative and Plotly JSON."""

    id: str
    description: str
    spec: Markup


def chart(fig: go.Figure, fig_id: str, description: str) -> Chart:
    """A figure as the page embeds it; `description` is its text alternative."""
    # The JSON goes into a <script type="application/json"> raw-text element, where HTML
    # escaping would corrupt it and only "</script" or "<!--" could end it: with every <, >
    # and & written as a JSON \u escape no markup can appear, so it is safe as Markup.
    spec = fig.to_json().replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Chart(fig_id, description, Markup(spec))
