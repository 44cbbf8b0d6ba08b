"""Azure OpenAI from its standard variables: which endpoint, key variable, API version and
deployment the openai judge uses, and that `--judge auto` picks it."""

from __future__ import annotations

import pytest

from rt4chart.transforms.common.redact import configured_secrets
from rt4chart.transforms.judges.judge_options import JudgeOptions
from rt4chart.transforms.judges.openai.config import OpenAIConfig, with_endpoint
from rt4chart.transforms.judges.openai.judge import OpenAIJudge
from rt4chart.transforms.judges.prices import price_warning

ENDPOINT = "https://example-resource.openai.azure.com"
AZURE = {"AZURE_OPENAI_API_KEY": "0a1b2c3d4e5f60718293a4b5c6d7e8f9",
         "AZURE_OPENAI_ENDPOINT": ENDPOINT, "OPENAI_API_VERSION": "2024-10-21"}


def test_azure_from_its_variables():
    config = with_endpoint(OpenAIConfig(), (), AZURE)
    assert (config.base_url, config.api_key_env, config.azure_api_version, config.model) == (
        ENDPOINT, "AZURE_OPENAI_API_KEY", "2024-10-21", "gpt-4o-mini")


def test_the_deployment_from_model_or_its_variable():
    env = {**AZURE, "AZURE_OPENAI_DEPLOYMENT": "eu-judge"}
    assert with_endpoint(OpenAIConfig(), (), env).model == "eu-judge"
    assert with_endpoint(OpenAIConfig(model="mine"), ("model",), env).model == "mine"


def test_options_win_over_the_variables():
    config = OpenAIConfig(api_key_env="MY_AZURE_KEY", azure_api_version="2025-01-01-preview")
    settled = with_endpoint(config, ("api_key_env", "azure_api_version"), AZURE)
    assert (settled.api_key_env, settled.azure_api_version) == (
        "MY_AZURE_KEY", "2025-01-01-preview")


@pytest.mark.parametrize("env", [
    {},  # nothing configured
    {"AZURE_OPENAI_ENDPOINT": ENDPOINT},  # an endpoint without its key
    {**AZURE, "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"},  # a base URL is used as today
])
def test_no_azure_without_its_variables_or_with_a_base_url(env):
    assert with_endpoint(OpenAIConfig(), (), env) == OpenAIConfig()


def test_base_url_option_keeps_working():
    config = OpenAIConfig(base_url="http://127.0.0.1:8000/v1")
    assert with_endpoint(config, ("base_url",), AZURE) == config


def test_azure_needs_an_api_version():
    env = {k: v for k, v in AZURE.items() if k != "OPENAI_API_VERSION"}
    with pytest.raises(ValueError, match="OPENAI_API_VERSION"):
        with_endpoint(OpenAIConfig(), (), env)


def test_auto_picks_the_openai_judge_and_registers_the_key(monkeypatch, caplog):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_DEPLOYMENT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in AZURE.items():
        monkeypatch.setenv(name, value)
    assert JudgeOptions().judge_name() == "openai"
    assert "no judge endpoint" not in caplog.text
    judge = OpenAIJudge({"model": "judge-deploy"})
    assert (judge.base_url, judge.model, judge.config.azure_api_version) == (
        ENDPOINT, "judge-deploy", "2024-10-21")
    assert AZURE["AZURE_OPENAI_API_KEY"] in configured_secrets()


def test_auto_stays_offline_without_any_endpoint(monkeypatch):
    for name in (*AZURE, "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert JudgeOptions().judge_name() == "offline"


def test_the_price_warning_names_the_deployment_used(monkeypatch):
    for name, value in {**AZURE, "AZURE_OPENAI_DEPLOYMENT": "eu-judge"}.items():
        monkeypatch.setenv(name, value)
    assert "eu-judge" in price_warning("openai", {})
    assert price_warning("openai", {"model": "eu-judge", "price_model": "gpt-4o-mini"}) is None
