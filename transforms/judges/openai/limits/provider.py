"""Rate limits from the provider: adopt what `x-ratelimit-limit-*` headers say.

OpenAI (and Azure OpenAI, vLLM behind a gateway...) sends the account's limits on every
response: `x-ratelimit-limit-requests` (per minute) and `x-ratelimit-limit-tokens` (per minute).
With `--rpm`/`--tpm` unset the judge starts at a conservative budget (500 RPM / 200k TPM, the
lowest paid tier of gpt-4o-mini) and, from the first response on, budgets what the provider
says; a limit given explicitly is never exceeded (the budget is the lower of the two). Each
change is logged, with where the limits come from.

The budget is per worker process: a process that shares the limits with others (`rate_share`)
budgets its share of what the provider reports.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from rt4chart.transforms.judges.openai.limits.rate import RateLimiter

logger = logging.getLogger(__name__)

HEADERS = {"rpm": "x-ratelimit-limit-requests", "tpm": "x-ratelimit-limit-tokens"}


def reported_limits(headers: Mapping[str, str]) -> dict[str, float]:
    """The per-minute limits a response reports ({"rpm": …, "tpm": …}, those present and
    positive)."""
    out: dict[str, float] = {}
    for name, header in HEADERS.items():
        raw = headers.get(header)
        try:
            value = float(raw) if raw is not None else 0.0
        except ValueError:
            continue
        if value > 0:
            out[name] = value
    return out


class ProviderLimits:
    """The limits in use for one judge: explicit flags, a conservative start, the provider's."""

    def __init__(self, start: Mapping[str, float], explicit: Mapping[str, float | None],
                 share: int = 1, adopt: bool = True):
        self.limits = dict(start)  # in all, for every process sharing them
        self.explicit = {k: v for k, v in explicit.items() if v is not None}
        self.share = max(1, share)
        self.adopt = adopt
        self.source = {k: "--" + k if k in self.explicit else "conservative start"
                       for k in self.limits}
        self.changes = 0

    def per_process(self) -> tuple[float, float]:
        return self.limits["rpm"] / self.share, self.limits["tpm"] / self.share

    def observe(self, headers: Mapping[str, str]) -> bool:
        """Take the limits a response reports; True when the budget changed."""
        if not self.adopt:
            return False
        changed = False
        for name, value in reported_limits(headers).items():
            cap = self.explicit.get(name)
            wanted = min(value, cap) if cap is not None else value
            if wanted != self.limits[name]:
                self.limits[name] = wanted
                self.source[name] = ("the provider" if cap is None or value < cap
                                     else f"--{name} (the provider allows {value:g})")
                changed = True
        if changed:
            self.changes += 1
            self.log()
        return changed

    def log(self) -> None:
        logger.info("judge rate limits in use: %g requests/min (%s), %g tokens/min (%s)%s",
                    self.limits["rpm"], self.source["rpm"], self.limits["tpm"],
                    self.source["tpm"],
                    f", this process's share 1/{self.share}" if self.share > 1 else "")


def retuned(limiter: RateLimiter | None, limits: ProviderLimits) -> RateLimiter | None:
    """A limiter for the new per-process budget, keeping the old one's pause; calls already
    waiting in the old one finish there."""
    if limiter is None:
        return None
    rpm, tpm = limits.per_process()
    fresh = RateLimiter(rpm, tpm, clock=limiter.throttled)  # held time on the same clock
    pause = limiter.paused_for()
    if pause > 0:
        fresh.pause(pause)
    return fresh
