"""The judge's command-line options, shared by `audit`, `stream` and `eval`, and the
:class:`JudgeSpec` they give: parsed here only (see `transforms/options_spec.py`)."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from rt4chart.transforms.judges.base import JudgeSpec
from rt4chart.transforms.judges.job_limits import LIMITERS
from rt4chart.transforms.options_spec import option

logger = logging.getLogger("rt4chart")

OFFLINE_NOTICE = (
    "no judge endpoint configured (OPENAI_API_KEY / OPENAI_BASE_URL / --base-url): using the "
    "offline judge. Its verdicts are a lexical baseline, not a model's judgement."
)
OPENAI = ("openai", "openai-batch")
# The openai judge's options as flags of their own (passed to its factory as strings).
SHORTHAND = ("model", "base_url", "rpm", "tpm", "max_concurrency")
RATE_AND_PRICE = ("rate_limiter", "rate_limit_service", "rate_limit_domain", "prices")


@dataclass(frozen=True)
class JudgeOptions:
    """The judge the command line names, and the options passed to its factory."""

    judge: str = option("--judge", default="auto",
                        help="offline | openai | package.module:factory (default: openai when "
                             "an endpoint is configured, else offline)")
    judge_option: tuple[str, ...] = option(
        "--judge-option", default=(), parsed_default=[], kind="append", metavar="KEY=VALUE",
        help="option passed to the judge factory (repeatable)")
    model: str | None = option("--model", help="openai judge: model (default gpt-4o-mini)")
    base_url: str | None = option("--base-url", help="openai judge: endpoint base URL")
    rpm: str | None = option(
        "--rpm", help="openai judge: requests per minute for the whole job (default: the "
                      "provider's x-ratelimit-limit-requests, starting at 500; see "
                      "--rate-limiter)")
    tpm: str | None = option(
        "--tpm", help="openai judge: tokens per minute for the whole job (default: the "
                      "provider's limit, starting at 200000)")
    max_concurrency: str | None = option(
        "--max-concurrency", help="openai judge: calls in flight per worker (default 32)")
    rate_limiter: str | None = option(
        "--rate-limiter", "--rate_limiter", metavar="|".join(LIMITERS),  # checked by the judge
        help="how --rpm/--tpm (the whole job's limits) are held: static (each worker process "
             "budgets its share; default) or envoy (one Envoy rate-limit service for the job, "
             "see --rate-limit-service)")
    rate_limit_service: str | None = option(
        "--rate-limit-service", "--rate_limit_service", metavar="HOST:PORT",
        help="the Envoy rate-limit service (gRPC) of --rate-limiter envoy")
    rate_limit_domain: str | None = option(
        "--rate-limit-domain", "--rate_limit_domain",
        help="the rate-limit domain in the service's config (default rt4chart)")
    prices: str | None = option(
        "--prices", metavar="FILE",
        help="openai judge: a price table (JSON, as the packaged prices.json) whose models add "
             "to or replace the packaged ones; gs:// on Dataflow")

    def __post_init__(self) -> None:
        object.__setattr__(self, "judge_option", tuple(self.judge_option))
        for item in self.judge_option:
            key, sep, _ = item.partition("=")
            if not sep or not key:
                raise ValueError(f"--judge-option expects KEY=VALUE, got {item!r}")

    def factory_options(self) -> dict[str, str]:
        """`--judge-option`s as a dict (the last of a key wins)."""
        out: dict[str, str] = {}
        for item in self.judge_option:
            key, _, value = item.partition("=")
            out[key.strip()] = value
        return out

    def shorthand(self) -> dict[str, str]:
        """The openai judge's own flags given, as its factory options."""
        names = (*SHORTHAND, *RATE_AND_PRICE)
        return {n: str(getattr(self, n)) for n in names if getattr(self, n) is not None}

    def judge_name(self) -> str:
        """The judge named (`auto`: openai when an endpoint is configured, else offline)."""
        if self.judge != "auto":
            return self.judge
        configured = self.base_url or os.environ.get("OPENAI_BASE_URL") or os.environ.get(
            "OPENAI_API_KEY")
        if not configured:
            logger.warning(OFFLINE_NOTICE)
        return "openai" if configured else "offline"

    def spec(self, batch_state_dir: str | None = None) -> JudgeSpec:
        """The judge's spec; `batch_state_dir` (with `--batch-api`): the openai judge through
        the Batch API, its state there. ValueError on options the judge does not take."""
        options, shorthand, name = self.factory_options(), self.shorthand(), self.judge_name()
        if batch_state_dir is not None:
            if name not in OPENAI:
                raise ValueError(f"--batch-api needs the openai judge, not {name!r}")
            name = "openai-batch"
            options.setdefault("batch_state_dir", batch_state_dir)
        if shorthand and name not in OPENAI:
            raise ValueError(f"--{', --'.join(shorthand)} apply to the openai judge, not "
                             f"{name!r}")
        return JudgeSpec.of(name, {**options, **shorthand})
