"""The built-in judge for any OpenAI-compatible chat completions endpoint.

Every call uses structured outputs (a strict JSON schema from ``prompts/``), temperature 0 and a
fixed seed. Calls are rate limited per worker (requests/min and tokens/min), retried with
tenacity on 429, 5xx, timeouts, connection errors and answers that do not match the schema, and
metered from the API's usage report. The client's own retries are off so that every retry goes
through the rate limiter.

Failures end: an HTTP 200 whose body is not a chat completion (an HTML page from a proxy) is
retried like a malformed answer; replies are read as a stream (streamed.py) with an idle
timeout between tokens (keep-alives and whitespace-only tokens are not progress), so a slow
reply that keeps coming is not a timeout, within a deadline per reply from the request (the
endpoint's measured speed and the reply's token limit: endpoint_speed.EndpointSpeed.reply_s;
tokens never restart it) and a cap on its tokens and bytes (reply_size.reply_cap; a reply past
it is a judge error, not retried); a circuit breaker (:mod:`.breaker`) makes calls fail fast
while the endpoint has failed every call for `breaker_after_s` (a busy endpoint gets fewer
calls at once instead, see limits/concurrency); every call has a deadline over all its attempts
(`call_deadline_s`: by default endpoint_speed.call_deadline_s, at most 900 s; enforced by the
adapter; waits in the judge's own queue do not count, tokens never restart it); and every
failure's reason is redacted with the configured key (see :mod:`.openai_faults`).
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from typing import Any

import openai
from tenacity import (
    AsyncRetrying,
    stop_after_attempt,
)

from rt4chart import prompts
from rt4chart.transforms.judges.base import (
    DecomposedClaim,
    JudgeError,
    Verdict,
    queued,
    record_usage,
)
from rt4chart.transforms.judges.contract import Judge
from rt4chart.transforms.judges.limits.throttling import judge_clock
from rt4chart.transforms.judges.openai.breaker import CircuitBreaker
from rt4chart.transforms.judges.openai.call_facts import (
    READS_CONTEXT,
    READS_QUESTION,
    READS_WINDOW,
    CallFacts,
)
from rt4chart.transforms.judges.openai.capabilities import (
    json_in,
    loads_lenient,
    request_body,
    with_reasoning,
)
from rt4chart.transforms.judges.openai.config import OpenAIConfig, judge_options
from rt4chart.transforms.judges.openai.endpoint import missing_key, open_client, settle
from rt4chart.transforms.judges.openai.endpoint_speed import (
    EndpointSpeed,
    Speed,
    call_deadline_s,
    speed_report,
)
from rt4chart.transforms.judges.openai.faults import (
    NotACompletion,
    failure_reason,
)
from rt4chart.transforms.judges.openai.kind import OPENAI_TRAITS
from rt4chart.transforms.judges.openai.limits.concurrency import AdaptiveLimit
from rt4chart.transforms.judges.openai.limits.rate import (
    PauseCap,
    RateLimiter,
)
from rt4chart.transforms.judges.openai.limits.shares import limiter_factory
from rt4chart.transforms.judges.openai.logprobs import p_unsupported
from rt4chart.transforms.judges.openai.pricing import (
    Prices,
    prices_for,
    reported_usage,
)
from rt4chart.transforms.judges.openai.retry_rules import (
    Backoff,
    Truncated,
    cache_key_of,
    check_numbering,
    should_retry,
)
from rt4chart.transforms.judges.openai.secret_key import read_api_key
from rt4chart.transforms.judges.openai.sending import Sending
from rt4chart.transforms.judges.openai.throughput import OUTPUT_KEY, Throughput
from rt4chart.transforms.judges.schema_check import (
    SchemaMismatch,
    validate,
)

logger = logging.getLogger(__name__)

P_KEY = "_p_unsupported"  # where _parse puts the label's probability (not a schema field)
UNTOLD_REASONING_CHARS = 1 << 30  # see OpenAIJudge._checked_schema


class OpenAIJudge(Sending, Judge):
    """Judge contract over ``AsyncOpenAI`` (or ``AsyncAzureOpenAI``)."""

    kind_traits = OPENAI_TRAITS

    def __init__(self, options: dict[str, str] | None = None):
        config, tuning = judge_options(options or {})
        # The endpoint as the launcher settled it (endpoint.py): a worker reads no endpoint
        # variable. Only a judge built where nothing settled it settles it here.
        self.config = settle(config, (options or {}).keys(), os.environ)
        self.throughput = Throughput(tuning, self.config)
        self.model = self.config.model
        self.traits = replace(self.kind_traits, model=self.model)
        self.prices: Prices | None = prices_for(self.config)
        self._new_limiter = limiter_factory(self.config)  # ValueError now, not on a worker
        self._client: openai.AsyncOpenAI | None = None
        self._limiter: RateLimiter | None = None
        self._throttled = judge_clock()  # its runtime's: the judge stages report it to Beam
        self._semaphore = None
        self._schemas: dict[str, dict] = {}  # see schema()
        self.base_url = self.config.base_url
        self._api_key = os.environ.get(self.config.api_key_env)  # the one variable read here
        self._fetched: tuple[str, ...] = ()  # a key read from Secret Manager (held_keys)
        if not self._api_key and self.config.api_key_secret:
            # Held by this judge (memory, never a file nor the environment): its runtime
            # redacts it from what the stages write (held_keys).
            self._api_key = read_api_key(self.config.api_key_secret)
            self._fetched = (self._api_key,)
        self._deadline_s: float | None = None  # call_deadline_s when set (see the property)
        self._breaker = CircuitBreaker(self.config.breaker_after_s, self.config.breaker_probe_s)
        # The endpoint's running speed (endpoint_speed): the waits of streamed replies.
        self.speed = EndpointSpeed(Speed(self.config.prompt_tokens_per_s,
                                         self.config.output_tokens_per_s))
        self.capabilities = self.config.capabilities()  # corrected by `adapt` as errors name
        # No provider reply may pause this judge's calls longer than backoff_max_s.
        self.pause_cap = PauseCap(self.config.backoff_max_s)
        if self.config.key_required and not self._api_key:
            # On a worker: setup() fails, so the run fails at its first bundle with the reason.
            raise ValueError(missing_key(self.config))

    @property
    def call_deadline_s(self) -> float:
        """The call deadline (base.CallDeadline, over all its attempts; tokens never restart
        it): as set, else endpoint_speed.call_deadline_s (five deadlines of a long reply at the
        endpoint's running speed, at most 900 s)."""
        if self._deadline_s is not None:
            return self._deadline_s
        cfg = self.config
        return call_deadline_s(self.speed, cfg.timeout_s, cfg.idle_timeout_s,
                               cfg.max_output_tokens)

    @call_deadline_s.setter
    def call_deadline_s(self, seconds: float) -> None:
        self._deadline_s = seconds

    def _ensure_client(self) -> openai.AsyncOpenAI:
        # Built on first use, inside the worker's event loop: the client is not picklable and
        # its connection pool belongs to the loop that uses it.
        if self._client is None:
            cfg = self.config
            self._client = open_client(cfg, self._api_key)
            self._limiter = self._new_limiter(clock=self._throttled)
            self._semaphore = AdaptiveLimit(cfg.max_concurrency)  # backs off when busy
        return self._client

    def endpoint_speed(self) -> dict[str, Any] | None:
        """The endpoint's speed as measured (the probe's and the calls' replies), for
        check-judge: see endpoint_speed.speed_report."""
        return speed_report(self.speed, self.config.max_concurrency,
                            self.config.max_output_tokens)

    async def aclose(self) -> None:
        """Close the client's connections, in the loop that opened them (see
        `contract.close_judge`); the next call opens a new client."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    def schema(self, name: str) -> dict:
        """A reply's JSON schema as this judge asks for it and checks it (built once per name:
        it depends on the name and the configured reasoning length only, and is only read)."""
        built = self._schemas.get(name)
        if built is None:
            built = self._schemas[name] = with_reasoning(prompts.schema(name),
                                                         self.config.reasoning_chars)
        return built

    def _checked_schema(self, name: str) -> dict:
        """The schema a reply is held to: every bound of `schema(name)` (a reply beyond one is
        OutOfBounds), except the length of a `reasoning` the endpoint was not sent (it refused
        the size keywords), which rt4chart never reads: the model was not told it."""
        if self.capabilities.bounds or self.config.reasoning_chars <= 0:
            return self.schema(name)
        return with_reasoning(prompts.schema(name), UNTOLD_REASONING_CHARS)

    def _request_body(self, messages: list[dict], schema_name: str, logprobs: bool,
                      cache_key: str | None, max_tokens: int,
                      temperature: float | None = None) -> dict[str, Any]:
        """The chat completion request, as sent (directly, or in a Batch API file): what the
        endpoint accepts (see capabilities.py)."""
        cfg = self.config
        return request_body(
            self.capabilities, model=cfg.model, messages=messages, schema_name=schema_name,
            schema=self.schema(schema_name), max_tokens=max_tokens,
            temperature=cfg.temperature if temperature is None else temperature,
            seed=cfg.seed, logprobs=logprobs,
            top_logprobs=cfg.top_logprobs,
            cache_key=cache_key if cfg.prompt_cache_key else None,
            reasoning_effort=cfg.effort)

    @property
    def request_mode(self) -> str:
        """What this judge sends (part of the run's prompt hash, see capabilities.py)."""
        mode = self.capabilities.encode(transport=False)  # streamed or not: the same replies
        if self.config.reasoning_chars != OpenAIConfig.reasoning_chars:
            mode += f";reasoning={self.config.reasoning_chars}"
        return mode

    def held_keys(self) -> tuple[str, ...]:
        return self._fetched

    def _secrets(self) -> tuple[str, ...]:
        return (self._api_key,) if self._api_key else ()

    def _parse(self, completion: Any, schema_name: str) -> dict:
        # A usage report that is missing, null or negative is unknown usage: the call counts,
        # its cost is unknown (never negative, never $0), and the answer is still read.
        prompt, cached, output, cost = reported_usage(getattr(completion, "usage", None),
                                                      self.prices)
        record_usage(prompt, cached, output or 0, cost)
        if not completion.choices:
            raise SchemaMismatch("response has no choices")
        message = completion.choices[0].message
        if completion.choices[0].finish_reason == "length":
            raise Truncated("answer cut off at the output token budget")
        if getattr(message, "refusal", None):
            raise JudgeError(f"judge refused: {message.refusal:.200}")
        try:
            data = loads_lenient(json_in(message.content or ""))
        except ValueError as exc:
            raise SchemaMismatch(f"response is not JSON: {exc}") from exc
        validate(data, self._checked_schema(schema_name))
        choice = completion.choices[0]
        if getattr(choice, "logprobs", None) is not None:
            data[P_KEY] = p_unsupported(message.content or "", choice.logprobs)
        if output is not None:
            data[OUTPUT_KEY] = output  # for the output reservation
        return data

    async def _call(self, system: str, user: str, call: CallFacts, logprobs: bool = False,
                    shared: str | None = None) -> dict:
        """One structured call, retried; `call` says what it is about (its reply's schema,
        stage and size: see call_facts), `shared` the prefix text that calls of one trace have
        in common (it names the prompt cache). A failure is a JudgeError whose reason carries
        no secret."""
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        self._ensure_client()
        try:
            async with (self.throughput.turn(system, user, shared),  # see prefix_gate
                        self.throughput.warming(call)):  # see reservation
                with queued():  # nor is waiting for a concurrency slot
                    await self._semaphore.acquire()
                try:
                    return await self._retrying(messages, call, logprobs, shared)
                finally:
                    self._semaphore.release()
        except (JudgeError, SchemaMismatch, openai.APIError) as exc:
            reason = failure_reason(exc, self.config.max_attempts, self._secrets())
            error_type = type(exc) if isinstance(exc, JudgeError) else JudgeError
            # Not chained: the original message may hold what was just redacted.
            raise error_type(reason) from None

    async def _retrying(self, messages: list[dict], call: CallFacts, logprobs: bool,
                        shared: str | None) -> dict:
        budget = self.throughput.budget(call)
        temperature = None  # the configured one, until a reply is malformed
        async for attempt in AsyncRetrying(
            retry=should_retry,
            wait=Backoff(self.config.backoff_initial_s, self.config.backoff_max_s,
                          self.pause_cap),
            stop=stop_after_attempt(self.config.max_attempts),
            reraise=True,
        ):
            with attempt:
                try:
                    data = await self._attempt(messages, call.schema, logprobs,
                                               cache_key_of(shared), budget, temperature)
                except Truncated:
                    more = self.throughput.cut_off(call, budget)
                    if more <= budget:  # at the cap already: the model does not stop
                        raise JudgeError(
                            f"the reply was cut off at the {budget}-token output cap "
                            f"(max_output_tokens_cap) after {attempt.retry_state.attempt_number}"
                            " attempt(s): the model writes on (small models loop); raise the "
                            "cap or use a stronger model") from None
                    budget = more
                    raise
                except SchemaMismatch as exc:
                    if not isinstance(exc, NotACompletion):  # the model's reply, not a proxy's
                        temperature = self.config.retry_temperature
                    raise
                if call.numbered is not None:
                    check_numbering(data, call.numbered)
                self.throughput.observe(call, data, budget)
                return data
        raise JudgeError("unreachable: retry loop ended without a result")

    async def decompose(self, sentence: str, answer: str, question: str) -> list[DecomposedClaim]:
        data = await self._call(
            prompts.load("decompose_system.txt"),
            prompts.render("decompose_user.txt", question=question, answer=answer,
                           sentence=sentence),
            CallFacts("decompose", READS_QUESTION, sentence=sentence), shared=answer,
        )
        return claims_of(data)

    async def verify_local(self, claim: str, chunk: str, question: str) -> Verdict:
        data = await self._call(
            prompts.load("verify_system.txt"),
            prompts.render("verify_local_user.txt", chunk=chunk, question=question, claim=claim),
            CallFacts("verify", READS_WINDOW, (claim,), chunk), shared=chunk,
        )
        return Verdict(data["label"], data["evidence"])

    async def verify_local_many(
        self, claims: list[str], chunk: str, question: str
    ) -> list[Verdict]:
        """Several claims against one window in one call (`--claims-per-call`): one verdict
        per claim, in order; a reply that skips, repeats or renumbers a claim is retried."""
        numbered = "\n".join(f"[{i}] {claim}" for i, claim in enumerate(claims, start=1))
        data = await self._call(
            prompts.load("verify_system.txt"),
            prompts.render("verify_local_many_user.txt", chunk=chunk, question=question,
                           claims=numbered),
            CallFacts("verify_many", READS_WINDOW, tuple(claims), chunk, numbered=len(claims)),
            shared=chunk,
        )
        verdicts = sorted(data["verdicts"], key=lambda v: v["claim"])
        return [Verdict(v["label"], v["evidence"]) for v in verdicts]

    async def verify_global(
        self, claim: str, context: str, question: str, local_label: str, hint: str | None
    ) -> Verdict:
        """The verdict with p_unsupported from the label token's log-probabilities, None when
        the endpoint gave none (the pipeline then uses 0 or 1 from the label)."""
        if hint is None:
            user = prompts.render("verify_global_user.txt", context=context, question=question,
                                  claim=claim)
        else:
            user = prompts.render("verify_global_hint_user.txt", context=context,
                                  question=question, claim=claim, local_label=local_label,
                                  hint=hint)
        call = CallFacts("verify", READS_CONTEXT, (claim,), context, hint=hint is not None)
        data = await self._call(prompts.load("verify_system.txt"), user, call,
                                logprobs=self.config.logprobs, shared=context)
        return Verdict(data["label"], data["evidence"], data.get(P_KEY))

    async def verify_absence(self, claim: str, context: str, question: str) -> Verdict:
        """An absence claim against the full context, with its own prompt: ENT when the context
        lacks what the claim says is missing, CON quoting it when it does not."""
        user = prompts.render("verify_absence_user.txt", context=context, question=question,
                              claim=claim)
        data = await self._call(prompts.load("verify_absence_system.txt"), user,
                                CallFacts("verify_absence", READS_CONTEXT, (claim,), context),
                                logprobs=self.config.logprobs, shared=context)
        return Verdict(data["label"], data["evidence"], data.get(P_KEY))


def claims_of(data: dict) -> list[DecomposedClaim]:
    """The claims of a decomposition answer (validated against its schema): text, kind and
    the fragments of the sentence each restates; blank claims and fragments are dropped, and
    a claim or fragment repeated (same words, any case or spacing) is kept once."""
    out: dict[str, DecomposedClaim] = {}
    for c in data["claims"]:
        text = c["text"].strip()
        key = " ".join(text.casefold().split())
        if text and key not in out:  # a looping model repeats itself: one claim, one check
            fragments = tuple(dict.fromkeys(f for f in c["fragments"] if f.strip()))
            out[key] = DecomposedClaim(text, c["kind"], fragments)
    return list(out.values())


def factory(options: dict[str, str]) -> OpenAIJudge:
    return OpenAIJudge(options)


__all__ = ["OpenAIConfig", "OpenAIJudge", "factory", "judge_options"]  # config: openai_config
