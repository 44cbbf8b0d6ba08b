"""The report draws the judge tokens and cost chart only when there is something on it; with a
judge that reports no usage (the offline judge) it says so instead of an empty chart."""

from __future__ import annotations

import argparse
import json

import pytest

from rt4chart.pipeline.cli import main as audit_cli
from rt4chart.pipeline.cli import report as report_cli
from rt4chart.pipeline.report.page import NO_COST, has_cost
from rt4chart.pipeline.results.load import RouteRate

TRACE = {"trace_id": "t1", "route": "r", "question": "What is the capital of Japan?",
         "contexts": ["Tokyo is the capital of Japan."], "answer": "Tokyo is the capital."}


def _rate(**usage) -> RouteRate:
    values = {"input_tokens": 0, "cached_tokens": 0, "output_tokens": 0, "cost_usd": 0.0,
              **usage}
    return RouteRate("r", 1, 0, 0, 0, 0, **values)


@pytest.mark.parametrize(("usage", "drawn"), [
    ({}, False),
    ({"input_tokens": 10}, True),
    ({"output_tokens": 3}, True),
    ({"cost_usd": 0.01}, True),
    ({"cost_usd": None}, True),  # a model with no price: the chart says "unknown"
])
def test_the_cost_chart_is_drawn_only_with_tokens_or_cost(usage, drawn):
    assert has_cost([_rate(), _rate(**usage)]) is drawn
    assert has_cost([]) is False


def test_an_offline_run_says_it_has_no_cost_instead_of_an_empty_chart(tmp_path):
    traces = tmp_path / "t.jsonl"
    traces.write_text(json.dumps(TRACE) + "\n")
    out = tmp_path / "out"
    assert audit_cli.main(["audit", str(traces), "--judge", "offline", "--out", str(out)]) == 0
    parser = argparse.ArgumentParser()
    report_cli.add_parser(parser.add_subparsers(dest="command"))
    html = tmp_path / "report.html"
    assert report_cli.run(parser.parse_args(["report", str(out), "--out", str(html)])) == 0
    page = html.read_text(encoding="utf-8")
    assert 'id="chart-cost"' not in page
    assert 'id="no-cost"' in page and NO_COST.split(":")[0] in page
    assert 'id="chart-rate"' in page  # the other charts are still drawn
