"""The openai judge's endpoint is settled where the run is launched and travels in the judge
options: a judge built from them (a worker) reads no endpoint variable, only its key, and fails
when built without a key it needs (issue 47.4). The key never travels."""

from __future__ import annotations

import base64
import binascii
import bz2
import zlib

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.portability.api import beam_runner_api_pb2
from hypothesis import assume, given
from hypothesis import strategies as st

from rt4chart.pipeline.run import graph
from rt4chart.pipeline.run.config import StagesConfig
from rt4chart.pipeline.run.jobs import run_info
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.openai.config import OpenAIConfig
from rt4chart.transforms.judges.openai.endpoint import (
    DEFAULT_BASE_URL,
    open_client,
    resolved_options,
    settle,
)
from rt4chart.transforms.judges.openai.judge import OpenAIJudge

LAUNCHER_URL = "http://127.0.0.1:8011/v1"
KEY = "sk-launch-0123456789abcdefghijklmnop"
AZURE_ENDPOINT = "https://example-resource.openai.azure.com"
# A worker's environment that names other endpoints than the launcher's: none may be used.
WORKER_ELSEWHERE = {"OPENAI_BASE_URL": "http://127.0.0.1:9999/v1", "OPENAI_ORG_ID": "org-worker",
                    "OPENAI_PROJECT_ID": "proj-worker", "AZURE_OPENAI_ENDPOINT": AZURE_ENDPOINT,
                    "AZURE_OPENAI_API_KEY": "0a1b2c3d4e5f60718293a4b5c6d7e8f9",
                    "OPENAI_API_VERSION": "2024-10-21", "AZURE_OPENAI_DEPLOYMENT": "other"}
ENDPOINT_VARIABLES = (*WORKER_ELSEWHERE, "OPENAI_API_KEY")


@pytest.fixture
def clean_env(monkeypatch):
    for name in ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_base_url_organisation_and_project_come_from_the_launchers_variables():
    env = {"OPENAI_BASE_URL": LAUNCHER_URL, "OPENAI_API_KEY": KEY, "OPENAI_ORG_ID": "org-1",
           "OPENAI_PROJECT_ID": "proj-1"}
    options = resolved_options({"max_concurrency": "4"}, env)
    assert options == {"max_concurrency": "4", "base_url": LAUNCHER_URL, "model": "gpt-4o-mini",
                       "api_key_env": "OPENAI_API_KEY", "organization": "org-1",
                       "project": "proj-1", "key_required": "true", "endpoint_resolved": "true"}


def test_options_win_over_the_variables():
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "OPENAI_ORG_ID": "org-env"}
    options = resolved_options({"base_url": LAUNCHER_URL, "organization": "org-flag"}, env)
    assert (options["base_url"], options["organization"]) == (LAUNCHER_URL, "org-flag")
    assert "project" not in options  # none given, none in the environment: none sent


def test_nothing_configured_is_the_providers_endpoint_and_needs_a_key():
    config = settle(OpenAIConfig(), (), {})
    assert (config.base_url, config.key_required, config.endpoint_resolved) == (
        DEFAULT_BASE_URL, True, True)


def test_azure_is_settled_with_its_version_deployment_and_key_variable():
    env = {k: v for k, v in WORKER_ELSEWHERE.items() if "AZURE" in k or "VERSION" in k}
    options = resolved_options({}, env)
    assert {k: options[k] for k in ("base_url", "azure_api_version", "model", "api_key_env",
                                    "key_required")} == {
        "base_url": AZURE_ENDPOINT, "azure_api_version": "2024-10-21", "model": "other",
        "api_key_env": "AZURE_OPENAI_API_KEY", "key_required": "true"}


@pytest.mark.parametrize(("env", "options", "required"), [
    ({"OPENAI_BASE_URL": LAUNCHER_URL}, {}, False),  # a local server reached without a key
    ({}, {"base_url": LAUNCHER_URL}, False),
    ({"OPENAI_BASE_URL": LAUNCHER_URL, "OPENAI_API_KEY": KEY}, {}, True),  # the launcher's key
    ({}, {"base_url": LAUNCHER_URL, "api_key_secret": "projects/p/secrets/s"}, True),
    ({}, {"base_url": LAUNCHER_URL, "api_key_env": "MINE"}, False),
    ({"MINE": KEY}, {"base_url": LAUNCHER_URL, "api_key_env": "MINE"}, True),
    ({}, {}, True),  # the provider's endpoint
])
def test_the_workers_need_the_key_when_the_launcher_had_one(env, options, required):
    assert resolved_options(options, env)["key_required"] == str(required).lower()


def test_a_settled_endpoint_is_not_settled_again_elsewhere():
    launched = resolved_options({}, {"OPENAI_BASE_URL": LAUNCHER_URL, "OPENAI_API_KEY": KEY})
    assert resolved_options(launched, WORKER_ELSEWHERE) == launched
    config = settle(OpenAIConfig.from_options(launched), launched.keys(), WORKER_ELSEWHERE)
    assert (config.base_url, config.organization, config.azure_api_version) == (
        LAUNCHER_URL, None, None)


def test_a_worker_judge_calls_the_shipped_endpoint_whatever_its_environment(clean_env):
    launched = resolved_options({}, {"OPENAI_BASE_URL": LAUNCHER_URL, "OPENAI_API_KEY": KEY})
    for name, value in {**WORKER_ELSEWHERE, "OPENAI_API_KEY": "sk-worker-own-key-0123456789"
                        }.items():
        clean_env.setenv(name, value)
    judge = OpenAIJudge(launched)
    client = open_client(judge.config, "sk-worker-own-key-0123456789")
    assert str(client.base_url).rstrip("/") == LAUNCHER_URL
    assert (client.organization, client.project, judge.config.azure_api_version) == (
        None, None, None)
    assert type(client).__name__ == "AsyncOpenAI"  # not Azure from the worker's variables


def test_a_worker_judge_keeps_the_launchers_azure_endpoint(clean_env):
    azure = {k: v for k, v in WORKER_ELSEWHERE.items() if "AZURE" in k or "VERSION" in k}
    launched = resolved_options({"model": "eu-judge"}, azure)
    clean_env.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9999/v1")
    clean_env.setenv("OPENAI_API_VERSION", "2099-01-01")
    clean_env.setenv("AZURE_OPENAI_API_KEY", azure["AZURE_OPENAI_API_KEY"])
    client = open_client(OpenAIJudge(launched).config, azure["AZURE_OPENAI_API_KEY"])
    assert type(client).__name__ == "AsyncAzureOpenAI"
    assert str(client.base_url).startswith(f"{AZURE_ENDPOINT}/openai")
    assert client._api_version == "2024-10-21"


@pytest.mark.parametrize("key", [None, ""], ids=["unset", "empty"])
def test_a_worker_without_the_key_it_needs_is_refused_when_built(clean_env, key):
    launched = resolved_options({}, {"OPENAI_BASE_URL": LAUNCHER_URL, "OPENAI_API_KEY": KEY})
    if key is not None:
        clean_env.setenv("OPENAI_API_KEY", key)
    with pytest.raises(ValueError, match=r"no API key for http://127\.0\.0\.1:8011/v1: "
                                         r"OPENAI_API_KEY is not set in this process"):
        OpenAIJudge(launched)


def test_a_keyless_local_server_needs_no_key_on_the_workers(clean_env):
    launched = resolved_options({}, {"OPENAI_BASE_URL": LAUNCHER_URL})
    assert OpenAIJudge(launched).base_url == LAUNCHER_URL


def test_negotiating_settles_the_endpoint_even_without_a_probe(clean_env):
    clean_env.setenv("OPENAI_BASE_URL", LAUNCHER_URL)
    # A model named: no server listens there to say which one it serves (served_models.py)
    named = JudgeSpec.of("openai", {"probe": "false", "model": "local-judge"})
    spec, found = named.kind().negotiate(named)
    assert found is None
    assert dict(spec.options)["base_url"] == LAUNCHER_URL
    assert dict(spec.options)["endpoint_resolved"] == "true"


KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-",
               min_size=16, max_size=64)


@given(key=KEYS, azure=st.booleans(), secret=st.booleans())
def test_the_key_is_never_among_the_shipped_options(key, azure, secret):
    env = ({"AZURE_OPENAI_ENDPOINT": AZURE_ENDPOINT, "AZURE_OPENAI_API_KEY": key,
            "OPENAI_API_VERSION": "2024-10-21"} if azure
           else {"OPENAI_BASE_URL": LAUNCHER_URL, "OPENAI_API_KEY": key})
    options = {"api_key_secret": "projects/p/secrets/s"} if secret else {}
    # A key that is part of a variable's name or another setting would be found for that.
    assume(key not in " ".join([*env, *env.values(), *options.values()]).replace(key, " "))
    shipped = resolved_options(options, env)
    assert not [name for name, value in shipped.items() if key in value]


PICKLED_FNS = {"beam:transform:pardo:v1": beam_runner_api_pb2.ParDoPayload,
               "beam:transform:combine_per_key:v1": beam_runner_api_pb2.CombinePayload,
               "beam:transform:combine_grouped_values:v1": beam_runner_api_pb2.CombinePayload}


def _unpacked(raw: bytes) -> bytes:
    """A pickled function as Beam stores it (base64 of the pickle, bz2 or zlib compressed)."""
    try:
        raw = base64.b64decode(raw, validate=True)
    except binascii.Error:
        return raw
    for decompress in (bz2.decompress, zlib.decompress):
        try:
            return decompress(raw)
        except (OSError, ValueError, zlib.error):
            continue
    return raw


def _pickled_fns(pipeline: beam.Pipeline) -> list[bytes]:
    """The pickled DoFns and CombineFns of a pipeline as the runner receives it, unpacked."""
    found = []
    for transform in pipeline.to_runner_api().components.transforms.values():
        payload_type = PICKLED_FNS.get(transform.spec.urn)
        if payload_type is None:
            continue
        payload = payload_type.FromString(transform.spec.payload)
        fn = payload.do_fn if payload_type is beam_runner_api_pb2.ParDoPayload else (
            payload.combine_fn)
        found.append(_unpacked(fn.payload))
    return found


def test_the_pickled_pipeline_carries_the_endpoint_and_not_the_key(clean_env):
    clean_env.setenv("OPENAI_BASE_URL", LAUNCHER_URL)
    clean_env.setenv("OPENAI_API_KEY", KEY)
    clean_env.setenv("OPENAI_ORG_ID", "org-launcher-77")
    spec = JudgeSpec.of("openai", {"probe": "false", "model": "local-judge"})
    spec = spec.kind().negotiate(spec)[0]
    stages = StagesConfig(judge=spec)
    pipeline = beam.Pipeline(runner="DirectRunner", options=PipelineOptions([]))
    records = pipeline | "Records" >> beam.Create([])
    _ = records | "Audit" >> graph.Audit(stages, run_info(spec))
    pickled = _pickled_fns(pipeline)
    judged = [raw for raw in pickled if LAUNCHER_URL.encode() in raw]
    assert judged and all(b"org-launcher-77" in raw for raw in judged)
    assert not [raw for raw in pickled if KEY.encode() in raw]
