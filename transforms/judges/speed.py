"""An endpoint's measured speed as a judge's kind hands it out (`JudgeKind.speed`): what
check-judge measures, `--estimate` turns into a run's time, and a run is given as options.
How a backend measures it while it runs is its own (openai/endpoint_speed.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Speed:
    """Tokens per second of one endpoint (what check-judge measures and the `--estimate` and
    the run are given as judge options); None: not measured."""

    prompt_tps: float | None = None
    output_tps: float | None = None
    slots: int = 1

    @property
    def known(self) -> bool:
        return bool(self.prompt_tps and self.output_tps)

    def seconds(self, prompt_tokens: float, output_tokens: float) -> float | None:
        """One call's time at this speed (None: unknown)."""
        if not self.known:
            return None
        return prompt_tokens / self.prompt_tps + output_tokens / self.output_tps


def run_seconds(speed: Speed, prompt_tokens: float, output_tokens: float) -> float | None:
    """A run's time at `speed`: its tokens read and written, `slots` calls at a time."""
    one = speed.seconds(prompt_tokens, output_tokens)
    return None if one is None else one / max(1, speed.slots)
