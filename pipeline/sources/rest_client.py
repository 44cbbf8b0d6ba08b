"""The one HTTP client with retries of the trace stores rt4chart reads and writes (Phoenix's
REST API, `phoenix_client.py`; Langfuse's public API, `annotate/langfuse.py`).

httpx sends, tenacity retries (bounded): transport errors, 408, 429 and 5xx, waiting a 429's or
503's `Retry-After` (seconds or an HTTP date, cut to `max_retry_after_s`) or else an exponential
back-off from `backoff_s` (doubling, at most 20 s). Every other answer is returned as it is:
what a 4xx means belongs to the store's own client. A request that fails for good raises
`RetriesExhausted`, holding the last response or transport error. The keys the client sends
are redacted from every message it builds (its `Redactor`), so that no log line shows them.
"""

from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass
from typing import Any

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from rt4chart.transforms.common.redact import Redactor

RETRIED_STATUS = frozenset({408, 429, 500, 502, 503, 504})
MAX_BACKOFF_S = 20.0


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long a request is tried."""

    attempts: int = 5
    backoff_s: float = 0.5  # the first retry's wait without Retry-After; doubles
    max_retry_after_s: float = 60.0  # a longer Retry-After is cut to this

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.backoff_s < 0 or self.max_retry_after_s < 0:
            raise ValueError("attempts must be >= 1 and the waits >= 0")


class RetriesExhausted(Exception):
    """A request still failed (a transport error, or a retried status) after every attempt;
    `response` is the last answer (None: no answer, `error` says why)."""

    def __init__(self, message: str, response: httpx.Response | None,
                 error: httpx.TransportError | None):
        super().__init__(message)
        self.response = response
        self.error = error


class _Transient(Exception):
    def __init__(self, response: httpx.Response):
        super().__init__(f"{response.status_code} {response.reason_phrase}")
        self.response = response


def retry_after(response: httpx.Response) -> float | None:
    """A response's `Retry-After` in seconds (a number or an HTTP date); None when absent or
    unreadable (the exponential back-off applies)."""
    value = (response.headers.get("Retry-After") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # an HTTP date
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class RestClient:
    """httpx with tenacity's bounded retries (module docstring); `transport` is a test hook."""

    def __init__(self, base_url: str, *, timeout_s: float, policy: RetryPolicy,
                 redactor: Redactor, headers: dict[str, str] | None = None,
                 auth: httpx.Auth | None = None,
                 transport: httpx.BaseTransport | None = None):
        self.base_url = base_url
        self.policy = policy
        self.redactor = redactor
        self._http = httpx.Client(base_url=base_url, timeout=timeout_s, transport=transport,
                                  headers=headers or {}, auth=auth)

    def close(self) -> None:
        self._http.close()

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Transient):
            after = retry_after(exc.response)
            if after is not None:
                return min(after, self.policy.max_retry_after_s)
        return min(self.policy.backoff_s * 2 ** (state.attempt_number - 1), MAX_BACKOFF_S)

    def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        response = self._http.request(method, url, **kwargs)
        if response.status_code in RETRIED_STATUS:
            raise _Transient(response)
        return response

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """The answer to a request once it is neither a transport error nor a retried status
        (RetriesExhausted when every attempt was)."""
        attempts = self.policy.attempts
        retrying = Retrying(
            stop=stop_after_attempt(attempts), reraise=True, wait=self._wait,
            retry=retry_if_exception(lambda e: isinstance(e, _Transient | httpx.TransportError)))
        try:
            return retrying(self._send, method, url, **kwargs)
        except httpx.TransportError as exc:
            raise RetriesExhausted(self.redactor.redact(
                f"{method} {self.base_url}{url} failed after {attempts} attempt(s): "
                f"{type(exc).__name__}: {exc}"), None, exc) from None
        except _Transient as exc:
            raise RetriesExhausted(self.redactor.redact(
                f"{method} {url}: still {exc} after {attempts} attempt(s)"),
                exc.response, None) from None
