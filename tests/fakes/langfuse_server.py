"""A local stand-in for Langfuse's public scores API, on 127.0.0.1 (an ephemeral port).

The Langfuse server (Postgres, ClickHouse, Redis, a worker) cannot run here; this implements,
as Langfuse's public API documents them (its OpenAPI spec, `fern/apis/server/definition/
scores.yml`, `observations.yml`, `legacy/observations-v1.yml`, and its error middleware):

- HTTP basic auth, username the public key and password the secret key: 401 with a message
  otherwise;
- `POST /api/public/scores` (CreateScoreRequest: id?, traceId, observationId?, name, value,
  dataType? NUMERIC|CATEGORICAL|BOOLEAN, comment?, metadata?, configId?): `{"id"}`; a score
  with the `id` of an earlier one replaces it (Langfuse upserts by id). 400 with
  `{"message", "error": [issues]}` on a missing name or traceId, or a value whose type does
  not fit dataType (string for CATEGORICAL, number for NUMERIC, 0/1 for BOOLEAN);
- `GET /api/public/scores` (v1, deprecated) and `/api/public/v2/scores` (page, limit, name,
  dataType, traceId, observationId): `{"data", "meta": {page, limit, totalItems,
  totalPages}}`, categorical scores with `stringValue`;
- `GET /api/public/v2/observations` (traceId, type, limit, cursor: `{"data", "meta":
  {"cursor"?}}`) and the deprecated v1 `GET /api/public/observations` (traceId, type, page,
  limit): the observations `seed()` put; either can be switched off (an older or a newer
  server);
- `GET /api/public/health`.

Fault injection: `rate_limit(n, retry_after)` answers the next n requests 429 with
`Retry-After`; `fail(n, status, body)` answers the next n with another error. Every request
is recorded (method, path, headers, body, monotonic time) for the tests.
"""

from __future__ import annotations

import base64
import json
import math
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

PUBLIC_KEY = "pk-lf-11112222-3333-4444-5555-666677778888"
SECRET_KEY = "sk-lf-aaaabbbb-cccc-dddd-eeee-ffff00001111"
DATA_TYPES = ("NUMERIC", "CATEGORICAL", "BOOLEAN")


@dataclass
class LangfuseState:
    """What the fake holds: scores by id, seeded observations, pending faults, requests."""

    scores: dict[str, dict] = field(default_factory=dict)
    observations: list[dict] = field(default_factory=list)
    faults: list[tuple[int, dict[str, str], dict]] = field(default_factory=list)
    requests: list[dict] = field(default_factory=list)
    v2_observations: bool = True  # False: an older server (404 on /api/public/v2/observations)
    v1_observations_gone: bool = False  # True: a server without the deprecated v1 list
    delay_s: float = 0.0  # each answer this late (a remote server's round trip)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _issues(body: dict) -> list[dict]:
    """The validation errors of a CreateScoreRequest, as zod-like issues."""
    issues = []
    for key in ("name", "traceId"):
        if not isinstance(body.get(key), str) or not body.get(key):
            issues.append({"path": [key], "message": "Required"})
    value, data_type = body.get("value"), body.get("dataType")
    if data_type is not None and data_type not in DATA_TYPES:
        issues.append({"path": ["dataType"], "message": f"Invalid enum value {data_type!r}"})
    if "value" not in body:
        issues.append({"path": ["value"], "message": "Required"})
    elif data_type == "CATEGORICAL" and not isinstance(value, str):
        issues.append({"path": ["value"], "message": "Expected string for CATEGORICAL score"})
    elif data_type == "NUMERIC" and (isinstance(value, bool)
                                     or not isinstance(value, int | float)):
        issues.append({"path": ["value"], "message": "Expected number for NUMERIC score"})
    elif data_type == "BOOLEAN" and value not in (0, 1):
        issues.append({"path": ["value"], "message": "Expected 0 or 1 for BOOLEAN score"})
    elif isinstance(value, float) and not math.isfinite(value):
        issues.append({"path": ["value"], "message": "Expected a finite number"})
    return issues


def _stored(body: dict, old: dict | None) -> dict:
    now = datetime.now(UTC).isoformat()
    data_type = body.get("dataType") or ("CATEGORICAL" if isinstance(body["value"], str)
                                         else "NUMERIC")
    score = {
        "id": body.get("id") or str(uuid.uuid4()), "traceId": body["traceId"],
        "observationId": body.get("observationId"), "name": body["name"],
        "dataType": data_type, "comment": body.get("comment"),
        "metadata": body.get("metadata"), "configId": body.get("configId"),
        "source": "API", "timestamp": now, "updatedAt": now,
        "createdAt": old["createdAt"] if old else now,
    }
    if data_type == "CATEGORICAL":
        score.update(value=None, stringValue=body["value"])
    else:
        score["value"] = body["value"]
    return score


class _Handler(BaseHTTPRequestHandler):
    """The fake's endpoints; `state` is set on a subclass per server."""

    state: LangfuseState

    def log_message(self, *args) -> None:  # quiet
        pass

    def _reply(self, status: int, body: dict, headers: dict[str, str] | None = None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self) -> bool:
        expected = base64.b64encode(f"{PUBLIC_KEY}:{SECRET_KEY}".encode()).decode()
        return self.headers.get("Authorization") == f"Basic {expected}"

    def _gate(self, raw: bytes = b"") -> bool:
        """Record the request (with its body); answer a pending fault or a bad key; True to
        go on."""
        url = urlsplit(self.path)
        time.sleep(self.state.delay_s)
        with self.state.lock:
            self.state.requests.append({"method": self.command, "path": url.path,
                                        "headers": dict(self.headers), "body": raw,
                                        "at": time.monotonic()})
            fault = self.state.faults.pop(0) if self.state.faults else None
        if fault is not None:
            status, headers, body = fault
            self._reply(status, body, headers)
            return False
        if url.path != "/api/public/health" and not self._authorized():
            self._reply(401, {"message": "Invalid credentials. Confirm that you've "
                                         "configured the correct host."})
            return False
        return True

    def do_GET(self) -> None:
        if not self._gate():
            return
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if url.path == "/api/public/health":
            self._reply(200, {"status": "OK", "version": "fake"})
        elif url.path in ("/api/public/scores", "/api/public/v2/scores"):
            with self.state.lock:
                rows = list(self.state.scores.values())
            self._page(rows, query, ("name", "dataType", "traceId", "observationId"))
        elif url.path == "/api/public/observations" and not self.state.v1_observations_gone:
            with self.state.lock:
                rows = list(self.state.observations)
            self._page(rows, query, ("traceId", "type"))
        elif url.path == "/api/public/v2/observations" and self.state.v2_observations:
            with self.state.lock:
                rows = list(self.state.observations)
            self._cursor_page(rows, query, ("traceId", "type"))
        else:
            self._reply(404, {"message": "Not found"})

    def _page(self, rows: list[dict], query: dict[str, str], filters: tuple[str, ...]):
        rows = [r for r in rows if all(r.get(k) == query[k] for k in filters if k in query)]
        page, limit = int(query.get("page", 1)), int(query.get("limit", 50))
        total = len(rows)
        self._reply(200, {"data": rows[(page - 1) * limit:page * limit], "meta": {
            "page": page, "limit": limit, "totalItems": total,
            "totalPages": math.ceil(total / limit) if limit else 0}})

    def _cursor_page(self, rows: list[dict], query: dict[str, str], filters: tuple[str, ...]):
        """A v2 page: `limit` rows from the (opaque, here the offset) cursor, and the next."""
        rows = [r for r in rows if all(r.get(k) == query[k] for k in filters if k in query)]
        start, limit = int(query.get("cursor", 0)), int(query.get("limit", 50))
        meta = {"cursor": str(start + limit)} if start + limit < len(rows) else {}
        self._reply(200, {"data": rows[start:start + limit], "meta": meta})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if not self._gate(raw):
            return
        if urlsplit(self.path).path != "/api/public/scores":
            self._reply(404, {"message": "Not found"})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._reply(400, {"message": "Invalid JSON"})
            return
        issues = _issues(body) if isinstance(body, dict) else [{"path": [],
                                                                "message": "Expected object"}]
        if issues:
            self._reply(400, {"message": "Invalid request data", "error": issues})
            return
        with self.state.lock:
            score = _stored(body, self.state.scores.get(body.get("id") or ""))
            self.state.scores[score["id"]] = score
        self._reply(200, {"id": score["id"]})


class LangfuseServer:
    """The fake, serving in a thread; `url` its base URL. Use as a context manager."""

    def __init__(self) -> None:
        self.state = LangfuseState()
        self._http = ThreadingHTTPServer(
            ("127.0.0.1", 0), type("Handler", (_Handler,), {"state": self.state}))
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True,
                                        name="fake-langfuse")

    def __enter__(self) -> LangfuseServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()

    def rate_limit(self, n: int, retry_after_s: float) -> None:
        """Answer the next `n` requests 429 with `Retry-After: retry_after_s`."""
        with self.state.lock:
            self.state.faults.extend([(429, {"Retry-After": f"{retry_after_s:g}"},
                                       {"message": "Rate limit exceeded"})] * n)

    def fail(self, n: int, status: int = 503, body: dict | None = None) -> None:
        """Answer the next `n` requests `status` with `body` (Langfuse's 500 body by default)."""
        with self.state.lock:
            self.state.faults.extend([(status, {}, body or {"message": "Internal Server Error"})]
                                     * n)

    def seed(self, *observations: dict) -> None:
        with self.state.lock:
            self.state.observations.extend(observations)

    def scores(self) -> list[dict]:
        with self.state.lock:
            return [dict(s) for s in self.state.scores.values()]

    def reset(self) -> None:
        with self.state.lock:
            self.state.scores.clear()
            self.state.faults.clear()
            self.state.requests.clear()
