"""A chat completion sent as a stream of chunks (server-sent events), as OpenAI-compatible
servers answer ``stream: true``: one chunk per token (its logprob with it when asked), then the
finish reason, then, with ``stream_options.include_usage``, a chunk with the usage and no
choices, then ``data: [DONE]``. The pace is the test's: a delay before the first token (the
prompt being read), one between tokens, and a stall (no token for a while, then the connection
closed) after a number of tokens; or a server that never finishes (`Pace.drip`): the same
token, one every `token_s`, until the client goes away, with SSE keep-alive comments between."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


@dataclass(frozen=True)
class Pace:
    """How a fake server streams: `first_s` before the first token, `token_s` between tokens;
    after `stall_after` tokens (None: never) nothing for `stall_s`, then the connection ends
    without the rest."""

    first_s: float = 0.0
    token_s: float = 0.0
    stall_after: int | None = None
    stall_s: float = 0.0
    drip: str | None = None  # the token a server that never finishes sends forever


def drip_forever(handler: Any, completion: dict, pace: Pace) -> None:
    """After the first chunk, `pace.drip` every `pace.token_s` (with a keep-alive comment and
    an empty chunk between two), never a finish reason, until the client goes away."""
    head = {k: completion[k] for k in ("id", "created", "model")}
    head["object"] = "chat.completion.chunk"
    token = {**head, "choices": [{"index": 0, "delta": {"content": pace.drip},
                                  "finish_reason": None}]}
    empty = {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": None}]}
    line = f"data: {json.dumps(token)}\n\n".encode()
    between = b": keep-alive\n\n" + f"data: {json.dumps(empty)}\n\n".encode()
    time.sleep(pace.first_s)
    while True:
        handler.wfile.write(line)
        handler.wfile.flush()
        time.sleep(pace.token_s / 2)
        handler.wfile.write(between)
        handler.wfile.flush()
        time.sleep(pace.token_s / 2)


def trickle_whole(handler: Any, pace: Pace) -> None:
    """A whole (not streamed) reply that never ends: a JSON body begun, then `pace.drip`
    every `pace.token_s` (whitespace keeps it valid JSON so far), until the client goes
    away; every read of the client gets bytes, so a per-read timeout never fires."""
    handler.close_connection = True
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.send_header("connection", "close")
    handler.end_headers()
    try:
        time.sleep(pace.first_s)
        handler.wfile.write(b'{"id": "chatcmpl-drip", "object": "chat.completion", ')
        while True:
            handler.wfile.write(pace.drip.encode())
            handler.wfile.flush()
            time.sleep(pace.token_s)
    except (BrokenPipeError, ConnectionResetError):
        return


def whole_s(completion: dict, pace: Pace) -> float:
    """How long the paced server takes to write `completion` before sending it whole (a server
    asked for a whole reply takes as long to generate it); a stall: forever, as far as the
    client's timeout can tell (`stall_s`)."""
    tokens = sum(tokens_in(c) for c in chunks_of(completion, False))
    if pace.stall_after is not None and tokens > pace.stall_after:
        return pace.stall_s
    return (pace.first_s + max(0, tokens - 1) * pace.token_s) if tokens else 0.0


def chunks_of(completion: dict, include_usage: bool) -> list[dict]:
    """The chunks that stream `completion` (a chat.completion body)."""
    head = {"id": completion["id"], "object": "chat.completion.chunk",
            "created": completion["created"], "model": completion["model"]}
    choice = completion["choices"][0]
    message, logprobs = choice["message"], choice.get("logprobs")
    out = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                 "finish_reason": None}]}]
    if message.get("refusal"):
        out.append({**head, "choices": [{"index": 0, "delta": {"refusal": message["refusal"]},
                                         "finish_reason": None}]})
    entries = (logprobs or {}).get("content") or []
    pieces = [e["token"] for e in entries] if entries else TOKEN.findall(
        message.get("content") or "")
    for i, piece in enumerate(pieces):
        chunk_choice: dict[str, Any] = {"index": 0, "delta": {"content": piece},
                                        "finish_reason": None}
        if entries:
            chunk_choice["logprobs"] = {"content": [entries[i]], "refusal": None}
        out.append({**head, "choices": [chunk_choice]})
    out.append({**head, "choices": [{"index": 0, "delta": {},
                                     "finish_reason": choice["finish_reason"]}]})
    if include_usage and completion.get("usage") is not None:
        out.append({**head, "choices": [], "usage": completion["usage"]})
    return out


def tokens_in(chunk: dict) -> bool:
    choices = chunk.get("choices") or []
    delta = choices[0].get("delta", {}) if choices else {}
    return bool(delta.get("content") or delta.get("refusal"))


def send(handler: Any, completion: dict, include_usage: bool, pace: Pace,
         headers: dict[str, str] | None = None) -> None:
    """Write `completion` as a stream to an http.server handler (the connection then
    closes), with the reply's own `headers` (rate-limit headers, for instance)."""
    handler.close_connection = True
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream; charset=utf-8")
    handler.send_header("cache-control", "no-cache")
    handler.send_header("connection", "close")
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.flush()
    sent = 0
    try:
        if pace.drip is not None:
            first = chunks_of(completion, include_usage)[0]  # the role, no content
            handler.wfile.write(f"data: {json.dumps(first)}\n\n".encode())
            drip_forever(handler, completion, pace)
        for chunk in chunks_of(completion, include_usage):
            if tokens_in(chunk):
                if pace.stall_after is not None and sent >= pace.stall_after:
                    time.sleep(pace.stall_s)
                    return  # the reply stops here: no finish reason, no [DONE]
                time.sleep(pace.first_s if sent == 0 else pace.token_s)
                sent += 1
            handler.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            handler.wfile.flush()
        handler.wfile.write(b"data: [DONE]\n\n")
        handler.wfile.flush()
    except (BrokenPipeError, ConnectionResetError):
        return  # the client gave up (its idle timeout): nothing more to send
