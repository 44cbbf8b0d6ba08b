"""The model a real llama.cpp server serves, asked through the real openai client (no model
named, served_models.py): the one model it lists (its alias) is the run's, unpriced; a named
model it does not list is sent as named (llama.cpp answers any name), with the list logged.

No audit: the launcher's question is all this asks of the server (tests/fakes/llama_server.py,
RT4CHART_LLAMA_VENV)."""

from __future__ import annotations

import logging

import pytest

from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.openai.config import config_only
from rt4chart.transforms.judges.openai.pricing import prices_for

from llama_server import MODEL_NAME, LlamaServer


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with LlamaServer("llama-server", tmp_path_factory.mktemp("llama") / "server.log") as running:
        yield running


@pytest.fixture(autouse=True)
def no_hosted_endpoint(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY",
                 "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION"):
        monkeypatch.delenv(name, raising=False)


def test_the_one_model_llama_server_serves_is_used_and_unpriced(server):
    spec = JudgeSpec.of("openai", {"base_url": server.base_url, "probe": "false"})
    options = dict(spec.kind().resolve(spec).options)
    assert options["model"] == MODEL_NAME and options["model_listed"] == "true"
    assert prices_for(config_only(options)) is None


def test_a_named_model_llama_server_does_not_list_is_kept_and_the_list_logged(server, caplog):
    spec = JudgeSpec.of("openai", {"base_url": server.base_url, "probe": "false",
                                   "model": "gpt-4o"})
    with caplog.at_level(logging.WARNING):
        options = dict(spec.kind().resolve(spec).options)
    assert options["model"] == "gpt-4o" and "model_listed" not in options
    assert f"'{MODEL_NAME}'" in caplog.text and "does not list the model 'gpt-4o'" in caplog.text
