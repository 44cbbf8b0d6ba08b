"""USD prices per million tokens, by model, from one data file: what any judge's kind prices
its calls with (`JudgeKind.cap_prices`, `priced`), the estimate and the spend cap.

The table is `prices.json` next to this module (package data), with its source and date; a
run adds to or replaces its entries with `--prices FILE` (a local path or any path Beam's
FileSystems reads, such as gs:// for Dataflow workers). A model with no price is not free: its
cost is unknown (None, a NULL cost column). How a backend's options pick its prices (the
openai judge's `price_model`, `price_*`) is the backend's own (openai/pricing.py).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import orjson

from rt4chart.transforms.judges.contract import JudgeSpec

PACKAGE = "rt4chart.transforms.judges"
PRICES_FILE = "prices.json"
_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")  # gpt-4o-mini-2024-07-18 -> gpt-4o-mini


@dataclass(frozen=True)
class Prices:
    """Prices per million tokens; cached tokens are part of the input tokens."""

    input: float = 0.0
    cached: float = 0.0
    output: float = 0.0

    def cost(self, input_tokens: int, cached_tokens: int, output_tokens: int) -> float:
        uncached = max(0, input_tokens - cached_tokens)
        return (
            uncached * self.input + cached_tokens * self.cached + output_tokens * self.output
        ) / 1e6

    def scaled(self, factor: float) -> Prices:
        return Prices(self.input * factor, self.cached * factor, self.output * factor)


@dataclass(frozen=True)
class PriceTable:
    """Prices by model name, where they come from, and the Batch API's discount."""

    models: Mapping[str, Prices] = field(default_factory=dict)
    source: str = ""
    date: str = ""
    batch_discount: float = 0.5

    def lookup(self, model: str) -> Prices | None:
        """A model's prices: its own entry, else its base model's (a dated snapshot)."""
        if model in self.models:
            return self.models[model]
        return self.models.get(_SNAPSHOT.sub("", model))

    def updated(self, other: Mapping[str, Any]) -> PriceTable:
        """This table with a file's entries added or replaced (and its discount, source)."""
        models = {**self.models, **_models(other.get("models", {}))}
        return PriceTable(models, other.get("source", self.source), other.get("date", self.date),
                          float(other.get("batch_discount", self.batch_discount)))


def _models(entries: Mapping[str, Any]) -> dict[str, Prices]:
    out = {}
    for name, entry in entries.items():
        try:
            inp, output = float(entry["input"]), float(entry["output"])
            cached = float(entry.get("cached_input", inp))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"price table entry {name!r}: needs numbers input and output "
                             f"(and cached_input), got {entry!r}") from exc
        out[name] = Prices(inp, cached, output)
    return out


def read_table(path: str) -> Mapping[str, Any]:
    from apache_beam.io.filesystems import FileSystems

    try:
        with FileSystems.open(path) as fh:
            data = orjson.loads(fh.read())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ValueError(f"price table {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("models", {}), dict):
        raise ValueError(f"price table {path}: expected an object with a 'models' object")
    return data


@functools.cache
def default_table() -> PriceTable:
    """The packaged table."""
    text = resources.files(PACKAGE).joinpath(PRICES_FILE).read_bytes()
    return PriceTable().updated(orjson.loads(text))


def load_table(path: str | None = None) -> PriceTable:
    """The packaged table, with the entries of the file at `path` added or replaced."""
    table = default_table()
    return table.updated(read_table(path)) if path else table


def cost_of(prices: Prices | None, input_tokens: int, cached_tokens: int,
            output_tokens: int) -> float | None:
    """What a call cost, None when the model's prices are unknown."""
    return None if prices is None else prices.cost(input_tokens, cached_tokens, output_tokens)


def price_warning(name: str, options: Mapping[str, str]) -> str | None:
    """The warning for a run whose judge's model has no price (None otherwise, and for judges
    that report their own costs): its kind's (contract.JudgeKind.price_warning)."""
    spec = JudgeSpec.of(name, options)
    return spec.kind().price_warning(spec)


def run_warnings(name: str, options: Mapping[str, str]) -> list[str]:
    """The run's warnings about prices, for summary.json (empty when every cost is known)."""
    warning = price_warning(name, options)
    return [warning] if warning else []
