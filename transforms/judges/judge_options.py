"""The judge's command-line options, shared by `audit`, `stream` and `eval`, and the
:class:`JudgeSpec` they give: parsed here only (see `transforms/common/options_spec.py`)."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from rt4chart.transforms.common.options_spec import Flex, option
from rt4chart.transforms.judges.contract import ENDPOINT_JUDGE, REFERENCE_JUDGE, JudgeSpec

logger = logging.getLogger("rt4chart")

OFFLINE_NOTICE = (
    "no judge endpoint configured (OPENAI_API_KEY / OPENAI_BASE_URL / --base-url, or Azure's "
    "AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY): using the offline judge. Its verdicts "
    "are a lexical baseline, not a model's judgement."
)
# The openai judge's options as flags of their own (passed to its factory as strings).
SHORTHAND = ("model", "base_url", "rpm", "tpm", "max_concurrency")
RATE_AND_PRICE = ("rate_limiter", "rate_limit_service", "rate_limit_domain", "prices")
# How `--rpm`/`--tpm` are held (the openai judge checks them: openai/limits/shares.py).
LIMITERS = ("static", "envoy")


@dataclass(frozen=True)
class JudgeOptions:
    """The judge the command line names, and the options passed to its factory."""

    judge: str = option(
        "--judge",
        flex=Flex(
            "Judge",
            "offline, openai or package.module:factory. Default: openai when OPENAI_API_KEY "
            "(from Secret Manager) or base_url is set, else offline."),
        default="auto",
        help="offline | openai | package.module:factory (default: openai when "
             "an endpoint is configured, else offline)")
    judge_option: tuple[str, ...] = option(
        "--judge-option",
        flex=Flex(
            "Judge options",
            "Semicolon-separated KEY=VALUE options for the judge (each becomes "
            "--judge-option), e.g. timeout_s=60;price_input=0.15. The API key is never an "
            "option.",
            name="judge_options"),
        default=(), parsed_default=[], kind="append", metavar="KEY=VALUE",
        help="option passed to the judge factory (repeatable)")
    model: str | None = option(
        "--model",
        flex=Flex(
            "Judge model",
            "openai judge: model or Azure deployment. Default: gpt-4o-mini."),
        help="openai judge: model (default gpt-4o-mini)")
    base_url: str | None = option(
        "--base-url",
        flex=Flex(
            "Judge endpoint",
            "openai judge: OpenAI-compatible base URL. Default: OpenAI."),
        help="openai judge: endpoint base URL")
    rpm: str | None = option(
        "--rpm",
        flex=Flex(
            "Requests per minute for the whole job",
            "openai judge: the provider's requests/min for the whole job, not per worker. "
            "rate_limiter=static: each worker process budgets its share (the job's processes: "
            "max_num_workers x the machine type's vCPUs); rate_limiter=envoy: the rate-limit "
            "service holds it. Default: 500.",
            regexes=("^[0-9]+$",)),
        help="openai judge: requests per minute for the whole job (default: the "
             "provider's x-ratelimit-limit-requests, starting at 500; see "
             "--rate-limiter)")
    tpm: str | None = option(
        "--tpm",
        flex=Flex(
            "Tokens per minute for the whole job",
            "openai judge: the provider's tokens/min for the whole job, not per worker (held "
            "as rpm is). Default: 200000.",
            regexes=("^[0-9]+$",)),
        help="openai judge: tokens per minute for the whole job (default: the "
             "provider's limit, starting at 200000)")
    max_concurrency: str | None = option(
        "--max-concurrency",
        flex=Flex(
            "Judge calls in flight per worker process",
            "openai judge. Default: 32.",
            regexes=("^[0-9]+$",)),
        help="openai judge: calls in flight per worker (default 32)")
    rate_limiter: str | None = option(
        "--rate-limiter", "--rate_limiter",
        flex=Flex(
            "How rpm and tpm are held",
            "static: each worker process budgets its share of the job's rpm/tpm (needs "
            "max_num_workers); envoy: one Envoy rate-limit service for the job "
            "(rate_limit_service). Default: static.",
            regexes=("^(static|envoy)$",)),
        metavar="|".join(LIMITERS),  # checked by the judge
        help="how --rpm/--tpm (the whole job's limits) are held: static (each worker process "
             "budgets its share; default) or envoy (one Envoy rate-limit service for the job, "
             "see --rate-limit-service)")
    rate_limit_service: str | None = option(
        "--rate-limit-service", "--rate_limit_service",
        flex=Flex(
            "Envoy rate-limit service",
            "HOST:PORT of the Envoy rate-limit service (terraform output ratelimit_service), "
            "for rate_limiter=envoy.",
            regexes=("^[^:\\s]+:[0-9]+$",)),
        metavar="HOST:PORT",
        help="the Envoy rate-limit service (gRPC) of --rate-limiter envoy")
    rate_limit_domain: str | None = option(
        "--rate-limit-domain", "--rate_limit_domain",
        flex=Flex(
            "Rate-limit domain",
            "The domain in the rate-limit service's config. Default: rt4chart."),
        help="the rate-limit domain in the service's config (default rt4chart)")
    prices: str | None = option(
        "--prices",
        flex=Flex(
            "Price table",
            "gs:// path of a JSON price table whose models add to or replace the packaged ones "
            "(transforms/judges/prices.json). A model with no price has NULL costs."),
        metavar="FILE",
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
        configured = JudgeSpec(ENDPOINT_JUDGE).kind().configured(self.base_url, os.environ)
        if not configured:
            logger.warning(OFFLINE_NOTICE)
        return ENDPOINT_JUDGE if configured else REFERENCE_JUDGE

    def spec(self, batch_state_dir: str | None = None) -> JudgeSpec:
        """The judge's spec; `batch_state_dir` (with `--batch-api`): the openai judge through
        the Batch API, its state there. ValueError on options the judge does not take."""
        options, shorthand, name = self.factory_options(), self.shorthand(), self.judge_name()
        kind = JudgeSpec(name).kind()
        if batch_state_dir is not None:
            if kind.batch_variant is None:
                raise ValueError(f"--batch-api needs the openai judge, not {name!r}")
            name = kind.batch_variant
            options.setdefault("batch_state_dir", batch_state_dir)
        if shorthand and not kind.takes_flags:
            raise ValueError(f"--{', --'.join(shorthand)} apply to the openai judge, not "
                             f"{name!r}")
        return JudgeSpec.of(name, {**options, **shorthand})
