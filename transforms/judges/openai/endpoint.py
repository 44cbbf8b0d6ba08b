"""The openai judge's endpoint, settled once where the run is launched and shipped to workers.

A worker is another process, often another machine (Flink, Spark, Dataflow, Beam's portable
runner with an external worker pool), with an environment of its own. If each worker read
``OPENAI_BASE_URL`` or Azure's variables itself, the endpoint the launcher probed would not be
the one the workers call: a worker without ``OPENAI_BASE_URL`` sends the traces to the default
provider. So the launcher settles the endpoint from its options and its own environment, as the
openai SDK reads them (:func:`settle`: the base URL, Azure's endpoint, API version and
deployment, the organisation and the project), and writes it into the judge options the stages
carry (:func:`resolved_options`, with ``endpoint_resolved=true``). A judge built from settled
options reads no endpoint variable, and its client is given every endpoint setting, so that the
SDK does not read them either (:func:`open_client`).

Only the key is read where the judge runs: from the variable ``api_key_env`` names, or from
Secret Manager (``api_key_secret``, secret_key.py). It never travels in the options. The
launcher records whether the workers need it (``key_required``: it held one, or the endpoint is
the provider's or Azure's); a judge that needs a key and finds none fails when it is built, so
a worker without the key fails the run at its first bundle with that reason.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

import openai

from rt4chart.transforms.judges.openai.config import OpenAIConfig, config_only, with_endpoint

DEFAULT_BASE_URL = "https://api.openai.com/v1"  # the openai SDK's default
BASE_URL_ENV, ORG_ENV, PROJECT_ENV = "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"
# What the launcher settles and ships: every field the endpoint is made of.
ENDPOINT_FIELDS = ("base_url", "azure_api_version", "model", "api_key_env", "organization",
                   "project", "key_required", "endpoint_resolved")


def settle(config: OpenAIConfig, given: Collection[str],
           environ: Mapping[str, str]) -> OpenAIConfig:
    """The config with its endpoint settled from `environ` (`given`: the options set
    explicitly, which win over the variables); a settled config as it is.

    The base URL is `base_url`, else OPENAI_BASE_URL, else Azure's (config.with_endpoint),
    else the provider's; the organisation and project are the options, else OPENAI_ORG_ID and
    OPENAI_PROJECT_ID. The key is needed (`key_required`) unless the endpoint is a base URL
    reached without one here (a local server): no key, no `api_key_secret`.

    Raises:
        ValueError: Azure OpenAI without an API version.
    """
    if config.endpoint_resolved:
        return config
    settled = with_endpoint(config, given, environ)
    custom = settled.base_url or environ.get(BASE_URL_ENV) or None
    keyless = (custom is not None and not settled.azure_api_version
               and not settled.api_key_secret and not environ.get(settled.api_key_env))
    return replace(
        settled, base_url=custom or DEFAULT_BASE_URL,
        organization=_given_or_env(config.organization, "organization", given, environ, ORG_ENV),
        project=_given_or_env(config.project, "project", given, environ, PROJECT_ENV),
        key_required=config.key_required if "key_required" in given else not keyless,
        endpoint_resolved=True)


def _given_or_env(value: str | None, name: str, given: Collection[str],
                  environ: Mapping[str, str], variable: str) -> str | None:
    return value if name in given else environ.get(variable) or None


def resolved_options(options: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """The judge options with the endpoint settled (`settle`) and written out, as the stages
    carry them to the workers; the key is never among them (only the variable's name).

    Raises:
        ValueError: a bad option, or Azure OpenAI without an API version.
    """
    config = settle(config_only(options), options.keys(), environ)
    out = dict(options)
    for name in ENDPOINT_FIELDS:
        value = getattr(config, name)
        if value is not None:
            out[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def missing_key(config: OpenAIConfig) -> str:
    """Why a judge that needs a key cannot be built without one."""
    where = (f"{config.api_key_env} is not set in this process's environment"
             + (" and api_key_secret gave none" if config.api_key_secret else ""))
    local = ("" if config.base_url != DEFAULT_BASE_URL
             else " (or --base-url for a local endpoint such as vLLM or Ollama)")
    return (f"openai judge: no API key for {config.base_url}: {where}. Every process that "
            f"calls the judge reads it (a cluster's workers: their own environment, or "
            f"--judge-option api_key_secret=...); the endpoint comes with the job{local}")


def open_client(config: OpenAIConfig, key: str | None) -> openai.AsyncOpenAI:
    """The client of a settled endpoint. Every endpoint setting is passed, so that the SDK
    reads none of OPENAI_BASE_URL, AZURE_OPENAI_ENDPOINT, OPENAI_API_VERSION, OPENAI_ORG_ID or
    OPENAI_PROJECT_ID where it runs: a worker calls the endpoint the launcher settled."""
    common = {"api_key": key or "not-needed", "organization": config.organization,
              "project": config.project, "max_retries": 0, "timeout": config.timeout_s}
    if config.azure_api_version:
        client: openai.AsyncOpenAI = openai.AsyncAzureOpenAI(
            azure_endpoint=config.base_url, api_version=config.azure_api_version, **common)
    else:
        client = openai.AsyncOpenAI(base_url=config.base_url or DEFAULT_BASE_URL, **common)
    # The SDK fills an organisation or project left None from its variables: a settled
    # endpoint without them sends none.
    client.organization, client.project = config.organization, config.project
    return client
