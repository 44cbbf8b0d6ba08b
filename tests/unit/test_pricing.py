"""The price table: one packaged data file with its source and date, overridable per run; a
model with no price has an unknown (None) cost, never 0."""

from __future__ import annotations

import json

import pytest

from rt4chart.schemas.usage import Usage, total_cost
from rt4chart.transforms.judges.openai.batch import BatchOpenAIJudge
from rt4chart.transforms.judges.openai.judge import OpenAIConfig
from rt4chart.transforms.judges.openai.pricing import prices_for
from rt4chart.transforms.judges.prices import (
    Prices,
    cost_of,
    default_table,
    load_table,
    price_warning,
)

CURRENT = ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-5",
           "gpt-5-mini", "gpt-5-nano", "o1", "o3", "o3-mini", "o4-mini")


def _config(**options: str) -> OpenAIConfig:
    return OpenAIConfig.from_options(options)


def test_the_packaged_table_names_its_source_and_date_and_covers_current_models():
    table = default_table()
    assert table.source.startswith("OpenAI API pricing") and "https://" in table.source
    assert len(table.date) == 10 and table.date[4] == "-"
    assert table.batch_discount == 0.5
    for model in CURRENT:
        p = table.lookup(model)
        assert p is not None and 0 < p.cached <= p.input < p.output, model
    assert table.lookup("gpt-4o-mini-2024-07-18") == table.lookup("gpt-4o-mini")  # snapshot
    assert table.lookup("gpt-4o-2024-05-13") == Prices(5.0, 5.0, 15.0)  # its own entry
    assert table.lookup("my-deployment") is None


def test_prices_resolve_from_model_base_model_and_explicit_options():
    assert prices_for(_config(model="gpt-5-mini")) == Prices(0.25, 0.025, 2.0)
    azure = _config(model="prod-judge-eu", price_model="gpt-4.1-nano")
    assert prices_for(azure) == Prices(0.1, 0.025, 0.4)
    assert prices_for(_config(model="gpt-4o", price_output="12")) == Prices(2.5, 1.25, 12.0)
    # A model not in the table, priced directly: cached defaults to the input price.
    assert prices_for(_config(model="local", price_input="0", price_output="0")) == Prices()
    assert prices_for(_config(model="x", price_input="1", price_output="2")) == Prices(1, 1, 2)
    with pytest.raises(ValueError, match="both"):
        prices_for(_config(model="x", price_input="1"))


def test_an_unknown_model_costs_none_with_a_warning(caplog):
    with caplog.at_level("WARNING", logger="rt4chart"):
        prices = prices_for(_config(model="prod-judge-eu"))
    assert prices is None
    assert "no price for model 'prod-judge-eu'" in caplog.text and "price_model" in caplog.text
    assert cost_of(prices, 1000, 0, 100) is None
    assert cost_of(Prices(1, 0.5, 2), 1_000_000, 0, 0) == pytest.approx(1.0)
    assert price_warning("openai", {"model": "prod-judge-eu"}).startswith("no price")
    assert price_warning("openai", {"model": "gpt-4o"}) is None
    assert price_warning("offline", {}) is None  # other judges report their own costs
    assert price_warning("openai-batch", {"model": "gpt-4o", "batch_state_dir": "/x"}) is None


def test_unknown_costs_stay_unknown_in_every_sum():
    known, unknown = Usage(1, 10, 0, 5, 0.25), Usage(1, 10, 0, 5, None)
    assert (known + known).cost_usd == 0.5
    assert (known + unknown).cost_usd is None and (unknown + known).cost_usd is None
    assert sum([known, unknown], Usage()).cost_usd is None
    assert total_cost([]) == 0.0 and total_cost([0.1, None]) is None


def test_a_prices_file_adds_and_replaces_entries(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({
        "source": "our Azure contract", "date": "2026-01-01", "batch_discount": 0.4,
        "models": {"gpt-4o-mini": {"input": 0.165, "cached_input": 0.083, "output": 0.66},
                   "prod-judge-eu": {"input": 1, "output": 4}}}))
    table = load_table(str(path))
    assert table.source == "our Azure contract" and table.batch_discount == 0.4
    assert table.lookup("gpt-4o-mini") == Prices(0.165, 0.083, 0.66)
    assert table.lookup("prod-judge-eu") == Prices(1, 1, 4)
    assert table.lookup("gpt-5") == default_table().lookup("gpt-5")  # kept
    assert prices_for(_config(model="prod-judge-eu", prices=str(path))) == Prices(1, 1, 4)
    batch = BatchOpenAIJudge({"model": "prod-judge-eu", "prices": str(path),
                              "base_url": "http://127.0.0.1:9/v1",
                              "batch_state_dir": str(tmp_path / "state")})
    assert batch.prices == Prices(0.4, 0.4, 1.6)
    path.write_text(json.dumps({"models": {"m": {"input": "cheap"}}}))
    with pytest.raises(ValueError, match="'m'"):
        load_table(str(path))
    with pytest.raises(ValueError, match="price table"):
        load_table(str(tmp_path / "missing.json"))
