"""A chat completion read as a stream: an idle timeout between its tokens, a deadline for the
whole reply and a cap on its size.

A whole-reply timeout cannot tell a server that is slow but working from one that has stopped:
a local model server on a busy machine writes a long reply slower than any fixed timeout
allows, and every call fails although every call would have finished. Read as a stream
(``stream: true``), a reply shows its progress, and ends in one of three ways besides its
finish reason:

- **idle**: no token for the idle timeout (the first token, which comes after the server has
  read the prompt, has a wait of its own, see endpoint_speed.EndpointSpeed.first_token_s,
  cut to the idle timeout once the server writes anything). Only a chunk with text that is
  not whitespace (or a refusal) is progress: keep-alives, empty chunks and whitespace-only
  tokens (a model looping on line breaks inside its JSON) restart nothing (Stalled);
- **deadline**: the reply is not over `Waits.reply_s` after the request (from the endpoint's
  speed and the reply's token limit, endpoint_speed.EndpointSpeed.reply_s). Tokens never
  restart it: a server that drips tokens forever ends there (Overdue);
- **cap**: the reply carried more tokens or bytes than its cap (reply_size.reply_cap), which
  a server that honours the output limit never reaches (Overlong).

The chunks are assembled into the same shape as a chat completion (choices[0].message.content,
refusal, finish_reason, logprobs.content, usage), so the judge reads both paths alike. The usage
report comes in the last chunk when the endpoint honours ``stream_options.include_usage``;
without it the usage is unknown (never guessed for costs), and the chunks counted give the
speed. A server that ignores ``stream`` and answers with one JSON body is read as that body,
within the same deadline.
"""

from __future__ import annotations

import asyncio
import math
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
    Overdue,
    Overlong,
    Stalled,
)
from rt4chart.transforms.judges.openai.reply_size import ReplyCap


@dataclass
class Waits:
    """How long a streamed reply may wait: for its first token, then between two tokens, and
    in all (`reply_s`, from the request: its deadline)."""

    first_token_s: float
    idle_s: float
    reply_s: float = math.inf


@dataclass
class Timing:
    """When a streamed reply's tokens came (seconds from the request), and how much came."""

    first_s: float | None = None
    last_s: float | None = None
    tokens: int = 0  # chunks that were progress (text that is not whitespace, or a refusal)
    blank: int = 0  # chunks of whitespace-only tokens (not progress; nor are empty chunks)
    written: int = 0  # tokens of any kind (the cap's count)
    size: int = 0  # bytes of text (the cap's other count)


@dataclass(frozen=True)
class Piece:
    """What one chunk carried: its tokens, its text's bytes, and whether it is progress."""

    tokens: int = 0
    size: int = 0
    progress: bool = False


@dataclass
class Assembled:
    """The chunks of one reply, joined."""

    content: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    logprobs: list[Any] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Any = None
    model: str | None = None

    def add(self, chunk: Any) -> Piece:
        """Fold one chunk in; what it carried."""
        if getattr(chunk, "usage", None) is not None:
            self.usage = chunk.usage
        self.model = getattr(chunk, "model", None) or self.model
        choices = getattr(chunk, "choices", None) or []
        if not choices:
            return Piece()
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
        count = len(tokens) or int(bool(text or refusal))  # a chunk may carry several
        size = len(text.encode("utf-8", "replace")) + len(refusal.encode("utf-8", "replace"))
        return Piece(count, size, bool(text.strip() or refusal.strip()))

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


async def read(client: openai.AsyncOpenAI, create: Any, waits: Waits, cap: ReplyCap,
               on_token: Any = None) -> tuple[Any, Timing, Any]:
    """Send (`create()`: the raw-response call with ``stream: true``) and read the reply.

    Returns (the raw response, the timing, the completion); the timing has no token when the
    server answered with one JSON body instead of a stream (`is_event_stream` says which).
    Raises Stalled when the first token or the next one does not come in time, Overdue when
    the reply is not over by its deadline, Overlong when it passes its cap (the connection is
    closed in every case), NotACompletion for a stream that is not one, and the openai errors
    of the request itself."""
    loop = asyncio.get_running_loop()
    started, timing, got = loop.time(), Timing(), Assembled()
    end = started + waits.reply_s
    raw = None
    try:
        async with asyncio.timeout_at(min(started + waits.first_token_s, end)) as limit:
            raw = await create()
            if not is_event_stream(raw.headers):  # one JSON body, read within the same wait
                return raw, timing, await whole_reply(raw)
            await _chunks(raw, got, timing, started, cap, lambda at, first=False: limit.reschedule(
                min(at + waits.idle_s, end, limit.when() if first else end)), on_token)
    except TimeoutError:
        await _close(raw)
        request = _request(client, raw)
        if loop.time() >= end:
            failed: Stalled = Overdue(request, timing.tokens, waits.reply_s, timing.blank)
        else:
            waited = waits.idle_s if timing.tokens or timing.blank else waits.first_token_s
            failed = Stalled(request, timing.tokens, waited, timing.blank)
        failed.timing = timing  # what came before the end: the judge's speed estimate
        raise failed from None
    except NotACompletion:  # a whole body that is not a completion: its own reason
        await _close(raw)
        raise
    except ValueError as exc:  # a data line that is not JSON
        await _close(raw)
        raise NotACompletion(f"the streamed reply is not chat completion chunks: "
                             f"{str(exc)[:REASON_CHARS]}") from None
    except BaseException:  # cancelled (the call's deadline), the cap, or the stream's error
        await _close(raw)  # the connection goes back, not left to the garbage collector
        raise
    return raw, timing, got.completion()


async def _chunks(raw: Any, got: Assembled, timing: Timing, started: float, cap: ReplyCap,
                  token_at: Any, on_token: Any) -> None:
    """Fold the stream's chunks into `got`; each token of progress restarts the idle wait
    (`token_at`), and every token counts against the cap."""
    loop = asyncio.get_running_loop()
    async for chunk in raw.parse():
        piece = got.add(chunk)
        timing.written += piece.tokens
        timing.size += piece.size
        if cap.exceeded(timing.written, timing.size):
            raise Overlong(f"the reply passed its cap of {cap.tokens} tokens or {cap.bytes} "
                           f"bytes ({timing.written} tokens, {timing.size} bytes, "
                           f"{timing.blank} of them whitespace only): the server does "
                           "not honour the output limit, or the model loops; the call was "
                           "ended")
        if not piece.progress:
            if piece.tokens and not timing.blank and not timing.tokens:
                # The server writes, so it has read the prompt: from its first token, even
                # whitespace, the first token of progress has the idle wait (never longer).
                token_at(loop.time(), first=True)
            timing.blank += piece.tokens > 0  # keep-alives and role chunks are not counted
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

