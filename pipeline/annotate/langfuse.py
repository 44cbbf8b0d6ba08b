"""Langfuse's public API, as the write-back needs it: scores on traces (and observations).

Per audited trace, `POST /api/public/scores` twice: a CATEGORICAL score `NAME_label` (ENT, CON,
NIC, or `incomplete` for an answer the run could not decide) whose comment lists the non-ENT
claims with their answer spans and evidence (`verdicts.explanation`, bounded), and a NUMERIC
score `NAME_p_hallucinated` (the answer's p_hallucinated, when it has one). With
`claim_scores`, one CATEGORICAL score `NAME_claim` per claim on the trace's generation
observation (its id asked of `GET /api/public/v2/observations?traceId=..&type=GENERATION`: the
run's tables keep no observation id); a trace without one gets no claim scores (counted).

Each score's `id` is a uuid5 of run-independent keys (trace id, observation id, claim index,
score name), so that Langfuse, which upserts a score by id, updates it on a second write-back
instead of adding one. The keys are Langfuse SDK's variables (`LANGFUSE_PUBLIC_KEY`,
`LANGFUSE_SECRET_KEY`, HTTP basic auth) and are registered for redaction. 429 (waiting its
`Retry-After`), 408 and 5xx are retried (tenacity, bounded); a refused score (400, 404, 409,
422) is not retried: its trace is counted as failed with Langfuse's message, and the others go
on. A bad key (401/403) or an unreachable host stops the write-back (`LangfuseError`).
"""

from __future__ import annotations

import email.utils
import logging
import os
import time
import uuid
from dataclasses import dataclass, field

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from rt4chart.pipeline.annotate.verdicts import (
    DEFAULT_NAME,
    TraceVerdict,
    Verdicts,
    annotation,
    claim_explanation,
    explanation,
)
from rt4chart.transforms.redact import redact_configured, register_key_env

logger = logging.getLogger(__name__)

HOST_ENV = "LANGFUSE_HOST"
BASE_URL_ENV = "LANGFUSE_BASE_URL"  # the SDK's name since its v4 (2026); LANGFUSE_HOST before
PUBLIC_KEY_ENV = "LANGFUSE_PUBLIC_KEY"
SECRET_KEY_ENV = "LANGFUSE_SECRET_KEY"
DEFAULT_HOST = "https://cloud.langfuse.com"  # the SDK's default
INCOMPLETE = "incomplete"
# Fixed, so that a score's id depends only on what it scores (never on the run).
SCORE_NAMESPACE = uuid.UUID("5b0c6f1e-2d7a-5e4b-9c3f-7a1d2e8b4c60")
_RETRIED_STATUS = frozenset({408, 429, 500, 502, 503, 504})
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


class _Transient(Exception):
    def __init__(self, response: httpx.Response):
        super().__init__(f"{response.status_code} {response.reason_phrase}")
        self.response = response


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

    def __post_init__(self) -> None:
        if not self.host.startswith(("http://", "https://")):
            raise ValueError(f"the Langfuse host must be an http(s) URL, got {self.host!r}")
        if not self.prefix.strip():
            raise ValueError("the annotation name must not be empty")
        if self.attempts < 1:
            raise ValueError("attempts must be >= 1")

    @property
    def base_url(self) -> str:
        return self.host.rstrip("/")

    def name(self, what: str) -> str:
        return f"{self.prefix}_{what}"


def score_id(trace_id: str, name: str, observation_id: str = "", claim_index: int = -1) -> str:
    """The deterministic id of the score `name` on a trace (an observation, a claim)."""
    return str(uuid.uuid5(SCORE_NAMESPACE, f"{trace_id}\x1f{observation_id}\x1f{claim_index}"
                                           f"\x1f{name}"))


def _as_reported(verdict: TraceVerdict) -> TraceVerdict:
    """An undecided answer reads as `incomplete` in the scores and their comment."""
    if verdict.answer.get("label") is not None:
        return verdict
    return TraceVerdict({**verdict.answer, "label": INCOMPLETE}, verdict.claims)


def trace_scores(verdict: TraceVerdict, target: LangfuseTarget) -> list[dict]:
    """The trace-level score bodies of one verdict (label, and p_hallucinated if known)."""
    v = _as_reported(verdict)
    a, tid = v.answer, v.trace_id
    metadata = annotation(v, target.prefix)["metadata"]
    label_name, p_name = target.name("label"), target.name("p_hallucinated")
    scores = [{"id": score_id(tid, label_name), "traceId": tid, "name": label_name,
               "value": a["label"], "dataType": "CATEGORICAL", "comment": explanation(v),
               "metadata": metadata}]
    if a.get("p_hallucinated") is not None:
        threshold = a.get("p_threshold")
        scores.append({
            "id": score_id(tid, p_name), "traceId": tid, "name": p_name,
            "value": float(a["p_hallucinated"]), "dataType": "NUMERIC",
            "comment": "calibrated P(the answer is hallucinated)" + (
                f"; hallucinated <=> >= {threshold:g}" if threshold is not None else ""),
            "metadata": metadata})
    return scores


def claim_scores(verdict: TraceVerdict, target: LangfuseTarget,
                 observation_id: str) -> list[dict]:
    """One score per claim, on the generation observation that wrote the answer."""
    name, out = target.name("claim"), []
    for claim in verdict.claims:
        index = claim["claim_index"]
        out.append({
            "id": score_id(verdict.trace_id, name, observation_id, index),
            "traceId": verdict.trace_id, "observationId": observation_id, "name": name,
            "value": claim.get("label") or INCOMPLETE, "dataType": "CATEGORICAL",
            "comment": claim_explanation(claim),
            "metadata": {"claim_index": index, "p_unsupported": claim.get("p_unsupported"),
                         "judge_model": claim.get("judge_model"),
                         "prompt_hash": claim.get("prompt_hash")}})
    return out


def check_keys(public: str | None = None, secret: str | None = None) -> None:
    """Register the key variables for redaction; ValueError when a key is missing."""
    for env in (PUBLIC_KEY_ENV, SECRET_KEY_ENV):
        register_key_env(env)
    public = public if public is not None else os.environ.get(PUBLIC_KEY_ENV)
    secret = secret if secret is not None else os.environ.get(SECRET_KEY_ENV)
    if not public or not secret:
        raise ValueError(f"annotate langfuse needs the project's keys: set ${PUBLIC_KEY_ENV} "
                         f"and ${SECRET_KEY_ENV}")


def _retry_after(response: httpx.Response) -> float | None:
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
        return None  # unreadable: the exponential back-off instead


class LangfuseClient:
    """A small client of Langfuse's public API (httpx); `transport` is a test hook."""

    def __init__(self, target: LangfuseTarget, public_key: str | None = None,
                 secret_key: str | None = None, transport: httpx.BaseTransport | None = None):
        self._target = target
        public = public_key if public_key is not None else os.environ.get(PUBLIC_KEY_ENV)
        secret = secret_key if secret_key is not None else os.environ.get(SECRET_KEY_ENV)
        check_keys(public, secret)
        self._http = httpx.Client(base_url=target.base_url, timeout=target.timeout_s,
                                  transport=transport, auth=httpx.BasicAuth(public, secret))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> LangfuseClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Transient):
            after = _retry_after(exc.response)
            if after is not None:
                return min(after, self._target.max_retry_after_s)
        return min(self._target.backoff_s * 2 ** (state.attempt_number - 1), 20.0)

    def _send(self, method: str, url: str, **kwargs) -> httpx.Response:
        response = self._http.request(method, url, **kwargs)
        if response.status_code in _RETRIED_STATUS:
            raise _Transient(response)
        return response

    def _request(self, method: str, url: str, **kwargs) -> httpx.Response:
        """The response, retried on transport errors, 408, 429 and 5xx. LangfuseError on bad
        keys or an unreachable host; ScoreRejected on any other 4xx or exhausted retries."""
        t = self._target
        retrying = Retrying(
            stop=stop_after_attempt(t.attempts), reraise=True, wait=self._wait,
            retry=retry_if_exception(lambda e: isinstance(e, _Transient | httpx.TransportError)))
        try:
            response = retrying(self._send, method, url, **kwargs)
        except httpx.TransportError as exc:
            raise LangfuseError(redact_configured(
                f"{method} {t.base_url}{url} failed after {t.attempts} attempt(s): "
                f"{type(exc).__name__}: {exc}")) from None
        except _Transient as exc:
            raise ScoreRejected(redact_configured(
                f"{method} {url}: still {exc} after {t.attempts} attempt(s): "
                f"{_message(exc.response)}"), exc.response.status_code) from None
        if response.status_code in _FATAL_STATUS:
            raise LangfuseError(redact_configured(
                f"{method} {t.base_url}{url}: {response.status_code} "
                f"{response.reason_phrase}: {_message(response)} (check ${PUBLIC_KEY_ENV}, "
                f"${SECRET_KEY_ENV} and the host)"))
        if response.status_code >= 400:
            raise ScoreRejected(redact_configured(
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


@dataclass
class LangfuseResult:
    """What one write-back did: traces whose scores were all written, scores written, traces
    that failed (id -> Langfuse's reason), traces without a generation observation (no claim
    scores), answers waiting for their claim rows."""

    annotated: int = 0
    scores: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    no_generation: list[str] = field(default_factory=list)
    incomplete: int = 0
    pending: int = 0

    def line(self, target: LangfuseTarget) -> str:
        parts = [f"annotate langfuse: {self.annotated} trace(s) scored ({self.scores} "
                 f"score(s) {target.name('*')!r}) at {target.base_url}",
                 f"{len(self.failed)} failed"]
        if self.incomplete:
            parts.append(f"{self.incomplete} undecided scored {INCOMPLETE!r}")
        if target.claim_scores:
            parts.append(f"{len(self.no_generation)} without a generation observation (no "
                         f"claim scores)")
        if self.pending:
            parts.append(f"{self.pending} waiting for their claim rows")
        return "; ".join(parts)

    def failures(self, limit: int = 5) -> list[str]:
        lines = [f"  {tid}: {reason}" for tid, reason in list(self.failed.items())[:limit]]
        if len(self.failed) > limit:
            lines.append(f"  ... and {len(self.failed) - limit} more")
        return lines


def _write_one(verdict: TraceVerdict, target: LangfuseTarget, client: LangfuseClient,
               result: LangfuseResult) -> None:
    bodies = trace_scores(verdict, target)
    if target.claim_scores and verdict.claims:
        observation = client.generation(verdict.trace_id)
        if observation is None:
            result.no_generation.append(verdict.trace_id)
        else:
            bodies.extend(claim_scores(verdict, target, observation))
    for body in bodies:
        client.create_score(body)
        result.scores += 1


def write_back(verdicts: Verdicts, target: LangfuseTarget,
               client: LangfuseClient) -> tuple[LangfuseResult, list[TraceVerdict]]:
    """Score each decided (and undecided) verdict's trace; the result and the verdicts whose
    scores were all written. A trace whose score Langfuse refuses is counted in `failed`."""
    result = LangfuseResult(incomplete=len(verdicts.undecided_verdicts),
                            pending=len(verdicts.pending))
    written: list[TraceVerdict] = []
    for verdict in [*verdicts.ready, *verdicts.undecided_verdicts]:
        try:
            _write_one(verdict, target, client, result)
        except ScoreRejected as exc:
            result.failed[verdict.trace_id] = str(exc)
            logger.warning("annotate langfuse: trace %s not scored: %s", verdict.trace_id, exc)
            continue
        written.append(verdict)
    result.annotated = len(written)
    return result, written
