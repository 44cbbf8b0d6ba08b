"""The model a judge endpoint that is not OpenAI's serves, asked once where the run is launched.

A local server (llama.cpp, vLLM, Ollama, LM Studio) serves the models it loaded, whatever name
a request gives; left to the default (`gpt-4o-mini`), a run against one asked for a model the
server does not have and billed a local model at gpt-4o-mini's prices. So when the endpoint is
not OpenAI's (a base URL other than api.openai.com, not Azure) and no model is named, the
launcher asks the server's model list (``GET /v1/models``, through the openai client) once:

- one model: the run uses it, and ships it to the workers with the endpoint (endpoint.py); its
  price is unknown unless the options price it (`model_listed`: pricing.py never looks a listed
  model up in the packaged table, where a server's name could match a hosted model's);
- several: refused, with the list (which one to audit with is the user's choice);
- none, or no list (an error, a server without the route): refused, telling to name the model.

A named model is taken as named: servers answer names they do not list (Ollama's aliases; a
llama.cpp server answers any name with its one model), so a named model absent from the list
is a warning that names the list, and a server that does not serve it refuses the probe's call
with a 404, which the probe reports with the models the server lists (probe.py). The refusals
raise ValueError: a usage error, found before anything runs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import openai

from rt4chart.transforms.judges.openai.config import OpenAIConfig

logger = logging.getLogger(__name__)

OPENAI_HOST = "api.openai.com"
LIST_TIMEOUT_S = 30.0  # the launcher's one question; a server that cannot answer it is refused
SHOWN = 20  # models named in a message, at most


class Unlisted(Exception):
    """The endpoint gave no model list; the message says why."""


def is_providers(config: OpenAIConfig) -> bool:
    """Whether the endpoint is OpenAI's API or Azure OpenAI (models named by the user or the
    default), not a server that says what it serves."""
    host = (urlsplit(config.base_url or "").hostname or "").lower()
    return bool(config.azure_api_version) or not config.base_url or host == OPENAI_HOST


def listed_models(config: OpenAIConfig, key: str | None) -> tuple[str, ...]:
    """The ids ``GET {base_url}/models`` lists. Unlisted when there is no list."""
    client = openai.OpenAI(base_url=config.base_url, api_key=key or "not-needed",
                           organization=config.organization, project=config.project,
                           max_retries=0, timeout=min(config.timeout_s, LIST_TIMEOUT_S))
    try:
        ids = [str(model.id) for model in client.models.list()]
    except openai.APIStatusError as exc:
        raise Unlisted(f"GET /models answered HTTP {exc.status_code}") from None
    except (openai.APIError, TypeError, ValueError, AttributeError) as exc:
        # APIError: nothing listening, a timeout, a body that is not a model list
        raise Unlisted(f"GET /models failed: {type(exc).__name__}") from None
    finally:
        client.close()
    return tuple(dict.fromkeys(i for i in ids if i))


def shown(models: tuple[str, ...]) -> str:
    """The models as a message names them."""
    more = f" and {len(models) - SHOWN} more" if len(models) > SHOWN else ""
    return ", ".join(repr(m[:120]) for m in models[:SHOWN]) + more


def serves(models: tuple[str, ...], name: str) -> bool:
    """Whether `name` is among the listed models (Ollama lists `name:latest` for `name`)."""
    return name in models or f"{name}:latest" in models


def settle_model(config: OpenAIConfig, named: bool, environ: Mapping[str, str]) -> OpenAIConfig:
    """The settled config with the model the endpoint serves (see the module docstring);
    OpenAI's and Azure's endpoints as they are.

    Raises:
        ValueError: no model named and the server lists none, several or no list; a named
            model the server's list lacks.
    """
    if is_providers(config):
        return config
    key = environ.get(config.api_key_env)
    where = f"the judge endpoint {config.base_url}"
    try:
        models = listed_models(config, key)
    except Unlisted as exc:
        if named:
            return config  # the probe's call says whether the model is served
        raise ValueError(f"{where} does not list the models it serves ({exc}): name the model "
                         "with --model NAME (--judge-option model=NAME)") from None
    if named:
        if models and not serves(models, config.model):
            # Not refused here: servers answer names they do not list (Ollama's aliases, a
            # llama.cpp server takes any name); one that does not answers the probe with a 404,
            # which names the models it lists (probe.py).
            logger.warning("%s does not list the model %r; it lists %s: if it answers with "
                           "another model, name that one with --model", where, config.model,
                           shown(models))
        return config
    if not models:
        raise ValueError(f"{where} lists no model: load one, or name the model with --model "
                         "NAME")
    if len(models) > 1:
        raise ValueError(f"{where} serves {len(models)} models and none was named: "
                         f"{shown(models)}; pass one of them with --model NAME")
    return replace(config, model=models[0], model_listed=True)


async def offered(client: Any) -> str:
    """What a 404 on a model adds: the models the endpoint lists ("" when it gives none)."""
    try:
        ids = [str(m.id) async for m in client.models.list()]
    except (openai.APIError, TypeError, ValueError, AttributeError):
        return ""
    return f"; the endpoint serves {shown(tuple(ids))}" if ids else ""
