"""The OpenAI-compatible judges (`openai`, `openai-batch`) before they are built.

What the launcher, `check-judge`, `--estimate`, the spend cap and the dry run ask of these
judges, answered from their options alone (no client is opened and no key is needed, except to
negotiate, which builds the judge and probes its endpoint once: probe.py). Negotiating settles
the endpoint first (endpoint.py), from this process's environment: the workers carry it and
read no endpoint variable.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rt4chart import prompts
from rt4chart.transforms.judges.contract import (
    CallSizes,
    Judge,
    JudgeKind,
    JudgeSpec,
    JudgeTraits,
    close_judge,
)
from rt4chart.transforms.judges.openai import pricing
from rt4chart.transforms.judges.openai.capabilities import schema_instruction, with_reasoning
from rt4chart.transforms.judges.openai.config import (
    OpenAIConfig,
    azure_from_env,
    config_only,
    with_endpoint,
)
from rt4chart.transforms.judges.openai.endpoint import resolved_options
from rt4chart.transforms.judges.openai.limits.shares import share_rate_limits
from rt4chart.transforms.judges.openai.served_models import settle_model
from rt4chart.transforms.judges.speed import Speed

if TYPE_CHECKING:
    from rt4chart.transforms.judges.openai.probe import ProbeReport

DEFAULT_KEY_ENV = OpenAIConfig.api_key_env
STRUCTURED = "json_schema_strict"  # what `structured=auto` starts with
# What every OpenAI-compatible judge declares (and so each of its built judges, with its model).
OPENAI_TRAITS = JudgeTraits(shares_event_loop=True, batches_claims=True, verifies_absence=True,
                            negotiates=True, shares_limits=True)
# Through the Batch API: its calls wait at the provider, in batches; the provider holds its
# limits (a pool of their own), so there is no share of rpm/tpm per worker to set.
BATCH_TRAITS = replace(OPENAI_TRAITS, batch_api=True, shares_limits=False)
# The structured-output steps that put the schema in the system message (the estimate counts it).
SCHEMA_IN_SYSTEM = ("json_object_schema", "json_object", "text")


class OpenAICallSizes(CallSizes):
    """Its calls as the estimate sizes them: with a structured-output step that puts the schema
    in the system message (SCHEMA_IN_SYSTEM), the schema's text too (capabilities.py)."""

    def __init__(self, structured: str, reasoning_chars: int):
        super().__init__()
        self.structured, self.reasoning_chars = structured, reasoning_chars

    def system(self, text: str, schema: str) -> str:
        if self.structured in SCHEMA_IN_SYSTEM:
            text += schema_instruction(with_reasoning(prompts.schema(schema),
                                                      self.reasoning_chars))
        return text


class OpenAIKind(JudgeKind):
    """The `openai` judge: an OpenAI-compatible endpoint, called directly."""

    traits = OPENAI_TRAITS
    batch_variant = "openai-batch"
    takes_flags = True
    builds = "rt4chart.transforms.judges.openai.judge:OpenAIJudge"

    def configured(self, base_url: str | None, environ: Mapping[str, str]) -> bool:
        """A base URL, OPENAI_BASE_URL or OPENAI_API_KEY, or Azure's endpoint and key."""
        return bool(base_url or environ.get("OPENAI_BASE_URL") or environ.get("OPENAI_API_KEY")
                    or azure_from_env(environ))

    def call_sizes(self, structured: str, reasoning_chars: int) -> OpenAICallSizes:
        return OpenAICallSizes(structured, reasoning_chars)

    def negotiate(self, spec: JudgeSpec) -> tuple[JudgeSpec, dict[str, Any] | None]:
        """Probe the endpoint once (unless `probe=false` or the spec was negotiated already):
        what it accepts travels to every worker as the option `negotiated`, with the timings
        adapted to a slow server, and the endpoint settled here (`resolve`) travels with it.
        JudgeUnusable when the endpoint cannot be used."""
        spec = self.resolve(spec)
        options = dict(spec.options)
        config = config_only(options)
        if not self.traits.negotiates or not config.probe or config.negotiated:
            return spec, None
        judge = spec.build()
        report = asyncio.run(_probe(judge, set(options)))
        self._adapt(report)
        return JudgeSpec.of(spec.name, {**options, **report.options}), report.describe()

    def resolve(self, spec: JudgeSpec) -> JudgeSpec:
        """The spec with its endpoint settled from its options and this process's environment
        (endpoint.resolved_options), and for a server that is not OpenAI's, the model it serves
        (served_models.settle_model: asked once, here): the workers call the endpoint and the
        model the launcher probed. ValueError on a bad option, or a model the server does not
        serve (or none named, and the server does not say which one it serves)."""
        options = dict(spec.options)
        out = resolved_options(options, os.environ)
        if config_only(options).endpoint_resolved:  # settled once, by the launcher
            return JudgeSpec.of(spec.name, out)
        settled = settle_model(config_only(out), "model" in options, os.environ)
        if settled.model_listed:
            out.update(model=settled.model, model_listed="true")
        return JudgeSpec.of(spec.name, out)

    def _adapt(self, report: ProbeReport) -> None:
        """The probe's findings as this judge takes them (all, here)."""

    def share_limits(self, spec: JudgeSpec, options: Any) -> JudgeSpec:
        if not self.traits.shares_limits:
            return spec
        return share_rate_limits(spec, options)

    def limit_lines(self, spec: JudgeSpec) -> list[str]:
        options = dict(spec.options)
        lines = []
        share = int(options.get("rate_share", 1))
        rpm, tpm = options.get("rpm"), options.get("tpm")
        if rpm or tpm:
            per = [f"{float(v) / share:.12g} {unit}" for v, unit in ((rpm, "requests/min"),
                                                                    (tpm, "tokens/min")) if v]
            lines.append(f"limits per worker process: {', '.join(per)} (job-wide "
                         f"{rpm or '-'} rpm, {tpm or '-'} tpm over {share} process(es))")
        lines.append("judge calls in flight per process: at most "
                     f"{options.get('max_concurrency', 32)}")
        return lines

    def worker_key(self, spec: JudgeSpec) -> tuple[str, bool]:
        options = dict(spec.options)
        return (options.get("api_key_env", DEFAULT_KEY_ENV),
                bool(options.get("api_key_secret")))

    def key_envs(self, spec: JudgeSpec) -> tuple[str, ...]:
        """`api_key_env`, else the default (OPENAI_API_KEY; Azure's AZURE_OPENAI_API_KEY is a
        well-known key variable too: transforms/common/redact.py)."""
        return (dict(spec.options).get("api_key_env") or DEFAULT_KEY_ENV,)

    def cap_prices(self, spec: JudgeSpec) -> pricing.Prices:
        options = dict(spec.options)
        config = with_endpoint(config_only(options), options.keys(), os.environ)
        prices = pricing.prices_for(config)
        if prices is None:
            raise ValueError("a spend cap needs the judge model's price: "
                             + pricing.unpriced_message(config.price_model or config.model))
        return self._billed(prices, config)

    def _billed(self, prices: pricing.Prices, config: OpenAIConfig) -> pricing.Prices:
        """What its calls are billed at (the direct API's prices)."""
        return prices

    def price_warning(self, spec: JudgeSpec) -> str | None:
        return pricing.unpriced_warning(dict(spec.options))

    def priced(self, spec: JudgeSpec) -> tuple[str, pricing.Prices | None]:
        """Priced as its calls are: price_model, --prices, price_* options."""
        config = config_only(dict(spec.options))
        return config.price_model or config.model, pricing.prices_for(config)

    def estimate_basis(self, spec: JudgeSpec) -> tuple[int, str, str]:
        config = config_only(dict(spec.options))
        structured = STRUCTURED if config.structured == "auto" else config.structured
        return config.reasoning_chars, structured, config.price_model or config.model

    def speed(self, spec: JudgeSpec) -> Speed | None:
        """From `prompt_tokens_per_s`, `output_tokens_per_s` (what check-judge prints), calls
        at once from `max_concurrency`."""
        config = config_only(dict(spec.options))
        speed = Speed(config.prompt_tokens_per_s, config.output_tokens_per_s,
                      config.max_concurrency)
        return speed if speed.known else None


class BatchOpenAIKind(OpenAIKind):
    """The `openai-batch` judge: the same calls through the OpenAI Batch API."""

    traits = BATCH_TRAITS
    builds = "rt4chart.transforms.judges.openai.batch:BatchOpenAIJudge"

    def _adapt(self, report: ProbeReport) -> None:
        # Its calls wait at the provider, in batches, not in a server's slots: fewer at once
        # would only mean smaller batches.
        report.options.pop("max_concurrency", None)

    def _billed(self, prices: pricing.Prices, config: OpenAIConfig) -> pricing.Prices:
        return pricing.batch_prices(prices, config)


async def _probe(judge: Judge, options: set[str]) -> ProbeReport:
    """The probe's report; the judge's connections closed in the probe's own loop."""
    from rt4chart.transforms.judges.openai.probe import probe  # the HTTP client: only to negotiate

    try:
        return await probe(judge, options)
    finally:
        await close_judge(judge)
