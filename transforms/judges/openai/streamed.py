"""A chat completion read as a stream, with an idle timeout between its tokens.

A whole-reply timeout cannot tell a server that is slow but working from one that has stopped:
a local model server on a busy machine writes a long reply slower than any fixed timeout
allows, and every call fails although every call would have finished. Read as a stream
(``stream: true``), a reply shows its progress: it may take as long as it keeps producing
tokens, and fails only when it stops, once no token has come for the idle timeout (the first
token, which comes after the server has read the prompt, has a wait of its own, see
endpoint_speed.EndpointSpeed.first_token_s). Output is bounded anyway by the request's
output-token limit.

The chunks are assembled into the same shape as a chat completion (choices[0].message.content,
refusal, finish_reason, logprobs.content, usage), so the judge reads both paths alike. The usage
report comes in the last chunk when the endpoint honours ``stream_options.include_usage``;
without it the usage is unknown (never guessed for costs), and the chunks counted give the
speed. A server that ignores ``stream`` and answers with one JSON body is read as that body.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import httpx
import openai
import pydantic
from openai.types.chat import ChatCompletion

from rt4chart.transforms.judges.openai.faults import (
    REASON_CHARS,
    NotACompletion,
    Stalled,
)


@dataclass
class Waits:
    """How long a streamed reply may wait: for its first token, then between two tokens."""

    first_token_s: float
    idle_s: float


@dataclass
class Timing:
    """When a streamed reply's tokens came (seconds from the request)."""

    first_s: float | None = None
    last_s: float | None = None
    tokens: int = 0  # chunks that carried a token (content, refusal or a logprob)


@dataclass
class Assembled:
    """The chunks of one reply, joined."""

    content: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    logprobs: list[Any] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Any = None
    model: str | None = None

    def add(self, chunk: Any) -> bool:
        """Fold one chunk in; whether it carried a token."""
        if getattr(chunk, "usage", None) is not None:
            self.usage = chunk.usage
        self.model = getattr(chunk, "model", None) or self.model
        choices = getattr(chunk, "choices", None) or []
        if not choices:
            return False
        choice = choices[0]
        delta = getattr(choice, "delta", None)
        text = getattr(delta, "content", None) or ""
        refusal = getattr(delta, "refusal", None) or ""
        self.content.append(text)
        self.refusal.append(refusal)
        tokens = getattr(getattr(choice, "logprobs", None), "content", None) or []
        self.logprobs.extend(tokens)
        if getattr(choice, "finish_reason", None):
            self.finish_reason = choice.finish_reason
        return bool(text or refusal or tokens)

    def completion(self) -> Any:
        """The reply as a chat completion's attributes."""
        content, refusal = "".join(self.content), "".join(self.refusal)
        if self.finish_reason is None:  # the connection closed before the reply ended
            raise NotACompletion(f"the streamed reply ended after {len(content)} characters "
                                 "without a finish reason (the connection closed mid-reply)")
        message = SimpleNamespace(role="assistant", content=content or None,
                                  refusal=refusal or None)
        logprobs = SimpleNamespace(content=self.logprobs) if self.logprobs else None
        choice = SimpleNamespace(index=0, message=message, finish_reason=self.finish_reason,
                                 logprobs=logprobs)
        return SimpleNamespace(choices=[choice], usage=self.usage, model=self.model)


def stream_body(body: dict[str, Any]) -> dict[str, Any]:
    """The request as streamed, with the usage report asked for."""
    return {**body, "stream": True, "stream_options": {"include_usage": True}}


def is_event_stream(headers: Any) -> bool:
    return str(headers.get("content-type", "")).split(";")[0].strip() == "text/event-stream"


async def read(client: openai.AsyncOpenAI, create: Any, waits: Waits,
               on_token: Any = None) -> tuple[Any, Timing, Any]:
    """Send (`create()`: the raw-response call with ``stream: true``) and read the reply.

    Returns (the raw response, the timing, the completion); the timing has no token when the
    server answered with one JSON body instead of a stream (`is_event_stream` says which).
    Raises Stalled when the first token or the next one does not come in time (the connection
    is closed), NotACompletion for a stream that is not one, and the openai errors of the
    request itself."""
    started, timing, got = asyncio.get_running_loop().time(), Timing(), Assembled()
    raw = None
    try:
        async with asyncio.timeout(waits.first_token_s) as limit:
            raw = await create()
            if not is_event_stream(raw.headers):  # one JSON body, read within the same wait
                return raw, timing, await whole_reply(raw)
            await _chunks(raw, got, timing, started, lambda at: limit.reschedule(
                at + waits.idle_s), on_token)
    except TimeoutError:
        await _close(raw)
        waited = waits.idle_s if timing.tokens else waits.first_token_s
        raise Stalled(_request(client, raw), timing.tokens, waited) from None
    except NotACompletion:  # a whole body that is not a completion: its own reason
        await _close(raw)
        raise
    except ValueError as exc:  # a data line that is not JSON
        await _close(raw)
        raise NotACompletion(f"the streamed reply is not chat completion chunks: "
                             f"{str(exc)[:REASON_CHARS]}") from None
    except BaseException:  # cancelled (the call's deadline), or the stream's own error
        await _close(raw)  # the connection goes back, not left to the garbage collector
        raise
    return raw, timing, got.completion()


async def _chunks(raw: Any, got: Assembled, timing: Timing, started: float,
                  token_at: Any, on_token: Any) -> None:
    """Fold the stream's chunks into `got`; each token restarts the idle wait (`token_at`)."""
    loop = asyncio.get_running_loop()
    async for chunk in raw.parse():
        if not got.add(chunk):
            continue
        now = loop.time()
        timing.tokens += 1
        timing.last_s = now - started
        if timing.first_s is None:
            timing.first_s = timing.last_s
        if on_token is not None:
            on_token()
        token_at(now)


async def _close(raw: Any) -> None:
    if raw is not None:
        await asyncio.shield(raw.http_response.aclose())


def _request(client: openai.AsyncOpenAI, raw: Any) -> httpx.Request:
    if raw is not None:
        return raw.http_response.request
    return httpx.Request("POST", str(client.base_url).rstrip("/") + "/chat/completions")


async def whole_reply(raw: Any) -> Any:
    """The chat completion of a server that answered ``stream: true`` with one JSON body."""
    response = raw.http_response
    await response.aread()
    try:
        return ChatCompletion.model_validate(response.json())
    except (ValueError, pydantic.ValidationError):
        kind = response.headers.get("content-type", "no content type").split(";")[0].strip()
        text = " ".join(response.text.split())
        raise NotACompletion(f"HTTP {response.status_code} reply is not a chat completion "
                             f"({kind}): {text[:REASON_CHARS]!r}") from None

