"""Secrets stay out: the one redaction step, and the reasons made with it."""

from __future__ import annotations

import httpx
import openai
import pytest

from rt4chart.transforms.common.redact import (
    REDACTED,
    Redactor,
    configured_secrets,
    redact,
    redact_configured,
)
from rt4chart.transforms.judge_stage import short_error
from rt4chart.transforms.judges.base import JudgeError
from rt4chart.transforms.judges.openai.faults import (
    REASON_CHARS,
    NotACompletion,
    completion_of,
    failure_reason,
)

KEY = "sk-proj-Zx9Qw8Er7Ty6Ui5Op4As3Df2"
AZURE_KEY = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"  # no recognisable prefix: only the value tells


@pytest.mark.parametrize("text", [
    f"Invalid key {KEY} for this project",
    f"received headers: Authorization: Bearer {KEY}",
    f'{{"headers": {{"authorization": "Bearer {KEY}"}}}}',
    f"Incorrect API key provided: {KEY}.",
])
def test_an_openai_style_key_is_removed_even_when_not_configured(text):
    out = redact(text)
    assert KEY not in out and "Zx9Qw8Er7Ty6" not in out and REDACTED in out


@pytest.mark.parametrize("text", [
    f"api-key: {AZURE_KEY}",
    f'{{"api-key": "{AZURE_KEY}", "x": 1}}',
    f"GET /deployments?api_key={AZURE_KEY}&v=1",
    f"Ocp-Apim-Subscription-Key: {AZURE_KEY}",
    f"Authorization: Basic {AZURE_KEY}",
    f"x-api-key={AZURE_KEY}",
])
def test_key_carrying_headers_and_parameters_are_removed(text):
    out = redact(text)
    assert AZURE_KEY not in out and REDACTED in out


def test_a_configured_key_is_removed_wherever_it_appears():
    text = f"echo: {AZURE_KEY}; again {AZURE_KEY}!"
    assert redact(text, [AZURE_KEY]) == f"echo: {REDACTED}; again {REDACTED}!"
    assert AZURE_KEY in redact(text)  # bare and unrecognisable: only configuration finds it


def test_ordinary_reasons_are_left_alone():
    for text in ("no valid answer after 3 attempts: answer cut off at the output token budget",
                 "HTTP 401 (AuthenticationError): Incorrect API key provided: sk-te***mnop.",
                 "3 of 3 windows failed: verdicts for claims [1, 2], expected 1..3",
                 "the bearer of bad news"):
        assert redact(text, ["not-needed", "x"]) == text
    assert redact(None) is None and redact("") == ""


def test_configured_secrets_read_the_key_variables_and_the_run_s_ones(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("RT4CHART_TEST_KEY_VAR", AZURE_KEY)
    assert AZURE_KEY not in configured_secrets()
    run = Redactor(("RT4CHART_TEST_KEY_VAR",))  # the run's judge's api_key_env
    assert set(configured_secrets(keys=run)) >= {KEY, AZURE_KEY}
    assert redact_configured(f"k={AZURE_KEY}", run) == f"k={REDACTED}"
    assert configured_secrets({"OPENAI_API_KEY": "a"}) == ("a",)


def test_short_error_redacts_before_it_cuts(monkeypatch):
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    # The key straddles the 300-character cut: cut first, a part of it would stay.
    reason = short_error(RuntimeError("x" * 270 + AZURE_KEY))
    assert AZURE_KEY[:8] not in reason and len(reason) <= 300


def _status_error(status: int, message: str) -> openai.APIStatusError:
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(status, request=request, json={"error": {"message": message}})
    return openai.APIStatusError(message, response=response, body=None)


def test_a_failure_reason_carries_no_secret():
    echoed = _status_error(400, "bad header " + "y" * 190 + f" api-key: {AZURE_KEY}")
    reason = failure_reason(echoed, 6, (AZURE_KEY,))
    assert reason.startswith("HTTP 400 (APIStatusError): bad header")
    assert AZURE_KEY[:6] not in reason and len(reason) <= REASON_CHARS
    assert AZURE_KEY not in failure_reason(JudgeError(f"judge refused: {AZURE_KEY}"), 6,
                                           (AZURE_KEY,))
    assert failure_reason(NotACompletion("HTML"), 3, ()) == "no valid answer after 3 attempts: HTML"


class _Raw:
    """A raw response as the openai client gives it (parse(), headers, status, text)."""

    def __init__(self, parsed, text: str, content_type: str):
        self._parsed, self.text, self.status_code = parsed, text, 200
        self.headers = {"content-type": content_type}

    def parse(self):
        if isinstance(self._parsed, Exception):
            raise self._parsed
        return self._parsed


@pytest.mark.parametrize("parsed, content_type", [
    ("<html><body>502 Bad Gateway</body></html>", "text/html; charset=utf-8"),
    (ValueError("Expecting value"), "application/json"),
    ({"detail": "nope"}, "application/json"),
    (openai.types.chat.ChatCompletion.construct(detail="nope"), "application/json"),
])
def test_a_200_that_is_not_a_chat_completion_says_what_came(parsed, content_type):
    raw = _Raw(parsed, "<html>\n<body>502   Bad Gateway</body></html>", content_type)
    with pytest.raises(NotACompletion, match=r"HTTP 200 reply is not a chat completion \("
                       + content_type.split(";")[0] + r"\): '<html> <body>502 Bad Gateway"):
        completion_of(raw)
