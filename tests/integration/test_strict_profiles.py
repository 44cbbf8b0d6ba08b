"""The local test server's strict profiles, through the real `openai` client: each rejects what
its real server rejects, with that server's status and error body, and accepts the rest."""

from __future__ import annotations

import json

import openai
import pytest

from rt4chart import prompts

from fake_openai_server import FakeOpenAI
from strict_profiles import (
    AZURE_ACCESS_DENIED,
    AZURE_DEPLOYMENT_NOT_FOUND,
    AZURE_NOT_FOUND,
    AZURE_TEST_KEY,
    profile_named,
)

MESSAGES = [{"role": "system", "content": "You check claims."},
            {"role": "user", "content": "<passage>\nThe sky is blue.\n</passage>\n"
                                        "<claim>\nThe sky is blue.\n</claim>"}]
JSON_SCHEMA = {"type": "json_schema", "json_schema": {
    "name": "verify", "strict": True, "schema": prompts.schema("verify")}}
JSON_OBJECT = {"type": "json_object", "schema": prompts.schema("verify")}
# What rt4chart sends today on a final verification (see OpenAIJudge._request_body).
RT4CHART = {"temperature": 0.0, "seed": 42, "max_completion_tokens": 256,
            "response_format": JSON_SCHEMA, "logprobs": True, "top_logprobs": 5,
            "extra_body": {"prompt_cache_key": "rt4chart-0123"}}


def _client(server: FakeOpenAI) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)


def _create(server: FakeOpenAI, **params):
    args = {"model": "gpt-5-mini", "messages": MESSAGES, **params}
    return _client(server).chat.completions.create(**args)


def _rejected(server: FakeOpenAI, error: type[openai.APIStatusError], **params) -> dict:
    with pytest.raises(error) as caught:
        _create(server, **params)
    return caught.value.response.json()


def test_permissive_by_default_and_every_request_recorded():
    with FakeOpenAI() as server:
        reply = _create(server, **RT4CHART)
    assert json.loads(reply.choices[0].message.content)["label"] == "ENT"
    (seen,) = server.received
    assert seen.status == 200 and seen.path == "/v1/chat/completions"
    assert seen.body["prompt_cache_key"] == "rt4chart-0123" and seen.body["temperature"] == 0
    assert seen.headers["authorization"] == "Bearer sk-test"


def test_reasoning_rejects_temperature_with_openais_body():
    with FakeOpenAI(profile="openai-reasoning") as server:
        body = _rejected(server, openai.BadRequestError, temperature=0)
        _rejected(server, openai.BadRequestError, temperature=0.2)
    assert body == {"error": {
        "message": "Unsupported value: 'temperature' does not support 0 with this model. "
                   "Only the default (1) value is supported.",
        "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}}
    assert [r.status for r in server.received] == [400, 400] and not server.requests


@pytest.mark.parametrize("params, param, hint", [
    ({"max_tokens": 50}, "max_tokens", " Use 'max_completion_tokens' instead."),
    ({"logprobs": True, "top_logprobs": 5}, "logprobs", ""),
    ({"top_logprobs": 5}, "top_logprobs", ""),
    ({"top_p": 0.5}, "top_p", ""),
])
def test_reasoning_rejects_parameters_it_does_not_take(params, param, hint):
    with FakeOpenAI(profile="openai-reasoning") as server:
        body = _rejected(server, openai.BadRequestError, **params)
    assert body["error"] == {
        "message": f"Unsupported parameter: '{param}' is not supported with this model.{hint}",
        "type": "invalid_request_error", "param": param, "code": "unsupported_parameter"}


def test_reasoning_accepts_seed_effort_and_counts_hidden_tokens():
    with FakeOpenAI(profile="openai-reasoning", reasoning_tokens=40) as server:
        low = _create(server, seed=42, temperature=1, reasoning_effort="low",
                      max_completion_tokens=400, response_format=JSON_SCHEMA)
        medium = _create(server, max_completion_tokens=400, response_format=JSON_SCHEMA)
        bad = _rejected(server, openai.BadRequestError, reasoning_effort="extreme")
    assert low.choices[0].finish_reason == "stop"
    assert low.usage.completion_tokens_details.reasoning_tokens == 40
    visible = len(low.choices[0].message.content) // 4 + 1
    assert low.usage.completion_tokens == 40 + visible  # reasoning counted inside
    assert medium.usage.completion_tokens_details.reasoning_tokens == 80  # the default effort
    assert bad["error"]["param"] == "reasoning_effort"
    assert bad["error"]["code"] == "unsupported_value"


def test_reasoning_spends_the_budget_before_the_answer():
    with FakeOpenAI(profile="openai-reasoning", reasoning_tokens=64) as server:
        starved = _create(server, reasoning_effort="medium", max_completion_tokens=100)
        cut = _create(server, reasoning_effort="low", max_completion_tokens=70)
    # The whole budget went on reasoning: no answer at all, as OpenAI reports it.
    assert starved.choices[0].finish_reason == "length"
    assert starved.choices[0].message.content == ""
    assert starved.usage.completion_tokens == 100
    assert starved.usage.completion_tokens_details.reasoning_tokens == 100
    # Reasoning fitted, the visible answer did not (it would fit on its own).
    assert cut.choices[0].finish_reason == "length"
    assert 0 < len(cut.choices[0].message.content) <= (70 - 64) * 4


def test_llama_cpp_python_rejects_json_schema_with_a_500_naming_pydantic():
    with FakeOpenAI(profile="llama-cpp-python") as server:
        body = _rejected(server, openai.InternalServerError, response_format=JSON_SCHEMA)
    error = body["error"]
    assert error["type"] == "internal_server_error" and error["code"] is None
    assert "Input should be 'text' or 'json_object'" in error["message"]
    assert "('body', 'response_format', 'type')" in error["message"]


def test_llama_cpp_python_takes_json_object_and_ignores_what_it_does_not_know():
    with FakeOpenAI(profile="llama-cpp-python") as server:
        uncapped = _create(server, response_format=JSON_OBJECT, max_completion_tokens=3,
                           reasoning_effort="low", extra_body={"prompt_cache_key": "k"})
        capped = _create(server, response_format=JSON_OBJECT, max_tokens=3)
        plain = _create(server)
    assert json.loads(uncapped.choices[0].message.content)["label"] == "ENT"
    assert uncapped.choices[0].finish_reason == "stop"  # max_completion_tokens is not read
    assert capped.choices[0].finish_reason == "length"
    assert json.loads(plain.choices[0].message.content)["label"] == "ENT"
    assert [r.status for r in server.received] == [200, 200, 200]


def test_a_template_that_drops_the_system_message_counts_the_rest_only():
    with FakeOpenAI(profile="llama-cpp-python") as full, \
            FakeOpenAI(profile="llama-cpp-python+drops-system") as dropped:
        sent = _create(full).usage.prompt_tokens
        seen = _create(dropped).usage.prompt_tokens
    assert sent == sum(len(m["content"]) for m in MESSAGES) // 4 + 1
    assert seen == len(MESSAGES[1]["content"]) // 4 + 1 < sent


def test_no_logprobs_names_the_parameter():
    with FakeOpenAI(profile="no-logprobs") as server:
        body = _rejected(server, openai.BadRequestError, logprobs=True, top_logprobs=5)
        ok = _create(server, temperature=0, response_format=JSON_SCHEMA)
    assert body["error"]["param"] == "logprobs"
    assert "'logprobs' is not supported" in body["error"]["message"]
    assert ok.choices[0].logprobs is None


def test_strict_fields_rejects_unknown_fields_as_old_azure_does():
    with FakeOpenAI(profile="strict-fields") as server:
        one = _rejected(server, openai.BadRequestError, **RT4CHART)
        two = _rejected(server, openai.BadRequestError, reasoning_effort="low",
                        extra_body={"prompt_cache_key": "k"})
        ok = _create(server, **{k: v for k, v in RT4CHART.items() if k != "extra_body"})
    assert one == {"error": {
        "message": "Unrecognized request argument supplied: prompt_cache_key",
        "type": "invalid_request_error", "param": None, "code": None}}
    assert two["error"]["message"] == (
        "Unrecognized request arguments supplied: prompt_cache_key, reasoning_effort")
    assert ok.choices[0].finish_reason == "stop"


def test_no_json_schema_takes_json_object():
    with FakeOpenAI(profile="no-json-schema") as server:
        body = _rejected(server, openai.BadRequestError, response_format=JSON_SCHEMA)
        ok = _create(server, response_format={"type": "json_object"})
    assert body == {"error": {"message": "This response_format type is unavailable now",
                              "type": "invalid_request_error", "param": None,
                              "code": "invalid_request_error"}}
    assert json.loads(ok.choices[0].message.content)["label"] == "ENT"


def _azure(server: FakeOpenAI, key: str = AZURE_TEST_KEY) -> openai.AzureOpenAI:
    return openai.AzureOpenAI(api_key=key, azure_endpoint=server.endpoint,
                              api_version="2024-10-21", max_retries=0)


def test_azure_serves_its_deployment_url_with_api_key_and_version():
    with FakeOpenAI(profile="azure") as server:
        reply = _azure(server).chat.completions.create(
            model="judge-deploy", messages=MESSAGES, response_format=JSON_SCHEMA)
    assert json.loads(reply.choices[0].message.content)["label"] == "ENT"
    (seen,) = server.received
    assert seen.path == "/openai/deployments/judge-deploy/chat/completions"
    assert seen.query == {"api-version": ["2024-10-21"]}
    assert seen.headers["api-key"] == AZURE_TEST_KEY and "authorization" not in seen.headers


def test_azure_rejects_unknown_deployment_wrong_key_and_missing_version():
    with FakeOpenAI(profile="azure") as server:
        with pytest.raises(openai.NotFoundError) as unknown:
            _azure(server).chat.completions.create(model="gpt-4o", messages=MESSAGES)
        with pytest.raises(openai.AuthenticationError) as denied:
            _azure(server, key="wrong").chat.completions.create(model="judge-deploy",
                                                                messages=MESSAGES)
        plain = openai.OpenAI(api_key=AZURE_TEST_KEY, max_retries=0,
                              base_url=f"{server.endpoint}/openai/deployments/judge-deploy")
        with pytest.raises(openai.NotFoundError) as unversioned:
            plain.chat.completions.create(model="judge-deploy", messages=MESSAGES)
        with pytest.raises(openai.NotFoundError) as openai_shape:
            _client(server).chat.completions.create(model="judge-deploy", messages=MESSAGES)
    assert unknown.value.response.json() == AZURE_DEPLOYMENT_NOT_FOUND
    assert denied.value.response.json() == AZURE_ACCESS_DENIED
    assert unversioned.value.response.json() == AZURE_NOT_FOUND
    assert openai_shape.value.response.json() == AZURE_NOT_FOUND
    assert [r.status for r in server.received] == [404, 401, 404, 404]


def test_profiles_combine():
    with FakeOpenAI(profile="azure+openai-reasoning") as server:
        with pytest.raises(openai.BadRequestError) as caught:
            _azure(server).chat.completions.create(model="judge-deploy", messages=MESSAGES,
                                                   temperature=0)
        reply = _azure(server).chat.completions.create(
            model="judge-deploy", messages=MESSAGES, max_completion_tokens=500)
    assert caught.value.response.json()["error"]["param"] == "temperature"
    assert reply.usage.completion_tokens_details.reasoning_tokens == 128
    with pytest.raises(ValueError, match="unknown profile"):
        profile_named("openai-reasoning+vllm")
