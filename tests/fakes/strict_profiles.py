"""Strict profiles for the local test server (`FakeOpenAI(profile=...)`): each rejects exactly
what one family of real servers rejects, with that server's status code and error body.

Profiles (combine with "+", e.g. ``"azure+openai-reasoning"``):

- ``openai-reasoning``: OpenAI's reasoning models (gpt-5, o3, o4-mini). `temperature` other
  than 1, `top_p`, `logprobs`, `top_logprobs`, `presence_penalty`, `frequency_penalty`,
  `logit_bias`, `stop` and `max_tokens` are 400s; `seed` and `reasoning_effort`
  (minimal|low|medium|high) are accepted. Hidden reasoning tokens count inside
  `completion_tokens` and against `max_completion_tokens`.
- ``llama-cpp-python``: llama_cpp.server 0.3.x. A `response_format` of type `json_schema` is an
  HTTP 500 naming pydantic's validation error; `json_object` (with or without a `schema`) is
  accepted; unknown fields (`max_completion_tokens`, `prompt_cache_key`, `reasoning_effort`)
  are ignored, so the answer's length is capped by `max_tokens` only.
- ``no-logprobs``: `logprobs` / `top_logprobs` are 400s naming the parameter.
- ``strict-fields``: older Azure API versions and some proxies: any field outside
  `KNOWN_FIELDS` (such as `prompt_cache_key`, `reasoning_effort`) is a 400
  "Unrecognized request argument supplied: ...".
- ``no-json-schema``: `response_format` `json_schema` is a 400 (DeepSeek's body);
  `json_object` is accepted.
- ``no-stream``: ``stream: true`` is OpenAI's 400 naming `stream` (a model that answers only
  whole); ``no-stream-options``: `stream_options` is a 400 "Unrecognized request argument"
  (API versions and proxies that predate it).
- ``azure``: Azure OpenAI's URL and auth: see `azure_rejection`.
- ``drops-system``: a chat template that drops the system message (llama-cpp-python's
  ``--chat_format gemma``): accepted, but `usage.prompt_tokens` counts the other messages
  only, as the model saw them. Combine: ``"llama-cpp-python+drops-system"``.

Where each body comes from is in the README's table of server families and in the tests
(tests/integration/test_strict_profiles.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace

AZURE_TEST_KEY = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"  # the azure profile's api-key by default

Rejection = tuple[int, dict]
Check = Callable[[dict], Rejection | None]

REASONING_EFFORTS = ("minimal", "low", "medium", "high")
# Reasoning tokens per unit of `reasoning_tokens` (FakeOpenAI's argument) at each effort;
# OpenAI's default effort is medium.
EFFORT_SHARE = {"minimal": 0, "low": 1, "medium": 2, "high": 4}

# The chat completion fields of Azure OpenAI API version 2024-10-21 (GA): structured outputs
# and max_completion_tokens, but neither prompt_cache_key nor reasoning_effort.
KNOWN_FIELDS = frozenset({
    "model", "messages", "temperature", "top_p", "n", "stream", "stream_options", "stop",
    "max_tokens", "max_completion_tokens", "presence_penalty", "frequency_penalty",
    "logit_bias", "user", "response_format", "seed", "tools", "tool_choice", "logprobs",
    "top_logprobs", "functions", "function_call", "parallel_tool_calls", "data_sources",
})


def openai_error(message: str, param: str | None, code: str | None,
                 kind: str = "invalid_request_error") -> dict:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def unsupported_parameter(param: str, hint: str = "") -> Rejection:
    """OpenAI's 400 for a parameter the model does not take at all."""
    tail = f" {hint}" if hint else ""
    return 400, openai_error(
        f"Unsupported parameter: '{param}' is not supported with this model.{tail}",
        param, "unsupported_parameter")


def _reasoning_check(body: dict) -> Rejection | None:
    if "max_tokens" in body:
        return unsupported_parameter("max_tokens", "Use 'max_completion_tokens' instead.")
    temperature = body.get("temperature")
    if temperature is not None and temperature != 1:
        return 400, openai_error(
            f"Unsupported value: 'temperature' does not support {json.dumps(temperature)} "
            "with this model. Only the default (1) value is supported.", "temperature",
            "unsupported_value")
    for param in ("top_p", "logprobs", "top_logprobs", "presence_penalty",
                  "frequency_penalty", "logit_bias", "stop"):
        if param in body:
            return unsupported_parameter(param)
    effort = body.get("reasoning_effort")
    if effort is not None and effort not in REASONING_EFFORTS:
        return 400, openai_error(
            f"Unsupported value: 'reasoning_effort' does not support '{effort}' with this "
            "model. Supported values are: 'minimal', 'low', 'medium', and 'high'.",
            "reasoning_effort", "unsupported_value")
    return None


def _json_schema_type(body: dict) -> bool:
    return (body.get("response_format") or {}).get("type") == "json_schema"


# llama_cpp/server/app.py registers POST /v1/chat/completions on this line (0.3.36): FastAPI's
# RequestValidationError names it, and llama_cpp.server.errors.RouteErrorHandler wraps every
# exception that is not an HTTPException (request validation included) in a 500.
LLAMA_APP = "/opt/llama/lib/python3.11/site-packages/llama_cpp/server/app.py"


def _llama_check(body: dict) -> Rejection | None:
    kind = (body.get("response_format") or {}).get("type")
    if kind is None or kind in ("text", "json_object"):
        return None
    message = (
        "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
        "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': "
        f"'{kind}', 'ctx': {{'expected': \"'text' or 'json_object'\"}}}}\n\n"
        f"  File \"{LLAMA_APP}\", line 376, in create_chat_completion\n"
        "    POST /v1/chat/completions")
    return 500, openai_error(message, None, None, "internal_server_error")


def _no_logprobs_check(body: dict) -> Rejection | None:
    for param in ("logprobs", "top_logprobs"):
        if param in body:
            return unsupported_parameter(param)
    return None


def _strict_fields_check(body: dict, known: frozenset[str] = KNOWN_FIELDS) -> Rejection | None:
    unknown = sorted(set(body) - known)
    if not unknown:
        return None
    noun = "argument" if len(unknown) == 1 else "arguments"
    return 400, openai_error(f"Unrecognized request {noun} supplied: {', '.join(unknown)}",
                             None, None)


def _no_json_schema_check(body: dict) -> Rejection | None:
    if _json_schema_type(body):
        return 400, openai_error("This response_format type is unavailable now", None,
                                 "invalid_request_error")
    return None


def _no_stream_check(body: dict) -> Rejection | None:
    """OpenAI's 400 for a model that answers only whole (as its first reasoning models did)."""
    if body.get("stream"):
        return 400, openai_error(
            "Unsupported value: 'stream' does not support true with this model. Only the "
            "default (false) value is supported.", "stream", "unsupported_value")
    return None


def _no_stream_options_check(body: dict) -> Rejection | None:
    """An API version or proxy that predates `stream_options` (Azure OpenAI's 2024-02-01)."""
    if "stream_options" in body:
        return 400, openai_error("Unrecognized request argument supplied: stream_options",
                                 None, None)
    return None


@dataclass(frozen=True)
class Received:
    """One POST as the server received it (header names lower-case), and the status sent."""

    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: dict
    status: int


@dataclass(frozen=True)
class Profile:
    """What a strict server rejects and how it meters an answer.

    Attributes:
        name: the profile's name ("+"-joined for a combination).
        checks: request body -> (status, error body) for a rejected request, else None; the
            first rejection wins (a real server reports one problem at a time).
        budget_keys: the request fields that cap the answer's tokens, in order.
        reasoning: hidden reasoning tokens are spent (and reported) before the answer.
        azure: Azure OpenAI's URL shape, api-key header and api-version (see
            `azure_rejection`).
        sees_system: the model sees (and the usage report counts) the system message.
    """

    name: str
    checks: tuple[Check, ...] = ()
    budget_keys: tuple[str, ...] = ("max_completion_tokens", "max_tokens")
    reasoning: bool = False
    azure: bool = False
    sees_system: bool = True

    def rejection(self, body: dict) -> Rejection | None:
        for check in self.checks:
            found = check(body)
            if found is not None:
                return found
        return None

    def budget(self, body: dict) -> int | None:
        for key in self.budget_keys:
            if body.get(key):
                return int(body[key])
        return None


PROFILES: dict[str, Profile] = {
    "permissive": Profile("permissive"),
    "openai-reasoning": Profile("openai-reasoning", (_reasoning_check,),
                                ("max_completion_tokens",), reasoning=True),
    "llama-cpp-python": Profile("llama-cpp-python", (_llama_check,), ("max_tokens",)),
    "no-logprobs": Profile("no-logprobs", (_no_logprobs_check,)),
    "strict-fields": Profile("strict-fields", (_strict_fields_check,)),
    "no-json-schema": Profile("no-json-schema", (_no_json_schema_check,)),
    "azure": Profile("azure", azure=True),
    "drops-system": Profile("drops-system", sees_system=False),
    "no-stream": Profile("no-stream", (_no_stream_check,)),
    # An API version that predates stream_options (Azure OpenAI's 2024-02-01, older proxies).
    "no-stream-options": Profile("no-stream-options", (_no_stream_options_check,)),
}


def profile_named(name: str) -> Profile:
    """A profile by name, or several joined with "+" (their checks in the order named)."""
    parts = [p.strip() for p in name.split("+")]
    unknown = [p for p in parts if p not in PROFILES]
    if unknown:
        raise ValueError(f"unknown profile(s) {unknown}; known: {sorted(PROFILES)}")
    combined = PROFILES[parts[0]]
    for part in parts[1:]:
        other = PROFILES[part]
        keys = other.budget_keys if other.budget_keys != Profile.budget_keys else \
            combined.budget_keys
        combined = replace(combined, checks=combined.checks + other.checks, budget_keys=keys,
                           reasoning=combined.reasoning or other.reasoning,
                           azure=combined.azure or other.azure,
                           sees_system=combined.sees_system and other.sees_system)
    return replace(combined, name=name)


def reasoning_tokens(body: dict, per_effort: int) -> int:
    """The hidden reasoning tokens a reasoning model spends on a request."""
    return EFFORT_SHARE[body.get("reasoning_effort") or "medium"] * per_effort


AZURE_NOT_FOUND = {"error": {"code": "404", "message": "Resource not found"}}
AZURE_ACCESS_DENIED = {"error": {"code": "401", "message": (
    "Access denied due to invalid subscription key or wrong API endpoint. Make sure to "
    "provide a valid key for an active subscription and use a correct regional API endpoint "
    "for your resource.")}}
AZURE_DEPLOYMENT_NOT_FOUND = {"error": {"code": "DeploymentNotFound", "message": (
    "The API deployment for this resource does not exist. If you created the deployment "
    "within the last 5 minutes, please wait a moment and try again.")}}


def azure_rejection(path: str, query: dict[str, list[str]], headers: dict[str, str],
                    deployments: tuple[str, ...], api_key: str) -> Rejection | None:
    """Azure OpenAI's answer to a request it does not serve: a path other than
    /openai/deployments/{deployment}/chat/completions or no api-version: 404 "Resource not
    found"; no or another api-key: 401; an unknown deployment: 404 DeploymentNotFound."""
    parts = path.strip("/").split("/")
    if len(parts) != 5 or parts[:2] != ["openai", "deployments"] or \
            parts[3:] != ["chat", "completions"] or not query.get("api-version"):
        return 404, AZURE_NOT_FOUND
    if headers.get("api-key") != api_key:
        return 401, AZURE_ACCESS_DENIED
    if parts[2] not in deployments:
        return 404, AZURE_DEPLOYMENT_NOT_FOUND
    return None
