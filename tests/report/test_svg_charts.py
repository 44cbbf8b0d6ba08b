"""The report's charts are inline SVG drawn in Python: well-formed for any data (empty, one
point, ties, missing values), one mark with a tooltip per data point, escaped text."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

from hypothesis import example, given
from hypothesis import strategies as st

from rt4chart.pipeline.report import charts, svg
from rt4chart.pipeline.report.svg import Axes, Line, Series
from rt4chart.pipeline.results.load import RouteRate

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert(1)</script>&amp;"\''

values = st.one_of(st.none(), st.just(math.nan), st.just(math.inf),
                   st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
names = st.text(max_size=12) | st.just(HOSTILE)


def _marks(drawing: str) -> list[ET.Element]:
    root = ET.fromstring(drawing)  # raises on anything that is not well-formed XML
    assert root.tag == f"{NS}svg" and root.get("role") == "img"
    assert root.find(f"{NS}title").text and root.find(f"{NS}desc") is not None
    marks = [g for g in root.iter(f"{NS}g") if "mark" in (g.get("class") or "").split()]
    for g in marks:  # every mark says what it is
        assert g.find(f"{NS}title") is not None and g.find(f"{NS}title").text
    assert not list(root.iter(f"{NS}script")) and not list(root.iter("script"))
    return marks


@st.composite
def bar_data(draw):
    categories = draw(st.lists(names, max_size=6))
    n = len(categories)
    series = draw(st.lists(st.builds(
        Series, names, st.lists(values, min_size=n, max_size=n),
        low=st.none() | st.lists(values, min_size=n, max_size=n),
        high=st.none() | st.lists(values, min_size=n, max_size=n),
        hatch=st.booleans()), min_size=1, max_size=3))
    return categories, series


@given(bar_data(), st.booleans())
@example(([], [Series("empty", [])]), False)
@example((["a"], [Series("one", [0.3])]), False)
@example((["a", "b", "c"], [Series("ties", [0.42, 0.42, 0.42])]), True)
@example((["a", "b"], [Series("missing", [None, math.nan])]), False)
def test_bar_chart_is_well_formed_with_one_mark_per_value(data, stacked):
    categories, series = data
    drawing = svg.bars("c1", HOSTILE, HOSTILE, categories, series, Axes("x", "y"), stacked)
    assert len(_marks(drawing)) == len(categories) * len(series)
    assert "<script>" not in drawing


@given(st.lists(st.builds(Line, names, st.lists(st.tuples(values, values), max_size=8),
                          step=st.booleans()), max_size=3),
       st.lists(st.builds(Line, names, st.lists(st.tuples(values, values), max_size=3)),
                max_size=2))
@example([], [])
@example([Line("one", [(0.5, 0.5)])], [])
@example([Line("ties", [(1.0, 0.42), (1.0, 0.42), (1.0, 0.42)])], [])
@example([Line("missing", [(None, 0.1), (0.2, math.nan), (None, None)])], [])
def test_line_chart_is_well_formed_with_one_mark_per_point(series, references):
    drawing = svg.lines("c2", "t", "d", series, Axes("x", "y"), references)
    assert len(_marks(drawing)) == sum(len(s.points) for s in series)


def test_a_missing_value_is_a_mark_that_says_so():
    (mark,) = _marks(svg.bars("c", "t", "d", ["r"], [Series("rate", [None])], Axes()))
    assert mark.find(f"{NS}title").text == "r, rate: n/a"
    assert mark.find(f"{NS}rect") is None


def test_chart_title_and_axis_labels_are_drawn_text():
    root = ET.fromstring(svg.lines("c", "My title", "d", [Line("s", [(0, 0), (1, 1)])],
                                   Axes("the x", "the y")))
    texts = {t.get("class"): t.text for t in root.iter(f"{NS}text") if t.get("class")}
    assert texts == {"chart-title": "My title", "x-label": "the x", "y-label": "the y"}


def _rate(route: str, traces: int, hallucinated: int) -> RouteRate:
    return RouteRate(route, traces, hallucinated, hallucinated, 0, 0, 10, 0, 5, 0.01)


def _window(route: str, day: int, traces: int, hallucinated: int) -> dict:
    start = datetime(2024, 5, day, tzinfo=UTC)
    return {"route": route, "window_start": start, "window_end": start + timedelta(days=1),
            "traces": traces, "hallucinated": hallucinated, "rate": hallucinated / traces,
            "rate_low": 0.0, "rate_high": 1.0}


def test_report_charts_have_one_mark_per_route_and_series():
    totals = [_rate("a", 4, 1), _rate(HOSTILE, 2, 0), _rate("c", 0, 0)]
    assert len(_marks(charts.rate_by_route(totals, "r", "d").svg)) == 3
    assert len(_marks(charts.con_nic(totals, "s", "d").svg)) == 6
    assert len(_marks(charts.tokens_and_cost(totals, "k", "d").svg)) == 9
    assert len(_marks(charts.compare_rates(totals, totals, "p", "d").svg)) == 6
    windows = [_window("a", 1, 4, 1), _window("a", 2, 2, 2), _window("b", 1, 1, 0)]
    assert len(_marks(charts.rate_over_time(windows, "t", "d").svg)) == 3


def test_the_time_chart_says_how_many_undated_answers_it_left_out():
    one = ET.fromstring(charts.rate_over_time([_window("a", 1, 4, 1)], "t", "d", 1).svg)
    assert one.find(f"{NS}title").text == "Hallucination rate over time (1 undated answer " \
        "left out)"
    empty = ET.fromstring(charts.rate_over_time([], "t", "d", 3).svg)
    assert "3 undated answers left out" in empty.find(f"{NS}title").text
    assert "No dated windows" in "".join(empty.itertext())
