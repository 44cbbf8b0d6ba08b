"""Phoenix's REST API client (httpx), shared by what reads spans from Phoenix
(`sources/phoenix_api.py`), what writes verdicts onto them (`annotate/phoenix.py`) and the
gold labels of `eval` (`eval/phoenix_labels.py`).

Transport errors, 408, 429 and 5xx are retried (`rest_client.py`, the HTTP client with retries
it shares with Langfuse's write-back: tenacity, bounded, Retry-After honoured); the key
(`PHOENIX_API_KEY`, a well-known key variable of `transforms/common/redact.py`) is sent as a
bearer token and redacted from the client's errors, so that no log line or error shows it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import httpx

from rt4chart.pipeline.sources.common import SpanDecodeError
from rt4chart.pipeline.sources.phoenix import row_span
from rt4chart.pipeline.sources.rest_client import RestClient, RetriesExhausted, RetryPolicy
from rt4chart.schemas.spans import SourceSpan
from rt4chart.transforms.common.redact import Redactor

logger = logging.getLogger(__name__)

API_KEY_ENV = "PHOENIX_API_KEY"
ENDPOINT_ENV = "PHOENIX_COLLECTOR_ENDPOINT"
DEFAULT_NAME = "rt4chart"  # the annotations' name, unless `--annotation-name` says otherwise


class PhoenixError(RuntimeError):
    """Phoenix refused a request (`status`: its HTTP status), or did not answer after the
    retries (`status` None)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class PhoenixTarget:
    """Where and how the verdicts are written (validated once)."""

    endpoint: str
    project: str = "default"
    name: str = DEFAULT_NAME
    batch_size: int = 100
    timeout_s: float = 30.0
    attempts: int = 5
    backoff_s: float = 0.5  # first retry's wait; doubles, at most 20 s

    def __post_init__(self) -> None:
        if not self.endpoint.startswith(("http://", "https://")):
            raise ValueError(f"the Phoenix endpoint must be an http(s) URL, got "
                             f"{self.endpoint!r}")
        if not self.project or any(ch in self.project for ch in "/?#"):
            raise ValueError(f"bad Phoenix project name {self.project!r}")
        if not self.name.strip():
            raise ValueError("the annotation name must not be empty")
        if self.batch_size < 1 or self.attempts < 1:
            raise ValueError("batch size and attempts must be >= 1")

    @property
    def base_url(self) -> str:
        """The server's root URL (a collector endpoint's `/v1/traces` is dropped)."""
        url = self.endpoint.rstrip("/")
        return url[:-len("/v1/traces")] if url.endswith("/v1/traces") else url


def _chunks(items: Sequence, size: int) -> Iterator[Sequence]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


class PhoenixClient:
    """A small client of Phoenix's REST API (httpx); `transport` is a test hook."""

    def __init__(self, target: PhoenixTarget, api_key: str | None = None,
                 transport: httpx.BaseTransport | None = None):
        self._target = target
        key = api_key if api_key is not None else os.environ.get(API_KEY_ENV)
        # Its errors are cleaned of the key it sends (a variable's or one it was given).
        self._keys = Redactor((API_KEY_ENV,), (key,) if key else ())
        self._http = RestClient(
            target.base_url, timeout_s=target.timeout_s, redactor=self._keys,
            policy=RetryPolicy(target.attempts, target.backoff_s), transport=transport,
            headers={"Authorization": f"Bearer {key}"} if key else {})

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> PhoenixClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _request(self, method: str, url: str, **kwargs) -> httpx.Response:
        """The response to a request, retried on transport errors, 408, 429 and 5xx
        (rest_client); PhoenixError when it fails for good or Phoenix refuses it (4xx)."""
        try:
            response = self._http.request(method, url, **kwargs)
        except RetriesExhausted as exc:
            raise PhoenixError(str(exc)) from None
        if response.status_code >= 400:
            raise PhoenixError(self._keys.redact(
                f"{method} {url}: {response.status_code} {response.reason_phrase}: "
                f"{response.text[:300]}"), response.status_code)
        return response

    def get_json(self, url: str, params: dict | None = None) -> dict:
        """The JSON object a GET answers, retried as every request is (PhoenixError when it
        fails for good, or the answer is not a JSON object)."""
        response = self._request("GET", url, params=params)
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise PhoenixError(f"GET {url}: the answer is not a JSON object: "
                               f"{self._keys.redact(response.text[:200])}")
        return body

    def _spans(self, trace_ids: Sequence[str], **params: str) -> Iterator[dict]:
        """The spans Phoenix returns for the traces (`batch_size` ids a query, every page)."""
        url = f"/v1/projects/{self._target.project}/spans"
        for chunk in _chunks(list(trace_ids), self._target.batch_size):
            cursor = None
            while True:
                query = {"trace_id": list(chunk), "limit": 1000, **params,
                         **({"cursor": cursor} if cursor else {})}
                body = self._request("GET", url, params=query).json()
                yield from body["data"]
                cursor = body.get("next_cursor")
                if not cursor:
                    break

    def root_spans(self, trace_ids: Sequence[str]) -> dict[str, str]:
        """{trace id: span id of its root span} for the traces Phoenix has (the earliest root
        when a trace has several)."""
        found: dict[str, tuple[str, str]] = {}
        for span in self._spans(trace_ids, parent_id="null"):
            ctx, start = span["context"], span.get("start_time") or ""
            seen = found.get(ctx["trace_id"])
            if seen is None or start < seen[0]:
                found[ctx["trace_id"]] = (start, ctx["span_id"])
        return {tid: span_id for tid, (_, span_id) in found.items()}

    def trace_spans(self, trace_ids: Sequence[str]) -> dict[str, list[SourceSpan]]:
        """{trace id: its spans} for the traces Phoenix has (spans it returns that are not
        readable as OpenInference spans are left out: they name no document)."""
        found: dict[str, list[SourceSpan]] = {}
        for item in self._spans(trace_ids):
            try:
                span = row_span(item)
            except SpanDecodeError:
                continue
            found.setdefault(span.trace_id, []).append(span)
        return found

    def _post(self, path: str, annotations: Iterable[dict]) -> int:
        written = 0
        for chunk in _chunks(list(annotations), self._target.batch_size):
            body = self._request("POST", path, params={"sync": "true"},
                                 json={"data": list(chunk)}).json()
            written += len(body.get("data", ()))
        return written

    def upsert_documents(self, annotations: Iterable[dict]) -> int:
        """Write document annotations (each with its span_id and document_position), in
        batches; how many were written."""
        return self._post("/v1/document_annotations", annotations)

    def upsert(self, annotations: Iterable[dict]) -> int:
        """Write span annotations (each with its span_id), in batches; how many were written."""
        return self._post("/v1/span_annotations", annotations)
