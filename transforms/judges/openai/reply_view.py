"""A whole chat completion requested and read without the `openai` client's parameter
transform and model construction: the two per-call costs of the client that the judge paid on
every call and does not need (its profile in tests/bench/bench_call_overhead.py).

`post_whole(client, body, ...)` sends the request body as given through the client's own
``post`` (its documented way to call an endpoint with a body of one's own; the same headers,
auth, timeout and HTTP error classes as ``create``: the transform it skips is the identity on
plain JSON) and returns the raw HTTP response. `read_body(response)` is what the client's
``parse()`` gives for it: for a JSON object, a `Fields` view, attribute access over the parsed
JSON built lazily (only the fields read are wrapped) instead of a ``ChatCompletion`` built with
``construct`` (which does not validate either: the same values); JSON that is not an object as
is; a body that is not JSON, its text, unless its content type says JSON (ValueError then).
A field the body lacks reads as None, as on the constructed model (``construct`` leaves every
missing field None, required ones included): every ``getattr(x, name, None)`` and every direct
read of the judge sees the same value.

`split_request(body)` is for streamed requests, which stay with ``create`` (its stream class):
the fields other than ``model``, ``messages`` and ``stream`` go as ``extra_body``, sent as given.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import orjson

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
            if name.startswith("_"):  # Python's protocols (copy, pickle), not reply fields
                raise AttributeError(name) from None
            return None  # a field the body lacks: None, as on the constructed model
        return wrap(value)

    def __repr__(self) -> str:
        return f"Fields({self._data!r})"


def wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return Fields(value)
    if isinstance(value, list):
        return [wrap(v) for v in value]
    return value


def read_body(response: Any) -> Any:
    """What the client's ``parse()`` makes of a whole response's body (module docstring)."""
    try:
        data = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        try:  # what orjson refuses and json reads (NaN, UTF-16...), as the client reads it
            data = json.loads(response.content)
        except ValueError:
            if response.headers.get("content-type", "*").split(";")[0].endswith("json"):
                raise
            return response.text
    return Fields(data) if isinstance(data, dict) else data


async def post_whole(client: Any, body: dict[str, Any], headers: dict[str, str] | None,
                     timeout: Any) -> Any:
    """The raw response to a non-streamed chat completion request (module docstring);
    `timeout` None: the client's."""
    options: dict[str, Any] = {}
    if headers:
        options["headers"] = headers
    if timeout is not None:
        options["timeout"] = timeout
    return await client.post("/chat/completions", cast_to=httpx.Response, body=body,
                             options=options)


def split_request(body: dict[str, Any]) -> dict[str, Any]:
    """`create` keyword arguments for `body`: its KEYWORDS, the rest as ``extra_body``."""
    kwargs = {k: body[k] for k in KEYWORDS if k in body}
    extra = {k: v for k, v in body.items() if k not in KEYWORDS}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs
