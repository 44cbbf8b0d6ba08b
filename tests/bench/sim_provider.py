"""A simulated OpenAI-compatible provider with real rate limits, latency and prompt caching.

    with SimProvider(rpm=500, tpm=200_000, latency=LatencyModel(0.8, 2.5)) as sim:
        ... point a client at sim.base_url ...
        figures = sim.stats()

`POST /v1/chat/completions` is answered like OpenAI answers it:

- **Content**: `fake_openai_server.lexical_responder` (a deterministic lexical "model"; answers
  are memoised by prompt, so repeated traces cost the simulator little), with token
  log-probabilities when the request asks for `logprobs` (as `FakeOpenAI` gives them).
- **Cut-off replies**: a reply of `max_completion_tokens` (or `max_tokens`) tokens or more is
  cut there, with `finish_reason` "length", as the provider cuts it.
- **Token counting**: `tokenizer="chars4"` (default) counts each message's content as
  ceil(chars / 4) plus 3 tokens per message and 3 to prime the reply (the overhead tiktoken-based
  counting adds for chat messages); `tokenizer="pretok"` approximates a BPE tokenizer by
  splitting text like GPT-4's pre-tokenizer (words with their leading space, numbers in groups
  of three, punctuation runs) and counting long words as ceil(len / 6) tokens: it counts more
  than chars / 4 on JSON and numbers, as real tokenizers do.
- **Rate limits**: sliding windows of `window_s` seconds (60 by default) over admitted requests
  and admitted tokens; a request is admitted only if both still fit: at most
  `rpm * window_s / 60` requests and `tpm * window_s / 60` tokens in any window, where a
  request's tokens are its prompt tokens plus `max_completion_tokens` (or `max_tokens`, else
  4096), as OpenAI counts them at admission. Otherwise 429 (`type` "requests" or "tokens") with
  `retry-after` (whole seconds, rounded up), `retry-after-ms` (the time until the request would
  fit). Every response carries `x-ratelimit-limit-requests/-tokens`,
  `x-ratelimit-remaining-requests/-tokens` and `x-ratelimit-reset-requests/-tokens`, the reset
  being, as OpenAI documents it, the time until that budget is back to its initial (full) state,
  formatted like OpenAI ("120ms", "8.64s", "1m0s"). `enforce=False` counts without rejecting
  (to see whether a client holds the limit by itself).
- **Prompt caching**: the prompt (messages in order, `role` and `content`) is hashed in blocks of
  tokens; a prompt whose first 1024 + 128k tokens equal those of a prompt answered in the last
  `cache_ttl_s` seconds (with the same `prompt_cache_key` if the request gives one, else any)
  reports that many `prompt_tokens_details.cached_tokens`, as OpenAI does. Like the provider,
  it caches only prompts it has finished processing: a prompt's prefixes are stored when its
  answer is sent, so requests sent together with the first one of a prefix find nothing.
- **Latency**: `LatencyModel`: lognormal with the given median and 95th percentile, plus a time
  per output token, drawn per request number from a seed (deterministic); 429s are answered
  after `reject_s`.

Counters (`stats()`): requests, 429s by kind, admitted requests and tokens, prompt, cached and
completion tokens, per-minute admitted counts, the largest number of requests and tokens
admitted (and attempted, 429s included) in any sliding 60 s window, in-flight requests, the
server process's CPU time, and (`stats(timeline=True)`) one row per request.

`SimProvider(..., process=True)` runs the server in a child process (`python sim_provider.py
--serve CONFIG`), so that it does not share the interpreter lock with the client being measured;
`stats()` then reads `GET /sim/stats`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import subprocess
import sys
import threading
import time
import urllib.request
from bisect import bisect_right
from collections import deque
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE.parent / "fakes") not in sys.path:
    sys.path.insert(0, str(HERE.parent / "fakes"))

from fake_openai_server import FakeOpenAI, lexical_responder  # noqa: E402

Z95 = 1.6448536269514722  # standard normal 95th percentile
CACHE_MIN_TOKENS = 1024
CACHE_BLOCK_TOKENS = 128
DEFAULT_MAX_TOKENS = 4096


# ---------------------------------------------------------------- latency


@dataclass(frozen=True)
class LatencyModel:
    """Seconds before an answer: lognormal(median, p95) + per_output_token_s x output tokens."""

    median_s: float = 0.8
    p95_s: float = 2.5
    per_output_token_s: float = 0.0
    reject_s: float = 0.0  # how long a 429 takes
    seed: int = 0

    def __post_init__(self) -> None:
        if self.median_s < 0 or self.p95_s < self.median_s or self.per_output_token_s < 0:
            raise ValueError(f"bad latency model {self}: need 0 <= median <= p95")

    @classmethod
    def instant(cls) -> LatencyModel:
        return cls(0.0, 0.0)

    @property
    def sigma(self) -> float:
        if self.median_s <= 0:
            return 0.0
        return math.log(self.p95_s / self.median_s) / Z95

    def base(self, n: int) -> float:
        """The lognormal part for request number n (the same n and seed, the same draw)."""
        if self.median_s <= 0:
            return 0.0
        z = random.Random(self.seed * 1_000_003 + n).gauss(0.0, 1.0)
        return self.median_s * math.exp(self.sigma * z)

    def total(self, n: int, output_tokens: int) -> float:
        return self.base(n) + self.per_output_token_s * output_tokens


# ---------------------------------------------------------------- tokens

# GPT-4-like pre-tokenisation: contractions, words with their leading space, 1-3 digit groups,
# punctuation runs, whitespace.
_PRETOK = re.compile(
    r"'(?:s|t|re|ve|m|ll|d)| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+(?!\S)|\s+|_+", re.UNICODE)


def token_ends(text: str, tokenizer: str) -> list[int] | None:
    """Character offsets where tokens end (None for chars4, whose tokens are 4 chars)."""
    if tokenizer == "chars4":
        return None
    if tokenizer != "pretok":
        raise ValueError(f"unknown tokenizer {tokenizer!r} (chars4 or pretok)")
    ends = []
    for m in _PRETOK.finditer(text):
        start, end = m.span()
        n = max(1, math.ceil((end - start - 1) / 6)) if end - start > 7 else 1
        step = (end - start) / n
        ends.extend(round(start + step * (i + 1)) for i in range(n))
    return ends


def count_tokens(text: str, tokenizer: str) -> int:
    if tokenizer == "chars4":
        return math.ceil(len(text) / 4)
    return len(token_ends(text, tokenizer) or [])


def cut(text: str, tokens: int, tokenizer: str) -> str:
    """The first `tokens` tokens of a text."""
    ends = token_ends(text, tokenizer)
    if ends is None:
        return text[: tokens * 4]
    if tokens <= 0:
        return ""
    return text[: ends[tokens - 1]] if tokens <= len(ends) else text


def prompt_text(messages: list[dict]) -> str:
    return "".join(f"<|{m.get('role', '')}|>{_content(m)}<|end|>" for m in messages)


def _content(message: dict) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def _prompt_id(messages: list[dict]) -> str:
    """A short hash of the messages: the same prompt sent again (a retry) has the same id."""
    return hashlib.blake2b(prompt_text(messages).encode(), digest_size=6).hexdigest()


def prompt_tokens(messages: list[dict], tokenizer: str) -> int:
    return sum(count_tokens(_content(m), tokenizer) + 3 for m in messages) + 3


# ---------------------------------------------------------------- limits


class SlidingWindow:
    """Amounts admitted in the last `window_s` seconds, against `limit`."""

    def __init__(self, limit: float, window_s: float):
        self.limit, self.window_s = limit, window_s
        self._log: deque[tuple[float, float]] = deque()
        self.total = 0.0

    def _expire(self, now: float) -> None:
        while self._log and self._log[0][0] <= now - self.window_s:
            self.total -= self._log.popleft()[1]

    def fits(self, now: float, amount: float) -> bool:
        self._expire(now)
        return self.total + amount <= self.limit + 1e-9

    def add(self, now: float, amount: float) -> None:
        self._log.append((now, amount))
        self.total += amount

    def wait_for(self, now: float, amount: float) -> float:
        """Seconds until `amount` more would fit (inf if it never can)."""
        self._expire(now)
        if amount > self.limit:
            return math.inf
        excess = self.total + amount - self.limit
        if excess <= 0:
            return 0.0
        for t, a in self._log:
            excess -= a
            if excess <= 1e-9:
                return max(0.0, t + self.window_s - now)
        return self.window_s

    def remaining(self, now: float) -> float:
        self._expire(now)
        return max(0.0, self.limit - self.total)

    def reset_s(self, now: float) -> float:
        """Seconds until the window is empty again (the budget back to its initial state)."""
        self._expire(now)
        return max(0.0, self._log[-1][0] + self.window_s - now) if self._log else 0.0


def _num(x: float) -> str:
    """A limit as a header shows it: 1000000, not 1e+06."""
    return str(int(x)) if float(x).is_integer() else f"{x:.6f}".rstrip("0")


def format_duration(seconds: float) -> str:
    """As OpenAI formats x-ratelimit-reset-*: "250ms", "1.2s", "6m0s"."""
    if seconds < 1:
        return f"{max(0, math.ceil(seconds * 1000))}ms"
    if seconds < 60:
        return f"{math.ceil(seconds * 1000) / 1000:g}s"
    minutes = int(seconds // 60)
    return f"{minutes}m{math.ceil((seconds - 60 * minutes) * 1000) / 1000:g}s"


# ---------------------------------------------------------------- prompt cache


class PrefixCache:
    """Prefixes of 1024 + 128k tokens seen recently, as hashes of block-aligned prefixes."""

    def __init__(self, ttl_s: float, tokenizer: str):
        self.ttl_s, self.tokenizer = ttl_s, tokenizer
        self._seen: dict[tuple[str, bytes], float] = {}
        self._last_sweep = 0.0

    def _boundaries(self, text: str) -> list[tuple[int, int]]:
        """(tokens, char offset) of each cacheable prefix length, shortest first."""
        ends = token_ends(text, self.tokenizer)
        total = len(ends) if ends is not None else math.ceil(len(text) / 4)
        out = []
        for n in range(CACHE_MIN_TOKENS, total + 1, CACHE_BLOCK_TOKENS):
            out.append((n, ends[n - 1] if ends is not None else min(len(text), 4 * n)))
        return out

    def _digests(self, text: str) -> list[tuple[int, bytes]]:
        h = hashlib.blake2b(digest_size=16)
        pos, out = 0, []
        for n, end in self._boundaries(text):
            h.update(text[pos:end].encode())
            pos = end
            out.append((n, h.copy().digest()))
        return out

    def lookup(self, now: float, text: str, key: str | None) -> int:
        """Cached tokens for this prompt (the longest cached block-aligned prefix)."""
        pool = "*" if key is None else f"k:{key}"
        cached = 0
        for n, digest in self._digests(text):
            seen = self._seen.get((pool, digest))
            if seen is None or now - seen > self.ttl_s:
                break
            cached = n
        return cached

    def store(self, now: float, text: str, key: str | None) -> None:
        """Remember a processed prompt's prefixes."""
        pools = ["*"] if key is None else [f"k:{key}", "*"]
        for _, digest in self._digests(text):
            for pool in pools:
                self._seen[(pool, digest)] = now
        if now - self._last_sweep > 60:
            self._last_sweep = now
            self._seen = {k: t for k, t in self._seen.items() if now - t <= self.ttl_s}

    def lookup_and_store(self, now: float, text: str, key: str | None) -> int:
        """Cached tokens for this prompt; then remember its prefixes (at once)."""
        cached = self.lookup(now, text, key)
        self.store(now, text, key)
        return cached


# ---------------------------------------------------------------- the simulated provider

TIMELINE_COLUMNS = ("arrival_s", "done_s", "status", "prompt_tokens", "cached_tokens",
                    "completion_tokens", "admitted_tokens", "requested_tokens", "rejected_for",
                    "prompt_id", "stage")


def stage_of(body: dict) -> str:
    """Which rt4chart stage a request comes from (by its schema and prompt tags)."""
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("name", "")
    if schema == "verify":
        user = _content((body.get("messages") or [{}])[-1])
        return "verify_local" if "<passage>" in user else "verify_global"
    return {"verify_many": "verify_local", "decompose": "decompose"}.get(schema, schema or "?")


@dataclass
class SimConfig:
    rpm: float = 500
    tpm: float = 200_000
    latency: LatencyModel = field(default_factory=LatencyModel)
    window_s: float = 60.0
    enforce: bool = True
    cache: bool = True
    cache_ttl_s: float = 600.0
    tokenizer: str = "chars4"
    record_replies: bool = False  # keep (schema, user message, reply tokens) of each answer
    record_requests: bool = False  # keep every admitted request's body (to replay it elsewhere)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> SimConfig:
        raw = json.loads(text)
        raw["latency"] = LatencyModel(**raw["latency"])
        return cls(**raw)


class SimCore:
    """Admission, answers and counters (no HTTP): thread-safe."""

    def __init__(self, config: SimConfig, responder=None):
        self.config = config
        self.responder = responder
        scale = config.window_s / 60.0
        self._requests = SlidingWindow(config.rpm * scale, config.window_s)
        self._tokens = SlidingWindow(config.tpm * scale, config.window_s)
        self._cache = PrefixCache(config.cache_ttl_s, config.tokenizer) if config.cache else None
        self._lock = threading.Lock()
        self._memo: dict[tuple[str, str], str] = {}
        self.t0 = time.monotonic()
        self.t0_wall = time.time()
        self.n = 0
        self.in_flight = 0
        self.max_in_flight = 0
        # one row per request: arrival, done, status, prompt, cached, completion, admitted tokens
        self.timeline: list[list[Any]] = []
        self.replies: list[list[Any]] = []  # with record_replies
        self.requests: list[dict] = []  # with record_requests
        self.label_probs = lambda body, label: {x: 0.9 if x == label else 0.05
                                                for x in ("ENT", "CON", "NIC")}

    # -- admission

    def admit(self, body: dict) -> tuple[int, int, dict[str, str], dict | None, list]:
        """(request number, prompt tokens, headers, 429 error body or None, timeline row)."""
        cfg = self.config
        messages = body.get("messages") or []
        prompt = prompt_tokens(messages, cfg.tokenizer)
        max_out = body.get("max_completion_tokens") or body.get("max_tokens") or DEFAULT_MAX_TOKENS
        cost = prompt + int(max_out)
        with self._lock:
            now = time.monotonic()
            self.n += 1
            n = self.n
            ok_r = self._requests.fits(now, 1)
            ok_t = self._tokens.fits(now, cost)
            admitted = (ok_r and ok_t) or not cfg.enforce
            if admitted:
                if cfg.record_requests:
                    self.requests.append(body)
                self._requests.add(now, 1)
                self._tokens.add(now, cost)
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            headers = self._headers(now)
            row = [now - self.t0, None, 200 if admitted else 429, prompt, 0, 0,
                   cost if admitted else 0, cost, "", _prompt_id(messages), stage_of(body)]
            self.timeline.append(row)
            if admitted:
                return n, prompt, headers, None, row
            wait = max(self._requests.wait_for(now, 1) if not ok_r else 0.0,
                       self._tokens.wait_for(now, cost) if not ok_t else 0.0)
        kind = "requests" if not ok_r else "tokens"
        row[8] = kind
        if math.isinf(wait):
            message = (f"Request too large for {body.get('model')} on tokens per min (TPM): "
                       f"Limit {_num(cfg.tpm)}, Requested {cost}.")
            wait = cfg.window_s
        else:
            used = self._requests.total if kind == "requests" else self._tokens.total
            limit = cfg.rpm if kind == "requests" else cfg.tpm
            unit = "RPM" if kind == "requests" else "TPM"
            asked = 1 if kind == "requests" else cost
            message = (f"Rate limit reached for {body.get('model')} on {kind} per min ({unit}): "
                       f"Limit {_num(limit)}, Used {_num(used)}, Requested {asked}. "
                       f"Please try again in {format_duration(wait)}.")
        headers["retry-after"] = str(max(1, math.ceil(wait)))
        headers["retry-after-ms"] = str(math.ceil(wait * 1000))
        error = {"error": {"message": message, "type": kind, "param": None,
                           "code": "rate_limit_exceeded"}}
        return n, prompt, headers, error, row

    def _headers(self, now: float) -> dict[str, str]:
        r, t = self._requests, self._tokens
        return {
            "x-ratelimit-limit-requests": _num(self.config.rpm),
            "x-ratelimit-limit-tokens": _num(self.config.tpm),
            "x-ratelimit-remaining-requests": str(int(r.remaining(now))),
            "x-ratelimit-remaining-tokens": str(int(t.remaining(now))),
            "x-ratelimit-reset-requests": format_duration(r.reset_s(now)),
            "x-ratelimit-reset-tokens": format_duration(t.reset_s(now)),
        }

    # -- answers

    def content(self, body: dict) -> str:
        if self.responder is not None:
            answer = self.responder(body)
            return answer if isinstance(answer, str) else json.dumps(answer)
        schema = body["response_format"]["json_schema"]["name"]
        key = (schema, _content(body["messages"][-1]))
        text = self._memo.get(key)
        if text is None:
            text = json.dumps(lexical_responder(body))
            if len(self._memo) > 200_000:
                self._memo.clear()
            self._memo[key] = text
        return text

    def complete(self, n: int, body: dict, prompt: int, row: list) -> tuple[dict, float]:
        """The completion body and the latency to wait before sending it."""
        text = self.content(body)
        completion = count_tokens(text, self.config.tokenizer)
        if self.config.record_replies:
            fmt = body.get("response_format") or {}
            with self._lock:
                self.replies.append([(fmt.get("json_schema") or {}).get("name", ""),
                                     _content((body.get("messages") or [{}])[-1]),
                                     completion])
        max_out = int(body.get("max_completion_tokens") or body.get("max_tokens")
                      or DEFAULT_MAX_TOKENS)
        finish = "stop"
        if completion >= max_out:  # cut off at the reservation, as the provider cuts a reply
            text, completion, finish = cut(text, max_out, self.config.tokenizer), max_out, "length"
        cached = 0
        if self._cache is not None:
            prompt_str = prompt_text(body.get("messages") or [])
            key = body.get("prompt_cache_key")
            with self._lock:
                cached = self._cache.lookup(time.monotonic(), prompt_str, key)
            row.append((prompt_str, key))  # stored when answered (`done`)
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish, "logprobs": None,
                                  "message": {"role": "assistant", "content": text,
                                              "refusal": None}}
        if body.get("logprobs"):
            # FakeOpenAI's logprobs, with this object standing in for it (only label_probs used)
            choice["logprobs"] = FakeOpenAI._logprobs(self, body, text)
        row[4], row[5] = cached, completion
        payload = {
            "id": f"chatcmpl-sim-{n}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "sim"), "choices": [choice],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion,
                      "prompt_tokens_details": {"cached_tokens": cached},
                      "completion_tokens_details": {"reasoning_tokens": 0}},
        }
        return payload, self.config.latency.total(n, completion)

    def done(self, row: list) -> None:
        with self._lock:
            now = time.monotonic()
            row[1] = now - self.t0
            if row[2] == 200:
                self.in_flight -= 1
            if len(row) > len(TIMELINE_COLUMNS):  # a processed prompt: now it is cached
                text, key = row.pop()
                if row[2] == 200 and self._cache is not None:
                    self._cache.store(now, text, key)

    # -- counters

    def stats(self, timeline: bool = False, replies: bool = False,
              requests: bool = False) -> dict:
        with self._lock:
            rows = [list(r[:len(TIMELINE_COLUMNS)]) for r in self.timeline]
        ok = [r for r in rows if r[2] == 200]
        per_minute: dict[int, list[int]] = {}
        for r in rows:
            m = per_minute.setdefault(int(r[0] // 60), [0, 0, 0])
            if r[2] == 200:
                m[0] += 1
                m[1] += r[6]
            else:
                m[2] += 1
        cpu = os.times()
        out = {
            "config": json.loads(self.config.to_json()),
            "t0_wall": self.t0_wall,
            "requests": len(rows), "ok": len(ok),
            "rejected_429": len(rows) - len(ok),
            "rejected_429_by_kind": self._rejections(rows),
            "admitted_tokens": sum(r[6] for r in ok),
            "prompt_tokens": sum(r[3] for r in ok), "cached_tokens": sum(r[4] for r in ok),
            "completion_tokens": sum(r[5] for r in ok),
            "first_s": rows[0][0] if rows else None,
            "last_s": max((r[1] or r[0]) for r in rows) if rows else None,
            "per_minute": [{"minute": k, "admitted_requests": v[0], "admitted_tokens": v[1],
                            "rejected": v[2]} for k, v in sorted(per_minute.items())],
            "max_60s_admitted_requests": max_in_window([r[0] for r in ok], 60.0),
            "max_60s_admitted_tokens": max_in_window([r[0] for r in ok], 60.0,
                                                     [r[6] for r in ok]),
            "max_60s_attempted_requests": max_in_window([r[0] for r in rows], 60.0),
            "max_60s_attempted_tokens": max_in_window([r[0] for r in rows], 60.0,
                                                      [r[7] for r in rows]),
            "max_in_flight": self.max_in_flight,
            "server_cpu_s": round(cpu.user + cpu.system, 3),
        }
        if timeline:
            out["timeline_columns"] = list(TIMELINE_COLUMNS)
            out["timeline"] = rows
        if replies:
            with self._lock:
                out["replies"] = [list(r) for r in self.replies]
        if requests:
            with self._lock:
                out["requests_bodies"] = list(self.requests)
        return out

    def _rejections(self, rows: list[list]) -> dict[str, int]:
        kinds: dict[str, int] = {}
        for r in rows:
            if r[2] == 429:
                kinds[r[8]] = kinds.get(r[8], 0) + 1
        return kinds


def max_in_window(times: list[float], window_s: float,
                  amounts: list[float] | None = None) -> float:
    """The largest total of `amounts` (1 each by default) in any window [t, t + window_s)."""
    order = sorted(range(len(times)), key=times.__getitem__)
    ts = [times[i] for i in order]
    am = [amounts[i] for i in order] if amounts is not None else [1] * len(ts)
    best = total = 0.0
    lo = 0
    for hi, t in enumerate(ts):
        total += am[hi]
        while ts[lo] <= t - window_s:
            total -= am[lo]
            lo += 1
        best = max(best, total)
    return int(best) if best == int(best) else best


def rate_between(times: list[float], start: float, end: float,
                 amounts: list[float] | None = None) -> float:
    """Per minute, the amounts (1 each by default) whose time is in [start, end)."""
    if end <= start:
        return 0.0
    if amounts is None:
        ts = sorted(times)
        n = bisect_right(ts, end) - bisect_right(ts, start)
        return n * 60.0 / (end - start)
    return sum(a for t, a in zip(times, amounts, strict=True) if start <= t < end) * 60.0 / (
        end - start)


# ---------------------------------------------------------------- HTTP


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024


def chat_completion(core: SimCore, raw: bytes) -> tuple[int, dict, dict[str, str]]:
    """Status, body and headers for one POST /v1/chat/completions (after its latency)."""
    try:
        body = json.loads(raw)
    except json.JSONDecodeError:
        return 400, {"error": {"message": "body is not JSON"}}, {}
    n, prompt, headers, error, row = core.admit(body)
    if error is not None:
        if core.config.latency.reject_s:
            time.sleep(core.config.latency.reject_s)
        core.done(row)
        return 429, error, headers
    started = time.monotonic()
    try:
        payload, latency = core.complete(n, body, prompt, row)
    except Exception as exc:  # noqa: BLE001 - a bad request is a 400, not a crash
        core.done(row)
        row[2] = 400
        return 400, {"error": {"message": f"{type(exc).__name__}: {exc}"}}, headers
    delay = latency - (time.monotonic() - started)
    if delay > 0:
        time.sleep(delay)
    core.done(row)
    return 200, payload, headers


def _handler(core: SimCore) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, payload: dict, headers: dict[str, str]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server API
            if self.path.startswith("/sim/stats"):
                self._send(200, core.stats(timeline="timeline=1" in self.path,
                                           replies="replies=1" in self.path,
                                           requests="requests=1" in self.path), {})
            else:
                self._send(404, {"error": {"message": "not found"}}, {})

        def do_POST(self) -> None:  # noqa: N802 - http.server API
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}}, {})
                return
            self._send(*chat_completion(core, raw))

    return Handler


class SimProvider:
    """The simulated provider on 127.0.0.1 (ephemeral port); a context manager."""

    def __init__(self, rpm: float = 500, tpm: float = 200_000,
                 latency: LatencyModel | None = None, cache: bool = True, *,
                 window_s: float = 60.0, enforce: bool = True, cache_ttl_s: float = 600.0,
                 tokenizer: str = "chars4", process: bool = False, responder=None,
                 record_replies: bool = False, record_requests: bool = False):
        if rpm <= 0 or tpm <= 0 or window_s <= 0:
            raise ValueError("rpm, tpm and window_s must be positive")
        token_ends("", tokenizer) if tokenizer != "chars4" else None
        self.config = SimConfig(rpm=rpm, tpm=tpm, latency=latency or LatencyModel(),
                                window_s=window_s, enforce=enforce, cache=cache,
                                cache_ttl_s=cache_ttl_s, tokenizer=tokenizer,
                                record_replies=record_replies,
                                record_requests=record_requests)
        if process and responder is not None:
            raise ValueError("a custom responder needs process=False")
        self.process = process
        self.core: SimCore | None = None
        self._server: _Server | None = None
        self._child: subprocess.Popen | None = None
        self._responder = responder
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> SimProvider:
        if self.process:
            self._child = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "--serve",
                 self.config.to_json()],
                stdout=subprocess.PIPE, text=True)
            line = self._child.stdout.readline()
            if not line.startswith("PORT "):
                self._child.kill()
                raise RuntimeError(f"simulator did not start: {line!r}")
            self.port = int(line.split()[1])
        else:
            self.core = SimCore(self.config, self._responder)
            self._server = _Server(("127.0.0.1", 0), _handler(self.core))
            self.port = self._server.server_address[1]
            self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._child is not None:
            self._child.terminate()
            try:
                self._child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._child.kill()
                self._child.wait()
            self._child = None
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = None

    def stats(self, timeline: bool = False, replies: bool = False,
              requests: bool = False) -> dict:
        if self.core is not None:
            return self.core.stats(timeline, replies, requests)
        query = "&".join(k for k, on in (("timeline=1", timeline), ("replies=1", replies),
                                         ("requests=1", requests)) if on)
        url = f"http://127.0.0.1:{self.port}/sim/stats" + (f"?{query}" if query else "")
        with urllib.request.urlopen(url, timeout=60) as resp:  # noqa: S310 - 127.0.0.1 only
            return json.loads(resp.read())


def _serve(config_json: str) -> None:
    core = SimCore(SimConfig.from_json(config_json))
    server = _Server(("127.0.0.1", 0), _handler(core))
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        import signal

        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        _serve(sys.argv[2])
    else:
        sys.exit("usage: sim_provider.py --serve CONFIG_JSON (or import SimProvider)")
