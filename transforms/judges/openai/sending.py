"""The HTTP side of the openai judge: one attempt at a call, sent as the endpoint accepts it
(fields it refuses are dropped and the call sent again), read as a stream or whole within the
deadlines of the endpoint's measured speed (endpoint_speed), with the provider's rate-limit
headers honoured; a failed attempt tells the circuit breaker only when the endpoint is down,
not slow (liveness).

`Sending` is a part of `OpenAIJudge` (judge.py), which owns the state it reads: config,
capabilities, speed, breaker, limiter, semaphore and throughput.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

import httpx
import openai

from rt4chart.transforms.common.redact import redact
from rt4chart.transforms.judges.base import JudgeError, queued
from rt4chart.transforms.judges.openai.capabilities import (
    MAX_CORRECTIONS,
    corrected,
    error_text,
    unstreamed,
)
from rt4chart.transforms.judges.openai.faults import (
    MESSAGE_CHARS,
    Overdue,
    Stalled,
    completion_of,
    is_endpoint_failure,
)
from rt4chart.transforms.judges.openai.limits.rate import exhausted_for, retry_after_seconds
from rt4chart.transforms.judges.openai.liveness import answers_health_check, timed_out
from rt4chart.transforms.judges.openai.prefix_gate import mark_sent
from rt4chart.transforms.judges.openai.pricing import token_count
from rt4chart.transforms.judges.openai.reply_size import reply_cap
from rt4chart.transforms.judges.openai.reply_view import post_whole, read_body, split_request
from rt4chart.transforms.judges.openai.streamed import Waits, is_event_stream, read, stream_body

logger = logging.getLogger("rt4chart.transforms.judges.openai.judge")


class Sending:
    """One attempt at a call, and what it tells the judge's state (module docstring)."""

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
