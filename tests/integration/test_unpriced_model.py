"""A judge model with no price (an Azure deployment name) costs NULL, not $0, in every table,
the summary and the report; its base model's prices apply once named with price_model."""

from __future__ import annotations

import json

import pytest

from rt4chart.pipeline.cli import main as cli
from rt4chart.transforms.judges.prices import default_table

import fake_judges as fj
from fake_openai_server import FakeOpenAI
from testutil import write_jsonl


def test_unpriced_model_costs_null_everywhere_and_price_model_prices_it(tmp_path, audit,
                                                                         caplog):
    traces = write_jsonl(tmp_path / "t.jsonl", [fj.RUNNING_TRACE])
    with FakeOpenAI(fj.running_example_responder) as server:
        base = (str(traces), "--judge", "openai", "--base-url", server.base_url,
                "--model", "prod-judge-eu", "--window-size", "2", "--window-overlap", "1")
        with caplog.at_level("WARNING", logger="rt4chart"):
            code, tables, out = audit(*base, out=tmp_path / "unpriced")
        priced_code, priced, _ = audit(*base, "--judge-option", "price_model=gpt-4o-mini",
                                       out=tmp_path / "priced")
    assert code == 0 and priced_code == 0
    assert "no price for model 'prod-judge-eu'" in caplog.text  # at start
    for table in ("answers", "costs", "route_rates"):
        assert tables[table] and all(r["cost_usd"] is None for r in tables[table]), table
    assert tables["answers"][0]["input_tokens"] > 0  # the tokens are still counted
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cost_usd"] is None
    assert [w for w in summary["warnings"] if "prod-judge-eu" in w]
    report = tmp_path / "report.html"
    assert cli.main(["report", str(out), "--out", str(report)]) == 0
    assert "cost unknown" in report.read_text()

    (answer,) = priced["answers"]
    p = default_table().lookup("gpt-4o-mini")
    expected = ((answer["input_tokens"] - answer["cached_tokens"]) * p.input
                + answer["cached_tokens"] * p.cached + answer["output_tokens"] * p.output) / 1e6
    assert answer["cost_usd"] == pytest.approx(expected) and expected > 0
    assert json.loads((tmp_path / "priced" / "summary.json").read_text())["warnings"] == []
