"""The openai judge's prices: which entry of the price table (transforms/judges/prices.py)
its calls are priced at, from its options; and the usage its replies report.

The table is `prices.json` beside the generic prices module (package data). A run
can add to or replace its entries with `--prices FILE` (judge option `prices`; a local path or
any path Beam's FileSystems reads, such as gs:// for Dataflow workers), name the base model of
an Azure deployment with `price_model`, or price a model directly with `price_input`,
`price_cached` and `price_output`. A model with no price is not free: its cost is unknown
(None, a NULL cost column), with a warning when the judge is built and in summary.json.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Mapping
from typing import Any

from rt4chart.transforms.judges.openai.config import config_only, with_endpoint
from rt4chart.transforms.judges.prices import (
    Prices,
    PriceTable,
    cost_of,
    load_table,
    read_table,
)

logger = logging.getLogger("rt4chart")


def _resolve(config: Any) -> Prices | None:
    """Prices for a judge config (explicit price_* options win), None when unknown."""
    name = config.price_model or config.model
    if getattr(config, "model_listed", False) and not config.price_model:
        # The model a server listed (served_models.py): its name may match a hosted model's, so
        # only the run's own price file prices it, never the packaged table.
        base = (PriceTable().updated(read_table(config.prices)).lookup(name) if config.prices
                else None)
    else:
        base = load_table(config.prices).lookup(name)
    explicit = (config.price_input, config.price_cached, config.price_output)
    if base is None and (config.price_input is None or config.price_output is None):
        if any(v is not None for v in explicit):
            raise ValueError(f"model {name!r} is not in the price table: give both "
                             "price_input and price_output (or price_model)")
        return None
    base = base or Prices(config.price_input, config.price_input, config.price_output)
    return Prices(*(given if given is not None else default
                    for given, default in zip(explicit, (base.input, base.cached, base.output),
                                              strict=True)))


def unpriced_message(model: str) -> str:
    return (f"no price for model {model!r}: its cost is unknown (NULL cost columns). Name its "
            "base model with --judge-option price_model=NAME (an Azure deployment), add it "
            "with --prices FILE, or set price_input/price_output (0 for a free local model)")


def prices_for(config: Any) -> Prices | None:
    """Prices for a judge config; None (and a warning) for a model with no price."""
    prices = _resolve(config)
    if prices is None:
        _warn_unpriced(config.price_model or config.model)
    return prices


@functools.lru_cache(maxsize=64)
def _warn_unpriced(model: str) -> None:
    """The warning once per model and process: the launcher's estimate, its summary and every
    judge a worker builds ask for the same prices (it was printed three times a run)."""
    logger.warning(unpriced_message(model))


def batch_prices(prices: Prices | None, config: Any) -> Prices | None:
    """The Batch API's prices: the table's discount on the synchronous ones."""
    if prices is None:
        return None
    return prices.scaled(load_table(config.prices).batch_discount)


# No model reads or writes this many tokens in one call (the largest context windows hold about
# 10 million); a count above it is garbage. Sums of plausible counts then stay far from what an
# INT64 column holds (records.MAX_COUNT would take some 9 billion such calls).
MAX_TOKENS_PER_CALL = 1_000_000_000


def token_count(value: Any) -> int | None:
    """A token count as a usage report gives it: a plausible non-negative whole number (at most
    MAX_TOKENS_PER_CALL), else None (unknown). Providers and proxies send null, omit fields or
    send garbage (negative, fractional, strings, booleans, 5e18, 1e300); none of that may fail
    a call that was answered, nor turn into a negative or zero cost, nor overflow a sum."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not 0 <= value <= MAX_TOKENS_PER_CALL:  # NaN fails this too
        return None
    return int(value) if float(value).is_integer() else None


def reported_usage(usage: Any, prices: Prices | None) -> tuple[int, int, int | None, float | None]:
    """(input, cached, output tokens, cost) of one answered call from its usage report.

    The cost is unknown (None) unless the report gives valid prompt and completion counts (and
    a cached count, when given, within the prompt's): a missing report is not a free call.
    Unknown counts are 0 in the token sums (the columns are required) and output is None.
    """
    prompt = token_count(getattr(usage, "prompt_tokens", None))
    output = token_count(getattr(usage, "completion_tokens", None))
    details = getattr(usage, "prompt_tokens_details", None)
    raw_cached = getattr(details, "cached_tokens", None) if details is not None else None
    cached = 0 if raw_cached is None else token_count(raw_cached)
    valid = prompt is not None and output is not None and cached is not None and cached <= prompt
    cost = cost_of(prices, prompt, cached, output) if valid else None
    return prompt or 0, (cached or 0) if valid else 0, output, cost


def unpriced_warning(options: Mapping[str, str]) -> str | None:
    """The warning for a run whose openai judge's model has no price (None: it has one)."""
    config = with_endpoint(config_only(options), options.keys(), os.environ)  # Azure's deployment
    if _resolve(config) is not None:
        return None
    return unpriced_message(config.price_model or config.model)


