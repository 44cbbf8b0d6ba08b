"""reply_view reads a whole reply as the openai client's parse() does, without its models."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from rt4chart.transforms.judges.openai.faults import NotACompletion, completion_of
from rt4chart.transforms.judges.openai.logprobs import p_unsupported
from rt4chart.transforms.judges.openai.pricing import reported_usage
from rt4chart.transforms.judges.openai.reply_view import read_body, split_request

FULL = {
    "id": "c-1", "object": "chat.completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": '{"label": "ENT"}', "refusal": None},
        "logprobs": {"content": [
            {"token": '{"label": "', "logprob": -0.1, "bytes": None, "top_logprobs": []},
            {"token": "ENT", "logprob": -0.2, "bytes": [69, 78, 84], "top_logprobs": [
                {"token": "ENT", "logprob": -0.2, "bytes": [69, 78, 84]},
                {"token": "CON", "logprob": -1.9, "bytes": [67, 79, 78]}]}]}}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17,
              "prompt_tokens_details": {"cached_tokens": 4}},
}
SPARSE = {"choices": [{"message": {"role": "assistant"}}]}  # fields left to construct()


def _response(body: bytes | str, content_type: str = "application/json") -> httpx.Response:
    data = body.encode() if isinstance(body, str) else body
    return httpx.Response(200, content=data, headers={"content-type": content_type})


def _constructed(data: dict):
    return openai.types.chat.ChatCompletion.construct(**data)


def _read(completion) -> tuple:
    """Everything the judge reads of a completion (openai_judge._parse, probe, pricing)."""
    choice = completion.choices[0]
    message = choice.message
    return (message.content, getattr(message, "refusal", None),
            getattr(choice, "finish_reason", None),
            reported_usage(getattr(completion, "usage", None), None),
            p_unsupported(message.content or "", getattr(choice, "logprobs", None)))


@pytest.mark.parametrize("data", [FULL, SPARSE])
def test_the_view_reads_what_the_constructed_model_reads(data):
    view = read_body(_response(json.dumps(data)))
    assert _read(view) == _read(_constructed(data))


def test_a_missing_field_reads_none_as_on_the_model():
    view, model = read_body(_response(json.dumps(SPARSE))), _constructed(SPARSE)
    for name in ("finish_reason", "index", "logprobs"):
        assert getattr(view.choices[0], name) is getattr(model.choices[0], name) is None
    assert view.choices[0].message.content is model.choices[0].message.content is None
    assert view.usage is model.usage is None


@pytest.mark.parametrize("body, content_type", [
    ("<html><body>502 Bad Gateway</body></html>", "text/html; charset=utf-8"),
    ("not json", "application/json"),
    ('{"detail": "nope"}', "application/json"),
    ('["a", "list"]', "application/json"),
    ("null", "application/json"),
])
def test_a_body_that_is_not_a_completion_is_not_a_completion(body, content_type):
    response = _response(body, content_type)
    with pytest.raises(NotACompletion, match="HTTP 200 reply is not a chat completion"):
        completion_of(response, lambda: read_body(response))


def test_json_orjson_refuses_is_read_as_the_client_reads_it():
    data = dict(FULL, usage={"prompt_tokens": float("nan"), "completion_tokens": 5})
    view = read_body(_response(json.dumps(data)))  # NaN: json reads it, orjson does not
    assert view.usage.completion_tokens == 5
    assert view.usage.prompt_tokens != view.usage.prompt_tokens  # NaN


def test_a_json_body_under_another_content_type_is_still_read():
    view = read_body(_response(json.dumps(FULL), "text/plain"))
    assert view.choices[0].message.content == '{"label": "ENT"}'


def test_a_stream_request_keeps_its_deciding_fields_as_keywords():
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True,
            "response_format": {"type": "json_object"}, "max_completion_tokens": 9}
    kwargs = split_request(body)
    assert {k: v for k, v in kwargs.items() if k != "extra_body"} == {
        "model": "m", "messages": body["messages"], "stream": True}
    assert {**kwargs["extra_body"], **{k: kwargs[k] for k in ("model", "messages", "stream")}
            } == body
