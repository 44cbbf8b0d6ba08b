"""What an OpenAI-compatible endpoint accepts, and the request rt4chart sends it.

Servers differ (see the README's table of server families): OpenAI's chat models take strict
JSON schemas, ``temperature: 0``, ``seed`` and ``logprobs``; its reasoning models reject all
but the first; llama-cpp-python rejects ``json_schema`` and ignores ``max_completion_tokens``;
older Azure API versions and some proxies reject fields they do not know. A
:class:`Capabilities` says what to send; it starts with everything and loses a feature only when
the endpoint names it in an error (:func:`corrected`) or the start-up probe (``probe.py``) sees
it ignored. Never from a model's name.

Structured output falls back along :data:`LADDER`: strict ``json_schema``, non-strict
``json_schema``, ``json_object`` with the schema (llama.cpp's grammar extension), ``json_object``,
then plain text with the JSON extracted. Below ``json_schema`` the schema is also written into
the system message. Every reply is validated against the same schema on our side, whatever the
mode.

The capabilities are part of the run's identity: they are encoded into the judge option
``negotiated`` (so every worker sends the same request without probing again) and into the
prompt hash (a reply obtained in one mode is not reused as if it came from another).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

# The most corrections one call may go through: every one removes a field or steps down.
MAX_CORRECTIONS = 12
LADDER = ("json_schema_strict", "json_schema", "json_object_schema", "json_object", "text")
TOKEN_PARAMS = ("max_completion_tokens", "max_tokens")
# Top-level request fields that may be dropped when an endpoint rejects them; each entry drops
# its group together (top_logprobs means nothing without logprobs).
DROPPABLE = {"temperature": ("temperature",), "seed": ("seed",),
             "logprobs": ("logprobs", "top_logprobs"), "top_logprobs": ("logprobs", "top_logprobs"),
             "prompt_cache_key": ("prompt_cache_key",), "reasoning_effort": ("reasoning_effort",)}
# JSON Schema keywords that bound a reply's size: grammar-constrained servers (llama.cpp, vLLM)
# enforce them; OpenAI's strict mode rejects some of them ("'maxLength' is not permitted").
BOUND_KEYWORDS = ("maxLength", "maxItems", "minItems")
# Words by which a server error says the request was refused for its form, not for an outage:
# a 5xx counts as naming a parameter only with one of these (llama-cpp-python answers a
# request-validation error with HTTP 500).
VALIDATION_WORDS = ("validation error", "input should be", "unsupported", "unrecognized",
                    "not supported", "invalid", "extra inputs", "not permitted", "unknown",
                    "not allowed", "does not support", "only the default")


@dataclass(frozen=True)
class Capabilities:
    """What rt4chart sends to one endpoint and model."""

    structured: str = "json_schema_strict"
    bounds: bool = True  # the schema's size bounds are sent (see BOUND_KEYWORDS)
    token_param: str = "max_completion_tokens"
    dropped: frozenset[str] = field(default_factory=frozenset)
    # How replies travel, not what is asked (so not part of the prompt hash): as a stream
    # (streamed.py: an idle timeout between tokens) with the usage report in its last chunk,
    # or whole where the endpoint cannot stream with its usage (costs are never guessed).
    stream: bool = True

    def __post_init__(self) -> None:
        if self.structured not in LADDER:
            raise ValueError(f"structured output mode {self.structured!r}: expected one of "
                             f"{', '.join(LADDER)}")
        if self.token_param not in TOKEN_PARAMS:
            raise ValueError(f"token parameter {self.token_param!r}: expected one of "
                             f"{', '.join(TOKEN_PARAMS)}")
        object.__setattr__(self, "dropped", frozenset(self.dropped))

    def encode(self, transport: bool = True) -> str:
        """A short, stable text form (the judge option ``negotiated``; without `transport`,
        what the prompt hash records: how replies travel does not change them)."""
        text = (f"structured={self.structured};bounds={int(self.bounds)};"
                f"tokens={self.token_param};drop={','.join(sorted(self.dropped))}")
        if transport:  # only what differs from the default: earlier texts stay valid
            text += "" if self.stream else ";stream=0"
        return text

    @classmethod
    def decode(cls, text: str) -> Capabilities:
        parts = dict(p.partition("=")[::2] for p in text.split(";") if p)
        try:
            return cls(parts["structured"], parts.get("bounds", "1") == "1",
                       parts.get("tokens", "max_completion_tokens"),
                       frozenset(d for d in parts.get("drop", "").split(",") if d),
                       parts.get("stream", "1") == "1")
        except KeyError as exc:
            raise ValueError(f"negotiated capabilities {text!r}: missing {exc}") from None

    def sends(self, name: str) -> bool:
        return name not in self.dropped

    def describe(self) -> dict[str, Any]:
        """For logs, summary.json and check-judge."""
        return {"structured_output": self.structured, "schema_bounds": self.bounds,
                "token_parameter": self.token_param, "dropped": sorted(self.dropped),
                "logprobs": self.sends("logprobs"), "streaming": self.stream}


def describe_change(before: Capabilities, after: Capabilities) -> str:
    """What changed between two request forms, as a sentence for people (`check-judge`,
    the run's log), e.g. "structured output json_schema_strict -> json_object; the schema's
    size bounds are no longer sent"."""
    parts = []
    if before.structured != after.structured:
        parts.append(f"structured output {before.structured} -> {after.structured}")
    if before.bounds != after.bounds:
        parts.append("the schema's size bounds are " + ("now" if after.bounds else "no longer")
                     + " sent")
    if before.token_param != after.token_param:
        parts.append(f"the output limit is sent as {after.token_param} instead of "
                     f"{before.token_param}")
    if after.dropped - before.dropped:
        parts.append("no longer sent: " + ", ".join(sorted(after.dropped - before.dropped)))
    if before.dropped - after.dropped:
        parts.append("sent again: " + ", ".join(sorted(before.dropped - after.dropped)))
    if before.stream != after.stream:
        parts.append("replies are " + ("streamed" if after.stream else "read whole, not "
                                       "streamed"))
    return "; ".join(parts) or "no change"


def strip_bounds(schema: Any) -> Any:
    """The schema without its size bounds (for an endpoint that rejects them)."""
    if isinstance(schema, dict):
        return {k: strip_bounds(v) for k, v in schema.items() if k not in BOUND_KEYWORDS}
    if isinstance(schema, list):
        return [strip_bounds(v) for v in schema]
    return schema


def schema_instruction(schema: dict) -> str:
    """What the system message says when the endpoint cannot be given the schema itself."""
    return ("\n\nReply with a single JSON object and nothing else (no prose, no code fence). It "
            "must match this JSON schema:\n" + json.dumps(schema, separators=(",", ":")))


def request_body(caps: Capabilities, *, model: str, messages: list[dict], schema_name: str,
                 schema: dict, max_tokens: int, temperature: float, seed: int,
                 logprobs: bool, top_logprobs: int, cache_key: str | None,
                 reasoning_effort: str | None) -> dict[str, Any]:
    """The chat completion request for these capabilities."""
    sent = schema if caps.bounds else strip_bounds(schema)
    messages = copy.deepcopy(messages)
    if caps.structured in ("json_object_schema", "json_object", "text"):
        messages[0]["content"] += schema_instruction(sent)
    body: dict[str, Any] = {"model": model, "messages": messages, caps.token_param: max_tokens}
    optional = {"temperature": temperature, "seed": seed, "reasoning_effort": reasoning_effort,
                "prompt_cache_key": cache_key}
    body.update({k: v for k, v in optional.items() if v is not None and caps.sends(k)})
    if logprobs and caps.sends("logprobs"):
        body.update(logprobs=True, top_logprobs=top_logprobs)
    if caps.structured.startswith("json_schema"):
        body["response_format"] = {"type": "json_schema", "json_schema": {
            "name": schema_name, "strict": caps.structured == "json_schema_strict",
            "schema": sent}}
    elif caps.structured == "json_object_schema":
        body["response_format"] = {"type": "json_object", "schema": sent}
    elif caps.structured == "json_object":
        body["response_format"] = {"type": "json_object"}
    return body


def json_in(text: str) -> str:
    """The first JSON object in a plain-text reply (code fences and prose around it allowed);
    the text itself when there is none (its parse then fails as a malformed reply)."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, end = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return text[match.start():end]
    return text


_KNOWN = ("max_completion_tokens", "max_tokens", "top_logprobs", "logprobs", "temperature",
          "seed", "prompt_cache_key", "reasoning_effort", "response_format", "json_schema",
          "strict", "stream", "stream_options", "include_usage", *BOUND_KEYWORDS)
STREAM_FIELDS = ("stream", "stream_options", "include_usage")


def named_parameter(status: int, message: str, param: str | None) -> str | None:
    """The request field an error refuses, or None when it names none (an outage, a bad key,
    a missing model). A 5xx counts only when it reads as a request-validation error."""
    text = message or ""
    lowered = text.lower()
    if status >= 500 and not any(w in lowered for w in VALIDATION_WORDS):
        return None
    if status not in (400, 422) and status < 500:
        return None
    if param:
        leaf = re.split(r"[.\[\]]", param)
        for name in (param, *leaf):
            if name in _KNOWN:
                return name
    found = [(m.start(), name) for name in _KNOWN
             for m in re.finditer(rf"(?<![A-Za-z_]){re.escape(name)}(?![A-Za-z_])", text)]
    if not found:
        return None
    bounds = [f for f in found if f[1] in BOUND_KEYWORDS]
    if bounds:  # "Invalid schema for response_format 'x': ... 'maxLength' is not permitted"
        return min(bounds)[1]
    # The first one named: "'max_tokens' is not supported ... Use 'max_completion_tokens'".
    return min(found)[1]


def corrected(caps: Capabilities, status: int, message: str,
              param: str | None = None) -> tuple[Capabilities, str] | None:
    """The capabilities after an error that names a request field, and what changed; None when
    the error names none or there is nothing left to change (the error then stands)."""
    name = named_parameter(status, message, param)
    if name is None:
        return None
    if name in STREAM_FIELDS:
        return unstreamed(caps, f"the endpoint refuses {name}")
    if name in DROPPABLE:
        group = DROPPABLE[name]
        if all(g in caps.dropped for g in group):
            return None
        return replace(caps, dropped=caps.dropped | set(group)), f"dropped {'/'.join(group)}"
    if name in TOKEN_PARAMS:
        other = TOKEN_PARAMS[1 - TOKEN_PARAMS.index(name)]
        if caps.token_param != name:
            return None  # it refuses the one we do not send: nothing to learn
        return replace(caps, token_param=other), f"output limit sent as {other}"
    if name in BOUND_KEYWORDS and caps.bounds:
        return replace(caps, bounds=False), "schema size bounds dropped"
    return step_down(caps)


def unstreamed(caps: Capabilities, why: str) -> tuple[Capabilities, str] | None:
    """Replies read whole from now on: the endpoint cannot stream them with their usage
    report (`stream` or `stream_options` refused, or no usage in a streamed reply)."""
    if not caps.stream:
        return None
    return replace(caps, stream=False), (f"{why}: replies read whole, each within its reply's "
                                         "deadline (measured from the whole replies)")


def step_down(caps: Capabilities) -> tuple[Capabilities, str] | None:
    """One step down the structured-output ladder (None at its foot)."""
    at = LADDER.index(caps.structured)
    if at + 1 >= len(LADDER):
        return None
    lower = LADDER[at + 1]
    return replace(caps, structured=lower), f"structured output: {lower}"


def error_text(exc: Any) -> tuple[str, str | None]:
    """An API error's message (the server's JSON body, whole: FastAPI puts the field in
    `detail[].loc`) and the field it names in `param`, if any."""
    body = getattr(exc, "body", None)
    param = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("param"), str):
            param = inner["param"]
        text = json.dumps(body, ensure_ascii=False)
    else:
        text = str(body) if body is not None else ""
    return f"{getattr(exc, 'message', '')} {text}".strip(), param


def with_reasoning(schema: Any, chars: int) -> Any:
    """The schema with its free-text `reasoning` fields bounded to `chars` characters, or
    without them (0): most of a small local model's output, and time, goes there."""
    if isinstance(schema, list):
        return [with_reasoning(v, chars) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: with_reasoning(v, chars) for k, v in schema.items()}
    props = out.get("properties")
    if isinstance(props, dict) and "reasoning" in props:
        if chars <= 0:
            out["properties"] = {k: v for k, v in props.items() if k != "reasoning"}
            out["required"] = [r for r in out.get("required", []) if r != "reasoning"]
        else:
            out["properties"] = {**props, "reasoning": {**props["reasoning"], "maxLength": chars}}
    return out


def loads_lenient(text: str) -> Any:
    """A reply's JSON. Control characters inside strings (a raw newline in a quote, which some
    grammar-constrained servers let through) are accepted: they change no value that matters."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text, strict=False)
