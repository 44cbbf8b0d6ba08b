"""How fast one judge endpoint is, measured on every streamed reply, and what follows from it.

A reply read as a stream gives two measures: the time to its first token (the server reading
the prompt: seconds per prompt token) and the time between its first and last token (seconds
per output token). Each is a running estimate over the endpoint's replies, as TCP estimates a
round trip (RFC 6298): a smoothed mean (gain 1/8) and a smoothed deviation (gain 1/4), the
pessimistic value being mean + 4 x deviation. One quiet moment (the start-up probe) only seeds
them; a machine that gets busy moves them within a few replies.

From them: how long to wait for a reply's first token (its prompt at the pessimistic speed,
times a margin, never less than the configured floor), how long to wait between two tokens
(the idle timeout: never less than its floor), a reply's deadline (its first token's wait plus
its whole token limit at a margin over the pessimistic writing speed; tokens do not restart it),
the default deadline of a call (:func:`call_deadline_s`), whether the endpoint is slowing
down (the last reply much slower than the estimate: concurrency stops growing) and how long a
run of known size will take (`speed.run_seconds`, with the measured `Speed` a judge's kind
hands out: transforms/judges/speed.py).

One instance per judge (one event loop: no locking).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from rt4chart.transforms.judges.speed import Speed

# The prompt of a long call (a window of 25 sentences and its instructions): the probe's and
# check-judge's figures, and the call deadline's measure.
LONG_PROMPT_TOKENS = 3000
MEAN_GAIN = 1 / 8
DEV_GAIN = 1 / 4
DEV_WEIGHT = 4
# The first token may take this many times the prompt's time at the pessimistic speed.
FIRST_TOKEN_MARGIN = 3.0
# Between two tokens: this many times the pessimistic time per output token.
IDLE_MARGIN = 8.0
# A prompt read in fewer tokens than this (most of it cached) measures the server's overhead,
# not its reading speed: not a sample.
MIN_PROMPT_TOKENS = 32
# A reply this many times slower per token than the estimate says the endpoint is slowing.
SLOWING_RATIO = 2.0
# A reply's deadline allows its whole token limit at this many times the pessimistic time per
# token (a reply of the full limit at a quarter of the pessimistic speed still ends in time).
REPLY_MARGIN = 4.0
# Seconds per output token while the writing speed is unknown (no streamed reply measured, or
# replies read whole): one token a second, slower than a judge's replies come from any server
# that finishes them in useful time (the suite's busy llama.cpp: about 10 a second).
UNKNOWN_OUTPUT_S = 1.0
# A call's default deadline (call_deadline_s unset): this many long replies' deadlines (room
# for retries), never more than CALL_DEADLINE_MAX_S.
DEADLINE_REPLIES = 5
CALL_DEADLINE_MAX_S = 900.0


class RunningRate:
    """Seconds per token, as a smoothed mean and deviation (RFC 6298's estimator)."""

    def __init__(self, seed: float | None = None):
        self.mean: float | None = None
        self.dev = 0.0
        self.samples = 0
        self.last: float | None = None
        if seed is not None:
            self.observe(seed)
            self.samples = 0  # a seed is not a measurement of this run

    def observe(self, value: float) -> None:
        if not math.isfinite(value) or value < 0:
            return
        self.last = value
        self.samples += 1
        if self.mean is None:
            self.mean, self.dev = value, value / 2
            return
        self.dev += DEV_GAIN * (abs(value - self.mean) - self.dev)
        self.mean += MEAN_GAIN * (value - self.mean)

    def at_least(self, value: float) -> None:
        """A wait that ended without the event: the rate is at least `value` (a censored
        sample), so the estimate never drops because of it."""
        if self.mean is None or value > self.mean:
            self.observe(value)

    @property
    def pessimistic(self) -> float | None:
        return None if self.mean is None else self.mean + DEV_WEIGHT * self.dev


class EndpointSpeed:
    """The running speed of one endpoint, and the waits it sets (see the module docstring)."""

    def __init__(self, seed: Speed | None = None, clock: Callable[[], float] = time.monotonic):
        seed = seed or Speed()
        self.prompt = RunningRate(1 / seed.prompt_tps if seed.prompt_tps else None)
        self.output = RunningRate(1 / seed.output_tps if seed.output_tps else None)
        self._clock = clock
        self.last_token_at = -math.inf  # when any reply of this endpoint last gave a token

    def now(self) -> float:
        return self._clock()

    def token(self) -> None:
        """A token came from the endpoint (any reply): it is working."""
        self.last_token_at = self._clock()

    def alive_since(self, since: float) -> bool:
        """Whether the endpoint gave a token (to any call) after `since`."""
        return self.last_token_at > since

    def first_token_s(self, prompt_tokens: int, floor: float) -> float:
        """How long to wait for a reply's first token."""
        rate = self.prompt.pessimistic
        if rate is None:
            return floor
        return max(floor, FIRST_TOKEN_MARGIN * prompt_tokens * rate)

    def idle_s(self, floor: float) -> float:
        """How long to wait between two tokens of a reply."""
        rate = self.output.pessimistic
        return floor if rate is None else max(floor, IDLE_MARGIN * rate)

    def reply_s(self, prompt_tokens: int, max_tokens: int, first_floor: float,
                idle_floor: float) -> float:
        """A reply's deadline, from its request to its end, for a prompt of `prompt_tokens`
        and an output limit of `max_tokens`: its first token's wait, plus the limit written at
        REPLY_MARGIN x the pessimistic time per token (UNKNOWN_OUTPUT_S unmeasured), at least
        one idle wait. Tokens never restart it."""
        rate = self.output.pessimistic
        per_token = UNKNOWN_OUTPUT_S if rate is None else REPLY_MARGIN * rate
        return (self.first_token_s(prompt_tokens, first_floor)
                + max(self.idle_s(idle_floor), max_tokens * per_token))

    def observe(self, prompt_tokens: int | None, first_s: float, output_tokens: int,
                stream_s: float) -> None:
        """A whole reply: `first_s` to its first token, `stream_s` from there to its last."""
        if prompt_tokens and prompt_tokens >= MIN_PROMPT_TOKENS:
            self.prompt.observe(first_s / prompt_tokens)
        if output_tokens > 1:
            self.output.observe(stream_s / (output_tokens - 1))

    def observe_whole(self, output_tokens: int | None, took_s: float) -> None:
        """A reply read whole, `took_s` from its request, of `output_tokens` tokens: its time
        over its tokens is an upper bound of the time per token (the prompt's reading and a
        one-slot server's queue are in it), so deadlines follow a server that slows down."""
        if output_tokens and output_tokens > 1 and took_s > 0:
            self.output.observe(took_s / output_tokens)

    def stalled(self, prompt_tokens: int | None, waited_s: float, tokens: int,
                blank: int = 0) -> None:
        """A reply that stopped. Before its first token, after `waited_s`, with nothing
        written (`blank`: whitespace-only chunks, which say the prompt was read): the server
        reads prompts at least that slowly (the next wait is longer). Between tokens it is no
        measure of speed: the idle timeout is there to see a reply stop."""
        if tokens == 0 and not blank and prompt_tokens:
            self.prompt.at_least(waited_s / prompt_tokens)

    def overdue(self, tokens: int, first_s: float | None, last_s: float | None) -> None:
        """A reply cut at its deadline after `tokens` tokens: it wrote at least that slowly
        (the next deadline is longer)."""
        if tokens > 1 and first_s is not None and last_s is not None:
            self.output.at_least((last_s - first_s) / (tokens - 1))

    @property
    def slowing(self) -> bool:
        """The last reply wrote its tokens much slower than the running estimate."""
        last, mean = self.output.last, self.output.mean
        return last is not None and mean is not None and last > SLOWING_RATIO * mean

    def measured(self, slots: int = 1) -> Speed:
        """The current estimate as tokens per second (the means)."""
        prompt, output = self.prompt.mean, self.output.mean
        return Speed(1 / prompt if prompt else None, 1 / output if output else None, slots)

    def figures(self) -> dict[str, float | int | None]:
        speed = self.measured()
        return {"prompt_tokens_per_s": _round(speed.prompt_tps),
                "output_tokens_per_s": _round(speed.output_tps),
                "replies_measured": self.output.samples}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def call_deadline_s(speed: EndpointSpeed, first_floor: float, idle_floor: float,
                    max_output_tokens: int) -> float:
    """A call's default deadline (the adapter's, over all its attempts; time in the judge's
    own queues does not count): DEADLINE_REPLIES deadlines of a long reply (a long prompt,
    `max_output_tokens`) at the endpoint's speed, at most CALL_DEADLINE_MAX_S."""
    long_reply = speed.reply_s(LONG_PROMPT_TOKENS, max_output_tokens, first_floor, idle_floor)
    return min(CALL_DEADLINE_MAX_S, DEADLINE_REPLIES * long_reply)


def speed_report(measured: EndpointSpeed, slots: int, max_output_tokens: int
                 ) -> dict[str, Any] | None:
    """The endpoint's speed as a judge measured it (probe and calls), `slots` calls at once,
    the time of a long call at that speed, and the options that give it to `--estimate` and a
    run (check-judge prints them); None when nothing was measured."""
    now = measured.measured(slots)
    if not now.known:
        return None
    long_call = now.seconds(LONG_PROMPT_TOKENS, max_output_tokens)
    options = {"prompt_tokens_per_s": f"{now.prompt_tps:.4g}",
               "output_tokens_per_s": f"{now.output_tps:.4g}"}
    return {**measured.figures(), "calls_at_once": slots,
            "long_call_seconds": round(long_call, 1), "long_call_prompt_tokens": LONG_PROMPT_TOKENS,
            "long_call_output_tokens": max_output_tokens, "options": options}
