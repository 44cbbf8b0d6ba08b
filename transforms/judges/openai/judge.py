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
calls at once instead, see adaptive_limit); every call has a deadline over all its attempts
(`call_deadline_s`: by default endpoint_speed.call_deadline_s, at most 900 s; enforced by the
adapter; waits in the judge's own queue do not count, tokens never restart it); and every
failure's reason is redacted with the configured key (see :mod:`.openai_faults`).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import os
import random
from dataclasses import replace
from typing import Any

import httpx
import openai
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    stop_after_attempt,
    wait_exponential_jitter,
)

from rt4chart import prompts
from rt4chart.transforms.common.redact import redact
from rt4chart.transforms.judges.base import (
    DecomposedClaim,
    JudgeError,
    Verdict,
    queued,
    record_usage,
)
from rt4chart.transforms.judges.contract import Judge
from rt4chart.transforms.judges.openai.adaptive_limit import AdaptiveLimit
from rt4chart.transforms.judges.openai.breaker import CircuitBreaker
from rt4chart.transforms.judges.openai.call_facts import (
    READS_CONTEXT,
    READS_QUESTION,
    READS_WINDOW,
    CallFacts,
)
from rt4chart.transforms.judges.openai.capabilities import (
    MAX_CORRECTIONS,
    corrected,
    error_text,
    json_in,
    loads_lenient,
    request_body,
    unstreamed,
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
    MESSAGE_CHARS,
    NotACompletion,
    Overdue,
    Stalled,
    completion_of,
    failure_reason,
    is_endpoint_failure,
    rejected_request,
)
from rt4chart.transforms.judges.openai.job_limits import limiter_factory
from rt4chart.transforms.judges.openai.kind import OPENAI_TRAITS
from rt4chart.transforms.judges.openai.liveness import answers_health_check, timed_out
from rt4chart.transforms.judges.openai.logprobs import p_unsupported
from rt4chart.transforms.judges.openai.prefix_gate import mark_sent
from rt4chart.transforms.judges.openai.pricing import (
    Prices,
    prices_for,
    reported_usage,
    token_count,
)
from rt4chart.transforms.judges.openai.ratelimit import (
    PauseCap,
    RateLimiter,
    exhausted_for,
    retry_after_seconds,
)
from rt4chart.transforms.judges.openai.reply_size import reply_cap
from rt4chart.transforms.judges.openai.reply_view import post_whole, read_body, split_request
from rt4chart.transforms.judges.openai.secret_key import read_api_key
from rt4chart.transforms.judges.openai.streamed import Waits, is_event_stream, read, stream_body
from rt4chart.transforms.judges.openai.throughput import OUTPUT_KEY, Throughput
from rt4chart.transforms.judges.schema_check import (
    OUT_OF_BOUNDS_ATTEMPTS,
    OutOfBounds,
    SchemaMismatch,
    validate,
)
from rt4chart.transforms.judges.throttling import judge_clock

logger = logging.getLogger(__name__)

P_KEY = "_p_unsupported"  # where _parse puts the label's probability (not a schema field)
UNTOLD_REASONING_CHARS = 1 << 30  # see OpenAIJudge._checked_schema


class Truncated(SchemaMismatch):
    """The answer hit the output token budget: retried with twice the budget."""


def check_numbering(data: dict, n: int) -> None:
    """A multi-claim reply must give one verdict to each of claims 1..n, in order, as the
    prompt asks: verdicts numbered otherwise (2, 3, 1: rotated) cannot be told from verdicts in
    the wrong order, so which verdict is whose would be a guess (OutOfBounds)."""
    got = [v["claim"] for v in data["verdicts"]]
    if got != list(range(1, n + 1)):
        raise OutOfBounds(f"verdicts numbered {got[:12]}{'...' if len(got) > 12 else ''}, "
                          f"expected claims 1..{n} in order")


def cache_key_of(shared: str | None) -> str | None:
    """A short, stable name for a shared prompt prefix (no trace content leaves in clear)."""
    if not shared:
        return None
    return "rt4chart-" + hashlib.sha256(shared.encode("utf-8")).hexdigest()[:24]


def _should_retry(state: RetryCallState) -> bool:
    """Tenacity's retry test: `_retryable`, and a reply beyond the schema's bounds retried
    only until OUT_OF_BOUNDS_ATTEMPTS."""
    exc = state.outcome.exception() if state.outcome else None
    if exc is None:
        return False
    if isinstance(exc, OutOfBounds) and state.attempt_number >= OUT_OF_BOUNDS_ATTEMPTS:
        return False
    return _retryable(exc)


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, SchemaMismatch | openai.APITimeoutError | openai.APIConnectionError):
        return True
    if isinstance(exc, openai.APIStatusError):
        if rejected_request(exc) is not None:  # the same request would fail the same way
            return False
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return False


class _Backoff:
    """Tenacity wait: the provider's Retry-After on 429 (capped, see PauseCap), else
    exponential backoff with jitter, never above `maximum`."""

    def __init__(self, initial: float, maximum: float, cap: PauseCap | None = None):
        self._exp = wait_exponential_jitter(initial=initial, max=maximum)
        self._max = maximum
        self._cap = cap or PauseCap(maximum)

    def __call__(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, openai.APIStatusError) and exc.status_code == 429:
            asked = self._cap(retry_after_seconds(exc.response.headers), "retry-after")
            if asked is not None:
                return min(self._max, asked + random.uniform(0, 0.05 + asked * 0.1))
        return self._exp(state)


class OpenAIJudge(Judge):
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

    def adapt(self, exc: openai.APIStatusError) -> bool:
        """Whether an error named a request field this judge can stop sending (it then has
        new capabilities, logged); an endpoint's other errors stand."""
        message, param = error_text(exc)
        fix = corrected(self.capabilities, exc.status_code, message, param)
        if fix is None:
            return False
        self.capabilities, change = fix
        logger.warning("the judge endpoint refused a request (HTTP %d: %s): %s",
                       exc.status_code, redact(message, self._secrets())[:MESSAGE_CHARS], change)
        return True

    async def _attempt(self, messages: list[dict], schema_name: str, logprobs: bool,
                       cache_key: str | None, max_tokens: int,
                       temperature: float | None = None) -> dict:
        client = self._ensure_client()
        probe = await self._breaker.admit()  # BreakerOpen at once while the endpoint is down
        generation, started = self._semaphore.generation, self.speed.now()
        try:
            contents = [m["content"] for m in messages]
            with queued():  # waiting for the rate budget is not the call hanging
                await self._limiter.acquire(self.throughput.prompt_tokens.estimate(contents)
                                            + max_tokens)
            mark_sent()  # a prefix's followers wait from now on (prefix_gate)
            completion = await self._send_adapting(client, messages, schema_name, logprobs,
                                                   cache_key, max_tokens,
                                                   temperature=temperature)
        except BaseException as exc:
            await self._failed(exc, probe, generation, started)
            raise
        self.speed.token()  # a whole reply, too, says the endpoint is alive (liveness)
        self._breaker.success()
        self._semaphore.answered(self.speed.slowing)
        usage = getattr(completion, "usage", None)
        self.throughput.prompt_tokens.observe(contents,
                                              token_count(getattr(usage, "prompt_tokens", None)))
        return self._parse(completion, schema_name)

    async def _failed(self, exc: BaseException, probe: bool, generation: int, started: float
                      ) -> None:
        """After a failed attempt: a timeout sends fewer calls at once; the breaker counts the
        failures that say the endpoint is down, not those of an endpoint that is working: a
        timeout after tokens, while other calls got theirs, or, when it wrote nothing at all
        (not even whitespace), while its health check answers (slow, not dead: liveness)."""
        if isinstance(exc, openai.APITimeoutError):
            self._semaphore.backoff(generation)
        # Whitespace alone is no sign of life: a server that writes nothing else is down for
        # a judge, whatever its health check says.
        busy = timed_out(exc) and (getattr(exc, "tokens", 0) > 0
                                   or self.speed.alive_since(started)
                                   or (not getattr(exc, "blank", 0)
                                       and await answers_health_check(self._ensure_client())))
        if is_endpoint_failure(exc) and not busy:
            self._breaker.failure(redact(f"{type(exc).__name__}: {exc}", self._secrets()), probe)
        else:
            self._breaker.release(probe)

    async def _send_adapting(self, client: openai.AsyncOpenAI, messages: list[dict],
                             schema_name: str, logprobs: bool, cache_key: str | None,
                             max_tokens: int, headers: dict[str, str] | None = None,
                             timeout_s: float | None = None,
                             temperature: float | None = None, whole: bool = False) -> Any:
        """The call, sent again at once (not counted as an attempt) each time the endpoint
        refuses a field it names; bounded, as every correction removes something."""
        for _ in range(MAX_CORRECTIONS):
            body = self._request_body(messages, schema_name, logprobs, cache_key, max_tokens,
                                      temperature)
            try:
                return await self._send(client, body, headers, timeout_s, whole)
            except openai.APIStatusError as exc:
                if not self.adapt(exc):
                    raise
        raise JudgeError("the endpoint kept refusing the request's fields")

    async def _send(self, client: openai.AsyncOpenAI, body: dict[str, Any],
                    headers: dict[str, str] | None = None, timeout_s: float | None = None,
                    whole: bool = False) -> Any:
        """One HTTP request: the chat completion (read whole with `whole`, else as the
        capabilities say), honouring the provider's rate-limit headers."""
        started = self.speed.now()
        try:
            raw, completion = await self._request(client, body, headers, timeout_s, whole)
        except openai.APIStatusError as exc:
            self._limiter = self.throughput.adopt(exc.response.headers, self._limiter)
            if exc.status_code == 429:
                headers = exc.response.headers
                wait = self.pause_cap(retry_after_seconds(headers), "retry-after on a 429")
                if wait is None:
                    wait = self.pause_cap(exhausted_for(headers), "x-ratelimit-reset on a 429")
                self._limiter.pause(wait if wait is not None else min(1.0, self.pause_cap.cap_s))
            raise
        self._limiter = self.throughput.adopt(raw.headers, self._limiter)
        pause = self.pause_cap(exhausted_for(raw.headers), "x-ratelimit-reset")
        if pause:
            self._limiter.pause(pause)
        if completion is None:  # a whole reply (reply_view.post_whole)
            completion = completion_of(raw, functools.partial(read_body, raw))
            usage = getattr(completion, "usage", None)
            self.speed.observe_whole(token_count(getattr(usage, "completion_tokens", None)),
                                     self.speed.now() - started)
        return completion

    async def _request(self, client: openai.AsyncOpenAI, body: dict[str, Any],
                       headers: dict[str, str] | None, timeout_s: float | None,
                       whole: bool = False) -> tuple[Any, Any]:
        """The raw response, and the completion when it was read as a stream (None: read it
        from the raw response)."""
        create = functools.partial(client.chat.completions.with_raw_response.create,
                                   extra_headers=headers)
        if whole or not self.capabilities.stream:  # sent and read as plain JSON (reply_view)
            return await self._post_whole(client, body, headers, timeout_s), None
        prompt = self.throughput.prompt_tokens.estimate([m["content"] for m in body["messages"]])
        floor = timeout_s or self.config.timeout_s
        limit = self._limit_of(body)
        waits = Waits(self.speed.first_token_s(prompt, floor),
                      self.speed.idle_s(self.config.idle_timeout_s),
                      self._reply_s(prompt, limit, floor))
        # No read timeout of httpx's: the waits above are the stream's (streamed.read)
        sent = functools.partial(create, **split_request(stream_body(body)),
                                 timeout=httpx.Timeout(None, connect=floor, write=floor))
        try:
            raw, timing, completion = await read(
                client, sent, waits, reply_cap(limit, self.config.max_output_tokens),
                self._token)
        except Overdue as exc:
            timing = exc.timing
            if timing is not None:
                self.speed.overdue(timing.tokens, timing.first_s, timing.last_s)
            raise
        except Stalled as exc:
            self.speed.stalled(prompt, exc.waited_s, exc.tokens, exc.blank)
            raise
        if not is_event_stream(raw.headers):  # the server ignored `stream`: one JSON body
            self._read_whole("the endpoint answers `stream: true` with a whole reply")
            return raw, completion
        usage = completion.usage
        if usage is None:  # this reply's usage is unknown; the next ones' will not be
            self._read_whole("the endpoint's streamed replies carry no usage report")
        counted = token_count(getattr(usage, "prompt_tokens", None))
        details = getattr(usage, "prompt_tokens_details", None)
        cached = token_count(getattr(details, "cached_tokens", None)) or 0
        output = token_count(getattr(usage, "completion_tokens", None)) or timing.tokens
        if timing.first_s is not None:
            read_tokens = max(0, (counted or prompt) - cached)
            self.speed.observe(read_tokens, timing.first_s, output,
                               timing.last_s - timing.first_s)
        return raw, completion

    async def _post_whole(self, client: openai.AsyncOpenAI, body: dict[str, Any],
                          headers: dict[str, str] | None, timeout_s: float | None) -> Any:
        """A reply read whole, within the deadline a streamed one would have (httpx's timeout
        is per read: a body that trickles in would never end it)."""
        prompt = self.throughput.prompt_tokens.estimate([m["content"] for m in body["messages"]])
        floor = timeout_s or self.config.timeout_s
        deadline = self._reply_s(prompt, self._limit_of(body), floor)
        # A whole reply's first byte comes when the server has written all of it. Read whole
        # because the user asked (stream=false), each read has `timeout_s`, as documented;
        # read whole because the server's streams carry no usage, rt4chart chose it, and a
        # slow server's reply may take its whole deadline (measured from its whole replies).
        per_read = floor if not self.config.stream else deadline
        try:
            async with asyncio.timeout(deadline):
                return await post_whole(client, body, headers, per_read)
        except TimeoutError:
            request = httpx.Request("POST", str(client.base_url).rstrip("/") +
                                    "/chat/completions")
            raise Overdue(request, 0, deadline) from None

    def _reply_s(self, prompt: int, limit: int, floor: float) -> float:
        """One reply's deadline (endpoint_speed.EndpointSpeed.reply_s), never past the call's
        own deadline when one is set."""
        reply_s = self.speed.reply_s(prompt, limit, floor, self.config.idle_timeout_s)
        return min(reply_s, self._deadline_s) if self._deadline_s else reply_s

    def _limit_of(self, body: dict[str, Any]) -> int:
        """The output limit a request carries (the judge's budget when it carries none)."""
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        return limit if isinstance(limit, int) and limit > 0 else self.config.max_output_tokens

    def _token(self) -> None:
        # A token of a streamed reply (not whitespace): the endpoint works. The call's deadline
        # is not restarted: a server that drips tokens forever must still end the call.
        self.speed.token()
        self._breaker.success()

    def _read_whole(self, why: str) -> None:
        fix = unstreamed(self.capabilities, why)
        if fix is not None:
            self.capabilities, change = fix
            logger.warning("%s", change)

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
            retry=_should_retry,
            wait=_Backoff(self.config.backoff_initial_s, self.config.backoff_max_s,
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
