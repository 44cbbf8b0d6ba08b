"""The openai judge's throughput and cost machinery, behind a few hooks in `openai_judge`.

- output reservations that fit each stage's replies (:mod:`.reservation`), from the facts the
  judge method gives of each call (:mod:`.call_facts`: stage and reply size);
- cache-aware scheduling of calls that share a long prefix (:mod:`.prefix_gate`);
- rate limits adopted from the provider's `x-ratelimit-limit-*` headers (:mod:`.limits.provider`);
- prompt token estimates calibrated on the provider's counts (:mod:`.prompt_tokens`).

Their options are judge options (`--judge-option KEY=VALUE`), declared on the fields they set
(`option_values.judge_option`) and taken out of the options before the judge reads its own:
`output_reservation` (adaptive | fixed), `output_quantile` (0.98), `output_margin` (0.1),
`output_slack` (8), `output_warmup` (16), `output_class_warmup` (16), `output_probes` (8)
(reservation.ReservationConfig); `prefix_gate` (true), `prefix_gate_timeout_s` (10),
`prefix_gate_ttl_s` (300), `prefix_gate_min_tokens` (1024) (prefix_gate.GateConfig);
`provider_limits` (true).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rt4chart.transforms.judges.openai.call_facts import CallFacts
from rt4chart.transforms.judges.openai.limits.provider import ProviderLimits, retuned
from rt4chart.transforms.judges.openai.limits.rate import RateLimiter
from rt4chart.transforms.judges.openai.prefix_gate import GateConfig, PrefixGate, prefix_of
from rt4chart.transforms.judges.openai.reservation import (
    OutputReservation,
    ReservationConfig,
    after_cut_off,
)
from rt4chart.transforms.judges.option_values import judge_option, take
from rt4chart.transforms.judges.prompt_tokens import PromptTokens

OUTPUT_KEY = "_output_tokens"  # where the judge's parser puts a reply's output tokens
WHAT = "openai judge"  # whose options these are, in their errors

@dataclass(frozen=True)
class ThroughputOptions:
    reservation: ReservationConfig = field(default_factory=ReservationConfig)
    gate: GateConfig = field(default_factory=GateConfig)
    adopt_limits: bool = field(default=True, metadata=judge_option("provider_limits"))
    explicit: tuple[tuple[str, float | None], ...] = ()  # --rpm/--tpm as given (None: unset)

    @classmethod
    def tuning_parts(cls) -> tuple[type, ...]:
        """The dataclasses whose `judge_option` fields are this tuning's options."""
        return ReservationConfig, GateConfig, cls

    @classmethod
    def pop_from(cls, options: dict[str, str]) -> ThroughputOptions:
        """This module's options, removed from `options` (ValueError on a bad value)."""
        reservation = take(ReservationConfig, options, WHAT)
        gate = take(GateConfig, options, WHAT)
        own = take(cls, options, WHAT)
        explicit = tuple((k, float(options[k]) if options.get(k) else None)
                         for k in ("rpm", "tpm"))
        return cls(ReservationConfig(**reservation), GateConfig(**gate), explicit=explicit,
                   **own)


class Throughput:
    """One judge's reservations, prefix gate and provider limits (one event loop)."""

    def __init__(self, options: ThroughputOptions, config: Any):
        self.options = options
        self.reservation = OutputReservation(config.max_output_tokens,
                                             config.max_output_tokens_cap, options.reservation)
        self.gate = PrefixGate(options.gate)
        self.prompt_tokens = PromptTokens()  # what the rate limiter charges a prompt
        # The job-wide (Envoy) limiter holds the totals given at launch: nothing to adopt.
        self.limits = ProviderLimits({"rpm": config.rpm, "tpm": config.tpm},
                                     dict(options.explicit), config.rate_share,
                                     options.adopt_limits and config.rate_limiter == "static")
        self.limits.log()

    def turn(self, system: str, user: str, shared: str | None
             ) -> contextlib.AbstractAsyncContextManager[None]:
        """Around a call: the prefix gate for the prompt's shared prefix."""
        return self.gate.turn(*prefix_of(system, user, shared))

    def warming(self, call: CallFacts) -> contextlib.AbstractAsyncContextManager[None]:
        """Around a call: while its stage's reservation warms up, few calls at a time."""
        return self.reservation.warming(call.stage)

    def budget(self, call: CallFacts) -> int:
        return self.reservation.budget(call.stage, call.size, call.restates)

    def observe(self, call: CallFacts, data: dict, reserved: int) -> None:
        """A reply taken: its output tokens (from the parser, removed from `data`)."""
        self.reservation.observe(call.stage, data.pop(OUTPUT_KEY, None), reserved, call.size,
                                 call.restates)

    def cut_off(self, call: CallFacts, budget: int) -> int:
        """A reply cut off at `budget`: the reservation for its retry."""
        self.reservation.cut_off(call.stage)
        r = self.reservation
        return after_cut_off(budget, r.initial, r.cap)

    def adopt(self, headers: Mapping[str, str], limiter: RateLimiter | None
              ) -> RateLimiter | None:
        """The limiter to use after a response: a new one if the provider's limits changed
        the budget."""
        if limiter is not None and self.limits.observe(headers):
            return retuned(limiter, self.limits)
        return limiter

    def figures(self) -> dict[str, Any]:
        rpm, tpm = self.limits.limits["rpm"], self.limits.limits["tpm"]
        return {"output": self.reservation.figures(), "prefix_gate": self.gate.figures(),
                "limits": {"rpm": rpm, "tpm": tpm, **{f"{k}_from": v for k, v in
                                                      self.limits.source.items()}}}

