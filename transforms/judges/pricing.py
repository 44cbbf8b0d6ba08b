"""USD prices per million tokens, by model; defaults overridable per run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# (input, cached input, output) USD per 1M tokens, list prices.
DEFAULT_PRICES: dict[str, tuple[float, float, float]] = {
    "gpt-4o-mini": (0.15, 0.075, 0.60),
    "gpt-4o": (2.50, 1.25, 10.00),
    "gpt-4.1-mini": (0.40, 0.10, 1.60),
    "gpt-4.1-nano": (0.10, 0.025, 0.40),
    "gpt-4.1": (2.00, 0.50, 8.00),
}


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


def prices_for(config: Any) -> Prices:
    """Prices for a judge config: explicit price_* options win over the model's defaults.

    An unknown model with no explicit prices costs 0 (a local vLLM or Ollama endpoint).
    """
    base = DEFAULT_PRICES.get(config.model, (0.0, 0.0, 0.0))
    inp = config.price_input if config.price_input is not None else base[0]
    out = config.price_output if config.price_output is not None else base[2]
    if config.price_cached is not None:
        cached = config.price_cached
    else:
        cached = base[1] if config.model in DEFAULT_PRICES else inp
    return Prices(inp, cached, out)
