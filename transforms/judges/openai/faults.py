"""How the openai judge's failures are told apart and described.

An HTTP 200 that is not a chat completion (an HTML page from a proxy, plain text, JSON of
another shape) is a retryable :class:`NotACompletion` with a readable reason; connection
errors, timeouts, HTTP errors and such replies are endpoint failures (they feed the circuit
breaker); the reason a call failed for good is redacted (an endpoint may echo the request's
headers, the key included, in its error message).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import openai

from rt4chart.transforms.common.redact import redact
from rt4chart.transforms.judges.base import JudgeError
from rt4chart.transforms.judges.schema_check import OutOfBounds, SchemaMismatch


class NotACompletion(SchemaMismatch):
    """An HTTP 200 whose body is not a chat completion (an HTML page from a proxy, plain text,
    JSON of another shape): retried like a malformed answer."""


class Stalled(openai.APITimeoutError):
    """A streamed reply that stopped: no first token within its wait (`tokens` 0), or no next
    token within the idle timeout (see streamed.py). Retried like a timeout. `blank`: the
    chunks of whitespace-only tokens that came, which are not progress (nor are keep-alives
    and empty chunks)."""

    def __init__(self, request: Any, tokens: int, waited_s: float, blank: int = 0):
        super().__init__(request=request)
        self.tokens, self.waited_s, self.blank = tokens, waited_s, blank
        self.timing: Any = None  # streamed.Timing of what came, when the reader knows it
        waited = _seconds(waited_s)
        quiet = (f"; {blank} whitespace-only chunk(s) came, which are not progress"
                 if blank else "")
        if tokens:
            self.message = f"no token for {waited} s after {tokens} token(s) (idle timeout{quiet})"
        elif blank:
            self.message = f"no token but whitespace for {waited} s (idle timeout{quiet})"
        else:
            self.message = f"no first token within {waited} s"

    def __str__(self) -> str:
        return self.message


class Overdue(Stalled):
    """A reply that did not end within its deadline (from the request; its tokens do not
    restart it): retried like a timeout, within the call's deadline."""

    def __init__(self, request: Any, tokens: int, deadline_s: float, blank: int = 0):
        super().__init__(request, tokens, deadline_s, blank)
        self.message = (f"the reply did not end within its deadline of {_seconds(deadline_s)} s "
                        f"({tokens} token(s) by then, and {blank} whitespace-only chunk(s); "
                        "a reply's deadline is not restarted by its tokens)")


class Overlong(JudgeError):
    """A streamed reply that grew past its cap (reply_size.reply_cap): the server does not
    honour the output limit, or the model loops. The connection is closed; not retried (the
    same request would run on the same way)."""


def _seconds(value: float) -> str:
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


# The longest a provider's error message may be in a reason, and the longest reason; both cut
# after redaction (a key cut in two would no longer be recognised).
MESSAGE_CHARS = 200
REASON_CHARS = 300


def completion_of(raw: Any, read: Callable[[], Any] | None = None) -> Any:
    """The chat completion in a raw HTTP 200 response, or NotACompletion saying what came
    instead (the `openai` client returns a non-JSON body as a string). `read` parses the body
    (by default `raw.parse()`, the client's; reply_view.read_body reads it as that does)."""
    try:
        parsed = (read or raw.parse)()
    except ValueError:  # a JSON content type on a body that is not JSON
        parsed = None
    choices = None if isinstance(parsed, str | bytes | dict | list) else getattr(
        parsed, "choices", None)
    if isinstance(choices, list) and all(getattr(c, "message", None) is not None
                                         for c in choices):
        return parsed
    kind = raw.headers.get("content-type", "no content type").split(";")[0].strip()
    text = " ".join(raw.text.split())
    raise NotACompletion(f"HTTP {raw.status_code} reply is not a chat completion ({kind}): "
                         f"{text[:REASON_CHARS]!r}")


# What request-validation errors say, whatever the server: pydantic v2 (llama-cpp-python,
# FastAPI-based servers: "1 validation error for ...", "Input should be 'text' or
# 'json_object'", "Field required", "Extra inputs are not permitted"), pydantic v1 ("value is
# not a valid ...", "field required", "extra fields not permitted"), OpenAI-style ("Unsupported
# parameter", "Unsupported value", "Invalid value for", "Unrecognized request argument").
_VALIDATION_RE = re.compile(
    r"validation errors? for|input should be|field required|extra (?:inputs are|fields) not "
    r"permitted|value is not a valid|unsupported (?:parameter|value)|invalid value for"
    r"|unrecognized request argument", re.I)
_REJECTING = (400, 422, 500)


def _detail_list(body: Any) -> list[dict] | None:
    """FastAPI's 422 body: {"detail": [{"loc": [...], "msg": "...", "type": "..."}]}."""
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, list) and detail and all(
            isinstance(d, dict) and "msg" in d for d in detail):
        return detail
    return None


def rejected_request(exc: BaseException) -> str | None:
    """The server's own reason when an HTTP 400, 422 or 500 says the request failed
    validation (retrying the same request cannot help: not an outage); None otherwise."""
    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in _REJECTING:
        return None
    detail = _detail_list(exc.body)
    if detail is not None:
        return "; ".join(".".join(str(p) for p in d.get("loc") or ()) + ": " + str(d["msg"])
                         for d in detail[:3])
    message = exc.body.get("message") if isinstance(exc.body, dict) else None
    text = str(message if message is not None else exc.message)
    return " ".join(text.split()) if _VALIDATION_RE.search(text) else None


def is_endpoint_failure(exc: BaseException) -> bool:
    """Whether a failed attempt says the endpoint is unwell (for the circuit breaker), rather
    than the model's answer being wrong or the call being cancelled."""
    return isinstance(exc, NotACompletion | openai.APIConnectionError | openai.APIStatusError)


def failure_reason(exc: BaseException, attempts: int, secrets: tuple[str, ...]) -> str:
    """The reason a call failed for good, with the secrets and anything like a credential
    removed (an endpoint may echo the request's headers in its error message)."""
    if isinstance(exc, JudgeError):
        text = str(exc)
    elif isinstance(exc, OutOfBounds):
        text = (f"no answer within the schema's bounds: {exc} (a reply beyond them is retried "
                "once, never read)")
    elif isinstance(exc, SchemaMismatch):
        text = f"no valid answer after {attempts} attempts: {exc}"
    elif (rejected := rejected_request(exc)) is not None:
        message = redact(rejected, secrets)[:MESSAGE_CHARS]
        text = f"the server rejected the request (HTTP {exc.status_code}, not retried): {message}"
    elif isinstance(exc, openai.APIStatusError):
        message = redact(str(exc.message), secrets)[:MESSAGE_CHARS]
        text = f"HTTP {exc.status_code} ({type(exc).__name__}): {message}"
    elif isinstance(exc, Overdue):
        text = f"the reply ran past its deadline after {attempts} attempt(s): {exc}"
    elif isinstance(exc, Stalled):
        text = f"the reply stalled after {attempts} attempt(s): {exc}"
    else:
        text = f"{type(exc).__name__} after retries"
    return redact(text, secrets)[:REASON_CHARS]
