"""The openai judge's options: its config and its throughput tuning, parsed in one place.

`openai_judge` (the judge), `limits/shares` (the job's share of the limits) and `pricing` (the
run's price warning) read a judge's options through here, so none of them imports another
for it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

from rt4chart.transforms.judges.base import CALIBRATION_OPTION, DEADLINE_OPTION, check_deadline
from rt4chart.transforms.judges.openai.capabilities import LADDER, Capabilities
from rt4chart.transforms.judges.openai.throughput import ThroughputOptions
from rt4chart.transforms.judges.option_values import convert, declarations

REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high")
# The variables the openai library's AzureOpenAI reads (and the deployment, by convention).
AZURE_KEY_ENV, AZURE_ENDPOINT_ENV = "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT"
AZURE_VERSION_ENV, AZURE_DEPLOYMENT_ENV = "OPENAI_API_VERSION", "AZURE_OPENAI_DEPLOYMENT"


@dataclass(frozen=True)
class OpenAIConfig:
    """Options of the openai judge; every field can be set with ``--judge-option key=value``."""

    model: str = "gpt-4o-mini"
    # Set by the launcher when no model was named and the endpoint (not OpenAI's) listed one
    # (served_models.py): that model is never priced from the packaged table (pricing.py).
    model_listed: bool = False
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    # A Secret Manager secret holding the key, read by the judge wherever it is built (the
    # launcher and every Dataflow worker) when `api_key_env` is unset there: secret_key.py.
    api_key_secret: str | None = None
    azure_api_version: str | None = None
    # The organisation and project sent (OpenAI-Organization, OpenAI-Project headers).
    organization: str | None = None
    project: str | None = None
    # Set by the launcher, which settles the endpoint from its options and environment and
    # ships it (endpoint.py): a judge whose endpoint is settled reads no endpoint variable, and
    # fails when built without a key if `key_required` (the launcher held one, or the endpoint
    # is the provider's or Azure's).
    endpoint_resolved: bool = False
    key_required: bool = True
    rpm: float = 500.0
    tpm: float = 200_000.0
    max_concurrency: int = 32
    # A reply read whole because stream=false: each read's timeout (read whole because the
    # server streams no usage: its reply's deadline instead). A streamed reply: the least wait
    # for its first token (longer for a long prompt at the endpoint's measured speed).
    timeout_s: float = 60.0
    # Read replies as a stream (streamed.py): a reply may take as long as it keeps producing
    # tokens; it fails when no token came for idle_timeout_s (or more, at a slow endpoint's
    # measured speed). An endpoint that refuses streaming is read whole (capabilities.py).
    stream: bool = True
    idle_timeout_s: float = 30.0
    # The endpoint's speed as measured (tokens read and written per second; check-judge prints
    # them, the start-up probe sets them for the run): the running estimate starts there, and
    # --estimate says how long a run takes at that speed.
    prompt_tokens_per_s: float | None = None
    output_tokens_per_s: float | None = None
    max_attempts: int = 6
    backoff_initial_s: float = 0.5
    # Also the cap on every pause a provider asks for (Retry-After, retry-after-ms,
    # x-ratelimit-reset*): a larger ask is cut to it and logged once (ratelimit.PauseCap).
    backoff_max_s: float = 30.0
    # Providers count max_completion_tokens against tokens/min when a request is admitted, so a
    # generous reservation wastes the budget: start small and double it for a call whose answer
    # was cut off (finish_reason "length"), up to max_output_tokens_cap.
    max_output_tokens: int = 256
    max_output_tokens_cap: int = 2048
    temperature: float = 0.0
    seed: int = 42
    price_input: float | None = None
    price_cached: float | None = None
    price_output: float | None = None
    price_model: str | None = None  # the table's model for an Azure deployment's name
    prices: str | None = None  # a price table file that adds to or replaces the packaged one
    # Ask for the label token's log-probabilities on the final (global) verification, for
    # p_unsupported; turn off for an endpoint that rejects `logprobs`.
    logprobs: bool = True
    top_logprobs: int = 5
    # Send `prompt_cache_key` (a hash of the shared prefix: the answer, window or context) so
    # that the provider routes a trace's calls to the same prompt cache.
    prompt_cache_key: bool = True
    # `rpm` and `tpm` are the whole job's limits. rate_limiter "static": each of the job's
    # `rate_share` worker processes budgets its share (set at launch, see limits/shares.py);
    # "envoy": one Envoy rate-limit service at `rate_limit_service` holds them for the job.
    rate_share: int = 1
    rate_limiter: str = "static"
    rate_limit_service: str | None = None
    rate_limit_domain: str = "rt4chart"
    # Circuit breaker: after this many seconds in which every call failed (connection, timeout,
    # HTTP error, a reply that is not a completion), calls fail fast (0: never); while open, one
    # call every breaker_probe_s tries the endpoint, and its success closes the breaker.
    breaker_after_s: float = 120.0
    breaker_probe_s: float = 30.0
    # Sent to reasoning models (gpt-5, o3, o4-mini); dropped, like every field, by an endpoint
    # that names it in an error. "none": never sent.
    reasoning_effort: str = "low"
    # Structured output: "auto" starts at strict json_schema and falls back along the ladder
    # of capabilities.py; a ladder step (json_schema, json_object_schema, json_object, text)
    # starts there.
    structured: str = "auto"
    # Probe the endpoint before the first trace (probe.py): what it accepts, whether the prompt
    # arrives whole, its latency and capacity. The launcher passes what it found to every
    # worker as `negotiated` (capabilities.py's text form): workers do not probe again.
    probe: bool = True
    negotiated: str | None = None
    # The longest `reasoning` a reply may write (the schemas' maxLength); 0 leaves the field out
    # (a small local model spends most of its output, at a few tokens a second, there).
    reasoning_chars: int = 500
    # A retry after a malformed reply is sampled at this temperature (a server that decodes
    # greedily repeats the same reply at temperature 0); where temperature is not sent, no change.
    retry_temperature: float = 0.5

    @classmethod
    def from_options(cls, options: dict[str, str]) -> OpenAIConfig:
        """The config of the judge options (strings), each converted to its field's declared
        type (option_values); ValueError on an unknown option or a bad value."""
        unknown = set(options) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown openai judge option(s): {', '.join(sorted(unknown))}")
        config = cls(**convert(cls, options, "openai judge"))
        config.check()
        return config

    def check(self) -> None:
        """ValueError on values out of range (now, not on a worker)."""
        if self.max_concurrency < 1 or self.max_attempts < 1 or self.rate_share < 1:
            raise ValueError("max_concurrency, max_attempts and rate_share must be >= 1")
        if self.reasoning_effort not in REASONING_EFFORTS:
            raise ValueError(f"openai judge option reasoning_effort={self.reasoning_effort!r}: "
                             f"expected one of {', '.join(REASONING_EFFORTS)}")
        if self.structured != "auto" and self.structured not in LADDER:
            raise ValueError(f"openai judge option structured={self.structured!r}: expected "
                             f"auto or one of {', '.join(LADDER)}")
        if self.negotiated:
            Capabilities.decode(self.negotiated)
        if not self.timeout_s > 0 or not self.idle_timeout_s > 0:
            raise ValueError("timeout_s and idle_timeout_s must be > 0")
        for name in ("prompt_tokens_per_s", "output_tokens_per_s"):
            value = getattr(self, name)
            if value is not None and not 0 < value < float("inf"):
                raise ValueError(f"openai judge option {name}={value!r}: expected a number > 0")

    def capabilities(self) -> Capabilities:
        """What to send: the negotiated capabilities, else everything from the first step."""
        if self.negotiated:
            caps = Capabilities.decode(self.negotiated)
        else:
            caps = Capabilities(LADDER[0] if self.structured == "auto" else self.structured)
        return caps if self.stream else replace(caps, stream=False)

    @property
    def effort(self) -> str | None:
        return None if self.reasoning_effort == "none" else self.reasoning_effort


# Options of every judge, read where a judge is built (contract.JudgeSpec.build) and by the
# pipeline, never by its factory: whoever reads the openai judge's options takes them too.
EVERY_JUDGE = (DEADLINE_OPTION, CALIBRATION_OPTION)


def option_names() -> frozenset[str]:
    """Every option the openai judge accepts (`--judge-option KEY=VALUE`): its config's
    fields, its throughput tuning's declared options and every judge's own."""
    tuning = set()
    for part in ThroughputOptions.tuning_parts():
        tuning |= set(declarations(part, False))
    return frozenset(OpenAIConfig.__dataclass_fields__) | tuning | set(EVERY_JUDGE)


def judge_options(options: Mapping[str, str]) -> tuple[OpenAIConfig, ThroughputOptions]:
    """The openai judge's options split into its config and its throughput tuning
    (reservations, prefix gate, provider limits: throughput.py); every judge's options
    (EVERY_JUDGE) are accepted and left to the pipeline. ValueError on a bad one."""
    own = {k: v for k, v in options.items() if k not in EVERY_JUDGE}
    if DEADLINE_OPTION in options:
        check_deadline(options[DEADLINE_OPTION])
    tuning = ThroughputOptions.pop_from(own)
    return OpenAIConfig.from_options(own), tuning


def config_only(options: Mapping[str, str]) -> OpenAIConfig:
    """The judge's config from a run's judge options, the options that are not its config's
    (throughput tuning, the batch judge's `batch_*`) left aside."""
    known = OpenAIConfig.__dataclass_fields__
    return OpenAIConfig.from_options({k: v for k, v in options.items() if k in known})


def azure_from_env(environ: Mapping[str, str]) -> bool:
    """Azure OpenAI is configured by its standard variables (an endpoint and its key)."""
    return bool(environ.get(AZURE_ENDPOINT_ENV) and environ.get(AZURE_KEY_ENV))


def with_endpoint(config: OpenAIConfig, given: Collection[str],
                  environ: Mapping[str, str]) -> OpenAIConfig:
    """The config with its endpoint settled: as given when a base URL is (`base_url`, or
    OPENAI_BASE_URL) or Azure's variables are not set; else Azure OpenAI from
    AZURE_OPENAI_ENDPOINT, its key from AZURE_OPENAI_API_KEY and its API version from
    OPENAI_API_VERSION, the deployment from `model` or AZURE_OPENAI_DEPLOYMENT (`given`: the
    options set explicitly, which win over the variables). ValueError without an API version.
    """
    if config.base_url or environ.get("OPENAI_BASE_URL") or not azure_from_env(environ):
        return config
    version = config.azure_api_version or environ.get(AZURE_VERSION_ENV)
    if not version:
        raise ValueError(f"openai judge: Azure OpenAI ({AZURE_ENDPOINT_ENV}) needs an API "
                         f"version: set {AZURE_VERSION_ENV} (or --judge-option "
                         "azure_api_version=...)")
    model = config.model if "model" in given else environ.get(AZURE_DEPLOYMENT_ENV) or \
        config.model
    key_env = config.api_key_env if "api_key_env" in given else AZURE_KEY_ENV
    return replace(config, base_url=environ[AZURE_ENDPOINT_ENV], azure_api_version=version,
                   model=model, api_key_env=key_env)
