"""A whole chat completion read without the `openai` client's model construction, and its
request sent without the client's parameter transform: the two per-call costs of the client
that the judge pays on every call and does not need.

`view(raw)` is what ``raw.parse()`` gives for a JSON object body (a ``ChatCompletion`` built
with ``construct``: no validation, values as sent), as attribute access over the parsed JSON,
built lazily (only the fields the judge reads are ever wrapped). A field the body lacks reads
as None when the `openai` model gives it a None default (`OPTIONAL`), and raises
AttributeError otherwise, as the constructed model does; so every ``getattr(x, name, None)``
and every direct read of the judge sees the same value. Any other body (not JSON by its
content type, JSON that orjson refuses, JSON that is not an object) goes through the client's
own ``raw.parse()``, whose answer for it is unchanged.

`split_request(body)` sends the request body's fields other than ``model``, ``messages`` and
``stream`` as ``extra_body``: the client then sends them as given (they are plain JSON: the
transform is the identity on them) instead of walking the whole JSON schema on every call.
"""

from __future__ import annotations

from typing import Any

import orjson

# Fields of the chat completion models (ChatCompletion, Choice, ChatCompletionMessage,
# ChoiceLogprobs, ChatCompletionTokenLogprob, CompletionUsage and its details) whose default
# is None: missing from a body, they read as None; any other missing field is an
# AttributeError, as on the constructed model.
OPTIONAL = frozenset({
    "usage", "service_tier", "system_fingerprint", "logprobs", "content", "refusal",
    "annotations", "audio", "function_call", "tool_calls", "bytes", "prompt_tokens_details",
    "completion_tokens_details", "cached_tokens", "audio_tokens", "reasoning_tokens",
    "accepted_prediction_tokens", "rejected_prediction_tokens",
})
# What stays a keyword of `create` (it decides the call: the model and deployment, the
# messages, and whether the reply is a stream).
KEYWORDS = ("model", "messages", "stream")


class Fields:
    """Attribute access over one parsed JSON object (see the module docstring)."""

    __slots__ = ("_data",)

    def __init__(self, data: dict) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        try:
            value = self._data[name]
        except KeyError:
            if name in OPTIONAL:
                return None
            raise AttributeError(name) from None
        return wrap(value)

    def __repr__(self) -> str:
        return f"Fields({self._data!r})"


def wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return Fields(value)
    if isinstance(value, list):
        return [wrap(v) for v in value]
    return value


def view(raw: Any) -> Any:
    """The completion in a raw (whole, non-streamed) response: a `Fields` view of a JSON
    object body, else what ``raw.parse()`` makes of the body."""
    content_type = raw.headers.get("content-type", "*").split(";")[0]
    if content_type.endswith("json"):
        try:
            data = orjson.loads(raw.content)
        except orjson.JSONDecodeError:
            data = None  # json's own reading (NaN, lone surrogates...) decides, below
        if isinstance(data, dict):
            return Fields(data)
    return raw.parse()


def split_request(body: dict[str, Any]) -> dict[str, Any]:
    """`create` keyword arguments for `body`: its KEYWORDS, the rest as ``extra_body``."""
    kwargs = {k: body[k] for k in KEYWORDS if k in body}
    extra = {k: v for k, v in body.items() if k not in KEYWORDS}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs
