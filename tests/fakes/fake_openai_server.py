"""A local OpenAI-compatible chat completions server for tests, on 127.0.0.1 (ephemeral port).

It answers the real `openai` client like the provider would: structured JSON content, a usage
report with cached tokens, and, on demand, faults: latency, 429 with Retry-After and
x-ratelimit-* headers, 500s, malformed JSON and schema-violating answers. The default responder
imitates a model with the lexical heuristics, reading the claim and passage from the prompt's
delimiting tags.
"""

from __future__ import annotations

import contextlib
import email.parser
import email.policy
import json
import math
import re
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import sse_stream
from sse_stream import Pace

from rt4chart import prompts
from rt4chart.transforms.judges.offline import claims as lexical_claims
from rt4chart.transforms.judges.offline import lexical
from rt4chart.transforms.judges.openai.liveness import HEALTH_HEADER

from strict_profiles import (
    AZURE_TEST_KEY,
    Received,
    azure_rejection,
    profile_named,
    reasoning_tokens,
)

Responder = Callable[[dict], dict | str]


@dataclass
class RawReply:
    """A chat completions reply sent as is: any status, body and content type (an HTML page
    from a proxy, an error body echoing the request's headers...)."""

    status: int
    body: str | bytes
    content_type: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)


# request body, request headers (lower-case names) -> a raw reply, or None for the usual answer
RawResponder = Callable[[dict, dict[str, str]], RawReply | None]
# request body, the usage report the server computed -> the report to send (None: none at all)
UsageRewriter = Callable[[dict, dict], dict | None]


def tag(text: str, name: str) -> str | None:
    """The content of the last <name>...</name> block of a prompt."""
    found = re.findall(rf"<{name}>\n(.*?)\n</{name}>", text, re.S)
    return found[-1] if found else None


SCHEMAS = ("decompose", "verify", "verify_many", "verify_absence")


def schema_name_of(body: dict) -> str:
    """The reply schema a request asks for: its json_schema's name, the schema a json_object
    request carries (llama-cpp-python), else what the prompt is about (plain-text mode)."""
    response_format = body.get("response_format") or {}
    if "json_schema" in response_format:
        return response_format["json_schema"]["name"]
    for name in SCHEMAS:
        if response_format.get("schema") == prompts.schema(name):
            return name
    user, system = body["messages"][-1]["content"], body["messages"][0]["content"]
    if tag(user, "sentence") is not None:
        return "decompose"
    if tag(user, "claims") is not None:
        return "verify_many"
    absence = prompts.load("verify_absence_system.txt").splitlines()[0]
    return "verify_absence" if system.startswith(absence) else "verify"


def lexical_responder(body: dict) -> dict:
    """Answer a decomposition or verification prompt as a (lexical) model would."""
    user = body["messages"][-1]["content"]
    schema = schema_name_of(body)
    if schema == "decompose":
        return {"reasoning": "split", "claims": [
            {"text": c.text, "kind": c.kind, "fragments": list(c.fragments)}
            for c in lexical_claims.decompose_claims(tag(user, "sentence"))]}
    if schema == "verify_absence":
        label, quotes, _ = lexical_claims.verify_absence_scored(
            tag(user, "claim") or "", tag(user, "context") or "", tag(user, "question") or "")
        return {"reasoning": "lexical", "evidence": quotes, "label": label}
    if schema == "verify_many":  # numbered claims against one passage (--claims-per-call)
        passage = tag(user, "passage") or ""
        verdicts = []
        for line in (tag(user, "claims") or "").splitlines():
            number, _, claim = line.partition("] ")
            label, quotes = lexical.verify(claim, passage)
            verdicts.append({"claim": int(number.lstrip("[")), "reasoning": "lexical",
                             "evidence": quotes, "label": label})
        return {"verdicts": verdicts}
    passage = tag(user, "passage") or tag(user, "context") or ""
    label, quotes = lexical.verify(tag(user, "claim") or "", passage, tag(user, "hint"))
    return {"reasoning": "lexical", "evidence": quotes, "label": label}


def default_label_probs(body: dict, label: str) -> dict[str, float]:
    return {x: 0.9 if x == label else 0.05 for x in ("ENT", "CON", "NIC")}


class FakeOpenAI:
    """Threaded HTTP server; use as a context manager.

    Args:
        responder: request body -> message content (a dict to JSON-encode, or raw text).
        latency_s: seconds to wait before each answer.
        serial: whether those waits are one at a time (a server with one slot, such as
            llama-cpp-python's) rather than side by side.
        faults: fault kinds for the first requests, in order ("401", "429", "500",
            "malformed", "schema", "refusal"); requests after the plan get `responder`'s answer.
        every: {kind: n}: additionally, every n-th request gets that fault.
        cached_fraction: share of prompt tokens reported as cached.
        label_probs: (request body, label) -> {label: probability} for the label token's
            `top_logprobs` when a request asks for `logprobs` (default: 0.9 on the label given).
        raw: (request body, request headers) -> a RawReply to send instead of the usual
            answer, or None; counted in `statuses` as "raw".
        usage: (request body, usage report) -> the usage report a 200 carries, or None for a
            reply without one (providers and proxies that send null or negative counts, or
            none).
        probe_faults: whether rt4chart's start-up probe (requests with the X-Rt4chart-Probe
            header, see transforms/judges/openai/probe.py) goes through `faults`, `every`, `down`,
            `raw`, `usage`, `latency_s` and `responder` like any request. By default it does
            not: it is answered at once by `lexical_responder` (scripted responders know only
            their traces) and recorded in `probes`, not `requests`, so that a test's fault
            plan and latency are about the run's calls. The probe's own tests set it.
        profile: what the server rejects, as a real one does (tests/fakes/strict_profiles.py:
            "openai-reasoning", "llama-cpp-python", "no-logprobs", "strict-fields",
            "no-json-schema", "azure", "drops-system", or several joined with "+");
            "permissive" (the default) takes any request.
        reasoning_tokens: a reasoning profile's hidden tokens per call at reasoning_effort
            "low" (x2 at "medium", the default, x4 at "high", none at "minimal").
        azure_deployments, azure_api_key: the azure profile's deployments and its key.
        streams: whether a request with ``stream: true`` is answered as a stream of chunks
            (sse_stream.py), as OpenAI and llama.cpp do; False: answered whole, as a server
            that ignores the field.
        stream_usage: whether a streamed reply ends with the usage report when asked
            (``stream_options.include_usage``); False: never, as llama-cpp-python.
        health: whether the judge's health check (``GET /v1/models`` with liveness.py's
            header, see transforms/judges/openai/liveness.py) answers; by default it does not
            (404), as a server that is down.
        models: the models ``GET /v1/models`` lists otherwise (the launcher asks once when no
            model is named: served_models.py); None: the route is not served (404), as a server
            without it. By default one model, named as the judge's default.
        only_listed: a chat completion for a model not in `models` gets OpenAI's 404
            (``model_not_found``); by default any name is answered, as llama.cpp does.
        pace: how the run's streamed replies come (sse_stream.Pace: a slow-but-steady
            server, one that stalls, or one that never finishes, streamed or whole); the
            probe's come at once unless `probe_faults`.

    Every POST is kept in `received` (path, query, headers, body, status), rejected ones too;
    `requests` keeps the bodies of the chat completions answered.
    """

    def __init__(self, responder: Responder = lexical_responder, latency_s: float = 0.0,
                 faults: list[str] | None = None, every: dict[str, int] | None = None,
                 cached_fraction: float = 0.5, retry_after_s: float = 0.05,
                 label_probs: Callable[[dict, str], dict[str, float]] | None = None,
                 raw: RawResponder | None = None, usage: UsageRewriter | None = None,
                 profile: str = "permissive", reasoning_tokens: int = 64,
                 azure_deployments: tuple[str, ...] = ("judge-deploy",),
                 azure_api_key: str = AZURE_TEST_KEY, probe_faults: bool = False,
                 serial: bool = False, streams: bool = True, pace: Pace | None = None,
                 stream_usage: bool = True, health: bool = False,
                 models: tuple[str, ...] | None = ("gpt-4o-mini",),
                 only_listed: bool = False):
        self.health = health
        self.only_listed = only_listed
        self.models = models
        self.model_listings = 0  # GET /v1/models answered with the list (not health checks)
        self.streams = streams
        self.stream_usage = stream_usage
        self.pace = pace or Pace()
        self.slot = threading.Lock() if serial else contextlib.nullcontext()
        self.profile = profile_named(profile)
        self.reasoning_tokens = reasoning_tokens
        self.azure_deployments = tuple(azure_deployments)
        self.azure_api_key = azure_api_key
        self.received: list[Received] = []
        self.responder = responder
        self.probe_faults = probe_faults
        self.probes: list[dict] = []
        self.usage = usage
        self.raw = raw
        self.latency_s = latency_s
        self.down = False  # while True, every request gets a 503 (an endpoint outage)
        # Batch API: uploaded files, batches, and how many polls a batch stays in progress.
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.batch_polls = 1
        self.batch_frozen = False  # while True, batches stay in progress (a slow provider)
        self.label_probs = label_probs or default_label_probs
        self.plan = list(faults or [])
        self.every = dict(every or {})
        self.cached_fraction = cached_fraction
        self.retry_after_s = retry_after_s
        self.requests: list[dict] = []
        self.statuses: Counter[str] = Counter()
        self._lock = threading.RLock()  # re-entered when a batch runs its requests
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"{self.endpoint}/v1"

    @property
    def endpoint(self) -> str:
        """The server's root URL (an Azure resource's endpoint, for the azure profile)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _fault_for(self, n: int) -> str | None:
        if n <= len(self.plan):
            return self.plan[n - 1]
        for kind, period in self.every.items():
            if period and n % period == 0:
                return kind
        return None

    def raw_reply(self, body: dict, headers: dict[str, str]) -> RawReply | None:
        """The `raw` hook's reply to a chat completion request, recorded like any request."""
        reply = self.raw(body, headers) if self.raw else None
        if reply is not None:
            with self._lock:
                self.requests.append(body)
                self.statuses["raw"] += 1
        return reply

    def chat(self, path: str, query: dict[str, list[str]], headers: dict[str, str],
             body: dict) -> RawReply:
        """The reply to one chat completion POST (the azure profile's URL and key checked
        first, then the `raw` hook, then `answer`), recorded in `received`."""
        if self.profile.azure:
            rejected = azure_rejection(path, query, headers, self.azure_deployments,
                                       self.azure_api_key)
        else:  # a wrong base URL meets what FastAPI-based servers answer
            rejected = None if path == "/v1/chat/completions" else (404, {"detail": "Not Found"})
        if rejected is None and self.only_listed and body.get("model") not in (self.models or ()):
            rejected = (404, {"error": {"message": f"model '{body.get('model')}' not found",
                                        "type": "invalid_request_error",
                                        "code": "model_not_found"}})
        if rejected is not None:
            with self._lock:
                self.statuses["rejected"] += 1
            reply = RawReply(rejected[0], json.dumps(rejected[1]), "application/json")
        elif headers.get("x-rt4chart-probe") and not self.probe_faults:
            status, payload = self.answer_probe(body)
            reply = RawReply(status, json.dumps(payload), "application/json")
        else:
            reply = self.raw_reply(body, headers)
        if reply is None:
            status, payload, extra = self.answer(body)
            reply = RawReply(status, json.dumps(payload), "application/json", extra)
        with self._lock:
            self.received.append(Received(path, query, headers, body, reply.status))
        return reply

    def answer(self, body: dict) -> tuple[int, dict, dict[str, str]]:
        """Status, JSON body and headers for one request."""
        rejected = self.profile.rejection(body)
        if rejected is not None:
            with self._lock:
                self.statuses["rejected"] += 1
            return rejected[0], rejected[1], {}
        with self._lock:
            self.requests.append(body)
            n = len(self.requests)
        fault = "503" if self.down else self._fault_for(n)
        with self._lock:
            self.statuses[fault or "ok"] += 1
        if fault == "429":
            return 429, {"error": {"message": "Rate limit reached", "type": "requests",
                                   "code": "rate_limit_exceeded"}}, {
                "retry-after": f"{self.retry_after_s:g}",
                "retry-after-ms": str(int(self.retry_after_s * 1000)),
                "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": f"{int(self.retry_after_s * 1000)}ms"}
        if fault == "401":
            return 401, {"error": {"message": "Incorrect API key provided: sk-te***mnop.",
                                   "type": "invalid_request_error",
                                   "code": "invalid_api_key"}}, {}
        if fault == "503":
            return 503, {"error": {"message": "service unavailable", "type": "server_error"}}, {}
        if fault == "500":
            return 500, {"error": {"message": "internal error", "type": "server_error"}}, {}
        if fault == "malformed":
            content: dict | str = '{"reasoning": "cut off'
        elif fault == "schema":
            content = {"verdict": "yes"}
        else:
            content = self.responder(body)
        return 200, self._completion(body, content, refusal=fault == "refusal"), {}

    def answer_probe(self, body: dict) -> tuple[int, dict]:
        """A start-up probe's request, outside the fault plan (see `probe_faults`); the profile
        rejects what it rejects, as for any request."""
        rejected = self.profile.rejection(body)
        if rejected is not None:
            with self._lock:
                self.statuses["rejected"] += 1
            return rejected[0], rejected[1]
        with self._lock:
            self.probes.append(body)
        return 200, self._completion(body, lexical_responder(body), refusal=False, probe=True)

    def _completion(self, body: dict, content: dict | str, refusal: bool,
                    probe: bool = False) -> dict:
        text = content if isinstance(content, str) else json.dumps(content)
        # Like the provider: an answer longer than its budget (the profile's field, such as
        # max_completion_tokens) is cut off there, after the hidden reasoning tokens.
        budget = self.profile.budget(body)
        hidden = reasoning_tokens(body, self.reasoning_tokens) if self.profile.reasoning else 0
        finish, visible = "stop", len(text) // 4 + 1
        if budget and hidden >= budget:  # the budget went on reasoning: no answer at all
            text, hidden, finish, visible = "", budget, "length", 0
        elif budget and visible > budget - hidden:
            text, finish = text[: (budget - hidden) * 4], "length"
            visible = len(text) // 4 + 1
        seen = [m for m in body["messages"] if self.profile.sees_system or m["role"] != "system"]
        prompt_tokens = sum(len(m["content"]) for m in seen) // 4 + 1
        cached = int(prompt_tokens * self.cached_fraction)
        message = {"role": "assistant", "content": None if refusal else text,
                   "refusal": "I cannot help with that." if refusal else None}
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": visible + hidden,
                 "total_tokens": prompt_tokens + visible + hidden,
                 "prompt_tokens_details": {"cached_tokens": cached}}
        if self.profile.reasoning:
            usage["completion_tokens_details"] = {"reasoning_tokens": hidden}
        reply = {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion",
            "created": int(time.time()), "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish,
                         "logprobs": self._logprobs(body, text, probe) if body.get("logprobs")
                         and not refusal else None}],
            "usage": usage if self.usage is None or probe else self.usage(body, usage),
        }
        if reply["usage"] is None:
            del reply["usage"]
        return reply

    def _logprobs(self, body: dict, text: str, probe: bool = False) -> dict:
        """Token log-probabilities as the provider reports them: the label's first token has
        the alternatives of `label_probs`, every other token is certain."""
        tokens = re.findall(r"\w+|\s+|[^\w\s]", text)
        label_at = None
        found = list(re.finditer(r'"label"\s*:\s*"', text))
        if found:
            label_at = found[-1].end()
        content, position = [], 0
        for token in tokens:
            top = [{"token": token, "logprob": 0.0, "bytes": list(token.encode())}]
            logprob = 0.0
            if position == label_at and token in ("ENT", "CON", "NIC"):
                probs = (default_label_probs if probe else self.label_probs)(body, token)
                top = [{"token": label, "logprob": math.log(p), "bytes": list(label.encode())}
                       for label, p in sorted(probs.items(), key=lambda kv: -kv[1]) if p > 0]
                logprob = math.log(probs[token])
            content.append({"token": token, "logprob": logprob, "bytes": list(token.encode()),
                            "top_logprobs": top})
            position += len(token)
        return {"content": content, "refusal": None}

    # Batch API (/v1/files, /v1/batches) ---------------------------------------------------

    def upload(self, content_type: str, raw: bytes) -> dict:
        """POST /v1/files (multipart): keep the file's bytes."""
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"content-type: " + content_type.encode() + b"\r\n\r\n" + raw)
        data = next(part.get_payload(decode=True) for part in message.iter_parts()
                    if part.get_param("name", header="content-disposition") == "file")
        with self._lock:
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = data
        return {"id": file_id, "object": "file", "bytes": len(data), "created_at": 0,
                "filename": "batch.jsonl", "purpose": "batch", "status": "processed"}

    def create_batch(self, body: dict) -> dict:
        with self._lock:
            batch_id = f"batch_{len(self.batches) + 1}"
            self.batches[batch_id] = {
                "id": batch_id, "object": "batch", "endpoint": body["endpoint"],
                "input_file_id": body["input_file_id"], "completion_window": "24h",
                "status": "validating", "created_at": int(time.time()), "polls": 0,
                "output_file_id": None, "error_file_id": None,
                "request_counts": {"total": 0, "completed": 0, "failed": 0}}
            return self._batch_view(batch_id)

    def _batch_view(self, batch_id: str) -> dict:
        return {k: v for k, v in self.batches[batch_id].items() if k != "polls"}

    def retrieve_batch(self, batch_id: str) -> dict:
        with self._lock:
            batch = self.batches[batch_id]
            if batch["status"] != "completed" and not self.batch_frozen:
                batch["polls"] += 1
                batch["status"] = "in_progress"
                if batch["polls"] > self.batch_polls:
                    self._run_batch(batch)
            return self._batch_view(batch_id)

    def _run_batch(self, batch: dict) -> None:
        lines = self.files[batch["input_file_id"]].decode().splitlines()
        out = []
        for line in lines:
            request = json.loads(line)
            status, payload, _ = self.answer(request["body"])
            out.append(json.dumps({"id": f"req-{len(out)}", "custom_id": request["custom_id"],
                                   "response": {"status_code": status, "body": payload},
                                   "error": None}))
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = ("\n".join(out) + "\n").encode()
        batch.update(status="completed", output_file_id=file_id,
                     request_counts={"total": len(out), "completed": len(out), "failed": 0})

    def route_get(self, path: str, headers: dict[str, str] | None = None
                  ) -> tuple[int, dict | bytes]:
        if path == "/v1/models":
            return self._models(HEALTH_HEADER.lower() in {k.lower() for k in headers or {}})
        if path.startswith("/v1/batches/"):
            return 200, self.retrieve_batch(path.rsplit("/", 1)[1])
        if path.startswith("/v1/files/") and path.endswith("/content"):
            return 200, self.files[path.split("/")[3]]
        return 404, {"error": {"message": f"no route {path}"}}

    def _models(self, health_check: bool) -> tuple[int, dict]:
        if health_check:
            listed = self.models or ("fake",)
            if not self.health:
                return 404, {"error": {"message": "no route /v1/models"}}
        elif self.models is None:
            return 404, {"error": {"message": "no route /v1/models"}}
        else:
            listed = self.models
            with self._lock:
                self.model_listings += 1
        return 200, {"object": "list",
                     "data": [{"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                              for m in listed]}

    def route_batch_post(self, path: str, content_type: str, raw: bytes) -> tuple[int, dict]:
        if path == "/v1/files":
            return 200, self.upload(content_type, raw)
        return 200, self.create_batch(json.loads(raw))

    def paced(self, handler: BaseHTTPRequestHandler, headers: dict[str, str], body: dict,
              reply: RawReply) -> bool:
        """A chat completion at the server's pace: streamed (True: sent) when asked and
        `streams`, else after the time it takes to write (False: the caller sends it)."""
        completion = json.loads(reply.body) if reply.status == 200 and \
            reply.content_type == "application/json" else None
        if not (isinstance(completion, dict) and completion.get("object") == "chat.completion"):
            return False  # an error or a raw reply of another shape: as it is
        probe = headers.get("x-rt4chart-probe") and not self.probe_faults
        pace = Pace() if probe else self.pace
        if self.streams and body.get("stream"):
            usage = self.stream_usage and bool(
                (body.get("stream_options") or {}).get("include_usage"))
            sse_stream.send(handler, completion, usage, pace, reply.headers)
            return True
        if pace.drip is not None:
            sse_stream.trickle_whole(handler, pace)
            return True
        time.sleep(sse_stream.whole_s(completion, pace))
        return False

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def _send(self, status: int, payload: dict | bytes,
                      headers: dict[str, str] | None = None) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self._send_raw(RawReply(status, data, "application/json", headers or {}))

            def _send_raw(self, reply: RawReply) -> None:
                data = reply.body.encode() if isinstance(reply.body, str) else reply.body
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                self.send_header("content-length", str(len(data)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                self._send(*server.route_get(self.path.split("?")[0], dict(self.headers)))

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                path = self.path.split("?")[0]
                if path in ("/v1/files", "/v1/batches"):
                    self._send(*server.route_batch_post(path, self.headers["content-type"], raw))
                    return
                body = json.loads(raw)
                headers = {k.lower(): v for k, v in self.headers.items()}
                if server.latency_s and (server.probe_faults
                                         or not headers.get("x-rt4chart-probe")):
                    with server.slot:  # one request at a time when `serial`
                        time.sleep(server.latency_s)
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                reply = server.chat(path, query, headers, body)
                if not server.paced(self, headers, body, reply):
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        self._send_raw(reply)  # a client that timed out has gone

        return Handler
