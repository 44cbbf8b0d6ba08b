"""What an endpoint's error names, and what rt4chart stops sending (capabilities.py).

The error texts here are written for this test in the shapes servers use (OpenAI's `param`,
FastAPI/pydantic's `loc`, Rust-style "unknown field", proxies' prose), not copied from the
strict profiles, so that a rule fitted to those bodies would fail here."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rt4chart import prompts
from rt4chart.transforms.judges.openai.capabilities import (
    DROPPABLE,
    LADDER,
    TOKEN_PARAMS,
    Capabilities,
    corrected,
    describe_change,
    json_in,
    loads_lenient,
    named_parameter,
    request_body,
    strip_bounds,
    with_reasoning,
)


@pytest.mark.parametrize("status, message, param, named", [
    (400, "This model does not support 'seed'.", None, "seed"),
    (400, "bad request", "top_logprobs", "top_logprobs"),
    (422, '{"detail":[{"loc":["body","prompt_cache_key"],"msg":"Extra inputs are not '
          'permitted","type":"extra_forbidden"}]}', None, "prompt_cache_key"),
    (400, "Failed to deserialize the JSON body: unknown field `reasoning_effort`, expected one "
          "of `model`, `messages`", None, "reasoning_effort"),
    (400, "'max_completion_tokens' is not a valid parameter here; send max_tokens", None,
     "max_completion_tokens"),
    (500, "pydantic_core.ValidationError: response_format.type: Input should be 'text'", None,
     "response_format"),
    (400, "Schema error at properties.evidence.items: keyword 'maxItems' is not supported",
     None, "maxItems"),
    (400, "the field seed_value is unknown", None, None),  # a longer word, not `seed`
])
def test_the_field_an_error_names(status, message, param, named):
    assert named_parameter(status, message, param) == named


@pytest.mark.parametrize("status, message", [
    (500, "upstream connect error: temperature sensor offline"),  # an outage mentioning a word
    (503, "model overloaded; logprobs unavailable"),
    (401, "invalid api key for seed project"),
    (404, "The model `response_format` does not exist"),
    (429, "Rate limit on max_tokens per minute reached"),
])
def test_outages_and_auth_errors_name_no_field_even_when_they_mention_one(status, message):
    assert named_parameter(status, message, None) is None
    assert corrected(Capabilities(), status, message) is None


def test_each_correction_removes_something_so_a_call_cannot_loop():
    caps, seen = Capabilities(), []
    errors = ["Unsupported value: 'temperature' only 1", "Unsupported parameter: 'seed'",
              "unknown field `logprobs`", "Unrecognized request argument: prompt_cache_key",
              "unknown field `reasoning_effort`"]
    for message in errors:
        caps, change = corrected(caps, 400, message)
        seen.append(change)
    assert caps.dropped == {"temperature", "seed", "logprobs", "top_logprobs",
                            "prompt_cache_key", "reasoning_effort"}
    assert corrected(caps, 400, "Unsupported parameter: 'seed'") is None  # nothing left
    steps = 0
    while (fix := corrected(caps, 400, "response_format is not supported")) is not None:
        caps, _ = fix
        steps += 1
    assert steps == len(LADDER) - 1 and caps.structured == "text"


def test_the_output_limit_switches_name_only_when_the_one_sent_is_refused():
    caps = Capabilities()
    caps, change = corrected(caps, 400, "Unsupported parameter: 'max_completion_tokens'")
    assert caps.token_param == "max_tokens" and "max_tokens" in change
    assert corrected(caps, 400, "Unsupported parameter: 'max_completion_tokens'") is None


def test_a_refused_bound_keyword_drops_the_bounds_before_the_ladder():
    message = ("Invalid schema for response_format 'verify': In context=('properties', "
               "'evidence'), 'maxItems' is not permitted.")
    caps, _ = corrected(Capabilities(), 400, message)
    assert caps.structured == "json_schema_strict" and not caps.bounds
    body = request_body(caps, model="m", messages=[{"role": "system", "content": "s"},
                                                    {"role": "user", "content": "u"}],
                        schema_name="verify", schema=prompts.schema("verify"), max_tokens=9,
                        temperature=0, seed=1, logprobs=False, top_logprobs=5, cache_key=None,
                        reasoning_effort=None)
    assert "maxLength" not in json.dumps(body) and "maxItems" not in json.dumps(body)


@pytest.mark.parametrize("mode", LADDER)
def test_each_rung_of_the_ladder_sends_the_schema_somewhere(mode):
    caps = Capabilities(mode, dropped=frozenset({"temperature"}), token_param="max_tokens")
    messages = [{"role": "system", "content": "Judge."}, {"role": "user", "content": "u"}]
    body = request_body(caps, model="m", messages=messages, schema_name="verify",
                        schema=prompts.schema("verify"), max_tokens=64, temperature=0, seed=7,
                        logprobs=True, top_logprobs=5, cache_key="k", reasoning_effort="low")
    assert body["max_tokens"] == 64 and "max_completion_tokens" not in body
    assert "temperature" not in body and body["seed"] == 7 and body["logprobs"] is True
    assert messages[0]["content"] == "Judge."  # the caller's messages are not changed
    in_prompt = '"label"' in body["messages"][0]["content"]
    rf = body.get("response_format", {})
    assert in_prompt == (mode not in ("json_schema_strict", "json_schema"))
    assert (rf.get("type") == "json_schema") == mode.startswith("json_schema")
    if mode.startswith("json_schema"):
        assert rf["json_schema"]["strict"] is (mode == "json_schema_strict")


def test_capabilities_round_trip_through_their_text_form():
    caps = Capabilities("json_object", False, "max_tokens", frozenset({"seed", "logprobs"}))
    assert Capabilities.decode(caps.encode()) == caps
    with pytest.raises(ValueError):
        Capabilities.decode("bounds=1")
    with pytest.raises(ValueError):
        Capabilities("yaml")


def test_the_json_of_a_prose_reply_and_a_reply_with_raw_control_characters():
    assert json.loads(json_in('Here you go:\n```json\n{"a": [1, {"b": "}"}]}\n```')) == {
        "a": [1, {"b": "}"}]}
    assert json_in("no json at all") == "no json at all"
    assert loads_lenient('{"q": "line one\nline two"}') == {"q": "line one\nline two"}


def test_reasoning_is_bounded_or_left_out_everywhere_it_appears():
    many = prompts.schema("verify_many")
    out = with_reasoning(many, 0)
    item = out["properties"]["verdicts"]["items"]
    assert "reasoning" not in item["properties"] and "reasoning" not in item["required"]
    short = with_reasoning(prompts.schema("decompose"), 120)
    assert short["properties"]["reasoning"]["maxLength"] == 120
    assert "maxLength" not in json.dumps(strip_bounds(short))


_CAPS = st.builds(Capabilities, st.sampled_from(LADDER), st.booleans(),
                  st.sampled_from(TOKEN_PARAMS),
                  st.frozensets(st.sampled_from(sorted(DROPPABLE)), max_size=3), st.booleans())


@given(before=_CAPS, after=_CAPS)
def test_a_change_of_request_form_is_told_as_a_sentence_not_the_internal_string(before, after):
    """check-judge's "adapted:" lines (issue 48, point 7): every aspect that changed is named
    in words; the option string (`structured=...;bounds=1;...`) never shows."""
    said = describe_change(before, after)
    assert "=" not in said and ";bounds" not in said
    assert (said == "no change") == (before == after)
    assert (f"structured output {before.structured} -> {after.structured}" in said) == (
        before.structured != after.structured)
    assert ("size bounds" in said) == (before.bounds != after.bounds)
    assert (f"sent as {after.token_param}" in said) == (before.token_param != after.token_param)
    for name in after.dropped - before.dropped:
        assert name in said.split("no longer sent: ")[1]
    assert ("streamed" in said) == (before.stream != after.stream)


def test_the_probes_limit_change_reads_as_a_sentence():
    before = Capabilities()
    after = Capabilities(token_param="max_tokens", dropped=frozenset({"seed"}))
    assert describe_change(before, after) == (
        "the output limit is sent as max_tokens instead of max_completion_tokens; "
        "no longer sent: seed")
