"""Output token reservations that fit what the judge actually writes, per stage.

Providers count a request's `max_completion_tokens` against tokens/min when they admit it, so
every token reserved and not written is budget lost. A fixed reservation must cover the longest
reply of any stage (the judge's verify replies use about 32 tokens, a decomposition of a long
sentence several hundred), and so wastes most of the budget on the short ones.

:class:`OutputReservation` keeps, per stage (the reply's schema, and for a multi-claim reply its
number of claims), the output tokens of the last `window` replies, and reserves a high quantile
of them (p98 by default) plus a margin. Within a stage, replies are also kept by the size of
what they are likely to write (`reply_size`: the sentence a decomposition restates, the passage
sentences a verification would quote; in powers of two of tokens): a short sentence, or a claim
the window does not mention (most pairs of local verification, answered NIC without a quote),
reserves less. A decomposition's reply restates its sentence, so its stage keeps, rather than
classes, the ratio of reply to sentence tokens, and reserves its quantile times the sentence's
size (measured on the simulator's replies, this halved what decompositions reserved and did not
use). A size class with fewer than `class_warmup` replies takes its stage's
reservation (with fewer than 50 replies, the nearest-rank p98 is the longest reply seen);
until a stage has `warmup` replies, it reserves the configured `max_output_tokens`. While a
stage is warming up, at most `probes` of its calls are in flight (:meth:`OutputReservation.
warming`): the others wait for their replies, instead of all going out with the large
reservation in a fan-out's first burst. A reply that still hits its reservation is never
taken as it is: the provider reports it cut off (finish_reason "length") and the judge retries
it with twice the reservation, at least `max_output_tokens` (`openai_judge.Truncated`,
:func:`after_cut_off`); its full length then enters the window. A cut-off costs a call: hence
the high quantile.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from rt4chart.transforms.judges.base import queued
from rt4chart.transforms.judges.option_values import judge_option

MODES = ("adaptive", "fixed")
RATIO_UNIT = 1000  # a proportional stage keeps reply / (size + RATIO_OFFSET) in thousandths
RATIO_OFFSET = 8  # tokens: what a reply writes whatever its subject's size


@dataclass(frozen=True)
class ReservationConfig:
    """How replies' output tokens are reserved (judge options `output_*`)."""

    # "fixed": always max_output_tokens (the Batch API's stable bodies)
    mode: str = field(default="adaptive", metadata=judge_option("output_reservation"))
    quantile: float = field(default=0.98, metadata=judge_option("output_quantile"))
    # reserve quantile x (1 + margin) + slack
    margin: float = field(default=0.10, metadata=judge_option("output_margin"))
    slack: int = field(default=8, metadata=judge_option("output_slack"))
    window: int = 256  # replies remembered per stage
    # replies of a stage before its reservation follows them
    warmup: int = field(default=16, metadata=judge_option("output_warmup"))
    # replies of a size class before it has its own reservation
    class_warmup: int = field(default=16, metadata=judge_option("output_class_warmup"))
    # calls of a stage in flight while it warms up (0: no limit)
    probes: int = field(default=8, metadata=judge_option("output_probes"))

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"output_reservation must be adaptive or fixed, got {self.mode!r}")
        if not 0 < self.quantile <= 1 or self.margin < 0 or self.slack < 0:
            raise ValueError("output_quantile must be in (0, 1], output_margin and slack >= 0")
        if self.window < 1 or self.warmup < 1 or self.class_warmup < 1 or self.probes < 0:
            raise ValueError("output_window, output_warmup and output_class_warmup must be "
                             ">= 1, output_probes >= 0")


def quantile(values: list[int], q: float) -> int:
    """The q-quantile of values (nearest rank: the smallest value with at least q of the values
    at or below it)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


class _Stage:
    def __init__(self, window: int):
        self.seen: deque[int] = deque(maxlen=window)
        self.budget: int | None = None  # None: still warming up
        self.probing = 0  # calls in flight while warming up
        self.waiters: list[asyncio.Future] = []
        self.replies = 0
        self.truncated = 0
        self.reserved = 0  # sum of the reservations of the replies taken
        self.used = 0  # sum of their output tokens


class OutputReservation:
    """Per-stage output reservations, for one judge (one event loop: no locking)."""

    def __init__(self, initial: int, cap: int, config: ReservationConfig | None = None):
        if initial < 1 or cap < initial:
            raise ValueError(f"need 1 <= max_output_tokens <= cap, got {initial}, {cap}")
        self.initial, self.cap = initial, cap
        self.config = config or ReservationConfig()
        self._stages: dict[str, _Stage] = {}

    def _stage(self, stage: str) -> _Stage:
        found = self._stages.get(stage)
        if found is None:
            found = self._stages[stage] = _Stage(self.config.window)
        return found

    def budget(self, stage: str, size: int | None = None, proportional: bool = False) -> int:
        """The output tokens to reserve for the next call of a stage (about `size` tokens of
        input that the reply is about, if known). `proportional`: the reply restates its
        subject (a decomposition), so its length is a multiple of `size`: the reservation is
        the stage's quantile of that multiple times `size`."""
        if self.config.mode == "fixed":
            return self.initial
        if proportional and size is not None:
            ratio = self._stages.get(_ratio(stage))
            if ratio is not None and ratio.budget is not None:
                c = self.config
                fit = math.ceil(ratio.budget / RATIO_UNIT * (size + RATIO_OFFSET) * (1 + c.margin))
                return max(1, min(self.cap, fit + c.slack))
        if size is not None:
            sized = self._stages.get(_sized(stage, size))
            if sized is not None and sized.budget is not None:
                return sized.budget
        return self._stage(stage).budget or self.initial

    def observe(self, stage: str, output_tokens: int | None, reserved: int,
                size: int | None = None, proportional: bool = False) -> None:
        """A reply of a stage that was not cut off: `output_tokens` written of `reserved`."""
        if output_tokens is None:
            return
        self._take(self._stage(stage), int(output_tokens), reserved)
        if proportional and size is not None:
            ratio = self._stage(_ratio(stage))
            ratio.seen.append(round(RATIO_UNIT * int(output_tokens) / (size + RATIO_OFFSET)))
            if len(ratio.seen) >= self.config.warmup:
                ratio.budget = quantile(list(ratio.seen), self.config.quantile)
        if size is not None:
            self._take(self._stage(_sized(stage, size)), int(output_tokens), 0,
                       self.config.class_warmup)

    @contextlib.asynccontextmanager
    async def warming(self, stage: str) -> AsyncIterator[None]:
        """Around a call of a stage: while the stage warms up, wait until fewer than `probes`
        of its calls are in flight. A stage that has its reservation never waits."""
        s = self._stage(stage)
        limit = self.config.probes
        if self.config.mode == "fixed" or not limit:
            yield
            return
        with queued():  # waiting for a probe's reply is not the call hanging
            while s.budget is None and s.probing >= limit:
                waiter = asyncio.get_running_loop().create_future()
                s.waiters.append(waiter)
                await waiter
        if s.budget is not None:
            yield
            return
        s.probing += 1
        try:
            yield
        finally:
            s.probing -= 1
            self._wake(s)

    @staticmethod
    def _wake(s: _Stage) -> None:
        waiters, s.waiters = s.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _take(self, s: _Stage, output_tokens: int, reserved: int,
              warmup: int | None = None) -> None:
        s.seen.append(max(0, output_tokens))
        s.replies += 1
        s.reserved += reserved
        s.used += output_tokens
        if len(s.seen) >= (warmup or self.config.warmup):
            c = self.config
            fit = math.ceil(quantile(list(s.seen), c.quantile) * (1 + c.margin)) + c.slack
            s.budget = max(1, min(self.cap, fit))
            self._wake(s)

    def cut_off(self, stage: str) -> None:
        """A reply of a stage hit its reservation (it is retried with twice as much)."""
        self._stage(stage).truncated += 1

    def figures(self) -> dict[str, dict[str, int]]:
        """Per stage: replies, replies cut off, current reservation, tokens reserved and used."""
        return {name: {"replies": s.replies, "cut_off": s.truncated,
                       "reservation": self.budget(name), "reserved": s.reserved, "used": s.used}
                for name, s in sorted(self._stages.items()) if "~" not in name}


def _ratio(stage: str) -> str:
    """A proportional stage's replies, as multiples of their subject's size (x RATIO_UNIT)."""
    return f"{stage}~ratio"


def _sized(stage: str, size: int) -> str:
    """A stage's size class: powers of two of tokens (`size` in tokens)."""
    return f"{stage}~{max(0, size).bit_length()}"


def after_cut_off(budget: int, initial: int, cap: int) -> int:
    """The reservation for the retry of a reply cut off at `budget`: twice as much, and at
    least the configured `max_output_tokens` (so that a long reply needs no more attempts than
    with a fixed reservation)."""
    return min(cap, max(2 * budget, initial))


def stage_of(schema_name: str, claims: int | None, reads: str | None = None) -> str:
    """The reservation's stage key: the reply's schema, how many claims it answers, and what
    it reads (the prompt's first block: a window's `passage` or the full `context` of the global
    pass, whose replies run longer)."""
    stage = schema_name if claims is None else f"{schema_name}/{claims}"
    return stage if reads is None else f"{stage}@{reads}"
