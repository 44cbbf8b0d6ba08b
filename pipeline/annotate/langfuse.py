"""Langfuse's public API, as the write-back needs it (`langfuse_write.py` says what is
written): `POST /api/public/scores` and the trace's generation observation.

The keys are Langfuse SDK's variables (`LANGFUSE_PUBLIC_KEY`, `LANGFUSE_SECRET_KEY`, HTTP basic
auth), well-known key variables of `transforms/common/redact.py`, and the client's errors are
redacted of the keys it sends; the host is found as the SDK finds it. 429 (waiting its
`Retry-After`), 408, 5xx and connection errors are retried (`sources/rest_client.py`, the HTTP
client with retries it shares with Phoenix's: tenacity, bounded); a refused
request (400, 404, 409, 422, ...) is not retried and raises `ScoreRejected` with Langfuse's
message; bad keys (401/403) or an unreachable host raise `LangfuseError`, which stops the
write-back. Langfuse upserts a score by its `id`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import httpx

from rt4chart.pipeline.sources.phoenix_client import DEFAULT_NAME
from rt4chart.pipeline.sources.rest_client import RestClient, RetriesExhausted, RetryPolicy
from rt4chart.transforms.common.redact import Redactor

HOST_ENV = "LANGFUSE_HOST"
BASE_URL_ENV = "LANGFUSE_BASE_URL"  # the SDK's name since its v4 (2026); LANGFUSE_HOST before
PUBLIC_KEY_ENV = "LANGFUSE_PUBLIC_KEY"
SECRET_KEY_ENV = "LANGFUSE_SECRET_KEY"
DEFAULT_HOST = "https://cloud.langfuse.com"  # the SDK's default
_FATAL_STATUS = frozenset({401, 403})
MAX_ERROR_CHARS = 300


def default_host(environ: dict[str, str] | None = None) -> str:
    """The host when none is given, as Langfuse's SDK finds it: $LANGFUSE_BASE_URL, else
    $LANGFUSE_HOST, else Langfuse Cloud."""
    env = os.environ if environ is None else environ
    return env.get(BASE_URL_ENV) or env.get(HOST_ENV) or DEFAULT_HOST


class LangfuseError(RuntimeError):
    """Langfuse refused the keys or could not be reached: nothing more can be written."""


class ScoreRejected(Exception):
    """Langfuse refused one request (4xx) or kept answering 429/5xx: its trace failed."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class LangfuseTarget:
    """Where and how the scores are written (validated once)."""

    host: str
    prefix: str = DEFAULT_NAME
    claim_scores: bool = False
    timeout_s: float = 30.0
    attempts: int = 5
    backoff_s: float = 0.5  # first retry's wait without Retry-After; doubles, at most 20 s
    max_retry_after_s: float = 60.0  # a longer Retry-After is cut to this
    max_in_flight: int = 8  # traces written at a time (one request per score, each waits)

    def __post_init__(self) -> None:
        if not self.host.startswith(("http://", "https://")):
            raise ValueError(f"the Langfuse host must be an http(s) URL, got {self.host!r}")
        if not self.prefix.strip():
            raise ValueError("the annotation name must not be empty")
        if self.attempts < 1 or self.max_in_flight < 1:
            raise ValueError("attempts and max_in_flight must be >= 1")

    @property
    def base_url(self) -> str:
        return self.host.rstrip("/")

    def name(self, what: str) -> str:
        return f"{self.prefix}_{what}"


def check_keys(public: str | None = None, secret: str | None = None) -> None:
    """ValueError when a key is missing (given, or else in its variable)."""
    public = public if public is not None else os.environ.get(PUBLIC_KEY_ENV)
    secret = secret if secret is not None else os.environ.get(SECRET_KEY_ENV)
    if not public or not secret:
        raise ValueError(f"annotate langfuse needs the project's keys: set ${PUBLIC_KEY_ENV} "
                         f"and ${SECRET_KEY_ENV}")


class LangfuseClient:
    """A small client of Langfuse's public API (httpx); `transport` is a test hook."""

    def __init__(self, target: LangfuseTarget, public_key: str | None = None,
                 secret_key: str | None = None, transport: httpx.BaseTransport | None = None):
        self._target = target
        public = public_key if public_key is not None else os.environ.get(PUBLIC_KEY_ENV)
        secret = secret_key if secret_key is not None else os.environ.get(SECRET_KEY_ENV)
        check_keys(public, secret)
        # Its errors are cleaned of the keys it sends (the variables' or those it was given).
        self._keys = Redactor((PUBLIC_KEY_ENV, SECRET_KEY_ENV), (public, secret))
        self._http = RestClient(
            target.base_url, timeout_s=target.timeout_s, redactor=self._keys,
            policy=RetryPolicy(target.attempts, target.backoff_s, target.max_retry_after_s),
            transport=transport, auth=httpx.BasicAuth(public, secret))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> LangfuseClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _request(self, method: str, url: str, **kwargs) -> httpx.Response:
        """The response, retried on transport errors, 408, 429 and 5xx (rest_client).
        LangfuseError on bad keys or an unreachable host; ScoreRejected on any other 4xx or
        exhausted retries."""
        t = self._target
        try:
            response = self._http.request(method, url, **kwargs)
        except RetriesExhausted as exc:
            if exc.response is None:
                raise LangfuseError(str(exc)) from None
            raise ScoreRejected(self._keys.redact(f"{exc}: {_message(exc.response)}"),
                                exc.response.status_code) from None
        if response.status_code in _FATAL_STATUS:
            raise LangfuseError(self._keys.redact(
                f"{method} {t.base_url}{url}: {response.status_code} "
                f"{response.reason_phrase}: {_message(response)} (check ${PUBLIC_KEY_ENV}, "
                f"${SECRET_KEY_ENV} and the host)"))
        if response.status_code >= 400:
            raise ScoreRejected(self._keys.redact(
                f"{method} {url}: {response.status_code} {response.reason_phrase}: "
                f"{_message(response)}"), response.status_code)
        return response

    def create_score(self, body: dict) -> str:
        """Write (or, with the id of an existing score, update) one score; its id."""
        return self._request("POST", "/api/public/scores", json=body).json().get("id", "")

    def generation(self, trace_id: str) -> str | None:
        """The id of the trace's generation observation (the one that ends last), or None.

        Asked of `GET /api/public/v2/observations` (Langfuse v3.x and later; its cursor
        followed), else, on a 404 (an older server), of the v1 `GET /api/public/observations`.
        """
        params = {"traceId": trace_id, "type": "GENERATION", "fields": "core", "limit": 1000}
        try:
            rows = self._pages("/api/public/v2/observations", params)
        except ScoreRejected as exc:
            if exc.status != 404:
                raise
            rows = self._request("GET", "/api/public/observations", params={
                "traceId": trace_id, "type": "GENERATION", "limit": 100}).json()["data"]
        rows = [r for r in rows if isinstance(r, dict) and r.get("id")]
        if not rows:
            return None
        return max(rows, key=lambda r: (r.get("endTime") or "", r.get("startTime") or "",
                                        r["id"]))["id"]

    def _pages(self, url: str, params: dict, max_pages: int = 20) -> list[dict]:
        rows: list[dict] = []
        for _ in range(max_pages):  # a trace has a handful of generations: bounded anyway
            body = self._request("GET", url, params=params).json()
            rows.extend(body.get("data") or ())
            cursor = (body.get("meta") or {}).get("cursor")
            if not cursor:
                break
            params = {**params, "cursor": cursor}
        return rows


def _message(response: httpx.Response) -> str:
    """Langfuse's error message (its `message`, and the validation issues), bounded."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:MAX_ERROR_CHARS]
    if not isinstance(body, dict):
        return str(body)[:MAX_ERROR_CHARS]
    text = str(body.get("message") or body.get("error") or body)
    issues = body.get("error") if isinstance(body.get("error"), list) else []
    details = "; ".join(f"{'.'.join(map(str, i.get('path') or ()))}: {i.get('message')}"
                        for i in issues if isinstance(i, dict))
    return (f"{text} ({details})" if details else text)[:MAX_ERROR_CHARS]
